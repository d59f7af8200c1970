"""A long stream (past the analyzer's periodic compaction of what the strategies keep)
assembles exactly what it streamed: two interleaved calls of 70,000 fragments each and
content between them; every strategy, every character."""

from __future__ import annotations

import json

from conformance.analysis import analyze
from conformance.analysis.analyzer import COMPACT_EVERY
from conformance.sse import iter_sse
from conformance.transcript import Transcript

FRAGMENTS = 70_000  # per call: 140,000 events and more, two compactions at least


def _event(delta: dict, finish: str | None = None) -> bytes:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def _blocks():
    yield _event({"role": "assistant", "content": "Checking. "})
    for k in (0, 1):
        yield _event(
            {
                "tool_calls": [
                    {
                        "index": k,
                        "id": f"call_{k:024d}",
                        "type": "function",
                        "function": {"name": f"f{k}", "arguments": ""},
                    }
                ]
            }
        )
        yield _event({"tool_calls": [{"index": k, "function": {"arguments": '{"q": "'}}]})
    for i in range(FRAGMENTS):
        yield b"".join(
            _event({"tool_calls": [{"index": k, "function": {"arguments": f"{k}{i % 10}"}}]})
            for k in (0, 1)
        )
    for k in (0, 1):
        yield _event({"tool_calls": [{"index": k, "function": {"arguments": '"}'}}]})
    yield _event({}, "tool_calls")
    yield b"data: [DONE]\n\n"


def test_a_long_stream_assembles_every_character() -> None:
    assert 2 * FRAGMENTS > 2 * (COMPACT_EVERY + 1)
    tools = [{"type": "function", "function": {"name": f"f{k}"}} for k in (0, 1)]
    t = Transcript(
        "<long>",
        "sse",
        True,
        lambda: iter_sse(_blocks()),
        request={"body": {"stream": True, "tools": tools}},
    )
    r = analyze(t)
    digits = "".join(str(i % 10) for i in range(FRAGMENTS))
    want = [
        {
            "index": k,
            "id": f"call_{k:024d}",
            "type": "function",
            "name": f"f{k}",
            "arguments": '{"q": "' + "".join(f"{k}{d}" for d in digits) + '"}',
        }
        for k in (0, 1)
    ]
    for strategy in ("naive", "guarded", "robust"):
        assert r.tool_calls[strategy] == want, strategy
    assert r.turn is not None and r.turn.content == "Checking. "
    assert r.verdict == "conforms", [f.to_json() for f in r.findings]
