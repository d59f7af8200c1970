"""The suite's closed vocabularies, each a ``StrEnum`` with its one order.

A member is its wire string (``Level.MUST == "MUST"``, ``json.dumps`` writes ``"MUST"``),
so documents and JSON output are unchanged; what the enum adds is one declaration of the
valid values, of their order (``rank``), and an error that lists them (``parse``).
Nothing here imports the rest of the package.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Self


class _Ranked(StrEnum):
    """A vocabulary whose members are ranked in declaration order (first = rank 0)."""

    @property
    def rank(self) -> int:
        return list(type(self)).index(self)

    @classmethod
    def parse(cls, value: str, what: str) -> Self:
        """The member spelled ``value``; else a one-line error naming the valid values."""
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(m.value for m in cls)
            raise ValueError(f"{what}: {value!r} is not valid; valid values are: {valid}") from None


class Level(_Ranked):
    """How much a finding matters (higher rank = worse)."""

    INFO = "INFO"  # documented reference behaviour, or harmless
    SHOULD = "SHOULD"  # a deviation that breaks some clients
    MUST = "MUST"  # breaks a field-presence rule of the wire contract


class Verdict(_Ranked):
    """A capture's or a cell's verdict, from best to worst. ``inconclusive`` ranks below
    every conclusive verdict (a repeated cell is inconclusive only when no trial showed
    the scenario's behaviour). ``error`` ranks above ``fails``: a trial that could not be
    judged at all hides what the wire did, so a repeated cell with one errored trial reads
    as that error (the report says why), and a diff from fails to error is a change for
    the worse (the cell can no longer be judged)."""

    INCONCLUSIVE = "inconclusive"
    CONFORMS = "conforms"
    QUIRK = "quirk"
    FAILS = "fails"
    ERROR = "error"


class Strategy(_Ranked):
    """The three client strategies, from the least to the most defensive."""

    NAIVE = "naive"
    GUARDED = "guarded"
    ROBUST = "robust"


class ImpactStatus(_Ranked):
    """What a quirk did to a strategy's calls, from harmless to worst."""

    OK = "ok"
    WRONG = "wrong"
    CRASHED = "crashed"
    UNRECOVERABLE = "unrecoverable"


class ProviderKind(_Ranked):
    """What a matrix column is."""

    PROVIDER = "provider"
    REFERENCE_PROFILE = "reference-profile"
    GATEWAY_PROFILE = "gateway-profile"


class EventKind(_Ranked):
    """The kinds of event a Transcript yields (see transcript.py)."""

    CHUNK = "chunk"  # a data payload that parsed as JSON (any JSON value)
    DONE = "done"  # data: [DONE]
    NONJSON = "nonjson"  # a data payload that is not JSON
    COMMENT = "comment"  # an SSE comment line
    FAULT = "fault"  # a framing fault found while decoding
