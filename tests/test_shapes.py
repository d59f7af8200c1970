"""Shapes from public bug reports that the analyzer once missed or could not name, each
with a stream that shows it (a failing control, which today's main grades wrongly), a
look-alike that must not (a passing control) and, where the shape needs something the
input may lack, a stream on which it is not applicable."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.analysis import analyze_chunks
from conformance.client import accumulate

TOOLS = [
    {
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
]
REQUEST = {"model": "m", "stream": True, "tools": TOOLS}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def text_stream(*pieces: str, finish: str = "stop") -> list[dict[str, Any]]:
    first = [chunk({"role": "assistant", "content": ""})]
    return first + [chunk({"content": p}) for p in pieces] + [chunk({}, finish)]


# Each family's markup as its chat template writes a call, split over deltas the way a
# tokenizer splits it (the marker itself cut in two where it is long enough).
FAMILIES = {
    "gpt-oss harmony": (
        "<|chan",
        "nel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
        '{"city":"Paris"}',
        "<|call|>",
    ),
    "Llama python_tag": ("<|python", '_tag|>get_weather.call(city="Paris")'),
    "Mistral [TOOL_CALLS]": ("[TOOL_", 'CALLS]get_weather[ARGS]{"city": "Paris"}'),
    "Kimi sections": (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0",
        '<|tool_call_argument_begin|>{"city":"Paris"}<|tool_call_end|>',
    ),
    "Qwen3-Coder XML": (
        "<tool_call>\n<func",
        "tion=get_weather>\n<parameter=city>\nParis\n</parameter>\n",
        "</function>\n</tool_call>",
    ),
    "GLM arg_key": ("get_weather\n<arg_", "key>city</arg_key>\n<arg_value>Paris</arg_value>"),
    "DeepSeek tokens": (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n",
        '```json\n{"city":"Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    ),
    "MiniMax": ('<minimax:tool_call>\n<invoke name="get_weather">', "</invoke>"),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_tool_call_markup_of_every_family_in_content_is_a_call_as_text(family: str) -> None:
    r = analyze_chunks(text_stream(*FAMILIES[family]), request=REQUEST)
    assert "Q-TOOLCALL-AS-TEXT" in r.quirks, family
    assert r.verdict == "fails"
    assert r.impact["robust"].status == "unrecoverable"  # the call is not on the wire


@pytest.mark.parametrize(
    "prose",
    [
        "The function returns the weather; call it with a city.",
        "Use the python tag or the channel you like: to=me, functions.py is fine.",
        "In Mistral the token is TOOL CALLS; GLM writes an arg key.",
    ],
)
def test_prose_about_tools_is_not_markup(prose: str) -> None:
    r = analyze_chunks(text_stream(*prose.split(" ")), request=REQUEST)
    assert "Q-TOOLCALL-AS-TEXT" not in r.quirks and r.verdict == "conforms"


def test_markup_needs_content_to_apply() -> None:
    """Not applicable: a stream of structured calls without content text shows no markup."""
    calls = [
        chunk({"role": "assistant", "content": None}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":"Paris"}'}}]}),
        chunk({}, "tool_calls"),
    ]
    r = analyze_chunks(calls, request=REQUEST)
    assert not {"Q-TOOLCALL-AS-TEXT", "Q-TOOLCALL-DUPLICATED-IN-CONTENT"} & set(r.quirks)
    assert accumulate(calls).calls[0].name == "get_weather"


def _object_calls() -> list[dict[str, Any]]:
    opener = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    return [
        chunk({"role": "assistant", "content": None}),
        chunk({"tool_calls": opener}),
        chunk({"tool_calls": {"index": 0, "function": {"arguments": '{"city":"Paris"}'}}}),
        chunk({}, "tool_calls"),
    ]


def test_tool_calls_as_one_object_are_read_as_calls_and_flagged() -> None:
    """Once graded a call-free stream with the robust client ok: never again."""
    r = analyze_chunks(_object_calls(), request=REQUEST)
    assert "Q-TOOLCALLS-NOT-ARRAY" in r.quirks
    assert [(c["name"], c["arguments"]) for c in r.tool_calls["robust"]] == [
        ("get_weather", '{"city":"Paris"}')
    ]
    assert r.impact["robust"].status == "ok" and r.verdict == "quirk"
    assert r.impact["naive"].status != "ok"
    assert "Q-FINISH-TOOLCALLS-WITHOUT-DELTAS" not in r.quirks
    turn = accumulate(_object_calls())
    assert turn.calls[0].name == "get_weather"
    assert "Q-TOOLCALLS-NOT-ARRAY" in turn.quirks


def test_tool_calls_as_an_array_are_not_flagged() -> None:
    calls = _object_calls()
    for c in calls:
        d = c["choices"][0]["delta"]
        if isinstance(d.get("tool_calls"), dict):
            d["tool_calls"] = [d["tool_calls"]]
    r = analyze_chunks(calls, request=REQUEST)
    assert "Q-TOOLCALLS-NOT-ARRAY" not in r.quirks and r.verdict == "conforms"


def _call_stream(*tool_deltas: dict[str, Any], role: Any = "assistant") -> list[dict[str, Any]]:
    return (
        [chunk({"role": role, "content": None})]
        + [chunk({"tool_calls": [tc]}) for tc in tool_deltas]
        + [chunk({}, "tool_calls")]
    )


def _opener(name: str | None, call_id: str = "call_Ab3dEf6hIj9kLm2nOp5qRs8t") -> dict[str, Any]:
    fn: dict[str, Any] = {"arguments": ""} if name is None else {"name": name, "arguments": ""}
    return {"index": 0, "id": call_id, "type": "function", "function": fn}


def _frag(arguments: str) -> dict[str, Any]:
    return {"index": 0, "function": {"arguments": arguments}}


TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}},
    },
}
TWO_TOOLS = dict(REQUEST, tools=[*TOOLS, TIME_TOOL])


# -- delta.role: "" (read as absent, like null; a schema-validating client rejects it)


def test_an_empty_role_is_flagged_and_the_call_is_read() -> None:
    """Once graded conforms: the schema's role enum refuses "" as it refuses null."""
    r = analyze_chunks(_call_stream(_opener("get_weather"), _frag('{"city":"Paris"}'), role=""))
    assert "Q-ENVELOPE-FIELDS-MISSING" in r.quirks and r.verdict == "quirk"
    assert r.impact["robust"].status == "ok" and r.tool_calls["robust"][0]["name"] == "get_weather"


