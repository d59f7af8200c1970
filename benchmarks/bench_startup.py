"""Start-up: `conformance analyze` on a 1k-event SSE file, whole process, against a floor
process (`python -c` that reads the same file and `json.loads` every payload).

Run:  python benchmarks/bench_startup.py  [--runs 11] [--events 1000]

Both run as subprocesses of the same interpreter, alternating, and the figure is the
median wall time of ``--runs`` each. Goal (issue 17): within 3x the floor process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from shapes import make_shapes

FLOOR = (
    "import json,sys\n"
    "for line in open(sys.argv[1], encoding='utf-8'):\n"
    "    if line.startswith('data: {'):\n"
    "        json.loads(line[6:])\n"
)
GOAL = 3.0


# Bytecode caches, as an installed package has them (pip compiles at install time): this
# machine's environment sets PYTHONDONTWRITEBYTECODE, under which every process compiles
# every module again (the first, warm-up run writes the caches).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--events", type=int, default=1000)
    args = ap.parse_args()
    shape = next(s for s in make_shapes(args.events) if s.name == "interleaved4")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "capture.sse"
        path.write_bytes(shape.raw)
        ours = [sys.executable, "-m", "conformance", "analyze", str(path)]
        floor = [sys.executable, "-c", FLOOR, str(path)]
        timed(ours), timed(floor)  # warm the file cache and the .pyc files
        t_ours, t_floor = [], []
        for _ in range(args.runs):
            t_ours.append(timed(ours))
            t_floor.append(timed(floor))
    a, f = statistics.median(t_ours), statistics.median(t_floor)
    print(
        f"load: {os.getloadavg()[0]:.2f} (1 min); {shape.events} events, median of "
        f"{args.runs}, bytecode caches written by a warm-up run"
    )
    print(f"  floor process (python -c, json.loads per payload): {f * 1e3:7.1f} ms")
    print(
        f"  conformance analyze (whole process)              : {a * 1e3:7.1f} ms"
        f" = {a / f:.2f}x the floor"
    )
    print(f"goal analyze within {GOAL}x the floor process: {'met' if a / f <= GOAL else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
