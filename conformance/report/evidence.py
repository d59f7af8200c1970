"""Trim a transcript's events to the wire around the findings (the cell's `evidence`)."""

from __future__ import annotations

from collections.abc import Iterable
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
