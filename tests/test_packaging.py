"""The built wheel, installed into a fresh virtualenv with plain pytest (no
pytest-recording, no vcrpy): an unrelated project's pytest run passes, the base install
works without pytest, and the suite's doors say in one line which extra they need.

Needs uv (the `dev` extra) or pip, and PyPI (or its cache) for the dependencies.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UV = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")


def sh(*cmd: str | Path, cwd: Path | None = None, timeout: int = 300
       ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv holding the wheel built from this checkout, and pytest."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # a copy, so that the build leaves nothing in the checkout
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".*", "__pycache__", "*.egg-info", "build", "cassettes", "reports", "tests",
        "benchmarks", "test-artifacts"))
    dist, venv = tmp / "dist", tmp / "venv"
    if UV:
        build = sh(UV, "build", "-q", "--wheel", "--out-dir", dist, src)
        make = sh(UV, "venv", "-q", "--python", sys.executable, venv)
    else:
        build = sh(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, src)
        make = sh(sys.executable, "-m", "venv", "--without-pip", venv)
    if build.returncode != 0 and "connect" in (build.stderr + build.stdout).lower():
        pytest.skip(f"no package index reachable to build the wheel: {build.stderr[-200:]}")
    assert build.returncode == 0, build.stderr
    assert make.returncode == 0, make.stderr
    (wheel,) = dist.glob("conformance-*.whl")
    py = venv / "bin" / "python"
    install = (sh(UV, "pip", "install", "-q", "--python", py, wheel, "pytest") if UV else
               sh(sys.executable, "-m", "pip", "--python", py, "install", "-q", wheel, "pytest"))
    assert install.returncode == 0, install.stderr
    return venv


def test_the_plain_package_leaves_an_unrelated_pytest_run_alone(fresh_venv: Path,
                                                               tmp_path: Path) -> None:
    py = fresh_venv / "bin" / "python"
    # The premise: pytest is there, the suite's pieces are not.
    probe = sh(py, "-c", "import importlib.util as u; print([m for m in ('pytest', "
                         "'pytest_recording', 'vcr') if u.find_spec(m)])")
    assert probe.stdout.strip() == "['pytest']", probe.stderr
    (tmp_path / "test_unrelated.py").write_text("def test_sum():\n    assert sum([1, 2]) == 3\n")
    r = sh(py, "-m", "pytest", "-p", "no:cacheprovider", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout
    assert "INTERNALERROR" not in r.stdout + r.stderr


def test_the_base_install_works_without_the_suite(fresh_venv: Path, tmp_path: Path) -> None:
    py = fresh_venv / "bin" / "python"
    r = sh(py, "-c", "import sys, conformance.client, conformance.analysis, "
                     "conformance.server.app; print('pytest' in sys.modules)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"
    sse = tmp_path / "one.sse"
    sse.write_text('data: {"choices":[{"index":0,"delta":{"content":"hi"},'
                   '"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    r = sh(fresh_venv / "bin" / "conformance", "analyze", "--json", sse)
    assert r.returncode == 0, r.stderr
    assert '"source": "' + str(sse) + '"' in r.stdout


def test_the_suite_doors_name_the_extra_they_need(fresh_venv: Path, tmp_path: Path) -> None:
    r = sh(fresh_venv / "bin" / "conformance", "run", "--base-url", "http://127.0.0.1:9/v1",
           "--model", "m", cwd=tmp_path)
    assert r.returncode == 4
    assert r.stderr.strip().endswith("pip install 'conformance[suite]'")
    assert len(r.stderr.strip().splitlines()) == 1
    r = sh(fresh_venv / "bin" / "python", "-m", "pytest", "-p", "no:cacheprovider",
           "--pyargs", "conformance.suite", "--base-url=http://127.0.0.1:9/v1", "--model=m",
           cwd=tmp_path)
    assert r.returncode == 4
    assert "the conformance suite needs its extra: pip install 'conformance[suite]'" in r.stderr


def test_the_test_only_fakes_are_not_part_of_the_package() -> None:
    """tests/faults.py (the misbehaving server) serves tests and benchmarks only: it is
    not a module of the package, so no wheel ships it."""
    import importlib.util

    assert importlib.util.find_spec("conformance.faults") is None
    assert (ROOT / "tests" / "faults.py").is_file()
