"""Shared vocabulary of the renderers: symbols, verdict order, cell lookup, client advice.

Everything here reads the matrix document (docs/matrix-format.md) as plain dicts; the
renderers never import the analyzer, so a stored matrix renders without re-analysis.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from conformance import registry
from conformance.enums import Level, Verdict

Doc = dict[str, Any]
Cell = dict[str, Any]

VERDICTS = ("conforms", "quirk", "fails", "error", "inconclusive", "unsupported", "not recorded")
SYMBOL = {
    "conforms": "✓",
    "quirk": "~",
    "fails": "✗",
    "error": "!",
    "inconclusive": "?",
    "unsupported": "–",
    "not recorded": "∅",
}
# Worse is higher: the one order of enums.Verdict (error above fails). Inconclusive
# (traffic, but the scenario's behaviour did not show), unsupported and not recorded are
# not judged and have no rank here.
RANK = {v.value: v.rank for v in Verdict if v is not Verdict.INCONCLUSIVE}
INCONCLUSIVE = "inconclusive"
# Verdicts that say something about the scenario, and the order a tally lists them in.
CONCLUSIVE = ("conforms", "quirk", "fails", "error")
STRATEGIES = ("naive", "guarded", "robust")
LEVEL_RANK = {lv.value: lv.rank + 1 for lv in Level}  # INFO 1, SHOULD 2, MUST 3


class MatrixError(ValueError):
    """A matrix document that cannot be read or is invalid; str() is one line."""


def symbol(verdict: str) -> str:
    return SYMBOL.get(verdict, "·")


def verdict_tally(cells: Iterable[Cell]) -> list[tuple[str, int]]:
    """(verdict, count) for one column's cells, in VERDICTS order, zero counts left out:
    inconclusive cells are counted apart from the conclusive ones, never with them."""
    counts: dict[str, int] = {}
    for c in cells:
        counts[c.get("verdict", "")] = counts.get(c.get("verdict", ""), 0) + 1
    return [(v, counts[v]) for v in VERDICTS if counts.get(v)]


def cell_index(doc: Doc) -> dict[tuple[str, str], Cell]:
    return {(c["column"], c["row"]): c for c in doc.get("cells", [])}


def columns_by_id(doc: Doc) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in doc.get("columns", [])}


def section(doc: Doc, name: str) -> list[str]:
    """Column ids of a section, keeping only columns that exist."""
    known = columns_by_id(doc)
    return [cid for cid in (doc.get("sections") or {}).get(name, []) if cid in known]


def rows_for(doc: Doc, column_ids: Iterable[str]) -> list[dict[str, Any]]:
    """The rows (in display order) that have at least one cell in these columns."""
    cols = set(column_ids)
    used = {c["row"] for c in doc.get("cells", []) if c["column"] in cols}
    return [r for r in doc.get("rows", []) if r["id"] in used]


def quirk_level(doc: Doc, qid: str, cell: Cell | None = None) -> str:
    """The level the document gives the id, else the registry's (a document written before
    the id had a level), else the highest of the cell's findings for it. An id neither
    knows (a document from a newer catalogue) is a MatrixError: a guessed level would put
    it on the wrong side of a --fail-on threshold."""
    entry = (doc.get("quirks") or {}).get(qid) or {}
    if entry.get("level") in LEVEL_RANK:
        return str(entry["level"])
    if qid in registry.specs():
        return registry.level(qid).value
    levels = [f["level"] for f in (cell or {}).get("findings", []) if f.get("quirk") == qid]
    if levels:
        return max(levels, key=LEVEL_RANK.__getitem__)
    raise MatrixError(f"quirk {qid}: no level in the document, the catalogue or its findings")


def quirk_title(doc: Doc, qid: str) -> str:
    return str(((doc.get("quirks") or {}).get(qid) or {}).get("title") or "")


def column_quirks(doc: Doc, column_ids: Iterable[str]) -> list[str]:
    """Every quirk seen in these columns, most severe first, then by id."""
    cols = set(column_ids)
    seen: set[str] = set()
    for c in doc.get("cells", []):
        if c["column"] in cols:
            seen.update(c.get("quirks") or [])
    return sort_quirks(doc, seen)


def sort_quirks(doc: Doc, quirks: Iterable[str]) -> list[str]:
    seen = set(quirks)
    return sorted(seen, key=lambda q: (-LEVEL_RANK.get(quirk_level(doc, q), 2), q))


def top_findings(cell: Cell, limit: int = 3) -> list[dict[str, Any]]:
    """The findings worth showing first: MUST before SHOULD before INFO, then by event."""
    fs = list(cell.get("findings") or [])
    fs.sort(
        key=lambda f: (
            -LEVEL_RANK.get(f.get("level", "INFO"), 1),
            f["event"] if f.get("event") is not None else 1 << 60,
        )
    )
    return fs[:limit]


def trial_counts(cells: Iterable[Cell], qid: str) -> tuple[int, int] | None:
    """(k, n): in how many trials of these cells the quirk appeared; None if one trial each."""
    k = n = 0
    multi = False
    for c in cells:
        trials = c.get("trials") or {}
        tn = int(trials.get("n") or 1)
        multi = multi or tn > 1
        n += tn
        counts = trials.get("quirk_counts") or {}
        k += int(counts.get(qid, tn if qid in (c.get("quirks") or []) else 0))
    return (k, n) if multi else None


_EVENT = re.compile(r"\bevent (\d+):")
_QID = re.compile(r"\bQ-[A-Z0-9][A-Z0-9-]*[A-Z0-9]")


def blame(doc: Doc, cell: Cell, strategy: str) -> list[str]:
    """What a strategy's wrong assembly is attributed to, most specific evidence first:
    quirk ids named in the impact detail; the findings at the event where it crashed; else
    the cell's most severe findings. A finding is named by its quirk, or by its rule when
    it has none (an uncatalogued failure); with no finding at all, the scenario itself."""
    detail = str(((cell.get("impact") or {}).get(strategy) or {}).get("detail") or "")
    known = set(cell.get("quirks") or []) | set(doc.get("quirks") or {})
    named = [q for q in _QID.findall(detail) if q in known]
    if named:
        return sorted(set(named))
    findings = [f for f in cell.get("findings") or [] if f.get("exchange", 0) == 0]
    m = _EVENT.search(detail)
    if m:
        at = [f for f in findings if f.get("event") == int(m.group(1))]
        if at:
            return _most_severe(at)
    if findings:
        return _most_severe(findings)
    return sorted(cell.get("quirks") or []) or [f"scenario {cell['row']}"]


def _most_severe(findings: list[dict[str, Any]]) -> list[str]:
    top = max(LEVEL_RANK.get(f.get("level", "INFO"), 1) for f in findings)
    return sorted(
        {
            f.get("quirk") or f["rule"]
            for f in findings
            if LEVEL_RANK.get(f.get("level", "INFO"), 1) == top
        }
    )


@dataclass
class Advice:
    """What a client needs for one column, derived from its cells' client impact."""

    breaks: dict[str, list[str]] = field(default_factory=dict)  # strategy -> quirks/scenarios
    judged: int = 0

    def text(self) -> str:
        naive, guarded = self.breaks.get("naive", []), self.breaks.get("guarded", [])
        robust = self.breaks.get("robust", [])
        if not self.judged:
            return "no client impact recorded"
        parts = []
        if naive:
            parts.append("naive accumulation breaks on: " + ", ".join(naive))
        if guarded:
            parts.append("guarded breaks on: " + ", ".join(guarded))
        if robust:
            parts.append("even the robust accumulator cannot recover: " + ", ".join(robust))
        if guarded:
            parts.append("use a robust accumulator (conformance.client)")
        elif naive:
            parts.append("use a guarded or robust accumulator (conformance.client)")
        elif not robust:
            parts.append("every strategy assembles the right calls")
        return "; ".join(parts)


