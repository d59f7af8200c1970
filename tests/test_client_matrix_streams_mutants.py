"""The streams of the client matrix (conformance.client_matrix.streams), pinned by what a
client is sent and what the report names: each stream's id, path, model, request (the last
user turn, the tools and the options kept), the bytes a replay serves (status, content type,
body) and which files are skipped, with what said on stderr."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.client_matrix.streams import (
    SEED_QUIRKS,
    Stream,
    capture_streams,
    profile_streams,
    provider_streams,
)
from conformance.server.profiles import PROFILES
from conformance.server.replay import Recorded

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
SSE = b'data: {"choices":[]}\n\ndata: [DONE]\n\n'


# ------------------------------------------------------------------ reference profiles


def test_one_live_stream_per_reference_profile_in_the_catalogue_order() -> None:
    streams = profile_streams()
    assert [s.id for s in streams] == [f"profile:{name}" for name in PROFILES]
    for s in streams:
        name = s.id[len("profile:") :]
        assert (s.kind, s.path, s.model, s.profile) == ("profile", f"p/{name}/v1", name, name)
        assert s.quirks == sorted(PROFILES[name].quirks)
        assert (s.column, s.source, s.recorded) == (None, None, None)
        assert [m["role"] for m in s.request["messages"]] == ["user"]
        assert "stream" not in s.request and "model" not in s.request
    # every seed quirk has its reference profile (the report's seed columns)
    quirks = {q for s in streams for q in s.quirks}
    assert set(SEED_QUIRKS) <= quirks


def test_a_profile_stream_asks_with_the_scenario_that_shows_its_quirk() -> None:
    by_id = {s.id: s for s in profile_streams()}
    zero = by_id["profile:index-all-zero"]
    assert zero.scenario == "parallel"
    assert zero.request["messages"] == [
        {
            "role": "user",
            "content": "Answer both, calling the tools in parallel: what is the weather in "
            "Paris, and what time is it in Tokyo?",
        }
    ]
    assert [t["function"]["name"] for t in zero.request["tools"]] == ["get_weather", "get_time"]
    assert zero.request["parallel_tool_calls"] is True
    assert zero.to_json() == {
        "id": "profile:index-all-zero",
        "kind": "profile",
        "scenario": "parallel",
        "profile": "index-all-zero",
        "quirks": ["Q-INDEX-ALL-ZERO"],
    }
    named = by_id["profile:finish-stop-named-toolchoice"]
    assert named.request["tool_choice"] == {"type": "function", "function": {"name": "get_time"}}
    ref = by_id["profile:reference"]
    assert ref.quirks == [] and ref.scenario == "usage"
    assert ref.to_json() == {
        "id": "profile:reference",
        "kind": "profile",
        "scenario": "usage",
        "profile": "reference",
    }
    two = by_id["profile:toolcall-held-until-finish"].quirks
    assert two == ["Q-ARGS-NOT-PROGRESSIVE", "Q-TOOLCALL-HELD-UNTIL-FINISH"]


# ------------------------------------------------------------------ recorded cassettes


def cassette(path: Path, *interactions: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"interactions": list(interactions), "version": 1}))
    return path


def interaction(
    body: Any, raw: bytes = SSE, status: int | None = 200, headers: dict[str, Any] | None = None
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "body": {"string": raw.decode()},
        "headers": {"Content-Type": ["text/event-stream"]} if headers is None else headers,
    }
    if status is not None:
        response["status"] = {"code": status, "message": "OK"}
    return {
        "request": {
            "method": "POST",
            "uri": "https://x/v1/chat/completions",
            "headers": {},
            "body": body if isinstance(body, str) else json.dumps(body),
        },
        "response": response,
    }


FULL_BODY = {
    "model": "qwen-7b",
    "stream": True,
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "last"},
    ],
    "tools": TOOLS,
    "tool_choice": "required",
    "parallel_tool_calls": False,
    "max_tokens": 64,
    "temperature": 0,
    "stream_options": {"include_usage": True},
}


def test_a_cassette_becomes_a_replay_of_its_first_interaction(tmp_path: Path) -> None:
    second = dict(FULL_BODY, model="other")
    cassette(
        tmp_path / "vllm-x" / "p  q.yaml",
        interaction(FULL_BODY, status=201, headers={"content-type": ["text/plain; x=1"]}),
        interaction(second, raw=b"data: second\n\n"),
    )
    (s,) = provider_streams(tmp_path)
    assert (s.id, s.kind, s.path, s.model) == (
        "vllm-x:p  q",
        "provider",
        "r/vllm-x_p_q/v1",
        "qwen-7b",
    )
    assert (s.column, s.scenario, s.profile, s.quirks) == ("vllm-x", "p  q", None, [])
    assert s.source == f"{(tmp_path / 'vllm-x' / 'p  q.yaml').as_posix()}#0"
    # the last user turn, the tools and the options a client passes on; nothing else
    assert s.request == {
        "messages": [{"role": "user", "content": "last"}],
        "tools": TOOLS,
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "max_tokens": 64,
    }
    assert s.recorded == Recorded(SSE, 201, "text/plain; x=1")
    assert s.to_json() == {
        "id": "vllm-x:p  q",
        "kind": "provider",
        "column": "vllm-x",
        "scenario": "p  q",
        "source": s.source,
    }


def test_what_a_cassette_leaves_out_gets_the_defaults(tmp_path: Path) -> None:
    body = {"stream": True, "messages": [{"role": "system", "content": "x"}]}
    cassette(
        tmp_path / "llamacpp" / "bare.yaml", interaction(body, raw=b"", status=None, headers={})
    )
    (s,) = provider_streams(tmp_path)
    assert s.model == "llamacpp"  # no model recorded: the column's name
    assert s.request == {"messages": [{"role": "user", "content": "Hello"}], "tools": []}
    assert s.recorded == Recorded(b"", 200, "text/event-stream")


def test_only_streamed_cassettes_of_provider_columns_are_replayed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = interaction(FULL_BODY)
    cassette(tmp_path / "_profiles" / "a.yaml", ok)  # the profiles' own recordings
    cassette(tmp_path / "b" / "streamed.yaml", ok)
    cassette(tmp_path / "b" / "not-streamed.yaml", interaction(dict(FULL_BODY, stream=False)))
    cassette(tmp_path / "b" / "no-stream-key.yaml", interaction({"messages": []}))
    cassette(tmp_path / "b" / "text-body.yaml", interaction("stream=true"))
    cassette(tmp_path / "b" / "empty.yaml")  # no interaction
    (tmp_path / "b" / "plain.yaml").write_text("- just\n- a list\n")  # not a cassette
    (tmp_path / "b" / "notes.txt").write_text("not a cassette either")
    cassette(tmp_path / "a" / "z.yaml", ok)
    cassette(tmp_path / "a" / "m.yaml", ok)
    (tmp_path / "c.yaml").write_text("a file beside the columns")
    streams = provider_streams(tmp_path)
    assert [s.id for s in streams] == ["a:m", "a:z", "b:streamed"]
    assert capsys.readouterr().err == ""  # files that are not cassettes are skipped quietly


def test_a_refused_yaml_file_is_skipped_and_named_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "col" / "a-bad.yaml"
    bad.parent.mkdir()
    bad.write_text("interactions: !!python/object/apply:os.system ['true']\n")
    cassette(tmp_path / "col" / "b-good.yaml", interaction(FULL_BODY))
    assert [s.id for s in provider_streams(tmp_path)] == ["col:b-good"]
    err = capsys.readouterr().err
    assert err.startswith("client matrix: skipped ") and str(bad) in err
    assert err.count("\n") == 1


# ------------------------------------------------------------------ field captures

SOURCES = """\
# Field captures

