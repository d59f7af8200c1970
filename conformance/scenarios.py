"""Scenarios: a request shape plus what it should produce, as data.

Each scenario is a case with an id, the request it sends and its expectation; the
provider's elicitation (system prompt, few-shot turns, assistant prefill, max_tokens)
is layered on top by ``build_request`` so a tiny self-hosted model can be coaxed
into real tool calls without changing what is judged.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

# Every request carries a max_tokens (``--max-tokens`` changes it): a few hundred tokens
# hold any scenario's calls, and a small local model that would generate for minutes stops.
DEFAULT_MAX_TOKENS = 256


def _tool(
    name: str,
    description: str,
    props: dict[str, Any] | None = None,
    required: list[str] | None = None,
) -> dict[str, Any]:
    params: dict[str, Any] = {"type": "object", "properties": props or {}}
    if required:
        params["required"] = required
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": params},
    }


GET_WEATHER = _tool(
    "get_weather",
    "Current weather for a city.",
    {"city": {"type": "string", "description": "City name"}},
    ["city"],
)
GET_TIME = _tool(
    "get_time",
    "Current local time in a time zone.",
    {"timezone": {"type": "string", "description": "IANA time zone, e.g. Asia/Tokyo"}},
    ["timezone"],
)
PING = _tool("ping", "Check that the server is alive. Takes no arguments.")
GET_WEATHER_STRICT = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "strict": True,
        "parameters": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
        },
    },
}
WRITE_NOTE = _tool(
    "write_note",
    "Save a note with a title and a long body.",
    {"title": {"type": "string"}, "body": {"type": "string"}},
    ["title", "body"],
)


@dataclass(frozen=True)
class Expect:
    min_calls: int = 0
    names: tuple[str, ...] = ()  # tool names that must appear among the calls
    finish: tuple[str, ...] = ()  # acceptable final finish_reason values
    non_ascii: bool = False  # a string argument must keep non-ASCII text
    usage: bool = False  # a usage object must arrive
    cut: bool = False  # arguments must be cut with finish_reason "length"
    schema: bool = False  # arguments must validate against the tool's parameters


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    description: str
    user: str
    tools: tuple[dict[str, Any], ...] = (GET_WEATHER, GET_TIME)
    params: dict[str, Any] = field(default_factory=dict)
    needs: tuple[str, ...] = ()  # provider capabilities required to run it
    expect: Expect = Expect()
    roundtrip: bool = False  # send the assembled calls and one result per call back
    keep_ids: bool = False  # id-omission: ids travel back byte for byte, "" included
    # The run's default max_tokens times this: a scenario that asks for long arguments
    # needs more room than one short call (a `max_tokens` in params wins over both).
    token_scale: float = 1.0

    @property
    def test_name(self) -> str:
        return "test_" + self.id.replace("-", "_")


SCENARIOS: dict[str, Scenario] = {
    s.id: s
    for s in [
        Scenario(
            "single",
            "One tool call",
            "One question that needs one tool.",
            "What is the weather in Paris right now? Use the tool.",
            expect=Expect(min_calls=1, names=("get_weather",), finish=("tool_calls",)),
        ),
        Scenario(
            "parallel",
            "Parallel calls to different tools",
            "Two independent questions: two or three calls in one turn, distinct indices.",
            "Answer both, calling the tools in parallel: what is the weather in Paris, and what "
            "time is it in Tokyo?",
            params={"parallel_tool_calls": True},
            needs=("parallel_calls",),
            expect=Expect(min_calls=2, names=("get_weather", "get_time"), finish=("tool_calls",)),
        ),
        Scenario(
            "interleaved",
            "Parallel calls with long arguments",
            "Two calls with long arguments, so fragments of both may alternate; the rules "
            "judge whatever order arrives.",
            "Save two notes in parallel. Note 1 titled 'Groceries' whose body lists at least "
            "twenty items, and note 2 titled 'Packing' whose body lists at least twenty items.",
            tools=(WRITE_NOTE,),
            params={"parallel_tool_calls": True},
            needs=("parallel_calls",),
            token_scale=4,
            expect=Expect(min_calls=2, names=("write_note",), finish=("tool_calls",)),
        ),
        Scenario(
            "truncated-arguments",
            "Arguments cut by max_tokens",
            'max_tokens cuts the call: finish_reason "length" must be visible and a client '
            "must not be led to execute a parsable prefix.",
            "Save a note titled 'Essay' whose body is a 500-word essay about rivers.",
            tools=(WRITE_NOTE,),
            params={"max_tokens": 24},
            expect=Expect(cut=True, finish=("length",)),
        ),
        Scenario(
            "id-omission",
            "Ids travel back unchanged",
            "Empty or missing ids are detected on every scenario; here the id is carried "
            'back byte for byte ("" included) in the assistant message and the tool '
            "result, and the provider must accept it.",
            "What is the weather in Paris right now? Use the tool.",
            roundtrip=True,
            keep_ids=True,
            expect=Expect(min_calls=1, names=("get_weather",)),
        ),
        Scenario(
            "round-trip",
            "Tool results sent back",
            "The assembled assistant message and one tool result per call go back; the "
            "provider must accept them and answer. A turn whose content was longer than "
            "the analysis keeps (1 Mi characters) is not sent: error.",
            "Answer both, calling the tools: what is the weather in Paris, and what time is "
            "it in Tokyo?",
            roundtrip=True,
            expect=Expect(min_calls=1),
        ),
        Scenario(
            "tool-choice-none",
            "tool_choice none",
            "No tool call may appear.",
            "What is the weather in Paris right now?",
            params={"tool_choice": "none"},
            expect=Expect(),
        ),  # judged by R-TOOL-CHOICE from the request
        Scenario(
            "required",
            "tool_choice required",
            "At least one call must appear.",
            "Hello! How are you today?",
            params={"tool_choice": "required"},
            needs=("tool_choice_required",),
            expect=Expect(min_calls=1),
        ),
        Scenario(
            "named",
            "Named tool_choice",
            "Exactly the named tool is called.",
            "What is the weather in Paris right now?",
            params={"tool_choice": {"type": "function", "function": {"name": "get_time"}}},
            needs=("named_tool_choice",),
            expect=Expect(min_calls=1, names=("get_time",), finish=("tool_calls", "stop")),
        ),
        Scenario(
            "no-arguments",
            "A tool without parameters",
            'A parameterless tool: the arguments must still be valid JSON ("{}").',
            "Check whether the server is alive using the ping tool.",
            tools=(PING, GET_WEATHER),
            expect=Expect(min_calls=1, names=("ping",), finish=("tool_calls",)),
        ),
        Scenario(
            "unicode-arguments",
            "Non-ASCII arguments",
            "Arguments with non-ASCII text must arrive intact across fragments.",
            "What is the weather in Zürich? Use the tool with the city name exactly as "
            "written: Zürich.",
            expect=Expect(
                min_calls=1, names=("get_weather",), non_ascii=True, finish=("tool_calls",)
            ),
        ),
        Scenario(
            "parallel-disabled",
            "parallel_tool_calls false",
            "At most one call may appear.",
            "Answer both: what is the weather in Paris, and what time is it in Tokyo?",
            params={"parallel_tool_calls": False},
            needs=("parallel_calls",),
            expect=Expect(min_calls=1),
        ),  # at most one: R-PARALLEL-DISABLED
        Scenario(
            "long-arguments",
            "One call with long arguments",
            "Hundreds of argument fragments for one call: every fragment must be kept, in order.",
            "Save a note titled 'Poem' whose body is a poem of at least twenty lines about "
            "the sea.",
            tools=(WRITE_NOTE,),
            token_scale=4,
            expect=Expect(min_calls=1, names=("write_note",), finish=("tool_calls",)),
        ),
        Scenario(
            "strict",
            "strict function schema",
            "`strict: true`: the arguments must validate against the tool's JSON Schema "
            "(catalogue Q-STRICT-IGNORED).",
            "What is the weather in Paris, in celsius? Use the tool.",
            tools=(GET_WEATHER_STRICT,),
            needs=("strict",),
            expect=Expect(min_calls=1, names=("get_weather",), finish=("tool_calls",), schema=True),
        ),
        Scenario(
            "usage",
            "stream_options.include_usage",
            "A usage object must arrive (OpenAI: a final chunk with empty choices).",
            "What is the weather in Paris right now? Use the tool.",
            params={"stream_options": {"include_usage": True}},
            needs=("stream_options",),
            expect=Expect(min_calls=1, usage=True),
        ),
    ]
}


def build_request(scenario: Scenario, provider: Any, *, stream: bool = True) -> dict[str, Any]:
    """The request body for one scenario on one provider (no secrets, ever)."""
    el = provider.elicitation
    messages: list[dict[str, Any]] = []
    if el.get("system_prompt"):
        messages.append({"role": "system", "content": el["system_prompt"]})
    messages.extend(copy.deepcopy(el.get("few_shot") or []))
    messages.append({"role": "user", "content": scenario.user})
    if el.get("prefill") and scenario.params.get("tool_choice") != "none":
        messages.append({"role": "assistant", "content": el["prefill"]})
    body: dict[str, Any] = {
        "model": provider.model,
        "messages": messages,
        "tools": copy.deepcopy(list(scenario.tools)),
        "stream": stream,
    }
    if "max_tokens" not in scenario.params:
        # The provider's own elicitation.max_tokens, else the run's default (``--max-tokens``,
        # set by the suite as ``default_max_tokens``) scaled for the scenario: a request
        # never leaves without a bound, so a small model cannot run away.
        if el.get("max_tokens"):
            body["max_tokens"] = el["max_tokens"]
        elif el.get("default_max_tokens"):
            body["max_tokens"] = max(1, round(el["default_max_tokens"] * scenario.token_scale))
    body.update(copy.deepcopy(provider.extra_body))
    body.update(copy.deepcopy(el.get("extra_body") or {}))
    body.update(copy.deepcopy(provider.scenario_body(scenario.id)))  # a scripted column's script
    if el.get("tool_choice") == "named" and "tool_choice" not in scenario.params:
        # a server that streams calls only for a named tool_choice: name the scenario's tool
        name = (scenario.expect.names or [t["function"]["name"] for t in scenario.tools])[0]
        body["tool_choice"] = {"type": "function", "function": {"name": name}}
    body.update(copy.deepcopy(scenario.params))
    return body


def tool_result_for(name: str, arguments: str) -> str:
    """A deterministic, small tool result for the round trip."""
    try:
        args = json.loads(arguments)
    except ValueError:
        args = {}
    if name == "get_weather":
        return json.dumps(
            {"city": args.get("city", "?"), "temperature_c": 15, "sky": "partly cloudy"},
            ensure_ascii=False,
        )
    if name == "get_time":
        return json.dumps({"timezone": args.get("timezone", "?"), "time": "09:30"})
    return json.dumps({"ok": True})


def elicitation_options(
    *,
    system_prompt: str | None = None,
    prefill: str | None = None,
    few_shot: str | None = None,
    extra_body: str | None = None,
    named_tool_choice: bool = False,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """The ``elicitation`` block of a providers.yaml entry, from command-line options
    (``--few-shot`` is a JSON file of messages, ``--extra-body`` a JSON object). A bad
    value raises ValueError with one line naming the option and the fix."""
    out: dict[str, Any] = {}
    if system_prompt:
        out["system_prompt"] = system_prompt
    if prefill:
        out["prefill"] = prefill
    if few_shot:
        try:
            turns = json.loads(open(few_shot, encoding="utf-8").read())  # noqa: SIM115
        except OSError as e:
            raise ValueError(f"--few-shot {few_shot}: cannot be read ({e.strerror})") from None
        except ValueError as e:
            raise ValueError(f"--few-shot {few_shot}: not JSON ({e})") from None
        if not isinstance(turns, list) or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) for m in turns
        ):
            raise ValueError(
                f"--few-shot {few_shot}: expected a JSON array of messages, "
                'each an object with a "role"'
            )
        out["few_shot"] = turns
    if extra_body:
        try:
            body = json.loads(extra_body)
        except ValueError as e:
            raise ValueError(
                f"--extra-body: not JSON ({e}); give an object such as '{{\"temperature\": 0}}'"
            ) from None
        if not isinstance(body, dict):
            raise ValueError("--extra-body: expected a JSON object such as '{\"temperature\": 0}'")
        out["extra_body"] = body
    if named_tool_choice:
        out["tool_choice"] = "named"
    if max_tokens is not None:
        if max_tokens < 1:
            raise ValueError("--max-tokens must be at least 1")
        out["default_max_tokens"] = max_tokens
    return out


def add_elicitation_options(add: Any) -> None:
    """The options of a providers.yaml ``elicitation`` block, for ``--base-url``: ``add``
    is argparse's ``add_argument`` or pytest's ``addoption`` (same names, same meaning)."""
    add(
        "--max-tokens",
        type=int,
        default=DEFAULT_MAX_TOKENS,
        metavar="N",
        help="max_tokens of every request (scenarios with long arguments get 4x; "
        "truncated-arguments keeps its own 24; a providers.yaml entry's "
        "elicitation.max_tokens wins)",
    )
    add(
        "--system-prompt",
        default=None,
        metavar="TEXT",
        help="a system message before the scenario's user message",
    )
    add(
        "--few-shot",
        default=None,
        metavar="FILE",
        help="a JSON array of messages sent before the user message (examples of tool use)",
    )
    add(
        "--prefill",
        default=None,
        metavar="TEXT",
        help="an assistant message after the user message (e.g. '<tool_call>\\n')",
    )
    add(
        "--extra-body",
        default=None,
        metavar="JSON",
        help="a JSON object merged into every request (e.g. '{\"temperature\": 0}')",
    )
    add(
        "--named-tool-choice",
        action="store_true",
        default=False,
        help="name the scenario's tool in tool_choice unless the scenario sets one (for "
        "servers that stream calls only then)",
    )
