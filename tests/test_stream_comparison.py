"""Q-TOOLCALLS-MISSING-IN-STREAM is defined by a comparison: the same request with stream
false carries tool_calls, the streamed one does not. The runner makes that request when a
forced tool_choice streamed no call (recorded in the cell's cassette, so a replay makes it
too); the analyzer names the quirk only when the comparison showed calls. A lone capture
(`toolcall-conformance analyze`) says the comparison was not made.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import vcr

from conformance.cassettes import vcr_options
from conformance.cli import main
from conformance.providers import provider_from_entry
from conformance.runner import CellRunner
from conformance.scenarios import SCENARIOS
from conformance.server.testing import running_server

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


def run_mocked(scenario: str, plain: dict[str, Any] | None, seen: list[dict]) -> Any:
    """A server that streams no call and answers stream false with ``plain``."""

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        if body.get("stream") is True:
            return httpx.Response(
                200, headers={"content-type": "text/event-stream"}, content=EMPTY_STREAM
            )
        return httpx.Response(200, json=plain)

    provider = provider_from_entry("p", {"base_url": "http://127.0.0.1:9/v1", "model": "m"})
    runner = CellRunner(replay=True, client=httpx.Client(transport=httpx.MockTransport(answer)))
    try:
        return runner.run(provider, SCENARIOS[scenario])
    finally:
        runner.close()


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
