"""The matrix as one self-contained HTML file: static tables, the matrix JSON, vanilla JS.

The tables are rendered here (readable without JavaScript, and from file://); the script
inlined from ``report.js`` adds the filters and the evidence panel from the embedded JSON.
Catalogue text appears once, in the page's "Quirks" section; cells only reference it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from functools import cache
from html import escape
from importlib import resources
from typing import Any

from conformance.report.common import (
    FIELD_MARK,
    FIELD_TITLE,
    STRATEGIES,
    VERDICTS,
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
    rows_for,
    section,
    server_text,
    sort_quirks,
    source_name,
    symbol,
    trial_counts,
    verdict_tally,
)

DENSE = 12  # more columns than this: vertical column headers
SECTIONS = (
    ("providers", "Providers"),
    ("reference_profiles", "Reference profiles"),
    ("captures", "Captures"),
)
_TOKEN = re.compile(r"\{\{(\w+)\}\}")
_CODE = re.compile(r"`([^`]+)`")
# A URL may hold balanced parentheses (".../Foo_(bar)"); a ")" with no "(" in the URL ends
# it, as in prose "(see https://…)".
_URL = re.compile(
    r"https?://(?:[^\s<>()\"';,]|\([^\s<>()\"']*\))*(?:[^\s<>()\"';,.]|\([^\s<>()\"']*\))"
)


def e(value: Any) -> str:
    return escape(str(value), quote=True)


def slug(verdict: str) -> str:
    return verdict.replace(" ", "-")


@cache
def _asset(name: str) -> str:
    return resources.files("conformance.report").joinpath(name).read_text("utf-8")


# The catalogue's inline Markdown (the subset it uses): [text](http…) links, bare URLs,
# **bold** and *emphasis*, `code` spans (nothing is read inside one). Everything is escaped: a
# piece of markup is produced only by these patterns, never copied from the text.
_INLINE = re.compile(
    r"`(?P<c>[^`]+)`"
    r"|\[(?P<lt>[^\]]+)\]\((?P<lu>https?://(?:[^\s()]|\([^\s()]*\))+)\)"
    r"|(?P<url>" + _URL.pattern + r")"
    r"|\*\*(?P<b>[^*\s](?:[^*]*[^*\s])?)\*\*"
    r"|(?<![\w*])\*(?P<i>[^*\s](?:[^*]*[^*\s])?)\*(?![\w*])"
)


def _inline(text: str) -> str:
    out, last = [], 0
    for m in _INLINE.finditer(text):
        out.append(e(text[last : m.start()]))
        if m.group("c"):
            out.append(f"<code>{e(m.group('c'))}</code>")
        elif m.group("lu"):
            out.append(
                f'<a href="{e(m.group("lu"))}" rel="noreferrer">{_inline(m.group("lt"))}</a>'
            )
        elif m.group("url"):
            out.append(f'<a href="{e(m.group("url"))}" rel="noreferrer">{e(m.group("url"))}</a>')
        elif m.group("b"):
            out.append(f"<strong>{_inline(m.group('b'))}</strong>")
        else:
            out.append(f"<em>{_inline(m.group('i'))}</em>")
        last = m.end()
    out.append(e(text[last:]))
    return "".join(out)


def rich(text: str) -> str:
    """Catalogue prose to HTML: escaped, `code` spans, links, **bold** and *emphasis*."""
    return _inline(text or "")


def quirk_href(doc: Doc, qid: str, catalogue_url: str) -> str:
    anchor = ((doc.get("quirks") or {}).get(qid) or {}).get("anchor")
    return catalogue_url + anchor if catalogue_url and anchor else f"#quirk-{qid}"


MIN_PREFIX = 40  # shortest shared evidence prefix worth factoring out
MIN_SUFFIX = 12  # and suffix


def _common_prefix(texts: list[str]) -> str:
    if len(texts) < 2:
        return ""
    lo, hi = min(texts), max(texts)
    n = 0
    while n < len(lo) and lo[n] == hi[n]:
        n += 1
    return lo[:n]


def _page_cell(cell: Cell) -> Cell:
    """A cell as the page needs it: no analyzer meta, no single-trial counts, no empty
    fields, strategies' calls only where they differ from the robust ones, excerpts only
    where the wire log cannot show them, and the chunk envelope shared by the evidence
    events factored out (`evidence_prefix`, restored by the script)."""
    c = {
        k: v
        for k, v in cell.items()
        if k != "meta" and (k == "finish_reason" or v not in (None, [], {}, ""))
    }
    if (c.get("trials") or {}).get("n", 1) <= 1:
        c.pop("trials", None)
    calls = c.get("tool_calls")
    if calls and "robust" in calls:
        # only what the panel shows (index, id, name, arguments), and the other strategies'
        # calls only where they differ from the robust ones
        keep = ("index", "id", "name", "arguments")
        c["tool_calls"] = {
            s: [{k: x[k] for k in keep if k in x} for x in v]
            for s, v in calls.items()
            if s == "robust" or v != calls["robust"]
        }
    if c.get("impact"):
        c["impact"] = {
            s: {k: v for k, v in i.items() if k != "detail" or v} for s, i in c["impact"].items()
        }
    evidence = [
        {k: v for k, v in e.items() if k != "highlight" or v} for e in c.get("evidence") or []
    ]
    shown = {(e.get("exchange", 0), e["n"]) for e in evidence if not e["data"].endswith("…")}
    if c.get("findings"):
        c["findings"] = [
            {k: v for k, v in f.items() if k != "excerpt"}
            if (f.get("exchange", 0), f.get("event")) in shown and f.get("pointer") is not None
            else f
            for f in c["findings"]
        ]
    prefix = _common_prefix([e["data"] for e in evidence if e["kind"] == "chunk"])
    if len(prefix) >= MIN_PREFIX:
        c["evidence_prefix"] = prefix
        evidence = [
            dict(e, data=e["data"][len(prefix) :]) if e["kind"] == "chunk" else e for e in evidence
        ]
    # ... and the tail most chunk events share (`,"logprobs":null,"finish_reason":null}]}`);
    # an event without it is marked `x` (kept whole).
    chunks = [e["data"] for e in evidence if e["kind"] == "chunk" and len(e["data"]) > MIN_SUFFIX]
    if len(chunks) >= 2:
        tail = Counter(d[-MIN_SUFFIX:] for d in chunks).most_common(1)[0][0]
        suffix = _common_prefix([d[::-1] for d in chunks if d.endswith(tail)] * 2)[::-1]
        if len(suffix) >= MIN_SUFFIX:
            c["evidence_suffix"] = suffix
            evidence = [
                e
                if e["kind"] != "chunk"
                else dict(e, data=e["data"][: -len(suffix)])
                if e["data"].endswith(suffix) and len(e["data"]) > len(suffix)
                else dict(e, x=1)
                for e in evidence
            ]
    if evidence:
        c["evidence"] = evidence
    return c


def page_data(doc: Doc) -> Doc:
    """The compact copy of the matrix embedded in the page (the full document is the JSON
    file next to it): catalogue prose lives once in the page's Quirks section, rules are
    the referenced ones, cells as in ``_page_cell``."""
    used_rules = {f["rule"] for c in doc["cells"] for f in c.get("findings") or []}
    out = {k: v for k, v in doc.items() if k not in ("cells", "quirks", "rules")}
    out["quirks"] = {
        q: {k: e[k] for k in ("title", "level", "anchor", "group") if k in e}
        for q, e in (doc.get("quirks") or {}).items()
    }
    out["rules"] = {r: v for r, v in (doc.get("rules") or {}).items() if r in used_rules}
    out["cells"] = [_page_cell(c) for c in doc["cells"]]
    _intern_finding_texts(out)
    return out


def _intern_finding_texts(page: Doc) -> None:
    """Finding messages and excerpts repeat across cells (the same quirk, the same words):
    each text that occurs more than once is stored once in ``strings`` and referenced by
    its index; the page's script puts the text back."""

    def slots(c: Cell) -> Any:
        for f in c.get("findings") or []:
            yield f, "message"
            yield f, "excerpt"
        for i in (c.get("impact") or {}).values():
            yield i, "detail"

    counts: dict[str, int] = {}
    for c in page["cells"]:
        for obj, k in slots(c):
            if isinstance(obj.get(k), str):
                counts[obj[k]] = counts.get(obj[k], 0) + 1
    table: dict[str, int] = {}
    for c in page["cells"]:
        for obj, k in slots(c):
            text = obj.get(k)
            if isinstance(text, str) and counts[text] > 1 and len(text) > 8:
                obj[k] = table.setdefault(text, len(table))
    page["strings"] = list(table)


