"""Groups C, D, E, F: the tool-call deltas (index, id, type, name, arguments).

Q-INDEX-ABSENT, Q-INDEX-ABSENT-WHOLE-CALL, Q-INDEX-ABSENT-PARALLEL-SPLIT, Q-INDEX-ALL-ZERO,
Q-INDEX-REUSED-ACROSS-CALLS, Q-INDEX-NONZERO-START, Q-INDEX-INCONSISTENT-WITHIN-CALL,
Q-ID-ABSENT, Q-ID-FORMAT, Q-ID-REPEATED, Q-ID-CHANGES-MID-CALL, Q-TYPE-MISSING,
Q-EMPTY-STRING-OVERWRITE, Q-NAME-REPEATED, Q-NAME-FRAGMENTED, Q-NAME-EMPTY-OPENING-DELTA,
Q-NAME-AFTER-ARGUMENTS, Q-ARGS-WHOLE-IN-ONE-DELTA, Q-ARGS-ON-OPENING-DELTA, Q-ARGS-JSON-OBJECT, Q-ARGS-NULL,
Q-OPENAI-MULTI-TOOL-USE-WRAPPER.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from conformance.analysis.common import _excerpt, _nonempty, json_type
from conformance.bounded import quoted
from conformance.client import _complete_json
from conformance.registry import detector

if TYPE_CHECKING:
    from conformance.analysis.analyzer import Analyzer

OPENAI_ID = re.compile(r"call_[A-Za-z0-9]{24}")  # OpenAI: call_ + 24 base-62 characters


class _IndexState:
    """What the rules remember about one provider index of one choice."""

    __slots__ = (
        "first_event",
        "id",
        "name",
        "opener_name",
        "args_before_name",
        "name_event",
        "id_missing",
        "split_suspect",
        "deferred",
        "ptr",
        "t_first",
        "t_burst",
        "t_gap",
        "t_last",
        "t_frags",
    )

    def __init__(self, event: int, ptr: str):
        self.first_event = event
        self.ptr = ptr  # JSON pointer of the opening delta
        self.id: str = ""
        self.name: str = ""
        self.opener_name: str = "absent"  # value | empty | absent
        self.args_before_name = False
        self.name_event: int | None = None
        self.id_missing: tuple[int, str, str, str] | None = None
        self.split_suspect = False
        # Findings about the opening delta, held back while the index may turn out to be
        # the argument half of a call split over two indices (judged at the end).
        self.deferred: list[tuple[str, str, dict[str, Any]]] | None = None  # made when needed
        # When its deltas arrived (detectors/timing.py; None without timings).
        self.t_first: float | None = None
        self.t_burst: float | None = None  # the start of the burst its first delta is in
        self.t_gap: float | None = None  # the silence before that burst
        self.t_last: float | None = None  # its last argument fragment
        self.t_frags = 0


def detect_tool_delta(
    a: Analyzer, tc: dict[str, Any], key: int, ptr: str, n: int, siblings: int
) -> None:
    """Every tool-call delta: the checks below, then the opener or the continuation."""
    fn = _v if isinstance(_v := tc.get("function"), dict) else {}
    idx = tc.get("index")
    tid, name, args = tc.get("id"), fn.get("name"), fn.get("arguments")
    check_name_value(a, name, ptr, n)
    check_id_format(a, tid, ptr, n)
    check_calls_per_delta(a, ptr, n, siblings)
    if type(idx) is not int:
        check_index_absent(a, tc, tid, name, ptr, n)
        return
    st = a.indexes.get((key, idx))
    if st is None:
        _open_index(a, tc, key, idx, ptr, n)
        return
    # A continuation delta on an index already opened.
    if check_continuation_id(a, st, tc, key, idx, tid, name, ptr, n):
        return
    check_continuation_type(a, tc, ptr, n)
    check_continuation_name(a, st, tc, fn, name, ptr, n)
    check_continuation_arguments(a, st, tc, args, ptr, n)


detector(detect_tool_delta, "tool_delta")


def track_fragment(a: Analyzer, st: _IndexState, args: str, n: int) -> None:
    """The steady path's share of detect_tool_delta for a bare argument fragment on an open
    index (no id, type or name): arguments before any name are remembered for
    Q-NAME-AFTER-ARGUMENTS."""
    if not st.name:
        st.args_before_name = True


detector(track_fragment, "fragment")


def check_name_value(a: Analyzer, name: Any, ptr: str, n: int) -> None:
    """Q-OPENAI-MULTI-TOOL-USE-WRAPPER: a call to the synthetic multi_tool_use.parallel."""
    if _nonempty(name) and name == "multi_tool_use.parallel":
        a.find(
            "Q-OPENAI-MULTI-TOOL-USE-WRAPPER",
            "call to the synthetic multi_tool_use.parallel",
            event=n,
            pointer=ptr + "/function/name",
        )


detector(check_name_value, "part", reports=("Q-OPENAI-MULTI-TOOL-USE-WRAPPER",))


def check_id_format(a: Analyzer, tid: Any, ptr: str, n: int) -> None:
    """Q-ID-FORMAT: an id that is not OpenAI's call_ + 24 base-62 characters."""
    if _nonempty(tid) and not OPENAI_ID.fullmatch(tid):
        a.find(
            "Q-ID-FORMAT",
            f"tool-call id {quoted(tid)} ({len(tid)} characters) is not OpenAI's shape: call_ "
            "then 24 letters or digits",
            event=n,
            pointer=ptr + "/id",
            excerpt=tid,
        )


