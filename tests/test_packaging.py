"""The built wheel, installed into a fresh virtualenv with plain pytest (no
pytest-recording, no vcrpy): an unrelated project's pytest run passes, the base install
works without pytest, and the suite's doors say in one line which extra they need.

Needs uv (the `dev` extra) or pip, and PyPI (or its cache) for the dependencies.
"""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UV = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")


def sh(
    *cmd: str | Path, cwd: Path | None = None, timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a copy of this checkout (offline: uv, or pip's setuptools)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # a copy, so that the build leaves nothing in the checkout
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".*",
            "__pycache__",
            "*.egg-info",
            "build",
            "cassettes",
            "reports",
            "tests",
            "benchmarks",
            "test-artifacts",
        ),
    )
    dist = tmp / "dist"
    if UV:
        build = sh(UV, "build", "-q", "--wheel", "--out-dir", dist, src)
    else:
        build = sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, src)
    if build.returncode != 0 and "connect" in (build.stderr + build.stdout).lower():
        pytest.skip(f"no package index reachable to build the wheel: {build.stderr[-200:]}")
    assert build.returncode == 0, build.stderr
    (wheel,) = dist.glob("toolcall_conformance-*.whl")
    return wheel


@pytest.fixture(scope="module")
def fresh_venv(built_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv holding the wheel built from this checkout, and pytest."""
    venv, wheel = tmp_path_factory.mktemp("venv") / "venv", built_wheel
    make = (
        sh(UV, "venv", "-q", "--python", sys.executable, venv)
        if UV
        else sh(sys.executable, "-m", "venv", "--without-pip", venv)
    )
    assert make.returncode == 0, make.stderr
    py = venv / "bin" / "python"
    install = (
        sh(UV, "pip", "install", "-q", "--python", py, wheel, "pytest")
        if UV
        else sh(sys.executable, "-m", "pip", "--python", py, "install", "-q", wheel, "pytest")
    )
    assert install.returncode == 0, install.stderr
    return venv


def test_the_plain_package_leaves_an_unrelated_pytest_run_alone(
    fresh_venv: Path, tmp_path: Path
) -> None:
    py = fresh_venv / "bin" / "python"
    # The premise: pytest is there, the suite's pieces are not.
    probe = sh(
        py,
        "-c",
        "import importlib.util as u; print([m for m in ('pytest', "
        "'pytest_recording', 'vcr') if u.find_spec(m)])",
    )
    assert probe.stdout.strip() == "['pytest']", probe.stderr
    (tmp_path / "test_unrelated.py").write_text("def test_sum():\n    assert sum([1, 2]) == 3\n")
    r = sh(py, "-m", "pytest", "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout
    assert "INTERNALERROR" not in r.stdout + r.stderr


def test_the_base_install_works_without_the_suite(fresh_venv: Path, tmp_path: Path) -> None:
    py = fresh_venv / "bin" / "python"
    r = sh(
        py,
        "-c",
        "import sys, conformance.client, conformance.analysis, "
        "conformance.server.app; print('pytest' in sys.modules)",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"
    sse = tmp_path / "one.sse"
    sse.write_text(
        'data: {"choices":[{"index":0,"delta":{"content":"hi"},'
        '"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    r = sh(fresh_venv / "bin" / "toolcall-conformance", "analyze", "--json", sse)
    assert r.returncode == 0, r.stderr
    assert '"source": "' + str(sse) + '"' in r.stdout


def test_the_suite_doors_name_the_extra_they_need(fresh_venv: Path, tmp_path: Path) -> None:
    r = sh(
        fresh_venv / "bin" / "toolcall-conformance",
        "run",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        cwd=tmp_path,
    )
    assert r.returncode == 4
    assert r.stderr.strip().endswith("pip install 'toolcall-conformance[suite]'")
    assert len(r.stderr.strip().splitlines()) == 1
    r = sh(
        fresh_venv / "bin" / "python",
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--pyargs",
        "conformance.suite",
        "--base-url=http://127.0.0.1:9/v1",
        "--model=m",
        cwd=tmp_path,
    )
    assert r.returncode == 4
    assert (
        "the conformance suite needs its extra: pip install 'toolcall-conformance[suite]'"
        in r.stderr
    )


def _wheel_metadata(wheel: Path) -> tuple[str, configparser.ConfigParser]:
    with zipfile.ZipFile(wheel) as z:
        info = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = z.read(info).decode()
        eps = configparser.ConfigParser()
        eps.read_string(z.read(info.replace("METADATA", "entry_points.txt")).decode())
    name = next(
        line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Name:")
    )
    return name, eps


def test_the_wheel_is_what_the_readme_installs_and_runs(built_wheel: Path) -> None:
    """The README's install lines name the wheel's distribution, its run line the console
    script the wheel declares; no script named plain `conformance` (another PyPI project's
    command) is installed."""
    name, eps = _wheel_metadata(built_wheel)
    readme = (ROOT / "README.md").read_text("utf-8")
    installs = re.findall(r"^pip install ['\"]?([a-z][a-z0-9-]*)", readme, re.MULTILINE)
    assert installs and set(installs) == {name}, installs
    scripts = dict(eps["console_scripts"])
    assert set(scripts) == {"toolcall-conformance"}, scripts
    assert scripts["toolcall-conformance"] == "conformance.cli:main"
    runs = re.findall(r"^(?:\S+=\S+ )*([a-z-]+) run --base-url", readme, re.MULTILINE)
    assert runs and set(runs) <= set(scripts), runs
    assert dict(eps["pytest11"]) == {"conformance": "conformance.pytest_plugin"}


def test_the_release_workflow_builds_checks_and_publishes_on_a_tag() -> None:
    import yaml

    doc = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text("utf-8"))
    on = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as true
    assert on["push"]["tags"] == ["v*"]
    runs = " ".join(s.get("run", "") for s in doc["jobs"]["build"]["steps"])
    assert "python -m build" in runs and "twine check" in runs
    publish = doc["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"}
    assert any(
        str(s.get("uses", "")).startswith("pypa/gh-action-pypi-publish@") for s in publish["steps"]
    )


def test_the_test_only_fakes_are_not_part_of_the_package() -> None:
    """tests/faults.py (the misbehaving server) serves tests and benchmarks only: it is
    not a module of the package, so no wheel ships it."""
    import importlib.util

    assert importlib.util.find_spec("conformance.faults") is None
    assert (ROOT / "tests" / "faults.py").is_file()
