"""The steady path (``Analyzer._feed_steady``) on real streams: what it skips finds nothing.

A chunk whose envelope and choice keys equal the template's (a clean chunk judged in full)
and whose one choice carries text, one tool-call delta, a bare argument fragment, or an
empty delta and a finish_reason skips detectors: the chunk detectors, the choice detectors
but the text collector (on a finish, but detect_finish), and on a fragment the tool-delta
detectors. Here every committed cassette, every shared capture
(when they are present, as in ``test_captures.py``), every stream of ``tests/streams.py``
and the reference stream under every transform of ``conformance.mutations`` is analysed
twice in lockstep: as shipped, and with every chunk judged in full. For each chunk the
first took the steady path, each detector it skipped is run by the second on that chunk,
and must find nothing; after each event both analyzers hold the same state; their
results are equal, byte for byte.
"""

from __future__ import annotations

import functools
import json
import os
import random
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import streams as S

from conformance.analysis import analyzer as AZ
from conformance.mutations import TRANSFORMS, CallSpec, apply, reference_stream, render_sse
from conformance.readers import exchange_transcript, read_path
from conformance.transcript import CHUNK, Event, Transcript

# One worker runs the lockstep over the corpus once (cached) for every test here, instead
# of each worker building it again (`--dist loadgroup`, as the self-test sessions run).
pytestmark = pytest.mark.xdist_group("steady-path-corpus")

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = Path(os.environ.get("CONFORMANCE_CAPTURES") or ROOT.parent / "shared" / "captures")
SSE = {"content-type": "text/event-stream"}
# The state compared after each event: the analyzer's own attributes but these (the
# template is the steady path's; the rest are compared below, or at the end: the robust
# client's reading through the result).
NOT_STATE = {"t", "_template", "naive", "guarded", "_readings", "robust", "robust_feed", "choices"}
NOT_STATE |= {"indexes", "robust_fragment", "robust_text", "robust_call"}
NOT_STATE |= {"clock", "timing", "took", "found", "fragments"}
# detect_finish's record of a choice's last tool-call delta and last appearance: read only
# with n > 1 (calls_by_choice, Choices.unfinished), where no chunk takes the steady path.
ONLY_N2 = {"tool_delta_at": None, "seen": None}


def _transcripts() -> Iterator[tuple[str, Transcript]]:
    for path in sorted((ROOT / "cassettes").rglob("*.yaml")):
        for t in read_path(path):
            yield str(path.relative_to(ROOT)), t
    if CAPTURES.is_dir():
        for path in sorted(CAPTURES.glob("*.jsonl")):
            for t in read_path(path):
                yield path.name, t
    for name in sorted(vars(S)):
        text = getattr(S, name)
        if name.isupper() and isinstance(text, str) and "data:" in text:
            body = text.encode()
            yield f"streams.{name}", exchange_transcript(name, "sse", None, None, SSE, body)
    calls = [
        CallSpec("call_aaaaaaaaaaaaaaaaaaaaaaaa", "get_weather", '{"city": "Paris", "n": 2}'),
        CallSpec("call_bbbbbbbbbbbbbbbbbbbbbbbb", "get_status", "{}"),
    ]
    for quirk in sorted(TRANSFORMS):
        frames = reference_stream(
            calls, rng=random.Random(7), model="m", include_usage=True, content="Let me see."
        )
        body = render_sse(apply(frames, [quirk], 7))
        yield f"mutation {quirk}", exchange_transcript(quirk, "sse", None, None, SSE, body)


class _Shipped(AZ.Analyzer):
    """The analyzer as shipped; ``took`` says which path the last chunk took."""

    took: str | None = None

    def feed(self, ev: Event) -> None:
        self.took = None
        super().feed(ev)

    def _feed_steady(self, t: Any, chunk: dict[str, Any], n: int, envelope: Any = None) -> bool:
        steady = super()._feed_steady(t, chunk, n, envelope)
        if steady:
            delta = chunk["choices"][0]["delta"]
            self.took = "text" if "content" in delta else "delta"
            if self.took == "delta" and n in self.fragments:
                self.took = "fragment"
            if chunk["choices"][0]["finish_reason"] is not None:
                self.took = "finish"
        return steady

    @functools.cached_property
    def fragments(self) -> set[int]:
        return set()


