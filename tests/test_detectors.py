"""Negative controls: every quirk the analyzer can report has a stream that must trigger it.

One case per catalogue id that appears in ``conformance/analysis/`` or
``conformance/client.py`` (the list is read from the source, so a new detector without a
control fails ``test_every_reportable_quirk_has_a_control``). Each case is a literal stream
from ``tests/streams.py`` (written from the catalogue's wire example) and what a reader of
the catalogue expects of it: the exact set of quirks (so a detector that fires on the
wrong stream fails too), the event and JSON pointer of the finding, and the verdict.
Clean reference streams (catalogue §1) must trigger nothing above INFO. Every rule of
``rules.RULES`` has a failing input, a passing one, and one on which it is "not
applicable".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import streams as S

from conformance import registry
from conformance.analysis import CaptureResult, analyze, analyze_bytes, analyze_chunks
from conformance.rules import INFO, RULES, quirk_level
from conformance.sse import parse_sse_bytes
from conformance.transcript import CHUNK, Event, Transcript

PACKAGE = Path(__file__).resolve().parent.parent / "conformance"
JSON_HEADERS = {"content-type": "application/json"}


def run(
    stream: str,
    *,
    request: dict[str, Any] | None = None,
    status: int | None = None,
    headers: dict[str, str] | None = None,
    transport_error: str | None = None,
    transport_quirk: str | None = None,
    comparison: dict[str, Any] | None = None,
) -> CaptureResult:
    """SSE text goes through the SSE door (with framing), JSONL through the chunk door; a
    transport error makes a live transcript of the SSE bytes (what the transport hands on)."""
    if transport_error is not None:
        events = parse_sse_bytes(stream.encode())
        t = Transcript(
            "live",
            "live",
            True,
            lambda: iter(events),
            status=200,
            headers={"content-type": "text/event-stream"},
            transport_error=transport_error,
        )
        if transport_quirk:
            t.meta["transport_quirk"] = transport_quirk
        return analyze(t)
    if comparison is not None:  # the runner's stream-false comparison, on the transcript
        evs = [Event(i, CHUNK, None, "", c) for i, c in enumerate(S.chunks(stream))]
        req = {"body": request} if request is not None else None
        t = Transcript("<chunks>", "jsonl", False, lambda: iter(evs), request=req)
        t.meta["stream_comparison"] = comparison
        return analyze(t)
    if status is not None or stream.lstrip().startswith(("data:", ":", "event:")):
        return analyze_bytes(stream.encode(), request=request, status=status, headers=headers)
    return analyze_chunks(S.chunks(stream), request=request)


def reportable_quirks() -> set[str]:
    """The ids the analyzer's detectors and the robust client declare (``detector(fn, ...)``,
    ``works_around(fn, ...)``), read from the registry rather than from the source text."""
    return {
        q
        for q, rs in registry.load_reporters().items()
        if any(r.module.startswith(("conformance.analysis", "conformance.client")) for r in rs)
    }


@dataclass(frozen=True)
class Case:
    stream: str
    quirks: frozenset[str]  # exactly what the stream shows (the target included)
    event: int | None  # of the target's first finding
    pointer: str | None
    verdict: str
    request: dict[str, Any] | None = None
    status: int | None = None
    headers: dict[str, str] | None = field(default=None, hash=False)
    why: str = ""  # why the other quirks in `quirks` are on this stream
    transport_error: str | None = None  # what the transport met (a stall), with its quirk
    transport_quirk: str | None = None
    comparison: dict[str, Any] | None = field(default=None, hash=False)  # stream false's


def case(stream, also=(), *, event, pointer=None, verdict="quirk", **kw) -> tuple:
    return stream, frozenset(also), event, pointer, verdict, kw


def tc(k: int = 0, field: str = "") -> str:
    return f"/choices/0/delta/tool_calls/{k}" + (f"/{field}" if field else "")


REQUIRED = {"model": "m", "stream": True, "tools": S.TOOLS_WEATHER, "tool_choice": "required"}
SHOWED_CALLS = {"made": True, "tool_calls": 1}  # the same request with stream false had a call
ROUNDTRIP = dict(request=S.ROUNDTRIP_REQUEST, status=400, headers=JSON_HEADERS)
TOOLCALLS_NOT_ARRAY = """\
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":{"index":0,"id":"call_Ab3dEf6hIj9kLm2nOp5qRs8t","type":"function","function":{"name":"get_weather","arguments":""}}},"finish_reason":null}]}
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":{"index":0,"function":{"arguments":"{\\"city\\":\\"Paris\\"}"}}},"finish_reason":null}]}
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""
NAME_NEVER_SENT = """\
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_Ab3dEf6hIj9kLm2nOp5qRs8t","type":"function","function":{"arguments":""}}]},"finish_reason":null}]}
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\":\\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""
INDEX_AND_ID_REUSED = """\
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_Ab3dEf6hIj9kLm2nOp5qRs8t","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\":\\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_Ab3dEf6hIj9kLm2nOp5qRs8t","type":"function","function":{"name":"get_time","arguments":""}}]},"finish_reason":null}]}
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"tz\\":\\"UTC\\"}"}}]},"finish_reason":null}]}
{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""
TOOLS_WEATHER_TIME = [
    *S.TOOLS_WEATHER,
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
        },
    },
]
TWO_TOOLS = {"model": "m", "stream": True, "tools": TOOLS_WEATHER_TIME}
# When each line of S.REFERENCE_SINGLE_SSE arrived (tests/test_timing.py): the role at
# 0.2 s, a silence, the call in one burst; the finish later (not progressive) or with it.
TIMED_NOT_PROGRESSIVE = {
    "content-type": "text/event-stream",
    "x-conformance-line-times": "2:0.200 8:2.500 14:5.000",
}
TIMED_HELD = {"content-type": "text/event-stream", "x-conformance-line-times": "2:0.200 14:2.500"}
WHOLE = "Q-ARGS-WHOLE-IN-ONE-DELTA"  # INFO: a stream written with one delta per call

