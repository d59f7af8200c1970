"""All cores, and a cluster: streams per second against -j 1 and against Dask workers.

    python benchmarks/bench_parallel.py DIR [--streams 100000] [--jobs 1 2] [--workers 1 2]
                                        [--cluster-streams 20000] [--field]

DIR holds (or gets: ``benchmarks/corpus.py``) the generated corpus of short streams.
``conformance analyze --json -j N`` runs as ``python -m conformance`` over every file (the
paths come from a list file: 100k paths exceed the kernel's argument limit, so the child
sets ``sys.argv`` and runs the module as ``-m`` would); its stdout is hashed as it comes,
so the figure includes writing the document, and every -j must give the same hash.
``--field`` times ``python -m conformance.field -j N`` too. The Dask rows time
``conformance.cluster.analyse`` on a ``LocalCluster`` of N worker processes (start-up
apart) over the first ``--cluster-streams`` files, and check the document against
``conformance.field.analyse_directory(jobs=1)``'s.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import corpus  # noqa: E402

CHILD = (
    "import runpy, sys; sys.argv = ['conformance'] + open(sys.argv[1]).read().split('\\n'); "
    "runpy.run_module('conformance', run_name='__main__', alter_sys=True)"
)


def cpu_children() -> float:
    """CPU seconds of the children (and the workers they waited for) so far: on a shared
    machine, the wall clock says what the load left us; this says what the work cost."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_hashed(cmd: list[str]) -> tuple[float, str, int]:
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=HERE.parent)
    h = hashlib.sha256()
    assert p.stdout is not None
    while block := p.stdout.read(1 << 20):
        h.update(block)
    rc = p.wait()
    return time.perf_counter() - t0, h.hexdigest()[:16], rc


def analyze_rows(paths: list[Path], jobs: list[int], tmp: Path) -> None:
    listing = tmp / "paths"
    listing.write_text("\n".join(["analyze", "--json", "-j", "{j}"] + [str(p) for p in paths]))
    base = None
    for j in jobs:
        lst = tmp / f"paths-{j}"
        lst.write_text(listing.read_text().replace("{j}", str(j), 1))
        cpu = cpu_children()
        secs, digest, rc = run_hashed([sys.executable, "-c", CHILD, str(lst)])
        cpu = cpu_children() - cpu
        base = base or secs
        print(
            f"analyze --json -j {j}: {len(paths)} files in {secs:.1f} s = "
            f"{len(paths) / secs:,.0f} streams/s, {base / secs:.2f}x -j {jobs[0]}; "
            f"CPU {cpu:.1f} s = {cpu / len(paths) * 1e3:.2f} ms a stream "
            f"(exit {rc}, stdout sha256 {digest})",
            flush=True,
        )


def field_rows(directory: Path, n: int, jobs: list[int]) -> None:
    base = None
    for j in jobs:
        out = Path(tempfile.mkstemp(suffix=".json")[1])
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "conformance.field",
                str(directory),
                "-j",
                str(j),
                "--out",
                str(out),
            ],
            check=True,
            capture_output=True,
            cwd=HERE.parent,
        )
        secs = time.perf_counter() - t0
        base = base or secs
        digest = hashlib.sha256(out.read_bytes()).hexdigest()[:16]
        out.unlink()
        print(
            f"field -j {j}: {n} files in {secs:.1f} s = {n / secs:,.0f} streams/s, "
            f"{base / secs:.2f}x (document sha256 {digest})",
            flush=True,
        )


def cluster_rows(directory: Path, n: int, workers: list[int]) -> None:
    from dask.distributed import Client, LocalCluster

    from conformance import cluster, field

    sub = Path(tempfile.mkdtemp(prefix="conformance-bench-"))
    try:
        for p in sorted(directory.iterdir())[:n]:
            os.symlink(p, sub / p.name)
        sources = {"routes": {}, "captures": {}}
        t0 = time.perf_counter()
        local = field.dumps(field.analyse_directory(sub, sources, jobs=1))
        one = time.perf_counter() - t0
        print(
            f"single process (field.analyse_directory, jobs=1): {n} files in {one:.1f} s "
            f"= {n / one:,.0f} streams/s",
            flush=True,
        )
        for w in workers:
            cpu = cpu_children()
            t0 = time.perf_counter()
            with (
                LocalCluster(
                    n_workers=w,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                ) as lc,
                Client(lc) as c,
            ):
                c.wait_for_workers(w)
                start = time.perf_counter() - t0
                t1 = time.perf_counter()
                doc = field.dumps(cluster.analyse(c, str(sub), sources))
                secs = time.perf_counter() - t1
            cpu = cpu_children() - cpu
            assert doc == local, "the cluster's document differs from the local one"
            print(
                f"dask LocalCluster, {w} worker(s): {n} files in {secs:.1f} s = "
                f"{n / secs:,.0f} streams/s, {one / secs:.2f}x one process "
                f"(start-up {start:.1f} s; workers' CPU with start-up {cpu:.1f} s; "
                f"document equal to the local one)",
                flush=True,
            )
    finally:
        shutil.rmtree(sub)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory", type=Path)
    ap.add_argument("--streams", type=int, default=100_000)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--workers", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--cluster-streams", type=int, default=20_000)
    ap.add_argument("--field", action="store_true")
    args = ap.parse_args()
    paths = sorted(args.directory.glob("*.sse"))[: args.streams]
    if len(paths) < args.streams:
        paths = corpus.write(args.directory, args.streams)
    print(
        f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores; "
        f"{len(paths)} generated short streams",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        analyze_rows(paths, args.jobs, Path(tmp))
    if args.field:
        field_rows(args.directory, len(paths), args.jobs)
    if args.workers:
        cluster_rows(args.directory, args.cluster_streams, args.workers)
    print(f"load at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