def _json_for_script(doc: Doc) -> str:
    text = json.dumps(page_data(doc), ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


# ------------------------------------------------------------------------------ pieces


def _select(name: str, label: str, options: list[tuple[str, str]]) -> str:
    opts = "".join(f'<option value="{e(v)}">{e(t)}</option>' for v, t in options)
    off = " disabled" if len(options) < 2 else ""
    return (
        f'<label for="filter-{name}">{e(label)}<select id="filter-{name}" '
        f'data-testid="filter-{name}" name="{name}"{off}>{opts}</select></label>'
    )


def _controls(doc: Doc, quirks: list[str]) -> str:
    cols = columns_by_id(doc)
    providers = [("", "all providers")] + [
        (cid, f"{cid} — {cols[cid]['label']}" if cols[cid]["label"] != cid else cid)
        for cid in section(doc, "providers")
    ]
    scenarios = [("", "all scenarios")] + [(r["id"], r["title"]) for r in doc["rows"]]
    verdicts = [("", "all verdicts"), ("deviating", "quirk, fails or error")]
    verdicts += [(v, f"{symbol(v)} {v}") for v in VERDICTS]
    qopts = [("", "all quirks")] + [
        (q, f"{q} — {(doc['quirks'].get(q) or {}).get('title', '')}") for q in quirks
    ]
    return "".join(
        [
            _select("provider", "Provider", providers),
            _select("scenario", "Scenario", scenarios),
            _select("verdict", "Verdict", verdicts),
            _select("quirk", "Quirk", qopts),
            '<button type="reset" id="filter-reset" data-testid="filter-reset">Reset</button>',
            '<span id="filter-count" aria-live="polite"></span>',
        ]
    )


def _column_tip(col: dict[str, Any]) -> str:
    p = col.get("provenance") or {}
    bits = [col["label"]]
    if col.get("model"):
        bits.append(f"model {col['model']}")
    if server_text(col):
        bits.append(f"server {server_text(col)}")
    if p.get("recorded_at"):
        bits.append(f"recorded {p['recorded_at']}")
    if p.get("how"):
        bits.append(p["how"])
    if col.get("status") == "not recorded":
        bits.append("not recorded")
    return " · ".join(bits)


def _head(doc: Doc, ids: list[str], corner: str) -> str:
    cols = columns_by_id(doc)
    ths = [f'<th class="corner" scope="col">{e(corner)}</th>']
    for cid in ids:
        col = cols[cid]
        nr = ' class="nr"' if col.get("status") == "not recorded" else ""
        sub = "not recorded" if nr else (col.get("model") or "")
        sub = "" if sub == cid else sub
        sub_html = f'<span class="sub">{e(sub)}</span>' if sub else ""
        ths.append(
            f'<th scope="col"{nr} data-column="{e(cid)}" title="{e(_column_tip(col))}">'
            f"{e(cid)}{sub_html}</th>"
        )
    return "<thead><tr>" + "".join(ths) + "</tr></thead>"


def _cell(cid: str, rid: str, cell: Cell | None, recorded: bool) -> str:
    if cell is None and recorded:
        return f'<td class="c" data-verdict="" data-column="{e(cid)}" data-row="{e(rid)}"></td>'
    verdict = cell["verdict"] if cell else "not recorded"
    quirks = set((cell or {}).get("quirks") or [])
    expected = bool(quirks) and quirks <= set((cell or {}).get("expected") or [])
    cls = "c expected" if expected else "c"
    label = verdict + (", expected quirks" if expected else "")
    return (
        f'<td class="{cls}" data-verdict="{e(verdict)}" data-column="{e(cid)}" '
        f'data-row="{e(rid)}"><button aria-label="{e(label)}">{symbol(verdict)}</button></td>'
    )


def _grid(doc: Doc, name: str, ids: list[str]) -> str:
    cols, index, by_col = columns_by_id(doc), cell_index(doc), cells_by_column(doc)
    dense = " dense" if len(ids) > DENSE else ""
    parts = [
        f'<div class="grid-wrap"><table class="grid{dense}" data-section="{name}" data-layout="grid">'
    ]
    parts.append(_head(doc, ids, "Scenario"))
    parts.append('<tbody class="scenarios">')
    for row in rows_for(doc, ids):
        rid = row["id"]
        tip = f' title="{e(row["description"])}"' if row.get("description") else ""
        tds = "".join(
            _cell(cid, rid, index.get((cid, rid)), cols[cid].get("status") != "not recorded")
            for cid in ids
        )
        parts.append(
            f'<tr data-row="{e(rid)}"><th scope="row"{tip}>{e(row["title"])} '
            f"<code>{e(rid)}</code></th>{tds}</tr>"
        )
    parts.append("</tbody>")
    parts.append(_tally_row(ids, by_col))
    parts.append(_field_row(doc, ids))
    parts.append(_impact_rows(ids, by_col, len(ids)))
    parts.append(_quirk_rows(doc, ids, by_col))
    parts.append("</table></div>")
    return "".join(parts)


def _tally_row(ids: list[str], by_col: dict[str, list[Cell]]) -> str:
    """Each column's cells counted by verdict, inconclusive apart from the conclusive ones."""
    tds = []
    for cid in ids:
        marks = "".join(
            f'<span class="sw v-{slug(v)}" data-verdict="{e(v)}" title="{n} {e(v)}">'
            f"{symbol(v)}&#8239;{n}</span>"
            for v, n in verdict_tally(by_col.get(cid, []))
        )
        tds.append(f'<td class="t" data-column="{e(cid)}">{marks}</td>')
    return (
        '<tbody class="tally"><tr><th scope="row" title="cells per verdict; inconclusive '
        f'cells are counted apart">Verdicts</th>{"".join(tds)}</tr></tbody>'
    )


def _field_text(entries: list[dict[str, Any]]) -> str:
    return " ".join(f"{symbol(v)}{n}" for v, n in field_summary(entries))


def _field_row(doc: Doc, ids: list[str]) -> str:
    """Public recordings of each provider: their own mark and row, never a cell."""
    cols = columns_by_id(doc)
    if not any(field_evidence(cols[c]) for c in ids):
        return ""
    tds = []
    for cid in ids:
        entries = field_evidence(cols[cid])
        if not entries:
            tds.append(f'<td class="fe" data-column="{e(cid)}"></td>')
            continue
        tip = f"{len(entries)} public recording(s) of {cid}: {FIELD_TITLE}"
        tds.append(
            f'<td class="fe hit" data-column="{e(cid)}" title="{e(tip)}">'
            f'<a href="#field-{e(cid)}"><span class="mark">{FIELD_MARK}</span> '
            f"{e(_field_text(entries))}</a></td>"
        )
    return (
        '<tbody class="field"><tr class="field-row"><th scope="row">'
        f'<span class="mark">{FIELD_MARK}</span> Public recordings '
        f'<span class="qt">{e(FIELD_TITLE)}</span></th>{"".join(tds)}</tr></tbody>'
    )


def _qlinks(qs: Iterable[str]) -> str:
    return ", ".join(f'<a href="#quirk-{e(q)}"><code>{e(q)}</code></a>' for q in qs) or "–"


def _source(url: str) -> str:
    if is_url(url):
        return f'<a href="{e(url)}" rel="noreferrer">{e(source_name(url))}</a>'
    return f"<code>{e(url)}</code>"


def _impact_tds(entries: list[dict[str, Any]]) -> str:
    out = []
    for s in STRATEGIES:
        ok, judged = field_impact(entries, s)
        if not judged:
            out.append("<td>–</td>")
            continue
        good = ok == judged
        out.append(
            f'<td class="{"ok" if good else "bad"}">{"✓" if good else "✗"} {ok}/{judged}</td>'
        )
    return "".join(out)


def _field_section(doc: Doc, ids: list[str]) -> str:
    """Per provider column, its public recordings; then the providers without a column."""
    cols = columns_by_id(doc)
    strategies = "".join(f"<th>{s}</th>" for s in STRATEGIES)
    rows = []
    for cid in ids:
        for x in field_evidence(cols[cid]):
            reason = f" {e(x['reason'])}" if x.get("reason") else ""
            rows.append(
                f'<tr id="field-{e(cid)}" data-column="{e(cid)}" data-verdict="{e(x["verdict"])}">'
                f'<th scope="row">{e(cid)}</th><td><code>{e(x.get("model") or "–")}</code></td>'
                f'<td class="fv"><span class="mark">{FIELD_MARK}</span> '
                f"{symbol(x['verdict'])} {e(x['verdict'])}{reason}</td>"
                f"<td>{_qlinks(x.get('quirks') or [])}</td>{_impact_tds([x])}"
                f"<td>{_source(x['source'])}</td></tr>"
            )
    # only the first row of a column carries the anchor the grid links to
    seen: set[str] = set()
    for i, r in enumerate(rows):
        cid = r.split('data-column="', 1)[1].split('"', 1)[0]
        if cid in seen:
            rows[i] = r.replace(f' id="field-{cid}"', "", 1)
        seen.add(cid)
    parts = []
    if rows:
        parts.append(
            '<table class="plain field" data-layout="field"><thead><tr><th>Column</th>'
            f"<th>Model</th><th>Verdict</th><th>Quirks</th>{strategies}<th>Source</th></tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table>"
        )
    routes = doc.get("field_providers") or []
    if routes:
        body = []
        for r in routes:
            entries = r["entries"]
            models = ", ".join(sorted({x["model"] for x in entries if x.get("model")})) or "–"
            sources = " ".join(
                f'<a href="{e(x["source"])}" rel="noreferrer">[{i}]</a>'
                if is_url(x["source"])
                else f"<code>{e(x['source'])}</code>"
                for i, x in enumerate(entries, 1)
            )
            body.append(
                f'<tr data-route="{e(r["route"])}"><th scope="row">{e(r["label"])}</th>'
                f'<td><code>{e(models)}</code></td><td class="fv"><span class="mark">'
                f"{FIELD_MARK}</span> {e(_field_text(entries))}</td>"
                f"<td>{_qlinks(field_quirks(doc, entries))}</td>{_impact_tds(entries)}"
                f"<td>{sources}</td></tr>"
            )
        parts.append(
            "<h3>Providers without a column: public recordings only</h3>"
            '<table class="plain field-providers"><thead><tr><th>Provider route</th>'
            "<th>Models</th><th>Captures</th><th>Quirks (SHOULD and above)</th>"
            f"{strategies}<th>Sources</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
        )
    if not parts:
        return ""
    return (
        '<section id="public-recordings"><h2>Public recordings <span class="count">'
        f'{e(FIELD_TITLE)}</span></h2><p class="note"><span class="mark">{FIELD_MARK}'
        "</span> Streams of these providers recorded by other public projects and analysed "
        "by <code>toolcall-conformance analyze</code>: a kind of evidence of its own, which never fills "
        "a cell of the table above (a <code>not recorded</code> cell stays "
        "<code>not recorded</code>).</p>" + "".join(parts) + "</section>"
    )


def _impact_rows(ids: list[str], by_col: dict[str, list[Cell]], width: int) -> str:
    out = [
        f'<tbody class="group-head"><tr><th scope="rowgroup">Client impact</th>'
        f'<td colspan="{width}"></td></tr></tbody><tbody class="impact">'
    ]
    for s in STRATEGIES:
        tds = []
        for cid in ids:
            ok, judged, bad = impact_summary(by_col.get(cid, []), s)
            if not judged:
                tds.append(f'<td class="i" data-column="{e(cid)}"></td>')
                continue
            good = ok == judged
            tip = "assembles every recorded scenario" if good else "wrong on: " + ", ".join(bad)
            tds.append(
                f'<td class="i {"ok" if good else "bad"}" data-column="{e(cid)}" '
                f'data-strategy="{s}" title="{e(tip)}">{"✓" if good else "✗"} {ok}/{judged}</td>'
            )
        out.append(f'<tr data-strategy="{s}"><th scope="row">{s} client</th>{"".join(tds)}</tr>')
    out.append("</tbody>")
    return "".join(out)


def _quirk_rows(doc: Doc, ids: list[str], by_col: dict[str, list[Cell]]) -> str:
    quirks = column_quirks(doc, ids)
    if not quirks:
        return ""
    out = [
        f'<tbody class="group-head"><tr><th scope="rowgroup">Quirks seen</th>'
        f'<td colspan="{len(ids)}"></td></tr></tbody><tbody class="quirk-rows">'
    ]
    for q in quirks:
        level = quirk_level(doc, q)
        title = (doc["quirks"].get(q) or {}).get("title", "")
        tds = []
        for cid in ids:
            hits = [c for c in by_col.get(cid, []) if q in (c.get("quirks") or [])]
            if not hits:
                tds.append(f'<td class="q" data-column="{e(cid)}"></td>')
                continue
            kn = trial_counts(hits, q)
            text = f"~ {kn[0]}/{kn[1]}" if kn else "~"
            where = ", ".join(c["row"] for c in hits)
            tds.append(
                f'<td class="q hit" data-column="{e(cid)}" data-quirk="{e(q)}" '
                f'title="{e(q)} in {e(where)}">{text}</td>'
            )
        out.append(
            f'<tr class="q-{level.lower()}" data-quirk="{e(q)}"><th scope="row" title="{e(title)}">'
            f'<a href="#quirk-{e(q)}">{e(q)}</a><span class="lvl lvl-{level}">{level}</span>'
            f'<span class="qt">{rich(title)}</span></th>{"".join(tds)}</tr>'
        )
    out.append("</tbody>")
    return "".join(out)


def _list_table(doc: Doc, ids: list[str], section: str) -> str:
    """One row per column, for columns judged on one scenario: field captures, and the
    reference profiles (what a profile injects next to what the analysis reported)."""
    profiles = section == "reference_profiles"
    cols, rows = columns_by_id(doc), {r["id"]: r for r in doc["rows"]}
    head = (
        f'<table class="plain" data-section="{e(section)}" data-layout="list"><thead><tr>'
        f"<th>{'Profile' if profiles else 'Capture'}</th><th>Verdict</th>"
        + ("<th>Injects</th><th>Analysis reports</th>" if profiles else "<th>Quirks</th>")
        + "".join(f"<th>{s}</th>" for s in STRATEGIES)
        + f"<th>{'Match' if profiles else 'Model'}</th></tr></thead><tbody>"
    )
    body = []
    wanted = set(ids)

    def links(qs: Iterable[str]) -> str:
        return ", ".join(f'<a href="#quirk-{e(q)}"><code>{e(q)}</code></a>' for q in qs) or "–"

    for c in doc["cells"]:
        if c["column"] not in wanted:
            continue
        col = cols[c["column"]]
        impact = c.get("impact") or {}
        marks = "".join(
            f'<td class="{"ok" if impact[s]["status"] == "ok" else "bad"}">'
            f"{'✓' if impact[s]['status'] == 'ok' else '✗'} {e(impact[s]['status'])}</td>"
            if s in impact
            else "<td>–</td>"
            for s in STRATEGIES
        )
        row_title = rows[c["row"]]["title"] if c["row"] != "capture" else ""
        if profiles:
            expected = sorted(col.get("expected_quirks") or {})
            seen = [
                q
                for q in c.get("quirks") or []
                if quirk_level(doc, q, c) != "INFO" or q in expected
            ]
            ok = set(expected) <= set(seen) <= set(expected) | _implied(expected)
            middle = f"<td>{links(expected)}</td><td>{links(seen)}</td>"
            last = f'<td class="{"ok" if ok else "bad"}">{"✓" if ok else "✗"}</td>'
        else:
            middle = f"<td>{links(c.get('quirks') or [])}</td>"
            last = f"<td>{e(col.get('model') or '–')}</td>"
        body.append(
            f'<tr data-column="{e(col["id"])}" data-row="{e(c["row"])}">'
            f'<th scope="row" title="{e(col["id"])}"><code>{e(col["label"])}</code>'
            f"{' · ' + e(row_title) if row_title else ''}</th>"
            + _cell(col["id"], c["row"], c, True)
            + middle
            + marks
            + last
            + "</tr>"
        )
    return head + "".join(body) + "</tbody></table>"


def _implied(quirks: list[str]) -> set[str]:
    from conformance import registry

    return {c for q in quirks for c in registry.implied(q)}


def _advice(doc: Doc, ids: list[str]) -> str:
    cols, by_col = columns_by_id(doc), cells_by_column(doc)
    items = []
    for cid in ids:
        col = cols[cid]
        if col.get("status") == "not recorded":
            cmd = col.get("record_command")
            text = "not recorded" + (f"; record with <code>{e(cmd)}</code>" if cmd else "")
        else:
            adv = client_advice(doc, by_col.get(cid, []))
            text = e(adv.text() if adv.judged else col.get("client_advice") or adv.text())
        name = col["label"] if col["kind"] == "capture" else cid
        items.append(
            f'<li data-column="{e(cid)}" title="{e(cid)}"><strong>{e(name)}</strong>: {text}</li>'
        )
    return '<ul class="advice">' + "".join(items) + "</ul>"


def _provenance(doc: Doc, ids: list[str]) -> str:
    cols = columns_by_id(doc)
    head = (
        '<table class="plain provenance"><thead><tr><th>Column</th><th>Kind</th><th>Label</th>'
        "<th>Model</th><th>Server</th><th>Seen on the wire</th><th>Recorded</th><th>How</th>"
        "<th>Cassettes</th><th>Status</th></tr></thead><tbody>"
    )
    body = []
    for cid in ids:
        c = cols[cid]
        p = c.get("provenance") or {}
        seen = ((p.get("server") or {}).get("seen")) or {}
        seen_bits = [
            f"{k}: {', '.join(v) if isinstance(v, list) else v}" for k, v in seen.items() if v
        ]
        status = c.get("status", "")
        if status == "not recorded" and c.get("record_command"):
            status_html = f"not recorded — <code>{e(c['record_command'])}</code>"
        else:
            status_html = e(status)
        vers = (
            f" (suite {p['suite_version_at_record']})" if p.get("suite_version_at_record") else ""
        )
        body.append(
            f'<tr data-column="{e(cid)}"><th scope="row" title="{e(cid)}">'
            f"{e(c['label'] if c['kind'] == 'capture' else cid)}</th><td>{e(c['kind'])}</td>"
            f"<td>{e(c['label'])}</td><td>{e(c.get('model') or '–')}</td>"
            f"<td>{e(server_text(c) or '–')}</td>"
            f'<td class="mono">{e("; ".join(seen_bits) or "–")}</td>'
            f"<td>{e(p.get('recorded_at') or '–')}{e(vers)}</td><td>{e(p.get('how') or '–')}</td>"
            f"<td><code>{e(p.get('cassette_dir') or '–')}</code></td><td>{status_html}</td></tr>"
        )
    return head + "".join(body) + "</tbody></table>"


def _quirks(doc: Doc, quirks: list[str], catalogue_url: str) -> str:
    out = []
    for q in quirks:
        entry = doc["quirks"].get(q) or {}
        level = quirk_level(doc, q)
        group = entry.get("group_title") or entry.get("group") or ""
        ext = ""
        if catalogue_url and entry.get("anchor"):
            ext = f' · <a href="{e(catalogue_url + entry["anchor"])}">catalogue entry ↗</a>'
        ref = " · reference behaviour" if entry.get("reference_behaviour") else ""
        rows = "".join(
            f"<dt>{label}</dt><dd>{rich(entry[key])}</dd>"
            for key, label in (
                ("breaks", "Breaks"),
                ("workaround", "Workaround"),
                ("sources", "Sources"),
            )
            if entry.get(key)
        )
        out.append(
            f'<article class="quirk" id="quirk-{e(q)}"><h3><code>{e(q)}</code> '
            f'{rich(entry.get("title", ""))}<span class="lvl lvl-{level}">{level}</span></h3>'
            f'<p class="meta">group {e(group)}{ref}{ext}</p><dl>{rows}</dl></article>'
        )
    return "".join(out)


VERDICT_TIPS = {
    "inconclusive": "the model did not produce what the scenario tests (no call, fewer calls "
    "than it needs, another tool, prose); a deviation seen on the wire still rates fails, "
    "error or quirk",
}


def _tip(text: str | None) -> str:
    return f' title="{e(text)}"' if text else ""


def _legend() -> str:
    items = "".join(
        f'<span{_tip(VERDICT_TIPS.get(v))}><span class="sw v-{slug(v)}">{symbol(v)}</span>'
        f"{v}</span>"
        for v in VERDICTS
    )
    return (
        f'<div class="legend" id="legend">{items}<span><span class="sw v-quirk">~ᵉ</span>'
        "quirks the provider entry expects</span>"
        f'<span><span class="sw fe-mark">{FIELD_MARK}</span>{FIELD_TITLE}</span></div>'
    )


# ------------------------------------------------------------------------------ page


def render_html(doc: Doc, *, catalogue_url: str | None = None) -> str:
    """One self-contained HTML page (no network) for a valid matrix document."""
    url = (
        catalogue_url
        if catalogue_url is not None
        else (doc.get("links") or {}).get("catalogue", "")
    )
    all_ids = [cid for name, _ in SECTIONS for cid in section(doc, name)]
    referenced = set(column_quirks(doc, all_ids)) | {
        q for c in doc["cells"] for q in c.get("expected") or []
    }
    cols = columns_by_id(doc)
    field_entries = [x for cid in all_ids for x in field_evidence(cols[cid])]
    field_entries += [x for r in doc.get("field_providers") or [] for x in r["entries"]]
    referenced |= {q for x in field_entries for q in x.get("quirks") or []}
    from conformance.report import gateway

    referenced |= gateway.quirks_in(doc)
    from conformance.report import parsers as scripted

    referenced |= scripted.quirks_in(doc)
    quirks = sort_quirks(doc, referenced & set(doc.get("quirks") or {}))
    body, toc = [_legend()], []
    for name, title in SECTIONS:
        ids = section(doc, name)
        if not ids:
            continue
        n_rows = len(rows_for(doc, ids))
        toc.append(f'<a href="#{name}">{title}</a>')
        table = _grid(doc, name, ids) if name == "providers" else _list_table(doc, ids, name)
        body.append(
            f'<section id="{name}"><h2>{title} <span class="count">{len(ids)} columns × '
            f"{n_rows} rows</span></h2>{table}"
            f"<h2>What your client must do</h2>{_advice(doc, ids)}</section>"
        )
    field_html = _field_section(doc, section(doc, "providers"))
    if field_html:
        toc.append('<a href="#public-recordings">Public recordings</a>')
        body.append(field_html)
    for name in sorted(doc.get(gateway.KEY) or {}):
        toc.append(f'<a href="#gateway-{e(name)}">Gateway: {e(name)}</a>')
    if doc.get(gateway.KEY):
        body.append(gateway.render_html(doc))
    from conformance.report import parsers

    if doc.get(parsers.KEY):
        toc.append(f'<a href="#scripted-parsers">{e(parsers.TITLE)}</a>')
        body.append(parsers.render_html(doc))
    if all_ids:
        toc.append('<a href="#provenance">Provenance</a>')
        body.append(
            f'<section id="provenance"><h2>Provenance</h2>{_provenance(doc, all_ids)}</section>'
        )
    if quirks:
        toc.append('<a href="#quirks">Quirks</a>')
        body.append(
            f'<section id="quirks"><h2>Quirks <span class="count">{len(quirks)} referenced'
            f"</span></h2>{_quirks(doc, quirks, url)}</section>"
        )
    title = doc.get("title") or "Streaming tool-call conformance"
    meta = (
        f"Generated {doc.get('generated') or '–'} · suite {doc['suite_version']} · mode {doc['mode']} · "
        f"{len(doc['cells'])} cells"
    )
    parts = {
        "title": e(title),
        "suite_version": e(doc["suite_version"]),
        "catalogue_url": e(url),
        "meta": e(meta),
        "toc": "".join(toc),
        "controls": _controls(doc, quirks),
        "body": "\n".join(body),
        "data": _json_for_script(doc),
        "css": _asset("report.css"),
        "js": _asset("report.js"),
    }
    return _TOKEN.sub(lambda m: parts[m.group(1)], _asset("template.html"))


__all__ = ["page_data", "quirk_href", "render_html", "rich"]