def test_the_assistant_role_and_an_absent_one_are_not_flagged() -> None:
    stream = _call_stream(_opener("get_weather"), _frag('{"city":"Paris"}'))
    assert analyze_chunks(stream).verdict == "conforms"
    del stream[0]["choices"][0]["delta"]["role"]  # not applicable: no role sent at all
    assert "Q-ENVELOPE-FIELDS-MISSING" not in analyze_chunks(stream).quirks


# -- a call whose function.name never arrives


def _nameless() -> list[dict[str, Any]]:
    return _call_stream(_opener(None), _frag('{"city":"Paris"}'))


def test_a_name_that_never_arrives_is_named_and_not_guessed_among_several_tools() -> None:
    """Once a rule finding with no quirk id."""
    r = analyze_chunks(_nameless(), request=TWO_TOOLS)
    assert "Q-NAME-NEVER-SENT" in r.quirks and r.verdict == "fails"
    assert r.impact["robust"].status == "unrecoverable"
    assert "Q-NAME-NEVER-SENT" in r.impact["robust"].detail


def test_a_name_that_never_arrives_is_the_one_declared_tool() -> None:
    r = analyze_chunks(_nameless(), request=REQUEST)
    assert "Q-NAME-NEVER-SENT" in r.quirks and r.verdict == "quirk"
    assert r.impact["robust"].status == "ok"
    turn = accumulate(_nameless(), tools=TOOLS)
    assert turn.calls[0].name == "get_weather" and turn.recoverable