detector(check_id_format, "part", reports=("Q-ID-FORMAT",))


def check_calls_per_delta(a: Analyzer, ptr: str, n: int, siblings: int) -> None:
    """Q-ARGS-WHOLE-IN-ONE-DELTA: several tool calls in one delta."""
    if siblings >= 2 and ptr.endswith("/tool_calls/0"):  # once per delta, not per call
        a.find(
            "Q-ARGS-WHOLE-IN-ONE-DELTA",
            f"{siblings} tool calls in one delta",
            event=n,
            pointer=ptr.rsplit("/", 1)[0],
        )


detector(check_calls_per_delta, "part", reports=("Q-ARGS-WHOLE-IN-ONE-DELTA",))


def check_index_absent(
    a: Analyzer, tc: dict[str, Any], tid: Any, name: Any, ptr: str, n: int
) -> None:
    """R-INDEX-PRESENT (Q-INDEX-ABSENT); on an index-less call start R-FIRST-TYPE
    (Q-TYPE-MISSING) and R-FIRST-ID (Q-ID-ABSENT). The delta is kept for
    detect_indexless_shape."""
    a.find(
        "R-INDEX-PRESENT",
        "tool-call delta without an integer index",
        quirk="Q-INDEX-ABSENT",
        event=n,
        pointer=ptr + "/index",
        excerpt=tc,
    )
    if (_nonempty(name) or _nonempty(tid)) and tc.get("type") != "function":
        a.find(
            "R-FIRST-TYPE",
            'an index-less call start without type "function"',
            quirk="Q-TYPE-MISSING",
            event=n,
            pointer=ptr + "/type",
            excerpt=tc,
        )
    if _nonempty(name) and not _nonempty(tid):
        a.find(
            "R-FIRST-ID",
            "an index-less call start without a non-empty id",
            quirk="Q-ID-ABSENT",
            event=n,
            pointer=ptr + "/id",
            excerpt=tc,
        )
    a.indexless.append((n, a.chunk_ordinal, tc))
    if len(a.indexless) > 10_000:  # bounded: only the shape of the first calls matters
        del a.indexless[5_000:]


detector(
    check_index_absent,
    "part",
    reports=(
        "Q-INDEX-ABSENT",
        "Q-TYPE-MISSING",
        "Q-ID-ABSENT",
    ),
)


