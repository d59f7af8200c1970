"""The steady path (``Analyzer._feed_steady``) gives what a full judgement gives, on small
streams that reach each of its branches: text, a call's opener, an index-less call, a
bare fragment (with and without arrival times), the finish, a chunk after a steady one
whose verdict depends on how many chunks came before it. Each stream is analysed twice: as shipped, and
with every chunk judged in full; the results (findings with their events and pointers,
each reading's calls, the impact, every rule and timing status, the verdict) and the
robust client's turn must be equal, and the stream must have taken the steady path.

Fast in-process tests for mutation testing (docs/mutation.md); the lockstep over every
cassette and capture is tests/test_steady_path.py.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from conformance.analysis import analyzer as an
from conformance.analysis.analyzer import RULES, Analyzer, analyze, analyze_chunks
from conformance.analysis.detectors import timing
from conformance.analysis.model import Strategy
from conformance.client import ToolCallAccumulator
from conformance.mutations import TRANSFORMS, CallSpec, apply, reference_stream, render_sse
from conformance.readers import exchange_transcript
from conformance.transcript import CHUNK, COMMENT, Event, Transcript

ID_W, ID_T = "call_W1a2b3c4d5e6f7g8h9i0j1k2", "call_T1a2b3c4d5e6f7g8h9i0j1k2"


def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def frag(args: str, index: int = 0) -> dict[str, Any]:
    return chunk({"tool_calls": [{"index": index, "function": {"arguments": args}}]})


def opener(index: int, cid: str, name: str, args: str = "") -> dict[str, Any]:
    fn = {"name": name, "arguments": args}
    return chunk({"tool_calls": [{"index": index, "id": cid, "type": "function", "function": fn}]})


def whole_without_index(cid: str, name: str) -> dict[str, Any]:
    fn = {"name": name, "arguments": "{}"}
    return chunk({"tool_calls": [{"id": cid, "type": "function", "function": fn}]})


ROLE = chunk({"role": "assistant", "content": None})
ROLE_ONLY = chunk({"role": "assistant"})  # after the first chunk: a chunk that carries nothing
OPEN = opener(0, ID_W, "get_weather")
PARIS = [frag('{"ci'), frag('ty": '), frag('"Par'), frag('is"}')]
END = chunk({}, "tool_calls")
STOP = chunk({}, "stop")
DONE = b"data: [DONE]\n\n"


class _Full(Analyzer):
    """Every chunk judged in full."""

    def _feed_steady(self, t: Any, chunk: dict[str, Any], n: int, envelope: Any = None) -> bool:
        return False


class _Shipped(Analyzer):
    """As shipped; counts the chunks that took the steady path."""

    steady = 0

    def _feed_steady(self, t: Any, chunk: dict[str, Any], n: int, envelope: Any = None) -> bool:
        took = super()._feed_steady(t, chunk, n, envelope)
        self.steady += took
        return took


def _run(cls: type[Analyzer], t: Transcript) -> tuple[Analyzer, str, Any]:
    a = cls(t)
    for ev in t.events():
        a.feed(ev)
    r = a.finish()
    return a, json.dumps(r.to_json(), default=str, sort_keys=True), r.turn


def transcript(
    cs: list[Any], times: list[float] | None = None, request: dict[str, Any] | None = None
) -> Transcript:
    evs = [Event(i, CHUNK, None, "", c) for i, c in enumerate(cs)]
    return Transcript(
        "<chunks>",
        "jsonl",
        False,
        lambda: iter(evs),
        request=None if request is None else {"body": request},
        meta={} if times is None else {"event_times": times},
    )


def lockstep(t: Transcript) -> tuple[int, dict[str, Any]]:
    """The steady chunks of the shipped analysis, and its result, once it is shown equal to
    the full judgement's."""
    a, shipped, turn = _run(_Shipped, t)
    _, full, full_turn = _run(_Full, t)
    assert json.loads(shipped) == json.loads(full)
    assert turn == full_turn
    return a.steady, json.loads(shipped)  # type: ignore[attr-defined]


def quirks(r: dict[str, Any]) -> list[tuple[str | None, int | None, str | None]]:
    return [(f["quirk"], f["event"], f.get("pointer")) for f in r["findings"]]


# ============================================================================== targeted


def test_a_role_only_chunk_after_steady_text_counts_as_empty() -> None:
    # the chunk count moves on the text path: a role-only chunk after it is not the first
    cs = [ROLE, chunk({"content": "a"}), ROLE_ONLY, chunk({}), chunk({"content": "b"}), STOP]
    steady, r = lockstep(transcript(cs))
    assert steady == 3  # the texts and the finish
    assert quirks(r) == [("Q-EMPTY-DELTA-CHUNKS", 2, None)]


