"""Framing (group A), the chunk envelope (groups A/B) and the round trip (group K), each
branch with a stream that takes it and one that must not, and the shared helpers of
``analysis/common.py`` and ``analysis/model.py``.

Every expectation is written by hand from the stream: the whole list of findings (rule,
level, quirk, event, JSON pointer, message, excerpt), since messages and excerpts are what
a user reads in the CLI summary and the report."""

from __future__ import annotations

import json
from typing import Any

import pytest
from streams import F, found

from conformance.analysis import CaptureResult, analyze, analyze_bytes, analyze_chunks
from conformance.analysis.common import (
    _body_message,
    _carries,
    _error_text,
    _excerpt,
    _is_roundtrip,
    _usage_requested,
    json_type,
)
from conformance.analysis.model import CaptureResult as Result
from conformance.analysis.model import Finding, Impact
from conformance.readers import exchange_transcript
from conformance.transcript import Transcript

JSON = {"content-type": "application/json"}
REQ = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
TOOL = {"type": "function", "function": {"name": "f"}}


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


ROLE = chunk({"role": "assistant", "content": None})
TEXT = chunk({"content": "Hi."})
STOP = chunk({}, "stop")
USAGE = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}


def data(c: dict[str, Any]) -> str:
    return "data: " + json.dumps(c, separators=(",", ":")) + "\n\n"


CLEAN = data(ROLE) + data(TEXT) + data(STOP)
DONE = "data: [DONE]\n\n"


# ============================================================================== framing

CUT_REASON = (
    "HTTP 200 body cut inside an event after 2 event(s), with no finish_reason: "
    "the server closed the stream mid-answer"
)
EMPTY_REASON = (
    "HTTP 200 with an empty body: the server closed the stream after its headers, before any event"
)
DONE_MISSING = "stream ended without data: [DONE]"

FRAMING = {
    "clean": (CLEAN + DONE, "conforms", None, []),
    "comment line": (
        ": keep-alive\n\n" + CLEAN + DONE,
        "quirk",
        None,
        [
            F(
                "Q-SSE-COMMENT-KEEPALIVE",
                "SHOULD",
                "Q-SSE-COMMENT-KEEPALIVE",
                0,
                None,
                "SSE comment line ': keep-alive'",
                ": keep-alive",
            )
        ],
    ),
    # the message quotes 60 characters of the comment, the excerpt all of it
    "long comment": (
        ": " + "x" * 59 + "yz\n\n" + CLEAN + DONE,
        "quirk",
        None,
        [
            F(
                "Q-SSE-COMMENT-KEEPALIVE",
                "SHOULD",
                "Q-SSE-COMMENT-KEEPALIVE",
                0,
                None,
                "SSE comment line ': " + "x" * 59 + "y'",
                ": " + "x" * 59 + "yz",
            )
        ],
    ),
    "CRLF line ends": (CLEAN.replace("\n", "\r\n") + "data: [DONE]\r\n\r\n", "conforms", None, []),
    "keep-alive as data": (
        "data: : ping\n\n" + CLEAN + DONE,
        "quirk",
        None,
        [
            F(
                "R-SSE-DATA-JSON",
                "MUST",
                "Q-SSE-KEEPALIVE-AS-DATA",
                0,
                None,
                "keep-alive sent as a data event with a non-JSON payload",
                "data: : ping",
            )
        ],
    ),
    "keep-alive as data, blank first": (
        "data:   : ping\n\n" + CLEAN + DONE,
        "quirk",
        None,
        [
            F(
                "R-SSE-DATA-JSON",
                "MUST",
                "Q-SSE-KEEPALIVE-AS-DATA",
                0,
                None,
                "keep-alive sent as a data event with a non-JSON payload",
                "data:   : ping",
            )
        ],
    ),
    "non-JSON data": (
        "data: hello\n\n" + CLEAN + DONE,
        "fails",
        None,
        [F("R-SSE-DATA-JSON", "MUST", None, 0, None, "data payload is not JSON", "data: hello")],
    ),
    "no [DONE]": (
        CLEAN,
        "quirk",
        None,
        [F("R-SSE-DONE", "SHOULD", "Q-SSE-DONE-MISSING", 2, None, DONE_MISSING)],
    ),
    "empty body": (
        "",
        "error",
        EMPTY_REASON,
        [F("R-COMPLETE", "MUST", None, None, None, EMPTY_REASON)],
    ),
    "blank lines only": (
        "\n\n\n",
        "error",
        "HTTP 200 with 3 bytes and no event: the server closed the stream "
        "after its headers, before any event",
        [
            F(
                "R-COMPLETE",
                "MUST",
                None,
                None,
                None,
                "HTTP 200 with 3 bytes and no event: the server closed the stream after its "
                "headers, before any event",
            )
        ],
    ),
    "cut inside an event": (
        data(ROLE) + data(TEXT) + 'data: {"id":',
        "error",
        CUT_REASON,
        [
            F("R-COMPLETE", "MUST", None, 2, None, CUT_REASON),
            F(
                "R-SSE-WELL-FORMED",
                "MUST",
                None,
                2,
                None,
                'stream ended inside an event (no blank line after it): {"id":',
            ),
        ],
    ),
    # a cut after the finish_reason or after [DONE] loses nothing: not an error
    "cut after the finish": (
        CLEAN + 'data: {"id":',
        "fails",
        None,
        [
            F("R-SSE-DONE", "SHOULD", "Q-SSE-DONE-MISSING", 3, None, DONE_MISSING),
            F(
                "R-SSE-WELL-FORMED",
                "MUST",
                None,
                3,
                None,
                'stream ended inside an event (no blank line after it): {"id":',
            ),
        ],
    ),
    "cut after [DONE]": (
        data(ROLE) + data(TEXT) + DONE + 'data: {"id":',
        "fails",
        None,
        [
            F(
                "R-FINISH-PRESENT",
                "MUST",
                "Q-FINISH-NEVER-SENT",
                3,
                None,
                "no finish_reason in the whole stream",
            ),
            F(
                "R-SSE-WELL-FORMED",
                "MUST",
                None,
                3,
                None,
                'stream ended inside an event (no blank line after it): {"id":',
            ),
        ],
    ),
    # ends on an event boundary without a finish_reason: a quirk of streaming, not a cut
    "ends between events": (
        data(ROLE) + data(TEXT),
        "quirk",
        None,
        [
            F(
                "R-FINISH-PRESENT",
                "MUST",
                "Q-FINISH-NEVER-SENT",
                1,
                None,
                "no finish_reason in the whole stream",
            ),
            F("R-SSE-DONE", "SHOULD", "Q-SSE-DONE-MISSING", 1, None, DONE_MISSING),
        ],
    ),
    # what follows [DONE] is still read
    "bytes after [DONE]": (
        CLEAN + DONE + data(TEXT),
        "quirk",
        None,
        [
            F(
                "Q-FINISH-ON-NONFINAL-CHUNK",
                "SHOULD",
                "Q-FINISH-ON-NONFINAL-CHUNK",
                4,
                "/choices/0",
                "output after finish_reason 'stop' (event 2)",
            )
        ],
    ),
    "error event then no [DONE]": (
        data(ROLE) + data({"error": {"message": "overloaded"}}),
        "error",
        "error inside the stream: overloaded",
        [
            F(
                "R-NO-ERROR",
                "MUST",
                "Q-SSE-ERROR-ENVELOPE",
                1,
                "/error",
                "error inside the stream: overloaded",
                '{"error":{"message":"overloaded"}}',
            )
        ],
    ),
}


