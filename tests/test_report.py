"""conformance.report: schema, Markdown, README markers, HTML shape, diff and the CLI.

Matrix documents are built here from real analyzer results (``analyze_chunks``) on literal
chunk lists, so the report is tested on what the pipeline actually produces.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from conformance.analysis import analyze_chunks
from conformance.cli import main
from conformance.matrix import quirk_entries, rule_entries
from conformance.report import (
    MatrixError,
    diff_command,
    diff_matrices,
    evidence_from_events,
    matrix_schema,
    render_command,
    render_html,
    render_markdown,
    update_readme,
    validate_matrix,
    write_reports,
)
from conformance.report.diff import format_markdown, format_text
from conformance.report.html import page_data
from conformance.rules import RULES
from conformance.transcript import CHUNK, Event

# --------------------------------------------------------------------------- chunk fixtures


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }


def call(index: int = 0, **kw: Any) -> dict[str, Any]:
    return {"index": index, **kw}


OPEN = call(
    0, id="call_abc123XYZ789", type="function", function={"name": "get_weather", "arguments": ""}
)
CONFORMING = [
    chunk({"role": "assistant", "content": None, "tool_calls": [OPEN]}),
    chunk({"tool_calls": [call(0, function={"arguments": '{"city": '})]}),
    chunk({"tool_calls": [call(0, function={"arguments": '"Paris"}'})]}),
    chunk({}, "tool_calls"),
]
DASHSCOPE = [  # continuation deltas carry id "" (and name ""): Q-EMPTY-STRING-OVERWRITE
    chunk({"role": "assistant", "content": None, "tool_calls": [OPEN]}),
    chunk({"tool_calls": [call(0, id="", type="function", function={"arguments": '{"city": '})]}),
    chunk(
        {
            "tool_calls": [
                call(0, id="", type="function", function={"name": "", "arguments": '"Paris"}'})
            ]
        }
    ),
    chunk({}, "tool_calls"),
]
ALL_ZERO = [  # two calls share index 0: guarded merges them
    chunk(
        {
            "role": "assistant",
            "tool_calls": [
                call(
                    0,
                    id="call_aaaaaaaaaaaa",
                    type="function",
                    function={"name": "get_weather", "arguments": '{"city": "Paris"}'},
                )
            ],
        }
    ),
    chunk(
        {
            "tool_calls": [
                call(
                    0,
                    id="call_bbbbbbbbbbbb",
                    type="function",
                    function={"name": "get_time", "arguments": '{"tz": "CET"}'},
                )
            ]
        }
    ),
    chunk({}, "tool_calls"),
]
NO_NAME = [  # a call that never gets a name: an uncatalogued MUST failure
    chunk(
        {
            "role": "assistant",
            "tool_calls": [
                call(0, id="call_abc123XYZ789", type="function", function={"arguments": "{}"})
            ],
        }
    ),
    chunk({}, "tool_calls"),
]
ERROR = [
    chunk({"role": "assistant", "content": ""}),
    {"error": {"message": "upstream overloaded", "type": "server_error", "code": 500}},
]

# --------------------------------------------------------------------------- the builder


def cell_from_chunks(
    column: str, row: str, chunks: list[Any], *, trials: int = 1
) -> dict[str, Any]:
    r = analyze_chunks(chunks, source=f"{column}/{row}")
    j = r.to_json()
    events = [
        Event(i, CHUNK, None, json.dumps(c, separators=(",", ":")), c) for i, c in enumerate(chunks)
    ]
    return {
        "column": column,
        "row": row,
        "verdict": j["verdict"],
        "reason": j.get("error"),
        "quirks": j["quirks"],
        "expected": [],
        "findings": j["findings"],
        "evidence": evidence_from_events(events, j["findings"]),
        "impact": j["impact"],
        "tool_calls": j["tool_calls"],
        "finish_reason": j["finish_reason"],
        "cassette": f"cassettes/{column}/{row}.yaml",
        "interaction": 0,
        "trials": {
            "n": trials,
            "quirk_counts": {q: trials for q in j["quirks"]},
            "verdict_counts": {j["verdict"]: trials},
        },
    }


def column(cid: str, kind: str = "provider", *, recorded: bool = True) -> dict[str, Any]:
    return {
        "id": cid,
        "kind": kind,
        "label": cid.capitalize() + (" (SmolLM2-135M)" if cid == "llamacpp" else ""),
        "model": f"{cid}-model",
        "base_url": f"https://{cid}.example/v1",
        "status": "recorded" if recorded else "not recorded",
        "record_command": f"nox -s live -- --provider {cid}",
        "provenance": {
            "how": "replayed" if recorded else None,
            "recorded_at": "2026-11-29T10:00:00Z" if recorded else None,
            "suite_version_at_record": "0.1.0" if recorded else None,
            "cassette_dir": f"cassettes/{cid}" if recorded else None,
            "server": {
                "software": f"{cid}-server",
                "version": "1.2.3",
                "seen": {"server_header": "uvicorn"},
            },
        },
        "expected_quirks": {},
        "client_advice": "",
    }


ROWS = [
    {"id": "single", "title": "One tool call", "description": "one call, streamed"},
    {"id": "parallel", "title": "Parallel calls", "description": "two calls at once"},
    {"id": "truncated", "title": "Truncated arguments", "description": None},
]


def build_doc(
    spec: dict[str, dict[str, list[Any] | str]],
    *,
    kinds: dict[str, str] | None = None,
    not_recorded: tuple[str, ...] = (),
    rows: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A matrix from {column: {row: chunks | "unsupported"}}; not_recorded columns get ∅ cells."""
    kinds = kinds or {}
    rows = rows or ROWS
    columns, cells = [], []
    for cid, by_row in spec.items():
        columns.append(column(cid, kinds.get(cid, "provider")))
        for rid, value in by_row.items():
            if value == "unsupported":
                cells.append(
                    {
                        "column": cid,
                        "row": rid,
                        "verdict": "unsupported",
                        "reason": f"{cid} declares no parallel tool calls",
                    }
                )
            else:
                assert isinstance(value, list)
                cells.append(cell_from_chunks(cid, rid, value))
    for cid in not_recorded:
        columns.append(column(cid, recorded=False))
        cells += [{"column": cid, "row": r["id"], "verdict": "not recorded"} for r in rows]
    used = {f["quirk"] for c in cells for f in c.get("findings", []) if f.get("quirk")}
    quirks, rules = quirk_entries(cells, extra=used), rule_entries()
    by_kind = {
        k: [c["id"] for c in columns if c["kind"] == k]
        for k in ("provider", "reference-profile", "capture")
    }
    return {
        "format": "conformance-quirks-matrix/1",
        "suite_version": "0.1.0",
        "generated": "2026-11-30T04:10:00Z",
        "mode": "replay",
        "title": "Streaming tool-call conformance",
        "columns": columns,
        "rows": rows,
        "cells": cells,
        "quirks": quirks,
        "rules": rules,
        "sections": {
            "providers": by_kind["provider"],
            "reference_profiles": by_kind["reference-profile"],
            "captures": by_kind["capture"],
        },
    }


