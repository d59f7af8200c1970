"""The analyzer itself (``analysis/analyzer.py``): how findings are recorded, the steady
path a long stream takes, what each client reading assembles and how it fares, the error
reason, the verdict, and the outcome of every rule under the requests that move it.

The expected values are written by hand from the streams below (a call's id, name and
arguments as a reader of the wire assembles them; a rule's outcome from the rule's text),
never taken from the code under test."""

from __future__ import annotations

from typing import Any

import pytest
import streams as S
from streams import F, found

from conformance.analysis import (
    CaptureResult,
    analyze,
    analyze_bytes,
    analyze_chunks,
    analyze_events,
)
from conformance.analysis.analyzer import Analyzer, _call_key, _diff_calls
from conformance.transcript import CHUNK, COMMENT, DONE, FAULT, Event, Transcript

ID_W, ID_T = "call_W1a2b3c4d5e6f7g8h9i0j1k2", "call_T1a2b3c4d5e6f7g8h9i0j1k2"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, index: int = 0, **extra: Any
) -> dict[str, Any]:
    choices = (
        []
        if delta is None
        else [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}]
    )
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": choices,
        **extra,
    }


def frag(args: str, index: int = 0) -> dict[str, Any]:
    return chunk({"tool_calls": [{"index": index, "function": {"arguments": args}}]})


def opener(index: int, cid: str, name: str, args: str = "") -> dict[str, Any]:
    return chunk(
        {
            "tool_calls": [
                {
                    "index": index,
                    "id": cid,
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                }
            ]
        }
    )


ROLE = chunk({"role": "assistant", "content": None})
OPEN = opener(0, ID_W, "get_weather")
PARIS = [frag('{"ci'), frag('ty": '), frag('"Par'), frag('is"}')]
END = chunk({}, "tool_calls")
PARIS_CALL = {
    "index": 0,
    "id": ID_W,
    "type": "function",
    "name": "get_weather",
    "arguments": '{"city": "Paris"}',
}


def calls(r: CaptureResult) -> dict[str, list[tuple[str, str, str]]]:
    return {
        k: [(c.get("id"), c.get("name"), c.get("arguments")) for c in v]
        for k, v in r.tool_calls.items()
    }


def impact(r: CaptureResult) -> dict[str, tuple[str, str]]:
    return {k: (v.status, v.detail) for k, v in r.impact.items()}


OK3 = {"naive": ("ok", ""), "guarded": ("ok", ""), "robust": ("ok", "")}
PARIS3 = {k: [(ID_W, "get_weather", '{"city": "Paris"}')] for k in ("naive", "guarded", "robust")}


# ============================================================================== find()


def test_find_records_a_finding_once_and_counts_repeats() -> None:
    a = Analyzer(Transcript("<t>", "jsonl", False, lambda: iter(())))
    a.find("Q-EMPTY-DELTA-CHUNKS", "first\nline\r\nand  more", event=3)
    a.find("Q-EMPTY-DELTA-CHUNKS", "second", event=5)
    a.find("R-ARGS-JSON", "bad", quirk="Q-ARGS-TRUNCATED", pointer="/p", excerpt={"a": 1})
    a.find("R-ARGS-JSON", "uncatalogued", excerpt="")
    a.find("R-SSE-DONE", "level given", level="INFO")
    a.find("Q-EXTRA-FIELDS", "r", level="MUST")
    r = a.finish()
    assert found(r) == [
        F(
            "Q-EMPTY-DELTA-CHUNKS",
            "INFO",
            "Q-EMPTY-DELTA-CHUNKS",
            3,
            None,
            "first line and more",
            count=2,
        ),
        F("Q-EXTRA-FIELDS", "MUST", "Q-EXTRA-FIELDS", None, None, "r"),
        F("R-ARGS-JSON", "MUST", "Q-ARGS-TRUNCATED", None, "/p", "bad", '{"a":1}'),
        F("R-ARGS-JSON", "MUST", None, None, None, "uncatalogued", ""),
        F("R-SSE-DONE", "INFO", None, None, None, "level given"),
    ]
    # only the rules of rules.RULES fail; a quirk id used as a rule is no rule
    assert (r.rules["R-ARGS-JSON"], r.rules["R-SSE-DONE"]) == ("fail", "fail")
    assert "Q-EXTRA-FIELDS" not in r.rules


def test_a_message_with_a_carriage_return_only_is_one_line_too() -> None:
    a = Analyzer(Transcript("<t>", "jsonl", False, lambda: iter(())))
    a.find("R-NO-ERROR", "a\rb")
    assert a.findings[("R-NO-ERROR", None)].message == "a b"


# ============================================================================== events


def test_events_of_each_kind() -> None:
    evs = [
        Event(0, COMMENT, 1, "ping"),
        Event(1, CHUNK, 3, "", ROLE),
        Event(2, FAULT, 5, "invalid UTF-8 in the stream (decoded with U+FFFD)"),
        Event(3, CHUNK, 7, "", chunk({"content": "Hi."})),
        Event(4, DONE, 9, "[DONE]"),
    ]
    r = analyze_events(evs)
    assert (r.source, r.events, r.verdict, r.error) == ("<events>", 5, "fails", None)
    # events other than chunks mean the stream was framed: the SSE rules are judged
    assert (r.rules["R-SSE-DATA-JSON"], r.rules["R-SSE-DONE"]) == ("pass", "pass")
    assert found(r) == [
        F(
            "Q-SSE-COMMENT-KEEPALIVE",
            "SHOULD",
            "Q-SSE-COMMENT-KEEPALIVE",
            0,
            None,
            "SSE comment line ': ping'",
            ": ping",
        ),
        F(
            "R-SSE-WELL-FORMED",
            "MUST",
            None,
            2,
            None,
            "invalid UTF-8 in the stream (decoded with U+FFFD)",
        ),
        F(
            "R-FINISH-PRESENT",
            "MUST",
            "Q-FINISH-NEVER-SENT",
            4,
            None,
            "no finish_reason in the whole stream",
        ),
    ]


def test_chunk_events_alone_are_unframed() -> None:
    r = analyze_events(
        [Event(0, CHUNK, None, "", ROLE), Event(1, CHUNK, None, "", chunk({}, "stop"))], source="e"
    )
    assert (r.source, found(r), r.rules["R-SSE-DONE"]) == ("e", [], "not applicable")


