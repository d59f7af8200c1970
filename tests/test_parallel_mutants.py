"""conformance.parallel in process (the mutation run's tests for it): how many processes
``-j`` means, how items are cut into tasks, how far the input is read ahead, and that a
consumer that stops early leaves no queued work running. tests/test_parallel.py holds the
end-to-end checks (the CLI's bytes with -j 1 and -j 2)."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pytest

from conformance import parallel
from conformance.parallel import chunk_size, default_jobs, jobs_arg, ordered_map


def test_default_jobs_is_the_affinity_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    assert default_jobs() == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(), raising=False)
    assert default_jobs() == 1  # never zero processes


def test_default_jobs_without_an_affinity_mask_is_the_cpu_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert default_jobs() == 6
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # unknown: one
    assert default_jobs() == 1


@pytest.mark.parametrize(("text", "n"), [("1", 1), ("3", 3), ("12", 12)])
def test_jobs_arg_is_the_number_given(text: str, n: int) -> None:
    assert jobs_arg(text) == n


def test_jobs_zero_means_every_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "default_jobs", lambda: 7)
    assert jobs_arg("0") == 7


@pytest.mark.parametrize("text", ["-1", "-8", "many", "2.5", ""])
def test_jobs_arg_refuses_what_is_not_a_count(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as e:
        jobs_arg(text)
    assert str(e.value) == f"{text!r}: a number of processes (0: every core)"


@pytest.mark.parametrize(
    ("total", "jobs", "size"),
    [
        (None, 4, 8),  # unknown length: small tasks
        (0, 2, 1),
        (1, 2, 1),
        (8, 2, 1),
        (9, 2, 2),  # a quarter of a worker's share, rounded up
        (100, 2, 13),
        (256, 2, 32),
        (257, 2, 32),  # at most 32
        (10_000, 2, 32),
        (10_000, 100, 25),
    ],
)
def test_chunk_size(total: int | None, jobs: int, size: int) -> None:
    assert chunk_size(total, jobs) == size


def test_chunk_size_cap() -> None:
    assert chunk_size(1_000, 1, cap=5) == 5


def _drawn(log: list[int], n: int):  # a generator that records how far it was read
    for i in range(n):
        log.append(i)
        yield i


@pytest.mark.parametrize(("jobs", "window"), [(2, 3), (2, None), (3, None)])
def test_read_ahead_is_the_window_of_chunks(jobs: int, window: int | None) -> None:
    """Before the first result is handed out, exactly ``window`` chunks (default: four
    per process) were cut from the input: no more, so a long input is streamed."""
    log: list[int] = []
    n = 100_000
    out = ordered_map(abs, _drawn(log, n), jobs, total=n, window=window)
    assert next(out) == 0
    assert len(log) == (window or jobs * 4) * chunk_size(n, jobs)
    assert list(out) == list(range(1, n))


def test_unknown_length_goes_in_chunks_of_eight_and_keeps_order() -> None:
    log: list[int] = []
    out = ordered_map(str, _drawn(log, 1_000), 2, window=2)
    assert next(out) == "0"
    assert len(log) == 2 * 8
    assert list(out) == [str(i) for i in range(1, 1_000)]


@pytest.mark.parametrize("n", [2, 3, 31, 65])
def test_every_item_once_in_input_order(n: int) -> None:
    items = [(-1) ** i * i for i in range(n)]
    assert list(ordered_map(abs, items, 2, total=n)) == [abs(x) for x in items]


def test_a_task_maps_its_items() -> None:  # what a worker runs
    assert parallel._run_chunk(abs, [-1, 2, -3]) == [1, 2, 3]


def test_an_empty_input_gives_nothing() -> None:
    assert list(ordered_map(abs, [], 2, total=0)) == []
    assert list(ordered_map(abs, iter([]), 2)) == []


def test_one_item_or_one_job_starts_no_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    import concurrent.futures

    def refuse(*a: object, **k: object) -> None:
        raise AssertionError("a pool was started")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", refuse)
    assert list(ordered_map(abs, [-3], 4, total=1)) == [3]
    assert list(ordered_map(abs, [-1, -2], 1, total=2)) == [1, 2]
    assert list(ordered_map(abs, [-1, -2], 0, total=2)) == [1, 2]
    assert list(ordered_map(abs, iter([-5]), 1)) == [5]


def test_two_items_on_two_jobs_use_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    import concurrent.futures

    started: list[int] = []
    real = concurrent.futures.ProcessPoolExecutor

    def counting(max_workers: int) -> concurrent.futures.ProcessPoolExecutor:
        started.append(max_workers)
        return real(max_workers=max_workers)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", counting)
    assert list(ordered_map(abs, [-1, -2], 2, total=2)) == [1, 2]
    assert list(ordered_map(abs, iter([-1, -2]), 2)) == [1, 2]  # length unknown
    assert started == [2, 2]


def _touch(path: str) -> str:  # a task with a side effect that outlives it
    time.sleep(0.01)
    Path(path).touch()
    return path


def test_a_consumer_that_stops_early_leaves_no_queued_task(tmp_path: Path) -> None:
    """Closing the generator cancels what was submitted and not started: a closed pipe
    does not go on analysing the rest of the window."""
    paths = [str(tmp_path / f"{i}.done") for i in range(400)]
    out = ordered_map(_touch, paths, 2, window=50)  # chunks of 8
    assert next(out) == paths[0]
    out.close()
    done = len(list(tmp_path.iterdir()))
    assert 1 <= done < 200, done  # 50 chunks of 8 were in flight; most never ran
