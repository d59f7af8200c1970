"""The provider × scenario pipeline end to end, over real HTTP against the reference-profile
server: live recording through vcrpy, replay, cells, the matrix, expected quirks."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.server.testing import running_server

ROOT = Path(__file__).resolve().parent.parent


def run_suite(
    tmp: Path, providers: str, *args: str, mode: str = "none", report: str = "reports"
) -> subprocess.CompletedProcess[str]:
    (tmp / "providers.yaml").write_text(textwrap.dedent(providers))
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(ROOT / "conformance" / "suite"),
        "-q",
        "-p",
        "no:cacheprovider",
        f"--rootdir={ROOT}",
        f"--providers={tmp}/providers.yaml",
        f"--cassette-dir={tmp}/cassettes",
        f"--report-dir={tmp}/{report}",
        f"--record-mode={mode}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, timeout=600)


def cells(tmp: Path, report: str = "reports") -> dict[tuple[str, str], dict[str, Any]]:
    doc = json.loads((tmp / report / "quirks-matrix.json").read_text())
    return {(c["column"], c["row"]): c for c in doc["cells"]}


def essence(doc_cells: dict[tuple[str, str], dict[str, Any]]) -> dict[Any, Any]:
    return {
        k: (
            c["verdict"],
            c["quirks"],
            c["reason"],
            c["tool_calls"],
            c["finish_reason"],
            c["impact"],
        )
        for k, c in doc_cells.items()
    }


PROVIDERS = """
providers:
  ref:
    base_url: {url}
    model: reference
  dash:
    base_url: {url}
    model: dashscope-compatible
    expected_quirks:
      Q-EMPTY-STRING-OVERWRITE: "DashScope continuation deltas (seed 000 §5)"
  cloud:
    base_url: https://api.invalid.example/v1
    model: m
    api_key_env: CONFORMANCE_TEST_UNSET_KEY
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("pipeline")
    scen = [
        "--scenario=single",
        "--scenario=parallel",
        "--scenario=round-trip",
        "--scenario=usage",
        "--scenario=tool-choice-none",
        "--scenario=named",
    ]
    with running_server() as url:
        live = run_suite(tmp, PROVIDERS.format(url=url), *scen, mode="all", report="live")
    assert "Traceback" not in live.stdout + live.stderr, live.stdout[-3000:]
    (tmp / "live.out").write_text(live.stdout)
    # The server is gone: replay must not need it.
    replay = run_suite(tmp, PROVIDERS.format(url=url), *scen, mode="none", report="replay")
    (tmp / "replay.out").write_text(replay.stdout)
    return tmp


def test_live_then_replay_gives_the_same_matrix(recorded: Path) -> None:
    live, replay = cells(recorded, "live"), cells(recorded, "replay")
    assert essence(live) == essence(replay)
    assert live[("ref", "single")]["verdict"] == "conforms"


def test_cassettes_are_per_provider_and_scenario(recorded: Path) -> None:
    names = sorted(p.name for p in (recorded / "cassettes" / "ref").glob("*.yaml"))
    assert names == [
        "named.yaml",
        "parallel.yaml",
        "round-trip.yaml",
        "single.yaml",
        "tool-choice-none.yaml",
        "usage.yaml",
    ]
    rt = yaml.safe_load((recorded / "cassettes" / "ref" / "round-trip.yaml").read_text())
    assert len(rt["interactions"]) == 2  # the stream and the round trip
    second = json.loads(rt["interactions"][1]["request"]["body"])
    assistant = [m for m in second["messages"] if m["role"] == "assistant"][0]
    tool_ids = [m["tool_call_id"] for m in second["messages"] if m["role"] == "tool"]
    assert [tc["id"] for tc in assistant["tool_calls"]] == tool_ids


def test_expected_quirk_is_an_expected_failure_with_its_reason(recorded: Path) -> None:
    out = (recorded / "replay.out").read_text()
    dash = cells(recorded, "replay")[("dash", "single")]
    assert dash["verdict"] == "quirk" and dash["expected"] == ["Q-EMPTY-STRING-OVERWRITE"]
    assert dash["impact"]["naive"]["status"] == "wrong"
    assert dash["impact"]["robust"]["status"] == "ok"
    assert "xfailed" in out


