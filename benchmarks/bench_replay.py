"""Replay speed at scale: 20 providers x 15 scenarios from cassettes, end to end through
pytest, with a breakdown of where the time goes. Goal: under 10 s on this machine.

The cassettes are recorded first from the reference-profile server (20 profiles as
providers), then the suite replays them with no network. Run:
python benchmarks/bench_replay.py
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import yaml
from _suite import providers_yaml, run_pytest

from conformance.analysis import analyze
from conformance.pytest_plugin import write_reports
from conformance.readers import YamlLoader, cassette_transcripts
from conformance.scenarios import SCENARIOS
from conformance.server.profiles import PROFILES
from conformance.server.testing import running_server

N_PROVIDERS = 20


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-replay-"))
    profiles = [p for p in PROFILES if not PROFILES[p].fault][:N_PROVIDERS]
    with running_server() as url:
        (tmp / "providers.yaml").write_text(
            providers_yaml(url, profiles, concurrency=4, expect_profiles=True)
        )
        rec, r = run_pytest(tmp, "-n", "2", mode="all")
    cells = len(profiles) * len(SCENARIOS)
    print(
        f"recorded {len(profiles)} providers x {len(SCENARIOS)} scenarios = {cells} cells "
        f"in {rec:.1f} s"
    )
    # End to end, as a user runs it.
    wall, r = run_pytest(tmp, mode="none")
    print(f"replay through pytest (serial): {wall:.2f} s  [{r.stdout.strip().splitlines()[-1]}]")
    wall_n, r = run_pytest(tmp, "-n", "2", mode="none")
    print(f"replay through pytest (-n 2):   {wall_n:.2f} s")
    # Where the time goes.
    startup, _ = run_pytest(tmp, "--collect-only", mode="none")
    files = sorted((tmp / "cassettes").rglob("*.yaml"))
    raw = [f.read_bytes() for f in files]
    t0 = time.perf_counter()
    docs = [yaml.load(b, Loader=YamlLoader) for b in raw]
    t_yaml_c = time.perf_counter() - t0
    t0 = time.perf_counter()
    for b in raw[:60]:
        yaml.load(b, Loader=yaml.SafeLoader)
    t_yaml_py = (time.perf_counter() - t0) * len(raw) / 60
    t0 = time.perf_counter()
    n = 0
    for f, d in zip(files, docs, strict=True):
        for t in cassette_transcripts(d, str(f)):
            analyze(t)
            n += 1
    t_analysis = time.perf_counter() - t0
    doc = json.loads((tmp / "reports" / "quirks-matrix.json").read_text())
    t0 = time.perf_counter()
    write_reports(doc, tmp / "rendered")
    t_render = time.perf_counter() - t0
    print("breakdown:")
    print(f"  pytest start-up + collection : {startup:.2f} s")
    print(
        f"  YAML loading ({len(files)} cassettes)  : {t_yaml_c:.2f} s with the C loader "
        f"(pure-Python loader: ~{t_yaml_py:.2f} s)"
    )
    print(f"  analysis ({n} exchanges)     : {t_analysis:.2f} s")
    print(f"  rendering JSON/MD/HTML       : {t_render:.2f} s")
    print(f"goal < 10 s: {'met' if min(wall, wall_n) < 10 else 'MISSED'}")


if __name__ == "__main__":
    main()
