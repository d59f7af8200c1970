"""The analysis keeps a bounded amount of content and reasoning (issue #16): the robust
strategy keeps the first ``analyzer.TEXT_KEPT`` characters of each and counts the rest; the
round trip of a turn whose text was cut is not sent (an error cell says why in one line);
and the analysis of a stream that is mostly content peaks at a constant above its body, not
at a multiple of its text. The bound is monkeypatched small where the test is about it."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from streams import analyze_sse
from test_repeat_aggregation import ANSWER, REJECTED, WEATHER, _with_reasoning, run, sse

from conformance.analysis import analyzer
from conformance.client import RoundTripPolicy

SAID = "Checking the weather."  # 21 characters, streamed as words
CALL = {
    "id": WEATHER.id,
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}
NOT_SENT = (
    "round trip: not sent: the turn's {} was cut (the first {} of {} characters "
    "kept): sent back, it would not be what was received"
)


@pytest.mark.parametrize("kept", [21, 1000])
def test_round_trip_of_content_within_the_bound_is_sent_unchanged(
    monkeypatch: pytest.MonkeyPatch, kept: int
) -> None:
    monkeypatch.setattr(analyzer, "TEXT_KEPT", kept)
    cell, wire = run("round-trip", (200, sse([WEATHER], content=SAID)), ANSWER)
    assert (cell.verdict, cell.reason) == ("conforms", None)
    assert wire.requests[1]["messages"][-2] == {
        "role": "assistant",
        "content": SAID,
        "tool_calls": [CALL],
    }


def test_round_trip_of_cut_content_is_not_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analyzer, "TEXT_KEPT", 20)
    cell, wire = run(
        "round-trip",
        (200, sse([WEATHER], content=SAID)),
        (200, sse([WEATHER], content=SAID)),
        repeat=2,
    )
    assert len(wire.requests) == 2  # one per trial: no round trip went out
    assert (cell.verdict, cell.reason) == ("error", NOT_SENT.format("content", 20, 21))
    assert (cell.elicited, cell.quirks, cell.findings) == (None, [], [])
    assert cell.trials["exchanges_per_trial"] == [1, 1]
    assert cell.tool_calls["robust"] == [
        dict(
            index=0,
            id=WEATHER.id,
            type="function",
            name="get_weather",
            arguments='{"city": "Paris"}',
        )
    ]


def test_round_trip_of_cut_reasoning_is_not_sent_when_echoed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(analyzer, "TEXT_KEPT", 10)
    cell, wire = run(
        "round-trip",
        (200, _with_reasoning([WEATHER])),
        roundtrip=RoundTripPolicy(echo_reasoning=True),
    )
    assert len(wire.requests) == 1
    assert (cell.verdict, cell.reason) == ("error", NOT_SENT.format("reasoning", 10, 20))


def test_cut_reasoning_that_is_not_echoed_goes_back_and_is_not_probed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(analyzer, "TEXT_KEPT", 10)
    # rejected, then the probes: content "", tool-message name, 9-character ids; the
    # reasoning echo (the fourth probe of a whole reasoning) would send a cut text: skipped.
    cell, wire = run("round-trip", (200, _with_reasoning([WEATHER])), *[REJECTED] * 4)
    assert len(wire.requests) == 5
    assert not [r for r in wire.requests[1:] if "reasoning_content" in r["messages"][-2]]
    assert wire.requests[1]["messages"][-2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [CALL],
    }
    assert cell.verdict == "fails" and cell.reason is None


# ------------------------------------------------------------------ the analysis


def _event(delta: dict, finish: str | None = None) -> str:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return "data: " + json.dumps(chunk) + "\n\n"


def _talker(pieces: int, piece: str) -> bytes:
    """A turn that talks (``pieces`` content deltas, then as many reasoning deltas) and then
    makes one call."""
    body = [_event({"role": "assistant", "content": ""})]
    body += [_event({"content": piece})] * pieces
    body += [_event({"reasoning_content": piece})] * pieces
    body += [
        _event(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": WEATHER.id,
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ]
            }
        ),
        _event({}, "tool_calls"),
        "data: [DONE]\n\n",
    ]
    return "".join(body).encode()


def test_the_analysis_keeps_the_bound_and_judges_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = _talker(3, "abcd ")
    whole = analyze_sse(raw)
    assert (whole.turn.content, whole.turn.content_dropped) == ("abcd " * 3, 0)
    monkeypatch.setattr(analyzer, "TEXT_KEPT", 7)
    cut = analyze_sse(raw)
    assert (cut.turn.content, cut.turn.content_dropped) == ("abcd ab", 8)
    assert (cut.turn.reasoning, cut.turn.reasoning_dropped) == ("abcd ab", 8)
    assert cut.to_json() == whole.to_json()  # the verdict, findings and calls do not change
    assert cut.verdict == "conforms"


def test_a_content_heavy_analysis_peaks_at_a_constant_above_its_body() -> None:
    # 4,000 content deltas of 1,001 characters, as many of reasoning: 8 million characters
    # of text in a body of 8.9 MiB. Measured (tracemalloc, peak above the start, the body
    # already held): 11.8 MiB when every character was kept (the pieces and their join),
    # 3.3 MiB with TEXT_KEPT (1 Mi characters each: the content joined beside its pieces
    # while the reasoning is held, 3 MiB; the group-H sample, 0.2 MiB).
    raw = _talker(4000, "lorem ipsum " * 83 + "dolor")
    assert len(raw) > 8 << 20
    analyze_sse(_talker(2, "warm up"))  # the first analysis' imports and caches, not counted
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        r = analyze_sse(raw)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    assert r.turn.content_dropped == 4000 * 1001 - analyzer.TEXT_KEPT
    assert r.verdict == "conforms"
    assert peak < 4.5 * 2**20, f"{peak / 2**20:.1f} MiB"
