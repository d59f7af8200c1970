"""The second hostile audit's wire causes (issue 23, causes 2 to 5).

- keys hidden behind a JSON escape, split across a multi-line event or a fragment
  without an index, or inside a compressed body (gzip without a header, gzip inside
  gzip, two headers, brotli, zstd) never reach a file or an output line, recorded with
  the key set and replayed without it (the recording is what must not miss it);
- one bounded decoder: stacked, repeated and unlabelled codings, brotli and zstd, never
  more than ``max_bytes`` decoded, live, on replay and in the readers;
- ``total_timeout`` covers the response head: a trickled status line and endless
  ``103 Early Hints`` end at the limit with a reason naming the phase;
- a result's strings are bounded: an 8 MiB tool name and a 4 MiB id no longer write
  48 MiB of results.

Every server here is real and on 127.0.0.1.
"""

from __future__ import annotations

import base64
import functools
import gzip
import http.server
import json
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from faults import HIDDEN, fault_server, providers_yaml, run_suite, stream_server
from streams import long_names_body, traced
from test_secrets import _forms

from conformance import decoding, secrets
from conformance.providers import ConfigError, load_providers
from conformance.readers import read_path
from conformance.transport import Limits, exchange, make_client

brotli = pytest.importorskip("brotli")
try:
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:
    from backports import zstd  # type: ignore[import-not-found,no-redef]

MiB = 1 << 20
KEY = "CANARYhidden5c8e1a7f3b"
REQUEST = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
SSE = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
    b"data: [DONE]\n\n"
)


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    yield
    secrets.forget()


# ------------------------------------------------------------------ a raw local server