def check_continuation_id(
    a: Analyzer,
    st: _IndexState,
    tc: dict[str, Any],
    key: int,
    idx: int,
    tid: Any,
    name: Any,
    ptr: str,
    n: int,
) -> bool:
    """R-CONT-ID-ABSENT (Q-EMPTY-STRING-OVERWRITE, Q-ID-REPEATED, Q-ID-CHANGES-MID-CALL),
    R-INDEX-DISTINCT (Q-INDEX-ALL-ZERO, Q-INDEX-REUSED-ACROSS-CALLS; Q-INDEX-AND-ID-REUSED:
    the same id under another complete declared name, judged only when the request declares
    its tools). True when the delta opens a new call on a reused index (the index's state
    starts again)."""
    if "id" not in tc or tid is None:
        return False
    if tid == "":
        a.find(
            "R-CONT-ID-ABSENT",
            '`id: ""` on a continuation delta',
            quirk="Q-EMPTY-STRING-OVERWRITE",
            event=n,
            pointer=ptr + "/id",
            excerpt=tc,
        )
    elif not st.id:
        st.id = tid  # the id arrived late; Q-ID-ABSENT was reported on the opener
    elif tid == st.id and _second_declared_name(a, st, name):
        a.find(
            "R-INDEX-DISTINCT",
            f"a second call ({name!r} after {st.name!r}) reuses index {idx} and id {tid!r}",
            quirk="Q-INDEX-AND-ID-REUSED",
            event=n,
            pointer=ptr + "/index",
            excerpt=tc,
        )
        new = a.indexes[(key, idx)] = _IndexState(n, ptr)
        new.id, new.name = tid, name
        new.opener_name = "value"
        return True
    elif tid == st.id:
        a.find(
            "R-CONT-ID-ABSENT",
            "the call's id repeated on a continuation delta",
            quirk="Q-ID-REPEATED",
            event=n,
            pointer=ptr + "/id",
            excerpt=tc,
        )
    elif _nonempty(name):
        quirk = "Q-INDEX-ALL-ZERO" if idx == 0 else "Q-INDEX-REUSED-ACROSS-CALLS"
        a.find(
            "R-INDEX-DISTINCT",
            f"a new call (id {quoted(tid)}) reuses index {idx}",
            quirk=quirk,
            event=n,
            pointer=ptr + "/index",
            excerpt=tc,
        )
        new = a.indexes[(key, idx)] = _IndexState(n, ptr)
        new.id, new.name = tid, name
        new.opener_name = "value"
        return True
    else:
        a.find(
            "R-CONT-ID-ABSENT",
            f"the id changed to {quoted(tid)} within the call",
            quirk="Q-ID-CHANGES-MID-CALL",
            event=n,
            pointer=ptr + "/id",
            excerpt=tc,
        )
    return False


detector(
    check_continuation_id,
    "part",
    reports=(
        "Q-EMPTY-STRING-OVERWRITE",
        "Q-ID-REPEATED",
        "Q-ID-CHANGES-MID-CALL",
        "Q-INDEX-ALL-ZERO",
        "Q-INDEX-REUSED-ACROSS-CALLS",
        "Q-INDEX-AND-ID-REUSED",
    ),
)


def _second_declared_name(a: Analyzer, st: _IndexState, name: Any) -> bool:
    """The delta names a declared tool other than the call's own (itself a complete
    declared name): a second call, not the call's name sent in pieces. Needs the request's
    tools: without them the two cannot be told apart."""
    if not (_nonempty(name) and st.name and name != st.name):
        return False
    declared = a.declared_names
    return name in declared and st.name in declared


def check_continuation_type(a: Analyzer, tc: dict[str, Any], ptr: str, n: int) -> None:
    """R-CONT-TYPE-ABSENT: type repeated on a continuation; `type: ""` is Q-TYPE-MISSING."""
    if "type" not in tc or tc["type"] is None:
        return
    if tc["type"] == "":
        a.find(
            "R-CONT-TYPE-ABSENT",
            '`type: ""` on a continuation delta',
            quirk="Q-TYPE-MISSING",
            event=n,
            pointer=ptr + "/type",
        )
    else:
        a.find(
            "R-CONT-TYPE-ABSENT",
            "type repeated on a continuation delta",
            event=n,
            pointer=ptr + "/type",
        )


detector(check_continuation_type, "part", reports=("Q-TYPE-MISSING",))


