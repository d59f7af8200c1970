"""Bounded results: every string a cell's result holds, whatever the endpoint sent.

A body is bounded by ``max_bytes``; what the analysis draws from it is not by itself: an
8 MiB tool name and a 4 MiB id in one body come back in each strategy's calls and in
findings, and a result, the matrix built from results and its HTML copied them again
(48 MiB of results for a 12 MiB body). ``cap_strings`` bounds each string of a result
(``FIELD_KEPT`` characters) and all of them together (``RESULT_KEPT``), with a marker
saying how much was left out; the cassette keeps the whole body, so nothing is lost.
"""

from __future__ import annotations

from typing import Any

FIELD_KEPT = 64 * 1024  # characters of one string of a result
RESULT_KEPT = 2 * 1024 * 1024  # characters of all the strings of one result
SMALL = 256  # what a string keeps once the result's budget is spent
MARK = "… [{} more characters not shown: the cassette keeps the whole value]"


class _Budget:
    def __init__(self, total: int):
        self.left = total


def cap_strings(value: Any, field: int = FIELD_KEPT, total: int = RESULT_KEPT) -> Any:
    """``value`` (JSON-like) with every string cut to at most ``field`` characters, and
    to ``SMALL`` once ``total`` characters were kept in all, a marker after each cut.
    A string is redacted before it is cut, so a cut never leaves part of a key that
    redaction would have found whole. Values within the bounds come back unchanged."""
    return _cap(value, field, _Budget(total))


def _cap(value: Any, field: int, budget: _Budget) -> Any:
    if isinstance(value, str):
        return _cut(value, field, budget)
    if isinstance(value, dict):
        return {
            (_cut(k, field, budget) if isinstance(k, str) else k): _cap(v, field, budget)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_cap(v, field, budget) for v in value]
    return value


def quoted(value: object, field: int = FIELD_KEPT) -> str:
    """``repr(value)`` for a finding's message, of at most ``field`` characters of a
    string (a name or an id as long as the body is not copied whole into the message)."""
    if isinstance(value, str) and len(value) > field:
        return repr(value[:field]) + MARK.format(len(value) - field)
    return repr(value)


def cap_text(text: str, field: int = FIELD_KEPT) -> str:
    """One string held beyond a result (a finding's message quoting a name or an id as
    long as the body), cut so that it and its marker fit in ``field`` characters:
    ``cap_strings`` later leaves it as it is, and the marker counts what the wire had."""
    if len(text) <= field:
        return text
    from conformance import secrets

    text = secrets.redact(text)
    if len(text) <= field:
        return text
    keep = field - len(MARK.format(len(text)))
    return text[:keep] + MARK.format(len(text) - keep)


def _cut(text: str, field: int, budget: _Budget) -> str:
    keep = min(field, max(SMALL, budget.left))
    if len(text) <= keep:
        budget.left -= len(text)
        return text
    from conformance import secrets

    text = secrets.redact(text)
    if len(text) <= keep:
        budget.left -= len(text)
        return text
    budget.left -= keep
    return text[:keep] + MARK.format(len(text) - keep)