def test_a_fault_that_is_no_cut_leaves_a_stream_without_finish_a_quirk_not_an_error() -> None:
    raw = b'data: {"choices":[{"index":0,"delta":{"content":"\xff"}}]}\n\n'
    r = analyze_bytes(raw, status=200)
    assert (r.verdict, r.error) == ("fails", None)
    assert [(f["rule"], f["event"]) for f in found(r)] == [
        ("Q-ENVELOPE-FIELDS-MISSING", 0),
        ("R-FINISH-PRESENT", 1),
        ("R-SSE-DONE", 1),
        ("R-SSE-WELL-FORMED", 1),
    ]


def test_a_json_scalar_payload_is_not_a_chunk() -> None:
    r = analyze_chunks([ROLE, [1, 2], "text", chunk({}, "stop")])
    assert found(r) == [
        F(
            "R-CHUNK-OBJECT",
            "MUST",
            None,
            1,
            "",
            "payload is an array, not an object",
            "[1,2]",
            count=2,
        )
    ]
    assert r.source == "<chunks>"


# ============================================================================== steady path

STEADY = {
    "clean": ([ROLE, OPEN, *PARIS, END], "conforms", []),
    "chunk id changes on a fragment": (
        [ROLE, OPEN, PARIS[0], PARIS[1], {**PARIS[2], "id": "chatcmpl-2"}, PARIS[3], END],
        "quirk",
        [
            F(
                "Q-CHUNK-ID-UNSTABLE",
                "SHOULD",
                "Q-CHUNK-ID-UNSTABLE",
                4,
                "/id",
                "chunk id changed from 'chatcmpl-1' to 'chatcmpl-2'",
            )
        ],
    ),
    "extra key on a fragment": (
        [ROLE, OPEN, PARIS[0], PARIS[1], {**PARIS[2], "zzz": 1}, PARIS[3], END],
        "conforms",
        [F("Q-EXTRA-FIELDS", "INFO", "Q-EXTRA-FIELDS", 4, None, "non-standard fields: zzz")],
    ),
    "extra key on a fragment's choice": (
        [
            ROLE,
            OPEN,
            PARIS[0],
            PARIS[1],
            {**PARIS[2], "choices": [{**PARIS[2]["choices"][0], "x": 1}]},
            PARIS[3],
            END,
        ],
        "conforms",
        [F("Q-EXTRA-FIELDS", "INFO", "Q-EXTRA-FIELDS", 4, None, "non-standard fields: choice.x")],
    ),
    "choice index moves on a fragment": (
        [
            ROLE,
            OPEN,
            PARIS[0],
            PARIS[1],
            {**PARIS[2], "choices": [{**PARIS[2]["choices"][0], "index": 1}]},
            PARIS[3],
            END,
        ],
        "quirk",
        [
            F(
                "Q-CHUNK-ID-UNSTABLE",
                "SHOULD",
                "Q-CHUNK-ID-UNSTABLE",
                4,
                "/choices/0/index",
                "choice index 1 in a single-choice stream",
            )
        ],
    ),
    "usage on a fragment": (
        [
            ROLE,
            OPEN,
            PARIS[0],
            PARIS[1],
            {**PARIS[2], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
            PARIS[3],
            END,
        ],
        "quirk",
        [
            F(
                "Q-USAGE-PLACEMENT",
                "SHOULD",
                "Q-USAGE-PLACEMENT",
                4,
                "/usage",
                "usage on a chunk that also carries choices",
                '{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}',
            )
        ],
    ),
    "model empty on a fragment": (
        [ROLE, OPEN, PARIS[0], PARIS[1], {**PARIS[2], "model": ""}, PARIS[3], END],
        "quirk",
        [
            F(
                "Q-ENVELOPE-FIELDS-MISSING",
                "SHOULD",
                "Q-ENVELOPE-FIELDS-MISSING",
                4,
                "/model",
                "chunk without model",
            )
        ],
    ),
    "fragment after the finish": (
        [
            ROLE,
            OPEN,
            PARIS[0],
            PARIS[1],
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Par'}}]}, "tool_calls"),
            PARIS[3],
        ],
        "quirk",
        [
            F(
                "Q-FINISH-SAME-CHUNK-AS-CALL",
                "SHOULD",
                "Q-FINISH-SAME-CHUNK-AS-CALL",
                4,
                "/choices/0/finish_reason",
                "tool-call delta and finish_reason in one chunk",
            ),
            F(
                "Q-FINISH-ON-NONFINAL-CHUNK",
                "SHOULD",
                "Q-FINISH-ON-NONFINAL-CHUNK",
                5,
                "/choices/0",
                "output after finish_reason 'tool_calls' (event 4)",
            ),
        ],
    ),
    # the role-only chunk counts as empty after the first chunk, however many fragments
    # took the steady path
    "empty chunks after steady fragments": (
        [ROLE, OPEN, *PARIS, chunk({"role": "assistant"}), chunk({}), END],
        "conforms",
        [
            F(
                "Q-EMPTY-DELTA-CHUNKS",
                "INFO",
                "Q-EMPTY-DELTA-CHUNKS",
                6,
                None,
                "2 chunks carry nothing",
            )
        ],
    ),
}


@pytest.mark.parametrize("name", STEADY)
def test_steady_path(name: str) -> None:
    cs, verdict, findings = STEADY[name]
    r = analyze_chunks(cs)
    assert (r.verdict, found(r), calls(r), impact(r)) == (verdict, findings, PARIS3, OK3)


def test_a_fragment_on_an_index_never_opened_is_judged_in_full() -> None:
    r = analyze_chunks([ROLE, OPEN, PARIS[0], PARIS[1], frag('"x"', 1), PARIS[2], PARIS[3], END])
    assert found(r) == [
        F(
            "R-FIRST-NAME",
            "MUST",
            "Q-INDEX-INCONSISTENT-WITHIN-CALL",
            4,
            "/choices/0/delta/tool_calls/0",
            "index 1 carries arguments but never an id or a name: one call's deltas split over "
            "two indices",
            '{"index":1,"function":{"arguments":"\\"x\\""}}',
        )
    ]
    assert calls(r)["robust"] == [(ID_W, "get_weather", '{"city": "Paris"}'), ("", "", '"x"')]
    assert impact(r)["robust"] == ("unrecoverable", "Q-INDEX-INCONSISTENT-WITHIN-CALL")


def test_two_calls_interleaved_on_the_steady_path() -> None:
    r = analyze_chunks(
        [
            ROLE,
            OPEN,
            PARIS[0],
            PARIS[1],
            opener(1, ID_T, "get_time"),
            frag('{"tz"', 1),
            frag(': "UTC"}', 1),
            PARIS[2],
            PARIS[3],
            END,
        ]
    )
    want = [(ID_W, "get_weather", '{"city": "Paris"}'), (ID_T, "get_time", '{"tz": "UTC"}')]
    assert (found(r), calls(r), impact(r)) == (
        [],
        {"naive": want, "guarded": want, "robust": want},
        OK3,
    )


def test_many_fragments_are_joined_in_order() -> None:
    r = analyze_chunks(
        [ROLE, OPEN, frag('{"city": "'), *[frag(c) for c in "ab" * 75], frag('"}'), END]
    )
    want = [(ID_W, "get_weather", '{"city": "' + "ab" * 75 + '"}')]
    assert (r.events, found(r), calls(r), impact(r)) == (
        155,
        [],
        {"naive": want, "guarded": want, "robust": want},
        OK3,
    )


def test_a_crashed_reading_stays_crashed_on_the_steady_path() -> None:
    # the naive reading crashes on the Azure filter chunk (choices[0] of []) and keeps
    # nothing after it; the other two read the whole call
    filt = {
        "id": "",
        "object": "",
        "created": 0,
        "model": "",
        "choices": [],
        "prompt_filter_results": [{"prompt_index": 0}],
    }
    r = analyze_chunks([ROLE, OPEN, PARIS[0], filt, PARIS[1], PARIS[2], PARIS[3], END])
    assert calls(r) == {
        "naive": [(ID_W, "get_weather", '{"ci')],
        "guarded": [(ID_W, "get_weather", '{"city": "Paris"}')],
        "robust": [(ID_W, "get_weather", '{"city": "Paris"}')],
    }
    assert impact(r) == {
        "naive": ("crashed", "event 3: IndexError: list index out of range"),
        "guarded": ("ok", ""),
        "robust": ("ok", ""),
    }


def test_with_n_2_the_second_choice_is_its_own_call() -> None:
    c1 = {
        **opener(0, ID_T, "get_time"),
        "choices": [{**opener(0, ID_T, "get_time")["choices"][0], "index": 1}],
    }
    f1 = {**frag('{"tz": "UTC"}'), "choices": [{**frag('{"tz": "UTC"}')["choices"][0], "index": 1}]}
    r = analyze_chunks(
        [ROLE, OPEN, PARIS[0], c1, PARIS[1], f1, PARIS[2], PARIS[3], END],
        request={"n": 2, "stream": True},
    )
    assert [c[:2] for c in calls(r)["robust"]] == [(ID_W, "get_weather"), (ID_T, "get_time")]
    assert [c["index"] for c in r.tool_calls["robust"]] == [0, 0]


# ============================================================================== impact

IMPACT = {
    "reference, usage chunk": (
        S.REFERENCE_SINGLE_SSE,
        {
            "naive": ("crashed", "event 5: IndexError: list index out of range"),
            "guarded": ("ok", ""),
            "robust": ("ok", ""),
        },
    ),
    "one call instead of two": (
        S.INDEX_ALL_ZERO,
        {
            "naive": ("wrong", "1 call(s) instead of 2"),
            "guarded": ("wrong", "1 call(s) instead of 2"),
            "robust": ("ok", ""),
        },
    ),
    "id differs": (
        S.ID_CHANGES_MID_CALL,
        {
            "naive": (
                "wrong",
                "call 0: id 'call_6bAgqnOvlFcg9mwTZ4kP7dP0' instead of "
                "'call_DfU25035HyRrY03K6JBO94Xf'",
            ),
            "guarded": (
                "wrong",
                "call 0: id 'call_6bAgqnOvlFcg9mwTZ4kP7dP0' instead of "
                "'call_DfU25035HyRrY03K6JBO94Xf'",
            ),
            "robust": ("ok", ""),
        },
    ),
    "name differs": (
        S.NAME_FRAGMENTED,
        {
            "naive": ("wrong", "call 0: name 'weather' instead of 'get_weather'"),
            "guarded": ("wrong", "call 0: name 'weather' instead of 'get_weather'"),
            "robust": ("ok", ""),
        },
    ),
    "empty id": (
        S.EMPTY_STRING_OVERWRITE,
        {
            "naive": ("wrong", "call 0: id '' instead of 'call_eee11723464aQRSTUVWXYZab'"),
            "guarded": ("ok", ""),
            "robust": ("ok", ""),
        },
    ),
    "arguments differ": (
        S.ARGS_CUMULATIVE,
        {
            "naive": (
                "wrong",
                'call 0: arguments \'{"path":{"path":"notes.txt"{"path":"notes.txt"}\'',
            ),
            "guarded": (
                "wrong",
                'call 0: arguments \'{"path":{"path":"notes.txt"{"path":"notes.txt"}\'',
            ),
            "robust": ("ok", ""),
        },
    ),
    "arguments repaired": (
        S.ARGS_TRUNCATED,
        {
            "naive": ("wrong", 'call 0: arguments \'{"city": "Par\''),
            "guarded": ("wrong", 'call 0: arguments \'{"city": "Par\''),
            "robust": ("ok", "repaired arguments"),
        },
    ),
    "not recoverable": (
        S.INDEX_REUSED_NO_ID,
        {
            "naive": ("wrong", "call 0: name '' instead of 'glob'"),
            "guarded": ("ok", ""),
            "robust": ("unrecoverable", "Q-INDEX-REUSED-ACROSS-CALLS"),
        },
    ),
    "calls only as text": (
        S.TOOLCALL_AS_TEXT,
        {
            "naive": ("ok", ""),
            "guarded": ("ok", ""),
            "robust": ("unrecoverable", "Q-TOOLCALL-AS-TEXT"),
        },
    ),
    "error in the stream": (
        S.SSE_ERROR_ENVELOPE,
        {
            "naive": ("ok", ""),
            "guarded": ("ok", ""),
            "robust": ("unrecoverable", "error inside the stream"),
        },
    ),
    "invalid arguments, the parser's": (
        S.ARGS_SERVER_PARSER_CORRUPTION_SEEN,
        {
            "naive": ("ok", ""),
            "guarded": ("ok", ""),
            "robust": ("unrecoverable", "Q-ARGS-SERVER-PARSER-CORRUPTION"),
        },
    ),
    "invalid arguments, no evidence": (
        S.ARGS_SERVER_PARSER_CORRUPTION,
        {
            "naive": ("ok", ""),
            "guarded": ("ok", ""),
            "robust": ("unrecoverable", "Q-ARGS-INVALID-JSON"),
        },
    ),
}


def run(stream: str) -> CaptureResult:
    if stream.lstrip().startswith(("data:", ":")):
        return analyze_bytes(stream.encode())
    return analyze_chunks(S.chunks(stream))


@pytest.mark.parametrize("name", IMPACT)
def test_impact(name: str) -> None:
    stream, want = IMPACT[name]
    assert impact(run(stream)) == want


def test_the_parser_corruption_finding_names_its_evidence() -> None:
    r = run(S.ARGS_SERVER_PARSER_CORRUPTION_SEEN)
    assert [x for x in found(r) if x["rule"] == "R-ARGS-JSON"] == [
        F(
            "R-ARGS-JSON",
            "MUST",
            "Q-ARGS-SERVER-PARSER-CORRUPTION",
            1,
            None,
            "arguments are not JSON and cannot be repaired; kept as sent; the model's own text "
            "of the 'add_items' call is in content (event 0) with valid arguments: the server's "
            "parser broke them",
        )
    ]
    r = run(S.ARGS_SERVER_PARSER_CORRUPTION)
    assert [x for x in found(r) if x["rule"] == "R-ARGS-JSON"] == [
        F(
            "R-ARGS-JSON",
            "MUST",
            "Q-ARGS-INVALID-JSON",
            0,
            None,
            "arguments are not JSON and cannot be repaired; kept as sent",
        )
    ]


def test_a_cut_by_the_transport_is_no_truncation_quirk_of_the_server() -> None:
    t = Transcript(
        "<t>",
        "live",
        False,
        lambda: iter(
            [
                Event(0, CHUNK, None, "", ROLE),
                Event(1, CHUNK, None, "", OPEN),
                Event(2, CHUNK, None, "", frag('{"city": "Par')),
            ]
        ),
        status=200,
        transport_error="connection reset",
    )
    r = analyze(t)
    assert (r.verdict, r.error) == ("error", "connection reset")
    assert [f["quirk"] for f in found(r)] == [None]
    assert impact(r)["robust"] == ("ok", "repaired arguments")


# ============================================================================== errors, verdicts


def test_error_reasons_in_order() -> None:
    # transport error before an HTTP status, a status before an error event
    t = Transcript(
        "<t>",
        "live",
        True,
        lambda: iter(()),
        status=500,
        raw=b'{"error":"x"}',
        transport_error="reset\nby peer",
    )
    assert analyze(t).error == "reset by peer"
    t = Transcript(
        "<t>",
        "live",
        True,
        lambda: iter([Event(0, CHUNK, None, "", {"error": {"message": "late"}})]),
        status=500,
        raw=b'{"error":"early"}',
    )
    assert analyze(t).error == "HTTP 500: early"


def test_a_content_type_finding_is_an_error_only_for_a_body_without_events() -> None:
    # a 200 JSON body that is no completion nor error, no events: an error
    r = analyze_bytes(
        b'{"foo":1}',
        status=200,
        request={"stream": True},
        headers={"content-type": "application/json"},
    )
    assert (r.verdict, r.error) == ("error", "stream requested; got application/json")


@pytest.mark.parametrize(
    "stream, verdict",
    [
        (S.REFERENCE_TEXT_SSE, "conforms"),
        (S.EXTRA_FIELDS, "conforms"),  # INFO only
        (S.SSE_DONE_MISSING, "quirk"),  # SHOULD
        (S.FINISH_CAMELCASE, "quirk"),  # catalogued MUST
        (S.INDEX_REUSED_NO_ID, "fails"),  # not recoverable
        (S.TOOLCALL_AS_TEXT, "fails"),  # unrecoverable quirk
        (S.SSE_ERROR_ENVELOPE, "error"),
    ],
)
def test_verdicts(stream: str, verdict: str) -> None:
    assert run(stream).verdict == verdict


def test_an_uncatalogued_must_fails_and_an_uncatalogued_should_does_not() -> None:
    assert analyze_bytes(b"data: hello\n\n" + S.REFERENCE_TEXT_SSE.encode()).verdict == "fails"
    r = analyze_chunks([chunk({"role": "assistant", "content": "Hi."}), chunk({}, "stop")])
    a = Analyzer(Transcript("<t>", "jsonl", False, lambda: iter(())))
    a.find("R-FIRST-ARGS", "uncatalogued SHOULD")
    assert (r.verdict, a.finish().verdict) == ("conforms", "conforms")


def test_meta_carries_model_fingerprint_and_server() -> None:
    r = analyze_bytes(
        S.REFERENCE_SINGLE_SSE.encode(),
        status=200,
        headers={"Content-Type": "text/event-stream", "Server": "uvicorn"},
    )
    assert r.meta == {
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": ["fp_a1b2c3d4e5"],
        "server": "uvicorn",
    }
    assert r.to_json()["meta"] == r.meta
    assert (r.source, r.finish_reason, r.events) == ("<bytes>", "tool_calls", 7)
    assert analyze_chunks([]).meta == {}


# ============================================================================== rules

ALL = [
    "R-COMPLETE",
    "R-USAGE",
    "R-LENGTH-VISIBLE",
    "R-HTTP-OK",
    "R-SSE-CONTENT-TYPE",
    "R-SSE-WELL-FORMED",
    "R-SSE-DATA-JSON",
    "R-SSE-DONE",
    "R-CHUNK-OBJECT",
    "R-NO-ERROR",
    "R-INDEX-PRESENT",
    "R-INDEX-DISTINCT",
    "R-FIRST-ID",
    "R-FIRST-TYPE",
    "R-FIRST-NAME",
    "R-FIRST-ARGS",
    "R-CONT-ID-ABSENT",
    "R-CONT-TYPE-ABSENT",
    "R-CONT-NAME-ABSENT",
    "R-ARGS-STRING",
    "R-ARGS-JSON",
    "R-FINISH-PRESENT",
    "R-FINISH-TOOL-CALLS",
    "R-FINISH-VALUE",
    "R-TOOLCALLS-STRUCTURED",
    "R-TOOL-CHOICE",
    "R-PARALLEL-DISABLED",
    "R-ROUNDTRIP-IDS",
    "R-ROUNDTRIP-ACCEPTED",
    "R-TOOL-DECLARED",
    "R-LENGTH-CUT",
]
TOOL_RULES = [
    "R-INDEX-PRESENT",
    "R-INDEX-DISTINCT",
    "R-FIRST-ID",
    "R-FIRST-TYPE",
    "R-FIRST-NAME",
    "R-FIRST-ARGS",
    "R-CONT-ID-ABSENT",
    "R-CONT-TYPE-ABSENT",
    "R-CONT-NAME-ABSENT",
    "R-ARGS-STRING",
    "R-ARGS-JSON",
    "R-FINISH-TOOL-CALLS",
    "R-LENGTH-CUT",
]
STREAM_RULES = [
    "R-CHUNK-OBJECT",
    "R-NO-ERROR",
    "R-FINISH-PRESENT",
    "R-FINISH-VALUE",
    "R-TOOLCALLS-STRUCTURED",
]
NA = "not applicable"


def outcomes(passing: list[str]) -> dict[str, str]:
    return {rid: ("pass" if rid in passing else NA) for rid in ALL}


REQ = {
    "model": "m",
    "stream": True,
    "messages": [{"role": "user", "content": "hi"}],
    "tools": [WEATHER],
}
SSE_HTTP = [
    "R-COMPLETE",
    "R-HTTP-OK",
    "R-SSE-CONTENT-TYPE",
    "R-SSE-WELL-FORMED",
    "R-SSE-DATA-JSON",
    "R-SSE-DONE",
]


def test_rules_of_a_bare_jsonl_stream() -> None:
    r = analyze_chunks(S.chunks(S.REFERENCE_SINGLE_JSONL))
    assert r.rules == outcomes(STREAM_RULES + TOOL_RULES)


def test_rules_of_no_event_at_all() -> None:
    assert analyze_chunks([]).rules == outcomes([])


def test_rules_of_a_text_answer_over_sse_with_a_request() -> None:
    r = analyze_bytes(
        S.REFERENCE_TEXT_SSE.encode(),
        status=200,
        request={**REQ, "tool_choice": "auto", "parallel_tool_calls": True},
    )
    assert r.rules == outcomes(SSE_HTTP + STREAM_RULES)


def test_rules_of_the_reference_call_under_a_full_request() -> None:
    req = {
        **REQ,
        "stream_options": {"include_usage": True},
        "tool_choice": "required",
        "parallel_tool_calls": False,
    }
    r = analyze_bytes(S.REFERENCE_SINGLE_SSE.encode(), status=200, request=req)
    assert r.rules == outcomes(
        SSE_HTTP
        + STREAM_RULES
        + TOOL_RULES
        + ["R-USAGE", "R-TOOL-CHOICE", "R-PARALLEL-DISABLED", "R-TOOL-DECLARED"]
    )


@pytest.mark.parametrize(
    "request_, status, passing",
    [
        ({**REQ, "tool_choice": "none"}, 200, ["R-TOOL-CHOICE"]),
        # a text answer to a named or required tool choice, no usage when asked: judged, failed
        (
            {**REQ, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
            200,
            ["R-TOOL-CHOICE=fail"],
        ),
        ({**REQ, "tool_choice": "required"}, 200, ["R-TOOL-CHOICE=fail"]),
        ({**REQ, "tool_choice": "auto"}, 200, []),
        ({**REQ, "stream_options": {"include_usage": True}}, 200, ["R-USAGE=fail"]),
        ({**REQ, "stream_options": {"include_usage": False}}, 200, []),
        ({**REQ, "stream": False}, 200, []),  # no stream asked: neither content type nor usage
        ({**REQ, "parallel_tool_calls": False}, 200, ["R-PARALLEL-DISABLED"]),
        ({**REQ, "parallel_tool_calls": None}, 200, []),
        ({**REQ, "tools": []}, 200, []),
        (REQ, None, []),  # no status: neither the content type nor the round trip is judged
    ],
)
def test_request_dependent_rules(
    request_: dict[str, Any], status: int | None, passing: list[str]
) -> None:
    moved = [
        "R-SSE-CONTENT-TYPE",
        "R-USAGE",
        "R-TOOL-CHOICE",
        "R-PARALLEL-DISABLED",
        "R-TOOL-DECLARED",
    ]
    r = analyze_bytes(S.REFERENCE_TEXT_SSE.encode(), status=status, request=request_)
    got = {rid: r.rules[rid] for rid in moved}
    base = ["R-SSE-CONTENT-TYPE"] if status is not None and request_.get("stream") else []
    want = {rid: ("pass" if rid in passing + base else NA) for rid in moved}
    want.update(p.split("=") for p in passing if "=" in p)
    assert got == want


def test_tool_declared_needs_a_tool_delta() -> None:
    r = analyze_bytes(S.REFERENCE_SINGLE_SSE.encode(), status=200, request=REQ)
    assert r.rules["R-TOOL-DECLARED"] == "pass"
    r = analyze_bytes(S.REFERENCE_TEXT_SSE.encode(), status=200, request=REQ)
    assert r.rules["R-TOOL-DECLARED"] == NA


def test_usage_asked_but_no_event() -> None:
    t = Transcript(
        "<t>",
        "live",
        True,
        lambda: iter(()),
        request={"body": {**REQ, "stream_options": {"include_usage": True}}},
        transport_error="refused",
    )
    r = analyze(t)
    assert (
        r.rules["R-USAGE"],
        r.rules["R-HTTP-OK"],
        r.rules["R-COMPLETE"],
        r.rules["R-SSE-CONTENT-TYPE"],
    ) == (NA, "pass", "fail", NA)


def test_a_round_trip_with_a_status_judges_both_round_trip_rules() -> None:
    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": ID_W}]},
        {"role": "tool", "tool_call_id": ID_W, "content": "12 C"},
    ]
    r = analyze_bytes(S.REFERENCE_TEXT_SSE.encode(), status=200, request={**REQ, "messages": msgs})
    assert (r.rules["R-ROUNDTRIP-IDS"], r.rules["R-ROUNDTRIP-ACCEPTED"]) == ("pass", "pass")


def test_length_visible_is_judged_once_arguments_were_cut() -> None:
    cut = S.chunks(S.ARGS_CUT_BY_LENGTH)
    assert analyze_chunks(cut, request={**REQ, "max_tokens": 8}).rules["R-LENGTH-VISIBLE"] == "pass"
    assert analyze_chunks(cut, request=REQ).rules["R-LENGTH-VISIBLE"] == NA
    whole = S.chunks(S.REFERENCE_SINGLE_JSONL)
    assert analyze_chunks(whole, request={**REQ, "max_tokens": 8}).rules["R-LENGTH-VISIBLE"] == NA


def test_a_request_that_is_not_an_object_is_no_request() -> None:
    t = Transcript(
        "<t>",
        "jsonl",
        False,
        lambda: iter([Event(0, CHUNK, None, "", ROLE)]),
        request={"body": "stream=true"},
    )
    r = analyze(t)
    assert r.rules["R-USAGE"] == NA and r.rules["R-TOOL-CHOICE"] == NA


def test_n_that_is_not_a_number_reads_as_one() -> None:
    r = analyze_chunks(
        [ROLE, chunk({"content": "x"}, index=1), chunk({}, "stop")],
        request={"n": "2", "stream": True},
    )
    assert [f["quirk"] for f in found(r)] == ["Q-CHUNK-ID-UNSTABLE"]


# ============================================================================== helpers


@pytest.mark.parametrize(
    "call, key",
    [
        ({"id": "a", "name": "f", "arguments": '{"b": 1, "a": 2}'}, ("a", "f", '{"a": 2, "b": 1}')),
        ({"id": None, "name": None, "arguments": "{bad"}, ("", "", "{bad")),
        ({"arguments": {"a": 1}}, ("", "", "{'a': 1}")),
        ({}, ("", "", "None")),
    ],
)
def test_call_key(call: dict[str, Any], key: tuple[str, str, str]) -> None:
    assert _call_key(call) == key


@pytest.mark.parametrize(
    "got, want, text",
    [
        ([], [{"id": "a"}], "0 call(s) instead of 1"),
        ([{"id": "a", "name": "f"}], [{"id": "b", "name": "f"}], "call 0: id 'a' instead of 'b'"),
        ([{"id": None, "name": "f"}], [{"id": "", "name": "g"}], "call 0: name 'f' instead of 'g'"),
        (
            [
                {"id": "a", "name": "f", "arguments": '{"a":1}'},
                {"id": "b", "name": "f", "arguments": "x" * 70},
            ],
            [
                {"id": "a", "name": "f", "arguments": '{"a": 1}'},
                {"id": "b", "name": "f", "arguments": "{}"},
            ],
            "call 1: arguments '" + "x" * 59 + "…'",
        ),
        ([{"id": "a"}], [{"id": "a"}], "calls differ"),
    ],
)
def test_diff_calls(got: list[dict[str, Any]], want: list[dict[str, Any]], text: str) -> None:
    assert _diff_calls(got, want) == text


def test_analyze_bytes_defaults_to_an_sse_content_type() -> None:
    r = analyze_bytes(S.REFERENCE_TEXT_SSE.encode())
    assert (r.verdict, r.events, r.rules["R-SSE-DONE"]) == ("conforms", 4, "pass")
    r = analyze_bytes(S.REFERENCE_TEXT_SSE.encode(), source="x.sse", headers={})
    assert (r.source, r.rules["R-SSE-DONE"]) == ("x.sse", "pass")


def test_analyze_chunks_source_and_request() -> None:
    r = analyze_chunks(
        [ROLE, chunk({}, "stop")],
        source="s.jsonl",
        request={"stream": True, "stream_options": {"include_usage": True}},
    )
    assert (r.source, r.rules["R-USAGE"]) == ("s.jsonl", "fail")


# ============================================================================== which path


def paths(
    monkeypatch: pytest.MonkeyPatch, cs: list[Any], request: dict[str, Any] | None = None
) -> list[str]:
    """The path each chunk took: "full" (seen by the chunk detectors), or on the steady
    path "fragment" (the fragment detectors only), "text" (the text detectors only),
    "delta" (the tool-delta detectors only) or "finish" (the finish detectors only): a
    stream's cost depends on it."""
    from conformance.analysis import analyzer

    seen: dict[int, str] = {}

    def spy(label: str, pos: int) -> Any:
        def record(*args: Any) -> None:
            seen.setdefault(args[pos], label)

        return record

    for hook, label, pos in (
        ("CHUNK_DETECTORS", "full", 2),
        ("FRAGMENT_DETECTORS", "fragment", 3),
        ("TEXT_DETECTORS", "text", 2),
        ("FINISH_DETECTORS", "finish", 3),
        ("TOOL_DELTA_DETECTORS", "delta", 4),
    ):
        monkeypatch.setattr(analyzer, hook, [spy(label, pos), *getattr(analyzer, hook)])
    analyze_chunks(cs, request=request)
    return [seen.get(n, "none") for n in range(len(cs))]


def test_clean_chunks_after_the_first_take_the_steady_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = chunk({"content": "a"})
    assert paths(monkeypatch, [ROLE, text, OPEN, *PARIS, text, END]) == [
        "full",
        "text",
        "delta",
        *["fragment"] * 4,
        "text",
        "finish",
    ]


def _choice(c: dict[str, Any], **kw: Any) -> dict[str, Any]:
    ch = {**c["choices"][0], **kw}
    return {**c, "choices": [{k: v for k, v in ch.items() if v is not ...}]}


def _delta(c: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    return _choice(c, delta=delta)


F1 = PARIS[1]
ARGS = {"arguments": 'ty": '}
DEVIANT = {
    "two choices": {**F1, "choices": [F1["choices"][0], {**F1["choices"][0], "index": 1}]},
    "choice without index": _choice(F1, index=...),
    "finishReason key": _choice(F1, finishReason=None),
    "role in the delta": _delta(
        F1, {"role": "assistant", "tool_calls": [{"index": 0, "function": ARGS}]}
    ),
    "two tool calls": _delta(
        F1,
        {
            "tool_calls": [
                {"index": 0, "function": ARGS},
                {"index": 0, "function": {"arguments": ""}},
            ]
        },
    ),
    "tool call with an id": _delta(
        F1, {"tool_calls": [{"index": 0, "id": ID_W, "function": ARGS}]}
    ),
    "tool call with a type only": _delta(
        F1, {"tool_calls": [{"type": "function", "function": ARGS}]}
    ),
    "function with a name": _delta(
        F1, {"tool_calls": [{"index": 0, "function": {"name": "get_weather", **ARGS}}]}
    ),
    "function as a list": _delta(F1, {"tool_calls": [{"index": 0, "function": [ARGS]}]}),
    "index as a string": _delta(F1, {"tool_calls": [{"index": "0", "function": ARGS}]}),
    "empty fragment": _delta(F1, {"tool_calls": [{"index": 0, "function": {"arguments": ""}}]}),
    "object arguments": _delta(
        F1, {"tool_calls": [{"index": 0, "function": {"arguments": {"city": "Paris"}}}]}
    ),
    "tool_calls an object": _delta(F1, {"tool_calls": {"index": 0, "function": ARGS}}),
    "tool call a list": _delta(F1, {"tool_calls": [[0, ARGS]]}),
    "delta a list": _delta(F1, [{"tool_calls": [{"index": 0, "function": ARGS}]}]),
    "choice a list": {**F1, "choices": [[F1["choices"][0]]]},
    "choices an object": {**F1, "choices": F1["choices"][0]},
    "another chunk key": {**F1, "service_tier": "default"},
    "a chunk key less": {k: v for k, v in F1.items() if k != "created"},
    "another key for one": {**{k: v for k, v in F1.items() if k != "created"}, "zzz": 1},
    "another choice key for one": _choice(F1, logprobs=..., zzz=None),
    "another created": {**F1, "created": 2},
    "another choice key": _choice(F1, logprobs=...),
    "another choice index": _choice(F1, index=1),
    "an index never opened": frag('ty": ', 1),
}


# The chunks whose envelope, choice or delta is not a steady one: judged in full (a clean
# one with other keys or values is the template after it).
RETEMPLATE = {
    "another chunk key",
    "another created",
    "another choice key",
    "another choice key for one",
}
# One tool-call delta with the standard keys that is no bare fragment on an open index:
# judged by the tool-delta detectors (the chunk and choice detectors find nothing on it).
DELTA = {
    "tool call with an id",
    "tool call with a type only",
    "function with a name",
    "function as a list",
    "index as a string",
    "empty fragment",
    "object arguments",
    "an index never opened",
}


@pytest.mark.parametrize("name", DEVIANT)
def test_a_chunk_unlike_the_template_leaves_the_fragment_path(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    got = paths(monkeypatch, [ROLE, OPEN, PARIS[0], DEVIANT[name], PARIS[2], END])
    after = "full" if name in RETEMPLATE else "fragment"
    want = "delta" if name in DELTA else "full"
    # (a chunk judged in full after a new template is the template again: the finish is
    # in its envelope)
    assert got == ["full", "delta", "fragment", want, after, "finish"]


def test_keys_besides_the_values_are_compared(monkeypatch: pytest.MonkeyPatch) -> None:
    # every chunk has service_tier, but one has another key in its place (as many keys):
    # judged in full, it is the template the next one is unlike
    tier = [{**c, "service_tier": "default"} for c in (ROLE, OPEN, *PARIS)]
    other = {**PARIS[2], "zzz": "default"}
    assert paths(monkeypatch, [*tier[:4], other, tier[5], END]) == [
        "full",
        "delta",
        "fragment",
        "fragment",
        "full",
        "full",
        "full",
    ]


def test_no_steady_path_after_the_finish_nor_with_n_2(monkeypatch: pytest.MonkeyPatch) -> None:
    stop_in_between = chunk({}, "tool_calls")
    assert paths(monkeypatch, [ROLE, OPEN, PARIS[0], stop_in_between, PARIS[1]]) == [
        "full",
        "delta",
        "fragment",
        "finish",
        "full",
    ]
    assert paths(monkeypatch, [ROLE, OPEN, *PARIS, END], {"n": 2}) == ["full"] * 7


def test_a_chunk_with_a_finding_is_no_template(monkeypatch: pytest.MonkeyPatch) -> None:
    # each of these chunks is judged, and counted, on its own
    cs = [{**c, "model": ""} for c in (ROLE, OPEN, *PARIS)] + [END]
    assert paths(monkeypatch, cs) == ["full"] * 7
    assert found(analyze_chunks(cs)) == [
        F(
            "Q-ENVELOPE-FIELDS-MISSING",
            "SHOULD",
            "Q-ENVELOPE-FIELDS-MISSING",
            0,
            "/model",
            "chunk without model",
            count=6,
        )
    ]


@pytest.mark.parametrize(
    "delta",
    [
        {"content": ""},
        {"content": None},
        {"content": 7},
        {"content": "a", "role": "assistant"},
        {"content": "a", "reasoning_content": "b"},
        {"reasoning_content": "b"},
        {"refusal": "no"},
        {},
    ],
)
def test_a_delta_that_is_not_plain_text_is_judged_in_full(
    monkeypatch: pytest.MonkeyPatch, delta: dict[str, Any]
) -> None:
    assert paths(monkeypatch, [ROLE, chunk(delta), chunk({"content": "a"})]) == [
        "full",
        "full",
        "text",
    ]


@pytest.mark.parametrize(
    "end",
    [
        chunk({"content": "a"}, "stop"),
        chunk({"role": "assistant"}, "stop"),
        chunk({}, ""),
        chunk({}, 7),
    ],
)
def test_a_finish_that_is_not_an_empty_delta_and_a_reason_is_judged_in_full(
    monkeypatch: pytest.MonkeyPatch, end: dict[str, Any]
) -> None:
    text = chunk({"content": "a"})
    assert paths(monkeypatch, [ROLE, text, chunk({}, "stop")]) == ["full", "text", "finish"]
    assert paths(monkeypatch, [ROLE, text, end]) == ["full", "text", "full"]


def test_a_clean_chunk_that_makes_no_template_leaves_the_last_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a chunk without choices is clean (an empty chunk is counted, not a finding) and has
    # no choice to compare with: the role chunk's template still holds for the text after it
    text = chunk({"content": "a"})
    assert paths(monkeypatch, [ROLE, chunk(None), text]) == ["full", "full", "text"]
    assert found(analyze_chunks([ROLE, chunk(None), text, chunk({}, "stop")])) == []


def test_a_call_the_first_choice_never_showed_is_read_on_the_steady_path() -> None:
    # The second choice opens call 1: the naive and guarded readings (choices[0] only)
    # never saw its opener, so its first fragment, on the steady path, starts their entry.
    second = {
        **ROLE,
        "choices": [
            {"index": 0, "delta": {"content": "x"}, "logprobs": None, "finish_reason": None},
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": ID_T,
                            "type": "function",
                            "function": {"name": "get_time", "arguments": ""},
                        }
                    ]
                },
                "logprobs": None,
                "finish_reason": None,
            },
        ],
    }
    r = analyze_chunks(
        [ROLE, OPEN, PARIS[0], second, frag('{"tz": "UTC"}', 1), PARIS[1], PARIS[2], PARIS[3], END]
    )
    paris = (ID_W, "get_weather", '{"city": "Paris"}')
    assert calls(r) == {
        "naive": [paris, ("", "", '{"tz": "UTC"}')],
        "guarded": [paris, ("", "", '{"tz": "UTC"}')],
        "robust": [paris, (ID_T, "get_time", '{"tz": "UTC"}')],
    }
    why = f"call 1: id '' instead of '{ID_T}'"
    assert impact(r) == {"naive": ("wrong", why), "guarded": ("wrong", why), "robust": ("ok", "")}