class _Full(AZ.Analyzer):
    """Every chunk judged in full; ``found`` counts each detector's findings on the chunk
    being fed (set by the wrappers below)."""

    found: Counter[str]

    def feed(self, ev: Event) -> None:
        self.found = Counter()
        super().feed(ev)

    def _feed_steady(self, t: Any, chunk: dict[str, Any], n: int, envelope: Any = None) -> bool:
        return False


def _watch(hook: list[Callable[..., None]]) -> list[Callable[..., None]]:
    def wrap(detector: Callable[..., None]) -> Callable[..., None]:
        def run(a: AZ.Analyzer, *args: Any) -> None:
            before = a._finds
            detector(a, *args)
            if isinstance(a, _Full):
                a.found[detector.__name__] += a._finds - before

        run.__name__ = detector.__name__
        return run

    return [wrap(d) for d in hook]


def _fragment_spy(a: AZ.Analyzer, st: Any, args: str, n: int) -> None:
    if isinstance(a, _Shipped):
        a.fragments.add(n)


# What each steady path skips (the rest of CHOICE_DETECTORS, on text, is TEXT_DETECTORS;
# on a finish, FINISH_DETECTORS).
SKIPPED = {
    "text": (AZ.CHUNK_DETECTORS, [d for d in AZ.CHOICE_DETECTORS if d not in AZ.TEXT_DETECTORS]),
    "delta": (AZ.CHUNK_DETECTORS, AZ.CHOICE_DETECTORS),
    "fragment": (AZ.CHUNK_DETECTORS, AZ.CHOICE_DETECTORS, AZ.TOOL_DELTA_DETECTORS),
    "finish": (
        AZ.CHUNK_DETECTORS,
        [d for d in AZ.CHOICE_DETECTORS if d not in AZ.FINISH_DETECTORS],
    ),
}


def _state(a: AZ.Analyzer) -> dict[str, Any]:
    slots = lambda o: {k: getattr(o, k) for k in type(o).__slots__}  # noqa: E731
    own = {k: getattr(a, k) for k in AZ.Analyzer.__slots__ if k not in NOT_STATE}
    return {
        **own,
        "clock": None if a.clock is None else vars(a.clock),
        "timing": None if a.timing is None else slots(a.timing),
        "choices": {k: {**slots(st), **ONLY_N2} for k, st in a.choices.states.items()},
        "indexes": {k: slots(st) for k, st in a.indexes.items()},
        "naive": (a.naive.acc, a.naive.crash),
        "guarded": (a.guarded.acc, a.guarded.crash),
    }


@functools.cache
def _lockstep() -> dict[str, Any]:
    """Runs the corpus once (the tests below read what it saw)."""
    mp = pytest.MonkeyPatch()
    try:
        for name in ("CHUNK_DETECTORS", "CHOICE_DETECTORS", "TOOL_DELTA_DETECTORS"):
            mp.setattr(AZ, name, _watch(getattr(AZ, name)))
        mp.setattr(AZ, "FRAGMENT_DETECTORS", [_fragment_spy, *AZ.FRAGMENT_DETECTORS])
        return _run()
    finally:
        mp.undo()


