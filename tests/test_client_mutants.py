"""conformance.client judged by mutmut: what a client gets back from the accumulator (the
calls, their ids and arguments, the notes it reports) for the streams that reach the code
mutmut mutates, every expected value written here by hand.

The first test is a loop guard: JSON repair and the splitting of arguments walk a text
with a cursor, and a mutant that stops the cursor loops for ever. mutmut's own limit for
such a mutant is the duration of every test that reaches the function, times 30 (about
eight minutes for the repair): the guard runs first (``runs_first``) and turns the loop
into a failure after a CPU budget that is a hundred times what the work costs. CPU time,
not wall time, so a loaded machine does not fail it.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from conformance.client import TextCutError, ToolCallAccumulator, Turn, repair_json
from conformance.longstrings import marker

# ------------------------------------------------------------------ the loop guard

CPU_BUDGET = 2.0  # seconds of this process's CPU; the guarded work takes about 20 ms


class EndlessLoop(Exception):
    """Not a ValueError: the code under test catches those."""


@contextmanager
def cpu_budget(seconds: float) -> Iterator[None]:
    def stop(signum: int, frame: Any) -> None:
        raise EndlessLoop(f"still running after {seconds} CPU-seconds")

    previous = signal.signal(signal.SIGVTALRM, stop)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


# Every token JSON has: strings with each escape, numbers with sign, fraction and exponent,
# the three literals, nested and empty containers, whitespace around each separator.
DOCUMENT = (
    '{"city": "Par\\u00e9is \\"x\\" \\\\ \\/ \\n", "n": -12.5e+3, "z" : 0,'
    ' "ok": true, "no": false, "nil": null,\n "list": [1, {"a": []}, "s", [2.0E1]], "e": {}}'
)
FULL = json.loads(DOCUMENT)
# Texts that are no prefix of a JSON value (a bad escape or control character in a string
# or a key, a stray closer, a missing colon or comma, a bad token, two values): refused,
# each after the repair walked up to its fault.
NOT_A_PREFIX = (
    '{"a": "\\x", "b": 1',
    '["\\x", ',
    '{"a\\X',
    '{"b": 1, "a\\X',
    '[1,"\\uzz"',
    '{"a": "\\uzz12',
    '{"a": "\x01", "b": 1',
    '{"a": 1}}',
    '{"a" 1',
    '{"a": "b" "c"',
    '{"a": 1, }',
    '{"a": truex}',
    '{"a": 01',
    "[1 -",
    '{"a": 1},',
    '"a" "b',
)


def agrees(kept: Any, full: Any) -> bool:
    """``kept`` is what a cut of ``full`` may say: its first members, all equal but the
    last, which is itself a cut (a string's start, a number's valid part)."""
    if isinstance(full, dict):
        keys = list(full)
        if not isinstance(kept, dict) or list(kept) != keys[: len(kept)]:
            return False
        *whole, last = list(kept) or [None]
        return all(kept[k] == full[k] for k in whole) and (
            last is None or agrees(kept[last], full[last])
        )
    if isinstance(full, list):
        if not isinstance(kept, list) or len(kept) > len(full):
            return False
        return all(a == b for a, b in zip(kept[:-1], full, strict=False)) and (
            not kept or agrees(kept[-1], full[len(kept) - 1])
        )
    if isinstance(full, str):
        return isinstance(kept, str) and full.startswith(kept)
    if isinstance(full, bool) or full is None:
        return kept is full
    return type(kept) in (int, float) and not isinstance(kept, bool)


def arguments_of(*fragments: str) -> Turn:
    acc = ToolCallAccumulator()
    acc.feed(
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                               "function": {"name": "f"}}]}}]}
    )  # fmt: skip
    for f in fragments:
        acc.feed({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": f}}]}}]})  # fmt: skip
    return acc.result()


@pytest.mark.runs_first
def test_every_cut_of_a_document_is_repaired_to_what_it_kept_within_a_cpu_budget() -> None:
    with cpu_budget(CPU_BUDGET):
        repaired = {cut: repair_json(DOCUMENT[:cut]) for cut in range(1, len(DOCUMENT))}
        whole = repair_json(DOCUMENT)
        refused = [repair_json(text) for text in NOT_A_PREFIX]
        # one call's arguments streamed a character at a time (joined as they grow), and
        # two documents in one call's arguments (split, not repaired)
        streamed = arguments_of(*DOCUMENT[:-1])
        two = arguments_of('{"a": "}{"} ', '\t{"b": [1, "\\""]}')
    assert whole is None  # not cut: nothing to repair
    assert refused == [None] * len(NOT_A_PREFIX)
    bad = {c: r for c, r in repaired.items() if r is None or not agrees(json.loads(r), FULL)}
    assert bad == {}
    assert (repaired[9], repaired[10]) == ("{}", '{"city": ""}')
    assert repaired[len(DOCUMENT) - 1] == DOCUMENT[:-1].rstrip() + "}"
    (call,) = streamed.calls
    assert (call.arguments, call.repaired, call.valid) == (DOCUMENT[:-1] + "}", True, True)
    assert streamed.quirks == ["Q-ARGS-TRUNCATED"]
    (call,) = two.calls
    assert (call.arguments, call.valid) == ('{"a": "}{"} \t{"b": [1, "\\""]}', False)
    assert [(w.quirk, w.recovered) for w in two.workarounds] == [
        ("Q-INDEX-REUSED-ACROSS-CALLS", False)
    ]


def test_the_guard_stops_a_loop_that_does_not_end() -> None:
    with pytest.raises(EndlessLoop), cpu_budget(0.05):
        while True:
            pass


# ------------------------------------------------------------------ notes a client reads


def chunk(*tool_calls: Any, **delta: Any) -> dict[str, Any]:
    if tool_calls:
        delta["tool_calls"] = list(tool_calls)
    return {"choices": [{"index": 0, "delta": delta}]}


def frag(arguments: str, index: int = 0) -> dict[str, Any]:
    return {"index": index, "function": {"arguments": arguments}}


def turn(*chunks: Any, tools: Any = None) -> Turn:
    acc = ToolCallAccumulator(tools=tools)
    for c in chunks:
        acc.feed(c)
    return acc.result()


def notes(t: Turn) -> list[tuple[str, int, str, bool]]:
    return [(w.quirk, w.event, w.message, w.recovered) for w in t.workarounds]


def calls(t: Turn) -> list[tuple[str, str, str, bool]]:
    return [(c.id, c.name, c.arguments, c.valid) for c in t.calls]


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
OPEN = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather"}}


def test_arguments_re_sent_whole_after_two_fragments_keep_the_re_sent_and_say_so() -> None:
    t = turn(chunk(OPEN), chunk(frag('{"city"')), chunk(frag(': "Par')), chunk(frag('{"city": "Paris"}')))  # fmt: skip
    assert calls(t) == [("call_1", "get_weather", '{"city": "Paris"}', True)]
    assert notes(t) == [
        (
            "Q-ARGS-DUPLICATED-ON-FLUSH",
            3,
            "the whole arguments re-sent after an incomplete prefix; kept the re-sent",
            True,
        )
    ]


def test_a_call_without_a_name_gets_the_one_declared_tool_and_the_note_names_it() -> None:
    t = turn(
        chunk({"index": 0, "id": "call_1", "function": {"arguments": '{"city": "Paris"}'}}),
        tools=[WEATHER],
    )
    assert calls(t) == [("call_1", "get_weather", '{"city": "Paris"}', True)]
    assert notes(t) == [
        ("Q-NAME-NEVER-SENT", 0, "no name sent; the one declared tool, 'get_weather'", True)
    ]


def test_tool_calls_sent_as_an_object_are_read_as_the_call_it_carries() -> None:
    one = dict(OPEN, function={"name": "get_weather", "arguments": '{"city": "Paris"}'})
    t = turn({"choices": [{"index": 0, "delta": {"tool_calls": one}, "finish_reason": "tool_calls"}]})  # fmt: skip
    assert calls(t) == [("call_1", "get_weather", '{"city": "Paris"}', True)]
    assert (t.finish_reason, t.executable) == ("tool_calls", True)
    assert notes(t) == [
        ("Q-TOOLCALLS-NOT-ARRAY", 0, "tool_calls sent as an object; read as [object]", True)
    ]


def test_an_object_call_without_index_is_noted_at_its_own_event() -> None:
    one = {"id": "call_1", "function": {"name": "get_weather", "arguments": '{"city": "Par'}}
    t = turn(chunk(content="Let me look."), {"choices": [{"delta": {"tool_calls": one}}]})
    assert calls(t) == [("call_1", "get_weather", '{"city": "Par"}', True)]
    assert [(q, ev, ok) for q, ev, _, ok in notes(t)] == [
        ("Q-ARGS-TRUNCATED", 1, True),
        ("Q-INDEX-ABSENT", 1, True),
        ("Q-TOOLCALLS-NOT-ARRAY", 1, True),
    ]


# ------------------------------------------------------------------ sending a turn back

CUT = "abc" + marker(70000, "0" * 64) + "xyz"  # an identifier the analysis kept cut


@pytest.mark.parametrize(
    "call_id, name, refusal",
    [
        (CUT, "get_weather", "call 1's id was longer than the analysis keeps"),
        ("call_2", CUT, "call 1's name was longer than the analysis keeps"),
        (CUT, CUT, "call 1's id was longer than the analysis keeps"),
    ],
)
def test_a_turn_with_a_cut_id_or_name_is_refused_naming_which(
    call_id: str, name: str, refusal: str
) -> None:
    first = {"index": 0, "id": "call_1", "function": {"name": "get_time", "arguments": "{}"}}
    second = {"index": 1, "id": call_id, "function": {"name": name, "arguments": "{}"}}
    t = turn(chunk(first, second))
    with pytest.raises(TextCutError) as refused:
        t.message()
    assert str(refused.value) == refusal + ": sent back, it would not be what was received"


def test_a_turn_with_whole_ids_and_names_is_sent_back() -> None:
    t = turn(chunk(dict(OPEN, function={"name": "get_weather", "arguments": "{}"})))
    assert t.message()["tool_calls"][0]["id"] == "call_1"


def general(arguments: str) -> dict[str, Any]:
    """A fragment the fast path leaves to the general one: it carries a third key."""
    return {"index": 0, "type": "function", "function": {"arguments": arguments}}


def test_re_sent_whole_after_two_fragments_is_the_flush_variant_on_the_general_path_too() -> None:
    t = turn(chunk(OPEN), chunk(general('{"city"')), chunk(general(': "Par')), chunk(general('{"city": "Paris"}')))  # fmt: skip
    assert calls(t) == [("call_1", "get_weather", '{"city": "Paris"}', True)]
    assert [q for q, *_ in notes(t)] == ["Q-ARGS-DUPLICATED-ON-FLUSH"]


def test_with_a_bound_on_calls_a_fragment_without_index_goes_to_the_call_just_opened() -> None:
    acc = ToolCallAccumulator(max_calls=4)
    for c in (chunk(OPEN), chunk({"function": {"arguments": '{"city": "Paris"}'}})):
        acc.feed(c)
    t = acc.result()
    assert calls(t) == [("call_1", "get_weather", '{"city": "Paris"}', True)]
    assert [q for q, *_ in notes(t)] == ["Q-INDEX-ABSENT"]


def test_two_latches_undone_at_the_same_event_drop_their_one_note() -> None:
    """Two calls in one chunk both read as cumulative (``{"`` then ``{": …}``), both undone
    at the end because only their appended readings parse: the calls are the appended
    ones and the one note the two latches shared goes (it was recorded once: the second
    latch of the same quirk at the same event adds none, so the end must not expect two)."""
    opener = {"type": "function", "function": {"name": "f", "arguments": '{"'}}
    t = turn(
        chunk({"index": 0, "id": "call_a", **opener}, {"index": 1, "id": "call_b", **opener}),
        chunk(frag('{": null}'), frag('{": 1}', index=1)),
    )
    assert calls(t) == [("call_a", "f", '{"{": null}', True), ("call_b", "f", '{"{": 1}', True)]
    assert notes(t) == []


def test_an_opener_on_an_open_index_is_noted_at_its_own_sse_event() -> None:
    """Through the analysis (the robust client fed on its steady path): an opener that
    re-sends a call's arguments in full on the index already open latches the cumulative
    reading, and the finding names the SSE event it came in, counted with the comment
    before the stream (event 3), not the client's count of chunks (2)."""
    from conformance.analysis import analyze_bytes

    def sse(delta: dict[str, Any]) -> bytes:
        c = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        c["choices"] = [{"index": 0, "delta": delta, "finish_reason": None}]
        return b"data: " + json.dumps(c).encode() + b"\n\n"

    def opener(args: str) -> bytes:
        return sse({"tool_calls": [{**OPEN, "function": {"name": "f", "arguments": args}}]})

    body = b": keep-alive\n\n" + sse({"role": "assistant", "content": None})
    body += opener('{"a":') + opener('{"a": 1, "b":') + opener('{"a": 1, "b": 2}')
    found = {f.quirk: f.event for f in analyze_bytes(body).findings}
    assert found["Q-ARGS-CUMULATIVE"] == 3