# ============================================================================== robust notes

NO_ARGS_NOTE = "no arguments streamed; sent as {}"


def test_notes_after_one_reported_by_its_own_detector_are_still_reported() -> None:
    # Q-NAME-FRAGMENTED is the detector's (with its pointer); call 1's note follows it
    r = analyze_chunks(
        [
            ROLE,
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": ID_W,
                            "type": "function",
                            "function": {"name": "get_", "arguments": ""},
                        }
                    ]
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"name": "weather"}}]}),
            frag('{"city": "Paris"}'),
            opener(1, ID_T, "get_time"),
            END,
        ]
    )
    assert found(r) == [
        F(
            "R-CONT-NAME-ABSENT",
            "INFO",
            "Q-NAME-FRAGMENTED",
            2,
            "/choices/0/delta/tool_calls/0/function/name",
            "the name continued with 'weather'",
            '{"index":0,"function":{"name":"weather"}}',
        ),
        F("Q-ARGS-ABSENT-NO-PARAMS", "SHOULD", "Q-ARGS-ABSENT-NO-PARAMS", 4, None, NO_ARGS_NOTE),
    ]


def test_notes_after_one_a_detector_reported_already_are_still_reported() -> None:
    r = analyze_chunks(
        [
            ROLE,
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": ID_W,
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                        }
                    ]
                }
            ),
            opener(1, ID_T, "get_time"),
            END,
        ]
    )
    assert [(f["rule"], f["quirk"], f["event"]) for f in found(r)] == [
        ("R-ARGS-STRING", "Q-ARGS-JSON-OBJECT", 1),
        ("Q-ARGS-ABSENT-NO-PARAMS", "Q-ARGS-ABSENT-NO-PARAMS", 2),
    ]


