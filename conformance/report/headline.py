"""The README's headline table: providers × scenarios as symbols, with field evidence.

Small on purpose: one symbol per cell, the quirks each column showed, the public
recordings with their sources, and a legend. Footnotes and evidence live in the full
report (``reports/quirks-matrix.md`` / ``.html``).
"""

from __future__ import annotations

from typing import Any

from conformance.report.common import (
    FIELD_MARK,
    FIELD_TITLE,
    STRATEGIES,
    Doc,
    cell_index,
    cells_by_column,
    columns_by_id,
    field_evidence,
    field_impact,
    field_quirks,
    impact_summary,
    is_url,
    quirk_level,
    rows_for,
    section,
    sort_quirks,
)
from conformance.report.markdown import code, esc, field_mark, source_link, sym

LEGEND = (
    "✓ conforms · \\~ quirk (a catalogued deviation a robust client survives) · ✗ fails · "
    "? inconclusive (the stream did not show what the scenario tests) · ! error · – unsupported · ∅ not recorded by this suite · "
    f"{FIELD_MARK} {FIELD_TITLE} (each verdict with its number of captures; it never fills "
    "a cell)"
)


def _qlink(q: str, quirk_doc: str) -> str:
    return f"[`{q}`]({quirk_doc}#{q.lower()})"


def _sources(entries: list[dict[str, Any]]) -> str:
    """One source: named (``[vercel/ai](…)``); several: numbered after "sources"."""
    if len(entries) == 1:
        return source_link(entries[0]["source"])
    return "sources " + " ".join(
        f"[{i}]({e['source']})" if is_url(e["source"]) else code(e["source"])
        for i, e in enumerate(entries, 1)
    )


def _column_quirks(doc: Doc, cells: list[dict[str, Any]]) -> list[str]:
    seen = {q for c in cells for q in c.get("quirks") or [] if quirk_level(doc, q, c) != "INFO"}
    return sort_quirks(doc, seen)


def _field_cell(doc: Doc, entries: list[dict[str, Any]], quirk_doc: str) -> str:
    if not entries:
        return " "
    quirks = " ".join(_qlink(q, quirk_doc) for q in field_quirks(doc, entries))
    return " ".join(p for p in (field_mark(entries), quirks, _sources(entries)) if p)


def _impact(ok: int, judged: int) -> str:
    return f"{'✓' if ok == judged else '✗'} {ok}/{judged}" if judged else " "


def render_headline(
    doc: Doc, *, quirk_doc: str = "docs/quirks.md", report: str = "reports/quirks-matrix.md"
) -> str:
    """Markdown for the README (between its matrix markers)."""
    ids = section(doc, "providers")
    cols, index, by_col = columns_by_id(doc), cell_index(doc), cells_by_column(doc)
    lines = [
        "| scenario | " + " | ".join(f"**{esc(c)}**" for c in ids) + " |",
        "|---|" + ":-:|" * len(ids),
    ]
    for row in rows_for(doc, ids):
        marks = []
        for cid in ids:
            cell = index.get((cid, row["id"]))
            recorded = cols[cid].get("status") != "not recorded"
            marks.append(
                sym(cell["verdict"]) if cell else (" " if recorded else sym("not recorded"))
            )
        lines.append(f"| {esc(row['title'])} | " + " | ".join(marks) + " |")
    quirk_cells = [
        " ".join(_qlink(q, quirk_doc) for q in _column_quirks(doc, by_col.get(c, []))) or " "
        for c in ids
    ]
    lines.append("| *quirks recorded (SHOULD and above)* | " + " | ".join(quirk_cells) + " |")
    for s in STRATEGIES:
        marks = [_impact(*impact_summary(by_col.get(c, []), s)[:2]) for c in ids]
        lines.append(f"| *{s} client* | " + " | ".join(marks) + " |")
    if any(field_evidence(cols[c]) for c in ids):
        marks = [_field_cell(doc, field_evidence(cols[c]), quirk_doc) for c in ids]
        lines.append(f"| {FIELD_MARK} *{FIELD_TITLE}* | " + " | ".join(marks) + " |")
    lines += ["", LEGEND + f". Every cell's evidence: [{report}]({report}).", ""]
    routes = doc.get("field_providers") or []
    if routes:
        lines += [
            f"**Providers without a column** ({FIELD_MARK} {FIELD_TITLE}):",
            "",
            "| provider route | captures | quirks (SHOULD and above) | naive | guarded | "
            "robust | sources |",
            "|---|:-:|---|:-:|:-:|:-:|---|",
        ]
        for r in routes:
            entries = r["entries"]
            quirks = " ".join(_qlink(q, quirk_doc) for q in field_quirks(doc, entries)) or "–"
            impact = " | ".join(_impact(*field_impact(entries, s)) for s in STRATEGIES)
            lines.append(
                f"| {esc(r['label'])} | {field_mark(entries)} | {quirks} | {impact} | "
                f"{_sources(entries)} |"
            )
    return "\n".join(lines).rstrip() + "\n"


__all__ = ["LEGEND", "render_headline"]
