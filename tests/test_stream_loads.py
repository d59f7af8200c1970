"""``jsontext.StreamLoads``: a payload that repeats the stream's envelope (the text around
its delta) is parsed from its delta on, and must give exactly what ``json.loads`` gives
(the value, or the same error), whatever the text around the delta holds (issue 28).

The corpus test compares every payload of every committed cassette and of the shapes the
benchmark measures; the others pin the premises of the proof in ``Envelope``'s docstring
(the delta's slot is the one a parse keeps, the values shared between chunks are
immutable) with texts built to break each one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance import jsontext
from conformance.client import ToolCallAccumulator
from conformance.jsontext import ENVELOPE_TRIES, Envelope, StreamLoads
from conformance.readers import read_path
from conformance.sse import iter_sse
from conformance.transcript import CHUNK

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
HEAD = '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":'
TAIL = ',"logprobs":null,"finish_reason":null}],"usage":null}'


def chunk(delta: str, head: str = HEAD, tail: str = TAIL) -> str:
    return head + delta + tail


def outcome(parse: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", parse(text)
    except (ValueError, RecursionError) as e:
        return type(e).__name__, str(e)


def check(payloads: list[str]) -> list[Envelope | None]:
    """Each payload parsed by one StreamLoads equals json.loads's reading; the envelopes."""
    sl, used = StreamLoads(), []
    for p in payloads:
        got = outcome(sl.loads, p)
        want = outcome(json.loads, p)
        if got[0] == "value":
            value, env = got[1]
            assert ("value", value) == want, p
            # the same text, key order included
            assert json.dumps(value) == json.dumps(want[1]), p
            used.append(env)
        else:
            assert got == want, p
            used.append(None)
    return used


def test_a_repeated_envelope_parses_the_later_chunks_from_their_delta() -> None:
    payloads = [chunk(d) for d in ('{"role":"assistant"}', '{"content":"a"}', '{"content":"b"}')]
    used = check(payloads)
    assert used[0] is None  # parsed in full: its text around the delta is the envelope
    assert all(isinstance(u, Envelope) for u in used[1:])


def test_a_first_chunk_the_others_do_not_repeat_leaves_two_full_parses_in_a_row() -> None:
    first = chunk('{"role":"assistant"}', HEAD.replace('"c1"', '"c0"'))
    used = check([first] + [chunk(f'{{"content":"{c}"}}') for c in "abc"])
    assert used[:3] == [None, None, None]  # the first's envelope; then two full parses
    assert isinstance(used[3], Envelope) and used[3].prefix.startswith(HEAD)


def test_the_chunks_of_an_envelope_share_no_container() -> None:
    sl = StreamLoads()
    values = [sl.loads(chunk(f'{{"content":"{c}"}}'))[0] for c in "abcd"]
    assert sl.loads(chunk('{"content":"e"}'))[1] is not None
    values[2]["choices"][0]["delta"]["content"] = "changed"
    values[2]["choices"].append({})
    values[2]["model"] = "changed"
    assert sl.loads(chunk('{"content":"f"}'))[0] == json.loads(chunk('{"content":"f"}'))
    assert values[3] == json.loads(chunk('{"content":"d"}'))


@pytest.mark.parametrize(
    "head, tail",
    [
        # a later "delta" key in the choice: the parse keeps that one, not the slot's
        (HEAD, ',"delta":{"content":"x"},"finish_reason":null}],"usage":null}'),
        # a later "choices" key: the slot's choice is not the one kept
        (HEAD, ',"finish_reason":null}],"choices":[{"index":0,"delta":{}}]}'),
        # the probe's own value elsewhere in the text
        (HEAD.replace('"m"', '"\\u0000"'), TAIL),
        # ... after the delta: a later "delta" key holding it looks like the probe's slot
        (HEAD, ',"delta":"\\u0000","finish_reason":null}],"usage":null}'),
        # a container around the delta other than the choices: never shared, so none
        (HEAD, ',"logprobs":{"content":[]},"finish_reason":null}],"usage":null}'),
        (HEAD, ',"logprobs":null,"finish_reason":null}],"usage":{"total_tokens":3}}'),
        # a "delta" key before the choices: the slot is not choices[0].delta
        ('{"delta":', ',"choices":[{"index":0,"delta":{"content":"z"}}]}'),
        # two choices
        (HEAD, ',"finish_reason":null},{"index":1,"delta":{}}],"usage":null}'),
    ],
)
def test_no_envelope_where_the_proof_does_not_hold(head: str, tail: str) -> None:
    payloads = [chunk(f'{{"content":"{c}"}}', head, tail) for c in "abcdef"]
    assert check(payloads) == [None] * len(payloads)


@pytest.mark.parametrize(
    "prefix, suffix",
    [
        ("[", "]"),  # not an object
        ('{"x":', "}"),  # no choices
        ('{"choices":[', "]}"),  # the probe is the choice itself
        ('{"choices":[{"delta":', "},{}]}"),  # two choices
        ('{"choices":[{"delta":', "}],"),  # not JSON
    ],
)
def test_text_that_is_no_envelope_gives_none(prefix: str, suffix: str) -> None:
    assert Envelope.of(prefix, suffix) is None


def test_a_container_overwritten_by_a_later_key_is_no_obstacle() -> None:
    # "usage" twice: the parse keeps the later null, so nothing shared is mutable
    head = HEAD.replace('"created":1', '"created":1,"usage":{"total_tokens":3}')
    assert check([chunk(f'{{"content":"{c}"}}', head) for c in "abc"])[2] is not None


