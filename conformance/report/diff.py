"""Compare two matrices cell by cell (column, row): what regressed, what got fixed.

Only judged facts are compared: the verdict, the quirk ids and each strategy's client
impact status. Volatile fields (chunk ids, `created`, fingerprints, dates, messages,
excerpts, evidence) are never compared, so re-recording an unchanged provider diffs clean.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.report.common import (
    INCONCLUSIVE,
    RANK,
    STRATEGIES,
    Cell,
    Doc,
    cell_index,
    symbol,
)

REGRESSED, FIXED = "regressed", "fixed"
NEW_QUIRK, GONE_QUIRK = "new quirk", "gone quirk"
# A cell that stops (or starts) showing what its scenario tests: neither fixed nor
# regressed, since the other side says nothing about the scenario; never exits 1 by itself.
NOW_INCONCLUSIVE, NOW_CONCLUSIVE = "now inconclusive", "now conclusive"
CHANGED, ADDED, REMOVED, UNCHANGED = "changed", "added", "removed", "unchanged"
STATUS_ORDER = (
    REGRESSED,
    FIXED,
    NOW_INCONCLUSIVE,
    NOW_CONCLUSIVE,
    NEW_QUIRK,
    GONE_QUIRK,
    CHANGED,
    ADDED,
    REMOVED,
    UNCHANGED,
)
GUARDED_STRATEGIES = ("guarded", "robust")  # their ok → not ok is a regression


@dataclass
class CellDiff:
    """How one (column, row) cell changed; `statuses` is never empty."""

    column: str
    row: str
    statuses: list[str]
    old_verdict: str | None
    new_verdict: str | None
    new_quirks: list[str] = field(default_factory=list)
    gone_quirks: list[str] = field(default_factory=list)
    impact: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    @property
    def regressed(self) -> bool:
        return REGRESSED in self.statuses

    @property
    def unchanged(self) -> bool:
        return self.statuses == [UNCHANGED]

    def changes(self) -> str:
        """One line: verdict, quirks and impact changes."""
        parts = []
        if self.old_verdict != self.new_verdict:
            parts.append(f"{_v(self.old_verdict)} → {_v(self.new_verdict)}")
        parts += [f"{s} {a or '–'} → {b or '–'}" for s, (a, b) in self.impact.items()]
        parts += [f"+{q}" for q in self.new_quirks] + [f"-{q}" for q in self.gone_quirks]
        return "; ".join(parts) or (_v(self.new_verdict) if self.new_verdict else "")


def _v(verdict: str | None) -> str:
    return f"{symbol(verdict)} {verdict}" if verdict else "(no cell)"


def _impact(cell: Cell | None, strategy: str) -> str | None:
    if not cell or not cell.get("impact"):
        return None
    entry = cell["impact"].get(strategy)
    return entry.get("status") if entry else None


def _rank(verdict: str | None) -> int | None:
    """A verdict's rank, for cells whose traffic the diff compares: inconclusive has
    traffic (quirks and client impact still compare) but no rank of its own."""
    if verdict == INCONCLUSIVE:
        return -1
    return RANK.get(verdict or "")


def diff_cell(column: str, row: str, old: Cell | None, new: Cell | None) -> CellDiff:
    ov = old["verdict"] if old else None
    nv = new["verdict"] if new else None
    d = CellDiff(column, row, [], ov, nv)
    ro, rn = _rank(ov), _rank(nv)
    st: list[str] = []
    if ro is not None and rn is not None:
        if ov == nv:
            pass
        elif nv == INCONCLUSIVE:
            st.append(NOW_INCONCLUSIVE)
        elif ov == INCONCLUSIVE:
            st.append(NOW_CONCLUSIVE)
        elif rn > ro:
            st.append(REGRESSED)
        elif rn < ro:
            st.append(FIXED)
        else:
            st.append(CHANGED)
        for s in STRATEGIES:
            a, b = _impact(old, s), _impact(new, s)
            if a is None or b is None or a == b:
                continue
            d.impact[s] = (a, b)
            if s in GUARDED_STRATEGIES and a == "ok":
                st.append(REGRESSED)
            elif s in GUARDED_STRATEGIES and b == "ok":
                st.append(FIXED)
        oq, nq = set((old or {}).get("quirks") or []), set((new or {}).get("quirks") or [])
        d.new_quirks, d.gone_quirks = sorted(nq - oq), sorted(oq - nq)
        if d.new_quirks:
            st.append(NEW_QUIRK)
        if d.gone_quirks:
            st.append(GONE_QUIRK)
        if not st and d.impact:  # e.g. only the naive strategy's outcome moved
            st.append(CHANGED)
    elif ov != nv:
        st.append(ADDED if rn is not None else REMOVED if ro is not None else CHANGED)
    d.statuses = [s for s in STATUS_ORDER if s in st] or [UNCHANGED]
    return d


def diff_matrices(old: Doc, new: Doc) -> list[CellDiff]:
    """Every (column, row) of either matrix, in the new matrix's order, then the old-only."""
    oi, ni = cell_index(old), cell_index(new)
    order = {c["id"]: i for i, c in enumerate(new.get("columns", []))}
    rorder = {r["id"]: i for i, r in enumerate(new.get("rows", []))}
    keys = sorted(
        set(oi) | set(ni),
        key=lambda k: (k not in ni, order.get(k[0], 1 << 30), rorder.get(k[1], 1 << 30), k),
    )
    return [diff_cell(c, r, oi.get((c, r)), ni.get((c, r))) for c, r in keys]


