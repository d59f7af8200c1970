"""One pass over a Transcript: rules, quirk detectors, three strategies, a verdict.

Everything is incremental (one event at a time, bounded state) so that pytest,
``conformance analyze`` and the report share this code and a 100 MB capture is
analysed in bounded memory. Quirk detectors are small functions below, each named
after what it checks and tagged with the catalogue ids it can report; search for a
quirk id to find its detector, and ``tests/test_detectors.py`` for its controls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from conformance.client import Turn, _complete_json, completion_as_chunk
from conformance.rules import (
    INFO,
    LEVEL_RANK,
    MUST,
    RULES,
    SHOULD,
    UNRECOVERABLE,
    quirk_level,
)
from conformance.strategies import GuardedAccumulator, NaiveAccumulator, RobustStrategy
from conformance.transcript import (
    CHUNK,
    COMMENT,
    DONE,
    FAULT,
    NONJSON,
    Event,
    InputError,
    Transcript,
    header,
)

FINISH_VALUES = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})
CHUNK_KEYS = frozenset(
    {
        "id",
        "object",
        "created",
        "model",
        "system_fingerprint",
        "choices",
        "usage",
        "service_tier",
        "obfuscation",
    }
)
CHOICE_KEYS = frozenset({"index", "delta", "logprobs", "finish_reason"})
DELTA_KEYS = frozenset({"role", "content", "tool_calls", "refusal", "function_call"})
TOOL_CALL_KEYS = frozenset({"index", "id", "type", "function"})
REFERENCE_EXTRA = frozenset({"obfuscation"})
AZURE_FILTER_KEYS = frozenset(
    {"prompt_filter_results", "prompt_annotations"}
)  # their own quirk  # OpenAI's own extra field: reference behaviour
REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text", "reasoning_details")
TOOL_MARKUP = re.compile(
    r"<tool_call>|<\|tool_call|\[TOOL_CALLS\]|<function[=>\s]|<｜DSML｜|\[Calling tool:|"
    r"<\|tool_calls_section_begin\|>|\{\s*\"name\"\s*:\s*\"[^\"]+\"\s*,\s*\"(?:arguments|parameters)\""
)
OPENAI_ID = re.compile(r"call_[A-Za-z0-9]{24}")  # OpenAI: call_ + 24 base-62 characters


@dataclass
class Finding:
    rule: str
    level: str
    quirk: str | None
    event: int | None
    pointer: str | None
    message: str
    excerpt: str | None = None
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "rule": self.rule,
            "level": self.level,
            "quirk": self.quirk,
            "event": self.event,
            "pointer": self.pointer,
            "message": self.message,
        }
        if self.excerpt is not None:
            d["excerpt"] = self.excerpt
        if self.count > 1:
            d["count"] = self.count
        return d


@dataclass
class Impact:
    status: str  # ok | wrong | crashed | unrecoverable
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"status": self.status, "detail": self.detail}


@dataclass
class CaptureResult:
    source: str
    verdict: str
    findings: list[Finding]
    finish_reason: str | None
    tool_calls: dict[str, list[dict[str, Any]]]
    impact: dict[str, Impact]
    rules: dict[str, str]
    error: str | None = None
    turn: Turn | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    events: int = 0

    @property
    def quirks(self) -> list[str]:
        return sorted({f.quirk for f in self.findings if f.quirk})

    def quirks_at(self, min_level: str = SHOULD) -> list[str]:
        rank = LEVEL_RANK[min_level]
        return sorted({f.quirk for f in self.findings if f.quirk and LEVEL_RANK[f.level] >= rank})

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "source": self.source,
            "verdict": self.verdict,
            "quirks": self.quirks,
            "findings": [f.to_json() for f in self.findings],
            "finish_reason": self.finish_reason,
            "tool_calls": self.tool_calls,
            "impact": {k: v.to_json() for k, v in self.impact.items()},
            "rules": self.rules,
            "events": self.events,
        }
        if self.error:
            d["error"] = self.error
        if self.meta:
            d["meta"] = self.meta
        return d


def _excerpt(value: Any, limit: int = 160) -> str:
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    )
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _nonempty(v: Any) -> bool:
    return isinstance(v, str) and v != ""


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _carries(tc: dict[str, Any]) -> bool:
    """A tool-call delta that brings anything (an id, a name or an argument fragment)."""
    fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
    args = fn.get("arguments")
    return (
        _nonempty(tc.get("id"))
        or _nonempty(fn.get("name"))
        or _nonempty(args)
        or (args is not None and not isinstance(args, str))
    )


class _IndexState:
    """What the rules remember about one provider index of one choice."""

    __slots__ = (
        "first_event",
        "id",
        "name",
        "opener_name",
        "args_before_name",
        "name_event",
        "deltas",
        "id_missing",
        "split_suspect",
        "deferred",
        "ptr",
    )

    def __init__(self, event: int, ptr: str):
        self.first_event = event
        self.ptr = ptr  # JSON pointer of the opening delta
        self.id: str = ""
        self.name: str = ""
        self.opener_name: str = "absent"  # value | empty | absent
        self.args_before_name = False
        self.name_event: int | None = None
        self.deltas = 0
        self.id_missing: tuple[int, str, str, str] | None = None
        self.split_suspect = False
        # Findings about the opening delta, held back while the index may turn out to be
        # the argument half of a call split over two indices (judged at the end).
        self.deferred: list[tuple[str, str, dict[str, Any]]] = []


class Analyzer:
    """Feed events; ``finish()`` returns the CaptureResult."""

    def __init__(self, transcript: Transcript):
        self.t = transcript
        body = (transcript.request or {}).get("body")
        self.req: dict[str, Any] | None = body if isinstance(body, dict) else None
        self.tools = (self.req or {}).get("tools")
        n = (self.req or {}).get("n")
        self.n = n if isinstance(n, int) else 1
        self.findings: dict[tuple[str, str | None], Finding] = {}
        self.order: list[tuple[str, str | None]] = []
        self.failed_rules: set[str] = set()
        self.naive, self.guarded = NaiveAccumulator(), GuardedAccumulator()
        self.robust = RobustStrategy(self.tools, self.n)
        self.events = 0
        self.done_seen = False
        self.chunk_id: str | None = None
        self.model: str | None = None
        self.fingerprints: set[str] = set()
        self.usage_chunks = 0
        self.finishes: dict[str, int] = {}  # finish value -> first event (bounded)
        self.last_finish: tuple[int, str] | None = None
        self.finish_reported_at: int | None = None
        self.indexes: dict[tuple[int, int], _IndexState] = {}
        self.indexless: list[tuple[int, int, dict[str, Any]]] = []  # (event, chunk ordinal, tc)
        self.any_tool_delta = False
        self.empty_deltas = 0
        self.first_empty_delta: int | None = None
        self.extra_fields: dict[str, int] = {}
        self.reasoning_seen = False
        self.content: list[str] = []
        self.first_markup_event: int | None = None
        self.chunk_ordinal = 0
        self.error_seen = False
        self.first_index: dict[int, tuple[int, int, str]] = {}  # key -> (index, event, ptr)
        self.length_judged = False

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
        lvl = level or (quirk_level(quirk) if quirk else RULES[rule].level)
        if "\n" in message or "\r" in message:
            message = _one_line(message)  # the CLI summary and the cell reason are lines
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
            self.order.append(key)
        else:
            f.count += 1
        if rule in RULES:
            self.failed_rules.add(rule)

    # ------------------------------------------------------------------ events
    def feed(self, ev: Event) -> None:
        self.events += 1
        if ev.kind == COMMENT:
            detect_comment_keepalive(self, ev)
        elif ev.kind == FAULT:
            self.find("R-SSE-WELL-FORMED", ev.data, event=ev.n)
        elif ev.kind == DONE:
            self.done_seen = True
        elif ev.kind == NONJSON:
            detect_nonjson_payload(self, ev)
        elif ev.kind == CHUNK:
            self.feed_chunk(ev.chunk, ev.n)

    def feed_chunk(self, chunk: Any, n: int) -> None:
        self.naive.feed(chunk, n)
        self.guarded.feed(chunk, n)
        self.robust.feed(chunk, n)
        if not isinstance(chunk, dict):
            self.find(
                "R-CHUNK-OBJECT",
                f"payload is a JSON {type(chunk).__name__}, not an object",
                event=n,
                pointer="",
                excerpt=chunk,
            )
            return
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
        delta = choice.get("delta")
        tcs = delta.get("tool_calls") if isinstance(delta, dict) else None
        if isinstance(tcs, list):
            ci = choice.get("index")
            key = ci if (self.n > 1 and isinstance(ci, int)) else 0
            for k, tc in enumerate(tcs):
                if isinstance(tc, dict):
                    self.any_tool_delta = True
                    self.feed_tool_delta(tc, key, f"{ptr}/delta/tool_calls/{k}", n, len(tcs))

    def feed_tool_delta(
        self, tc: dict[str, Any], key: int, ptr: str, n: int, siblings: int
    ) -> None:
        for detector in TOOL_DELTA_DETECTORS:
            detector(self, tc, key, ptr, n, siblings)

    # ------------------------------------------------------------------ end
    def finish(self) -> CaptureResult:
        for detector in END_DETECTORS:
            detector(self)
        turn = self.robust.turn()
        detected = set(self.findings)
        for w in turn.workarounds:  # the robust client's own findings, with their events
            if w.quirk in (
                "Q-SSE-ERROR-ENVELOPE",
                "Q-SSE-ERROR-IN-CHUNK",
                "Q-INDEX-ABSENT",
                "Q-INDEX-ALL-ZERO",
                "Q-NAME-FRAGMENTED",
            ):
                continue  # reported by their own detectors, with pointers
            if w.quirk == "Q-ARGS-TRUNCATED" and self.t.transport_error:
                continue  # the transport cut the stream: a consequence, not the server's quirk
            rule = WORKAROUND_RULE.get(w.quirk, w.quirk)
            if (rule, w.quirk) in detected:
                continue  # a detector reported it already, with its pointer
            self.find(rule, w.message, quirk=w.quirk, event=w.event)
        check_length_and_usage(self, turn)
        calls = {
            "naive": self.naive.calls(),
            "guarded": self.guarded.calls(),
            "robust": self.robust.calls(),
        }
        findings = [self.findings[k] for k in self.order]
        findings.sort(key=lambda f: (f.event if f.event is not None else 1 << 60, f.rule))
        impact = self._impact(turn, calls, findings)
        error = self._error_reason(turn)
        verdict = self._verdict(findings, turn, error)
        meta = {
            k: v
            for k, v in (
                ("model", self.model),
                ("system_fingerprint", sorted(self.fingerprints) or None),
                ("server", header(self.t.headers, "server")),
            )
            if v
        }
        return CaptureResult(
            self.t.source,
            verdict,
            findings,
            turn.finish_reason,
            calls,
            impact,
            self._rule_status(),
            error,
            turn,
            meta,
            self.events,
        )

    def _impact(
        self, turn: Turn, calls: dict[str, list[dict[str, Any]]], findings: list[Finding]
    ) -> dict[str, Impact]:
        want = [_call_key(c) for c in calls["robust"]]
        out: dict[str, Impact] = {}
        for name, strat in (("naive", self.naive), ("guarded", self.guarded)):
            if strat.crash:
                out[name] = Impact("crashed", strat.crash)
            elif [_call_key(c) for c in calls[name]] != want:
                out[name] = Impact("wrong", _diff_calls(calls[name], calls["robust"]))
            else:
                out[name] = Impact("ok")
        # Quirks whose calls are not on the wire at all (no delta, text only) leave even
        # the robust client nothing to assemble: it is not "ok" with zero calls.
        missing = {f.quirk for f in findings if f.quirk in UNRECOVERABLE}
        if turn.recoverable and not missing:
            out["robust"] = Impact("ok", "repaired arguments" if turn.repaired else "")
        else:
            lost = {w.quirk for w in turn.workarounds if not w.recovered} | missing
            why = ", ".join(sorted(lost))
            if not why:
                why = (
                    "error inside the stream"
                    if turn.error is not None
                    else "a call without a name or valid arguments"
                )
            out["robust"] = Impact("unrecoverable", why)
        return out

    def _error_reason(self, turn: Turn) -> str | None:
        if self.t.transport_error:
            return _one_line(self.t.transport_error)
        if self.t.status is not None and self.t.status != 200:
            return f"HTTP {self.t.status}: {_body_message(self.t.raw)}"
        if turn.error is not None:
            return "error inside the stream: " + _error_text(turn.error)
        f = self.findings.get(("R-SSE-CONTENT-TYPE", None))
        if f is not None and not self.t.framing and self.events == 0:
            return f.message
        return None

    def _verdict(self, findings: list[Finding], turn: Turn, error: str | None) -> str:
        if error:
            return "error"
        quirks = {f.quirk for f in findings if f.quirk}
        uncatalogued_must = any(f.level == MUST and not f.quirk for f in findings)
        if uncatalogued_must or not turn.recoverable or quirks & UNRECOVERABLE:
            return "fails"
        if any(f.quirk and f.level in (MUST, SHOULD) for f in findings):
            return "quirk"
        return "conforms"

    def _rule_status(self) -> dict[str, str]:
        """pass | fail | not applicable per rule: a rule the input cannot show is not judged."""
        req = self.req or {}
        has = {
            "framing": self.t.framing,
            "http": self.t.status is not None or self.t.transport_error is not None,
            "request": self.req is not None,
            "roundtrip": _is_roundtrip(self.req),
            "tool_calls": self.any_tool_delta,
            None: self.events > 0,  # chunk rules need a stream to judge
        }
        choice = req.get("tool_choice")
        special = {
            "R-SSE-CONTENT-TYPE": self.t.status is not None and bool(req.get("stream")),
            "R-ROUNDTRIP-ACCEPTED": has["roundtrip"] and self.t.status is not None,
            "R-USAGE": self.events > 0 and _usage_requested(req),
            "R-LENGTH-VISIBLE": self.length_judged,
            "R-TOOL-CHOICE": choice in ("none", "required") or isinstance(choice, dict),
            "R-PARALLEL-DISABLED": req.get("parallel_tool_calls") is False,
            "R-TOOL-DECLARED": bool(req.get("tools")) and self.any_tool_delta,
        }
        out = {}
        for rid, rule in RULES.items():
            ok = special[rid] if rid in special else has[rule.needs]
            out[rid] = "fail" if rid in self.failed_rules else ("pass" if ok else "not applicable")
        return out


WORKAROUND_RULE = {
    "Q-ARGS-TRUNCATED": "R-ARGS-JSON",
    "Q-ARGS-SERVER-PARSER-CORRUPTION": "R-ARGS-JSON",
    "Q-ARGS-DUPLICATED-ON-FLUSH": "R-ARGS-JSON",
    "Q-ARGS-CUMULATIVE": "R-ARGS-JSON",
    "Q-ARGS-JSON-OBJECT": "R-ARGS-STRING",
    "Q-INDEX-REUSED-ACROSS-CALLS": "R-INDEX-DISTINCT",
    "Q-INDEX-INCONSISTENT-WITHIN-CALL": "R-FIRST-NAME",
}
MAX_TOKENS_KEYS = ("max_tokens", "max_completion_tokens")


def _usage_requested(req: dict[str, Any]) -> bool:
    opts = req.get("stream_options")
    return bool(req.get("stream")) and isinstance(opts, dict) and opts.get("include_usage") is True


def check_length_and_usage(a: Analyzer, turn: Turn) -> None:
    """R-USAGE (usage asked, none came) and R-LENGTH-VISIBLE (a call cut under max_tokens
    must end with finish_reason "length"): both judged only when the request asks."""
    if a.req is None or a.events == 0 or a.error_seen or a.t.transport_error:
        return
    if _usage_requested(a.req) and turn.usage is None:
        a.find("R-USAGE", "stream_options.include_usage asked, no usage object arrived")
    if any(a.req.get(k) is not None for k in MAX_TOKENS_KEYS):
        cut = [c for c in turn.calls if c.repaired or not c.valid]
        if cut:
            a.length_judged = True
            if turn.finish_reason != "length":
                a.find(
                    "R-LENGTH-VISIBLE",
                    f"call {cut[0].index}'s arguments are cut but finish_reason is "
                    f'{turn.finish_reason!r}, not "length"',
                    quirk="Q-ARGS-TRUNCATED" if cut[0].repaired else None,
                )


def _is_roundtrip(req: dict[str, Any] | None) -> bool:
    msgs = (req or {}).get("messages")
    return isinstance(msgs, list) and any(
        isinstance(m, dict) and m.get("role") == "tool" for m in msgs
    )


def _call_key(c: dict[str, Any]) -> tuple[str, str, str]:
    args = c.get("arguments")
    try:
        norm = json.dumps(json.loads(args), sort_keys=True)
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


def _one_line(text: str) -> str:
    """Server text quoted in a message or a reason: one line (whitespace runs collapsed)."""
    return " ".join(text.split())


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        msg = err.get("message") or err.get("msg") or json.dumps(err)[:120]
        return _one_line(str(msg))[:200]
    return _one_line(str(err))[:200]


def _body_message(raw: bytes | None) -> str:
    if not raw:
        return "(empty body)"
    text = raw[:4000].decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        first = " ".join(text.split())[:120]
        return first or "(empty body)"
    if isinstance(data, dict) and "error" in data:
        return _error_text(data["error"])
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return _one_line(data["message"])[:200]
    return _excerpt(data, 120)


# =============================================================================== detectors
# Each detector is a small function registered for one hook. The docstring names the
# catalogue ids it reports. Hooks: chunk(a, chunk, n), choice(a, choice, ptr, n),
# tool delta(a, tc, key, ptr, n, siblings), end(a).

CHUNK_DETECTORS: list[Any] = []
CHOICE_DETECTORS: list[Any] = []
TOOL_DELTA_DETECTORS: list[Any] = []
END_DETECTORS: list[Any] = []


def _register(table: list[Any]) -> Any:
    def deco(fn: Any) -> Any:
        table.append(fn)
        return fn

    return deco


# ---- group A: framing


def detect_comment_keepalive(a: Analyzer, ev: Event) -> None:
    """Q-SSE-COMMENT-KEEPALIVE: SSE comment lines between events."""
    a.find(
        "Q-SSE-COMMENT-KEEPALIVE",
        f"SSE comment line ': {ev.data[:60]}'",
        event=ev.n,
        excerpt=": " + ev.data,
    )


def detect_nonjson_payload(a: Analyzer, ev: Event) -> None:
    """Q-SSE-KEEPALIVE-AS-DATA: a `data:` payload starting with ':'; else R-SSE-DATA-JSON."""
    if ev.data.lstrip().startswith(":"):
        a.find(
            "R-SSE-DATA-JSON",
            "keep-alive sent as a data event with a non-JSON payload",
            quirk="Q-SSE-KEEPALIVE-AS-DATA",
            event=ev.n,
            excerpt="data: " + ev.data,
        )
    else:
        a.find(
            "R-SSE-DATA-JSON", "data payload is not JSON", event=ev.n, excerpt="data: " + ev.data
        )


@_register(END_DETECTORS)
def detect_done_missing(a: Analyzer) -> None:
    """Q-SSE-DONE-MISSING: a framed stream that ends without `data: [DONE]` (not after an
    error: even OpenAI sends none after Q-SSE-ERROR-ENVELOPE)."""
    if a.error_seen:
        return  # the stream ended with an error; no [DONE] follows one (catalogue A)
    if a.t.framing and a.events and not a.done_seen and a.t.transport_error is None:
        a.find(
            "R-SSE-DONE",
            "stream ended without data: [DONE]",
            quirk="Q-SSE-DONE-MISSING",
            event=a.events - 1,
        )


@_register(END_DETECTORS)
def detect_http_level(a: Analyzer) -> None:
    """Q-STREAM-TOOLS-UNSUPPORTED, Q-STREAM-OPTIONS-REJECTED, Q-STREAM-DOWNGRADED; R-HTTP-OK."""
    t = a.t
    if t.transport_error:
        a.find("R-COMPLETE", t.transport_error, quirk=t.meta.get("transport_quirk"))
    if t.status is not None and t.status != 200:
        msg = _body_message(t.raw)
        low = msg.lower()
        quirk = None
        if (
            a.req
            and a.req.get("stream")
            and a.req.get("tools")
            and ("tools" in low and "stream" in low or "unsupported param: tools" in low)
        ):
            quirk = "Q-STREAM-TOOLS-UNSUPPORTED"
        elif t.status == 400 and ("stream_options" in low or "include_usage" in low):
            quirk = "Q-STREAM-OPTIONS-REJECTED"
        a.find("R-HTTP-OK", f"HTTP {t.status}: {msg}", quirk=quirk)
        return
    if t.framing or t.raw is None or t.status is None:
        return
    ctype = (t.content_type or "(none)").split(";")[0]
    if not (a.req and a.req.get("stream")):
        return
    try:
        body = json.loads(t.raw)
    except ValueError:
        a.find(
            "R-SSE-CONTENT-TYPE",
            f"stream requested; got {ctype} that is neither SSE nor JSON: {_body_message(t.raw)}",
        )
        return
    if (
        isinstance(body, dict)
        and isinstance(body.get("choices"), list)
        and body["choices"]
        and isinstance(body["choices"][0], dict)
        and "message" in body["choices"][0]
    ):
        a.find(
            "R-SSE-CONTENT-TYPE",
            f"stream requested; answered with one {ctype} completion",
            quirk="Q-STREAM-DOWNGRADED",
            excerpt=body,
        )
        # The catalogue's workaround: read the completion as if it had been streamed.
        a.robust.feed(completion_as_chunk(body), 0)
    elif isinstance(body, dict) and "error" in body:
        a.robust.feed({"error": body["error"]}, 0)
        a.find(
            "R-NO-ERROR",
            "200 with a JSON error body: " + _error_text(body["error"]),
            quirk="Q-SSE-ERROR-ENVELOPE",
        )
    else:
        a.find("R-SSE-CONTENT-TYPE", f"stream requested; got {ctype}", excerpt=body)


# ---- group A/B: chunk envelope


@_register(CHUNK_DETECTORS)
def detect_error_in_stream(a: Analyzer, chunk: dict[str, Any], n: int) -> None:
    """Q-SSE-ERROR-ENVELOPE (bare {"error":…}), Q-SSE-ERROR-IN-CHUNK (chunk-shaped error)."""
    if chunk.get("error") is None:
        return
    a.error_seen = True
    quirk = "Q-SSE-ERROR-ENVELOPE" if "choices" not in chunk else "Q-SSE-ERROR-IN-CHUNK"
    a.find(
        "R-NO-ERROR",
        "error inside the stream: " + _error_text(chunk["error"]),
        quirk=quirk,
        event=n,
        pointer="/error",
        excerpt=chunk,
    )


@_register(CHUNK_DETECTORS)
def detect_empty_choices(a: Analyzer, chunk: dict[str, Any], n: int) -> None:
    """Q-USAGE-EMPTY-CHOICES (reference), Q-AZURE-PROMPT-FILTER-CHUNK, Q-EMPTY-DELTA-CHUNKS."""
    choices = chunk.get("choices")
    if isinstance(choices, list) and choices:
        return
    if chunk.get("error") is not None:
        return
    if isinstance(chunk.get("usage"), dict):
        a.find(
            "Q-USAGE-EMPTY-CHOICES",
            "usage chunk without choices (documented reference "
            "behaviour; `choices[0]` crashes naive clients)",
            event=n,
            pointer="/choices",
            excerpt=chunk,
        )
    elif AZURE_FILTER_KEYS & chunk.keys():
        a.find(
            "Q-AZURE-PROMPT-FILTER-CHUNK",
            "chunk with empty choices carrying prompt filter results",
            event=n,
            pointer="/choices",
            excerpt=chunk,
        )
    else:
        _empty_delta(a, n)


@_register(CHUNK_DETECTORS)
def detect_envelope(a: Analyzer, chunk: dict[str, Any], n: int) -> None:
    """Q-ENVELOPE-FIELDS-MISSING, Q-CHUNK-ID-UNSTABLE, Q-USAGE-PLACEMENT, Q-EXTRA-FIELDS."""
    choices = chunk.get("choices")
    if isinstance(chunk.get("usage"), dict):
        a.usage_chunks += 1
        if isinstance(choices, list) and choices:
            a.find(
                "Q-USAGE-PLACEMENT",
                "usage on a chunk that also carries choices",
                event=n,
                pointer="/usage",
                excerpt=chunk.get("usage"),
            )
        elif a.usage_chunks > 1:
            a.find(
                "Q-USAGE-PLACEMENT", "usage sent in more than one chunk", event=n, pointer="/usage"
            )
    if isinstance(chunk.get("model"), str) and chunk["model"] and a.model is None:
        a.model = chunk["model"]
    fp = chunk.get("system_fingerprint")
    if isinstance(fp, str) and fp and len(a.fingerprints) < 8:
        a.fingerprints.add(fp)
    if chunk.get("error") is not None:
        return  # judged by detect_error_in_stream
    for k in chunk:
        if k not in CHUNK_KEYS and k not in AZURE_FILTER_KEYS:
            a.extra_fields.setdefault(k, n)  # e.g. Azure latency_checkpoint, llama.cpp timings
    if not (isinstance(choices, list) and choices):
        return  # metadata chunks (usage, Azure filter) are judged by their own detectors
    missing = [k for k in ("id", "object", "created", "model") if chunk.get(k) in (None, "")]
    if missing:
        a.find(
            "Q-ENVELOPE-FIELDS-MISSING",
            "chunk without " + ", ".join(missing),
            event=n,
            pointer="/" + missing[0],
        )
    cid = chunk.get("id")
    if isinstance(cid, str) and cid:
        if a.chunk_id is None:
            a.chunk_id = cid
        elif cid != a.chunk_id:
            a.find(
                "Q-CHUNK-ID-UNSTABLE",
                f"chunk id changed from {a.chunk_id!r} to {cid!r}",
                event=n,
                pointer="/id",
            )


@_register(CHOICE_DETECTORS)
def detect_choice_shape(a: Analyzer, choice: dict[str, Any], ptr: str, n: int) -> None:
    """Q-AZURE-CHOICE-WITHOUT-DELTA, Q-ENVELOPE-FIELDS-MISSING (choice index, finish key,
    role null), Q-CHUNK-ID-UNSTABLE (choice index moves with n=1), Q-EXTRA-FIELDS,
    Q-TOOLCALLS-EMPTY-ARRAY, Q-EMPTY-DELTA-CHUNKS."""
    delta = choice.get("delta")
    if "delta" not in choice or not isinstance(delta, dict):
        a.find(
            "Q-AZURE-CHOICE-WITHOUT-DELTA",
            "choice without a delta object",
            event=n,
            pointer=ptr,
            excerpt=choice,
        )
        delta = {}
    missing = [k for k in ("index", "finish_reason") if k not in choice]
    if "role" in delta and delta["role"] is None:
        missing.append("delta.role (null)")
    if missing:
        a.find(
            "Q-ENVELOPE-FIELDS-MISSING",
            "choice without " + ", ".join(missing),
            event=n,
            pointer=ptr,
        )
    ci = choice.get("index")
    if a.n <= 1 and isinstance(ci, int) and ci != 0:
        a.find(
            "Q-CHUNK-ID-UNSTABLE",
            f"choice index {ci} in a single-choice stream",
            event=n,
            pointer=ptr + "/index",
        )
    for k in choice:
        if k not in CHOICE_KEYS and k != "finishReason":
            a.extra_fields.setdefault("choice." + k, n)
    for k in delta:
        if k not in DELTA_KEYS and k not in REASONING_FIELDS:
            a.extra_fields.setdefault("delta." + k, n)
    for tc in _list(delta.get("tool_calls")):
        if isinstance(tc, dict):
            for k in tc:
                if k not in TOOL_CALL_KEYS:
                    a.extra_fields.setdefault("tool_call." + k, n)
    if delta.get("tool_calls") == []:
        a.find(
            "Q-TOOLCALLS-EMPTY-ARRAY",
            "`tool_calls: []` on a delta",
            event=n,
            pointer=ptr + "/delta/tool_calls",
        )
    carries = [k for k, v in delta.items() if k != "role" and v not in (None, "", [], {})]
    if not carries and choice.get("finish_reason") in (None, "") and "finishReason" not in choice:
        if not (delta.get("role") and a.chunk_ordinal == 0):
            _empty_delta(a, n)


def _empty_delta(a: Analyzer, n: int) -> None:
    a.empty_deltas += 1
    if a.first_empty_delta is None:
        a.first_empty_delta = n


@_register(CHOICE_DETECTORS)
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


@_register(CHOICE_DETECTORS)
def detect_content_and_reasoning(a: Analyzer, choice: dict[str, Any], ptr: str, n: int) -> None:
    """Q-REASONING-SAME-DELTA, Q-REASONING-LEAK-AT-FINISH; collects content for group H."""
    delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
    reasoning = any(delta.get(k) not in (None, "", []) for k in REASONING_FIELDS)
    content = delta.get("content")
    if reasoning:
        if delta.get("tool_calls"):
            a.find(
                "Q-REASONING-SAME-DELTA",
                "reasoning and tool_calls in one delta",
                event=n,
                pointer=ptr + "/delta",
            )
        a.reasoning_seen = True
    if _nonempty(content):
        if sum(len(c) for c in a.content) < 200_000:
            a.content.append(content)
        if a.first_markup_event is None and TOOL_MARKUP.search(content):
            a.first_markup_event = n
        if a.reasoning_seen and choice.get("finish_reason") == "tool_calls":
            a.find(
                "Q-REASONING-LEAK-AT-FINISH",
                "content text on the tool_calls finish chunk after reasoning",
                event=n,
                pointer=ptr + "/delta/content",
                excerpt=content,
            )


# ---- groups C, D, E, F: the tool-call deltas


@_register(TOOL_DELTA_DETECTORS)
def detect_tool_delta(
    a: Analyzer, tc: dict[str, Any], key: int, ptr: str, n: int, siblings: int
) -> None:
    """R-INDEX-PRESENT, R-FIRST-*, R-CONT-*; Q-ID-ABSENT, Q-TYPE-MISSING, Q-EMPTY-STRING-OVERWRITE,
    Q-ID-REPEATED, Q-ID-CHANGES-MID-CALL, Q-INDEX-ALL-ZERO, Q-INDEX-REUSED-ACROSS-CALLS,
    Q-NAME-REPEATED, Q-NAME-FRAGMENTED, Q-ARGS-WHOLE-IN-ONE-DELTA, Q-ARGS-ON-OPENING-DELTA,
    Q-ID-FORMAT, Q-OPENAI-MULTI-TOOL-USE-WRAPPER, Q-INDEX-NONZERO-START,
    Q-INDEX-INCONSISTENT-WITHIN-CALL."""
    fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
    idx = tc.get("index")
    tid, name, args = tc.get("id"), fn.get("name"), fn.get("arguments")
    if _nonempty(name) and name == "multi_tool_use.parallel":
        a.find(
            "Q-OPENAI-MULTI-TOOL-USE-WRAPPER",
            "call to the synthetic multi_tool_use.parallel",
            event=n,
            pointer=ptr + "/function/name",
        )
    if _nonempty(tid) and not OPENAI_ID.fullmatch(tid):
        a.find(
            "Q-ID-FORMAT",
            f"tool-call id {tid!r} is not OpenAI's call_… shape",
            event=n,
            pointer=ptr + "/id",
            excerpt=tid,
        )
    if siblings >= 2 and ptr.endswith("/tool_calls/0"):  # once per delta, not per call
        a.find(
            "Q-ARGS-WHOLE-IN-ONE-DELTA",
            f"{siblings} tool calls in one delta",
            event=n,
            pointer=ptr.rsplit("/", 1)[0],
        )
    if type(idx) is not int:
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
        return
    st = a.indexes.get((key, idx))
    if st is None:
        _open_index(a, tc, key, idx, ptr, n)
        return
    # A continuation delta on an index already opened.
    st.deltas += 1
    has_name = _nonempty(name)
    if "id" in tc and tid is not None:
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
        elif tid == st.id:
            a.find(
                "R-CONT-ID-ABSENT",
                "the call's id repeated on a continuation delta",
                quirk="Q-ID-REPEATED",
                event=n,
                pointer=ptr + "/id",
                excerpt=tc,
            )
        elif has_name:
            quirk = "Q-INDEX-ALL-ZERO" if idx == 0 else "Q-INDEX-REUSED-ACROSS-CALLS"
            a.find(
                "R-INDEX-DISTINCT",
                f"a new call (id {tid!r}) reuses index {idx}",
                quirk=quirk,
                event=n,
                pointer=ptr + "/index",
                excerpt=tc,
            )
            a.indexes[(key, idx)] = _IndexState(n, ptr)
            a.indexes[(key, idx)].id, a.indexes[(key, idx)].name = tid, name
            a.indexes[(key, idx)].opener_name = "value"
            return
        else:
            a.find(
                "R-CONT-ID-ABSENT",
                f"the id changed to {tid!r} within the call",
                quirk="Q-ID-CHANGES-MID-CALL",
                event=n,
                pointer=ptr + "/id",
                excerpt=tc,
            )
    if "type" in tc and tc["type"] is not None:
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
    if "name" in fn and name is not None:
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
            if _nonempty(args) and args.lstrip().startswith("{") and not _nonempty(tid):
                pass  # judged at the end: an id-less second call on the same index
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
                f"the name continued with {name!r}",
                quirk="Q-NAME-FRAGMENTED",
                event=n,
                pointer=ptr + "/function/name",
                excerpt=tc,
            )
    if _nonempty(args) and not st.name:
        st.args_before_name = True
    if args is not None and not isinstance(args, str):
        _args_not_a_string(a, tc, args, ptr, n)


def _args_not_a_string(a: Analyzer, tc: dict[str, Any], args: Any, ptr: str, n: int) -> None:
    """Q-ARGS-JSON-OBJECT: `arguments` sent as a JSON value, on an opener or a continuation."""
    a.find("R-ARGS-STRING", "arguments is a JSON " + type(args).__name__,
           quirk="Q-ARGS-JSON-OBJECT", event=n, pointer=ptr + "/function/arguments",
           excerpt=tc)


def _open_index(a: Analyzer, tc: dict[str, Any], key: int, idx: int, ptr: str, n: int) -> None:
    fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
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
            "no id" if "id" not in tc or tid is None else f"id {tid!r}",
        )
        st.split_suspect = (
            not _nonempty(name)
            and _nonempty(args)
            and any(k == key for (k, _) in a.indexes if (k, _) != (key, idx))
        )
    found = st.deferred if st.split_suspect else None

    def find(rule: str, message: str, **kw: Any) -> None:
        if found is None:
            a.find(rule, message, event=n, **kw)
        else:
            found.append((rule, message, kw))

    if tc.get("type") != "function":
        find(
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
        find(
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
            find(
                "Q-ARGS-WHOLE-IN-ONE-DELTA",
                "id, name and complete arguments in one delta",
                pointer=ptr,
                excerpt=tc,
            )
        else:
            find(
                "Q-ARGS-ON-OPENING-DELTA",
                "the opening delta carries an argument fragment",
                pointer=ptr + "/function/arguments",
                excerpt=tc,
            )


@_register(END_DETECTORS)
def detect_names_at_end(a: Analyzer) -> None:
    """Q-NAME-EMPTY-OPENING-DELTA, Q-NAME-AFTER-ARGUMENTS, Q-ID-ABSENT,
    Q-INDEX-INCONSISTENT-WITHIN-CALL; R-FIRST-NAME, R-FIRST-ID."""
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
                event=st.first_event,
                pointer=st.ptr + "/function/name",
            )


@_register(END_DETECTORS)
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


@_register(END_DETECTORS)
def detect_indexless_shape(a: Analyzer) -> None:
    """Q-INDEX-ABSENT-WHOLE-CALL, Q-INDEX-ABSENT-PARALLEL-SPLIT (finer ids of Q-INDEX-ABSENT)."""
    if not a.indexless:
        return

    def whole(tc: dict[str, Any]) -> bool:
        fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
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


# ---- group G/H/K at the end


@_register(END_DETECTORS)
def detect_finish_at_end(a: Analyzer) -> None:
    """Q-FINISH-NEVER-SENT, Q-FINISH-STOP-WITH-TOOLCALLS, Q-FINISH-STOP-NAMED-TOOLCHOICE,
    Q-FINISH-TOOLCALLS-WITHOUT-DELTAS; R-LENGTH-CUT."""
    if a.error_seen or a.t.transport_error or (a.t.status not in (None, 200)):
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


@_register(END_DETECTORS)
def detect_calls_outside_tool_calls(a: Analyzer) -> None:
    """Q-TOOLCALL-AS-TEXT, Q-TOOLCALL-DUPLICATED-IN-CONTENT, Q-TOOLCALLS-MISSING-IN-STREAM."""
    calls = a.robust.turn().calls
    if (a.req or {}).get("tool_choice") == "none" and not calls:
        return  # no call was wanted: whatever the model wrote is just text
    if a.first_markup_event is not None:
        if calls:
            a.find(
                "Q-TOOLCALL-DUPLICATED-IN-CONTENT",
                "tool-call markup in content next to structured tool_calls",
                event=a.first_markup_event,
            )
        else:
            a.find(
                "R-TOOLCALLS-STRUCTURED",
                "a tool call streamed as content text",
                quirk="Q-TOOLCALL-AS-TEXT",
                event=a.first_markup_event,
                excerpt="".join(a.content)[:160],
            )
        return
    choice = (a.req or {}).get("tool_choice")
    forced = choice == "required" or isinstance(choice, dict)
    if (
        forced
        and not calls
        and not a.error_seen
        and (a.t.status in (None, 200))
        and not a.t.transport_error
        and a.events
    ):
        a.find(
            "R-TOOL-CHOICE",
            f"tool_choice {_excerpt(choice, 60)} but no tool call streamed",
            quirk="Q-TOOLCALLS-MISSING-IN-STREAM",
        )


@_register(END_DETECTORS)
def detect_request_semantics(a: Analyzer) -> None:
    """Q-PARALLEL-TOOL-CALLS-IGNORED; R-TOOL-CHOICE (none / named); R-TOOL-DECLARED."""
    if a.req is None:
        return
    calls = a.robust.turn().calls
    declared = {(t.get("function") or {}).get("name") for t in a.req.get("tools") or []
                if isinstance(t, dict) and isinstance(t.get("function"), dict)}
    unknown = [c.name for c in calls if c.name and declared and c.name not in declared
               and c.name != "multi_tool_use.parallel"]  # that one has its own quirk
    if unknown:
        a.find("R-TOOL-DECLARED", f"the model called {unknown[0]!r}, which the request does "
               "not declare")
    if a.req.get("parallel_tool_calls") is False and len(calls) > 1:
        a.find(
            "R-PARALLEL-DISABLED",
            f"{len(calls)} calls although parallel_tool_calls is false",
            quirk="Q-PARALLEL-TOOL-CALLS-IGNORED",
        )
    choice = a.req.get("tool_choice")
    if choice == "none" and calls:
        a.find("R-TOOL-CHOICE", 'tool_choice "none" but a tool call was streamed')
    if isinstance(choice, dict):
        want = (choice.get("function") or {}).get("name")
        wrong = [c.name for c in calls if c.name != want]
        if want and wrong:
            a.find("R-TOOL-CHOICE", f"named tool_choice {want!r} but called {wrong[0]!r}")


@_register(END_DETECTORS)
def detect_collected(a: Analyzer) -> None:
    """Q-EXTRA-FIELDS (reference `obfuscation` is INFO too), Q-EMPTY-DELTA-CHUNKS."""
    if a.extra_fields:
        names = sorted(a.extra_fields)
        ev = min(a.extra_fields.values())
        only_ref = set(names) <= REFERENCE_EXTRA
        a.find(
            "Q-EXTRA-FIELDS",
            ("OpenAI's own extra field: " if only_ref else "non-standard fields: ")
            + ", ".join(names[:12]),
            event=ev,
            level=INFO,
        )
    if a.empty_deltas >= 2:
        a.find(
            "Q-EMPTY-DELTA-CHUNKS",
            f"{a.empty_deltas} chunks carry nothing",
            event=a.first_empty_delta,
        )


@_register(END_DETECTORS)
def detect_roundtrip(a: Analyzer) -> None:
    """R-ROUNDTRIP-IDS, R-ROUNDTRIP-ACCEPTED; Q-RT-MISTRAL-TOOL-CALL-ID,
    Q-RT-GEMINI-THOUGHT-SIGNATURE, Q-RT-FUNCTION-NAME-KEY-REQUIRED, Q-REASONING-MUST-BE-ECHOED,
    Q-RT-CONTENT-NULL-REJECTED, Q-RT-CONTENT-EMPTY-REJECTED, Q-RT-TOOL-MESSAGE-NAME from the
    provider's rejection text."""
    if not _is_roundtrip(a.req):
        return
    assert a.req is not None
    ids: set[str] = set()
    for m in a.req.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "assistant":
            for tc in m.get("tool_calls") or []:
                if isinstance(tc, dict) and isinstance(tc.get("id"), str):
                    ids.add(tc["id"])
    for m in a.req.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id") not in ids:
            a.find("R-ROUNDTRIP-IDS", f"tool result for unknown id {m.get('tool_call_id')!r}")
    if a.t.status is not None and a.t.status != 200:
        low = _body_message(a.t.raw).lower()
        quirk = None
        if "tool call id" in low and "9" in low:
            quirk = "Q-RT-MISTRAL-TOOL-CALL-ID"
        elif "thought_signature" in low or "thought signature" in low:
            quirk = "Q-RT-GEMINI-THOUGHT-SIGNATURE"
        elif "missing field" in low and "name" in low:
            quirk = "Q-RT-FUNCTION-NAME-KEY-REQUIRED"
        elif "reasoning_content" in low:
            quirk = "Q-REASONING-MUST-BE-ECHOED"
        elif "content" in low and ("null" in low or "<nil>" in low or "must be a string" in low):
            quirk = "Q-RT-CONTENT-NULL-REJECTED"
        elif "content" in low and ("empty" in low or "non-empty" in low):
            quirk = "Q-RT-CONTENT-EMPTY-REJECTED"
        elif "name" in low and ("tool" in low or "function_response" in low):
            quirk = "Q-RT-TOOL-MESSAGE-NAME"
        a.find("R-ROUNDTRIP-ACCEPTED", f"round trip rejected: HTTP {a.t.status}", quirk=quirk)


# =============================================================================== entry points


def analyze(transcript: Transcript) -> CaptureResult:
    """The one pipeline: every door (pytest, CLI, report) goes through here."""
    a = Analyzer(transcript)
    for ev in transcript.events():
        a.feed(ev)
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
    from conformance.readers import exchange_transcript

    req = {"body": request} if request is not None else None
    hdrs = headers if headers is not None else {"content-type": "text/event-stream"}
    return analyze(exchange_transcript(source, "sse", req, status, hdrs, raw))


__all__ = [
    "Analyzer",
    "CaptureResult",
    "Finding",
    "Impact",
    "InputError",
    "analyze",
    "analyze_bytes",
    "analyze_chunks",
    "analyze_events",
]
