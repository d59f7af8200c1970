"""The vLLM scripted-model section: each parser's cells judged against its script, each
column's provenance, the steps × load comparison's verdicts and ids, and the section's
Markdown, HTML and parser-choice table, rebuilt from the committed report and cassettes
(mutation testing, #29)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from conformance.lanes.vllm_columns import ScriptedProvider, scripted_providers
from conformance.lanes.vllm_scripts import all_scripts
from conformance.report import parsers
from conformance.scenarios import SCENARIOS

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "reports" / "quirks-matrix.json"
SHAPE = "Q-DELTA-SHAPE-LOAD-DEPENDENT"
LOST = "Q-ARGS-LOST-MULTITOKEN-DELTA"
CLOSED = "Q-ARGS-CLOSED-ON-TRUNCATION"
PARIS = (("get_weather", '{"city": "Paris"}'),)
TOKYO = ("get_time", '{"timezone": "Asia/Tokyo"}')


@pytest.fixture
def committed(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for var in ("VLLM_SERVER_VERSION", "VLLM_SCRIPTED_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(ROOT)
    doc: dict[str, Any] = json.loads(REPORT.read_text("utf-8"))
    return doc


def _unclosed(cell: dict[str, Any]) -> dict[str, Any]:
    """A committed cell as the runner wrote it, before the script judged it: without
    Q-ARGS-CLOSED-ON-TRUNCATION, and not elicited (the cut looked like a finished call)."""
    if CLOSED not in cell["quirks"]:
        return cell
    raw = copy.deepcopy(cell)
    raw["quirks"].remove(CLOSED)
    raw["unexpected"].remove(CLOSED)
    raw["findings"] = [f for f in raw["findings"] if f["quirk"] != CLOSED]
    raw.update(
        verdict="inconclusive",
        reason="not elicited: the arguments were not cut",
        elicited=False,
    )
    return raw


# ------------------------------------------------------------ the committed section


def test_the_committed_section_is_rebuilt_from_its_cells_scripts_and_cassettes(
    committed: dict[str, Any],
) -> None:
    want = committed[parsers.KEY]
    by_key = {(c["column"], c["row"]): _unclosed(c) for p in want["parsers"] for c in p["cells"]}
    scen = [SCENARIOS[s] for s in want["scenarios"]]
    got = parsers.scripted_section(scripted_providers(), by_key, scen, Path("cassettes"))[
        parsers.KEY
    ]
    assert got["title"] == want["title"] == parsers.TITLE
    assert got["scenarios"] == want["scenarios"]
    assert got["cells"] == want["cells"]  # llama3_json's cut call judged against its script
    for g, w in zip(got["parsers"], want["parsers"], strict=True):
        assert g["parser"] == w["parser"]
        assert (g["column"], g["label"]) == (w["column"], w["label"])
        assert g["provenance"] == w["provenance"], g["parser"]  # vLLM version, recording date
        assert g["expected_quirks"] == w["expected_quirks"]
        assert g["cells"] == w["cells"]
        assert [v["column"] for v in g["variants"]] == [v["column"] for v in w["variants"]]
        assert [(v["steps"], v["load"]) for v in g["variants"]] == [(1, 8), (4, 1), (4, 8)]
        # no variant cell given: every comparison is `not recorded`
        assert all(
            r == {"status": "not recorded"} for v in g["variants"] for r in v["scenarios"].values()
        )
    closed = next(c for c in got["cells"] if CLOSED in c["quirks"])
    assert (closed["column"], closed["row"]) == ("vllm[llama3_json]", "truncated-arguments")
    assert closed["verdict"] == "quirk" and closed["elicited"] is True and closed["reason"] is None


def test_a_column_shows_its_newest_recording_and_the_recorded_vllm(
    committed: dict[str, Any],
) -> None:
    prov = json.loads((ROOT / "cassettes" / "vllm-hermes" / "provenance.json").read_text())
    dates = [s["recorded_at"] for s in prov["scenarios"].values()]
    assert max(dates) != min(dates)
    hermes = [p for p in scripted_providers() if p.parser == "hermes"]
    sec = parsers.scripted_section(hermes, {}, [SCENARIOS["single"]], Path("cassettes"))
    [p] = sec[parsers.KEY]["parsers"]
    pv = p["provenance"]
    assert pv["recorded_at"] == max(dates) == "2026-12-01T22:41:54Z"
    assert pv["vllm_version"] == prov["server"]["version"] == "0.32.0"
    assert pv["cassette_dir"] == "cassettes/vllm-hermes"
    assert (pv["steps"], pv["load"]) == (1, 1)
    # nothing recorded: no date, the entry's vLLM version, a `not recorded` cell that says
    # how to record it
    sec = parsers.scripted_section(hermes, {}, [SCENARIOS["single"]], Path("nowhere"))
    [p] = sec[parsers.KEY]["parsers"]
    assert p["provenance"]["recorded_at"] is None
    assert p["provenance"]["vllm_version"] == hermes[0].server_version == "0.32.0"
    assert p["provenance"]["cassette_dir"] == "nowhere/vllm-hermes"
    assert p["cells"] == [
        {
            "column": "vllm[hermes]",
            "row": "single",
            "verdict": "not recorded",
            "reason": "no cassette; record with: python3 noxw -s vllm-parsers -- --parser hermes",
            "quirks": [],
            "expected": [],
            "findings": [],
            "evidence": [],
            "impact": {},
            "tool_calls": {},
            "finish_reason": None,
            "cassette": None,
            "interaction": None,
            "trials": {},
            "retries": [],
        }
    ]
    load8 = next(v for v in p["variants"] if v["column"] == "vllm[hermes]@load8")
    assert load8["scenarios"] == {"single": {"status": "not recorded"}}


def test_the_base_column_is_the_one_token_one_request_one_whatever_the_order(
    committed: dict[str, Any],
) -> None:
    cols = [p for p in scripted_providers() if p.parser == "glm45"]
    sec = parsers.scripted_section(
        list(reversed(cols)), {}, [SCENARIOS["single"]], Path("cassettes")
    )[parsers.KEY]
    [p] = sec["parsers"]
    assert p["column"] == "vllm[glm45]"
    assert p["provenance"]["recorded_at"] == "2026-12-01T22:46:10Z"
    assert [v["column"] for v in p["variants"]] == [
        "vllm[glm45]@steps4-load8",
        "vllm[glm45]@steps4",
        "vllm[glm45]@load8",
    ]
    # no one-token, one-request column: the first given is the baseline
    only = [c for c in cols if c.steps == 4]
    [q] = parsers.scripted_section(only, {}, [SCENARIOS["single"]], Path("cassettes"))[parsers.KEY][
        "parsers"
    ]
    assert q["column"] == only[0].name and len(q["variants"]) == 1


def _delinked(text: str) -> str:
    return re.sub(r"\[(`?Q-[A-Z0-9-]+`?)\]\([^)]*\)", r"\1", text)


def test_the_section_renders_as_committed_in_markdown_html_and_the_lane_doc(
    committed: dict[str, Any],
) -> None:
    md = "\n".join(parsers.render_markdown(committed, "###"))
    assert md.startswith(f"\n### {parsers.TITLE}\n")
    assert md.strip() in _delinked((ROOT / "reports" / "quirks-matrix.md").read_text("utf-8"))
    html = parsers.render_html(committed)
    assert html.startswith('<section id="scripted-parsers">')
    assert html in (ROOT / "reports" / "quirks-matrix.html").read_text("utf-8")
    table = parsers.render_choice_table(committed)
    assert table.strip() in (ROOT / "docs" / "lanes" / "vllm-parsers.md").read_text("utf-8")
    assert len(table.splitlines()) == 2 + len(committed[parsers.KEY]["parsers"])


def test_the_parser_choice_rows_of_the_committed_section(committed: dict[str, Any]) -> None:
    rows = {r["parser"]: r for r in parsers.choice_rows(committed)}
    assert list(rows) == [p["parser"] for p in committed[parsers.KEY]["parsers"]]
    hermes = rows["hermes"]
    assert hermes["family"] == "Hermes 2 Pro / Qwen2.5 (ChatML)"
    assert hermes["reasoning_parser"] is None and rows["kimi_k2"]["reasoning_parser"] == "kimi_k2"
    assert hermes["recorded"] == 15
    cells = committed[parsers.KEY]["parsers"][0]["cells"]
    assert hermes["conforms"] == sum(1 for c in cells if c["verdict"] == "conforms")
    mistral = rows["mistral"]
    assert mistral["failing"] == ["required", "named"]
    assert "Q-TOOLCALL-AS-TEXT" in mistral["quirks"]
    assert "Q-EXTRA-FIELDS" not in mistral["quirks"]  # INFO ids are not judged quirks
    assert CLOSED in rows["llama3_json"]["quirks"]
    assert [c.split()[0] for c in hermes["clients"]] == ["naive", "guarded", "robust"]
    assert all(re.fullmatch(r"\w+ \d+/15", c) for c in hermes["clients"])
    assert [v.split(":")[0] for v in hermes["variants"]] == [
        "steps 1 × load 8",
        "steps 4 × load 1",
        "steps 4 × load 8",
    ]


# --------------------------------------------------------------- the steps × load compare


def cell(
    quirks: tuple[str, ...] = (),
    calls: tuple[tuple[Any, Any], ...] = PARIS,
    finish: str | None = "tool_calls",
    verdict: str | None = None,
    cassette: str | None = None,
) -> dict[str, Any]:
    return {
        "column": "vllm[x]",
        "row": "single",
        "verdict": verdict or ("quirk" if quirks else "conforms"),
        "quirks": list(quirks),
        "finish_reason": finish,
        "cassette": cassette,
        "tool_calls": {"robust": [{"name": n, "arguments": a} for n, a in calls]},
    }


def ids(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(f["kind"], f["change"], f["quirk"]) for f in result.get("findings") or []]


def test_a_comparison_needs_both_recordings() -> None:
    nr = {"status": "not recorded"}
    assert parsers.compare(None, cell()) == nr
    assert parsers.compare(cell(), None) == nr
    assert parsers.compare(cell(verdict="not recorded"), cell()) == nr
    assert parsers.compare(cell(), cell(verdict="not recorded")) == nr
    assert parsers.compare({}, cell()) == nr


def test_the_same_output_is_the_same_and_says_whose_cassette() -> None:
    r = parsers.compare(cell(), cell(verdict="conforms", cassette="c/x.yaml"))
    assert r == {
        "status": "same",
        "differences": [],
        "info": [],
        "findings": [],
        "verdict": "conforms",
        "cassette": "c/x.yaml",
    }
    # a name or arguments the wire left out read as empty on both sides
    none = parsers.compare(cell(calls=((None, None),)), cell(calls=(("", ""),)))
    assert none["status"] == "same"


def test_an_id_that_comes_or_goes_with_the_same_calls_is_a_quirks_finding() -> None:
    r = parsers.compare(
        cell(("Q-ID-FORMAT", "Q-REQUIRED-NOT-ENFORCED")),
        cell(("Q-REASONING-LEAK-AT-FINISH", "Q-EXTRA-FIELDS")),
    )
    assert r["status"] == "differs"
    assert r["differences"] == ["+Q-REASONING-LEAK-AT-FINISH", "-Q-REQUIRED-NOT-ENFORCED"]
    assert r["info"] == ["+Q-EXTRA-FIELDS", "-Q-ID-FORMAT"]  # INFO: listed, no difference
    assert r["findings"] == [
        {
            "quirk": "Q-REASONING-LEAK-AT-FINISH",
            "change": "+",
            "kind": "quirks",
            "evidence": "same calls",
        },
        {
            "quirk": "Q-REQUIRED-NOT-ENFORCED",
            "change": "-",
            "kind": "quirks",
            "evidence": "same calls",
        },
    ]


def test_ids_in_sorted_order_on_each_side() -> None:
    r = parsers.compare(cell(), cell(("Q-TOOLCALL-AS-TEXT", "Q-REASONING-LEAK-AT-FINISH")))
    assert r["differences"] == ["+Q-REASONING-LEAK-AT-FINISH", "+Q-TOOLCALL-AS-TEXT"]


def test_other_calls_with_a_must_id_make_that_id_the_calls_finding() -> None:
    lost = cell((LOST, "Q-REASONING-LEAK-AT-FINISH"), calls=(("get_weather", "{}"),))
    r = parsers.compare(cell(), lost)
    assert r["differences"] == [
        f"+{LOST}",
        "+Q-REASONING-LEAK-AT-FINISH",
        "assembled arguments differ",
    ]
    assert r["findings"] == [
        {"quirk": LOST, "change": "+", "kind": "calls", "evidence": "assembled arguments differ"},
        {
            "quirk": "Q-REASONING-LEAK-AT-FINISH",  # SHOULD: a quirks finding still
            "change": "+",
            "kind": "quirks",
            "evidence": "assembled arguments differ",
        },
    ]
    assert ids(parsers.compare(lost, cell()))[0] == ("calls", "-", LOST)


def test_calls_lost_without_an_id_are_found_by_the_comparison() -> None:
    r = parsers.compare(cell(), cell(calls=(), finish="stop", verdict="inconclusive"))
    assert r["differences"] == ["calls differ: 1 -> 0", "finish_reason tool_calls -> stop"]
    assert r["findings"] == [
        {
            "quirk": LOST,
            "change": "",
            "kind": "calls",
            "evidence": "calls differ: 1 -> 0, finish_reason tool_calls -> stop; found by this "
            "comparison, the cell alone reads 'inconclusive'",
        }
    ]
    assert r["verdict"] == "inconclusive"


@pytest.mark.parametrize(
    ("base", "other", "lost"),
    [
        (PARIS, (("get_weather", "{}"),), True),  # arguments emptied
        (PARIS, (("get_weather", ""),), True),
        ((*PARIS, TOKYO), (("get_weather", "{}"), TOKYO), True),  # the first of two
        ((*PARIS, TOKYO), (*PARIS, ("get_time", "")), True),  # the second of two
        ((*PARIS, TOKYO), PARIS, True),  # a call fewer
        (PARIS, (("get_weather", '{"city": "Pa"}'),), False),  # other arguments
        ((("ping", "{}"),), (("ping", ""),), False),  # empty both times
        ((("ping", ""),), (("ping", "{}"),), False),
        (PARIS, (*PARIS, TOKYO), False),  # a call more
        (PARIS, (("get_time", '{"city": "Paris"}'),), False),  # another name
    ],
)
def test_only_calls_lost_or_emptied_are_the_lost_id(
    base: tuple[tuple[str, str], ...], other: tuple[tuple[str, str], ...], lost: bool
) -> None:
    [f] = parsers.compare(cell(calls=base), cell(calls=other))["findings"]
    assert f["kind"] == "calls" and f["change"] == ""
    assert f["quirk"] == (LOST if lost else "")
    assert f["evidence"].endswith("'conforms'" if lost else "'conforms': no catalogue id")


def test_a_changed_finish_reason_alone_differs() -> None:
    r = parsers.compare(cell(), cell(finish="stop"))
    assert r["status"] == "differs"
    assert r["differences"] == ["finish_reason tool_calls -> stop"]
    assert ids(r) == [("calls", "", "")]


def test_the_same_calls_in_other_deltas_are_the_shape_id() -> None:
    r = parsers.compare(
        cell(("Q-ARGS-ON-OPENING-DELTA", "Q-EMPTY-DELTA-CHUNKS")),
        cell(("Q-FINISH-SAME-CHUNK-AS-CALL", "Q-ARGS-WHOLE-IN-ONE-DELTA")),
    )
    assert r["status"] == "same" and r["differences"] == []
    assert r["info"] == [
        "+Q-ARGS-WHOLE-IN-ONE-DELTA",
        "+Q-FINISH-SAME-CHUNK-AS-CALL",
        "-Q-ARGS-ON-OPENING-DELTA",
        "-Q-EMPTY-DELTA-CHUNKS",
    ]
    assert r["findings"] == [
        {
            "quirk": SHAPE,
            "change": "",
            "kind": "shape",
            "evidence": "+Q-ARGS-WHOLE-IN-ONE-DELTA, +Q-FINISH-SAME-CHUNK-AS-CALL, "
            "-Q-ARGS-ON-OPENING-DELTA, -Q-EMPTY-DELTA-CHUNKS",
        }
    ]
    # no call, or other calls: not a shape
    assert (
        parsers.compare(
            cell(calls=(), finish="stop"), cell(("Q-EMPTY-DELTA-CHUNKS",), calls=(), finish="stop")
        )["findings"]
        == []
    )
    other = parsers.compare(cell(), cell(("Q-FINISH-SAME-CHUNK-AS-CALL",), finish="stop"))
    assert SHAPE not in [q for _, _, q in ids(other)]
    # a shape id together with a judged one: both findings
    both = parsers.compare(cell(), cell(("Q-FINISH-SAME-CHUNK-AS-CALL", "Q-TOOLCALL-AS-TEXT")))
    assert ids(both) == [("quirks", "+", "Q-TOOLCALL-AS-TEXT"), ("shape", "", SHAPE)]


# ------------------------------------------------------- a cut call against its script

SCRIPT = '{"name": "write_note", "parameters": {"title": "Essay", "body": "Rivers are"}}'


def _cut(arguments: str, **kw: Any) -> dict[str, Any]:
    call = {"name": "write_note", "arguments": arguments}
    base = {
        "column": "vllm[llama3_json]",
        "row": "truncated-arguments",
        "verdict": "inconclusive",
        "reason": "not elicited: no call was cut",
        "elicited": False,
        "finish_reason": "length",
        "quirks": ["Q-EXTRA-FIELDS"],
        "unexpected": [],
        "findings": [],
        "tool_calls": {"naive": [call], "guarded": [call], "robust": [call]},
    }
    return base | kw


def test_a_cut_call_closed_as_json_the_script_never_wrote_is_the_must_finding() -> None:
    found = parsers.closed_on_truncation(_cut('{"title": "Essay"}'), SCRIPT)
    assert found == {
        "event": None,
        "exchange": 0,
        "level": "MUST",
        "message": "finish_reason \"length\" and 'write_note''s arguments closed as valid JSON "
        'the script never wrote: streamed \'{"title": "Essay"}\', scripted '
        '\'{"name": "write_note", "parameters": {"title": "Essay", "bo…\'',
        "pointer": None,
        "quirk": CLOSED,
        "rule": CLOSED,
    }


@pytest.mark.parametrize(
    ("cell_", "script"),
    [
        (None, SCRIPT),
        (_cut('{"title": "Essay"}'), None),
        (_cut('{"title": "Essay"}'), ""),
        (_cut('{"title": "Essay"}', finish_reason="tool_calls"), SCRIPT),
        (_cut('{"title": "Essay"}', quirks=["Q-ARGS-INVENTED-ON-TRUNCATION"]), SCRIPT),
        (_cut('{"title": "Essay", "body": "Riv'), SCRIPT),  # left open: as far as it got
        (_cut('"title"'), '{"x": "title"}'),  # valid JSON the script wrote
        (_cut("  "), SCRIPT),  # nothing sent
        (_cut(""), SCRIPT),
        (_cut('{"a": 1}', tool_calls={}), SCRIPT),  # no call
    ],
)
def test_what_is_not_a_closed_cut_call(cell_: dict[str, Any] | None, script: str | None) -> None:
    assert parsers.closed_on_truncation(cell_, script) is None


def test_the_naive_client_is_read_first_then_the_guarded_one() -> None:
    good = {"name": "write_note", "arguments": '{"title": "Essay", "body": "Riv'}
    closed = {"name": "write_note", "arguments": "{}"}
    c = _cut("x", tool_calls={"naive": [good], "guarded": [closed], "robust": [closed]})
    assert parsers.closed_on_truncation(c, SCRIPT) is None  # the naive one was cut, open
    c = _cut("x", tool_calls={"naive": [], "guarded": [closed], "robust": [good]})
    assert parsers.closed_on_truncation(c, SCRIPT)["quirk"] == CLOSED
    # a second call closed: found even when the first is fine
    c = _cut("x", tool_calls={"naive": [good, closed]})
    assert "'write_note''s" in parsers.closed_on_truncation(c, SCRIPT)["message"]


def test_a_long_streamed_or_scripted_text_is_cut_at_sixty_characters() -> None:
    sixty = '{"t": "' + "a" * 51 + '"}'
    assert len(sixty) == 60
    msg = parsers.closed_on_truncation(_cut(sixty), SCRIPT)["message"]
    assert f"streamed {sixty!r}" in msg
    longer = '{"t": "' + "a" * 52 + '"}'
    msg = parsers.closed_on_truncation(_cut(longer), SCRIPT)["message"]
    assert f"streamed {(longer[:59] + '…')!r}," in msg


def test_the_script_judges_the_cell_again() -> None:
    from conformance.lanes.vllm_columns import scripted_provider
    from conformance.lanes.vllm_families import FAMILIES

    p = scripted_provider(FAMILIES["llama3_json"])
    script = p.scripts["truncated-arguments"]["script"]
    assert script == all_scripts("llama3_json")["truncated-arguments"]["script"]
    raw = _cut(
        '{"title": "Essay"}', unexpected=["Q-Z"], findings=[{"level": "INFO", "quirk": None}]
    )
    sec = parsers.scripted_section(
        [p], {(p.name, "truncated-arguments"): raw}, [SCENARIOS["truncated-arguments"]], Path("x")
    )
    [out] = sec[parsers.KEY]["cells"]
    assert out["quirks"] == [CLOSED, "Q-EXTRA-FIELDS"]
    assert out["unexpected"] == [CLOSED, "Q-Z"]
    assert out["findings"][0] == {"level": "INFO", "quirk": None}
    assert out["findings"][1]["quirk"] == CLOSED
    assert (out["verdict"], out["reason"], out["elicited"]) == ("quirk", None, True)
    assert raw["quirks"] == ["Q-EXTRA-FIELDS"]  # the recorded cell is not written to
    # a cell that was elicited keeps its reason and verdict policy
    seen = _cut('{"title": "Essay"}', verdict="conforms", reason="kept", elicited=True)
    [out] = parsers.scripted_section(
        [p], {(p.name, "truncated-arguments"): seen}, [SCENARIOS["truncated-arguments"]], Path("x")
    )[parsers.KEY]["cells"]
    assert (out["verdict"], out["reason"], out["elicited"]) == ("quirk", "kept", True)
    failed = _cut('{"title": "Essay"}', verdict="fails", reason=None)
    [out] = parsers.scripted_section(
        [p],
        {(p.name, "truncated-arguments"): failed},
        [SCENARIOS["truncated-arguments"]],
        Path("x"),
    )[parsers.KEY]["cells"]
    assert out["verdict"] == "fails"
    # without the id: the cell as recorded, the very object
    fine = _cut('{"title": "Essay", "body": "Riv')
    [out] = parsers.scripted_section(
        [p], {(p.name, "truncated-arguments"): fine}, [SCENARIOS["truncated-arguments"]], Path("x")
    )[parsers.KEY]["cells"]
    assert out is fine


# ------------------------------------------------------------------------- rendering


def _section(variants: list[dict[str, Any]], cells: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        parsers.KEY: {
            "title": parsers.TITLE,
            "scenarios": [c["row"] for c in cells],
            "parsers": [
                {
                    "parser": "hermes",
                    "column": "vllm[hermes]",
                    "label": "L",
                    "provenance": {
                        "family": "Hermes & co",
                        "vllm_version": "0.32.0",
                        "reasoning_parser": None,
                        "chat_template": "the <template>",
                        "model_output": "scripted",
                        "recorded_at": None,
                    },
                    "expected_quirks": {},
                    "cells": cells,
                    "variants": variants,
                }
            ],
            "cells": cells,
        }
    }


def _row(
    row: str, verdict: str, quirks: list[str] = (), ok: bool = True, reason: str | None = None
) -> dict[str, Any]:
    status = {"status": "ok" if ok else "wrong"}
    return {
        "column": "vllm[hermes]",
        "row": row,
        "verdict": verdict,
        "reason": reason,
        "quirks": list(quirks),
        "impact": {"naive": status, "guarded": {"status": "ok"}, "robust": {"status": "ok"}},
    }


CELLS = [
    _row("single", "conforms", ["Q-ID-FORMAT"]),
    _row("parallel", "quirk", ["Q-ARGS-ON-OPENING-DELTA", "Q-ID-FORMAT"], ok=False),
    _row("required", "fails", ["Q-TOOLCALL-AS-TEXT"], reason='a "call" as <text>'),
    _row("named", "error", reason="HTTP 500"),
    _row("usage", "not recorded"),
    _row("strict", "weird"),
]


def _variant(steps: int, load: int, rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "column": f"vllm[hermes]@x{steps}{load}",
        "steps": steps,
        "load": load,
        "scenarios": rows,
    }


NR = {"status": "not recorded"}
SAME = {"status": "same", "findings": []}
SHAPED = {
    "status": "same",
    "findings": [{"quirk": SHAPE, "change": "", "kind": "shape", "evidence": "+Q-A, -Q-B"}],
}
DIFFERS = {
    "status": "differs",
    "findings": [
        {"quirk": LOST, "change": "+", "kind": "calls", "evidence": "calls differ: 1 -> 0"},
        {"quirk": "", "change": "", "kind": "calls", "evidence": "no id here"},
        {"quirk": SHAPE, "change": "", "kind": "shape", "evidence": "+Q-C"},
    ],
}
QUIRKS = {
    "status": "differs",
    "findings": [{"quirk": "Q-R", "change": "-", "kind": "quirks", "evidence": "same calls"}],
}


def test_the_markdown_section_reads_each_cell_and_each_variant() -> None:
    variants = [
        _variant(1, 8, {"single": NR, "parallel": NR}),
        _variant(4, 1, {"single": SAME, "parallel": SAME}),
        _variant(4, 8, {"single": SHAPED, "parallel": NR}),
        _variant(2, 2, {"single": DIFFERS, "parallel": QUIRKS}),
    ]
    doc = _section(variants, CELLS)
    lines = parsers.render_markdown(doc, "####")
    assert lines[:3] == ["", f"#### {parsers.TITLE}", ""]
    assert lines[-1] == ""
    grid = [x for x in lines if x.startswith("| ")]
    assert grid == [
        "| scenario | `hermes` |",
        "| single | ✓ Q-ID-FORMAT |",
        "| parallel | ◐ Q-ARGS-ON-OPENING-DELTA, Q-ID-FORMAT |",
        "| required | ✗ Q-TOOLCALL-AS-TEXT |",
        "| named | ! |",
        "| usage | · |",
        "| strict | ? |",
    ]
    assert "|---|---|" in lines
    assert "##### Provenance and steps × load" in lines
    assert (
        "- **`vllm[hermes]`** (Hermes & co): vLLM 0.32.0, `--tool-call-parser hermes`, "
        "reasoning parser `none`, chat template: the <template>; model output: scripted; "
        "recorded never."
    ) in lines
    variants_text = [x for x in lines if x.startswith("  - ")]
    assert variants_text == [
        "  - steps 1 × load 8: not recorded",
        "  - steps 4 × load 1: same calls, finish reasons and judged quirks in every "
        "recorded scenario",
        "  - steps 4 × load 8: same calls, finish reasons and judged quirks in every "
        f"recorded scenario (1 not recorded); {SHAPE} in 1 of 2: single (+Q-A, -Q-B)",
        f"  - steps 2 × load 2: single: +{LOST} (calls differ: 1 -> 0), no id (no id here); "
        f"parallel: -Q-R (same calls); {SHAPE} in 1 of 2: single (+Q-C)",
    ]
    assert parsers.render_markdown({}) == []
    assert parsers.render_markdown({parsers.KEY: {"parsers": []}}) == []


def test_the_markdown_names_the_reasoning_parser_and_the_recording_date() -> None:
    doc = _section([], CELLS[:1])
    pv = doc[parsers.KEY]["parsers"][0]["provenance"]
    pv.update(reasoning_parser="deepseek_r1", recorded_at="2026-01-02T00:00:00Z")
    line = next(x for x in parsers.render_markdown(doc) if x.startswith("- **"))
    assert "reasoning parser `deepseek_r1`" in line and line.endswith(
        "recorded 2026-01-02T00:00:00Z."
    )
    assert "### Provenance and steps × load" in parsers.render_markdown(doc)


def test_the_html_section_escapes_and_marks_each_verdict() -> None:
    doc = _section([_variant(4, 1, {"single": SAME, "parallel": NR})], CELLS)
    html = parsers.render_html(doc)
    assert html.startswith(f'<section id="scripted-parsers"><h2>{parsers.TITLE}</h2>')
    assert html.endswith("</ul></li></ul></section>")
    assert "<table><tr><th>scenario</th><th>hermes</th></tr>" in html
    assert '<tr><th>single</th><td class="v-conforms" title="">✓ Q-ID-FORMAT</td></tr>' in html
    assert (
        '<td class="v-fails" title="a &quot;call&quot; as &lt;text&gt;">✗ Q-TOOLCALL-AS-TEXT</td>'
        in html
    )
    assert '<td class="v-not-recorded" title="">·</td>' in html
    assert '<td class="v-error" title="HTTP 500">!</td>' in html
    assert (
        "<li><b>vllm[hermes]</b> (Hermes &amp; co): vLLM 0.32.0, reasoning parser none, "
        "chat template: the &lt;template&gt;; model output: scripted<ul><li>steps 4 × load 1: "
        "same calls, finish reasons and judged quirks in every recorded scenario "
        "(1 not recorded)</li></ul></li>"
    ) in html
    assert f"{SHAPE} the same calls in other deltas.</p>" in html
    assert parsers.render_html({}) == ""
    assert parsers.render_html({parsers.KEY: {"parsers": []}}) == ""


def test_the_choice_table_counts_verdicts_clients_and_variants() -> None:
    variants = [
        _variant(1, 8, {"single": NR, "parallel": NR}),
        _variant(4, 1, {"single": SAME, "parallel": SHAPED}),
        _variant(4, 8, {"single": DIFFERS, "parallel": QUIRKS}),
        _variant(2, 2, {"single": DIFFERS, "parallel": DIFFERS}),
    ]
    doc = _section(variants, CELLS)
    [row] = parsers.choice_rows(doc)
    assert row == {
        "parser": "hermes",
        "family": "Hermes & co",
        "reasoning_parser": None,
        "conforms": 1,
        "recorded": 5,  # the not-recorded cell is not counted
        "quirks": ["Q-ARGS-ON-OPENING-DELTA", "Q-TOOLCALL-AS-TEXT"],  # judged: no INFO
        "failing": ["required", "named"],
        "clients": ["naive 3/4", "guarded 4/4", "robust 4/4"],  # error cells left out
        "variants": [
            f"steps 4 × load 1: same calls, {SHAPE} in 1/2",
            f"steps 4 × load 8: 2 differ ({LOST}: single; no id: single; Q-R: parallel), "
            f"{SHAPE} in 1/2",
            f"steps 2 × load 2: 2 differ ({LOST}: single, parallel; no id: single, parallel), "
            f"{SHAPE} in 2/2",
        ],
    }
    table = parsers.render_choice_table(doc)
    assert table.splitlines() == [
        "| `--tool-call-parser` | family | reasoning parser | conforms | fails or errors "
        "| quirks (SHOULD/MUST) | clients that assemble every call | steps × load |",
        "|---|---|---|---|---|---|---|---|",
        "| `hermes` | Hermes & co | – | 1/5 | required, named | Q-ARGS-ON-OPENING-DELTA, "
        "Q-TOOLCALL-AS-TEXT | naive 3/4, guarded 4/4, robust 4/4 | "
        + "; ".join(row["variants"])
        + " |",
    ]
    assert table.endswith(" |\n")
    # nothing to say: dashes, and `not recorded` for the variants
    bare = _section([_variant(1, 8, {"single": NR})], [_row("single", "conforms")])
    bare[parsers.KEY]["parsers"][0]["provenance"]["reasoning_parser"] = "glm45"
    assert parsers.render_choice_table(bare).splitlines()[-1] == (
        "| `hermes` | Hermes & co | glm45 | 1/1 | – | – | naive 1/1, guarded 1/1, robust 1/1 "
        "| not recorded |"
    )
    assert parsers.render_choice_table({}) == "" and parsers.choice_rows({}) == []


def test_quirks_in_the_section_are_its_cells_and_its_comparisons() -> None:
    variants = [_variant(4, 8, {"single": DIFFERS, "parallel": QUIRKS})]
    assert parsers.quirks_in(_section(variants, CELLS)) == {
        "Q-ID-FORMAT",
        "Q-ARGS-ON-OPENING-DELTA",
        "Q-TOOLCALL-AS-TEXT",
        LOST,
        "",
        SHAPE,
        "Q-R",
    }
    assert parsers.quirks_in({}) == set()


def test_the_table_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], committed: dict[str, Any]
) -> None:
    assert parsers.main([str(REPORT)]) == 0
    assert capsys.readouterr().out == parsers.render_choice_table(committed)
    empty = tmp_path / "m.json"
    empty.write_text("{}")
    assert parsers.main([str(empty)]) == 2
    assert capsys.readouterr().err == (
        f"{empty}: no scripted-parsers section (render it with --scripted-parsers)\n"
    )
    assert parsers.main([]) == 2
    assert parsers.main([str(empty), str(empty)]) == 2
    assert capsys.readouterr().err == (
        "usage: python -m conformance.report.parsers MATRIX.json\n" * 2
    )


def test_every_scripted_column_of_a_parser_judges_against_the_same_scripts() -> None:
    cols: dict[str, list[ScriptedProvider]] = {}
    for p in scripted_providers():
        cols.setdefault(p.parser, []).append(p)
    for parser, ps in cols.items():
        assert all(p.scripts == all_scripts(parser) for p in ps), parser


def test_the_table_command_reads_the_matrix_as_utf8_whatever_the_locale(
    capsys: pytest.CaptureFixture[str], committed: dict[str, Any]
) -> None:
    import locale

    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")  # an ASCII locale: the report holds "×", "…"
    try:
        assert parsers.main([str(REPORT)]) == 0
    finally:
        locale.setlocale(locale.LC_CTYPE, before)
    assert capsys.readouterr().out == parsers.render_choice_table(committed)


def test_a_column_shows_the_vllm_its_recording_names_and_ignores_undated_scenarios(
    tmp_path: Path, committed: dict[str, Any]
) -> None:
    hermes = [p for p in scripted_providers() if p.parser == "hermes"]
    d = tmp_path / "vllm-hermes"
    d.mkdir()
    (d / "provenance.json").write_text(
        json.dumps(
            {
                "server": {"software": "vLLM", "version": "0.31.9"},
                "scenarios": {
                    "single": {"recorded_at": "2026-01-02T00:00:00Z"},
                    "usage": {"trials": 1},  # no date: not the newest
                },
            }
        )
    )
    [p] = parsers.scripted_section(hermes, {}, [SCENARIOS["single"]], tmp_path)[parsers.KEY][
        "parsers"
    ]
    assert p["provenance"]["vllm_version"] == "0.31.9"  # what was recorded, not the entry's
    assert p["provenance"]["recorded_at"] == "2026-01-02T00:00:00Z"
