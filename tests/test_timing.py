"""Timing: the suite's transport records when each body line arrived (a cassette keeps
it), a HAR capture's message times are read, and the timing findings (arguments not
streamed progressively, a call held back until the finish) are judged only where a
capture recorded arrival times; elsewhere they are "not applicable"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import streams as S

from conformance.analysis import analyze, analyze_bytes
from conformance.readers import TIMES_HEADER, read_har_file
from conformance.server.profiles import example_request
from conformance.server.testing import running_server
from conformance.transport import exchange, make_client

IDS = ("Q-ARGS-NOT-PROGRESSIVE", "Q-TOOLCALL-HELD-UNTIL-FINISH")
# The lines of S.REFERENCE_SINGLE_SSE: 1 role, 3 the call's opener, 5 and 7 its two
# argument fragments, 9 the finish, 11 usage, 13 [DONE].


def timed(*pairs: tuple[int, float]) -> Any:
    times = " ".join(f"{lines}:{t:.3f}" for lines, t in pairs)
    headers = {"content-type": "text/event-stream", TIMES_HEADER: times}
    return analyze_bytes(S.REFERENCE_SINGLE_SSE.encode(), headers=headers)


def test_fragments_in_one_burst_after_a_silence_are_not_progressive() -> None:
    r = timed((2, 0.2), (8, 2.5), (14, 5.0))  # role; silence; the whole call; silence; finish
    assert r.timing == {"Q-ARGS-NOT-PROGRESSIVE": "fail", "Q-TOOLCALL-HELD-UNTIL-FINISH": "pass"}
    assert "Q-ARGS-NOT-PROGRESSIVE" in r.quirks and r.verdict == "quirk"
    assert r.to_json()["timing"] == r.timing


def test_a_call_that_arrives_with_the_finish_was_held_back() -> None:
    r = timed((2, 0.2), (14, 2.5))
    assert r.timing == dict.fromkeys(IDS, "fail")


def test_a_call_streamed_as_generated_passes() -> None:
    r = timed((2, 0.2), (4, 0.3), (6, 0.6), (8, 0.9), (14, 1.2))
    assert r.timing == dict.fromkeys(IDS, "pass") and r.verdict == "conforms"


def test_a_burst_that_starts_the_stream_is_not_judged() -> None:
    """The silence before the first event may be the prompt's processing."""
    r = timed((14, 3.0))
    assert r.timing == dict.fromkeys(IDS, "pass")


def test_without_timings_the_findings_are_not_applicable() -> None:
    r = analyze_bytes(S.REFERENCE_SINGLE_SSE.encode())
    assert r.timing == dict.fromkeys(IDS, "not applicable")
    assert "timing" not in r.to_json()  # an untimed capture's JSON is as it was
    cut = timed((2, 0.2), (8, 2.5))  # the recording stops before the finish's line
    assert cut.timing == dict.fromkeys(IDS, "not applicable")
    assert not set(IDS) & set(cut.quirks)


def test_har_message_times_are_read(tmp_path: Path) -> None:
    body = S.REFERENCE_SINGLE_SSE
    data_events = body.count("\ndata:") + 1
    times = [0.2, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5][:data_events]
    started = 1_800_000_000.0
    entry: dict[str, Any] = {
        "startedDateTime": "2027-01-15T08:00:00.000Z",
        "request": {"method": "POST", "url": "https://x.test/v1/chat/completions"},
        "response": {
            "status": 200,
            "headers": [],
            "content": {"mimeType": "text/event-stream", "text": body},
        },
    }
    from datetime import datetime

    started = datetime.fromisoformat("2027-01-15T08:00:00+00:00").timestamp()
    entry["_eventSourceMessages"] = [{"time": started + t, "data": ""} for t in times]
    plain = dict(entry)
    del plain["_eventSourceMessages"]
    path = tmp_path / "c.har"
    path.write_text(json.dumps({"log": {"entries": [entry, plain]}}))
    with_times, without = (analyze(t) for t in read_har_file(path))
    assert with_times.timing == dict.fromkeys(IDS, "fail")
    assert without.timing == dict.fromkeys(IDS, "not applicable")


def test_the_transport_records_when_each_line_arrived() -> None:
    """End to end: the profile's server pauses before the calls; the recorded line times
    show it, and the analysis of what was recorded names it (a plain profile does not)."""
    with running_server() as url, make_client() as client:

        def get(profile: str) -> Any:
            body = example_request(profile)
            return exchange(
                client, f"{url.removesuffix('/v1')}/p/{profile}/v1/chat/completions", body
            )

        held = get("toolcall-held-until-finish")
        plain = get("reference")
    times = held.meta["line_times"]
    assert times and times[-1][1] - times[0][1] >= 1.4  # the profile's 1.5 s silence
    r = analyze(held)
    assert r.timing == dict.fromkeys(IDS, "fail") and r.verdict == "quirk"
    assert analyze(plain).timing == dict.fromkeys(IDS, "pass")
    assert isinstance(httpx.Headers({TIMES_HEADER: "1:0.1"})[TIMES_HEADER], str)