def demo_doc() -> dict[str, Any]:
    """Providers (one of each verdict), a reference profile, a capture, a not-recorded column."""
    doc = build_doc(
        {
            "openai": {"single": CONFORMING, "parallel": CONFORMING, "truncated": CONFORMING},
            "dashscope": {"single": DASHSCOPE, "parallel": ALL_ZERO, "truncated": NO_NAME},
            "llamacpp": {"single": CONFORMING, "parallel": "unsupported", "truncated": ERROR},
            "reference": {"single": CONFORMING, "parallel": ALL_ZERO},
            "field.jsonl": {"capture": DASHSCOPE},
        },
        kinds={"reference": "reference-profile", "field.jsonl": "capture"},
        not_recorded=("mistral",),
        rows=[*ROWS, {"id": "capture", "title": "Captured stream", "description": None}],
    )
    # not-recorded cells only for the scenario rows
    doc["cells"] = [
        c for c in doc["cells"] if not (c["column"] == "mistral" and c["row"] == "capture")
    ]
    for c in doc["cells"]:
        if c["column"] == "dashscope" and c["row"] == "single":
            c["expected"] = ["Q-EMPTY-STRING-OVERWRITE"]
    return doc


@pytest.fixture
def doc() -> dict[str, Any]:
    return demo_doc()