_CASES: dict[str, tuple] = {
    # --- A. framing
    "Q-SSE-COMMENT-KEEPALIVE": case(S.SSE_COMMENT_KEEPALIVE, event=0),
    "Q-SSE-KEEPALIVE-AS-DATA": case(S.SSE_KEEPALIVE_AS_DATA, event=0),
    "Q-SSE-DONE-MISSING": case(
        S.SSE_DONE_MISSING,
        {WHOLE, "Q-ID-FORMAT"},
        event=1,
        why="Cerebras sends both calls whole in one delta, with 9-character ids",
    ),
    "Q-SSE-ERROR-ENVELOPE": case(S.SSE_ERROR_ENVELOPE, event=2, pointer="/error", verdict="error"),
    "Q-SSE-ERROR-IN-CHUNK": case(S.SSE_ERROR_IN_CHUNK, event=2, pointer="/error", verdict="error"),
    "Q-STREAM-TOOLS-UNSUPPORTED": case(
        S.BODY_TOOLS_UNSUPPORTED,
        event=None,
        verdict="error",
        request={"model": "m", "stream": True, "tools": S.TOOLS_WEATHER},
        status=500,
        headers=JSON_HEADERS,
    ),
    "Q-STREAM-OPTIONS-REJECTED": case(
        S.BODY_STREAM_OPTIONS_REJECTED,
        event=None,
        verdict="error",
        request={"model": "m", "stream": True, "stream_options": {"include_usage": True}},
        status=400,
        headers=JSON_HEADERS,
    ),
    "Q-STREAM-DOWNGRADED": case(
        S.BODY_STREAM_DOWNGRADED,
        event=None,
        request={"model": "m", "stream": True, "tools": S.TOOLS_WEATHER},
        status=200,
        headers=JSON_HEADERS,
    ),
    # --- B. envelope
    "Q-USAGE-EMPTY-CHOICES": case(
        S.REFERENCE_SINGLE_JSONL, event=5, pointer="/choices", verdict="conforms"
    ),
    "Q-USAGE-PLACEMENT": case(
        S.USAGE_PLACEMENT,
        {WHOLE, "Q-USAGE-EMPTY-CHOICES"},
        event=1,
        pointer="/usage",
        why="Groq's second usage chunk is the reference `choices: []` shape",
    ),
    "Q-AZURE-PROMPT-FILTER-CHUNK": case(S.AZURE_PROMPT_FILTER_CHUNK, event=0, pointer="/choices"),
    "Q-AZURE-CHOICE-WITHOUT-DELTA": case(
        S.AZURE_CHOICE_WITHOUT_DELTA, {WHOLE}, event=1, pointer="/choices/0"
    ),
    "Q-ENVELOPE-FIELDS-MISSING": case(
        S.ENVELOPE_FIELDS_MISSING, {WHOLE}, event=0, pointer="/choices/0"
    ),
    "Q-CHUNK-ID-UNSTABLE": case(S.CHUNK_ID_UNSTABLE, event=1, pointer="/id"),
    "Q-EXTRA-FIELDS": case(S.EXTRA_FIELDS, {WHOLE}, event=1, verdict="conforms"),
    "Q-TOOLCALLS-EMPTY-ARRAY": case(
        S.TOOLCALLS_EMPTY_ARRAY, {WHOLE}, event=0, pointer="/choices/0/delta/tool_calls"
    ),
    "Q-EMPTY-DELTA-CHUNKS": case(S.EMPTY_DELTA_CHUNKS, event=1, verdict="conforms"),
    # --- C. index
    "Q-INDEX-ABSENT": case(S.INDEX_ABSENT, event=0, pointer=tc(0, "index")),
    "Q-INDEX-ABSENT-WHOLE-CALL": case(
        S.INDEX_ABSENT_WHOLE_CALL,
        {"Q-ENVELOPE-FIELDS-MISSING", "Q-EXTRA-FIELDS", "Q-ID-FORMAT"},
        event=0,
        why="Gemini sends no chunk id, an `extra_content` thought signature and `call_297140`",
    ),
    "Q-INDEX-ABSENT-PARALLEL-SPLIT": case(
        S.INDEX_ABSENT_PARALLEL_SPLIT,
        {"Q-FINISH-STOP-WITH-TOOLCALLS", "Q-ID-FORMAT"},
        event=0,
        why='the catalogue example ends with "stop" and uses `function-call-N` ids',
    ),
    "Q-INDEX-NONZERO-START": case(S.INDEX_NONZERO_START, event=1, pointer=tc(0, "index")),
    "Q-INDEX-ALL-ZERO": case(S.INDEX_ALL_ZERO, {WHOLE}, event=1, pointer=tc(0, "index")),
    "Q-INDEX-REUSED-ACROSS-CALLS": case(
        S.INDEX_REUSED_NEW_ID, {WHOLE}, event=2, pointer=tc(0, "index")
    ),
    "Q-INDEX-INCONSISTENT-WITHIN-CALL": case(
        S.INDEX_INCONSISTENT_WITHIN_CALL,
        {"Q-INDEX-NONZERO-START"},
        event=1,
        pointer=tc(0),
        verdict="fails",
        why="LibreChat's argument index 1 is the only index of the call: no call uses 0",
    ),
    # --- D. id
    "Q-ID-ABSENT": case(S.ID_ABSENT, event=0, pointer=tc(0, "id")),
    "Q-EMPTY-STRING-OVERWRITE": case(S.EMPTY_STRING_OVERWRITE, event=1, pointer=tc(0, "id")),
    "Q-ID-REPEATED": case(S.ID_REPEATED, event=1, pointer=tc(0, "id")),
    "Q-ID-CHANGES-MID-CALL": case(S.ID_CHANGES_MID_CALL, event=1, pointer=tc(0, "id")),
    "Q-ID-FORMAT": case(S.ID_FORMAT, event=0, pointer=tc(0, "id"), verdict="conforms"),
    # --- E. type, name
    "Q-TYPE-MISSING": case(S.TYPE_MISSING, event=0, pointer=tc(0, "type")),
    "Q-NAME-REPEATED": case(
        S.NAME_REPEATED,
        {"Q-ARGS-ON-OPENING-DELTA"},
        event=1,
        pointer=tc(0, "function/name"),
        why='llama.cpp sends `{"` with the name on the first delta',
    ),
    "Q-NAME-EMPTY-OPENING-DELTA": case(
        S.NAME_EMPTY_OPENING_DELTA,
        {"Q-ID-REPEATED"},
        event=0,
        pointer=tc(0, "function/name"),
        why="vmlx repeats the id on the delta that brings the name",
    ),
    "Q-NAME-AFTER-ARGUMENTS": case(
        S.NAME_AFTER_ARGUMENTS,
        {"Q-ARGS-ON-OPENING-DELTA"},
        event=0,
        pointer=tc(0, "function/name"),
        why="arguments before the name means the opening delta carries a fragment",
    ),
    "Q-NAME-FRAGMENTED": case(
        S.NAME_FRAGMENTED, event=1, pointer=tc(0, "function/name"), verdict="conforms"
    ),
    # --- F. arguments
    "Q-ARGS-WHOLE-IN-ONE-DELTA": case(
        S.ARGS_WHOLE_IN_ONE_DELTA, event=0, pointer=tc(0), verdict="conforms"
    ),
    "Q-ARGS-ON-OPENING-DELTA": case(
        S.ARGS_ON_OPENING_DELTA, event=0, pointer=tc(0, "function/arguments")
    ),
    "Q-ARGS-CUMULATIVE": case(S.ARGS_CUMULATIVE, event=2),
    "Q-ARGS-DUPLICATED-ON-FLUSH": case(S.ARGS_DUPLICATED_ON_FLUSH, event=0),
    "Q-ARGS-LOST-MULTITOKEN-DELTA": case(
        S.ARGS_LOST_MULTITOKEN_DELTA,
        event=0,
        verdict="fails",
        request={"model": "m", "stream": True, "tools": S.TOOLS_WEATHER},
    ),
    "Q-ARGS-ABSENT-NO-PARAMS": case(S.ARGS_ABSENT_NO_PARAMS, event=0),
    "Q-ARGS-INVALID-JSON": case(S.ARGS_SERVER_PARSER_CORRUPTION, event=0, verdict="fails"),
    "Q-ARGS-SERVER-PARSER-CORRUPTION": case(
        S.ARGS_SERVER_PARSER_CORRUPTION_SEEN,
        {"Q-TOOLCALL-DUPLICATED-IN-CONTENT"},
        event=1,
        verdict="fails",
        why="the model's own text in content is the evidence that the server parsed it",
    ),
    "Q-ARGS-INVENTED-ON-TRUNCATION": case(
        S.ARGS_INVENTED_ON_TRUNCATION,
        {WHOLE, "Q-FINISH-SAME-CHUNK-AS-CALL"},
        event=1,
        pointer=tc(0),
        request={"model": "m", "stream": True, "tools": S.TOOLS_WEATHER, "max_tokens": 14},
        why="vLLM sends the invented call whole, with the finish, in one chunk",
    ),
    "Q-ARGS-JSON-OBJECT": case(S.ARGS_JSON_OBJECT, event=0, pointer=tc(0, "function/arguments")),
    "Q-ARGS-NULL": case(S.ARGS_NULL, event=0, pointer=tc(0, "function/arguments")),
    # the suite's transport sent the request again on a new connection (it records why)
    "Q-KEEPALIVE-DROPPED": case(
        S.REFERENCE_SINGLE_SSE,
        ["Q-USAGE-EMPTY-CHOICES"],
        event=None,
        verdict="conforms",
        status=200,
        why="the reference stream ends with its usage chunk",
        headers={
            "content-type": "text/event-stream",
            "x-conformance-connection-retry": "the server dropped the kept-alive "
            "connection between two requests; sent again on a new connection",
        },
    ),
    "Q-ARGS-CONTROL-MARKUP": case(S.ARGS_CONTROL_MARKUP, event=1, verdict="fails"),
    "Q-TOOLCALLS-NOT-ARRAY": case(
        TOOLCALLS_NOT_ARRAY, event=1, pointer="/choices/0/delta/tool_calls"
    ),
    "Q-ARGS-NOT-PROGRESSIVE": case(
        S.REFERENCE_SINGLE_SSE,
        ["Q-USAGE-EMPTY-CHOICES"],
        event=1,
        pointer=tc(0, "function/arguments"),
        headers=TIMED_NOT_PROGRESSIVE,
    ),
    "Q-TOOLCALL-HELD-UNTIL-FINISH": case(
        S.REFERENCE_SINGLE_SSE,
        ["Q-ARGS-NOT-PROGRESSIVE", "Q-USAGE-EMPTY-CHOICES"],
        event=1,
        pointer=tc(0),
        headers=TIMED_HELD,
        why="the held call's two fragments arrive in the same burst; OpenAI's usage chunk",
    ),
    "Q-NAME-NEVER-SENT": case(
        NAME_NEVER_SENT, event=1, pointer=tc(0, "function/name"), verdict="fails", request=TWO_TOOLS
    ),
    "Q-INDEX-AND-ID-REUSED": case(
        INDEX_AND_ID_REUSED, event=3, pointer=tc(0, "index"), request=TWO_TOOLS
    ),
    "Q-STREAM-STALLS": case(
        S.REFERENCE_SINGLE_SSE[:400],
        event=None,
        verdict="error",
        transport_error="stalled: no byte for 30 s (limits.idle_timeout)",
        transport_quirk="Q-STREAM-STALLS",
    ),
    "Q-ARGS-TRUNCATED": case(S.ARGS_TRUNCATED, event=0),
    # --- G. finish
    "Q-FINISH-STOP-WITH-TOOLCALLS": case(S.FINISH_STOP_WITH_TOOLCALLS, event=2),
    "Q-FINISH-STOP-NAMED-TOOLCHOICE": case(
        S.FINISH_STOP_WITH_TOOLCALLS,
        event=2,
        verdict="conforms",
        request={
            "model": "m",
            "stream": True,
            "tools": S.TOOLS_WEATHER,
            "tool_choice": S.TOOL_CHOICE_WEATHER,
        },
    ),
    "Q-FINISH-TOOLCALLS-WITHOUT-DELTAS": case(
        S.FINISH_TOOLCALLS_WITHOUT_DELTAS, event=1, verdict="fails"
    ),
    "Q-FINISH-EMPTY-STRING": case(
        S.FINISH_EMPTY_STRING, event=0, pointer="/choices/0/finish_reason"
    ),
    "Q-FINISH-ON-NONFINAL-CHUNK": case(
        S.FINISH_ON_NONFINAL_CHUNK, {WHOLE}, event=1, pointer="/choices/0"
    ),
    "Q-FINISH-CAMELCASE": case(
        S.FINISH_CAMELCASE, {WHOLE}, event=1, pointer="/choices/0/finishReason"
    ),
    "Q-FINISH-NEVER-SENT": case(S.FINISH_NEVER_SENT, event=1),
    "Q-FINISH-REPEATED": case(
        S.FINISH_REPEATED, {WHOLE}, event=2, pointer="/choices/0/finish_reason"
    ),
    "Q-FINISH-SAME-CHUNK-AS-CALL": case(
        S.FINISH_SAME_CHUNK_AS_CALL, event=1, pointer="/choices/0/finish_reason"
    ),
    "Q-FINISH-NONSTANDARD-VALUE": case(
        S.FINISH_NONSTANDARD_VALUE, event=1, pointer="/choices/0/finish_reason"
    ),
    "Q-REQUIRED-NOT-ENFORCED": case(
        S.REQUIRED_NOT_ENFORCED, event=1, pointer="/choices/0/delta/content", request=REQUIRED
    ),
    # --- H. outside tool_calls
    "Q-TOOLCALL-AS-TEXT": case(S.TOOLCALL_AS_TEXT, event=0, verdict="fails"),
    "Q-TOOLCALL-DUPLICATED-IN-CONTENT": case(S.TOOLCALL_DUPLICATED_IN_CONTENT, {WHOLE}, event=0),
    "Q-TOOLCALLS-MISSING-IN-STREAM": case(
        S.TOOLCALLS_MISSING_IN_STREAM,
        event=None,
        verdict="fails",
        request=REQUIRED,
        comparison=SHOWED_CALLS,
    ),
    # --- I. reasoning
    "Q-REASONING-SAME-DELTA": case(S.REASONING_SAME_DELTA, event=0, pointer="/choices/0/delta"),
    "Q-REASONING-LEAK-AT-FINISH": case(
        S.REASONING_LEAK_AT_FINISH, {WHOLE}, event=2, pointer="/choices/0/delta/content"
    ),
    # --- K. request semantics
    "Q-PARALLEL-TOOL-CALLS-IGNORED": case(
        S.REFERENCE_PARALLEL_SSE,
        {"Q-USAGE-EMPTY-CHOICES"},
        event=None,
        request={"model": "m", "stream": True, "parallel_tool_calls": False},
        why="the reference stream (with its usage chunk) carrying two calls",
    ),
    "Q-OPENAI-MULTI-TOOL-USE-WRAPPER": case(
        S.OPENAI_MULTI_TOOL_USE_WRAPPER, event=0, pointer=tc(0, "function/name"), verdict="conforms"
    ),
    # --- J. round trip (the provider's answer to the follow-up request)
    "Q-RT-MISTRAL-TOOL-CALL-ID": case(
        S.RT_MISTRAL_TOOL_CALL_ID, event=None, verdict="error", **ROUNDTRIP
    ),
    "Q-RT-CONTENT-NULL-REJECTED": case(
        S.RT_CONTENT_NULL_REJECTED, event=None, verdict="error", **ROUNDTRIP
    ),
    "Q-RT-CONTENT-EMPTY-REJECTED": case(
        S.RT_CONTENT_EMPTY_REJECTED, event=None, verdict="error", **ROUNDTRIP
    ),
    "Q-RT-TOOL-MESSAGE-NAME": case(
        S.RT_TOOL_MESSAGE_NAME, event=None, verdict="error", **ROUNDTRIP
    ),
    "Q-RT-FUNCTION-NAME-KEY-REQUIRED": case(
        S.RT_FUNCTION_NAME_KEY_REQUIRED, event=None, verdict="error", **ROUNDTRIP
    ),
    "Q-RT-GEMINI-THOUGHT-SIGNATURE": case(
        S.RT_GEMINI_THOUGHT_SIGNATURE, event=None, verdict="error", **ROUNDTRIP
    ),
    "Q-REASONING-MUST-BE-ECHOED": case(
        S.RT_REASONING_MUST_BE_ECHOED, event=None, verdict="error", **ROUNDTRIP
    ),
}
CASES = {
    q: Case(stream, frozenset({q}) | also | registry.implied(q), ev, ptr, verdict, **kw)
    for q, (stream, also, ev, ptr, verdict, kw) in _CASES.items()
}