def cells_by_column(doc: Doc) -> dict[str, list[Cell]]:
    out: dict[str, list[Cell]] = {}
    for c in doc.get("cells", []):
        out.setdefault(c["column"], []).append(c)
    return out


def client_advice(doc: Doc, cells: Iterable[Cell]) -> Advice:
    """Advice for one column from its cells (see ``cells_by_column``). Error cells are left
    out: a transport or HTTP error says nothing about accumulation."""
    adv = Advice({s: [] for s in STRATEGIES})
    for c in cells:
        impact = c.get("impact")
        if not impact or c.get("verdict") == "error":
            continue
        adv.judged += 1
        for s in STRATEGIES:
            if (impact.get(s) or {}).get("status", "ok") != "ok":
                for q in blame(doc, c, s):
                    if q not in adv.breaks[s]:
                        adv.breaks[s].append(q)
    for s in STRATEGIES:
        adv.breaks[s].sort(key=lambda q: (not q.startswith("Q-"), q))
    return adv


def impact_summary(cells: Iterable[Cell], strategy: str) -> tuple[int, int, list[str]]:
    """(ok, judged, rows where it was not ok) for one strategy over one column's cells."""
    ok = judged = 0
    bad: list[str] = []
    for c in cells:
        impact = c.get("impact")
        if not impact or strategy not in impact or c.get("verdict") == "error":
            continue
        judged += 1
        if impact[strategy].get("status") == "ok":
            ok += 1
        else:
            bad.append(c["row"])
    return ok, judged, bad


