"""Hostile endpoints: every transport fault ends as a one-line reason, never a traceback.

Two levels, both against a real server on 127.0.0.1 (``tests/faults.py``):
- unit: ``transport.exchange`` + ``analysis.analyze`` per fault (fast);
- end to end: the real pytest suite in a subprocess, several fault providers side by side
  in one providers.yaml, recorded (vcrpy reads the body inside ``send``: the limits must
  bound that read too), then replayed with the server gone.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from faults import (
    UNRESOLVABLE,
    FaultServer,
    closed_port,
    fault_server,
    providers_yaml,
    run_suite,
)

from conformance.analysis import CaptureResult, analyze
from conformance.providers import Provider
from conformance.scenarios import SCENARIOS, build_request
from conformance.transcript import Transcript
from conformance.transport import Limits, RetryPolicy, exchange, make_client

FAST = Limits(
    connect_timeout=2,
    first_byte_timeout=0.5,
    idle_timeout=0.5,
    total_timeout=5,
    max_bytes=32 * 1024 * 1024,
)
NO_RETRY = RetryPolicy(max=0)
BODY = build_request(SCENARIOS["single"], Provider("fault", "http://127.0.0.1:1/v1", "reference"))


@pytest.fixture(scope="module")
def fs() -> Iterator[FaultServer]:
    with fault_server(max_wait=20) as server:
        yield server


def run(url: str, limits: Limits = FAST) -> tuple[Transcript, CaptureResult, float]:
    started = time.monotonic()
    with make_client(limits) as client:
        t = exchange(client, url + "/chat/completions", BODY, limits=limits, retry=NO_RETRY)
    r = analyze(t)
    return t, r, time.monotonic() - started


def assert_one_line(reason: str | None) -> None:
    assert reason, "a fault must come with a reason"
    assert "\n" not in reason and "\r" not in reason and len(reason) <= 200, reason
    assert "Traceback" not in reason


def rules(r: CaptureResult) -> set[str]:
    return {f.rule for f in r.findings}


# ------------------------------------------------------------------ unit level: errors

ERRORS: list[tuple[str, Any, dict[str, Any], str]] = [
    # (fault, arg, limits overrides, the reason: a regular expression)
    ("no-headers", None, {}, r"no response headers within 0\.5 s \(limits\.first_byte_timeout\)"),
    ("stall", None, {}, r"stream stalled: no bytes for 0\.5 s \(limits\.idle_timeout\)"),
    (
        "disconnect-mid-event",
        None,
        {},
        r"the server closed the connection in the middle of the response body "
        r"\(incomplete chunked read\)",
    ),
    ("status", 400, {}, r"HTTP 400: simulated HTTP 400"),
    ("status", 401, {}, r"HTTP 401: simulated HTTP 401"),
    ("status", 404, {}, r"HTTP 404: simulated HTTP 404"),
    ("status", 429, {}, r"HTTP 429: simulated HTTP 429"),
    ("status", 500, {}, r"HTTP 500: simulated HTTP 500"),
    ("status", 503, {}, r"HTTP 503: simulated HTTP 503"),
    ("json-error-200", None, {}, r".*The model is overloaded, try again later"),
    (
        "html-200",
        None,
        {},
        r"stream requested; got text/html that is neither SSE nor JSON: "
        r"<!DOCTYPE html>.*",
    ),
    ("error-event", None, {}, r"error inside the stream: upstream model crashed mid-generation"),
    (
        "endless",
        None,
        {"total_timeout": 1.0},
        r"stream still running after 1 s \(limits\.total_timeout\)",
    ),
    (
        "endless",
        None,
        {"max_bytes": 1_000_000},
        r"stream exceeded 1000000 bytes \(limits\.max_bytes\)",
    ),
    (
        "big-event",
        10,
        # the server builds the 10 MB event before its headers: room for a loaded machine
        {"max_bytes": 5_000_000, "first_byte_timeout": 10, "total_timeout": 20},
        r"stream exceeded 5000000 bytes \(limits\.max_bytes\)",
    ),
    (
        "gzip-bomb",
        200,
        {"max_bytes": 4_000_000},
        r"stream exceeded 4000000 bytes \(limits\.max_bytes\)",
    ),
]


@pytest.mark.parametrize(
    "fault,arg,over,reason",
    ERRORS,
    ids=[f"{f}-{a or ''}-{'-'.join(o)}".strip("-") for f, a, o, _ in ERRORS],
)
def test_fault_is_an_error_with_one_line(
    fs: FaultServer, fault: str, arg: Any, over: dict[str, Any], reason: str
) -> None:
    limits = Limits(**{**FAST.__dict__, **over})
    t, r, took = run(fs.base_url(fault, arg), limits)
    assert r.verdict == "error", (r.verdict, r.error)
    assert_one_line(r.error)
    assert re.fullmatch(reason, r.error or ""), r.error
    assert took < limits.total_timeout + 3, f"{fault} took {took:.1f} s"


def test_connection_refused() -> None:
    t, r, took = run(f"http://127.0.0.1:{closed_port()}/v1")
    assert (r.verdict, r.error, t.status) == ("error", "connection refused", None)
    assert "R-COMPLETE" in rules(r) and took < 2


def test_name_that_does_not_resolve() -> None:
    t, r, took = run(UNRESOLVABLE)
    assert (r.verdict, r.error, t.status) == ("error", "the host name does not resolve", None)
    assert took < FAST.connect_timeout + 2


def test_stall_shows_its_quirk_and_keeps_what_arrived(fs: FaultServer) -> None:
    t, r, _ = run(fs.base_url("stall"))
    assert "Q-STREAM-STALLS" in r.quirks
    assert t.status == 200 and t.raw and t.raw.startswith(b"data:"), t.raw
    assert t.meta["transport_quirk"] == "Q-STREAM-STALLS"


def test_first_byte_and_idle_limits_are_separate(fs: FaultServer) -> None:
    """The first-byte budget is not the idle budget: a long first-byte timeout must not
    let a mid-stream stall run longer than idle_timeout."""
    limits = Limits(first_byte_timeout=10, idle_timeout=0.3, total_timeout=20)
    _, r, took = run(fs.base_url("stall"), limits)
    assert r.error == "stream stalled: no bytes for 0.3 s (limits.idle_timeout)"
    assert took < 3


# ------------------------------------------------------------------ unit: still judgeable


def test_close_mid_event_is_an_error_with_its_reason(fs: FaultServer) -> None:
    """A 200 body cut inside an event with no finish_reason: the server closed the stream
    mid-answer (issue 13), an `error`, not Q-FINISH-NEVER-SENT; the framing finding stays."""
    t, r, _ = run(fs.base_url("close-mid-event"))
    assert t.transport_error is None and r.verdict == "error"
    assert r.error == (
        "HTTP 200 body cut inside an event after 2 event(s), with no "
        "finish_reason: the server closed the stream mid-answer"
    )
    assert "Q-FINISH-NEVER-SENT" not in r.quirks and "Q-SSE-DONE-MISSING" not in r.quirks
    msgs = [f.message for f in r.findings if f.rule == "R-SSE-WELL-FORMED"]
    assert msgs and msgs[0].startswith("stream ended inside an event"), msgs


# The calls of the healthy reference answer to BODY, read off its wire by hand (the
# server is seeded by the request body): what a fault that spares the calls must keep.
REFERENCE_CALLS = [
    ("call_A56gUPT3fzZ2sqpXrwC1rzdF", "get_weather", '{"city": "Paris"}'),
    ("call_HfsZ8P7S9a6NzDHXMRaLLOD2", "get_time", '{"timezone": "Asia/Tokyo"}'),
]


def calls(r: CaptureResult) -> list[tuple[str, str, str]]:
    return [(c["id"], c["name"], c["arguments"]) for c in r.tool_calls["robust"]]


def test_invalid_utf8_is_a_finding_and_the_calls_survive(fs: FaultServer) -> None:
    _, r, _ = run(fs.base_url("bad-utf8"))
    assert r.verdict == "fails" and r.error is None
    judged = {f.rule for f in r.findings if f.level != "INFO"}
    assert judged == {"R-SSE-WELL-FORMED"}, judged
    assert any("invalid UTF-8" in f.message for f in r.findings)
    assert calls(r) == REFERENCE_CALLS


def test_ten_megabyte_event_is_judged(fs: FaultServer) -> None:
    # The server builds the 10 MB event before its headers: on a loaded machine that takes
    # longer than FAST's 0.5 s, and the limits are not what this test is about.
    t, r, took = run(fs.base_url("big-event", 10), replace(FAST, first_byte_timeout=10))
    assert t.transport_error is None and r.verdict == "conforms", r.quirks
    assert len(t.raw or b"") > 10 * 1024 * 1024
    assert calls(r) == REFERENCE_CALLS
    assert took < 20


def test_gzip_sse_is_decoded_and_conforms(fs: FaultServer) -> None:
    t, r, _ = run(fs.base_url("gzip"))
    assert (r.verdict, t.meta.get("content_encoding")) == ("conforms", "gzip")
    assert t.raw and t.raw.startswith(b"data:")


def test_healthy_reference_conforms(fs: FaultServer) -> None:
    _, r, _ = run(fs.base_url("ok"))
    assert r.verdict == "conforms", [f.to_json() for f in r.findings]
    assert calls(r) == REFERENCE_CALLS


def test_a_server_cannot_forge_the_transport_verdict(fs: FaultServer) -> None:
    t, r, _ = run(fs.base_url("ok", query="forge=1"))
    assert t.transport_error is None and r.verdict == "conforms"


# ------------------------------------------------------------------ unit: keep-alive, deadline


def test_a_dropped_keepalive_connection_is_retried_once_and_shown(fs: FaultServer) -> None:
    """The xllamacpp wheel's server closes a kept-alive connection after a streamed
    answer: the next request on it gets no response. It is sent again on a new
    connection, the cell is judged on that answer, and the drop is a finding."""
    url = fs.base_url("keepalive-drop") + "/chat/completions"
    before = len(fs.hits_for("keepalive-drop"))
    with make_client(FAST) as client:
        t1 = exchange(client, url, BODY, limits=FAST, retry=NO_RETRY)
        t2 = exchange(client, url, BODY, limits=FAST, retry=NO_RETRY)
    assert t1.transport_error is None and "connection_retry" not in t1.meta
    assert t2.transport_error is None and t2.status == 200
    assert t2.meta["connection_retry"] == (
        "the server dropped the kept-alive connection between two requests (Server "
        "disconnected without sending a response.); sent again on a new connection"
    )
    r1, r2 = analyze(t1), analyze(t2)
    assert r1.verdict == r2.verdict == "conforms"
    assert "Q-KEEPALIVE-DROPPED" not in r1.quirks and "Q-KEEPALIVE-DROPPED" in r2.quirks
    (f,) = [f for f in r2.findings if f.quirk == "Q-KEEPALIVE-DROPPED"]
    assert f.level == "INFO" and f.message == t2.meta["connection_retry"]
    assert r2.tool_calls["robust"] == r1.tool_calls["robust"]
    seen = [h.arg for h in fs.hits_for("keepalive-drop")[before:]]
    assert seen == [None, "dropped", None]  # answered, dropped unanswered, sent again


def test_connections_that_close_are_never_retried(fs: FaultServer) -> None:
    """Negative control: a server that says `Connection: close` shows no drop, and a
    connection refused is an error, not a retry."""
    with make_client(FAST) as client:
        ts = [
            exchange(
                client, fs.base_url("ok") + "/chat/completions", BODY, limits=FAST, retry=NO_RETRY
            )
            for _ in range(3)
        ]
        refused = exchange(
            client,
            f"http://127.0.0.1:{closed_port()}/v1/chat/completions",
            BODY,
            limits=FAST,
            retry=NO_RETRY,
        )
    assert all("connection_retry" not in t.meta for t in ts + [refused])
    assert refused.transport_error == "connection refused"
    assert refused.meta["transport_stage"] == "connect"


def test_a_read_blocked_at_the_total_deadline_is_ended_there() -> None:
    """A trickling server keeps each read within idle_timeout; the cell may still not
    run past total_timeout. At the deadline the socket is shut down, which ends the read
    blocked in it (here a read that would wait 30 s), and the body ends with the
    total-timeout reason and what arrived before."""
    import threading

    import httpx

    from conformance.transport import FAULT_HEADER, _LimitedStream

    class Sock:
        def __init__(self) -> None:
            self.down = threading.Event()

        def shutdown(self, how: int) -> None:
            self.down.set()

    class Trickle(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield b"data: {}\n\n"
            if sock.down.wait(30):  # what a blocked recv does when its socket is shut
                raise httpx.ReadError("connection shut down")
            yield b"data: late\n\n"

    sock = Sock()
    limits = Limits(idle_timeout=60, total_timeout=0.2)
    stream = _LimitedStream(Trickle(), limits, time.monotonic(), sock=sock)
    response = httpx.Response(200, stream=stream)
    stream.response = response
    assert b"".join(stream) == b"data: {}\n\n"
    assert sock.down.is_set()
    assert (
        response.headers[FAULT_HEADER] == "stream still running after 0.2 s (limits.total_timeout)"
    )


def test_a_provider_that_is_down_fails_fast(fs: FaultServer) -> None:
    """After 3 cells in a row without a response head, the provider's other cells end at
    once with the same reason, saying so; the endpoint sees no further request."""
    from conformance.runner import FAIL_FAST_AFTER, CellRunner

    lim = {"connect_timeout": 2, "first_byte_timeout": 0.3, "idle_timeout": 1, "total_timeout": 2}
    down = Provider("down", fs.base_url("no-headers"), "reference", limits=lim, retries={"max": 0})
    healthy = Provider("healthy", fs.base_url("ok"), "reference", limits=lim)
    before = len(fs.hits_for("no-headers"))
    runner = CellRunner(replay=False)
    try:
        cells = []
        for sid in ("single", "parallel", "round-trip", "interleaved", "named"):
            cells.append(runner.run(down, SCENARIOS[sid]))
            assert runner.run(healthy, SCENARIOS["single"]).verdict == "conforms"
    finally:
        runner.close()
    reason = "no response headers within 0.3 s (limits.first_byte_timeout)"
    assert [c.reason for c in cells[:FAIL_FAST_AFTER]] == [reason] * FAIL_FAST_AFTER
    for c in cells[FAIL_FAST_AFTER:]:
        assert c.verdict == "error" and c.meta == {"failed_fast": True}
        assert c.reason == (
            f"{reason} (not sent: the endpoint failed the same way on "
            f"{FAIL_FAST_AFTER} cells in a row)"
        )
    assert len(fs.hits_for("no-headers")) - before == FAIL_FAST_AFTER


def test_replay_never_fails_fast() -> None:
    from conformance.runner import CellRunner

    runner = CellRunner(replay=True)
    runner._down["p"] = (99, "connection refused")
    assert (
        runner._failed_fast(Provider("p", "http://127.0.0.1:1/v1", "m"), SCENARIOS["single"])
        is None
    )


def test_limits_come_from_providers_yaml(tmp_path: Path) -> None:
    from conformance.providers import load_providers

    (tmp_path / "providers.yaml").write_text(
        providers_yaml(
            {
                "p": {
                    "base_url": "http://127.0.0.1:1/v1",
                    "model": "m",
                    "limits": {"total_timeout": 2.5, "max_bytes": 1234, "idle_timeout": 0.7},
                }
            }
        )
    )
    p = load_providers(tmp_path / "providers.yaml")["p"]
    lim = Limits.from_dict(p.limits)
    assert (lim.total_timeout, lim.max_bytes, lim.idle_timeout) == (2.5, 1234, 0.7)


# ------------------------------------------------------------------ end to end

LIM = {
    "connect_timeout": 2,
    "first_byte_timeout": 1,
    "idle_timeout": 1,
    "total_timeout": 1.5,
    "max_bytes": 8_000_000,
}
NO_RETRIES = {"max": 0}


def _entries(fs: FaultServer, own: FaultServer) -> dict[str, dict[str, Any]]:
    def e(url: str, **kw: Any) -> dict[str, Any]:
        return {"base_url": url, "model": "reference", "limits": LIM, "retries": NO_RETRIES, **kw}

    return {
        # on a server of its own: a kept-alive connection is pooled per host and port
        "keepalive": e(own.base_url("keepalive-drop")),
        "healthy": e(fs.base_url("ok")),
        "gzip": e(fs.base_url("gzip")),
        "refused": e(f"http://127.0.0.1:{closed_port()}/v1"),
        "dns": e(UNRESOLVABLE),
        "no-headers": e(fs.base_url("no-headers")),
        "stall": e(fs.base_url("stall")),
        "cut": e(fs.base_url("disconnect-mid-event")),
        "endless": e(fs.base_url("endless", 5)),
        "flood": e(
            fs.base_url("endless"), limits={**LIM, "total_timeout": 30, "max_bytes": 500_000}
        ),
        "http-500": e(fs.base_url("status", 500)),
        "http-429": e(
            fs.base_url("status", 429), retries={"max": 2, "base_delay": 0.01, "max_delay": 0.2}
        ),
        "html": e(fs.base_url("html-200")),
        "json-error": e(fs.base_url("json-error-200")),
        "error-event": e(fs.base_url("error-event")),
        "bad-utf8": e(fs.base_url("bad-utf8")),
    }


EXPECTED = {  # provider -> (verdict, reason regex or None)
    "keepalive": ("conforms", None),  # the drop is an INFO finding, not an error
    "healthy": ("conforms", None),
    "gzip": ("conforms", None),
    "refused": ("error", r"connection refused"),
    "dns": ("error", r"the host name does not resolve"),
    "no-headers": ("error", r"no response headers within 1 s \(limits\.first_byte_timeout\)"),
    "stall": ("error", r"stream stalled: no bytes for 1 s \(limits\.idle_timeout\)"),
    "cut": (
        "error",
        r"the server closed the connection in the middle of the response body "
        r"\(incomplete chunked read\)",
    ),
    "endless": ("error", r"stream still running after 1\.5 s \(limits\.total_timeout\)"),
    "flood": ("error", r"stream exceeded 500000 bytes \(limits\.max_bytes\)"),
    "http-500": ("error", r"HTTP 500: simulated HTTP 500"),
    "http-429": ("error", r"HTTP 429: simulated HTTP 429"),
    "html": ("error", r"stream requested; got text/html that is neither SSE nor JSON: .*"),
    "json-error": ("error", r".*The model is overloaded, try again later"),
    "error-event": ("error", r"error inside the stream: upstream model crashed mid-generation"),
    "bad-utf8": ("fails", None),
}
PRE_HEADER = {"refused", "dns", "no-headers"}  # nothing arrives: nothing to record


def _cells(report_dir: Path) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for p in (report_dir / "results").glob("*.json"):
        c = json.loads(p.read_text())
        out[(c["column"], c["row"])] = c
    return out


def _check(cells: dict[tuple[str, str], dict[str, Any]], providers: set[str]) -> None:
    for (prov, row), c in sorted(cells.items()):
        verdict, reason = EXPECTED[prov]
        assert c["verdict"] == verdict, (prov, row, c["verdict"], c["reason"])
        if reason is not None:
            assert_one_line(c["reason"])
            assert re.fullmatch(reason, c["reason"]), (prov, row, c["reason"])
    assert {p for p, _ in cells} == providers


def test_suite_end_to_end_faults_side_by_side(tmp_path: Path) -> None:
    scen = ["--scenario", "single", "--scenario", "round-trip"]
    with fault_server(max_wait=20) as fs, fault_server(max_wait=20) as own:
        (tmp_path / "providers.yaml").write_text(providers_yaml(_entries(fs, own)))
        rec = run_suite(tmp_path, "--record-mode=all", "-vv", *scen)
    out = rec.stdout + rec.stderr
    assert "Traceback" not in out, out[-4000:]
    assert rec.returncode == 1, out[-4000:]  # the fault cells fail; the run went on
    for row in ("single", "round_trip"):
        assert f"test_{row}[healthy] PASSED" in out and f"test_{row}[gzip] PASSED" in out
    cells = _cells(tmp_path / "reports")
    _check(cells, set(EXPECTED))
    assert len(cells) == 2 * len(EXPECTED)
    # the kept-alive connection dropped between two requests: retried, shown as a finding
    dropped = [
        c
        for (p, _), c in cells.items()
        if p == "keepalive" and "Q-KEEPALIVE-DROPPED" in c["quirks"]
    ]
    assert dropped, [(k, c["quirks"]) for k, c in cells.items() if k[0] == "keepalive"]
    # the retries of the 429 provider are in its cell
    assert [r["status"] for r in cells[("http-429", "single")]["retries"]] == [429]
    matrix = json.loads((tmp_path / "reports" / "quirks-matrix.json").read_text())
    assert {c["id"] for c in matrix["columns"]} == set(EXPECTED)
    assert {(c["column"], c["row"]): c["verdict"] for c in matrix["cells"]}[
        ("stall", "single")
    ] == "error"
    # every failure line pytest printed for a cell is a one-line reason
    for line in out.splitlines():
        if line.startswith("error: "):
            assert_one_line(line)

    # Replay with the server gone: faults met while recording replay as the same cells,
    # at once (no timeout is waited again: that a replay never sleeps is shown on a fake
    # clock in test_retries.py, not by the wall clock here); the pre-header faults were
    # never recorded.
    rep = run_suite(tmp_path, "--record-mode=none", "-rs", *scen)
    out = rep.stdout + rep.stderr
    assert "Traceback" not in out, out[-4000:]
    replayed = _cells(tmp_path / "reports")
    _check(replayed, set(EXPECTED) - PRE_HEADER)
    for key, c in replayed.items():
        assert (c["verdict"], c["reason"]) == (cells[key]["verdict"], cells[key]["reason"]), key
        assert c["quirks"] == cells[key]["quirks"], key  # the drop was recorded
    assert out.count("not recorded: record with") >= 1
