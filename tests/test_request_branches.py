"""Every rule and detector whose outcome depends on the request, with a control for each
branch: `stream_options.include_usage`, `tool_choice` (none, auto, required, named),
`parallel_tool_calls`, declared `tools`, `n`, `max_tokens` / `max_completion_tokens` and
`stream` itself. The same wire bytes are judged under different requests, so the request
is the only thing that moves a rule between pass, fail and not applicable."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.analysis import CaptureResult, analyze, analyze_bytes
from conformance.readers import exchange_transcript

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}}},
    },
}
ID_W, ID_T = "call_W1a2b3c4d5e6f7g8h9i0j1k2", "call_T1a2b3c4d5e6f7g8h9i0j1k2"


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
        "system_fingerprint": "fp_1",
        "choices": choices,
        **extra,
    }


def call(index: int, cid: str, name: str, args: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {
                "index": index,
                "id": cid,
                "type": "function",
                "function": {"name": name, "arguments": args},
            }
        ]
    }


def stream(*chunks: dict[str, Any], done: bool = True) -> bytes:
    out = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return out + (b"data: [DONE]\n\n" if done else b"")


ROLE = chunk({"role": "assistant", "content": None})
ONE_CALL = stream(
    ROLE, chunk(call(0, ID_W, "get_weather", '{"city": "Paris"}')), chunk({}, "tool_calls")
)
TWO_CALLS = stream(
    ROLE,
    chunk(call(0, ID_W, "get_weather", '{"city": "Paris"}')),
    chunk(call(1, ID_T, "get_time", '{"timezone": "Asia/Tokyo"}')),
    chunk({}, "tool_calls"),
)
PROSE = stream(chunk({"role": "assistant", "content": "Sunny."}), chunk({}, "stop"))
SILENT = stream(ROLE, chunk({}, "stop"))  # neither a call nor a word
PROSE_THEN_CALL = stream(
    chunk({"role": "assistant", "content": "Let me check."}),
    chunk(call(0, ID_W, "get_weather", '{"city": "Paris"}')),
    chunk({}, "tool_calls"),
)
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
ONE_CALL_WITH_USAGE = stream(
    ROLE,
    chunk(call(0, ID_W, "get_weather", '{"city": "Paris"}')),
    chunk({}, "tool_calls"),
    chunk(None, usage=USAGE),
)


def judge(raw: bytes, **request: Any) -> CaptureResult:
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [WEATHER, TIME],
        **request,
    }
    return analyze_bytes(raw, request=body)


def found(r: CaptureResult) -> set[tuple[str, str | None]]:
    """(rule, quirk) of every finding above INFO."""
    return {(f.rule, f.quirk) for f in r.findings if f.level != "INFO"}


# ------------------------------------------------------------------ R-USAGE


@pytest.mark.parametrize(
    ("request_", "raw", "status"),
    [
        ({"stream_options": {"include_usage": True}}, ONE_CALL, "fail"),
        ({"stream_options": {"include_usage": True}}, ONE_CALL_WITH_USAGE, "pass"),
        ({"stream_options": {"include_usage": False}}, ONE_CALL, "not applicable"),
        ({"stream_options": {"include_usage": "true"}}, ONE_CALL, "not applicable"),
        ({"stream_options": {}}, ONE_CALL, "not applicable"),
        ({"stream_options": True}, ONE_CALL, "not applicable"),
        ({}, ONE_CALL, "not applicable"),
        ({"stream": False, "stream_options": {"include_usage": True}}, ONE_CALL, "not applicable"),
    ],
)
def test_r_usage_is_judged_only_when_usage_is_asked(
    request_: dict[str, Any], raw: bytes, status: str
) -> None:
    r = judge(raw, **request_)
    assert r.rules["R-USAGE"] == status
    assert (("R-USAGE", None) in found(r)) is (status == "fail")
    assert r.verdict == ("fails" if status == "fail" else "conforms")


def test_r_usage_message_and_empty_stream() -> None:
    r = judge(ONE_CALL, stream_options={"include_usage": True})
    (f,) = [f for f in r.findings if f.rule == "R-USAGE"]
    assert (f.level, f.message) == (
        "MUST",
        "stream_options.include_usage asked, no usage object arrived",
    )
    empty = judge(b"", stream_options={"include_usage": True})
    assert empty.rules["R-USAGE"] == "not applicable"


# ------------------------------------------------------------------ R-TOOL-CHOICE


@pytest.mark.parametrize(
    ("choice", "raw", "status", "expected"),
    [
        ("none", ONE_CALL, "fail", {("R-TOOL-CHOICE", None)}),
        ("none", PROSE, "pass", set()),
        ("required", PROSE, "fail", {("R-TOOL-CHOICE", "Q-REQUIRED-NOT-ENFORCED")}),
        # a lone capture: Q-TOOLCALLS-MISSING-IN-STREAM needs the stream-false comparison
        ("required", SILENT, "fail", {("R-TOOL-CHOICE", None)}),
        ("required", PROSE_THEN_CALL, "fail", {("R-TOOL-CHOICE", "Q-REQUIRED-NOT-ENFORCED")}),
        ("required", ONE_CALL, "pass", set()),
        ("auto", PROSE_THEN_CALL, "not applicable", set()),
        (
            {"type": "function", "function": {"name": "get_time"}},
            ONE_CALL,
            "fail",
            {("R-TOOL-CHOICE", None)},
        ),
        ({"type": "function", "function": {"name": "get_weather"}}, ONE_CALL, "pass", set()),
        (
            {"type": "function", "function": {"name": "get_weather"}},
            PROSE,
            "fail",
            {("R-TOOL-CHOICE", None)},
        ),
        ({"type": "function", "function": {}}, ONE_CALL, "pass", set()),  # no name: no want
        ("auto", ONE_CALL, "not applicable", set()),
        ("auto", PROSE, "not applicable", set()),
        (None, PROSE, "not applicable", set()),
    ],
)
def test_r_tool_choice(
    choice: Any, raw: bytes, status: str, expected: set[tuple[str, str | None]]
) -> None:
    r = judge(raw, **({} if choice is None else {"tool_choice": choice}))
    assert r.rules["R-TOOL-CHOICE"] == status
    assert found(r) == expected


def test_r_tool_choice_messages() -> None:
    named = judge(ONE_CALL, tool_choice={"type": "function", "function": {"name": "get_time"}})
    assert [f.message for f in named.findings if f.rule == "R-TOOL-CHOICE"] == [
        "named tool_choice 'get_time' but called 'get_weather'"
    ]
    none = judge(ONE_CALL, tool_choice="none")
    assert [f.message for f in none.findings if f.rule == "R-TOOL-CHOICE"] == [
        'tool_choice "none" but a tool call was streamed'
    ]
    required = judge(PROSE, tool_choice="required")
    assert [f.message for f in required.findings if f.rule == "R-TOOL-CHOICE"] == [
        'tool_choice "required" but the model answered in prose, with no tool call'
    ]
    silent = judge(SILENT, tool_choice="required")
    assert [f.message for f in silent.findings if f.rule == "R-TOOL-CHOICE"] == [
        "tool_choice required but no tool call streamed; the stream-false comparison was not made"
    ]
    first = judge(PROSE_THEN_CALL, tool_choice="required")
    assert [(f.message, f.level) for f in first.findings if f.rule == "R-TOOL-CHOICE"] == [
        ('tool_choice "required" but prose came before the first call', "SHOULD")
    ]


def test_a_missing_forced_call_is_not_claimed_on_an_error_or_an_empty_stream() -> None:
    error = stream(
        chunk({"role": "assistant", "content": ""}),
        {"error": {"message": "overloaded", "type": "server_error"}},
    )
    r = judge(error, tool_choice="required")
    assert ("R-TOOL-CHOICE", "Q-TOOLCALLS-MISSING-IN-STREAM") not in found(r)
    t = exchange_transcript(
        "s",
        "live",
        {"body": {"stream": True, "tool_choice": "required", "tools": [WEATHER]}},
        500,
        {"content-type": "application/json"},
        b'{"error": {"message": "boom"}}',
    )
    assert ("R-TOOL-CHOICE", "Q-TOOLCALLS-MISSING-IN-STREAM") not in found(analyze(t))
    t = exchange_transcript(
        "s",
        "live",
        {"body": {"stream": True, "tool_choice": "required", "tools": [WEATHER]}},
        200,
        {"content-type": "text/event-stream"},
        SILENT,
    )
    t.meta["stream_comparison"] = {"made": True, "tool_calls": 1}  # what the runner sets
    assert ("R-TOOL-CHOICE", "Q-TOOLCALLS-MISSING-IN-STREAM") in found(analyze(t))
    t.transport_error = "cut"
    assert ("R-TOOL-CHOICE", "Q-TOOLCALLS-MISSING-IN-STREAM") not in found(analyze(t))


# ------------------------------------------------------------------ finish "stop" with calls

STOPPED = stream(ROLE, chunk(call(0, ID_W, "get_weather", '{"city": "Paris"}')), chunk({}, "stop"))


def test_stop_after_calls_depends_on_a_named_tool_choice() -> None:
    named = judge(STOPPED, tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert [(f.rule, f.quirk) for f in named.findings if f.level != "INFO"] == []
    assert "Q-FINISH-STOP-NAMED-TOOLCHOICE" in named.quirks
    assert named.verdict == "conforms"
    for request in ({}, {"tool_choice": "required"}, {"tool_choice": "auto"}):
        r = judge(STOPPED, **request)
        assert found(r) == {("R-FINISH-TOOL-CALLS", "Q-FINISH-STOP-WITH-TOOLCALLS")}
        assert "Q-FINISH-STOP-NAMED-TOOLCHOICE" not in r.quirks


# ------------------------------------------------------------------ calls written as text

MARKUP = stream(
    chunk(
        {
            "role": "assistant",
            "content": '<tool_call>{"name": "get_weather", '
            '"arguments": {"city": "Paris"}}'
            "</tool_call>",
        }
    ),
    chunk({}, "stop"),
)


def test_markup_in_content_is_a_call_as_text_unless_no_call_was_wanted() -> None:
    assert ("R-TOOLCALLS-STRUCTURED", "Q-TOOLCALL-AS-TEXT") in found(judge(MARKUP))
    assert ("R-TOOLCALLS-STRUCTURED", "Q-TOOLCALL-AS-TEXT") in found(
        judge(MARKUP, tool_choice="auto")
    )
    assert found(judge(MARKUP, tool_choice="none")) == set()


# ------------------------------------------------------------------ R-PARALLEL-DISABLED


@pytest.mark.parametrize(
    ("parallel", "raw", "status"),
    [
        (False, TWO_CALLS, "fail"),
        (False, ONE_CALL, "pass"),
        (True, TWO_CALLS, "not applicable"),
        (None, TWO_CALLS, "not applicable"),
        (0, TWO_CALLS, "not applicable"),  # only the JSON false disables
    ],
)
def test_r_parallel_disabled(parallel: Any, raw: bytes, status: str) -> None:
    r = judge(raw, **({} if parallel is None else {"parallel_tool_calls": parallel}))
    assert r.rules["R-PARALLEL-DISABLED"] == status
    quirk = ("R-PARALLEL-DISABLED", "Q-PARALLEL-TOOL-CALLS-IGNORED")
    assert (quirk in found(r)) is (status == "fail")
    if status == "fail":
        (f,) = [f for f in r.findings if f.rule == "R-PARALLEL-DISABLED"]
        assert f.message == "2 calls although parallel_tool_calls is false"


# ------------------------------------------------------------------ R-TOOL-DECLARED


def test_r_tool_declared() -> None:
    r = judge(ONE_CALL, tools=[TIME])
    assert r.rules["R-TOOL-DECLARED"] == "fail"
    assert [f.message for f in r.findings if f.rule == "R-TOOL-DECLARED"] == [
        "the model called 'get_weather', which the request does not declare"
    ]
    assert judge(ONE_CALL, tools=[WEATHER]).rules["R-TOOL-DECLARED"] == "pass"
    assert judge(ONE_CALL, tools=[]).rules["R-TOOL-DECLARED"] == "not applicable"
    assert judge(PROSE, tools=[TIME]).rules["R-TOOL-DECLARED"] == "not applicable"
    odd = judge(ONE_CALL, tools=[{"type": "function"}, "x"])  # nothing usable declared
    assert ("R-TOOL-DECLARED", None) not in found(odd)
    wrapper = stream(
        ROLE, chunk(call(0, ID_W, "multi_tool_use.parallel", "{}")), chunk({}, "tool_calls")
    )
    assert ("R-TOOL-DECLARED", None) not in found(judge(wrapper, tools=[WEATHER]))


# ------------------------------------------------------------------ n

TWO_CHOICES = stream(
    chunk({"role": "assistant", "content": None}, index=0),
    chunk({"role": "assistant", "content": None}, index=1),
    chunk(call(0, ID_W, "get_weather", '{"city": "Paris"}'), index=0),
    chunk(call(0, ID_T, "get_time", '{"timezone": "UTC"}'), index=1),
    chunk({}, "tool_calls", index=0),
    chunk({}, "tool_calls", index=1),
)


def test_n_two_keeps_choices_apart_and_allows_index_one() -> None:
    r = judge(TWO_CHOICES, n=2)
    assert "Q-CHUNK-ID-UNSTABLE" not in r.quirks
    for request in ({}, {"n": 1}, {"n": "2"}):  # a non-integer n reads as one choice
        r = judge(TWO_CHOICES, **request)
        (f,) = [f for f in r.findings if f.quirk == "Q-CHUNK-ID-UNSTABLE"][:1]
        assert f.message == "choice index 1 in a single-choice stream"
        assert f.pointer == "/choices/0/index"


def test_n_one_reads_index_zero_only_without_a_finding() -> None:
    assert "Q-CHUNK-ID-UNSTABLE" not in judge(ONE_CALL, n=1).quirks


# ------------------------------------------------------------------ max_tokens: R-LENGTH-VISIBLE

CUT = stream(ROLE, chunk(call(0, ID_W, "get_weather", '{"city": "Par')), chunk({}, "tool_calls"))
CUT_LENGTH = stream(ROLE, chunk(call(0, ID_W, "get_weather", '{"city": "Par')), chunk({}, "length"))


@pytest.mark.parametrize(
    ("request_", "raw", "status"),
    [
        ({"max_tokens": 8}, CUT, "fail"),
        ({"max_completion_tokens": 8}, CUT, "fail"),
        ({"max_tokens": 8}, CUT_LENGTH, "pass"),
        ({"max_tokens": 8}, ONE_CALL, "not applicable"),  # nothing was cut
        ({"max_tokens": None}, CUT, "not applicable"),
        ({}, CUT, "not applicable"),
    ],
)
def test_r_length_visible_needs_a_token_limit_and_a_cut_call(
    request_: dict[str, Any], raw: bytes, status: str
) -> None:
    r = judge(raw, **request_)
    assert r.rules["R-LENGTH-VISIBLE"] == status
    length = [f for f in r.findings if f.rule == "R-LENGTH-VISIBLE"]
    assert bool(length) is (status == "fail")
    if length:
        assert length[0].quirk == "Q-ARGS-TRUNCATED"
        assert length[0].message == (
            "call 0's arguments are cut but finish_reason is 'tool_calls', not \"length\""
        )


# ------------------------------------------------------------------ stream: R-SSE-CONTENT-TYPE


def _exchange(stream_: bool | None, ctype: str, body: bytes, status: int = 200) -> CaptureResult:
    request = {"model": "m", "tools": [WEATHER]}
    if stream_ is not None:
        request["stream"] = stream_
    return analyze(
        exchange_transcript("s", "live", {"body": request}, status, {"content-type": ctype}, body)
    )


def test_content_type_is_judged_only_for_a_stream_request() -> None:
    assert _exchange(True, "text/event-stream", ONE_CALL).rules["R-SSE-CONTENT-TYPE"] == "pass"
    assert _exchange(True, "text/plain", ONE_CALL).rules["R-SSE-CONTENT-TYPE"] == "pass"
    plain = _exchange(True, "text/plain", b"hello")
    assert [f.message for f in plain.findings if f.rule == "R-SSE-CONTENT-TYPE"] == [
        "stream requested; got text/plain that is neither SSE nor JSON: hello"
    ]
    other = _exchange(True, "application/json; charset=utf-8", b'{"object": "list"}')
    assert [f.message for f in other.findings if f.rule == "R-SSE-CONTENT-TYPE"] == [
        "stream requested; got application/json"
    ]
    for stream_ in (False, None):
        r = _exchange(stream_, "text/plain", b"hello")
        assert r.rules["R-SSE-CONTENT-TYPE"] == "not applicable"
        assert not [f for f in r.findings if f.rule == "R-SSE-CONTENT-TYPE"]
    assert analyze_bytes(ONE_CALL).rules["R-SSE-CONTENT-TYPE"] == "not applicable"


def test_http_rejections_are_named_from_the_request() -> None:
    tools = b'{"error": {"message": "tools are not supported with stream"}}'
    assert _exchange(True, "application/json", tools, 400).quirks == ["Q-STREAM-TOOLS-UNSUPPORTED"]
    assert _exchange(False, "application/json", tools, 400).quirks == []
    options = b'{"error": {"message": "Unknown field stream_options"}}'
    assert _exchange(True, "application/json", options, 400).quirks == ["Q-STREAM-OPTIONS-REJECTED"]
    assert _exchange(True, "application/json", options, 500).quirks == []
    r = _exchange(True, "application/json", b'{"error": {"message": "nope"}}', 403)
    assert [(f.rule, f.message) for f in r.findings if f.level != "INFO"] == [
        ("R-HTTP-OK", "HTTP 403: nope")
    ]


def test_json_completion_to_a_stream_request_is_a_downgrade() -> None:
    completion = json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": ID_W,
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": "{}"},
                            }
                        ],
                    },
                }
            ],
        }
    ).encode()
    downgraded = _exchange(True, "application/json", completion)
    assert "Q-STREAM-DOWNGRADED" in downgraded.quirks
    assert "Q-STREAM-DOWNGRADED" not in _exchange(False, "application/json", completion).quirks


# ------------------------------------------------------------------ no request at all


def test_without_a_request_the_request_rules_are_not_applicable() -> None:
    r = analyze_bytes(TWO_CALLS)
    for rule in (
        "R-USAGE",
        "R-TOOL-CHOICE",
        "R-PARALLEL-DISABLED",
        "R-TOOL-DECLARED",
        "R-LENGTH-VISIBLE",
        "R-SSE-CONTENT-TYPE",
        "R-ROUNDTRIP-ACCEPTED",
    ):
        assert r.rules[rule] == "not applicable", rule
    assert r.verdict == "conforms"


def test_named_tool_choice_names_the_first_wrong_call() -> None:
    r = judge(TWO_CALLS, tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert [f.message for f in r.findings if f.rule == "R-TOOL-CHOICE"] == [
        "named tool_choice 'get_weather' but called 'get_time'"
    ]
    no_function = judge(ONE_CALL, tool_choice={"type": "function"})
    assert not [f for f in no_function.findings if f.rule == "R-TOOL-CHOICE"]


def test_r_tool_declared_edges() -> None:
    nameless = stream(ROLE, chunk(call(0, ID_W, "", '{"city": "Paris"}')), chunk({}, "tool_calls"))
    assert not [f for f in judge(nameless, tools=[TIME]).findings if f.rule == "R-TOOL-DECLARED"]
    not_a_function = judge(ONE_CALL, tools=[{"type": "function", "function": "get_time"}])
    assert not [f for f in not_a_function.findings if f.rule == "R-TOOL-DECLARED"]
    mixed = judge(TWO_CALLS, tools=[WEATHER, {"type": "function", "function": "get_time"}])
    assert [f.message for f in mixed.findings if f.rule == "R-TOOL-DECLARED"] == [
        "the model called 'get_time', which the request does not declare"
    ]
