"""All cores on one machine: an ordered, bounded map over worker processes.

``conformance analyze -j N`` and ``python -m conformance.field -j N`` share it. Results
come back in input order, so the output is byte for byte that of ``-j 1``, and they are
streamed: at most ``window`` chunks of items are in flight (submitted and not yet
consumed), so a million inputs never sit in memory as results at once.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def default_jobs() -> int:
    """The cores this process may run on (its affinity mask, not the machine's total)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def jobs_arg(text: str) -> int:
    """argparse type of ``-j``: a positive number of processes; 0 means every core."""
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        import argparse

        raise argparse.ArgumentTypeError(f"{text!r}: a number of processes (0: every core)")
    return n or default_jobs()


def chunk_size(total: int | None, jobs: int, cap: int = 32) -> int:
    """Items per task: large enough that a short stream does not pay a round trip to a
    worker each, small enough that a few large files still spread over every worker."""
    if total is None:
        return 8
    return max(1, min(cap, -(-total // (jobs * 4))))


def _run_chunk(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    return [fn(x) for x in items]


def ordered_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    jobs: int,
    *,
    total: int | None = None,
    window: int | None = None,
) -> Iterator[R]:
    """``map(fn, items)``, over ``jobs`` processes when there is more than one item.

    ``fn`` must be a module-level function and its items and results picklable (they
    cross to the workers). With ``jobs <= 1`` or a single item, it runs in this process:
    no pool is started for ``conformance analyze FILE``."""
    if jobs <= 1 or (total is not None and total <= 1):
        yield from map(fn, items)
        return
    from concurrent.futures import ProcessPoolExecutor

    size = chunk_size(total, jobs)
    window = window or jobs * 4
    it = iter(items)
    pending: deque[Any] = deque()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        try:
            while True:
                while len(pending) < window and (chunk := list(islice(it, size))):
                    pending.append(pool.submit(_run_chunk, fn, chunk))
                if not pending:
                    return
                yield from pending.popleft().result()
        finally:  # a consumer that stops early (a closed pipe) leaves nothing queued
            for f in pending:
                f.cancel()
