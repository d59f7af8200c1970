"""What a model of each family emits for each scenario: the scripts of the scripted lane.

A scenario's *turn* is what the model means (text, reasoning, calls); a family's renderer
writes it in that family's documented output format (the markup its vLLM tool parser reads).
The request is the scenario's, unchanged: the script only replaces the model.

Two cases follow vLLM's own behaviour rather than the family's markup:

* ``tool_choice: "required"`` and a named ``tool_choice``: vLLM 0.32 constrains these with a
  grammar in the family's own call format (a structural tag), so the script is the family's
  markup there too, written to agree with that grammar; the Mistral parser with a tokenizer
  that is not mistral_common's constrains them to a bare JSON array of ``{"name",
  "arguments"}`` instead (``Family.constrained_format``), and the script is that array.
* ``parallel-disabled``: the model emits both calls (a model does not see
  ``parallel_tool_calls``); vLLM's grammar then allows only the end after the first call, and
  the scripted processor ends there as a model under that grammar would (the cell shows
  what reaches the client).

Reasoning families think first (``<think>…</think>``), except where the cut of
``max_tokens`` must land in the arguments and where a grammar constrains the output (an R1
model closes an empty think block there). Families whose call is the whole message (Llama 3
JSON, pythonic) write no text before their calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from conformance.lanes.vllm_families import FAMILIES, Family

Call = tuple[str, dict[str, Any]]

GROCERIES = ", ".join(
    [
        "apples",
        "bread",
        "milk",
        "eggs",
        "cheese",
        "rice",
        "beans",
        "onions",
        "garlic",
        "tea",
        "coffee",
        "butter",
        "salt",
        "pepper",
        "lemons",
        "carrots",
        "potatoes",
        "tomatoes",
        "pasta",
        "honey",
        "oats",
    ]
)
PACKING = ", ".join(
    [
        "shirts",
        "socks",
        "shoes",
        "charger",
        "passport",
        "tickets",
        "toothbrush",
        "jacket",
        "hat",
        "gloves",
        "scarf",
        "book",
        "camera",
        "adapter",
        "umbrella",
        "towel",
        "sunscreen",
        "keys",
        "wallet",
        "map",
        "snacks",
    ]
)
POEM = "\n".join(
    [
        "The sea is grey beneath the morning sky,",
        "its waves roll in and slowly pass me by.",
        "The gulls are calling over rock and sand,",
        "the tide draws lines of silver on the land.",
        "A boat goes out beyond the harbour wall,",
        "and far away I hear the sailors call.",
        "The wind is cold, the water deep and wide,",
        "the sea keeps secrets in its restless tide.",
        "At noon the light is bright upon the foam,",
        "and every wave is travelling back home.",
        "The shells are white, the pebbles smooth and round,",
        "the sea is singing with a quiet sound.",
        "By evening clouds are gathering in the west,",
        "the waves grow calm, the sea prepares to rest.",
        "The moon comes up and paints a silver road,",
        "and every star is shining as it glowed.",
        "I walk along the shore and watch the night,",
        "the sea is dark, the lighthouse burning bright.",
        "And when I sleep I hear the water still,",
        "the sea is calling, and it always will.",
    ]
)
ESSAY = (
    "Rivers are the veins of the land. They begin as small streams in the mountains, "
    "gather water from rain and snow, and carry it across plains and valleys to the sea. "
    "Along the way they shape the land, feed forests and fields, and give towns a place "
    "to grow. "
) * 6


@dataclass(frozen=True)
class Turn:
    """What the model means to say in one turn."""

    calls: tuple[Call, ...] = ()
    text: str = ""  # content before the calls (or the whole answer)
    think: bool = True  # a reasoning family reasons first
    constrained: str | None = None  # "required" | "named": vLLM's grammar applies


@dataclass(frozen=True)
class Plan:
    first: Turn
    after_tool: Turn | None = None  # the round trip's second turn
    notes: tuple[str, ...] = field(default_factory=tuple)


PARIS: Call = ("get_weather", {"city": "Paris"})
TOKYO: Call = ("get_time", {"timezone": "Asia/Tokyo"})
ANSWER_ONE = "It is 15 °C and partly cloudy in Paris."
ANSWER_TWO = "In Paris it is 15 °C and partly cloudy; in Tokyo it is 09:30."

PLANS: dict[str, Plan] = {
    "single": Plan(Turn((PARIS,))),
    "parallel": Plan(Turn((PARIS, TOKYO))),
    "interleaved": Plan(
        Turn(
            (
                ("write_note", {"title": "Groceries", "body": GROCERIES}),
                ("write_note", {"title": "Packing", "body": PACKING}),
            )
        )
    ),
    "truncated-arguments": Plan(
        Turn((("write_note", {"title": "Essay", "body": ESSAY}),), think=False)
    ),
    "id-omission": Plan(Turn((PARIS,)), Turn(text=ANSWER_ONE)),
    "round-trip": Plan(Turn((PARIS, TOKYO), text="Let me check both."), Turn(text=ANSWER_TWO)),
    "tool-choice-none": Plan(
        Turn(
            text="I cannot look the weather up without a tool, but "
            "Paris is usually mild at this time of year."
        )
    ),
    "required": Plan(
        Turn((("get_time", {"timezone": "UTC"}),), think=False, constrained="required")
    ),
    "named": Plan(
        Turn((("get_time", {"timezone": "Europe/Paris"}),), think=False, constrained="named")
    ),
    "no-arguments": Plan(Turn((("ping", {}),))),
    "unicode-arguments": Plan(Turn((("get_weather", {"city": "Zürich"}),))),
    "parallel-disabled": Plan(Turn((PARIS, TOKYO))),
    "long-arguments": Plan(Turn((("write_note", {"title": "Poem", "body": POEM}),))),
    "strict": Plan(Turn((("get_weather", {"city": "Paris", "unit": "celsius"}),))),
    "usage": Plan(Turn((PARIS,))),
}


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _py(value: Any) -> str:
    return repr(value)


def _calls(family: Family, calls: tuple[Call, ...]) -> str:
    """The calls in the family's markup."""
    p = family.parser
    if p == "hermes":
        return "\n".join(
            f"<tool_call>\n{_j({'name': n, 'arguments': a})}\n</tool_call>" for n, a in calls
        )
    if p == "mistral":
        return "".join(f"[TOOL_CALLS]{n}[ARGS]{_j(a)}" for n, a in calls)
    if p == "llama3_json":
        return "; ".join(_j({"name": n, "parameters": a}) for n, a in calls)
    if p == "pythonic":
        return (
            "["
            + ", ".join(
                f"{n}(" + ", ".join(f"{k}={_py(v)}" for k, v in a.items()) + ")" for n, a in calls
            )
            + "]"
        )
    if p == "qwen3_coder":
        return "\n".join(
            "<tool_call>\n<function="
            + n
            + ">\n"
            + "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in a.items())
            + "</function>\n</tool_call>"
            for n, a in calls
        )
    if p == "kimi_k2":
        return (
            "<|tool_calls_section_begin|>"
            + "".join(
                f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{_j(a)}"
                "<|tool_call_end|>"
                for i, (n, a) in enumerate(calls)
            )
            + "<|tool_calls_section_end|>"
        )
    if p == "deepseek_v3":
        return (
            "<｜tool▁calls▁begin｜>"
            + "\n".join(
                f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{_j(a)}\n```"
                "<｜tool▁call▁end｜>"
                for n, a in calls
            )
            + "<｜tool▁calls▁end｜>"
        )
    if p == "glm45":  # GLM-4.7's compact form: the grammar vLLM 0.32 applies to glm45
        return "".join(
            f"<tool_call>{n}"
            + "".join(f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>" for k, v in a.items())
            + "</tool_call>"
            for n, a in calls
        )
    raise KeyError(f"no renderer for the {p} family")


_THOUGHT = "The user asked something a tool answers; I will call it."


_ANSWERING = "The tools answered; I can reply now."


def _think(family: Family, thought: str) -> str:
    if family.parser == "deepseek_v3":
        return f"<think>\n{thought}\n</think>\n\n"
    if family.parser == "glm45":
        return f"<think>{thought}</think>\n"
    return f"<think>{thought}</think>"


def render(family: Family, turn: Turn) -> str:
    """One turn as the family's model writes it."""
    if turn.constrained and family.constrained_format == "json_array":
        return _j([{"name": n, "arguments": a} for n, a in turn.calls])
    if turn.constrained and family.constrained_format == "json_schema":  # vLLM's own schema
        if turn.constrained == "named":
            return _j(turn.calls[0][1])
        return _j([{"name": n, "parameters": a} for n, a in turn.calls])
    thought = _THOUGHT if turn.calls else _ANSWERING
    out = ""
    if family.reasoning_parser and turn.think:
        out = _think(family, thought)
    elif family.reasoning_parser == "deepseek_r1":
        out = _think(family, "")  # R1 always closes its think block, empty or not
        if turn.constrained:  # vLLM's R1 grammar puts the calls right after </think>
            out = out.rstrip("\n")
    text = turn.text if not turn.calls or family.text_before_calls else ""
    if text:
        out += text
    if turn.calls:
        sep = "\n" if text and family.parser not in ("mistral", "kimi_k2") else ""
        out += sep + _calls(family, turn.calls)
    return out


def script_args(family: Family, scenario: str) -> dict[str, str]:
    """The ``vllm_xargs`` of one scenario's requests on one family's server."""
    plan = PLANS[scenario]
    out = {"script": render(family, plan.first)}
    if plan.after_tool is not None:
        out["script_after_tool"] = render(family, plan.after_tool)
        out["tool_marker"] = family.tool_marker
    return out


def all_scripts(parser: str) -> dict[str, dict[str, str]]:
    family = FAMILIES[parser]
    return {s: script_args(family, s) for s in PLANS}


__all__ = ["PLANS", "Plan", "Turn", "all_scripts", "render", "script_args"]
