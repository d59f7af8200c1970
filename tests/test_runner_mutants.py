"""conformance.runner judged by mutmut, in-process: a cell's findings and its not-elicited
note for calls written here by hand (the analyzer's reading is not the expected value);
the stream-false comparison that defines Q-TOOLCALLS-MISSING-IN-STREAM; and a provider
that is down failing fast.

Q-TOOLCALLS-MISSING-IN-STREAM is defined by a comparison: the same request with stream
false carries tool_calls, the streamed one does not. The runner makes that request when a
forced tool_choice streamed no call (recorded in the cell's cassette, so a replay makes it
too); the analyzer names the quirk only when the comparison showed calls. A lone capture
(`toolcall-conformance analyze`) says the comparison was not made.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace as NS
from typing import Any

import httpx
import pytest
import vcr

from conformance.cassettes import vcr_options
from conformance.cli import main
from conformance.client import ToolCall
from conformance.providers import Provider, provider_from_entry
from conformance.runner import FAIL_FAST_AFTER, CellRunner, check_expectations
from conformance.scenarios import SCENARIOS
from conformance.server.testing import running_server


def call(name: str, arguments: str, *, valid: bool = True, index: int = 0) -> ToolCall:
    return ToolCall(index, f"call_{index}", "function", name, arguments, arguments, valid=valid)


def expectations(
    scenario: str, *calls: ToolCall, quirks: tuple[str, ...] = ()
) -> tuple[list[tuple[Any, ...]], str | None]:
    r = NS(turn=NS(calls=list(calls)), quirks=list(quirks))
    findings, note = check_expectations(SCENARIOS[scenario], r, {})  # type: ignore[arg-type]
    return [(f["rule"], f["level"], f["quirk"], f["message"]) for f in findings], note


STRICT_IGNORED = ("R-ARGS-JSON", "SHOULD", "Q-STRICT-IGNORED")


def test_strict_arguments_that_validate_are_no_finding() -> None:
    ok = call("get_weather", '{"city": "Paris", "unit": "celsius"}')
    assert expectations("strict", ok) == ([], None)


def test_strict_arguments_that_break_the_schema_are_q_strict_ignored_per_call() -> None:
    extra = call("get_weather", '{"city": "Paris", "unit": "celsius", "x": 1}')
    missing = call("get_weather", '{"city": "Paris"}', index=1)
    wrong = call("get_weather", '{"city": "Paris", "unit": "kelvin"}', index=2)
    findings, note = expectations("strict", extra, missing, wrong)
    assert findings == [
        (*STRICT_IGNORED, "strict schema not enforced: Additional properties are not allowed "
         "('x' was unexpected)"),
        (*STRICT_IGNORED, "strict schema not enforced: 'unit' is a required property"),
        (*STRICT_IGNORED, "strict schema not enforced: 'kelvin' is not one of "
         "['celsius', 'fahrenheit']"),
    ]  # fmt: skip
    assert note is None


def test_strict_skips_an_invalid_call_and_a_tool_the_scenario_does_not_declare() -> None:
    cut = call("get_weather", '{"city": "Par', valid=False)
    other = call("get_time", '{"nothing": 1}', index=1)
    findings, _ = expectations("strict", cut, other)
    assert findings == []


def test_a_cut_turn_whose_arguments_were_invented_is_elicited() -> None:
    whole = call("get_weather", '{"city": "Paris"}')
    complete = "not elicited: the arguments were complete within max_tokens"
    assert expectations("truncated-arguments", whole) == ([], complete)
    # complete because the server filled in what max_tokens cut: the quirk was shown
    invented = ("Q-ARGS-INVENTED-ON-TRUNCATION",)
    assert expectations("truncated-arguments", whole, quirks=invented) == ([], None)
    cut = call("get_weather", '{"city": "Pa', valid=False)
    assert expectations("truncated-arguments", cut) == ([], None)


def test_without_the_schema_expectation_nothing_is_validated() -> None:
    findings, _ = expectations("single", call("get_weather", '{"city": 3, "zzz": true}'))
    assert findings == []


# ------------------------------------------------------------------ the stream-false comparison

EMPTY_STREAM = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
    b'[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
    b'[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)
CALL = {
    "id": "call_Ab3dEf6hIj9kLm2nOp5qRs8t",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def sse(*chunks: dict[str, Any]) -> str:
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)


def streamed(text: str) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=text)


def cut_after(text: str) -> Any:
    """A stream whose connection breaks after ``text``."""

    def answer(body: dict) -> httpx.Response:
        def chunks() -> Iterator[bytes]:
            yield text.encode()
            raise httpx.ReadError("connection reset")

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=chunks())

    return answer


def one_call(call: dict[str, Any]) -> str:
    return sse(chunk({"role": "assistant", "content": None}), chunk({"tool_calls": [call]}))


CALLED = one_call({"index": 0, **CALL}) + sse(chunk({}, "tool_calls")) + "data: [DONE]\n\n"
"""A whole turn that streams CALL."""


def completion(tool_calls: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    finish = "tool_calls" if tool_calls else "stop"
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


def run_answered(
    scenario: str,
    plain: Any,
    seen: list[dict],
    *,
    entry: dict[str, Any] | None = None,
    stream: Any = None,
    repeat: int = 1,
) -> Any:
    """A server that streams no call (or ``stream``'s answer) and answers stream false
    with ``plain(body, n)`` (n: how many stream-false requests came before)."""
    plains: list[int] = []

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        if body.get("stream") is True:
            return streamed(EMPTY_STREAM.decode()) if stream is None else stream(body)
        plains.append(1)
        return plain(body, len(plains) - 1)

    entry = {"base_url": "http://127.0.0.1:9/v1", "model": "m", **(entry or {})}
    provider = provider_from_entry("p", entry)
    runner = CellRunner(replay=True, client=httpx.Client(transport=httpx.MockTransport(answer)))
    try:
        return runner.run(provider, SCENARIOS[scenario], repeat=repeat)
    finally:
        runner.close()


def run_mocked(scenario: str, plain: dict[str, Any] | None, seen: list[dict]) -> Any:
    """A server that streams no call and answers stream false with ``plain``."""
    return run_answered(scenario, lambda body, n: httpx.Response(200, json=plain), seen)


def tool_choice_findings(cell: Any) -> list[tuple[str | None, str, str]]:
    return [
        (f["quirk"], f["level"], f["message"])
        for f in cell.findings
        if f["rule"] == "R-TOOL-CHOICE"
    ]


@pytest.mark.parametrize("scenario", ["required", "named"])
def test_the_quirk_when_stream_false_carries_the_calls(scenario: str) -> None:
    seen: list[dict] = []
    cell = run_mocked(scenario, completion([CALL]), seen)
    assert [b["stream"] for b in seen] == [True, False]
    # the same request otherwise (tool_choice, tools, messages, the same max_tokens bound)
    assert {k: v for k, v in seen[1].items() if k != "stream"} == {
        k: v for k, v in seen[0].items() if k not in ("stream", "stream_options")
    }
    assert cell.quirks == ["Q-TOOLCALLS-MISSING-IN-STREAM"]
    ((quirk, level, message),) = tool_choice_findings(cell)
    assert (quirk, level) == ("Q-TOOLCALLS-MISSING-IN-STREAM", "MUST")
    assert message.endswith("; the same request with stream false returned 1 tool call(s)")
    assert cell.meta["stream_comparison"] == {"made": True, "tool_calls": 1}
    assert cell.verdict == "fails"


@pytest.mark.parametrize("plain", [completion(None), completion([])])
def test_no_quirk_when_stream_false_has_no_calls_either(plain: dict[str, Any]) -> None:
    seen: list[dict] = []
    cell = run_mocked("required", plain, seen)
    assert len(seen) == 2
    assert cell.quirks == []  # tool_choice ignored: the rule's MUST finding, no quirk id
    assert tool_choice_findings(cell) == [
        (
            None,
            "MUST",
            "tool_choice required but no tool call streamed, nor with stream false: "
            "tool_choice ignored",
        )
    ]
    assert cell.meta["stream_comparison"] == {"made": True, "tool_calls": 0}
    assert cell.verdict == "fails"


def test_a_failed_comparison_names_no_quirk() -> None:
    seen: list[dict] = []
    cell = run_mocked("required", None, seen)  # stream false answers `null`: not a completion
    assert cell.quirks == []
    ((quirk, _, message),) = tool_choice_findings(cell)
    assert quirk is None and "the stream-false comparison was not made" in message


def test_no_comparison_when_a_call_streamed_or_the_choice_is_auto() -> None:
    seen: list[dict] = []
    run_mocked("single", completion([CALL]), seen)  # tool_choice auto: an empty turn is fine
    assert [b["stream"] for b in seen] == [True]


def test_recorded_in_the_cassette_and_replayed(tmp_path: Path) -> None:
    """Against the reference server's profile: recorded live, then replayed from the same
    cassette with the same findings (the comparison is its second interaction)."""
    cassette = tmp_path / "required.yaml"
    scenario = SCENARIOS["required"]

    def cell(base: str, mode: str, replay: bool) -> Any:
        provider = provider_from_entry(
            "p", {"base_url": base, "model": "toolcalls-missing-in-stream"}
        )
        runner = CellRunner(replay=replay)
        try:
            with vcr.VCR(**vcr_options()).use_cassette(str(cassette), record_mode=mode):
                return runner.run(provider, scenario)
        finally:
            runner.close()

    with running_server() as base:
        live = cell(base, "all", False)
    assert live.quirks == ["Q-TOOLCALLS-MISSING-IN-STREAM"]
    bodies = [json.loads(i["request"]["body"]) for i in _interactions(cassette)]
    assert [b["stream"] for b in bodies] == [True, False]
    replayed = cell("http://127.0.0.1:9/v1", "none", True)
    assert replayed.quirks == live.quirks
    assert tool_choice_findings(replayed) == tool_choice_findings(live)
    assert replayed.meta["stream_comparison"] == live.meta["stream_comparison"]
    assert live.meta["stream_comparison"]["tool_calls"] >= 1


def test_analyze_of_a_lone_capture_says_the_comparison_was_not_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
        "tool_choice": "required",
    }
    p = tmp_path / "capture.har"
    p.write_text(json.dumps(_har(body, EMPTY_STREAM.decode())))
    main(["analyze", "--json", str(p)])
    doc = json.loads(capsys.readouterr().out)
    findings = [f for r in _results(doc) for f in r["findings"] if f["rule"] == "R-TOOL-CHOICE"]
    assert [(f["quirk"], f["level"]) for f in findings] == [(None, "MUST")]
    assert findings[0]["message"].endswith("the stream-false comparison was not made")
    assert "Q-TOOLCALLS-MISSING-IN-STREAM" not in json.dumps(doc)


def _interactions(path: Path) -> list[dict[str, Any]]:
    import yaml

    return yaml.safe_load(path.read_text())["interactions"]


def _har(body: dict[str, Any], text: str) -> dict[str, Any]:
    url = "http://127.0.0.1:9/v1/chat/completions"
    request = {
        "method": "POST",
        "url": url,
        "headers": [{"name": "content-type", "value": "application/json"}],
        "postData": {"mimeType": "application/json", "text": json.dumps(body)},
    }
    response = {
        "status": 200,
        "headers": [{"name": "content-type", "value": "text/event-stream"}],
        "content": {"mimeType": "text/event-stream", "text": text},
    }
    return {"log": {"entries": [{"request": request, "response": response}]}}


def _results(doc: Any) -> list[dict[str, Any]]:
    if isinstance(doc, dict) and "findings" in doc:
        return [doc]
    if isinstance(doc, dict):
        return [r for v in doc.values() for r in _results(v)]
    if isinstance(doc, list):
        return [r for v in doc for r in _results(v)]
    return []


# ------------------------------------------------------------------ the comparison's edges


def test_the_comparison_counts_the_calls_of_every_choice_in_the_raw_json() -> None:
    plain = {
        "choices": [
            1,  # not a choice
            {"message": "not a message"},
            {"message": {"tool_calls": {"a": CALL}}},  # not an array
            {"message": {"tool_calls": [CALL, CALL]}},
            {"index": 1, "message": {"tool_calls": [CALL]}},
        ]
    }
    cell = run_mocked("required", plain, [])
    assert cell.meta["stream_comparison"] == {"made": True, "tool_calls": 3}
    assert cell.quirks == ["Q-TOOLCALLS-MISSING-IN-STREAM"]
    ((_, _, message),) = tool_choice_findings(cell)
    assert message.endswith("returned 3 tool call(s)")


@pytest.mark.parametrize(
    "plain",
    [
        {"choices": {"0": {"message": {"tool_calls": [CALL]}}}},  # choices not an array
        [completion([CALL])],  # a JSON array, not a completion object
        {"choices": [{"message": {}}]},
    ],
)
def test_calls_outside_a_completions_choices_array_are_not_counted(plain: Any) -> None:
    cell = run_mocked("required", plain, [])
    assert cell.meta["stream_comparison"] == {"made": True, "tool_calls": 0}
    assert cell.quirks == []


KELVIN = '{"city": "Paris", "unit": "kelvin"}'


def refused(body: dict, n: int) -> httpx.Response:
    raise httpx.ConnectError("connection refused by the stream-false endpoint " + "x" * 200)


@pytest.mark.parametrize(
    ("respond", "reason"),
    [
        (lambda body, n: httpx.Response(500, json={"error": {"message": "x"}}), "HTTP 500"),
        (lambda body, n: httpx.Response(404, text="gone"), "HTTP 404"),
        (lambda body, n: httpx.Response(200, content=b"<html>"), "the body is not JSON"),
        (lambda body, n: httpx.Response(200, content=b""), "the body is not JSON"),
    ],
)
def test_a_comparison_that_could_not_be_made_says_why(respond: Any, reason: str) -> None:
    seen: list[dict] = []
    cell = run_answered("required", respond, seen)
    assert [b["stream"] for b in seen] == [True, False]
    assert cell.meta["stream_comparison"] == {"made": False, "reason": "stream false: " + reason}
    assert cell.quirks == []
    ((quirk, level, message),) = tool_choice_findings(cell)
    assert (quirk, level) == (None, "MUST")
    assert message.endswith(f"the stream-false comparison was not made (stream false: {reason})")


def test_a_transport_error_of_the_comparison_is_its_reason_on_one_short_line() -> None:
    cell = run_answered("required", refused, [])
    reason = cell.meta["stream_comparison"]["reason"]
    assert cell.meta["stream_comparison"]["made"] is False
    assert reason.startswith("stream false: ") and "connection refused" in reason
    assert len(reason) == len("stream false: ") + 120 and reason.endswith("…")
    assert cell.quirks == []


def test_the_comparison_is_retried_by_the_providers_policy_and_counted() -> None:
    def busy_first(body: dict, n: int) -> httpx.Response:  # each trial's first: 429
        if n % 2 == 0:
            return httpx.Response(429, headers={"retry-after": "0"}, json={"error": {}})
        return httpx.Response(200, json=completion([CALL]))

    seen: list[dict] = []
    cell = run_answered("required", busy_first, seen, entry={"retries": {"max": 1}}, repeat=2)
    assert [b["stream"] for b in seen] == [True, False, False] * 2
    assert cell.meta["stream_comparison"] == {"made": True, "tool_calls": 1}
    assert [r["status"] for r in cell.retries] == [429]
    assert cell.trials["exchanges_per_trial"] == [3, 3]
    # a provider that allows no retry: the comparison is not made
    seen = []
    cell = run_answered("required", busy_first, seen, entry={"retries": {"max": 0}})
    assert [b["stream"] for b in seen] == [True, False]
    assert cell.meta["stream_comparison"] == {"made": False, "reason": "stream false: HTTP 429"}


def test_each_cell_jitters_its_own_backoff() -> None:
    def busy_first(body: dict, n: int) -> httpx.Response:  # no Retry-After: backoff
        if n == 0:
            return httpx.Response(429, json={"error": {}})
        return httpx.Response(200, json=completion([CALL]))

    waits = [
        run_answered(sid, busy_first, [], entry={"retries": {"max": 1}}).retries[0]["waited"]
        for sid in ("required", "named")
    ]
    assert all(0.75 <= w <= 1.25 for w in waits)  # base_delay 1 s, +-25 %
    assert waits[0] != waits[1]  # seeded per cell: no two cells retry in lockstep


def test_the_providers_retry_policy_applies_to_the_streamed_request() -> None:
    def busy(body: dict) -> httpx.Response:
        return httpx.Response(429, json={"error": {"message": "slow down"}})

    seen: list[dict] = []
    cell = run_answered("required", None, seen, entry={"retries": {"max": 0}}, stream=busy)
    assert len(seen) == 1  # no retry, and an error is not compared
    assert cell.verdict == "error" and "stream_comparison" not in cell.meta


def test_no_comparison_when_a_forced_choice_streamed_its_call() -> None:
    seen: list[dict] = []
    cell = run_answered("required", None, seen, stream=lambda body: streamed(CALLED))
    assert [b["stream"] for b in seen] == [True]
    assert "stream_comparison" not in cell.meta and cell.verdict == "conforms"


# ------------------------------------------------------------------ a provider that is down


def _read_request(conn: socket.socket) -> None:
    """One HTTP request, head and body (Content-Length), so that the close that follows is
    the same clean end of the connection however the client's bytes were split."""
    data = b""
    while b"\r\n\r\n" not in data:
        got = conn.recv(65536)
        if not got:
            return
        data += got
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        got = conn.recv(65536)
        if not got:
            return
        body += got


@pytest.fixture
def headless_port() -> Iterator[int]:
    """A server that accepts each connection and closes it unanswered: no response head."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.05)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                _read_request(conn)  # all of it: a close with unread bytes is a reset

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(srv.getsockname()[1])
    stop.set()
    thread.join(timeout=10)
    srv.close()


def live(port: int) -> Provider:
    return provider_from_entry(
        "down", {"base_url": f"http://127.0.0.1:{port}/v1", "model": "m", "retries": {"max": 0}}
    )


def cells_of(runner: CellRunner, *providers: Provider) -> list[Any]:
    return [runner.run(p, SCENARIOS["single"]) for p in providers]


@pytest.mark.parametrize("kind", ["refused", "no response head"])
def test_a_provider_with_no_response_on_three_cells_in_a_row_fails_fast(
    kind: str, closed_port: int, headless_port: int
) -> None:
    port = closed_port if kind == "refused" else headless_port
    runner = CellRunner(replay=False)
    try:
        cells = cells_of(runner, *[live(port)] * 5)
    finally:
        runner.close()
    reason = cells[0].reason
    assert reason and [c.reason for c in cells[:FAIL_FAST_AFTER]] == [reason] * FAIL_FAST_AFTER
    assert [c.meta.get("failed_fast") for c in cells] == [None] * FAIL_FAST_AFTER + [True] * 2
    late = cells[FAIL_FAST_AFTER].to_json()
    assert (late["column"], late["row"], late["verdict"]) == ("down", "single", "error")
    assert late["reason"] == (
        f"{reason} (not sent: the endpoint failed the same way on {FAIL_FAST_AFTER} cells in a row)"
    )
    assert late["meta"] == {"failed_fast": True}


def test_a_response_in_between_starts_the_count_again(closed_port: int) -> None:
    with running_server() as base:
        up = provider_from_entry("down", {"base_url": base, "model": "reference"})
        runner = CellRunner(replay=False)
        try:
            down = live(closed_port)
            cells = cells_of(runner, down, down, up, down, down, down, down)
        finally:
            runner.close()
    assert cells[2].verdict == "conforms"
    assert [bool(c.meta.get("failed_fast")) for c in cells] == [False] * 6 + [True]


def test_a_body_cut_after_its_head_or_a_replay_never_fails_fast(closed_port: int) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        def chunks() -> Iterator[bytes]:
            yield EMPTY_STREAM[:40]
            raise httpx.ReadError("connection reset")

        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=chunks())

    cut = provider_from_entry("p", {"base_url": "http://127.0.0.1:9/v1", "model": "m"})
    runner = CellRunner(replay=False, client=httpx.Client(transport=httpx.MockTransport(answer)))
    try:
        cells = cells_of(runner, *[cut] * (FAIL_FAST_AFTER + 1))
    finally:
        runner.close()
    assert [c.verdict for c in cells] == ["error"] * (FAIL_FAST_AFTER + 1)
    assert [c.meta.get("failed_fast") for c in cells] == [None] * (FAIL_FAST_AFTER + 1)
    runner = CellRunner(replay=True)  # a replay judges every cell it has
    try:
        cells = cells_of(runner, *[live(closed_port)] * (FAIL_FAST_AFTER + 1))
    finally:
        runner.close()
    assert [c.meta.get("failed_fast") for c in cells] == [None] * (FAIL_FAST_AFTER + 1)


def test_a_round_trip_on_a_dropped_kept_alive_connection_shows_the_drop() -> None:
    from faults import fault_server

    with fault_server(max_wait=20) as own:  # its own server: the pool is per host and port
        entry = {"base_url": own.base_url("keepalive-drop"), "model": "reference"}
        runner = CellRunner(replay=False)
        try:
            cell = runner.run(provider_from_entry("ka", entry), SCENARIOS["round-trip"])
        finally:
            runner.close()
    assert cell.verdict == "conforms" and cell.quirks == ["Q-KEEPALIVE-DROPPED"]
    assert [(f["quirk"], f["exchange"]) for f in cell.findings] == [("Q-KEEPALIVE-DROPPED", 1)]


# ------------------------------------------------------------------ a cell that ended in error


def test_a_cell_in_error_is_not_judged_on_its_scenario() -> None:
    kelvin = {"index": 0, **CALL, "function": {"name": "get_weather", "arguments": KELVIN}}
    cell = run_answered("strict", None, [], stream=cut_after(one_call(kelvin)))
    assert cell.verdict == "error"
    assert "Q-STRICT-IGNORED" not in cell.quirks  # the call's schema is not judged
    assert all(f["rule"] != "R-ARGS-JSON" for f in cell.findings)


def test_a_call_of_a_cell_in_error_is_not_sent_back() -> None:
    seen: list[dict] = []
    cell = run_answered("round-trip", None, seen, stream=cut_after(one_call({"index": 0, **CALL})))
    assert cell.verdict == "error" and len(seen) == 1  # no round trip


def test_a_round_trip_cut_mid_event_is_an_error_with_its_evidence() -> None:
    cut = sse(chunk({"role": "assistant", "content": "It is"}))[:-30]

    def answer(body: dict) -> httpx.Response:
        return streamed(cut if any(m["role"] == "tool" for m in body["messages"]) else CALLED)

    cell = run_answered("round-trip", None, [], stream=answer)
    assert cell.verdict == "error" and (cell.reason or "").startswith(
        "round trip: HTTP 200 body cut inside an event"
    )
    assert [(f["rule"], f["exchange"]) for f in cell.findings if f["rule"] == "R-COMPLETE"] == [
        ("R-COMPLETE", 1)
    ]
    assert [e for e in cell.evidence if e["exchange"] != 0]  # the round trip's own event
    assert {e["exchange"] for e in cell.evidence} == {0, 1}


def test_the_streamed_requests_retries_and_the_comparisons_are_both_kept() -> None:
    tries: list[int] = []

    def busy_once(body: dict) -> httpx.Response:
        tries.append(1)
        if len(tries) == 1:
            return httpx.Response(429, headers={"retry-after": "0"}, json={"error": {}})
        return streamed(EMPTY_STREAM.decode())

    def plain(body: dict, n: int) -> httpx.Response:
        if n == 0:
            return httpx.Response(503, headers={"retry-after": "0"}, json={"error": {}})
        return httpx.Response(200, json=completion([CALL]))

    cell = run_answered("required", plain, [], entry={"retries": {"max": 1}}, stream=busy_once)
    assert cell.quirks == ["Q-TOOLCALLS-MISSING-IN-STREAM"]
    assert [r["status"] for r in cell.retries] == [429, 503]


def test_the_comparison_asks_the_same_request_without_streaming_and_its_options() -> None:
    from conformance.runner import _stream_comparison

    sent: list[dict] = []

    def send(body: dict, tag: str) -> Any:
        sent.append(body)
        return NS(transport_error=None, status=200, raw=b"{}", meta={"retries": []})

    body = {"model": "m", "stream": True, "stream_options": {"include_usage": True}, "n": 1}
    assert _stream_comparison(send, body) == ({"made": True, "tool_calls": 0}, [])
    assert sent == [{"model": "m", "stream": False, "n": 1}]
    assert body["stream"] is True  # the streamed request itself is left as it was


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ("tool-choice-none", 'tool_choice "none" but a tool call was streamed'),
        ("named", "named tool_choice 'get_time' but called 'get_weather'"),
    ],
    ids=["none", "another-tool"],
)
def test_a_call_against_the_tool_choice_is_not_compared_with_stream_false(
    scenario: str, message: str
) -> None:
    """R-TOOL-CHOICE without a quirk, but a call (get_weather) was streamed: a request with
    stream false tells nothing more (Q-TOOLCALLS-MISSING-IN-STREAM is a stream without
    the call), and would cost a call."""
    seen: list[dict] = []
    cell = run_answered(scenario, None, seen, stream=lambda body: streamed(CALLED))
    assert [b["stream"] for b in seen] == [True]
    assert "stream_comparison" not in cell.meta
    assert tool_choice_findings(cell) == [(None, "MUST", message)]
    assert cell.verdict == "fails"