# --------------------------------------------------------------------------- schema


def test_schema_is_draft_2020_12() -> None:
    schema = matrix_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_built_doc_validates(doc: dict[str, Any]) -> None:
    validate_matrix(doc)
    verdicts = {(c["column"], c["row"]): c["verdict"] for c in doc["cells"]}
    assert verdicts[("openai", "single")] == "conforms"
    assert verdicts[("dashscope", "single")] == "quirk"
    assert verdicts[("dashscope", "truncated")] == "fails"
    assert verdicts[("llamacpp", "truncated")] == "error"
    assert verdicts[("llamacpp", "parallel")] == "unsupported"
    assert verdicts[("mistral", "single")] == "not recorded"


def test_field_matrix_from_the_pipeline_validates(tmp_path: Path) -> None:
    (tmp_path / "dash.jsonl").write_text("\n".join(json.dumps(c) for c in DASHSCOPE) + "\n")
    assert main(["analyze", "--report", str(tmp_path / "out"), str(tmp_path / "dash.jsonl")]) == 0
    written = json.loads((tmp_path / "out" / "quirks-matrix.json").read_text())
    validate_matrix(written)
    assert written["mode"] == "field"
    assert "Q-EMPTY-STRING-OVERWRITE" in (tmp_path / "out" / "quirks-matrix.md").read_text()
    assert (tmp_path / "out" / "quirks-matrix.html").stat().st_size > 0


def test_committed_matrix_validates() -> None:
    path = Path(__file__).resolve().parents[1] / "reports" / "quirks-matrix.json"
    if not path.exists():
        pytest.skip("no reports/quirks-matrix.json yet")
    validate_matrix(json.loads(path.read_text("utf-8")))


def _broken(doc: dict[str, Any], how: str) -> dict[str, Any]:
    d = copy.deepcopy(doc)
    if how == "verdict":
        d["cells"][0]["verdict"] = "maybe"
    elif how == "provenance":
        del d["columns"][0]["provenance"]["recorded_at"]
    elif how == "finding":
        cell = next(c for c in d["cells"] if c.get("findings"))
        cell["findings"][0]["level"] = "MAY"
    elif how == "column-ref":
        d["cells"][0]["column"] = "nobody"
    elif how == "quirk-ref":
        d["cells"][0]["quirks"] = ["Q-NOT-IN-THE-DOC"]
    elif how == "key":
        d["columns"][0]["base_url"] = "https://x.example/v1?api_key=abc"
    elif how == "extra":
        d["cells"][0]["surprise"] = 1
    elif how == "quirk-verdict-without-quirks":
        cell = next(c for c in d["cells"] if c["verdict"] == "quirk")
        cell["quirks"] = []
    return d


@pytest.mark.parametrize(
    ("how", "where", "words"),
    [
        ("verdict", "$.cells[0].verdict", "is not one of"),
        ("provenance", "$.columns[0].provenance", "'recorded_at' is a required property"),
        ("finding", ".findings[0].level", "'MAY'"),
        ("column-ref", "$.cells[0].column", "is not a column id"),
        ("quirk-ref", "$.cells[0]", "not in $.quirks"),
        ("key", "$.columns[0].base_url", "should not be valid"),
        ("extra", "$.cells[0]", "surprise"),
        ("quirk-verdict-without-quirks", ".quirks", "should be non-empty"),
    ],
)
def test_invalid_doc_gives_one_clear_line(
    doc: dict[str, Any], how: str, where: str, words: str
) -> None:
    with pytest.raises(MatrixError) as exc:
        validate_matrix(_broken(doc, how))
    msg = str(exc.value)
    assert "\n" not in msg
    assert where in msg and words in msg, msg