def server_text(column: dict[str, Any]) -> str:
    server = (column.get("provenance") or {}).get("server") or {}
    parts = [p for p in (server.get("software"), server.get("version")) if p]
    return " ".join(parts)


# ------------------------------------------------------------------ field evidence
# Public recordings of a provider (conformance.field): a kind of evidence of its own, shown
# with its own mark beside the recorded cells and never as a cell's verdict.
FIELD_MARK = "◇"
FIELD_TITLE = "seen in public recordings, not recorded by this suite"


def field_evidence(column: dict[str, Any]) -> list[dict[str, Any]]:
    return list(column.get("field_evidence") or [])


def field_summary(entries: Iterable[dict[str, Any]]) -> list[tuple[str, int]]:
    """(verdict, how many captures) in verdict order: ``[("quirk", 1)]``."""
    counts: dict[str, int] = {}
    for e in entries:
        counts[e["verdict"]] = counts.get(e["verdict"], 0) + 1
    order = {v: i for i, v in enumerate(VERDICTS)}
    return sorted(counts.items(), key=lambda kv: order.get(kv[0], len(order)))


def field_quirks(
    doc: Doc, entries: Iterable[dict[str, Any]], min_level: str = "SHOULD"
) -> list[str]:
    """The quirks these captures showed at or above ``min_level``, most severe first."""
    rank = LEVEL_RANK[min_level]
    seen = {
        q
        for e in entries
        for q in e.get("quirks") or []
        if LEVEL_RANK.get(quirk_level(doc, q), 2) >= rank
    }
    return sort_quirks(doc, seen)


def field_impact(entries: Iterable[dict[str, Any]], strategy: str) -> tuple[int, int]:
    """(captures the strategy assembled correctly, captures judged)."""
    ok = judged = 0
    for e in entries:
        i = (e.get("impact") or {}).get(strategy)
        if i:
            judged += 1
            ok += i.get("status") == "ok"
    return ok, judged


_REPO = re.compile(r"^https?://github\.com/([^/]+/[^/]+)/")


def source_name(url: str) -> str:
    """A short name for a source link: ``owner/repo`` for GitHub, else the host."""
    m = _REPO.match(url)
    if m:
        return m.group(1)
    host = re.match(r"^https?://([^/]+)/", url)
    return host.group(1) if host else url


def is_url(text: str) -> bool:
    return bool(re.match(r"^https?://", text or ""))