@pytest.mark.parametrize("name", FRAMING)
def test_framing(name: str) -> None:
    raw, verdict, error, findings = FRAMING[name]
    r = analyze_bytes(raw.encode(), status=200)
    assert (r.verdict, r.error, found(r)) == (verdict, error, findings)


def test_an_empty_body_without_a_status_is_a_cut_too() -> None:
    r = analyze_bytes(b"")
    assert (r.verdict, r.error) == ("error", EMPTY_REASON)


def test_a_body_held_nowhere_reads_as_empty() -> None:
    t = Transcript("<t>", "sse", True, lambda: iter(()), status=200, raw=None)
    r = analyze(t)
    assert (r.verdict, r.error) == ("error", EMPTY_REASON)


def test_unframed_streams_are_neither_cut_nor_missing_done() -> None:
    assert found(analyze_chunks([])) == []
    r = analyze_chunks([ROLE, TEXT])  # JSONL: no [DONE] to expect
    assert [f["quirk"] for f in found(r)] == ["Q-FINISH-NEVER-SENT"]


def test_an_error_status_with_an_empty_sse_body_is_the_status_only() -> None:
    r = analyze_bytes(b"", status=503)
    assert (r.error, found(r)) == (
        "HTTP 503: (empty body)",
        [F("R-HTTP-OK", "MUST", None, None, None, "HTTP 503: (empty body)")],
    )


def test_a_transport_error_is_neither_a_cut_nor_a_missing_done() -> None:
    evs = list(
        exchange_transcript(
            "<t>",
            "sse",
            None,
            200,
            {"content-type": "text/event-stream"},
            (data(ROLE) + data(TEXT) + 'data: {"id"').encode(),
        ).events()
    )
    t = Transcript(
        "<t>",
        "sse",
        True,
        lambda: iter(evs),
        status=200,
        raw=b"x",
        transport_error="read timeout\nafter 30 s",
        meta={"transport_quirk": "Q-STREAM-STALLS", "connection_retry": "reset by peer"},
    )
    r = analyze(t)
    assert r.error == "read timeout after 30 s"
    assert found(r) == [
        F(
            "R-SSE-WELL-FORMED",
            "MUST",
            None,
            2,
            None,
            'stream ended inside an event (no blank line after it): {"id"',
        ),
        F("Q-KEEPALIVE-DROPPED", "INFO", "Q-KEEPALIVE-DROPPED", None, None, "reset by peer"),
        F("R-COMPLETE", "MUST", "Q-STREAM-STALLS", None, None, "read timeout after 30 s"),
    ]


HTTP = {
    "500 with a JSON error": (
        500,
        '{"error":{"message":"boom\\n  bad"}}',
        REQ,
        [F("R-HTTP-OK", "MUST", None, None, None, "HTTP 500: boom bad")],
    ),
    "tools with stream unsupported": (
        400,
        '{"error":{"message":"Tools are not supported with stream"}}',
        {**REQ, "tools": [TOOL]},
        [
            F(
                "R-HTTP-OK",
                "MUST",
                "Q-STREAM-TOOLS-UNSUPPORTED",
                None,
                None,
                "HTTP 400: Tools are not supported with stream",
            )
        ],
    ),
    "unsupported param: tools": (
        422,
        '{"error":{"message":"Unsupported param: tools"}}',
        {**REQ, "tools": [TOOL]},
        [
            F(
                "R-HTTP-OK",
                "MUST",
                "Q-STREAM-TOOLS-UNSUPPORTED",
                None,
                None,
                "HTTP 422: Unsupported param: tools",
            )
        ],
    ),
    # the same text, but the request did not stream or sent no tools: not that quirk
    "tools text, no stream": (
        400,
        '{"error":{"message":"Tools are not supported with stream"}}',
        {**REQ, "stream": False, "tools": [TOOL]},
        [F("R-HTTP-OK", "MUST", None, None, None, "HTTP 400: Tools are not supported with stream")],
    ),
    "tools text, no tools": (
        400,
        '{"error":{"message":"Tools are not supported with stream"}}',
        REQ,
        [F("R-HTTP-OK", "MUST", None, None, None, "HTTP 400: Tools are not supported with stream")],
    ),
    "tools text, no stream word": (
        400,
        '{"error":{"message":"bad tools"}}',
        {**REQ, "tools": [TOOL]},
        [F("R-HTTP-OK", "MUST", None, None, None, "HTTP 400: bad tools")],
    ),
    "stream word, no tools word": (
        400,
        '{"error":{"message":"bad stream"}}',
        {**REQ, "tools": [TOOL]},
        [F("R-HTTP-OK", "MUST", None, None, None, "HTTP 400: bad stream")],
    ),
    "stream_options rejected": (
        400,
        '{"error":{"message":"Unknown field stream_options"}}',
        REQ,
        [
            F(
                "R-HTTP-OK",
                "MUST",
                "Q-STREAM-OPTIONS-REJECTED",
                None,
                None,
                "HTTP 400: Unknown field stream_options",
            )
        ],
    ),
    "include_usage rejected": (
        400,
        '{"error":{"message":"Unknown field include_usage"}}',
        REQ,
        [
            F(
                "R-HTTP-OK",
                "MUST",
                "Q-STREAM-OPTIONS-REJECTED",
                None,
                None,
                "HTTP 400: Unknown field include_usage",
            )
        ],
    ),
    "stream_options, but a 422": (
        422,
        '{"error":{"message":"Unknown field stream_options"}}',
        REQ,
        [F("R-HTTP-OK", "MUST", None, None, None, "HTTP 422: Unknown field stream_options")],
    ),
    "no request": (
        400,
        '{"error":{"message":"Tools are not supported with stream"}}',
        None,
        [F("R-HTTP-OK", "MUST", None, None, None, "HTTP 400: Tools are not supported with stream")],
    ),
}