def test_a_role_only_chunk_after_a_steady_opener_counts_as_empty() -> None:
    cs = [ROLE, OPEN, ROLE_ONLY, chunk({}), *PARIS, END]
    steady, r = lockstep(transcript(cs))
    assert steady == 6  # the opener, the fragments and the finish
    assert quirks(r) == [("Q-EMPTY-DELTA-CHUNKS", 2, None)]
    assert r["verdict"] == "conforms"


def test_a_finish_after_a_steady_finish_is_judged_in_full_as_a_repeat() -> None:
    # the steady finish ends the steady path: the second one is judged, and is a repeat
    cs = [ROLE, chunk({"content": "a"}), STOP, STOP]
    steady, r = lockstep(transcript(cs))
    assert steady == 2
    assert quirks(r) == [("Q-FINISH-REPEATED", 3, "/choices/0/finish_reason")]


# Q-INDEX-ABSENT-PARALLEL-SPLIT (each call in a chunk of its own) names the finer shape
SPLIT = [
    ("Q-INDEX-ABSENT", 1, "/choices/0/delta/tool_calls/0/index"),
    ("Q-INDEX-ABSENT-PARALLEL-SPLIT", 1, None),
]


def test_index_less_whole_calls_one_per_steady_chunk() -> None:
    # each call is its own chunk: the chunk count of each must differ, on the delta path
    a, b = whole_without_index(ID_W, "get_weather"), whole_without_index(ID_T, "get_time")
    steady, r = lockstep(transcript([ROLE, a, b, END]))
    assert steady == 3
    assert quirks(r) == [SPLIT[0], SPLIT[1]]


def test_index_less_whole_calls_with_text_between_them() -> None:
    # the text chunk between the two calls moves the chunk count too
    a, b = whole_without_index(ID_W, "get_weather"), whole_without_index(ID_T, "get_time")
    steady, r = lockstep(transcript([ROLE, a, chunk({"content": "and"}), b, END]))
    assert steady == 4
    assert quirks(r) == [SPLIT[0], SPLIT[1]]


def test_index_less_whole_calls_on_either_side_of_a_steady_finish() -> None:
    # the steady finish moves the chunk count too: the call after it is in a chunk of its own
    a, b = whole_without_index(ID_W, "get_weather"), whole_without_index(ID_T, "get_time")
    steady, r = lockstep(transcript([ROLE, a, STOP, b]))
    assert steady == 2  # the first call and the finish
    assert quirks(r)[:2] == [SPLIT[0], SPLIT[1]]


def test_tool_markup_in_steady_text_is_found_with_its_event() -> None:
    cs = [
        ROLE,
        chunk({"content": "Let me check. "}),
        chunk({"content": '<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>'}),
        STOP,
    ]
    steady, r = lockstep(transcript(cs))
    assert steady == 3
    assert quirks(r) == [("Q-TOOLCALL-AS-TEXT", 2, None)]


def test_tool_markup_split_over_two_short_deltas_is_found_in_the_second() -> None:
    # the first delta is shorter than the overlap kept: all of it is searched again
    cs = [ROLE, chunk({"content": "Sure <tool"}), chunk({"content": "_call>get_weather()"}), STOP]
    steady, r = lockstep(transcript(cs))
    assert steady == 3
    assert quirks(r) == [("Q-TOOLCALL-AS-TEXT", 2, None)]


def test_prose_with_brackets_but_no_tool_markup_is_not_a_call() -> None:
    # "<", "[" and "{" only make the markup search run; the search decides
    cs = [ROLE, chunk({"content": "If x < y, use [a] or {b}."}), STOP]
    steady, r = lockstep(transcript(cs))
    assert steady == 2
    assert quirks(r) == []
    assert r["verdict"] == "conforms"


@pytest.mark.parametrize("cid", ["call_1", "XXXX"])  # XXXX: mutation testing's placeholder
@pytest.mark.parametrize("name", ["get_weather", "XXXX"])
def test_a_reading_that_blanked_the_id_and_name_is_wrong_whatever_they_were(
    cid: str, name: str
) -> None:
    # A continuation that sends id "" and name "": naive overwrites both with "", guarded
    # and robust keep them. An empty id or name is compared as empty, never as a default
    # that a real id or name could equal.
    blank = chunk(
        {"tool_calls": [{"index": 0, "id": "", "function": {"name": "", "arguments": "{}"}}]}
    )
    r = lockstep(transcript([ROLE, opener(0, cid, name), blank, END]))[1]
    assert [(c["id"], c["name"]) for c in r["tool_calls"]["naive"]] == [("", "")]
    assert [(c["id"], c["name"]) for c in r["tool_calls"]["robust"]] == [(cid, name)]
    assert r["impact"]["naive"]["status"] == "wrong"
    assert r["impact"]["guarded"]["status"] == "ok"