@pytest.fixture
def raw_server() -> Iterator[Callable[[list[tuple[str, str]], bytes], str]]:
    """A 127.0.0.1 server answering each path with the head and body registered for it:
    ``serve(headers, body)`` returns the URL to post to."""
    routes: dict[str, tuple[list[tuple[str, str]], bytes]] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("content-length") or 0))
            headers, body = routes[self.path]
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.send_header("connection", "close")
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def serve(headers: list[tuple[str, str]], body: bytes) -> str:
        path = f"/r{len(routes)}"
        routes[path] = (headers, body)
        return f"http://127.0.0.1:{server.server_address[1]}{path}"

    try:
        yield serve
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _zeros_gzip(mb: int) -> bytes:
    """``mb`` MiB of zeros, gzip-compressed a MiB at a time."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\0" * MiB
    return b"".join(comp.compress(block) for _ in range(mb)) + comp.flush()


@functools.cache
def _bomb() -> bytes:
    return _zeros_gzip(100)  # 100 MiB of zeros in about 100 KB


@functools.cache
def _bombs() -> dict[str, tuple[list[tuple[str, str]], bytes]]:
    """Built on first use, by the worker that runs these tests (compressing 400 MiB of
    zeros takes a CPU-second), not at collection in every xdist worker; the tests that use
    them share one worker (ON_ONE_WORKER), so they are built once a run."""
    bomb, zstd_bomb = _bomb(), zstd.compress(b"\0" * (100 * MiB))
    bombs = {
        "gzip, gzip": ([("content-encoding", "gzip, gzip")], gzip.compress(bomb, mtime=0)),
        "two headers": (
            [("content-encoding", "gzip"), ("content-encoding", "gzip")],
            gzip.compress(bomb, mtime=0),
        ),
        "gzip, identity": ([("content-encoding", "gzip, identity")], bomb),
        "unlabelled gzip": ([], bomb),
        "gzip inside gzip, one header": (
            [("content-encoding", "gzip")],
            gzip.compress(bomb, mtime=0),
        ),
        "br": ([("content-encoding", "br")], brotli.compress(b"\0" * (100 * MiB), quality=1)),
        "zstd": ([("content-encoding", "zstd")], zstd_bomb),
        "unlabelled zstd": ([], zstd_bomb),
    }
    assert tuple(bombs) == BOMBS
    return bombs


BOMBS = (
    "gzip, gzip",
    "two headers",
    "gzip, identity",
    "unlabelled gzip",
    "gzip inside gzip, one header",
    "br",
    "zstd",
    "unlabelled zstd",
)


# The bombs' tests on one xdist worker (`--dist loadgroup`), which builds the bombs once.
ON_ONE_WORKER = pytest.mark.xdist_group("decompression-bombs")

# ------------------------------------------------------------------ cause 3: decoding


@ON_ONE_WORKER
@pytest.mark.parametrize("how", BOMBS)
def test_a_stacked_or_unlabelled_bomb_ends_at_max_bytes_live(
    raw_server: Callable[..., str], how: str
) -> None:
    headers, body = _bombs()[how]
    url = raw_server(headers, body)
    limits = Limits(max_bytes=MiB, first_byte_timeout=10, idle_timeout=10, total_timeout=30)
    with make_client(limits) as client:
        t, peak = traced(lambda: exchange(client, url, REQUEST, limits=limits))
    assert t.transport_error == f"stream exceeded {MiB} bytes (limits.max_bytes)", (
        how,
        t.transport_error,
    )
    assert len(t.raw) <= 256 * 1024
    assert peak < 4 * MiB, f"{how}: {peak / MiB:.1f} MiB traced for a 1 MiB limit"


@ON_ONE_WORKER
@pytest.mark.parametrize("how", ["gzip, gzip", "two headers", "unlabelled gzip", "br", "zstd"])
def test_a_bomb_replayed_is_bounded_too(how: str) -> None:
    """A replay gives httpx the cassette's headers and body: undone here, bounded."""
    headers, body = _bombs()[how]

    def answer(request: httpx.Request) -> httpx.Response:  # as vcrpy builds it: unread
        return httpx.Response(
            200,
            headers=[("content-type", "text/event-stream"), *headers],
            stream=httpx.ByteStream(body),
        )

    limits = Limits(max_bytes=MiB)
    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        t, peak = traced(
            lambda: exchange(client, "http://replay.invalid/v1", REQUEST, limits=limits)
        )
    assert t.transport_error == f"stream exceeded {MiB} bytes (limits.max_bytes)", t.transport_error
    assert peak < 4 * MiB, f"{how}: {peak / MiB:.1f} MiB traced"


@ON_ONE_WORKER
def test_a_har_or_cassette_bomb_is_an_error_naming_the_limit(tmp_path: Path) -> None:
    har = tmp_path / "bomb.har"
    har.write_text(
        json.dumps(
            {
                "log": {
                    "creator": {"name": "t"},
                    "entries": [
                        {
                            "request": {
                                "method": "POST",
                                "url": "http://h/v1/chat/completions",
                                "headers": [],
                                "postData": {"text": json.dumps(REQUEST)},
                            },
                            "response": {
                                "status": 200,
                                "headers": [{"name": "content-type", "value": "text/event-stream"}],
                                "content": {
                                    "mimeType": "text/event-stream",
                                    "encoding": "base64",
                                    "text": base64.b64encode(
                                        gzip.compress(_bomb(), mtime=0)
                                    ).decode(),
                                },
                            },
                        }
                    ],
                }
            }
        )
    )
    (t,), peak = traced(lambda: read_path(har))
    assert (
        t.transport_error
        == f"stream exceeded {decoding.DEFAULT_MAX_BYTES} bytes (limits.max_bytes)"
    )
    assert len(t.raw) <= 256 * 1024
    assert peak < decoding.DEFAULT_MAX_BYTES + 8 * MiB