@pytest.mark.parametrize("name", HTTP)
def test_http_status(name: str) -> None:
    status, body, req, findings = HTTP[name]
    r = analyze_bytes(body.encode(), status=status, request=req, headers=JSON)
    assert (r.verdict, r.error, found(r)) == ("error", findings[0]["message"], findings)


COMPLETION = {
    "id": "x",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_A",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"a":1}'},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ],
}
NOT_SSE = {
    "one completion": (
        json.dumps(COMPLETION),
        "application/json; charset=utf-8",
        "quirk",
        None,
        [
            F(
                "R-SSE-CONTENT-TYPE",
                "MUST",
                "Q-STREAM-DOWNGRADED",
                None,
                None,
                "stream requested; answered with one application/json completion",
                json.dumps(COMPLETION, separators=(",", ":"))[:159] + "…",
            )
        ],
    ),
    "a JSON error with 200": (
        '{"error":{"message":"rate limited"}}',
        "application/json",
        "error",
        "error inside the stream: rate limited",
        [
            F(
                "R-NO-ERROR",
                "MUST",
                "Q-SSE-ERROR-ENVELOPE",
                None,
                None,
                "200 with a JSON error body: rate limited",
            )
        ],
    ),
    "other JSON": (
        '{"foo":1}',
        "application/json",
        "error",
        "stream requested; got application/json",
        [
            F(
                "R-SSE-CONTENT-TYPE",
                "MUST",
                None,
                None,
                None,
                "stream requested; got application/json",
                '{"foo":1}',
            )
        ],
    ),
    "choices without a message": (
        '{"choices":[{"delta":{}}]}',
        "application/json",
        "error",
        "stream requested; got application/json",
        [
            F(
                "R-SSE-CONTENT-TYPE",
                "MUST",
                None,
                None,
                None,
                "stream requested; got application/json",
                '{"choices":[{"delta":{}}]}',
            )
        ],
    ),
    "empty choices": (
        '{"choices":[]}',
        None,
        "error",
        "stream requested; got (none)",
        [
            F(
                "R-SSE-CONTENT-TYPE",
                "MUST",
                None,
                None,
                None,
                "stream requested; got (none)",
                '{"choices":[]}',
            )
        ],
    ),
    "choices of strings": (
        '{"choices":["message"]}',
        "application/json",
        "error",
        "stream requested; got application/json",
        [
            F(
                "R-SSE-CONTENT-TYPE",
                "MUST",
                None,
                None,
                None,
                "stream requested; got application/json",
                '{"choices":["message"]}',
            )
        ],
    ),
    "HTML": (
        "<html>oops</html>",
        "text/html",
        "error",
        "stream requested; got text/html that is neither SSE nor JSON: <html>oops</html>",
        [
            F(
                "R-SSE-CONTENT-TYPE",
                "MUST",
                None,
                None,
                None,
                "stream requested; got text/html that is neither SSE nor JSON: <html>oops</html>",
            )
        ],
    ),
}


@pytest.mark.parametrize("name", NOT_SSE)
def test_a_200_that_is_not_sse(name: str) -> None:
    body, ctype, verdict, error, findings = NOT_SSE[name]
    headers = {"content-type": ctype} if ctype else {}
    r = analyze_bytes(body.encode(), status=200, request=REQ, headers=headers)
    assert (r.verdict, r.error, found(r)) == (verdict, error, findings)


def test_a_downgraded_completion_is_read_as_if_streamed() -> None:
    r = analyze_bytes(json.dumps(COMPLETION).encode(), status=200, request=REQ, headers=JSON)
    assert r.finish_reason == "tool_calls"
    assert r.tool_calls["robust"] == [
        {"index": 0, "id": "call_A", "type": "function", "name": "f", "arguments": '{"a":1}'}
    ]


@pytest.mark.parametrize("req, status", [({**REQ, "stream": False}, 200), (None, 200), (REQ, None)])
def test_a_json_body_is_judged_only_when_a_stream_was_requested_with_a_status(
    req: dict[str, Any] | None, status: int | None
) -> None:
    r = analyze_bytes(
        b"<html>oops</html>", status=status, request=req, headers={"content-type": "text/html"}
    )
    assert (r.verdict, found(r)) == ("conforms", [])


def test_a_200_without_a_body_held_is_not_judged_as_json() -> None:
    t = Transcript(
        "<t>",
        "live",
        False,
        lambda: iter(()),
        request={"body": REQ},
        status=200,
        headers=JSON,
        raw=None,
    )
    assert found(analyze(t)) == []


# ============================================================================== envelope


