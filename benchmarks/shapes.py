"""The five stream shapes of issue 17, as OpenAI streams them (``reference_stream``).

- ``text``: one call, fragments of prose inside a JSON string;
- ``code``: one call whose arguments are source code (``<``, ``[``, braces, escapes);
- ``parallel4``: four calls one after the other;
- ``interleaved4``: four calls whose fragments alternate;
- ``tiny64``: 64 small calls;

and two shapes of many short streams, where the cost per stream and per call decides
(issue 28): ``tiny64x`` (streams of 64 tiny calls each) and ``agent2`` (the usual agent
turn: 2 calls of about 40 characters, about 25 events a stream).

Each shape is the SSE bytes, the chunk dicts and the ``data:`` payload strings (of its
first stream), and ``streams``: every stream's bytes and payloads.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.mutations import CallSpec, reference_stream, render_sse  # noqa: E402

WORDS = "the quick brown fox jumps over a lazy dog while streaming tool calls".split()
CODE = (
    'def render(items: list[str]) -> str:\n    out = ["<ul>"]\n    for i, x in enumerate('
    'items):\n        out.append(f"<li data-i=\\"{i}\\">{x[0:40]}</li>")\n    out.append('
    '"</ul>")\n    return "\\n".join(out)  # a[b] < c\n'
)


@dataclass
class Shape:
    name: str
    raw: bytes
    chunks: list[dict[str, Any]]
    payloads: list[str]
    calls: int  # per stream
    streams: list[tuple[bytes, list[str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.streams:
            self.streams = [(self.raw, self.payloads)]

    @property
    def events(self) -> int:
        return sum(len(p) for _, p in self.streams)


def _prose(rng: random.Random, chars: int) -> str:
    out, n = [], 0
    while n < chars:
        w = rng.choice(WORDS) + " "
        out.append(w)
        n += len(w)
    return "".join(out)


def _shape(
    name: str, specs: list[CallSpec], interleave: bool, seed: int, content: str | None = None
) -> Shape:
    rng = random.Random(seed)
    frames = reference_stream(
        specs, rng=rng, model="gpt-4o", include_usage=True, interleave=interleave, content=content
    )
    chunks = [f for f in frames if isinstance(f, dict)]
    raw = render_sse(frames)
    payloads = [b[6:] for b in raw.decode().split("\n\n") if b.startswith("data: {")]
    return Shape(name, raw, chunks, payloads, len(specs))


def _many(
    name: str, per_stream: int, specs: Any, fragments: int, seed: int, content: str | None = None
) -> Shape:
    """Streams of ``specs(rng, n)`` until about ``fragments`` events in all."""
    rng = random.Random(seed)
    first = None
    streams = []
    for n in range(max(1, fragments // per_stream)):
        s = _shape(name, specs(rng, n), False, seed * 1000 + n, content)
        first = first or s
        streams.append((s.raw, s.payloads))
    assert first is not None
    return Shape(name, first.raw, first.chunks, first.payloads, first.calls, streams)


def make_shapes(fragments: int = 10_000) -> list[Shape]:
    """Every shape with about ``fragments`` argument fragments (6.5 characters each)."""
    rng = random.Random(17)
    chars = int(fragments * 6.5)

    def spec(k: int, args: dict[str, Any]) -> CallSpec:
        return CallSpec(f"call_{k:024d}", f"tool_{k % 7}", json.dumps(args))

    code = (CODE * (chars // len(CODE) + 1))[:chars]
    return [
        _shape("text", [spec(0, {"text": _prose(rng, chars)})], False, 1),
        _shape("code", [spec(0, {"path": "render.py", "source": code})], False, 2),
        _shape(
            "parallel4",
            [spec(k, {"text": _prose(rng, chars // 4), "n": k}) for k in range(4)],
            False,
            3,
        ),
        _shape(
            "interleaved4",
            [spec(k, {"text": _prose(rng, chars // 4), "n": k}) for k in range(4)],
            True,
            4,
        ),
        _shape(
            "tiny64",
            [spec(k, {"q": _prose(rng, chars // 64), "k": k}) for k in range(64)],
            False,
            5,
        ),
        _many(
            "tiny64x",
            200,
            lambda rng, n: [spec(k, {"k": k, "q": _prose(rng, 4)[:6]}) for k in range(64)],
            fragments,
            6,
        ),
        _many(
            "agent2",
            25,
            lambda rng, n: [spec(k, {"path": _prose(rng, 28)[:28].strip()}) for k in range(2)],
            fragments,
            7,
            "Let me look that up for you.",
        ),
    ]
