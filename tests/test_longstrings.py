"""Identifiers as long as a body are cut before their event is decoded (issue 23, point 5):
the analysis sees them shortened with a marker of their length and digest, two different
ones stay different, the same one spelled two ways stays the same, a call holding one is
not sent back, text the analysis judges (arguments, content) is never cut, a line's
validity as JSON never changes, and an ordinary stream is read exactly as before."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from streams import analyze_sse

from conformance import longstrings
from conformance.client import TextCutError, assistant_message
from conformance.sse import parse_sse_bytes
from conformance.transcript import CHUNK, NONJSON

MiB = 2**20
BIG = 2 * MiB  # a line longer than longstrings.LONG_LINE


def _ev(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _call(name: str, id_: str, args: str = "", index: int = 0) -> dict[str, Any]:
    tc = {
        "index": index,
        "id": id_,
        "type": "function",
        "function": {"name": name, "arguments": args},
    }
    return {"choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}]}


def _stream(*calls: dict[str, Any]) -> bytes:
    end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
    return b"".join(_ev(c) for c in calls) + _ev(end) + b"data: [DONE]\n\n"


def _marker(value: str) -> str:
    digest = hashlib.sha256(value.encode("utf-16-le", "surrogatepass")).hexdigest()
    return longstrings.marker(len(value), digest)


def test_a_long_name_is_shortened_with_its_length_and_digest() -> None:
    name = "n" * BIG + "END"
    r = analyze_sse(_stream(_call(name, "call_1", '{"city": "P"}')))
    (call,) = r.turn.calls
    assert call.name == name[: longstrings.KEEP] + _marker(name) + name[-longstrings.KEEP :]
    assert longstrings.is_cut(call.name) and not longstrings.is_cut(call.id)
    assert call.arguments == '{"city": "P"}' and call.valid
    found = json.dumps([f.to_json() for f in r.findings], ensure_ascii=False)
    assert f"…[{len(name)} characters, sha256 " in found  # the report shows the marker


def test_different_long_names_stay_different_and_the_same_stays_the_same() -> None:
    a = "x" * BIG
    b = "x" * (BIG // 2) + "y" + "x" * (BIG // 2 - 1)  # same length, same ends
    two = analyze_sse(_stream(_call(a, "c1", "{}", 0), _call(b, "c2", "{}", 1)))
    assert [longstrings.is_cut(c.name) for c in two.turn.calls] == [True, True]
    assert two.turn.calls[0].name != two.turn.calls[1].name
    # the same id spelled with an escape and without: equal once cut, as whole
    id_ = "c" * BIG
    escaped = _ev(_call("get_weather", id_)).replace(b'"id": "c', b'"id": "\\u0063', 1)
    events = [
        e for e in parse_sse_bytes(_ev(_call("get_weather", id_)) + escaped) if e.kind == CHUNK
    ]
    ids = [e.chunk["choices"][0]["delta"]["tool_calls"][0]["id"] for e in events]
    assert ids[0] == ids[1] and longstrings.is_cut(ids[0])


def test_a_call_with_a_long_id_is_not_sent_back() -> None:
    r = analyze_sse(_stream(_call("get_weather", "c" * BIG, '{"city": "P"}')))
    assert r.verdict != "error" and longstrings.is_cut(r.turn.calls[0].id)
    with pytest.raises(TextCutError, match="id was longer than the analysis keeps"):
        assistant_message(r.turn)
    short = analyze_sse(_stream(_call("get_weather", "c" * 100, '{"city": "P"}')))
    assert assistant_message(short.turn)["tool_calls"][0]["id"] == "c" * 100


def _judged(body: bytes) -> tuple[Any, ...]:
    r = analyze_sse(body)
    return r.verdict, [f.to_json() for f in r.findings], r.turn.calls


def test_a_round_trip_of_a_call_with_a_long_id_is_not_sent() -> None:
    """The runner: the cell is an error that says why, and no second request goes out."""
    from test_repeat_aggregation import run, sse

    from conformance.mutations import CallSpec

    long_id = CallSpec("c" * BIG, "get_weather", '{"city": "Paris"}')
    cell, wire = run("round-trip", (200, sse([long_id])))
    assert len(wire.requests) == 1
    assert (cell.verdict, cell.reason) == (
        "error",
        "round trip: not sent: call 0's id was longer than the analysis keeps: sent back, "
        "it would not be what was received",
    )


@pytest.mark.parametrize(
    "args", ['{"city": "' + "P" * BIG + '"}', '{"city": "' + "P" * BIG], ids=["valid", "unclosed"]
)
def test_long_arguments_are_never_cut_and_keep_their_verdict(
    args: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Beside a long id that is cut, long arguments (valid or not) are judged whole,
    exactly as with no cut at all."""
    body = _stream(_call("get_weather", "c" * BIG, args))
    verdict, findings, (call,) = _judged(body)
    assert call.raw_arguments == args and longstrings.is_cut(call.id)
    monkeypatch.setattr(longstrings, "pieces", lambda data, fresh=True: iter([data]))
    whole_verdict, whole_findings, (whole,) = _judged(body)
    assert (verdict, call.valid, call.repaired, call.arguments) == (
        whole_verdict,
        whole.valid,
        whole.repaired,
        whole.arguments,
    )
    assert [f["rule"] for f in findings] == [f["rule"] for f in whole_findings]