| file | provider | model | real or mock | source | chunks |
|---|---|---|---|---|---|
| `a-one.jsonl` | Groq | `m` | real | [repo](https://example.org/x?y=1) more | 3 |
| `b-two.jsonl` | Mistral | `m` | real | no link here | 2 |
| `c-short.jsonl` | Short | row |
| c-plain.jsonl | Plain | `m` | real | [r](https://example.org/plain) | 1 |
| `e-four.jsonl` | Four | `m` | [r](http://example.org/four) |
"""


def chunk(*calls: Any, choices: Any = None) -> str:
    if choices is None:
        choices = [{"index": 0, "delta": {"tool_calls": list(calls)}}]
    return json.dumps({"choices": choices})


def call(name: Any) -> dict[str, Any]:
    return {"index": 0, "function": {"name": name, "arguments": ""}}


def test_a_capture_is_replayed_as_sse_with_its_tools_named_from_its_calls(tmp_path: Path) -> None:
    (tmp_path / "SOURCES.md").write_text(SOURCES, encoding="utf-8")
    lines = [
        chunk(call("get_weather")),
        "  ",
        "not json",
        "  " + chunk(call("get_time"), call("get_weather")) + "  ",
        chunk(call(""), call(None), call(7), {"function": None}, None, {"index": 1}),
        chunk(choices=[None, {"delta": None}, {"delta": {"tool_calls": None}}]),
        json.dumps({"choices": None}),
        json.dumps([1, 2]),
        chunk(call("ping")),
    ]
    (tmp_path / "a-one.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (s,) = capture_streams(tmp_path)
    assert (s.id, s.kind, s.path, s.model) == (
        "capture:a-one",
        "capture",
        "r/capture_a-one/v1",
        "capture",
    )
    assert (s.column, s.source, s.scenario, s.profile) == (
        "Groq",
        "https://example.org/x?y=1",
        None,
        None,
    )
    kept = [ln.strip() for ln in lines if ln.strip()]
    body = "".join(f"data: {ln}\n\n" for ln in kept) + "data: [DONE]\n\n"
    assert s.recorded == Recorded(body.encode(), 200, "text/event-stream")
    assert s.request == {
        "messages": [{"role": "user", "content": "Use the tools."}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": n,
                    "description": n,
                    "parameters": {"type": "object", "properties": {}},
                },
            }
            for n in ("get_weather", "get_time", "ping")
        ],
    }
    assert s.to_json() == {
        "id": "capture:a-one",
        "kind": "capture",
        "column": "Groq",
        "source": "https://example.org/x?y=1",
    }


def test_capture_labels_and_sources_come_from_sources_md_or_the_file_name(tmp_path: Path) -> None:
    (tmp_path / "SOURCES.md").write_text(SOURCES, encoding="utf-8")
    for name in ("b-two", "c-short", "c-plain", "d-unlisted", "e-four"):
        (tmp_path / f"{name}.jsonl").write_text(chunk(call("f")) + "\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("not a capture")
    got = [(s.id, s.column, s.source) for s in capture_streams(tmp_path)]
    assert got == [
        ("capture:b-two", "Mistral", "b-two.jsonl"),  # listed without a link
        ("capture:c-plain", "c", "c-plain.jsonl"),  # its file cell is not `quoted`
        ("capture:c-short", "c", "c-short.jsonl"),  # a row of too few cells
        ("capture:d-unlisted", "d", "d-unlisted.jsonl"),
        ("capture:e-four", "Four", "http://example.org/four"),  # four columns are enough
    ]


def test_captures_and_their_sources_are_read_as_utf_8_whatever_the_locale(
    tmp_path: Path, ascii_locale: Any
) -> None:
    (tmp_path / "SOURCES.md").write_text(
        "| `X-grok.jsonl` | xAI → Grok | `m` | real | [r](https://example.org/é) | 1 |\n",
        encoding="utf-8",
    )
    line = json.dumps({"choices": [{"delta": {"content": "café"}}]}, ensure_ascii=False)
    (tmp_path / "X-grok.jsonl").write_text(line + "\n" + chunk(call("météo")), encoding="utf-8")
    (s,) = capture_streams(tmp_path)
    assert (s.id, s.path, s.column, s.source) == (
        "capture:X-grok",
        "r/capture_X-grok/v1",
        "xAI → Grok",
        "https://example.org/é",
    )
    assert [t["function"]["name"] for t in s.request["tools"]] == ["météo"]
    assert s.recorded is not None and "café".encode() in s.recorded.body


def test_captures_without_sources_md_are_named_by_their_file(tmp_path: Path) -> None:
    (tmp_path / "x y-1.jsonl").write_text("\n" + chunk(call("f")), encoding="utf-8")
    (s,) = capture_streams(tmp_path)
    assert (s.id, s.path, s.column, s.source) == (
        "capture:x y-1",
        "r/capture_x_y-1/v1",
        "x y",
        "x y-1.jsonl",
    )
    assert s.recorded is not None
    assert s.recorded.body == f"data: {chunk(call('f'))}\n\ndata: [DONE]\n\n".encode()
    assert capture_streams(tmp_path / "nothing-here") == []


def test_a_stream_says_only_what_it_has() -> None:
    s = Stream("x:y", "provider", {}, "r/x_y/v1", "m", column="x", quirks=["Q-A"])
    assert s.to_json() == {"id": "x:y", "kind": "provider", "column": "x", "quirks": ["Q-A"]}


def test_a_scripted_parser_column_is_its_own_kind(tmp_path: Path) -> None:
    # vLLM's parser lane: a real server on a model output we scripted. Its streams must never
    # be counted or shown as a provider's; a column that only starts with "vllm" still is one.
    ok = interaction(FULL_BODY)
    cassette(tmp_path / "vllm-hermes" / "single.yaml", ok)
    cassette(tmp_path / "vllm" / "single.yaml", ok)
    cassette(tmp_path / "vllm-hermesx" / "single.yaml", ok)
    kinds = {s.id: s.kind for s in provider_streams(tmp_path)}
    assert kinds == {
        "vllm-hermes:single": "scripted",
        "vllm:single": "provider",
        "vllm-hermesx:single": "provider",
    }