def chunks_result(*cs: Any, request: dict[str, Any] | None = None) -> CaptureResult:
    return analyze_chunks(list(cs), request=request)


U_EXCERPT = '{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}'
USAGE_CHUNK_EXCERPT = (
    '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,'
    '"model":"m","choices":[],"usage":' + U_EXCERPT + "}"
)
USAGE_EMPTY_MSG = (
    "usage chunk without choices (documented reference behaviour; "
    "`choices[0]` crashes naive clients)"
)

ENVELOPE = {
    "bare error": (
        [ROLE, {"error": {"message": "overloaded"}}],
        "error",
        [
            F(
                "R-NO-ERROR",
                "MUST",
                "Q-SSE-ERROR-ENVELOPE",
                1,
                "/error",
                "error inside the stream: overloaded",
                '{"error":{"message":"overloaded"}}',
            )
        ],
    ),
    "chunk-shaped error": (
        [ROLE, chunk(None, error={"message": "bad"})],
        "error",
        [
            F(
                "R-NO-ERROR",
                "MUST",
                "Q-SSE-ERROR-IN-CHUNK",
                1,
                "/error",
                "error inside the stream: bad",
                '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m",'
                '"choices":[],"error":{"message":"bad"}}',
            )
        ],
    ),
    # "error": null is no error (only an extra field)
    "error null": (
        [ROLE, TEXT, chunk({}, "stop", error=None)],
        "conforms",
        [F("Q-EXTRA-FIELDS", "INFO", "Q-EXTRA-FIELDS", 2, None, "non-standard fields: error")],
    ),
    "usage without choices": (
        [ROLE, TEXT, STOP, chunk(None, usage=USAGE)],
        "conforms",
        [
            F(
                "Q-USAGE-EMPTY-CHOICES",
                "INFO",
                "Q-USAGE-EMPTY-CHOICES",
                3,
                "/choices",
                USAGE_EMPTY_MSG,
                USAGE_CHUNK_EXCERPT,
            )
        ],
    ),
    "usage twice": (
        [ROLE, TEXT, STOP, chunk(None, usage=USAGE), chunk(None, usage=USAGE)],
        "quirk",
        [
            F(
                "Q-USAGE-EMPTY-CHOICES",
                "INFO",
                "Q-USAGE-EMPTY-CHOICES",
                3,
                "/choices",
                USAGE_EMPTY_MSG,
                USAGE_CHUNK_EXCERPT,
                count=2,
            ),
            F(
                "Q-USAGE-PLACEMENT",
                "SHOULD",
                "Q-USAGE-PLACEMENT",
                4,
                "/usage",
                "usage sent in more than one chunk",
            ),
        ],
    ),
    "usage on a chunk with choices": (
        [ROLE, TEXT, chunk({}, "stop", usage=USAGE)],
        "quirk",
        [
            F(
                "Q-USAGE-PLACEMENT",
                "SHOULD",
                "Q-USAGE-PLACEMENT",
                2,
                "/usage",
                "usage on a chunk that also carries choices",
                U_EXCERPT,
            )
        ],
    ),
    "usage null": (
        [ROLE, TEXT, chunk({}, "stop", usage=None), chunk(None, usage=None), chunk(None)],
        "conforms",
        [
            F(
                "Q-EMPTY-DELTA-CHUNKS",
                "INFO",
                "Q-EMPTY-DELTA-CHUNKS",
                3,
                None,
                "2 chunks carry nothing",
            )
        ],
    ),
    "prompt filter chunk": (
        [
            {
                "id": "",
                "object": "",
                "created": 0,
                "model": "",
                "choices": [],
                "prompt_filter_results": [{"prompt_index": 0}],
            },
            ROLE,
            TEXT,
            STOP,
        ],
        "quirk",
        [
            F(
                "Q-AZURE-PROMPT-FILTER-CHUNK",
                "SHOULD",
                "Q-AZURE-PROMPT-FILTER-CHUNK",
                0,
                "/choices",
                "chunk with empty choices carrying prompt filter results",
                '{"id":"","object":"","created":0,"model":"","choices":[],'
                '"prompt_filter_results":[{"prompt_index":0}]}',
            )
        ],
    ),
    "prompt annotations chunk": (
        [{"choices": [], "prompt_annotations": []}, ROLE, TEXT, STOP],
        "quirk",
        [
            F(
                "Q-AZURE-PROMPT-FILTER-CHUNK",
                "SHOULD",
                "Q-AZURE-PROMPT-FILTER-CHUNK",
                0,
                "/choices",
                "chunk with empty choices carrying prompt filter results",
                '{"choices":[],"prompt_annotations":[]}',
            )
        ],
    ),
    "envelope fields missing": (
        [
            ROLE,
            {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]},
            STOP,
        ],
        "quirk",
        [
            F(
                "Q-ENVELOPE-FIELDS-MISSING",
                "SHOULD",
                "Q-ENVELOPE-FIELDS-MISSING",
                1,
                "/id",
                "chunk without id, object, created, model",
            )
        ],
    ),
    "empty model": (
        [ROLE, {**TEXT, "model": ""}, STOP],
        "quirk",
        [
            F(
                "Q-ENVELOPE-FIELDS-MISSING",
                "SHOULD",
                "Q-ENVELOPE-FIELDS-MISSING",
                1,
                "/model",
                "chunk without model",
            )
        ],
    ),
    "created 0 is a value": ([ROLE, {**TEXT, "created": 0}, STOP], "conforms", []),
    "id changes": (
        [ROLE, {**TEXT, "id": "chatcmpl-2"}, STOP, {**STOP, "id": "chatcmpl-3"}],
        "quirk",
        None,
    ),
    "choice without delta": (
        [ROLE, {**TEXT, "choices": [{"index": 0, "finish_reason": None}]}, TEXT, STOP],
        "quirk",
        [
            F(
                "Q-AZURE-CHOICE-WITHOUT-DELTA",
                "SHOULD",
                "Q-AZURE-CHOICE-WITHOUT-DELTA",
                1,
                "/choices/0",
                "choice without a delta object",
                '{"index":0,"finish_reason":null}',
            )
        ],
    ),
    "delta null": (
        [
            ROLE,
            {**TEXT, "choices": [{"index": 0, "delta": None, "finish_reason": None}]},
            TEXT,
            STOP,
        ],
        "quirk",
        [
            F(
                "Q-AZURE-CHOICE-WITHOUT-DELTA",
                "SHOULD",
                "Q-AZURE-CHOICE-WITHOUT-DELTA",
                1,
                "/choices/0",
                "choice without a delta object",
                '{"index":0,"delta":null,"finish_reason":null}',
            )
        ],
    ),
    "choice without index and finish key": (
        [ROLE, {**TEXT, "choices": [{"delta": {"content": "x"}}]}, STOP],
        "quirk",
        [
            F(
                "Q-ENVELOPE-FIELDS-MISSING",
                "SHOULD",
                "Q-ENVELOPE-FIELDS-MISSING",
                1,
                "/choices/0",
                "choice without index, finish_reason",
            )
        ],
    ),
    "role null": (
        [chunk({"role": None, "content": "x"}), STOP],
        "quirk",
        [
            F(
                "Q-ENVELOPE-FIELDS-MISSING",
                "SHOULD",
                "Q-ENVELOPE-FIELDS-MISSING",
                0,
                "/choices/0",
                "choice without delta.role (null)",
            )
        ],
    ),
    "choice index 1 with n=1": (
        [ROLE, chunk({"content": "x"}, index=1), STOP],
        "quirk",
        [
            F(
                "Q-CHUNK-ID-UNSTABLE",
                "SHOULD",
                "Q-CHUNK-ID-UNSTABLE",
                1,
                "/choices/0/index",
                "choice index 1 in a single-choice stream",
            )
        ],
    ),
    "extra fields": (
        [
            ROLE,
            {
                **TEXT,
                "timings": {},
                "choices": [
                    {
                        "index": 0,
                        "delta": {"content": "x", "foo": 1, "reasoning_content": "r"},
                        "finish_reason": None,
                        "bar": 2,
                    }
                ],
            },
            STOP,
        ],
        "conforms",
        [
            F(
                "Q-EXTRA-FIELDS",
                "INFO",
                "Q-EXTRA-FIELDS",
                1,
                None,
                "non-standard fields: choice.bar, delta.foo, timings",
            )
        ],
    ),
    "OpenAI's obfuscation alone": ([{**ROLE, "obfuscation": "x"}, TEXT, STOP], "conforms", []),
    "many extra fields": (
        [{**ROLE, **{f"x{i:02}": 1 for i in range(14)}}, TEXT, STOP],
        "conforms",
        [
            F(
                "Q-EXTRA-FIELDS",
                "INFO",
                "Q-EXTRA-FIELDS",
                0,
                None,
                "non-standard fields: " + ", ".join(f"x{i:02}" for i in range(12)),
            )
        ],
    ),
    "tool_calls: []": (
        [ROLE, chunk({"content": "x", "tool_calls": []}), STOP],
        "quirk",
        [
            F(
                "Q-TOOLCALLS-EMPTY-ARRAY",
                "SHOULD",
                "Q-TOOLCALLS-EMPTY-ARRAY",
                1,
                "/choices/0/delta/tool_calls",
                "`tool_calls: []` on a delta",
            )
        ],
    ),
    "empty deltas": (
        [
            ROLE,
            chunk({}),
            chunk({"content": ""}),
            chunk({"role": "assistant"}),
            chunk({"content": None, "tool_calls": None}),
            TEXT,
            STOP,
        ],
        "conforms",
        [
            F(
                "Q-EMPTY-DELTA-CHUNKS",
                "INFO",
                "Q-EMPTY-DELTA-CHUNKS",
                1,
                None,
                "4 chunks carry nothing",
            )
        ],
    ),
    "one empty delta": ([ROLE, chunk({}), TEXT, STOP], "conforms", []),
}


