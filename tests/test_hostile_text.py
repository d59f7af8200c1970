"""Hostile text in valid JSON: lone surrogates and odd types never crash a writer or
break the matrix schema (only documented exit codes), and control characters from the
wire or a file never reach the terminal raw (``conformance.textsafe``).

Each end-to-end case runs ``conformance run`` (or ``analyze``) in a subprocess against a
127.0.0.1 server that answers every request with one fixed response.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conformance import textsafe
from conformance.cli import main

BIN = Path(sys.executable).parent
ESC_TITLE = "\x1b]0;pwned\x07\x1b[2J"  # window title, clear screen
OSC52 = "\x1b]52;c;cHduZWQ=\x07"  # writes the clipboard on many terminals


@contextmanager
def answering(status: int, body: bytes, ctype: str = "text/event-stream") -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def sse(*chunks: dict) -> bytes:
    """Chunks as SSE; ``ensure_ascii`` so a lone surrogate is the JSON escape ``\\ud800``
    (valid JSON, as a hostile endpoint sends it)."""
    return (
        b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    )


def call_stream(name: str = "get_weather", index: object = 0, model: str = "m") -> bytes:
    return sse(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "index": index,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": name, "arguments": '{"city": "Paris"}'},
                            }
                        ],
                    },
                    "finish_reason": None,
                }
            ],
        },
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": model,
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
        },
    )


def run(tmp: Path, url: str) -> subprocess.CompletedProcess[bytes]:
    """``conformance run`` on one scenario; bytes out (a raw ESC must be seen as one)."""
    return subprocess.run(
        [
            str(BIN / "toolcall-conformance"),
            "run",
            "--base-url",
            url,
            "--model",
            "m",
            "--scenario",
            "single",
            "--report-dir",
            "out",
            "-v",
        ],
        cwd=tmp,
        capture_output=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
    )


def files_under(d: Path) -> list[Path]:
    return [p for p in d.rglob("*") if p.is_file()]


# ------------------------------------------------------------------ the helper


def test_terminal_escapes_every_control_and_keeps_the_rest() -> None:
    assert (
        textsafe.terminal(f"a{ESC_TITLE}b\nc\ud800\u202e é ✓")
        == "a\\u001b]0;pwned\\u0007\\u001b[2Jb\\u000ac\\ud800\\u202e é ✓"
    )
    assert textsafe.terminal_lines("one\x9b\ntwo") == "one\\u009b\ntwo"
    text = json.dumps({"n": "x\ud800\x7f\x85"}, ensure_ascii=False)
    assert json.loads(textsafe.for_file(text)) == {"n": "x\ud800\x7f\x85"}
    textsafe.for_file(text).encode("utf-8")  # encodable


def test_log_records_are_escaped(caplog: pytest.LogCaptureFixture) -> None:
    textsafe.install_log_escaping()
    with caplog.at_level(logging.INFO):
        logging.getLogger("httpx").info('HTTP Request: POST %s "HTTP/1.1 200 %s"', "u", OSC52)
    assert "\x1b" not in caplog.text and "\\u001b]52" in caplog.text


# ------------------------------------------------------------------ 6: no traceback


@pytest.mark.parametrize("where", ["model", "tool name"])
def test_a_lone_surrogate_is_written_escaped_by_run(tmp_path: Path, where: str) -> None:
    body = (
        call_stream(model="m\ud800") if where == "model" else call_stream(name="get_weather\ud800")
    )
    with answering(200, body) as url:
        r = run(tmp_path, url)
    out = (r.stdout + r.stderr).decode("utf-8")
    assert r.returncode in (0, 1, 5), out  # documented codes (5: not elicited)
    assert b"Traceback" not in r.stdout + r.stderr, out
    assert "ran 1 cell(s)" in out, out
    results = list((tmp_path / "out" / "results").glob("*.json"))
    assert len(results) == 1
    cell = json.loads(results[0].read_text("utf-8"))
    shown = json.dumps(cell)
    assert "\\ud800" in shown
    matrix = json.loads((tmp_path / "out" / "quirks-matrix.json").read_text("utf-8"))
    assert matrix["cells"]
    ET.parse(tmp_path / "out" / "junit.xml")
    for p in files_under(tmp_path / "out"):
        p.read_bytes().decode("utf-8")  # every file is UTF-8


def test_an_index_that_is_true_is_judged_and_the_matrix_written(tmp_path: Path) -> None:
    with answering(200, call_stream(index=True)) as url:
        r = run(tmp_path, url)
    out = (r.stdout + r.stderr).decode("utf-8")
    assert r.returncode == 1, out  # deviates: documented; 3 (internal error) before
    assert "matrix not written" not in out and "Traceback" not in out
    cell = json.loads(next((tmp_path / "out" / "results").glob("*.json")).read_text())
    assert cell["verdict"] in ("fails", "quirk")
    assert all(
        type(c["index"]) in (int, type(None)) for s in cell["tool_calls"].values() for c in s
    )
    assert (tmp_path / "out" / "quirks-matrix.html").exists()


ODD = [
    ("index", True),
    ("index", 1.5),
    ("index", "0"),
    ("id", 7),
    ("id", ["x"]),
    ("type", None),
    ("name", "\ud800"),
    ("name", {"a": 1}),
    ("arguments", {"a": 1}),
    ("arguments", None),
]


@pytest.mark.parametrize(("field", "value"), ODD, ids=[f"{f}={v!r}" for f, v in ODD])
def test_analyze_takes_odd_values_in_every_mode(
    tmp_path: Path, field: str, value: object, capsys: pytest.CaptureFixture[str]
) -> None:
    tc = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    if field in ("name", "arguments"):
        tc["function"][field] = value
    else:
        tc[field] = value
    path = tmp_path / "c.jsonl"
    path.write_text(
        json.dumps({"model": "m\ud800", "choices": [{"index": 0, "delta": {"tool_calls": [tc]}}]})
        + "\n"
        + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        + "\n"
    )
    assert main(["analyze", str(path)]) == 0
    capsys.readouterr()
    assert main(["analyze", "--json", str(path)]) == 0
    calls = json.loads(capsys.readouterr().out)["captures"][0]["tool_calls"]
    assert all(c["index"] is None or type(c["index"]) is int for s in calls.values() for c in s)
    assert main(["analyze", "--report", str(tmp_path / "r"), str(path)]) == 0
    doc = json.loads((tmp_path / "r" / "quirks-matrix.json").read_text("utf-8"))
    assert doc["cells"][0]["verdict"] in ("conforms", "quirk", "fails", "error")


def test_analyze_with_a_surrogate_prints_and_reports(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        call_stream(name="get_\ud800", model="m\ud800")
        .replace(b"data: ", b"")
        .replace(b"\n\n", b"\n")
        .replace(b"[DONE]\n", b"")
    )
    for mode in ([], ["--json"], ["--report", str(tmp_path / "r")]):
        r = subprocess.run(
            [str(BIN / "toolcall-conformance"), "analyze", *mode, str(path)],
            capture_output=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        assert b"Traceback" not in r.stderr
        r.stdout.decode("utf-8")
        if mode == ["--json"]:
            calls = json.loads(r.stdout)["captures"][0]["tool_calls"]["robust"]
            assert calls[0]["name"] == "get_\ud800"


# ------------------------------------------------------------------ 7: terminal escapes


def test_run_prints_an_http_error_message_escaped(tmp_path: Path) -> None:
    body = json.dumps({"error": {"message": f"bad {ESC_TITLE} request"}}).encode()
    with answering(400, body, "application/json") as url:
        r = run(tmp_path, url)
    assert r.returncode == 1
    assert b"\x1b" not in r.stdout + r.stderr and b"\x07" not in r.stdout + r.stderr
    assert b"\\u001b]0;pwned" in r.stdout


def test_run_prints_an_error_event_escaped(tmp_path: Path) -> None:
    with answering(200, sse({"error": {"message": f"overloaded {OSC52}"}})) as url:
        r = run(tmp_path, url)
    assert r.returncode == 1, r.stdout
    assert b"\x1b" not in r.stdout + r.stderr
    assert b"\\u001b]52;c;" in r.stdout


def test_analyze_prints_tool_names_and_errors_escaped(tmp_path: Path) -> None:
    path = tmp_path / "c.sse"
    path.write_bytes(call_stream(name=f"x{OSC52}{ESC_TITLE}\x9b31m"))
    for mode in ([], ["--json"]):
        r = subprocess.run(
            [str(BIN / "toolcall-conformance"), "analyze", *mode, str(path)],
            capture_output=True,
            timeout=60,
        )
        assert r.returncode == 0
        assert b"\x1b" not in r.stdout and b"\x07" not in r.stdout
        assert "\x9b" not in r.stdout.decode("utf-8")
        assert b"\\u001b]52;c;" in r.stdout
    r = subprocess.run(
        [str(BIN / "toolcall-conformance"), "analyze", "--json", str(path)],
        capture_output=True,
        timeout=60,
    )
    assert (
        json.loads(r.stdout)["captures"][0]["tool_calls"]["robust"][0]["name"]
        == f"x{OSC52}{ESC_TITLE}\x9b31m"
    )  # the same document: only its spelling is escaped
    bad = tmp_path / f"evil{ESC_TITLE}.jsonl"
    bad.write_text("{not json\n")
    r = subprocess.run(
        [str(BIN / "toolcall-conformance"), "analyze", str(bad)], capture_output=True, timeout=60
    )
    assert r.returncode == 2 and b"\x1b" not in r.stderr


def test_reports_hold_no_raw_control_and_the_diff_prints_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """C1 controls (U+009B is CSI on many terminals) and DEL are not escaped by JSON:
    ``cat quirks-matrix.json`` must not act on a terminal either."""
    path = tmp_path / "c.sse"
    path.write_bytes(call_stream(name=f"x{OSC52}\x9b2J\x7f"))
    assert main(["analyze", "--report", str(tmp_path / "a"), str(path)]) == 0
    doc = json.loads((tmp_path / "a" / "quirks-matrix.json").read_text("utf-8"))
    doc["cells"][0]["verdict"], doc["cells"][0]["reason"] = "error", f"boom {ESC_TITLE}"
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "quirks-matrix.json").write_text(json.dumps(doc))
    capsys.readouterr()
    main(
        [
            "report",
            "--diff",
            str(tmp_path / "a" / "quirks-matrix.json"),
            str(tmp_path / "b" / "quirks-matrix.json"),
        ]
    )
    out = capsys.readouterr().out
    assert "\x1b" not in out
    for p in files_under(tmp_path / "a"):
        text = p.read_text("utf-8")
        assert "\x1b" not in text and "\x9b" not in text and "\x7f" not in text, p
    doc = json.loads((tmp_path / "a" / "quirks-matrix.json").read_text("utf-8"))
    assert doc["cells"][0]["tool_calls"]["robust"][0]["name"] == f"x{OSC52}\x9b2J\x7f"