def test_every_reportable_quirk_has_a_control():
    reportable = reportable_quirks()
    assert len(reportable) > 60  # the scan itself works
    assert sorted(reportable - set(CASES)) == []
    assert sorted(set(CASES) - reportable) == []


@pytest.mark.parametrize("quirk", sorted(CASES))
def test_control_triggers_exactly_its_quirk(quirk):
    c = CASES[quirk]
    r = run(
        c.stream,
        request=c.request,
        status=c.status,
        headers=c.headers,
        transport_error=c.transport_error,
        transport_quirk=c.transport_quirk,
        comparison=c.comparison,
    )
    assert set(r.quirks) == c.quirks
    mine = [f for f in r.findings if f.quirk == quirk]
    assert mine, f"{quirk} is in quirks but no finding carries it"
    first = mine[0]
    assert (first.event, first.pointer) == (c.event, c.pointer), first
    expected_level = INFO if quirk == "Q-EXTRA-FIELDS" else quirk_level(quirk)
    assert {f.level for f in mine} == {expected_level}
    assert r.verdict == c.verdict, [f.to_json() for f in r.findings]


@pytest.mark.parametrize(
    "quirk", ["Q-ARGS-LOST-MULTITOKEN-DELTA", "Q-FINISH-STOP-NAMED-TOOLCHOICE"]
)
def test_request_decides_between_look_alike_quirks(quirk):
    """Without the request these two are indistinguishable from their look-alikes."""
    c = CASES[quirk]
    bare = run(c.stream)
    look_alike = {
        "Q-ARGS-LOST-MULTITOKEN-DELTA": "Q-ARGS-ABSENT-NO-PARAMS",
        "Q-FINISH-STOP-NAMED-TOOLCHOICE": "Q-FINISH-STOP-WITH-TOOLCALLS",
    }[quirk]
    assert set(bare.quirks) == {look_alike}
    assert look_alike not in run(c.stream, request=c.request).quirks


