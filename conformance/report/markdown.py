"""The matrix as GitHub Markdown: one symbol per cell, a footnote per symbol to its evidence."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from conformance.report.common import (
    FIELD_MARK,
    FIELD_TITLE,
    STRATEGIES,
    SYMBOL,
    Cell,
    Doc,
    cell_index,
    cells_by_column,
    client_advice,
    column_quirks,
    columns_by_id,
    field_evidence,
    field_impact,
    field_quirks,
    field_summary,
    impact_summary,
    is_url,
    quirk_level,
    quirk_title,
    rows_for,
    section,
    server_text,
    source_name,
    symbol,
    top_findings,
    trial_counts,
    verdict_tally,
)

_ESCAPE = re.compile(r"([\\`*_\[\]<>|~])")
MAX_REFS = 3  # footnote references in one quirk-row cell


def esc(text: str) -> str:
    """Escape Markdown punctuation (also `|`, safe inside tables)."""
    return _ESCAPE.sub(r"\\\1", " ".join(str(text).split()))


def md_text(text: str) -> str:
    """Markdown-ish prose (catalogue titles, analyzer messages): its `code` spans are kept,
    the rest is escaped; pipes are escaped everywhere (tables)."""
    parts = " ".join(str(text).split()).split("`")
    if len(parts) % 2 == 0:  # unbalanced backticks: treat it all as text
        return esc(text)
    return "".join(
        f"`{p.replace('|', chr(92) + '|')}`" if i % 2 else _ESCAPE.sub(r"\\\1", p)
        for i, p in enumerate(parts)
    )


def code(text: str) -> str:
    """A code span that survives backticks and pipes in the text (pipes only in tables)."""
    t = " ".join(str(text).split()).replace("|", "\\|")
    fence = "`"
    while fence in t:
        fence += "`"
    pad = " " if t.startswith("`") or t.endswith("`") else ""
    return f"{fence}{pad}{t}{pad}{fence}"


def sym(verdict: str) -> str:
    s = symbol(verdict)
    return "\\~" if s == "~" else s


class _Notes:
    """Numbered footnotes with a prefix that will not collide with a README's own."""

    def __init__(self, prefix: str = "m"):
        self.prefix = prefix
        self.lines: list[str] = []
        self.by_cell: dict[tuple[str, str], str] = {}

    def add(self, key: tuple[str, str], text: str) -> str:
        label = f"[^{self.prefix}{len(self.lines) + 1}]"
        self.lines.append(f"{label}: {text}")
        self.by_cell[key] = label
        return label


def _finding_text(f: dict[str, Any]) -> str:
    where = f"event {f['event']}" if f.get("event") is not None else "stream"
    ptr = f" {code(f['pointer'])}" if f.get("pointer") else ""
    rule = f["rule"] + (f" → {f['quirk']}" if f.get("quirk") and f["quirk"] != f["rule"] else "")
    more = f" (×{f['count']})" if (f.get("count") or 1) > 1 else ""
    return f"{where}{ptr} {rule} [{f['level']}]{more}: {md_text(f.get('message', ''))}"


def cell_note(doc: Doc, column: dict[str, Any], row: dict[str, Any], cell: Cell | None) -> str:
    head = f"**{sym(cell['verdict'] if cell else 'not recorded')}"
    verdict = cell["verdict"] if cell else "not recorded"
    parts = [f"{head} {verdict}** · {esc(column['id'])} × {esc(row['id'])}"]
    if cell is None or verdict == "not recorded":
        if column.get("record_command"):
            parts.append("record with " + code(column["record_command"]))
        return " · ".join(parts)
    if cell.get("reason"):
        parts.append(esc(cell["reason"]))
    expected = set(cell.get("expected") or [])
    if cell.get("quirks"):
        parts.append(
            ", ".join(q + (" (expected)" if q in expected else "") for q in cell["quirks"])
        )
    shown = top_findings(cell)
    if shown:
        rest = len(cell.get("findings") or []) - len(shown)
        parts.append(
            "; ".join(_finding_text(f) for f in shown) + (f"; +{rest} more" if rest else "")
        )
    if cell.get("cassette"):
        at = f"#{cell['interaction']}" if cell.get("interaction") not in (None, 0) else ""
        parts.append("cassette " + code(cell["cassette"] + at))
    return " · ".join(parts)


