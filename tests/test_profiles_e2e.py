"""End-to-end negative controls: every reference profile over real HTTP, recorded through
vcrpy, replayed, analysed and rendered by the suite exactly as a provider is, must show
exactly its quirks; the committed profile cassettes must replay to the same cells."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance import registry
from conformance.report import validate_matrix
from conformance.rules import INFO, quirk_level
from conformance.server.profiles import PROFILES
from conformance.server.testing import running_server

ROOT = Path(__file__).resolve().parent.parent


def suite(tmp: Path, url: str, mode: str, report: str, cassettes: Path) -> str:
    (tmp / "providers.yaml").write_text(
        "providers:\n  unused: {base_url: 'http://127.0.0.1:9/v1', model: m}\n"
    )
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
            f"--providers={tmp}/providers.yaml",
            "--reference-profiles",
            f"--profile-server={url}",
            "--provider=profile:*",
            f"--cassette-dir={cassettes}",
            f"--report-dir={tmp}/{report}",
            f"--record-mode={mode}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "Traceback" not in r.stdout + r.stderr
    return r.stdout


def matrix(tmp: Path, report: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((tmp / report / "quirks-matrix.json").read_text())
    validate_matrix(doc)
    return doc


def judged(doc: dict[str, Any]) -> dict[str, tuple[str, list[str], list[str]]]:
    """profile -> (verdict, quirks above INFO or expected, expected quirks)."""
    cols = {c["id"]: c for c in doc["columns"]}
    out = {}
    for c in doc["cells"]:
        expected = sorted(cols[c["column"]]["expected_quirks"])
        seen = sorted(q for q in c["quirks"] if quirk_level(q) != INFO or q in expected)
        out[c["column"].removeprefix("profile:")] = (c["verdict"], seen, expected)
    return out


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("profiles")
    with running_server() as url:
        suite(tmp, url, "all", "live", tmp / "cassettes")
    suite(tmp, "http://127.0.0.1:9/v1", "none", "replay", tmp / "cassettes")  # server gone
    return tmp


def test_every_profile_shows_exactly_its_quirks(live: Path) -> None:
    doc = matrix(live, "live")
    assert doc["sections"]["reference_profiles"] == [f"profile:{p}" for p in PROFILES]
    assert doc["sections"]["providers"] == []  # never shown as provider columns
    cells = judged(doc)
    assert set(cells) == set(PROFILES)
    for name, (verdict, seen, expected) in cells.items():
        implied = {c for q in expected for c in registry.implied(q)}
        assert set(expected) <= set(seen) <= set(expected) | implied, (name, seen, expected)
        if not expected:
            assert verdict == "conforms", name


def test_replay_gives_the_same_cells(live: Path) -> None:
    assert judged(matrix(live, "live")) == judged(matrix(live, "replay"))


def test_the_reference_profile_conforms_and_quirks_break_naive_clients(live: Path) -> None:
    cells = {c["column"]: c for c in matrix(live, "live")["cells"]}
    ref = cells["profile:reference"]
    assert ref["verdict"] == "conforms"
    assert {k: v["status"] for k, v in ref["impact"].items()} == {
        "naive": "crashed",
        "guarded": "ok",
        "robust": "ok",
    }  # the usage chunk's choices: []
    dash = cells["profile:dashscope-compatible"]
    assert dash["impact"]["naive"]["status"] != "ok" and dash["impact"]["robust"]["status"] == "ok"
    oll = cells["profile:ollama-parallel"]
    assert oll["impact"]["guarded"]["status"] != "ok" and oll["impact"]["robust"]["status"] == "ok"


def test_committed_profile_cassettes_replay_to_the_same_cells(live: Path, tmp_path: Path) -> None:
    committed = ROOT / "cassettes"
    if not (committed / "_profiles").is_dir():
        pytest.fail("cassettes/_profiles is missing: run `python3 noxw -s profiles`")
    suite(tmp_path, "http://127.0.0.1:9/v1", "none", "committed", committed)
    got = judged(matrix(tmp_path, "committed"))
    want = judged(matrix(live, "live"))
    # stream-stalls has no recorded response (a stall is timing): its cell is the error
    # the recording saw, kept in the cassette's transport-fault header.
    assert got == want
