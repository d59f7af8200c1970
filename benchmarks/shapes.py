"""The five stream shapes of issue 17, as OpenAI streams them (``reference_stream``).

- ``text``: one call, fragments of prose inside a JSON string;
- ``code``: one call whose arguments are source code (``<``, ``[``, braces, escapes);
- ``parallel4``: four calls one after the other;
- ``interleaved4``: four calls whose fragments alternate;
- ``tiny64``: 64 small calls.

Each shape is the SSE bytes, the chunk dicts and the ``data:`` payload strings.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
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
    calls: int

    @property
    def events(self) -> int:
        return len(self.payloads)


def _prose(rng: random.Random, chars: int) -> str:
    out, n = [], 0
    while n < chars:
        w = rng.choice(WORDS) + " "
        out.append(w)
        n += len(w)
    return "".join(out)


def _shape(name: str, specs: list[CallSpec], interleave: bool, seed: int) -> Shape:
    rng = random.Random(seed)
    frames = reference_stream(
        specs, rng=rng, model="gpt-4o", include_usage=True, interleave=interleave
    )
    chunks = [f for f in frames if isinstance(f, dict)]
    raw = render_sse(frames)
    payloads = [b[6:] for b in raw.decode().split("\n\n") if b.startswith("data: {")]
    return Shape(name, raw, chunks, payloads, len(specs))


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
    ]
