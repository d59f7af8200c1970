"""Memory: peak RSS of `conformance analyze`'s pipeline on SSE files of 1k to 1M events.

Run:  python benchmarks/bench_memory.py  [--events 1000 10000 100000 1000000]

Each file is four interleaved calls in OpenAI's shape (envelope, ``usage: null``,
``obfuscation``), argument fragments of 1-12 characters, written to a temporary file
(1M events: about 280 MB). A child process reads it the way ``conformance analyze FILE``
does (64 KiB blocks) and analyses it; its peak RSS (VmHWM) minus that of a child that
analyses nothing is the analysis's own memory; ``own/args`` relates it to the
arguments the stream carries (each strategy must hold them). Goal (issue 17): flat,
bounded by the arguments, not by the number of events.

``--fixed-args MB`` keeps the arguments' total size fixed whatever the number of events
(fragments get shorter as events get more): the peak should then stay flat from 1k to 1M.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ENV = {
    "id": "chatcmpl-bench0000000000000000000",
    "object": "chat.completion.chunk",
    "created": 1_780_000_000,
    "model": "gpt-4o-2024-08-06",
    "system_fingerprint": "fp_bench0000",
}
WORDS = "the quick brown fox jumps over a lazy dog while streaming tool calls".split()


def write_capture(path: Path, events: int, calls: int = 4, fixed_args: float = 0.0) -> int:
    rng = random.Random(5)

    def event(delta: dict, finish: str | None = None) -> str:
        chunk = {
            **ENV,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            "usage": None,
            "obfuscation": "".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 12))),
        }
        return "data: " + json.dumps(chunk, separators=(",", ":")) + "\n\n"

    fragments = max(calls, events - 2 * calls - 3)
    with path.open("w", encoding="utf-8") as f:
        f.write(event({"role": "assistant", "content": None}))
        for k in range(calls):
            tc = {
                "index": k,
                "id": f"call_{k:024d}",
                "type": "function",
                "function": {"name": f"tool_{k}", "arguments": ""},
            }
            f.write(event({"tool_calls": [tc]}))
            f.write(event({"tool_calls": [{"index": k, "function": {"arguments": '{"q": "'}}]}))
        size = int(fixed_args * 2**20) // max(1, fragments - calls)
        filler = ("".join(WORDS) * (size // 50 + 1))[:size] if fixed_args else ""
        for i in range(fragments - calls):
            word = filler or rng.choice(WORDS)[: rng.randint(1, 12)] + " "
            f.write(event({"tool_calls": [{"index": i % calls, "function": {"arguments": word}}]}))
        for k in range(calls):
            f.write(event({"tool_calls": [{"index": k, "function": {"arguments": '"}'}}]}))
        f.write(event({}, "tool_calls"))
        f.write("data: [DONE]\n\n")
    return path.stat().st_size


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(path: str) -> None:
    from conformance.analysis import analyze
    from conformance.readers import read_path

    t0 = time.perf_counter()
    out: dict = {}
    if path != os.devnull:
        (t,) = read_path(path)
        r = analyze(t)
        out = {
            "events": r.events,
            "verdict": r.verdict,
            "calls": len(r.tool_calls["robust"]),
            "args_mb": sum(len(c["arguments"]) for c in r.tool_calls["robust"]) / 2**20,
        }
    out.update(peak_rss_mb=peak_rss_mb(), seconds=time.perf_counter() - t0)
    print(json.dumps(out))


def run_child(path: str) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", path], capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    ap.add_argument(
        "--fixed-args",
        type=float,
        default=0.0,
        metavar="MB",
        help="the arguments' total size, whatever the number of events",
    )
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return 0
    base = run_child(os.devnull)["peak_rss_mb"]
    print(f"load: {os.getloadavg()[0]:.2f} (1 min); interpreter + imports: {base:.1f} MB")
    print(
        f"{'events':>9} {'file MB':>8} {'args MB':>8} {'peak MB':>8} {'own MB':>7} "
        f"{'own/args':>8} {'s':>6}  verdict"
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.events:
            path = Path(tmp) / f"capture-{n}.sse"
            size = write_capture(path, n, fixed_args=args.fixed_args)
            r = run_child(str(path))
            path.unlink()
            own = r["peak_rss_mb"] - base
            rows.append((n, own))
            print(
                f"{r['events']:>9} {size / 2**20:>8.1f} {r['args_mb']:>8.2f} "
                f"{r['peak_rss_mb']:>8.1f} {own:>7.1f} {own / r['args_mb']:>8.1f} "
                f"{r['seconds']:>6.1f}  {r['verdict']}, {r['calls']} calls"
            )
    if len(rows) >= 2:
        (n0, m0), (n1, m1) = rows[0], rows[-1]
        per_event = (m1 - m0) * 2**20 / (n1 - n0)
        print(
            f"growth from {n0:,} to {n1:,} events: {m1 - m0:+.1f} MB "
            f"({per_event:.1f} bytes per event)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
