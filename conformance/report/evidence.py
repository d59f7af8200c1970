"""Trim a transcript's events to the wire around the findings (the cell's `evidence`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

MAX_DATA = 400  # characters of one event's payload kept in the matrix
MAX_EVENTS = 12  # events kept per cell


def trim(text: str, limit: int = MAX_DATA) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def evidence_from_events(
    events: Iterable[Any],
    findings: Iterable[dict[str, Any]],
    *,
    context: int = 1,
    limit: int = MAX_EVENTS,
) -> list[dict[str, Any]]:
    """The events at the findings' positions (highlighted) and `context` events either side.

    `events` are ``conformance.transcript.Event`` objects (or anything with ``n``, ``kind``
    and ``data``); the iterable is consumed once, so a lazy transcript is fine. Highlighted
    events are kept first when more than `limit` would be kept.
    """
    marked = sorted({f["event"] for f in findings if f.get("event") is not None})
    if not marked:
        return []
    wanted = {n + d for n in marked for d in range(-context, context + 1) if n + d >= 0}
    hot = set(marked)
    kept: list[dict[str, Any]] = []
    last = max(wanted)
    for ev in events:
        if ev.n > last:
            break
        if ev.n in wanted:
            item: dict[str, Any] = {"n": ev.n, "kind": ev.kind, "data": trim(ev.data or "")}
            if ev.n in hot:
                item["highlight"] = True
            kept.append(item)
    if len(kept) > limit:
        hot_items = [e for e in kept if e.get("highlight")][:limit]
        room = limit - len(hot_items)
        cold = [e for e in kept if not e.get("highlight")][:room]
        kept = sorted(hot_items + cold, key=lambda e: e["n"])
    return kept


KEEP = 4096  # of a long string's ends kept for the evidence: more than MAX_DATA characters


def evidence_events(t: Any) -> Iterable[Any]:
    """A live transcript's events as ``evidence_from_events`` needs them: the same
    numbering, kinds and first ``MAX_DATA`` characters of each payload, parsed from its
    body with every long string literal of a long data line cut to its ends
    (``secrets.shorten_strings``), so that an event made of an 8 MiB tool name is not
    parsed whole again beside what the analysis keeps of it. Another transcript, a body
    with no long line, or one where an event may be over ``MAX_EVENT_BYTES`` (a cut
    could turn that fault into a chunk) is read as the analysis read it."""
    from conformance.sse import MAX_EVENT_BYTES, iter_sse

    raw = t.raw
    if t.fmt != "live" or not t.framing or raw is None or not any(_long_lines(raw)):
        return t.events()
    if len(raw) > MAX_EVENT_BYTES and _widest_event(raw) > MAX_EVENT_BYTES:
        return t.events()
    return iter_sse(_shortened(raw))


def _widest_event(raw: bytes) -> int:
    """The most bytes between two blank lines: no event holds more."""
    from conformance.secrets import BLANK_B

    widest, pos = 0, 0
    for m in BLANK_B.finditer(raw):
        widest, pos = max(widest, m.start() - pos), m.end()
    return max(widest, len(raw) - pos)


def _long_lines(raw: bytes) -> Iterator[tuple[int, int]]:
    """Where each ``data:`` line longer than ``secrets.LONG_LINE`` has its value."""
    from conformance.secrets import DATA_LINE_B, LONG_LINE

    for m in DATA_LINE_B.finditer(raw):
        if m.end() - m.start() - 5 > LONG_LINE:
            yield m.start() + 5, m.end()


def _shortened(raw: bytes) -> Iterator[Any]:
    """The body as blocks (views, no copy), its long lines' long strings cut."""
    from conformance.secrets import shorten_strings

    view, pos = memoryview(raw), 0
    for start, end in _long_lines(raw):
        yield view[pos:start]
        yield from shorten_strings(raw, start, end, KEEP)
        pos = end
    yield view[pos:]
