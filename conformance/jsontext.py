"""``loads``: ``json.loads`` for text, minus its Python frames: the hot paths parse one
small JSON document per event, where ``json.loads``'s own Python layer (type and BOM
checks, two whitespace regex matches, two calls) costs a third of the parse.

It calls the stdlib decoder's C scanner directly and falls back to ``json.loads`` for
anything the scanner does not take whole (leading whitespace, a BOM, extra data, an
error), so the value or the exception is always exactly ``json.loads``'s.

``StreamLoads`` is ``loads`` for the payloads of one stream: a chunk that repeats the
text around the delta of the chunks before it (``Envelope``) is parsed from its delta on.
"""

from __future__ import annotations

import json
from typing import Any

_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # typeshed omits it; the C scanner json.loads ends up in (strict=True)


def loads(text: str) -> Any:
    try:
        value, end = _scan(text, 0)
    except StopIteration:  # not a JSON value at position 0: json.loads says why
        return json.loads(text)
    if end != len(text) and text[end:].strip(" \t\n\r"):
        return json.loads(text)  # extra data: json.loads raises its own error
    return value


class StreamLoads:
    """``loads`` for the payloads of one stream (the SSE parser's, a client's), parsing
    only the delta of a chunk whose text around it is an envelope the stream repeats.

    The text around the delta of a stream's first chunk, or of two full parses in a row,
    is tried as the envelope (``Envelope``): a stream's chunks repeat it (the id, the
    model, the choice's index and finish_reason), so most of them are parsed from their
    delta on, where the floor parses each whole. A stream whose envelope changes on every chunk stops being
    looked at after ENVELOPE_TRIES full parses."""

    __slots__ = ("envelope", "_around", "_tries")

    def __init__(self) -> None:
        self.envelope: Envelope | None = None  # the stream's, once two parses show one
        self._around: tuple[str, str] | None = None  # the last full parse's, to compare
        self._tries = ENVELOPE_TRIES  # full parses left without a new envelope

    def loads(self, data: str) -> tuple[Any, Envelope | None]:
        """``loads(data)`` (the value, or its error), and the envelope it was parsed with
        (None: parsed in full)."""
        env = self.envelope
        if env is not None:
            chunk = env.chunk(data)
            if chunk is not None:
                return chunk, env
        return self.parse(data), None

    def parse(self, data: str) -> Any:
        """``loads(data)`` in full (for a payload the envelope did not take), looking for
        the stream's envelope meanwhile."""
        value = loads(data)  # raises for text that is not JSON, as loads does
        if self._tries:
            around = Envelope.around(data, value)
            # The first chunk of a stream is probed at once (its envelope is, nearly
            # always, that of the text and calls after it); later, two parses in a row.
            first = self._tries == ENVELOPE_TRIES and self.envelope is None
            if around is None or (around != self._around and not first):
                self._around = around
                self._tries -= 1
            else:
                self._around = None  # probed once
                new = Envelope.of(*around)
                if new is None:
                    self._tries -= 1
                else:
                    self.envelope, self._tries = new, ENVELOPE_TRIES
        return value


_DELTA_KEY = '"delta":'
# The probe put where the delta is: a value no other place of the text can hold, as the
# text has no "\u0000" (the only way to write U+0000 in JSON: the raw character is refused).
_PROBE, _PROBE_TEXT = "\x00", '"\\u0000"'
_SCALARS = (str, int, float, bool, type(None))
_SPACE = (" ", "\t", "\n", "\r")  # JSON's whitespace (never "": the loop ends at the end)
MAX_ENVELOPE = 4096  # characters of text around a delta kept (a body of huge chunks: none)
ENVELOPE_TRIES = 16  # full parses in a row that find no envelope before the parser stops looking


class Envelope:
    """The text of a chunk around its one choice's delta (``prefix``, up to ``"delta":``,
    and ``suffix``), repeated by the chunks of a stream: a payload made of the prefix, one
    JSON value and the suffix parses as the envelope's chunk with that value as delta.

    Exact: the scanner reads the prefix the same way whatever follows it (it ends on a
    colon, where a value starts), reads the value at that position as ``_scan`` does here
    (the same call on the same text), then reads the same suffix; the value lands where
    the probe landed when the envelope was made (at ``choices[0]["delta"]``, not overwritten
    by a later key: the probe's value is nowhere else in the text). Every other value of
    the chunk and of its choice is a string, a number, a boolean or null, so sharing them
    between chunks is sharing what a parse would give afresh, equal and immutable; the
    chunk, its choices list and the choice are new for each payload, as ``loads`` makes
    them, with their keys in the same order."""

    __slots__ = ("prefix", "suffix", "at", "tail", "template", "choice")

    def __init__(self, prefix: str, suffix: str, template: dict[str, Any]) -> None:
        self.prefix, self.suffix = prefix, suffix
        self.at, self.tail = len(prefix), len(suffix)
        self.template = template
        self.choice: dict[str, Any] = template["choices"][0]

    @staticmethod
    def around(data: str, value: Any) -> tuple[str, str] | None:
        """The text before and after the delta of a parsed chunk of one choice, or None."""
        if type(value) is not dict:
            return None
        choices = value.get("choices")
        if type(choices) is not list or len(choices) != 1 or type(choices[0]) is not dict:
            return None
        at = data.find(_DELTA_KEY)
        if at < 0:
            return None
        at += len(_DELTA_KEY)
        while data[at : at + 1] in _SPACE:  # `"delta": {` (json.dumps's default spacing)
            at += 1
        try:
            _, end = _scan(data, at)
        except (StopIteration, ValueError, RecursionError):
            return None
        if at + len(data) - end > MAX_ENVELOPE:
            return None
        return data[:at], data[end:]

    @classmethod
    def of(cls, prefix: str, suffix: str) -> Envelope | None:
        """The envelope of that text, when the probe shows it is one (else None)."""
        if "\\u0000" in prefix or "\\u0000" in suffix:
            return None
        try:
            probe = loads(prefix + _PROBE_TEXT + suffix)
        except (ValueError, RecursionError):
            return None
        choices = probe.get("choices") if type(probe) is dict else None
        if type(choices) is not list or len(choices) != 1 or type(choices[0]) is not dict:
            return None
        choice = choices[0]
        if choice.get("delta") != _PROBE:
            return None
        for k, v in probe.items():
            if k != "choices" and not isinstance(v, _SCALARS):
                return None
        for k, v in choice.items():
            if k != "delta" and not isinstance(v, _SCALARS):
                return None
        return cls(prefix, suffix, probe)

    def chunk(self, data: str) -> dict[str, Any] | None:
        """The chunk the payload parses as, when it is the envelope around one JSON value;
        else None (then it is parsed in full)."""
        if not (data.startswith(self.prefix) and data.endswith(self.suffix)):
            return None
        try:
            delta, end = _scan(data, self.at)
        except (StopIteration, ValueError, RecursionError):
            return None  # no value there: the full parse says what the text is
        if end != len(data) - self.tail:
            return None
        chunk = self.template.copy()
        choice = self.choice.copy()
        choice["delta"] = delta
        chunk["choices"] = [choice]
        return chunk
