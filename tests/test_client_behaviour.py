"""conformance.client from the outside, every expected value written here by hand: repaired
arguments for cut JSON (literal input -> literal output), the conversions
(completion_as_chunk, to_raw_chunk), the round-trip policy and messages, and hand-written
streams (chunks as raw dicts; absent, null and "" distinct) with the calls and the notes the
accumulator must give for them, whichever of its paths (fast or general) a delta takes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import client as cl
from conformance.client import (
    RoundTripPolicy,
    ToolCall,
    ToolCallAccumulator,
    Turn,
    Workaround,
    accumulate,
    assistant_message,
    completion_as_chunk,
    join_tail,
    mistral_id,
    repair_json,
    to_raw_chunk,
    tool_result_messages,
)

# ------------------------------------------------------------------ JSON repair

REPAIRS = [
    # containers cut right after they open, or after a value
    ("{", "{}"),
    ("[", "[]"),
    ('{"a": 1', '{"a": 1}'),
    ('{"a": 1 ', '{"a": 1}'),  # trailing whitespace dropped before closing
    (' {"a": 1 ', ' {"a": 1}'),  # leading whitespace kept: only the tail is trimmed
    ("[1, 2", "[1, 2]"),
    ('{"a": [1, {"b": "c', '{"a": [1, {"b": "c"}]}'),
    ('{"a": {', '{"a": {}}'),
    ('{"a": [', '{"a": []}'),
    ('{"a": [1]', '{"a": [1]}'),
    ('{"a": {"b": 1}, "c": [', '{"a": {"b": 1}, "c": []}'),
    ('{"a": [], "b": {}', '{"a": [], "b": {}}'),
    ("[[1], [2", "[[1], [2]]"),
    # a member without its value is dropped with its comma, never invented
    ('{"a"', "{}"),
    ('{"a":', "{}"),
    ('{"a": ', "{}"),
    ('{"ab', "{}"),
    ('{"a\\', "{}"),
    ('{"a": 1,', '{"a": 1}'),
    ('{"a": 1, ', '{"a": 1}'),
    ('{"a": 1, "b', '{"a": 1}'),
    ('{"a": 1, "b"', '{"a": 1}'),
    ('{"a": 1, "b":', '{"a": 1}'),
    ('{"a":1,"b": ', '{"a":1}'),
    ("[1, ", "[1]"),
    ("[1,2,", "[1,2]"),
    ('{"a": [1,', '{"a": [1]}'),
    ('{"a": -', "{}"),
    ('{"a": 1, "b": -', '{"a": 1}'),
    ("[1, -", "[1]"),
    # cut strings: closed, minus a half escape
    ('{"a": "Par', '{"a": "Par"}'),
    ('{"a": "', '{"a": ""}'),
    ('{"a": "x\\', '{"a": "x"}'),
    ('{"a": "x\\\\', '{"a": "x\\\\"}'),  # an escaped backslash is whole: kept
    ('{"a": "x\\\\\\', '{"a": "x\\\\"}'),  # three: the last one is half an escape
    ('{"a": "x\\nab', '{"a": "x\\nab"}'),  # a whole escape is kept with what follows
    ('{"a": "x\\"y', '{"a": "x\\"y"}'),
    ('{"a": "\\u00e9', '{"a": "\\u00e9"}'),  # a whole \\u escape is kept
    ('{"a": "x\\u00e9y', '{"a": "x\\u00e9y"}'),
    ('{"a": "x\\u00', '{"a": "x"}'),
    ('{"a": "x\\u', '{"a": "x"}'),
    ('{"a": "\\', '{"a": ""}'),
    ('{"a": "b", "c": "d', '{"a": "b", "c": "d"}'),
    ('{"a": "b\\/c', '{"a": "b\\/c"}'),
    ('"abc', '"abc"'),  # a cut top-level string is a prefix of a value too
    # cut literals: their only completion
    ('{"a": t', '{"a": true}'),
    ('{"a": tr', '{"a": true}'),
    ('{"a": true', '{"a": true}'),
    ('{"a": f', '{"a": false}'),
    ('{"a": fals', '{"a": false}'),
    ('{"a": n', '{"a": null}'),
    ('{"a": nul', '{"a": null}'),
    ('{"a": true, "b": fals', '{"a": true, "b": false}'),
    ('{"a": null, "b": 2', '{"a": null, "b": 2}'),
    ("[true, false, nu", "[true, false, null]"),
    ("tr", "true"),
    # cut numbers: the valid part kept
    ('{"a": 1.', '{"a": 1}'),
    ('{"a": 1.5e', '{"a": 1.5}'),
    ('{"a": 1.5e+', '{"a": 1.5}'),
    ('{"a": -2', '{"a": -2}'),
    ('{"a": 12', '{"a": 12}'),
    ('{"a": 0.25', '{"a": 0.25}'),
    ('{"a": 2E1', '{"a": 2E1}'),
    ("[10, 2", "[10, 2]"),
    ("1.", "1"),
    ('{"a": 1.5, "b": 2', '{"a": 1.5, "b": 2}'),
    ('{"a": 1, "b": "x"', '{"a": 1, "b": "x"}'),
]


@pytest.mark.parametrize("text, expected", REPAIRS)
def test_repair_json_completes_a_cut_text(text: str, expected: str) -> None:
    assert repair_json(text) == expected


NOT_REPAIRED = [
    '{"a": 1}',  # whole already
    "[]",
    "[] ",
    '"abc"',
    "12",
    "true",
    "",
    "   ",
    "-",
    '{"a": 1}}',  # a stray closer
    "[1]]",
    "]",
    '{"a": 1}{"b"',  # two documents
    '{"a": 1} {',
    '"a" "b',
    "1 [2,",
    "{1",  # a key that is not a string
    '{"a" 1',  # no colon
    '{"a": "b" "c"',  # no comma
    '{"a": 1, }',  # trailing comma then a closer
    "[1, ]",
    "[}",
    '{"a": x',  # a bad token cut at the end
    '{"a": truex}',
    '{"a": tru e',
    '{"a": nulL',
    '{"a": 01',
    '{"a": 1.}',
    '{"a": 1e}',
    '{"a": "x\ny',  # a raw control character in a string
    '{"a": "\\x',  # not an escape
    '{"a": "\\uzz12',  # not hex
    '{"a": "\\u12z4"',
    '{"a": "\\q", "b": 1',
    '{"a": "\\uzz", "b": 1',
    '{"a": "\x01", "b": 1',
    '{"a": +1',
    '{"a": .5',
    "[" * 3000,  # too deep to parse once closed
    # more after a whole top-level value
    '{"a": 1},',
    '"a",',
    "true,",
    "12,",
    # a cut number where no value may start
    "[1 -",
    '{"a": 1 -',
    '{"a": 1, -',
    "{-",
    # a bad string after a comma
    '[1,"\\x"',
    '["\\x", ',  # (a repair that went on past a bad escape would loop here)
    '{"a\\X',  # a key cut after a bad escape: not a prefix of JSON, not dropped
    '{"b": 1, "a\\X',
    '[1,"\\uzz"',
    '[1,"\x01"',
]


@pytest.mark.parametrize("text", NOT_REPAIRED)
def test_repair_json_refuses_what_is_not_a_cut_json_value(text: str) -> None:
    assert repair_json(text) is None


@pytest.mark.parametrize(
    "text, expected",
    [
        ("{}{}", ["{}", "{}"]),
        ('{"a":1}{"b":2}', ['{"a":1}', '{"b":2}']),
        ('{"a":1} \n{"b":2} ', ['{"a":1}', '{"b":2}']),
        (' [1] "x" 2', ["[1]", '"x"', "2"]),
        ('{"a":1}', None),  # one document is not two
        ('{"a":1}  ', None),
        ("", None),
        ("  ", None),
        ('{"a":1}{"b"', None),  # the second is cut: not whole documents
        ('{"a":1}x', None),
    ],
)
def test_split_json_documents(text: str, expected: list[str] | None) -> None:
    assert cl._split_json_documents(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a":1}{"a":1}', '{"a":1}'),
        ('{"a":1}' * 8, '{"a":1}'),
        ('{"a":1}' * 9, None),  # at most eight repeats are collapsed
        ("[1][1][1]", "[1]"),
        ('{"a":1}{"a":2}', None),
        ("abab", None),  # repeated, but the part is not JSON
        ('{"a":1}', None),
    ],
)
def test_kfold(text: str, expected: str | None) -> None:
    assert cl._kfold(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a":1}', True),
        ("  [1] ", True),
        ('"x"', False),
        ("1", False),
        ("", False),
        ("  ", False),
        ('{"a":', False),
        ("{[", False),
    ],
)
def test_complete_json(text: str, expected: bool) -> None:
    assert cl._complete_json(text) is expected


@pytest.mark.parametrize(
    "text, i, expected",
    [
        ('"abc"', 0, 5),
        ('x"abc" ', 1, 6),
        ('"a\\"b"', 0, 6),
        ('"a\\u00e9"', 0, 9),
        ('"abc', 0, -1),
        ('"a\\', 0, -1),
        ('"a\\u00', 0, -1),
        ('"a\\uzz00"', 0, -2),
        ('"a\\u0z"', 0, -2),
        ('"a\\x"', 0, -2),
        ('"a\nb"', 0, -2),
        ('"a\x1fb"', 0, -2),
        ('"a b"', 0, 5),
        ('"\\/\\b\\f\\n\\r\\t\\\\"', 0, 16),
    ],
)
def test_string_end(text: str, i: int, expected: int) -> None:
    assert cl._string_end(text, i) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ('"abc', '"abc"'),
        ('"a\\', '"a"'),
        ('"a\\\\', '"a\\\\"'),
        ('"a\\\\\\', '"a\\\\"'),
        ('"a\\u12', '"a"'),
        ('"a\\u1234', '"a\\u1234"'),
        ('"a\\nb', '"a\\nb"'),
        ('"a\\\\u12', '"a\\\\u12"'),  # the backslash is escaped: "u12" is plain text
        ('"', '""'),
    ],
)
def test_cut_string(text: str, expected: str) -> None:
    assert cl._cut_string(text) == expected


def test_repair_keeps_text_before_a_string_cut_at_depth() -> None:
    assert repair_json('{"a": {"b": [1, "x\\u0') == '{"a": {"b": [1, "x"]}}'


# ------------------------------------------------------------------ small helpers


def test_join_tail_joins_the_newest_and_merges_blocks_while_the_one_before_is_short() -> None:
    parts = ["a" * 1000, "b" * 300, "c" * 100] + ["d"] * 62
    join_tail(parts)
    assert parts == ["a" * 1000, "b" * 300 + "c" * 100 + "d" * 62]
    parts = ["x" * 1000] + ["y"] * 64
    join_tail(parts)
    assert parts == ["x" * 1000, "y" * 64]
    parts = [str(i % 10) for i in range(65)]
    join_tail(parts)
    assert parts == ["".join(str(i % 10) for i in range(65))]
    # the block before is longer than twice the tail: left alone
    # the newest 32 are joined at once, a long fragment among them included
    parts = ["a" * 1000] + ["b"] * 33 + ["c" * 100] + ["d"] * 30
    join_tail(parts)
    assert parts == ["a" * 1000, "b" * 33 + "c" * 100 + "d" * 30]
    parts = ["p" * 85, "q" * 10] + ["r"] * 32
    join_tail(parts)
    assert parts == ["p" * 85, "q" * 10 + "r" * 32]
    parts = ["p" * 84, "q" * 10] + ["r"] * 32  # exactly twice: merged
    join_tail(parts)
    assert parts == ["p" * 84 + "q" * 10 + "r" * 32]
    parts = ["p" * 64, "q" * 32] + ["r"] * 32
    join_tail(parts)
    assert parts == ["p" * 64 + "q" * 32 + "r" * 32]


@pytest.mark.parametrize(
    "tools, expected",
    [
        (
            [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
            {"f": {"type": "object"}},
        ),
        ([{"name": "g", "parameters": {"required": ["x"]}}], {"g": {"required": ["x"]}}),
        ([{"function": {"name": "f", "parameters": "no"}}], {"f": {}}),
        ([{"function": {"name": "f"}}], {"f": {}}),
        ([{"function": "not a dict", "name": "h"}], {"h": {}}),
        (["not a tool", {"function": {"name": "f"}}], {"f": {}}),
        ([{"function": {"name": 3}}, {"function": {"name": "k"}}], {"k": {}}),
        ({"function": {"name": "f"}}, {}),
        ("tools", {}),
        (None, {}),
        (7, {}),
    ],
)
def test_declared_tools(tools: Any, expected: dict[str, Any]) -> None:
    assert cl._declared_tools(tools) == expected


@pytest.mark.parametrize(
    "value, expected", [("x", "x"), ("", None), (None, None), (3, None), (["x"], None)]
)
def test_nonempty_str(value: Any, expected: str | None) -> None:
    assert cl._nonempty_str(value) == expected


# ------------------------------------------------------------------ conversions


def test_completion_as_chunk_literal() -> None:
    body = {
        "id": "x",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"a":1}'},
                        },
                        "junk",
                        {
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "g", "arguments": "{}"},
                        },
                    ],
                },
            },
            "not a choice",
            {"index": 2, "message": {"content": "hi"}, "finish_reason": "stop"},
            {"message": None},
        ],
        "usage": {"total_tokens": 5},
    }
    assert completion_as_chunk(body) == {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "delta": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"a":1}'},
                            "index": 0,
                        },
                        {
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "g", "arguments": "{}"},
                            "index": 2,
                        },
                    ],
                },
            },
            {"index": 2, "delta": {"content": "hi"}, "finish_reason": "stop"},
            {"index": 0, "delta": {}, "finish_reason": None},
        ],
        "usage": {"total_tokens": 5},
    }
    # the body is not changed in place
    assert body["choices"][0]["message"]["tool_calls"][0] == {
        "id": "call_a",
        "type": "function",
        "function": {"name": "f", "arguments": '{"a":1}'},
    }


@pytest.mark.parametrize(
    "body, expected",
    [
        ({}, {"choices": [], "usage": None}),
        ({"choices": None, "usage": None}, {"choices": [], "usage": None}),
        (
            {"choices": [{"index": 1, "message": {"tool_calls": "x"}}]},
            {
                "choices": [{"index": 1, "delta": {"tool_calls": "x"}, "finish_reason": None}],
                "usage": None,
            },
        ),
        (
            {"choices": [{"index": 0, "message": {"content": "a"}}, {"index": 1, "message": {}}]},
            {
                "choices": [
                    {"index": 0, "delta": {"content": "a"}, "finish_reason": None},
                    {"index": 1, "delta": {}, "finish_reason": None},
                ],
                "usage": None,
            },
        ),
    ],
)
def test_completion_as_chunk_edges(body: dict[str, Any], expected: dict[str, Any]) -> None:
    assert completion_as_chunk(body) == expected


def test_a_downgraded_completion_reads_as_a_stream() -> None:
    body = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "f", "arguments": '{"a": 1}'},
                        },
                        {
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "g", "arguments": "{}"},
                        },
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 3},
    }
    turn = accumulate([completion_as_chunk(body)])
    assert [(c.index, c.id, c.name, c.arguments, c.provider_index) for c in turn.calls] == [
        (0, "call_a", "f", '{"a": 1}', 0),
        (1, "call_b", "g", "{}", 1),
    ]
    assert turn.finish_reason == "tool_calls"
    assert turn.usage == {"prompt_tokens": 3}
    assert turn.workarounds == []


class _ToDict:
    def to_dict(self) -> dict[str, Any]:
        return {"via": "to_dict"}

    def model_dump(self, **kw: Any) -> dict[str, Any]:
        return {"via": "model_dump"}


class _Dump:
    def __init__(self) -> None:
        self.seen: dict[str, Any] = {}

    def model_dump(self, **kw: Any) -> dict[str, Any]:
        self.seen = kw
        return {"via": "model_dump"}


def test_to_raw_chunk() -> None:
    d = {"a": 1}
    assert to_raw_chunk(d) is d
    assert to_raw_chunk(_ToDict()) == {"via": "to_dict"}
    dump = _Dump()
    assert to_raw_chunk(dump) == {"via": "model_dump"}
    assert dump.seen == {"exclude_unset": True, "mode": "json"}
    assert to_raw_chunk('{"b": 2}') == {"b": 2}
    assert to_raw_chunk(b"[1]") == [1]
    other = object()
    assert to_raw_chunk(other) is other
    assert to_raw_chunk(None) is None


def test_to_raw_chunk_of_a_pydantic_model_keeps_unset_fields_out() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Delta(pydantic.BaseModel):
        content: str | None = None
        role: str | None = None

    class Choice(pydantic.BaseModel):
        index: int
        delta: Delta
        finish_reason: str | None = None

    class Chunk(pydantic.BaseModel):
        choices: list[Choice]

    chunk = Chunk(choices=[Choice(index=0, delta=Delta(content=""))])
    assert to_raw_chunk(chunk) == {"choices": [{"index": 0, "delta": {"content": ""}}]}


# ------------------------------------------------------------------ round trip


def test_mistral_id() -> None:
    # Ids of the right shape pass through, upper and lower case alike.
    for ok in ("abcDEF123", "ABCDEFGHI", "abcdefghi", "012345678"):
        assert mistral_id(ok) == ok
    # Others are remapped: sha256 of the UTF-8 id, first 8 bytes big-endian, 9 base-62 digits
    # least significant first (values worked out with hashlib outside the module).
    assert mistral_id("call_abc") == MISTRAL["call_abc"]
    assert mistral_id("") == MISTRAL[""]
    assert mistral_id("abcdefgh") == MISTRAL["abcdefgh"]  # 8 characters: remapped
    assert mistral_id("abc-efghi") == MISTRAL["abc-efghi"]
    assert mistral_id("caf\u00e9_1") == MISTRAL["caf\u00e9_1"]


MISTRAL = {
    "call_abc": "zcLyzgNRz",
    "": "KLzhoi1sZ",
    "abcdefgh": "KGOlc6ZIb",
    "abc-efghi": "gHFzrz3E1",
    "caf\u00e9_1": "qvQ8MWp7c",
}


@pytest.mark.parametrize(
    "entry, expected",
    [
        (None, RoundTripPolicy("null", False, None, False)),
        ({}, RoundTripPolicy("null", False, None, False)),
        ({"roundtrip": None}, RoundTripPolicy("null", False, None, False)),
        ({"roundtrip": {}}, RoundTripPolicy("null", False, None, False)),
        ({"roundtrip": {"content": "empty"}}, RoundTripPolicy("empty", False, None, False)),
        ({"roundtrip": {"content": "omit"}}, RoundTripPolicy("omit", False, None, False)),
        ({"roundtrip": {"tool_message_name": True}}, RoundTripPolicy("null", True, None, False)),
        ({"roundtrip": {"tool_message_name": 1}}, RoundTripPolicy("null", True, None, False)),
        (
            {"roundtrip": {"id_format": "mistral9", "tool_message_name": True}},
            RoundTripPolicy("null", True, "mistral9", False),
        ),
        ({"roundtrip": {"echo_reasoning": True}}, RoundTripPolicy("null", False, None, True)),
        ({"roundtrip": {"echo_reasoning": "yes"}}, RoundTripPolicy("null", False, None, True)),
        (
            {
                "roundtrip": {
                    "content": "empty",
                    "tool_message_name": False,
                    "id_format": None,
                    "echo_reasoning": False,
                }
            },
            RoundTripPolicy("empty", False, None, False),
        ),
    ],
)
def test_round_trip_policy_from_provider(entry: Any, expected: RoundTripPolicy) -> None:
    got = RoundTripPolicy.from_provider(entry)
    assert got == expected
    assert (type(got.tool_message_name), type(got.echo_reasoning)) == (bool, bool)


def _turn(calls: list[ToolCall], content: str | None = None, reasoning: str | None = None) -> Turn:
    return Turn(calls, content, reasoning, "tool_calls", None, None, [])


def _tc(index: int, id: str, name: str, args: str, **kw: Any) -> ToolCall:
    return ToolCall(index, id, "function", name, args, args, **kw)


def test_assistant_message_per_policy() -> None:
    calls = [
        _tc(0, "call_abc", "f", '{"a":1}', extras={"extra_content": {"x": 1}}),
        _tc(1, "abcDEF123", "g", "{}"),
    ]
    t = _turn(calls, reasoning="thinking")
    entries = [
        {
            "id": "call_abc",
            "type": "function",
            "function": {"name": "f", "arguments": '{"a":1}'},
            "extra_content": {"x": 1},
        },
        {"id": "abcDEF123", "type": "function", "function": {"name": "g", "arguments": "{}"}},
    ]
    assert assistant_message(t) == {"role": "assistant", "content": None, "tool_calls": entries}
    assert t.message() == assistant_message(t)
    assert assistant_message(t, RoundTripPolicy(content="empty")) == {
        "role": "assistant",
        "content": "",
        "tool_calls": entries,
    }
    assert assistant_message(t, RoundTripPolicy(content="omit")) == {
        "role": "assistant",
        "tool_calls": entries,
    }
    mistral = assistant_message(t, RoundTripPolicy(id_format="mistral9", echo_reasoning=True))
    assert [e["id"] for e in mistral["tool_calls"]] == [MISTRAL["call_abc"], "abcDEF123"]
    assert mistral["reasoning_content"] == "thinking"
    assert assistant_message(_turn([], content="Hello")) == {
        "role": "assistant",
        "content": "Hello",
    }
    assert assistant_message(_turn([], content="Hi"), RoundTripPolicy(echo_reasoning=True)) == {
        "role": "assistant",
        "content": "Hi",
    }


def test_message_entry_type_and_extras() -> None:
    c = ToolCall(0, "i", "", "f", "{}", "{}", extras={"id": "other", "index": 3, "x": None})
    assert c.as_message_entry() == {
        "id": "i",
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
        "index": 3,
        "x": None,
    }
    c = ToolCall(0, "i", "custom", "f", '{"a": [1]}', "{}")
    assert c.as_message_entry()["type"] == "custom"
    assert c.parsed_arguments() == {"a": [1]}


def test_tool_result_messages_literal() -> None:
    a, b = _tc(0, "call_abc", "f", "{}"), _tc(1, "", "g", "{}")
    pairs = [(a, "15°C"), (b, {"temp": "15°C", "ok": True})]
    assert tool_result_messages(pairs) == [
        {"role": "tool", "tool_call_id": "call_abc", "content": "15°C"},
        {"role": "tool", "tool_call_id": "", "content": '{"temp": "15°C", "ok": true}'},
    ]
    assert tool_result_messages(
        pairs, RoundTripPolicy(tool_message_name=True, id_format="mistral9")
    ) == [
        {"role": "tool", "tool_call_id": MISTRAL["call_abc"], "content": "15°C", "name": "f"},
        {
            "role": "tool",
            "tool_call_id": MISTRAL[""],
            "content": '{"temp": "15°C", "ok": true}',
            "name": "g",
        },
    ]
    assert tool_result_messages([(a, None), (a, [1, "é"])]) == [
        {"role": "tool", "tool_call_id": "call_abc", "content": "null"},
        {"role": "tool", "tool_call_id": "call_abc", "content": '[1, "é"]'},
    ]


# ------------------------------------------------------------------ streams


def chunk(*tcs: Any, finish: str | None = None, index: int = 0, **delta: Any) -> dict[str, Any]:
    """One chunk of choice ``index`` carrying the tool-call deltas ``tcs`` (as written)."""
    d = dict(delta)
    if tcs:
        d["tool_calls"] = list(tcs)
    return {"choices": [{"index": index, "delta": d, "finish_reason": finish}]}


def opener(index: int | None, id: Any, name: Any, args: Any = "", **kw: Any) -> dict[str, Any]:
    tc: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if index is not None:
        tc["index"] = index
    if id is not None:
        tc["id"] = id
    tc.update(kw)
    return tc


def frag(index: int | None, args: Any) -> dict[str, Any]:
    tc: dict[str, Any] = {"function": {"arguments": args}}
    if index is not None:
        tc["index"] = index
    return tc


FIN = chunk(finish="tool_calls")


def run(chunks: list[Any], tools: Any = None, n: int = 1) -> Turn:
    acc = ToolCallAccumulator(tools=tools, n=n)
    for c in chunks:
        acc.feed(c)
    return acc.result()


def calls(turn: Turn) -> list[tuple[Any, ...]]:
    """index, id, type, name, arguments, raw_arguments, repaired, valid, provider_index."""
    return [
        (
            c.index,
            c.id,
            c.type,
            c.name,
            c.arguments,
            c.raw_arguments,
            c.repaired,
            c.valid,
            c.provider_index,
        )
        for c in turn.calls
    ]


def notes(turn: Turn) -> list[tuple[str, int, str, bool]]:
    return [(w.quirk, w.event, w.message, w.recovered) for w in turn.workarounds]


W, T = '{"city": "Paris"}', '{"timezone": "Asia/Tokyo"}'
NEW_ON = "a new call started on occupied index {}; given its own slot"
ABSENT = "tool-call delta without index; routed by id/name"
INTERLEAVED = (
    "fragments of calls that share no usable index were interleaved; their "
    "arguments cannot be attributed"
)
TRUNCATED = "arguments were cut; closed by JSON repair"


def test_reference_shape_on_the_fast_paths() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "get_weather")),
            chunk(frag(0, '{"city": ')),
            chunk(frag(0, '"Paris"}')),  # no longer than what is there: the fast fragment path
            chunk(opener(1, "call_b", "get_time", T)),
            FIN,
        ]
    )
    assert calls(turn) == [
        (0, "call_a", "function", "get_weather", W, W, False, True, 0),
        (1, "call_b", "function", "get_time", T, T, False, True, 1),
    ]
    assert notes(turn) == []
    assert turn.finish_reason == "tool_calls"
    assert (turn.content, turn.reasoning, turn.usage, turn.error) == (None, None, None, None)
    assert (turn.executable, turn.recoverable, turn.repaired, turn.quirks) == (
        True,
        True,
        False,
        [],
    )


def test_fragments_of_many_sizes_whichever_path() -> None:
    # Short fragments after a long opener take the fast path; long ones the general one.
    pieces = ['{"q": "', "ab", "c" * 30, "d", "<b>", "[x]", "e" * 12, '"}']
    turn = run(
        [chunk(opener(0, "call_a", "f", pieces[0]))]
        + [chunk(frag(0, p)) for p in pieces[1:]]
        + [FIN]
    )
    text = "".join(pieces)
    assert calls(turn) == [(0, "call_a", "function", "f", text, text, False, True, 0)]
    assert notes(turn) == []


def test_hundreds_of_fragments_keep_their_order() -> None:
    frags = [f"{i % 10}" for i in range(300)]
    fast = run(
        [chunk(opener(0, "call_a", "f", '{"a": "' + "x" * 10))]
        + [chunk(frag(0, p)) for p in frags]
        + [chunk(frag(0, '"}')), FIN]
    )
    expected = '{"a": "' + "x" * 10 + "".join(frags) + '"}'
    assert [c.arguments for c in fast.calls] == [expected]
    # the general path: no index, each fragment routed to the call in progress
    general = run(
        [chunk(opener(None, "call_a", "f", '{"a": "'))]
        + [chunk(frag(None, p)) for p in frags]
        + [chunk(frag(None, '"}')), FIN]
    )
    assert [c.arguments for c in general.calls] == ['{"a": "' + "".join(frags) + '"}']
    assert notes(general) == [("Q-INDEX-ABSENT", e, ABSENT, True) for e in (0, 1, 2)]


def test_hundreds_of_content_and_reasoning_fragments() -> None:
    words = [f"w{i} " for i in range(150)]
    turn = run([chunk(content=w) for w in words] + [chunk(reasoning_content=w) for w in words])
    assert turn.content == "".join(words)
    assert turn.reasoning == "".join(words)
    assert turn.calls == []
    assert (turn.executable, turn.recoverable) == (False, True)


def test_compact_keeps_what_was_read() -> None:
    acc = ToolCallAccumulator()
    acc.feed(chunk(opener(0, "call_a", "f", '{"a": "')))
    for p in ("x", "y", "z"):
        acc.feed(chunk(frag(0, p), content=p, reasoning=p.upper()))
    acc.compact()
    acc.feed(chunk(frag(0, '"}'), content="!", reasoning="?"))
    acc.compact()
    turn = acc.result()
    assert [c.arguments for c in turn.calls] == ['{"a": "xyz"}']
    assert (turn.content, turn.reasoning) == ("xyz!", "XYZ?")


def test_all_zero_index_splits_at_the_new_id() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "get_weather", W)),
            chunk(opener(0, "call_b", "get_time", "")),
            chunk(frag(0, T)),
            FIN,
        ]
    )
    assert calls(turn) == [
        (0, "call_a", "function", "get_weather", W, W, False, True, 0),
        (1, "call_b", "function", "get_time", T, T, False, True, 0),
    ]
    assert notes(turn) == [("Q-INDEX-ALL-ZERO", 1, NEW_ON.format(0), True)]


def test_reused_index_splits_at_the_new_id() -> None:
    turn = run(
        [
            chunk(opener(1, "call_a", "get_weather", W)),
            chunk(opener(1, "call_b", "get_time", T)),
            FIN,
        ]
    )
    assert calls(turn) == [
        (0, "call_a", "function", "get_weather", W, W, False, True, 1),
        (1, "call_b", "function", "get_time", T, T, False, True, 1),
    ]
    assert notes(turn) == [("Q-INDEX-REUSED-ACROSS-CALLS", 1, NEW_ON.format(1), True)]


@pytest.mark.parametrize(
    "idx, quirk", [(0, "Q-INDEX-ALL-ZERO"), (2, "Q-INDEX-REUSED-ACROSS-CALLS")]
)
def test_interleaved_fragments_on_a_shared_index_are_lost(idx: int, quirk: str) -> None:
    turn = run(
        [
            chunk(opener(idx, "call_a", "f")),
            chunk(frag(idx, '{"a": ')),
            chunk(opener(idx, "call_b", "g")),
            chunk(frag(idx, "1}")),
            chunk(frag(idx, '{"b": 2}')),
            FIN,
        ]
    )
    assert calls(turn) == [
        (0, "call_a", "function", "f", "{}", '{"a": ', True, True, idx),
        (1, "call_b", "function", "g", '1}{"b": 2}', '1}{"b": 2}', False, False, idx),
    ]
    assert notes(turn) == [("Q-ARGS-TRUNCATED", 0, TRUNCATED, True), (quirk, 2, INTERLEAVED, False)]
    assert (turn.recoverable, turn.executable, turn.repaired) == (False, False, True)


def test_a_guess_that_parses_on_a_shared_index_is_kept() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "f", '{"a": 1}')),
            chunk(opener(0, "call_b", "g")),
            chunk(frag(0, '{"b": ')),
            chunk(frag(0, "2}")),
            FIN,
        ]
    )
    assert [(c.id, c.arguments, c.valid) for c in turn.calls] == [
        ("call_a", '{"a": 1}', True),
        ("call_b", '{"b": 2}', True),
    ]
    assert notes(turn) == [("Q-INDEX-ALL-ZERO", 1, NEW_ON.format(0), True)]


def test_index_absent_routes_by_id_and_bounds_its_notes() -> None:
    turn = run(
        [
            chunk(opener(None, "call_a", "f", "")),
            chunk(frag(None, '{"a": 1}')),
            chunk(opener(None, "call_b", "g", "", type=None)),
            chunk(frag(None, "")),
            chunk(frag(None, "{}")),
            chunk(frag(None, None)),
            FIN,
        ]
    )
    assert calls(turn) == [
        (0, "call_a", "function", "f", '{"a": 1}', '{"a": 1}', False, True, None),
        (1, "call_b", "function", "g", "{}", "{}", False, True, None),
    ]
    # the first three events of a quirk are evidence enough
    assert notes(turn) == [("Q-INDEX-ABSENT", e, ABSENT, True) for e in (0, 1, 2)]


def test_index_absent_interleaved_is_lost() -> None:
    turn = run(
        [
            chunk(opener(None, "call_a", "f")),
            chunk(opener(None, "call_b", "g")),
            chunk(frag(None, '{"a":')),
            chunk(frag(None, '{"b":2}')),
            FIN,
        ]
    )
    assert calls(turn) == [
        (0, "call_a", "function", "f", "", "", False, False, None),
        (1, "call_b", "function", "g", '{"a":{"b":2}', '{"a":{"b":2}', False, False, None),
    ]
    assert notes(turn) == [
        ("Q-INDEX-ABSENT", 0, INTERLEAVED, False),
        ("Q-INDEX-ABSENT", 1, INTERLEAVED, False),
        ("Q-INDEX-ABSENT", 2, ABSENT, True),
    ]


def test_index_absent_known_id_and_names() -> None:
    turn = run(
        [
            chunk({"function": {"arguments": ""}}),  # nothing yet: a call in progress
            chunk({"id": "call_a", "function": {"arguments": ""}}),  # it is still empty: its id
            chunk({"id": "call_a", "function": {"name": "f"}}),  # same id: same call
            chunk({"function": {"name": "f", "arguments": '{"a": 1}'}}),  # same name, not done
            chunk({"function": {"name": "f", "arguments": '{"a": 2}'}}),  # done: a new call
            chunk({"function": {"name": "g"}}),  # another name: a new call
            chunk({"id": "call_c", "function": {"arguments": "{}"}}),  # named already: a new one
            chunk({"id": "call_a", "function": {"arguments": ""}}),  # back to the first call
            chunk({"function": {"arguments": ""}}),  # the call in progress (a guess: no loss)
            FIN,
        ]
    )
    assert [(c.index, c.id, c.name, c.arguments, c.valid) for c in turn.calls] == [
        (0, "call_a", "f", '{"a": 1}', True),
        (1, "", "f", '{"a": 2}', True),
        (2, "", "g", "{}", True),
        (3, "call_c", "", "{}", True),
    ]
    assert [(w.quirk, w.event) for w in turn.workarounds] == [
        ("Q-INDEX-ABSENT", 0),
        ("Q-INDEX-ABSENT", 1),
        ("Q-INDEX-ABSENT", 2),
        ("Q-ARGS-ABSENT-NO-PARAMS", 5),
        ("Q-NAME-NEVER-SENT", 6),
    ]  # call_c: no name, ever
    # a name for the nameless call in progress
    turn = run(
        [
            chunk({"function": {"arguments": ""}}),
            chunk({"function": {"name": "f"}}),
            chunk({"function": {"arguments": "{}"}}),
            FIN,
        ]
    )
    assert [(c.index, c.id, c.name, c.arguments) for c in turn.calls] == [(0, "", "f", "{}")]


def test_index_absent_id_after_a_started_call_opens_one() -> None:
    turn = run(
        [
            chunk({"function": {"arguments": '{"a"'}}),
            chunk({"id": "call_b", "function": {"name": "g", "arguments": "{}"}}),
            FIN,
        ]
    )
    assert [(c.id, c.name, c.raw_arguments) for c in turn.calls] == [
        ("", "", '{"a"'),
        ("call_b", "g", "{}"),
    ]
    turn = run(
        [
            chunk({"function": {"name": "f"}}),
            chunk({"id": "call_b", "function": {"arguments": "{}"}}),
            FIN,
        ]
    )
    assert [(c.id, c.name, c.raw_arguments) for c in turn.calls] == [
        ("", "f", ""),
        ("call_b", "", "{}"),
    ]


def test_args_cumulative_latch() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "f")),
            chunk(frag(0, '{"a"')),
            chunk(frag(0, '{"a": 1')),  # longer and starts with all so far: latched
            chunk(frag(0, '{"a"')),  # a shorter re-send: nothing new
            chunk(frag(0, '{"a": 1, "b": 2')),
            chunk(frag(0, "}")),  # neither: appended
            FIN,
        ]
    )
    args = '{"a": 1, "b": 2}'
    assert calls(turn) == [(0, "call_a", "function", "f", args, args, False, True, 0)]
    assert notes(turn) == [
        ("Q-ARGS-CUMULATIVE", 2, "arguments re-sent in full on each delta", True)
    ]


@pytest.mark.parametrize(
    "first, second, expected, latched",
    [
        ("{", '{"a": 1}', '{"a": 1}', True),  # one character latches only when it is "{"
        (" ", ' {"a": 1}', '  {"a": 1}', False),
        ('{"', '{"a": 1}', '{"a": 1}', True),
        ('{"a": 1', '{"a": 1', '{"a": 1{"a": 1', False),  # not longer: appended
    ],
)
def test_args_cumulative_latch_needs_a_prefix(
    first: str, second: str, expected: str, latched: bool
) -> None:
    turn = run([chunk(opener(0, "call_a", "f", first)), chunk(frag(0, second)), FIN])
    assert [c.raw_arguments for c in turn.calls] == [expected]
    assert ("Q-ARGS-CUMULATIVE" in turn.quirks) is latched


def test_args_json_object() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "f", {"city": "Zürich", "n": [1, 2]})),
            chunk(opener(1, "call_b", "g", {"x": 1})),
            chunk(frag(1, {"x": 2})),  # the last one wins
            FIN,
        ]
    )
    assert calls(turn) == [
        (
            0,
            "call_a",
            "function",
            "f",
            '{"city":"Zürich","n":[1,2]}',
            '{"city":"Zürich","n":[1,2]}',
            False,
            True,
            0,
        ),
        (1, "call_b", "function", "g", '{"x":2}', '{"x":2}', False, True, 1),
    ]
    msg = "arguments sent as a JSON value, not a string"
    assert notes(turn) == [("Q-ARGS-JSON-OBJECT", e, msg, True) for e in (0, 1, 2)]


def test_name_fragmented_without_declared_tools() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "get_")),
            chunk({"index": 0, "function": {"name": "weather", "arguments": "{}"}}),
            FIN,
        ]
    )
    assert [(c.id, c.name, c.arguments) for c in turn.calls] == [("call_a", "get_weather", "{}")]
    assert notes(turn) == [("Q-NAME-FRAGMENTED", 1, "function name arrived in pieces", True)]


TOOLS = [
    {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},
    {
        "type": "function",
        "function": {"name": "g", "parameters": {"type": "object", "required": ["x"]}},
    },
]


def test_a_declared_name_is_complete() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "f")),
            chunk({"index": 0, "function": {"name": "zz", "arguments": '{"a": 1}'}}),
            FIN,
        ],
        tools=TOOLS,
    )
    assert [(c.name, c.arguments) for c in turn.calls] == [("f", '{"a": 1}')]
    assert notes(turn) == []


def test_a_second_declared_name_without_id_starts_a_call() -> None:
    stream = [
        chunk(opener(0, None, "f", '{"a":')),
        chunk({"index": 0, "function": {"name": "g", "arguments": ""}}),
        chunk(frag(0, '{"x": 1}')),
        FIN,
    ]
    turn = run(stream, tools=TOOLS)
    assert calls(turn) == [
        (0, "", "function", "f", "{}", '{"a":', True, True, 0),
        (1, "", "function", "g", '{"x": 1}', '{"x": 1}', False, True, 0),
    ]
    assert notes(turn) == [
        ("Q-ARGS-TRUNCATED", 0, TRUNCATED, True),
        ("Q-INDEX-ALL-ZERO", 1, NEW_ON.format(0), True),
    ]
    # Undeclared: "g" may be a piece of the name, and the call is not done
    turn = run(stream)
    assert [(c.name, c.arguments, c.raw_arguments) for c in turn.calls] == [
        ("fg", '{"a":{"x": 1}}', '{"a":{"x": 1}')
    ]
    assert turn.quirks == ["Q-ARGS-TRUNCATED", "Q-NAME-FRAGMENTED"]


def test_an_undeclared_name_after_a_done_call_starts_one() -> None:
    turn = run(
        [
            chunk(opener(0, None, "f", '{"a": 1}')),
            chunk({"index": 0, "function": {"name": "g", "arguments": "{}"}}),
            FIN,
        ]
    )
    assert [(c.index, c.name, c.arguments) for c in turn.calls] == [
        (0, "f", '{"a": 1}'),
        (1, "g", "{}"),
    ]
    assert notes(turn) == [("Q-INDEX-ALL-ZERO", 1, NEW_ON.format(0), True)]


def test_an_id_less_repeat_of_a_finished_call() -> None:
    turn = run(
        [
            chunk(opener(0, None, "f", '{"a": 1}')),
            chunk({"index": 0, "function": {"name": "f", "arguments": ' {"a": 2}'}}),
            FIN,
        ]
    )
    assert [(c.index, c.name, c.arguments) for c in turn.calls] == [
        (0, "f", '{"a": 1}'),
        (1, "f", ' {"a": 2}'),
    ]
    # not a restart ("{" does not open the arguments): the same call, two documents
    turn = run(
        [
            chunk(opener(0, None, "f", '{"a": 1}')),
            chunk({"index": 0, "function": {"name": "f", "arguments": "[2]"}}),
            FIN,
        ]
    )
    assert [(c.index, c.name, c.arguments, c.valid) for c in turn.calls] == [
        (0, "f", '{"a": 1}[2]', False)
    ]
    assert notes(turn) == [
        (
            "Q-INDEX-REUSED-ACROSS-CALLS",
            0,
            "two JSON documents in one "
            "call's arguments: a second call reused the index without an id",
            False,
        )
    ]
    # a repeat of a call not finished yet: the same call
    turn = run(
        [
            chunk(opener(0, None, "f", '{"a": ')),
            chunk({"index": 0, "function": {"name": "f", "arguments": '{"b": 1}'}}),
            FIN,
        ]
    )
    assert [(c.name, c.raw_arguments) for c in turn.calls] == [("f", '{"a": {"b": 1}')]


def test_a_new_id_without_a_name_is_the_same_call() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "f")),
            chunk({"index": 0, "id": "call_x", "function": {"arguments": '{"a": 1}'}}),
            chunk({"index": 0, "id": "call_x", "function": {"name": "f"}}),
            FIN,
        ]
    )
    assert [(c.index, c.id, c.name, c.arguments) for c in turn.calls] == [
        (0, "call_a", "f", '{"a": 1}')
    ]


def test_id_and_type_arrive_after_the_opener() -> None:
    turn = run(
        [
            chunk({"index": 0, "function": {"name": "f", "arguments": ""}}),
            chunk({"index": 0, "id": "call_late", "type": "custom", "function": {}}),
            chunk({"index": 0, "id": "", "type": "", "function": {"arguments": "{}"}}),
            FIN,
        ]
    )
    assert calls(turn) == [(0, "call_late", "custom", "f", "{}", "{}", False, True, 0)]


@pytest.mark.parametrize(
    "tc, expected",
    [
        # shapes the fast opener must leave to the general path, with what that path gives
        (opener(0, "", "f", "{}"), ("", "function", "f", "{}", {})),
        (opener(0, None, "f", "{}"), ("", "function", "f", "{}", {})),
        (opener(0, 7, "f", "{}"), ("", "function", "f", "{}", {})),
        (opener(0, "call_a", "", "{}"), ("call_a", "function", "", "{}", {})),
        (opener(0, "call_a", None, "{}"), ("call_a", "function", "", "{}", {})),
        (opener(0, "call_a", 5, "{}"), ("call_a", "function", "", "{}", {})),
        (opener(0, "call_a", "f", "{}", type="custom"), ("call_a", "custom", "f", "{}", {})),
        (opener(0, "call_a", "f", "{}", type=""), ("call_a", "function", "f", "{}", {})),
        (opener(0, "call_a", "f", "{}", type=3), ("call_a", "function", "f", "{}", {})),
        (
            opener(0, "call_a", "f", "{}", extra_content={"s": 1}),
            ("call_a", "function", "f", "{}", {"extra_content": {"s": 1}}),
        ),
        (opener(0, "call_a", "f", "{}", extra_content=None), ("call_a", "function", "f", "{}", {})),
        (
            {
                "index": 0,
                "id": "call_a",
                "function": {"name": "f", "arguments": "{}"},
                "extra_content": {"s": 1},
            },
            ("call_a", "function", "f", "{}", {"extra_content": {"s": 1}}),
        ),
        (
            {"index": 0, "id": "call_a", "function": {"name": "f", "arguments": "{}", "x": 1}},
            ("call_a", "function", "f", "{}", {}),
        ),
        ({"index": 0, "id": "call_a", "function": "f"}, ("call_a", "function", "", "{}", {})),
        (
            {"index": 0, "id": "call_a", "function": {"name": "f", "arguments": None}},
            ("call_a", "function", "f", "{}", {}),
        ),
        (
            {"index": 0, "id": "call_a", "function": {"name": "f"}},
            ("call_a", "function", "f", "{}", {}),
        ),
    ],
)
def test_opener_shapes(tc: dict[str, Any], expected: tuple[Any, ...]) -> None:
    turn = run([chunk(tc), FIN])
    assert [(c.id, c.type, c.name, c.arguments, c.extras) for c in turn.calls] == [expected]
    assert [e.get("extra_content") for e in [turn.calls[0].as_message_entry()]] == [
        expected[4].get("extra_content")
    ]


def test_extras_are_kept_first_and_echoed() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "f", "", extra_content={"sig": "A"})),
            chunk(
                {
                    "index": 0,
                    "function": {"arguments": "{}"},
                    "extra_content": {"sig": "B"},
                    "other": None,
                }
            ),
            FIN,
        ]
    )
    assert [c.extras for c in turn.calls] == [{"extra_content": {"sig": "A"}}]
    assert turn.message()["tool_calls"] == [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "f", "arguments": "{}"},
            "extra_content": {"sig": "A"},
        }
    ]


@pytest.mark.parametrize(
    "finish, quirks",
    [("tool_calls", ["Q-ARGS-TRUNCATED"]), ("length", []), (None, ["Q-ARGS-TRUNCATED"])],
)
def test_truncated_arguments_repaired(finish: str | None, quirks: list[str]) -> None:
    stream = [chunk(opener(0, "call_a", "f", '{"city": "Par'))]
    if finish:
        stream.append(chunk(finish=finish))
    turn = run(stream)
    assert calls(turn) == [
        (0, "call_a", "function", "f", '{"city": "Par"}', '{"city": "Par', True, True, 0)
    ]
    assert [w.quirk for w in turn.workarounds] == quirks
    assert turn.repaired is True
    assert turn.executable is (finish != "length")


def test_duplicated_on_flush_is_collapsed() -> None:
    turn = run([chunk(opener(0, "call_a", "f", '{"a":1}')), chunk(frag(0, '{"a":1}')), FIN])
    assert calls(turn) == [
        (0, "call_a", "function", "f", '{"a":1}', '{"a":1}{"a":1}', False, True, 0)
    ]
    assert notes(turn) == [
        ("Q-ARGS-DUPLICATED-ON-FLUSH", 0, "arguments repeated whole; collapsed", True)
    ]


def test_invalid_json_is_kept_as_sent() -> None:
    turn = run([chunk(opener(0, "call_a", "f", '{"a": x}')), FIN])
    assert calls(turn) == [(0, "call_a", "function", "f", '{"a": x}', '{"a": x}', False, False, 0)]
    assert notes(turn) == [
        (
            "Q-ARGS-INVALID-JSON",
            0,
            "arguments are not JSON and cannot be repaired; kept as sent",
            False,
        )
    ]
    assert (turn.recoverable, turn.executable) == (False, False)


def test_control_markup_is_noted_on_arrival_and_not_repaired() -> None:
    markup = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}'
    turn = run([chunk(opener(0, "call_a", "f", markup)), FIN])
    assert calls(turn) == [(0, "call_a", "function", "f", markup, markup, False, False, 0)]
    assert notes(turn) == [
        (
            "Q-ARGS-CONTROL-MARKUP",
            0,
            'control markup in arguments: \'<tool_call>{"name": "get_weather", "argu\'',
            False,
        )
    ]


@pytest.mark.parametrize(
    "piece", ["<think>", "[ARGS]", " [TOOL_CALLS]", "</tool_call>", "<|tool_call", "<arg_key>"]
)
def test_control_markup_in_a_short_fragment(piece: str) -> None:
    # cut after the markup: not repaired, whichever path the fragment took
    turn = run([chunk(opener(0, "call_a", "f", '{"a": "' + "x" * 20)), chunk(frag(0, piece)), FIN])
    assert [(c.valid, c.repaired) for c in turn.calls] == [(False, False)]
    assert [(w.quirk, w.event, w.recovered) for w in turn.workarounds] == [
        ("Q-ARGS-CONTROL-MARKUP", 1, False)
    ]


def test_markup_is_noted_once_per_call_and_every_call_s_loss_is_kept() -> None:
    # Five calls with markup, three fragments each: one note per call (the first markup
    # fragment), and losses are not cut at MAX_NOTES_PER_QUIRK as hopeful notes are.
    chunks = []
    for k in range(5):
        chunks.append(chunk(opener(k, f"call_{k}", "f", f"<think>{k}")))
        chunks += [chunk(frag(k, "<think>")), chunk(frag(k, "[ARGS]"))]
    turn = run(chunks + [FIN])
    assert [(w.quirk, w.event, w.message, w.recovered) for w in turn.workarounds] == [
        ("Q-ARGS-CONTROL-MARKUP", 3 * k, f"control markup in arguments: '<think>{k}'", False)
        for k in range(5)
    ]
    assert [c.raw_arguments for c in turn.calls] == [f"<think>{k}<think>[ARGS]" for k in range(5)]


@pytest.mark.parametrize(
    "name, args, expected",
    [
        (
            "g",
            "",
            (
                "{}",
                False,
                [
                    (
                        "Q-ARGS-LOST-MULTITOKEN-DELTA",
                        0,
                        "no arguments streamed for 'g', which has required parameters",
                        False,
                    )
                ],
            ),
        ),
        (
            "g",
            "  ",
            (
                "{}",
                False,
                [
                    (
                        "Q-ARGS-LOST-MULTITOKEN-DELTA",
                        0,
                        "no arguments streamed for 'g', which has required parameters",
                        False,
                    )
                ],
            ),
        ),
        (
            "f",
            "",
            (
                "{}",
                True,
                [("Q-ARGS-ABSENT-NO-PARAMS", 0, "no arguments streamed; sent as {}", True)],
            ),
        ),
        (
            "h",
            "",
            (
                "{}",
                True,
                [("Q-ARGS-ABSENT-NO-PARAMS", 0, "no arguments streamed; sent as {}", True)],
            ),
        ),
    ],
)
def test_no_arguments(name: str, args: str, expected: tuple[Any, ...]) -> None:
    turn = run([chunk(opener(0, "call_a", name, args)), FIN], tools=TOOLS)
    assert [(c.arguments, c.valid) for c in turn.calls] == [expected[:2]]
    assert notes(turn) == expected[2]


def test_an_error_in_the_stream_discards_cut_arguments() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "f", '{"a": 1')),
            chunk(opener(1, "call_b", "g", '{"b": 2}')),
            {"error": {"message": "boom"}},
        ]
    )
    assert calls(turn) == [
        (0, "call_a", "function", "f", '{"a": 1', '{"a": 1', False, False, 0),
        (1, "call_b", "function", "g", '{"b": 2}', '{"b": 2}', False, True, 1),
    ]
    assert notes(turn) == [("Q-SSE-ERROR-ENVELOPE", 2, "error reported inside the stream", True)]
    assert turn.error == {"message": "boom"}
    assert (turn.recoverable, turn.executable) == (False, False)


def test_error_inside_a_chunk_and_null_errors() -> None:
    turn = run(
        [
            {"error": None, "choices": []},
            {"error": "bad", "choices": [{"index": 0, "delta": {"content": "x"}}]},
        ]
    )
    assert notes(turn) == [("Q-SSE-ERROR-IN-CHUNK", 1, "error reported inside the stream", True)]
    assert (turn.error, turn.content) == ("bad", "x")


def test_usage_last_object_wins() -> None:
    turn = run(
        [
            {"choices": [], "usage": {"prompt_tokens": 1}},
            {"choices": [], "usage": {"prompt_tokens": 2}},
            {"choices": [], "usage": None},
            {"choices": [], "usage": "x"},
            {"choices": []},
        ]
    )
    assert turn.usage == {"prompt_tokens": 2}


@pytest.mark.parametrize(
    "choices, expected",
    [
        (
            [
                {"index": 0, "delta": {}, "finish_reason": "tool_calls"},
                {"index": 0, "delta": {}, "finish_reason": ""},
                {"index": 0, "delta": {}, "finish_reason": None},
            ],
            "tool_calls",
        ),
        (
            [
                {"index": 0, "delta": {}, "finish_reason": "stop"},
                {"index": 0, "delta": {}, "finish_reason": "length"},
            ],
            "length",
        ),
        ([{"index": 0, "delta": {}, "finishReason": "STOP"}], "STOP"),
        ([{"index": 0, "delta": {}, "finish_reason": None, "finishReason": "STOP"}], "STOP"),
        ([{"index": 0, "delta": {}, "finish_reason": "", "finishReason": "MAX"}], "MAX"),
        ([{"index": 0, "finish_reason": "stop"}], "stop"),  # no delta at all
        ([{"index": 0, "delta": None, "finish_reason": "stop"}], "stop"),
        ([{"index": 0, "delta": {}, "finish_reason": 3}], None),
        ([{"index": 0, "delta": {}, "finish_reason": None, "finishReason": None}], None),
    ],
)
def test_finish_reason(choices: list[dict[str, Any]], expected: str | None) -> None:
    assert run([{"choices": [c]} for c in choices]).finish_reason == expected


def test_content_and_reasoning() -> None:
    turn = run(
        [
            chunk(content="Hel"),
            chunk(content=""),
            chunk(content=None),
            chunk(content="lo", reasoning_content="a", reasoning="b"),  # the first key wins
            chunk(reasoning="c", reasoning_text="d"),
            chunk(reasoning_text="e"),
            chunk(reasoning_content="", reasoning="f"),
            chunk(opener(0, "call_a", "f", "{}"), content="!"),  # content next to a call
        ]
    )
    assert (turn.content, turn.reasoning) == ("Hello!", "acef")
    assert [c.arguments for c in turn.calls] == ["{}"]
    assert turn.message(RoundTripPolicy(echo_reasoning=True)) == {
        "role": "assistant",
        "content": "Hello!",
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
        "reasoning_content": "acef",
    }


def test_choices_per_index_when_n_is_more_than_one() -> None:
    stream = [
        chunk(opener(0, "call_b", "g", "{}"), index=1),
        chunk(opener(0, "call_a", "f", "{}"), index=0),
        {"choices": [{"index": "x", "delta": {"tool_calls": [opener(1, "call_c", "h", "{}")]}}]},
        FIN,
    ]
    turn = run(stream, n=2)
    assert [(c.index, c.id, c.provider_index) for c in turn.calls] == [
        (0, "call_a", 0),
        (1, "call_c", 1),
        (0, "call_b", 0),
    ]
    assert notes(turn) == []
    # n=1: every choice is choice 0, so the second call on index 0 is a new call there
    turn = run(stream)
    assert [(c.index, c.id, c.provider_index) for c in turn.calls] == [
        (0, "call_b", 0),
        (1, "call_a", 0),
        (2, "call_c", 1),
    ]
    assert notes(turn) == [("Q-INDEX-ALL-ZERO", 1, NEW_ON.format(0), True)]


def test_what_is_not_a_chunk_is_ignored_but_counted() -> None:
    acc = ToolCallAccumulator()
    acc.feed("not json")
    acc.feed("[1, 2]")
    acc.feed(None)
    acc.feed(
        b'{"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "call_a", '
        b'"function": {"name": "f", "arguments": "{}"}}]}}]}'
    )
    acc.feed(
        '{"choices": [{"index": 0, "delta": {"tool_calls": [{"id": "call_b", '
        '"function": {"name": "g", "arguments": "{}"}}]}}]}'
    )
    acc.feed({"choices": "x"})
    acc.feed({"choices": ["x", None, {"index": 0, "delta": "x"}]})
    acc.feed({"choices": [{"index": 0, "delta": {"tool_calls": ["x", None, 3]}}]})
    acc.feed(chunk(frag(None, "")), event=40)
    acc.feed(chunk(frag(None, "")))
    turn = acc.result()
    # (tool_calls as one object is a chunk: Q-TOOLCALLS-NOT-ARRAY, read as the call it holds)
    assert [(c.id, c.name, c.arguments) for c in turn.calls] == [
        ("call_a", "f", "{}"),
        ("call_b", "g", "{}"),
    ]
    # events count every chunk fed, whatever it was; event= names it
    assert notes(turn) == [
        ("Q-INDEX-ABSENT", 3, ABSENT, True),
        ("Q-INDEX-ABSENT", 4, ABSENT, True),
        ("Q-INDEX-ABSENT", 40, ABSENT, True),
    ]


def test_a_note_is_kept_once_per_event() -> None:
    acc = ToolCallAccumulator()
    for _ in range(4):  # two index-less deltas per chunk: one note per event, three events
        acc.feed(chunk(frag(None, ""), frag(None, "")))
    assert [n for n in notes(acc.result()) if n[0] == "Q-INDEX-ABSENT"] == [
        ("Q-INDEX-ABSENT", e, ABSENT, True) for e in (0, 1, 2)
    ]


def test_one_call_split_over_two_indices() -> None:
    turn = run([chunk(opener(0, "call_a", "f", None)), chunk(frag(1, '{"a": 1}')), FIN])
    assert calls(turn) == [
        (0, "call_a", "function", "f", "", "", False, False, 0),
        (1, "", "function", "", '{"a": 1}', '{"a": 1}', False, True, 1),
    ]
    assert notes(turn) == [
        (
            "Q-INDEX-INCONSISTENT-WITHIN-CALL",
            1,
            "arguments on an index that never got an id or a name, next to a "
            "named call without arguments: one call split over two indices",
            False,
        )
    ]
    # with arguments on the named call there is nothing to say
    turn = run([chunk(opener(0, "call_a", "f", "{}")), chunk(frag(1, '{"a": 1}')), FIN])
    assert notes(turn) == []
    assert [c.valid for c in turn.calls] == [True, True]


def test_a_nameless_call_with_an_id_is_noted_beside_a_split_call() -> None:
    # event 1 opens an orphan (index 1: arguments, no id, no name) and call_b (an id, no
    # name): the split call's note at that event must not hide call_b's missing name
    turn = run(
        [
            chunk(opener(0, "call_a", "f", None)),
            chunk(
                frag(1, '{"a": 1}'), {"index": 2, "id": "call_b", "function": {"arguments": "{}"}}
            ),
            FIN,
        ]
    )
    assert [(c.id, c.name, c.valid) for c in turn.calls] == [
        ("call_a", "f", False),
        ("", "", True),
        ("call_b", "", True),
    ]
    assert [(n[0], n[1], n[3]) for n in notes(turn)] == [
        ("Q-INDEX-INCONSISTENT-WITHIN-CALL", 1, False),
        ("Q-NAME-NEVER-SENT", 1, False),
    ]
    assert not turn.executable


def test_object_arguments_count_as_arguments() -> None:
    turn = run([chunk(opener(0, "call_a", "f", {"a": 1})), chunk(frag(1, {"b": 2})), FIN])
    assert [(c.name, c.arguments, c.valid) for c in turn.calls] == [
        ("f", '{"a":1}', True),
        ("", '{"b":2}', True),
    ]
    assert [w.quirk for w in turn.workarounds] == ["Q-ARGS-JSON-OBJECT", "Q-ARGS-JSON-OBJECT"]


def test_calls_mid_stream_are_as_accumulated() -> None:
    acc = ToolCallAccumulator()
    acc.feed(chunk(opener(0, "call_a", "f", '{"a": "Par')))
    acc.feed(chunk(opener(1, "call_b", "g", {"b": 1})))
    assert [
        (c.index, c.id, c.name, c.arguments, c.raw_arguments, c.repaired, c.valid)
        for c in acc.calls
    ] == [
        (0, "call_a", "f", '{"a": "Par', '{"a": "Par', False, True),
        (1, "call_b", "g", '{"b":1}', '{"b":1}', False, True),
    ]
    assert acc.result().workarounds[1] == Workaround(
        "Q-ARGS-JSON-OBJECT", 1, "arguments sent as a JSON value, not a string"
    )


def test_accumulate_passes_tools_and_n() -> None:
    stream = [chunk(opener(0, "call_a", "g", "")), FIN]
    assert notes(accumulate(stream, tools=TOOLS))[0][0] == "Q-ARGS-LOST-MULTITOKEN-DELTA"
    assert notes(accumulate(stream))[0][0] == "Q-ARGS-ABSENT-NO-PARAMS"
    two = [
        chunk(opener(0, "call_a", "f", "{}"), index=0),
        chunk(opener(0, "call_b", "f", "{}"), index=1),
    ]
    assert accumulate(two, n=2).workarounds == []
    assert [w.quirk for w in accumulate(two).workarounds] == ["Q-INDEX-ALL-ZERO"]


def test_feed_many_returns_the_accumulator() -> None:
    acc = ToolCallAccumulator()
    assert acc.feed_many([chunk(opener(0, "call_a", "f", "{}"))]) is acc
    assert [c.id for c in acc.result().calls] == ["call_a"]


class D(dict):  # a dict subclass (a decoder's object_hook, an SDK's mapping type)
    pass


class L(list):
    pass


def test_dict_and_list_subclasses_read_like_plain_ones() -> None:
    def sub(c: Any) -> Any:
        if isinstance(c, dict):
            return D({k: sub(v) for k, v in c.items()})
        if isinstance(c, list):
            return L(sub(v) for v in c)
        return c

    stream = [
        chunk(opener(0, "call_a", "f", '{"a": "xx'), content="Hi", reasoning="r"),
        chunk(frag(0, "y")),
        chunk(frag(0, '"}')),
        chunk(opener(1, "call_b", "g", "{}")),
        {
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
            "usage": {"total_tokens": 3},
        },
    ]
    for n in (1, 2):
        turn = run([sub(c) for c in stream], n=n)
        assert calls(turn) == [
            (0, "call_a", "function", "f", '{"a": "xxy"}', '{"a": "xxy"}', False, True, 0),
            (1, "call_b", "function", "g", "{}", "{}", False, True, 1),
        ]
        assert (turn.content, turn.reasoning, turn.finish_reason, turn.usage) == (
            "Hi",
            "r",
            "tool_calls",
            {"total_tokens": 3},
        )
        assert notes(turn) == []


def test_a_fast_fragment_makes_its_call_the_one_in_progress() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "f", '{"a": "xx')),
            chunk(opener(1, "call_b", "g", '{"b": 1}')),
            chunk(frag(0, "y")),  # the fast path: call_a is in progress again
            chunk(frag(None, '"}')),  # no index: the call in progress
            FIN,
        ]
    )
    assert [(c.id, c.arguments, c.valid) for c in turn.calls] == [
        ("call_a", '{"a": "xxy"}', True),
        ("call_b", '{"b": 1}', True),
    ]
    assert notes(turn) == [("Q-INDEX-ABSENT", 3, ABSENT, True)]


def test_a_short_fragment_with_more_keys_takes_the_general_path() -> None:
    # an extra key, a name, an id next to a fragment no longer than what is there
    turn = run(
        [
            chunk(opener(0, "call_a", "get_", '{"a": "xxxx')),
            chunk({"index": 0, "function": {"arguments": "y"}, "extra_content": {"s": 1}}),
            chunk({"index": 0, "function": {"name": "weather", "arguments": "z"}}),
            chunk({"index": 0, "id": "call_x", "function": {"arguments": "w"}}),
            chunk({"index": 0, "id": "call_x", "function": {"name": "g", "arguments": '"'}}),
            chunk({"index": 0, "type": "custom", "function": {"arguments": "}"}}),
            FIN,
        ]
    )
    assert [(c.index, c.id, c.type, c.name, c.arguments, c.extras) for c in turn.calls] == [
        (0, "call_a", "function", "get_weatherg", '{"a": "xxxxyzw"}', {"extra_content": {"s": 1}})
    ]
    assert notes(turn) == [
        ("Q-NAME-FRAGMENTED", e, "function name arrived in pieces", True) for e in (2, 4)
    ]


def test_content_and_reasoning_that_are_not_strings_are_ignored() -> None:
    turn = run(
        [
            chunk(content=["x"], reasoning_content=["y"], reasoning="g"),
            chunk(content=7, reasoning_text=7),
            chunk(content="ok"),
        ]
    )
    assert (turn.content, turn.reasoning) == ("ok", "g")


def test_every_choice_of_a_chunk_is_read() -> None:
    turn = run(
        [
            {
                "choices": [
                    {"index": 0, "delta": {"content": "a"}},
                    "junk",
                    {"index": 0, "delta": {"content": "b"}},
                    {"index": 0, "delta": {"content": "c"}, "finish_reason": "stop"},
                    {"index": 0, "delta": {"content": "d"}},
                ]
            }
        ]
    )
    assert (turn.content, turn.finish_reason) == ("abcd", "stop")


@pytest.mark.parametrize(
    "choice, expected",
    [
        ({"index": 0, "delta": {}, "finish_reason": None, "finishReason": 3}, None),
        ({"index": 0, "delta": {}, "finishReason": ""}, None),
        ({"index": 0, "delta": {}, "finish_reason": "", "finishReason": ""}, None),
        ({"index": 0, "delta": {}, "finish_reason": "stop", "finishReason": "MAX"}, "stop"),
    ],
)
def test_finish_reason_that_is_not_a_reason(choice: dict[str, Any], expected: Any) -> None:
    assert run([{"choices": [choice]}]).finish_reason == expected


@pytest.mark.parametrize("index", ["0", True, None, 0.0])
def test_an_index_that_is_not_an_integer_is_absent(index: Any) -> None:
    turn = run(
        [chunk({"index": index, "id": "call_a", "function": {"name": "f", "arguments": "{}"}}), FIN]
    )
    assert calls(turn) == [(0, "call_a", "function", "f", "{}", "{}", False, True, None)]
    assert notes(turn) == [("Q-INDEX-ABSENT", 0, ABSENT, True)]


def test_one_index_less_call_is_not_a_guess() -> None:
    turn = run([chunk(opener(None, "call_a", "f", '{"a": ')), chunk(frag(None, "1")), FIN])
    assert calls(turn) == [(0, "call_a", "function", "f", '{"a": 1}', '{"a": 1', True, True, None)]
    assert notes(turn) == [
        ("Q-ARGS-TRUNCATED", 0, TRUNCATED, True),
        ("Q-INDEX-ABSENT", 0, ABSENT, True),
        ("Q-INDEX-ABSENT", 1, ABSENT, True),
    ]


def test_short_fragments_on_a_shared_index_are_still_guesses() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "f", '{"a": "xxxxxxxx')),
            chunk(opener(0, "call_b", "g", '{"b": "yyyyyyyy')),
            chunk(frag(0, '"}')),
            chunk(frag(0, '"}')),
            FIN,
        ]
    )
    assert calls(turn) == [
        (0, "call_a", "function", "f", '{"a": "xxxxxxxx"}', '{"a": "xxxxxxxx', True, True, 0),
        (
            1,
            "call_b",
            "function",
            "g",
            '{"b": "yyyyyyyy"}"}',
            '{"b": "yyyyyyyy"}"}',
            False,
            False,
            0,
        ),
    ]
    assert notes(turn) == [
        ("Q-ARGS-TRUNCATED", 0, TRUNCATED, True),
        ("Q-INDEX-ALL-ZERO", 1, INTERLEAVED, False),
    ]


def test_a_declared_name_after_an_undeclared_one_is_a_piece() -> None:
    turn = run(
        [
            chunk(opener(0, None, "h", '{"a":')),
            chunk({"index": 0, "function": {"name": "f", "arguments": "1}"}}),
            FIN,
        ],
        tools=TOOLS,
    )
    assert [(c.index, c.name, c.arguments) for c in turn.calls] == [(0, "hf", '{"a":1}')]
    assert notes(turn) == [("Q-NAME-FRAGMENTED", 1, "function name arrived in pieces", True)]


def test_the_first_type_stays() -> None:
    turn = run(
        [
            chunk({"index": 0, "type": "custom", "function": {"name": "f"}}),
            chunk({"index": 0, "type": "function", "function": {"arguments": "{}"}}),
            FIN,
        ]
    )
    assert [(c.type, c.name, c.arguments) for c in turn.calls] == [("custom", "f", "{}")]


def test_calls_on_other_indices_with_and_without_names() -> None:
    # a named call without id next to an argument-less call with id: nothing split
    turn = run([chunk(opener(0, None, "f", "{}")), chunk(opener(1, "call_b", "g")), FIN])
    assert calls(turn) == [
        (0, "", "function", "f", "{}", "{}", False, True, 0),
        (1, "call_b", "function", "g", "{}", "", False, True, 1),
    ]
    assert notes(turn) == [
        ("Q-ARGS-ABSENT-NO-PARAMS", 1, "no arguments streamed; sent as {}", True)
    ]
    # an empty index with neither id nor name holds no arguments: nothing split either
    turn = run([chunk(opener(0, "call_a", "f")), chunk({"index": 1, "function": {}}), FIN])
    assert calls(turn) == [
        (0, "call_a", "function", "f", "{}", "", False, True, 0),
        (1, "", "function", "", "{}", "", False, True, 1),
    ]
    assert notes(turn) == [
        ("Q-ARGS-ABSENT-NO-PARAMS", e, "no arguments streamed; sent as {}", True) for e in (0, 1)
    ]


def test_defaults_one_choice_and_no_finish() -> None:
    acc = ToolCallAccumulator()
    acc.feed(chunk(opener(0, "call_a", "f", "{}"), index=1))
    acc.feed(chunk(opener(0, "call_b", "g", "{}"), index=0))
    turn = acc.result()
    assert [(c.index, c.id) for c in turn.calls] == [(0, "call_a"), (1, "call_b")]
    assert notes(turn) == [("Q-INDEX-ALL-ZERO", 1, NEW_ON.format(0), True)]
    assert turn.finish_reason is None
    assert run([chunk(content="x")]).finish_reason is None


def test_an_index_less_delta_finds_its_call_by_id() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "f", '{"a": ')),
            chunk(opener(1, "call_b", "g", "{}")),
            chunk({"id": "call_a", "function": {"arguments": "1}"}}),
            FIN,
        ]
    )
    assert [(c.index, c.id, c.arguments, c.valid) for c in turn.calls] == [
        (0, "call_a", '{"a": 1}', True),
        (1, "call_b", "{}", True),
    ]
    assert notes(turn) == [("Q-INDEX-ABSENT", 2, ABSENT, True)]


def test_a_cumulative_call_completed_by_an_append_is_done() -> None:
    tail = ', "bbbbbbbbbbbbbbbbbbbb": 2}'  # longer than what was there: appended, not re-sent
    turn = run(
        [
            chunk(opener(0, None, "f", '{"a"')),
            chunk(frag(0, '{"a": 1')),
            chunk(frag(0, tail)),
            chunk({"index": 0, "function": {"name": "f", "arguments": '{"c": 3}'}}),
            FIN,
        ]
    )
    assert [(c.index, c.name, c.arguments) for c in turn.calls] == [
        (0, "f", '{"a": 1' + tail),
        (1, "f", '{"c": 3}'),
    ]
    assert [(w.quirk, w.event) for w in turn.workarounds] == [
        ("Q-ARGS-CUMULATIVE", 1),
        ("Q-INDEX-ALL-ZERO", 3),
    ]


def test_a_whole_re_send_after_fast_fragments_is_a_duplicate() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "f", '{"a": ')),
            chunk(frag(0, "1}")),
            chunk(frag(0, '{"a": 1}')),
            FIN,
        ]
    )
    assert calls(turn) == [
        (0, "call_a", "function", "f", '{"a": 1}', '{"a": 1}{"a": 1}', False, True, 0)
    ]
    assert notes(turn) == [
        ("Q-ARGS-DUPLICATED-ON-FLUSH", 0, "arguments repeated whole; collapsed", True)
    ]


def test_a_call_completed_by_a_fast_fragment_is_done() -> None:
    turn = run(
        [
            chunk(opener(0, None, "f", '{"a": "xxx')),
            chunk(frag(0, 'yyyyyyyy"}')),  # as long as what was there
            chunk({"index": 0, "function": {"name": "f", "arguments": '{"c": 3}'}}),
            FIN,
        ]
    )
    assert [(c.index, c.name, c.arguments) for c in turn.calls] == [
        (0, "f", '{"a": "xxxyyyyyyyy"}'),
        (1, "f", '{"c": 3}'),
    ]
    assert notes(turn) == [("Q-INDEX-ALL-ZERO", 2, NEW_ON.format(0), True)]


def test_an_index_equal_to_an_integer_but_not_one_is_absent() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "f", '{"a": "xxx')),
            chunk({"index": 0.0, "function": {"arguments": '"}'}}),
            chunk({"index": True, "function": {"arguments": ""}}),
            FIN,
        ]
    )
    assert [(c.index, c.arguments) for c in turn.calls] == [(0, '{"a": "xxx"}')]
    assert notes(turn) == [("Q-INDEX-ABSENT", 1, ABSENT, True), ("Q-INDEX-ABSENT", 2, ABSENT, True)]


def test_every_delta_of_a_chunk_is_read() -> None:
    turn = run(
        [
            chunk(opener(0, "call_a", "f", '{"a": "xx'), opener(1, "call_b", "g", '{"b": "yy')),
            chunk(frag(0, "1"), frag(1, "2"), frag(0, '"}'), frag(1, '"}')),
            FIN,
        ]
    )
    assert [(c.id, c.arguments) for c in turn.calls] == [
        ("call_a", '{"a": "xx1"}'),
        ("call_b", '{"b": "yy2"}'),
    ]
    assert notes(turn) == []


def test_an_object_after_text_arguments() -> None:
    turn = run([chunk(opener(0, "call_a", "f", '{"x": 1')), chunk(frag(0, {"y": 2})), FIN])
    assert calls(turn) == [(0, "call_a", "function", "f", '{"x": 1}', '{"x": 1', True, True, 0)]
    assert [(w.quirk, w.event) for w in turn.workarounds] == [
        ("Q-ARGS-TRUNCATED", 0),
        ("Q-ARGS-JSON-OBJECT", 1),
    ]


@pytest.mark.parametrize(
    "finish, executable",
    [
        ("length", False),
        ("content_filter", False),
        ("error", False),
        ("stop", True),
        ("tool_calls", True),
        (None, True),
        ("", True),
    ],
)
def test_turn_executable_by_finish_reason(finish: str | None, executable: bool) -> None:
    turn = Turn([_tc(0, "call_a", "f", "{}")], None, None, finish, None, None, [])
    assert (turn.executable, turn.recoverable) == (executable, True)


def test_turn_properties() -> None:
    ok = _tc(0, "call_a", "f", "{}")
    notes_ = [Workaround("Q-B", 3, "b"), Workaround("Q-A", 1, "a"), Workaround("Q-B", 5, "b")]
    turn = Turn([ok], None, None, "tool_calls", None, None, notes_)
    assert (turn.quirks, turn.repaired, turn.recoverable, turn.executable) == (
        ["Q-A", "Q-B"],
        False,
        True,
        True,
    )
    lost = [Workaround("Q-A", 1, "a", recovered=False)]
    assert Turn([ok], None, None, "stop", None, None, lost).recoverable is False
    assert Turn([ok], None, None, "stop", None, {"e": 1}, []).recoverable is False
    unnamed = _tc(0, "call_a", "", "{}")
    assert Turn([unnamed], None, None, "stop", None, None, []).recoverable is False
    invalid = _tc(0, "call_a", "f", "{", valid=False)
    assert Turn([invalid], None, None, "stop", None, None, []).recoverable is False
    repaired = _tc(0, "call_a", "f", "{}", repaired=True)
    assert Turn([ok, repaired], None, None, "stop", None, None, []).repaired is True
    assert Turn([], None, None, "stop", None, None, []).executable is False


def test_an_index_less_id_after_a_named_call_opens_one_at_its_event() -> None:
    turn = run(
        [
            chunk({"function": {"name": "f", "arguments": "{}"}}),
            chunk({"id": "call_b", "function": {"arguments": ""}}),
            FIN,
        ]
    )
    assert [(c.index, c.id, c.name, c.arguments) for c in turn.calls] == [
        (0, "", "f", "{}"),
        (1, "call_b", "", "{}"),
    ]
    # sorted by event, then quirk
    assert notes(turn) == [
        ("Q-INDEX-ABSENT", 0, ABSENT, True),
        ("Q-ARGS-ABSENT-NO-PARAMS", 1, "no arguments streamed; sent as {}", True),
        ("Q-INDEX-ABSENT", 1, ABSENT, True),
        ("Q-NAME-NEVER-SENT", 1, "no name sent", False),
    ]  # call_b: none


# ------------------------------------------------------------------ max_text: a bounded text

CUT = (
    "the turn's {} was cut (the first {} of {} characters kept): sent back, it would not "
    "be what was received"
)


def _text_turn(
    max_text: int | None, contents: list[str], reasonings: tuple[str, ...] | list[str] = ()
) -> Turn:
    acc = ToolCallAccumulator(max_text=max_text)
    acc.feed(chunk(opener(0, "call_a", "f", "{}")))
    for c in contents:
        acc.feed(chunk(content=c))
    for r in reasonings:
        acc.feed(chunk(reasoning_content=r))
    acc.feed(FIN)
    return acc.result()


@pytest.mark.parametrize(
    "max_text, contents, kept, dropped",
    [
        (None, ["abc", "def"], "abcdef", 0),  # the default keeps everything
        (6, ["abc", "def"], "abcdef", 0),  # exactly the bound: nothing dropped
        (7, ["abc", "def"], "abcdef", 0),
        (5, ["abc", "def"], "abcde", 1),  # the piece that crosses the bound is cut
        (3, ["abc", "def", "gh"], "abc", 5),  # pieces after it are counted, not kept
        (2, ["abc", "def", "gh"], "ab", 6),
        (0, ["abc", "def"], None, 6),  # nothing kept: no content at all
    ],
)
def test_max_text_keeps_the_first_characters_and_counts_the_rest(
    max_text: int | None, contents: list[str], kept: str | None, dropped: int
) -> None:
    turn = _text_turn(max_text, contents, [c.upper() for c in contents])
    assert (turn.content, turn.content_dropped) == (kept, dropped)
    assert (turn.reasoning, turn.reasoning_dropped) == (
        kept and kept.upper(),
        dropped,
    )  # the same bound, counted apart
    # the calls are never cut: arguments are what an accumulator must keep
    assert calls(turn) == [(0, "call_a", "function", "f", "{}", "{}", False, True, 0)]


def test_max_text_content_and_reasoning_each_have_their_room() -> None:
    turn = _text_turn(4, ["ab", "cd", "e"], ["WXYZ"])
    assert (turn.content, turn.content_dropped, turn.reasoning, turn.reasoning_dropped) == (
        "abcd",
        1,
        "WXYZ",
        0,
    )
    turn = _text_turn(4, ["ab"], ["WX", "YZ!", "?"])
    assert (turn.content, turn.content_dropped, turn.reasoning, turn.reasoning_dropped) == (
        "ab",
        0,
        "WXYZ",
        2,
    )


def test_max_text_over_many_pieces_and_compactions() -> None:
    acc = ToolCallAccumulator(max_text=250)
    for i in range(300):  # past JOIN_AFTER: the pieces are joined as they come
        acc.feed(chunk(content=f"{i % 10}"))
        if i == 100:
            acc.compact()
    turn = acc.result()
    assert turn.content == "0123456789" * 25
    assert turn.content_dropped == 50
    assert acc.result().content == turn.content  # asked twice: the same text


def test_max_text_must_not_be_negative() -> None:
    with pytest.raises(ValueError) as e:
        ToolCallAccumulator(max_text=-1)
    assert str(e.value) == "max_text is a number of characters, not -1"
    assert ToolCallAccumulator(max_text=0).result().content is None


def test_a_cut_turn_is_not_sent_back() -> None:
    turn = _text_turn(1000, ["a" * 600, "b" * 900])
    assert turn.content_dropped == 500
    with pytest.raises(cl.TextCutError) as e:
        turn.message()
    assert str(e.value) == CUT.format("content", "1,000", "1,500")
    assert isinstance(e.value, ValueError)
    nothing = _text_turn(0, ["abc"])
    with pytest.raises(cl.TextCutError) as e:
        assistant_message(nothing, RoundTripPolicy(content="empty"))
    assert str(e.value) == CUT.format("content", "0", "3")


def test_cut_reasoning_blocks_only_a_message_that_echoes_it() -> None:
    turn = _text_turn(3, ["ok"], ["abcd", "ef"])
    assert (turn.content, turn.reasoning, turn.reasoning_dropped) == ("ok", "abc", 3)
    entry = {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assert turn.message() == {"role": "assistant", "content": "ok", "tool_calls": [entry]}
    with pytest.raises(cl.TextCutError) as e:
        turn.message(RoundTripPolicy(echo_reasoning=True))
    assert str(e.value) == CUT.format("reasoning", "3", "6")
    whole = _text_turn(3, ["ok"], ["abc"])
    assert whole.message(RoundTripPolicy(echo_reasoning=True)) == {
        "role": "assistant",
        "content": "ok",
        "tool_calls": [entry],
        "reasoning_content": "abc",
    }


def test_a_fragment_as_long_as_the_text_is_appended_on_the_general_path() -> None:
    # Without an index the fragment takes the general path, whose latch wants a longer
    # fragment: one as long as the text so far is a new piece, not a re-send.
    turn = run([chunk(opener(None, "call_a", "f", '{"a": 1')), chunk(frag(None, '{"a": 1')), FIN])
    assert [c.raw_arguments for c in turn.calls] == ['{"a": 1{"a": 1']
    assert "Q-ARGS-CUMULATIVE" not in turn.quirks


# ------------------------------------------------------------------ the analyzer's lean feeds

_PIECES = ["", "a", "ab", '{"a": ', '{"a": 1', '"x"}', "<tool_call>", "[ARGS]", "[1]", "<b", "}"]


def _lean_state(acc: ToolCallAccumulator) -> Any:
    """Everything feed() changes, slot by slot (fragments as their pieces, not joined)."""
    return (
        acc._events,
        [
            (s.ordinal, s.provider_index, s.id, s.name, list(s.parts), s.length)
            + (s.cumulative, s.plain, s.grown, s.markup, s.guessed, ch.current is s)
            for ch in acc._choices.values()
            for s in ch.slots
        ],
        list(acc._content),
        acc._content.dropped,
        sorted(acc._notes),
    )


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(
                st.just("open"),
                st.integers(0, 2),
                st.tuples(
                    st.sampled_from(["call_a", "call_b", "", None]), st.sampled_from(_PIECES)
                ),
            ),
            st.tuples(st.just("frag"), st.integers(0, 2), st.sampled_from(_PIECES)),
            st.tuples(st.just("text"), st.just(0), st.sampled_from(_PIECES[1:])),
        ),
        max_size=14,
    ),
    max_text=st.sampled_from([None, 3]),
)
def test_the_lean_feeds_change_what_feed_changes(
    ops: list[tuple[str, int, Any]], max_text: int | None
) -> None:
    """_feed_fragment, _feed_text and _feed_call (the analyzer's steady path) leave the
    accumulator as feed() does with the same chunk, after every chunk: on feed's fast paths
    (plain slots, a new index's opener) and off them (an index not open, shared or
    cumulative, markup, an empty fragment, an opener without an id or on an open index)."""
    by_feed, lean = ToolCallAccumulator(max_text=max_text), ToolCallAccumulator(max_text=max_text)
    for ev, (op, idx, value) in enumerate(ops):
        if op == "open":
            c = chunk(opener(idx, value[0], "f", value[1]))
            lean._feed_call(c, c["choices"][0]["delta"]["tool_calls"][0], ev)
        elif op == "frag":
            c = chunk(frag(idx, value))
            if value:  # the steady path takes non-empty fragments only
                lean._feed_fragment(c, idx, value, ev)
            else:
                lean.feed(c, event=ev)
        else:
            c = chunk(content=value)
            lean._feed_text(value)
        by_feed.feed(c, event=ev)
        assert _lean_state(lean) == _lean_state(by_feed), (ev, op, idx, value)
    a, b = lean.result(), by_feed.result()
    assert (calls(a), notes(a), a.content) == (calls(b), notes(b), b.content)


# ------------------------------------------------------------------ the cumulative latch


@pytest.mark.parametrize(
    ("pieces", "want"),
    [
        (['{"', '{": null}'], '{"{": null}'),  # a key that begins like the text so far
        (['{"a', '{"a": 1}'], '{"a{"a": 1}'),  # not JSON either way: the restart is kept
        (['{"', '{": {"', '{": 2}}'], '{"{": {"{": 2}}'),
        (['{"', ":", '{": 1}'], '{":{": 1}'),  # after two fragments: the flush variant's latch
    ],
)
def test_a_fragment_that_begins_like_the_text_so_far_is_appended_when_only_that_parses(
    pieces: list[str], want: str
) -> None:
    turn = run([chunk(opener(0, "call_1", "f")), *[chunk(frag(0, p)) for p in pieces], FIN])
    [call] = turn.calls
    if want == '{"a{"a": 1}':  # neither reading parses: the latch's reading, as before
        assert call.raw_arguments == '{"a": 1}'
        assert [w.quirk for w in turn.workarounds] == ["Q-ARGS-CUMULATIVE"]
    else:
        assert (call.arguments, call.valid, call.repaired) == (want, True, False)
        assert turn.workarounds == []


def test_arguments_re_sent_in_full_are_still_read_cumulatively() -> None:
    pieces = ['{"ci', '{"city": "P', '{"city": "Paris"}']
    turn = run([chunk(opener(0, "call_1", "f")), *[chunk(frag(0, p)) for p in pieces], FIN])
    assert turn.calls[0].arguments == '{"city": "Paris"}'
    assert [(w.quirk, w.event) for w in turn.workarounds] == [("Q-ARGS-CUMULATIVE", 2)]


def test_the_appended_reading_beside_a_cumulative_one_is_bounded() -> None:
    # A long cumulative stream: the appended reading (every prefix again) is dropped past
    # ALT_KEPT characters, and the cumulative one is the result.
    text = json.dumps({"v": "x" * 4000})  # its prefixes sum to about 200,000 characters
    pieces = [text[:k] for k in range(2, len(text) + 1, 40)] + [text]
    acc = ToolCallAccumulator()
    for c in [chunk(opener(0, "call_1", "f")), *[chunk(frag(0, p)) for p in pieces], FIN]:
        acc.feed(c)
    assert acc._choice0.slots[0].alt is None
    assert acc.result().calls[0].arguments == text


def test_a_re_send_after_a_one_character_fragment_on_the_general_path_is_a_flush() -> None:
    # DashScope's continuations carry `id: ""`, so each takes the general path; the
    # latch compares the re-sent text with everything held (6 characters), not with the
    # last fragment (1): the whole re-sent after an incomplete prefix is kept once.
    cont = [{"index": 0, "id": "", "function": {"arguments": a}} for a in ("1", '{"a":1}')]
    turn = run([chunk(opener(0, "call_1", "f", '{"a":')), *[chunk(c) for c in cont], FIN])
    assert [c.raw_arguments for c in turn.calls] == ['{"a":1}']
    assert notes(turn) == [
        (
            "Q-ARGS-DUPLICATED-ON-FLUSH",
            2,
            "the whole arguments re-sent after an incomplete prefix; kept the re-sent",
            True,
        )
    ]


@pytest.mark.parametrize("extra", [0, 1])
def test_the_appended_reading_is_kept_up_to_alt_kept_characters(extra: int) -> None:
    # `{"` then `{": "x…` then `"}`: only the appended reading parses. Up to ALT_KEPT
    # characters in all it is kept and wins; one more and it was dropped (memory bound),
    # so the latched reading stands, not valid.
    tail = '"}'
    body = '{": "' + "x" * (cl.ALT_KEPT + extra - 2 - 5 - len(tail))
    pieces = ['{"', body, tail]
    turn = run([chunk(opener(0, "call_1", "f")), *[chunk(frag(0, p)) for p in pieces], FIN])
    [call] = turn.calls
    assert sum(map(len, pieces)) == cl.ALT_KEPT + extra
    if extra:
        assert (call.raw_arguments, call.valid) == (body + tail, False)
        assert sorted(w.quirk for w in turn.workarounds) == [
            "Q-ARGS-CUMULATIVE",
            "Q-ARGS-INVALID-JSON",
        ]
    else:
        assert (call.raw_arguments, call.valid, turn.workarounds) == ("".join(pieces), True, [])
