"""Group G, finish_reason: its value, its place, and what the stream's end implies.

Q-FINISH-EMPTY-STRING, Q-FINISH-CAMELCASE, Q-FINISH-NONSTANDARD-VALUE, Q-FINISH-REPEATED,
Q-FINISH-ON-NONFINAL-CHUNK, Q-FINISH-SAME-CHUNK-AS-CALL, Q-FINISH-NEVER-SENT,
Q-FINISH-STOP-WITH-TOOLCALLS, Q-FINISH-STOP-NAMED-TOOLCHOICE, Q-FINISH-TOOLCALLS-WITHOUT-DELTAS;
R-LENGTH-CUT, R-LENGTH-VISIBLE (Q-ARGS-TRUNCATED), R-USAGE; Q-ARGS-INVENTED-ON-TRUNCATION;
R-CHUNK-OBJECT for one choice index twice in a chunk. All judged per choice (n > 1).
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
from conformance.client import ToolCall, Turn
from conformance.registry import detector

if TYPE_CHECKING:
    from conformance.analysis.analyzer import Analyzer

FINISH_VALUES = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})
# Finish state is kept per choice: with n > 1 each choice streams its own deltas and ends
# with its own finish_reason (the same value n times is no repeat). With n = 1 every choice
# is choice 0, as the robust client reads it (catalogue Q-CHUNK-ID-UNSTABLE's workaround).
MAX_CHOICES = 128  # choice states kept (hostile input: a new choice index on every chunk)
MAX_VALUES = 8  # distinct finish values remembered per choice (five standard, a few others)


class ChoiceFinish:
    """What the finish detectors remember about one choice."""

    __slots__ = ("key", "finishes", "last", "reported_at", "tool_delta_at", "seen")

    def __init__(self, key: int, seen: tuple[int, str]) -> None:
        self.key = key  # the choice's index (0 for every choice when n = 1)
        self.finishes: set[str] = set()  # the finish values it sent (at most MAX_VALUES)
        self.last: tuple[int, str, str] | None = None  # (event, value, pointer) of the last
        self.reported_at: int | None = None  # Q-FINISH-ON-NONFINAL-CHUNK reported at
        self.tool_delta_at: int | None = None  # event of its last tool-call delta
        self.seen = seen  # (event, pointer) of its last appearance


class Choices:
    """The finish state of each choice: at most MAX_CHOICES; a choice past the cap is
    judged only on what its own chunk shows (value, spelling, same-chunk call), and the
    calls are then not matched to choices (the end checks that need them are skipped)."""

    def __init__(self, n: int) -> None:
        self.per_choice = n > 1
        self.states: dict[int, ChoiceFinish] = {}
        self.overflow_at: int | None = None  # event of a choice past MAX_CHOICES

    def state(self, choice: dict[str, Any], event: int, ptr: str) -> ChoiceFinish:
        ci = choice.get("index")
        key = ci if self.per_choice and isinstance(ci, int) else 0
        st = self.states.get(key)
        if st is not None:
            st.seen = (event, ptr)
            return st
        st = ChoiceFinish(key, (event, ptr))
        if len(self.states) < MAX_CHOICES:
            self.states[key] = st
        else:
            self.overflow_at = event  # not kept: no memory of this choice
        return st

    def unfinished(self) -> list[ChoiceFinish]:
        """The choices without a finish_reason, in the order they first appeared."""
        return [st for st in self.states.values() if st.last is None]

    def label(self, st: ChoiceFinish) -> str:
        """The prefix that names the choice in a message (none when there is one choice)."""
        return f"choice {st.key}: " if self.per_choice else ""


def detect_choice_repeated(a: Analyzer, chunk: dict[str, Any], n: int) -> None:
    """R-CHUNK-OBJECT: two choices of one chunk carry the same `index`. A choice index names
    one of the request's `n` answers; a chunk that carries one twice leaves a client no way
    to tell whose deltas and whose finish_reason each one is (a `choices[0]` reader drops
    the second). No catalogue entry records it, so it is reported under the chunk rule.
    (An index outside `n`, and an absent one, are envelope.detect_choice_shape's.)"""
    choices = chunk.get("choices")
    if type(choices) is list and len(choices) < 2:
        return  # nearly every chunk: one choice cannot repeat an index
    seen: set[int] = set()
    for pos, choice in enumerate(_list(choices)):
        ci = choice.get("index") if isinstance(choice, dict) else None
        if not isinstance(ci, int):
            continue
        if ci in seen:
            a.find(
                "R-CHUNK-OBJECT",
                f"choice index {ci} appears twice in one chunk",
                event=n,
                pointer=f"/choices/{pos}/index",
            )
        seen.add(ci)


detector(detect_choice_repeated, "chunk")


def detect_finish(a: Analyzer, choice: dict[str, Any], ptr: str, n: int) -> None:
    """Q-FINISH-EMPTY-STRING, Q-FINISH-CAMELCASE, Q-FINISH-NONSTANDARD-VALUE,
    Q-FINISH-REPEATED, Q-FINISH-ON-NONFINAL-CHUNK, Q-FINISH-SAME-CHUNK-AS-CALL; each
    choice judged on its own state."""
    d = choice.get("delta")
    delta: dict[str, Any] = d if isinstance(d, dict) else {}
    st = a.choices.state(choice, n, ptr)
    tcs = delta.get("tool_calls")
    # A call-carrying delta, as the robust client reads it: an array holding an object, or
    # one object sent without the array (Q-TOOLCALLS-NOT-ARRAY, read as [object]).
    if type(tcs) is dict or (tcs and type(tcs) is list and any(isinstance(tc, dict) for tc in tcs)):
        st.tool_delta_at = n
    carries_output = bool(tcs) or _nonempty(delta.get("content"))
    if st.last and carries_output and st.reported_at is None:
        st.reported_at = n
        a.find(
            "Q-FINISH-ON-NONFINAL-CHUNK",
            f"{a.choices.label(st)}output after finish_reason {st.last[1]!r} (event {st.last[0]})",
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
    if str(fr) in st.finishes:
        a.find(
            "Q-FINISH-REPEATED",
            f"{a.choices.label(st)}finish_reason {fr!r} sent again",
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
    if len(st.finishes) < MAX_VALUES:
        st.finishes.add(str(fr))
    st.last = (n, str(fr), ptr + "/finish_reason")
    a.finish_seen_at = n


detector(
    detect_finish,
    "choice",
    reports=(
        "Q-FINISH-EMPTY-STRING",
        "Q-FINISH-CAMELCASE",
        "Q-FINISH-NONSTANDARD-VALUE",
        "Q-FINISH-REPEATED",
        "Q-FINISH-ON-NONFINAL-CHUNK",
        "Q-FINISH-SAME-CHUNK-AS-CALL",
    ),
)


def calls_by_choice(a: Analyzer, turn: Turn) -> dict[int, list[ToolCall]] | None:
    """The robust turn's calls by choice index (None past MAX_CHOICES or past the calls
    the robust client assembles: not judged). The robust client lists the calls choice by
    choice in index order, numbers each choice's calls from 0, and opens or joins a call
    of a choice for each of its tool-call deltas: so the runs that start at call 0 are, in
    order, the calls of the choices that got a tool-call delta."""
    c = a.choices
    if not c.per_choice:
        return {0: turn.calls}
    if c.overflow_at is not None or turn.calls_cut is not None:
        return None
    runs: list[list[ToolCall]] = []
    for call in turn.calls:
        if call.index == 0:
            runs.append([])
        runs[-1].append(call)
    keys = sorted(k for k, st in c.states.items() if st.tool_delta_at is not None)
    # Not strict: a stream downgraded to one JSON completion (Q-STREAM-DOWNGRADED) gives
    # the robust client calls and the choices no state.
    return dict(zip(keys, runs, strict=False))


def detect_finish_at_end(a: Analyzer) -> None:
    """Q-FINISH-NEVER-SENT, Q-FINISH-STOP-WITH-TOOLCALLS, Q-FINISH-STOP-NAMED-TOOLCHOICE,
    Q-FINISH-TOOLCALLS-WITHOUT-DELTAS; R-LENGTH-CUT: each choice on its own (with n > 1
    the findings name the choice and point at its finish_reason; choices in the order
    they first appeared, so a finding several choices share keeps the first one's)."""
    if a.error_seen or a.body_cut or a.t.transport_error or (a.t.status not in (None, 200)):
        return
    if not a.t.framing and a.events == 0:
        return  # nothing streamed: judged by detect_http_level
    if a.finish_seen_at is None:
        a.find(
            "R-FINISH-PRESENT",
            "no finish_reason in the whole stream",
            quirk="Q-FINISH-NEVER-SENT",
            event=a.events - 1 if a.events else None,
        )
        return
    c = a.choices
    for st in c.unfinished():  # only with n > 1: with one choice a finish is choice 0's
        a.find(
            "R-FINISH-PRESENT",
            f"{c.label(st)}no finish_reason in the whole stream",
            quirk="Q-FINISH-NEVER-SENT",
            event=st.seen[0],
            pointer=st.seen[1],
        )
    by_choice = calls_by_choice(a, a.robust.turn())
    if by_choice is None:
        return
    for key, st in c.states.items():
        if st.last is not None:
            _judge_finish(a, c.label(st), st.last, bool(by_choice.get(key)))


detector(
    detect_finish_at_end,
    "end",
    reports=(
        "Q-FINISH-NEVER-SENT",
        "Q-FINISH-STOP-WITH-TOOLCALLS",
        "Q-FINISH-STOP-NAMED-TOOLCHOICE",
        "Q-FINISH-TOOLCALLS-WITHOUT-DELTAS",
    ),
)


def _judge_finish(
    a: Analyzer, who: str, last_finish: tuple[int, str, str], has_calls: bool
) -> None:
    ev, last, ptr = last_finish
    where = ptr if a.choices.per_choice else None
    if has_calls and last == "stop":
        tc = (a.req or {}).get("tool_choice")
        if isinstance(tc, dict):
            a.find(
                "Q-FINISH-STOP-NAMED-TOOLCHOICE",
                f'{who}named tool_choice finishes with "stop" (OpenAI\'s own behaviour)',
                event=ev,
                pointer=where,
            )
        else:
            a.find(
                "R-FINISH-TOOL-CALLS",
                f'{who}tool calls streamed but finish_reason is "stop"',
                quirk="Q-FINISH-STOP-WITH-TOOLCALLS",
                event=ev,
                pointer=where,
            )
    elif has_calls and last == "length":
        a.find(
            "R-LENGTH-CUT",
            f'{who}finish_reason "length": the calls are cut and not executable',
            event=ev,
            pointer=where,
        )
    elif has_calls and last not in ("tool_calls", "function_call") and last in FINISH_VALUES:
        a.find(
            "R-FINISH-TOOL-CALLS",
            f"{who}tool calls streamed but finish_reason is {last!r}",
            event=ev,
            pointer=where,
        )
    elif not has_calls and last == "tool_calls":
        a.find(
            "R-FINISH-TOOL-CALLS",
            f'{who}finish_reason "tool_calls" without any tool-call delta',
            quirk="Q-FINISH-TOOLCALLS-WITHOUT-DELTAS",
            event=ev,
            pointer=where,
        )


def check_length_and_usage(a: Analyzer, turn: Turn) -> None:
    """R-USAGE (usage asked, none came) and R-LENGTH-VISIBLE (a call cut under max_tokens
    must end with finish_reason "length", its own choice's): both judged only when the
    request asks."""
    if a.req is None or a.events == 0 or a.error_seen or a.t.transport_error or a.body_cut:
        return
    if _usage_requested(a.req) and turn.usage is None:
        a.find("R-USAGE", "stream_options.include_usage asked, no usage object arrived")
    if any(a.req.get(k) is not None for k in MAX_TOKENS_KEYS):
        # A cut prefix is closed by JSON repair; arguments that repair cannot close are
        # invalid JSON the server sent (Q-ARGS-INVALID-JSON), not evidence of a cut.
        c = a.choices
        for key, calls in (calls_by_choice(a, turn) or {}).items():
            cut = [call for call in calls if call.repaired]
            if not cut:
                continue
            a.length_judged = True
            who, fr, ev, ptr = "", turn.finish_reason, None, None
            if c.per_choice:
                st = c.states[key]
                who, (ev, fr, ptr) = c.label(st), st.last or (None, None, None)
            if fr != "length":
                a.find(
                    "R-LENGTH-VISIBLE",
                    f"{who}call {cut[0].index}'s arguments are cut but finish_reason is "
                    f'{fr!r}, not "length"',
                    quirk="Q-ARGS-TRUNCATED",
                    event=ev,
                    pointer=ptr,
                )


detector(check_length_and_usage, "part", reports=("Q-ARGS-TRUNCATED",))


def detect_invented_on_truncation(a: Analyzer) -> None:
    """Q-ARGS-INVENTED-ON-TRUNCATION: `finish_reason: "length"` and a call whose arguments
    are exactly `{}` although its tool requires parameters, or is not declared at all: the
    model was cut before writing them and the server filled in `{}` (vLLM 0.32 hermes,
    docs/lanes/vllm.md). Valid JSON the model never wrote; only finish_reason warns. A
    parameterless declared tool's `{}` is complete, and a stream without the request is
    judged on the `{}` and the cut alone. With n > 1, each choice cut by "length" on its
    own calls."""
    cut = [st for st in a.choices.states.values() if st.last is not None and st.last[1] == "length"]
    if a.error_seen or not cut:
        return
    by_choice = calls_by_choice(a, a.robust.turn())
    if by_choice is None:
        return
    declared = {}
    for t in a.tools if isinstance(a.tools, list) else []:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            params = _v if isinstance(_v := fn.get("parameters"), dict) else {}
            declared[fn["name"]] = [r for r in _list(params.get("required")) if isinstance(r, str)]
    for st in cut:
        _invented(a, st, st.last[0], by_choice.get(st.key, []), declared)  # type: ignore[index]


detector(detect_invented_on_truncation, "end", reports=("Q-ARGS-INVENTED-ON-TRUNCATION",))


def _invented(
    a: Analyzer,
    st: ChoiceFinish,
    finish_event: int,
    calls: list[ToolCall],
    declared: dict[str, list[str]],
) -> None:
    """The first call of the choice whose `{}` the model never wrote (one finding a choice)."""
    for c in calls:
        if c.raw_arguments.strip() != "{}":
            continue
        if a.req is not None and declared.get(c.name) == []:
            continue  # a declared tool without required parameters: {} is a whole call
        why = (
            f"{c.name!r} requires {', '.join(declared[c.name])}"
            if declared.get(c.name)
            else f"{c.name!r} is not a declared tool"
            if a.req is not None
            else "the stream was cut"
        )
        state = (  # None for an index-less call
            None if c.provider_index is None else a.indexes.get((st.key, c.provider_index))
        )
        a.find(
            "R-LENGTH-CUT",
            f'{a.choices.label(st)}call {c.index}: arguments "{{}}" with '
            f'finish_reason "length" although {why}: the server filled them in, the model '
            "never wrote them",
            quirk="Q-ARGS-INVENTED-ON-TRUNCATION",
            event=state.first_event if state else finish_event,
            pointer=state.ptr if state else None,
        )
        return