def check_continuation_name(
    a: Analyzer,
    st: _IndexState,
    tc: dict[str, Any],
    fn: dict[str, Any],
    name: Any,
    ptr: str,
    n: int,
) -> None:
    """R-CONT-NAME-ABSENT: Q-EMPTY-STRING-OVERWRITE, Q-NAME-REPEATED, Q-NAME-FRAGMENTED; a
    late name is remembered for detect_names_at_end."""
    if "name" not in fn or name is None:
        return
    if name == "":
        if st.name:
            a.find(
                "R-CONT-NAME-ABSENT",
                '`name: ""` on a continuation delta',
                quirk="Q-EMPTY-STRING-OVERWRITE",
                event=n,
                pointer=ptr + "/function/name",
                excerpt=tc,
            )
    elif not st.name:
        st.name, st.name_event = name, n
    elif name == st.name:
        # An id-less second call with the same name on the same index is judged at the end.
        a.find(
            "R-CONT-NAME-ABSENT",
            "the function name repeated on a continuation delta",
            quirk="Q-NAME-REPEATED",
            event=n,
            pointer=ptr + "/function/name",
            excerpt=tc,
        )
    else:
        a.find(
            "R-CONT-NAME-ABSENT",
            f"the name continued with {quoted(name)}",
            quirk="Q-NAME-FRAGMENTED",
            event=n,
            pointer=ptr + "/function/name",
            excerpt=tc,
        )


detector(
    check_continuation_name,
    "part",
    reports=(
        "Q-EMPTY-STRING-OVERWRITE",
        "Q-NAME-REPEATED",
        "Q-NAME-FRAGMENTED",
    ),
)


def check_continuation_arguments(
    a: Analyzer, st: _IndexState, tc: dict[str, Any], args: Any, ptr: str, n: int
) -> None:
    """Q-NAME-AFTER-ARGUMENTS (remembered: arguments before any name), Q-ARGS-JSON-OBJECT."""
    if _nonempty(args) and not st.name:
        st.args_before_name = True
    fn = tc.get("function")
    if not isinstance(args, str) and (
        args is not None or (isinstance(fn, dict) and "arguments" in fn)
    ):
        _args_not_a_string(a, tc, args, ptr, n)


detector(
    check_continuation_arguments,
    "part",
    reports=(
        "Q-ARGS-JSON-OBJECT",
        "Q-ARGS-NULL",
    ),
)


def _args_not_a_string(a: Analyzer, tc: dict[str, Any], args: Any, ptr: str, n: int) -> None:
    """Q-ARGS-JSON-OBJECT: `arguments` sent as a JSON value (an object, an array, a
    number…); Q-ARGS-NULL: `arguments: null`, which a client that concatenates strings
    turns into the text "null" (JavaScript) or a crash (Python). On an opener or a
    continuation."""
    a.find(
        "R-ARGS-STRING",
        f"arguments is {json_type(args)}, not a string",
        quirk="Q-ARGS-NULL" if args is None else "Q-ARGS-JSON-OBJECT",
        event=n,
        pointer=ptr + "/function/arguments",
        excerpt=tc,
    )