def test_json_dumps_spacing_is_an_envelope_too() -> None:
    head = HEAD.replace('"delta":', '"delta": ')
    used = check([chunk(f'{{"content": "{c}"}}', head) for c in "abc"] + [chunk(" {}", head)])
    assert isinstance(used[2], Envelope)
    assert used[3] is None  # a delta that starts with more spacing: parsed in full


@pytest.mark.parametrize(
    "delta",
    [
        '{"content":"a"},"x":{}',  # more than one value between the two texts
        "1" + TAIL[:1],  # the value ends where the suffix does not start
        '{"content":"a"',  # no value
        '{"content":"a\nb"}',  # a raw newline in a string: json.loads's error
        "",  # nothing
        " {}",  # spacing json.loads takes, the slot does not
        "[" * 100_000,  # too deep
        '{"content":"a"}}',  # an extra brace
        "NaN",
        '"\\u0000"',  # the probe's own value, as a delta
    ],
)
def test_any_middle_is_read_as_json_loads_reads_it(delta: str) -> None:
    base = [chunk(f'{{"content":"{c}"}}') for c in "abc"]
    used = check([*base, chunk(delta), *base])
    assert used[2] is not None and used[-1] is not None


@given(
    st.lists(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.sampled_from(["content", "tool_calls", "delta", "a"]), inner)
            ),
            max_leaves=6,
        ),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from([(HEAD, TAIL), (HEAD.replace(":", ": "), TAIL.replace(",", ", "))]),
)
def test_any_deltas(deltas: list[Any], around: tuple[str, str]) -> None:
    head, tail = around
    check([chunk(json.dumps(d, separators=(",", ":")), head, tail) for d in deltas] * 2)


def test_a_stream_whose_envelope_always_changes_stops_being_looked_at(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looked = []
    around = Envelope.around
    monkeypatch.setattr(
        jsontext.Envelope, "around", staticmethod(lambda d, v: looked.append(d) or around(d, v))
    )
    payloads = [chunk('{"content":"a"}', HEAD.replace('"c1"', f'"c{i}"')) for i in range(40)]
    assert check(payloads) == [None] * 40
    # The first chunk's text made an envelope no later chunk repeats; then as many parses.
    assert len(looked) == 1 + ENVELOPE_TRIES


def test_every_committed_cassette_and_shape() -> None:
    bodies = [t.raw for p in sorted((ROOT / "cassettes").rglob("*.yaml")) for t in read_path(p)]
    import shapes  # benchmarks/shapes.py: the shapes bench_peers.py measures

    bodies += [raw for s in shapes.make_shapes(300) for raw, _ in s.streams]
    hits = 0
    for body in bodies:
        if not body:
            continue
        events = [e for e in iter_sse([body]) if e.kind == CHUNK]
        used = check([e.data for e in events])
        hits += sum(u is not None for u in used)
        # the SSE parser's chunks are the same values, and say which envelope made them
        assert [e.chunk for e in events] == [json.loads(e.data) for e in events]
        assert sum(e.envelope is not None for e in events) == sum(u is not None for u in used)
        # and the client fed the text reads the turn it reads from the parsed chunks
        text, parsed = ToolCallAccumulator(), ToolCallAccumulator()
        for e in events:
            text.feed(e.data)
            parsed.feed(json.loads(e.data))
        assert text.result() == parsed.result()
    assert hits > 10_000  # the shortcut is taken on the corpus


def test_an_envelope_is_at_most_max_envelope_characters_around_any_delta() -> None:
    from conformance.jsontext import MAX_ENVELOPE

    big = "x" * MAX_ENVELOPE
    long_delta = chunk(json.dumps({"content": big}))  # the delta may be any size
    assert Envelope.around(long_delta, json.loads(long_delta)) is not None
    long_id = chunk('{"content":"a"}', HEAD.replace('"m"', json.dumps(big)))
    assert Envelope.around(long_id, json.loads(long_id)) is None  # never kept


def test_a_stream_whose_envelope_cannot_be_one_stops_being_looked_at(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The text around the delta repeats but holds a container (no envelope): each probe
    that fails counts against the tries, as each parse that finds no repeat does."""
    looked, probed = [], []
    around, of = Envelope.around, Envelope.of
    monkeypatch.setattr(
        jsontext.Envelope, "around", staticmethod(lambda d, v: looked.append(d) or around(d, v))
    )
    monkeypatch.setattr(
        jsontext.Envelope, "of", staticmethod(lambda p, s: probed.append(p) or of(p, s))
    )
    tail = ',"logprobs":{"content":[]},"finish_reason":null}],"usage":null}'
    assert check([chunk('{"content":"a"}', HEAD, tail)] * 40) == [None] * 40
    assert len(looked) == ENVELOPE_TRIES
    assert len(probed) == ENVELOPE_TRIES // 2  # parses 1, 3, 5…: after each failed probe, a repeat


def test_an_envelope_of_exactly_max_envelope_characters_is_kept() -> None:
    from conformance.jsontext import MAX_ENVELOPE

    pad = MAX_ENVELOPE - len(HEAD) - len(TAIL)
    head = HEAD.replace('"m"', json.dumps("m" * (pad + 1)))  # + 1: the model was "m"
    data = chunk('{"content":"a"}', head)
    assert len(head) + len(TAIL) == MAX_ENVELOPE
    assert Envelope.around(data, json.loads(data)) == (head, TAIL)
    longer = chunk('{"content":"a"}', head.replace('"m', '"mm', 1))
    assert Envelope.around(longer, json.loads(longer)) is None
