"""The verdict policy, once: what a capture's findings make of it, and of a cell.

The analyzer judges a capture (``judge``); the runner judges a cell from the capture's
verdict and the scenario's own findings (``cell``), which is the same policy applied to
more findings, and marks a cell that did not show its scenario's behaviour
(``inconclusive``). Repeated trials read as their worst (``worst``), by ``Verdict.rank``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from conformance import registry
from conformance.enums import Level, Verdict


def judge(
    findings: Iterable[tuple[str, str | None]],
    *,
    recoverable: bool = True,
    error: str | None = None,
) -> Verdict:
    """``error`` when the exchange did not complete; ``fails`` on a MUST finding no quirk
    explains, on a quirk the robust client cannot repair, or when it could not recover
    the calls; ``quirk`` on any catalogued deviation above INFO; else ``conforms``.
    ``findings`` are (level, quirk id or None) pairs."""
    if error:
        return Verdict.ERROR
    if not recoverable:
        return Verdict.FAILS
    unrecoverable = registry.unrecoverable()
    quirk = False  # one loop, no generators: this runs once per capture
    for lvl, q in findings:
        if (lvl == _MUST and not q) or (q and q in unrecoverable):
            return Verdict.FAILS
        if q and lvl != _INFO:
            quirk = True
    return Verdict.QUIRK if quirk else Verdict.CONFORMS


_MUST, _INFO = Level.MUST, Level.INFO  # looked up once (an enum attribute costs a lookup)


def worst(verdicts: Iterable[str]) -> Verdict:
    """The worst of some verdicts (``Verdict.rank``); ValueError if there are none."""
    return max((Verdict(v) for v in verdicts), key=lambda v: v.rank)


def cell(capture: str, findings: Iterable[dict[str, Any]]) -> Verdict:
    """A judged cell (its capture not an ``error``): the capture's verdict, made worse by
    the scenario's findings (``findings`` are finding dicts, the capture's included)."""
    return worst([capture, judge((f["level"], f.get("quirk")) for f in findings)])


def inconclusive(verdict: str, not_elicited: str | None, unexpected: list[str]) -> Verdict:
    """A cell that did not show what its scenario tests is `inconclusive`, never `conforms`,
    nor `quirk` on expected quirks alone. What the wire did show still wins: `fails`,
    `error` and an unexpected quirk keep their verdict (the cell keeps `elicited: false`
    and the not-elicited reason either way)."""
    v = Verdict(verdict)
    if not_elicited and v in (Verdict.CONFORMS, Verdict.QUIRK) and not unexpected:
        return Verdict.INCONCLUSIVE
    return v
