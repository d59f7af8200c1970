"""The literal findings of the tool-delta, finish, content and request detectors.

One small chunk stream per branch (and one beside it that must not take the branch), judged
through the chunk door, and the whole list of findings written out by hand: rule, level,
quirk, event, JSON pointer, message, excerpt (and the repeat count when above one). Messages
and excerpts are what a user reads in `toolcall-conformance analyze` and the report, so they are
pinned literally; a finding that appears, vanishes or moves is a failure. The request is
varied on the same wire where a detector reads it (tool_choice, n, max_tokens, tools,
stream_options).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.analysis import analyze, analyze_bytes, analyze_chunks
from conformance.readers import exchange_transcript

ABSENT = object()  # a key left out of the delta (absent, null and "" are different facts)
ID = "call_W1a2b3c4d5e6f7g8h9i0j1k2"
ID2 = "call_T1a2b3c4d5e6f7g8h9i0j1k2"
ID3 = "call_U1a2b3c4d5e6f7g8h9i0j1k2"
P = "/choices/0/delta/tool_calls/0"  # the first (usually only) tool-call delta of a chunk


def ch(
    delta: dict[str, Any] | None = None, finish: Any = None, index: int = 0, **extra: Any
) -> dict[str, Any]:
    """A chunk with a complete envelope and one choice (none when `delta` is None)."""
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


def tc(
    index: Any = 0, id: Any = ABSENT, type: Any = ABSENT, name: Any = ABSENT, args: Any = ABSENT
) -> dict[str, Any]:
    """A tool-call delta; ABSENT leaves the key out (no `function` object without name/args)."""
    d: dict[str, Any] = {}
    for k, v in (("index", index), ("id", id), ("type", type)):
        if v is not ABSENT:
            d[k] = v
    fn = {k: v for k, v in (("name", name), ("arguments", args)) if v is not ABSENT}
    if fn:
        d["function"] = fn
    return d


def calls(*deltas: dict[str, Any], finish: Any = None, index: int = 0) -> dict[str, Any]:
    return ch({"tool_calls": list(deltas)}, finish, index)


def got(*chunks: dict[str, Any], request: dict[str, Any] | None = None) -> list[tuple]:
    r = analyze_chunks(list(chunks), request=request)
    return [
        (f.rule, f.level, f.quirk, f.event, f.pointer, f.message, f.excerpt)
        + ((f.count,) if f.count > 1 else ())
        for f in r.findings
    ]


ROLE = ch({"role": "assistant", "content": None})
END = ch({}, "tool_calls")
OPEN = calls(tc(0, ID, "function", "get_weather", ""))  # a clean opener, arguments to come
FRAG = calls(tc(0, args='{"a":1}'))
WHOLE = ("Q-ARGS-WHOLE-IN-ONE-DELTA", "INFO", "Q-ARGS-WHOLE-IN-ONE-DELTA")
ID_ABSENT = ("R-FIRST-ID", "MUST", "Q-ID-ABSENT")
TYPE_MISSING = ("R-FIRST-TYPE", "MUST", "Q-TYPE-MISSING")
ON_OPENER = (
    "Q-ARGS-ON-OPENING-DELTA",
    "SHOULD",
    "Q-ARGS-ON-OPENING-DELTA",
    1,
    P + "/function/arguments",
    "the opening delta carries an argument fragment",
)
NO_PARAMS = (
    "Q-ARGS-ABSENT-NO-PARAMS",
    "SHOULD",
    "Q-ARGS-ABSENT-NO-PARAMS",
    1,
    None,
    "no arguments streamed; sent as {}",
    None,
)
INDEX_ABSENT = (
    "R-INDEX-PRESENT",
    "MUST",
    "Q-INDEX-ABSENT",
    1,
    P + "/index",
    "tool-call delta without an integer index",
)


# ================================================================== tool deltas: one delta

TOOL_DELTA_CASES: dict[str, tuple[list[dict[str, Any]], list[tuple]]] = {
    "clean": ([ROLE, OPEN, FRAG, END], []),
    "multi_tool_use wrapper": (
        [ROLE, calls(tc(0, ID, "function", "multi_tool_use.parallel", "{}")), END],
        [
            (
                *WHOLE,
                1,
                P,
                "id, name and complete arguments in one delta",
                '{"index":0,"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function","function":'
                '{"name":"multi_tool_use.parallel","arguments":"{}"}}',
            ),
            (
                "Q-OPENAI-MULTI-TOOL-USE-WRAPPER",
                "INFO",
                "Q-OPENAI-MULTI-TOOL-USE-WRAPPER",
                1,
                P + "/function/name",
                "call to the synthetic multi_tool_use.parallel",
                None,
            ),
        ],
    ),
    "short id": (
        [ROLE, calls(tc(0, "call_1", "function", "f", "")), FRAG, END],
        [
            (
                "Q-ID-FORMAT",
                "INFO",
                "Q-ID-FORMAT",
                1,
                P + "/id",
                "tool-call id 'call_1' (6 characters) is not OpenAI's shape: call_ then 24 letters or digits",
                "call_1",
            )
        ],
    ),
    "id one character too long": (  # the shape is matched whole, not as a prefix
        [ROLE, calls(tc(0, ID + "x", "function", "f", "")), FRAG, END],
        [
            (
                "Q-ID-FORMAT",
                "INFO",
                "Q-ID-FORMAT",
                1,
                P + "/id",
                "tool-call id 'call_W1a2b3c4d5e6f7g8h9i0j1k2x' (30 characters) is not OpenAI's shape: call_ then 24 letters or digits",
                "call_W1a2b3c4d5e6f7g8h9i0j1k2x",
            )
        ],
    ),
    "two whole calls in one delta": (  # once for the delta, once per whole call
        [ROLE, calls(tc(0, ID, "function", "f", "{}"), tc(1, ID2, "function", "g", "{}")), END],
        [(*WHOLE, 1, "/choices/0/delta/tool_calls", "2 tool calls in one delta", None, 3)],
    ),
    "three openers in one delta": (
        [
            ROLE,
            calls(
                tc(0, ID, "function", "f", ""),
                tc(1, ID2, "function", "g", ""),
                tc(2, ID3, "function", "h", ""),
            ),
            calls(tc(0, args="{}")),
            calls(tc(1, args="{}")),
            calls(tc(2, args="{}")),
            END,
        ],
        [(*WHOLE, 1, "/choices/0/delta/tool_calls", "3 tool calls in one delta", None)],
    ),
    # --- index-less deltas
    "index-less whole call": (
        [ROLE, calls(tc(ABSENT, ID, "function", "f", '{"a":1}')), END],
        [
            (*WHOLE, 1, None, "id, name and complete arguments in one delta", None),
            (
                *INDEX_ABSENT,
                '{"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                '"function":{"name":"f","arguments":"{\\"a\\":1}"}}',
            ),
            (
                "R-INDEX-PRESENT",
                "MUST",
                "Q-INDEX-ABSENT-WHOLE-CALL",
                1,
                None,
                "index-less calls, each complete in one delta",
                None,
            ),
        ],
    ),
    "index-less whole calls, one per chunk": (
        [
            ROLE,
            calls(tc(ABSENT, ID, "function", "f", '{"a":1}')),
            calls(tc(ABSENT, ID2, "function", "g", '{"b":2}')),
            END,
        ],
        [
            (
                *INDEX_ABSENT,
                '{"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                '"function":{"name":"f","arguments":"{\\"a\\":1}"}}',
                2,
            ),
            (
                "R-INDEX-PRESENT",
                "MUST",
                "Q-INDEX-ABSENT-PARALLEL-SPLIT",
                1,
                None,
                "index-less parallel calls, one whole call per chunk",
                None,
            ),
        ],
    ),
    "index-less whole calls, both in one chunk": (
        [
            ROLE,
            calls(
                tc(ABSENT, ID, "function", "f", '{"a":1}'),
                tc(ABSENT, ID2, "function", "g", '{"b":2}'),
            ),
            END,
        ],
        [
            (*WHOLE, 1, "/choices/0/delta/tool_calls", "2 tool calls in one delta", None, 2),
            (
                *INDEX_ABSENT,
                '{"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                '"function":{"name":"f","arguments":"{\\"a\\":1}"}}',
                2,
            ),
            (
                "R-INDEX-PRESENT",
                "MUST",
                "Q-INDEX-ABSENT-WHOLE-CALL",
                1,
                None,
                "index-less calls, each complete in one delta",
                None,
            ),
        ],
    ),
    "index-less call with an object as arguments": (
        [ROLE, calls(tc(ABSENT, ID, "function", "f", {"a": 1})), END],
        [
            (*WHOLE, 1, None, "id, name and complete arguments in one delta", None),
            (
                "R-ARGS-STRING",
                "MUST",
                "Q-ARGS-JSON-OBJECT",
                1,
                None,
                "arguments sent as a JSON value, not a string",
                None,
            ),
            (
                *INDEX_ABSENT,
                '{"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                '"function":{"name":"f","arguments":{"a":1}}}',
            ),
            (
                "R-INDEX-PRESENT",
                "MUST",
                "Q-INDEX-ABSENT-WHOLE-CALL",
                1,
                None,
                "index-less calls, each complete in one delta",
                None,
            ),
        ],
    ),
    "index as a string": (
        [ROLE, calls(tc("0", ID, "function", "f", '{"a":1}')), END],
        [
            (*WHOLE, 1, None, "id, name and complete arguments in one delta", None),
            (
                *INDEX_ABSENT,
                '{"index":"0","id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                '"function":{"name":"f","arguments":"{\\"a\\":1}"}}',
            ),
            (
                "R-INDEX-PRESENT",
                "MUST",
                "Q-INDEX-ABSENT-WHOLE-CALL",
                1,
                None,
                "index-less calls, each complete in one delta",
                None,
            ),
        ],
    ),
    "index as a boolean": (  # JSON false is not the integer 0
        [ROLE, calls(tc(False, ID, "function", "f", '{"a":1}')), END],
        [
            (*WHOLE, 1, None, "id, name and complete arguments in one delta", None),
            (
                *INDEX_ABSENT,
                '{"index":false,"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2",'
                '"type":"function","function":{"name":"f","arguments":"{\\"a\\":1}"}}',
            ),
            (
                "R-INDEX-PRESENT",
                "MUST",
                "Q-INDEX-ABSENT-WHOLE-CALL",
                1,
                None,
                "index-less calls, each complete in one delta",
                None,
            ),
        ],
    ),
    "index-less call in fragments, without id and type": (  # not whole: no shape finding
        [ROLE, calls(tc(ABSENT, name="f", args='{"a":')), calls(tc(ABSENT, args="1}")), END],
        [
            (
                "R-FIRST-ID",
                "MUST",
                "Q-ID-ABSENT",
                1,
                P + "/id",
                "an index-less call start without a non-empty id",
                '{"function":{"name":"f","arguments":"{\\"a\\":"}}',
            ),
            (
                "R-FIRST-TYPE",
                "MUST",
                "Q-TYPE-MISSING",
                1,
                P + "/type",
                'an index-less call start without type "function"',
                '{"function":{"name":"f","arguments":"{\\"a\\":"}}',
            ),
            (*INDEX_ABSENT, '{"function":{"name":"f","arguments":"{\\"a\\":"}}', 2),
        ],
    ),
    "index-less start with an id but no name and no type": (
        [ROLE, calls(tc(ABSENT, ID, args='{"a":1}')), END],
        [
            (
                "R-FIRST-TYPE",
                "MUST",
                "Q-TYPE-MISSING",
                1,
                P + "/type",
                'an index-less call start without type "function"',
                '{"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","function":{"arguments":"{\\"a\\":1}"}}',
            ),
            (
                *INDEX_ABSENT,
                '{"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","function":{"arguments":"{\\"a\\":1}"}}',
            ),
        ],
    ),
    "index-less delta whose function is a string": (
        [ROLE, calls({"id": ID, "type": "function", "function": "f"}), END],
        [
            NO_PARAMS,
            (
                *INDEX_ABSENT,
                '{"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function","function":"f"}',
            ),
        ],
    ),
    "function a string on the opener and a continuation": (
        [
            ROLE,
            calls({"index": 0, "id": ID, "type": "function", "function": "f"}),
            calls({"index": 0, "function": "g"}),
            END,
        ],
        [
            NO_PARAMS,
            (
                "R-FIRST-ARGS",
                "SHOULD",
                None,
                1,
                P + "/function",
                "the first delta of a call has no arguments key",
                None,
            ),
            (
                "R-FIRST-NAME",
                "MUST",
                "Q-NAME-NEVER-SENT",
                1,
                P + "/function/name",
                "index 0: the call never received a name",
                None,
            ),
        ],
    ),
    "index-less fragment without id or name": (  # not a call start: no type, no id finding
        [ROLE, calls(tc(ABSENT, type="x", args='{"a":1}')), END],
        [(*INDEX_ABSENT, '{"type":"x","function":{"arguments":"{\\"a\\":1}"}}')],
    ),
}


@pytest.mark.parametrize("name", list(TOOL_DELTA_CASES))
def test_tool_delta_findings(name: str) -> None:
    stream, expected = TOOL_DELTA_CASES[name]
    assert got(*stream) == expected


# ================================================================== tool deltas: continuations


def _cont(delta: dict[str, Any]) -> list[dict[str, Any]]:
    return [ROLE, OPEN, calls(delta), END]


def _exc(delta: str) -> str:
    return '{"index":0,' + delta + "}"


CONT = 2  # the continuation's event in _cont
CONTINUATION_CASES: dict[str, tuple[list[dict[str, Any]], list[tuple]]] = {
    "id null": (_cont(tc(0, None, args="{}")), []),
    "id empty": (
        _cont(tc(0, "", args="{}")),
        [
            (
                "R-CONT-ID-ABSENT",
                "MUST",
                "Q-EMPTY-STRING-OVERWRITE",
                CONT,
                P + "/id",
                '`id: ""` on a continuation delta',
                _exc('"id":"","function":{"arguments":"{}"}'),
            )
        ],
    ),
    "id repeated": (
        _cont(tc(0, ID, args="{}")),
        [
            (
                "R-CONT-ID-ABSENT",
                "MUST",
                "Q-ID-REPEATED",
                CONT,
                P + "/id",
                "the call's id repeated on a continuation delta",
                _exc('"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","function":{"arguments":"{}"}'),
            )
        ],
    ),
    "id changed": (
        _cont(tc(0, ID2, args="{}")),
        [
            (
                "R-CONT-ID-ABSENT",
                "MUST",
                "Q-ID-CHANGES-MID-CALL",
                CONT,
                P + "/id",
                "the id changed to 'call_T1a2b3c4d5e6f7g8h9i0j1k2' within the call",
                _exc('"id":"call_T1a2b3c4d5e6f7g8h9i0j1k2","function":{"arguments":"{}"}'),
            )
        ],
    ),
    "type null": (_cont(tc(0, type=None, args="{}")), []),
    "type empty": (
        _cont(tc(0, type="", args="{}")),
        [
            (
                "R-CONT-TYPE-ABSENT",
                "MUST",
                "Q-TYPE-MISSING",
                CONT,
                P + "/type",
                '`type: ""` on a continuation delta',
                None,
            )
        ],
    ),
    "type repeated": (
        _cont(tc(0, type="function", args="{}")),
        [
            (
                "R-CONT-TYPE-ABSENT",
                "SHOULD",
                None,
                CONT,
                P + "/type",
                "type repeated on a continuation delta",
                None,
            )
        ],
    ),
    "name null": (_cont(tc(0, name=None, args="{}")), []),
    "name empty": (
        _cont(tc(0, name="", args="{}")),
        [
            (
                "R-CONT-NAME-ABSENT",
                "MUST",
                "Q-EMPTY-STRING-OVERWRITE",
                CONT,
                P + "/function/name",
                '`name: ""` on a continuation delta',
                _exc('"function":{"name":"","arguments":"{}"}'),
            )
        ],
    ),
    "name repeated": (
        _cont(tc(0, name="get_weather", args="{}")),
        [
            (
                "R-CONT-NAME-ABSENT",
                "MUST",
                "Q-NAME-REPEATED",
                CONT,
                P + "/function/name",
                "the function name repeated on a continuation delta",
                _exc('"function":{"name":"get_weather","arguments":"{}"}'),
            )
        ],
    ),
    "name continued": (
        _cont(tc(0, name="_now", args="{}")),
        [
            (
                "R-CONT-NAME-ABSENT",
                "INFO",
                "Q-NAME-FRAGMENTED",
                CONT,
                P + "/function/name",
                "the name continued with '_now'",
                _exc('"function":{"name":"_now","arguments":"{}"}'),
            )
        ],
    ),
    "arguments null": (
        _cont(tc(0, args=None)),
        [
            NO_PARAMS,
            (
                "R-ARGS-STRING",
                "MUST",
                "Q-ARGS-NULL",
                CONT,
                P + "/function/arguments",
                "arguments is null, not a string",
                _exc('"function":{"arguments":null}'),
            ),
        ],
    ),
    "arguments an object": (
        _cont(tc(0, args={"a": 1})),
        [
            (
                "R-ARGS-STRING",
                "MUST",
                "Q-ARGS-JSON-OBJECT",
                CONT,
                P + "/function/arguments",
                "arguments is an object, not a string",
                _exc('"function":{"arguments":{"a":1}}'),
            )
        ],
    ),
    "arguments a number": (
        _cont(tc(0, args=3)),
        [
            (
                "R-ARGS-STRING",
                "MUST",
                "Q-ARGS-JSON-OBJECT",
                CONT,
                P + "/function/arguments",
                "arguments is a number, not a string",
                _exc('"function":{"arguments":3}'),
            )
        ],
    ),
    "arguments an array": (
        _cont(tc(0, args=[1])),
        [
            (
                "R-ARGS-STRING",
                "MUST",
                "Q-ARGS-JSON-OBJECT",
                CONT,
                P + "/function/arguments",
                "arguments is an array, not a string",
                _exc('"function":{"arguments":[1]}'),
            )
        ],
    ),
    "arguments a boolean": (
        _cont(tc(0, args=True)),
        [
            (
                "R-ARGS-STRING",
                "MUST",
                "Q-ARGS-JSON-OBJECT",
                CONT,
                P + "/function/arguments",
                "arguments is a boolean, not a string",
                _exc('"function":{"arguments":true}'),
            )
        ],
    ),
    "a new call on index 0": (  # the new call's state: its id and name repeat as such
        [
            ROLE,
            calls(tc(0, ID, "function", "f", "{}")),
            calls(tc(0, ID2, "function", "g", "{}")),
            calls(tc(0, ID2, args="")),
            calls(tc(0, name="g", args="")),
            END,
        ],
        [
            (
                *WHOLE,
                1,
                P,
                "id, name and complete arguments in one delta",
                _exc(
                    '"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                    '"function":{"name":"f","arguments":"{}"}'
                ),
            ),
            (
                "R-INDEX-DISTINCT",
                "MUST",
                "Q-INDEX-ALL-ZERO",
                2,
                P + "/index",
                "a new call (id 'call_T1a2b3c4d5e6f7g8h9i0j1k2') reuses index 0",
                _exc(
                    '"id":"call_T1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                    '"function":{"name":"g","arguments":"{}"}'
                ),
            ),
            (
                "R-CONT-ID-ABSENT",
                "MUST",
                "Q-ID-REPEATED",
                3,
                P + "/id",
                "the call's id repeated on a continuation delta",
                _exc('"id":"call_T1a2b3c4d5e6f7g8h9i0j1k2","function":{"arguments":""}'),
            ),
            (
                "R-CONT-NAME-ABSENT",
                "MUST",
                "Q-NAME-REPEATED",
                4,
                P + "/function/name",
                "the function name repeated on a continuation delta",
                _exc('"function":{"name":"g","arguments":""}'),
            ),
        ],
    ),
    "a new call on index 1": (
        [
            ROLE,
            calls(tc(0, ID, "function", "f", "{}")),
            calls(tc(1, ID2, "function", "g", "{}")),
            calls(tc(1, ID3, "function", "h", "{}")),
            END,
        ],
        [
            (
                *WHOLE,
                1,
                P,
                "id, name and complete arguments in one delta",
                _exc(
                    '"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                    '"function":{"name":"f","arguments":"{}"}'
                ),
                2,
            ),
            (
                "R-INDEX-DISTINCT",
                "MUST",
                "Q-INDEX-REUSED-ACROSS-CALLS",
                3,
                P + "/index",
                "a new call (id 'call_U1a2b3c4d5e6f7g8h9i0j1k2') reuses index 1",
                '{"index":1,"id":"call_U1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                '"function":{"name":"h","arguments":"{}"}}',
            ),
        ],
    ),
    "the id arrives late": (  # reported on the opener; the late id is the call's from then on
        [
            ROLE,
            calls(tc(0, type="function", name="f", args="")),
            calls(tc(0, ID, args="")),
            calls(tc(0, ID, args="{}")),
            END,
        ],
        [
            (
                *ID_ABSENT,
                1,
                P + "/id",
                "the first delta of a call has no id",
                _exc('"type":"function","function":{"name":"f","arguments":""}'),
            ),
            (
                "R-CONT-ID-ABSENT",
                "MUST",
                "Q-ID-REPEATED",
                3,
                P + "/id",
                "the call's id repeated on a continuation delta",
                _exc('"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","function":{"arguments":"{}"}'),
            ),
        ],
    ),
    "an empty name before any name": (  # nothing overwritten yet: only the late name counts
        [
            ROLE,
            calls(tc(0, ID, "function", args="")),
            calls(tc(0, name="")),
            calls(tc(0, name="f")),
            FRAG,
            END,
        ],
        [
            (
                "R-FIRST-NAME",
                "MUST",
                None,
                1,
                P + "/function/name",
                "index 0: the name arrived after the opening delta (event 3)",
                None,
            )
        ],
    ),
}


@pytest.mark.parametrize("name", list(CONTINUATION_CASES))
def test_continuation_findings(name: str) -> None:
    stream, expected = CONTINUATION_CASES[name]
    assert got(*stream) == expected


# ================================================================== tool deltas: openers, end

NAME_PTR = P + "/function/name"
OPENER_CASES: dict[str, tuple[list[dict[str, Any]], list[tuple]]] = {
    "no id": (
        [ROLE, calls(tc(0, type="function", name="f", args="")), FRAG, END],
        [
            (
                *ID_ABSENT,
                1,
                P + "/id",
                "the first delta of a call has no id",
                _exc('"type":"function","function":{"name":"f","arguments":""}'),
            )
        ],
    ),
    "id null": (
        [ROLE, calls(tc(0, None, "function", "f", "")), FRAG, END],
        [
            (
                *ID_ABSENT,
                1,
                P + "/id",
                "the first delta of a call has no id",
                _exc('"id":null,"type":"function","function":{"name":"f","arguments":""}'),
            )
        ],
    ),
    "id empty": (
        [ROLE, calls(tc(0, "", "function", "f", "")), FRAG, END],
        [
            (
                *ID_ABSENT,
                1,
                P + "/id",
                "the first delta of a call has id ''",
                _exc('"id":"","type":"function","function":{"name":"f","arguments":""}'),
            )
        ],
    ),
    "id a number, a string id later": (  # no id yet: the later one is adopted, not a change
        [ROLE, calls(tc(0, 5, "function", "f", "")), calls(tc(0, ID, args="{}")), END],
        [
            (
                *ID_ABSENT,
                1,
                P + "/id",
                "the first delta of a call has id 5",
                _exc('"id":5,"type":"function","function":{"name":"f","arguments":""}'),
            )
        ],
    ),
    "no type": (
        [ROLE, calls(tc(0, ID, name="f", args="")), FRAG, END],
        [
            (
                *TYPE_MISSING,
                1,
                P + "/type",
                'the first delta of a call has no type "function"',
                _exc('"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","function":{"name":"f","arguments":""}'),
            )
        ],
    ),
    "type empty": (
        [ROLE, calls(tc(0, ID, "", "f", "")), FRAG, END],
        [
            (
                *TYPE_MISSING,
                1,
                P + "/type",
                'the first delta of a call has no type "function"',
                _exc(
                    '"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"",'
                    '"function":{"name":"f","arguments":""}'
                ),
            )
        ],
    ),
    "no arguments key": (
        [ROLE, calls(tc(0, ID, "function", "f")), FRAG, END],
        [
            (
                "R-FIRST-ARGS",
                "SHOULD",
                None,
                1,
                P + "/function",
                "the first delta of a call has no arguments key",
                None,
            )
        ],
    ),
    "no function object": (
        [ROLE, calls(tc(0, ID, "function")), calls(tc(0, name="f")), FRAG, END],
        [
            (
                "R-FIRST-ARGS",
                "SHOULD",
                None,
                1,
                P + "/function",
                "the first delta of a call has no arguments key",
                None,
            ),
            (
                "R-FIRST-NAME",
                "MUST",
                None,
                1,
                NAME_PTR,
                "index 0: the name arrived after the opening delta (event 2)",
                None,
            ),
        ],
    ),
    "arguments null": (
        [ROLE, calls(tc(0, ID, "function", "f", None)), FRAG, END],
        [
            (
                "R-ARGS-STRING",
                "MUST",
                "Q-ARGS-NULL",
                1,
                P + "/function/arguments",
                "arguments is null, not a string",
                _exc(
                    '"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                    '"function":{"name":"f","arguments":null}'
                ),
            )
        ],
    ),
    "arguments an object": (
        [ROLE, calls(tc(0, ID, "function", "f", {"a": 1})), END],
        [
            (
                "R-ARGS-STRING",
                "MUST",
                "Q-ARGS-JSON-OBJECT",
                1,
                P + "/function/arguments",
                "arguments is an object, not a string",
                _exc(
                    '"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                    '"function":{"name":"f","arguments":{"a":1}}'
                ),
            )
        ],
    ),
    "an argument fragment": (
        [ROLE, calls(tc(0, ID, "function", "f", '{"a"')), calls(tc(0, args=":1}")), END],
        [
            (
                *ON_OPENER,
                _exc(
                    '"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                    '"function":{"name":"f","arguments":"{\\"a\\""}'
                ),
            )
        ],
    ),
    "complete arguments but no name": (
        [ROLE, calls(tc(0, ID, "function", args='{"a":1}')), calls(tc(0, name="f")), END],
        [
            (
                *ON_OPENER,
                _exc(
                    '"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                    '"function":{"arguments":"{\\"a\\":1}"}'
                ),
            ),
            (
                "R-FIRST-NAME",
                "MUST",
                "Q-NAME-AFTER-ARGUMENTS",
                1,
                NAME_PTR,
                "index 0: the name arrived after the opening delta (event 2)",
                None,
            ),
        ],
    ),
    "empty name, the name later": (
        [ROLE, calls(tc(0, ID, "function", "", "")), calls(tc(0, name="f")), FRAG, END],
        [
            (
                "R-FIRST-NAME",
                "MUST",
                "Q-NAME-EMPTY-OPENING-DELTA",
                1,
                NAME_PTR,
                "index 0: the name arrived after the opening delta (event 2)",
                None,
            )
        ],
    ),
    "no name, the name later": (
        [ROLE, calls(tc(0, ID, "function", args="")), calls(tc(0, name="f")), FRAG, END],
        [
            (
                "R-FIRST-NAME",
                "MUST",
                None,
                1,
                NAME_PTR,
                "index 0: the name arrived after the opening delta (event 2)",
                None,
            )
        ],
    ),
    "no name, arguments, then the name": (
        [
            ROLE,
            calls(tc(0, ID, "function", args="")),
            calls(tc(0, args='{"a":')),
            calls(tc(0, name="f")),
            calls(tc(0, args="1}")),
            END,
        ],
        [
            (
                "R-FIRST-NAME",
                "MUST",
                "Q-NAME-AFTER-ARGUMENTS",
                1,
                NAME_PTR,
                "index 0: the name arrived after the opening delta (event 3)",
                None,
            )
        ],
    ),
    "an id but no type and never a name": (  # not held back: only id-less openers are
        [ROLE, calls(tc(0, ID, args="")), FRAG, END],
        [
            (
                "R-FIRST-NAME",
                "MUST",
                "Q-NAME-NEVER-SENT",
                1,
                NAME_PTR,
                "index 0: the call never received a name",
                None,
            ),
            (
                *TYPE_MISSING,
                1,
                P + "/type",
                'the first delta of a call has no type "function"',
                _exc('"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","function":{"arguments":""}'),
            ),
        ],
    ),
    "never a name": (
        [ROLE, calls(tc(0, ID, "function", args="")), FRAG, END],
        [
            (
                "R-FIRST-NAME",
                "MUST",
                "Q-NAME-NEVER-SENT",
                1,
                NAME_PTR,
                "index 0: the call never received a name",
                None,
            )
        ],
    ),
    "first index 2": (
        [ROLE, calls(tc(2, ID, "function", "f", "")), calls(tc(2, args='{"a":1}')), END],
        [
            (
                "Q-INDEX-NONZERO-START",
                "SHOULD",
                "Q-INDEX-NONZERO-START",
                1,
                P + "/index",
                "the first tool call has index 2 and no call has index 0",
                None,
            )
        ],
    ),
    "first index 2, then index 1": (  # index 1 is no index 0: still a non-zero start
        [
            ROLE,
            calls(tc(2, ID, "function", "f", '{"a":1}')),
            calls(tc(1, ID2, "function", "g", '{"a":1}')),
            END,
        ],
        [
            (
                *WHOLE,
                1,
                P,
                "id, name and complete arguments in one delta",
                '{"index":2,"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                '"function":{"name":"f","arguments":"{\\"a\\":1}"}}',
                2,
            ),
            (
                "Q-INDEX-NONZERO-START",
                "SHOULD",
                "Q-INDEX-NONZERO-START",
                1,
                P + "/index",
                "the first tool call has index 2 and no call has index 0",
                None,
            ),
        ],
    ),
    "first index 1, then index 0": (
        [
            ROLE,
            calls(tc(1, ID, "function", "f", "")),
            calls(tc(1, args='{"a":1}')),
            calls(tc(0, ID2, "function", "g", "")),
            calls(tc(0, args='{"a":1}')),
            END,
        ],
        [],
    ),
    # --- one call split over two indices (judged at the end)
    "arguments on a second, nameless, id-less index": (  # the opener findings are held back
        [ROLE, OPEN, calls(tc(1, args='{"a":1}')), END],
        [
            (
                "R-FIRST-NAME",
                "MUST",
                "Q-INDEX-INCONSISTENT-WITHIN-CALL",
                2,
                P,
                "index 1 carries arguments but never an id or a name: one call's deltas split "
                "over two indices",
                '{"index":1,"function":{"arguments":"{\\"a\\":1}"}}',
            )
        ],
    ),
    "a split, then a nameless third index": (  # the split ends index 1's judgment only
        [
            ROLE,
            OPEN,
            calls(tc(1, args='{"a":1}')),
            calls(tc(2, ID3, "function", args="")),
            calls(tc(2, args="{}")),
            END,
        ],
        [
            (
                "R-FIRST-NAME",
                "MUST",
                "Q-INDEX-INCONSISTENT-WITHIN-CALL",
                2,
                P,
                "index 1 carries arguments but never an id or a name: one call's deltas split "
                "over two indices",
                '{"index":1,"function":{"arguments":"{\\"a\\":1}"}}',
            ),
            (
                "R-FIRST-NAME",
                "MUST",
                "Q-NAME-NEVER-SENT",
                3,
                NAME_PTR,
                "index 2: the call never received a name",
                None,
            ),
        ],
    ),
    "the same with an empty id": (
        [ROLE, OPEN, calls(tc(1, "", args='{"a":1}')), END],
        [
            (
                "R-FIRST-NAME",
                "MUST",
                "Q-INDEX-INCONSISTENT-WITHIN-CALL",
                2,
                P,
                "index 1 carries arguments but never an id or a name: one call's deltas split "
                "over two indices",
                '{"index":1,"id":"","function":{"arguments":"{\\"a\\":1}"}}',
            )
        ],
    ),
    "the second index gets a name later: not a split": (  # the held-back findings stand
        [
            ROLE,
            OPEN,
            calls(tc(1, args='{"a":')),
            calls(tc(1, name="g")),
            calls(tc(1, args="1}")),
            END,
        ],
        [
            NO_PARAMS,
            (*ON_OPENER[:3], 2, *ON_OPENER[4:], '{"index":1,"function":{"arguments":"{\\"a\\":"}}'),
            (
                *ID_ABSENT,
                2,
                P + "/id",
                "the first delta of a call has no id",
                '{"index":1,"function":{"arguments":"{\\"a\\":"}}',
            ),
            (
                "R-FIRST-NAME",
                "MUST",
                "Q-NAME-AFTER-ARGUMENTS",
                2,
                NAME_PTR,
                "index 1: the name arrived after the opening delta (event 3)",
                None,
            ),
            (
                *TYPE_MISSING,
                2,
                P + "/type",
                'the first delta of a call has no type "function"',
                '{"index":1,"function":{"arguments":"{\\"a\\":"}}',
            ),
        ],
    ),
    "a named id-less second index is judged at once": (  # the first R-FIRST-TYPE is its
        [
            ROLE,
            OPEN,
            FRAG,
            calls(tc(1, name="g", args="{}")),
            calls(tc(2, ID3, name="h", args="")),
            calls(tc(2, args="{}")),
            END,
        ],
        [
            (
                *WHOLE,
                3,
                P,
                "id, name and complete arguments in one delta",
                '{"index":1,"function":{"name":"g","arguments":"{}"}}',
            ),
            (
                *ID_ABSENT,
                3,
                P + "/id",
                "the first delta of a call has no id",
                '{"index":1,"function":{"name":"g","arguments":"{}"}}',
            ),
            (
                *TYPE_MISSING,
                3,
                P + "/type",
                'the first delta of a call has no type "function"',
                '{"index":1,"function":{"name":"g","arguments":"{}"}}',
                2,
            ),
        ],
    ),
    "a lone nameless index is no split": (
        [ROLE, calls(tc(1, args='{"a":1}')), END],
        [
            (*ON_OPENER, '{"index":1,"function":{"arguments":"{\\"a\\":1}"}}'),
            (
                "Q-INDEX-NONZERO-START",
                "SHOULD",
                "Q-INDEX-NONZERO-START",
                1,
                P + "/index",
                "the first tool call has index 1 and no call has index 0",
                None,
            ),
            (
                *ID_ABSENT,
                1,
                P + "/id",
                "the first delta of a call has no id",
                '{"index":1,"function":{"arguments":"{\\"a\\":1}"}}',
            ),
            (
                "R-FIRST-NAME",
                "MUST",
                "Q-NAME-NEVER-SENT",
                1,
                NAME_PTR,
                "index 1: the call never received a name",
                None,
            ),
            (
                *TYPE_MISSING,
                1,
                P + "/type",
                'the first delta of a call has no type "function"',
                '{"index":1,"function":{"arguments":"{\\"a\\":1}"}}',
            ),
        ],
    ),
    "a second index with a name is no split": (
        [ROLE, OPEN, FRAG, calls(tc(1, name="g", args='{"a":1}')), END],
        [
            (
                *WHOLE,
                3,
                P,
                "id, name and complete arguments in one delta",
                '{"index":1,"function":{"name":"g","arguments":"{\\"a\\":1}"}}',
            ),
            (
                *ID_ABSENT,
                3,
                P + "/id",
                "the first delta of a call has no id",
                '{"index":1,"function":{"name":"g","arguments":"{\\"a\\":1}"}}',
            ),
            (
                *TYPE_MISSING,
                3,
                P + "/type",
                'the first delta of a call has no type "function"',
                '{"index":1,"function":{"name":"g","arguments":"{\\"a\\":1}"}}',
            ),
        ],
    ),
}


@pytest.mark.parametrize("name", list(OPENER_CASES))
def test_opener_and_end_findings(name: str) -> None:
    stream, expected = OPENER_CASES[name]
    assert got(*stream) == expected


def test_indices_are_per_choice_when_n_is_above_one() -> None:
    # Choice 1's nameless index 0 is not the argument half of choice 0's call, and choice
    # 1 starting at index 1 is a non-zero start of its own although choice 0 has index 0.
    opener = calls(tc(0, ID, "function", "f", "{}"), index=0)
    nameless = calls(tc(0, type="function", args='{"a":1}'), index=1)
    ends = (ch({}, "tool_calls", 0), ch({}, "tool_calls", 1))  # each choice finishes
    assert got(opener, nameless, *ends, request={"n": 2}) == [
        (
            *WHOLE,
            0,
            P,
            "id, name and complete arguments in one delta",
            _exc(
                '"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                '"function":{"name":"f","arguments":"{}"}'
            ),
        ),
        (
            *ON_OPENER[:3],
            1,
            *ON_OPENER[4:],
            _exc('"type":"function","function":{"arguments":"{\\"a\\":1}"}'),
        ),
        (
            *ID_ABSENT,
            1,
            P + "/id",
            "the first delta of a call has no id",
            _exc('"type":"function","function":{"arguments":"{\\"a\\":1}"}'),
        ),
        (
            "R-FIRST-NAME",
            "MUST",
            "Q-NAME-NEVER-SENT",
            1,
            NAME_PTR,
            "index 0: the call never received a name",
            None,
        ),
    ]
    second = calls(tc(1, ID2, "function", "g", "{}"), index=1)
    assert got(opener, second, *ends, request={"n": 2}) == [
        (
            *WHOLE,
            0,
            P,
            "id, name and complete arguments in one delta",
            _exc(
                '"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                '"function":{"name":"f","arguments":"{}"}'
            ),
            2,
        ),
        (
            "Q-INDEX-NONZERO-START",
            "SHOULD",
            "Q-INDEX-NONZERO-START",
            1,
            P + "/index",
            "the first tool call has index 1 and no call has index 0",
            None,
        ),
    ]


def test_arguments_before_the_name_are_seen_on_the_steady_path() -> None:
    # Event 2 is a clean bare fragment: later bare fragments with the same envelope take the
    # analyzer's steady path, where only track_fragment sees them (event 4 here).
    head = [ROLE, OPEN, calls(tc(0, args='{"a":')), calls(tc(1, ID2, "function", args=""))]
    tail = [calls(tc(1, args="2}")), calls(tc(0, args="1}")), END]
    before = got(*head, calls(tc(1, args='{"b":')), calls(tc(1, name="g")), *tail)
    assert before == [
        (
            "R-FIRST-NAME",
            "MUST",
            "Q-NAME-AFTER-ARGUMENTS",
            3,
            NAME_PTR,
            "index 1: the name arrived after the opening delta (event 5)",
            None,
        )
    ]
    after = got(*head, calls(tc(1, name="g")), calls(tc(1, args='{"b":')), *tail)
    assert after == [
        (
            "R-FIRST-NAME",
            "MUST",
            None,
            3,
            NAME_PTR,
            "index 1: the name arrived after the opening delta (event 4)",
            None,
        )
    ]


@pytest.mark.parametrize(("deltas", "shape"), [(10_000, False), (10_001, True)])
def test_index_less_deltas_are_kept_up_to_ten_thousand(deltas: int, shape: bool) -> None:
    # Past 10 000 index-less deltas the list is cut back to its first 5 000: the one
    # incomplete call (the 5 001st) is then forgotten and the calls read as whole.
    bad = 5_000
    stream = [
        ROLE,
        *(
            calls(tc(ABSENT, ID, "function", "f", '{"a":' if i == bad else '{"a":1}'))
            for i in range(deltas)
        ),
        END,
    ]
    r = analyze_chunks(stream)
    assert ("Q-INDEX-ABSENT-PARALLEL-SPLIT" in r.quirks) is shape
    (absent,) = [f for f in r.findings if f.quirk == "Q-INDEX-ABSENT"]
    assert (absent.event, absent.count) == (1, deltas)


# ================================================================== finish_reason


def camel(finish: Any = ABSENT, camel_value: Any = "tool_calls") -> dict[str, Any]:
    choice = {"index": 0, "delta": {}, "finishReason": camel_value}
    if finish is not ABSENT:
        choice["finish_reason"] = finish
    return {**ch(), "choices": [choice]}


CAMEL = (
    "Q-FINISH-CAMELCASE",
    "MUST",
    "Q-FINISH-CAMELCASE",
    3,
    "/choices/0/finishReason",
    "finish reason sent as `finishReason`",
)
CALL = [ROLE, OPEN, FRAG]  # one clean call; the finish chunk is event 3
NAMED = {"type": "function", "function": {"name": "get_weather"}}
FINISH_CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any] | None, list[tuple]]] = {
    "text after stop, twice": (  # reported once, at the first
        [
            ROLE,
            ch({"content": "Hi"}),
            ch({}, "stop"),
            ch({"content": "more"}),
            ch({"content": "again"}),
        ],
        None,
        [
            (
                "Q-FINISH-ON-NONFINAL-CHUNK",
                "SHOULD",
                "Q-FINISH-ON-NONFINAL-CHUNK",
                3,
                "/choices/0",
                "output after finish_reason 'stop' (event 2)",
                None,
            )
        ],
    ),
    "empty content after stop": (
        [ROLE, ch({"content": "Hi"}), ch({}, "stop"), ch({"content": ""})],
        None,
        [],
    ),
    "a tool-call delta after tool_calls": (
        [ROLE, OPEN, END, FRAG],
        None,
        [
            (
                "Q-FINISH-ON-NONFINAL-CHUNK",
                "SHOULD",
                "Q-FINISH-ON-NONFINAL-CHUNK",
                3,
                "/choices/0",
                "output after finish_reason 'tool_calls' (event 2)",
                None,
            )
        ],
    ),
    "camelCase only": (
        [*CALL, camel()],
        None,
        [
            (
                "Q-ENVELOPE-FIELDS-MISSING",
                "SHOULD",
                "Q-ENVELOPE-FIELDS-MISSING",
                3,
                "/choices/0",
                "choice without finish_reason",
                None,
            ),
            (*CAMEL, "tool_calls"),
        ],
    ),
    "camelCase next to an empty finish_reason": (
        [*CALL, camel("")],
        None,
        [(*CAMEL, "tool_calls")],
    ),
    "camelCase next to a finish_reason": (
        [*CALL, camel("tool_calls", "stop")],
        None,
        [(*CAMEL, "stop")],
    ),
    "camelCase number next to a finish_reason": (
        [*CALL, camel("tool_calls", 1)],
        None,
        [(*CAMEL, "1")],
    ),
    "camelCase number only": (
        [*CALL, camel(None, 5)],
        None,
        [  # no finish at all
            (*CAMEL, "5"),
            (
                "R-FINISH-PRESENT",
                "MUST",
                "Q-FINISH-NEVER-SENT",
                3,
                None,
                "no finish_reason in the whole stream",
                None,
            ),
        ],
    ),
    "empty string": (
        [*CALL, ch({}, ""), END],
        None,
        [
            (
                "Q-FINISH-EMPTY-STRING",
                "SHOULD",
                "Q-FINISH-EMPTY-STRING",
                3,
                "/choices/0/finish_reason",
                '`finish_reason: ""` instead of null',
                None,
            )
        ],
    ),
    "non-standard string": (
        [*CALL, ch({}, "done")],
        None,
        [
            (
                "R-FINISH-VALUE",
                "MUST",
                "Q-FINISH-NONSTANDARD-VALUE",
                3,
                "/choices/0/finish_reason",
                "finish_reason 'done' is not a standard value",
                None,
            )
        ],
    ),
    "a number": (
        [*CALL, ch({}, 1)],
        None,
        [
            (
                "R-FINISH-VALUE",
                "MUST",
                "Q-FINISH-NONSTANDARD-VALUE",
                3,
                "/choices/0/finish_reason",
                "finish_reason 1 is not a standard value",
                None,
            )
        ],
    ),
    "repeated": (
        [*CALL, END, END],
        None,
        [
            (
                "Q-FINISH-REPEATED",
                "SHOULD",
                "Q-FINISH-REPEATED",
                4,
                "/choices/0/finish_reason",
                "finish_reason 'tool_calls' sent again",
                None,
            )
        ],
    ),
    "in the chunk of an argument fragment": (
        [ROLE, OPEN, calls(tc(0, args='{"a":1}'), finish="tool_calls")],
        None,
        [
            (
                "Q-FINISH-SAME-CHUNK-AS-CALL",
                "SHOULD",
                "Q-FINISH-SAME-CHUNK-AS-CALL",
                2,
                "/choices/0/finish_reason",
                "tool-call delta and finish_reason in one chunk",
                None,
            )
        ],
    ),
    "in the chunk of an empty fragment": (
        [*CALL, calls(tc(0, args=""), finish="tool_calls")],
        None,
        [],
    ),
    # --- judged at the end
    "never sent": (
        CALL,
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
    "nothing streamed": ([], None, []),
    "never sent, error in the stream": (
        [*CALL, {"error": {"message": "boom", "type": "server_error"}}],
        None,
        [
            (
                "R-NO-ERROR",
                "MUST",
                "Q-SSE-ERROR-ENVELOPE",
                3,
                "/error",
                "error inside the stream: boom",
                '{"error":{"message":"boom","type":"server_error"}}',
            )
        ],
    ),
    "stop after calls": (
        [*CALL, ch({}, "stop")],
        None,
        [
            (
                "R-FINISH-TOOL-CALLS",
                "MUST",
                "Q-FINISH-STOP-WITH-TOOLCALLS",
                3,
                None,
                'tool calls streamed but finish_reason is "stop"',
                None,
            )
        ],
    ),
    "stop after calls, tool_choice required": (
        [*CALL, ch({}, "stop")],
        {"tool_choice": "required"},
        [
            (
                "R-FINISH-TOOL-CALLS",
                "MUST",
                "Q-FINISH-STOP-WITH-TOOLCALLS",
                3,
                None,
                'tool calls streamed but finish_reason is "stop"',
                None,
            )
        ],
    ),
    "stop after calls, named tool_choice": (
        [*CALL, ch({}, "stop")],
        {"tool_choice": NAMED},
        [
            (
                "Q-FINISH-STOP-NAMED-TOOLCHOICE",
                "INFO",
                "Q-FINISH-STOP-NAMED-TOOLCHOICE",
                3,
                None,
                'named tool_choice finishes with "stop" (OpenAI\'s own behaviour)',
                None,
            )
        ],
    ),
    "length after calls": (
        [*CALL, ch({}, "length")],
        None,
        [
            (
                "R-LENGTH-CUT",
                "INFO",
                None,
                3,
                None,
                'finish_reason "length": the calls are cut and not executable',
                None,
            )
        ],
    ),
    "content_filter after calls": (
        [*CALL, ch({}, "content_filter")],
        None,
        [
            (
                "R-FINISH-TOOL-CALLS",
                "MUST",
                None,
                3,
                None,
                "tool calls streamed but finish_reason is 'content_filter'",
                None,
            )
        ],
    ),
    "function_call after calls": ([*CALL, ch({}, "function_call")], None, []),
    "a non-standard value after calls": (
        [*CALL, ch({}, "done")],
        None,
        [  # judged once
            (
                "R-FINISH-VALUE",
                "MUST",
                "Q-FINISH-NONSTANDARD-VALUE",
                3,
                "/choices/0/finish_reason",
                "finish_reason 'done' is not a standard value",
                None,
            )
        ],
    ),
    "tool_calls after text only": (
        [ROLE, ch({"content": "Hi"}), END],
        None,
        [
            (
                "R-FINISH-TOOL-CALLS",
                "MUST",
                "Q-FINISH-TOOLCALLS-WITHOUT-DELTAS",
                2,
                None,
                'finish_reason "tool_calls" without any tool-call delta',
                None,
            )
        ],
    ),
    "stop after text only": ([ROLE, ch({"content": "Hi"}), ch({}, "stop")], None, []),
}


@pytest.mark.parametrize("name", list(FINISH_CASES))
def test_finish_findings(name: str) -> None:
    stream, request, expected = FINISH_CASES[name]
    body = None if request is None else {"model": "m", "stream": True, **request}
    assert got(*stream, request=body) == expected


# ------------------------------------------------------------------ arguments invented on a cut

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {}, "unit": {}},
            "required": ["city", 5, "unit"],
        },
    },
}
PING = {
    "type": "function",
    "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}},
}
BARE = {"type": "function", "function": {"name": "ping"}}  # no parameters at all
ODD_TOOLS = [
    "x",
    {"function": "y"},
    {"function": {"name": 3}},
    {"type": "function", "function": {"name": "get_time", "parameters": [1]}},
]
CUT_MESSAGE = 'finish_reason "length": the calls are cut and not executable'


def cut(name: str, args: str = "{}", finish: str = "length", index: int = 0) -> list[dict]:
    return [calls(tc(index, ID, "function", name, "")), calls(tc(index, args=args)), ch({}, finish)]


def invented(call: int, why: str, event: int = 1, pointer: str | None = P) -> tuple:
    return (
        "R-LENGTH-CUT",
        "MUST",
        "Q-ARGS-INVENTED-ON-TRUNCATION",
        event,
        pointer,
        f'call {call}: arguments "{{}}" with finish_reason "length" although {why}: the '
        "server filled them in, the model never wrote them",
        None,
    )


INVENTED_CASES: dict[str, tuple[list[dict[str, Any]], Any, list[tuple]]] = {
    "required parameters": (
        [ROLE, *cut("get_weather")],
        [WEATHER],
        [
            invented(0, "'get_weather' requires city, unit"),
            ("R-LENGTH-CUT", "INFO", None, 3, None, CUT_MESSAGE, None),
        ],
    ),
    "blank around the braces": (
        [ROLE, *cut("get_weather", " {} ")],
        [WEATHER],
        [
            invented(0, "'get_weather' requires city, unit"),
            ("R-LENGTH-CUT", "INFO", None, 3, None, CUT_MESSAGE, None),
        ],
    ),
    "an undeclared tool": (
        [ROLE, *cut("get_time")],
        [WEATHER],
        [
            invented(0, "'get_time' is not a declared tool"),
            ("R-LENGTH-CUT", "INFO", None, 3, None, CUT_MESSAGE, None),
            (
                "R-TOOL-DECLARED",
                "INFO",
                None,
                None,
                None,
                "the model called 'get_time', which the request does not declare",
                None,
            ),
        ],
    ),
    "tools not a list": (
        [ROLE, *cut("get_weather")],
        {"w": WEATHER},
        [
            invented(0, "'get_weather' is not a declared tool"),
            ("R-LENGTH-CUT", "INFO", None, 3, None, CUT_MESSAGE, None),
        ],
    ),
    "no request": (
        [ROLE, *cut("get_time")],
        ABSENT,
        [
            invented(0, "the stream was cut"),
            ("R-LENGTH-CUT", "INFO", None, 3, None, CUT_MESSAGE, None),
        ],
    ),
    "a declared tool without required parameters": (
        [ROLE, *cut("ping")],
        [PING],
        [("R-LENGTH-CUT", "INFO", None, 3, None, CUT_MESSAGE, None)],
    ),
    "a declared tool without parameters": (
        [ROLE, *cut("ping")],
        [BARE],
        [("R-LENGTH-CUT", "INFO", None, 3, None, CUT_MESSAGE, None)],
    ),
    "arguments written": (
        [ROLE, *cut("get_weather", '{"city":"P"}')],
        [WEATHER],
        [("R-LENGTH-CUT", "INFO", None, 3, None, CUT_MESSAGE, None)],
    ),
    "finish stop": (
        [ROLE, *cut("get_weather", finish="stop")],
        [WEATHER],
        [
            (
                "R-FINISH-TOOL-CALLS",
                "MUST",
                "Q-FINISH-STOP-WITH-TOOLCALLS",
                3,
                None,
                'tool calls streamed but finish_reason is "stop"',
                None,
            )
        ],
    ),
    "on index 1": (
        [ROLE, *cut("get_weather", index=1)],
        [WEATHER],
        [
            (
                "Q-INDEX-NONZERO-START",
                "SHOULD",
                "Q-INDEX-NONZERO-START",
                1,
                P + "/index",
                "the first tool call has index 1 and no call has index 0",
                None,
            ),
            invented(0, "'get_weather' requires city, unit"),
            ("R-LENGTH-CUT", "INFO", None, 3, None, CUT_MESSAGE, None),
        ],
    ),
    "the second call, after a parameterless one and odd declarations": (
        [
            ROLE,
            calls(tc(0, ID, "function", "get_time", "")),
            calls(tc(0, args="{}")),
            calls(tc(1, ID2, "function", "get_weather", "")),
            calls(tc(1, args="{}")),
            calls(tc(2, ID3, "function", "get_weather", "")),
            calls(tc(2, args="{}")),
            ch({}, "length"),
        ],
        [WEATHER, *ODD_TOOLS],
        [
            invented(1, "'get_weather' requires city, unit", 3),  # the first one only
            ("R-LENGTH-CUT", "INFO", None, 7, None, CUT_MESSAGE, None),
        ],
    ),
    "the second call, after one with arguments": (
        [
            ROLE,
            calls(tc(0, ID, "function", "get_weather", "")),
            calls(tc(0, args='{"a":1}')),
            calls(tc(1, ID2, "function", "get_weather", "")),
            calls(tc(1, args="{}")),
            ch({}, "length"),
        ],
        [WEATHER],
        [
            invented(1, "'get_weather' requires city, unit", 3),
            ("R-LENGTH-CUT", "INFO", None, 5, None, CUT_MESSAGE, None),
        ],
    ),
    "a second call on index 0": (  # the index's state is the new call's: its opener
        [
            ROLE,
            calls(tc(0, ID, "function", "ping", "{}")),
            ch({"content": None}),
            calls(tc(0, ID2, "function", "get_weather", "")),
            calls(tc(0, args="{}")),
            ch({}, "length"),
        ],
        [WEATHER, BARE],
        [
            (
                *WHOLE,
                1,
                P,
                "id, name and complete arguments in one delta",
                _exc(
                    '"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                    '"function":{"name":"ping","arguments":"{}"}'
                ),
            ),
            (
                "R-INDEX-DISTINCT",
                "MUST",
                "Q-INDEX-ALL-ZERO",
                3,
                P + "/index",
                "a new call (id 'call_T1a2b3c4d5e6f7g8h9i0j1k2') reuses index 0",
                _exc(
                    '"id":"call_T1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                    '"function":{"name":"get_weather","arguments":""}'
                ),
            ),
            invented(1, "'get_weather' requires city, unit", 3),
            ("R-LENGTH-CUT", "INFO", None, 5, None, CUT_MESSAGE, None),
        ],
    ),
    "a second declared call under the same id": (  # the index's state is the new call's
        [
            ROLE,
            calls(tc(0, ID, "function", "ping", "{}")),
            ch({"content": None}),
            calls(tc(0, ID, name="get_weather", args="")),
            calls(tc(0, args="{}")),
            ch({}, "length"),
        ],
        [WEATHER, BARE],
        [
            (
                *WHOLE,
                1,
                P,
                "id, name and complete arguments in one delta",
                _exc(
                    '"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                    '"function":{"name":"ping","arguments":"{}"}'
                ),
            ),
            (
                "R-INDEX-DISTINCT",
                "MUST",
                "Q-INDEX-AND-ID-REUSED",
                3,
                P + "/index",
                "a second call ('get_weather' after 'ping') reuses index 0 and id "
                "'call_W1a2b3c4d5e6f7g8h9i0j1k2'",
                _exc(
                    '"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","function":{"name":"get_weather","arguments":""}'
                ),
            ),
            invented(1, "'get_weather' requires city, unit", 3),
            ("R-LENGTH-CUT", "INFO", None, 5, None, CUT_MESSAGE, None),
        ],
    ),
    "an index-less call": (  # no index state: the finish chunk's event, no pointer
        [ROLE, calls(tc(ABSENT, ID, "function", "get_weather", "{}")), ch({}, "length")],
        [WEATHER],
        [
            (*WHOLE, 1, None, "id, name and complete arguments in one delta", None),
            (
                *INDEX_ABSENT,
                '{"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","type":"function",'
                '"function":{"name":"get_weather","arguments":"{}"}}',
            ),
            (
                "R-INDEX-PRESENT",
                "MUST",
                "Q-INDEX-ABSENT-WHOLE-CALL",
                1,
                None,
                "index-less calls, each complete in one delta",
                None,
            ),
            ("R-LENGTH-CUT", "INFO", None, 2, None, CUT_MESSAGE, None),
            invented(0, "'get_weather' requires city, unit", 2, None),
        ],
    ),
}


@pytest.mark.parametrize("name", list(INVENTED_CASES))
def test_invented_arguments_findings(name: str) -> None:
    stream, tools, expected = INVENTED_CASES[name]
    body = None if tools is ABSENT else {"model": "m", "stream": True, "tools": tools}
    assert got(*stream, request=body) == expected


# ================================================================== content and reasoning

MARKUP = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
AS_TEXT = (
    "R-TOOLCALLS-STRUCTURED",
    "MUST",
    "Q-TOOLCALL-AS-TEXT",
    1,
    None,
    "a tool call streamed as content text",
)
DUPLICATED = (
    "Q-TOOLCALL-DUPLICATED-IN-CONTENT",
    "SHOULD",
    "Q-TOOLCALL-DUPLICATED-IN-CONTENT",
    1,
    None,
    "tool-call markup in content next to structured tool_calls",
    None,
)
NOT_ENFORCED = (
    "R-TOOL-CHOICE",
    "MUST",
    "Q-REQUIRED-NOT-ENFORCED",
    1,
    "/choices/0/delta/content",
    'tool_choice "required" but the model answered in prose, with no tool call',
)
LONG_NAME = {"type": "function", "function": {"name": "get_weather_in_a_city_with_a_long_name"}}


def reasoning_call(**delta: Any) -> dict[str, Any]:
    return ch({**delta, "tool_calls": [tc(0, ID, "function", "get_weather", "")]})


CONTENT_CASES: dict[str, tuple[list[dict[str, Any]], Any, list[tuple]]] = {
    "reasoning next to a call": (
        [ROLE, reasoning_call(reasoning_content="think"), FRAG, END],
        None,
        [
            (
                "Q-REASONING-SAME-DELTA",
                "SHOULD",
                "Q-REASONING-SAME-DELTA",
                1,
                "/choices/0/delta",
                "reasoning and tool_calls in one delta",
                None,
            )
        ],
    ),
    "empty reasoning next to a call": (
        [ROLE, reasoning_call(reasoning_content=""), FRAG, END],
        None,
        [],
    ),
    "empty reasoning_details next to a call": (
        [ROLE, reasoning_call(reasoning_details=[]), FRAG, END],
        None,
        [],
    ),
    "content on the tool_calls finish after reasoning": (
        [ROLE, ch({"reasoning": "think"}), OPEN, FRAG, ch({"content": "Done."}, "tool_calls")],
        None,
        [
            (
                "Q-REASONING-LEAK-AT-FINISH",
                "SHOULD",
                "Q-REASONING-LEAK-AT-FINISH",
                4,
                "/choices/0/delta/content",
                "content text on the tool_calls finish chunk after reasoning",
                "Done.",
            )
        ],
    ),
    "content on the tool_calls finish without reasoning": (
        [ROLE, OPEN, FRAG, ch({"content": "Done."}, "tool_calls")],
        None,
        [],
    ),
    "content on the stop finish after reasoning": (
        [ROLE, ch({"reasoning": "think"}), ch({"content": "Done."}, "stop")],
        None,
        [],
    ),
    # --- calls written as text
    "markup, no call": (
        [ROLE, ch({"content": MARKUP}), ch({}, "stop")],
        None,
        [(*AS_TEXT, MARKUP)],
    ),
    "markup over two deltas, the excerpt cut at 160": (
        [
            ROLE,
            ch({"content": "<tool_call>" + "a" * 100}),
            ch({"content": "b" * 100}),
            ch({}, "stop"),
        ],
        None,
        [(*AS_TEXT, "<tool_call>" + "a" * 100 + "b" * 49)],
    ),
    "markup next to a call": ([ROLE, ch({"content": MARKUP}), OPEN, FRAG, END], None, [DUPLICATED]),
    "markup, no call, tool_choice none": (
        [ROLE, ch({"content": MARKUP}), ch({}, "stop")],
        {"tool_choice": "none"},
        [],
    ),
    "markup next to a call, tool_choice none": (
        [ROLE, ch({"content": MARKUP}), OPEN, FRAG, END],
        {"tool_choice": "none"},
        [
            DUPLICATED,
            (
                "R-TOOL-CHOICE",
                "MUST",
                None,
                None,
                None,
                'tool_choice "none" but a tool call was streamed',
                None,
            ),
        ],
    ),
    "markup, no call, tool_choice required": (  # group H's, not Q-REQUIRED-NOT-ENFORCED
        [ROLE, ch({"content": "<tool_call>x"}), ch({}, "stop")],
        {"tool_choice": "required"},
        [(*AS_TEXT, "<tool_call>x")],
    ),
    # --- tool_choice required / named
    "prose, required": (
        [ROLE, ch({"content": "Let me " + "x" * 100}), ch({"content": "y" * 100}), ch({}, "stop")],
        {"tool_choice": "required"},
        [(*NOT_ENFORCED, "Let me " + "x" * 100 + "y" * 53)],
    ),
    "prose then a call, required": (
        [ROLE, ch({"content": "Let me check."}), OPEN, FRAG, END],
        {"tool_choice": "required"},
        [
            (
                "R-TOOL-CHOICE",
                "SHOULD",
                "Q-REQUIRED-NOT-ENFORCED",
                1,
                "/choices/0/delta/content",
                'tool_choice "required" but prose came before the first call',
                "Let me check.",
            )
        ],
    ),
    "long prose then a call, required": (
        [ROLE, ch({"content": "Let me " + "x" * 100}), ch({"content": "y" * 100}), OPEN, FRAG, END],
        {"tool_choice": "required"},
        [
            (
                "R-TOOL-CHOICE",
                "SHOULD",
                "Q-REQUIRED-NOT-ENFORCED",
                1,
                "/choices/0/delta/content",
                'tool_choice "required" but prose came before the first call',
                "Let me " + "x" * 100 + "y" * 53,
            )
        ],
    ),
    "blank then a call, required": (
        [ROLE, ch({"content": "  "}), OPEN, FRAG, END],
        {"tool_choice": "required"},
        [],
    ),
    "a call then prose, required": (
        [ROLE, OPEN, FRAG, ch({"content": "Done."}), END],
        {"tool_choice": "required"},
        [],
    ),
    "prose, then an error, required": (
        [ROLE, ch({"content": "Hi"}), {"error": {"message": "boom"}}],
        {"tool_choice": "required"},
        [
            (
                "R-NO-ERROR",
                "MUST",
                "Q-SSE-ERROR-ENVELOPE",
                2,
                "/error",
                "error inside the stream: boom",
                '{"error":{"message":"boom"}}',
            )
        ],
    ),
    "nothing, required": (
        [ROLE, ch({}, "stop")],
        {"tool_choice": "required"},
        [
            (
                "R-TOOL-CHOICE",
                "MUST",
                None,  # a lone capture: the stream-false comparison names the quirk
                None,
                None,
                "tool_choice required but no tool call streamed; the stream-false comparison "
                "was not made",
                None,
            )
        ],
    ),
    "nothing at all, required": ([], {"tool_choice": "required"}, []),
    "an error only, required": (
        [ROLE, {"error": {"message": "boom"}}],
        {"tool_choice": "required"},
        [
            (
                "R-NO-ERROR",
                "MUST",
                "Q-SSE-ERROR-ENVELOPE",
                1,
                "/error",
                "error inside the stream: boom",
                '{"error":{"message":"boom"}}',
            )
        ],
    ),
    "prose, named": (
        [ROLE, ch({"content": "Hi"}), ch({}, "stop")],
        {"tool_choice": {"type": "function", "function": {"name": "f"}}},
        [
            (
                "R-TOOL-CHOICE",
                "MUST",
                None,
                None,
                None,
                'tool_choice {"type":"function","function":{"name":"f"}} but no tool call streamed'
                "; the stream-false comparison was not made",
                None,
            )
        ],
    ),
    "nothing, a long named choice": (
        [ROLE, ch({}, "stop")],
        {"tool_choice": LONG_NAME},
        [
            (
                "R-TOOL-CHOICE",
                "MUST",
                None,
                None,
                None,
                'tool_choice {"type":"function","function":{"name":"get_weather_in_a_cit… but no '
                "tool call streamed; the stream-false comparison was not made",
                None,
            )
        ],
    ),
    "nothing, auto": ([ROLE, ch({}, "stop")], {"tool_choice": "auto"}, []),
    "prose, none": ([ROLE, ch({"content": "Hi"}), ch({}, "stop")], {"tool_choice": "none"}, []),
}


@pytest.mark.parametrize("name", list(CONTENT_CASES))
def test_content_findings(name: str) -> None:
    stream, request, expected = CONTENT_CASES[name]
    body = None if request is None else {"model": "m", "stream": True, **request}
    assert got(*stream, request=body) == expected


# ================================================================== request semantics

TOOL_W = {"type": "function", "function": {"name": "get_weather"}}
TOOL_T = {"type": "function", "function": {"name": "get_time"}}


def answered(*names: str) -> list[dict[str, Any]]:
    """One call per name, on indices 0, 1, …, each opened and then given "{}"."""
    out = [ROLE]
    for i, (name, cid) in enumerate(zip(names, (ID, ID2, ID3), strict=False)):
        out += [calls(tc(i, cid, "function", name, "")), calls(tc(i, args="{}"))]
    return [*out, END]


def rule(rid: str, message: str, quirk: str | None = None, level: str = "MUST") -> tuple:
    return (rid, level, quirk, None, None, message, None)


REQUEST_CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any], list[tuple]]] = {
    "undeclared names: the first is named": (
        answered("a", "b"),
        {"tools": [TOOL_W]},
        [
            rule(
                "R-TOOL-DECLARED",
                "the model called 'a', which the request does not declare",
                level="INFO",
            )
        ],
    ),
    "declared": (answered("get_weather", "get_time"), {"tools": [TOOL_W, TOOL_T]}, []),
    "nothing usable declared": (answered("a"), {"tools": ["x", {"type": "function"}]}, []),
    "the multi_tool_use wrapper undeclared": (
        [
            ROLE,
            calls(tc(0, ID, "function", "multi_tool_use.parallel", "")),
            calls(tc(0, args="{}")),
            END,
        ],
        {"tools": [TOOL_W]},
        [
            (
                "Q-OPENAI-MULTI-TOOL-USE-WRAPPER",
                "INFO",
                "Q-OPENAI-MULTI-TOOL-USE-WRAPPER",
                1,
                NAME_PTR,
                "call to the synthetic multi_tool_use.parallel",
                None,
            )
        ],
    ),
    "parallel_tool_calls false, two calls": (
        answered("get_weather", "get_time"),
        {"parallel_tool_calls": False},
        [
            rule(
                "R-PARALLEL-DISABLED",
                "2 calls although parallel_tool_calls is false",
                "Q-PARALLEL-TOOL-CALLS-IGNORED",
            )
        ],
    ),
    "parallel_tool_calls false, three calls": (
        answered("get_weather", "get_time", "get_time"),
        {"parallel_tool_calls": False},
        [
            rule(
                "R-PARALLEL-DISABLED",
                "3 calls although parallel_tool_calls is false",
                "Q-PARALLEL-TOOL-CALLS-IGNORED",
            )
        ],
    ),
    "parallel_tool_calls false, one call": (
        answered("get_weather"),
        {"parallel_tool_calls": False},
        [],
    ),
    "parallel_tool_calls true, two calls": (
        answered("get_weather", "get_time"),
        {"parallel_tool_calls": True},
        [],
    ),
    "tool_choice none, a call": (
        answered("get_weather"),
        {"tool_choice": "none"},
        [rule("R-TOOL-CHOICE", 'tool_choice "none" but a tool call was streamed')],
    ),
    "tool_choice none, no call": (
        [ROLE, ch({"content": "Hi"}), ch({}, "stop")],
        {"tool_choice": "none"},
        [],
    ),
    "tool_choice auto, a call": (answered("get_weather"), {"tool_choice": "auto"}, []),
    "named, the second call wrong": (
        answered("get_weather", "get_time"),
        {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
        [rule("R-TOOL-CHOICE", "named tool_choice 'get_weather' but called 'get_time'")],
    ),
    "named, every call right": (
        answered("get_weather", "get_weather"),
        {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
        [],
    ),
    "named without a function": (
        answered("get_weather"),
        {"tool_choice": {"type": "function", "function": None}},
        [],
    ),
}


@pytest.mark.parametrize("name", list(REQUEST_CASES))
def test_request_findings(name: str) -> None:
    stream, request, expected = REQUEST_CASES[name]
    assert got(*stream, request={"model": "m", "stream": True, **request}) == expected


def test_request_rules_need_a_request() -> None:
    assert got(*answered("a", "b")) == []


# ================================================================== the same judgments on the wire


def sse(*chunks: dict[str, Any], done: bool = True, tail: bytes = b"") -> bytes:
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"") + tail


def on_wire(
    raw: bytes, request: dict[str, Any], status: int = 200, transport: str | None = None
) -> list[tuple]:
    t = exchange_transcript(
        "s",
        "live",
        {"body": {"model": "m", "stream": True, **request}},
        status,
        {"content-type": "text/event-stream"},
        raw,
    )
    t.transport_error = transport  # what the transport reports when the connection drops
    r = analyze(t)
    return [
        (f.rule, f.level, f.quirk, f.event, f.pointer, f.message, f.excerpt) for f in r.findings
    ]


PARTIAL = [ROLE, calls(tc(0, ID, "function", "f", "")), calls(tc(0, args='{"a": "Par'))]
USAGE_ASKED = {"stream_options": {"include_usage": True}}
LIMITED = {"max_tokens": 5}
RESET = ("R-COMPLETE", "MUST", None, None, None, "connection reset", None)
CUT_BODY = [
    (
        "R-COMPLETE",
        "MUST",
        None,
        3,
        None,
        "HTTP 200 body cut inside an event after 3 "
        "event(s), with no finish_reason: the server closed the stream mid-answer",
        None,
    ),
    (
        "R-SSE-WELL-FORMED",
        "MUST",
        None,
        3,
        None,
        "stream ended inside an event (no blank line after it): {",
        None,
    ),
]
BOOM = (
    "R-NO-ERROR",
    "MUST",
    "Q-SSE-ERROR-ENVELOPE",
    3,
    "/error",
    "error inside the stream: boom",
    '{"error":{"message":"boom"}}',
)
REPAIRED = (
    "R-ARGS-JSON",
    "MUST",
    "Q-ARGS-TRUNCATED",
    1,
    None,
    "arguments were cut; closed by JSON repair",
    None,
)
NO_USAGE = (
    "R-USAGE",
    "MUST",
    None,
    None,
    None,
    "stream_options.include_usage asked, no usage object arrived",
    None,
)
WIRE_CASES: dict[str, tuple[bytes, dict[str, Any], dict[str, Any], list[tuple]]] = {
    "usage asked, none came": (sse(*PARTIAL, END), USAGE_ASKED, {}, [REPAIRED, NO_USAGE]),
    "usage asked, one event": (
        sse(END),
        USAGE_ASKED,
        {},
        [
            (
                "R-FINISH-TOOL-CALLS",
                "MUST",
                "Q-FINISH-TOOLCALLS-WITHOUT-DELTAS",
                0,
                None,
                'finish_reason "tool_calls" without any tool-call delta',
                None,
            ),
            NO_USAGE,
        ],
    ),
    "usage asked, a single event": (
        sse(END, done=False),
        USAGE_ASKED,
        {},
        [
            (
                "R-FINISH-TOOL-CALLS",
                "MUST",
                "Q-FINISH-TOOLCALLS-WITHOUT-DELTAS",
                0,
                None,
                'finish_reason "tool_calls" without any tool-call delta',
                None,
            ),
            (
                "R-SSE-DONE",
                "SHOULD",
                "Q-SSE-DONE-MISSING",
                0,
                None,
                "stream ended without data: [DONE]",
                None,
            ),
            NO_USAGE,
        ],
    ),
    "usage asked, an error": (
        sse(*PARTIAL, {"error": {"message": "boom"}}),
        USAGE_ASKED,
        {},
        [BOOM],
    ),
    "usage asked, the connection dropped": (
        sse(*PARTIAL, done=False),
        USAGE_ASKED,
        {"transport": "connection reset"},
        [RESET],
    ),
    "usage asked, the body cut": (
        sse(*PARTIAL, done=False, tail=b"data: {"),
        USAGE_ASKED,
        {},
        CUT_BODY,
    ),
    "max_tokens, a cut call, tool_calls": (
        sse(*PARTIAL, END),
        LIMITED,
        {},
        [
            REPAIRED,
            (
                "R-LENGTH-VISIBLE",
                "MUST",
                "Q-ARGS-TRUNCATED",
                None,
                None,
                "call 0's arguments are cut but finish_reason is 'tool_calls', not \"length\"",
                None,
            ),
        ],
    ),
    "max_tokens, a cut call, the body cut": (
        sse(*PARTIAL, done=False, tail=b"data: {"),
        LIMITED,
        {},
        CUT_BODY,
    ),
    "max_tokens, a cut call, the connection dropped": (
        sse(*PARTIAL, done=False),
        LIMITED,
        {"transport": "connection reset"},
        [RESET],
    ),
    "max_tokens, a cut call, an error": (
        sse(*PARTIAL, {"error": {"message": "boom"}}),
        LIMITED,
        {},
        [BOOM],
    ),
    "no finish, the connection dropped": (
        sse(*PARTIAL, done=False),
        {},
        {"transport": "connection reset"},
        [RESET],
    ),
    "no finish, [DONE]": (
        sse(*PARTIAL),
        {},
        {},
        [
            REPAIRED,
            (
                "R-FINISH-PRESENT",
                "MUST",
                "Q-FINISH-NEVER-SENT",
                3,
                None,
                "no finish_reason in the whole stream",
                None,
            ),
        ],
    ),
    "an empty body": (
        b"",
        {},
        {},
        [
            (
                "R-COMPLETE",
                "MUST",
                None,
                None,
                None,
                "HTTP 200 with an empty body: the server "
                "closed the stream after its headers, before any event",
                None,
            )
        ],
    ),
    "prose, required, the body cut": (
        sse(ROLE, ch({"content": "Sunny."}), done=False, tail=b"data: {"),
        {"tool_choice": "required"},
        {},
        [
            (
                "R-COMPLETE",
                "MUST",
                None,
                2,
                None,
                "HTTP 200 body cut inside an event after 2 "
                "event(s), with no finish_reason: the server closed the stream mid-answer",
                None,
            ),
            (
                "R-SSE-WELL-FORMED",
                "MUST",
                None,
                2,
                None,
                "stream ended inside an event (no blank line after it): {",
                None,
            ),
        ],
    ),
    "prose, required, the connection dropped": (
        sse(ROLE, ch({"content": "Sunny."}), done=False),
        {"tool_choice": "required"},
        {"transport": "connection reset"},
        [RESET],
    ),
    "prose, required": (
        sse(ROLE, ch({"content": "Sunny."}), ch({}, "stop")),
        {"tool_choice": "required"},
        {},
        [(*NOT_ENFORCED, "Sunny.")],
    ),
    "nothing, required": (
        sse(ROLE, ch({}, "stop")),
        {"tool_choice": "required"},
        {},
        [
            (
                "R-TOOL-CHOICE",
                "MUST",
                None,  # a lone capture: the stream-false comparison names the quirk
                None,
                None,
                "tool_choice required but no tool call streamed; the stream-false comparison "
                "was not made",
                None,
            )
        ],
    ),
    "nothing, required, the connection dropped": (
        sse(ROLE, done=False),
        {"tool_choice": "required"},
        {"transport": "connection reset"},
        [RESET],
    ),
}


@pytest.mark.parametrize("name", list(WIRE_CASES))
def test_wire_findings(name: str) -> None:
    raw, request, kw, expected = WIRE_CASES[name]
    assert on_wire(raw, request, **kw) == expected


# ------------------------------------------------------------------ the model's own text of a call

CALL_TEXT = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
BROKEN = [
    calls(tc(0, ID, "function", "get_weather", "")),
    calls(tc(0, args='{"city": Paris}')),
]  # invalid JSON that repair cannot close
INVALID = "arguments are not JSON and cannot be repaired; kept as sent"


def corrupted(event: int, text_event: int) -> tuple:
    return (
        "R-ARGS-JSON",
        "MUST",
        "Q-ARGS-SERVER-PARSER-CORRUPTION",
        event,
        None,
        f"{INVALID}; the model's own text of the 'get_weather' call is in content (event "
        f"{text_event}) with valid arguments: the server's parser broke them",
        None,
    )


def duplicated(event: int) -> tuple:
    return (*DUPLICATED[:3], event, *DUPLICATED[4:])


EVIDENCE_CASES: dict[str, tuple[list[str], list[tuple]]] = {
    "the call written with object arguments": ([CALL_TEXT], [duplicated(1), corrupted(2, 1)]),
    "the call written with parameters as a JSON string": (
        ['{"name": "get_weather", "parameters": "{\\"city\\": \\"Paris\\"}"}'],
        [duplicated(1), corrupted(2, 1)],
    ),
    "after text that does not decode and arguments that do not parse": (
        ['{"name": oops} {"name": "get_weather", "arguments": "nope"} ' + CALL_TEXT],
        [duplicated(1), corrupted(2, 1)],
    ),
    "arguments that are a number": (
        ['{"name": "get_weather", "arguments": 3}'],
        [duplicated(1), ("R-ARGS-JSON", "MUST", "Q-ARGS-INVALID-JSON", 2, None, INVALID, None)],
    ),
    "a call to another tool": (
        ['{"name": "get_time", "arguments": {"tz": "UTC"}}'],
        [duplicated(1), ("R-ARGS-JSON", "MUST", "Q-ARGS-INVALID-JSON", 2, None, INVALID, None)],
    ),
    "prose only": (
        ["hello"],
        [("R-ARGS-JSON", "MUST", "Q-ARGS-INVALID-JSON", 2, None, INVALID, None)],
    ),
    # Content is kept up to 200 000 characters: text past that is not read for evidence.
    "the text at 199 999 characters": (
        ["x" * 100_000, "y" * 99_999, CALL_TEXT],
        [duplicated(3), corrupted(4, 3)],
    ),
    "the text at 200 000 characters": (
        ["x" * 100_000, "y" * 100_000, CALL_TEXT],
        [duplicated(3), ("R-ARGS-JSON", "MUST", "Q-ARGS-INVALID-JSON", 4, None, INVALID, None)],
    ),
}


@pytest.mark.parametrize("name", list(EVIDENCE_CASES))
def test_server_parser_evidence(name: str) -> None:
    texts, expected = EVIDENCE_CASES[name]
    text_chunks = [ch({"content": t}) for t in texts]
    assert got(ROLE, *text_chunks, *BROKEN, END) == expected


def test_index_less_shape_is_reported_at_the_first_delta_event_not_its_chunk_count() -> None:
    # A comment is an event but no chunk: event numbers run one ahead of chunk ordinals.
    raw = b": keepalive\n\n" + sse(
        ROLE,
        calls(tc(ABSENT, ID, "function", "f", '{"a":1}')),
        calls(tc(ABSENT, ID2, "function", "g", '{"a":1}')),
        END,
    )
    r = analyze_bytes(raw)
    assert [(f.quirk, f.event, f.count) for f in r.findings] == [
        ("Q-SSE-COMMENT-KEEPALIVE", 0, 1),
        ("Q-INDEX-ABSENT", 2, 2),
        ("Q-INDEX-ABSENT-PARALLEL-SPLIT", 2, 1),
    ]


# ============================================================ edges: a second call, a role, a comparison

TWO_DECLARED = {
    "model": "m",
    "stream": True,
    "tools": [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("get_weather", "get_time")
    ],
}
REPEATED_ID = ("R-CONT-ID-ABSENT", "MUST", "Q-ID-REPEATED", 2, P + "/id")


def test_the_same_id_and_the_same_declared_name_is_a_repeat_not_a_second_call() -> None:
    # Only another declared name under the same id is a second call on the index
    # (Q-INDEX-AND-ID-REUSED): the call's own name sent again is Q-NAME-REPEATED.
    opener = calls(tc(0, ID, "function", "get_weather", ""))
    again = calls(tc(0, ID, name="get_weather", args='{"city":"Paris"}'))
    assert got(ROLE, opener, again, END, request=TWO_DECLARED) == [
        (
            *REPEATED_ID,
            "the call's id repeated on a continuation delta",
            '{"index":0,"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","function":'
            '{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}',
        ),
        (
            "R-CONT-NAME-ABSENT",
            "MUST",
            "Q-NAME-REPEATED",
            2,
            P + "/function/name",
            "the function name repeated on a continuation delta",
            '{"index":0,"id":"call_W1a2b3c4d5e6f7g8h9i0j1k2","function":'
            '{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}',
        ),
    ]


def test_the_same_id_with_an_undeclared_name_is_not_a_second_call() -> None:
    # The call's own name is declared, the new one is not: the name continued under the
    # same id (Q-INDEX-AND-ID-REUSED needs both names declared).
    opener = calls(tc(0, ID, "function", "get_weather", ""))
    r = analyze_chunks(
        [ROLE, opener, calls(tc(0, ID, name="_now", args="{}")), END], request=TWO_DECLARED
    )
    assert [(f.quirk, f.event, f.pointer, f.message) for f in r.findings] == [
        ("Q-ID-REPEATED", 2, P + "/id", "the call's id repeated on a continuation delta"),
        ("Q-NAME-FRAGMENTED", 2, P + "/function/name", "the name continued with '_now'"),
    ]
    # the second declared name under the same id is the second call; its id and name are
    # the index's from then on (sent again, they repeat)
    second = calls(tc(0, ID, name="get_time", args="{}"))
    again = calls(tc(0, ID, name="get_time", args=""))
    assert got(ROLE, opener, second, again, END, request=TWO_DECLARED) == [
        NO_PARAMS,
        (
            "R-INDEX-DISTINCT",
            "MUST",
            "Q-INDEX-AND-ID-REUSED",
            2,
            P + "/index",
            f"a second call ('get_time' after 'get_weather') reuses index 0 and id {ID!r}",
            _exc(f'"id":"{ID}","function":{{"name":"get_time","arguments":"{{}}"}}'),
        ),
        (
            "R-CONT-ID-ABSENT",
            "MUST",
            "Q-ID-REPEATED",
            3,
            P + "/id",
            "the call's id repeated on a continuation delta",
            _exc(f'"id":"{ID}","function":{{"name":"get_time","arguments":""}}'),
        ),
        (
            "R-CONT-NAME-ABSENT",
            "MUST",
            "Q-NAME-REPEATED",
            3,
            P + "/function/name",
            "the function name repeated on a continuation delta",
            _exc(f'"id":"{ID}","function":{{"name":"get_time","arguments":""}}'),
        ),
    ]


def test_an_empty_role_is_a_missing_field_like_null() -> None:
    for role, said in ((None, "delta.role (null)"), ("", 'delta.role ("")')):
        r = analyze_chunks([ch({"role": role, "content": "Hi"}), ch({}, "stop")])
        assert [(f.quirk, f.event, f.pointer, f.message) for f in r.findings] == [
            ("Q-ENVELOPE-FIELDS-MISSING", 0, "/choices/0", f"choice without {said}")
        ]
    assert got(ch({"role": "assistant", "content": "Hi"}), ch({}, "stop")) == []


def test_a_required_call_missing_in_both_modes_is_tool_choice_ignored() -> None:
    from conformance.transcript import CHUNK, Event, Transcript

    required = dict(TWO_DECLARED, tool_choice="required")
    said = "tool_choice required but no tool call streamed"
    cases = [  # what the stream-false comparison showed → the one finding, its quirk
        (
            {"made": True, "tool_calls": 0},
            None,
            f"{said}, nor with stream false: tool_choice ignored",
        ),
        (
            {"made": True, "tool_calls": 2},
            "Q-TOOLCALLS-MISSING-IN-STREAM",
            f"{said}; the same request with stream false returned 2 tool call(s)",
        ),
        (
            {"made": False, "reason": "no key"},
            None,
            f"{said}; the stream-false comparison was not made (no key)",
        ),
    ]
    evs = [Event(i, CHUNK, None, "", c) for i, c in enumerate([ROLE, ch({}, "stop")])]
    for cmp, quirk, message in cases:
        t = Transcript("<chunks>", "jsonl", False, lambda: iter(evs), request={"body": required})
        t.meta["stream_comparison"] = cmp
        r = analyze(t)
        assert [(f.rule, f.quirk, f.message) for f in r.findings] == [
            ("R-TOOL-CHOICE", quirk, message)
        ]
        assert r.verdict == "fails"
