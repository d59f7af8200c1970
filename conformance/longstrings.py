"""Identifiers as long as a body, cut before their event is decoded (issue 23).

An event whose one ``data:`` line is longer than ``LONG_LINE`` bytes has each JSON string
value of an identifier field (``id``, ``name``, ``model``, …) longer than ``LONG_STRING``
replaced, in the bytes and before the line is decoded and parsed, by its first and last
``KEEP`` characters around a marker that carries the whole value's length and digest:
``…[8388608 characters, sha256 <32 hex digits>]…``. Two different long values never
compare equal and the same value always does (the digest is of the decoded string, however
it was escaped), so the analysis judges ids and names as it would whole, without holding
8 MiB of them beside the text they were parsed from. Text the analysis judges as text
(``arguments``, ``content``, reasoning) is never cut here: the existing bounds hold it.

Only a literal that is a valid JSON string (``secrets._JSON_STRING``) and valid UTF-8 is cut,
never inside an escape, so a line that was valid JSON stays valid with the same structure
and one that was not stays not (the first fault of a line is never in a cut part). Only a
line that is a whole event (a blank line before and after it) no larger than
``sse.MAX_EVENT_BYTES`` is cut, so no fault becomes a chunk. The body itself (cassette,
redaction) is never changed: this is what the analysis reads of it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator

from conformance.secrets import _JSON_STRING_B, _LINE_END, _char_start, _escape_cut, redact

LONG_LINE = 1 << 20  # a data line longer than this (bytes) is read for long identifiers
LONG_STRING = 1 << 16  # an identifier longer than this (bytes of JSON text) is cut
KEEP = 2048  # characters of a cut identifier's ends kept
_ENDS = 12 * KEEP + 12  # bytes of JSON text that hold KEEP characters and more (12: a pair)
_STEP = 1 << 18  # a long value is decoded this many bytes at a time for its digest
# the identifier fields, compared for equality only (never judged as text or as JSON)
CUT_KEYS: tuple[bytes, ...] = (b"id", b"name", b"model", b"object", b"type", b"role")
CUT_KEYS += (b"system_fingerprint", b"finish_reason", b"service_tier", b"tool_call_id", b"call_id")
# the key of the value that follows: a whole literal (a quote inside a string is escaped)
_KEY = re.compile(rb'[{,\s]"(?:' + b"|".join(CUT_KEYS) + rb')"\s*:\s*\Z')
MARKER = re.compile(r"…\[[0-9]+ characters, sha256 [0-9a-f]{32}\]…")


def is_cut(value: object) -> bool:
    """Whether ``value`` is (or holds) an identifier cut here: not what was received."""
    return isinstance(value, str) and "…[" in value and MARKER.search(value) is not None


def marker(length: int, digest: str) -> str:
    return f"…[{length} characters, sha256 {digest[:32]}]…"


def pieces(data: bytes, fresh: bool = True) -> Iterator[bytes | memoryview]:
    """``data`` (a body, or its first block when ``fresh``) as pieces whose concatenation
    is ``data`` with the long identifiers of its long one-line events cut; ``data`` itself
    when it has none (no copy)."""
    view, pos = memoryview(data), 0
    for start, end in long_lines(data):
        if not _whole_event(data, start, end, fresh):
            continue
        cut = _cut_line(data, start + 5, end)
        if cut is None:
            continue
        yield view[pos:start]
        yield b"data:" + b"".join(cut)
        pos = end
    yield data if pos == 0 else view[pos:]


def long_lines(data: bytes) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each line of ``data`` longer than ``LONG_LINE`` bytes, found a
    window at a time (an ordinary body costs a few reverse searches per MiB)."""
    pos, n = 0, len(data)
    while n - pos > LONG_LINE:
        limit = pos + LONG_LINE + 1
        cut = max(data.rfind(b"\n", pos, limit), data.rfind(b"\r", pos, limit))
        if cut >= 0:
            pos = cut + 1
            continue
        m = _LINE_END.search(data, pos)
        end = m.start() if m else n
        yield pos, end
        pos = end


def _whole_event(data: bytes, start: int, end: int, fresh: bool) -> bool:
    """A ``data:`` line with a blank line before it (or the start of a fresh stream) and
    after it, no larger than an event may be."""
    from conformance.sse import MAX_EVENT_BYTES

    if end - start > MAX_EVENT_BYTES or not data.startswith(b"data:", start):
        return False
    before = data[max(0, start - 4) : start]
    if not (start == 0 and fresh) and not before.endswith((b"\n\n", b"\r\r", b"\n\r\n", b"\r\r\n")):
        return False
    return data.startswith((b"\n\n", b"\n\r", b"\r\r", b"\r\n\r", b"\r\n\n"), end)


def _cut_line(data: bytes, start: int, end: int) -> list[bytes | memoryview] | None:
    """The line's pieces with its long identifiers cut; None when nothing was cut."""
    view = memoryview(data)
    out: list[bytes | memoryview] = []
    pos = start
    for m in _JSON_STRING_B.finditer(data, start, end):
        a, b = m.start() + 1, m.end() - 1  # the literal's inside
        if b - a <= LONG_STRING or not _KEY.search(data, max(start, m.start() - 40), m.start()):
            continue
        summary = _summary(data, a, b)
        if summary is None or summary[0] <= 2 * KEEP:  # not UTF-8 (the stream's fault)
            continue
        # the ends as decoded characters, written back as ASCII JSON: the same value
        # however the wire spelled it (escapes), and valid UTF-8 whatever it holds
        # each end redacted before it is cut, so that a cut never leaves part of a key
        head = redact(_decoded(data, a, _cut(data, a, a + _ENDS)))[:KEEP]
        tail = redact(_decoded(data, _cut(data, a, b - _ENDS), b))[-KEEP:]
        out += [view[pos:a], json.dumps(head + marker(*summary) + tail)[1:-1].encode()]
        pos = b
    if not out:
        return None
    out.append(view[pos:end])
    return out


def _cut(data: bytes, a: int, x: int) -> int:
    """``x``, moved back out of an escape or a UTF-8 character (a literal from ``a``)."""
    return _char_start(data, _escape_cut(data, a, x), a)


def _decoded(data: bytes, x: int, y: int) -> str:
    """The characters of ``data[x:y]``, a piece of a valid literal cut by ``_cut``."""
    raw = data[x:y]
    return raw.decode() if b"\\" not in raw else str(json.loads(b'"' + raw + b'"'))


def _summary(data: bytes, a: int, b: int) -> tuple[int, str] | None:
    """The length (characters) and sha256 (of its UTF-16) of the string whose JSON text is
    ``data[a:b]``, decoded a step at a time; None when it is not valid UTF-8."""
    digest, length, high = hashlib.sha256(), 0, False
    x = a
    while x < b:
        y = b if b - x <= _STEP else _cut(data, a, x + _STEP)
        try:
            text = _decoded(data, x, y)
        except ValueError:  # UnicodeDecodeError included
            return None
        if high and text[:1] and "\udc00" <= text[0] <= "\udfff":
            length -= 1  # a surrogate pair cut between two steps is one character
        high = bool(text) and "\ud800" <= text[-1] <= "\udbff"
        digest.update(text.encode("utf-16-le", "surrogatepass"))
        length += len(text)
        x = y
    return length, digest.hexdigest()
