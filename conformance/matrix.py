"""Cells -> the matrix document (docs/matrix-format.md), with provenance per column.

A column is filled only from traffic recorded from that provider: a provider without
cassettes gets `not recorded` cells that carry the command that records them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.analysis import CaptureResult
from conformance.providers import Provider
from conformance.rules import RULES, quirk_catalogue, quirk_level
from conformance.scenarios import SCENARIOS, Scenario
from conformance.secrets import write_atomic
from conformance.textsafe import for_file

FORMAT = "conformance-quirks-matrix/1"
_SCRIPTED = "scripted_parsers"  # conformance.report.parsers.KEY
PROVENANCE_FILE = "provenance.json"


def atomic_write(path: Path, text: str) -> None:
    """Redact, write through a temporary file and rename: a crash never leaves half a
    file, and no key reaches it (``secrets.write_atomic``). Lone surrogates and control
    characters from the wire are written as ``\\uXXXX`` escapes (``textsafe.for_file``:
    in JSON the same string), so a valid JSON stream never makes a writer raise."""
    write_atomic(path, for_file(text))


def load_provenance(cassette_dir: Path) -> dict[str, Any]:
    p = cassette_dir / PROVENANCE_FILE
    if not p.exists():
        return {}
    try:
        data: dict[str, Any] = json.loads(p.read_text("utf-8"))
        return data
    except ValueError:
        return {}


def record_provenance(
    cassette_dir: Path,
    provider: Provider,
    scenario: str,
    when: str,
    trials: int,
    seen: dict[str, Any],
    scenario_extra: dict[str, Any] | None = None,
) -> None:
    doc = load_provenance(cassette_dir)
    doc.setdefault("scenarios", {})[scenario] = {
        "recorded_at": when,
        "trials": trials,
        "suite_version": __version__,
        **{k: v for k, v in (scenario_extra or {}).items() if v},
    }
    doc["provider"] = provider.name
    doc["model"] = provider.model
    doc["server"] = {
        "software": provider.server.get("software"),
        "version": provider.server_version,
    }
    if seen:
        doc.setdefault("seen", {}).update({k: v for k, v in seen.items() if v})
    atomic_write(
        cassette_dir / PROVENANCE_FILE,
        json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
    )


def quirk_entries(cells: Iterable[dict[str, Any]], extra: Iterable[str] = ()) -> dict[str, Any]:
    cat = quirk_catalogue()
    ids = {q for c in cells for q in c.get("quirks", [])} | set(extra)
    out = {}
    for q in sorted(ids):
        e = cat.get(
            q,
            {
                "title": q,
                "group": "?",
                "group_title": "",
                "anchor": "",
                "sources": "",
                "breaks": "",
                "workaround": "",
                "reference_behaviour": False,
            },
        )
        out[q] = {
            "title": e["title"],
            "group": e["group"],
            "group_title": e["group_title"],
            "level": quirk_level(q),
            "reference_behaviour": e["reference_behaviour"],
            "anchor": e["anchor"],
            "sources": e["sources"],
            "breaks": e["breaks"],
            "workaround": e["workaround"],
        }
    return out


def rule_entries() -> dict[str, Any]:
    return {
        r.id: {"level": r.level, "statement": r.statement, "source": r.source}
        for r in RULES.values()
    }


def column_for(
    provider: Provider,
    cells: list[dict[str, Any]],
    prov: dict[str, Any],
    replayed: bool,
    cassette_dir: str | None,
) -> dict[str, Any]:
    recorded = any(c["verdict"] != "not recorded" for c in cells)
    seen = dict(prov.get("seen") or {})
    for c in cells:
        m = c.get("meta") or {}
        if m.get("model") and "model_field" not in seen:
            seen["model_field"] = m["model"]
        if m.get("system_fingerprint") and "system_fingerprint" not in seen:
            seen["system_fingerprint"] = m["system_fingerprint"]
        if m.get("server") and "server_header" not in seen:
            seen["server_header"] = m["server"]
    dates = sorted(
        s.get("recorded_at") for s in (prov.get("scenarios") or {}).values() if s.get("recorded_at")
    )
    versions = sorted(
        {
            s.get("suite_version")
            for s in (prov.get("scenarios") or {}).values()
            if s.get("suite_version")
        }
    )
    server = prov.get("server") or {}
    return {
        "id": provider.name,
        "kind": provider.kind,
        "label": provider.label or provider.name,
        "model": provider.model,
        "base_url": provider.base_url if recorded else provider.base_url,
        "status": "recorded" if recorded else "not recorded",
        "record_command": provider.record_command,
        "provenance": {
            "how": ("replayed" if replayed else "live") if recorded else None,
            "recorded_at": dates[-1] if dates else None,
            "suite_version_at_record": versions[-1] if versions else None,
            "cassette_dir": cassette_dir if recorded else None,
            "server": {
                "software": server.get("software") or provider.server.get("software"),
                "version": server.get("version") or provider.server_version,
                "seen": seen,
            },
        },
        "expected_quirks": {q: e["reason"] for q, e in provider.expected_quirks.items()},
        "client_advice": "",  # filled from the finished document by _advise()
    }


def _advise(doc: dict[str, Any]) -> dict[str, Any]:
    """One place derives "what your client must do": conformance.report.common."""
    from conformance.report.common import cells_by_column, client_advice

    by_col = cells_by_column(doc)
    for col in doc["columns"]:
        col["client_advice"] = client_advice(doc, by_col.get(col["id"], [])).text()
    return doc


def add_field_evidence(doc: dict[str, Any], evidence: dict[str, Any]) -> dict[str, Any]:
    """Public recordings beside the recorded cells (``conformance.field``): each provider
    column gets its ``field_evidence``; routes without a column go to ``field_providers``.
    They never change a cell: a `not recorded` cell stays `not recorded`."""
    from conformance import field

    ids = [c["id"] for c in doc["columns"] if c["kind"] == "provider"]
    by_col = field.for_columns(evidence, ids)
    for col in doc["columns"]:
        if col["kind"] == "provider":
            col["field_evidence"] = by_col.get(col["id"], [])
    doc["field_providers"] = field.routes_without_column(evidence, ids)
    seen = {q for e in evidence.get("entries") or [] for q in e.get("quirks") or []}
    doc["quirks"] = {**quirk_entries([], seen), **doc["quirks"]}
    doc["quirks"] = dict(sorted(doc["quirks"].items()))
    return doc


def not_recorded(column: str, row: str, command: str) -> dict[str, Any]:
    """The cell of a column with no cassette for a row: the command that records it."""
    return {
        "column": column,
        "row": row,
        "verdict": "not recorded",
        "reason": f"no cassette; record with: {command}",
        "quirks": [],
        "expected": [],
        "findings": [],
        "evidence": [],
        "impact": {},
        "tool_calls": {},
        "finish_reason": None,
        "cassette": None,
        "interaction": None,
        "trials": {},
        "retries": [],
    }


def build_matrix(
    cells: list[dict[str, Any]],
    providers: list[Provider],
    *,
    scenarios: list[Scenario] | None = None,
    mode: str = "replay",
    cassette_root: Path = Path("cassettes"),
    profiles: list[Provider] = (),  # type: ignore[assignment]
    gateways: list[Provider] = (),  # type: ignore[assignment]
    scripted: list[Provider] = (),  # type: ignore[assignment]
    title: str = "Streaming tool-call conformance",
    field_evidence: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The matrix document. ``field_evidence``: a field-evidence document (default: the
    committed ``conformance/data/field-evidence.json``); ``gateways``: reference profiles
    run through a gateway (conformance.gateway_columns), for the gateway section."""
    scen = scenarios or list(SCENARIOS.values())
    by_key = {(c["column"], c["row"]): c for c in cells}
    all_cells, columns, dates = [], [], []
    for group in (providers, profiles):
        for p in group:
            col_cells = []
            for s in scen:
                c = by_key.get((p.name, s.id))
                if c is None and p.kind == "reference-profile":
                    continue  # a profile is judged on its one eliciting scenario only
                if c is None:
                    c = not_recorded(p.name, s.id, p.record_command)
                col_cells.append(c)
            cdir = cassette_root / str(getattr(p, "cassette_key", p.name))
            prov = load_provenance(cdir)
            col = column_for(
                p, col_cells, prov, mode == "replay", str(cdir) if cdir.exists() else None
            )
            if col["provenance"]["recorded_at"]:
                dates.append(col["provenance"]["recorded_at"])
            columns.append(col)
            all_cells.extend(col_cells)
    from conformance.field import load_evidence

    evidence = load_evidence() if field_evidence is None else field_evidence
    doc = add_field_evidence(
        _advise(
            {
                "format": FORMAT,
                "suite_version": __version__,
                # Deterministic for a replay: the newest recording, not the wall clock.
                "generated": max(dates) if dates else None,
                "mode": mode,
                "title": title,
                "columns": columns,
                "rows": [
                    {"id": s.id, "title": s.title, "description": s.description} for s in scen
                ],
                "cells": all_cells,
                "quirks": quirk_entries(all_cells),
                "rules": rule_entries(),
                "sections": {
                    "providers": [p.name for p in providers],
                    "reference_profiles": [p.name for p in profiles],
                    "captures": [],
                },
            }
        ),
        evidence,
    )
    if scripted:  # vLLM's tool parsers on a scripted model: a section of their own
        from conformance.report.parsers import quirks_in, scripted_section

        doc.update(scripted_section(scripted, by_key, scen, cassette_root))
        # The steps × load comparison's ids (Q-DELTA-SHAPE-LOAD-DEPENDENT…) are found by no
        # cell alone; they join the list so the report links them like every other id.
        shown = quirks_in(doc)
        doc["quirks"] = dict(sorted({**quirk_entries([], shown), **doc["quirks"]}.items()))
    if gateways:
        doc.update(_gateways(gateways, by_key, profiles, cassette_root))
        through = [c for c in by_key.values() if c["column"].startswith("gateway:")]
        doc["quirks"] = dict(sorted({**quirk_entries(through), **doc["quirks"]}.items()))
    return doc


