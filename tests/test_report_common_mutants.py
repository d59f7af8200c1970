"""The shared report helpers (conformance.report.common), pinned by what a reader sees: a
column's tally, the quirks listed for it and in which order, the findings shown first, the
k/n of repeated trials, what a broken client strategy is blamed on, the advice line, and the
field-evidence summaries."""

from __future__ import annotations

from typing import Any

import pytest

from conformance import registry
from conformance.report import common as c


def doc(**kw: Any) -> dict[str, Any]:
    return {"columns": [], "rows": [], "cells": [], "quirks": {}, **kw}


# ------------------------------------------------------------------ tallies and lookups


def test_the_tally_counts_each_verdict_in_report_order_and_leaves_zeros_out() -> None:
    cells = [{"verdict": v} for v in ("fails", "conforms", "fails", "inconclusive", "quirk")]
    assert c.verdict_tally(cells) == [
        ("conforms", 1),
        ("quirk", 1),
        ("fails", 2),
        ("inconclusive", 1),
    ]
    assert c.verdict_tally([{}]) == []  # a cell without a verdict is not counted as one
    assert c.symbol("fails") == "✗"
    assert c.symbol("not a verdict") == "·"


def test_sections_keep_known_columns_and_rows_keep_the_ones_with_cells() -> None:
    d = doc(
        columns=[{"id": "a"}, {"id": "b"}],
        sections={"providers": ["b", "gone", "a"]},
        rows=[{"id": "r1"}, {"id": "r2"}, {"id": "r3"}],
        cells=[{"column": "a", "row": "r3"}, {"column": "b", "row": "r1"}],
    )
    assert c.section(d, "providers") == ["b", "a"]
    assert c.section(d, "other") == []
    assert c.section({"columns": [{"id": "a"}]}, "providers") == []
    assert [r["id"] for r in c.rows_for(d, ["a"])] == ["r3"]
    assert [r["id"] for r in c.rows_for(d, ["a", "b"])] == ["r1", "r3"]
    assert c.cell_index(d)[("a", "r3")] == {"column": "a", "row": "r3"}
    assert c.columns_by_id(d)["b"] == {"id": "b"}


# ------------------------------------------------------------------ quirks of a column


def test_a_quirk_level_comes_from_the_document_else_the_registry_else_its_findings() -> None:
    d = doc(quirks={"Q-A": {"level": "MUST", "title": "A title"}, "Q-B": {"level": "bogus"}})
    assert c.quirk_level(d, "Q-A") == "MUST"
    cell = {"findings": [{"quirk": "Q-B", "level": "INFO"}, {"quirk": "Q-B", "level": "MUST"}]}
    assert c.quirk_level(d, "Q-B", cell) == "MUST"  # the worst of its findings
    cell = {"findings": [{"quirk": "Q-X", "level": "INFO"}]}
    with pytest.raises(c.MatrixError, match="Q-C: no level"):  # never a guessed level
        c.quirk_level(d, "Q-C", cell)
    assert c.quirk_level(doc(quirks=None), "Q-ID-ABSENT") == registry.level("Q-ID-ABSENT").value
    assert c.quirk_title(d, "Q-A") == "A title"
    assert c.quirk_title(d, "Q-B") == ""
    assert c.quirk_title(doc(quirks=None), "Q-A") == ""


def test_a_level_the_document_does_not_give_comes_from_the_registry_before_the_findings() -> None:
    # an entry without a usable level, for an id the registry knows: the registry's, even
    # when the cell's findings say otherwise
    cell = {"findings": [{"quirk": "Q-ID-ABSENT", "level": "INFO"}]}
    for entry in ({"level": "bogus"}, {"level": None}, {}, None):
        d = doc(quirks={"Q-ID-ABSENT": entry})
        assert c.quirk_level(d, "Q-ID-ABSENT", cell) == "MUST"
    assert c.quirk_level(doc(quirks={}), "Q-EXTRA-FIELDS") == "INFO"
    # an id the registry does not know: the worst of the findings for that id alone
    cell = {
        "findings": [
            {"quirk": "Q-NEW", "level": "SHOULD"},
            {"quirk": "Q-OTHER", "level": "MUST"},
            {"quirk": "Q-NEW", "level": "INFO"},
        ]
    }
    assert c.quirk_level(doc(), "Q-NEW", cell) == "SHOULD"
    assert c.quirk_level(doc(quirks=None), "Q-NEW", cell) == "SHOULD"
    # and nothing to go by: refused, naming the id
    for cell_ in (
        None,
        {},
        {"findings": []},
        {"findings": [{"quirk": "Q-OTHER", "level": "MUST"}]},
    ):
        with pytest.raises(c.MatrixError) as e:
            c.quirk_level(doc(), "Q-NEW", cell_)
        assert str(e.value) == (
            "quirk Q-NEW: no level in the document, the catalogue or its findings"
        )