def _header(ids: list[str], first: str) -> list[str]:
    return [
        "| " + first + " | " + " | ".join(f"**{esc(i)}**" for i in ids) + " |",
        "|---|" + ":-:|" * len(ids),
    ]


def _grid(doc: Doc, ids: list[str], notes: _Notes, quirk_rows: bool) -> list[str]:
    cols, index, by_col = columns_by_id(doc), cell_index(doc), cells_by_column(doc)
    out = _header(ids, "scenario")
    for row in rows_for(doc, ids):
        cells = []
        for cid in ids:
            cell = index.get((cid, row["id"]))
            if cell is None and cols[cid].get("status") != "not recorded":
                cells.append(" ")
                continue
            verdict = cell["verdict"] if cell else "not recorded"
            label = notes.add((cid, row["id"]), cell_note(doc, cols[cid], row, cell))
            cells.append(sym(verdict) + label)
        out.append(f"| {esc(row['title'])} ({code(row['id'])}) | " + " | ".join(cells) + " |")
    out.append("| *verdicts* | " + " | ".join(_tally(by_col.get(c, [])) for c in ids) + " |")
    if any(field_evidence(cols[c]) for c in ids):
        marks = [field_mark(field_evidence(cols[c])) or " " for c in ids]
        out.append(
            f"| {FIELD_MARK} *{FIELD_TITLE}* ([below](#public-recordings)) | "
            + " | ".join(marks)
            + " |"
        )
    for s in STRATEGIES:
        marks = [_impact_cell(by_col.get(c, []), s) for c in ids]
        out.append(f"| *{s} client* | " + " | ".join(marks) + " |")
    if quirk_rows:
        for q in column_quirks(doc, ids):
            out.append(_quirk_row(doc, q, ids, by_col, notes))
    return out


def _tally(cells: list[Cell]) -> str:
    """The column's verdicts counted, inconclusive apart: `✓ 11 · ? 2 · ∅ 2`."""
    return " · ".join(f"{sym(v)} {n}" for v, n in verdict_tally(cells)) or " "


def _impact_cell(cells: list[Cell], strategy: str) -> str:
    ok, judged, _ = impact_summary(cells, strategy)
    if not judged:
        return " "
    return f"{'✓' if ok == judged else '✗'} {ok}/{judged}"


def _quirk_row(
    doc: Doc, qid: str, ids: list[str], by_col: dict[str, list[Cell]], notes: _Notes
) -> str:
    cells = []
    for cid in ids:
        hits = [c for c in by_col.get(cid, []) if qid in (c.get("quirks") or [])]
        if not hits:
            cells.append(" ")
            continue
        refs = [notes.by_cell[(cid, c["row"])] for c in hits if (cid, c["row"]) in notes.by_cell]
        tail = "…" if len(refs) > MAX_REFS else ""
        counts = trial_counts(hits, qid)
        k_n = f" {counts[0]}/{counts[1]}" if counts else ""
        cells.append("\\~" + k_n + "".join(refs[:MAX_REFS]) + tail)
    title = quirk_title(doc, qid)
    name = f"{code(qid)} {md_text(title)}" if title else code(qid)
    level = quirk_level(doc, qid)
    return f"| {name} *{level}* | " + " | ".join(cells) + " |"


