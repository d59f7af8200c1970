"""The client matrix's runner (conformance.client_matrix.run), pinned by what a cell says:
its outcome and detail, the calls on the wire it was judged against, the quirks and whether
the profile's quirk showed, the number of requests, the bytes kept as evidence (cut at the
bound), what a field capture's cell keeps (no content), the cell of a client that sent
nothing, and the matrix run_matrix returns (every client on every stream, in order)."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.client import ToolCallAccumulator
from conformance.client_matrix import run as runner
from conformance.client_matrix.clients import Client
from conformance.client_matrix.harness import Exchange
from conformance.client_matrix.run import WIRE_LIMIT, judge_cell, judge_without_request
from conformance.client_matrix.streams import Stream
from conformance.server.replay import Recorded

ME = Client("me", "pkg", "python", "me.py", "me")
REQ = {"messages": [{"role": "user", "content": "hi"}], "tools": []}


def sse(*chunks: dict[str, Any]) -> bytes:
    events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return events + b"data: [DONE]\n\n"


def tc(i: int, id: str | None = None, name: str | None = None, args: str = "") -> dict[str, Any]:
    fn: dict[str, Any] = {"arguments": args}
    if name is not None:
        fn["name"] = name
    d: dict[str, Any] = {"index": i, "function": fn}
    if id is not None:
        d.update(id=id, type="function")
    return d


def ch(*calls: dict[str, Any], finish: str | None = None, content: str | None = None):
    delta: dict[str, Any] = {"tool_calls": list(calls)} if calls else {}
    if content is not None:
        delta["content"] = content
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


# one call, its arguments in two pieces, with its id
ONE = sse(
    ch(tc(0, "call_1", "get_weather", '{"city": "Par')),
    ch(tc(0, args='is"}')),
    ch(finish="tool_calls"),
)
# the same call whole in one delta, with no id (Q-ID-ABSENT)
NOID = sse(ch(tc(0, None, "get_weather", '{"city": "Paris"}')), ch(finish="tool_calls"))
# no call at all: text
TEXT = sse(ch(content="It is sunny."), ch(finish="stop"))
PARIS = {"id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}
EXPECTED_ONE = [
    {
        "id": "call_1",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
        "raw_arguments": '{"city": "Paris"}',
        "status": "sound",
    }
]


def profile(name: str = "id-absent", quirks: tuple[str, ...] = ("Q-ID-ABSENT",), **kw: Any):
    return Stream(
        f"profile:{name}",
        "profile",
        kw.pop("request", REQ),
        f"p/{name}/v1",
        name,
        scenario="usage",
        profile=name,
        quirks=list(quirks),
        **kw,
    )


def provider(body: bytes, request: dict[str, Any] | None = None, status: int = 200) -> Stream:
    return Stream(
        "vllm:single",
        "provider",
        REQ if request is None else request,
        "r/vllm_single/v1",
        "m",
        column="vllm",
        scenario="single",
        source="cassettes/vllm/single.yaml#0",
        recorded=Recorded(body, status),
    )


def ex(body: bytes, request: bytes | None = None, status: int = 200) -> Exchange:
    sent = json.dumps(dict(REQ, stream=True, model="m")).encode() if request is None else request
    return Exchange(bytearray(sent), status, {"content-type": "text/event-stream"}, bytearray(body))


# ------------------------------------------------------------------ a cell from what was received


def test_a_right_answer_is_ok_with_its_evidence_and_no_bytes_kept() -> None:
    answer = {"calls": [PARIS]}
    cell = judge_cell(ME, profile(), answer, [ex(ONE)])
    assert cell == {
        "client": "me",
        "stream": "profile:id-absent",
        "outcome": "ok",
        "detail": "1 call(s) right",
        "problems": [],
        "expected": EXPECTED_ONE,
        "quirks": ["Q-ARGS-ON-OPENING-DELTA", "Q-ID-FORMAT"],
        # the profile's quirk (Q-ID-ABSENT) is not in these bytes: not elicited
        "elicited": False,
        "calls": [PARIS],
        "requests": 1,
    }


def test_a_wrong_answer_keeps_the_bytes_received() -> None:
    cell = judge_cell(ME, profile(), {"calls": []}, [ex(NOID)])
    assert (cell["outcome"], cell["problems"]) == ("dropped", ["call dropped"])
    assert cell["detail"] == "call dropped: call 0 (get_weather) missing: 0 of 1 calls returned"
    assert cell["elicited"] is True  # Q-ID-ABSENT shows in these bytes
    assert "Q-ID-ABSENT" in cell["quirks"]
    assert cell["expected"] == [dict(EXPECTED_ONE[0], id="")]
    assert cell["wire"] == NOID.decode()
    assert cell["calls"] == [] and cell["requests"] == 1


def test_the_bytes_kept_are_cut_at_the_bound() -> None:
    def padded(n: int) -> bytes:
        return b"data: " + json.dumps(ch(content="x" * n)).encode() + b"\n\n" + NOID

    exact = padded(WIRE_LIMIT - len(padded(0)))
    assert len(exact) == WIRE_LIMIT
    cell = judge_cell(ME, profile(), {"calls": []}, [ex(exact)])
    assert cell["wire"] == exact.decode()
    longer = b": a comment line\n" + exact + b"\n"
    cell = judge_cell(ME, profile(), {"calls": []}, [ex(longer)])
    assert cell["wire"] == longer.decode()[:WIRE_LIMIT] + "\n[…]"
    # not UTF-8: shown with replacement characters, never a crash
    cell = judge_cell(ME, profile(), {"calls": []}, [ex(b"data: \xff\n\n" + NOID)])
    assert cell["wire"].startswith("data: \ufffd\n\n")


def test_after_a_retry_the_last_answer_counts_and_every_request_is_counted() -> None:
    cell = judge_cell(ME, profile(), {"calls": [PARIS]}, [ex(NOID), ex(TEXT), ex(ONE)])
    assert (cell["outcome"], cell["requests"], cell["expected"]) == ("ok", 3, EXPECTED_ONE)
    cell = judge_cell(ME, profile(), {"calls": [PARIS]}, [ex(ONE), ex(TEXT)])
    assert (cell["outcome"], cell["requests"]) == ("wrong", 2)
    assert cell["problems"] == ["extra call"] and cell["expected"] == []


def test_the_request_the_client_sent_decides_whether_a_refusal_is_right() -> None:
    required = json.dumps(dict(REQ, tool_choice="required", stream=True)).encode()
    raised = {"exception": {"type": "RuntimeError", "message": "no call\nmore"}}
    cell = judge_cell(ME, profile(), raised, [ex(TEXT, required)])
    assert (cell["outcome"], cell["detail"]) == (
        "ok",
        "refused: raised RuntimeError: no call (the request required a tool call and the "
        "stream holds none)",
    )
    # a body that is not JSON, or none: no request to read, so nothing made the call required
    for sent in (b"{not json", b""):
        cell = judge_cell(ME, profile(), raised, [ex(TEXT, sent)])
        assert (cell["outcome"], cell["detail"]) == ("crashed", "RuntimeError: no call")
        assert cell["wire"] == TEXT.decode()


def test_a_replayed_stream_is_judged_on_its_recorded_bytes_when_no_request_came() -> None:
    required = dict(REQ, tool_choice="required")
    raised = {"exception": {"type": "ValueError", "message": "x"}}
    cell = judge_cell(ME, provider(TEXT, required), raised, [])
    assert cell["outcome"] == "ok" and cell["detail"].startswith("refused: raised ValueError: x")
    assert cell["requests"] == 0 and "wire" not in cell  # an ok cell keeps no bytes
    assert "elicited" not in cell  # only a reference profile has a quirk to elicit
    cell = judge_cell(ME, provider(ONE), {"calls": []}, [])
    assert (cell["outcome"], cell["expected"], cell["calls"]) == ("dropped", EXPECTED_ONE, [])
    assert cell["wire"] == ONE.decode()
    # the recorded status is the one judged: an HTTP error holds no call to assemble
    cell = judge_cell(ME, provider(b'{"error": {"message": "down"}}', status=503), raised, [])
    assert cell["outcome"] == "ok" and cell["detail"].startswith("raised ValueError: x (the stream")


def test_a_provider_cell_is_judged_on_what_the_client_received_not_on_the_recording() -> None:
    cell = judge_cell(ME, provider(TEXT), {"calls": [PARIS]}, [ex(ONE)])
    assert cell["outcome"] == "ok" and cell["expected"] == EXPECTED_ONE
    assert "elicited" not in cell and "wire" not in cell


def test_a_profile_without_quirks_and_a_live_only_profile() -> None:
    cell = judge_cell(ME, profile("reference", ()), {"calls": [PARIS]}, [ex(ONE)])
    assert cell["elicited"] is True  # a control has nothing to elicit
    stalls = profile("stream-stalls", ("Q-STREAM-STALLS",))
    assert "elicited" not in judge_cell(ME, stalls, {"calls": [PARIS]}, [ex(ONE)])


# ------------------------------------------------------------------ no request reached the endpoint


@pytest.mark.parametrize(
    ("answer", "outcome", "detail"),
    [
        ({"error": "node is not installed"}, "error", "node is not installed"),
        ({"error": "x" * 400, "hung": True}, "error", "x" * 300),
        ({"hung": True, "timeout": 2.5}, "hung", "no answer within 2.5 s, no request sent"),
        ({"hung": True}, "hung", "no answer within None s, no request sent"),
        (
            {"exception": {"type": "KeyError", "message": "  'choices'\nTraceback\n"}},
            "crashed",
            "KeyError: 'choices'",
        ),
        ({"exception": {"type": "E", "message": "m" * 250}}, "crashed", "E: " + "m" * 200),
        ({"exception": {"type": "E", "message": "\n"}}, "crashed", "E: "),
        ({"exception": {"type": "E"}}, "crashed", "E: "),
        ({"exception": {}}, "error", "the client answered without sending any request"),
        ({"calls": []}, "error", "the client answered without sending any request"),
        ({"error": ""}, "error", "the client answered without sending any request"),
    ],
)
def test_a_client_that_sent_nothing(answer: dict[str, Any], outcome: str, detail: str) -> None:
    assert judge_without_request(answer) == (outcome, detail)
    cell = judge_cell(ME, profile(), answer, [])
    assert cell == {
        "client": "me",
        "stream": "profile:id-absent",
        "outcome": outcome,
        "detail": detail,
        "problems": [],
        "calls": answer.get("calls"),
        "requests": 0,
    }


# ------------------------------------------------------------------ field captures

CAPTURE = Stream(
    "capture:groq-1",
    "capture",
    REQ,
    "r/capture_groq-1/v1",
    "capture",
    column="Groq",
    source="https://example.org/c",
    recorded=Recorded(ONE),
)


def test_a_capture_cell_keeps_the_verdict_and_the_kinds_of_wrong_never_the_content() -> None:
    answer = {
        "calls": [
            {"id": "call_1", "name": "get_weather", "arguments": '{"city": "Rome"}'},
            {"id": "x", "name": "other", "arguments": "{bad", "invalid": "not JSON"},
            {"id": "y", "name": "third", "arguments": {"a": 1}, "invalid": ""},
        ]
    }
    cell = judge_cell(ME, CAPTURE, answer, [ex(ONE)])
    assert cell["outcome"] == "wrong"
    assert cell["detail"] == "arguments changed, extra call" == ", ".join(cell["problems"])
    assert cell["calls"] == [
        {"id": None, "name": "get_weather", "arguments": None, "json": True},
        {"id": None, "name": "other", "arguments": None, "json": False, "invalid": "not JSON"},
        {"id": None, "name": "third", "arguments": None, "json": True},
    ]
    assert cell["expected"] == [
        {"id": None, "name": "get_weather", "arguments": None, "status": "sound"}
    ]
    assert cell["evidence"] == "field" and cell["requests"] == 1
    assert "wire" not in cell and "Rome" not in json.dumps(cell) and "Paris" not in json.dumps(cell)


@pytest.mark.parametrize(
    ("answer", "detail"),
    [
        ({"calls": [PARIS]}, "ok"),
        ({"exception": {"type": "TypeError", "message": "Paris: here"}}, "crashed TypeError"),
        ({"hung": True, "timeout": 3}, "hung"),
    ],
)
def test_a_capture_cell_without_problems_says_its_outcome(
    answer: dict[str, Any], detail: str
) -> None:
    cell = judge_cell(ME, CAPTURE, answer, [])
    assert cell["detail"] == detail
    assert cell["evidence"] == "field" and "wire" not in cell


def test_a_capture_cell_of_a_client_that_returned_no_calls() -> None:
    cell = judge_cell(ME, CAPTURE, {"error": "cannot start the adapter: Paris"}, [])
    assert (cell["outcome"], cell["detail"], cell["calls"]) == ("error", "error", None)
    assert cell["expected"] == [
        {"id": None, "name": "get_weather", "arguments": None, "status": "sound"}
    ]
    cell = judge_cell(ME, dict_stream(CAPTURE, recorded=None), {"error": "x"}, [])
    assert (cell["detail"], cell["expected"], cell["calls"]) == ("error", [], None)


def dict_stream(s: Stream, **kw: Any) -> Stream:
    return Stream(**{**s.__dict__, **kw})


# ------------------------------------------------------------------ the whole run


def _assemble(job: dict[str, Any]) -> dict[str, Any]:
    """An in-process client: POST the job's request, assemble what streams back."""
    body = json.dumps(dict(job["request"], model=job["model"], stream=True)).encode()
    with httpx.Client(timeout=job["timeout"]) as http:
        response = http.post(job["base_url"] + "/chat/completions", content=body)
    acc = ToolCallAccumulator()
    for line in response.text.splitlines():
        if line.startswith("data: {"):
            acc.feed(json.loads(line[6:]))
    return {
        "calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in acc.result().calls
        ]
    }


