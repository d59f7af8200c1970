"""The client matrix's reports (conformance.client_matrix.report), pinned by what a reader
sees: the mark in each cell and the anchor it links to, the seed-quirk tables of the report
and of the README, the per-client summary counts, the per-provider k/n, the findings, the
HTML evidence of each cell, and the three files written (refused when a cell is missing)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conformance.client_matrix import report as R


def client(id: str, package: str, version: str, eco: str = "python", **kw: Any) -> dict[str, Any]:
    return {"id": id, "package": package, "version": version, "ecosystem": eco, **kw}


def cell(c: str, s: str, outcome: str = "ok", detail: str = "1 call(s) right", **kw: Any):
    d: dict[str, Any] = {"client": c, "stream": s, "outcome": outcome, "detail": detail}
    d["calls"] = kw.pop("calls", [])
    if outcome not in ("ok", "n/a", "error", "hung", "crashed"):
        d["problems"] = kw.pop("problems", [])
    return {**d, **kw}


CLIENTS = [
    client("conformance", "conformance", "9.8.7", label="conformance.client (this project)"),
    client("openai-python", "openai", "2.54.0", label="openai (Python)"),
    client("crow-cli", "crow", "0.1", "npm", label="crow", origin="crow-cli's brace counter"),
]
PROFILES = [
    {
        "id": "profile:empty-string-overwrite",
        "kind": "profile",
        "profile": "empty-string-overwrite",
        "quirks": ["Q-EMPTY-STRING-OVERWRITE"],
    },
    {"id": "profile:reference", "kind": "profile", "profile": "reference"},
    {
        "id": "profile:id-absent",
        "kind": "profile",
        "profile": "id-absent",
        "quirks": ["Q-ID-ABSENT", "Q-INDEX-ABSENT"],
    },
]
PROVIDERS = [
    {
        "id": "vllm:parallel",
        "kind": "provider",
        "column": "vllm",
        "scenario": "parallel",
        "source": "cassettes/vllm/parallel.yaml#0",
    },
    {
        "id": "vllm:single",
        "kind": "provider",
        "column": "vllm",
        "source": "cassettes/vllm/s.yaml#0",
    },
    {
        "id": "sglang:single",
        "kind": "provider",
        "column": "sglang",
        "scenario": "single",
        "source": "cassettes/sglang/single.yaml#0",
    },
]
CAPTURES = [
    {
        "id": "capture:openrouter-1",
        "kind": "capture",
        "column": "OpenRouter",
        "source": "https://example.org/a?b=1&c=2",
    },
    {"id": "capture:local-2", "kind": "capture", "column": "local", "source": "local-2.jsonl"},
]
# What each client did on each stream (everything else: ok).
OUTCOMES: dict[tuple[str, str], dict[str, Any]] = {
    ("openai-python", "profile:empty-string-overwrite"): dict(
        outcome="wrong",
        detail="name overwritten: call 0: name '', want 'get_weather'",
        problems=["name overwritten", "id lost", "not attributable"],
    ),
    ("crow-cli", "profile:empty-string-overwrite"): dict(
        outcome="crashed", detail="Type|Error: Cannot read 'x': of undefined"
    ),
    ("openai-python", "profile:id-absent"): dict(outcome="n/a", detail="no right call"),
    ("conformance", "profile:id-absent"): dict(elicited=False),
    ("conformance", "profile:empty-string-overwrite"): dict(elicited=True),
    ("crow-cli", "profile:id-absent"): dict(
        outcome="id invented", detail="id invented: call_1", problems=["id invented"]
    ),
    ("crow-cli", "profile:reference"): dict(outcome="error", detail="node is not installed"),
    ("openai-python", "vllm:parallel"): dict(
        outcome="merged", detail="calls merged: a+b in one call", problems=["calls merged"]
    ),
    ("openai-python", "vllm:single"): dict(outcome="n/a", detail="nothing to assemble"),
    ("crow-cli", "vllm:single"): dict(outcome="hung", detail="no answer within 12.5 s"),
    ("crow-cli", "capture:openrouter-1"): dict(
        outcome="dropped", detail="call dropped", problems=["call dropped"], evidence="field"
    ),
}


def matrix(*streams: list[dict[str, Any]]) -> dict[str, Any]:
    chosen = [s for group in streams for s in group]
    return {
        "generated_at": "2026-12-01T10:00:00Z",
        "suite_version": "9.8.7",
        "timeout_seconds": 12.5,
        "clients": copy.deepcopy(CLIENTS),
        "streams": copy.deepcopy(chosen),
        "cells": [
            cell(c["id"], s["id"], **OUTCOMES.get((c["id"], s["id"]), {}))
            for c in CLIENTS
            for s in chosen
        ],
    }


FULL = matrix(PROFILES, PROVIDERS, CAPTURES)


# ------------------------------------------------------------------ the Markdown report

# What a reader of reports/client-matrix.md sees for FULL, line for line.
MARKDOWN = """\
# Client matrix: which client libraries survive which streams