def _advice_lines(doc: Doc, ids: list[str]) -> list[str]:
    cols, by_col = columns_by_id(doc), cells_by_column(doc)
    out = []
    for cid in ids:
        col = cols[cid]
        if col.get("status") == "not recorded":
            cmd = col.get("record_command")
            text = "not recorded" + (f"; record with {code(cmd)}" if cmd else "")
        else:
            adv = client_advice(doc, by_col.get(cid, []))
            text = esc(adv.text()) if adv.judged else esc(col.get("client_advice") or adv.text())
        name = col["label"] if col["kind"] == "capture" else cid
        out.append(f"- **{esc(name)}**: {text}")
    return out


def _provenance_lines(doc: Doc, ids: list[str]) -> list[str]:
    cols = columns_by_id(doc)
    out = [
        "| column | label | model | server | recorded | how | cassettes |",
        "|---|---|---|---|---|---|---|",
    ]
    for cid in ids:
        c = cols[cid]
        p = c.get("provenance") or {}
        cells = [
            f"**{esc(cid)}**",
            esc(c.get("label", "")),
            code(c["model"]) if c.get("model") else "–",
            esc(server_text(c)) or "–",
            esc((p.get("recorded_at") or "–")[:10]),
            esc(p.get("how") or c.get("status", "")),
            code(p["cassette_dir"]) if p.get("cassette_dir") else "–",
        ]
        out.append("| " + " | ".join(cells) + " |")
    return out


def _captures(doc: Doc, ids: list[str], notes: _Notes) -> list[str]:
    cols, rows = columns_by_id(doc), {r["id"]: r for r in doc["rows"]}
    out = ["| capture | verdict | quirks | naive | guarded | robust |", "|---|:-:|---|:-:|:-:|:-:|"]
    for c in doc["cells"]:
        if c["column"] not in ids:
            continue
        col, row = cols[c["column"]], rows[c["row"]]
        label = notes.add((c["column"], c["row"]), cell_note(doc, col, row, c))
        impact = c.get("impact") or {}
        marks = [
            f"{'✓' if impact[s]['status'] == 'ok' else '✗'} {impact[s]['status']}"
            if s in impact
            else "–"
            for s in STRATEGIES
        ]
        quirks = ", ".join(code(q) for q in c.get("quirks") or []) or "–"
        name = code(col["label"] if col.get("label") else col["id"])
        out.append(
            f"| {name} | {sym(c['verdict'])}{label} | {quirks} | " + " | ".join(marks) + " |"
        )
    return out


def _profiles(doc: Doc, ids: list[str], notes: _Notes) -> list[str]:
    """One row per reference profile: it runs one scenario, so expected vs. observed."""
    cols = columns_by_id(doc)
    rows = {r["id"]: r for r in doc["rows"]}
    out = [
        "| profile | scenario | verdict | injects (expected) | analysis reports | match |",
        "|---|---|:-:|---|---|:-:|",
    ]
    for c in doc["cells"]:
        if c["column"] not in ids:
            continue
        col = cols[c["column"]]
        label = notes.add((c["column"], c["row"]), cell_note(doc, col, rows[c["row"]], c))
        expected = sorted(col.get("expected_quirks") or {})
        judged = sorted(
            q for q in c.get("quirks") or [] if quirk_level(doc, q, c) != "INFO" or q in expected
        )
        ok = set(judged) <= set(expected) | _implied(expected) and set(expected) <= set(judged)
        out.append(
            f"| {code(col.get('label') or col['id'])} | `{c['row']}` | {sym(c['verdict'])}{label}"
            f" | {', '.join(code(q) for q in expected) or '–'}"
            f" | {', '.join(code(q) for q in judged) or '–'} | {'✓' if ok else '✗'} |"
        )
    return out


def _implied(quirks: list[str]) -> set[str]:
    from conformance import registry

    return {c for q in quirks for c in registry.implied(q)}


def field_mark(entries: list[dict[str, Any]]) -> str:
    """``◇ \\~1 ✓2``: the field mark, then each verdict with its number of captures."""
    if not entries:
        return ""
    return FIELD_MARK + " " + " ".join(f"{sym(v)}{n}" for v, n in field_summary(entries))


def source_link(url: str) -> str:
    return f"[{esc(source_name(url))}]({url})" if is_url(url) else code(url)