def test_missing_calls_need_a_forcing_request():
    """An empty turn under tool_choice "auto" is legitimate; under "required" it is the quirk."""
    auto = dict(REQUIRED, tool_choice="auto")
    assert run(S.TOOLCALLS_MISSING_IN_STREAM, request=auto).quirks == []
    assert run(S.TOOLCALLS_MISSING_IN_STREAM).quirks == []


# --------------------------------------------------------------------------- issue 13 ids

WEATHER_CUT = {"model": "m", "stream": True, "tools": S.TOOLS_WEATHER, "max_tokens": 14}
PING_TOOL = [
    {
        "type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
    }
]


def test_invented_arguments_need_a_cut_and_a_tool_that_wants_parameters():
    invented = "Q-ARGS-INVENTED-ON-TRUNCATION"
    # the same "{}" for a declared tool without parameters is a whole call
    no_params = dict(WEATHER_CUT, tools=PING_TOOL)
    assert invented not in run(S.ARGS_INVENTED_ON_TRUNCATION, request=no_params).quirks
    # ... and with finish_reason "tool_calls" nothing was cut
    whole = S.ARGS_INVENTED_ON_TRUNCATION.replace(
        '"finish_reason":"length"', '"finish_reason":"tool_calls"'
    )
    assert invented not in run(whole, request=WEATHER_CUT).quirks
    # a tool the request never declared (vLLM once named one itself): invented too
    other = S.ARGS_INVENTED_ON_TRUNCATION.replace('"get_weather"', '"weather_lookup"')
    r = run(other, request=WEATHER_CUT)
    assert invented in r.quirks
    assert "'weather_lookup' is not a declared tool" in next(
        f.message for f in r.findings if f.quirk == invented
    )
    # a bare capture: judged on the "{}" and the cut alone
    assert invented in run(S.ARGS_INVENTED_ON_TRUNCATION).quirks


