"""The Transcript: one HTTP exchange (or capture) as observed on the wire.

Chunks stay raw JSON values: absent, ``null`` and ``""`` are different facts here,
so nothing is ever converted into SDK models. Events may be produced lazily (an
iterator) so a 100 MB capture is analysed without holding every chunk in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

# Event kinds
CHUNK = "chunk"  # a data payload that parsed as JSON (any JSON value, object or not)
DONE = "done"  # data: [DONE]
NONJSON = "nonjson"  # a data payload that is not JSON
COMMENT = "comment"  # an SSE comment line (": ping")
FAULT = "fault"  # a framing fault found while decoding (invalid UTF-8, cut event, ...)


@dataclass(slots=True)
class Event:
    n: int  # position in arrival order, from 0; comments and faults count
    kind: str
    line: int | None = None  # first source line of the event, from 1
    data: str = ""  # the raw payload text (or the comment/fault text)
    chunk: Any = None  # parsed JSON value for CHUNK
    sse_event: str | None = None  # the SSE `event:` field, when there was one
    # The conformance.jsontext.Envelope a chunk was parsed with (the text around its delta, the
    # same object for every chunk of it; None for a chunk parsed in full): its chunks
    # differ only in their delta, which the analyzer's steady path reads (not compared).
    envelope: Any = field(default=None, compare=False, repr=False)


class InputError(Exception):
    """An input that cannot be read at all; str() is the one-line reason."""

    def __init__(self, source: str, message: str, line: int | None = None):
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")
        self.source, self.line, self.reason = source, line, message


@dataclass
class Transcript:
    source: str
    fmt: str  # jsonl | sse | cassette | har | live
    framing: bool  # raw SSE framing was observed (False for JSONL: framing rules n/a)
    events_factory: Callable[[], Iterable[Event]]
    request: dict[str, Any] | None = None
    status: int | None = None
    headers: dict[str, str] | None = None
    raw: bytes | None = None  # the body as received, when held in memory
    transport_error: str | None = None  # a transport failure that ended the exchange
    meta: dict[str, Any] = field(default_factory=dict)  # retries, timings, provenance

    def events(self) -> Iterator[Event]:
        return iter(self.events_factory())

    @property
    def content_type(self) -> str | None:
        if not self.headers:
            return None
        for k, v in self.headers.items():
            if k.lower() == "content-type":
                return v
        return None


def header(headers: dict[str, str] | None, name: str) -> str | None:
    for k, v in (headers or {}).items():
        if k.lower() == name:
            return v
    return None