@pytest.mark.parametrize("cid", ["call_1", "XXXX"])
def test_a_reading_that_blanked_only_the_id_is_wrong_whatever_it_was(cid: str) -> None:
    blank = chunk({"tool_calls": [{"index": 0, "id": "", "function": {"arguments": "{}"}}]})
    r = lockstep(transcript([ROLE, opener(0, cid, "get_weather"), blank, END]))[1]
    assert [c["id"] for c in r["tool_calls"]["naive"]] == [""]
    assert r["impact"]["naive"] == {
        "status": "wrong",
        "detail": f"call 0: id '' instead of {cid!r}",
    }


@pytest.mark.parametrize("name", ["get_weather", "XXXX"])
def test_a_reading_that_blanked_only_the_name_is_wrong_whatever_it_was(name: str) -> None:
    blank = chunk({"tool_calls": [{"index": 0, "function": {"name": "", "arguments": "{}"}}]})
    r = lockstep(transcript([ROLE, opener(0, ID_W, name), blank, END]))[1]
    assert [c["name"] for c in r["tool_calls"]["naive"]] == [""]
    assert r["impact"]["naive"] == {
        "status": "wrong",
        "detail": f"call 0: name '' instead of {name!r}",
    }


def test_a_chunk_id_that_changes_mid_stream_counts_every_chunk_after_it() -> None:
    # From SSE bytes: the chunks after the change are parsed in a new envelope, which has
    # not passed the template's checks; each of them is still compared with the template.
    def with_id(cid: str, c: dict[str, Any]) -> dict[str, Any]:
        return {**c, "id": cid}

    cs = [ROLE, *[chunk({"content": "x"})] * 3]
    cs += [with_id("chatcmpl-2", c) for c in [*[chunk({"content": "y"})] * 5, STOP]]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in cs)
    sse = {"content-type": "text/event-stream"}
    steady, r = lockstep(exchange_transcript("<id>", "sse", None, None, sse, body + DONE))
    assert steady == 3  # the text before the change
    [f] = r["findings"]
    assert (f["quirk"], f["event"], f["count"]) == ("Q-CHUNK-ID-UNSTABLE", 4, 6)


def test_a_python_chunk_with_a_key_that_is_no_string_is_quoted_as_json_writes_it() -> None:
    # built in Python, not parsed: named and quoted as JSON writes them, never a crash
    usage = {"choices": [], "usage": {"total_tokens": 3}, 7: "x"}
    text = chunk({"content": "a", 8: 1})
    text["choices"][0][9] = 2
    r = analyze_chunks([ROLE, text, STOP, usage]).to_json()
    got = {f["quirk"]: (f["message"], f.get("excerpt")) for f in r["findings"]}
    assert got["Q-USAGE-EMPTY-CHOICES"][1] == '{"choices":[],"usage":{"total_tokens":3},"7":"x"}'
    assert got["Q-EXTRA-FIELDS"][0] == "non-standard fields: 7, choice.9, delta.8"


@pytest.mark.parametrize(
    ("fragments", "steady_chunks", "cumulative"),
    [
        (PARIS, 8, []),
        (
            [frag('{"ci'), frag('{"city": "Pa'), frag('{"city": "Paris"}')],
            7,
            [("Q-ARGS-CUMULATIVE", 6, None)],
        ),
    ],
)
def test_a_template_the_client_must_read_whole_feeds_it_every_chunk_with_its_event(
    fragments: list[dict[str, Any]], steady_chunks: int, cumulative: list[Any]
) -> None:
    # "usage": 0 on every chunk is no finding, but the robust client reads usage: the
    # template is not lean, and each steady chunk is fed to it whole. A comment first puts
    # the event numbers one ahead of the chunk count, so a note's event is the chunk's.
    def with_usage(c: dict[str, Any]) -> dict[str, Any]:
        return {**c, "usage": 0}

    text = [chunk({"content": "a"}), chunk({"content": "b"})]
    cs = [with_usage(c) for c in [ROLE, *text, OPEN, *fragments, END]]
    evs = [Event(0, COMMENT, None, "ping")]
    evs += [Event(i, CHUNK, None, "", c) for i, c in enumerate(cs, 1)]
    t = Transcript("<usage 0>", "jsonl", False, lambda: iter(evs))
    steady, r = lockstep(t)
    assert steady == steady_chunks  # the cumulative fragment that repeats is judged in full
    assert quirks(r) == [("Q-SSE-COMMENT-KEEPALIVE", 0, None), *cumulative]
    assert [c["arguments"] for c in r["tool_calls"]["robust"]] == ['{"city": "Paris"}']