def test_a_column_lists_its_quirks_most_severe_first_then_by_id() -> None:
    d = doc(
        quirks={"Q-Z": {"level": "MUST"}, "Q-B": {"level": "INFO"}, "Q-A": {"level": "SHOULD"}},
        cells=[
            {"column": "x", "row": "r", "quirks": ["Q-B", "Q-A"]},
            {"column": "x", "row": "s", "quirks": ["Q-Z", "Q-ARGS-ON-OPENING-DELTA"]},
            {"column": "y", "row": "r", "quirks": ["Q-Y"]},
            {"column": "x", "row": "t", "quirks": None},
        ],
    )
    # Q-ARGS-ON-OPENING-DELTA has no entry in the document: the registry's SHOULD.
    assert c.column_quirks(d, ["x"]) == ["Q-Z", "Q-A", "Q-ARGS-ON-OPENING-DELTA", "Q-B"]


def test_the_findings_shown_first_are_the_most_severe_then_the_earliest() -> None:
    fs = [
        {"level": "INFO", "event": 0},
        {"level": "SHOULD", "event": 9},
        {"level": "MUST"},  # no event: after the ones with an event
        {"level": "MUST", "event": 4},
        {"event": 1},  # no level: INFO
    ]
    top = c.top_findings({"findings": fs})
    assert top == [
        {"level": "MUST", "event": 4},
        {"level": "MUST"},
        {"level": "SHOULD", "event": 9},
    ]
    assert c.top_findings({"findings": fs}, limit=5)[3:] == [
        {"level": "INFO", "event": 0},
        {"event": 1},
    ]
    assert c.top_findings({"findings": None}) == []


def test_trial_counts_are_k_of_n_only_when_a_cell_was_repeated() -> None:
    once = [{"quirks": ["Q-A"]}, {"quirks": []}]
    assert c.trial_counts(once, "Q-A") is None
    cells = [
        {"trials": {"n": 3, "quirk_counts": {"Q-A": 2}}, "quirks": ["Q-A"]},
        {"trials": {"n": 2}, "quirks": ["Q-A"]},  # no counts: every trial showed it
        {"quirks": ["Q-A"]},  # one trial
        {"trials": {"n": 4}, "quirks": ["Q-B"]},
    ]
    assert c.trial_counts(cells, "Q-A") == (2 + 2 + 1, 3 + 2 + 1 + 4)


# ------------------------------------------------------------------ blame and advice


def _cell(detail: str = "", **kw: Any) -> dict[str, Any]:
    return {"row": "r", "impact": {"naive": {"status": "wrong", "detail": detail}}, **kw}


def test_blame_names_the_quirks_the_detail_names_when_they_are_known() -> None:
    d = doc(quirks={"Q-DOC": {}})
    cell = _cell("broke on Q-CELL and Q-DOC, not Q-UNKNOWN-ID", quirks=["Q-CELL"])
    assert c.blame(d, cell, "naive") == ["Q-CELL", "Q-DOC"]
    assert c.blame(d, cell, "robust") == ["Q-CELL"]  # no detail: the cell's quirks


def test_blame_names_the_findings_at_the_event_it_broke_on() -> None:
    findings = [
        {"event": 3, "level": "SHOULD", "quirk": "Q-AT-3"},
        {"event": 3, "level": "INFO", "quirk": "Q-INFO-AT-3"},
        {"event": 5, "level": "MUST", "rule": "R-FIVE"},
        {"event": 3, "level": "MUST", "quirk": "Q-OTHER-EXCHANGE", "exchange": 1},
    ]
    cell = _cell("crashed at event 3: KeyError", findings=findings, quirks=["Q-AT-3"])
    assert c.blame(doc(), cell, "naive") == ["Q-AT-3"]
    # An event with no finding: the cell's most severe findings, by quirk or else by rule.
    cell = _cell("crashed at event 7: KeyError", findings=findings)
    assert c.blame(doc(), cell, "naive") == ["R-FIVE"]
    cell = _cell("wrong", findings=[{"level": "SHOULD", "quirk": "Q-S"}, {"rule": "R-I"}])
    assert c.blame(doc(), cell, "naive") == ["Q-S"]
    cell = _cell("wrong", findings=[{"quirk": "Q-I2"}, {"rule": "R-I1"}])
    assert c.blame(doc(), cell, "naive") == ["Q-I2", "R-I1"]  # both INFO (no level)


