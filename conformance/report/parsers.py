"""The section "vLLM tool parsers, scripted model output".

Each of vLLM's tool parsers (conformance.lanes.vllm_columns) served a tiny random-weight
model whose output was scripted: the cells judge what the parser and vLLM's serving layer
made of exactly the text a model of that family emits. They are their own kind of evidence,
never merged with an end-to-end column (whose cells also show what a model did).

The section (``doc["scripted_parsers"]``) holds, per parser: its provenance (vLLM version,
parser, reasoning parser, chat template, scripted model output), its cells (full cell
objects, as in ``doc["cells"]``), and the steps × load comparison: for each variant (several
tokens per engine step, other requests in flight) and scenario, whether the calls the robust
client assembled (name and arguments, in order) and the quirk set equal those of the
one-token, one-request column, and what differs.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from conformance.registry import detector

KEY = "scripted_parsers"
TITLE = "vLLM tool parsers, scripted model output"
Cell = dict[str, Any]


SHAPE_ID = "Q-DELTA-SHAPE-LOAD-DEPENDENT"
LOST_ID = "Q-ARGS-LOST-MULTITOKEN-DELTA"


def _calls(cell: Cell | None) -> list[tuple[str, str]]:
    calls = ((cell or {}).get("tool_calls") or {}).get("robust") or []
    return [(c.get("name") or "", c.get("arguments") or "") for c in calls]


def _lost(ca: list[tuple[str, str]], cb: list[tuple[str, str]]) -> bool:
    """Fewer calls, or a call whose arguments came out empty where the baseline had some."""
    empty = ("", "{}")
    return len(cb) < len(ca) or any(
        b[1] in empty and a[1] not in empty for a, b in zip(ca, cb, strict=False)
    )


def compare(base: Cell | None, other: Cell | None) -> dict[str, Any]:
    """One variant cell (several tokens per engine step, other requests in flight) against
    the baseline cell of the same scenario (one token per step, alone), the same script.

    ``differs`` when the assembled calls, the finish reason or a judged quirk (SHOULD or
    MUST, beyond the delta shape) differ. Every difference is a finding with an id
    (``findings``: quirk, change, kind, evidence; change "+": in this recording only, "-":
    in the one-token, alone recording only, "": found by this comparison):

    - kind ``calls``: the calls or the finish reason differ. The MUST ids that came or went
      are the finding (Q-ARGS-LOST-MULTITOKEN-DELTA shows in one recording, not the other);
      calls lost with no id in either cell (a call that vanished reads as "not elicited" in
      the cell alone) are Q-ARGS-LOST-MULTITOKEN-DELTA, found by this comparison.
    - kind ``quirks``: the same calls, and a SHOULD or MUST id shows in one recording only:
      that id is the finding.
    - kind ``shape``: the same calls (at least one) and finish reason, and the quirks of
      the delta shape (``vllm_columns.SHAPE_QUIRKS``) differ: Q-DELTA-SHAPE-LOAD-DEPENDENT, the evidence
      the shape ids that came (+) and went (-). A regrouping that changes none of those ids
      is not seen here (the comparison reads the cells, not the deltas).

    INFO ids that come and go are listed under ``info`` and make no difference."""
    from conformance.lanes.vllm_columns import SHAPE_QUIRKS
    from conformance.rules import INFO, MUST, quirk_level

    if not base or not other or "not recorded" in (base["verdict"], other["verdict"]):
        return {"status": "not recorded"}
    diffs: list[str] = []
    info: list[str] = []
    shape: list[str] = []
    judged: list[str] = []
    qa, qb = set(base.get("quirks") or []), set(other.get("quirks") or [])
    for sign, qs in (("+", sorted(qb - qa)), ("-", sorted(qa - qb))):
        for q in qs:
            if q in SHAPE_QUIRKS:
                shape.append(sign + q)
            if quirk_level(q) == INFO or q in SHAPE_QUIRKS:
                info.append(sign + q)
            else:
                judged.append(sign + q)
    diffs += judged
    ca, cb = _calls(base), _calls(other)
    if ca != cb:
        diffs.append(
            f"calls differ: {len(ca)} -> {len(cb)}"
            if len(ca) != len(cb)
            else "assembled arguments differ"
        )
    fa, fb = base.get("finish_reason"), other.get("finish_reason")
    if fa != fb:
        diffs.append(f"finish_reason {fa} -> {fb}")
    findings: list[dict[str, str]] = []
    calls_differ = ca != cb or fa != fb
    what = ", ".join(d for d in diffs if d not in judged)
    must = [d for d in judged if quirk_level(d[1:]) == MUST] if calls_differ else []
    for d in judged:
        kind = "calls" if d in must else "quirks"
        findings.append(
            {"quirk": d[1:], "change": d[0], "kind": kind, "evidence": what or "same calls"}
        )
    if calls_differ and not must:
        lost = _lost(ca, cb)
        findings.append(
            {
                "quirk": LOST_ID if lost else "",
                "change": "",
                "kind": "calls",
                "evidence": f"{what}; found by this comparison, the cell alone reads "
                f"{other['verdict']!r}" + ("" if lost else ": no catalogue id"),
            }
        )
    if shape and ca and not calls_differ:  # judged on calls: a text answer has no call shape
        findings.append(
            {"quirk": SHAPE_ID, "change": "", "kind": "shape", "evidence": ", ".join(shape)}
        )
    return {
        "status": "differs" if diffs else "same",
        "differences": diffs,
        "info": info,
        "findings": findings,
        "verdict": other["verdict"],
        "cassette": other.get("cassette"),
    }


detector(compare, "cell", reports=(SHAPE_ID, LOST_ID))


CLOSED_ID = "Q-ARGS-CLOSED-ON-TRUNCATION"


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def closed_on_truncation(cell: Cell | None, script: str | None) -> dict[str, Any] | None:
    """Q-ARGS-CLOSED-ON-TRUNCATION on a scripted cell, judged against its script: the turn
    was cut (``finish_reason: "length"``) and a call's streamed arguments (as sent,
    concatenated: the naive client's, never the robust client's repair) are valid JSON
    that is not a prefix of what the script wrote, so the parser closed the cut JSON.
    One stream cannot tell it from a model that finished its JSON at the limit; the
    script can. The finding (a MUST finding dict), or None."""
    if not cell or not script or cell.get("finish_reason") != "length":
        return None
    if "Q-ARGS-INVENTED-ON-TRUNCATION" in (cell.get("quirks") or []):
        return None  # cut before the arguments: "{}", its own id
    tc = cell.get("tool_calls") or {}
    for call in tc.get("naive") or tc.get("guarded") or []:
        sent = call.get("arguments") or ""
        try:
            json.loads(sent)
        except ValueError:
            continue  # cut and left open: what the model wrote, as far as it got
        if sent.strip() and sent not in script:
            return {
                "event": None,
                "exchange": 0,
                "level": "MUST",
                "message": f'finish_reason "length" and {call.get("name")!r}\'s arguments '
                f"closed as valid JSON the script never wrote: streamed {_short(sent)!r}, "
                f"scripted {_short(script)!r}",
                "pointer": None,
                "quirk": CLOSED_ID,
                "rule": CLOSED_ID,
            }
    return None


detector(closed_on_truncation, "cell", reports=(CLOSED_ID,))


def _with_closed(cell: Cell, script: str | None) -> Cell:
    """The cell with Q-ARGS-CLOSED-ON-TRUNCATION added when its script shows it (the
    verdict judged again, the not-elicited reason gone: the cut was elicited)."""
    from conformance.verdict import cell as judge_cell

    found = closed_on_truncation(cell, script)
    if found is None:
        return cell
    out = dict(cell)
    out["quirks"] = sorted({*(cell.get("quirks") or []), CLOSED_ID})
    out["findings"] = [*(cell.get("findings") or []), found]
    out["unexpected"] = sorted({*(cell.get("unexpected") or []), CLOSED_ID})
    if (cell.get("reason") or "").startswith("not elicited"):
        out["reason"] = None
        out["elicited"] = True
    base = "quirk" if cell["verdict"] == "inconclusive" else cell["verdict"]
    out["verdict"] = str(judge_cell(base, out["findings"]).value)
    return out


def scripted_section(
    providers: Iterable[Any],
    by_key: Mapping[tuple[str, str], Cell],
    scenarios: Iterable[Any],
    cassette_root: Path,
) -> dict[str, Any]:
    """``{KEY: {...}}`` for the matrix document (conformance.matrix.build_matrix)."""
    from conformance.matrix import load_provenance, not_recorded

    scen = [s.id for s in scenarios]
    by_parser: dict[str, list[Any]] = {}
    for p in providers:
        by_parser.setdefault(p.parser, []).append(p)
    parsers, cells = [], []
    for parser, cols in by_parser.items():
        base = next((c for c in cols if c.steps == 1 and c.load == 1), cols[0])
        col_cells = {}
        for c in cols:
            col_cells[c.name] = {
                s: _with_closed(cell, (c.scripts.get(s) or {}).get("script"))
                if (cell := by_key.get((c.name, s)))
                else not_recorded(c.name, s, c.record_command)
                for s in scen
            }
        prov = load_provenance(cassette_root / base.cassette_key)
        base_cells = [col_cells[base.name][s] for s in scen]
        cells += base_cells
        variants = []
        for c in cols:
            if c is base:
                continue
            variants.append(
                {
                    "column": c.name,
                    "steps": c.steps,
                    "load": c.load,
                    "scenarios": {
                        s: compare(col_cells[base.name][s], col_cells[c.name][s]) for s in scen
                    },
                }
            )
        server = prov.get("server") or {}
        parsers.append(
            {
                "parser": parser,
                "column": base.name,
                "label": base.label,
                "provenance": dict(
                    base.provenance(),
                    vllm_version=server.get("version") or base.server_version,
                    recorded_at=max(
                        (
                            v.get("recorded_at") or ""
                            for v in (prov.get("scenarios") or {}).values()
                        ),
                        default="",
                    )
                    or None,
                    cassette_dir=str(cassette_root / base.cassette_key),
                ),
                "expected_quirks": {q: e["reason"] for q, e in base.expected_quirks.items()},
                "cells": base_cells,
                "variants": variants,
            }
        )
    return {KEY: {"title": TITLE, "scenarios": scen, "parsers": parsers, "cells": cells}}


# ----------------------------------------------------------------------------- rendering

_SYMBOL = {
    "conforms": "✓",
    "quirk": "◐",
    "fails": "✗",
    "error": "!",
    "inconclusive": "?",
    "unsupported": "–",
    "not recorded": "·",
}


def _cell_text(cell: Cell) -> str:
    sym = _SYMBOL.get(cell["verdict"], "?")
    quirks = ", ".join(cell.get("quirks") or [])
    return f"{sym} {quirks}".strip()


def _findings(rows: Mapping[str, Any], kinds: tuple[str, ...]) -> dict[str, list[str]]:
    """id (or "no id") -> the scenarios whose comparison found it, of the given kinds."""
    out: dict[str, list[str]] = {}
    for s, r in rows.items():
        for f in r.get("findings") or []:
            if f["kind"] in kinds and s not in out.setdefault(f["quirk"] or "no id", []):
                out[f["quirk"] or "no id"].append(s)
    return out


def _variant_text(parser: dict[str, Any]) -> list[str]:
    out = []
    for v in parser["variants"]:
        rows = v["scenarios"]
        unrecorded = sum(1 for r in rows.values() if r["status"] == "not recorded")
        diff = {s: r for s, r in rows.items() if r["status"] == "differs"}
        shaped = {
            s: f["evidence"]
            for s, r in rows.items()
            for f in r.get("findings") or []
            if f["kind"] == "shape"
        }
        what = (
            "not recorded"
            if unrecorded == len(rows)
            else "same calls, finish reasons and judged quirks in every recorded scenario"
            if not diff
            else "; ".join(
                f"{s}: "
                + ", ".join(
                    f"{f['change']}{f['quirk'] or 'no id'} ({f['evidence']})"
                    for f in r.get("findings") or []
                    if f["kind"] != "shape"
                )
                for s, r in diff.items()
            )
        )
        if unrecorded and unrecorded < len(rows):
            what += f" ({unrecorded} not recorded)"
        if shaped:
            what += f"; {SHAPE_ID} in {len(shaped)} of {len(rows)}: " + "; ".join(
                f"{s} ({e})" for s, e in shaped.items()
            )
        out.append(f"steps {v['steps']} × load {v['load']}: {what}")
    return out


def render_markdown(doc: dict[str, Any], sub: str = "##") -> list[str]:
    """The section's Markdown lines, headed at *sub* (empty when the document has none)."""
    sec = doc.get(KEY)
    if not sec or not sec.get("parsers"):
        return []
    h = sub
    lines = [
        "",
        f"{h} {sec['title']}",
        "",
        "Each column is a real vLLM server with one `--tool-call-parser`, serving a tiny "
        "random-weight model whose output is scripted: the text a model of that family "
        "emits for the scenario, token by token (the request is the scenario's, "
        "unchanged). A cell shows what the parser and vLLM's serving layer did with that "
        "text, not what a model does; it is never merged with the end-to-end vLLM "
        "column.",
        "",
    ]
    parsers = sec["parsers"]
    lines.append("| scenario | " + " | ".join(f"`{p['parser']}`" for p in parsers) + " |")
    lines.append("|---|" + "---|" * len(parsers))
    for i, s in enumerate(sec["scenarios"]):
        lines.append(f"| {s} | " + " | ".join(_cell_text(p["cells"][i]) for p in parsers) + " |")
    lines += [
        "",
        f"{h}# Provenance and steps × load",
        "",
        "Each variant streams the same scripts with several tokens per engine step "
        "(`--stream-interval 4`) or with eight requests in flight, and is compared with "
        "the one-token, one-request column, scenario by scenario. Every difference has an "
        "id: `+` an id this variant shows and the baseline does not, `-` the reverse, no "
        f"sign an id the comparison itself finds. {SHAPE_ID} (INFO) marks the same calls "
        "and finish reason in other deltas: the evidence is the shape ids that came and "
        "went.",
        "",
    ]
    for p in parsers:
        pv = p["provenance"]
        lines.append(
            f"- **`{p['column']}`** ({pv['family']}): vLLM {pv.get('vllm_version')}, "
            f"`--tool-call-parser {p['parser']}`, reasoning parser "
            f"`{pv.get('reasoning_parser') or 'none'}`, chat template: "
            f"{pv['chat_template']}; model output: {pv['model_output']}; recorded "
            f"{pv.get('recorded_at') or 'never'}."
        )
        for t in _variant_text(p):
            lines.append(f"  - {t}")
    return lines + [""]