def test_notes_after_a_transport_cut_call_are_still_reported() -> None:
    t = Transcript(
        "<t>",
        "live",
        False,
        lambda: iter(
            [
                Event(i, CHUNK, None, "", c)
                for i, c in enumerate(
                    [ROLE, OPEN, frag('{"city": "Par'), opener(1, ID_T, "get_time")]
                )
            ]
        ),
        status=200,
        transport_error="connection reset",
    )
    assert found(analyze(t)) == [
        F("Q-ARGS-ABSENT-NO-PARAMS", "SHOULD", "Q-ARGS-ABSENT-NO-PARAMS", 3, None, NO_ARGS_NOTE),
        F("R-COMPLETE", "MUST", None, None, None, "connection reset"),
    ]


def test_a_note_on_a_steady_fragment_carries_its_event_number() -> None:
    # the comment is event 0: the chunks are events 1 to 5, the first cumulative resend 3
    sse = (
        ": hi\n\n"
        + "".join(f"data: {line}\n\n" for line in S.ARGS_CUMULATIVE.splitlines())
        + "data: [DONE]\n\n"
    )
    assert found(analyze_bytes(sse.encode())) == [
        F(
            "Q-SSE-COMMENT-KEEPALIVE",
            "SHOULD",
            "Q-SSE-COMMENT-KEEPALIVE",
            0,
            None,
            "SSE comment line ': hi'",
            ": hi",
        ),
        F(
            "R-ARGS-JSON",
            "MUST",
            "Q-ARGS-CUMULATIVE",
            3,
            None,
            "arguments re-sent in full on each delta",
        ),
    ]