def _impact_marks(entries: list[dict[str, Any]]) -> list[str]:
    out = []
    for s in STRATEGIES:
        ok, judged = field_impact(entries, s)
        out.append(f"{'✓' if ok == judged else '✗'} {ok}/{judged}" if judged else "–")
    return out


def _field_lines(doc: Doc, ids: list[str]) -> list[str]:
    """Per provider column, each public recording: verdict, quirks, client impact, source."""
    cols = columns_by_id(doc)
    out = [
        "| column | model | verdict | quirks | naive | guarded | robust | source |",
        "|---|---|:-:|---|:-:|:-:|:-:|---|",
    ]
    for cid in ids:
        for e in field_evidence(cols[cid]):
            quirks = ", ".join(code(q) for q in e.get("quirks") or []) or "–"
            verdict = sym(e["verdict"]) + (f" {esc(e['reason'])}" if e.get("reason") else "")
            out.append(
                f"| **{esc(cid)}** | {code(e['model']) if e.get('model') else '–'} | "
                f"{FIELD_MARK} {verdict} | {quirks} | "
                + " | ".join(_impact_marks([e]))
                + f" | {source_link(e['source'])} |"
            )
    return out


def _field_provider_lines(doc: Doc) -> list[str]:
    """One row per provider route without a column: what a reader most wants to know."""
    out = [
        "| provider route | models | captures | quirks (SHOULD and above) | naive | guarded "
        "| robust | sources |",
        "|---|---|:-:|---|:-:|:-:|:-:|---|",
    ]
    for r in doc.get("field_providers") or []:
        entries = r["entries"]
        models = ", ".join(code(m) for m in sorted({e["model"] for e in entries if e.get("model")}))
        quirks = ", ".join(code(q) for q in field_quirks(doc, entries)) or "–"
        sources = " ".join(
            f"[{i}]({e['source']})" if is_url(e["source"]) else code(e["source"])
            for i, e in enumerate(entries, 1)
        )
        out.append(
            f"| {esc(r['label'])} | {models or '–'} | {field_mark(entries)} | {quirks} | "
            + " | ".join(_impact_marks(entries))
            + f" | {sources} |"
        )
    return out


_QUIRK_CODE = re.compile(r"`(Q-[A-Z0-9][A-Z0-9-]*[A-Z0-9])`")
_QUIRK_BARE = re.compile(r"(?<![\w`\[#/-])(Q-[A-Z0-9][A-Z0-9-]*[A-Z0-9])(?![\w`\]-])")


def link_quirks(markdown: str, known: Iterable[str], quirk_doc: str) -> str:
    """Every catalogued quirk id becomes a link to its entry in ``quirk_doc``
    (docs/quirks.md, whose headings are the ids: the anchor is the id in lower case)."""
    ids = set(known)

    def link(m: re.Match[str], fmt: str) -> str:
        q = m.group(1)
        return fmt.format(q=q, href=f"{quirk_doc}#{q.lower()}") if q in ids else m.group(0)

    markdown = _QUIRK_CODE.sub(lambda m: link(m, "[`{q}`]({href})"), markdown)
    return _QUIRK_BARE.sub(lambda m: link(m, "[{q}]({href})"), markdown)


LEGEND = (
    "✓ conforms · \\~ quirk (catalogued deviation; the robust client still assembles the right "
    "calls) · ✗ fails (a MUST rule broken, or unrecoverable) · ! error (transport/HTTP/protocol) "
    "· ? inconclusive (the model did not produce what the scenario tests: no call, fewer calls "
    "than it needs, another tool, prose; a deviation seen on the wire still rates ✗, ! or "
    "\\~) · – unsupported · ∅ not recorded{field} "
    "*Verdicts row*: the column's cells counted by "
    "verdict, inconclusive apart. *Client rows*: how many recorded scenarios each "
    "accumulator assembled correctly (naive = overwrite when present; guarded = overwrite when "
    "non-empty; robust = `conformance.client`); an inconclusive cell counts there too, since "
    "its stream was assembled all the same."
)
FIELD_LEGEND = (
    " · ◇ seen in public recordings, not recorded by this suite (the verdicts of "
    "those captures with their number; never a cell's verdict)."
)