@pytest.mark.parametrize(
    "declared, body",
    [
        ("gzip", gzip.compress(SSE, mtime=0)),
        ("gzip, gzip", gzip.compress(gzip.compress(SSE, mtime=0), mtime=0)),
        (["gzip", "gzip"], gzip.compress(gzip.compress(SSE, mtime=0), mtime=0)),
        ("gzip, identity", gzip.compress(SSE, mtime=0)),
        ("GZIP", gzip.compress(SSE, mtime=0)),
        (None, gzip.compress(SSE, mtime=0)),
        ("gzip", gzip.compress(gzip.compress(SSE, mtime=0), mtime=0)),
        ("gzip", gzip.compress(SSE[:40], mtime=0) + gzip.compress(SSE[40:], mtime=0)),
        ("deflate", zlib.compress(SSE)),
        ("br", brotli.compress(SSE)),
        ("zstd", zstd.compress(SSE)),
        (None, zstd.compress(SSE)),
        ("br, gzip", gzip.compress(brotli.compress(SSE), mtime=0)),
        (None, SSE),
    ],
)
def test_every_coding_is_undone_whole_and_a_byte_at_a_time(declared: Any, body: bytes) -> None:
    assert decoding.decode(body, declared)[0] == SSE
    dec = decoding.Decoder(decoding.codings(declared), MiB)
    out = b"".join(p for i in range(len(body)) for p in dec.feed(body[i : i + 1]))
    assert out + b"".join(dec.end()) == SSE


def test_a_coding_it_cannot_undo_keeps_nothing(raw_server: Callable[..., str]) -> None:
    url = raw_server([("content-encoding", "compress")], b"CANARYsecret-in-lzw " * 10)
    with make_client() as client:
        t = exchange(client, url, REQUEST)
    assert t.transport_error and "compress-encoded" in t.transport_error
    assert t.raw == b""


# ------------------------------------------------------------------ cause 4: the head


@pytest.mark.parametrize(
    "fault, phase",
    [
        ("trickle-head", "the response head was still arriving after 3 s (limits.total_timeout)"),
        (
            "early-hints",
            "no final response head within 3 s (limits.total_timeout): only interim responses",
        ),
    ],
)
def test_a_trickled_head_or_endless_1xx_ends_at_total_timeout(fault: str, phase: str) -> None:
    limits = Limits(connect_timeout=2, first_byte_timeout=2, idle_timeout=2, total_timeout=3)
    with fault_server(max_wait=20) as fs, make_client(limits) as client:
        started = time.monotonic()
        t = exchange(client, fs.base_url(fault) + "/chat/completions", REQUEST, limits=limits)
        took = time.monotonic() - started
    assert (t.transport_error or "").startswith(phase), t.transport_error
    assert took < limits.total_timeout + 1.5, f"{fault}: the cell stayed open {took:.1f} s"


# ------------------------------------------------------------------ cause 2: keys


def _event(delta: dict[str, Any]) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}) + "\n\n"


def _no_key(text: str, key: str = KEY) -> None:
    assert not [f for f in _forms(key) if f.decode() in text], text[:400]


def test_a_key_behind_a_json_escape_is_redacted() -> None:
    key = "CANARYesc/aped9d3f7"
    secrets.register(key)
    body = json.dumps({"error": {"message": f"bad key {key}"}}).replace("/", "\\/")
    body = body.replace("esc", "\\u0065sc")
    out = secrets.redact_bytes(body.encode()).decode()
    secrets.forget()  # a replay without the key set: the text a reader decodes
    _no_key(json.loads(out)["error"]["message"], key)


def test_a_key_split_across_a_multiline_event_is_redacted() -> None:
    secrets.register(KEY)
    first = json.dumps({"choices": [{"index": 0, "delta": {"content": "x " + KEY[:9]}}]})
    cut = first.index('"delta"')
    text = f"data: {first[:cut]}\ndata: {first[cut:]}\n\n" + _event({"content": KEY[9:] + " y"})
    out = secrets.redact_body(text)
    secrets.forget()
    from conformance.sse import parse_sse_bytes

    content = "".join(
        e.chunk["choices"][0]["delta"]["content"]
        for e in parse_sse_bytes(out.encode())
        if e.kind == "chunk"
    )
    _no_key(content)