def test_a_call_that_never_got_a_name_leaves_the_robust_client_nothing() -> None:
    r = analyze_chunks([ROLE, opener(0, ID_W, "", "{}"), END])
    assert impact(r) == {
        "naive": ("ok", ""),
        "guarded": ("ok", ""),
        "robust": ("unrecoverable", "Q-NAME-NEVER-SENT"),
    }  # no declared tool to take the name from
    assert r.verdict == "fails"


def test_every_quirk_the_robust_client_could_not_repair_is_named() -> None:
    time_required = {
        "type": "function",
        "function": {
            "name": "get_time",
            "parameters": {
                "type": "object",
                "properties": {"tz": {"type": "string"}},
                "required": ["tz"],
            },
        },
    }
    r = analyze_chunks(
        [ROLE, opener(0, ID_W, "get_weather", "not json"), opener(1, ID_T, "get_time"), END],
        request={"tools": [WEATHER, time_required], "stream": True},
    )
    assert impact(r)["robust"] == (
        "unrecoverable",
        "Q-ARGS-INVALID-JSON, Q-ARGS-LOST-MULTITOKEN-DELTA",
    )


def test_one_event_is_a_stream_to_judge() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    one = chunk({"role": "assistant", "content": "Hi."}, "stop", usage=usage)
    r = analyze_chunks([one], request={"stream": True, "stream_options": {"include_usage": True}})
    assert (
        r.events,
        r.rules["R-CHUNK-OBJECT"],
        r.rules["R-FINISH-PRESENT"],
        r.rules["R-USAGE"],
    ) == (1, "pass", "pass", "pass")