def test_blame_with_no_finding_names_the_quirks_else_the_scenario() -> None:
    assert c.blame(doc(), _cell("wrong", quirks=["Q-B", "Q-A"]), "naive") == ["Q-A", "Q-B"]
    assert c.blame(doc(), _cell("wrong"), "naive") == ["scenario r"]
    other = [{"event": 1, "level": "MUST", "quirk": "Q-X", "exchange": 2}]
    assert c.blame(doc(), _cell("wrong", findings=other), "naive") == ["scenario r"]


def _impact(**status: str) -> dict[str, Any]:
    return {s: {"status": v, "detail": ""} for s, v in status.items()}


def test_advice_names_what_breaks_each_strategy_and_what_to_use() -> None:
    d = doc()
    cells = [
        {
            "row": "r1",
            "quirks": ["Q-B"],
            "impact": _impact(naive="wrong", guarded="ok", robust="ok"),
        },
        {
            "row": "r2",
            "quirks": ["Q-A"],
            "impact": _impact(naive="crashed", guarded="wrong", robust="ok"),
        },
        {
            "row": "r3",
            "quirks": ["Q-B"],
            "impact": _impact(naive="wrong", guarded="ok", robust="ok"),
        },
        {"row": "r4", "verdict": "error", "quirks": ["Q-E"], "impact": _impact(naive="wrong")},
        {"row": "r5", "quirks": ["Q-N"]},  # no impact recorded
        {"row": "r6", "impact": _impact(naive="wrong")},  # no quirk: the scenario is blamed
    ]
    adv = c.client_advice(d, cells)
    assert adv.judged == 4
    assert adv.breaks == {"naive": ["Q-A", "Q-B", "scenario r6"], "guarded": ["Q-A"], "robust": []}
    assert adv.text() == (
        "naive accumulation breaks on: Q-A, Q-B, scenario r6; guarded breaks on: Q-A; "
        "use a robust accumulator (conformance.client)"
    )


def test_advice_text_for_each_kind_of_column() -> None:
    assert c.Advice().text() == "no client impact recorded"
    assert c.Advice({"naive": ["Q-A"]}, 1).text() == (
        "naive accumulation breaks on: Q-A; use a guarded or robust accumulator (conformance.client)"
    )
    assert c.Advice({"robust": ["Q-U"]}, 1).text() == (
        "even the robust accumulator cannot recover: Q-U"
    )
    assert c.Advice({}, 2).text() == "every strategy assembles the right calls"
    assert c.Advice({"guarded": ["Q-G"], "robust": ["Q-U"]}, 1).text() == (
        "guarded breaks on: Q-G; even the robust accumulator cannot recover: Q-U; "
        "use a robust accumulator (conformance.client)"
    )


def test_impact_summary_counts_the_judged_cells_of_one_strategy() -> None:
    cells = [
        {"row": "a", "impact": _impact(naive="ok")},
        {"row": "b", "impact": _impact(naive="wrong")},
        {"row": "c", "impact": _impact(guarded="wrong")},
        {"row": "d", "verdict": "error", "impact": _impact(naive="wrong")},
        {"row": "e"},
    ]
    assert c.impact_summary(cells, "naive") == (1, 2, ["b"])


def test_server_text_is_software_and_version_when_known() -> None:
    col = {"provenance": {"server": {"software": "vLLM", "version": "0.6.3"}}}
    assert c.server_text(col) == "vLLM 0.6.3"
    assert c.server_text({"provenance": {"server": {"version": "1"}}}) == "1"
    assert c.server_text({"provenance": None}) == ""


# ------------------------------------------------------------------ field evidence


def test_field_summary_counts_captures_in_verdict_order() -> None:
    entries = [{"verdict": "fails"}, {"verdict": "quirk"}, {"verdict": "fails"}, {"verdict": "odd"}]
    assert c.field_summary(entries) == [("quirk", 1), ("fails", 2), ("odd", 1)]
    assert c.field_evidence({"field_evidence": [{"verdict": "quirk"}]}) == [{"verdict": "quirk"}]
    assert c.field_evidence({"field_evidence": None}) == []


