"""An empty or cut 200 body is an `error` with its reason, not Q-FINISH-NEVER-SENT.

A server that crashes after sending its headers answers 200 with no event at all, or with
a body that stops inside an event. A stream that ends on an event boundary without a
finish_reason stays the catalogued quirk (the control): some servers stream that way.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from conformance.analysis import analyze_bytes
from conformance.providers import provider_from_entry
from conformance.runner import CellRunner
from conformance.scenarios import SCENARIOS

REQUEST = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
ROLE = (
    'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    '"choices":[{"index":0,"delta":{"role":"assistant","content":""},'
    '"finish_reason":null}]}\n\n'
)
TEXT = (
    'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    '"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}\n\n'
)
EMPTY_REASON = (
    "HTTP 200 with an empty body: the server closed the stream after its headers, before any event"
)


def test_empty_200_body_is_an_error_with_the_reason() -> None:
    r = analyze_bytes(b"", status=200, request=REQUEST)
    assert r.verdict == "error"
    assert r.error == EMPTY_REASON
    assert r.quirks == []  # not Q-FINISH-NEVER-SENT
    assert [f.rule for f in r.findings] == ["R-COMPLETE"]


def test_blank_lines_only_are_an_error_too() -> None:
    r = analyze_bytes(b"\n\n", status=200, request=REQUEST)
    assert r.verdict == "error"
    assert r.error == (
        "HTTP 200 with 2 bytes and no event: the server closed the stream "
        "after its headers, before any event"
    )


def test_body_cut_inside_an_event_is_an_error() -> None:
    raw = (ROLE + TEXT + TEXT[:40]).encode()  # the third event stops halfway
    r = analyze_bytes(raw, status=200, request=REQUEST)
    assert r.verdict == "error"
    assert r.error == (
        "HTTP 200 body cut inside an event after 2 event(s), with no "
        "finish_reason: the server closed the stream mid-answer"
    )
    assert "Q-FINISH-NEVER-SENT" not in r.quirks and "Q-SSE-DONE-MISSING" not in r.quirks


def test_control_a_stream_ending_on_an_event_boundary_without_finish_is_the_quirk() -> None:
    r = analyze_bytes((ROLE + TEXT).encode(), status=200, request=REQUEST)
    assert r.verdict == "quirk" and r.error is None
    assert "Q-FINISH-NEVER-SENT" in r.quirks


def test_control_a_finished_stream_cut_in_its_last_event_is_not_an_error() -> None:
    # The finish_reason arrived: the answer is whole, only the framing is broken.
    finish = TEXT.replace('"content":"Hello"},"finish_reason":null', '},"finish_reason":"stop"')
    r = analyze_bytes((ROLE + finish + "data: [DO").encode(), status=200, request=REQUEST)
    assert r.verdict != "error" and r.error is None


def _runner(bodies: list[bytes]) -> CellRunner:
    answers = iter(bodies)

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, content=next(answers)
        )

    return CellRunner(replay=True, client=httpx.Client(transport=httpx.MockTransport(answer)))


def _sse(chunks: list[dict[str, Any]]) -> bytes:
    return (
        b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    )


PROVIDER = provider_from_entry("p", {"base_url": "http://127.0.0.1:9/v1", "model": "m"})


def test_the_cell_of_an_empty_body_is_an_error() -> None:
    runner = _runner([b""])
    cell = runner.run(PROVIDER, SCENARIOS["single"])
    runner.close()
    assert (cell.verdict, cell.reason, cell.quirks) == ("error", EMPTY_REASON, [])


def test_an_empty_body_on_the_round_trip_is_an_error_of_the_round_trip() -> None:
    envelope = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    first = _sse(
        [
            dict(
                envelope,
                choices=[{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}],
            ),
            dict(envelope, choices=[{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]),
        ]
    )
    runner = _runner([first, b""])
    cell = runner.run(PROVIDER, SCENARIOS["round-trip"])
    runner.close()
    assert cell.verdict == "error"
    assert cell.reason == "round trip: " + EMPTY_REASON
