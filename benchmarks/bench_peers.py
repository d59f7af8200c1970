"""Throughput against peers, in one process, contenders interleaved, on the seven shapes.

Run:  python benchmarks/bench_peers.py  [--rounds 15] [--fragments 10000] [--only NAME]
(in the bench venv: ``nox -s bench``, or ``pip install -e '.[bench]'`` in a venv of its
own: litellm pulls aiohttp, which the test venv must not have).

Every round runs every contender once on a shape, in an order that rotates per round;
the figure is the median over the rounds of the process's CPU time (``process_time``: on
a shared machine, time spent waiting for a core is not the contender's). Ratios are speeds relative to the floor,
``json.loads`` of each ``data:`` payload alone (1.0 = as fast as only parsing the JSON):

``scanner`` is a second, stricter floor: the same C scanner without json.loads's Python
layer (type and BOM checks, whitespace regexes), which is how ``conformance.jsontext``
parses; its column says how much of the floor that layer is.

Every contender starts from the payload strings, as a client reading a stream does, so
each one's time includes the floor (a ratio of 0.75 means 1/3 of the floor's time on top):

- ``client``: ``conformance.client.ToolCallAccumulator`` feed (payload text) + result();
- ``analyze``: ``conformance.analysis.analyze_bytes`` from the SSE bytes (decoding, JSON,
  every rule and detector, three strategies, the verdict);
- ``bare dict``: ``json.loads`` + the minimal accumulator any client has (the guides' loop);
- ``openai``: ``json.loads``, the SDK's chunk model (``construct_type``, no validation) and
  ``ChatCompletionStreamState.handle_chunk``, + the final completion: what its stream does;
- ``litellm``: ``json.loads``, ``ModelResponseStream`` per chunk, ``stream_chunk_builder``;
- ``langchain``: ``json.loads``, an ``AIMessageChunk`` per chunk (as langchain-openai makes
  them) and their addition (``acc = acc + chunk``, as its streaming aggregation does). It
  is quadratic in the fragments (one run of a 10k-fragment shape takes minutes), so it
  runs in a second table on the same shapes with ``--small`` fragments (2,000), where
  its ratio flatters it.

The two shapes of many short streams (``tiny64x``, ``agent2``) run every contender once
per stream, with a new accumulator each: what a client or ``conformance analyze`` over a
directory of proxy logs pays per stream and per call.

Goals (issue 28): client >= 0.85x and analyze >= 0.35x the floor on every shape.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from shapes import Shape, make_shapes

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import

from conformance.analysis import analyze_bytes
from conformance.client import ToolCallAccumulator

GOALS = {"client": 0.85, "analyze": 0.35}


def floor(s: Shape) -> Callable[[], Any]:
    payloads, loads = [p for _, ps in s.streams for p in ps], json.loads

    def run() -> None:
        for p in payloads:
            loads(p)

    return run


def scanner(s: Shape) -> Callable[[], Any]:
    """The stdlib's C scanner called directly (what conformance.jsontext.loads does):
    json.loads minus its Python layer, a stricter floor for the same parse."""
    payloads, scan = [p for _, ps in s.streams for p in ps], json.JSONDecoder().scan_once

    def run() -> None:
        for p in payloads:
            scan(p, 0)

    return run


def client(s: Shape) -> Callable[[], Any]:
    streams = [ps for _, ps in s.streams]

    def run() -> Any:
        for payloads in streams:  # one accumulator per stream, as a client has
            acc = ToolCallAccumulator()
            feed = acc.feed
            for p in payloads:
                feed(p)
            turn = acc.result()
        return turn

    turn = run()
    assert len(turn.calls) == s.calls and turn.recoverable, (s.name, turn.quirks)
    return run


def analyze(s: Shape) -> Callable[[], Any]:
    raws = [raw for raw, _ in s.streams]
    for raw in raws:
        r = analyze_bytes(raw)
        assert r.verdict == "conforms" and len(r.tool_calls["robust"]) == s.calls, (
            s.name,
            r.quirks,
        )

    def run() -> Any:
        for raw in raws:
            r = analyze_bytes(raw)
        return r

    return run


def bare_dict(s: Shape) -> Callable[[], Any]:
    streams, loads = [ps for _, ps in s.streams], json.loads

    def run() -> Any:
        for payloads in streams:
            out = one(payloads)
        return out

    def one(payloads: list[str]) -> Any:
        acc: dict[int, list[Any]] = {}
        for p in payloads:
            for choice in loads(p).get("choices") or ():
                for tc in (choice.get("delta") or {}).get("tool_calls") or ():
                    slot = acc.get(tc["index"])
                    if slot is None:
                        slot = acc[tc["index"]] = ["", "", []]
                    fn = tc.get("function") or {}
                    if tc.get("id"):
                        slot[0] = tc["id"]
                    if fn.get("name"):
                        slot[1] = fn["name"]
                    if fn.get("arguments"):
                        slot[2].append(fn["arguments"])
        return {k: (v[0], v[1], "".join(v[2])) for k, v in acc.items()}

    assert len(run()) == s.calls
    return run


def openai_sdk(s: Shape) -> Callable[[], Any] | None:
    try:
        from openai._models import construct_type
        from openai.lib.streaming.chat import ChatCompletionStreamState
        from openai.types.chat import ChatCompletionChunk
    except ImportError:
        return None
    streams, loads = [ps for _, ps in s.streams], json.loads

    def run() -> Any:
        for payloads in streams:
            state = ChatCompletionStreamState()
            for p in payloads:
                state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=loads(p)))
            out = state.get_final_completion()
        return out

    assert len(run().choices[0].message.tool_calls or ()) == s.calls
    return run


def litellm(s: Shape) -> Callable[[], Any] | None:
    try:
        import litellm as ll
        from litellm.types.utils import ModelResponseStream
    except ImportError:
        return None
    streams, loads = [ps for _, ps in s.streams], json.loads

    def run() -> Any:
        for payloads in streams:
            objs = []
            for p in payloads:
                c = loads(p)
                if c.get("choices"):  # the usage chunk: litellm's builder wants choices
                    objs.append(ModelResponseStream(**c))
            out = ll.stream_chunk_builder(objs)
        return out

    assert len(run().choices[0].message.tool_calls or ()) == s.calls
    return run


def langchain(s: Shape) -> Callable[[], Any] | None:
    try:
        from langchain_core.messages import AIMessageChunk
    except ImportError:
        return None
    streams, loads = [ps for _, ps in s.streams], json.loads

    def message(delta: dict[str, Any]) -> Any:
        tcc = [
            {
                "name": (tc.get("function") or {}).get("name"),
                "args": (tc.get("function") or {}).get("arguments"),
                "id": tc.get("id"),
                "index": tc.get("index"),
            }
            for tc in delta.get("tool_calls") or ()
        ]
        return AIMessageChunk(content=delta.get("content") or "", tool_call_chunks=tcc)

    def run() -> Any:
        for payloads in streams:
            acc = None
            for p in payloads:
                for choice in loads(p).get("choices") or ():
                    m = message(choice.get("delta") or {})
                    acc = m if acc is None else acc + m
        return acc

    assert len(run().tool_calls) == s.calls
    return run


CONTENDERS: dict[str, Callable[[Shape], Callable[[], Any] | None]] = {
    "floor": floor,
    "scanner": scanner,
    "client": client,
    "analyze": analyze,
    "bare dict": bare_dict,
    "openai": openai_sdk,
    "litellm": litellm,
    "langchain": langchain,
}


QUADRATIC = {"langchain"}  # measured on the small shapes only


def measure(s: Shape, rounds: int, only: set[str] | None) -> dict[str, float]:
    runs = {}
    for name, make in CONTENDERS.items():
        if only and name not in only and name != "floor":
            continue
        if not only and name in QUADRATIC:
            continue
        fn = make(s)
        if fn is not None:
            runs[name] = fn
    times: dict[str, list[float]] = {k: [] for k in runs}
    names = list(runs)
    slow = set()  # a peer slower than 1 s a run (quadratic ones) runs every 5th round only
    for name in names:
        t0 = time.process_time()
        runs[name]()
        if time.process_time() - t0 > 1.0:
            slow.add(name)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            if name in slow and r % 5:
                continue
            t0 = time.process_time()
            runs[name]()
            times[name].append(time.process_time() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--fragments", type=int, default=10_000)
    ap.add_argument("--small", type=int, default=2_000, help="fragments for the second table")
    ap.add_argument("--only", action="append", help="contenders to run (the floor always)")
    ap.add_argument("--shape", action="append", help="shapes to run (default: all)")
    args = ap.parse_args()
    only = set(args.only) if args.only else None
    print(
        f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min); "
        f"medians of {args.rounds} rounds, contenders interleaved"
    )
    shapes = [s for s in make_shapes(args.fragments) if not args.shape or s.name in args.shape]
    report(shapes, args.rounds, only, goals=True)
    if not only:
        print(f"\n--- quadratic peers, on the shapes with {args.small} fragments ---")
        report(make_shapes(args.small), args.rounds, QUADRATIC | {"client", "analyze"})
    return 0  # figures, not a test: whether each goal is met is printed


def report(shapes: list[Shape], rounds: int, only: set[str] | None, goals: bool = False) -> None:
    table: dict[str, dict[str, float]] = {}
    for s in shapes:
        table[s.name] = measure(s, rounds, only)
    cols = [c for c in CONTENDERS if any(c in t for t in table.values())]
    print("\nspeed relative to the json.loads floor (higher is faster; floor = 1.00)")
    print(f"{'shape':14} {'events':>7} {'floor ms':>9} " + " ".join(f"{c:>10}" for c in cols[1:]))
    for s in shapes:
        t = table[s.name]
        cells = " ".join(
            f"{t['floor'] / t[c]:>9.3f}x" if c in t else f"{'-':>10}" for c in cols[1:]
        )
        print(f"{s.name:14} {s.events:>7} {t['floor'] * 1e3:>9.1f} {cells}")
    peers = [c for c in ("openai", "litellm", "langchain") if c in cols]
    if peers and "client" in cols:
        print("\nhow many times faster than each peer (peer time / ours)")
        for s in shapes:
            t = table[s.name]
            parts = [
                f"{who} {t[p] / t[who]:.1f}x {p}"
                for who in ("client", "analyze")
                if who in t
                for p in peers
                if p in t
            ]
            print(f"  {s.name:14} " + ", ".join(parts))
    if not goals:
        return
    print()
    for who, goal in GOALS.items():
        if who not in cols:
            continue
        worst = min(table[s.name]["floor"] / table[s.name][who] for s in shapes)
        ok = worst >= goal
        strict = (
            f"; against the scanner floor {min(table[s.name]['scanner'] / table[s.name][who] for s in shapes):.3f}x"
            if "scanner" in cols
            else ""
        )
        print(
            f"goal {who} >= {goal}x floor on every shape: {'met' if ok else 'NOT met'} "
            f"(lowest {worst:.3f}x{strict})"
        )


if __name__ == "__main__":
    raise SystemExit(main())