def test_a_late_name_is_not_a_name_never_sent() -> None:
    late = _call_stream(
        _opener(None), {"index": 0, "function": {"name": "get_weather"}}, _frag('{"city":"Paris"}')
    )
    r = analyze_chunks(late, request=TWO_TOOLS)
    assert "Q-NAME-NEVER-SENT" not in r.quirks and r.impact["robust"].status == "ok"


# -- the same index and the same id reused for a second call under another name


def _reused_index_and_id() -> list[dict[str, Any]]:
    return _call_stream(
        _opener("get_weather"),
        _frag('{"city":"Paris"}'),
        _opener("get_time"),
        _frag('{"tz":"UTC"}'),
    )


def test_a_second_call_on_the_same_index_and_id_is_split_by_the_declared_names() -> None:
    """Once one merged call `{…}{…}` (robust unrecoverable) named Q-NAME-FRAGMENTED."""
    r = analyze_chunks(_reused_index_and_id(), request=TWO_TOOLS)
    assert "Q-INDEX-AND-ID-REUSED" in r.quirks and "Q-NAME-FRAGMENTED" not in r.quirks
    assert [(c["name"], c["arguments"]) for c in r.tool_calls["robust"]] == [
        ("get_weather", '{"city":"Paris"}'),
        ("get_time", '{"tz":"UTC"}'),
    ]
    assert r.impact["robust"].status == "ok" and r.impact["naive"].status != "ok"
    turn = accumulate(_reused_index_and_id(), tools=TWO_TOOLS["tools"])
    assert [c.name for c in turn.calls] == ["get_weather", "get_time"]


def test_a_name_sent_in_pieces_is_not_a_second_call() -> None:
    pieces = _call_stream(
        _opener("get_"), {"index": 0, "function": {"name": "weather"}}, _frag('{"city":"Paris"}')
    )
    r = analyze_chunks(pieces, request=TWO_TOOLS)
    assert "Q-INDEX-AND-ID-REUSED" not in r.quirks and "Q-NAME-FRAGMENTED" in r.quirks
    assert [c["name"] for c in r.tool_calls["robust"]] == ["get_weather"]


def test_without_the_declared_tools_a_reused_id_is_not_judged() -> None:
    """Not applicable: without the request's tools a second name cannot be told from a
    name sent in pieces (a JSONL capture carries no request)."""
    r = analyze_chunks(_reused_index_and_id())
    assert "Q-INDEX-AND-ID-REUSED" not in r.quirks


# -- the whole arguments re-sent after a prefix that was itself incomplete


def _flush_after_prefix() -> list[dict[str, Any]]:
    return _call_stream(
        _opener("get_weather"), _frag('{"city": '), _frag('"Par'), _frag('{"city": "Paris"}')
    )


def test_a_flush_after_an_incomplete_prefix_keeps_the_resent_object() -> None:
    """Once named Q-ARGS-CUMULATIVE (every delta re-sent), which the stream does not do."""
    r = analyze_chunks(_flush_after_prefix(), request=REQUEST)
    assert "Q-ARGS-DUPLICATED-ON-FLUSH" in r.quirks and "Q-ARGS-CUMULATIVE" not in r.quirks
    assert r.tool_calls["robust"][0]["arguments"] == '{"city": "Paris"}'
    assert r.impact["robust"].status == "ok" and r.impact["naive"].status != "ok"


def test_cumulative_streaming_is_not_a_flush() -> None:
    cumulative = _call_stream(
        _opener("get_weather"),
        _frag('{"city": '),
        _frag('{"city": "Par'),
        _frag('{"city": "Paris"}'),
    )
    r = analyze_chunks(cumulative, request=REQUEST)
    assert "Q-ARGS-CUMULATIVE" in r.quirks and "Q-ARGS-DUPLICATED-ON-FLUSH" not in r.quirks
    assert r.tool_calls["robust"][0]["arguments"] == '{"city": "Paris"}'


def test_plain_fragments_are_no_flush() -> None:
    plain = _call_stream(_opener("get_weather"), _frag('{"city": '), _frag('"Paris"}'))
    r = analyze_chunks(plain, request=REQUEST)
    assert r.verdict == "conforms"