def test_prose_before_a_call_is_a_quirk_only_under_required():
    auto = dict(REQUIRED, tool_choice="auto")
    assert run(S.REQUIRED_NOT_ENFORCED, request=auto).quirks == []
    assert run(S.REQUIRED_NOT_ENFORCED).quirks == []


def test_prose_instead_of_a_required_call_is_a_must_finding_not_missing_calls():
    r = run(S.REQUIRED_PROSE_ONLY, request=REQUIRED)
    assert r.quirks == ["Q-REQUIRED-NOT-ENFORCED"]  # not Q-TOOLCALLS-MISSING-IN-STREAM
    (f,) = [f for f in r.findings if f.quirk == "Q-REQUIRED-NOT-ENFORCED"]
    assert (f.rule, f.level, f.event) == ("R-TOOL-CHOICE", "MUST", 1)
    assert f.message == 'tool_choice "required" but the model answered in prose, with no tool call'
    # an empty turn under "required" is the catalogued missing-calls quirk when stream
    # false returned the call
    assert run(S.TOOLCALLS_MISSING_IN_STREAM, request=REQUIRED, comparison=SHOWED_CALLS).quirks == [
        "Q-TOOLCALLS-MISSING-IN-STREAM"
    ]


def test_invalid_arguments_are_the_server_parsers_only_with_the_models_text_on_the_wire():
    bare = run(S.ARGS_SERVER_PARSER_CORRUPTION)
    assert "Q-ARGS-SERVER-PARSER-CORRUPTION" not in bare.quirks
    assert bare.impact["robust"].detail == "Q-ARGS-INVALID-JSON"
    seen = run(S.ARGS_SERVER_PARSER_CORRUPTION_SEEN)
    assert seen.impact["robust"].detail == "Q-ARGS-SERVER-PARSER-CORRUPTION"
    (f,) = [f for f in seen.findings if f.quirk == "Q-ARGS-SERVER-PARSER-CORRUPTION"]
    assert f.message.endswith(
        "the model's own text of the 'add_items' call is in content "
        "(event 0) with valid arguments: the server's parser broke them"
    )
    # the model's text with arguments as broken as the call's: no evidence of a parse
    chunks = S.chunks(S.ARGS_SERVER_PARSER_CORRUPTION_SEEN)
    delta = chunks[0]["choices"][0]["delta"]
    delta["content"] = delta["content"].replace('[{"name": "a"}]}}', '[{"name": ')
    assert delta["content"].endswith('[{"name": \n</tool_call>')
    broken = "".join(json.dumps(c) + "\n" for c in chunks)
    assert "Q-ARGS-SERVER-PARSER-CORRUPTION" not in run(broken).quirks


