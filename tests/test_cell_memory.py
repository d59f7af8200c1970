"""A cell holds at most its ``max_bytes`` plus a constant, whatever the endpoint sends.

- end to end: the real suite records one cell of an endless stream (``tests/faults.py``)
  with ``limits.max_bytes`` of 4 MiB, under ``tracemalloc`` in the pytest subprocess; the
  peak allocated during the cell (reading, vcrpy, scrub, analysis, cassette write) stays
  under ``max_bytes + 4 MiB``, the cassette keeps a 256 KiB prefix and says so, and the
  replay is the same error cell;
- end to end, a body that ends normally at 3.6 of 4 MiB: kept whole (its end is
  evidence) and held once: the cell's peak stays under the body + 6 MiB, recorded and
  replayed; the cassette is written, and loaded, with no copy of the body beside
  vcrpy's;
- end to end, a 12 MiB body made of an 8 MiB tool name and a 4 MiB id: the body and a
  few MiB, recorded and replayed (the analysis, the split-key search and the evidence
  read long strings by their ends, a long clean line is neither decoded nor escaped
  whole);
- unit: the transport's buffer (one byte per chunk costs no more than the bytes, a body
  near ``max_bytes`` is held about once, not twice), the cut at an event boundary, the
  marker, and the line-by-line cassette writer (the same bytes and the same redaction as
  the whole-text write).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from faults import fault_server, providers_yaml, run_suite, stream_server
from hypothesis import given, settings
from hypothesis import strategies as st
from streams import cell_peaks, cell_result, long_names_body, traced
from vcr.request import Request
from vcr.serialize import serialize
from vcr.serializers import jsonserializer, yamlserializer

from conformance import secrets
from conformance.cassettes import AtomicPersister
from conformance.readers import read_cassette_file
from conformance.transport import (
    CUT_HEADER,
    FAULT_HEADER,
    KEEP_ON_LIMIT,
    Limits,
    TransportFault,
    _LimitedStream,
    _prefix,
)

MiB = 2**20


def test_an_endless_cell_holds_max_bytes_plus_a_constant_and_replays(tmp_path: Path) -> None:
    max_bytes = 4 * MiB
    with fault_server(max_wait=60) as fs:
        (tmp_path / "providers.yaml").write_text(
            providers_yaml(
                {
                    "endless": {
                        "base_url": fs.base_url("endless", 0),
                        "model": "reference",
                        "retries": {"max": 0},
                        "limits": {"max_bytes": max_bytes},
                    }
                }
            )
        )
        rec, peaks = cell_peaks(tmp_path, "--record-mode=all", "--scenario", "single")
    assert "1 failed" in rec.stdout, rec.stdout[-3000:] + rec.stderr[-3000:]
    peak = peaks["peak"]
    # k = 1: the transport holds the body as it came (no copy) until a limit ends it,
    # then hands on only its first 256 KiB. C = 4 MiB: that prefix copied by vcrpy, the
    # scrub, the exchange, the analysis and the YAML writer (about 6 times, 1.5 MiB),
    # plus the modules a first cell imports (about 2 MiB). Measured: 6.1 MiB; before
    # the prefix and the streamed cassette, 18.6 MiB (the body copied four times over).
    assert peak <= max_bytes + 4 * MiB, peak / MiB
    live = cell_result(tmp_path / "reports")
    assert (live["verdict"], live["reason"]) == (
        "error",
        "stream exceeded 4194304 bytes (limits.max_bytes)",
    )

    cassette = tmp_path / "cassettes" / "endless" / "single.yaml"
    assert cassette.stat().st_size < 400_000  # the prefix, not the 4 MiB
    (t,) = read_cassette_file(cassette)
    # 330 whole events of 793 bytes: the last event that ends within 256 KiB
    assert len(t.raw) == 261690 and t.raw.endswith(b"\n\n")
    m = re.fullmatch(r"kept the first 261690 of (\d+) bytes received", t.headers[CUT_HEADER])
    assert m and int(m.group(1)) > max_bytes, t.headers[CUT_HEADER]
    assert t.transport_error == "stream exceeded 4194304 bytes (limits.max_bytes)"

    rep = run_suite(tmp_path, "--record-mode=none", "--scenario", "single")
    assert "1 failed" in rep.stdout, rep.stdout[-3000:]
    replayed = cell_result(tmp_path / "reports")
    for key in ("verdict", "reason", "quirks", "findings", "finish_reason", "tool_calls"):
        assert replayed[key] == live[key], key
    # the findings are the fault's, not the cut's: no event ends inside the prefix
    assert [f["rule"] for f in live["findings"]] == ["R-COMPLETE"]


LONG_EVENT = (
    b'data: {"id": "c", "object": "chat.completion.chunk", "created": 0, '
    b'"model": "m", "choices": [{"index": 0, "delta": {"content": "'
    + b"the quick brown fox jumps over the lazy dog " * 16
    + b'"}, "finish_reason": null}]}\n\n'
)  # 862 bytes
LONG_END = (
    b'data: {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", '
    b'"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", '
    b'"type": "function", "function": {"name": "get_weather", "arguments": '
    b'"{\\"city\\": \\"Paris\\"}"}}]}, "finish_reason": null}]}\n\n'
    b'data: {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", '
    b'"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}\n\n'
    b"data: [DONE]\n\n"
)


def _long_body(w: Any, events: int) -> None:
    """Content deltas, then one tool call and [DONE]: a stream that ends normally."""
    for _ in range(events // 64):
        w.write(LONG_EVENT * 64)
    w.write(LONG_END)


def test_a_body_that_ends_normally_near_max_bytes_is_kept_whole_and_held_once(
    tmp_path: Path,
) -> None:
    max_bytes = 4 * MiB
    events = 4352  # 4352 * 862 bytes + 451 bytes of end: 3.6 MiB, 90 % of max_bytes
    body = len(LONG_EVENT) * events + len(LONG_END)
    assert body == 3751875
    # with a key, as a real provider has: the body's redaction then also looks for it
    # split across events (which held every event parsed: 31.6 MiB here before)
    env = {"CELLMEM_KEY": "sk-cellmem0123456789abcdef"}
    with stream_server(lambda w: _long_body(w, events)) as base_url:
        (tmp_path / "providers.yaml").write_text(
            providers_yaml(
                {
                    "long": {
                        "base_url": base_url,
                        "model": "reference",
                        "retries": {"max": 0},
                        "api_key_env": "CELLMEM_KEY",
                        "limits": {"max_bytes": max_bytes},
                    }
                }
            )
        )
        rec, live = cell_peaks(tmp_path, "--record-mode=all", "--scenario", "single", env=env)
    assert "1 passed" in rec.stdout, rec.stdout[-3000:] + rec.stderr[-3000:]
    # k = 1: the body held once, by the transport's buffer handed on to vcrpy without a
    # copy. Measured (3.6 MiB body, of which 2.8 MiB content text): 8.6 MiB, the body +
    # 5.0 MiB, in the call (the exchange and the analysis: the buffer an eighth over, the
    # scrub's and the exchange's 1 MiB slices, the analysis' bounded text, a first cell's
    # imports). Before: 11.0 MiB (3 x the body), then the analysis' copies of the content
    # text and the cassette's str of the body and libyaml's buffers. Bound: the body
    # (at most max_bytes) + 6 MiB.
    assert live["peak"] <= body + 6 * MiB, live["peak"] / MiB
    # The cassette's write (the teardown) holds no copy of the body: it is written from
    # vcrpy's bytes a 256 KiB piece at a time. Measured: 0.8 MiB; before, 3.6 MiB
    # (vcrpy's str copy of the body) plus what libyaml's emitter allocates outside
    # tracemalloc's sight (memray: twice the body).
    assert live["teardown"] <= 1.5 * MiB, live["teardown"] / MiB
    cassette = tmp_path / "cassettes" / "long" / "single.yaml"
    (t,) = read_cassette_file(cassette)
    assert len(t.raw) == body and t.raw.endswith(b"data: [DONE]\n\n")
    assert CUT_HEADER not in t.headers and t.transport_error is None
    assert cell_result(tmp_path / "reports")["verdict"] == "conforms"

    rep, replay = cell_peaks(tmp_path, "--record-mode=none", "--scenario", "single", env=env)
    assert "1 passed" in rep.stdout, rep.stdout[-3000:] + rep.stderr[-3000:]
    # The replay loads the cassette in the cell's setup: the body, decoded from its line
    # a slice at a time into a buffer grown in place, and a first load's imports.
    # Measured: the body + 2.1 MiB; before, 11.6 MiB (3.25 x the body: the file's text
    # read whole, its parse, the body's str and then its bytes).
    assert replay["setup"] <= body + 3 * MiB, replay["setup"] / MiB
    # then the analysis of the replayed body: measured 8.5 MiB, the body + 4.9 MiB
    assert replay["peak"] <= body + 6 * MiB, replay["peak"] / MiB
    assert cell_result(tmp_path / "reports")["verdict"] == "conforms"


# ------------------------------------------------------------------ the transport's buffer


class _Inner(httpx.SyncByteStream):
    def __init__(self, pieces: Iterator[bytes]):
        self._pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        yield from self._pieces


def _stream(pieces: Iterator[bytes], max_bytes: int) -> _LimitedStream:
    s = _LimitedStream(_Inner(pieces), Limits(max_bytes=max_bytes), time.monotonic())
    s.headers_raw = [(b"content-type", b"text/event-stream")]
    s.response = httpx.Response(200, headers=s.headers_raw)
    return s


def test_one_byte_per_chunk_costs_the_bytes_not_an_object_each() -> None:
    body = b"x" * 150_000
    s = _stream((body[i : i + 1] for i in range(len(body))), 1_000_000)
    out, peak = traced(lambda: list(s))
    assert out == [body]  # handed on as one piece
    # the held pieces (150 kB), the body joined from them (150 kB), a 64 KiB piece being
    # made; 150,000 one-byte objects would be 5.1 MB
    assert peak < 450_000, peak


def test_a_body_near_max_bytes_is_held_once_not_twice() -> None:
    body = LONG_EVENT * 4352  # 3.6 MiB, read 64 KiB at a time
    s = _stream((body[i : i + 65536] for i in range(0, len(body), 65536)), 4 * MiB)
    out, peak = traced(lambda: list(s))
    assert out == [body]
    # the buffer grown in place (an eighth over) and a piece being read, handed on
    # without a copy; the pieces held and joined cost twice the body (7.2 MiB)
    assert peak < 1.2 * len(body), peak / len(body)


def test_a_limit_keeps_the_events_that_end_within_the_prefix_and_says_so() -> None:
    event = b"data: " + b"y" * 992 + b"\n\n"  # 1,000 bytes
    s = _stream(iter([event] * 1000), 400_000)
    out = b"".join(s)
    assert out == event * 262  # 262,000 of the 262,144 bytes kept
    assert s.response is not None
    assert s.response.headers[CUT_HEADER] == "kept the first 262000 of 401000 bytes received"
    assert s.response.headers[FAULT_HEADER] == "stream exceeded 400000 bytes (limits.max_bytes)"
    assert s.response.headers["content-type"] == "text/event-stream"


def test_a_fault_that_is_no_limit_keeps_the_whole_body() -> None:
    def cut() -> Iterator[bytes]:
        yield b"data: " + b"z" * 300_000 + b"\n\n"
        yield b'data: {"half'
        raise httpx.RemoteProtocolError("peer closed connection (incomplete chunked read)")

    s = _stream(cut(), 1_000_000)
    assert b"".join(s) == b"data: " + b"z" * 300_000 + b'\n\ndata: {"half'
    assert s.response is not None and CUT_HEADER not in s.response.headers
    assert s.response.headers[FAULT_HEADER] == (
        "the server closed the connection in the middle of the response body "
        "(incomplete chunked read)"
    )


def test_a_limit_before_the_headers_were_handed_on_still_raises() -> None:
    s = _LimitedStream(_Inner(iter([b"x" * 10])), Limits(max_bytes=5), time.monotonic())
    with pytest.raises(TransportFault) as e:
        list(s)
    assert (str(e.value), e.value.limit) == ("stream exceeded 5 bytes (limits.max_bytes)", True)


def test_the_limits_are_limits_and_other_faults_are_not() -> None:
    assert TransportFault("x").limit is False
    s = _LimitedStream(_Inner(iter(())), Limits(total_timeout=2.5), time.monotonic())
    fault = s._total_fault()
    assert (fault.reason, fault.limit) == (
        "stream still running after 2.5 s (limits.total_timeout)",
        True,
    )


PREFIXES = [  # (pieces, size, kept): written by hand
    ([b"data: a\n\ndata: b\n\n"], 12, b"data: a\n\n"),
    ([b"data: a\n\ndata: b\n\n"], 18, b"data: a\n\ndata: b\n\n"),
    ([b"data: a\n\ndata: b\n\n"], 17, b"data: a\n\n"),
    ([b"data: a\r\n\r\ndata: b"], 15, b"data: a\r\n\r\n"),
    ([b"data: a\r\rdata: b\r\r"], 12, b"data: a\r\r"),
    ([b"a\n\nb\r\rc"], 7, b"a\n\nb\r\r"),
    ([b"a\r\rb\n\nc"], 7, b"a\r\rb\n\n"),
    ([b"data: a\n", b"\ndata: b\n\n"], 12, b"data: a\n\n"),
    ([b"da", b"ta: a\n\n", b"data: b"], 30, b"data: a\n\n"),
    ([b'{"a": "xxxxxxxx'], 5, b'{"a":'),  # no event end: cut at the size
    ([b"ab", b"cd", b"ef"], 3, b"abc"),
    ([b"abc"], 10, b"abc"),
    ([], 10, b""),
]


@pytest.mark.parametrize("pieces,size,kept", PREFIXES)
def test_the_prefix_ends_after_the_last_whole_event(
    pieces: list[bytes], size: int, kept: bytes
) -> None:
    assert _prefix(b"".join(pieces), size) == kept


def test_what_a_limit_keeps_is_256_kib() -> None:
    assert KEEP_ON_LIMIT == 262144


# ------------------------------------------------------------------ the cassette writer

CANARY = "CANARYmem0123456789"


def _cassette(body: bytes) -> dict[str, Any]:
    req = Request(
        "POST",
        "http://127.0.0.1:1/v1/chat/completions",
        b'{"stream": true}',
        {"content-type": "application/json"},
    )
    resp = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"x-echo": [f"Bearer {CANARY}"]},
        "body": {"string": body},
    }
    return {"requests": [req], "responses": [resp]}


@pytest.fixture
def canary() -> Iterator[str]:
    secrets.register(CANARY)
    yield CANARY
    secrets.forget(CANARY)


BODIES = [
    b'data: {"choices": [{"delta": {"content": "' + CANARY.encode() + b' la"}}]}\n\n' * 300,
    b"x" * 300_000 + CANARY.encode() + b"x" * 10,  # one line as long as a body
    'data: {"content": "\u00e9t\u00e9 '.encode() + CANARY.encode() + b'"}\n\n',
]


@pytest.mark.parametrize("body", BODIES, ids=["events", "one-line", "utf8"])
def test_the_streamed_cassette_is_the_whole_text_write(
    tmp_path: Path, canary: str, body: bytes
) -> None:
    AtomicPersister.save_cassette(tmp_path / "c.yaml", _cassette(body), yamlserializer)
    whole = secrets.redact(serialize(_cassette(body), yamlserializer)).encode()
    written = (tmp_path / "c.yaml").read_bytes()
    assert written == whole
    assert canary.encode() not in written and b"<redacted>" in written


def test_another_serializer_is_written_whole(tmp_path: Path, canary: str) -> None:
    AtomicPersister.save_cassette(
        tmp_path / "c.json", _cassette(b"a " + canary.encode()), jsonserializer
    )
    text = (tmp_path / "c.json").read_text()
    assert json.loads(text)["interactions"][0]["response"]["body"]["string"] == "a <redacted>"


def test_lines_are_redacted_wherever_the_writes_cut_them(canary: str) -> None:
    text = f"a: {canary}\nb: x{canary}y\nc: Bearer abcdefghijkl\n{canary}"
    want = secrets.redact(text).encode()
    assert want.count(b"<redacted>") == 4
    for size in (1, 2, 5, 7, 19, len(text)):
        out: list[bytes] = []

        class Sink:
            write = out.append

        lines = secrets.RedactingLines(Sink())
        for i in range(0, len(text), size):
            lines.write(text[i : i + size])
        lines.flush()
        assert b"".join(out) == want, size


def test_each_line_is_written_when_it_ends_not_at_the_end(canary: str) -> None:
    out: list[bytes] = []

    class Sink:
        write = out.append

    lines = secrets.RedactingLines(Sink())
    lines.write("a: 1\nb: 2\nc")
    assert out == [b"a: 1\nb: 2\n"]  # the pending "c" waits for its line end
    lines.write(f": {canary}\nd")
    assert out == [b"a: 1\nb: 2\n", b"c: <redacted>\n"]
    lines.write(": 4")
    lines.flush()
    assert out == [b"a: 1\nb: 2\n", b"c: <redacted>\n", b"d: 4"]
    lines.flush()
    assert len(out) == 3


def test_a_line_as_long_as_a_body_is_encoded_a_mebibyte_at_a_time() -> None:
    out: list[bytes] = []

    class Sink:
        write = out.append

    lines = secrets.RedactingLines(Sink())
    lines.write("\u00e9" * (3 * MiB // 2))  # 1.5 Mi characters, 3 MiB of UTF-8
    lines.write("\n")
    assert [len(b) for b in out] == [2 * MiB, MiB + 1]
    assert b"".join(out) == ("\u00e9" * (3 * MiB // 2) + "\n").encode()


# ------------------------------------------------------------------ the body's redaction


def test_a_body_is_redacted_a_slice_at_a_time_and_not_copied_when_clean(canary: str) -> None:
    line = b'data: {"choices": [{"delta": {"content": "' + b"w" * 980 + b'"}}]}\n\n'
    body = line * 3700  # 3.6 MiB, four slices
    out, peak = traced(lambda: secrets.redact_bytes(body))
    assert out is body  # nothing to redact: the same object, no copy
    # a slice's text and its redaction (1 MiB each); the whole text would be 3.6 MiB
    assert peak < 2.5 * MiB, peak / MiB
    hot = line * 1100 + b"data: x " + canary.encode() + b" Bearer abcdefghijkl\n\n" + line * 2
    want = line * 1100 + b"data: x <redacted> Bearer <redacted>\n\n" + line * 2
    assert secrets.redact_bytes(hot) == want  # in the second slice: the first kept as is
    assert secrets.redact_bytes(b"\xff" + hot) == b"\xff" + want


SLICE_ENDS = [  # (data, start, end) with SLICE = 4: written by hand
    (b"ab\ncd\nef", 0, 3),  # after the last line end within 4 bytes
    (b"a\nb\ncdef", 0, 4),
    (b"abc\ndef", 0, 4),
    (b"abcd\nef", 0, 5),  # none within 4: after the next one
    (b"abcdefg\rh", 0, 8),
    (b"abcdefg", 0, 7),  # none at all: to the end
    (b"ab\r\ncd\ne", 0, 4),
    (b"ab\ncd\nef", 3, 6),
    (b"abc", 0, 3),  # shorter than a slice
    (b"abcd", 0, 4),
    (b"a\nbc", 0, 4),  # exactly a slice: all of it
    (b"\nabcdef", 0, 1),  # a line end at the start
    (b"a\nbc\rd", 0, 2),  # a carriage return past the slice is not looked at
    (b"\ra\rbcdef", 0, 3),  # the last carriage return within it
    (b"ab\rcdef", 0, 3),  # a carriage return alone is a line end
]


@pytest.mark.parametrize("data,start,end", SLICE_ENDS)
def test_a_slice_ends_after_a_line_end(
    monkeypatch: pytest.MonkeyPatch, data: bytes, start: int, end: int
) -> None:
    monkeypatch.setattr(secrets, "SLICE", 4)
    assert secrets._slice_end(data, start) == end


def test_small_slices_redact_what_the_whole_text_does(
    monkeypatch: pytest.MonkeyPatch, canary: str
) -> None:
    monkeypatch.setattr(secrets, "SLICE", 8)
    body = (
        f"a {canary}\r\nb sk-abcdefghijklmnopqrst\rc http://u:p@h/?key=v&x=1\n"
        "d Basic QWxhZGRpbjpvcGVu\n\u00e9 \u00e9"
    ).encode() + b"\xff\n"
    assert (
        secrets.redact_bytes(body)
        == (
            "a <redacted>\r\nb <redacted>\rc http://<redacted>@h/?key=<redacted>&x=1\n"
            "d Basic <redacted>\n\u00e9 \u00e9"
        ).encode()
        + b"\xff\n"
    )


@pytest.mark.parametrize("secret", ["CANARYline\nend42", "CANARYline\rend42"])
def test_a_secret_holding_a_line_end_is_redacted_whole(
    monkeypatch: pytest.MonkeyPatch, secret: str
) -> None:
    monkeypatch.setattr(secrets, "SLICE", 4)
    secrets.register(secret)
    try:
        assert secrets.redact_bytes(b"x " + secret.encode() + b" y") == b"x <redacted> y"
    finally:
        secrets.forget(secret)


def test_with_no_secret_known_a_body_is_still_redacted_a_slice_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(secrets, "_by_length", ())
    body = b'data: {"choices": [{"delta": {"content": "' + b"v" * 2000 + b'"}}]}\n\n'
    body *= 1800  # 3.5 MiB
    out, peak = traced(lambda: secrets.redact_bytes(body))
    assert out is body and peak < 2.5 * MiB, peak / MiB


def _ev(content: str, field: str = "content") -> str:
    return 'data: {"choices": [{"index": 0, "delta": {"' + field + '": "' + content + '"}}]}'


SPLITS = [  # (the data lines, whether redact_split has work): written by hand
    ([_ev("CANARYmem01"), _ev("23456789")], True),  # split across two deltas
    # whole in one fragment: redact() covers it, whatever other events carry the field
    ([_ev("x CANARYmem0123456789"), _ev("y")], False),
    ([_ev("C"), _ev("ANARYmem012345678"), _ev("9")], True),  # over three events
    ([_ev("x CANARYmem0123456789")], False),  # one event: redact() covers it
    ([_ev("CANARYmem01"), _ev("23456789", "reasoning")], False),  # two different fields
    ([_ev("CANARYmem01"), _ev("2345678")], False),  # not the whole secret
    ([_ev("CANARYmem01"), "data: [DONE]", "data: {bad", _ev("23456789")], True),
    (['data: [{"a": "CANARYmem0"}]', 'data: [{"a": "123456789"}]'], True),  # arrays
    (['data: "CANARYmem0"', 'data: "123456789"'], False),  # not an object nor an array
    (["data:" + _ev("CANARYmem01")[5:], "data: " + _ev("23456789")[5:]], True),
]


@pytest.mark.parametrize("lines,found", SPLITS)
def test_a_split_secret_is_found_holding_one_line_at_a_time(
    canary: str, lines: list[str], found: bool
) -> None:
    assert secrets._split_found(lines) is found
    text = "\n\n".join(lines) + "\n\n"
    assert (secrets.redact_split(text) is text) is not found
    body = text.encode()
    assert secrets._whole_needed(body) is found


DATA_LINES = [  # (text, its data lines): written by hand
    ("data: a\n\ndata: b\r\n\r\ndata: c\rdata: d", ["data: a", "data: b", "data: c", "data: d"]),
    (" data: a\nxdata: b\ndata:c", ["data:c"]),
    ("event: x\ndata: {}\n", ["data: {}"]),
]


@pytest.mark.parametrize("text,lines", DATA_LINES)
def test_the_data_lines_are_those_that_start_a_line(text: str, lines: list[str]) -> None:
    assert [m.group() for m in secrets._DATA_LINE.finditer(text)] == lines
    assert [m.group() for m in secrets.DATA_LINE_B.finditer(text.encode())] == [
        x.encode() for x in lines
    ]


SPLIT_BODY = [  # a body where a split canary sends redact_split to its whole path
    "event: x",
    'data: {"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"content": '
    '"a CANARYmem01"}}]}',
    "data: {bad",
    "data: nope\udcff",
    'data: {"model": "m", "choices": [{"index": 0, "delta": {"content": "23456789 b CANA"}}]}',
    'data: {"model": "m", "choices": [{"index": 0, "delta": {"content": '
    '"RYmem0123456789 \u00e9", "role": "assistant"}}]}',
]
SPLIT_REDACTED = [  # written by hand
    "event: x",
    'data: {"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"content": '
    '"a <redacted>"}}]}',
    "data: {bad",
    "data: nope\udcff",
    'data: {"model": "m", "choices": [{"index": 0, "delta": {"content": '
    '"<redacted> b <redacted>"}}]}',
    'data: {"model": "m", "choices": [{"index": 0, "delta": {"content": '
    '"<redacted> \u00e9", "role": "assistant"}}]}',
]


def test_a_split_secret_is_redacted_whole_in_text_and_bytes(canary: str) -> None:
    text = "\n\n".join(SPLIT_BODY) + "\n\n"
    want = "\n\n".join(SPLIT_REDACTED) + "\n\n"
    assert secrets.redact_split(text.replace("\udcff", "")) == want.replace("\udcff", "")
    body = text.encode("utf-8", "surrogateescape")  # an invalid byte in a data line
    assert b"\xff" in body
    assert secrets.redact_bytes(body) == want.encode("utf-8", "surrogateescape")


def test_with_no_secret_known_redact_split_returns_the_text(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(secrets, "_by_length", ())
    text = "\n\n".join(SPLIT_BODY[:2]) + "\n\n"
    assert secrets.redact_split(text) is text


def test_a_clean_body_without_events_is_not_decoded_whole(canary: str) -> None:
    body = b'{"choices": [{"message": {"content": "' + b"u" * (3 * MiB) + b'"}}]}\n'
    body = body.replace(b"u" * 1000, b"u" * 999 + b"\n")  # lines, but no data: line
    out, peak = traced(lambda: secrets.redact_bytes(body))
    assert out is body and peak < 2.5 * MiB, peak / MiB


def test_a_secret_with_a_line_end_known_a_clean_body_is_returned_as_it_is() -> None:
    secrets.register("CANARYline\nend43")
    try:
        body = b"data: clean\n\n"
        assert secrets.redact_bytes(body) is body
    finally:
        secrets.forget("CANARYline\nend43")


def test_the_split_search_starts_a_field_from_nothing() -> None:
    secrets.register("XXXXsecret9")
    try:
        assert secrets._split_found(['data: {"a": "secret9"}', 'data: {"a": "z"}']) is False
        assert secrets._split_found(['data: {"a": "XXXXsec"}', 'data: {"a": "ret9"}']) is True
    finally:
        secrets.forget("XXXXsecret9")


MARKS = [  # (secret, content fragments, what redact_split makes of them): written by hand
    (
        "CANARYmem0123456789",  # an unmarked fragment first; three split occurrences
        ["x", "CANARYmem01", "23456789 CANARYmem01", "23456789 CANARYmem01", "23456789"],
        ["x", "<redacted>", "<redacted> <redacted>", "<redacted> <redacted>", "<redacted>"],
    ),
    (
        "abababab",  # occurrences that overlap: marked once, not past their end
        ["ababa", "bababXYZXYZXYZ"],
        ["<redacted>", "<redacted>XYZXYZXYZ"],
    ),
]


@pytest.mark.parametrize("secret,pieces,redacted", MARKS)
def test_every_split_occurrence_is_marked_and_nothing_past_it(
    secret: str, pieces: list[str], redacted: list[str]
) -> None:
    secrets.register(secret)
    try:
        text = "".join(_ev(p) + "\n\n" for p in pieces)
        assert secrets.redact_split(text) == "".join(_ev(p) + "\n\n" for p in redacted)
    finally:
        secrets.forget(secret)


# ------------------------------------------------------------------ names and ids as long as a body


def test_a_name_and_an_id_as_long_as_the_body_are_held_once_more_at_most(
    tmp_path: Path,
) -> None:
    """An 8 MiB tool name and a 4 MiB id in one event (a 12 MiB body, with a key set):
    the cell holds the body and a few MiB, not copies of them nor a parse of them."""
    body = long_names_body()
    env = {"CELLMEM_KEY": "sk-cellmem0123456789abcdef"}
    with stream_server(lambda w: w.write(body)) as base_url:
        (tmp_path / "providers.yaml").write_text(
            providers_yaml(
                {
                    "names": {
                        "base_url": base_url,
                        "model": "reference",
                        "retries": {"max": 0},
                        "api_key_env": "CELLMEM_KEY",
                        "limits": {"max_bytes": 16 * MiB},
                    }
                }
            )
        )
        rec, live = cell_peaks(tmp_path, "--record-mode=all", "--scenario", "single", env=env)
    assert "Traceback" not in rec.stdout + rec.stderr, rec.stdout[-3000:]
    live_cell = cell_result(tmp_path / "reports")
    (t,) = read_cassette_file(tmp_path / "cassettes" / "names" / "single.yaml")
    assert t.raw == body  # whole in the cassette
    # Recorded, measured the body + 3.1 MiB: the analysis reads the event with the name
    # and the id cut to their ends before the line is decoded (longstrings); at 3c60dc1
    # the body + 24.6 MiB (the SSE parser held the line's text and the value parsed from
    # it at once: 2 x 12 MiB, and the analysis kept the name and the id). The
    # split-key search reads a long line's long strings by their ends only
    # (secrets.shorten_strings), the evidence parses the body with them cut, and the
    # redaction tells from the bytes that a long line holds nothing to redact. Before:
    # the body + 49.3 MiB at the cassette's write (the line decoded and escaped whole:
    # 36 MiB) and the body + 36.8 MiB in the call (the split-key search's decoding and
    # parse of the line, the evidence's second parse beside the analysis' name and id).
    assert live["peak"] <= len(body) + 8 * MiB, live["peak"] / MiB
    assert live["call"] <= len(body) + 8 * MiB, live["call"] / MiB
    # the cassette's write: the body escaped a piece at a time (measured 0.5 MiB)
    assert live["teardown"] <= 1.5 * MiB, live["teardown"] / MiB
    rep, replay = cell_peaks(tmp_path, "--record-mode=none", "--scenario", "single", env=env)
    # the load (and vcrpy's scrub of what it loaded): measured the body + 1.5 MiB; before,
    # the body + 24.1 MiB (the split-key search on the line)
    assert replay["setup"] <= len(body) + 3 * MiB, replay["setup"] / MiB
    # measured the body + 3.1 MiB (the analysis, as recorded); at 3c60dc1 the body + 24.8
    # MiB, before, the body + 37 MiB
    assert replay["peak"] <= len(body) + 8 * MiB, replay["peak"] / MiB
    replayed = cell_result(tmp_path / "reports")
    for key in ("verdict", "reason", "quirks", "findings", "tool_calls", "evidence"):
        assert replayed[key] == live_cell[key], key
    # the name and the id shortened, with their length and digest (longstrings)
    found = json.dumps(live_cell["findings"], ensure_ascii=False)
    assert "…[8388608 characters, sha256 " in found, found[:300]
    assert "…[4194304 characters, sha256 " in found, found[:300]
    assert rep.returncode == rec.returncode


# ------------------------------------------------------------------ long strings cut to their ends

SHORTEN = [  # (a JSON line, keep, what shorten_strings makes of it): written by hand
    (
        b'{"a": "' + b"x" * 200 + b'", "b": 1}',
        10,
        b'{"a": "' + b"x" * 10 + b"x" * 10 + b'", "b": 1}',
    ),
    (b'{"a": "short"}', 10, b'{"a": "short"}'),  # not longer than 2 * keep + 64
    # the head's end falls inside \u0041: cut before it; the tail's start inside \n: kept whole
    (
        b'["' + b"y" * 8 + b"\\u0041" + b"z" * 150 + b"\\n" + b"w" * 9 + b'"]',
        10,
        b'["' + b"y" * 8 + b"\\n" + b"w" * 9 + b'"]',
    ),
    # an escaped backslash before the cut is no escape: the cut stays where it is
    (
        b'["' + b"v" * 8 + b"\\\\" + b"u" * 190 + b'"]',
        10,
        b'["' + b"v" * 8 + b"\\\\" + b"u" * 10 + b'"]',
    ),
    # a control character makes it no JSON string: never cut, so the line stays no JSON
    (
        b'["' + b"t" * 100 + b"\x01" + b"t" * 100 + b'"]',
        10,
        b'["' + b"t" * 100 + b"\x01" + b"t" * 100 + b'"]',
    ),
    # a UTF-8 character at the cut is kept whole; invalid UTF-8 in the middle: not cut
    (
        b'["' + b"s" * 9 + "\u00e9".encode() + b"s" * 190 + b'"]',
        10,
        b'["' + b"s" * 9 + b"s" * 10 + b'"]',
    ),
    (
        b'["' + b"r" * 100 + b"\xff" + b"r" * 100 + b'"]',
        10,
        b'["' + b"r" * 100 + b"\xff" + b"r" * 100 + b'"]',
    ),
]


@pytest.mark.parametrize("line,keep,short", SHORTEN)
def test_long_strings_are_cut_to_their_ends_never_inside_an_escape(
    line: bytes, keep: int, short: bytes
) -> None:
    assert b"".join(secrets.shorten_strings(line, 0, len(line), keep)) == short
    if line.isascii():  # text is cut the same way (by characters, as the split search reads it)
        text = line.decode()
        assert "".join(secrets.shorten_strings(text, 0, len(text), keep)) == short.decode()


def test_a_cut_line_keeps_its_structure_and_its_validity() -> None:
    value = {"a": ['\u00e9\\"' * 300, {"b": "x" * 5000}], "c": "\U0001f600" * 400, "d": 1}
    for ascii_ in (True, False):
        line = json.dumps(value, ensure_ascii=ascii_).encode()
        cut = b"".join(secrets.shorten_strings(line, 0, len(line), 100))
        assert len(cut) < len(line) // 4
        short = json.loads(cut)
        assert short["d"] == 1 and short["a"][1]["b"].startswith("x" * 90)
        assert short["a"][0][:50] == value["a"][0][:50]  # type: ignore[index]
    bad = b'{"a": "' + b"x" * 5000 + b'", "b": }'
    with pytest.raises(ValueError):  # not JSON before, not JSON after
        json.loads(b"".join(secrets.shorten_strings(bad, 0, len(bad), 100)))


CLEAN = [  # (text, whether clean_bytes may say clean): written by hand
    ("n" * 300_000, True),
    ("plain text, nothing to hide\n", True),
    ("a Bearer abcdefghijkl", False),
    ("a bEaReR abcdefghijkl", False),
    ("token\tabcdefgh1234", False),
    ("sk-abcdefghijklmnopqrstu", False),
    ("x=1&y=2", False),
    ("x=1 y=2", True),
    ("http://u@h/", False),
    ("mail me @ home", True),
    ("caf\u00e9", False),  # beyond ASCII: unsure, redacted as text
    ("a CANARYmem0123456789 b", False),
    ('"\\u0043ANARYmem0123456789"', False),  # an escape that could hide the secret
]


@pytest.mark.parametrize("text,clean", CLEAN)
def test_clean_bytes_says_clean_only_where_redact_changes_nothing(
    canary: str, text: str, clean: bool
) -> None:
    data = text.encode()
    assert secrets.clean_bytes(data) is clean
    if clean:
        assert secrets.redact(text) == text
    # a long line is told apart across the hint's steps too
    padded = b"p" * 70_000 + data + b"q" * 70_000
    assert secrets.clean_bytes(padded, 3, len(padded) - 3) is clean


# pieces of what redact looks for, and of what it does not: joined at random
_PIECES = [
    "Bearer ", "bear", "er ", "BASIC ", "ToKeN\t", "token ", "abcdefgh12345678", "sk-",
    "AIza", "gsk_", "xai-", "hf_", "?", "&", "=", "@", "://", "\\u0043", "\\/", "\\",
    "CANARYmem01", "23456789", "n", " ", "\n", "\u00e9", "\u017f", "\u212a", "x" * 40,
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12))
def test_clean_bytes_never_says_clean_where_redact_changes_something(pieces: list[str]) -> None:
    secrets.register(CANARY)
    try:
        text = "".join(pieces)
        if secrets.clean_bytes(text.encode()):
            assert secrets.redact(text) == text
    finally:
        secrets.forget(CANARY)


def test_a_line_longer_than_a_slice_is_not_decoded_when_its_bytes_are_clean(canary: str) -> None:
    body = b'data: {"a": "' + b"n" * (3 * MiB) + b'"}\n\ndata: [DONE]\n\n'
    out, peak = traced(lambda: secrets.redact_bytes(body))
    assert out is body and peak < MiB, peak / MiB  # before: its 3 MiB of text
    for hot in (
        b" " + canary.encode(),
        b" Bearer abcdefghijkl",
        b" \xc3\xa9 sk-abcdefghijklmnopqrst",
    ):
        dirty = b"data: " + b"n" * (3 * MiB) + hot + b"\n\n"
        assert secrets.redact_bytes(dirty) == secrets.redact(
            dirty.decode("utf-8", "surrogateescape")
        ).encode("utf-8", "surrogateescape")
        assert b"<redacted>" in secrets.redact_bytes(dirty)


def test_a_key_split_at_a_long_strings_end_is_still_found(canary: str) -> None:
    long = "w" * (3 * MiB)
    for first, second in (
        (long + "CANARYmem01", "23456789"),  # begun at a long fragment's end
        ("CANARYmem01", "23456789" + long),  # continued at a long fragment's start
    ):
        body = (_ev(first) + "\n\n" + _ev(second) + "\n\n").encode()
        assert secrets._whole_needed(body)
        out = secrets.redact_bytes(body)
        assert b"CANARY" not in out and b"23456789" not in out
        text = body.decode()
        assert "CANARY" not in secrets.redact_body(text)
    clean = (_ev(long + "CANARYmem0") + "\n\n" + _ev("x") + "\n\n").encode()
    (found, peak) = traced(lambda: secrets._whole_needed(clean))
    assert found is False and peak < MiB, peak / MiB  # the line never decoded whole


def test_the_evidence_of_long_strings_is_the_evidence_of_the_whole_parse() -> None:
    from conformance.readers import exchange_transcript
    from conformance.report.evidence import evidence_events, evidence_from_events

    bodies = [
        long_names_body(300_000, 200_000),
        long_names_body(300_000, 200_000).replace(b"data: ", b"data:", 1)
        + b": note\n\ndata: {bad\n\n",
        b'data: {"a": "' + b"\xff" * 100_000 + b'"}\n\ndata: [DONE]\n\n',  # bad UTF-8
        b'data: {"a": "' + b"x" * 100_000 + b'\x01"}\n\n',  # not JSON
    ]
    for body in bodies:
        t = exchange_transcript("x", "live", None, 200, {"content-type": "text/event-stream"}, body)
        findings = [{"event": n} for n in range(8)]
        want = evidence_from_events(t.events(), findings)
        events, peak = traced(lambda t=t: list(evidence_events(t)))  # type: ignore[misc]
        assert evidence_from_events(events, findings) == want
        assert [e.kind for e in events] == [e.kind for e in t.events()]
        if b"n" * 1000 in body:  # (the whole parse: twice the body; a line not cut: so)
            assert peak < len(body) // 2, peak
