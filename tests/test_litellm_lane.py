"""The LiteLLM and llama-cpp-python lanes' pieces that run without installing anything, and the
providers.yaml features they use: a capability declared with the server's own message, and
the named tool_choice elicitation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conformance.analysis import analyze_bytes
from conformance.lanes import litellm, llama_cpp_python
from conformance.providers import ConfigError, load_providers
from conformance.runner import unsupported_cell
from conformance.scenarios import SCENARIOS, build_request


def test_master_keys_are_fresh_and_shaped_for_litellm() -> None:
    a, b = litellm.new_master_key(), litellm.new_master_key()
    assert re.fullmatch(r"sk-[A-Za-z0-9]{32}", a)
    assert a != b


def test_the_config_names_the_key_variable_and_holds_no_key() -> None:
    text = litellm.config_text()
    assert "master_key: os.environ/LITELLM_MASTER_KEY" in text
    assert "api_base: os.environ/CONFORMANCE_UPSTREAM_BASE_URL" in text
    assert not re.search(r"sk-[A-Za-z0-9]", text)


def test_an_unknown_upstream_is_one_line_and_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert litellm.main(["--upstream", "vllm", "--", "true"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "error: --upstream needs one of: llamacpp, profiles"


def test_the_proxy_pins_what_pypi_has() -> None:
    reqs = set(litellm.PROXY_REQUIREMENTS)
    assert {
        "litellm==1.109.3",
        "litellm-proxy-extras==0.4.110",
        "litellm-enterprise==0.1.83",
    } <= reqs


def test_llama_cpp_python_server_command_is_loopback_and_chatml_function_calling() -> None:
    cmd = llama_cpp_python.server_command(Path("/py"), Path("/m.gguf"), 4321)
    assert cmd[:3] == ["/py", "-m", "llama_cpp.server"]
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--port") + 1] == "4321"
    assert cmd[cmd.index("--chat_format") + 1] == "chatml-function-calling"


def _providers(tmp_path: Path, entry: str) -> dict:
    (tmp_path / "p.yaml").write_text(
        "providers:\n  srv:\n    base_url: http://127.0.0.1:9/v1\n    model: m\n" + entry
    )
    return load_providers(tmp_path / "p.yaml")


def test_a_capability_declared_with_the_servers_message_reads_unsupported(tmp_path: Path) -> None:
    p = _providers(
        tmp_path,
        '    capabilities:\n      stream_options: "ignored by the '
        'server"\n      named_tool_choice: true\n',
    )["srv"]
    cell = unsupported_cell(p, SCENARIOS["usage"])
    assert cell is not None and cell.verdict == "unsupported"
    assert cell.reason == "srv declares no stream options: ignored by the server"
    assert unsupported_cell(p, SCENARIOS["named"]) is None


def test_a_capability_that_is_neither_text_nor_boolean_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="capabilities.stream_options"):
        _providers(tmp_path, "    capabilities: {stream_options: 3}\n")


def test_named_elicitation_names_the_scenarios_tool_unless_the_scenario_chooses(
    tmp_path: Path,
) -> None:
    p = _providers(tmp_path, "    elicitation: {tool_choice: named}\n")["srv"]
    assert build_request(SCENARIOS["single"], p)["tool_choice"] == {
        "type": "function",
        "function": {"name": "get_weather"},
    }
    assert build_request(SCENARIOS["no-arguments"], p)["tool_choice"] == {
        "type": "function",
        "function": {"name": "ping"},
    }
    assert build_request(SCENARIOS["tool-choice-none"], p)["tool_choice"] == "none"
    assert build_request(SCENARIOS["required"], p)["tool_choice"] == "required"


# llama-cpp-python's round-trip rejection: pydantic's 500 lists every message type the
# assistant message failed to match; only the assistant type's entry is about `content`.
def _pydantic_500(assistant_error: str) -> str:
    errors = [
        "{'type': 'literal_error', 'loc': ('body', 'messages', 1, "
        "'ChatCompletionRequestSystemMessage', 'role'), 'msg': \"Input should be 'system'\", "
        "'input': 'assistant', 'ctx': {'expected': \"'system'\"}}",
        assistant_error,
        "{'type': 'missing', 'loc': ('body', 'messages', 1, "
        "'ChatCompletionRequestToolMessage', 'tool_call_id'), 'msg': 'Field required'}",
    ]
    message = f"{len(errors)} validation errors:\n  " + "\n  ".join(errors)
    return json.dumps(
        {
            "error": {
                "message": message,
                "type": "internal_server_error",
                "param": None,
                "code": None,
            }
        }
    )


def _roundtrip_quirks(body: str) -> list[str | None]:
    import streams as S

    r = analyze_bytes(
        body.encode(),
        request=S.ROUNDTRIP_REQUEST,
        status=500,
        headers={"content-type": "application/json"},
    )
    return [f.quirk for f in r.findings if f.rule == "R-ROUNDTRIP-ACCEPTED"]


def test_pydantics_content_none_rejection_is_content_null_rejected() -> None:
    body = _pydantic_500(
        "{'type': 'string_type', 'loc': ('body', 'messages', 1, "
        "'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a "
        "valid string', 'input': None}"
    )
    assert _roundtrip_quirks(body) == ["Q-RT-CONTENT-NULL-REJECTED"]


def test_another_pydantic_rejection_is_not_content_null() -> None:
    body = _pydantic_500(
        "{'type': 'string_type', 'loc': ('body', 'messages', 1, "
        "'ChatCompletionRequestAssistantMessage', 'tool_calls', 0, 'id'), 'msg': 'Input "
        "should be a valid string', 'input': 7}"
    )
    assert _roundtrip_quirks(body) == [None]


def _one_call(arguments: str, finish: str) -> str:
    first = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_time", "arguments": arguments},
                        }
                    ],
                },
                "finish_reason": None,
            }
        ]
    }
    last = {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    return "".join(f"data: {json.dumps(c)}\n\n" for c in (first, last)) + "data: [DONE]\n\n"


REQUEST = {
    "model": "m",
    "stream": True,
    "max_tokens": 256,
    "messages": [{"role": "user", "content": "time?"}],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "get_time",
                "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}}},
            },
        }
    ],
}


def test_a_cut_prefix_under_max_tokens_must_end_with_length() -> None:
    r = analyze_bytes(_one_call('{"timezone": "Asia/Tok', "tool_calls").encode(), request=REQUEST)
    hits = [f for f in r.findings if f.rule == "R-LENGTH-VISIBLE"]
    assert [f.quirk for f in hits] == ["Q-ARGS-TRUNCATED"]


def test_invalid_json_that_no_cut_explains_is_not_a_hidden_cut() -> None:
    # llama-cpp-python's named call: a raw newline inside a string, closed by the grammar.
    r = analyze_bytes(
        _one_call('{ "timezone": ",.0f, UTC },\n"}', "tool_calls").encode(), request=REQUEST
    )
    assert not [f for f in r.findings if f.rule == "R-LENGTH-VISIBLE"]
    assert "Q-ARGS-INVALID-JSON" in r.quirks