@pytest.fixture()
def tokyo(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Local time nine hours ahead of UTC: a date written in local time shows."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_every_client_on_every_stream_through_the_harness(
    monkeypatch: pytest.MonkeyPatch, tokyo: Any
) -> None:
    seen: dict[str, Any] = {}

    def fake_argv(client: Client, root: Path, python: str, node: str | None) -> list[str] | str:
        seen.setdefault("argv", []).append((client.id, root, python, node))
        return "node is not installed" if client.ecosystem == "npm" else ["python", client.script]

    def fake_run(client: Client, argv: Any, jobs: list[dict[str, Any]]):
        seen.setdefault("jobs", {})[client.id] = jobs
        if isinstance(argv, str):
            return None, {j["job"]: {"error": argv} for j in jobs}
        if client.id == "quiet":  # answers without asking anything
            return "0.1", {
                jobs[0]["job"]: {"hung": True, "timeout": 4.0},
                jobs[1]["job"]: {"exception": {"type": "E", "message": "m"}},
            }
        return "1.2.3", {j["job"]: _assemble(j) for j in jobs}

    monkeypatch.setattr(runner, "adapter_argv", fake_argv)
    monkeypatch.setattr(runner, "run_client", fake_run)
    clients = [
        ME,
        Client("quiet", "q", "python", "q.py", "q"),
        Client("js", "j", "npm", "j.mjs", "j"),
    ]
    streams = [profile("reference", ()), provider(NOID)]
    logged: list[str] = []
    m = runner.run_matrix(
        clients, streams, root=Path("/r"), python="py", node=None, timeout=4.0, log=logged.append
    )
    generated = datetime.strptime(m["generated_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert abs(datetime.now(UTC) - generated) < timedelta(minutes=5)  # UTC, as its Z says
    assert m["suite_version"] == runner.suite_version and m["timeout_seconds"] == 4.0
    assert m["clients"] == [
        {"id": "me", "package": "pkg", "version": "1.2.3", "ecosystem": "python", "label": "me"},
        {"id": "quiet", "package": "q", "version": "0.1", "ecosystem": "python", "label": "q"},
        {"id": "js", "package": "j", "version": "unknown", "ecosystem": "npm", "label": "j"},
    ]
    assert m["streams"] == [s.to_json() for s in streams]
    got = [(c["client"], c["stream"], c["outcome"], c["requests"]) for c in m["cells"]]
    assert got == [
        ("me", "profile:reference", "ok", 1),
        ("me", "vllm:single", "ok", 1),
        ("quiet", "profile:reference", "hung", 0),
        ("quiet", "vllm:single", "crashed", 0),  # the recording says its call was sound
        ("js", "profile:reference", "error", 0),
        ("js", "vllm:single", "error", 0),
    ]
    assert m["cells"][4]["detail"] == "node is not installed"
    assert m["cells"][2]["detail"] == "no answer within 4.0 s, no request sent"
    # the replayed bytes reached the client: its call is the recorded one
    assert m["cells"][1]["expected"] == [dict(EXPECTED_ONE[0], id="")]
    assert m["cells"][1]["calls"] == [dict(PARIS, id="")]
    assert m["cells"][0]["quirks"] == [] and m["cells"][0]["elicited"] is True
    # each job has its own path on the harness, under the stream's path
    jobs = seen["jobs"]["me"]
    assert [j["job"] for j in jobs] == ["me.0", "me.1"]
    assert [re.sub(r"^http://127\.0\.0\.1:\d+", "", j["base_url"]) for j in jobs] == [
        "/j/me.0/p/reference/v1",
        "/j/me.1/r/vllm_single/v1",
    ]
    assert [(j["model"], j["request"], j["timeout"]) for j in jobs] == [
        ("reference", REQ, 4.0),
        ("m", REQ, 4.0),
    ]
    assert sorted(seen["argv"]) == sorted((c.id, Path("/r"), "py", None) for c in clients)
    assert sorted(re.sub(r" in \d{1,2} s$", "", line) for line in logged) == [
        "js: 2 jobs {'error': 2}",
        "me: 2 jobs {'calls': 2}",
        "quiet: 2 jobs {'hung': 1, 'exception': 1}",
    ]
    # by default: no log, a 10 s bound
    m = runner.run_matrix([ME], streams[1:], root=Path("/r"), python="py", node="node")
    assert m["timeout_seconds"] == 10.0 and seen["jobs"]["me"][0]["timeout"] == 10.0
    assert seen["argv"][-1] == ("me", Path("/r"), "py", "node")
    assert [(c["outcome"], c["requests"]) for c in m["cells"]] == [("ok", 1)]


# ------------------------------------------------------------------ what the bytes are read as


def test_sse_sent_as_text_plain_is_read_as_sse_because_the_client_asked_for_a_stream() -> None:
    sent = Exchange(
        bytearray(json.dumps(dict(REQ, stream=True)).encode()),
        200,
        {"content-type": "text/plain"},
        bytearray(NOID),
    )
    cell = judge_cell(ME, profile(), {"calls": []}, [sent])
    assert (cell["outcome"], cell["expected"]) == ("dropped", [dict(EXPECTED_ONE[0], id="")])
    cell = judge_cell(ME, provider_as(NOID, "text/plain"), {"calls": []}, [])
    assert (cell["outcome"], cell["expected"]) == ("dropped", [dict(EXPECTED_ONE[0], id="")])


def test_a_stream_that_opens_with_a_comment_is_sse_by_its_content_type() -> None:
    body = b": keep-alive\n\n" + NOID
    cell = judge_cell(ME, profile(), {"calls": []}, [ex(body)])
    assert (cell["outcome"], cell["expected"]) == ("dropped", [dict(EXPECTED_ONE[0], id="")])
    cell = judge_cell(ME, provider_as(body, "text/event-stream"), {"calls": []}, [])
    assert (cell["outcome"], cell["expected"]) == ("dropped", [dict(EXPECTED_ONE[0], id="")])


def test_an_http_error_status_is_the_stream_reporting_an_error() -> None:
    raised = {"exception": {"type": "APIError", "message": "500"}}
    cell = judge_cell(ME, profile(), raised, [ex(NOID, status=500)])
    assert cell["outcome"] == "ok"
    assert cell["detail"].startswith("raised APIError: 500 (the stream reports: HTTP 500")


def provider_as(body: bytes, content_type: str) -> Stream:
    s = provider(body)
    s.recorded = Recorded(body, 200, content_type)
    return s
