"""``loads``: ``json.loads`` for text, minus its Python frames: the hot paths parse one
small JSON document per event, where ``json.loads``'s own Python layer (type and BOM
checks, two whitespace regex matches, two calls) costs a third of the parse.

It calls the stdlib decoder's C scanner directly and falls back to ``json.loads`` for
anything the scanner does not take whole (leading whitespace, a BOM, extra data, an
error), so the value or the exception is always exactly ``json.loads``'s.
"""

from __future__ import annotations

import json
from typing import Any

_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # typeshed omits it; the C scanner json.loads ends up in (strict=True)
# The scanner itself, (text, position) -> (value, end): StopIteration when no value
# starts at the position, JSONDecodeError for a malformed one (conformance.sse reads one
# value inside a payload with it).
scan = _scan


def loads(text: str) -> Any:
    try:
        value, end = _scan(text, 0)
    except StopIteration:  # not a JSON value at position 0: json.loads says why
        return json.loads(text)
    if end != len(text) and text[end:].strip(" \t\n\r"):
        return json.loads(text)  # extra data: json.loads raises its own error
    return value
