"""One pass over a Transcript: rules, quirk detectors, three strategies, a verdict.

Everything is incremental (one event at a time, bounded state) so that pytest,
``conformance analyze`` and the report share this code and a 100 MB capture is
analysed in bounded memory. The detectors live in ``detectors/`` by catalogue group,
each a small function whose docstring names the catalogue ids it can report (search
for a quirk id to find it; ``tests/test_detectors.py`` holds its controls). The
registries below say which hook runs them, in order.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterable
from typing import Any

from conformance import registry, verdict
from conformance.analysis.common import (
    _body_message,
    _error_text,
    _excerpt,
    _is_roundtrip,
    _one_line,
    _usage_requested,
    json_type,
)
from conformance.analysis.detectors import (
    content,
    envelope,
    finish,
    framing,
    request,
    roundtrip,
    timing,
    tool_deltas,
)
from conformance.analysis.detectors.envelope import TOOL_CALL_KEYS
from conformance.analysis.detectors.finish import check_length_and_usage
from conformance.analysis.detectors.tool_deltas import _IndexState
from conformance.analysis.model import CaptureResult, Finding, Impact
from conformance.bounded import cap_text
from conformance.client import JOIN_AFTER, Turn, _declared_tools, join_tail
from conformance.enums import ImpactStatus, Level, Strategy
from conformance.rules import RULES, quirk_level
from conformance.sse import CUT_FAULT
from conformance.strategies import GuardedAccumulator, NaiveAccumulator, RobustStrategy
from conformance.transcript import (
    CHUNK,
    COMMENT,
    DONE,
    FAULT,
    NONJSON,
    Event,
    Transcript,
    header,
)

# The detectors of each hook, in the order they are declared (``detector(fn, hook, ...)``
# in ``detectors/``; the registry's docstring lists the hooks). Within a hook the order
# changes no verdict: a detector owns its own state, and what several read about the body
# (``body_cut``, the robust reading of a body that is not SSE) is computed once, before
# the end detectors, by ``_body_facts``; end detectors only read.
# The steady path (Analyzer._feed_steady): a chunk whose envelope and choice keys equal a
# clean template chunk's skips the chunk detectors and the choice detectors (on it they
# find what they found on the template: nothing). Its one delta decides what runs: text,
# the TEXT_DETECTORS (the content collector of the choice detectors); one tool-call delta,
# the tool-delta detectors; a bare argument fragment on an open index, only the fragment
# detectors, fragment(a, index_state, arguments, n): a detector that must see every
# fragment is declared on that hook as well; an empty delta with a finish_reason (the
# stream's finish), the FINISH_DETECTORS. tests/test_steady_path.py checks each skipped
# detector on every committed cassette and shared capture.
_MODULES = (content, envelope, finish, framing, request, roundtrip, timing, tool_deltas)
COMMENT_DETECTORS: list[Callable[..., None]] = registry.detectors("comment")
NONJSON_DETECTORS: list[Callable[..., None]] = registry.detectors("nonjson")
CHUNK_DETECTORS: list[Callable[..., None]] = registry.detectors("chunk")
CHOICE_DETECTORS: list[Callable[..., None]] = registry.detectors("choice")
TOOL_DELTA_DETECTORS: list[Callable[..., None]] = registry.detectors("tool_delta")
FRAGMENT_DETECTORS: list[Callable[..., None]] = registry.detectors("fragment")
# What runs on a steady chunk of text, text(a, content, n): the content collector (the
# choice detectors find nothing else on a delta of text alone).
TEXT_DETECTORS: list[Callable[..., None]] = [content.collect_content]
# The choice detectors that run on a steady finish (an empty delta and a finish_reason).
FINISH_DETECTORS: list[Callable[..., None]] = [finish.detect_finish]
END_DETECTORS: list[Callable[..., None]] = registry.detectors("end")
# The end detectors that find nothing on a bare body (no request, no recorded times, no
# HTTP status, transport error or retry: ``analyze_bytes`` of an SSE body): each returns
# at once there (the request's and the round trip's read the request, detect_timing the
# times, detect_http_level the status, the transport error and the retry). A bare body
# runs the others, in the same order (tests/test_steady_path.py runs all of them too).
BARE_SKIPPED = (
    content.detect_required_not_enforced,
    request.detect_request_semantics,
    roundtrip.detect_roundtrip,
    timing.detect_timing,
    framing.detect_http_level,
)
BARE_END_DETECTORS = [d for d in END_DETECTORS if d not in BARE_SKIPPED]


COMPACT_EVERY = 0xFFFF  # events between two compactions of what the strategies keep
# Characters of content, and of reasoning, the robust strategy keeps of a turn (the rest is
# counted: Turn.content_dropped). Only the round trip reads them, to send the turn back:
# 1 Mi characters is twice the longest answer a model is allowed today (128k output
# tokens at about 4 characters each), so no real turn is cut, and a body of text without
# end costs the analysis at most this much (up to 4 bytes a character) beside the body,
# twice while the kept pieces are joined, instead of twice the whole text.
TEXT_KEPT = 1 << 20
# Tool calls one analysis assembles (each strategy, and the analyzer's index state): a new
# call past it is not assembled and the cell is an `error` naming the bound, as when a
# limit ends the body. Far above any real turn (providers cap the tools of a request, and
# so the parallel calls of a turn, at 128 or so), and small enough that what a call costs
# the analysis (about 2.7 KB over the three strategies, the index state and the results)
# stays a few MiB, where a body of tiny calls would cost a GB at the default max_bytes.
CALLS_KEPT = 1024
# The strategies' enum members, looked up once (an enum attribute costs a lookup each time).
_NAIVE, _GUARDED, _ROBUST = Strategy.NAIVE, Strategy.GUARDED, Strategy.ROBUST
_OK, _CRASHED = ImpactStatus.OK, ImpactStatus.CRASHED
_NO_NAMES: frozenset[str] = frozenset()


class Analyzer:
    """Feed events; ``finish()`` returns the CaptureResult."""

    # Slots: an instance of this many attributes would hold a dict of its own (CPython
    # shares the keys of at most 30), built, and resized, for every capture.
    __slots__ = (
        "t",
        "req",
        "tools",
        "declared_names",
        "n",
        "findings",
        "failed_rules",
        "calls_kept",
        "naive",
        "guarded",
        "robust",
        "robust_feed",
        "robust_fragment",
        "robust_text",
        "robust_call",
        "_readings",
        "events",
        "done_seen",
        "chunk_id",
        "model",
        "fingerprints",
        "usage_chunks",
        "choices",
        "finish_seen_at",
        "indexes",
        "calls_over",
        "indexless",
        "any_tool_delta",
        "empty_deltas",
        "first_empty_delta",
        "extra_fields",
        "extra_first",
        "reasoning_seen",
        "content",
        "content_chars",
        "first_markup_event",
        "content_tail",
        "chunk_ordinal",
        "error_seen",
        "first_index",
        "length_judged",
        "cut_inside_event",
        "body_cut",
        "plain_body",
        "first_prose_event",
        "parser_evidence",
        "_finds",
        "_template",
        "clock",
        "timing",
    )

    def __init__(self, transcript: Transcript):
        self.t = transcript
        body = (transcript.request or {}).get("body")
        self.req: dict[str, Any] | None = body if isinstance(body, dict) else None
        self.tools = (self.req or {}).get("tools")
        # The request's declared tool names (empty without a request): what tells a second
        # call under the same index and id from a name sent in pieces.
        self.declared_names: frozenset[str] = (
            frozenset(_declared_tools(self.tools)) if self.tools else _NO_NAMES
        )
        n = self.req.get("n") if self.req is not None else None
        self.n = n if isinstance(n, int) else 1
        self.findings: dict[tuple[str, str | None], Finding] = {}
        self.failed_rules: set[str] = set()
        self.calls_kept = CALLS_KEPT
        self.naive = NaiveAccumulator(max_calls=CALLS_KEPT)
        self.guarded = GuardedAccumulator(max_calls=CALLS_KEPT)
        self.robust = RobustStrategy(self.tools, self.n, max_text=TEXT_KEPT, max_calls=CALLS_KEPT)
        self.robust_feed = self.robust.acc.feed  # RobustStrategy.feed, for a dict chunk
        # What feed() does for a steady chunk of a lean template, without reading it again.
        self.robust_fragment: Callable[..., None] = self.robust.acc._feed_fragment
        self.robust_text = self.robust.acc._feed_text
        self.robust_call = self.robust.acc._feed_call
        self._readings = (self.naive, self.guarded)  # the two the steady path appends to
        self.events = 0
        self.done_seen = False
        self.chunk_id: str | None = None
        self.model: str | None = None
        self.fingerprints: set[str] = set()
        self.usage_chunks = 0
        self.choices = finish.Choices(self.n)  # finish state per choice (detectors/finish)
        self.finish_seen_at: int | None = None  # event of the last finish_reason, any choice
        self.indexes: dict[tuple[int, int], _IndexState] = {}  # at most CALLS_KEPT
        self.calls_over: tuple[int, str] | None = None  # (event, pointer): first index refused
        self.indexless: list[tuple[int, int, dict[str, Any]]] = []  # (event, chunk ordinal, tc)
        self.any_tool_delta = False
        self.empty_deltas = 0
        self.first_empty_delta: int | None = None
        self.extra_fields: set[str] = set()  # the names the finding shows (detectors/envelope)
        self.extra_first: int | None = None  # the event of the first non-standard field
        self.reasoning_seen = False
        self.content: list[str] = []  # the first CONTENT_KEPT characters, for group H
        self.content_chars = 0
        self.first_markup_event: int | None = None
        self.content_tail = ""  # the last content characters, for a marker split in two
        self.chunk_ordinal = 0
        self.error_seen = False
        self.first_index: dict[int, tuple[int, int, str]] = {}  # key -> (index, event, ptr)
        self.length_judged = False
        self.cut_inside_event = False  # the body ended inside an event (an SSE fault)
        # Body facts, computed once by _body_facts before the end detectors read them:
        self.body_cut: str | None = None  # why a 200 body is an error, not a stream
        self.plain_body: Any = None  # a streamed request's 200 body that is not SSE, parsed
        self.first_prose_event: int | None = None  # content before any tool-call delta
        self.parser_evidence: str | None = None  # set by `named` ("" when there is none)
        self._finds = 0  # findings recorded so far, repeats included
        self._template: _Template | None = None  # for the steady path (_feed_steady)
        # When each event arrived, where the capture recorded it (detectors/timing.py).
        self.clock = timing.Clock.of(transcript) if transcript.meta else None  # (no times)
        self.timing = timing.Timing() if self.clock is not None else None

    # ------------------------------------------------------------------ findings
    def find(
        self,
        rule: str,
        message: str,
        *,
        quirk: str | None = None,
        event: int | None = None,
        pointer: str | None = None,
        excerpt: Any = None,
        level: str | None = None,
    ) -> None:
        if rule.startswith("Q-") and quirk is None:
            quirk = rule
        lvl = Level(level) if level else quirk_level(quirk) if quirk else RULES[rule].level
        if "\n" in message or "\r" in message:
            message = _one_line(message)  # the CLI summary and the cell reason are lines
        message = cap_text(message)  # a name or an id quoted whole would be held whole
        key = (rule, quirk)
        f = self.findings.get(key)
        if f is None:
            self.findings[key] = Finding(
                rule,
                lvl,
                quirk,
                event,
                pointer,
                message,
                None if excerpt is None else _excerpt(excerpt),
            )
        else:
            f.count += 1
        self._finds += 1
        if rule in RULES:
            self.failed_rules.add(rule)

    # ------------------------------------------------------------------ events
    def feed(self, ev: Event) -> None:
        self.events += 1
        if self.clock is not None:
            self.timing.tick(self.clock.at(ev))  # type: ignore[union-attr]
        if not self.events & COMPACT_EVERY:  # a long stream: the strategies' pieces joined
            self.naive.compact()
            self.guarded.compact()
            self.robust.compact()
        kind = ev.kind
        if kind == CHUNK:  # nearly every event: tested first
            chunk, t = ev.chunk, self._template
            if (
                t is None
                or type(chunk) is not dict
                or not self._feed_steady(t, chunk, ev.n, ev.envelope)
            ):
                self._judge_chunk(chunk, ev.n)
        elif kind == COMMENT:
            for detector in COMMENT_DETECTORS:
                detector(self, ev)
        elif kind == FAULT:
            self.find("R-SSE-WELL-FORMED", ev.data, event=ev.n)
            self.cut_inside_event = ev.data.startswith(CUT_FAULT)
        elif kind == DONE:
            self.done_seen = True
        elif kind == NONJSON:
            for detector in NONJSON_DETECTORS:
                detector(self, ev)

    def _judge_chunk(self, chunk: Any, n: int) -> None:
        """A chunk judged in full; a clean one is the template of the steady path."""
        t = self._template
        finds = self._finds
        self._feed_chunk(chunk, n)
        if self.finish_seen_at is not None:
            self._template = None  # after a finish every chunk is judged in full
        elif finds == self._finds and self.n <= 1 and type(chunk) is dict:
            # Judged in full and found clean: later chunks equal to it in everything the
            # chunk and choice detectors read take the steady path.
            self._template = _Template.of(chunk) or t

    def _feed_steady(
        self, t: _Template, chunk: dict[str, Any], n: int, envelope: Any = None
    ) -> bool:
        """The steady state of a stream: a chunk whose envelope and choice keys equal the
        template's (a clean, fully judged chunk), with one choice that carries one of
        three deltas: text (``{"content": "<non-empty>"}``), one tool-call delta with
        standard keys (a call's opener, say), or, the commonest, a bare argument fragment
        on an open index; or the stream's finish (``_feed_finish``). On such a chunk the
        chunk detectors and the choice detectors but the content collector find what they
        found on the template, nothing (``tests/test_steady_path.py`` checks it detector
        by detector on every committed cassette and shared capture); so only the
        strategies, the content collector (text), the tool-delta detectors (a call's
        delta) or the fragment detectors (a fragment) run, and the bookkeeping a full
        judgement leaves (the chunk count; detect_finish's record of the choice's last tool-call delta and
        appearance is read only with n > 1, where no chunk takes this path). Returns False,
        having done nothing, for any other chunk.

        A chunk the SSE parser made from an ``envelope`` (``conformance.jsontext.Envelope``)
        that an earlier chunk's passed the checks of the envelope with, against this
        template, passes them too: the chunks of one envelope differ only in the delta,
        and these checks read everything but the delta (only that it is there)."""
        if envelope is not None and envelope is t.envelope:
            choice = chunk["choices"][0]
            delta = choice["delta"]
        else:
            # The template's keys: as many, each of them there (itemgetter raises KeyError
            # for one that is not), and the values the chunk detectors read equal.
            if len(chunk) != t.size:
                return False
            try:
                if t.read(chunk) != t.values:
                    return False
            except KeyError:
                return False
            if t.other and chunk.keys() != t.keys:  # keys besides the values and choices
                return False
            choices = chunk.get("choices")
            if type(choices) is not list or len(choices) != 1:
                return False
            choice = choices[0]
            if type(choice) is not dict or len(choice) != t.choice_size:
                return False
            try:
                read = t.choice_read(choice)  # index, finish_reason, delta, then the others
            except KeyError:
                return False
            if read[0] != t.choice_index:
                return False
            delta = read[2]
            if read[1] is not None:  # a finish: its envelope serves no later chunk
                return self._feed_finish(chunk, choice, read[1], delta, n)
            t.envelope = envelope  # its chunks pass the checks above (None: no envelope)
        if type(delta) is not dict or len(delta) != 1:
            return False
        tcs = delta.get("tool_calls")
        if tcs is None:
            text = delta.get("content")
            if type(text) is not str or not text:
                return False
            # Text: the naive and guarded readings take nothing from it (no tool_calls).
            if t.lean:
                self.robust_text(text)
            else:
                self.robust_feed(chunk, event=n)
            for detector in TEXT_DETECTORS:
                detector(self, text, n)
            self.chunk_ordinal += 1
            return True
        if type(tcs) is not list or len(tcs) != 1:
            return False
        tc = tcs[0]
        if type(tc) is not dict:
            return False
        st = None
        if len(tc) == 2:  # a bare fragment? (this runs for nearly every chunk of a stream)
            fn, idx = tc.get("function"), tc.get("index")
            if type(fn) is dict and len(fn) == 1 and type(idx) is int:
                args = fn.get("arguments")
                if type(args) is str and args:
                    st = self.indexes.get((0, idx))
        if st is not None:
            for strat in self._readings:  # one pass: both append the fragment
                if strat.crash is None:
                    entry = strat.acc.get(idx)
                    if entry is None:
                        strat.feed(chunk, n)
                    else:
                        parts = entry["arguments"]
                        parts.append(args)
                        if len(parts) > JOIN_AFTER:
                            join_tail(parts)
            if t.lean:
                self.robust_fragment(chunk, idx, args, n)
            else:
                self.robust_feed(chunk, event=n)
            for detector in FRAGMENT_DETECTORS:
                detector(self, st, args, n)
            if self.timing is not None:
                timing.track_call(self, st, True)
        elif TOOL_CALL_KEYS.issuperset(tc):  # else detect_choice_shape names the key
            self.naive.feed(chunk, n)
            self.guarded.feed(chunk, n)
            if t.lean:
                self.robust_call(chunk, tc, n)
            else:
                self.robust_feed(chunk, event=n)
            self.any_tool_delta = True
            self.feed_tool_delta(tc, 0, "/choices/0/delta/tool_calls/0", n, 1)
        else:
            return False
        self.chunk_ordinal += 1  # last: the tool-delta detectors read the chunk's ordinal
        return True

    def _feed_finish(
        self, chunk: dict[str, Any], choice: dict[str, Any], fr: Any, delta: Any, n: int
    ) -> bool:
        """The steady path of a stream's finish: a chunk in the template's envelope whose
        choice has an empty delta and a finish_reason (a non-empty string). Of the choice
        detectors only the FINISH_DETECTORS find anything there; the naive and guarded
        readings take nothing from an empty delta. As after any finish, the chunks after
        it are judged in full (detect_finish sets ``finish_seen_at``)."""
        if type(delta) is not dict or delta or type(fr) is not str or not fr:
            return False
        self.robust_feed(chunk, event=n)
        for detector in FINISH_DETECTORS:
            detector(self, choice, "/choices/0", n)
        tm = self.timing
        if tm is not None and tm.finish is None:
            tm.finish = tm.now
        self.chunk_ordinal += 1
        self._template = None
        return True

    def _feed_chunk(self, chunk: Any, n: int) -> None:
        self.naive.feed(chunk, n)
        self.guarded.feed(chunk, n)
        if not isinstance(chunk, dict):  # (the robust strategy reads dicts only)
            self.find(
                "R-CHUNK-OBJECT",
                f"payload is {json_type(chunk)}, not an object",
                event=n,
                pointer="",
                excerpt=chunk,
            )
            return
        self.robust_feed(chunk, event=n)
        for detector in CHUNK_DETECTORS:
            detector(self, chunk, n)
        choices = chunk.get("choices")
        if isinstance(choices, list):
            for pos, choice in enumerate(choices):
                if isinstance(choice, dict):
                    self.feed_choice(choice, pos, n)
        self.chunk_ordinal += 1

    def feed_choice(self, choice: dict[str, Any], pos: int, n: int) -> None:
        ptr = f"/choices/{pos}"
        for detector in CHOICE_DETECTORS:
            detector(self, choice, ptr, n)
        tm = self.timing
        if tm is not None and tm.finish is None and choice.get("finish_reason") not in (None, ""):
            tm.finish = tm.now
        delta = choice.get("delta")
        tcs = delta.get("tool_calls") if isinstance(delta, dict) else None
        if isinstance(tcs, list):
            ci = choice.get("index")
            key = ci if (self.n > 1 and isinstance(ci, int)) else 0
            for k, tc in enumerate(tcs):
                if isinstance(tc, dict):
                    self.any_tool_delta = True
                    self.feed_tool_delta(tc, key, f"{ptr}/delta/tool_calls/{k}", n, len(tcs))
        elif isinstance(tcs, dict):  # Q-TOOLCALLS-NOT-ARRAY: the one delta it carries
            ci = choice.get("index")
            key = ci if (self.n > 1 and isinstance(ci, int)) else 0
            self.any_tool_delta = True
            self.feed_tool_delta(tcs, key, f"{ptr}/delta/tool_calls", n, 1)

    def feed_tool_delta(
        self, tc: dict[str, Any], key: int, ptr: str, n: int, siblings: int
    ) -> None:
        for detector in TOOL_DELTA_DETECTORS:
            detector(self, tc, key, ptr, n, siblings)
        if self.timing is not None and type(idx := tc.get("index")) is int:
            st = self.indexes.get((key, idx))
            if st is not None:
                fn = tc.get("function")
                args = fn.get("arguments") if isinstance(fn, dict) else None
                timing.track_call(self, st, isinstance(args, str) and args != "")

    # ------------------------------------------------------------------ end
    def finish(self) -> CaptureResult:
        self._body_facts()
        t = self.t
        bare = (  # what BARE_SKIPPED's detectors need to find anything: none of it
            self.req is None
            and self.timing is None
            and t.status is None
            and not t.transport_error
            and not t.meta.get("connection_retry")
        )
        for detector in BARE_END_DETECTORS if bare else END_DETECTORS:
            detector(self)
        turn = self.robust.turn()
        if turn.workarounds:
            self._workaround_findings(turn)
        if self.req is not None:  # (it judges only what a request asked)
            check_length_and_usage(self, turn)
        calls = {
            _NAIVE: self.naive.calls(),
            _GUARDED: self.guarded.calls(),
            _ROBUST: self.robust.calls(),
        }
        findings = list(self.findings.values())  # in the order they were first found
        if len(findings) > 1:
            findings.sort(key=_finding_order)
        recoverable = turn.recoverable  # a property that reads every call: read once
        impact = self._impact(turn, calls, findings, recoverable)
        error = self._error_reason(turn)
        judged = verdict.judge(
            [(f.level, f.quirk) for f in findings], recoverable=recoverable, error=error
        )
        meta: dict[str, Any] = {}
        if self.model:
            meta["model"] = self.model
        if self.fingerprints:
            meta["system_fingerprint"] = sorted(self.fingerprints)
        server = header(self.t.headers, "server")
        if server:
            meta["server"] = server
        return CaptureResult(
            self.t.source,
            judged,
            findings,
            turn.finish_reason,
            calls,
            impact,
            self._rule_status(),
            error,
            turn,
            meta,
            self.events,
            timing.status(self),
            self.timing is not None,
        )

    def _workaround_findings(self, turn: Turn) -> None:
        """The robust client's own findings (its notes), with their events, as findings."""
        detected = set(self.findings)
        for w in turn.workarounds:
            if registry.spec(w.quirk).note_reported_by_detector:
                continue  # reported by their own detectors, with pointers
            if w.quirk == "Q-ARGS-TRUNCATED" and (self.t.transport_error or self.body_cut):
                continue  # the transport cut the stream: a consequence, not the server's quirk
            quirk, message = self.named(w.quirk, turn), w.message
            if quirk != w.quirk:
                message += "; " + str(self.parser_evidence)
            rule = registry.spec(quirk).workaround_rule or quirk
            if (rule, quirk) in detected:
                continue  # a detector reported it already, with its pointer
            self.find(rule, message, quirk=quirk, event=w.event)

    def _impact(
        self,
        turn: Turn,
        calls: dict[Strategy, list[dict[str, Any]]],
        findings: list[Finding],
        recoverable: bool,
    ) -> dict[str, Impact]:
        robust = calls[_ROBUST]
        raw: list[tuple[Any, Any, Any]] | None = None  # only when the calls differ
        want: list[tuple[str, str, str]] | None = None  # normalised only when raw differs
        out: dict[str, Impact] = {}
        for name, strat in ((_NAIVE, self.naive), (_GUARDED, self.guarded)):
            if strat.crash:
                out[name] = Impact(_CRASHED, strat.crash)
                continue
            # The same id, name and argument text give the same normalised key: the
            # arguments are parsed and re-serialised only for a strategy whose text differs
            # (equal calls, the usual case, are one comparison).
            if calls[name] == robust:
                out[name] = Impact(_OK)
                continue
            if raw is None:
                raw = [_raw_key(c) for c in robust]
            if [_raw_key(c) for c in calls[name]] == raw:
                out[name] = Impact(_OK)
                continue
            if want is None:
                want = [_call_key(c) for c in robust]
            if [_call_key(c) for c in calls[name]] != want:
                out[name] = Impact(ImpactStatus.WRONG, _diff_calls(calls[name], calls[_ROBUST]))
            else:
                out[name] = Impact(_OK)
        # Quirks whose calls are not on the wire at all (no delta, text only) leave even
        # the robust client nothing to assemble: it is not "ok" with zero calls.
        unrecoverable = registry.unrecoverable()
        missing = {f.quirk for f in findings if f.quirk in unrecoverable}
        if recoverable and not missing:
            out[_ROBUST] = Impact(_OK, "repaired arguments" if turn.repaired else "")
        else:
            lost = {self.named(w.quirk, turn) for w in turn.workarounds if not w.recovered}
            lost |= missing
            why = ", ".join(sorted(lost))
            if not why:
                why = (
                    "error inside the stream"
                    if turn.error is not None
                    else "a call without a name or valid arguments"
                )
            out[_ROBUST] = Impact(ImpactStatus.UNRECOVERABLE, why)
        return out

    def _body_facts(self) -> None:
        """What the end detectors read about the body, computed once before them: the
        robust reading of a body that is not SSE (a downgraded completion, a JSON error),
        then why a 200 body is an ``error`` rather than a stream (``body_cut``: empty or cut
        inside an event, else more calls than the analysis assembles)."""
        framing.read_plain_body(self)
        cut = framing.body_cut(self) or tool_deltas.calls_over_bound(self)
        if cut is not None:
            self.body_cut, event, pointer = cut
            self.find("R-COMPLETE", self.body_cut, event=event, pointer=pointer)

    def named(self, quirk: str, turn: Turn) -> str:
        """The id a robust-client note is reported under: invalid arguments are the server
        parser's fault only where the model's own text of the call is on the wire."""
        if quirk != "Q-ARGS-INVALID-JSON":
            return quirk
        if self.parser_evidence is None:
            self.parser_evidence = content.server_parser_evidence(self, turn) or ""
        return "Q-ARGS-SERVER-PARSER-CORRUPTION" if self.parser_evidence else quirk

    def _error_reason(self, turn: Turn) -> str | None:
        if self.t.transport_error:
            return _one_line(self.t.transport_error)
        if self.body_cut:
            return self.body_cut
        if self.t.status is not None and self.t.status != 200:
            return f"HTTP {self.t.status}: {_body_message(self.t.raw)}"
        if turn.error is not None:
            return "error inside the stream: " + _error_text(turn.error)
        f = self.findings.get(("R-SSE-CONTENT-TYPE", None))
        if f is not None and not self.t.framing and self.events == 0:
            return f.message
        return None

    def _rule_status(self) -> dict[str, str]:
        """pass | fail | not applicable per rule: a rule the input cannot show is not judged."""
        req = self.req or {}
        roundtrip = self.req is not None and _is_roundtrip(self.req)
        has = (
            bool(self.t.framing),
            self.t.status is not None or self.t.transport_error is not None,
            self.req is not None,
            roundtrip,
            self.any_tool_delta,
            self.events > 0,  # chunk rules need a stream to judge
        )
        if req:
            choice = req.get("tool_choice")
            special: tuple[bool, ...] = (
                self.t.status is not None and bool(req.get("stream")),
                roundtrip and self.t.status is not None,
                self.events > 0 and _usage_requested(req),
                self.length_judged,
                choice in ("none", "required") or isinstance(choice, dict),
                req.get("parallel_tool_calls") is False,
                bool(req.get("tools")) and self.any_tool_delta,
            )
        else:  # no request (a bare SSE or JSONL capture): what the above gives for {}
            special = (False, False, False, self.length_judged, False, False, False)
        # Every capture with the same facts passes the same rules (a few dozen keys): the
        # passes are built once per set of facts and copied; the failures are set on it.
        key = has + special
        passed = _PASSED.get(key)
        if passed is None:
            applies = dict(zip(_NEEDS_KEYS, has, strict=True))
            applies.update(zip(_SPECIAL, special, strict=True))
            passed = _PASSED[key] = {
                rid: "pass" if applies[rid if rid in _SPECIAL else needs] else "not applicable"
                for rid, needs in _RULE_NEEDS
            }
        status = passed.copy()
        for rid in self.failed_rules:  # rules only (find adds an id here when it is one)
            status[rid] = "fail"
        return status


# Each rule's id and what it needs, in RULES's order (read once per capture).
_RULE_NEEDS = tuple((rid, rule.needs) for rid, rule in RULES.items())
# What _rule_status reads: the facts a rule needs (Rule.needs, in this order), the rules
# judged on facts of their own (in this order), and the statuses built per set of facts.
_NEEDS_KEYS = ("framing", "http", "request", "roundtrip", "tool_calls", None)
_SPECIAL = (
    "R-SSE-CONTENT-TYPE",
    "R-ROUNDTRIP-ACCEPTED",
    "R-USAGE",
    "R-LENGTH-VISIBLE",
    "R-TOOL-CHOICE",
    "R-PARALLEL-DISABLED",
    "R-TOOL-DECLARED",
)
_PASSED: dict[tuple[bool, ...], dict[str, str]] = {}  # at most 2**13 sets of facts


# The chunk values the chunk detectors read; the steady path requires them equal.
_TEMPLATE_VALUES = ("id", "object", "created", "model", "system_fingerprint", "usage", "error")
_CHOICE_READ = ("index", "finish_reason", "delta")  # what the steady path reads of a choice


class _Template:
    """What the steady path compares a chunk with: the keys and read values of a clean
    chunk, the keys and index of its one choice."""

    __slots__ = (
        "keys",
        "size",
        "read",
        "values",
        "other",
        "choice_size",
        "choice_read",
        "choice_index",
        "envelope",
        "lean",
    )

    def __init__(self, chunk: dict[str, Any], choice: dict[str, Any]) -> None:
        self.keys = frozenset(chunk)
        self.size = len(chunk)
        read = tuple(filter(chunk.__contains__, _TEMPLATE_VALUES))
        # A clean chunk with choices has an id, an object, a created and a model: at least
        # four values, so itemgetter gives a tuple (one C call where a loop compares each).
        self.read = operator.itemgetter(*read)
        self.values = self.read(chunk)
        # Keys besides those and "choices" (service_tier, an extra field): then the keys
        # are compared as well (else the count and the values' keys say they are equal).
        self.other = len(read) + 1 != self.size
        self.choice_size = len(choice)
        # The three keys it reads, then the others (only there: the count says the rest).
        rest = [k for k in choice if k not in _CHOICE_READ]
        self.choice_read = operator.itemgetter(*_CHOICE_READ, *rest)
        self.choice_index = choice.get("index")
        self.envelope: Any = None  # the SSE envelope whose chunks passed the checks (above)
        # Nothing the robust client reads besides the delta: no error, no usage, no camelCase
        # finish. Its chunks (equal in those) may skip the client's reading of the chunk.
        self.lean = (
            chunk.get("error") is None
            and chunk.get("usage") is None
            and "finishReason" not in choice
        )

    @classmethod
    def of(cls, chunk: dict[str, Any]) -> _Template | None:
        """The template a clean chunk makes: one that has one choice. (Clean, the choice
        has an index, a finish_reason and a delta, and the finish reason is null: a finish
        ends the steady path. Were one missing, no chunk would match: the steady path
        reads them through ``choice_read``, and a KeyError means no match.)"""
        cs = chunk.get("choices")
        if type(cs) is not list or len(cs) != 1 or type(cs[0]) is not dict:
            return None
        return cls(chunk, cs[0])


def _finding_order(f: Finding) -> tuple[int, str]:
    """Findings in event order (those of no event last), then by rule."""
    return (f.event if f.event is not None else 1 << 60, f.rule)


def _raw_key(c: dict[str, Any]) -> tuple[Any, Any, Any]:
    """What _call_key is a function of: equal raw keys give equal call keys."""
    return (c.get("id") or "", c.get("name") or "", c.get("arguments"))


def _call_key(c: dict[str, Any]) -> tuple[str, str, str]:
    args = c.get("arguments")
    try:
        norm = json.dumps(json.loads(args), sort_keys=True)  # type: ignore[arg-type]  # TypeError caught
    except (TypeError, ValueError):
        norm = args if isinstance(args, str) else repr(args)
    return (c.get("id") or "", c.get("name") or "", norm)


def _diff_calls(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> str:
    if len(got) != len(want):
        return f"{len(got)} call(s) instead of {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        for k in ("id", "name"):
            if (g.get(k) or "") != (w.get(k) or ""):
                return f"call {i}: {k} {g.get(k)!r} instead of {w.get(k)!r}"
        if _call_key(g)[2] != _call_key(w)[2]:
            return f"call {i}: arguments {_excerpt(g.get('arguments'), 60)!r}"
    return "calls differ"


def analyze(transcript: Transcript) -> CaptureResult:
    """The one pipeline: every door (pytest, CLI, report) goes through here."""
    a = Analyzer(transcript)
    feed = a.feed
    for ev in transcript.events():
        feed(ev)
    return a.finish()


def analyze_events(events: Iterable[Event], source: str = "<events>") -> CaptureResult:
    evs = list(events)
    return analyze(
        Transcript(source, "events", any(e.kind != CHUNK for e in evs), lambda: iter(evs))
    )


def analyze_chunks(
    chunks: Iterable[Any], *, source: str = "<chunks>", request: dict[str, Any] | None = None
) -> CaptureResult:
    """Analyse chunk objects without framing (framing rules: not applicable)."""
    evs = [Event(i, CHUNK, None, "", c) for i, c in enumerate(chunks)]
    t = Transcript(
        source,
        "jsonl",
        False,
        lambda: iter(evs),
        request={"body": request} if request is not None else None,
    )
    return analyze(t)


def analyze_bytes(
    raw: bytes,
    *,
    source: str = "<bytes>",
    request: dict[str, Any] | None = None,
    status: int | None = None,
    headers: dict[str, str] | None = None,
) -> CaptureResult:
    global _readers
    if _readers is None:  # imported on demand (start-up: docs/performance.md), once
        import conformance.readers

        _readers = conformance.readers
    req = {"body": request} if request is not None else None
    hdrs = headers if headers is not None else {"content-type": "text/event-stream"}
    return analyze(_readers.exchange_transcript(source, "sse", req, status, hdrs, raw))


_readers: Any = None  # conformance.readers, once analyze_bytes has imported it
