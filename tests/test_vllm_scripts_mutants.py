"""The scripted lane's scripts: what each family's model "emits" for each scenario is exactly
what the committed cassettes sent the vLLM servers (``vllm_xargs``), so the section judges
each cell against the text the parser really read (mutation testing, #29)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.lanes.vllm_families import FAMILIES
from conformance.lanes.vllm_scripts import PLANS, Turn, all_scripts, render, script_args

ROOT = Path(__file__).resolve().parents[1]
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _sent(parser: str) -> dict[str, list[dict[str, Any]]]:
    """scenario -> the vllm_xargs of every request recorded for it (every variant)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((ROOT / "cassettes" / f"vllm-{parser}").rglob("*.yaml")):
        doc = yaml.load(path.read_text("utf-8"), Loader=LOADER)
        for it in doc["interactions"]:
            body = json.loads(it["request"]["body"])
            out.setdefault(path.stem, []).append(body["vllm_xargs"])
    return out


@pytest.mark.parametrize("parser", list(FAMILIES))
def test_every_script_is_what_the_recorded_requests_sent(parser: str) -> None:
    sent = _sent(parser)
    assert set(sent) == set(PLANS)
    scripts = all_scripts(parser)
    assert list(scripts) == list(PLANS)
    for scenario, xargs in sent.items():
        assert all(x == scripts[scenario] for x in xargs), (parser, scenario)
        assert scripts[scenario] == script_args(FAMILIES[parser], scenario)


def test_a_round_trip_script_carries_the_second_turn_and_the_family_marker() -> None:
    for parser, fam in FAMILIES.items():
        scripts = all_scripts(parser)
        for scenario, plan in PLANS.items():
            has_second = {"script_after_tool", "tool_marker"} <= set(scripts[scenario])
            assert has_second == (plan.after_tool is not None), (parser, scenario)
        assert scripts["round-trip"]["tool_marker"] == fam.tool_marker
    assert {s for s, p in PLANS.items() if p.after_tool} == {"id-omission", "round-trip"}


def test_the_scripts_of_a_few_families_spelled_out() -> None:
    hermes = all_scripts("hermes")
    assert hermes["single"] == {
        "script": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
        "</tool_call>"
    }
    assert hermes["round-trip"]["script"].startswith("Let me check both.\n<tool_call>\n")
    assert hermes["round-trip"]["script_after_tool"] == (
        "In Paris it is 15 °C and partly cloudy; in Tokyo it is 09:30."
    )
    assert hermes["unicode-arguments"]["script"].count("Zürich") == 1  # not \u-escaped
    mistral = all_scripts("mistral")
    assert mistral["parallel"]["script"] == (
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
        '[TOOL_CALLS]get_time[ARGS]{"timezone": "Asia/Tokyo"}'
    )
    assert mistral["round-trip"]["script"].startswith("Let me check both.[TOOL_CALLS]")
    assert json.loads(mistral["named"]["script"]) == [
        {"name": "get_time", "arguments": {"timezone": "Europe/Paris"}}
    ]
    pythonic = all_scripts("pythonic")
    assert pythonic["strict"]["script"] == "[get_weather(city='Paris', unit='celsius')]"
    assert pythonic["round-trip"]["script"] == (
        "[get_weather(city='Paris'), get_time(timezone='Asia/Tokyo')]"
    )  # no text before the calls
    assert json.loads(pythonic["named"]["script"]) == {"timezone": "Europe/Paris"}
    assert json.loads(pythonic["required"]["script"]) == [
        {"name": "get_time", "parameters": {"timezone": "UTC"}}
    ]
    assert all_scripts("llama3_json")["parallel"]["script"] == (
        '{"name": "get_weather", "parameters": {"city": "Paris"}}; '
        '{"name": "get_time", "parameters": {"timezone": "Asia/Tokyo"}}'
    )


def test_reasoning_families_think_first_except_where_the_cut_or_a_grammar_decides() -> None:
    kimi, ds, glm = all_scripts("kimi_k2"), all_scripts("deepseek_v3"), all_scripts("glm45")
    thought = "The user asked something a tool answers; I will call it."
    assert kimi["single"]["script"] == (
        f"<think>{thought}</think><|tool_calls_section_begin|><|tool_call_begin|>"
        'functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}'
        "<|tool_call_end|><|tool_calls_section_end|>"
    )
    assert kimi["tool-choice-none"]["script"].startswith(
        "<think>The tools answered; I can reply now.</think>I cannot look"
    )
    assert ds["single"]["script"].startswith(
        f"<think>\n{thought}\n</think>\n\n<｜tool▁calls▁begin｜>"
    )
    # R1 closes an empty think block; under a grammar the calls follow </think> at once
    assert ds["truncated-arguments"]["script"].startswith("<think>\n\n</think>\n\n<｜tool")
    assert ds["required"]["script"].startswith("<think>\n\n</think><｜tool▁calls▁begin｜>")
    assert glm["single"]["script"] == (
        f"<think>{thought}</think>\n<tool_call>get_weather<arg_key>city</arg_key>"
        "<arg_value>Paris</arg_value></tool_call>"
    )
    assert glm["required"]["script"].startswith("<tool_call>get_time")  # no think block
    assert all_scripts("qwen3_coder")["strict"]["script"] == (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call>"
    )


def test_a_family_without_a_renderer_is_refused_by_name() -> None:
    odd = dataclasses.replace(FAMILIES["hermes"], parser="granite")
    with pytest.raises(KeyError, match="no renderer for the granite family"):
        render(odd, PLANS["single"].first)
    # text alone needs no renderer
    assert render(odd, Turn(text="hello", think=False)) == "hello"


def test_a_turn_means_calls_text_and_a_thought_by_default() -> None:
    t = Turn()
    assert (t.calls, t.text, t.think, t.constrained) == ((), "", True, None)
    assert PLANS["single"].after_tool is None and PLANS["single"].notes == ()
