"""Concurrent live runs through pytest-xdist against the reference-profile server.

5 providers x 12 scenarios, the server injecting 1 s of latency per stream, one cell per
provider at a time (`concurrency: 1` in providers.yaml, enforced across workers).
Serial wall time vs `-n 5`; goal: concurrent wall <= 1.3 x the slowest provider's serial
time. Run: python benchmarks/bench_concurrency.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from _suite import durations_by_provider, providers_yaml, run_pytest

from conformance.server.testing import running_server

PROFILES = ["reference", "dashscope-compatible", "ollama-parallel", "ollama-legacy", "id-omitted"]
SCENARIOS = [
    "single",
    "parallel",
    "interleaved",
    "truncated-arguments",
    "tool-choice-none",
    "required",
    "named",
    "no-arguments",
    "unicode-arguments",
    "parallel-disabled",
    "long-arguments",
    "usage",
]


def main() -> None:
    scen = [f"--scenario={s}" for s in SCENARIOS]
    with running_server(latency=1.0) as url:
        results = {}
        for label, extra in (
            ("serial", []),
            ("concurrent (-n 5 --dist loadgroup)", ["-n", "5", "--dist", "loadgroup"]),
        ):
            tmp = Path(tempfile.mkdtemp(prefix="bench-conc-"))
            (tmp / "providers.yaml").write_text(
                providers_yaml(url, PROFILES, concurrency=1, expect_profiles=True)
            )
            junit = str(tmp / "junit.xml")
            wall, r = run_pytest(tmp, *scen, *extra, mode="all", junit=junit)
            tail = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-300:]
            results[label] = (wall, durations_by_provider(junit), tail)
        # "The slowest provider's serial time": each provider alone, serially, wall clock
        # (pytest start-up included, as in the concurrent run).
        alone = {}
        for prof in PROFILES:
            tmp = Path(tempfile.mkdtemp(prefix="bench-conc-"))
            (tmp / "providers.yaml").write_text(
                providers_yaml(url, [prof], concurrency=1, expect_profiles=True)
            )
            alone[prof] = run_pytest(tmp, *scen, mode="all")[0]
    serial_wall, per_provider, _ = results["serial"]
    slowest = max(alone.values())
    conc_wall = results["concurrent (-n 5 --dist loadgroup)"][0]
    print(f"cells: {len(PROFILES)} providers x {len(SCENARIOS)} scenarios, 1 s latency/stream")
    for label, (wall, _, tail) in results.items():
        print(f"  {label:20s} wall {wall:6.1f} s   ({tail})")
    print(
        "  each provider alone (wall): "
        + ", ".join(f"{k} {v:.1f} s" for k, v in sorted(alone.items()))
    )
    ratio = conc_wall / slowest
    print(
        f"  slowest provider alone {slowest:.1f} s; concurrent / slowest = {ratio:.2f} "
        f"(goal <= 1.30: {'met' if ratio <= 1.3 else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