def _judged(cell: Cell) -> list[str]:
    from conformance.rules import INFO, quirk_level

    return [q for q in cell.get("quirks") or [] if quirk_level(q) != INFO]


def choice_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Per parser, what a person choosing a ``--tool-call-parser`` needs: how many
    scenarios conform, the judged quirks, which client strategies survive every scenario,
    and whether the output holds at several tokens per step and under load."""
    from conformance.report.common import impact_summary

    out = []
    for p in (doc.get(KEY) or {}).get("parsers") or []:
        cells = [c for c in p["cells"] if c["verdict"] != "not recorded"]
        quirks = sorted({q for c in cells for q in _judged(c)})
        failing = [c["row"] for c in cells if c["verdict"] in ("fails", "error")]
        survive = []
        for strategy in ("naive", "guarded", "robust"):
            ok, judged, _ = impact_summary(cells, strategy)
            survive.append(f"{strategy} {ok}/{judged}")
        variants = []
        for v in p["variants"]:
            rows = v["scenarios"].values()
            if all(r["status"] == "not recorded" for r in rows):
                continue
            n = sum(1 for r in rows if r["status"] == "differs")
            found = _findings(v["scenarios"], ("calls", "quirks"))
            shaped = sum(
                1 for r in rows if any(f["kind"] == "shape" for f in r.get("findings") or [])
            )
            text = (
                "same calls"
                if not n
                else f"{n} differ ("
                + "; ".join(f"{q}: {', '.join(ss)}" for q, ss in found.items())
                + ")"
            )
            if shaped:
                text += f", {SHAPE_ID} in {shaped}/{len(v['scenarios'])}"
            variants.append(f"steps {v['steps']} × load {v['load']}: {text}")
        out.append(
            {
                "parser": p["parser"],
                "family": p["provenance"]["family"],
                "reasoning_parser": p["provenance"].get("reasoning_parser"),
                "conforms": sum(1 for c in cells if c["verdict"] == "conforms"),
                "recorded": len(cells),
                "quirks": quirks,
                "failing": failing,
                "clients": survive,
                "variants": variants,
            }
        )
    return out


def render_choice_table(doc: dict[str, Any]) -> str:
    """A Markdown table for choosing a ``--tool-call-parser`` (docs, the README)."""
    rows = choice_rows(doc)
    if not rows:
        return ""
    lines = [
        "| `--tool-call-parser` | family | reasoning parser | conforms | fails or errors "
        "| quirks (SHOULD/MUST) | clients that assemble every call | steps × load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| `{r['parser']}` | {r['family']} | {r['reasoning_parser'] or '–'} | "
            f"{r['conforms']}/{r['recorded']} | {', '.join(r['failing']) or '–'} | "
            f"{', '.join(r['quirks']) or '–'} | {', '.join(r['clients'])} | "
            f"{'; '.join(r['variants']) or 'not recorded'} |"
        )
    return "\n".join(lines) + "\n"


def render_html(doc: dict[str, Any]) -> str:
    sec = doc.get(KEY)
    if not sec or not sec.get("parsers"):
        return ""
    e = html.escape
    parsers = sec["parsers"]
    head = "".join(f"<th>{e(p['parser'])}</th>" for p in parsers)
    rows = []
    for i, s in enumerate(sec["scenarios"]):
        tds = []
        for p in parsers:
            c = p["cells"][i]
            title = e(c.get("reason") or "")
            tds.append(
                f'<td class="v-{e(c["verdict"].replace(" ", "-"))}" title="{title}">'
                f"{e(_cell_text(c))}</td>"
            )
        rows.append(f"<tr><th>{e(s)}</th>{''.join(tds)}</tr>")
    prov = []
    for p in parsers:
        pv = p["provenance"]
        variants = "".join(f"<li>{e(t)}</li>" for t in _variant_text(p))
        prov.append(
            f"<li><b>{e(p['column'])}</b> ({e(pv['family'])}): vLLM "
            f"{e(str(pv.get('vllm_version')))}, reasoning parser "
            f"{e(pv.get('reasoning_parser') or 'none')}, chat template: "
            f"{e(pv['chat_template'])}; model output: {e(pv['model_output'])}"
            f"<ul>{variants}</ul></li>"
        )
    return (
        f'<section id="scripted-parsers"><h2>{e(sec["title"])}</h2>'
        "<p>Each column is a real vLLM server with one tool parser, serving a tiny "
        "random-weight model whose output is scripted (the text a model of that family "
        "emits); the cells show what the parser and the serving layer did with it. Each "
        "variant (several tokens per step, eight requests in flight) is compared with the "
        "one-token, one-request column: +/- an id shown only by the variant / the baseline, "
        f"{e(SHAPE_ID)} the same calls in other deltas.</p>"
        f"<table><tr><th>scenario</th>{head}</tr>{''.join(rows)}</table>"
        f"<ul>{''.join(prov)}</ul></section>"
    )


def quirks_in(doc: dict[str, Any]) -> set[str]:
    """The ids the section shows: its cells' and its steps × load comparison's."""
    sec = doc.get(KEY) or {}
    return {q for c in sec.get("cells") or [] for q in c.get("quirks") or []} | {
        f["quirk"]
        for p in sec.get("parsers") or []
        for v in p.get("variants") or []
        for r in (v.get("scenarios") or {}).values()
        for f in r.get("findings") or []
    }


__all__ = [
    "KEY",
    "TITLE",
    "choice_rows",
    "compare",
    "quirks_in",
    "render_choice_table",
    "render_html",
    "render_markdown",
    "scripted_section",
]


def main(argv: list[str]) -> int:
    """``python -m conformance.report.parsers MATRIX.json``: print the parser-choice table."""
    import json
    import sys

    if len(argv) != 1:
        print("usage: python -m conformance.report.parsers MATRIX.json", file=sys.stderr)
        return 2
    doc = json.loads(Path(argv[0]).read_text("utf-8"))
    table = render_choice_table(doc)
    if not table:
        print(
            f"{argv[0]}: no scripted-parsers section (render it with --scripted-parsers)",
            file=sys.stderr,
        )
        return 2
    sys.stdout.write(table)
    return 0


if __name__ == "__main__":
    import sys as _sys

    _sys.exit(main(_sys.argv[1:]))
