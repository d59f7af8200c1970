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
