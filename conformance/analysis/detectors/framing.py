"""Group A, framing: SSE comments, non-JSON payloads, [DONE], the HTTP level.

Q-SSE-COMMENT-KEEPALIVE, Q-SSE-KEEPALIVE-AS-DATA, Q-SSE-DONE-MISSING,
Q-STREAM-TOOLS-UNSUPPORTED, Q-STREAM-OPTIONS-REJECTED, Q-STREAM-DOWNGRADED,
Q-SSE-ERROR-ENVELOPE (a 200 JSON error body); an empty or cut 200 body (an error, no quirk).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from conformance import registry
from conformance.analysis.common import _body_message, _error_text
from conformance.client import completion_as_chunk
from conformance.registry import detector
from conformance.transcript import Event

if TYPE_CHECKING:
    from conformance.analysis.analyzer import Analyzer


def detect_comment_keepalive(a: Analyzer, ev: Event) -> None:
    """Q-SSE-COMMENT-KEEPALIVE: SSE comment lines between events."""
    a.find(
        "Q-SSE-COMMENT-KEEPALIVE",
        f"SSE comment line ': {ev.data[:60]}'",
        event=ev.n,
        excerpt=": " + ev.data,
    )


detector(detect_comment_keepalive, "comment", reports=("Q-SSE-COMMENT-KEEPALIVE",))


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


detector(detect_nonjson_payload, "nonjson", reports=("Q-SSE-KEEPALIVE-AS-DATA",))


def body_cut(a: Analyzer) -> tuple[str, int | None, None] | None:
    """A body fact (the analyzer's pre-pass, ``a.body_cut``): a 200 SSE body with no event
    at all, or one that ends inside an event with no finish_reason before it (with n > 1:
    while a choice has none): the server closed the stream after its headers or
    mid-answer (a crash, not a way of streaming). The cell is an `error` with this reason
    (R-COMPLETE), and the end-of-stream quirks (Q-FINISH-NEVER-SENT, Q-SSE-DONE-MISSING)
    are not reported on it. A body that ends on an event boundary without a finish_reason
    stays Q-FINISH-NEVER-SENT: some servers stream that way on purpose (catalogue G).
    Returns (reason, event, pointer) or None."""
    t = a.t
    if t.transport_error or a.error_seen or t.status not in (None, 200) or not t.framing:
        return None
    if a.done_seen:  # (nearly every stream: before the list below)
        return None
    unfinished = a.choices.unfinished()  # with n > 1 one choice may end while another is cut
    if a.finish_seen_at is not None and not unfinished:
        return None
    if a.events == 0:
        size = len(t.raw) if t.raw is not None else None
        what = "an empty body" if not size else f"{size} bytes and no event"
        reason = (
            f"HTTP 200 with {what}: the server closed the stream after its "
            "headers, before any event"
        )
    elif a.cut_inside_event:
        which = f" for choice {unfinished[0].key}" if a.finish_seen_at is not None else ""
        reason = (
            f"HTTP 200 body cut inside an event after {a.events - 1} event(s), "
            f"with no finish_reason{which}: the server closed the stream mid-answer"
        )
    else:
        return None
    return reason, a.events - 1 if a.events else None, None


_NOT_JSON = object()  # a.plain_body of a body that does not parse


def read_plain_body(a: Analyzer) -> None:
    """A body fact (the analyzer's pre-pass): a streamed request answered 200 with a body
    that is not SSE is parsed once (``a.plain_body``), and what the robust client makes
    of it is fed to it (the catalogue's workaround for Q-STREAM-DOWNGRADED: read the
    completion as if it had been streamed; a JSON error body is an error in the stream)."""
    t = a.t
    if t.framing or t.raw is None or t.status != 200 or not (a.req and a.req.get("stream")):
        return
    try:
        body = json.loads(t.raw)
    except ValueError:
        a.plain_body = _NOT_JSON
        return
    a.plain_body = body
    if _is_completion(body):
        a.robust.feed(completion_as_chunk(body), 0)
    elif isinstance(body, dict) and "error" in body:
        a.robust.feed({"error": body["error"]}, 0)


def _is_completion(body: Any) -> bool:
    return (
        isinstance(body, dict)
        and isinstance(body.get("choices"), list)
        and bool(body["choices"])
        and isinstance(body["choices"][0], dict)
        and "message" in body["choices"][0]
    )


def detect_done_missing(a: Analyzer) -> None:
    """Q-SSE-DONE-MISSING: a framed stream that ends without `data: [DONE]` (not after an
    error: even OpenAI sends none after Q-SSE-ERROR-ENVELOPE)."""
    if a.error_seen or a.body_cut:
        return  # the stream ended with an error; no [DONE] follows one (catalogue A)
    if a.t.framing and a.events and not a.done_seen and a.t.transport_error is None:
        a.find(
            "R-SSE-DONE",
            "stream ended without data: [DONE]",
            quirk="Q-SSE-DONE-MISSING",
            event=a.events - 1,
        )


detector(detect_done_missing, "end", reports=("Q-SSE-DONE-MISSING",))


def detect_http_level(a: Analyzer) -> None:
    """Q-STREAM-TOOLS-UNSUPPORTED, Q-STREAM-OPTIONS-REJECTED, Q-STREAM-DOWNGRADED; R-HTTP-OK;
    Q-KEEPALIVE-DROPPED (the transport sent the request again on a new connection)."""
    t = a.t
    if t.meta.get("connection_retry"):
        a.find("Q-KEEPALIVE-DROPPED", str(t.meta["connection_retry"]))
    if t.transport_error:
        quirk = t.meta.get("transport_quirk")  # from the transport, or a cassette's header
        known = quirk if quirk in registry.specs() else None  # a forged header names none
        a.find("R-COMPLETE", t.transport_error, quirk=known)
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
    body = a.plain_body  # parsed (and read by the robust client) in the pre-pass
    if body is _NOT_JSON:
        a.find(
            "R-SSE-CONTENT-TYPE",
            f"stream requested; got {ctype} that is neither SSE nor JSON: {_body_message(t.raw)}",
        )
    elif _is_completion(body):
        a.find(
            "R-SSE-CONTENT-TYPE",
            f"stream requested; answered with one {ctype} completion",
            quirk="Q-STREAM-DOWNGRADED",
            excerpt=body,
        )
    elif isinstance(body, dict) and "error" in body:
        a.find(
            "R-NO-ERROR",
            "200 with a JSON error body: " + _error_text(body["error"]),
            quirk="Q-SSE-ERROR-ENVELOPE",
        )
    else:
        a.find("R-SSE-CONTENT-TYPE", f"stream requested; got {ctype}", excerpt=body)


detector(
    detect_http_level,
    "end",
    reports=(
        "Q-STREAM-TOOLS-UNSUPPORTED",
        "Q-STREAM-OPTIONS-REJECTED",
        "Q-STREAM-DOWNGRADED",
        "Q-SSE-ERROR-ENVELOPE",
        "Q-KEEPALIVE-DROPPED",
        "Q-STREAM-STALLS",
    ),
)
