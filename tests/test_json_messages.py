"""Findings speak JSON (``null``, ``a number``, ``an object``), never Python's type names,
and ``arguments: null`` has its own quirk id (Q-ARGS-NULL), apart from a JSON value sent
as arguments (Q-ARGS-JSON-OBJECT). Also the content kept for group H stays bounded."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from conformance.analysis import analyze_chunks

TOOLS = {"stream": True, "tools": [{"type": "function", "function": {"name": "f"}}]}
PYTHON_NAMES = re.compile(r"\b(NoneType|dict|list|int|float|bool|str|tuple)\b")


def _chunk(
    tc: dict[str, Any] | None = None, finish: str | None = None, **delta: Any
) -> dict[str, Any]:
    if tc is not None:
        delta["tool_calls"] = [tc]
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _stream(opener_args: Any, continuation: dict[str, Any] | None = None) -> list[Any]:
    fn: dict[str, Any] = {"name": "f", "arguments": opener_args}
    out = [
        _chunk(
            {"index": 0, "id": "call_abcdefghijklmnopqrstuvwx", "type": "function", "function": fn}
        )
    ]
    if continuation is not None:
        out.append(_chunk({"index": 0, "function": continuation}))
    out.append(_chunk({"index": 0, "function": {"arguments": "{}"}}))
    out.append(_chunk(finish="tool_calls"))
    return out


@pytest.mark.parametrize(
    "chunks, quirk, message",
    [
        (_stream(None), "Q-ARGS-NULL", "arguments is null, not a string"),
        (_stream("", {"arguments": None}), "Q-ARGS-NULL", "arguments is null, not a string"),
        (_stream({"a": 1}), "Q-ARGS-JSON-OBJECT", "arguments is an object, not a string"),
        (
            _stream("", {"arguments": 5}),
            "Q-ARGS-JSON-OBJECT",
            "arguments is a number, not a string",
        ),
        (
            _stream("", {"arguments": [1]}),
            "Q-ARGS-JSON-OBJECT",
            "arguments is an array, not a string",
        ),
        (
            _stream("", {"arguments": True}),
            "Q-ARGS-JSON-OBJECT",
            "arguments is a boolean, not a string",
        ),
    ],
)
def test_arguments_of_the_wrong_type_are_named_in_json(
    chunks: list[Any], quirk: str, message: str
) -> None:
    r = analyze_chunks(chunks, request=TOOLS)
    (f,) = [f for f in r.findings if f.rule == "R-ARGS-STRING"]
    assert (f.quirk, f.message) == (quirk, message)
    assert quirk in r.quirks


@pytest.mark.parametrize("continuation", [{}, {"arguments": ""}, {"name": None}])
def test_absent_or_empty_arguments_are_no_finding(continuation: dict[str, Any]) -> None:
    """Negative control: a continuation without arguments, or with ``""``, is fine."""
    r = analyze_chunks(_stream("", continuation), request=TOOLS)
    assert not [f for f in r.findings if f.rule == "R-ARGS-STRING"], r.findings
    assert "Q-ARGS-NULL" not in r.quirks


@pytest.mark.parametrize(
    "payload, says",
    [
        ([1, 2], "payload is an array, not an object"),
        ("text", "payload is a string, not an object"),
        (7, "payload is a number, not an object"),
        (None, "payload is null, not an object"),
    ],
)
def test_a_payload_that_is_not_an_object_is_named_in_json(payload: Any, says: str) -> None:
    r = analyze_chunks([payload], request=TOOLS)
    (f,) = [f for f in r.findings if f.rule == "R-CHUNK-OBJECT"]
    assert f.message == says


def test_no_finding_message_names_a_python_type() -> None:
    values = [None, True, 3, 2.5, "s", [1], {"a": 1}]
    for v in values:
        for chunks in (_stream(v), _stream("", {"arguments": v}), [v]):
            r = analyze_chunks(chunks, request=TOOLS)
            text = json.dumps([f.message for f in r.findings])
            assert not PYTHON_NAMES.search(text), (v, text)


def test_content_kept_for_group_h_is_bounded_and_counted() -> None:
    """An endless talker: the analyzer keeps at most CONTENT_KEPT characters of content
    (plus one delta), and knows how many without re-counting them."""
    from conformance.analysis.analyzer import Analyzer
    from conformance.analysis.detectors.content import CONTENT_KEPT
    from conformance.transcript import CHUNK, Event, Transcript

    piece = "x" * 64
    n = CONTENT_KEPT // 64 * 3
    t = Transcript("<t>", "jsonl", False, lambda: iter(()), request={"body": TOOLS})
    a = Analyzer(t)
    for i in range(n):
        a.feed(Event(i, CHUNK, None, "", _chunk(content=piece)))
    kept = sum(len(c) for c in a.content)
    assert CONTENT_KEPT <= kept <= CONTENT_KEPT + 64
    assert a.content_chars == kept