def column_notes(old: Doc, new: Doc) -> list[str]:
    """Context for the reader: columns added/removed, model or server version changes."""
    oc = {c["id"]: c for c in old.get("columns", [])}
    nc = {c["id"]: c for c in new.get("columns", [])}
    notes = [f"{cid}: new column" for cid in nc if cid not in oc]
    notes += [f"{cid}: column removed" for cid in oc if cid not in nc]
    for cid in nc:
        if cid not in oc:
            continue
        for label, get in (("model", _model), ("server", _server)):
            a, b = get(oc[cid]), get(nc[cid])
            if a != b:
                notes.append(f"{cid}: {label} {a or '–'} → {b or '–'}")
    return notes


def _model(col: dict[str, Any]) -> str | None:
    return col.get("model")


def _server(col: dict[str, Any]) -> str | None:
    s = (col.get("provenance") or {}).get("server") or {}
    text = " ".join(p for p in (s.get("software"), s.get("version")) if p)
    return text or None


def summary(diffs: list[CellDiff]) -> dict[str, int]:
    counts = {s: 0 for s in STATUS_ORDER}
    for d in diffs:
        for s in d.statuses:
            counts[s] += 1
    return counts


def _summary_text(diffs: list[CellDiff]) -> str:
    return ", ".join(f"{n} {s}" for s, n in summary(diffs).items() if n or s in (REGRESSED, FIXED))


def format_text(diffs: list[CellDiff], notes: list[str] | None = None) -> str:
    lines = []
    for d in diffs:
        if d.unchanged:
            continue
        status = ", ".join(d.statuses)
        lines.append(f"{status.upper():<24} {d.column} × {d.row}: {d.changes()}")
    lines += [f"note: {n}" for n in notes or []]
    lines.append("summary: " + _summary_text(diffs))
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("~", "\\~")


def format_markdown(diffs: list[CellDiff], notes: list[str] | None = None) -> str:
    regressed = sum(d.regressed for d in diffs)
    head = "**regressions found**" if regressed else "no regressions"
    lines = [f"### Conformance matrix diff: {head}", "", _summary_text(diffs), ""]
    changed = [d for d in diffs if not d.unchanged]
    if changed:
        lines += [
            "| status | column | row | verdict | quirks | client impact |",
            "|---|---|---|---|---|---|",
        ]
        for d in changed:
            status = ", ".join(f"**{s}**" if s == REGRESSED else s for s in d.statuses)
            verdict = (
                f"{_v(d.old_verdict)} → {_v(d.new_verdict)}"
                if d.old_verdict != d.new_verdict
                else _v(d.new_verdict)
            )
            quirks = " ".join(
                [f"+`{q}`" for q in d.new_quirks] + [f"−`{q}`" for q in d.gone_quirks]
            )
            impact = "; ".join(f"{s} {a} → {b}" for s, (a, b) in d.impact.items())
            cells = [status, f"`{d.column}`", f"`{d.row}`", _md(verdict), quirks, _md(impact)]
            lines.append("| " + " | ".join(c or " " for c in cells) + " |")
        lines.append("")
    lines += [f"- {_md(n)}" for n in notes or []]
    return "\n".join(lines).rstrip() + "\n"


__all__ = [
    "ADDED",
    "CHANGED",
    "FIXED",
    "GONE_QUIRK",
    "NEW_QUIRK",
    "NOW_CONCLUSIVE",
    "NOW_INCONCLUSIVE",
    "REGRESSED",
    "REMOVED",
    "UNCHANGED",
    "CellDiff",
    "column_notes",
    "diff_matrices",
    "format_markdown",
    "format_text",
    "summary",
]