def test_field_quirks_keep_the_ones_at_or_above_the_level_most_severe_first() -> None:
    d = doc(quirks={"Q-I": {"level": "INFO"}, "Q-M": {"level": "MUST"}, "Q-S": {"level": "SHOULD"}})
    entries = [
        {"quirks": ["Q-I", "Q-S"]},
        {"quirks": ["Q-M", "Q-USAGE-PLACEMENT"]},
        {"quirks": None},
    ]
    # an id without an entry in the document reads the registry's level
    assert c.field_quirks(d, entries) == ["Q-M", "Q-S", "Q-USAGE-PLACEMENT"]
    assert c.field_quirks(d, entries, "MUST") == ["Q-M"]
    assert c.field_quirks(d, entries, "INFO") == ["Q-M", "Q-S", "Q-USAGE-PLACEMENT", "Q-I"]


def test_field_impact_counts_the_captures_a_strategy_assembled() -> None:
    entries = [
        {"impact": {"naive": {"status": "ok"}}},
        {"impact": {"naive": {"status": "wrong"}}},
        {"impact": {"robust": {"status": "ok"}}},
        {"impact": None},
    ]
    assert c.field_impact(entries, "naive") == (1, 2)


def test_a_source_is_named_by_its_repository_or_its_host() -> None:
    assert c.source_name("https://github.com/owner/repo/issues/12") == "owner/repo"
    assert c.source_name("http://example.com/a/b") == "example.com"
    assert c.source_name("not a url") == "not a url"
    assert c.is_url("https://x.org/")
    assert c.is_url("http://x.org/")
    assert not c.is_url("see https://x.org/")
    assert not c.is_url(None)  # type: ignore[arg-type]


def test_an_unknown_level_ranks_as_info() -> None:
    cell = _cell(
        "wrong", findings=[{"level": "bogus", "quirk": "Q-A"}, {"level": "INFO", "quirk": "Q-B"}]
    )
    assert c.blame(doc(), cell, "naive") == ["Q-A", "Q-B"]
    fs = [{"level": "bogus", "event": 1}, {"level": "INFO", "event": 0}]
    assert c.top_findings({"findings": fs}) == [fs[1], fs[0]]


def test_the_worst_level_of_a_quirks_findings_is_by_rank_not_by_name() -> None:
    cell = {"findings": [{"quirk": "Q-B", "level": "MUST"}, {"quirk": "Q-B", "level": "SHOULD"}]}
    assert c.quirk_level(doc(), "Q-B", cell) == "MUST"


def test_edge_counts_of_tallies_and_summaries() -> None:
    assert c.column_quirks({"quirks": {}}, ["x"]) == []
    assert c.trial_counts([{"trials": {"n": 2}, "quirks": ["Q-A"]}], "Q-A") == (2, 2)
    cells = [
        {"row": "skip"},  # no impact: left out, and the rest still counted
        {"row": "a", "impact": _impact(naive="ok")},
        {"row": "b", "impact": _impact(naive="ok")},
        {"row": "c", "impact": _impact(naive="crashed")},
    ]
    assert c.impact_summary(cells, "naive") == (2, 3, ["c"])


def test_a_document_without_columns_rows_or_cells_has_none() -> None:
    assert c.columns_by_id({}) == {}
    assert c.rows_for({}, ["a"]) == []
    assert c.rows_for({"cells": [{"column": "a", "row": "r"}]}, ["a"]) == []


def test_advice_blames_what_the_strategys_own_detail_names() -> None:
    d = doc(quirks={"Q-DOC": {}})
    cell = {
        "row": "r",
        "quirks": ["Q-B"],
        "impact": {"naive": {"status": "wrong", "detail": "on Q-DOC"}},
    }
    assert c.client_advice(d, [cell]).breaks["naive"] == ["Q-DOC"]


def test_advice_lists_every_quirk_it_names() -> None:
    adv = c.Advice({"guarded": ["Q-A", "Q-B"], "robust": ["Q-C", "Q-D"]}, 1)
    assert adv.text() == (
        "guarded breaks on: Q-A, Q-B; even the robust accumulator cannot recover: Q-C, Q-D; "
        "use a robust accumulator (conformance.client)"
    )


def test_cells_are_grouped_by_column_in_document_order() -> None:
    assert c.cells_by_column({}) == {}
    d = doc(
        cells=[
            {"column": "b", "row": "1"},
            {"column": "a", "row": "2"},
            {"column": "b", "row": "3"},
        ]
    )
    assert c.cells_by_column(d) == {
        "b": [{"column": "b", "row": "1"}, {"column": "b", "row": "3"}],
        "a": [{"column": "a", "row": "2"}],
    }