# --------------------------------------------------------------------------- Markdown


def test_markdown_table_symbols_and_footnotes(doc: dict[str, Any]) -> None:
    md = render_markdown(doc)
    assert "| scenario | **openai** | **dashscope** | **llamacpp** | **mistral** |" in md
    single = next(line for line in md.splitlines() if line.startswith("| One tool call"))
    assert re.search(r"✓\[\^m\d+\].*\\~\[\^m\d+\].*✓\[\^m\d+\].*∅\[\^m\d+\]", single), single
    truncated = next(line for line in md.splitlines() if line.startswith("| Truncated"))
    assert "✗[^m" in truncated and "![^m" in truncated
    parallel = next(line for line in md.splitlines() if line.startswith("| Parallel"))
    assert "–[^m" in parallel
    refs = set(re.findall(r"\[\^(m\d+)\](?!:)", md))
    defs = set(re.findall(r"^\[\^(m\d+)\]:", md, re.M))
    assert refs == defs and len(defs) >= 13  # every symbol has its footnote
    note = next(line for line in md.splitlines() if "dashscope × single" in line)
    assert "Q-EMPTY-STRING-OVERWRITE (expected)" in note
    assert "event 1 `/choices/0/delta/tool_calls/0/id` R-CONT-ID-ABSENT" in note
    assert "`cassettes/dashscope/single.yaml`" in note
    assert "record with `nox -s live -- --provider mistral`" in md


def test_markdown_quirk_rows_and_client_lines(doc: dict[str, Any]) -> None:
    md = render_markdown(doc)
    quirk_row = next(line for line in md.splitlines() if line.startswith("| `Q-INDEX-ALL-ZERO`"))
    assert quirk_row.count("\\~") == 1  # only dashscope among providers
    assert "- **openai**: every strategy assembles the right calls" in md
    dash = next(line for line in md.splitlines() if line.startswith("- **dashscope**"))
    assert "naive accumulation breaks on: Q-EMPTY-STRING-OVERWRITE" in dash
    assert "guarded breaks on: Q-INDEX-ALL-ZERO" in dash
    assert "use a robust accumulator (conformance.client)" in dash
    # a call that never got a name: catalogued now (it once read as the bare rule)
    assert "even the robust accumulator cannot recover: Q-NAME-NEVER-SENT" in dash
    assert "- **mistral**: not recorded; record with `nox -s live -- --provider mistral`" in md
    assert "### Reference profiles (end-to-end negative controls)" in md
    # one row per profile: what it injects next to what the analysis reported
    assert "| profile | scenario | verdict | injects (expected) | analysis reports | match |" in md
    assert "### Captures" in md and "`Field.jsonl`" in md
    assert "### Legend" in md and "∅ not recorded" in md


def test_markdown_trial_counts() -> None:
    d = build_doc({"vllm": {"single": DASHSCOPE}})
    d["cells"][0]["trials"] = {
        "n": 3,
        "quirk_counts": {"Q-EMPTY-STRING-OVERWRITE": 2},
        "verdict_counts": {"quirk": 2, "conforms": 1},
    }
    validate_matrix(d)
    row = next(x for x in render_markdown(d).splitlines() if x.startswith("| `Q-EMPTY-STRING"))
    assert "\\~ 2/3[^m1]" in row


