"""Benchmark: the full analysis against the openai SDK's own stream accumulator.

Run:  python benchmarks/bench_analyze.py  [--events 10000] [--memory-mb 100] [--profile]

1. Throughput on a synthetic 10,000-event stream of four parallel, interleaved tool calls
   (OpenAI's shape from ``conformance.mutations.reference_stream``):
   - ``analyze_bytes``: SSE decoding, JSON parsing, every rule and detector and all three
     strategies (naive, guarded, robust) from the raw bytes;
   - ``analyze_chunks``: the same from already-parsed chunk dicts;
   - the ``openai`` SDK: ``ChatCompletionStreamState.handle_chunk`` on already-built
     ``ChatCompletionChunk`` objects, and the same including JSON parsing and model
     construction (``openai._models.construct_type``), as the SDK does per event.
2. Peak memory analysing a ~100 MB SSE capture written to a temporary file, read the way
   ``conformance analyze FILE`` reads it (in 64 KiB blocks); measured in a child process
   (peak RSS, interpreter included) so that building the file does not count.

``--profile`` prints the top of a cProfile of ``analyze_bytes`` on the throughput stream.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from conformance.analysis import analyze, analyze_bytes, analyze_chunks  # noqa: E402
from conformance.mutations import CallSpec, reference_stream, render_sse  # noqa: E402
from conformance.readers import read_path  # noqa: E402

NAMES = ("get_weather", "get_time", "search_docs", "write_note")


def synthetic_stream(events: int, seed: int = 7, calls: int = 4) -> tuple[bytes, list[dict]]:
    """Four parallel calls, interleaved, whose fragments make ``events`` events in all."""
    rng = random.Random(seed)
    per_call = max(1, (events - 3) // calls)  # role chunk, finish, usage
    specs = []
    for k in range(calls):
        # fragments are 1..12 characters (mutations.split_fragments): ~6.5 on average
        text = "".join(rng.choice("abcdefghij klmnop") for _ in range(int(per_call * 6.5)))
        args = json.dumps({"query": text, "n": k})
        specs.append(CallSpec(f"call_{k:024d}", NAMES[k % len(NAMES)], args))
    frames = reference_stream(specs, rng=rng, model="gpt-4o", include_usage=True, interleave=True)
    raw = render_sse(frames)
    return raw, [f for f in frames if isinstance(f, dict)]


def best_of(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def throughput(events: int, repeat: int) -> dict[str, float]:
    raw, chunks = synthetic_stream(events)
    n = raw.count(b"\n\ndata: ") + 1  # events, [DONE] included
    out: dict[str, float] = {"events": n}
    r = analyze_bytes(raw)
    assert r.verdict == "conforms" and len(r.tool_calls["robust"]) == 4, r.quirks
    out["analyze_bytes"] = n / best_of(lambda: analyze_bytes(raw), repeat)
    out["analyze_chunks"] = n / best_of(lambda: analyze_chunks(chunks), repeat)
    try:
        from openai._models import construct_type
        from openai.lib.streaming.chat import ChatCompletionStreamState
        from openai.types.chat import ChatCompletionChunk
    except ImportError:  # pragma: no cover - the bench extra is missing
        print("openai not installed: pip install 'toolcall-conformance[bench]'", file=sys.stderr)
        return out

    objs = [construct_type(type_=ChatCompletionChunk, value=c) for c in chunks]

    def sdk_accumulate() -> None:
        state = ChatCompletionStreamState()
        for o in objs:
            state.handle_chunk(o)
        state.get_final_completion()

    payloads = [line[6:] for line in raw.decode().split("\n\n") if line.startswith("data: {")]

    def sdk_from_json() -> None:
        state = ChatCompletionStreamState()
        for p in payloads:
            state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=json.loads(p)))
        state.get_final_completion()

    sdk_accumulate()  # sanity: the SDK assembles the same four calls
    out["sdk_handle_chunk"] = n / best_of(sdk_accumulate, repeat)
    out["sdk_json_construct_handle"] = n / best_of(sdk_from_json, repeat)
    return out


def write_capture(path: Path, megabytes: int, calls: int = 4) -> int:
    """A valid ~``megabytes`` SSE stream: ``calls`` parallel calls whose long string
    arguments arrive in small interleaved fragments, then finish, usage and [DONE]."""
    env = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_780_000_000,
        "model": "gpt-4o",
        "system_fingerprint": "fp_bench",
    }

    def event(delta: dict[str, Any], finish: str | None = None) -> bytes:
        chunk = {
            **env,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"

    rng = random.Random(5)
    words = ["alpha ", "beta ", "gamma ", "delta ", "eps ", "zeta "]
    with path.open("wb") as f:
        f.write(event({"role": "assistant", "content": None}))
        for k in range(calls):
            tc = {
                "index": k,
                "id": f"call_{k:024d}",
                "type": "function",
                "function": {"name": NAMES[k % len(NAMES)], "arguments": ""},
            }
            f.write(event({"tool_calls": [tc]}))
            f.write(event({"tool_calls": [{"index": k, "function": {"arguments": '{"q": "'}}]}))
        size = f.tell()
        while size < megabytes * 1024 * 1024:
            for k in range(calls):
                frag = {"index": k, "function": {"arguments": rng.choice(words)}}
                size += f.write(event({"tool_calls": [frag]}))
        for k in range(calls):
            f.write(event({"tool_calls": [{"index": k, "function": {"arguments": '"}'}}]}))
        f.write(event({}, "tool_calls"))
        usage = {
            **env,
            "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        f.write(b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n")
    return path.stat().st_size


def peak_rss_mb() -> float:
    """This process's peak resident set. Linux: VmHWM of /proc/self/status, which starts
    afresh at exec (``ru_maxrss`` keeps the forking parent's peak across fork + exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024 / (1024 if sys.platform == "darwin" else 1)


def memory_child(path: str) -> None:
    t0 = time.perf_counter()
    (t,) = read_path(path)
    r = analyze(t)
    elapsed = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "peak_rss_mb": peak_rss_mb(),
                "seconds": elapsed,
                "events": r.events,
                "verdict": r.verdict,
                "calls": len(r.tool_calls["robust"]),
            }
        )
    )