Generated 2026-12-01T10:00:00Z by `python3 noxw -s clients -- --captures DIR` (DIR: field captures; suite 9.8.7). Each client library streamed one request per stream through its normal streaming API; what it assembled is judged call by call against what a correct client does with the very bytes it received: the right call where the bytes hold one (the analyzer's reading of them says which do), a flag, an error or a refusal where they hold none; the robust reading's repair is evidence, never the right answer. A job is hung after 12.5 s. Every cell links to its evidence in the HTML view. See docs/clients.md.

LEGEND_HERE

## Clients

| id | package | version | ecosystem | how it is used |
|---|---|---|---|---|
| conformance | conformance | 9.8.7 | python | conformance.client (this project) |
| openai-python | openai | 2.54.0 | python | openai (Python) |
| crow-cli | crow | 0.1 | npm | crow |

## Summary

| client | streams | ok | id invented | wrong | silent partial | invalid passed | args lost | dropped | merged | crashed | hung | error | n/a (apart) |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
| conformance | 3 profile | 3 | · | · | · | · | · | · | · | · | · | · | · |
| conformance | 3 provider | 3 | · | · | · | · | · | · | · | · | · | · | · |
| conformance | 2 capture | 2 | · | · | · | · | · | · | · | · | · | · | · |
| openai-python | 3 profile | 1 | · | 1 | · | · | · | · | · | · | · | · | 1 |
| openai-python | 3 provider | 1 | · | · | · | · | · | · | 1 | · | · | · | 1 |
| openai-python | 2 capture | 2 | · | · | · | · | · | · | · | · | · | · | · |
| crow-cli | 3 profile | · | 1 | · | · | · | · | · | · | 1 | · | 1 | · |
| crow-cli | 3 provider | 2 | · | · | · | · | · | · | · | · | 1 | · | · |
| crow-cli | 2 capture | 1 | · | · | · | · | · | 1 | · | · | · | · | · |

## Clients × seed quirks

The five quirks of the seed documents, each on its reference profile.

| client | version | `Q-EMPTY-STRING-OVERWRITE` | `Q-ARGS-TRUNCATED` | `Q-INDEX-ALL-ZERO` | `Q-INDEX-ABSENT` | `Q-ID-ABSENT` |
|---|---|---|---|---|---|---|
| conformance (python) | conformance 9.8.7 | [✓](client-matrix.html#e-conformance--profile-empty-string-overwrite) | – | – | – | [✓ °](client-matrix.html#e-conformance--profile-id-absent) |
| openai-python (python) | openai 2.54.0 | [✗ name, id lost](client-matrix.html#e-openai-python--profile-empty-string-overwrite) | – | – | – | [n/a](client-matrix.html#e-openai-python--profile-id-absent) |
| crow-cli (npm) *seed* | crow 0.1 | [‼ Type\\|Error](client-matrix.html#e-crow-cli--profile-empty-string-overwrite) | – | – | – | [⚠ id invented](client-matrix.html#e-crow-cli--profile-id-absent) |

## Clients × quirks (reference profiles, live over HTTP)

| stream | conformance | openai-python | crow-cli |
|---|---|---|---|
| empty-string-overwrite (`Q-EMPTY-STRING-OVERWRITE`) | [✓](client-matrix.html#e-conformance--profile-empty-string-overwrite) | [✗ name, id lost](client-matrix.html#e-openai-python--profile-empty-string-overwrite) | [‼ Type\\|Error](client-matrix.html#e-crow-cli--profile-empty-string-overwrite) |
| reference (control) | [✓](client-matrix.html#e-conformance--profile-reference) | [✓](client-matrix.html#e-openai-python--profile-reference) | [!](client-matrix.html#e-crow-cli--profile-reference) |
| id-absent (`Q-ID-ABSENT`, `Q-INDEX-ABSENT`) | [✓ °](client-matrix.html#e-conformance--profile-id-absent) | [n/a](client-matrix.html#e-openai-python--profile-id-absent) | [⚠ id invented](client-matrix.html#e-crow-cli--profile-id-absent) |

## Providers × clients (recorded cassettes, replayed over HTTP)

Recorded traffic of a real server, replayed byte for byte. Per provider: the recorded scenarios each client assembled right.

| provider | conformance | openai-python | crow-cli |
|---|---|---|---|
| vllm | 2/2 | 0/1 | 1/2 |
| sglang | 1/1 | 1/1 | 1/1 |

| stream | conformance | openai-python | crow-cli |
|---|---|---|---|
| vllm: parallel | [✓](client-matrix.html#e-conformance--vllm-parallel) | [✗ merged](client-matrix.html#e-openai-python--vllm-parallel) | [✓](client-matrix.html#e-crow-cli--vllm-parallel) |
| vllm: vllm:single | [✓](client-matrix.html#e-conformance--vllm-single) | [n/a](client-matrix.html#e-openai-python--vllm-single) | [∞](client-matrix.html#e-crow-cli--vllm-single) |
| sglang: single | [✓](client-matrix.html#e-conformance--sglang-single) | [✓](client-matrix.html#e-openai-python--sglang-single) | [✓](client-matrix.html#e-crow-cli--sglang-single) |

## Field captures × clients (field evidence)

Public recordings of real providers (sources in the HTML view); derived verdicts only, the recordings themselves are not in this repository.

| provider | conformance | openai-python | crow-cli |
|---|---|---|---|
| OpenRouter | 1/1 | 1/1 | 0/1 |
| local | 1/1 | 1/1 | 1/1 |

| stream | conformance | openai-python | crow-cli |
|---|---|---|---|
| OpenRouter (openrouter-1) | [✓](client-matrix.html#e-conformance--capture-openrouter-1) | [✓](client-matrix.html#e-openai-python--capture-openrouter-1) | [✗ dropped](client-matrix.html#e-crow-cli--capture-openrouter-1) |
| local (local-2) | [✓](client-matrix.html#e-conformance--capture-local-2) | [✓](client-matrix.html#e-openai-python--capture-local-2) | [✓](client-matrix.html#e-crow-cli--capture-local-2) |

## Findings

- **openai-python** on `profile:empty-string-overwrite`: wrong: name overwritten: call 0: name '', want 'get_weather'
- **openai-python** on `vllm:parallel`: merged: calls merged: a+b in one call
- **crow-cli** on `profile:empty-string-overwrite`: crashed: Type|Error: Cannot read 'x': of undefined
- **crow-cli** on `profile:id-absent`: id invented: id invented: call_1
- **crow-cli** on `vllm:single`: hung: no answer within 12.5 s
- **crow-cli** on `capture:openrouter-1`: dropped: call dropped
""".replace("LEGEND_HERE", R.LEGEND)


def test_the_markdown_report_of_every_stream_kind_line_for_line() -> None:
    assert R.render_markdown(FULL) == MARKDOWN


def test_the_markdown_report_links_where_it_is_told_to() -> None:
    text = R.render_markdown(FULL, link="x.html")
    assert "[✗ merged](x.html#e-openai-python--vllm-parallel)" in text
    assert "client-matrix.html" not in text


def test_without_captures_the_command_line_names_no_directory_and_no_capture_section() -> None:
    m = matrix(PROFILES, PROVIDERS)
    text = R.render_markdown(m)
    assert text.splitlines()[2].startswith(
        "Generated 2026-12-01T10:00:00Z by `python3 noxw -s clients` (suite 9.8.7). Each "
    )
    assert "## Field captures" not in text and "capture" not in text
    assert "## Providers × clients" in text and "## Clients × quirks (reference" in text


def test_a_matrix_of_captures_alone_has_no_profile_or_provider_section() -> None:
    text = R.render_markdown(matrix(CAPTURES))
    assert "## Clients × quirks (reference" not in text and "## Providers ×" not in text
    assert "| OpenRouter | 1/1 | 1/1 | 0/1 |" in text
    # the seed table is still there: no profile, so every seed quirk is "–"
    assert "| crow-cli (npm) *seed* | crow 0.1 | – | – | – | – | – |" in text


def test_a_scripted_parser_column_is_counted_and_shown_apart_from_the_providers() -> None:
    scripted = [
        {
            "id": "vllm-hermes:single",
            "kind": "scripted",
            "column": "vllm-hermes",
            "scenario": "single",
            "source": "cassettes/vllm-hermes/single.yaml#0",
        }
    ]
    m = matrix(PROVIDERS[:1], scripted)
    m["cells"][-1].update(outcome="wrong", detail="name overwritten", problems=["name overwritten"])
    text = R.render_markdown(m)
    assert "| crow-cli | 1 provider | 1 |" in text
    assert "| crow-cli | 1 scripted | · | · | 1 |" in text
    providers, rest = text.split("## vLLM's tool parsers × clients (scripted model output")
    assert "vllm-hermes" not in providers.split("## Providers × clients")[1]
    assert "scripted by this project" in rest and "| vllm-hermes | 1/1 | 1/1 | 0/1 |" in rest
    assert "| parser column | conformance | openai-python | crow-cli |" in rest
    assert "not what any provider's model sends" in rest
    R.validate(m)  # the schema knows the kind


def test_no_findings_section_when_every_cell_is_ok_n_a_or_error() -> None:
    m = matrix(PROFILES[1:2])
    m["cells"][1].update(outcome="n/a")
    assert [c["outcome"] for c in m["cells"]] == ["ok", "n/a", "error"]
    text = R.render_markdown(m)
    assert "## Findings" not in text
    assert text.endswith("[!](client-matrix.html#e-crow-cli--profile-reference) |\n")


def test_a_client_without_a_label_shows_an_empty_how_it_is_used() -> None:
    m = matrix(PROFILES[1:2])
    del m["clients"][0]["label"]
    assert "| conformance | conformance | 9.8.7 | python |  |" in R.render_markdown(m)


def test_a_whole_number_timeout_is_written_without_decimals() -> None:
    m = dict(matrix(PROFILES[1:2]), timeout_seconds=10.0)
    assert "A job is hung after 10 s." in R.render_markdown(m)


# ------------------------------------------------------------------ one cell's mark and anchor


@pytest.mark.parametrize(
    ("outcome", "extra", "shown"),
    [
        ("ok", {}, "✓"),
        ("ok", {"elicited": False}, "✓ °"),
        ("ok", {"elicited": True}, "✓"),
        ("n/a", {}, "n/a"),
        ("silent partial", {"problems": ["arguments truncated"]}, "✗ partial"),
        ("merged", {"elicited": False}, "✗ merged °"),
        ("id invented", {"problems": ["id invented"]}, "⚠ id invented"),
        # the kinds of wrong, short, in the cell's order; kinds with no short name left out
        (
            "wrong",
            {"problems": ["extra call", "name concatenated", "id invented"]},
            "✗ extra, name+",
        ),
        ("wrong", {"problems": ["arguments changed", "arguments concatenated"]}, "✗ args, args+"),
        ("wrong", {"problems": ["id changed", "name overwritten"]}, "✗ id changed, name"),
        ("wrong", {}, "✗ "),
        ("crashed", {"detail": "KeyError: 'index': in chunk 3"}, "‼ KeyError"),
        ("crashed", {"detail": "no colon here"}, "‼ no colon here"),
        ("hung", {}, "∞"),
        ("error", {"elicited": False}, "! °"),
    ],
)
def test_the_mark_a_reader_sees_in_a_cell(outcome: str, extra: dict[str, Any], shown: str):
    c = {"client": "x", "stream": "y", "outcome": outcome, "detail": "d", **extra}
    assert R.mark(c) == shown


def test_the_anchor_is_one_html_id_per_cell() -> None:
    assert R.anchor({"client": "openai-python", "stream": "vllm:parallel"}) == (
        "e-openai-python--vllm-parallel"
    )
    # every run of other characters becomes one dash; letters, digits, _ and - stay
    assert R.anchor({"client": "a_b", "stream": "Z9:: x/y.z"}) == "e-a_b--Z9-x-y-z"


@pytest.mark.parametrize(
    ("outcome", "cls"),
    [("ok", "ok"), ("args lost", "args-lost"), ("n/a", "n-a"), ("id invented", "id-invented")],
)
def test_an_evidence_section_is_classed_by_its_outcome(outcome: str, cls: str) -> None:
    assert R.css({"outcome": outcome}) == cls
    m = matrix(PROFILES[1:2])
    m["cells"][0].update(outcome=outcome, problems=[])
    assert f'<section id="e-conformance--profile-reference" class="ev {cls}">' in (R.render_html(m))


# ------------------------------------------------------------------ the seed tables


def test_the_readme_table_one_row_per_seed_quirk_then_legend_and_versions() -> None:
    assert R.readme_table(FULL).splitlines() == [
        "| quirk | conformance | openai-python | crow-cli *seed* |",
        "|---|---|---|---|",
        "| `Q-EMPTY-STRING-OVERWRITE` | "
        "[✓](reports/client-matrix.html#e-conformance--profile-empty-string-overwrite) | "
        "[✗ name, id lost](reports/client-matrix.html#e-openai-python--profile-empty-string-overwrite) | "
        "[‼ Type\\|Error](reports/client-matrix.html#e-crow-cli--profile-empty-string-overwrite) |",
        "| `Q-ARGS-TRUNCATED` | – | – | – |",
        "| `Q-INDEX-ALL-ZERO` | – | – | – |",
        "| `Q-INDEX-ABSENT` | – | – | – |",
        "| `Q-ID-ABSENT` | [✓ °](reports/client-matrix.html#e-conformance--profile-id-absent) | "
        "[n/a](reports/client-matrix.html#e-openai-python--profile-id-absent) | "
        "[⚠ id invented](reports/client-matrix.html#e-crow-cli--profile-id-absent) |",
        "",
        R.README_LEGEND + " Versions: openai-python openai 2.54.0, crow-cli crow 0.1.",
    ]


def test_the_seed_tables_skip_a_profile_stream_a_client_has_no_cell_on() -> None:
    m = matrix(PROFILES)
    m["cells"] = [c for c in m["cells"] if c["client"] != "openai-python"]
    row = "| openai-python (python) | openai 2.54.0 | – | – | – | – | – |"
    assert row in R.seed_table(m).splitlines()
    assert (
        R.readme_table(m)
        .splitlines()[2]
        .endswith(
            "| – | [‼ Type\\|Error](reports/client-matrix.html#e-crow-cli--profile-empty-string-overwrite) |"
        )
    )
    # the link is the caller's
    assert "](r.html#e-crow-cli--profile-id-absent)" in R.readme_table(m, link="r.html")
    assert "](s.html#e-crow-cli--profile-id-absent)" in R.seed_table(m, link="s.html")
    assert "](reports/client-matrix.html#e-crow-cli--profile-id-absent)" in R.seed_table(m)


def test_a_provider_stream_named_like_a_profile_is_not_a_seed_column() -> None:
    s = dict(PROVIDERS[0], id="vllm:id-absent", profile="id-absent")
    m = matrix([s])
    assert R.seed_table(m).splitlines()[2].endswith("| – | – | – | – | – |")
    assert R.readme_table(m).splitlines()[6] == "| `Q-ID-ABSENT` | – | – | – |"


# ------------------------------------------------------------------ validation and the files


def test_a_matrix_missing_one_cell_is_refused_and_says_which() -> None:
    m = matrix(PROFILES, PROVIDERS)
    R.validate(m)
    m["cells"] = [
        c for c in m["cells"] if (c["client"], c["stream"]) != ("openai-python", "vllm:single")
    ]
    with pytest.raises(
        jsonschema.ValidationError, match="^no cell for client openai-python on stream vllm:single$"
    ):
        R.validate(m)


def test_a_matrix_the_schema_refuses_is_refused() -> None:
    m = matrix(PROFILES)
    m["cells"][0]["outcome"] = "fine"
    with pytest.raises(jsonschema.ValidationError, match="'fine' is not one of"):
        R.validate(m)
    assert R.schema()["title"].startswith("Client matrix")


def test_the_three_reports_are_written_as_rendered(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    paths = R.write_reports(FULL, out)
    assert paths == [
        out / "client-matrix.json",
        out / "client-matrix.md",
        out / "client-matrix.html",
    ]
    raw = paths[0].read_text(encoding="utf-8")
    assert raw == json.dumps(FULL, indent=1, ensure_ascii=False) + "\n"
    assert json.loads(raw) == FULL
    assert paths[1].read_text(encoding="utf-8") == MARKDOWN + "\n"
    assert paths[2].read_text(encoding="utf-8") == R.render_html(FULL)


def test_the_json_report_keeps_text_as_it_is_in_utf_8(tmp_path: Path) -> None:
    m = matrix(PROFILES[1:2])
    m["cells"][0]["detail"] = "café → “ok”"
    R.write_reports(m, tmp_path)
    raw = (tmp_path / "client-matrix.json").read_bytes()
    assert '"detail": "café → “ok”"'.encode() in raw
    assert (tmp_path / "client-matrix.md").read_bytes().endswith(b"profile-reference) |\n\n")
    assert "café → “ok”".encode() in (tmp_path / "client-matrix.html").read_bytes()


def test_an_incomplete_matrix_writes_no_report(tmp_path: Path) -> None:
    m = matrix(PROFILES)
    m["cells"].pop()
    with pytest.raises(jsonschema.ValidationError):
        R.write_reports(m, tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ the HTML view

HEAD = (
    "<!doctype html><html lang=en><meta charset=utf-8>"
    "<title>Client matrix</title><style>"
    "body{font:14px system-ui,sans-serif;margin:1.5em;max-width:100%}"
    "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
    "padding:2px 5px;white-space:nowrap}a{text-decoration:none}"
    "pre{background:#f6f6f6;padding:.5em;overflow:auto;max-height:20em}"
    ".ev{border-top:1px solid #ddd}.ev:target{background:#fff6d5}"
    "</style><body>"
)


def _small() -> dict[str, Any]:
    m = matrix(PROFILES[:1], CAPTURES)
    m["clients"] = m["clients"][1:2]
    m["cells"] = [c for c in m["cells"] if c["client"] == "openai-python"]
    m["cells"][0].update(
        expected=[
            {"id": "a", "name": "f", "arguments": "{}", "raw_arguments": "{}", "status": "sound"}
        ],
        quirks=["Q-A", "Q-B"],
        wire="data: <x>\n\n",
        requests=2,
        calls=[{"id": "a", "name": "f", "arguments": '{"é": 1}'}],
    )
    m["cells"][1].update(quirks=[], evidence="field", calls=None)
    return m


def test_the_html_page_is_the_markdown_then_one_evidence_section_per_cell() -> None:
    page = R.render_html(_small())
    assert page.startswith(HEAD + "<h1>Client matrix: which client libraries survive which")
    assert page.endswith("</section></body></html>\n")
    head, evidence = page[len(HEAD) :].split("\n<h2>Evidence</h2>\n")
    assert head == R._md_to_html(R.render_markdown(_small(), link=""))
    assert '<a href="#e-openai-python--capture-openrouter-1">✓</a>' in head
    assert evidence.split("\n") == [
        '<section id="e-openai-python--profile-empty-string-overwrite" class="ev wrong">'
        "<h3>openai-python on profile:empty-string-overwrite: ✗ name, id lost</h3>"
        "<p>wrong: name overwritten: call 0: name &#x27;&#x27;, want &#x27;get_weather&#x27;"
        " · requests: 2</p>"
        "<p>quirks in these bytes: Q-A, Q-B</p>"
        "<h4>client assembled</h4><pre>[",
        " {",
        "  &quot;id&quot;: &quot;a&quot;,",
        "  &quot;name&quot;: &quot;f&quot;,",
        "  &quot;arguments&quot;: &quot;{\\&quot;é\\&quot;: 1}&quot;",
        " }",
        "]</pre><h4>the calls on the wire (the robust reading of the same bytes, with each "
        "call's status: sound, visible or hidden)</h4><pre>[",
        " {",
        "  &quot;id&quot;: &quot;a&quot;,",
        "  &quot;name&quot;: &quot;f&quot;,",
        "  &quot;arguments&quot;: &quot;{}&quot;,",
        "  &quot;raw_arguments&quot;: &quot;{}&quot;,",
        "  &quot;status&quot;: &quot;sound&quot;",
        " }",
        "]</pre><details><summary>bytes received</summary><pre>data: &lt;x&gt;",
        "",
        "</pre></details></section>",
        '<section id="e-openai-python--capture-openrouter-1" class="ev ok">'
        "<h3>openai-python on capture:openrouter-1: ✓</h3>"
        '<p>ok: 1 call(s) right · source: <a href="https://example.org/a?b=1&amp;c=2">'
        "https://example.org/a?b=1&amp;c=2</a> · field evidence (derived; no bytes kept)"
        " · requests: 0</p><p>quirks in these bytes: none</p>"
        "<h4>client assembled</h4><pre>null</pre></section>",
        '<section id="e-openai-python--capture-local-2" class="ev ok">'
        "<h3>openai-python on capture:local-2: ✓</h3>"
        "<p>ok: 1 call(s) right · source: local-2.jsonl · requests: 0</p>"
        "<h4>client assembled</h4><pre>[]</pre></section></body></html>",
        "",
    ]


def test_html_evidence_escapes_what_the_client_and_the_wire_said() -> None:
    m = matrix(PROFILES[1:2])
    m["cells"][0].update(
        client="conformance",
        outcome="crashed",
        detail="<b>Err</b>: & more",
        calls="<raw & text>",
    )
    page = R.render_html(m)
    assert (
        "<h3>conformance on profile:reference: ‼ &lt;b&gt;Err&lt;/b&gt;</h3>"
        "<p>crashed: &lt;b&gt;Err&lt;/b&gt;: &amp; more · requests: 0</p>"
        "<h4>client assembled</h4><pre>&lt;raw &amp; text&gt;</pre></section>"
    ) in page
    m["streams"][0]["source"] = 'http://x/"q"'
    assert ' · source: <a href="http://x/&quot;q&quot;">http://x/&quot;q&quot;</a>' in (
        R.render_html(m)
    )
    m["streams"][0]["source"] = "<local>"
    assert (
        "<p>crashed: &lt;b&gt;Err&lt;/b&gt;: &amp; more · source: &lt;local&gt; · requests: 0</p>"
        in (R.render_html(m))
    )


def test_the_small_markdown_converter() -> None:
    md = "\n".join(
        [
            "# Title `a<b`",
            "### Third **bold**",
            "",
            "plain & [link](x.html#y) `code`",
            "| h1 | h\\|2 |",
            "|---|---|",
            "| a | [b\\|c](#d) |",
            "| **e** | f |",
            "- one `x`",
            "- two",
            "after",
            "- last",
        ]
    )
    assert R._md_to_html(md).split("\n") == [
        "<h1>Title <code>a&lt;b</code></h1>",
        "<h3>Third <b>bold</b></h3>",
        '<p>plain &amp; <a href="x.html#y">link</a> <code>code</code></p>',
        "<table><tr><th>h1</th><th>h\\|2</th></tr>"
        '<tr><td>a</td><td><a href="#d">b|c</a></td></tr>'
        "<tr><td><b>e</b></td><td>f</td></tr></table>",
        "<ul><li>one <code>x</code></li><li>two</li></ul>",
        "<p>after</p>",
        "<ul><li>last</li></ul>",
    ]
    # a table right before a list, then a heading: each closed where the next begins
    assert R._md_to_html("| a |\n|---|\n| b |\n- i\n## H").split("\n") == [
        "<table><tr><th>a</th></tr><tr><td>b</td></tr></table>",
        "<ul><li>i</li></ul>",
        "<h2>H</h2>",
    ]
    assert R._md_to_html("x\n\n  \ny") == "<p>x</p>\n<p>y</p>"


def test_the_reports_are_utf_8_whatever_the_locale(tmp_path: Path, ascii_locale: Any) -> None:
    R.write_reports(FULL, tmp_path)
    assert (tmp_path / "client-matrix.md").read_bytes() == (MARKDOWN + "\n").encode("utf-8")
    assert (tmp_path / "client-matrix.html").read_bytes() == R.render_html(FULL).encode("utf-8")
    m = matrix(PROFILES[1:2])
    m["cells"][0]["detail"] = "café"
    R.write_reports(m, tmp_path)
    assert '"detail": "café"'.encode() in (tmp_path / "client-matrix.json").read_bytes()


def test_quotes_in_report_text_stay_as_written_and_unpadded_tables_convert() -> None:
    assert R._md_to_html('it\'s "quoted" & <b>') == '<p>it\'s "quoted" &amp; &lt;b&gt;</p>'
    assert R._md_to_html("|a|b|\n|-|-|\n|c|d|") == (
        "<table><tr><th>a</th><th>b</th></tr><tr><td>c</td><td>d</td></tr></table>"
    )