def test_controls_go_through_the_files_door_too(tmp_path):
    """The same stream read from a JSONL file gives the same findings as the chunk door."""
    path = tmp_path / "c.jsonl"
    path.write_text(S.INDEX_ALL_ZERO)
    from conformance.readers import read_path

    (t,) = read_path(path)
    via_file = analyze(t)
    via_chunks = run(S.INDEX_ALL_ZERO)
    assert [f.to_json() for f in via_file.findings] == [f.to_json() for f in via_chunks.findings]


# =============================================================================== clean streams

CLEAN = {
    "single-sse": (S.REFERENCE_SINGLE_SSE, S.REFERENCE_SINGLE_CALLS),
    "single-jsonl": (S.REFERENCE_SINGLE_JSONL, S.REFERENCE_SINGLE_CALLS),
    "parallel-sse": (S.REFERENCE_PARALLEL_SSE, S.REFERENCE_PARALLEL_CALLS),
    "parallel-jsonl": (S.REFERENCE_PARALLEL_JSONL, S.REFERENCE_PARALLEL_CALLS),
    "text-sse": (S.REFERENCE_TEXT_SSE, []),
}


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_reference_streams_conform(name):
    stream, calls = CLEAN[name]
    r = run(stream)
    assert r.verdict == "conforms"
    assert r.quirks_at("SHOULD") == []
    assert [f for f in r.findings if f.level != INFO] == []
    assert not [rid for rid, status in r.rules.items() if status == "fail"]
    got = [(c["id"], c["name"], json.loads(c["arguments"])) for c in r.tool_calls["robust"]]
    assert got == [(i, n, a) for i, n, a in calls]
    assert r.tool_calls["guarded"] == r.tool_calls["robust"]
    assert r.finish_reason == ("tool_calls" if calls else "stop")
    assert r.impact["robust"].status == "ok"


@pytest.mark.parametrize("name", ["single", "parallel"])
def test_reference_with_the_request_that_produced_it(name):
    """With a request that asks for usage and allows parallel calls: still conforms."""
    stream, _ = CLEAN[f"{name}-sse"]
    req = {
        "model": "gpt-4o",
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": S.TOOLS_WEATHER,
        "max_tokens": 500,
    }
    r = run(stream, request=req, status=200)
    assert r.verdict == "conforms" and r.quirks_at("SHOULD") == []
    assert r.rules["R-USAGE"] == "pass" and r.rules["R-HTTP-OK"] == "pass"
    assert r.rules["R-LENGTH-VISIBLE"] == "not applicable"  # nothing was cut


# =============================================================================== rules


def _transport_cut() -> CaptureResult:
    events = parse_sse_bytes(S.REFERENCE_SINGLE_SSE.encode()[:400])
    t = Transcript(
        "live",
        "live",
        True,
        lambda: iter(events),
        status=200,
        headers={"content-type": "text/event-stream"},
        transport_error="read timeout: no byte for 30 s",
    )
    return analyze(t)


WITH_TOOL_MESSAGE = dict(S.ROUNDTRIP_REQUEST)
WRONG_ID = json.loads(json.dumps(S.ROUNDTRIP_REQUEST))
WRONG_ID["messages"][2]["tool_call_id"] = "call_somethingElse"
MAX_TOKENS = {"model": "m", "stream": True, "max_tokens": 24}
USAGE_ASKED = {"model": "m", "stream": True, "stream_options": {"include_usage": True}}
SSE_OK = dict(status=200, headers={"content-type": "text/event-stream"})