def _open_index(a: Analyzer, tc: dict[str, Any], key: int, idx: int, ptr: str, n: int) -> None:
    """The opening delta of a call: R-FIRST-TYPE (Q-TYPE-MISSING), R-FIRST-ARGS,
    Q-ARGS-WHOLE-IN-ONE-DELTA, Q-ARGS-ON-OPENING-DELTA, Q-ARGS-JSON-OBJECT; a missing id
    (Q-ID-ABSENT) or a split call (Q-INDEX-INCONSISTENT-WITHIN-CALL) is judged at the end."""
    if len(a.indexes) >= a.calls_kept:  # past the bound: no state (calls_over_bound)
        if a.calls_over is None:
            a.calls_over = (n, ptr)
        return
    fn = _v if isinstance(_v := tc.get("function"), dict) else {}
    tid, name, args = tc.get("id"), fn.get("name"), fn.get("arguments")
    st = a.indexes[(key, idx)] = _IndexState(n, ptr)
    st.id = tid if _nonempty(tid) else ""
    a.first_index.setdefault(key, (idx, n, ptr + "/index"))
    if not _nonempty(tid):
        # Judged at the end: an index that opens with arguments only, next to another
        # index, and never gets a name is one call split over two indices.
        st.id_missing = (
            n,
            ptr + "/id",
            _excerpt(tc),
            "no id" if "id" not in tc or tid is None else f"id {quoted(tid)}",
        )
        st.split_suspect = (
            not _nonempty(name)
            and _nonempty(args)
            and any(k == key for (k, _) in a.indexes if (k, _) != (key, idx))
        )
    if st.split_suspect:
        st.deferred = []
    if tc.get("type") != "function":
        _opener_finding(
            a,
            st,
            n,
            "R-FIRST-TYPE",
            'the first delta of a call has no type "function"',
            quirk="Q-TYPE-MISSING",
            pointer=ptr + "/type",
            excerpt=tc,
        )
    if _nonempty(name):
        st.name, st.opener_name, st.name_event = name, "value", n
    else:
        st.opener_name = "empty" if name == "" else "absent"
    if "arguments" not in fn:
        _opener_finding(
            a,
            st,
            n,
            "R-FIRST-ARGS",
            "the first delta of a call has no arguments key",
            pointer=ptr + "/function",
        )
    elif not isinstance(args, str):
        _args_not_a_string(a, tc, args, ptr, n)
    elif args:
        if not _nonempty(name):
            st.args_before_name = True
        if _complete_json(args) and _nonempty(name):
            _opener_finding(
                a,
                st,
                n,
                "Q-ARGS-WHOLE-IN-ONE-DELTA",
                "id, name and complete arguments in one delta",
                pointer=ptr,
                excerpt=tc,
            )
        else:
            _opener_finding(
                a,
                st,
                n,
                "Q-ARGS-ON-OPENING-DELTA",
                "the opening delta carries an argument fragment",
                pointer=ptr + "/function/arguments",
                excerpt=tc,
            )


detector(
    _open_index,
    "part",
    reports=(
        "Q-TYPE-MISSING",
        "Q-ARGS-WHOLE-IN-ONE-DELTA",
        "Q-ARGS-ON-OPENING-DELTA",
        "Q-ARGS-JSON-OBJECT",
        "Q-ARGS-NULL",
    ),
)


def _opener_finding(
    a: Analyzer, st: _IndexState, n: int, rule: str, message: str, **kw: Any
) -> None:
    """A finding about a call's opening delta: reported, or held back in ``st.deferred``
    while the index may be the argument half of a split call."""
    if st.deferred is None:
        a.find(rule, message, event=n, **kw)
    else:
        st.deferred.append((rule, message, kw))


def detect_names_at_end(a: Analyzer) -> None:
    """Q-NAME-EMPTY-OPENING-DELTA, Q-NAME-AFTER-ARGUMENTS, Q-ID-ABSENT,
    Q-INDEX-INCONSISTENT-WITHIN-CALL, Q-NAME-NEVER-SENT; R-FIRST-NAME, R-FIRST-ID."""
    for (_, idx), st in a.indexes.items():
        if st.deferred and st.name:  # not a split after all: the opener findings stand
            for rule, message, kw in st.deferred:
                a.find(rule, message, event=st.first_event, **kw)
        if st.id_missing is not None:
            ev, ptr, exc, what = st.id_missing
            if st.split_suspect and not st.name:
                a.find(
                    "R-FIRST-NAME",
                    f"index {idx} carries arguments but never an id or a "
                    "name: one call's deltas split over two indices",
                    quirk="Q-INDEX-INCONSISTENT-WITHIN-CALL",
                    event=ev,
                    pointer=ptr[:-3],
                    excerpt=exc,
                )
                continue
            a.find(
                "R-FIRST-ID",
                f"the first delta of a call has {what}",
                quirk="Q-ID-ABSENT",
                event=ev,
                pointer=ptr,
                excerpt=exc,
            )
        if st.opener_name == "value":
            continue
        if st.name:
            quirk = (
                "Q-NAME-EMPTY-OPENING-DELTA"
                if st.opener_name == "empty"
                else "Q-NAME-AFTER-ARGUMENTS"
                if st.args_before_name
                else None
            )
            a.find(
                "R-FIRST-NAME",
                f"index {idx}: the name arrived after the opening delta (event {st.name_event})",
                quirk=quirk,
                event=st.first_event,
                pointer=st.ptr + "/function/name",
            )
        else:
            a.find(
                "R-FIRST-NAME",
                f"index {idx}: the call never received a name",
                quirk="Q-NAME-NEVER-SENT",
                event=st.first_event,
                pointer=st.ptr + "/function/name",
            )


