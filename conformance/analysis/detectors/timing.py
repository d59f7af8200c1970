"""Timing: when the events arrived, for captures that recorded it.

Q-ARGS-NOT-PROGRESSIVE, Q-TOOLCALL-HELD-UNTIL-FINISH.

A cassette the suite wrote records when each body line arrived (``readers.TIMES_HEADER``);
a HAR capture may record when each SSE message arrived (``_eventSourceMessages``). A JSONL
or SSE file, and an older cassette, record nothing: there the findings are not applicable
(``CaptureResult.timing``), never guessed. What the findings look for is a burst: events
after a silence of at least ``SILENCE`` seconds, within ``BURST`` times that silence of its
start. A call whose argument fragments all land in one burst was not streamed as it was
generated; a call that lands in the burst of the finish was held back until the end. A
burst that starts the stream is not judged (the silence before it may be the prompt's
processing, not the call's generation).
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any

from conformance.registry import detector
from conformance.transcript import CHUNK, DONE, NONJSON, Event, Transcript

if TYPE_CHECKING:
    from conformance.analysis.analyzer import Analyzer

SILENCE = 1.0  # seconds without an event before a burst
BURST = 0.1  # a burst lasts at most this fraction of the silence before it
IDS = ("Q-ARGS-NOT-PROGRESSIVE", "Q-TOOLCALL-HELD-UNTIL-FINISH")


class Clock:
    """Each event's arrival, in seconds from the request; None past what was recorded."""

    def __init__(self, lines: list[tuple[int, float]] | None, events: list[float] | None):
        self._lines = [n for n, _ in lines] if lines else None
        self._line_t = [t for _, t in lines] if lines else []
        self._events = events
        self._data = 0  # data events seen (for per-message times)

    @classmethod
    def of(cls, t: Transcript) -> Clock | None:
        lines, events = t.meta.get("line_times"), t.meta.get("event_times")
        return cls(lines, events) if (lines or events) else None

    def at(self, ev: Event) -> float | None:
        if self._lines is not None:
            if ev.line is None:
                return None
            k = bisect.bisect_left(self._lines, ev.line)  # the read that completed it
            return self._line_t[k] if k < len(self._lines) else None
        if ev.kind not in (CHUNK, DONE, NONJSON):
            return None
        k, self._data = self._data, self._data + 1
        assert self._events is not None
        return self._events[k] if k < len(self._events) else None


class Timing:
    """What the analyzer keeps of the clock: the current event's time, the burst it is in,
    the finish's time, and whether every tool-call event was timed."""

    __slots__ = ("now", "prev", "burst_start", "burst_gap", "finish", "untimed")

    def __init__(self) -> None:
        self.now: float | None = None
        self.prev: float | None = None
        self.burst_start: float | None = None
        self.burst_gap: float | None = None  # None: the stream's first burst (not judged)
        self.finish: float | None = None
        self.untimed = False

    def tick(self, t: float | None) -> None:
        self.prev, self.now = self.now, t
        if t is None:  # past what was recorded: nothing after it can be judged
            self.untimed = True
            return
        if self.prev is None:
            self.burst_start, self.burst_gap = t, None
        elif t - self.prev >= SILENCE:
            self.burst_start, self.burst_gap = t, t - self.prev


def track_call(a: Analyzer, st: Any, fragment: bool) -> None:
    """A tool-call delta of the call ``st`` (an _IndexState) arrived now."""
    tm = a.timing
    assert tm is not None
    if tm.now is None:
        return
    if st.t_first is None:
        st.t_first, st.t_burst, st.t_gap = tm.now, tm.burst_start, tm.burst_gap
    if fragment:
        st.t_frags += 1
        st.t_last = tm.now


def detect_timing(a: Analyzer) -> None:
    """Q-ARGS-NOT-PROGRESSIVE: two or more argument fragments of a call, all in the burst
    its first delta opened; Q-TOOLCALL-HELD-UNTIL-FINISH: the call and the finish in one
    burst. Only on a capture with timings (else ``timing`` says not applicable)."""
    tm = a.timing
    if tm is None or tm.untimed:
        return
    for (_, idx), st in a.indexes.items():
        if st.t_first is None or st.t_gap is None or st.t_burst is None:
            continue
        end = st.t_burst + BURST * st.t_gap
        if st.t_frags >= 2 and st.t_last is not None and st.t_last <= end:
            a.find(
                "Q-ARGS-NOT-PROGRESSIVE",
                f"index {idx}: {st.t_frags} argument fragments arrived within "
                f"{st.t_last - st.t_burst:.3f} s after {st.t_gap:.3f} s without an event",
                event=st.first_event,
                pointer=st.ptr + "/function/arguments",
            )
        if tm.finish is not None and tm.finish <= end:
            a.find(
                "Q-TOOLCALL-HELD-UNTIL-FINISH",
                f"index {idx}: the call arrived with the finish, after {st.t_gap:.3f} s "
                "without an event",
                event=st.first_event,
                pointer=st.ptr,
            )


detector(detect_timing, "end", reports=IDS)


def status(a: Analyzer) -> dict[str, str]:
    """pass | fail | not applicable for each timing id: not applicable without timings
    (or with an event past what was recorded) or without tool-call deltas."""
    applies = a.timing is not None and not a.timing.untimed and a.any_tool_delta
    if not applies:
        return dict.fromkeys(IDS, "not applicable")
    return {q: "fail" if any(f.quirk == q for f in a.findings.values()) else "pass" for q in IDS}