def test_a_long_content_is_never_cut() -> None:
    body = _ev({"choices": [{"index": 0, "delta": {"content": "t" * BIG}}]})
    assert list(longstrings.pieces(body)) == [body]


def test_an_ordinary_body_is_read_as_before() -> None:
    body = b"".join(_ev(_call("get_weather", f"call_{i}", "{}")) for i in range(20000))
    assert len(body) > longstrings.LONG_LINE
    assert list(longstrings.long_lines(body)) == []
    assert list(longstrings.pieces(body)) == [body]


def _kinds(body: bytes) -> list[str]:
    return [e.kind for e in parse_sse_bytes(body)]


# Parameters of megabytes get short test ids: pytest would spell out every byte in the
# node id (37 MB of ids collected by each xdist worker and sent to the controller).
CUT_OR_NOT = [  # (a long event, whether its id is cut): written by hand
    (_ev(_call("f", "c" * BIG)), True),
    (b": comment\n" + _ev(_call("f", "c" * BIG)), False),  # not a whole one-line event
    (_ev(_call("f", "c" * BIG))[:-1], False),  # no blank line after it
    (b"data: " + json.dumps(_call("f", "c" * BIG)).encode() + b"\ndata: {}\n\n", False),
    (_ev(_call("f", "c" * BIG)).replace(b"cccc", b"c\tcc", 1), False),  # not a JSON string
    (_ev(_call("f", "c" * BIG)).replace(b"cccc", b"c\xffcc", 1), False),  # not UTF-8
    (_ev({"ids": ["c" * BIG]}), False),  # not an identifier's field
]


@pytest.mark.parametrize(
    ("body", "cut"),
    CUT_OR_NOT,
    ids=["whole", "comment", "no-blank-line", "two-lines", "tab", "not-utf8", "not-an-id"],
)
def test_only_a_long_identifier_of_a_whole_valid_event_is_cut(body: bytes, cut: bool) -> None:
    assert (list(longstrings.pieces(body)) != [body]) == cut


INVALID = [  # long lines that are not JSON, with a long id: written by hand
    _ev(_call("f", "c" * BIG)).replace(b'"type"', b'"type" "x",', 1),  # a structural fault
    _ev(_call("f", "c" * BIG)).replace(b'"f"', b'"\\q"', 1),  # a bad escape after the id
    _ev(_call("f", "c" * BIG)).replace(b'{"choices"', b'{"model": "\\q", "choices"', 1),
    _ev(_call("f", "c" * BIG)).replace(b"}]}\n", b"}]\n", 1),  # unbalanced
]


