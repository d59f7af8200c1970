"""conformance.report.diff, transition by transition, against literal expectations:
which verdict and client-impact moves count as a regression, a fix or a mere change, and
the exact lines the text and Markdown renderings print for them."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.report.diff import (
    column_notes,
    diff_cell,
    diff_matrices,
    format_markdown,
    format_text,
    summary,
)


def cell(
    verdict: str, quirks: tuple[str, ...] = (), column: str = "p", row: str = "s", **impact: str
) -> dict[str, Any]:
    c: dict[str, Any] = {"column": column, "row": row, "verdict": verdict, "quirks": list(quirks)}
    if impact:
        c["impact"] = {s: {"status": v, "detail": "x"} for s, v in impact.items()}
    return c


@pytest.mark.parametrize(
    ("old", "new", "statuses"),
    [
        ("conforms", "quirk", ["regressed"]),
        ("conforms", "fails", ["regressed"]),
        ("conforms", "error", ["regressed"]),
        ("quirk", "fails", ["regressed"]),
        ("quirk", "error", ["regressed"]),
        ("quirk", "conforms", ["fixed"]),
        ("fails", "conforms", ["fixed"]),
        ("fails", "quirk", ["fixed"]),
        ("error", "conforms", ["fixed"]),
        ("error", "quirk", ["fixed"]),
        # One verdict order (enums.Verdict), the runner's and the diff's: error above fails (a
        # cell that can no longer be judged is worse; the worst trial names a repeated cell).
        ("fails", "error", ["regressed"]),
        ("error", "fails", ["fixed"]),
        ("conforms", "conforms", ["unchanged"]),
        ("quirk", "quirk", ["unchanged"]),
        ("fails", "fails", ["unchanged"]),
        ("error", "error", ["unchanged"]),
        ("conforms", "inconclusive", ["now inconclusive"]),  # neither better nor worse
        ("fails", "inconclusive", ["now inconclusive"]),
        ("inconclusive", "conforms", ["now conclusive"]),
        ("inconclusive", "error", ["now conclusive"]),
        ("inconclusive", "inconclusive", ["unchanged"]),
    ],
)
def test_verdict_transitions(old: str, new: str, statuses: list[str]) -> None:
    d = diff_cell("p", "s", cell(old), cell(new))
    assert d.statuses == statuses
    assert d.regressed is (statuses == ["regressed"])
    assert d.unchanged is (statuses == ["unchanged"])
    assert (d.old_verdict, d.new_verdict) == (old, new)


@pytest.mark.parametrize(
    ("old", "new", "statuses"),
    [
        (None, "conforms", ["added"]),
        (None, "fails", ["added"]),
        ("quirk", None, ["removed"]),
        ("unsupported", "conforms", ["added"]),  # a verdict without rank is "no tested cell"
        ("conforms", "unsupported", ["removed"]),
        ("unsupported", "skipped", ["changed"]),
        ("unsupported", "unsupported", ["unchanged"]),
    ],
)
def test_cells_that_appear_or_disappear(
    old: str | None, new: str | None, statuses: list[str]
) -> None:
    d = diff_cell("p", "s", cell(old) if old else None, cell(new) if new else None)
    assert d.statuses == statuses
    assert not d.regressed


@pytest.mark.parametrize(
    ("strategy", "old", "new", "statuses"),
    [
        ("guarded", "ok", "wrong", ["regressed"]),
        ("robust", "ok", "unrecoverable", ["regressed"]),
        ("guarded", "wrong", "ok", ["fixed"]),
        ("robust", "wrong", "ok", ["fixed"]),
        ("guarded", "wrong", "unrecoverable", ["changed"]),
        ("naive", "ok", "wrong", ["changed"]),  # the naive reading is expected to break
        ("naive", "wrong", "ok", ["changed"]),
    ],
)
def test_client_impact_transitions_with_the_same_verdict(
    strategy: str, old: str, new: str, statuses: list[str]
) -> None:
    d = diff_cell("p", "s", cell("quirk", **{strategy: old}), cell("quirk", **{strategy: new}))
    assert d.statuses == statuses
    assert d.impact == {strategy: (old, new)}


def test_an_inconclusive_cell_still_compares_its_quirks_and_impact() -> None:
    d = diff_cell(
        "p",
        "s",
        cell("inconclusive", ("Q-A",), guarded="ok"),
        cell("inconclusive", ("Q-B",), guarded="wrong"),
    )
    assert d.statuses == ["regressed", "new quirk", "gone quirk"]
    d = diff_cell("p", "s", cell("conforms", guarded="wrong"), cell("inconclusive", guarded="ok"))
    assert d.statuses == ["fixed", "now inconclusive"]
    assert not diff_cell("p", "s", cell("quirk"), cell("inconclusive")).regressed


def test_impact_missing_on_one_side_is_not_a_change() -> None:
    d = diff_cell("p", "s", cell("quirk", guarded="ok"), cell("quirk"))
    assert d.statuses == ["unchanged"] and d.impact == {}
    d = diff_cell("p", "s", cell("quirk"), cell("quirk", guarded="wrong"))
    assert d.statuses == ["unchanged"] and d.impact == {}
    old = cell("quirk", guarded="ok")
    old["impact"]["robust"] = None
    new = cell("quirk", guarded="ok", robust="ok")
    assert diff_cell("p", "s", old, new).statuses == ["unchanged"]


def test_quirk_changes_and_status_order() -> None:
    old = cell("quirk", ("Q-B", "Q-A"), guarded="ok", naive="ok")
    new = cell("fails", ("Q-C", "Q-A"), guarded="wrong", naive="wrong")
    d = diff_cell("p", "s", old, new)
    assert d.statuses == ["regressed", "new quirk", "gone quirk"]
    assert (d.new_quirks, d.gone_quirks) == (["Q-C"], ["Q-B"])
    assert d.impact == {"naive": ("ok", "wrong"), "guarded": ("ok", "wrong")}
    assert d.changes() == ("~ quirk → ✗ fails; naive ok → wrong; guarded ok → wrong; +Q-C; -Q-B")
    fixed = diff_cell("p", "s", new, old)
    assert fixed.statuses == ["fixed", "new quirk", "gone quirk"]
    only_new = diff_cell("p", "s", cell("quirk", ("Q-A",)), cell("quirk", ("Q-A", "Q-Z")))
    assert only_new.statuses == ["new quirk"] and only_new.gone_quirks == []
    only_gone = diff_cell("p", "s", cell("quirk", ("Q-A", "Q-Z")), cell("quirk", ("Q-A",)))
    assert only_gone.statuses == ["gone quirk"] and only_gone.new_quirks == []


def test_changes_text_for_unchanged_and_missing_cells() -> None:
    assert diff_cell("p", "s", cell("quirk"), cell("quirk")).changes() == "~ quirk"
    assert diff_cell("p", "s", None, cell("conforms")).changes() == "(no cell) → ✓ conforms"
    assert diff_cell("p", "s", cell("fails"), None).changes() == "✗ fails → (no cell)"


def doc(
    *cells: dict[str, Any],
    columns: list[dict[str, Any]] | None = None,
    rows: tuple[str, ...] = ("single", "parallel"),
) -> dict[str, Any]:
    cols = (
        columns
        if columns is not None
        else [{"id": c} for c in dict.fromkeys(x["column"] for x in cells)]
    )
    return {"columns": cols, "rows": [{"id": r} for r in rows], "cells": list(cells)}


def test_matrix_order_summary_and_renderings() -> None:
    old = doc(
        cell("conforms", column="b", row="single"),
        cell("fails", column="a", row="parallel"),
        cell("quirk", column="gone", row="single"),
        cell("quirk", ("Q-X",), column="a", row="single"),
    )
    new = doc(
        cell("quirk", ("Q-X",), column="a", row="single"),
        cell("conforms", column="a", row="parallel"),
        cell("quirk", ("Q-Y",), column="b", row="single"),
        cell("conforms", column="b", row="parallel"),
        columns=[{"id": "a"}, {"id": "b"}],
    )
    diffs = diff_matrices(old, new)
    assert [(d.column, d.row, d.statuses) for d in diffs] == [
        ("a", "single", ["unchanged"]),
        ("a", "parallel", ["fixed"]),
        ("b", "single", ["regressed", "new quirk"]),
        ("b", "parallel", ["added"]),
        ("gone", "single", ["removed"]),
    ]
    assert summary(diffs) == {
        "regressed": 1,
        "fixed": 1,
        "now inconclusive": 0,
        "now conclusive": 0,
        "new quirk": 1,
        "gone quirk": 0,
        "changed": 0,
        "added": 1,
        "removed": 1,
        "unchanged": 1,
    }
    assert format_text(diffs, ["a: model m1 → m2"]) == (
        "FIXED                    a × parallel: ✗ fails → ✓ conforms\n"
        "REGRESSED, NEW QUIRK     b × single: ✓ conforms → ~ quirk; +Q-Y\n"
        "ADDED                    b × parallel: (no cell) → ✓ conforms\n"
        "REMOVED                  gone × single: ~ quirk → (no cell)\n"
        "note: a: model m1 → m2\n"
        "summary: 1 regressed, 1 fixed, 1 new quirk, 1 added, 1 removed, 1 unchanged\n"
    )
    assert format_markdown(diffs, ["x|y"]) == (
        "### Conformance matrix diff: **regressions found**\n\n"
        "1 regressed, 1 fixed, 1 new quirk, 1 added, 1 removed, 1 unchanged\n\n"
        "| status | column | row | verdict | quirks | client impact |\n"
        "|---|---|---|---|---|---|\n"
        "| fixed | `a` | `parallel` | ✗ fails → ✓ conforms |   |   |\n"
        "| **regressed**, new quirk | `b` | `single` | ✓ conforms → \\~ quirk | +`Q-Y` |   |\n"
        "| added | `b` | `parallel` | (no cell) → ✓ conforms |   |   |\n"
        "| removed | `gone` | `single` | \\~ quirk → (no cell) |   |   |\n\n"
        "- x\\|y\n"
    )


def test_markdown_for_a_clean_diff_and_an_impact_change() -> None:
    same = doc(cell("quirk", column="a", row="single"))
    diffs = diff_matrices(same, same)
    assert format_markdown(diffs) == (
        "### Conformance matrix diff: no regressions\n\n0 regressed, 0 fixed, 1 unchanged\n"
    )
    assert format_text(diffs) == "summary: 0 regressed, 0 fixed, 1 unchanged\n"
    moved = diff_matrices(
        doc(cell("quirk", ("Q-A",), column="a", row="single", naive="ok")),
        doc(cell("quirk", ("Q-B",), column="a", row="single", naive="wrong~1")),
    )
    assert format_markdown(moved).splitlines()[-1] == (
        "| new quirk, gone quirk | `a` | `single` | \\~ quirk | +`Q-B` −`Q-A` "
        "| naive ok → wrong\\~1 |"
    )


def test_column_notes() -> None:
    old = {
        "columns": [
            {
                "id": "a",
                "model": "m1",
                "provenance": {"server": {"software": "vllm", "version": "0.6"}},
            },
            {"id": "b"},
            {"id": "c", "model": "m"},
        ]
    }
    new = {
        "columns": [
            {"id": "d", "provenance": {"server": {"software": "x"}}},
            {
                "id": "a",
                "model": "m2",
                "provenance": {"server": {"software": "vllm", "version": "0.7"}},
            },
            {"id": "c", "model": "m"},
        ]
    }
    assert column_notes(old, new) == [
        "d: new column",
        "b: column removed",
        "a: model m1 → m2",
        "a: server vllm 0.6 → vllm 0.7",
    ]
    no_server = {"columns": [{"id": "a", "provenance": {"server": {}}}]}
    with_server = {"columns": [{"id": "a", "provenance": {"server": {"version": "1"}}}]}
    assert column_notes(no_server, with_server) == ["a: server – → 1"]
    assert column_notes(with_server, no_server) == ["a: server 1 → –"]
    assert column_notes({}, {}) == []


def test_matrices_without_column_or_row_lists_and_unlisted_cells() -> None:
    bare_old = {"cells": [cell("quirk", column="b", row="y")]}
    bare_new = {
        "cells": [cell("conforms", column="b", row="y"), cell("conforms", column="a", row="x")]
    }
    assert [(d.column, d.row, d.statuses) for d in diff_matrices(bare_old, bare_new)] == [
        ("a", "x", ["added"]),
        ("b", "y", ["fixed"]),
    ]
    # cells of columns and rows the new matrix does not list come after the listed ones
    new = {
        "columns": [{"id": "z"}],
        "rows": [{"id": "r2"}],
        "cells": [
            cell("quirk", column="a", row="r1"),
            cell("quirk", column="z", row="r1"),
            cell("quirk", column="z", row="r2"),
        ],
    }
    assert [(d.column, d.row) for d in diff_matrices({}, new)] == [
        ("z", "r2"),
        ("z", "r1"),
        ("a", "r1"),
    ]


def test_markdown_joins_several_impact_changes() -> None:
    old = doc(cell("quirk", column="a", row="single", naive="ok", guarded="ok"))
    new = doc(cell("quirk", column="a", row="single", naive="wrong", guarded="wrong"))
    assert format_markdown(diff_matrices(old, new)).splitlines()[-1] == (
        "| **regressed** | `a` | `single` | \\~ quirk |   | naive ok → wrong; guarded ok → wrong |"
    )