def _ok(stream: str, **kw: Any):
    return lambda: run(stream, **kw)


# rule -> (failing input, passing input, input on which it is not applicable)
RULE_CASES = {
    "R-COMPLETE": (
        _transport_cut,
        _ok(S.REFERENCE_SINGLE_SSE, **SSE_OK),
        _ok(S.REFERENCE_SINGLE_JSONL),  # a bare capture says nothing about the connection
    ),
    "R-USAGE": (
        _ok(S.REFERENCE_TEXT_SSE, request=USAGE_ASKED),
        _ok(S.REFERENCE_SINGLE_SSE, request=USAGE_ASKED),
        _ok(S.REFERENCE_TEXT_SSE),  # no request: nobody asked for usage
    ),
    "R-LENGTH-VISIBLE": (
        _ok(S.ARGS_TRUNCATED, request=MAX_TOKENS),
        _ok(S.ARGS_CUT_BY_LENGTH, request=MAX_TOKENS),
        _ok(S.ARGS_TRUNCATED),  # no request: no max_tokens to blame
    ),
    "R-HTTP-OK": (
        _ok(S.BODY_TOOLS_UNSUPPORTED, status=500, headers=JSON_HEADERS),
        _ok(S.REFERENCE_SINGLE_SSE, **SSE_OK),
        _ok(S.REFERENCE_SINGLE_JSONL),
    ),
    "R-SSE-CONTENT-TYPE": (
        _ok(S.BODY_STREAM_DOWNGRADED, request=MAX_TOKENS, status=200, headers=JSON_HEADERS),
        _ok(S.REFERENCE_SINGLE_SSE, request=MAX_TOKENS, **SSE_OK),
        _ok(S.REFERENCE_SINGLE_SSE, **SSE_OK),  # no request: no `stream: true` to honour
    ),
    "R-SSE-WELL-FORMED": (
        _ok(S.REFERENCE_TEXT_SSE.rstrip("\n")),  # the last event has no blank line after it
        _ok(S.REFERENCE_TEXT_SSE),
        _ok(S.REFERENCE_SINGLE_JSONL),  # JSONL has no framing
    ),
    "R-SSE-DATA-JSON": (
        _ok(S.SSE_KEEPALIVE_AS_DATA),
        _ok(S.REFERENCE_TEXT_SSE),
        _ok(S.REFERENCE_SINGLE_JSONL),
    ),
    "R-SSE-DONE": (
        _ok(S.SSE_DONE_MISSING),
        _ok(S.REFERENCE_TEXT_SSE),
        _ok(S.REFERENCE_SINGLE_JSONL),
    ),
    "R-CHUNK-OBJECT": (
        _ok("data: [1, 2]\n\n" + S.REFERENCE_TEXT_SSE),
        _ok(S.REFERENCE_TEXT_SSE),
        _ok(S.BODY_TOOLS_UNSUPPORTED, status=500, headers=JSON_HEADERS),  # no stream at all
    ),
    "R-NO-ERROR": (
        _ok(S.SSE_ERROR_ENVELOPE),
        _ok(S.REFERENCE_TEXT_SSE),
        _ok(S.BODY_TOOLS_UNSUPPORTED, status=500, headers=JSON_HEADERS),
    ),
    "R-INDEX-PRESENT": (
        _ok(S.INDEX_ABSENT),
        _ok(S.REFERENCE_PARALLEL_JSONL),
        _ok(S.REFERENCE_TEXT_SSE),  # no tool call
    ),
    "R-INDEX-DISTINCT": (
        _ok(S.INDEX_ALL_ZERO),
        _ok(S.REFERENCE_PARALLEL_JSONL),
        _ok(S.REFERENCE_TEXT_SSE),
    ),
    "R-FIRST-ID": (_ok(S.ID_ABSENT), _ok(S.REFERENCE_SINGLE_JSONL), _ok(S.REFERENCE_TEXT_SSE)),
    "R-FIRST-TYPE": (_ok(S.TYPE_MISSING), _ok(S.REFERENCE_SINGLE_JSONL), _ok(S.REFERENCE_TEXT_SSE)),
    "R-FIRST-NAME": (
        _ok(S.NAME_EMPTY_OPENING_DELTA),
        _ok(S.REFERENCE_SINGLE_JSONL),
        _ok(S.REFERENCE_TEXT_SSE),
    ),
    "R-FIRST-ARGS": (
        _ok(S.INDEX_NONZERO_START),  # its opener has no arguments key
        _ok(S.REFERENCE_SINGLE_JSONL),
        _ok(S.REFERENCE_TEXT_SSE),
    ),
    "R-CONT-ID-ABSENT": (
        _ok(S.EMPTY_STRING_OVERWRITE),
        _ok(S.REFERENCE_SINGLE_JSONL),
        _ok(S.REFERENCE_TEXT_SSE),
    ),
    "R-CONT-TYPE-ABSENT": (
        _ok(
            S.REFERENCE_SINGLE_JSONL.replace(
                '{"index":0,"function"', '{"index":0,"type":"function","function"'
            )
        ),
        _ok(S.REFERENCE_SINGLE_JSONL),
        _ok(S.REFERENCE_TEXT_SSE),
    ),
    "R-CONT-NAME-ABSENT": (
        _ok(S.NAME_REPEATED),
        _ok(S.REFERENCE_SINGLE_JSONL),
        _ok(S.REFERENCE_TEXT_SSE),
    ),
    "R-ARGS-STRING": (
        _ok(S.ARGS_JSON_OBJECT),
        _ok(S.REFERENCE_SINGLE_JSONL),
        _ok(S.REFERENCE_TEXT_SSE),
    ),
    "R-ARGS-JSON": (
        _ok(S.ARGS_TRUNCATED),
        _ok(S.REFERENCE_SINGLE_JSONL),
        _ok(S.REFERENCE_TEXT_SSE),
    ),
    "R-FINISH-PRESENT": (
        _ok(S.FINISH_NEVER_SENT),
        _ok(S.REFERENCE_SINGLE_JSONL),
        _ok(S.BODY_TOOLS_UNSUPPORTED, status=500, headers=JSON_HEADERS),
    ),
    "R-FINISH-TOOL-CALLS": (
        _ok(S.FINISH_STOP_WITH_TOOLCALLS),
        _ok(S.REFERENCE_SINGLE_JSONL),
        _ok(S.REFERENCE_TEXT_SSE),
    ),
    "R-FINISH-VALUE": (
        _ok(S.FINISH_NONSTANDARD_VALUE),
        _ok(S.REFERENCE_TEXT_SSE),
        _ok(S.BODY_TOOLS_UNSUPPORTED, status=500, headers=JSON_HEADERS),
    ),
    "R-TOOLCALLS-STRUCTURED": (
        _ok(S.TOOLCALL_AS_TEXT),
        _ok(S.REFERENCE_SINGLE_JSONL),
        _ok(S.BODY_TOOLS_UNSUPPORTED, status=500, headers=JSON_HEADERS),
    ),
    "R-TOOL-CHOICE": (
        _ok(S.TOOLCALLS_MISSING_IN_STREAM, request=REQUIRED),
        _ok(S.REFERENCE_SINGLE_JSONL, request=REQUIRED),
        _ok(S.REFERENCE_SINGLE_JSONL, request=dict(REQUIRED, tool_choice="auto")),
    ),
    "R-PARALLEL-DISABLED": (
        _ok(S.REFERENCE_PARALLEL_JSONL, request={"model": "m", "parallel_tool_calls": False}),
        _ok(S.REFERENCE_SINGLE_JSONL, request={"model": "m", "parallel_tool_calls": False}),
        _ok(S.REFERENCE_PARALLEL_JSONL, request={"model": "m"}),
    ),
    "R-ROUNDTRIP-IDS": (
        _ok(S.REFERENCE_TEXT_SSE, request=WRONG_ID, **SSE_OK),
        _ok(S.REFERENCE_TEXT_SSE, request=WITH_TOOL_MESSAGE, **SSE_OK),
        _ok(S.REFERENCE_TEXT_SSE, request=USAGE_ASKED, **SSE_OK),  # no tool result in it
    ),
    "R-ROUNDTRIP-ACCEPTED": (
        _ok(S.RT_MISTRAL_TOOL_CALL_ID, **ROUNDTRIP),
        _ok(S.REFERENCE_TEXT_SSE, request=WITH_TOOL_MESSAGE, **SSE_OK),
        _ok(S.REFERENCE_TEXT_SSE, **SSE_OK),
    ),
    "R-TOOL-DECLARED": (  # the reference streams call get_weather
        _ok(
            S.REFERENCE_SINGLE_JSONL,
            request={
                "model": "m",
                "tools": [{"type": "function", "function": {"name": "get_time"}}],
            },
        ),
        _ok(
            S.REFERENCE_SINGLE_JSONL,
            request={
                "model": "m",
                "tools": [{"type": "function", "function": {"name": "get_weather"}}],
            },
        ),
        _ok(S.REFERENCE_SINGLE_JSONL),  # no request: nothing declared to compare with
    ),
    "R-LENGTH-CUT": (
        _ok(S.ARGS_CUT_BY_LENGTH),
        _ok(S.REFERENCE_SINGLE_JSONL),
        _ok(S.REFERENCE_TEXT_SSE),
    ),
}


