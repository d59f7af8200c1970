"""Feeding cost of conformance.client.ToolCallAccumulator on one stream, against a bare dict
accumulator (the guides' loop, the minimum any client does) and the openai SDK's own
ChatCompletionStreamState. Goal: at most 2x the bare dict accumulator, and far below the SDK.
Chunks are pre-parsed dicts for the first two; the SDK gets its own chunk objects, built
before timing (its model construction is not counted against it).
Run: python benchmarks/bench_client.py
"""

from __future__ import annotations

import random
import time
from typing import Any

from conformance.client import ToolCallAccumulator
from conformance.mutations import CallSpec, reference_stream


def stream(n_calls: int = 4, arg_len: int = 20_000) -> list[dict[str, Any]]:
    rng = random.Random(7)
    calls = [
        CallSpec(f"call_{i:024d}", f"tool_{i}", '{"text": "' + "x" * arg_len + f'", "n": {i}}}')
        for i in range(n_calls)
    ]
    frames = reference_stream(calls, rng=rng, model="m", include_usage=True, interleave=True)
    return [f for f in frames if isinstance(f, dict)]


def bare_dict(chunks: list[dict[str, Any]]) -> dict[int, list[Any]]:
    acc: dict[int, list[Any]] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            for tc in choice.get("delta", {}).get("tool_calls") or ():
                slot = acc.setdefault(tc["index"], ["", "", []])
                fn = tc.get("function") or {}
                if tc.get("id"):
                    slot[0] = tc["id"]
                if fn.get("name"):
                    slot[1] = fn["name"]
                if fn.get("arguments"):
                    slot[2].append(fn["arguments"])
    return acc


class BareAccumulator:
    """The same bare dict accumulator with the incremental shape a client uses: feed()."""

    def __init__(self) -> None:
        self.acc: dict[int, list[Any]] = {}

    def feed(self, chunk: dict[str, Any]) -> None:
        for choice in chunk.get("choices") or ():
            for tc in choice.get("delta", {}).get("tool_calls") or ():
                slot = self.acc.setdefault(tc["index"], ["", "", []])
                fn = tc.get("function") or {}
                if tc.get("id"):
                    slot[0] = tc["id"]
                if fn.get("name"):
                    slot[1] = fn["name"]
                if fn.get("arguments"):
                    slot[2].append(fn["arguments"])


def bare_incremental(chunks: list[dict[str, Any]]) -> Any:
    acc = BareAccumulator()
    for chunk in chunks:
        acc.feed(chunk)
    return acc.acc


def robust(chunks: list[dict[str, Any]]) -> Any:
    acc = ToolCallAccumulator()
    for chunk in chunks:
        acc.feed(chunk)
    return acc.result()


def best(fn: Any, arg: Any, repeat: int = 15) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    chunks = stream()
    n = len(chunks)
    t_loop, t_bare = best(bare_dict, chunks), best(bare_incremental, chunks)
    t_robust = best(robust, chunks)
    # The machine drifts between runs; a ratio of interleaved pairs cancels most of it.
    ratios = []
    for _ in range(31):
        a = best(bare_incremental, chunks, repeat=1)
        b = best(robust, chunks, repeat=1)
        ratios.append(b / a)
    ratios.sort()
    print(f"stream: {n} chunks, 4 interleaved calls")
    print(f"  bare dict, one inline loop  : {t_loop * 1e3:7.1f} ms  ({n / t_loop:,.0f} chunks/s)")
    print(f"  bare dict, feed() per chunk : {t_bare * 1e3:7.1f} ms  ({n / t_bare:,.0f} chunks/s)")
    print(
        f"  robust, feed() per chunk    : {t_robust * 1e3:7.1f} ms  ({n / t_robust:,.0f} "
        f"chunks/s) = {t_robust / t_bare:.2f}x the incremental bare dict, "
        f"{t_robust / t_loop:.2f}x the inline loop"
    )
    print(
        f"  robust / incremental bare dict over 31 interleaved pairs: median "
        f"{ratios[15]:.2f}x (quartiles {ratios[7]:.2f}x-{ratios[23]:.2f}x; goal <= 2x)"
    )
    try:
        from openai.lib.streaming.chat._completions import ChatCompletionStreamState
        from openai.types.chat import ChatCompletionChunk
    except ImportError:
        print("  openai not installed: pip install -e '.[bench]'")
        return
    sdk_chunks = [ChatCompletionChunk.model_validate(c) for c in chunks]

    def sdk(items: list[Any]) -> Any:
        state = ChatCompletionStreamState()
        for c in items:
            state.handle_chunk(c)
        return state.current_completion_snapshot

    t_sdk = best(sdk, sdk_chunks, repeat=3)
    print(
        f"  openai ChatCompletionStreamState: {t_sdk * 1e3:7.1f} ms  ({n / t_sdk:,.0f} chunks/s)"
        f"  = {t_sdk / t_robust:.1f}x slower than robust"
    )


if __name__ == "__main__":
    main()