@pytest.mark.parametrize(
    ("fragments", "note"),
    [
        ([frag('{"city": "Par')], "Q-ARGS-TRUNCATED"),
        ([], "Q-ARGS-ABSENT-NO-PARAMS"),
        ([frag('{"a": 1}'), frag('{"a": 1}')], "Q-ARGS-DUPLICATED-ON-FLUSH"),
    ],
)
def test_the_robust_clients_note_on_a_call_is_dated_by_its_steady_opener(
    fragments: list[dict[str, Any]], note: str
) -> None:
    # A comment first: event numbers run one ahead of the chunks the client counts.
    evs = [Event(0, COMMENT, None, "ping")]
    evs += [Event(i, CHUNK, None, "", c) for i, c in enumerate([ROLE, OPEN, *fragments, END], 1)]
    steady, r = lockstep(Transcript("<notes>", "jsonl", False, lambda: iter(evs)))
    assert steady == len(fragments) + 2  # the opener, the fragments and the finish
    assert quirks(r) == [("Q-SSE-COMMENT-KEEPALIVE", 0, None), (note, 2, None)]


# Arrival times: the role chunk at 0, then a second of silence, then the call.
BURST = [0.0, 2.0, 2.01, 2.02, 2.03, 2.04, 2.05]
SPREAD = [0.0, 2.0, 3.5, 5.0, 6.5, 8.0, 9.5]


@pytest.mark.parametrize(
    ("times", "want"),
    [
        (BURST, ["Q-ARGS-NOT-PROGRESSIVE", "Q-TOOLCALL-HELD-UNTIL-FINISH"]),
        (SPREAD, []),
    ],
)
def test_fragments_on_the_steady_path_are_timed(times: list[float], want: list[str]) -> None:
    steady, r = lockstep(transcript([ROLE, OPEN, *PARIS, END], times))
    assert steady == 6  # the finish too: it sets the time of the finish
    assert sorted(q for q, _, _ in quirks(r)) == want
    assert r["timing"] == {
        q: "fail" if q in want else "pass"
        for q in ("Q-ARGS-NOT-PROGRESSIVE", "Q-TOOLCALL-HELD-UNTIL-FINISH")
    }


def test_a_timed_tool_delta_without_a_function_is_timed_as_no_fragment() -> None:
    again = chunk({"tool_calls": [{"index": 0, "id": ID_W}]})  # the id again, nothing else
    times = [0.0, 2.0, 3.5, 5.0, 6.5, 8.0, 9.5, 11.0]
    steady, r = lockstep(transcript([ROLE, OPEN, again, *PARIS, END], times))
    assert steady == 7
    assert quirks(r) == [("Q-ID-REPEATED", 2, "/choices/0/delta/tool_calls/0/id")]
    assert set(r["timing"].values()) == {"pass"}


def test_a_call_opened_by_a_second_choice_is_read_from_its_first_fragment() -> None:
    # naive and guarded read choices[0] only: they never saw the opener, and the first
    # fragment on the steady path starts their entry for index 1
    second = {
        **ROLE,
        "choices": [
            {"index": 0, "delta": {"content": "x"}, "logprobs": None, "finish_reason": None},
            {**opener(1, ID_T, "get_time")["choices"][0]},
        ],
    }
    cs = [ROLE, OPEN, PARIS[0], second, frag('{"tz"', 1), frag(': "UTC"}', 1), *PARIS[1:], END]
    steady, r = lockstep(transcript(cs))
    assert steady == 8
    assert [c["arguments"] for c in r["tool_calls"]["naive"]] == [
        '{"city": "Paris"}',
        '{"tz": "UTC"}',
    ]


# ============================================================================== corpus


# Thousands of keep-alive events: a second per analysis; test_steady_path.py runs it.
SLOW = {"Q-SSE-KEEPALIVE-AS-DATA"}


def _corpus() -> dict[str, Transcript]:
    calls = [
        CallSpec("call_aaaaaaaaaaaaaaaaaaaaaaaa", "get_weather", '{"city": "Paris", "n": 2}'),
        CallSpec("call_bbbbbbbbbbbbbbbbbbbbbbbb", "get_status", "{}"),
    ]
    sse = {"content-type": "text/event-stream"}
    out = {}
    for quirk in sorted(TRANSFORMS.keys() - SLOW):
        frames = reference_stream(
            calls, rng=random.Random(7), model="m", include_usage=True, content="Let me see."
        )
        body = render_sse(apply(frames, [quirk], 7))
        out[quirk] = exchange_transcript(quirk, "sse", None, None, sse, body)
    return out


CORPUS = _corpus()


@pytest.mark.parametrize("quirk", sorted(CORPUS))
def test_every_mutation_of_the_reference_stream(quirk: str) -> None:
    """Each of the corpus' deviations of the reference stream, analysed both ways."""
    lockstep(CORPUS[quirk])


# ============================================================================== timing


def timed(times: list[float]) -> dict[str, Any]:
    return lockstep(transcript([ROLE, OPEN, *PARIS, END], times))[1]


def messages(r: dict[str, Any]) -> list[str]:
    return [f["message"] for f in r["findings"]]