@pytest.mark.parametrize("name", ENVELOPE)
def test_envelope(name: str) -> None:
    cs, verdict, findings = ENVELOPE[name]
    r = chunks_result(*cs)
    assert r.verdict == verdict
    if findings is not None:
        assert found(r) == findings


def test_chunk_id_change_names_both_ids_at_the_first_change() -> None:
    r = chunks_result(ROLE, {**TEXT, "id": "chatcmpl-2"}, STOP, {**STOP, "id": "chatcmpl-3"})
    f = [x for x in found(r) if x["quirk"] == "Q-CHUNK-ID-UNSTABLE"]
    assert f == [
        F(
            "Q-CHUNK-ID-UNSTABLE",
            "SHOULD",
            "Q-CHUNK-ID-UNSTABLE",
            1,
            "/id",
            "chunk id changed from 'chatcmpl-1' to 'chatcmpl-2'",
            count=2,
        )
    ]


def test_choice_index_1_is_fine_when_n_is_2() -> None:
    r = chunks_result(
        ROLE,
        chunk({"content": "x"}, index=1),
        STOP,
        chunk({}, "stop", index=1),
        request={"n": 2, "stream": True},
    )  # each choice ends with its own stop
    assert found(r) == []


def test_extra_key_of_a_tool_call_delta() -> None:
    tc = {
        "index": 0,
        "id": "call_ehIWdjL1abZk1h8FWGLQ0Hie",
        "type": "function",
        "function": {"name": "f", "arguments": ""},
        "zzz": 1,
    }
    r = chunks_result(
        ROLE,
        chunk({"tool_calls": [tc, "junk"]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
    )
    assert [x for x in found(r) if x["quirk"] == "Q-EXTRA-FIELDS"] == [
        F("Q-EXTRA-FIELDS", "INFO", "Q-EXTRA-FIELDS", 1, None, "non-standard fields: tool_call.zzz")
    ]


def test_camelcase_finish_key_is_not_an_extra_field_nor_an_empty_delta() -> None:
    c = {**TEXT, "choices": [{"index": 0, "delta": {}, "finishReason": "stop"}]}
    r = chunks_result(ROLE, TEXT, c)
    assert [x["quirk"] for x in found(r)] == ["Q-ENVELOPE-FIELDS-MISSING", "Q-FINISH-CAMELCASE"]


def test_model_and_fingerprints_go_to_meta() -> None:
    r = chunks_result(
        {**ROLE, "model": "", "system_fingerprint": "fp_b"},
        {**TEXT, "model": "m2", "system_fingerprint": "fp_a"},
        {**STOP, "model": "m3", "system_fingerprint": ""},
    )
    assert r.meta == {"model": "m2", "system_fingerprint": ["fp_a", "fp_b"]}


def test_at_most_eight_fingerprints_are_kept() -> None:
    cs = [{**TEXT, "system_fingerprint": f"fp_{i}"} for i in range(10)]
    r = chunks_result(ROLE, *cs, STOP)
    assert r.meta["system_fingerprint"] == [f"fp_{i}" for i in range(8)]


def test_an_error_chunk_is_not_judged_for_its_envelope() -> None:
    r = chunks_result(
        ROLE,
        {
            "error": {"message": "x"},
            "usage": USAGE,
            "zzz": 1,
            "choices": [{"index": 0, "delta": {}, "finish_reason": None}],
        },
    )
    assert [x["quirk"] for x in found(r)] == ["Q-USAGE-PLACEMENT", "Q-SSE-ERROR-IN-CHUNK"]


# ============================================================================== round trip

MSGS = [
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_A", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_A", "content": "42"},
]
RT = {**REQ, "messages": MSGS}
ANSWER = data(chunk({"role": "assistant", "content": "42."}, "stop")) + DONE


def rt_rules(r: CaptureResult) -> tuple[str, str]:
    return r.rules["R-ROUNDTRIP-IDS"], r.rules["R-ROUNDTRIP-ACCEPTED"]


@pytest.mark.parametrize(
    "messages, message",
    [
        (MSGS, None),
        (
            MSGS[:2] + [{"role": "tool", "tool_call_id": "call_B", "content": "42"}],
            "tool result for unknown id 'call_B'",
        ),
        (MSGS[:2] + [{"role": "tool", "content": "42"}], "tool result for unknown id None"),
        (
            [
                MSGS[0],
                {"role": "assistant", "tool_calls": [{"id": 7}, "x"]},
                {"role": "tool", "tool_call_id": 7, "content": "42"},
            ],
            "tool result for unknown id 7",
        ),
        # an id the user (not the assistant) carried does not count
        (
            [MSGS[0], {"role": "user", "tool_calls": [{"id": "call_A"}]}, MSGS[2]],
            "tool result for unknown id 'call_A'",
        ),
        # ids from any assistant message count, in any order
        (
            [
                MSGS[0],
                {"role": "assistant", "tool_calls": [{"id": "call_X"}]},
                MSGS[1],
                "not a message",
                {"role": "tool", "tool_call_id": "call_X"},
                MSGS[2],
            ],
            None,
        ),
    ],
)
def test_roundtrip_ids(messages: list[Any], message: str | None) -> None:
    r = analyze_bytes(ANSWER.encode(), request={**REQ, "messages": messages}, status=200)
    if message is None:
        assert (r.verdict, found(r), rt_rules(r)) == ("conforms", [], ("pass", "pass"))
    else:
        assert (r.verdict, found(r), rt_rules(r)) == (
            "fails",
            [F("R-ROUNDTRIP-IDS", "MUST", None, None, None, message)],
            ("fail", "pass"),
        )


PYDANTIC = (
    '{"detail":[{"loc":["body","messages",1,"typed-dict","AssistantMessage\', '
    "'content'), 'msg': 'input should be a valid string', 'input': None\"]}]}"
)


@pytest.mark.parametrize(
    "message, quirk",
    [
        (
            "Tool call id was abc but must be a-z, A-Z, 0-9, with a length of 9.",
            "Q-RT-MISTRAL-TOOL-CALL-ID",
        ),
        ("Tool call id is wrong", None),
        ("tool id of length 9", None),
        ("Function call is missing a thought_signature", "Q-RT-GEMINI-THOUGHT-SIGNATURE"),
        ("missing thought signature", "Q-RT-GEMINI-THOUGHT-SIGNATURE"),
        ("missing field `name`", "Q-RT-FUNCTION-NAME-KEY-REQUIRED"),
        ("missing field `id`", None),
        ("reasoning_content must be passed back", "Q-REASONING-MUST-BE-ECHOED"),
        ("content: null is not allowed", "Q-RT-CONTENT-NULL-REJECTED"),
        ("invalid content <nil>", "Q-RT-CONTENT-NULL-REJECTED"),
        ("content must be a string", "Q-RT-CONTENT-NULL-REJECTED"),
        ("null is not allowed", None),
        ("content must be non-empty", "Q-RT-CONTENT-EMPTY-REJECTED"),
        ("content is empty", "Q-RT-CONTENT-EMPTY-REJECTED"),
        ("empty", None),
        ("content wrong", None),
        ("name is required for tool messages", "Q-RT-TOOL-MESSAGE-NAME"),
        ("name required in function_response", "Q-RT-TOOL-MESSAGE-NAME"),
        ("name wrong", None),
        ("tool wrong", None),
        ("something else", None),
    ],
)
def test_roundtrip_rejected(message: str, quirk: str | None) -> None:
    body = json.dumps({"error": {"message": message}}).encode()
    r = analyze_bytes(body, request=RT, status=400, headers=JSON)
    assert found(r) == [
        F("R-HTTP-OK", "MUST", None, None, None, "HTTP 400: " + message),
        F("R-ROUNDTRIP-ACCEPTED", "MUST", quirk, None, None, "round trip rejected: HTTP 400"),
    ]
    assert rt_rules(r) == ("pass", "fail")


def test_roundtrip_rejected_by_pydantic_for_a_null_assistant_content() -> None:
    r = analyze_bytes(PYDANTIC.encode(), request=RT, status=500, headers=JSON)
    assert found(r)[1] == F(
        "R-ROUNDTRIP-ACCEPTED",
        "MUST",
        "Q-RT-CONTENT-NULL-REJECTED",
        None,
        None,
        "round trip rejected: HTTP 500",
    )
    # past the 4000 characters the message reads, the raw body is still searched
    long = '{"detail":"' + "x" * 5000 + PYDANTIC[11:-2].replace('"', "'") + '"}'
    r = analyze_bytes(long.encode(), request=RT, status=500, headers=JSON)
    assert found(r)[1]["quirk"] == "Q-RT-CONTENT-NULL-REJECTED"
    # the first 16000 bytes are searched, no more
    marker = (
        b"AssistantMessage', 'content'), 'msg': 'input should be a valid string', 'input': None"
    )
    for size, quirk in ((16000, "Q-RT-CONTENT-NULL-REJECTED"), (16001, None)):
        body = b"x" * (size - len(marker)) + marker
        r = analyze_bytes(body, request=RT, status=500, headers=JSON)
        assert found(r)[1]["quirk"] == quirk
    # a byte that is no UTF-8 does not hide the text
    r = analyze_bytes(b"\xff" + PYDANTIC.encode(), request=RT, status=500, headers=JSON)
    assert found(r)[1]["quirk"] == "Q-RT-CONTENT-NULL-REJECTED"


def test_a_rejection_of_a_request_that_is_no_round_trip_is_not_judged_as_one() -> None:
    r = analyze_bytes(
        b'{"error":{"message":"Tool call id 9"}}', request=REQ, status=400, headers=JSON
    )
    assert [x["rule"] for x in found(r)] == ["R-HTTP-OK"]
    assert rt_rules(r) == ("not applicable", "not applicable")


def test_a_round_trip_without_a_status_is_not_judged_accepted() -> None:
    r = analyze_bytes(ANSWER.encode(), request=RT)
    assert (found(r), rt_rules(r)) == ([], ("pass", "not applicable"))


# ============================================================================== common, model


@pytest.mark.parametrize(
    "value, text",
    [
        ("abc", "abc"),
        ({"a": "é", "b": [1, 2]}, '{"a":"é","b":[1,2]}'),
        ("x" * 160, "x" * 160),
        ("x" * 161, "x" * 159 + "…"),
    ],
)
def test_excerpt(value: Any, text: str) -> None:
    assert _excerpt(value) == text


def test_excerpt_limit() -> None:
    assert _excerpt("abcdef", 5) == "abcd…"


@pytest.mark.parametrize(
    "value, text",
    [
        (None, "null"),
        (True, "a boolean"),
        (False, "a boolean"),
        (3, "a number"),
        (1.5, "a number"),
        ("", "a string"),
        ([], "an array"),
        ((1,), "an array"),
        ({}, "an object"),
    ],
)
def test_json_type(value: Any, text: str) -> None:
    assert json_type(value) == text


@pytest.mark.parametrize(
    "tc, carries",
    [
        ({}, False),
        ({"id": ""}, False),
        ({"id": "call_1"}, True),
        ({"function": {"name": ""}}, False),
        ({"function": {"name": "f"}}, True),
        ({"function": {"arguments": ""}}, False),
        ({"function": {"arguments": "{"}}, True),
        ({"function": {"arguments": {}}}, True),
        ({"function": {"arguments": None}}, False),
        ({"function": "f", "id": None}, False),
    ],
)
def test_carries(tc: dict[str, Any], carries: bool) -> None:
    assert _carries(tc) is carries


@pytest.mark.parametrize(
    "req, wanted",
    [
        ({"stream": True, "stream_options": {"include_usage": True}}, True),
        ({"stream": True, "stream_options": {"include_usage": False}}, False),
        ({"stream": True, "stream_options": {"include_usage": "true"}}, False),
        ({"stream": True, "stream_options": {}}, False),
        ({"stream": True, "stream_options": [["include_usage", True]]}, False),
        ({"stream": False, "stream_options": {"include_usage": True}}, False),
        ({"stream_options": {"include_usage": True}}, False),
    ],
)
def test_usage_requested(req: dict[str, Any], wanted: bool) -> None:
    assert _usage_requested(req) is wanted


@pytest.mark.parametrize(
    "req, rt",
    [
        (None, False),
        ({}, False),
        ({"messages": "tool"}, False),
        ({"messages": [{"role": "user"}, "tool"]}, False),
        ({"messages": [{"role": "user"}, {"role": "tool"}]}, True),
    ],
)
def test_is_roundtrip(req: dict[str, Any] | None, rt: bool) -> None:
    assert _is_roundtrip(req) is rt


@pytest.mark.parametrize(
    "err, text",
    [
        ({"message": "a\n  b"}, "a b"),
        ({"message": "", "msg": "from msg"}, "from msg"),
        ({"code": 5}, '{"code": 5}'),
        ({"code": "x" * 200}, '{"code": "' + "x" * 110),
        ("plain\ttext", "plain text"),
        ("y" * 300, "y" * 200),
        ({"message": "z" * 300}, "z" * 200),
    ],
)
def test_error_text(err: Any, text: str) -> None:
    assert _error_text(err) == text


@pytest.mark.parametrize(
    "raw, text",
    [
        (None, "(empty body)"),
        (b"", "(empty body)"),
        (b"   \n ", "(empty body)"),
        (b"Bad  Gateway\n<br>", "Bad Gateway <br>"),
        (b"z" * 130, "z" * 120),
        (b'{"error": "no  way"}', "no way"),
        (b'{"message": "model\\nnot found"}', "model not found"),
        (b'{"message": 5}', '{"message":5}'),
        (b"[1, 2]", "[1,2]"),
        (b'{"detail": "' + b"d" * 200 + b'"}', '{"detail":"' + "d" * 108 + "…"),
        (b"\xff\xfeoops", "\ufffd\ufffdoops"),
        (b'{"error": "' + b"e" * 3900 + b'"}' + b" " * 200, "e" * 200),
    ],
)
def test_body_message(raw: bytes | None, text: str) -> None:
    assert _body_message(raw) == text


def test_body_message_reads_4000_bytes_only() -> None:
    # a JSON body of 4000 bytes is parsed; one byte more is not: its first line is quoted
    assert _body_message(b'{"error": "' + b"e" * 3987 + b'"}') == "e" * 200
    assert _body_message(b'{"error": "' + b"e" * 3988 + b'"}') == '{"error": "' + "e" * 109
    assert _body_message(b'{"message": "' + b"m" * 300 + b'"}') == "m" * 200


def test_finding_and_impact_json() -> None:
    f = Finding("R-X", "MUST", None, 3, "/a", "m")
    assert f.to_json() == {
        "rule": "R-X",
        "level": "MUST",
        "quirk": None,
        "event": 3,
        "pointer": "/a",
        "message": "m",
    }
    f = Finding("Q-Y", "INFO", "Q-Y", None, None, "m", excerpt="", count=2)
    assert f.to_json() == {
        "rule": "Q-Y",
        "level": "INFO",
        "quirk": "Q-Y",
        "event": None,
        "pointer": None,
        "message": "m",
        "excerpt": "",
        "count": 2,
    }
    assert Impact("ok").to_json() == {"status": "ok", "detail": ""}
    assert Impact("wrong", "why").to_json() == {"status": "wrong", "detail": "why"}


def test_capture_result_json_and_quirks() -> None:
    fs = [
        Finding("R-A", "MUST", "Q-B", 1, None, "m"),
        Finding("R-C", "MUST", None, 1, None, "m"),
        Finding("Q-A", "INFO", "Q-A", 2, None, "m"),
        Finding("Q-C", "INFO", "Q-C", 2, None, "m"),
        Finding("Q-D", "SHOULD", "Q-D", 2, None, "m"),
        Finding("R-D", "MUST", "Q-B", 3, None, "m"),
    ]
    r = Result("src", "quirk", fs, "stop", {"robust": []}, {"naive": Impact("ok")}, {"R-A": "fail"})
    assert r.quirks == ["Q-A", "Q-B", "Q-C", "Q-D"]
    assert r.quirks_at() == ["Q-B", "Q-D"]
    assert r.quirks_at("MUST") == ["Q-B"]
    assert r.quirks_at("INFO") == ["Q-A", "Q-B", "Q-C", "Q-D"]
    assert r.quirks_at("SHOULD") == ["Q-B", "Q-D"]
    d = r.to_json()
    assert list(d) == [
        "source",
        "verdict",
        "quirks",
        "findings",
        "finish_reason",
        "tool_calls",
        "impact",
        "rules",
        "events",
    ]
    assert (
        d["source"],
        d["verdict"],
        d["quirks"],
        d["finish_reason"],
        d["tool_calls"],
        d["impact"],
        d["rules"],
        d["events"],
    ) == (
        "src",
        "quirk",
        ["Q-A", "Q-B", "Q-C", "Q-D"],
        "stop",
        {"robust": []},
        {"naive": {"status": "ok", "detail": ""}},
        {"R-A": "fail"},
        0,
    )
    assert d["findings"][0] == {
        "rule": "R-A",
        "level": "MUST",
        "quirk": "Q-B",
        "event": 1,
        "pointer": None,
        "message": "m",
    }
    r = Result("s", "error", [], None, {}, {}, {}, error="boom", meta={"model": "m"}, events=4)
    d = r.to_json()
    assert (d["error"], d["meta"], d["events"], r.turn) == ("boom", {"model": "m"}, 4, None)
    assert "error" not in Result("s", "conforms", [], None, {}, {}, {}, error="").to_json()


def test_a_downgraded_completion_is_event_0_of_the_robust_reading() -> None:
    body = {
        **COMPLETION,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_A",
                            "type": "function",
                            "function": {"name": "f", "arguments": {"a": 1}},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    r = analyze_bytes(json.dumps(body).encode(), status=200, request=REQ, headers=JSON)
    assert found(r)[0] == F(
        "R-ARGS-STRING",
        "MUST",
        "Q-ARGS-JSON-OBJECT",
        0,
        None,
        "arguments sent as a JSON value, not a string",
    )
    assert [(w.quirk, w.event) for w in r.turn.workarounds] == [("Q-ARGS-JSON-OBJECT", 0)]


def test_a_200_json_error_is_event_0_of_the_robust_reading() -> None:
    r = analyze_bytes(
        b'{"error":{"message":"rate limited"}}', status=200, request=REQ, headers=JSON
    )
    assert [(w.quirk, w.event, w.message) for w in r.turn.workarounds] == [
        ("Q-SSE-ERROR-ENVELOPE", 0, "error reported inside the stream")
    ]
    assert r.turn.error == {"message": "rate limited"}


def test_an_empty_finish_reason_leaves_the_chunk_empty_and_finishreason_does_not() -> None:
    empty_finish = chunk({}, "")
    r = chunks_result(ROLE, empty_finish, empty_finish, TEXT, STOP)
    assert [x for x in found(r) if x["quirk"] == "Q-EMPTY-DELTA-CHUNKS"] == [
        F("Q-EMPTY-DELTA-CHUNKS", "INFO", "Q-EMPTY-DELTA-CHUNKS", 1, None, "2 chunks carry nothing")
    ]
    camel = {**TEXT, "choices": [{"index": 0, "delta": {}, "finishReason": "stop"}]}
    r = chunks_result(ROLE, TEXT, camel, camel)
    assert "Q-EMPTY-DELTA-CHUNKS" not in r.quirks


def test_an_error_chunk_without_choices_is_no_usage_chunk() -> None:
    r = chunks_result(ROLE, chunk(None, error={"message": "x"}, usage=USAGE))
    assert r.quirks == ["Q-SSE-ERROR-IN-CHUNK"]