@pytest.mark.parametrize("body", INVALID, ids=["structure", "escape", "escape-first", "unbalanced"])
def test_a_cut_never_makes_an_invalid_line_valid(body: bytes) -> None:
    assert _kinds(body) == [NONJSON]


def test_a_cut_line_stays_valid_with_the_same_structure() -> None:
    body = _ev(_call("f" * BIG, "c" * BIG, '{"a": 1}'))
    (ev,) = parse_sse_bytes(body)
    assert ev.kind == CHUNK and len(ev.data) < 5 * longstrings.KEEP + 400
    tc = ev.chunk["choices"][0]["delta"]["tool_calls"][0]
    assert tc["function"]["arguments"] == '{"a": 1}'
    assert tc["id"] == "c" * longstrings.KEEP + _marker("c" * BIG) + "c" * longstrings.KEEP


@pytest.mark.parametrize(
    ("before", "after"), [(longstrings.KEEP - 5, BIG), (BIG, longstrings.KEEP - 5)]
)
def test_a_cut_never_leaves_part_of_a_key(before: int, after: int) -> None:
    """A key across where a long name's kept end is cut: redacted before the cut."""
    from conformance import secrets

    key = "sk-longstrings0123456789abcdef"
    name = "n" * before + key + "n" * after
    secrets.register(key)
    try:
        (call,) = analyze_sse(_stream(_call(name, "call_1", "{}"))).turn.calls
    finally:
        secrets.forget(key)
    assert longstrings.is_cut(call.name)
    assert key[:4] not in call.name and key[-4:] not in call.name
    assert secrets.REDACTED[:4] in call.name or secrets.REDACTED[-4:] in call.name


def _facts(events: Any) -> list[tuple[Any, ...]]:
    return [(e.n, e.kind, e.line, e.data, e.chunk, e.sse_event) for e in events]


def _file_events(tmp_path: Any, body: bytes) -> list[tuple[Any, ...]]:
    from conformance.readers import read_sse_file

    path = tmp_path / "capture.sse"
    path.write_bytes(body)
    (t,) = read_sse_file(path)
    return _facts(t.events())


def test_a_long_id_in_an_sse_file_is_cut_as_in_a_body_in_memory(tmp_path: Any) -> None:
    # `analyze FILE` reads 64 KiB blocks: the long line is held until it ends, so the
    # decoder sees it whole and cuts it as it does a body in memory.
    name = "n" * BIG + "END"
    body = _ev({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}) + _stream(
        _call(name, "c" * BIG, '{"city": "P"}')
    )
    from_file = _file_events(tmp_path, body)
    assert from_file == _facts(parse_sse_bytes(body))
    names = [
        tc["function"]["name"]
        for _, k, _, _, v, _ in from_file
        if k == CHUNK
        for tc in v["choices"][0]["delta"].get("tool_calls") or []
    ]
    assert names and longstrings.is_cut(names[0]) and names[0].endswith("END")


@pytest.mark.parametrize(
    "body",
    [
        b"".join(_ev(_call("get_weather", f"call_{i}", "{}")) for i in range(3000)),
        b"".join(_ev(_call("f", f"c{i}", "{}")) for i in range(3000)).replace(b"\n", b"\r\n"),
        _ev({"choices": [{"index": 0, "delta": {"content": "t" * BIG}}]}) * 2,  # never cut
        b"data: " + b"x" * (BIG + 5),  # one unfinished line, no line end at all
        b": keep-alive\r" + _ev(_call("f", "c" * BIG)),  # CR line ends, not a whole event
    ],
    ids=["ordinary", "crlf", "content", "unfinished", "cr"],
)
def test_an_sse_file_gives_the_events_of_its_bytes(tmp_path: Any, body: bytes) -> None:
    from conformance.readers import _iter_file_blocks

    path = tmp_path / "capture.sse"
    path.write_bytes(body)
    assert b"".join(_iter_file_blocks(path)) == body
    assert _file_events(tmp_path, body) == _facts(parse_sse_bytes(body))
