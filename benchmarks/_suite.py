"""Shared helpers for the suite-level benchmarks: providers files over reference profiles,
and running the real pytest suite as a subprocess (what a user runs)."""

from __future__ import annotations

import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def providers_yaml(
    url: str, profiles: list[str], concurrency: int = 1, expect_profiles: bool = False
) -> str:
    """Reference profiles as providers; with expect_profiles their quirks are expected."""
    from conformance.server.profiles import PROFILES

    lines = ["providers:"]
    for p in profiles:
        lines += [
            f"  {p}:",
            f"    base_url: {url}",
            f"    model: {p}",
            f"    concurrency: {concurrency}",
        ]
        expected = sorted(PROFILES[p].expected) if expect_profiles else []
        if expected:
            lines.append("    expected_quirks:")
            lines += [f"      {q}: injected by the {p} profile" for q in expected]
    return "\n".join(lines) + "\n"


def run_pytest(
    tmp: Path, *args: str, mode: str = "none", junit: str | None = None
) -> tuple[float, subprocess.CompletedProcess[str]]:
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
        f"--report-dir={tmp}/reports",
        f"--record-mode={mode}",
        *args,
    ]
    if junit:
        cmd.append(f"--junitxml={junit}")
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
    return time.perf_counter() - t0, r


def durations_by_provider(junit: str) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name", "")
        if "[" in name:
            out[name[name.index("[") + 1 : -1]] += float(case.get("time", 0))
    return dict(out)