def _has_field_evidence(doc: Doc) -> bool:
    return bool(doc.get("field_providers")) or any(
        c.get("field_evidence") for c in doc.get("columns") or []
    )


def render_markdown(doc: Doc, *, heading_level: int = 2, quirk_doc: str | None = None) -> str:
    """The matrix as GitHub Markdown (tables, client advice, legend, footnotes).
    ``quirk_doc``: where the quirk catalogue page is (docs/quirks.md, relative to the
    output); every quirk id then links to its entry."""
    h = "#" * heading_level
    sub = "#" * (heading_level + 1)
    notes = _Notes()
    lines = [f"{h} {esc(doc.get('title') or 'Streaming tool-call conformance')}", ""]
    lines.append(
        f"Generated {esc(doc.get('generated') or '–')} · suite {esc(doc['suite_version'])} · "
        f"mode {esc(doc['mode'])}"
    )
    providers = section(doc, "providers")
    if providers:
        lines += ["", *_grid(doc, providers, notes, quirk_rows=True), ""]
        lines += [f"{sub} What your client must do", "", *_advice_lines(doc, providers), ""]
        lines += [f"{sub} Provenance", "", *_provenance_lines(doc, providers)]
        if any(field_evidence(columns_by_id(doc)[c]) for c in providers):
            lines += [
                "",
                '<a id="public-recordings"></a>',
                "",
                f"{sub} Seen in public recordings (not recorded by this suite)",
                "",
                "Captures of these providers' streams recorded by other public projects, "
                "analysed by `toolcall-conformance analyze` (`python3 noxw -s field -- DIR` "
                f"regenerates them). Marked {FIELD_MARK}; they never fill a cell above: a "
                "`not recorded` cell stays `not recorded`.",
                "",
                *_field_lines(doc, providers),
            ]
    if doc.get("field_providers"):
        lines += [
            "",
            f"{sub} Providers without a column: public recordings only",
            "",
            f"{FIELD_MARK} seen in public recordings, not recorded by this suite; one row "
            "per provider route. Client columns: captures each accumulator assembled "
            "correctly.",
            "",
            *_field_provider_lines(doc),
        ]
    profiles = section(doc, "reference_profiles")
    if profiles:
        lines += [
            "",
            f"{sub} Reference profiles (end-to-end negative controls)",
            "",
            "Each profile of `toolcall-conformance serve` injects catalogued quirks into OpenAI's "
            "shape; recorded over HTTP, replayed and analysed like a provider, it must "
            "show exactly those quirks (INFO-level notes aside).",
            "",
        ]
        lines += _profiles(doc, profiles, notes)
    from conformance.report import gateway

    lines += gateway.render_markdown(doc, sub)
    from conformance.report import parsers

    lines += parsers.render_markdown(doc, sub)
    captures = section(doc, "captures")
    if captures:
        lines += ["", f"{sub} Captures", "", *_captures(doc, captures, notes), ""]
        lines += [f"{sub} What your client must do (captures)", ""]
        lines += _advice_lines(doc, captures)
    # The ◇ mark is explained only where it appears (a run's report has none).
    legend = LEGEND.format(field=FIELD_LEGEND if _has_field_evidence(doc) else ".")
    lines += ["", f"{sub} Legend", "", legend, ""]
    lines += notes.lines
    text = "\n".join(lines).rstrip() + "\n"
    return link_quirks(text, doc.get("quirks") or {}, quirk_doc) if quirk_doc else text


__all__ = [
    "SYMBOL",
    "cell_note",
    "code",
    "esc",
    "field_mark",
    "link_quirks",
    "md_text",
    "render_markdown",
    "source_link",
]
