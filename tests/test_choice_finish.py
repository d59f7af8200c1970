"""Finish state per choice: streams with n > 1, judged one choice at a time.

With `n: 2` each choice streams its own deltas and ends with its own finish_reason (usage
comes once, for the whole response). Each finish detector gets an n=2 stream that must
trigger it and one that must not; the findings are written out by hand (rule, level, quirk,
event, JSON pointer as the raw chunk has it, message, excerpt). Several "must not" streams
were false positives while the finish state was stream-wide (two choices finishing with
"tool_calls" read as Q-FINISH-REPEATED), several "must" streams were missed (choice 0's
finish hid choice 1's): the case names say which.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.analysis import analyze_bytes, analyze_chunks

ID0 = "call_W1a2b3c4d5e6f7g8h9i0j1k2"
ID1 = "call_T1a2b3c4d5e6f7g8h9i0j1k2"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def c(
    index: int, delta: dict[str, Any] | None = None, finish: Any = None, **extra: Any
) -> dict[str, Any]:
    """One choice object (`delta` {} when None)."""
    return {
        "index": index,
        "delta": {} if delta is None else delta,
        "logprobs": None,
        "finish_reason": finish,
        **extra,
    }


def k(*choices: dict[str, Any]) -> dict[str, Any]:
    """A chunk with a complete envelope carrying these choices."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "system_fingerprint": "fp_1",
        "choices": list(choices),
    }


def opener(call_id: str, name: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "index": 0,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
        ]
    }


def frag(text: str) -> dict[str, Any]:
    return {"tool_calls": [{"index": 0, "function": {"arguments": text}}]}


def got(*chunks: dict[str, Any], request: dict[str, Any] | None = None) -> list[tuple]:
    r = analyze_chunks(list(chunks), request={"n": 2} if request is None else request)
    return [
        (f.rule, f.level, f.quirk, f.event, f.pointer, f.message, f.excerpt)
        + ((f.count,) if f.count > 1 else ())
        for f in r.findings
    ]


ROLE = k(c(0, {"role": "assistant"}), c(1, {"role": "assistant"}))
# Choice 0 calls get_weather, choice 1 calls get_time; each in its own chunks.
CALL0 = [k(c(0, opener(ID0, "get_weather"))), k(c(0, frag('{"city":"Paris"}')))]
CALL1 = [k(c(1, opener(ID1, "get_time"))), k(c(1, frag('{"tz":"UTC"}')))]
TEXT1 = k(c(1, {"content": "It is noon."}))


def end(index: int, finish: Any) -> dict[str, Any]:
    return k(c(index, None, finish))


CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any] | None, list[tuple]]] = {
    # ------------------------------------------------------------ Q-FINISH-REPEATED
    "each choice finishes once, separate chunks (was Q-FINISH-REPEATED)": (
        [ROLE, *CALL0, *CALL1, end(0, "tool_calls"), end(1, "tool_calls")],
        None,
        [],
    ),
    "each choice finishes once, one chunk (was Q-FINISH-REPEATED)": (
        [ROLE, *CALL0, *CALL1, k(c(0, None, "tool_calls"), c(1, None, "tool_calls"))],
        None,
        [],
    ),
    "choice 1 finishes twice": (
        [ROLE, *CALL0, *CALL1, end(0, "tool_calls"), end(1, "tool_calls"), end(1, "tool_calls")],
        None,
        [
            (
                "Q-FINISH-REPEATED",
                "SHOULD",
                "Q-FINISH-REPEATED",
                7,
                "/choices/0/finish_reason",
                "choice 1: finish_reason 'tool_calls' sent again",
                None,
            )
        ],
    ),
    # ----------------------------------------------------- Q-FINISH-ON-NONFINAL-CHUNK
    "choice 1 streams after choice 0 finished (was Q-FINISH-ON-NONFINAL-CHUNK)": (
        [ROLE, *CALL0, end(0, "tool_calls"), *CALL1, end(1, "tool_calls")],
        None,
        [],
    ),
    "choice 0 streams after its own finish": (  # reported once, at the first output
        [
            ROLE,
            k(c(0, {"content": "Hi"})),
            end(0, "stop"),
            k(c(0, {"content": "again"})),
            k(c(0, {"content": "and again"})),
            TEXT1,
            end(1, "stop"),
        ],
        None,
        [
            (
                "Q-FINISH-ON-NONFINAL-CHUNK",
                "SHOULD",
                "Q-FINISH-ON-NONFINAL-CHUNK",
                3,
                "/choices/0",
                "choice 0: output after finish_reason 'stop' (event 2)",
                None,
            )
        ],
    ),
    # ---------------------------------------------------------- Q-FINISH-NEVER-SENT
    "choice 1 never finishes (was missed)": (
        [ROLE, *CALL0, *CALL1, end(0, "tool_calls")],
        None,
        [
            (
                "R-FINISH-PRESENT",
                "MUST",
                "Q-FINISH-NEVER-SENT",
                4,
                "/choices/0",
                "choice 1: no finish_reason in the whole stream",
                None,
            )
        ],
    ),
    "no choice finishes": (
        [ROLE, k(c(0, {"content": "Hi"})), TEXT1],
        None,
        [
            (
                "R-FINISH-PRESENT",
                "MUST",
                "Q-FINISH-NEVER-SENT",
                2,
                None,
                "no finish_reason in the whole stream",
                None,
            )
        ],
    ),
    # ------------------------------------------- Q-FINISH-STOP-WITH-TOOLCALLS and kin
    "choice 0's calls end with stop, choice 1's tool_calls last (was missed)": (
        [ROLE, *CALL0, *CALL1, end(0, "stop"), end(1, "tool_calls")],
        None,
        [
            (
                "R-FINISH-TOOL-CALLS",
                "MUST",
                "Q-FINISH-STOP-WITH-TOOLCALLS",
                5,
                "/choices/0/finish_reason",
                'choice 0: tool calls streamed but finish_reason is "stop"',
                None,
            )
        ],
    ),
    "choice 0 is text, choice 1's calls end with stop": (
        [ROLE, k(c(0, {"content": "Hi"})), *CALL1, end(0, "stop"), end(1, "stop")],
        None,
        [
            (
                "R-FINISH-TOOL-CALLS",
                "MUST",
                "Q-FINISH-STOP-WITH-TOOLCALLS",
                5,
                "/choices/0/finish_reason",
                'choice 1: tool calls streamed but finish_reason is "stop"',
                None,
            )
        ],
    ),
    "choice 1's text ends with stop last (was Q-FINISH-STOP-WITH-TOOLCALLS)": (
        [ROLE, *CALL0, TEXT1, end(0, "tool_calls"), end(1, "stop")],
        None,
        [],
    ),
    "named tool_choice, choice 1's call ends with stop": (
        [
            ROLE,
            *CALL0,
            k(c(1, opener(ID1, "get_weather"))),
            k(c(1, frag('{"city":"Rome"}'))),
            end(0, "tool_calls"),
            end(1, "stop"),
        ],
        {"n": 2, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
        [
            (
                "Q-FINISH-STOP-NAMED-TOOLCHOICE",
                "INFO",
                "Q-FINISH-STOP-NAMED-TOOLCHOICE",
                6,
                "/choices/0/finish_reason",
                'choice 1: named tool_choice finishes with "stop" (OpenAI\'s own behaviour)',
                None,
            )
        ],
    ),
    "choice 1's calls cut by length": (
        [ROLE, *CALL0, *CALL1, end(0, "tool_calls"), end(1, "length")],
        None,
        [
            (
                "R-LENGTH-CUT",
                "INFO",
                None,
                6,
                "/choices/0/finish_reason",
                'choice 1: finish_reason "length": the calls are cut and not executable',
                None,
            )
        ],
    ),
    "choice 1's text cut by length last (was R-LENGTH-CUT)": (
        [ROLE, *CALL0, TEXT1, end(0, "tool_calls"), end(1, "length")],
        None,
        [],
    ),
    "choice 1's calls end with content_filter": (
        [ROLE, *CALL0, *CALL1, end(0, "tool_calls"), end(1, "content_filter")],
        None,
        [
            (
                "R-FINISH-TOOL-CALLS",
                "MUST",
                None,
                6,
                "/choices/0/finish_reason",
                "choice 1: tool calls streamed but finish_reason is 'content_filter'",
                None,
            )
        ],
    ),
    "choice 1's text ends with content_filter last (was R-FINISH-TOOL-CALLS)": (
        [ROLE, *CALL0, TEXT1, end(0, "tool_calls"), end(1, "content_filter")],
        None,
        [],
    ),
    "choice 1 says tool_calls with text only (was missed)": (
        [ROLE, *CALL0, TEXT1, end(0, "tool_calls"), end(1, "tool_calls")],
        None,
        [
            (
                "R-FINISH-TOOL-CALLS",
                "MUST",
                "Q-FINISH-TOOLCALLS-WITHOUT-DELTAS",
                5,
                "/choices/0/finish_reason",
                'choice 1: finish_reason "tool_calls" without any tool-call delta',
                None,
            )
        ],
    ),
    # ---------------------------------- the detectors that read one choice object only
    "choice 1 sends an empty finish_reason": (
        [
            ROLE,
            *CALL0,
            k(c(0, None, None), c(1, {"content": "x"}, "")),
            end(0, "tool_calls"),
            end(1, "stop"),
        ],
        None,
        [
            (
                "Q-FINISH-EMPTY-STRING",
                "SHOULD",
                "Q-FINISH-EMPTY-STRING",
                3,
                "/choices/1/finish_reason",
                '`finish_reason: ""` instead of null',
                None,
            )
        ],
    ),
    "choice 1 sends finishReason": (
        [ROLE, *CALL0, TEXT1, end(0, "tool_calls"), k(c(1, None, None, finishReason="stop"))],
        None,
        [
            (
                "Q-FINISH-CAMELCASE",
                "MUST",
                "Q-FINISH-CAMELCASE",
                5,
                "/choices/0/finishReason",
                "finish reason sent as `finishReason`",
                "stop",
            )
        ],
    ),
    "choice 1 sends STOP": (
        [ROLE, *CALL0, TEXT1, end(0, "tool_calls"), end(1, "STOP")],
        None,
        [
            (
                "R-FINISH-VALUE",
                "MUST",
                "Q-FINISH-NONSTANDARD-VALUE",
                5,
                "/choices/0/finish_reason",
                "finish_reason 'STOP' is not a standard value",
                None,
            )
        ],
    ),
    "choice 1's call and finish in one chunk": (
        [ROLE, *CALL0, CALL1[0], k(c(1, frag('{"tz":"UTC"}'), "tool_calls")), end(0, "tool_calls")],
        None,
        [
            (
                "Q-FINISH-SAME-CHUNK-AS-CALL",
                "SHOULD",
                "Q-FINISH-SAME-CHUNK-AS-CALL",
                4,
                "/choices/0/finish_reason",
                "tool-call delta and finish_reason in one chunk",
                None,
            )
        ],
    ),
    "choice 0's call beside choice 1's finish in one chunk": (
        [
            ROLE,
            CALL0[0],
            *CALL1,
            k(c(0, frag('{"city":"Paris"}')), c(1, None, "tool_calls")),
            end(0, "tool_calls"),
        ],
        None,
        [],
    ),
    # ------------------------------------------------- which choices the stream has
    "two choices with index 0 in one chunk": (
        [
            ROLE,
            k(c(0, {"content": "a"}), c(0, {"content": "b"})),
            end(0, "stop"),
            TEXT1,
            end(1, "stop"),
        ],
        None,
        [
            (
                "R-CHUNK-OBJECT",
                "MUST",
                None,
                1,
                "/choices/1/index",
                "choice index 0 appears twice in one chunk",
                None,
            )
        ],
    ),
    "a choice without index, then index 0 twice": (
        [
            ROLE,
            k(
                {"delta": {}, "logprobs": None, "finish_reason": None},
                c(0, {"content": "a"}),
                c(0, {"content": "b"}),
            ),
            end(0, "stop"),
            TEXT1,
            end(1, "stop"),
        ],
        None,
        [
            (
                "Q-ENVELOPE-FIELDS-MISSING",
                "SHOULD",
                "Q-ENVELOPE-FIELDS-MISSING",
                1,
                "/choices/0",
                "choice without index",
                None,
            ),
            (
                "R-CHUNK-OBJECT",
                "MUST",
                None,
                1,
                "/choices/2/index",
                "choice index 0 appears twice in one chunk",
                None,
            ),
        ],
    ),
    "two choices with index 0 in one chunk, n=1 (was no finding)": (
        [
            k(c(0, {"role": "assistant"})),
            k(c(0, {"content": "a"}), c(0, {"content": "b"})),
            end(0, "stop"),
        ],
        {},
        [
            (
                "R-CHUNK-OBJECT",
                "MUST",
                None,
                1,
                "/choices/1/index",
                "choice index 0 appears twice in one chunk",
                None,
            )
        ],
    ),
    "choice index 2 with n=2": (
        [
            ROLE,
            k(c(2, {"content": "a"}, "stop")),
            k(c(0, {"content": "b"})),
            TEXT1,
            k(c(0, None, "stop"), c(1, None, "stop")),
        ],
        None,
        [
            (
                "Q-CHUNK-ID-UNSTABLE",
                "SHOULD",
                "Q-CHUNK-ID-UNSTABLE",
                1,
                "/choices/0/index",
                "choice index 2 in a stream of n=2 choices",
                None,
            )
        ],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_choice_is_judged_on_its_own(name: str) -> None:
    chunks, request, expected = CASES[name]
    assert got(*chunks, request=request) == expected


LIMITED = {"n": 2, "max_tokens": 40, "tools": [WEATHER]}
CUT = '{"city":"Par'


def test_a_cut_call_is_judged_against_its_own_choice_finish() -> None:
    # Choice 1's call is cut but choice 1 says "tool_calls"; choice 0 ends with "length"
    # last, which used to hide it (the stream's last finish_reason was read).
    cut1 = [k(c(1, opener(ID1, "get_weather"))), k(c(1, frag(CUT)))]
    # (The robust client's own note, R-ARGS-JSON, reads the turn's one finish_reason,
    # "length", and stays silent: the client keeps one finish_reason per turn.)
    assert got(ROLE, *CALL0, *cut1, end(1, "tool_calls"), end(0, "length"), request=LIMITED) == [
        (
            "R-LENGTH-VISIBLE",
            "MUST",
            "Q-ARGS-TRUNCATED",
            5,
            "/choices/0/finish_reason",
            "choice 1: call 0's arguments are cut but finish_reason is 'tool_calls', not \"length\"",
            None,
        ),
        (
            "R-LENGTH-CUT",
            "INFO",
            None,
            6,
            "/choices/0/finish_reason",
            'choice 0: finish_reason "length": the calls are cut and not executable',
            None,
        ),
    ]
    # Control: the cut choice says "length"; choice 0's complete call says "tool_calls"
    # last (this was R-LENGTH-VISIBLE against the stream's last finish_reason).
    assert got(ROLE, *CALL0, *cut1, end(1, "length"), end(0, "tool_calls"), request=LIMITED) == [
        (
            "R-ARGS-JSON",
            "MUST",
            "Q-ARGS-TRUNCATED",
            3,
            None,
            "arguments were cut; closed by JSON repair",
            None,
        ),
        (
            "R-LENGTH-CUT",
            "INFO",
            None,
            5,
            "/choices/0/finish_reason",
            'choice 1: finish_reason "length": the calls are cut and not executable',
            None,
        ),
    ]


def test_invented_arguments_are_judged_on_the_choice_cut_by_length() -> None:
    # Choice 1 is cut by "length" with `{}` for a tool that requires `city`; choice 0's
    # "tool_calls" came last and used to hide it.
    empty1 = [k(c(1, opener(ID1, "get_weather"))), k(c(1, frag("{}")))]
    request = {"n": 2, "tools": [WEATHER]}
    assert got(ROLE, *CALL0, *empty1, end(1, "length"), end(0, "tool_calls"), request=request) == [
        (
            "R-LENGTH-CUT",
            "MUST",
            "Q-ARGS-INVENTED-ON-TRUNCATION",
            3,
            "/choices/0/delta/tool_calls/0",
            'choice 1: call 0: arguments "{}" with finish_reason "length" although '
            "'get_weather' requires city: the server filled them in, the model never wrote them",
            None,
        ),
        (
            "R-LENGTH-CUT",
            "INFO",
            None,
            5,
            "/choices/0/finish_reason",
            'choice 1: finish_reason "length": the calls are cut and not executable',
            None,
        ),
    ]
    # Control: the `{}` is choice 0's, which ends with "tool_calls"; choice 1 is cut by
    # "length" last with whole arguments (this was Q-ARGS-INVENTED-ON-TRUNCATION on
    # choice 0's call, read against the stream's last finish_reason).
    empty0 = [k(c(0, opener(ID0, "get_weather"))), k(c(0, frag("{}")))]
    whole1 = [k(c(1, opener(ID1, "get_weather"))), k(c(1, frag('{"city":"Rome"}')))]
    assert got(ROLE, *empty0, *whole1, end(0, "tool_calls"), end(1, "length"), request=request) == [
        (
            "R-LENGTH-CUT",
            "INFO",
            None,
            6,
            "/choices/0/finish_reason",
            'choice 1: finish_reason "length": the calls are cut and not executable',
            None,
        )
    ]


def sse(*chunks: dict[str, Any], tail: str = "") -> bytes:
    import json

    return ("".join(f"data: {json.dumps(x)}\n\n" for x in chunks) + tail).encode()


def test_a_body_cut_while_one_choice_is_unfinished_is_an_error() -> None:
    raw = sse(ROLE, k(c(0, {"content": "Hi"})), end(0, "stop"), TEXT1, tail='data: {"id":')
    r = analyze_bytes(raw, request={"n": 2, "stream": True})
    assert (r.verdict, r.error) == (
        "error",
        "HTTP 200 body cut inside an event after 4 "
        "event(s), with no finish_reason for choice 1: the server "
        "closed the stream mid-answer",
    )
    # Control: both choices finished before the cut; the cut is a framing fault only.
    raw = sse(
        ROLE, k(c(0, {"content": "Hi"})), end(0, "stop"), TEXT1, end(1, "stop"), tail='data: {"id":'
    )
    r = analyze_bytes(raw, request={"n": 2, "stream": True})
    assert (r.verdict, r.error) == ("fails", None)
    assert [(f.rule, f.event, f.message) for f in r.findings] == [
        ("R-SSE-DONE", 5, "stream ended without data: [DONE]"),
        ("R-SSE-WELL-FORMED", 5, 'stream ended inside an event (no blank line after it): {"id":'),
    ]


def test_choice_state_is_bounded_and_the_choices_past_the_cap_are_not_remembered() -> None:
    # 128 choice states are kept; choice 128 (the 129th) is judged on its own chunk only,
    # so its second "stop" is no repeat, while choice 127's is.
    chunks = [k(c(i, {"content": "x"}, "stop")) for i in range(129)]
    chunks += [end(128, "stop"), end(127, "stop")]
    assert got(*chunks, request={"n": 200}) == [
        (
            "Q-FINISH-REPEATED",
            "SHOULD",
            "Q-FINISH-REPEATED",
            130,
            "/choices/0/finish_reason",
            "choice 127: finish_reason 'stop' sent again",
            None,
        )
    ]


def test_a_choice_remembers_eight_finish_values() -> None:
    # Hostile input cannot grow a choice's memory: its first eight distinct values are
    # kept, so the ninth sent again is no repeat, while the eighth sent again is.
    values = [f"v{i}" for i in range(1, 10)]
    chunks = [k(c(0, {"content": "x"}))] + [end(0, v) for v in values]
    chunks += [end(0, "v9"), end(0, "v8")]
    assert got(*chunks, request={}) == [
        (
            "R-FINISH-VALUE",
            "MUST",
            "Q-FINISH-NONSTANDARD-VALUE",
            1,
            "/choices/0/finish_reason",
            "finish_reason 'v1' is not a standard value",
            None,
            11,
        ),
        (
            "Q-FINISH-REPEATED",
            "SHOULD",
            "Q-FINISH-REPEATED",
            11,
            "/choices/0/finish_reason",
            "finish_reason 'v8' sent again",
            None,
        ),
    ]


def test_with_n_1_every_choice_is_choice_0() -> None:
    # The catalogue's reading (Q-CHUNK-ID-UNSTABLE): with n=1 a stray choice index is still
    # the one answer, so its second "stop" repeats choice 0's.
    assert got(k(c(0, {"content": "Hi"})), end(0, "stop"), end(1, "stop"), request={}) == [
        (
            "Q-CHUNK-ID-UNSTABLE",
            "SHOULD",
            "Q-CHUNK-ID-UNSTABLE",
            2,
            "/choices/0/index",
            "choice index 1 in a single-choice stream",
            None,
        ),
        (
            "Q-FINISH-REPEATED",
            "SHOULD",
            "Q-FINISH-REPEATED",
            2,
            "/choices/0/finish_reason",
            "finish_reason 'stop' sent again",
            None,
        ),
    ]


def test_a_choice_without_index_is_choice_0() -> None:
    no_index = {"delta": {}, "logprobs": None, "finish_reason": "stop"}
    assert got(
        ROLE, k(c(0, {"content": "a"})), TEXT1, end(0, "stop"), k(no_index), end(1, "stop")
    ) == [
        (
            "Q-ENVELOPE-FIELDS-MISSING",
            "SHOULD",
            "Q-ENVELOPE-FIELDS-MISSING",
            4,
            "/choices/0",
            "choice without index",
            None,
        ),
        (
            "Q-FINISH-REPEATED",
            "SHOULD",
            "Q-FINISH-REPEATED",
            4,
            "/choices/0/finish_reason",
            "choice 0: finish_reason 'stop' sent again",
            None,
        ),
    ]


def test_a_finding_several_choices_share_names_the_first_to_appear() -> None:
    # Choices 2 and 1 (in that order) never finish; choice 0 does.
    three = {"n": 3}
    assert got(
        k(c(2, {"content": "a"})),
        k(c(1, {"content": "b"})),
        k(c(0, {"content": "c"}, "stop")),
        request=three,
    ) == [
        (
            "R-FINISH-PRESENT",
            "MUST",
            "Q-FINISH-NEVER-SENT",
            0,
            "/choices/0",
            "choice 2: no finish_reason in the whole stream",
            None,
            2,
        )
    ]
    # Both choices' calls end with "stop"; choice 1 appeared first, choice 0 finished first.
    assert got(*CALL1, *CALL0, end(0, "stop"), end(1, "stop")) == [
        (
            "R-FINISH-TOOL-CALLS",
            "MUST",
            "Q-FINISH-STOP-WITH-TOOLCALLS",
            5,
            "/choices/0/finish_reason",
            'choice 1: tool calls streamed but finish_reason is "stop"',
            None,
            2,
        )
    ]


def test_calls_are_matched_to_their_choice_whatever_order_the_choices_stream_in() -> None:
    # Choice 1 streams first with whole arguments, choice 0 second with `{}`, cut by length.
    empty0 = [k(c(0, opener(ID0, "get_weather"))), k(c(0, frag("{}")))]
    whole1 = [k(c(1, opener(ID1, "get_weather"))), k(c(1, frag('{"city":"Rome"}')))]
    assert got(
        *whole1,
        *empty0,
        end(1, "tool_calls"),
        end(0, "length"),
        request={"n": 2, "tools": [WEATHER]},
    ) == [
        (
            "R-LENGTH-CUT",
            "MUST",
            "Q-ARGS-INVENTED-ON-TRUNCATION",
            2,
            "/choices/0/delta/tool_calls/0",
            'choice 0: call 0: arguments "{}" with finish_reason "length" although '
            "'get_weather' requires city: the server filled them in, the model never wrote them",
            None,
        ),
        (
            "R-LENGTH-CUT",
            "INFO",
            None,
            5,
            "/choices/0/finish_reason",
            'choice 0: finish_reason "length": the calls are cut and not executable',
            None,
        ),
    ]


def test_a_cut_call_of_a_choice_that_never_finished() -> None:
    cut1 = [k(c(1, opener(ID1, "get_weather"))), k(c(1, frag(CUT)))]
    assert got(ROLE, *CALL0, *cut1, end(0, "tool_calls"), request=LIMITED) == [
        (
            "R-ARGS-JSON",
            "MUST",
            "Q-ARGS-TRUNCATED",
            3,
            None,
            "arguments were cut; closed by JSON repair",
            None,
        ),
        (
            "R-FINISH-PRESENT",
            "MUST",
            "Q-FINISH-NEVER-SENT",
            4,
            "/choices/0",
            "choice 1: no finish_reason in the whole stream",
            None,
        ),
        (
            "R-LENGTH-VISIBLE",
            "MUST",
            "Q-ARGS-TRUNCATED",
            None,
            None,
            'choice 1: call 0\'s arguments are cut but finish_reason is None, not "length"',
            None,
        ),
    ]


def test_past_the_cap_calls_are_not_matched_to_choices() -> None:
    # The 129th choice is not kept, so the calls can no longer be told apart by choice:
    # the end checks that need them (here: choice 0's calls ending with "stop") are
    # skipped, a known limit for hostile input, not a verdict.
    chunks = [*CALL0, end(0, "stop")] + [k(c(i, {"content": "x"}, "stop")) for i in range(1, 129)]
    assert got(*chunks, request={"n": 200}) == []
    assert got(*chunks[:-1], request={"n": 200}) == [
        (
            "R-FINISH-TOOL-CALLS",
            "MUST",
            "Q-FINISH-STOP-WITH-TOOLCALLS",
            2,
            "/choices/0/finish_reason",
            'choice 0: tool calls streamed but finish_reason is "stop"',
            None,
        )
    ]


def test_a_downgraded_answer_with_two_choices() -> None:
    # One JSON completion instead of a stream: the robust client reads its calls, no choice
    # streamed a delta, and the per-choice checks have nothing to judge.
    import json

    def message(i: int, call_id: str, name: str, args: str) -> dict[str, Any]:
        return {
            "index": i,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": args},
                    }
                ],
            },
        }

    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [message(0, ID0, "get_weather", "{}"), message(1, ID1, "get_time", "{}")],
    }
    r = analyze_bytes(
        json.dumps(body).encode(),
        status=200,
        headers={"content-type": "application/json"},
        request={"n": 2, "stream": True, "max_tokens": 9},
    )
    assert [(f.rule, f.quirk, f.message) for f in r.findings] == [
        (
            "R-SSE-CONTENT-TYPE",
            "Q-STREAM-DOWNGRADED",
            "stream requested; answered with one application/json completion",
        )
    ]
    assert [(x["id"], x["name"]) for x in r.tool_calls["robust"]] == [
        (ID0, "get_weather"),
        (ID1, "get_time"),
    ]


def test_past_the_calls_the_client_assembles_calls_are_not_matched_to_choices() -> None:
    # Choice 1 fills the robust client's 1024 calls with `{}` for a tool that needs
    # `city`; choice 0's one call is not assembled, and choice 0 ends with "length". The
    # calls no longer line up with the choices, so none is read as choice 0's.
    many = [
        k(
            c(
                1,
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{}"},
                        }
                    ]
                },
            )
        )
        for i in range(1024)
    ]
    r = analyze_chunks(
        [*many, *CALL0, end(1, "tool_calls"), end(0, "length")],
        request={"n": 2, "tools": [WEATHER]},
    )
    assert [
        (f.rule, f.quirk, f.event, f.pointer, f.message) for f in r.findings if f.level == "MUST"
    ] == [
        (
            "R-COMPLETE",
            None,
            1024,
            "/choices/0/delta/tool_calls/0/index",
            "over 1024 tool calls in one turn: the analysis assembles the first 1024",
        )
    ]
