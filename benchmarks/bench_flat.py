"""Benchmark: analysis time per event stays flat from 1k to 1M events (issue 16).

Run:  python benchmarks/bench_flat.py  [--sizes 1000,10000,100000,1000000]
                                       [--kinds content,arguments,parallel] [--repeat 1]

Each stream is generated lazily as raw SSE bytes (64 KiB blocks, never the whole body
in memory) and fed through the one pipeline a file takes (``sse.iter_sse`` →
``analysis.analyze``), so SSE decoding, JSON parsing, every rule and detector and the
three strategies are measured. Kinds:

- ``content``: 64-character content deltas, then a tool call and its finish (the
  endless-stream shape: a server that talks forever);
- ``arguments``: one tool call whose arguments arrive in ~6-character fragments;
- ``parallel``: four parallel calls, interleaved fragments.

Times are CPU seconds of the analysing process (``time.process_time``: a busy shared
machine stretches wall time, not this). Each size runs in a child process, so its peak RSS (``ru_maxrss``, interpreter
included) is its own. Printed per size: events, seconds, microseconds per event, peak
RSS; then the ratio of the largest size's time per event to the smallest's (flat: close
to 1; a re-scan of what came before grows it with the size).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ENVELOPE = '{"id":"chatcmpl-flat","object":"chat.completion.chunk","created":0,"model":"m",'
BLOCK_EVENTS = 512


def _event(delta: str, finish: str = "null") -> str:
    return (
        f'data: {ENVELOPE}"choices":[{{"index":0,"delta":{delta},"logprobs":null,'
        f'"finish_reason":{finish}}}]}}\n\n'
    )


def _opener(k: int) -> str:
    return (
        f'{{"tool_calls":[{{"index":{k},"id":"call_{k:024d}","type":"function",'
        f'"function":{{"name":"f{k}","arguments":""}}}}]}}'
    )


def _fragment(k: int, text: str) -> str:
    return f'{{"tool_calls":[{{"index":{k},"function":{{"arguments":{json.dumps(text)}}}}}]}}'


def stream(kind: str, events: int) -> Iterator[bytes]:
    """``events`` events of one kind, as SSE blocks."""
    out: list[str] = [_event('{"role":"assistant","content":""}')]
    calls = 4 if kind == "parallel" else 1
    body = max(1, events - 3 - calls)  # role chunk, openers, closing fragments, finish
    if kind == "content":
        text = json.dumps(("lorem ipsum dolor sit amet " * 3)[:64])
        delta = f'{{"content":{text}}}'
        for _ in range(body):
            out.append(_event(delta))
            if len(out) >= BLOCK_EVENTS:
                yield "".join(out).encode()
                out = []
        out.append(_event(_opener(0)))
        out.append(_event(_fragment(0, "{}")))
    else:
        for k in range(calls):
            out.append(_event(_opener(k)))
            out.append(_event(_fragment(k, '{"q": "')))
        for i in range(body):
            out.append(_event(_fragment(i % calls, "abcdef")))
            if len(out) >= BLOCK_EVENTS:
                yield "".join(out).encode()
                out = []
        for k in range(calls):
            out.append(_event(_fragment(k, '"}')))
    out.append(_event("{}", '"tool_calls"'))
    out.append("data: [DONE]\n\n")
    yield "".join(out).encode()


def measure(kind: str, events: int) -> dict[str, float]:
    from conformance.analysis import analyze
    from conformance.sse import iter_sse
    from conformance.transcript import Transcript

    request = {
        "body": {
            "stream": True,
            "tools": [{"type": "function", "function": {"name": f"f{k}"}} for k in range(4)],
        }
    }
    t = Transcript("<bench>", "sse", True, lambda: iter_sse(stream(kind, events)), request=request)
    started = time.process_time()  # CPU time: the machine may be shared
    r = analyze(t)
    took = time.process_time() - started
    assert r.turn is not None and r.turn.calls, (kind, events, r.verdict, r.error)
    return {
        "events": events,
        "seconds": took,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _child(kind: str, events: int) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(events)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--kinds", default="content,arguments,parallel")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "EVENTS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], int(args.child[1]))))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    for kind in args.kinds.split(","):
        print(f"\n{kind}: {'events':>9} {'seconds':>9} {'us/event':>9} {'peak RSS MB':>12}")
        per_event = []
        for n in sizes:
            m = _child(kind, n)
            us = m["seconds"] / n * 1e6
            per_event.append(us)
            print(
                f"{'':>{len(kind) + 1}} {n:>9} {m['seconds']:>9.2f} {us:>9.1f} "
                f"{m['rss_mb']:>12.0f}",
                flush=True,
            )
        print(
            f"{'':>{len(kind) + 1}} time per event, {sizes[-1]} vs {sizes[0]} events: "
            f"x{per_event[-1] / per_event[0]:.2f}"
        )


if __name__ == "__main__":
    main()