def _gateways(
    gateways: list[Provider],
    by_key: dict[tuple[str, str], dict[str, Any]],
    profiles: list[Provider],
    cassette_root: Path,
) -> dict[str, Any]:
    """The gateway section (conformance.report.gateway), with each gateway's provenance."""
    from conformance.report.gateway import KEY, gateway_section

    injected = {getattr(p, "profile", ""): sorted(p.expected_quirks) for p in profiles}
    if not injected:  # the profiles' own columns were not selected: their definitions
        from conformance.profile_columns import profile_providers

        injected = {p.profile: sorted(p.expected_quirks) for p in profile_providers("http://x")}
    provenance: dict[str, dict[str, Any]] = {}
    for p in gateways:
        name = str(getattr(p, "gateway_name", ""))
        prov = load_provenance(cassette_root / str(getattr(p, "cassette_key", p.name)))
        entry = provenance.setdefault(
            name,
            {
                "software": p.server.get("software"),
                "version": None,
                "recorded_at": None,
                "cassette_dir": str(cassette_root / "_gateway" / name),
            },
        )
        server = prov.get("server") or {}
        entry["version"] = entry["version"] or server.get("version") or p.server_version
        dates = [
            s.get("recorded_at")
            for s in (prov.get("scenarios") or {}).values()
            if s.get("recorded_at")
        ]
        if dates and (entry["recorded_at"] is None or max(dates) > entry["recorded_at"]):
            entry["recorded_at"] = max(dates)
    return {KEY: gateway_section(gateways, by_key, injected, provenance)}


