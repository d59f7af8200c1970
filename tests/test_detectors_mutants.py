"""The detectors' decisions at their edges, pinned by what a user reads: the quirk ids, the
event, the JSON pointer and the message of each finding, and the verdict.

Each case is a small chunk stream judged in-process through the chunk door, next to the
look-alike stream that must not take the same branch (a repeated name is not a second call,
a name the request never declared is not one of its tools...). Fast in-process tests for
mutation testing (docs/mutation.md); the catalogue's controls are tests/test_detectors.py,
the literal findings of each branch tests/test_detector_findings.py.
"""

from __future__ import annotations

from typing import Any

from conformance.analysis import CaptureResult, analyze_chunks

ID = "call_W1a2b3c4d5e6f7g8h9i0j1k2"
ID2 = "call_T1a2b3c4d5e6f7g8h9i0j1k2"
P = "/choices/0/delta/tool_calls/0"


def ch(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def call(index: Any = 0, **kw: Any) -> dict[str, Any]:
    """One tool-call delta in a chunk: id, type at the top; name, args in `function`."""
    d: dict[str, Any] = {} if index is None else {"index": index}
    d.update({k: kw[k] for k in ("id", "type") if k in kw})
    fn = {k: kw[w] for k, w in (("name", "name"), ("arguments", "args")) if w in kw}
    if fn:
        d["function"] = fn
    return ch({"tool_calls": [d]})


ROLE = ch({"role": "assistant", "content": None})
END = ch({}, "tool_calls")


def tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


TWO_TOOLS = {"model": "m", "stream": True, "tools": [tool("get_weather"), tool("get_time")]}


def findings(r: CaptureResult) -> list[tuple[str | None, int | None, str | None, str]]:
    return [(f.quirk, f.event, f.pointer, f.message) for f in r.findings]


# ============================================================ tool deltas: a second call


def test_the_same_id_and_the_same_declared_name_is_a_repeat_not_a_second_call() -> None:
    # Only another declared name under the same id is a second call on the index: the
    # call's own name sent again is Q-NAME-REPEATED (and its id Q-ID-REPEATED).
    r = analyze_chunks(
        [
            ROLE,
            call(0, id=ID, type="function", name="get_weather", args=""),
            call(0, id=ID, name="get_weather", args='{"city":"Paris"}'),
            END,
        ],
        request=TWO_TOOLS,
    )
    assert findings(r) == [
        (
            "Q-ID-REPEATED",
            2,
            P + "/id",
            "the call's id repeated on a continuation delta",
        ),
        (
            "Q-NAME-REPEATED",
            2,
            P + "/function/name",
            "the function name repeated on a continuation delta",
        ),
    ]
    assert [(c["id"], c["name"]) for c in r.tool_calls["robust"]] == [(ID, "get_weather")]


def test_the_same_id_with_an_undeclared_name_is_not_a_second_call() -> None:
    # The call's own name is declared, the new one is not: the name continued, under the
    # same id (never Q-INDEX-AND-ID-REUSED, which needs both names declared).
    r = analyze_chunks(
        [
            ROLE,
            call(0, id=ID, type="function", name="get_weather", args=""),
            call(0, id=ID, name="_now", args="{}"),
            END,
        ],
        request=TWO_TOOLS,
    )
    assert [q for q, *_ in findings(r)] == ["Q-ID-REPEATED", "Q-NAME-FRAGMENTED"]
    assert findings(r)[1] == (
        "Q-NAME-FRAGMENTED",
        2,
        P + "/function/name",
        "the name continued with '_now'",
    )


def test_the_same_id_with_a_second_declared_name_is_a_second_call() -> None:
    r = analyze_chunks(
        [
            ROLE,
            call(0, id=ID, type="function", name="get_weather", args='{"city":"Paris"}'),
            call(0, id=ID, name="get_time", args="{}"),
            END,
        ],
        request=TWO_TOOLS,
    )
    reused = [f for f in findings(r) if f[0] == "Q-INDEX-AND-ID-REUSED"]
    assert reused == [
        (
            "Q-INDEX-AND-ID-REUSED",
            2,
            P + "/index",
            f"a second call ('get_time' after 'get_weather') reuses index 0 and id {ID!r}",
        )
    ]


# ============================================================ envelope, content


def test_an_empty_role_is_a_missing_field_like_null() -> None:
    for role, said in ((None, "delta.role (null)"), ("", 'delta.role ("")')):
        r = analyze_chunks([ch({"role": role, "content": "Hi"}), ch({}, "stop")])
        assert findings(r) == [
            ("Q-ENVELOPE-FIELDS-MISSING", 0, "/choices/0", f"choice without {said}")
        ]
    assert (
        findings(analyze_chunks([ch({"role": "assistant", "content": "Hi"}), ch({}, "stop")])) == []
    )


REQUIRED = {"model": "m", "stream": True, "tools": [tool("get_weather")], "tool_choice": "required"}
EMPTY_TURN = [ROLE, ch({}, "stop")]


def _transcript(chunks: list[dict[str, Any]], comparison: dict[str, Any]) -> Any:
    from conformance.transcript import CHUNK, Event, Transcript

    evs = [Event(i, CHUNK, None, "", c) for i, c in enumerate(chunks)]
    t = Transcript("<chunks>", "jsonl", False, lambda: iter(evs), request={"body": REQUIRED})
    t.meta["stream_comparison"] = comparison
    return t


def test_a_required_call_missing_in_both_modes_is_tool_choice_ignored() -> None:
    from conformance.analysis import analyze

    said = "tool_choice required but no tool call streamed"
    cases = {  # what the stream-false comparison showed → the one finding, its quirk
        "none": (
            {"made": True, "tool_calls": 0},
            None,
            f"{said}, nor with stream false: tool_choice ignored",
        ),
        "a call": (
            {"made": True, "tool_calls": 2},
            "Q-TOOLCALLS-MISSING-IN-STREAM",
            f"{said}; the same request with stream false returned 2 tool call(s)",
        ),
        "not made": (
            {"made": False, "reason": "no key"},
            None,
            f"{said}; the stream-false comparison was not made (no key)",
        ),
    }
    for cmp, quirk, message in cases.values():
        r = analyze(_transcript(EMPTY_TURN, cmp))
        assert [(f.rule, f.quirk, f.message) for f in r.findings] == [
            ("R-TOOL-CHOICE", quirk, message)
        ]
        assert r.verdict == "fails"
