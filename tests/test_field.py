"""Field evidence: public recordings analysed into a committed data file, carried by the
matrix beside the recorded cells with a mark of its own, never as a cell's verdict."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_report import CONFORMING, DASHSCOPE, demo_doc

from conformance import field
from conformance.matrix import add_field_evidence, build_matrix
from conformance.providers import load_providers
from conformance.report import (
    MatrixError,
    render_headline,
    render_html,
    render_markdown,
    validate_matrix,
)

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = Path(os.environ.get("CONFORMANCE_CAPTURES") or ROOT.parent / "shared" / "captures")
DASHSCOPE_SOURCE = (
    "https://github.com/vercel/ai/blob/3d37805ee587e48c51bc7b4f1e8a1f203100ce7a"
    "/packages/alibaba/src/__fixtures__/alibaba-tool-call.chunks.txt"
)


def _jsonl(path: Path, chunks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in chunks))
    return path


def _sources(tmp_path: Path) -> Path:
    p = tmp_path / "sources.yaml"
    p.write_text(
        "routes:\n"
        "  dashscope: {label: DashScope, column: dashscope}\n"
        "  acme: {label: Acme Cloud, column: null}\n"
        "captures:\n"
        "  dash.jsonl: {route: dashscope, source: 'https://example.org/dash'}\n"
        "  good.jsonl: {route: acme, source: 'https://example.org/good'}\n"
    )
    return p


def evidence_doc() -> dict[str, Any]:
    """A hand-written field-evidence document: one capture of a column, one of a provider
    route without a column."""
    ok = {"status": "ok"}
    return {
        "format": field.FORMAT,
        "note": field.NOTE,
        "unreadable": [],
        "routes": {
            "mistral": {"label": "Mistral (public)", "column": "mistral"},
            "acme": {"label": "Acme Cloud", "column": None},
        },
        "entries": [
            {
                "capture": "m.jsonl",
                "route": "mistral",
                "column": "mistral",
                "source": "https://example.org/m",
                "model": "m-large",
                "verdict": "quirk",
                "reason": None,
                "quirks": ["Q-EMPTY-STRING-OVERWRITE"],
                "finish_reason": "tool_calls",
                "events": 4,
                "calls": 1,
                "impact": {
                    "naive": {"status": "wrong", "detail": "name ''"},
                    "guarded": ok,
                    "robust": ok,
                },
            },
            {
                "capture": "a.jsonl",
                "route": "acme",
                "column": None,
                "source": "https://github.com/acme/fixtures/blob/0/a.jsonl",
                "model": "acme-1",
                "verdict": "conforms",
                "reason": None,
                "quirks": [],
                "finish_reason": "tool_calls",
                "events": 4,
                "calls": 1,
                "impact": {"naive": ok, "guarded": ok, "robust": ok},
            },
        ],
    }


def doc_with_field() -> dict[str, Any]:
    return add_field_evidence(demo_doc(), evidence_doc())


# --------------------------------------------------------------------------- the data file


def test_committed_data_file_matches_a_regeneration_from_the_captures() -> None:
    if not CAPTURES.is_dir():
        pytest.skip(f"{CAPTURES} is absent: the public captures are not in this checkout")
    fresh = field.analyse_directory(CAPTURES, field.load_sources())
    assert field.dumps(fresh) == field.EVIDENCE_FILE.read_text("utf-8"), (
        "conformance/data/field-evidence.json is out of date: python3 noxw -s field"
    )


def test_committed_data_file_covers_the_five_columns_with_sources() -> None:
    doc = field.load_evidence()
    by_col = field.for_columns(doc, ["openai", "dashscope", "ollama", "vllm", "llamacpp"])
    assert sorted(by_col) == ["dashscope", "llamacpp", "ollama", "openai", "vllm"]
    assert all(e["source"].startswith("https://github.com/") for v in by_col.values() for e in v)
    [dash] = by_col["dashscope"]
    assert dash["source"] == DASHSCOPE_SOURCE
    assert "Q-EMPTY-STRING-OVERWRITE" in dash["quirks"]
    assert dash["model"] == "qwen3-max" and dash["verdict"] == "quirk"
    assert len(by_col["openai"]) == 5
    others = {r["route"] for r in field.routes_without_column(doc, list(by_col))}
    assert {"groq", "mistral", "gemini", "xai", "deepseek", "azure"} <= others


def test_analyse_directory_runs_the_analyzer_and_maps_routes(tmp_path: Path) -> None:
    caps = tmp_path / "caps"
    caps.mkdir()
    _jsonl(caps / "dash.jsonl", DASHSCOPE)
    _jsonl(caps / "good.jsonl", CONFORMING)
    _jsonl(caps / "myproxy-session1.jsonl", DASHSCOPE)  # not in the sources file
    doc = field.analyse_directory(caps, field.load_sources(_sources(tmp_path)))
    got = {e["capture"]: e for e in doc["entries"]}
    assert got["dash.jsonl"]["column"] == "dashscope"
    assert got["dash.jsonl"]["source"] == "https://example.org/dash"
    assert got["dash.jsonl"]["verdict"] == "quirk"
    assert "Q-EMPTY-STRING-OVERWRITE" in got["dash.jsonl"]["quirks"]
    assert got["dash.jsonl"]["impact"]["robust"] == {"status": "ok"}
    assert got["good.jsonl"]["verdict"] == "conforms" and got["good.jsonl"]["column"] is None
    assert got["myproxy-session1.jsonl"]["route"] == "myproxy"
    assert got["myproxy-session1.jsonl"]["column"] is None
    assert got["myproxy-session1.jsonl"]["source"] == "myproxy-session1.jsonl"
    assert set(doc["routes"]) == {"dashscope", "acme", "myproxy"}


def test_field_command_writes_the_file_and_rejects_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    caps = tmp_path / "caps"
    caps.mkdir()
    _jsonl(caps / "dash.jsonl", DASHSCOPE)
    out = tmp_path / "evidence.json"
    assert field.main([str(caps), "--sources", str(_sources(tmp_path)), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["entries"][0]["capture"] == "dash.jsonl"
    assert field.main([str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"conformance field: {tmp_path / 'nowhere'}: not a directory of captures"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("routes: {}\ncaptures:\n  x.jsonl: {route: nope, source: u}\n")
    with pytest.raises(field.FieldError, match="capture 'x.jsonl' names no known route"):
        field.load_sources(bad)


# --------------------------------------------------------------------------- the matrix


def test_matrix_keeps_field_evidence_without_the_captures() -> None:
    """build_matrix reads the committed data file: a fresh clone without the captures
    still carries the evidence, and not-recorded cells stay not recorded."""
    known = load_providers(ROOT / "providers.yaml")
    providers = [known["openai"], known["dashscope"]]
    doc = build_matrix([], providers)
    validate_matrix(doc)
    cols = {c["id"]: c for c in doc["columns"]}
    assert [e["source"] for e in cols["dashscope"]["field_evidence"]] == [DASHSCOPE_SOURCE]
    assert len(cols["openai"]["field_evidence"]) == 5
    assert {c["verdict"] for c in doc["cells"]} == {"not recorded"}
    assert "groq" in {r["route"] for r in doc["field_providers"]}
    assert "Q-EMPTY-STRING-OVERWRITE" in doc["quirks"]


def test_schema_checks_field_evidence() -> None:
    doc = doc_with_field()
    validate_matrix(doc)
    broken = copy.deepcopy(doc)
    col = next(c for c in broken["columns"] if c["id"] == "mistral")
    col["field_evidence"][0]["verdict"] = "great"
    with pytest.raises(MatrixError, match=r"field_evidence\[0\]\.verdict"):
        validate_matrix(broken)
    broken = copy.deepcopy(doc)
    broken["field_providers"][0]["entries"][0]["quirks"] = ["Q-NOT-A-QUIRK"]
    with pytest.raises(MatrixError, match="Q-NOT-A-QUIRK"):
        validate_matrix(broken)
    broken = copy.deepcopy(doc)
    del broken["field_providers"][0]["entries"][0]["source"]
    with pytest.raises(MatrixError, match="source"):
        validate_matrix(broken)


# --------------------------------------------------------------------------- rendering


def test_markdown_shows_field_evidence_as_its_own_kind() -> None:
    md = render_markdown(doc_with_field(), quirk_doc="../docs/quirks.md")
    row = next(x for x in md.splitlines() if x.startswith("| ◇ *seen in public recordings"))
    cells = [c.strip() for c in row.split("|")[2:-1]]
    assert cells[-1] == "◇ \\~1"  # mistral: the last column; no other column has evidence
    assert all(c == "" for c in cells[:-1])
    grid = [x for x in md.splitlines() if x.startswith("| One tool call")]
    assert grid[0].rstrip(" |").split("|")[-1].strip().startswith("∅")  # still not recorded
    assert "### Seen in public recordings (not recorded by this suite)" in md
    assert "[example.org](https://example.org/m)" in md
    assert "| Acme Cloud | `acme-1` | ◇ ✓1 | – | ✓ 1/1 | ✓ 1/1 | ✓ 1/1 |" in md
    assert "[`Q-EMPTY-STRING-OVERWRITE`](../docs/quirks.md#q-empty-string-overwrite)" in md


def test_headline_answers_what_happens_with_a_provider() -> None:
    text = render_headline(doc_with_field())
    row = next(x for x in text.splitlines() if x.startswith("| ◇"))
    assert row.endswith(
        "| ◇ \\~1 [`Q-EMPTY-STRING-OVERWRITE`](docs/quirks.md#q-empty-string-overwrite) "
        "[example.org](https://example.org/m) |"
    )
    assert (
        "| Acme Cloud | ◇ ✓1 | – | ✓ 1/1 | ✓ 1/1 | ✓ 1/1 | [acme/fixtures](https://github.com/acme/fixtures/blob/0/a.jsonl) |"
        in text
    )
    assert "[^" not in text  # no footnotes in the README's table


def test_html_marks_field_evidence_apart() -> None:
    html = render_html(doc_with_field())
    assert '<td class="fe hit" data-column="mistral"' in html
    assert 'id="public-recordings"' in html
    assert "seen in public recordings, not recorded by this suite" in html
    assert 'href="https://example.org/m"' in html
    assert '<tr data-route="acme">' in html