detector(
    detect_names_at_end,
    "end",
    reports=(
        "Q-NAME-EMPTY-OPENING-DELTA",
        "Q-NAME-AFTER-ARGUMENTS",
        "Q-ID-ABSENT",
        "Q-INDEX-INCONSISTENT-WITHIN-CALL",
        "Q-NAME-NEVER-SENT",
    ),
)


def calls_over_bound(a: Analyzer) -> tuple[str, int, str | None] | None:
    """A body fact (the analyzer's pre-pass, ``a.body_cut`` when the body is not cut):
    more calls than the analysis assembles (``analyzer.CALLS_KEPT``). The stream is not
    judged as if it were whole: like a limit ending the body, the cell is an `error`
    (R-COMPLETE) and the end-of-stream quirks are not reported. A transport error keeps its
    own reason. Returns (reason, event, pointer) or None."""
    if a.t.transport_error:
        return None
    if a.calls_over is not None:
        ev, ptr = a.calls_over
        pointer: str | None = ptr + "/index"
    elif a.robust.calls_cut is not None:  # index-less calls: only the robust client opens them
        ev, pointer = a.robust.calls_cut, None
    else:
        return None
    reason = (
        f"over {a.calls_kept} tool calls in one turn: the analysis assembles "
        f"the first {a.calls_kept}"
    )
    return reason, ev, pointer


def detect_nonzero_start(a: Analyzer) -> None:
    """Q-INDEX-NONZERO-START: the first call's index is not 0 and no call ever uses 0.

    Judged at the end: an opener on index 2 whose arguments come on index 0 is one call
    split over two indices (Q-INDEX-INCONSISTENT-WITHIN-CALL), not a non-zero start."""
    for key, (idx, ev, ptr) in a.first_index.items():
        if idx != 0 and (key, 0) not in a.indexes:
            a.find(
                "Q-INDEX-NONZERO-START",
                f"the first tool call has index {idx} and no call has index 0",
                event=ev,
                pointer=ptr,
            )


detector(detect_nonzero_start, "end", reports=("Q-INDEX-NONZERO-START",))


def detect_indexless_shape(a: Analyzer) -> None:
    """Q-INDEX-ABSENT-WHOLE-CALL, Q-INDEX-ABSENT-PARALLEL-SPLIT (finer ids of Q-INDEX-ABSENT)."""
    if not a.indexless:
        return

    def whole(tc: dict[str, Any]) -> bool:
        fn = _v if isinstance(_v := tc.get("function"), dict) else {}
        args = fn.get("arguments")
        return _nonempty(fn.get("name")) and (
            isinstance(args, dict) or (_nonempty(args) and _complete_json(args))
        )

    if not all(whole(tc) for _, _, tc in a.indexless):
        return
    ev = a.indexless[0][0]
    chunks = {c for _, c, _ in a.indexless}
    if len(a.indexless) >= 2 and len(chunks) == len(a.indexless):
        a.find(
            "R-INDEX-PRESENT",
            "index-less parallel calls, one whole call per chunk",
            quirk="Q-INDEX-ABSENT-PARALLEL-SPLIT",
            event=ev,
        )
    else:
        a.find(
            "R-INDEX-PRESENT",
            "index-less calls, each complete in one delta",
            quirk="Q-INDEX-ABSENT-WHOLE-CALL",
            event=ev,
        )
        a.find(
            "Q-ARGS-WHOLE-IN-ONE-DELTA", "id, name and complete arguments in one delta", event=ev
        )


detector(
    detect_indexless_shape,
    "end",
    reports=(
        "Q-INDEX-ABSENT-WHOLE-CALL",
        "Q-INDEX-ABSENT-PARALLEL-SPLIT",
        "Q-ARGS-WHOLE-IN-ONE-DELTA",
    ),
)
