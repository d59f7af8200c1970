"""Group G, finish_reason: its value, its place, and what the stream's end implies.

Q-FINISH-EMPTY-STRING, Q-FINISH-CAMELCASE, Q-FINISH-NONSTANDARD-VALUE, Q-FINISH-REPEATED,
Q-FINISH-ON-NONFINAL-CHUNK, Q-FINISH-SAME-CHUNK-AS-CALL, Q-FINISH-NEVER-SENT,
Q-FINISH-STOP-WITH-TOOLCALLS, Q-FINISH-STOP-NAMED-TOOLCHOICE, Q-FINISH-TOOLCALLS-WITHOUT-DELTAS;
R-LENGTH-CUT, R-LENGTH-VISIBLE (Q-ARGS-TRUNCATED), R-USAGE; Q-ARGS-INVENTED-ON-TRUNCATION.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from conformance.analysis.common import (
    MAX_TOKENS_KEYS,
    _carries,
    _list,
    _nonempty,
    _usage_requested,
)
from conformance.client import Turn

if TYPE_CHECKING:
    from conformance.analysis.analyzer import Analyzer

FINISH_VALUES = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})


def detect_finish(a: Analyzer, choice: dict[str, Any], ptr: str, n: int) -> None:
    """Q-FINISH-EMPTY-STRING, Q-FINISH-CAMELCASE, Q-FINISH-NONSTANDARD-VALUE,
    Q-FINISH-REPEATED, Q-FINISH-ON-NONFINAL-CHUNK, Q-FINISH-SAME-CHUNK-AS-CALL."""
    delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
    carries_output = bool(delta.get("tool_calls")) or _nonempty(delta.get("content"))
    if a.last_finish and carries_output and a.finish_reported_at is None:
        a.finish_reported_at = n
        a.find(
            "Q-FINISH-ON-NONFINAL-CHUNK",
            f"output after finish_reason {a.last_finish[1]!r} (event {a.last_finish[0]})",
            event=n,
            pointer=ptr,
        )
    fr = choice.get("finish_reason")
    if "finishReason" in choice:
        a.find(
            "Q-FINISH-CAMELCASE",
            "finish reason sent as `finishReason`",
            event=n,
            pointer=ptr + "/finishReason",
            excerpt=choice.get("finishReason"),
        )
        if fr in (None, "") and isinstance(choice["finishReason"], str):
            fr = choice["finishReason"]
    if fr == "":
        a.find(
            "Q-FINISH-EMPTY-STRING",
            '`finish_reason: ""` instead of null',
            event=n,
            pointer=ptr + "/finish_reason",
        )
        return
    if fr is None:
        return
    if not isinstance(fr, str) or fr not in FINISH_VALUES:
        a.find(
            "R-FINISH-VALUE",
            f"finish_reason {fr!r} is not a standard value",
            quirk="Q-FINISH-NONSTANDARD-VALUE",
            event=n,
            pointer=ptr + "/finish_reason",
        )
    if str(fr) in a.finishes:
        a.find(
            "Q-FINISH-REPEATED",
            f"finish_reason {fr!r} sent again",
            event=n,
            pointer=ptr + "/finish_reason",
        )
    if any(_carries(tc) for tc in _list(delta.get("tool_calls")) if isinstance(tc, dict)):
        a.find(
            "Q-FINISH-SAME-CHUNK-AS-CALL",
            "tool-call delta and finish_reason in one chunk",
            event=n,
            pointer=ptr + "/finish_reason",
        )
    a.finishes.setdefault(str(fr), n)
    a.last_finish = (n, str(fr))


def detect_finish_at_end(a: Analyzer) -> None:
    """Q-FINISH-NEVER-SENT, Q-FINISH-STOP-WITH-TOOLCALLS, Q-FINISH-STOP-NAMED-TOOLCHOICE,
    Q-FINISH-TOOLCALLS-WITHOUT-DELTAS; R-LENGTH-CUT."""
    if a.error_seen or a.body_cut or a.t.transport_error or (a.t.status not in (None, 200)):
        return
    if not a.t.framing and a.events == 0:
        return  # nothing streamed: judged by detect_http_level
    if a.last_finish is None:
        a.find(
            "R-FINISH-PRESENT",
            "no finish_reason in the whole stream",
            quirk="Q-FINISH-NEVER-SENT",
            event=a.events - 1 if a.events else None,
        )
        return
    ev, last = a.last_finish
    has_calls = a.any_tool_delta and bool(a.robust.turn().calls)
    if has_calls and last == "stop":
        tc = (a.req or {}).get("tool_choice")
        if isinstance(tc, dict):
            a.find(
                "Q-FINISH-STOP-NAMED-TOOLCHOICE",
                'named tool_choice finishes with "stop" (OpenAI\'s own behaviour)',
                event=ev,
            )
        else:
            a.find(
                "R-FINISH-TOOL-CALLS",
                'tool calls streamed but finish_reason is "stop"',
                quirk="Q-FINISH-STOP-WITH-TOOLCALLS",
                event=ev,
            )
    elif has_calls and last == "length":
        a.find(
            "R-LENGTH-CUT", 'finish_reason "length": the calls are cut and not executable', event=ev
        )
    elif has_calls and last not in ("tool_calls", "function_call") and last in FINISH_VALUES:
        a.find(
            "R-FINISH-TOOL-CALLS", f"tool calls streamed but finish_reason is {last!r}", event=ev
        )
    elif not has_calls and last == "tool_calls":
        a.find(
            "R-FINISH-TOOL-CALLS",
            'finish_reason "tool_calls" without any tool-call delta',
            quirk="Q-FINISH-TOOLCALLS-WITHOUT-DELTAS",
            event=ev,
        )


def check_length_and_usage(a: Analyzer, turn: Turn) -> None:
    """R-USAGE (usage asked, none came) and R-LENGTH-VISIBLE (a call cut under max_tokens
    must end with finish_reason "length"): both judged only when the request asks."""
    if a.req is None or a.events == 0 or a.error_seen or a.t.transport_error or a.body_cut:
        return
    if _usage_requested(a.req) and turn.usage is None:
        a.find("R-USAGE", "stream_options.include_usage asked, no usage object arrived")
    if any(a.req.get(k) is not None for k in MAX_TOKENS_KEYS):
        # A cut prefix is closed by JSON repair; arguments that repair cannot close are
        # invalid JSON the server sent (Q-ARGS-INVALID-JSON), not evidence of a cut.
        cut = [c for c in turn.calls if c.repaired]
        if cut:
            a.length_judged = True
            if turn.finish_reason != "length":
                a.find(
                    "R-LENGTH-VISIBLE",
                    f"call {cut[0].index}'s arguments are cut but finish_reason is "
                    f'{turn.finish_reason!r}, not "length"',
                    quirk="Q-ARGS-TRUNCATED",
                )


def detect_invented_on_truncation(a: Analyzer) -> None:
    """Q-ARGS-INVENTED-ON-TRUNCATION: `finish_reason: "length"` and a call whose arguments
    are exactly `{}` although its tool requires parameters, or is not declared at all: the
    model was cut before writing them and the server filled in `{}` (vLLM 0.32 hermes,
    docs/lanes/vllm.md). Valid JSON the model never wrote; only finish_reason warns. A
    parameterless declared tool's `{}` is complete, and a stream without the request is
    judged on the `{}` and the cut alone."""
    if a.last_finish is None or a.last_finish[1] != "length" or a.error_seen:
        return
    declared = {}
    for t in a.tools if isinstance(a.tools, list) else []:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            params = fn.get("parameters") if isinstance(fn.get("parameters"), dict) else {}
            declared[fn["name"]] = [r for r in _list(params.get("required")) if isinstance(r, str)]
    for c in a.robust.turn().calls:
        if c.raw_arguments.strip() != "{}":
            continue
        if a.req is not None and declared.get(c.name) == []:
            continue  # a declared tool without required parameters: {} is a whole call
        why = (f"{c.name!r} requires {', '.join(declared[c.name])}" if declared.get(c.name)
               else f"{c.name!r} is not a declared tool" if a.req is not None
               else "the stream was cut")
        state = a.indexes.get((0, c.provider_index)) if c.provider_index is not None else None
        a.find("R-LENGTH-CUT", f'call {c.index}: arguments "{{}}" with finish_reason "length" '
               f"although {why}: the server filled them in, the model never wrote them",
               quirk="Q-ARGS-INVENTED-ON-TRUNCATION",
               event=state.first_event if state else a.last_finish[0],
               pointer=state.ptr if state else None)
        return