def memory(megabytes: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "capture.sse"
        size = write_capture(path, megabytes)
        baseline = subprocess.run(
            [sys.executable, __file__, "--memory-child", os.devnull],
            capture_output=True,
            text=True,
        )
        proc = subprocess.run(
            [sys.executable, __file__, "--memory-child", str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
    out = json.loads(proc.stdout)
    out["file_mb"] = size / 1024 / 1024
    if baseline.returncode == 0 and baseline.stdout.strip():  # an empty file is an error
        out["baseline_rss_mb"] = json.loads(baseline.stdout)["peak_rss_mb"]
    return out


def profile(events: int) -> None:
    raw, _ = synthetic_stream(events)
    pr = cProfile.Profile()
    pr.enable()
    analyze_bytes(raw)
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(25)
    print(s.getvalue())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--memory-mb", type=int, default=100)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_child:
        if os.path.getsize(args.memory_child) == 0:
            print(
                json.dumps(
                    {"peak_rss_mb": peak_rss_mb()}  # the interpreter and the imports
                )
            )
            return
        memory_child(args.memory_child)
        return
    if args.profile:
        profile(args.events)
        return
    t = throughput(args.events, args.repeat)
    print(
        f"throughput, {int(t['events'])} events (4 interleaved parallel calls), best of {args.repeat}:"
    )
    for k in ("analyze_bytes", "analyze_chunks", "sdk_handle_chunk", "sdk_json_construct_handle"):
        if k in t:
            print(f"  {k:28} {t[k]:>12,.0f} events/s")
    if "sdk_handle_chunk" in t:
        print(
            f"  full analysis / SDK: {t['analyze_chunks'] / t['sdk_handle_chunk']:.2f}x on parsed "
            f"chunks, {t['analyze_bytes'] / t['sdk_json_construct_handle']:.2f}x from the wire"
        )
    if args.memory_mb:
        m = memory(args.memory_mb)
        print(
            f"memory: {m['file_mb']:.0f} MB SSE capture, {m['events']:,} events, "
            f"{m['seconds']:.1f} s, peak RSS {m['peak_rss_mb']:.0f} MB "
            f"(interpreter baseline {m.get('baseline_rss_mb', float('nan')):.0f} MB; goal < 300 MB)"
        )


if __name__ == "__main__":
    main()