@pytest.mark.parametrize(
    "second",
    [
        {"function": {"arguments": KEY[9:] + '"}'}},  # no index: the call in progress
        {"index": "0", "function": {"arguments": KEY[9:] + '"}'}},  # an index of another type
        {"id": "call_1", "function": {"arguments": KEY[9:] + '"}'}},  # routed by id
    ],
)
def test_a_key_split_however_a_client_joins_fragments_is_redacted(second: dict) -> None:
    secrets.register(KEY)
    text = _event(
        {
            "tool_calls": [
                {
                    "index": 3,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "' + KEY[:9]},
                }
            ]
        }
    ) + _event({"tool_calls": [second]})
    out = secrets.redact_body(text)
    secrets.forget()
    from streams import analyze_sse

    r = analyze_sse(out.encode())
    _no_key(json.dumps(r.tool_calls))


@pytest.mark.parametrize(
    "entry",
    [
        {"headers": {"Authorisation": "plainvalue123"}},
        {"headers": {"X-Authentication": "plainvalue123"}},
        {"headers": {"X-Custom": "bearer abcdefghijklmnop"}},
        {"headers": {"X-Custom": "BEARER abcdefghijklmnop"}},
        {"headers": {"X-Custom": "Token 9a8b7c6d5e4f3a2b"}},
    ],
)
def test_credential_spellings_in_providers_yaml_are_refused(
    tmp_path: Path, entry: dict[str, Any]
) -> None:
    path = tmp_path / "providers.yaml"
    path.write_text(
        providers_yaml({"p": {"base_url": "https://h.example/v1", "model": "m", **entry}})
    )
    with pytest.raises(ConfigError) as err:
        load_providers(path)
    assert "\n" not in str(err.value) and "headers_env" in str(err.value)
    for v in ("plainvalue123", "abcdefghijklmnop", "9a8b7c6d5e4f3a2b"):
        assert v not in str(err.value)


def test_prose_after_token_is_not_taken_for_a_key() -> None:
    assert secrets.redact("the token limit was exceeded") == "the token limit was exceeded"
    assert secrets.redact("X-Custom: token 9a8b7c6d5e4f3a2b") == "X-Custom: token <redacted>"


