"""conformance.sse event by event: number, kind, line, payload, value and SSE event name of
what each body gives, on the fast path (one plain ``data:`` line) and off it (httpx-sse's
decoder), whole and split at every byte. The mutation run's tests for sse.py."""

from __future__ import annotations

import json

import pytest

from conformance import sse
from conformance.transcript import CHUNK, COMMENT, DONE, FAULT, NONJSON, Event


def events(body: bytes) -> list[Event]:
    """The events of ``body`` whole, after checking that every two-block split gives the
    same ones (re-chunking never changes the result)."""
    whole = sse.parse_sse_bytes(body)
    for cut in range(1, len(body)):
        assert list(sse.iter_sse([body[:cut], body[cut:]])) == whole, cut
    return whole


def test_done_off_the_fast_path_keeps_its_event_name_and_line() -> None:
    assert events(b": hi\nevent: end\ndata: [DONE]\n\n") == [
        Event(0, COMMENT, 1, "hi"),
        Event(1, DONE, 2, "[DONE]", None, "end"),
    ]


@pytest.mark.parametrize("data", [b"data:[DONE]", b"data:  [DONE] ", b"data: [DONE]\r"])
def test_done_with_other_spacing_is_done(data: bytes) -> None:
    got = events(data + b"\n\n")
    text = data[5:].removeprefix(b" ").rstrip(b"\r").decode()
    assert got == [Event(0, DONE, 1, text, None, "message")]


def test_done_in_another_case_is_not_json() -> None:
    assert events(b"event: x\ndata: [done]\n\n") == [Event(0, NONJSON, 1, "[done]", None, "x")]


def test_a_payload_off_the_fast_path_is_a_chunk_or_not_json_with_its_event_name() -> None:
    body = b'\nid: 7\ndata: {"a":\ndata: 1}\n\nevent: note\ndata: hello\n\n'
    assert events(body) == [
        Event(0, CHUNK, 2, '{"a":\n1}', {"a": 1}, "message"),
        Event(1, NONJSON, 6, "hello", None, "note"),
    ]


def test_fast_path_events() -> None:
    body = b'data: {"a":1}\n\ndata: [DONE]\n\ndata: {"a":\n\n'
    assert events(body) == [
        Event(0, CHUNK, 1, '{"a":1}', {"a": 1}, "message"),
        Event(1, DONE, 3, "[DONE]", None, "message"),
        Event(2, NONJSON, 5, '{"a":', None, "message"),
    ]


def test_an_event_cut_by_the_end_is_a_fault_at_its_first_line() -> None:
    assert events(b": c\ndata: a\ndata: b\n") == [
        Event(0, COMMENT, 1, "c"),
        Event(1, FAULT, 2, sse.CUT_FAULT + " (no blank line after it): a\\nb"),
    ]


def test_invalid_utf8_is_one_fault_at_the_last_line_after_the_events() -> None:
    assert events(b": one\n: tw\xffo\n\n") == [
        Event(0, COMMENT, 1, "one"),
        Event(1, COMMENT, 2, "tw\ufffdo"),
        Event(2, FAULT, 3, "invalid UTF-8 in the stream (decoded with U+FFFD)"),
    ]


def test_a_line_that_is_no_sse_field_is_a_fault_at_that_line() -> None:
    assert events(b': x\n{"a": 1}\n\n: y\n[1]\ndata: 2\n\n') == [
        Event(0, COMMENT, 1, "x"),
        Event(1, FAULT, 2, 'not an SSE field: {"a": 1}'),
        Event(2, COMMENT, 4, "y"),  # numbered on after the fault
        Event(3, FAULT, 5, "not an SSE field: [1]"),
        Event(4, CHUNK, 6, "2", 2, "message"),
    ]


def test_a_long_id_is_cut_only_where_an_event_starts() -> None:
    """A block over a MiB that starts in the middle of a line (the block before ended
    without its line end) is no event's start: its long id is part of that line and not
    cut, as when the body comes in one block."""
    head = b": a comment the next block goes on with "
    line = b'data: {"id":"' + b"x" * (sse.LONG_LINE + 10) + b'"}\n\n'
    whole = sse.parse_sse_bytes(head + line)
    assert [e.kind for e in whole] == [COMMENT] and len(whole[0].data) > sse.LONG_LINE
    assert list(sse.iter_sse([head, line])) == whole
    # at a stream's start the same line is an event, and its id is cut
    [event] = sse.parse_sse_bytes(line)
    assert event.kind == CHUNK and len(event.chunk["id"]) < 10_000


@pytest.mark.parametrize("end", [b"\r\n", b"\r", b"\n"])
def test_every_line_end_gives_the_same_events_and_lines(end: bytes) -> None:
    body = b'data: {"a":1}\n\n: c\nevent: e\ndata: [DONE]\n\n'.replace(b"\n", end)
    assert events(body) == [
        Event(0, CHUNK, 1, '{"a":1}', {"a": 1}, "message"),
        Event(1, COMMENT, 3, "c"),
        Event(2, DONE, 4, "[DONE]", None, "e"),
    ]


