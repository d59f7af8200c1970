"""The CLI contract of DESIGN.md for ``toolcall-conformance analyze`` (other tools script against it).

``toolcall-conformance analyze [--json] PATH…``: JSONL, raw SSE, vcrpy cassettes (``path#N`` per
interaction) and HAR files; ``--json`` prints one document whose shape is checked here
against a JSON Schema written from DESIGN.md; exit 0 when every input was read whatever
the verdicts, 2 for an unreadable input; without ``--json``, a readable summary.
"""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest
import streams as S
import yaml

from conformance.cli import main
from conformance.rules import RULES, quirk_catalogue

CALL = {
    "type": "object",
    "required": ["index", "id", "type", "name", "arguments"],
    "additionalProperties": False,
    "properties": {
        "index": {"type": ["integer", "null"]},
        "id": {"type": "string"},
        "type": {"type": "string"},
        "name": {"type": "string"},
        "arguments": {"type": "string"},
    },
}
# DESIGN.md, "CLI contract": the keys it names are required; more keys may be added.
ANALYZE_DOCUMENT = {
    "type": "object",
    "required": ["captures"],
    "properties": {
        "captures": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "source",
                    "verdict",
                    "quirks",
                    "findings",
                    "finish_reason",
                    "tool_calls",
                ],
                "properties": {
                    "source": {"type": "string", "minLength": 1},
                    "verdict": {"enum": ["conforms", "quirk", "fails", "error"]},
                    "quirks": {
                        "type": "array",
                        "items": {"type": "string", "pattern": "^Q-[A-Z0-9-]+$"},
                        "uniqueItems": True,
                    },
                    "findings": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["rule", "level", "quirk", "event", "pointer", "message"],
                            "properties": {
                                "rule": {"type": "string", "pattern": "^[RQ]-[A-Z0-9-]+$"},
                                "level": {"enum": ["MUST", "SHOULD", "INFO"]},
                                "quirk": {
                                    "oneOf": [
                                        {"type": "null"},
                                        {"type": "string", "pattern": "^Q-[A-Z0-9-]+$"},
                                    ]
                                },
                                "event": {"type": ["integer", "null"], "minimum": 0},
                                "pointer": {
                                    "oneOf": [
                                        {"type": "null"},
                                        {"type": "string", "pattern": "^(/[^/]*)*$"},
                                    ]
                                },
                                "message": {"type": "string", "minLength": 1},
                            },
                        },
                    },
                    "finish_reason": {"type": ["string", "null"]},
                    "tool_calls": {
                        "type": "object",
                        "required": ["naive", "guarded", "robust"],
                        "additionalProperties": False,
                        "properties": {
                            k: {"type": "array", "items": CALL}
                            for k in ("naive", "guarded", "robust")
                        },
                    },
                },
            },
        }
    },
}


def analyze_json(capsys, *paths) -> tuple[int, dict, str]:
    rc = main(["analyze", "--json", *map(str, paths)])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    jsonschema.validate(doc, ANALYZE_DOCUMENT)
    return rc, doc, err


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def cassette(tmp_path, bodies, status=200):
    interactions = [
        {
            "request": {
                "body": json.dumps({"model": "m", "stream": True, "tools": S.TOOLS_WEATHER}),
                "headers": {},
                "method": "POST",
                "uri": "https://api.example.com/v1/chat/completions",
            },
            "response": {
                "body": {"string": body},
                "headers": {
                    "Content-Type": ["text/event-stream" if status == 200 else "application/json"]
                },
                "status": {"code": status, "message": "OK"},
            },
        }
        for body in bodies
    ]
    return write(tmp_path, "c.yaml", yaml.safe_dump({"interactions": interactions, "version": 1}))


# =============================================================================== --json


def test_json_document_shape_and_values(tmp_path, capsys):
    paths = [
        write(tmp_path, "ref.sse", S.REFERENCE_PARALLEL_SSE),
        write(tmp_path, "zero.jsonl", S.INDEX_ALL_ZERO),
        write(tmp_path, "text.jsonl", S.TOOLCALL_AS_TEXT),
        write(tmp_path, "err.sse", S.SSE_ERROR_ENVELOPE),
    ]
    rc, doc, err = analyze_json(capsys, *paths)
    assert rc == 0 and err == ""  # every input was read, whatever the verdicts
    ref, zero, text, error = doc["captures"]
    assert [c["source"] for c in doc["captures"]] == [str(p) for p in paths]
    assert [c["verdict"] for c in doc["captures"]] == ["conforms", "quirk", "fails", "error"]
    for c in doc["captures"]:
        assert c["quirks"] == sorted({f["quirk"] for f in c["findings"] if f["quirk"]})
        assert set(c["quirks"]) <= set(quirk_catalogue())
        assert {f["rule"] for f in c["findings"]} <= set(RULES) | set(quirk_catalogue())
    assert ref["finish_reason"] == "tool_calls"
    assert [(t["index"], t["id"], t["type"], t["name"]) for t in ref["tool_calls"]["robust"]] == [
        (0, S.REFERENCE_PARALLEL_CALLS[0][0], "function", "add"),
        (1, S.REFERENCE_PARALLEL_CALLS[1][0], "function", "multiply"),
    ]
    (f,) = [f for f in zero["findings"] if f["quirk"] == "Q-INDEX-ALL-ZERO"]
    assert f == {
        "rule": "R-INDEX-DISTINCT",
        "level": "MUST",
        "quirk": "Q-INDEX-ALL-ZERO",
        "event": 1,
        "pointer": "/choices/0/delta/tool_calls/0/index",
        "message": f["message"],
        "excerpt": f["excerpt"],
    }
    # naive merged the two calls on index 0 (one call, the last name); robust kept two
    assert len(zero["tool_calls"]["naive"]) == 1 and len(zero["tool_calls"]["robust"]) == 2
    assert text["tool_calls"] == {"naive": [], "guarded": [], "robust": []}
    assert text["finish_reason"] == "stop"


