"""A generated corpus of short streams: what a gateway's proxy logs look like.

    python benchmarks/corpus.py DIR [--streams 100000] [--seed 28]

writes DIR/<route>-<n>.sse: mostly a usual agent turn (two calls of about 40 characters,
about 25 events, OpenAI's wire format), with one stream in ten carrying one catalogued
quirk (``conformance.mutations``), one in twenty of 64 tiny calls and one in a hundred an
unreadable file, so every verdict and the error path are in it. The file name's prefix is
its route (``conformance.field`` groups unlisted captures by it). Deterministic for a seed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.mutations import MUTATIONS, CallSpec, apply, reference_stream, render_sse  # noqa: E402

ROUTES = ("gateway", "hosted", "selfhost", "proxy")
WORDS = "read the file list open search city weather path query name value".split()
QUIRKS = sorted(MUTATIONS)


def _args(rng: random.Random, chars: int) -> str:
    out: dict[str, str] = {}
    while len(json.dumps(out)) < chars:
        out[rng.choice(WORDS) + str(len(out))] = rng.choice(WORDS)
    return json.dumps(out)


def stream(n: int, seed: int = 28) -> bytes:
    """The bytes of stream ``n`` of the corpus."""
    rng = random.Random(f"{seed}:{n}")
    if n % 20 == 7:
        specs = [CallSpec(f"call_{n}_{k}", f"t{k % 5}", _args(rng, 12)) for k in range(64)]
    else:
        specs = [CallSpec(f"call_{n}_{k}", f"tool_{k}", _args(rng, 40)) for k in range(2)]
    frames = reference_stream(specs, rng=rng, model="gpt-4o", include_usage=True)
    if n % 10 == 3:
        frames = apply(frames, [QUIRKS[(n // 10) % len(QUIRKS)]], n)
    return render_sse(frames)


def name(n: int) -> str:
    return f"{ROUTES[n % len(ROUTES)]}-{n:07d}.sse"


def write(directory: Path, streams: int, seed: int = 28) -> list[Path]:
    """The corpus in ``directory`` (created); its files in name order."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(streams):
        p = directory / name(n)
        p.write_bytes(b"\x00not a capture\n" if n % 100 == 42 else stream(n, seed))
        paths.append(p)
    return sorted(paths)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory", type=Path)
    ap.add_argument("--streams", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=28)
    args = ap.parse_args()
    paths = write(args.directory, args.streams, args.seed)
    size = sum(p.stat().st_size for p in paths)
    print(f"wrote {len(paths)} streams to {args.directory} ({size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
