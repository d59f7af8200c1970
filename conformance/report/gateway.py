"""The gateway section: does a gateway keep what its upstream sent?

For each gateway (a providers.yaml entry with a ``gateway`` block, run over every reference
profile by ``conformance.gateway_columns``) and each profile, the section sets side by side:

* ``injected``: the quirks the profile injects (its definition, checked end to end by the
  profile's own column);
* ``upstream``: the profile's direct cell (recorded from ``toolcall-conformance serve``), when the
  run has it;
* ``through``: the cell recorded through the gateway;
* ``passed`` (in both), ``normalised`` (upstream only: the gateway removed or repaired it),
  ``added`` (through only: the gateway introduced it);
* ``rules_added`` / ``rules_normalised``: the same for rules broken without a catalogued
  quirk (compared with the direct cell only);
* ``ids_kept`` / ``indexes_kept``: the tool-call ids and indexes the robust client assembled
  through the gateway equal those assembled from the direct cell (``null`` when either side
  has no call to compare).

The comparison is over what both sides' analyses report; the direct cell's quirks are the
upstream's when it is in the run, else the profile's injected ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Cell = dict[str, Any]

KEY = "gateways"
"""The JSON key of the section in the matrix document."""


def _calls(cell: Cell | None) -> list[dict[str, Any]]:
    if not cell:
        return []
    return list((cell.get("tool_calls") or {}).get("robust") or [])


def _kept(up: Cell | None, through: Cell | None, key: str) -> bool | None:
    a, b = _calls(up), _calls(through)
    if not a or not b:
        return None
    return [c.get(key) for c in a] == [c.get(key) for c in b]


def _rules(cell: Cell | None) -> set[str]:
    """Rules broken without a catalogued quirk (e.g. ``type`` repeated on a continuation)."""
    return {f["rule"] for f in (cell or {}).get("findings") or [] if not f.get("quirk")}


def _raw_indexes(cell: Cell | None) -> list[Any] | None:
    """The ``index`` values as sent on the wire, in order of first appearance (naive view)."""
    calls = (cell or {}).get("tool_calls") or {}
    naive = calls.get("naive")
    return [c.get("index") for c in naive] if naive else None


def compare(
    profile: str,
    scenario: str,
    injected: Iterable[str],
    upstream: Cell | None,
    through: Cell | None,
) -> dict[str, Any]:
    """One row of the section: what the gateway did to one profile's stream."""
    injected = sorted(set(injected))
    recorded = through is not None and through.get("verdict") != "not recorded"
    direct = upstream is not None and upstream.get("verdict") != "not recorded"
    base = set(upstream.get("quirks") or []) if direct and upstream else set(injected)
    seen = set(through.get("quirks") or []) if recorded and through else set()
    row: dict[str, Any] = {
        "profile": profile,
        "scenario": scenario,
        "injected": injected,
        "upstream": (
            {
                "verdict": upstream["verdict"],
                "quirks": sorted(base),
                "cassette": upstream.get("cassette"),
            }
            if direct and upstream
            else None
        ),
        "through": (
            {
                "verdict": through["verdict"],
                "quirks": sorted(seen),
                "reason": through.get("reason"),
                "cassette": through.get("cassette"),
            }
            if recorded and through
            else None
        ),
    }
    if not recorded:
        row.update(
            passed=[],
            normalised=[],
            added=[],
            ids_kept=None,
            indexes_kept=None,
            rules_added=[],
            rules_normalised=[],
        )
        return row
    indexes = None
    a, b = _raw_indexes(upstream if direct else None), _raw_indexes(through)
    if a and b:
        indexes = a == b
    up_rules, through_rules = _rules(upstream if direct else None), _rules(through)
    row.update(
        rules_added=sorted(through_rules - up_rules) if direct else [],
        rules_normalised=sorted(up_rules - through_rules) if direct else [],
    )
    row.update(
        passed=sorted(base & seen),
        normalised=sorted(base - seen),
        added=sorted(seen - base),
        ids_kept=_kept(upstream if direct else None, through, "id"),
        indexes_kept=indexes,
    )
    return row


def gateway_section(
    gateway_providers: Iterable[Any],
    cells: Mapping[tuple[str, str], Cell],
    injected: Mapping[str, Iterable[str]],
    provenance: Mapping[str, dict[str, Any]],
) -> dict[str, Any]:
    """``{gateway: {label, server, profiles: [row…], summary}}``.

    *cells* maps (column, row) to a cell (direct profile cells and gateway cells alike);
    *injected* maps a profile name to the quirks it injects; *provenance* maps a gateway name
    to ``{"server": …, "recorded_at": …, "cassette_dir": …}``.
    """
    out: dict[str, Any] = {}
    for p in gateway_providers:
        gw = out.setdefault(
            p.gateway_name,
            {
                "label": p.gateway_name,
                "provenance": dict(provenance.get(p.gateway_name) or {}),
                "profiles": [],
            },
        )
        gw["profiles"].append(
            compare(
                p.profile,
                p.scenario,
                injected.get(p.profile, ()),
                cells.get((f"profile:{p.profile}", p.scenario)),
                cells.get((p.name, p.scenario)),
            )
        )
    for gw in out.values():
        rows = [r for r in gw["profiles"] if r["through"] is not None]
        gw["summary"] = {
            "profiles": len(gw["profiles"]),
            "recorded": len(rows),
            "untouched": sum(1 for r in rows if not r["normalised"] and not r["added"]),
            "normalised_any": sorted({q for r in rows for q in r["normalised"]}),
            "added_any": sorted({q for r in rows for q in r["added"]}),
            "rules_added_any": sorted({q for r in rows for q in r["rules_added"]}),
            "ids_changed": sorted(r["profile"] for r in rows if r["ids_kept"] is False),
            "indexes_changed": sorted(r["profile"] for r in rows if r["indexes_kept"] is False),
        }
    return out