def test_a_character_cut_by_the_end_of_the_body_is_invalid_utf8() -> None:
    assert events(b": a\xe2\x82") == [
        Event(0, COMMENT, 1, "a\ufffd"),
        Event(1, FAULT, 1, "invalid UTF-8 in the stream (decoded with U+FFFD)"),
    ]


def test_an_event_of_exactly_the_largest_size_is_an_event(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "MAX_EVENT_BYTES", 20)
    fits = b"event: e\ndata: 123456\n\n"  # its field lines: 8 + 12 characters
    assert events(fits) == [Event(0, CHUNK, 1, "123456", 123456, "e")]
    over = b"event: e\ndata: 1234567\n\ndata: 1\n\n"
    assert events(over) == [
        Event(0, FAULT, 1, "one event larger than 20 bytes"),
        Event(1, CHUNK, 4, "1", 1, "message"),
    ]


def test_an_oversized_event_cut_by_the_end_is_a_fault_at_its_first_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sse, "MAX_EVENT_BYTES", 20)
    assert events(b": c\nevent: e\ndata: 1234567\ndata: 8\n") == [
        Event(0, COMMENT, 1, "c"),
        Event(1, FAULT, 2, sse.CUT_FAULT + " larger than 20 bytes"),
    ]


def test_a_cut_event_is_quoted_on_one_line_up_to_120_characters() -> None:
    [fault] = sse.parse_sse_bytes(b"data: " + b"x" * 100 + b"\ndata: " + b"y" * 100 + b"\n")
    quoted = ("x" * 100 + "\\n" + "y" * 100)[:120]
    assert fault == Event(0, FAULT, 1, sse.CUT_FAULT + " (no blank line after it): " + quoted)


def test_a_fast_event_first_in_a_block_leaves_the_block_s_last_line_alone() -> None:
    assert sse.parse_sse_bytes(b'data: {"a":1}\n\n: c\n') == [
        Event(0, CHUNK, 1, '{"a":1}', {"a": 1}, "message"),
        Event(1, COMMENT, 3, "c"),
    ]


def test_a_chunk_parsed_from_its_delta_is_the_same_event() -> None:
    chunks = [{"id": "c", "choices": [{"index": 0, "delta": {"content": c}}]} for c in "ab"]
    texts = [json.dumps(c, separators=(",", ":")) for c in chunks]
    got = events(b"".join(b"data: " + t.encode() + b"\n\n" for t in texts))
    assert got == [
        Event(0, CHUNK, 1, texts[0], chunks[0], "message"),
        Event(1, CHUNK, 3, texts[1], chunks[1], "message"),
    ]
    assert got[1].envelope is not None  # the second was read from its delta on


def test_comments_and_slow_events_are_numbered_in_order() -> None:
    body = b":ping\nevent: a\ndata: 1\n\nevent: b\ndata: 2\n\nevent: c\ndata: 3\n\n"
    assert events(body) == [
        Event(0, COMMENT, 1, "ping"),  # no space after the colon
        Event(1, CHUNK, 2, "1", 1, "a"),
        Event(2, CHUNK, 5, "2", 2, "b"),
        Event(3, CHUNK, 8, "3", 3, "c"),
    ]


def test_a_line_that_is_no_sse_field_is_quoted_up_to_120_characters() -> None:
    [fault] = events(b"x" * 200 + b"\n")
    assert fault == Event(0, FAULT, 1, "not an SSE field: " + "x" * 120)


def test_the_events_after_an_oversized_one_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "MAX_EVENT_BYTES", 20)
    body = (
        b"event: e\ndata: 123456\n\nevent: e\ndata: 1234567\ndata: 8\n\nevent: e\ndata: 123456\n\n"
    )
    assert events(body) == [
        Event(0, CHUNK, 1, "123456", 123456, "e"),
        Event(1, FAULT, 4, "one event larger than 20 bytes"),
        Event(2, CHUNK, 8, "123456", 123456, "e"),  # as large as the limit: an event
    ]


@pytest.mark.parametrize(
    "body", [b'data: {"a":1}\n', b'event: x\ndata: {"a":1}\n', b'data: {"a":1}\n\ndata: {"b":2}\n']
)
def test_a_body_that_ends_after_a_data_line_without_its_blank_line_ends_in_a_fault(
    body: bytes,
) -> None:
    # the line ended, so nothing is pending in the splitter: the event's data is held
    evs = list(sse.iter_sse([body]))
    kinds = [e.kind for e in evs]
    assert kinds[-1] == FAULT and kinds.count(FAULT) == 1
    assert evs[-1].data.startswith(sse.CUT_FAULT)


@pytest.mark.parametrize("body", [b'data:{"a":1}\n', b'data: {"a":1}\nid: 7\n'])
def test_an_event_cut_after_a_line_that_is_not_held_ends_in_a_fault(body: bytes) -> None:
    # the last line is no `data: ` line, so nothing is held: only the decoder has the data
    assert events(body) == [
        Event(0, FAULT, 1, sse.CUT_FAULT + ' (no blank line after it): {"a":1}')
    ]