def test_markdown_escapes_table_breakers() -> None:
    d = build_doc({"p": {"single": CONFORMING}})
    # a new list and a new row: build_doc's rows are the shared ROWS, left untouched
    d["rows"] = [dict(d["rows"][0], title="pipes | and `ticks`"), *d["rows"][1:]]
    md = render_markdown(d)
    line = next(x for x in md.splitlines() if x.startswith("| pipes"))
    assert "pipes \\| and \\`ticks\\`" in line


def test_update_readme(tmp_path: Path, doc: dict[str, Any]) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Project\n\n## The matrix\n\nintro\n<!-- matrix:start -->\nold table\n"
        "<!-- matrix:end -->\n\nmore\n"
    )
    md = render_markdown(doc)
    assert md.startswith("## Streaming") and "\n### Legend" in md
    assert update_readme(readme, md) is True
    text = readme.read_text()
    assert "old table" not in text
    assert "intro\n<!-- matrix:start -->\n### Streaming tool-call conformance\n" in text
    assert "\n#### Legend\n" in text and "[^m1]: " in text  # nested under "## The matrix"
    assert text.endswith("<!-- matrix:end -->\n\nmore\n")
    assert update_readme(readme, md) is False  # idempotent
    (tmp_path / "bare.md").write_text("no markers\n")
    with pytest.raises(MatrixError, match="matrix:start"):
        update_readme(tmp_path / "bare.md", md)


# --------------------------------------------------------------------------- HTML (static shape)


def test_html_is_self_contained_and_embeds_the_matrix(doc: dict[str, Any]) -> None:
    doc["cells"][0]["findings"] = [
        {
            "rule": "R-NO-ERROR",
            "level": "MUST",
            "quirk": None,
            "event": 0,
            "pointer": None,
            "message": "</script><script>alert(1)</script>",
        }
    ]
    page = render_html(doc)
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page)
    assert "@import" not in page and "url(" not in page
    assert page.count("</script>") == 2
    m = re.search(r'<script type="application/json" id="matrix-data">(.*?)</script>', page, re.S)
    assert m is not None and json.loads(m.group(1)) == page_data(doc)
    for testid in ("filter-provider", "filter-scenario", "filter-verdict", "filter-quirk"):
        assert f'id="{testid}" data-testid="{testid}"' in page
    assert 'data-verdict="quirk" data-column="dashscope" data-row="single"' in page
    assert 'id="evidence"' in page and 'id="quirk-Q-EMPTY-STRING-OVERWRITE"' in page
    assert page.count("Q-EMPTY-STRING-OVERWRITE</code> ") == 1  # catalogue text rendered once
    assert 'data-strategy="guarded"' in page and 'id="provenance"' in page


def test_page_data_is_a_lossless_compaction(doc: dict[str, Any]) -> None:
    compact = page_data(doc)
    assert set(compact["quirks"]["Q-EMPTY-STRING-OVERWRITE"]) == {
        "title",
        "level",
        "anchor",
        "group",
    }
    used = {f["rule"] for c in doc["cells"] for f in c.get("findings", [])}
    assert set(compact["rules"]) == used & set(RULES)
    for full, small in zip(doc["cells"], compact["cells"], strict=True):
        assert (small["column"], small["row"], small["verdict"]) == (
            full["column"],
            full["row"],
            full["verdict"],
        )
        prefix = small.get("evidence_prefix", "")
        suffix = small.get("evidence_suffix", "")
        restored = [
            prefix + e["data"] + ("" if e.get("x") else suffix)
            if e["kind"] == "chunk"
            else e["data"]
            for e in small.get("evidence", [])
        ]
        assert restored == [e["data"] for e in full.get("evidence", [])]
        shown = ("index", "id", "name", "arguments")  # the calls table's columns
        full_robust = (full.get("tool_calls") or {}).get("robust")
        assert small.get("tool_calls", {}).get("robust") == (
            None if full_robust is None else [{k: x[k] for k in shown} for x in full_robust]
        )
        strings = compact["strings"]
        for f_full, f_small in zip(
            full.get("findings", []), small.get("findings", []), strict=True
        ):
            msg = f_small["message"]
            assert (strings[msg] if isinstance(msg, int) else msg) == f_full["message"]
    dash = next(c for c in compact["cells"] if (c["column"], c["row"]) == ("dashscope", "single"))
    assert (
        dash["evidence_prefix"].startswith('{"id":"chatcmpl-1"') and "naive" in dash["tool_calls"]
    )