def test_a_call_in_one_burst_after_a_silence_names_the_silence_and_the_fragments() -> None:
    r = timed([0.5, 2.0, 2.01, 2.02, 2.03, 2.04, 2.05])
    assert messages(r) == [
        "index 0: 4 argument fragments arrived within 0.040 s after 1.500 s without an event",
        "index 0: the call arrived with the finish, after 1.500 s without an event",
    ]


def test_a_silence_of_exactly_one_second_starts_a_burst() -> None:
    r = timed([0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    assert sorted(q for q, _, _ in quirks(r)) == [
        "Q-ARGS-NOT-PROGRESSIVE",
        "Q-TOOLCALL-HELD-UNTIL-FINISH",
    ]


def test_a_stream_that_arrives_in_its_first_burst_is_not_judged() -> None:
    # no silence: the wait before the first event may be the prompt's processing
    r = timed([0.6, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7])
    assert quirks(r) == []
    assert set(r["timing"].values()) == {"pass"}


def test_events_past_the_recorded_times_make_timing_not_applicable() -> None:
    r = timed([0.0, 2.0, 2.01])  # the last four events were not timed
    assert quirks(r) == []
    assert set(r["timing"].values()) == {"not applicable"}


def test_events_past_the_recorded_lines_make_timing_not_applicable() -> None:
    cs = [ROLE, OPEN, *PARIS, END]
    evs = [Event(i, CHUNK, i + 1, "", c) for i, c in enumerate(cs)]
    t = Transcript(
        "<lines>",
        "jsonl",
        False,
        lambda: iter(evs),
        meta={"line_times": [(1, 0.0), (2, 2.0), (3, 2.01)]},
    )
    r = lockstep(t)[1]
    assert quirks(r) == []
    assert set(r["timing"].values()) == {"not applicable"}


@pytest.mark.parametrize(
    ("meta", "transport_error", "quirk"),
    [
        (
            {"connection_retry": "the kept-alive connection was dropped; retried"},
            None,
            "Q-KEEPALIVE-DROPPED",
        ),
        ({}, "the body ended mid-stream (peer closed)", None),
    ],
)
def test_a_capture_with_no_request_timing_or_status_still_has_its_transport_judged(
    meta: dict[str, Any], transport_error: str | None, quirk: str | None
) -> None:
    # No request, no timing, no status: the end detectors that need one of those are
    # skipped, but a dropped connection or a transport error is the HTTP detector's to find.
    evs = [Event(i, CHUNK, None, "", c) for i, c in enumerate([ROLE, OPEN, *PARIS])]
    t = Transcript("<bare>", "jsonl", False, lambda: iter(evs), transport_error=transport_error)
    t.meta.update(meta)
    r = analyze(t)
    rule = "R-COMPLETE" if transport_error else "Q-KEEPALIVE-DROPPED"
    found = [(f.rule, f.quirk, f.message) for f in r.findings if f.rule == rule]
    assert found == [(rule, quirk, transport_error or meta["connection_retry"])]


@pytest.mark.parametrize(
    ("naive_args", "status"),
    [
        ('{"b": [1, 2], "a": 1}', "ok"),  # the same JSON, spaced and ordered otherwise
        ('{"a":1,"b":[1,2]}', "ok"),  # the very text
        ('{"a": 1, "b": [2, 1]}', "wrong"),
    ],
)
def test_a_reading_whose_arguments_differ_only_in_formatting_is_ok(
    naive_args: str, status: str
) -> None:
    # The impact compares calls by id, name and parsed arguments: a reading whose text
    # differs from the robust client's only in spacing or key order assembled the call.
    a = Analyzer(Transcript("<impact>", "jsonl", False, lambda: iter(())))
    robust = [{"index": 0, "id": ID_W, "name": "f", "arguments": '{"a":1,"b":[1,2]}'}]
    naive = [{**robust[0], "arguments": naive_args, "type": "function"}]
    calls = {Strategy.NAIVE: naive, Strategy.GUARDED: robust, Strategy.ROBUST: robust}
    out = a._impact(ToolCallAccumulator().result(), calls, [], True)
    assert out[Strategy.NAIVE].status.value == status
    assert out[Strategy.GUARDED].status.value == "ok"


def test_rule_statuses_from_a_cold_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    # _rule_status builds each set of facts' passes once per process: judged here from an
    # empty cache (a warm one, filled by earlier tests, would never build them), then warm.
    monkeypatch.setattr(an, "_PASSED", {})
    calls = [CallSpec(ID_W, "get_weather", '{"city": "Paris"}')]
    body = render_sse(reference_stream(calls, rng=random.Random(7), model="m", include_usage=True))
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    req = {
        "model": "m",
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": tools,
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "messages": [{"role": "user", "content": "hi"}],
    }
    sse = {"content-type": "text/event-stream"}
    # No request, status or headers: only the body's framing, chunks and calls are judged.
    bare = {rid: "not applicable" for rid in RULES}
    for rid, rule in RULES.items():
        if rule.needs in ("framing", "tool_calls", None) and rid not in an._SPECIAL:
            bare[rid] = "pass"
    # The whole exchange: every rule but the round trip's (no tool result was sent) and
    # the visible length cut (no length finish, no max_tokens) is judged, and passes.
    full = dict.fromkeys(RULES, "pass")
    for rid in ("R-ROUNDTRIP-IDS", "R-ROUNDTRIP-ACCEPTED", "R-LENGTH-VISIBLE"):
        full[rid] = "not applicable"
    cases = [((None, None, None), bare), (({"body": req}, 200, sse), full)]
    for _ in range(2):  # cold, then warm
        for (r, status, headers), want in cases:
            t = exchange_transcript("<rules>", "sse", r, status, headers, body)
            assert analyze(t).rules == want
    assert len(an._PASSED) == 2


# ---------------------------------------------------------- calls sent as objects, by choice

ID_A, ID_B = "call_" + "a" * 24, "call_" + "b" * 24


def _object_call(cid: str, args: str) -> dict[str, Any]:
    """A delta whose tool_calls is the call object itself, not an array (Q-TOOLCALLS-NOT-ARRAY)."""
    fn = {"name": "f", "arguments": args}
    return {"tool_calls": {"index": 0, "id": cid, "type": "function", "function": fn}}


def _choices(*choices: tuple[int, dict[str, Any], str | None]) -> dict[str, Any]:
    out = [{"index": i, "delta": d, "finish_reason": fr} for i, d, fr in choices]
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": out,
    }


def _judged(n: int, chunks: list[dict[str, Any]]) -> Any:
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    req = {"body": {"model": "m", "stream": True, "n": n, "tools": tools, "messages": []}}
    sse = {"content-type": "text/event-stream"}
    return analyze(
        exchange_transcript("<objects>", "sse", req, 200, sse, body + b"data: [DONE]\n\n")
    )


def test_calls_sent_as_objects_in_two_choices_are_each_its_own_choices_call() -> None:
    """n=2, each choice opening its call at index 0 as an object: two choices' calls, not
    one index reused (no R-INDEX-DISTINCT), and each choice's finish "tool_calls" follows
    a call-carrying delta (no Q-FINISH-TOOLCALLS-WITHOUT-DELTAS: the object is read as
    [object], as the robust client reads it)."""
    r = _judged(
        2,
        [
            _choices((0, {"role": "assistant"}, None), (1, {"role": "assistant"}, None)),
            _choices((0, _object_call(ID_A, '{"x": 1}'), None)),
            _choices((1, _object_call(ID_B, '{"x": 2}'), None)),
            _choices((0, {}, "tool_calls"), (1, {}, "tool_calls")),
        ],
    )
    found = [(f.quirk, f.event, f.pointer) for f in r.findings]
    assert found == [
        ("Q-ARGS-WHOLE-IN-ONE-DELTA", 1, "/choices/0/delta/tool_calls"),
        ("Q-TOOLCALLS-NOT-ARRAY", 1, "/choices/0/delta/tool_calls"),
    ]
    notarray = next(f for f in r.findings if f.quirk == "Q-TOOLCALLS-NOT-ARRAY")
    assert notarray.message == "`tool_calls` is an object, not an array"
    assert json.loads(notarray.excerpt) == _object_call(ID_A, '{"x": 1}')["tool_calls"]
    # Calls came (as objects): the tool-call rules are judged, and these pass.
    assert {r.rules[rid] for rid in ("R-INDEX-DISTINCT", "R-FINISH-TOOL-CALLS")} == {"pass"}
    robust = r.tool_calls[Strategy.ROBUST]
    assert [(c["id"], c["arguments"]) for c in robust] == [(ID_A, '{"x": 1}'), (ID_B, '{"x": 2}')]


def test_with_one_choice_a_call_object_and_its_fragments_share_the_call_whatever_its_index() -> (
    None
):
    """n=1 and a server that numbers its one choice 1: the call opened as an object and the
    fragment that follows in an array are one call (the choice index is not a key with one
    choice), so the fragment is no new call without id, name or type."""
    r = _judged(
        1,
        [
            _choices((1, {"role": "assistant"}, None)),
            _choices((1, _object_call(ID_A, '{"x": '), None)),
            _choices((1, {"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}, None)),
            _choices((1, {}, "tool_calls")),
        ],
    )
    assert [f.quirk for f in r.findings if f.event == 2] == []
    assert "Q-TOOLCALLS-NOT-ARRAY" in r.quirks
    assert [(c["id"], c["arguments"]) for c in r.tool_calls[Strategy.ROBUST]] == [
        (ID_A, '{"x": 1}')
    ]


def test_tool_markup_at_the_very_start_of_the_content_is_found() -> None:
    """`to=functions.NAME` at the start of the first content delta is a word boundary (the
    marker needs one before `to`), so it is a tool call streamed as text."""
    chunks = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": 'to=functions.lookup {"q": 1}'}),
        chunk({}, "stop"),
    ]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    r = an.analyze_bytes(body + b"data: [DONE]\n\n")
    assert [(f.quirk, f.event) for f in r.findings] == [("Q-TOOLCALL-AS-TEXT", 1)]


def test_analyze_bytes_imports_its_readers_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """The readers are imported on the first call, not at import (start-up): from a process
    where no call was made yet, a body is analysed as in any later call."""
    calls = [CallSpec(ID_W, "get_weather", "{}")]
    body = render_sse(reference_stream(calls, rng=random.Random(3), model="m"))
    monkeypatch.setattr(an, "_readers", None)
    first = an.analyze_bytes(body).to_json()
    assert an._readers is not None
    assert first == an.analyze_bytes(body).to_json()
    assert first["verdict"] == "conforms"


# ------------------------------------------------------------------ envelope and choice keys


def _findings(chunks: list[dict[str, Any]]) -> list[tuple[str | None, int | None, Any, str]]:
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    r = an.analyze_bytes(body + b"data: [DONE]\n\n")
    return [(f.quirk, f.event, f.pointer, f.message) for f in r.findings]


@pytest.mark.parametrize("key", ["id", "object", "created"])
def test_an_empty_envelope_field_is_as_missing_as_an_absent_one(key: str) -> None:
    chunks = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "hi"}),
        chunk({}, "stop"),
    ]
    for c in chunks:
        c[key] = ""
    assert _findings(chunks) == [
        ("Q-ENVELOPE-FIELDS-MISSING", 0, f"/{key}", f"chunk without {key}")
    ]