def test_unrecorded_provider_is_a_not_recorded_column_with_its_command(recorded: Path) -> None:
    doc = json.loads((recorded / "replay" / "quirks-matrix.json").read_text())
    col = {c["id"]: c for c in doc["columns"]}["cloud"]
    assert col["status"] == "not recorded"
    cloud = [c for c in doc["cells"] if c["column"] == "cloud"]
    assert cloud and all(c["verdict"] == "not recorded" for c in cloud)
    # Run from a directory that is not a checkout: the hint is a command that works there.
    assert (
        f"toolcall-conformance run --providers {recorded}/providers.yaml --provider cloud"
        in cloud[0]["reason"]
    )
    assert col["provenance"]["how"] is None


def test_recorded_columns_carry_provenance(recorded: Path) -> None:
    doc = json.loads((recorded / "replay" / "quirks-matrix.json").read_text())
    col = {c["id"]: c for c in doc["columns"]}["ref"]
    prov = col["provenance"]
    assert prov["how"] == "replayed" and prov["recorded_at"] and prov["cassette_dir"]
    assert prov["server"]["seen"]["model_field"] == "reference"
    assert doc["generated"] == max(
        c["provenance"]["recorded_at"] for c in doc["columns"] if c["provenance"]["recorded_at"]
    )


def test_roundtrip_ids_travel_unchanged(recorded: Path) -> None:
    c = cells(recorded, "replay")[("ref", "round-trip")]
    assert c["verdict"] == "conforms", c
    assert not [f for f in c["findings"] if f["rule"].startswith("R-ROUNDTRIP")]


def test_unexpected_quirk_fails_and_vanished_expected_quirk_fails(tmp_path: Path) -> None:
    providers = """
    providers:
      dash:
        base_url: {url}
        model: dashscope-compatible
      ref:
        base_url: {url}
        model: reference
        expected_quirks:
          Q-INDEX-ALL-ZERO: {{reason: "claimed but not true", scenarios: [single]}}
    """
    with running_server() as url:
        r = run_suite(tmp_path, providers.format(url=url), "--scenario=single", mode="all")
    # The quirk, the event, the JSON pointer, the message, and how to declare it expected.
    assert "unexpected MUST quirk Q-EMPTY-STRING-OVERWRITE (breaks R-CONT-ID-ABSENT: " in r.stdout
    assert (
        ') event 2 /choices/0/delta/tool_calls/0/id: `id: ""` on a continuation delta' in r.stdout
    )
    assert "--expect-quirk Q-EMPTY-STRING-OVERWRITE='<reason>'" in r.stdout
    assert "under provider 'dash' in providers.yaml: expected_quirks:" in r.stdout
    assert "expected quirks no longer seen" in r.stdout and "Q-INDEX-ALL-ZERO" in r.stdout
    assert r.returncode == 1


def test_repeated_trials_are_counted_and_kept(tmp_path: Path) -> None:
    providers = """
    providers:
      oll:
        base_url: {url}
        model: ollama-parallel
        expected_quirks: {{Q-INDEX-ALL-ZERO: "Ollama parallel calls (ollama/ollama#15457)"}}
    """
    with running_server() as url:
        run_suite(
            tmp_path,
            providers.format(url=url),
            "--scenario=parallel",
            "--repeat=3",
            mode="all",
            report="live",
        )
    live = cells(tmp_path, "live")[("oll", "parallel")]
    assert live["trials"]["n"] == 3
    assert live["trials"]["quirk_counts"]["Q-INDEX-ALL-ZERO"] == 3
    cas = yaml.safe_load((tmp_path / "cassettes" / "oll" / "parallel.yaml").read_text())
    assert len(cas["interactions"]) == 3
    run_suite(
        tmp_path,
        providers.format(url="http://127.0.0.1:9/v1"),
        "--scenario=parallel",
        mode="none",
        report="replay",
    )
    assert essence(cells(tmp_path, "replay")) == essence(cells(tmp_path, "live"))


def test_unknown_names_list_the_valid_ones(tmp_path: Path) -> None:
    r = run_suite(
        tmp_path, "providers:\n  a: {base_url: 'http://x/v1', model: m}\n", "--provider=nope"
    )
    assert "unknown provider 'nope'; valid: a" in r.stderr
    r = run_suite(
        tmp_path, "providers:\n  a: {base_url: 'http://x/v1', model: m}\n", "--scenario=nope"
    )
    assert "unknown scenario 'nope'; valid: single" in r.stderr
    assert "Traceback" not in r.stderr