def _run() -> dict[str, Any]:
    seen: Counter[str] = Counter()  # steady chunks per path
    ran: Counter[str] = Counter()  # steady chunks each skipped detector was run on
    found: dict[str, list[str]] = {}  # detector -> where it found something it skipped
    differ: list[str] = []
    streams = 0
    for source, t in _transcripts():
        streams += 1
        a, b = _Shipped(t), _Full(t)
        for ev, ev2 in zip(t.events(), t.events(), strict=True):
            a.feed(ev)
            b.feed(ev2)
            if ev.kind == CHUNK and a.took is not None:
                seen[a.took] += 1
                for hook in SKIPPED[a.took]:
                    for d in hook:
                        ran[d.__name__] += 1
                        if b.found[d.__name__]:
                            found.setdefault(d.__name__, []).append(f"{source} event {ev.n}")
            if _state(a) != _state(b):
                differ.append(f"{source} event {ev.n}")
                break
        ra, rb = a.finish(), b.finish()
        if json.dumps(ra.to_json(), default=str) != json.dumps(rb.to_json(), default=str):
            differ.append(f"{source}: results")
        elif ra.turn != rb.turn:
            differ.append(f"{source}: the robust turn")
    return {"streams": streams, "seen": seen, "ran": ran, "found": found, "differ": differ}


def test_every_steady_path_is_taken_on_the_corpus() -> None:
    r = _lockstep()
    assert r["streams"] > 700
    assert {k: r["seen"][k] > 100 for k in SKIPPED} == dict.fromkeys(SKIPPED, True)


@pytest.mark.parametrize(
    "detector",
    sorted({d.__name__ for hooks in SKIPPED.values() for hook in hooks for d in hook}),
)
def test_a_skipped_detector_finds_nothing_on_a_steady_chunk(detector: str) -> None:
    r = _lockstep()
    assert r["ran"][detector] > 100  # run, in full, on that many steady chunks
    assert r["found"].get(detector, []) == []


def test_the_steady_path_leaves_the_state_a_full_judgement_leaves() -> None:
    assert _lockstep()["differ"] == []


def _bare_end() -> Iterator[tuple[str, AZ.Analyzer, bool]]:
    """Each corpus stream analysed to its end, as captured and as a bare body (the same
    bytes, no request, status or headers: ``analyze_bytes``); whether it is bare."""
    for source, t in _transcripts():
        if t.raw is None:
            continue
        for tr in (t, exchange_transcript(source, "sse", None, None, SSE, t.raw)):
            a = AZ.Analyzer(tr)
            for ev in tr.events():
                a.feed(ev)
            a._body_facts()
            yield source, a, tr.request is None and tr.status is None and not tr.meta


def test_a_bare_body_skips_only_end_detectors_that_find_nothing_there() -> None:
    """finish() runs BARE_END_DETECTORS on a bare body: each BARE_SKIPPED detector, run on
    such a body, finds nothing and changes nothing; elsewhere finish() runs them all."""
    assert [d for d in AZ.END_DETECTORS if d not in AZ.BARE_SKIPPED] == AZ.BARE_END_DETECTORS
    bare = other = 0
    for source, a, is_bare in _bare_end():
        if not is_bare:
            other += 1
            continue
        bare += 1
        before = _state(a)
        for d in AZ.BARE_SKIPPED:
            d(a)
            assert _state(a) == before, f"{source}: {d.__name__}"
    assert bare > 700 and other > 700


def test_finish_on_a_bare_body_equals_finish_with_every_end_detector() -> None:
    """The shortcut and the full end agree, result for result, bare or not."""

    class _AllEnd(AZ.Analyzer):
        def finish(self) -> Any:
            saved = AZ.BARE_END_DETECTORS
            AZ.BARE_END_DETECTORS = AZ.END_DETECTORS  # type: ignore[misc]
            try:
                return super().finish()
            finally:
                AZ.BARE_END_DETECTORS = saved  # type: ignore[misc]

    for source, t in _transcripts():
        variants = [t]
        if t.raw is not None:
            variants.append(exchange_transcript(source, "sse", None, None, SSE, t.raw))
        for tr in variants:
            b = _AllEnd(tr)
            for ev in tr.events():
                b.feed(ev)
            got = json.dumps(AZ.analyze(tr).to_json(), default=str)
            assert got == json.dumps(b.finish().to_json(), default=str), source