def test_a_non_standard_delta_field_is_reported_from_the_event_it_came_in() -> None:
    chunks = [chunk({"role": "assistant", "content": ""}), chunk({"content": "hi", "foo": 1})]
    found = _findings([*chunks, chunk({}, "stop")])
    assert found == [("Q-EXTRA-FIELDS", 1, None, "non-standard fields: delta.foo")]


def test_a_camelcase_finish_is_its_own_quirk_not_an_extra_field() -> None:
    """finishReason is reported as Q-FINISH-CAMELCASE; the choice's other unknown key is
    the only non-standard field named."""
    odd = chunk({"content": "hi"})
    odd["choices"][0].update(finishReason=None, bar=2)
    found = _findings([chunk({"role": "assistant", "content": ""}), odd, chunk({}, "stop")])
    assert ("Q-EXTRA-FIELDS", 1, None, "non-standard fields: choice.bar") in found
    assert [q for q, *_ in found] == ["Q-EXTRA-FIELDS", "Q-FINISH-CAMELCASE"]


def test_a_stream_of_two_choices_answered_with_one_completion_is_only_downgraded() -> None:
    """A streamed request (n=2, usage asked) answered with one JSON completion: the
    finding is the downgrade; the completion's calls (one per choice) are read, and its
    usage is there, so nothing is judged missing or cut."""
    msg = [
        {
            "index": i,
            "message": {"role": "assistant", "content": None, "tool_calls": [call]},
            "finish_reason": "tool_calls",
        }
        for i, call in enumerate(
            {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            for cid in (ID_A, ID_B)
        )
    ]
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    completion = {"id": "x", "object": "chat.completion", "created": 1, "model": "m"}
    completion |= {"choices": msg, "usage": usage}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    body = {"model": "m", "stream": True, "n": 2, "messages": [], "tools": tools}
    body["stream_options"] = {"include_usage": True}
    json_ct = {"content-type": "application/json"}
    t = exchange_transcript(
        "<json>", "sse", {"body": body}, 200, json_ct, json.dumps(completion).encode()
    )
    r = analyze(t)
    assert [(f.quirk, f.rule) for f in r.findings] == [
        ("Q-STREAM-DOWNGRADED", "R-SSE-CONTENT-TYPE")
    ]
    assert [c["id"] for c in r.tool_calls[Strategy.ROBUST]] == [ID_A, ID_B]


def test_a_transport_quirk_the_catalogue_does_not_know_names_none() -> None:
    """A cassette's header can name any text as the transport's quirk: only a catalogued
    id is reported as one; the transport error itself is reported either way."""
    for named, want in (("Q-NOT-A-QUIRK", None), ("Q-KEEPALIVE-DROPPED", "Q-KEEPALIVE-DROPPED")):
        t = exchange_transcript("<cut>", "sse", None, None, None, b"data: {}\n\n")
        t.transport_error, t.meta["transport_quirk"] = "connection reset", named
        found = [(f.quirk, f.rule, f.message) for f in analyze(t).findings]
        assert (want, "R-COMPLETE", "connection reset") in found


# ------------------------------------------------------------------ the edges of a burst


def _burst_end(times: list[float]) -> float:
    """Where the burst the call opened ends: the call's first time plus BURST times the
    silence before it (the detector's definition: 'at most this fraction')."""
    return times[1] + timing.BURST * (times[1] - times[0])


def test_fragments_and_a_finish_exactly_at_the_burst_end_are_in_the_burst() -> None:
    times = [0.0, 2.0, 2.01, 2.02, 2.03, 0.0, 0.0]
    times[5] = times[6] = _burst_end(times)  # the last fragment, then the finish
    _, r = lockstep(transcript([ROLE, OPEN, *PARIS, END], times))
    assert sorted(q for q, _, _ in quirks(r)) == [
        "Q-ARGS-NOT-PROGRESSIVE",
        "Q-TOOLCALL-HELD-UNTIL-FINISH",
    ]


def test_a_burst_lasts_a_fraction_of_the_silence_not_the_inverse() -> None:
    """Two seconds of silence: the burst lasts 0.2 s, so fragments 0.15 s apart are in it
    (the inverse fraction, 0.05 s, would call them progressive)."""
    times = [0.0, 2.0, 2.05, 2.1, 2.15, 2.15, 5.0]
    _, r = lockstep(transcript([ROLE, OPEN, *PARIS, END], times))
    assert [q for q, _, _ in quirks(r)] == ["Q-ARGS-NOT-PROGRESSIVE"]


def test_a_call_in_the_first_burst_does_not_stop_the_next_calls_timing() -> None:
    """The first call opens with the stream (no silence before it: not judged); the second
    comes after a silence, all in one burst with the finish: it is the one reported."""
    second = [frag('{"a": ', 1), frag("1}", 1)]
    chunks = [ROLE, OPEN, *PARIS, opener(1, ID_T, "get_time"), *second, END]
    times = [0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 3.0, 3.01, 3.02, 3.03]
    _, r = lockstep(transcript(chunks, times))
    held = [(q, ev) for q, ev, _ in quirks(r) if q in timing.IDS]
    assert held == [("Q-ARGS-NOT-PROGRESSIVE", 6), ("Q-TOOLCALL-HELD-UNTIL-FINISH", 6)]


def test_an_empty_finish_reason_is_no_finish_for_the_timing() -> None:
    """finish_reason "" early in the call's burst is not the finish (Q-FINISH-EMPTY-STRING
    says so): the call, spread over seconds, was not held until the real finish."""
    chunks = [ROLE, OPEN, frag('{"ci'), chunk({}, ""), *PARIS[1:], END]
    times = [0.0, 2.0, 2.01, 2.02, 3.5, 5.0, 6.5, 8.0]
    _, r = lockstep(transcript(chunks, times))
    assert [q for q, _, _ in quirks(r)] == ["Q-FINISH-EMPTY-STRING"]
    assert set(r["timing"].values()) == {"pass"}


def test_what_the_readings_keep_is_joined_once_per_compaction_period(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long stream's pieces are joined every COMPACT_EVERY + 1 events (memory follows the
    text), and only then: joining on every event would cost the text's length each time.
    The period is made 4 events here (it is 65,536) to see both sides of one compaction."""
    monkeypatch.setattr(an, "COMPACT_EVERY", 0b11)
    a = Analyzer(transcript([]))
    pieces = []
    for n, c in enumerate([ROLE, OPEN, *PARIS, *PARIS]):
        a.feed(Event(n, CHUNK, None, "", c))
        pieces.append(len(a.naive.acc[0]["arguments"]) if n else 0)
    # The analyzer counts events from 1: the compaction runs before the 4th and the 8th
    # (n=3 and n=7), each joining what came before into one piece.
    assert pieces == [0, 1, 2, 2, 3, 4, 5, 2, 3, 4]


def test_a_tool_calls_string_carries_no_call_and_shifts_no_choice() -> None:
    """n=2: choice 0 sends `tool_calls` as a string (no call: neither an array nor an
    object) and stops; choice 1 streams a call and finishes with tool_calls. Each finish
    is judged on its own choice's calls: no false stop-with-calls or calls-without-deltas."""
    whole = {
        "index": 0,
        "id": ID_B,
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    r = _judged(
        2,
        [
            _choices((0, {"role": "assistant"}, None), (1, {"role": "assistant"}, None)),
            _choices((0, {"tool_calls": "f(x=1)"}, None)),
            _choices((1, {"tool_calls": [whole]}, None)),
            _choices((0, {}, "stop"), (1, {}, "tool_calls")),
        ],
    )
    assert not [f for f in r.findings if f.rule == "R-FINISH-TOOL-CALLS"]
    assert [c["id"] for c in r.tool_calls[Strategy.ROBUST]] == [ID_B]