def test_html_catalogue_links(doc: dict[str, Any]) -> None:
    assert 'data-catalogue-url=""' in render_html(doc)
    doc["links"] = {"catalogue": "https://example.org/quirks-catalogue.md"}
    validate_matrix(doc)
    page = render_html(doc)
    anchor = doc["quirks"]["Q-EMPTY-STRING-OVERWRITE"]["anchor"]
    assert f'href="https://example.org/quirks-catalogue.md{anchor}"' in page


# --------------------------------------------------------------------------- diff


def _with(doc: dict[str, Any], column: str, row: str, chunks: list[Any]) -> dict[str, Any]:
    d = copy.deepcopy(doc)
    d["cells"] = [
        cell_from_chunks(column, row, chunks) if (c["column"], c["row"]) == (column, row) else c
        for c in d["cells"]
    ]
    for q in d["cells"][[(c["column"], c["row"]) for c in d["cells"]].index((column, row))][
        "quirks"
    ]:
        d["quirks"].setdefault(q, doc["quirks"].get(q) or {"title": q, "anchor": "#" + q.lower()})
    return d


def _status(diffs: list[Any], column: str, row: str) -> list[str]:
    return next(d.statuses for d in diffs if (d.column, d.row) == (column, row))


def test_diff_statuses(doc: dict[str, Any]) -> None:
    new = _with(doc, "openai", "single", DASHSCOPE)  # planted regression: conforms -> quirk
    new = _with(new, "dashscope", "truncated", CONFORMING)  # fixed: fails -> conforms
    new = _with(new, "dashscope", "parallel", DASHSCOPE)  # quirk -> quirk, quirks swapped
    for c in new["cells"]:  # volatile fields never count
        c["cassette"] = (c.get("cassette") or "") + ".new" if c.get("cassette") else None
        for f in c.get("findings", []):
            f["message"] += " (re-recorded)"
    new["generated"] = "2027-01-01T00:00:00Z"
    validate_matrix(new)
    diffs = diff_matrices(doc, new)
    assert _status(diffs, "openai", "single") == ["regressed", "new quirk"]
    assert _status(diffs, "dashscope", "truncated")[0] == "fixed"
    par = next(d for d in diffs if (d.column, d.row) == ("dashscope", "parallel"))
    assert par.statuses == ["fixed", "new quirk", "gone quirk"]  # guarded wrong -> ok
    assert par.new_quirks == ["Q-EMPTY-STRING-OVERWRITE"]
    assert set(par.gone_quirks) == {"Q-INDEX-ALL-ZERO", "Q-ARGS-WHOLE-IN-ONE-DELTA"}
    assert _status(diffs, "openai", "parallel") == ["unchanged"]
    assert _status(diffs, "mistral", "single") == ["unchanged"]
    text = format_text(diffs)
    assert "REGRESSED, NEW QUIRK" in text and "openai × single: ✓ conforms → ~ quirk" in text
    assert text.rstrip().splitlines()[-1].startswith("summary: 1 regressed, 2 fixed")
    md = format_markdown(diffs)
    assert (
        "**regressions found**" in md and "| **regressed**, new quirk | `openai` | `single` |" in md
    )