# ------------------------------------------------------------------------------ rendering


def quirks_in(doc: dict[str, Any]) -> set[str]:
    """Every quirk id the gateway section mentions (for the report's quirk list)."""
    out: set[str] = set()
    for gw in (doc.get(KEY) or {}).values():
        for r in gw["profiles"]:
            out.update(r["injected"], r["passed"], r["normalised"], r["added"])
    return out


def _kept_text(value: bool | None) -> str:
    return "kept" if value is True else "changed" if value is False else "–"


def _intro(gw: dict[str, Any]) -> str:
    prov, summ = gw["provenance"], gw["summary"]
    server = " ".join(str(x) for x in (prov.get("software"), prov.get("version")) if x)
    when = f", recorded {prov['recorded_at']}" if prov.get("recorded_at") else ""
    ids = ", ".join(summ["ids_changed"]) or "none"
    idx = ", ".join(summ["indexes_changed"]) or "none"
    return (
        f"{server or gw['label']}{when}. {summ['recorded']} of {summ['profiles']} reference "
        f"profiles recorded through it; {summ['untouched']} came through with the same "
        f"quirks. Ids changed in: {ids}. Indexes changed in: {idx}."
    )


def render_markdown(doc: dict[str, Any], sub: str) -> list[str]:
    """The section as Markdown lines (empty when the document has no gateway)."""
    from conformance.report.markdown import code, esc

    out: list[str] = []
    for _name, gw in sorted((doc.get(KEY) or {}).items()):
        out += [
            "",
            f"{sub} Gateway transparency: {esc(gw['label'])}",
            "",
            "Each reference profile of `toolcall-conformance serve`, recorded through the gateway and "
            "compared with what the profile injects (its direct cell): what passed "
            "through, what the gateway normalised away, what it added.",
            "",
            esc(_intro(gw)),
            "",
            "| profile | scenario | upstream | through | passed through | normalised away "
            "| added | ids | indexes |",
            "|---|---|---|---|---|---|---|:-:|:-:|",
        ]

        def qs(ids: list[str]) -> str:
            return ", ".join(code(q) for q in ids) or "–"

        for r in gw["profiles"]:
            up = r["upstream"]["quirks"] if r["upstream"] else r["injected"]
            through = (
                f"{r['through']['verdict']}: {qs(r['through']['quirks'])}"
                if r["through"]
                else "not recorded"
            )
            out.append(
                f"| {code(r['profile'])} | `{r['scenario']}` | {qs(up)} | {through} | "
                f"{qs(r['passed'])} | {qs(r['normalised'] + r['rules_normalised'])} | "
                f"{qs(r['added'] + r['rules_added'])} | "
                f"{_kept_text(r['ids_kept'])} | {_kept_text(r['indexes_kept'])} |"
            )
    return out


def render_html(doc: dict[str, Any]) -> str:
    """The section as HTML (empty when the document has no gateway)."""
    from conformance.report.html import e

    parts = []

    def links(ids: list[str]) -> str:
        return (
            ", ".join(
                f"<code>{e(q)}</code>"
                if q.startswith("R-")
                else f'<a href="#quirk-{e(q)}"><code>{e(q)}</code></a>'
                for q in ids
            )
            or "–"
        )

    for name, gw in sorted((doc.get(KEY) or {}).items()):
        rows = []
        for r in gw["profiles"]:
            up = r["upstream"]["quirks"] if r["upstream"] else r["injected"]
            through = (
                f'<span class="v-{e(r["through"]["verdict"]).replace(" ", "-")}">'
                f"{e(r['through']['verdict'])}</span>: {links(r['through']['quirks'])}"
                if r["through"]
                else "not recorded"
            )
            rows.append(
                f'<tr data-gateway="{e(name)}" data-profile="{e(r["profile"])}">'
                f'<th scope="row"><code>{e(r["profile"])}</code></th>'
                f"<td><code>{e(r['scenario'])}</code></td><td>{links(up)}</td>"
                f"<td>{through}</td><td>{links(r['passed'])}</td>"
                f"<td>{links(r['normalised'] + r['rules_normalised'])}</td>"
                f"<td>{links(r['added'] + r['rules_added'])}</td>"
                f"<td>{_kept_text(r['ids_kept'])}</td>"
                f"<td>{_kept_text(r['indexes_kept'])}</td></tr>"
            )
        parts.append(
            f'<section id="gateway-{e(name)}"><h2>Gateway transparency: {e(gw["label"])}</h2>'
            f"<p>{e(_intro(gw))}</p>"
            f'<table class="plain" data-section="gateway"><thead><tr><th>Profile</th>'
            "<th>Scenario</th><th>Upstream</th><th>Through the gateway</th>"
            "<th>Passed through</th><th>Normalised away</th><th>Added</th><th>Ids</th>"
            f"<th>Indexes</th></tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
        )
    return "\n".join(parts)


__all__ = ["KEY", "compare", "gateway_section", "quirks_in", "render_html", "render_markdown"]
