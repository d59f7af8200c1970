"""429 and 503 are retried with bounded, jittered backoff that honours Retry-After
(seconds and HTTP-date); every retry is in the cell; a replay never sleeps.

The waits are read from a fake clock (``transport._sleep`` replaced), never from the wall
clock: what was slept, and how long, is exact on a loaded machine too."""

from __future__ import annotations

import email.utils
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import vcr
from faults import FaultServer, fault_server, providers_yaml, run_suite

from conformance import transport
from conformance.cassettes import AtomicPersister, vcr_options
from conformance.providers import Provider
from conformance.runner import CellRunner
from conformance.scenarios import SCENARIOS
from conformance.transport import RetryPolicy, exchange, make_client, parse_retry_after

BODY = {
    "model": "reference",
    "stream": True,
    "messages": [{"role": "user", "content": "What is the weather in Paris? Use the tool."}],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ],
}


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The retry waits, in order, instead of sleeping them."""
    waits: list[float] = []
    monkeypatch.setattr(transport, "_sleep", waits.append)
    return waits


@pytest.fixture(scope="module")
def fs() -> Iterator[FaultServer]:
    with fault_server() as server:
        yield server


def chat(base_url: str) -> str:
    """The chat URL of a base URL that may carry a query."""
    return Provider("x", base_url, "m").url("chat/completions")


def _body(tag: str) -> dict[str, Any]:
    """A body of its own: the flaky server answers the first request of each body 429."""
    return dict(BODY, user=f"{tag}-{time.monotonic_ns()}")


# ------------------------------------------------------------------ policy units


def test_retry_after_seconds_and_http_date() -> None:
    assert parse_retry_after("1") == 1.0
    assert parse_retry_after(" 2.5 ") == 2.5
    assert parse_retry_after("-3") == 0.0
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", date) == 30.0
    future = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 58 <= (parse_retry_after(future) or 0) <= 60
    for garbage in ("soon", "", None, "Mon, 99 Foo 2015 99:99:99 GMT"):
        assert parse_retry_after(garbage) is None


def test_backoff_is_bounded_and_jittered() -> None:
    policy = RetryPolicy(max=6, base_delay=0.5, max_delay=4.0)
    for attempt in range(8):
        waits = {policy.delay(attempt, None, random.Random(seed)) for seed in range(20)}
        nominal = 0.5 * 2**attempt
        assert all(w is not None and 0 <= w <= 4.0 for w in waits)
        assert all(
            min(0.75 * nominal, 4.0) <= w <= min(1.25 * nominal, 4.0)
            for w in waits
            if w is not None
        )
        if 1.25 * nominal < 4.0:
            assert len(waits) > 1, "no jitter"
    # Retry-After is honoured exactly; one beyond max_delay is not retried at all
    assert policy.delay(0, "3", random.Random(0)) == 3.0
    assert policy.delay(0, "30", random.Random(0)) is None


def test_policy_from_providers_yaml() -> None:
    p = RetryPolicy.from_dict({"max": 1, "base_delay": 0.2, "max_delay": 2}, sleep=False)
    assert (p.max, p.base_delay, p.max_delay, p.sleep) == (1, 0.2, 2, False)


# ------------------------------------------------------------------ live exchanges


def test_429_retry_after_1_then_200(fs: FaultServer, slept: list[float]) -> None:
    body = _body("429")
    with make_client() as client:
        t = exchange(
            client,
            chat(fs.base_url("flaky", 429)),
            body,
            retry=RetryPolicy(max=2, base_delay=5, max_delay=10),
        )
    assert t.status == 200 and t.transport_error is None
    assert t.meta["retries"] == [
        {"attempt": 1, "status": 429, "retry_after": "1", "waited": 1.0, "slept": True}
    ]
    hits = [h for h in fs.hits_for("flaky") if h.json() == body]
    assert len(hits) == 2
    assert slept == [1.0], "Retry-After: 1 is waited exactly, once, before the retry"


def test_503_retry_after_http_date(fs: FaultServer, slept: list[float]) -> None:
    body = _body("503")
    with make_client() as client:
        t = exchange(
            client,
            chat(fs.base_url("flaky", 503, query="after=date")),
            body,
            retry=RetryPolicy(max=2, max_delay=10),
        )
    assert t.status == 200
    (entry,) = t.meta["retries"]
    assert entry["status"] == 503 and entry["waited"] == 2.0 and entry["slept"]
    assert email.utils.parsedate_to_datetime(entry["retry_after"]) is not None
    assert len([h for h in fs.hits_for("flaky") if h.json() == body]) == 2
    assert slept == [2.0]  # the HTTP-date minus the response's own Date header


def test_503_without_retry_after_backs_off_then_gives_up(
    fs: FaultServer, slept: list[float]
) -> None:
    with make_client() as client:
        t = exchange(
            client,
            chat(fs.base_url("status", 503, query="after=none")),
            _body("b"),
            retry=RetryPolicy(max=2, base_delay=0.05, max_delay=1),
            rng=random.Random(7),
        )
    assert t.status == 503
    retries = t.meta["retries"]
    assert [r["attempt"] for r in retries] == [1, 2]
    assert 0.0375 <= retries[0]["waited"] <= 0.0625 and 0.075 <= retries[1]["waited"] <= 0.125
    assert [round(w, 3) for w in slept] == [retries[0]["waited"], retries[1]["waited"]]


def test_retry_after_beyond_max_delay_is_not_waited(fs: FaultServer, slept: list[float]) -> None:
    with make_client() as client:
        t = exchange(
            client,
            chat(fs.base_url("status", 429, query="after=120")),
            _body("c"),
            retry=RetryPolicy(max=3, max_delay=30),
        )
    assert t.status == 429 and slept == []
    (entry,) = t.meta["retries"]
    assert entry["gave_up"] == "Retry-After 120 exceeds retries.max_delay 30 s"


def test_other_statuses_are_not_retried(fs: FaultServer, slept: list[float]) -> None:
    for code in (400, 401, 404, 500):
        with make_client() as client:
            t = exchange(
                client,
                chat(fs.base_url("status", code)),
                _body("d"),
                retry=RetryPolicy(max=3, base_delay=5),
            )
        assert t.status == code and t.meta["retries"] == []
    assert slept == []


# ------------------------------------------------------------------ cells: record, replay


def _vcr(mode: str) -> vcr.VCR:
    v = vcr.VCR(record_mode=mode, **vcr_options())
    v.register_persister(AtomicPersister)
    return v


def test_cell_records_its_retries_and_replay_does_not_sleep(
    fs: FaultServer, tmp_path: Path, slept: list[float]
) -> None:
    provider = Provider(
        "flaky",
        fs.base_url("flaky", 429),
        "reference",
        retries={"max": 2, "base_delay": 5, "max_delay": 10},
    )
    scenario = SCENARIOS["single"]
    cassette = str(tmp_path / "flaky" / "single.yaml")
    with _vcr("all").use_cassette(cassette):
        runner = CellRunner(replay=False)
        live = runner.run(provider, scenario)
        runner.close()
    assert slept == [1.0]
    assert live.verdict == "conforms", (live.verdict, live.reason)
    assert live.retries == [
        {"attempt": 1, "status": 429, "retry_after": "1", "waited": 1.0, "slept": True}
    ]
    recorded = Path(cassette).read_text()
    assert recorded.count("code: 429") == 1 and recorded.count("code: 200") == 1

    slept.clear()
    with _vcr("none").use_cassette(cassette):
        runner = CellRunner(replay=True)
        replayed = runner.run(provider, scenario)
        runner.close()
    assert slept == [], "a replay must not sleep"
    assert replayed.verdict == live.verdict
    assert replayed.retries == [
        {"attempt": 1, "status": 429, "retry_after": "1", "waited": 1.0, "slept": False}
    ]


def test_suite_records_retries_in_results_and_replays_them(tmp_path: Path) -> None:
    """The same through the pytest plugin in a subprocess (no fake clock there: that a
    replay does not sleep is shown in-process above, from the fake clock)."""
    with fault_server() as server:
        entries = {
            "flaky": {
                "base_url": server.base_url("flaky", 429),
                "model": "reference",
                "retries": {"max": 2, "base_delay": 5, "max_delay": 10},
            }
        }
        (tmp_path / "providers.yaml").write_text(providers_yaml(entries))
        rec = run_suite(tmp_path, "--record-mode=all", "--scenario", "single")
    assert rec.returncode == 0, rec.stdout[-2000:]
    cell = json.loads((tmp_path / "reports/results/flaky__single.json").read_text())
    assert cell["retries"] == [
        {"attempt": 1, "status": 429, "retry_after": "1", "waited": 1.0, "slept": True}
    ]
    rep = run_suite(tmp_path, "--scenario", "single")  # replay, the server is gone
    assert rep.returncode == 0, rep.stdout[-2000:]
    cell = json.loads((tmp_path / "reports/results/flaky__single.json").read_text())
    assert cell["retries"][0]["slept"] is False and cell["verdict"] == "conforms"
