"""Benchmark the reference-profile server: start-up time and 200 concurrent streams.

Run: ``.venv/bin/python benchmarks/bench_server.py [--streams 200] [--latency 0.5]``.

(a) start-up: a fresh ``serve()`` process, from spawn to the first ``/health`` 200 (goal < 1 s);
also the in-process ``running_server()`` start.
(b) concurrency: N streams at once (httpx.AsyncClient + asyncio.gather) against that process,
cycling through every streamed profile; each must complete and parse, and streams of the
reference profile must assemble to the calls of the non-streaming answer.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time

import httpx

from conformance.mutations import Done, parse_sse
from conformance.server import PROFILES, example_request
from conformance.server.testing import running_server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_process(port: int, latency: float) -> tuple[subprocess.Popen, float]:
    code = f"from conformance.server.app import serve; serve(port={port}, latency={latency})"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=0.5).status_code == 200:
                return proc, time.perf_counter() - t0
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.perf_counter() - t0 > 30:
            proc.kill()
            raise RuntimeError("server did not start")
        time.sleep(0.005)


async def one_stream(client: httpx.AsyncClient, base: str, profile: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    # The stall profile's pause is a fixed 3 s by default; set to 0 to measure throughput.
    headers = {"x-conformance-stall": "0"}
    async with client.stream(
        "POST", base + "/chat/completions", json=example_request(profile), headers=headers
    ) as response:
        response.raise_for_status()
        raw = await response.aread()
    frames = parse_sse(raw)
    if not frames:
        raise AssertionError(f"{profile}: empty body")
    if profile == "reference" and not isinstance(frames[-1], Done):
        raise AssertionError("reference stream without [DONE]")
    return time.perf_counter() - t0, len(raw)


async def concurrent(base: str, n: int) -> None:
    streamed = [p for p, prof in PROFILES.items() if prof.fault is None]
    profiles = [streamed[i % len(streamed)] for i in range(n)]
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        t0 = time.perf_counter()
        results = await asyncio.gather(
            *(one_stream(client, base, p) for p in profiles), return_exceptions=True
        )
        total = time.perf_counter() - t0
    errors = [r for r in results if isinstance(r, BaseException)]
    ok = [r for r in results if not isinstance(r, BaseException)]
    times = sorted(t for t, _ in ok)
    print(f"(b) {n} concurrent streams over {len(set(profiles))} profiles:")
    print(f"    completed {len(ok)}/{n}, errors {len(errors)}, total {total:.3f} s")
    if ok:
        p95 = times[int(0.95 * (len(times) - 1))]
        print(
            f"    per stream: median {statistics.median(times) * 1000:.0f} ms, "
            f"p95 {p95 * 1000:.0f} ms, max {times[-1] * 1000:.0f} ms; "
            f"{sum(b for _, b in ok) / 1024:.0f} KiB received"
        )
    for error in errors[:5]:
        print("    error:", repr(error))
    if errors:
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.0, help="server-side seconds/stream")
    args = parser.parse_args()

    port = free_port()
    proc, startup = start_process(port, args.latency)
    t0 = time.perf_counter()
    with running_server():
        in_process = time.perf_counter() - t0
    print(
        f"(a) start-up to first /health 200: process {startup:.3f} s "
        f"(goal < 1 s), in-process running_server() {in_process:.3f} s"
    )
    try:
        asyncio.run(concurrent(f"http://127.0.0.1:{port}/v1", args.streams))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
