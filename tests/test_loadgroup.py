"""`--dist loadgroup` keeps an xdist_group on one worker: the plugin spreads a provider's
cells over `concurrency` groups so that workers run different providers side by side, and
that only works while pytest and pytest-xdist agree on how a group is carried (under
pytest 9.2 and pytest-xdist 3.8 they do not: every mark is silently ignored)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist")


def test_an_xdist_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers = xdist_group(name): a group\n")
    (tmp_path / "test_groups.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.xdist_group('a')\n"
        "@pytest.mark.parametrize('i', range(4))\n"
        "def test_a(i): pass\n\n"
        "@pytest.mark.xdist_group('b')\n"
        "@pytest.mark.parametrize('i', range(4))\n"
        "def test_b(i): pass\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly"]
        + ["-n", "2", "--dist", "loadgroup", "-v", "test_groups.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    ran = re.findall(r"\[(gw\d)\] .*PASSED test_groups.py::test_(\w)\[\d\]@(\w)", r.stdout)
    assert len(ran) == 8, r.stdout  # every test carries its group
    workers = {g: {w for w, _, grp in ran if grp == g} for g in "ab"}
    assert all(len(w) == 1 for w in workers.values()), workers
