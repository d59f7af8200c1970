"""The CI recipe (examples/github-workflow.yml, docs/ci.md) runs: its steps' `run:`
scripts, executed as GitHub would (bash -eo pipefail, a step after a failure runs only
with `if: always()`), against `toolcall-conformance serve` instead of the project's own server.

Two steps are not run here: installing the package (this environment has it) and
starting the project's server (the step with id `server`: `toolcall-conformance serve` stands in).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.server.testing import running_server

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "examples" / "github-workflow.yml"
NOT_RUN = {"server", "install"}


def steps() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    doc = yaml.safe_load(WORKFLOW.read_text("utf-8"))
    job = doc["jobs"]["conformance"]
    return job.get("env", {}), job["steps"]


def run_recipe(cwd: Path, base_url: str, model: str) -> tuple[list[tuple[str, int]], str]:
    """Each step's name and exit status (-1: skipped after a failure), and the summary."""
    job_env, all_steps = steps()
    summary = cwd / "summary.md"
    env = {
        **os.environ,
        **{k: str(v) for k, v in job_env.items()},
        "CONFORMANCE_BASE_URL": base_url,
        "CONFORMANCE_MODEL": model,
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_ENV": str(cwd / "github.env"),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    }
    out, failed = [], False
    for step in all_steps:
        if "run" not in step or step.get("id") in NOT_RUN or "pip install" in step["run"]:
            continue
        if failed and "always()" not in str(step.get("if", "")):
            out.append((step["name"], -1))
            continue
        r = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        out.append((step["name"], r.returncode))
        failed = failed or r.returncode != 0
    return out, summary.read_text("utf-8") if summary.exists() else ""


@pytest.fixture(scope="module")
def server() -> Any:
    with running_server() as url:
        yield url


def test_the_workflow_has_the_steps_the_docs_describe() -> None:
    _, all_steps = steps()
    ids = [s.get("id") for s in all_steps]
    assert "server" in ids
    runs = "\n".join(s.get("run", "") for s in all_steps)
    assert (
        'toolcall-conformance run --base-url "$CONFORMANCE_BASE_URL" --model "$CONFORMANCE_MODEL"'
        in runs
    )
    assert "toolcall-conformance report --diff" in runs and "--markdown" in runs
    assert '"$GITHUB_STEP_SUMMARY"' in runs
    uploads = [s for s in all_steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploads and "conformance-reports/" in uploads[0]["with"]["path"]
    assert "examples/github-workflow.yml" in (ROOT / "docs" / "ci.md").read_text("utf-8")


@pytest.mark.skipif(shutil.which("curl") is None, reason="the recipe's wait step uses curl")
def test_a_conforming_server_passes_and_the_summary_holds_the_matrix(
    server: str, tmp_path: Path
) -> None:
    result, summary = run_recipe(tmp_path, server, "reference")
    assert result == [
        ("Wait until the server answers", 0),
        ("Run the conformance suite", 0),
        ("Summary", 0),
    ]
    assert "reference" in summary and "✓" in summary
    assert (tmp_path / "conformance-reports" / "quirks-matrix.html").exists()
    assert (tmp_path / "conformance-cassettes" / "reference" / "single.yaml").exists()


@pytest.mark.skipif(shutil.which("curl") is None, reason="the recipe's wait step uses curl")
def test_a_deviating_server_fails_the_job_and_still_writes_the_summary(
    server: str, tmp_path: Path
) -> None:
    result, summary = run_recipe(tmp_path, server, "dashscope-compatible")
    assert result == [
        ("Wait until the server answers", 0),
        ("Run the conformance suite", 1),
        ("Summary", 0),
    ]
    assert "Q-EMPTY-STRING-OVERWRITE" in summary


@pytest.mark.skipif(shutil.which("curl") is None, reason="the recipe's wait step uses curl")
def test_with_a_committed_baseline_the_summary_is_the_diff(server: str, tmp_path: Path) -> None:
    first, _ = run_recipe(tmp_path, server, "reference")
    assert [code for _, code in first] == [0, 0, 0]
    baseline = tmp_path / ".conformance" / "quirks-matrix.json"
    baseline.parent.mkdir()
    shutil.copy(tmp_path / "conformance-reports" / "quirks-matrix.json", baseline)
    (tmp_path / "summary.md").unlink()
    again, summary = run_recipe(tmp_path, server, "reference")
    assert [code for _, code in again] == [0, 0, 0]
    matrix_md = (tmp_path / "conformance-reports" / "quirks-matrix.md").read_text("utf-8")
    assert summary and summary != matrix_md  # the diff, not the matrix
    direct = subprocess.run(
        [
            str(Path(sys.executable).parent / "toolcall-conformance"),
            "report",
            "--diff",
            str(baseline),
            str(tmp_path / "conformance-reports" / "quirks-matrix.json"),
            "--markdown",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert summary == direct.stdout


@pytest.mark.skipif(shutil.which("curl") is None, reason="the recipe's wait step uses curl")
def test_a_regression_fails_the_run_step_and_the_summary_step_stays_green(
    server: str, tmp_path: Path
) -> None:
    """The same model name ("reference") served first as OpenAI does, then by a
    deviating profile (the server's /p/<profile>/v1 route): a regression against the
    committed baseline. Only the run step fails; the summary says what regressed."""
    first, _ = run_recipe(tmp_path, server, "reference")
    assert [code for _, code in first] == [0, 0, 0]
    baseline = tmp_path / ".conformance" / "quirks-matrix.json"
    baseline.parent.mkdir()
    shutil.copy(tmp_path / "conformance-reports" / "quirks-matrix.json", baseline)
    (tmp_path / "summary.md").unlink()
    deviating = server.removesuffix("/v1") + "/p/dashscope-compatible/v1"
    again, summary = run_recipe(tmp_path, deviating, "reference")
    assert again == [
        ("Wait until the server answers", 0),
        ("Run the conformance suite", 1),
        ("Summary", 0),
    ]
    assert "Q-EMPTY-STRING-OVERWRITE" in summary


@pytest.mark.skipif(shutil.which("curl") is None, reason="the recipe's wait step uses curl")
def test_the_summary_without_a_baseline_is_about_the_server_only(
    server: str, tmp_path: Path
) -> None:
    _, summary = run_recipe(tmp_path, server, "dashscope-compatible")
    assert "dashscope-compatible" in summary
    for other in ("Anthropic", "Groq", "xAI", "Mistral", "public recordings"):
        assert other not in summary, other
    assert len(summary.encode()) < 12_000