def test_diff_guarded_impact_regression_with_same_verdict(doc: dict[str, Any]) -> None:
    new = copy.deepcopy(doc)
    cell = next(c for c in new["cells"] if (c["column"], c["row"]) == ("dashscope", "single"))
    cell["impact"]["guarded"] = {"status": "wrong", "detail": "1 call(s) instead of 2"}
    d = next(x for x in diff_matrices(doc, new) if (x.column, x.row) == ("dashscope", "single"))
    assert d.statuses == ["regressed"] and d.impact == {"guarded": ("ok", "wrong")}


def test_diff_added_and_removed_cells(doc: dict[str, Any]) -> None:
    new = copy.deepcopy(doc)
    new["cells"] = [c for c in new["cells"] if c["column"] != "llamacpp"]
    new["cells"] = [
        cell_from_chunks("mistral", "single", ALL_ZERO)
        if (c["column"], c["row"]) == ("mistral", "single")
        else c
        for c in new["cells"]
    ]
    diffs = diff_matrices(doc, new)
    assert _status(diffs, "mistral", "single") == ["added"]
    assert _status(diffs, "llamacpp", "single") == ["removed"]
    assert not any(d.regressed for d in diffs)


def test_diff_command_and_cli(
    tmp_path: Path, doc: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    old, new, same = tmp_path / "old.json", tmp_path / "new.json", tmp_path / "same.json"
    old.write_text(json.dumps(doc))
    same.write_text(json.dumps(doc))
    new.write_text(json.dumps(_with(doc, "openai", "single", ALL_ZERO)))
    assert diff_command(old, same) == 0
    assert "summary: 0 regressed, 0 fixed" in capsys.readouterr().out
    assert diff_command(old, new) == 1
    assert "REGRESSED" in capsys.readouterr().out
    assert main(["report", "--diff", str(old), str(new)]) == 1
    assert main(["report", "--diff", str(old), str(same), "--markdown"]) == 0
    assert "### Conformance matrix diff: no regressions" in capsys.readouterr().out
    (tmp_path / "bad.json").write_text("{}")
    assert main(["report", "--diff", str(old), str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("toolcall-conformance report: ")
        and "bad.json: $: " in err
        and "\n" not in err
    )
    assert main(["report", "--diff", str(old), str(tmp_path / "missing.json")]) == 2
    assert "missing.json: no such file" in capsys.readouterr().err


# --------------------------------------------------------------------------- files and render


def test_write_reports_and_render_command(
    tmp_path: Path, doc: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_reports(doc, tmp_path / "reports")
    assert sorted(p.name for p in paths.values()) == [
        "quirks-matrix.html",
        "quirks-matrix.json",
        "quirks-matrix.md",
    ]
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == sorted(
        p.name for p in paths.values()
    )
    paths["md"].unlink()
    paths["html"].unlink()
    assert render_command(tmp_path / "reports") == 0
    assert paths["md"].read_text() == render_markdown(doc)
    assert paths["html"].exists()
    assert main(["report", "--out", str(tmp_path / "reports")]) == 0
    capsys.readouterr()
    assert render_command(tmp_path / "nowhere") == 2
    assert "quirks-matrix.json: no such file" in capsys.readouterr().err
    paths["json"].write_text(json.dumps(_broken(doc, "verdict")))
    assert render_command(tmp_path / "reports") == 2
    assert "$.cells[0].verdict" in capsys.readouterr().err


def test_write_reports_refuses_an_invalid_doc(tmp_path: Path, doc: dict[str, Any]) -> None:
    with pytest.raises(MatrixError):
        write_reports(_broken(doc, "verdict"), tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_evidence_is_trimmed_and_highlighted() -> None:
    events = [Event(i, CHUNK, None, "x" * 1000 if i == 5 else f"e{i}", None) for i in range(40)]
    ev = evidence_from_events(events, [{"event": 5}, {"event": 30}, {"event": None}])
    assert [e["n"] for e in ev] == [4, 5, 6, 29, 30, 31]
    assert [e["n"] for e in ev if e.get("highlight")] == [5, 30]
    assert len(ev[1]["data"]) == 400 and ev[1]["data"].endswith("…")