def test_every_rule_has_controls():
    assert set(RULE_CASES) == set(RULES)


@pytest.mark.parametrize("rule", sorted(RULE_CASES))
def test_rule_fails_passes_and_is_not_applicable(rule):
    failing, passing, not_applicable = (make() for make in RULE_CASES[rule])
    assert failing.rules[rule] == "fail"
    assert any(f.rule == rule for f in failing.findings)
    assert passing.rules[rule] == "pass", [f.to_json() for f in passing.findings]
    assert not any(f.rule == rule for f in passing.findings)
    assert not_applicable.rules[rule] == "not applicable"
    assert not any(f.rule == rule for f in not_applicable.findings)


def test_rule_levels_reach_findings():
    """A rule's finding without a catalogued quirk carries the rule's own level."""
    r = run(S.INDEX_NONZERO_START)
    (f,) = [f for f in r.findings if f.rule == "R-FIRST-ARGS"]
    assert f.quirk is None and f.level == RULES["R-FIRST-ARGS"].level


def test_findings_are_ordered_and_counted():
    r = run(S.EMPTY_STRING_OVERWRITE)
    events = [f.event for f in r.findings]
    assert events == sorted(events)
    by_pointer = {f.pointer: f.count for f in r.findings if f.quirk == "Q-EMPTY-STRING-OVERWRITE"}
    assert by_pointer == {tc(0, "id"): 2, tc(0, "function/name"): 2}
