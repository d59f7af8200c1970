"""A matrix from `conformance analyze` results (mode "field"): one capture column per input.

Used by ``conformance analyze --report DIR`` when ``conformance.matrix.matrix_from_captures``
is not available. CaptureResult keeps no events, so field cells carry no `evidence`; the
findings (event number, pointer, excerpt) still locate every deviation.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterable
from typing import Any

from conformance.report.common import Doc

CAPTURE_ROW = {
    "id": "capture",
    "title": "Captured stream",
    "description": "A stream recorded elsewhere and analysed with `conformance analyze`.",
}


def now_utc() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def quirk_entries(ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Catalogue entries (plus level) for these quirk ids, in id order."""
    from conformance.rules import quirk_catalogue, quirk_level

    cat = quirk_catalogue()
    out: dict[str, dict[str, Any]] = {}
    for q in sorted(set(ids)):
        e = cat.get(q, {})
        out[q] = {
            "title": e.get("title") or q,
            "group": e.get("group", ""),
            "group_title": e.get("group_title", ""),
            "level": quirk_level(q),
            "reference_behaviour": bool(e.get("reference_behaviour", False)),
            "anchor": e.get("anchor") or "#" + q.lower(),
            "sources": e.get("sources", ""),
            "breaks": e.get("breaks", ""),
            "workaround": e.get("workaround", ""),
        }
    return out


def rule_entries(ids: Iterable[str]) -> dict[str, dict[str, str]]:
    from conformance.rules import RULES

    return {
        r: {"level": RULES[r].level, "statement": RULES[r].statement, "source": RULES[r].source}
        for r in sorted(set(ids))
        if r in RULES
    }


def _column(cid: str, result: Any) -> dict[str, Any]:
    meta = getattr(result, "meta", {}) or {}
    fps = meta.get("system_fingerprint")
    return {
        "id": cid,
        "kind": "capture",
        "label": os.path.basename(cid.split("#")[0]) + ("#" + cid.split("#")[1] if "#" in cid else ""),
        "model": meta.get("model"),
        "base_url": None,
        "status": "recorded",
        "record_command": None,
        "provenance": {
            "how": "capture",
            "recorded_at": None,
            "suite_version_at_record": None,
            "cassette_dir": None,
            "server": {
                "software": None,
                "version": None,
                "seen": {
                    "server_header": meta.get("server"),
                    "system_fingerprint": list(fps) if fps else None,
                    "model_field": meta.get("model"),
                },
            },
        },
        "expected_quirks": {},
    }


def cell_from_result(column: str, row: str, result: Any) -> dict[str, Any]:
    """A matrix cell from a CaptureResult (no evidence: results keep no events)."""
    j = result.to_json()
    source = str(j["source"])
    path, _, interaction = source.partition("#")
    return {
        "column": column,
        "row": row,
        "verdict": j["verdict"],
        "reason": j.get("error"),
        "quirks": list(j["quirks"]),
        "expected": [],
        "findings": j["findings"],
        "evidence": [],
        "impact": j["impact"],
        "tool_calls": j["tool_calls"],
        "finish_reason": j["finish_reason"],
        "cassette": path,
        "interaction": int(interaction) if interaction.isdigit() else None,
    }


def matrix_from_results(results: Iterable[Any], *, title: str = "Field captures") -> Doc:
    from conformance import __version__

    columns, cells, seen = [], [], set()
    for r in results:
        cid, k = str(r.source), 2
        while cid in seen:
            cid, k = f"{r.source} ({k})", k + 1
        seen.add(cid)
        columns.append(_column(cid, r))
        cells.append(cell_from_result(cid, "capture", r))
    quirks = [q for c in cells for q in c["quirks"]]
    quirks += [f["quirk"] for c in cells for f in c["findings"] if f.get("quirk")]
    rules = [f["rule"] for c in cells for f in c["findings"]]
    return {
        "format": "conformance-quirks-matrix/1",
        "suite_version": __version__,
        "generated": now_utc(),
        "mode": "field",
        "title": title,
        "columns": columns,
        "rows": [dict(CAPTURE_ROW)],
        "cells": cells,
        "quirks": quirk_entries(quirks),
        "rules": rule_entries(rules),
        "sections": {
            "providers": [],
            "reference_profiles": [],
            "captures": [c["id"] for c in columns],
        },
    }