SCHEMES = [
    "BeArEr abcdefghijkl",
    "bEARER\tabcdefghijkl",
    "bAsIc QWxhZGRpbjpvcGVu",
    "ToKeN 9a8b7c6d5e4f3a2b",
    "baſic QWxhZGRpbjpvcGVu",
]  # the last: a long s


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("before", [10, 5000, 65536 - 3, 65536 + 100, 300_000])
def test_a_scheme_in_mixed_case_is_redacted_in_a_text_of_any_length(
    scheme: str, before: int
) -> None:
    name = scheme.split()[0]
    text = "x " * (before // 2) + scheme + " y" * 50  # past 4 KiB: the hint was 8 spellings
    out = secrets.redact(text)
    assert out == "x " * (before // 2) + name + scheme[len(name)] + "<redacted>" + " y" * 50
    body = b'data: {"content": "' + text.encode() + b'"}\n\n'
    assert scheme.split()[1].encode() not in secrets.redact_bytes(body)


def _leaks(root: Path, texts: dict[str, str]) -> list[str]:
    forms = _forms(KEY)
    found = []
    for p in sorted(root.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            for extra in _unpacked(data):
                data += b"\n" + extra
            found += [f"{p.relative_to(root)}: {f.decode()}" for f in forms if f in data]
    for name, text in texts.items():
        found += [
            f"<{name}>: {text[max(0, text.find(f.decode()) - 80) :][:200]}"
            for f in forms
            if f.decode() in text
        ]
    return found


def _unpacked(data: bytes) -> list[bytes]:
    """A file's bytes as a reader could unpack them (a compressed file)."""
    out = []
    for undo in (gzip.decompress, brotli.decompress, zstd.decompress):
        try:
            out.append(undo(data))
        except Exception:  # noqa: BLE001 - not in that format
            pass
    return out


def test_hidden_keys_never_leak_recorded_or_replayed_without_the_key(tmp_path: Path) -> None:
    with fault_server() as fs:
        entries = {
            f"hidden-{how}": {
                "base_url": fs.base_url("echo-hidden", how),
                "model": "reference",
                "api_key_env": "CANARY_HIDDEN",
                "limits": {"total_timeout": 20},
                "retries": {"max": 0},
            }
            for how in HIDDEN
        }
        (tmp_path / "providers.yaml").write_text(providers_yaml(entries))
        rec = run_suite(
            tmp_path,
            "--record-mode=all",
            "--scenario",
            "single",
            "-rA",
            f"--junitxml={tmp_path / 'reports' / 'junit-record.xml'}",
            env={"CANARY_HIDDEN": KEY},
        )
        assert {h.headers.get("authorization") for h in fs.hits} == {f"Bearer {KEY}"}
    assert "Traceback" not in rec.stdout + rec.stderr, rec.stdout[-3000:]
    cells = [json.loads(p.read_text()) for p in (tmp_path / "reports/results").glob("*.json")]
    assert len(cells) == len(HIDDEN), [c["column"] for c in cells]
    assert all(c["verdict"] != "error" for c in cells), [
        (c["column"], c["reason"]) for c in cells if c["verdict"] == "error"
    ]
    for p in (tmp_path / "cassettes").rglob("*.yaml"):  # stored decoded, never !!binary
        assert "!!binary" not in p.read_text(), p
    rep = run_suite(
        tmp_path,
        "--record-mode=none",
        "--scenario",
        "single",
        "-rA",
        "-vv",
        f"--junitxml={tmp_path / 'reports' / 'junit-replay.xml'}",
        env={},
    )
    assert "Traceback" not in rep.stdout + rep.stderr
    assert (tmp_path / "reports" / "quirks-matrix.json").exists()
    leaks = _leaks(tmp_path, {"record": rec.stdout + rec.stderr, "replay": rep.stdout + rep.stderr})
    assert not leaks, leaks


# ------------------------------------------------------------------ cause 5: fields


def test_long_names_and_ids_are_cut_in_results_with_a_marker() -> None:
    from conformance.providers import provider_from_entry
    from conformance.runner import CellRunner
    from conformance.scenarios import SCENARIOS

    body = long_names_body()
    with stream_server(lambda w: w.write(body)) as url:
        p = provider_from_entry(
            "p", {"base_url": url, "model": "m", "limits": {"max_bytes": 16 * MiB}}
        )
        runner = CellRunner(replay=False)
        try:
            cell = runner.run(p, SCENARIOS["single"])
        finally:
            runner.close()
    result, peak = traced(cell.to_json)
    text = json.dumps(result, ensure_ascii=False, indent=1, sort_keys=True)
    assert len(text) < 3 * MiB, f"{len(text) / MiB:.1f} MiB of results for a 12 MiB body"
    assert peak < 8 * MiB, f"to_json peaked at {peak / MiB:.1f} MiB"
    # read by its ends before the analysis (longstrings): the marker of its length and digest
    assert "…[8388608 characters, sha256 " in text and "…[4194304 characters, sha256 " in text
    robust = result["tool_calls"]["robust"][0]
    assert robust["name"].startswith("n" * 1000) and len(robust["name"]) < 70_000


def test_cut_strings_are_redacted_before_the_cut() -> None:
    from conformance.bounded import cap_strings

    secrets.register(KEY)
    value = {"name": "x" * (64 * 1024 - 5) + KEY + "y" * 10}
    out = json.dumps(cap_strings(value))
    secrets.forget()
    assert KEY[:5] not in out and "<redacted>"[:5] in out
