"""Gateway transparency: every reference profile through LiteLLM's proxy, replayed from the
committed cassettes (cassettes/_gateway/litellm/), and the report section built from them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.report import validate_matrix
from conformance.report.gateway import compare
from conformance.server.profiles import PROFILES

ROOT = Path(__file__).resolve().parent.parent
GATEWAY = ROOT / "cassettes" / "_gateway" / "litellm"


def _cell(
    quirks: list[str],
    calls: list[tuple[int | None, str]],
    verdict: str = "quirk",
    rules: tuple[str, ...] = (),
) -> dict[str, Any]:
    robust = [
        {"index": i, "id": cid, "type": "function", "name": "f", "arguments": "{}"}
        for i, cid in calls
    ]
    findings = [{"rule": r, "level": "SHOULD", "quirk": None} for r in rules]
    return {
        "verdict": verdict,
        "quirks": quirks,
        "findings": findings,
        "cassette": "c.yaml",
        "tool_calls": {"naive": robust, "guarded": robust, "robust": robust},
    }


def test_compare_sorts_quirks_into_passed_normalised_added() -> None:
    up = _cell(["Q-INDEX-ALL-ZERO", "Q-SSE-COMMENT-KEEPALIVE"], [(0, "call_a"), (0, "call_b")])
    through = _cell(
        ["Q-INDEX-ALL-ZERO", "Q-ENVELOPE-FIELDS-MISSING"],
        [(0, "call_a"), (0, "call_b")],
        rules=("R-CONT-TYPE-ABSENT",),
    )
    row = compare("p", "parallel", ["Q-INDEX-ALL-ZERO"], up, through)
    assert row["passed"] == ["Q-INDEX-ALL-ZERO"]
    assert row["normalised"] == ["Q-SSE-COMMENT-KEEPALIVE"]
    assert row["added"] == ["Q-ENVELOPE-FIELDS-MISSING"]
    assert row["rules_added"] == ["R-CONT-TYPE-ABSENT"]
    assert (row["ids_kept"], row["indexes_kept"]) == (True, True)


def test_compare_sees_rewritten_ids_and_indexes() -> None:
    up = _cell([], [(0, "call_a"), (1, "call_b")])
    through = _cell([], [(0, "gw_1"), (0, "gw_2")])
    row = compare("p", "parallel", [], up, through)
    assert (row["ids_kept"], row["indexes_kept"]) == (False, False)


def test_compare_without_a_recording_claims_nothing() -> None:
    row = compare("p", "usage", ["Q-ID-ABSENT"], _cell(["Q-ID-ABSENT"], [(0, "")]), None)
    assert row["through"] is None
    assert (row["passed"], row["normalised"], row["added"]) == ([], [], [])
    assert row["ids_kept"] is None


def test_compare_without_the_direct_cell_uses_the_injected_quirks() -> None:
    row = compare("p", "usage", ["Q-ID-ABSENT"], None, _cell([], [(0, "call_a")]))
    assert row["upstream"] is None
    assert row["normalised"] == ["Q-ID-ABSENT"]
    assert row["ids_kept"] is None  # nothing to compare the ids with


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if not GATEWAY.is_dir():
        pytest.fail(f"{GATEWAY} is missing: record it with `nox -s litellm`")
    out = tmp_path_factory.mktemp("gateway")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(ROOT / "conformance" / "suite"),
            "-q",
            "-p",
            "no:cacheprovider",
            f"--rootdir={ROOT}",
            "--reference-profiles",
            "--provider=profile:*",
            "--provider=gateway:litellm:*",
            "--record-mode=none",
            f"--cassette-dir={ROOT / 'cassettes'}",
            f"--report-dir={out}",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    # Each gateway cell is judged against what providers.yaml declares LiteLLM does.
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    doc: dict[str, Any] = json.loads((out / "quirks-matrix.json").read_text())
    validate_matrix(doc)
    doc["_md"] = (out / "quirks-matrix.md").read_text()
    doc["_html"] = (out / "quirks-matrix.html").read_text()
    return doc


def _rows(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["profile"]: r for r in doc["gateways"]["litellm"]["profiles"]}


def test_every_reference_profile_went_through_the_gateway(replayed: dict[str, Any]) -> None:
    rows = _rows(replayed)
    assert set(rows) == set(PROFILES)
    # A profile added after the gateway was last recorded (`nox -s litellm`) shows no cell
    # through it, never a guess; every recorded one went through.
    recorded = {p.name for p in GATEWAY.iterdir() if p.is_dir()}
    assert recorded and recorded <= set(PROFILES)
    assert all(
        (r["through"] is not None) == (name in recorded) and r["upstream"] is not None
        for name, r in rows.items()
    )
    prov = replayed["gateways"]["litellm"]["provenance"]
    assert prov["software"] == "LiteLLM proxy"
    assert prov["version"].startswith("1.109.3 (upstream: conformance serve")


def test_litellm_keeps_ids_and_passes_index_and_empty_string_quirks(
    replayed: dict[str, Any],
) -> None:
    rows = _rows(replayed)
    assert rows["ollama-parallel"]["passed"] == ["Q-INDEX-ALL-ZERO"]
    assert "Q-EMPTY-STRING-OVERWRITE" in rows["dashscope-compatible"]["passed"]
    assert rows["reference"]["ids_kept"] is True
    assert rows["reference"]["indexes_kept"] is True
    assert rows["reference"]["added"] == ["Q-ENVELOPE-FIELDS-MISSING"]  # finish_reason null
    assert rows["reference"]["rules_added"] == ["R-CONT-TYPE-ABSENT"]  # type repeated
    assert rows["sse-comment-keepalive"]["normalised"] == ["Q-SSE-COMMENT-KEEPALIVE"]
    assert rows["index-absent"]["added"] == ["Q-ENVELOPE-FIELDS-MISSING", "Q-INDEX-ALL-ZERO"]
    assert replayed["gateways"]["litellm"]["summary"]["ids_changed"] == []


def test_the_gateway_section_is_rendered(replayed: dict[str, Any]) -> None:
    assert "### Gateway transparency: litellm" in replayed["_md"]
    assert "| `ollama-parallel` | `parallel` | `Q-INDEX-ALL-ZERO` |" in replayed["_md"]
    assert 'id="gateway-litellm"' in replayed["_html"]
    assert 'data-profile="dashscope-compatible"' in replayed["_html"]
    assert replayed["sections"]["providers"] == []  # never shown as provider columns


def test_gateway_cassettes_hold_no_key() -> None:
    for path in GATEWAY.rglob("*.yaml"):
        text = path.read_text()
        assert "authorization" not in text.lower(), path
        assert not re.search(r"\bsk-[A-Za-z0-9]{8,}", text), path