def matrix_from_captures(results: list[CaptureResult]) -> dict[str, Any]:
    """`conformance analyze --report`: each capture is a column of its own table. A result
    that still holds its transcript (``r.transcript``) gets the wire evidence too."""
    from conformance.bounded import cap_strings
    from conformance.report.evidence import evidence_from_events

    columns, cells = [], []
    for r in results:
        t = getattr(r, "transcript", None)
        evidence = evidence_from_events(t.events(), r.to_json()["findings"]) if t else []
        d = r.to_json()
        columns.append(
            {
                "id": r.source,
                "kind": "capture",
                "label": Path(r.source.split("#")[0]).name,
                "model": r.meta.get("model"),
                "base_url": None,
                "status": "recorded",
                "record_command": "",
                "expected_quirks": {},
                "provenance": {
                    "how": "capture",
                    "recorded_at": None,
                    "suite_version_at_record": None,
                    "cassette_dir": None,
                    "server": {
                        "software": None,
                        "version": None,
                        "seen": {
                            "model_field": r.meta.get("model"),
                            "system_fingerprint": r.meta.get("system_fingerprint"),
                        },
                    },
                },
                "client_advice": "",
            }
        )
        cells.append(
            cap_strings(
                {
                    "column": r.source,
                    "row": "capture",
                    "verdict": r.verdict,
                    "reason": r.error,
                    "quirks": d["quirks"],
                    "expected": [],
                    "findings": d["findings"],
                    "evidence": evidence,
                    "impact": d["impact"],
                    "tool_calls": d["tool_calls"],
                    "finish_reason": r.finish_reason,
                    "cassette": None,
                    "interaction": None,
                    "trials": {},
                    "retries": [],
                }
            )
        )
    return _advise(
        {
            "format": FORMAT,
            "suite_version": __version__,
            "generated": None,
            "mode": "field",
            "title": "Field captures",
            "columns": columns,
            "rows": [{"id": "capture", "title": "Capture", "description": "a captured stream"}],
            "cells": cells,
            "quirks": quirk_entries(cells),
            "rules": rule_entries(),
            "sections": {
                "providers": [],
                "reference_profiles": [],
                "captures": [c["id"] for c in columns],
            },
        }
    )