def test_cassette_sources_are_path_hash_interaction(tmp_path, capsys):
    p = cassette(tmp_path, [S.REFERENCE_SINGLE_SSE, S.REFERENCE_TEXT_SSE, S.INDEX_ABSENT])
    rc, doc, _ = analyze_json(capsys, p)
    assert rc == 0
    assert [c["source"] for c in doc["captures"]] == [f"{p}#0", f"{p}#1", f"{p}#2"]
    # interaction 2 answered `stream: true` with JSONL-looking text, not SSE
    assert doc["captures"][2]["verdict"] == "fails"


def test_http_error_interaction_is_an_error_verdict_not_an_exit_code(tmp_path, capsys):
    p = cassette(tmp_path, [S.BODY_TOOLS_UNSUPPORTED], status=500)
    rc, doc, err = analyze_json(capsys, p)
    (c,) = doc["captures"]
    assert rc == 0 and err == ""
    assert c["verdict"] == "error" and c["quirks"] == ["Q-STREAM-TOOLS-UNSUPPORTED"]


def test_empty_cassette_reads_to_no_capture(tmp_path, capsys):
    p = write(tmp_path, "none.yaml", "interactions: []\nversion: 1\n")
    rc, doc, _ = analyze_json(capsys, p)
    assert rc == 0 and doc == {"captures": []}


def test_exit_two_when_any_input_is_unreadable(tmp_path, capsys):
    good = write(tmp_path, "ok.jsonl", S.REFERENCE_SINGLE_JSONL)
    rc, doc, err = analyze_json(capsys, good, tmp_path / "missing.sse")
    assert rc == 2
    assert len(doc["captures"]) == 1
    assert err.splitlines() == [f"conformance: {tmp_path / 'missing.sse'}: no such file"]


def test_json_is_utf8_not_escaped(tmp_path, capsys):
    p = write(tmp_path, "ref.sse", S.REFERENCE_SINGLE_SSE)
    main(["analyze", "--json", str(p)])
    out = capsys.readouterr().out
    assert "Zürich" in out  # ensure_ascii=False: arguments readable as sent


# =============================================================================== summary


def test_readable_summary(tmp_path, capsys):
    p = write(tmp_path, "dash.jsonl", S.EMPTY_STRING_OVERWRITE)
    rc = main(["analyze", str(p)])
    out, err = capsys.readouterr()
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"~ {p}: quirk"
    assert lines[1] == "  quirks: Q-EMPTY-STRING-OVERWRITE"
    assert (
        "  [MUST] R-CONT-ID-ABSENT Q-EMPTY-STRING-OVERWRITE @ event 1 "
        "/choices/0/delta/tool_calls/0/id: " in out
    )
    assert "(x2)" in out  # the second occurrence is counted, not repeated
    assert "  call 0: id='call_eee11723464aQRSTUVWXYZab' get_weather(" in out
    assert lines[-2] == (
        "  client impact: naive wrong (call 0: id '' instead of "
        "'call_eee11723464aQRSTUVWXYZab'), guarded ok, robust ok"
    )
    assert lines[-1].startswith("client impact: how three ways of accumulating")


@pytest.mark.parametrize(
    ("stream", "symbol", "verdict"),
    [
        (S.REFERENCE_SINGLE_SSE, "✓", "conforms"),
        (S.TOOLCALL_AS_TEXT, "✗", "fails"),
        (S.SSE_ERROR_ENVELOPE, "!", "error"),
    ],
)
def test_summary_symbols(tmp_path, capsys, stream, symbol, verdict):
    p = write(tmp_path, "s.sse" if stream.startswith("data") else "s.jsonl", stream)
    assert main(["analyze", str(p)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"{symbol} {p}: {verdict}")


def test_subprocess_contract(tmp_path):
    ok = write(tmp_path, "ok.jsonl", S.REFERENCE_SINGLE_JSONL)
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "analyze", "--json", str(ok)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == ""
    jsonschema.validate(json.loads(proc.stdout), ANALYZE_DOCUMENT)
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "analyze", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == f"conformance: {tmp_path / 'nope'}: no such file\n"


def test_usage_error_is_argparse_exit_two(capsys):
    with pytest.raises(SystemExit) as e:
        main(["analyze"])
    assert e.value.code == 2
    assert "PATH" in capsys.readouterr().err
