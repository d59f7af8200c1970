"""conformance.runner judged by mutmut: a cell's findings and its not-elicited note, for
calls written here by hand (the analyzer's reading is not the expected value)."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

from conformance.client import ToolCall
from conformance.runner import check_expectations
from conformance.scenarios import SCENARIOS


def call(name: str, arguments: str, *, valid: bool = True, index: int = 0) -> ToolCall:
    return ToolCall(index, f"call_{index}", "function", name, arguments, arguments, valid=valid)


def expectations(scenario: str, *calls: ToolCall) -> tuple[list[tuple[Any, ...]], str | None]:
    r = NS(turn=NS(calls=list(calls)), quirks=[])
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


def test_without_the_schema_expectation_nothing_is_validated() -> None:
    findings, _ = expectations("single", call("get_weather", '{"city": 3, "zzz": true}'))
    assert findings == []
