"""Groups H/I, content and reasoning: tool calls written as text, reasoning next to calls.

Q-REASONING-SAME-DELTA, Q-REASONING-LEAK-AT-FINISH, Q-TOOLCALL-AS-TEXT,
Q-TOOLCALL-DUPLICATED-IN-CONTENT, Q-TOOLCALLS-MISSING-IN-STREAM, Q-REQUIRED-NOT-ENFORCED;
the evidence that names Q-ARGS-SERVER-PARSER-CORRUPTION (the model's own text of a call).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from conformance.analysis.common import REASONING_FIELDS, _excerpt, _nonempty
from conformance.client import Turn
from conformance.registry import detector
from conformance.rules import MUST

if TYPE_CHECKING:
    from conformance.analysis.analyzer import Analyzer

CONTENT_KEPT = 200_000  # characters of content kept to look for calls written as text
# The tool-call markup of each major model family, as its chat template writes it (a
# server that does not parse the family's format leaks it into content): Hermes/Qwen
# <tool_call>, Qwen3-Coder's <function=…> and <parameter=…> XML, Mistral [TOOL_CALLS],
# Llama 3.1+ <|python_tag|>, Kimi K2's section and call tokens, DeepSeek's DSML and
# ｜tool▁calls｜ tokens, GLM-4.5's <arg_key>/<arg_value>, gpt-oss (harmony) channel text
# ("<|channel|>commentary to=functions.name <|constrain|>json<|message|>{…}<|call|>"),
# MiniMax's <minimax:tool_call>, Granite's <|tool_call|>, the "[Calling tool:" of some
# gateways, and a bare {"name": …, "arguments"|"parameters": …} object.
TOOL_MARKUP = re.compile(
    r"<tool_call>|<\|tool_call|\[TOOL_CALLS\]|<function[=>\s]|<parameter=|<｜DSML｜|"
    r"<｜tool▁call|\[Calling tool:|<\|python_tag\|>|<arg_key>|<arg_value>|"
    r"<minimax:tool_call>|<\|channel\|>\s*commentary|\bto=functions\.[A-Za-z_]|<\|call\|>|"
    r"<\|tool_calls_section_begin\|>|"
    r"\{\s*\"name\"\s*:\s*\"[^\"]+\"\s*,\s*\"(?:arguments|parameters)\""
)


def _may_hold_markup(text: str) -> bool:
    """False when TOOL_MARKUP cannot match: each of its markers starts with one of these
    characters or holds "to=functions." (a few substring tests, where the regex tries
    each of its alternatives at every position of every content delta)."""
    return "<" in text or "[" in text or "{" in text or "to=functions." in text


MARKUP_OVERLAP = 40  # characters of the previous content searched again: a marker split
# over two deltas ("<|python" then "_tag|>") is found in the second


def detect_content_and_reasoning(a: Analyzer, choice: dict[str, Any], ptr: str, n: int) -> None:
    """Q-REASONING-SAME-DELTA, Q-REASONING-LEAK-AT-FINISH; collects content for group H."""
    delta = _v if isinstance(_v := choice.get("delta"), dict) else {}
    reasoning = not delta.keys().isdisjoint(REASONING_FIELDS) and any(  # one C call first
        delta.get(k) not in (None, "", []) for k in REASONING_FIELDS
    )
    content = delta.get("content")
    if reasoning:
        if delta.get("tool_calls"):
            a.find(
                "Q-REASONING-SAME-DELTA",
                "reasoning and tool_calls in one delta",
                event=n,
                pointer=ptr + "/delta",
            )
        a.reasoning_seen = True
    if _nonempty(content):
        collect_content(a, content, n)
        if a.reasoning_seen and choice.get("finish_reason") == "tool_calls":
            a.find(
                "Q-REASONING-LEAK-AT-FINISH",
                "content text on the tool_calls finish chunk after reasoning",
                event=n,
                pointer=ptr + "/delta/content",
                excerpt=content,
            )


detector(
    detect_content_and_reasoning,
    "choice",
    reports=(
        "Q-REASONING-SAME-DELTA",
        "Q-REASONING-LEAK-AT-FINISH",
    ),
)


def collect_content(a: Analyzer, content: str, n: int) -> None:
    """The content of a delta, for group H (detect_content_and_reasoning's share that the
    steady path runs alone on a text delta, which has no reasoning and no finish)."""
    if a.first_prose_event is None and not a.any_tool_delta and content.strip():
        a.first_prose_event = n
    if a.content_chars < CONTENT_KEPT:  # a running total: no re-count per delta
        a.content.append(content)
        a.content_chars += len(content)
    if a.first_markup_event is None:
        text = a.content_tail + content
        if _may_hold_markup(text) and TOOL_MARKUP.search(text):
            a.first_markup_event = n
        a.content_tail = text[-MARKUP_OVERLAP:]


def detect_calls_outside_tool_calls(a: Analyzer) -> None:
    """Q-TOOLCALL-AS-TEXT, Q-TOOLCALL-DUPLICATED-IN-CONTENT, Q-TOOLCALLS-MISSING-IN-STREAM."""
    calls = a.robust.turn().calls
    if (a.req or {}).get("tool_choice") == "none" and not calls:
        return  # no call was wanted: whatever the model wrote is just text
    if a.first_markup_event is not None:
        if calls:
            a.find(
                "Q-TOOLCALL-DUPLICATED-IN-CONTENT",
                "tool-call markup in content next to structured tool_calls",
                event=a.first_markup_event,
            )
        else:
            a.find(
                "R-TOOLCALLS-STRUCTURED",
                "a tool call streamed as content text",
                quirk="Q-TOOLCALL-AS-TEXT",
                event=a.first_markup_event,
                excerpt="".join(a.content)[:160],
            )
        return
    choice = (a.req or {}).get("tool_choice")
    forced = choice == "required" or isinstance(choice, dict)
    if choice == "required" and a.first_prose_event is not None:
        return  # prose instead of a call: Q-REQUIRED-NOT-ENFORCED says so
    if (
        forced
        and not calls
        and not a.error_seen
        and (a.t.status in (None, 200))
        and not a.t.transport_error
        and a.events
    ):
        # The quirk is defined by a comparison: the same request with stream false carries
        # tool_calls. The runner makes it and sets it on the transcript; without it (a lone
        # capture) or when it shows no call either, tool_choice was just not honoured.
        cmp = a.t.meta.get("stream_comparison")
        said = f"tool_choice {_excerpt(choice, 60)} but no tool call streamed"
        if not isinstance(cmp, dict) or not cmp.get("made"):
            why = cmp.get("reason") if isinstance(cmp, dict) else None
            a.find(
                "R-TOOL-CHOICE",
                f"{said}; the stream-false comparison was not made" + (f" ({why})" if why else ""),
            )
        elif cmp.get("tool_calls"):
            a.find(
                "R-TOOL-CHOICE",
                f"{said}; the same request with stream false returned "
                f"{cmp['tool_calls']} tool call(s)",
                quirk="Q-TOOLCALLS-MISSING-IN-STREAM",
            )
        else:
            a.find("R-TOOL-CHOICE", f"{said}, nor with stream false: tool_choice ignored")


detector(
    detect_calls_outside_tool_calls,
    "end",
    reports=(
        "Q-TOOLCALL-AS-TEXT",
        "Q-TOOLCALL-DUPLICATED-IN-CONTENT",
        "Q-TOOLCALLS-MISSING-IN-STREAM",
    ),
)


def detect_required_not_enforced(a: Analyzer) -> None:
    """Q-REQUIRED-NOT-ENFORCED: `tool_choice: "required"`, and the model wrote prose before
    its first call (SHOULD) or instead of any call (MUST, R-TOOL-CHOICE). llama.cpp's
    required grammar allows free text before the first call (docs/lanes/llamacpp.md).
    Calls written as text are group H's (Q-TOOLCALL-AS-TEXT), not this."""
    if (a.req or {}).get("tool_choice") != "required" or a.first_prose_event is None:
        return
    if a.first_markup_event is not None or a.error_seen or a.body_cut or a.t.transport_error:
        return
    prose = "".join(a.content)
    if a.robust.turn().calls:
        a.find(
            "R-TOOL-CHOICE",
            'tool_choice "required" but prose came before the first call',
            quirk="Q-REQUIRED-NOT-ENFORCED",
            event=a.first_prose_event,
            pointer="/choices/0/delta/content",
            excerpt=prose[:160],
        )
    else:
        a.find(
            "R-TOOL-CHOICE",
            'tool_choice "required" but the model answered in prose, with no tool call',
            quirk="Q-REQUIRED-NOT-ENFORCED",
            level=MUST,
            event=a.first_prose_event,
            pointer="/choices/0/delta/content",
            excerpt=prose[:160],
        )


detector(detect_required_not_enforced, "end", reports=("Q-REQUIRED-NOT-ENFORCED",))


_CALL_TEXT = re.compile(r'\{\s*"name"\s*:')


def server_parser_evidence(a: Analyzer, turn: Turn) -> str:
    """Q-ARGS-SERVER-PARSER-CORRUPTION rather than the neutral Q-ARGS-INVALID-JSON (the robust
    client's note for unrepairable arguments): why an invalid call is the server parser's
    fault, or "". The model's own text of that call is on the wire, in content next to the
    structured call, with valid arguments: the server broke them while parsing."""
    text = "".join(a.content)
    written: set[str] = set()
    decoder = json.JSONDecoder()
    for m in _CALL_TEXT.finditer(text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        # The match starts at "{": what decodes there is an object.
        args = obj.get("arguments", obj.get("parameters"))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                continue
        if isinstance(obj.get("name"), str) and isinstance(args, dict):
            written.add(obj["name"])
    broken = [c.name for c in turn.calls if not c.valid and c.name in written]
    if not broken:
        return ""
    return (
        f"the model's own text of the {broken[0]!r} call is in content (event "
        f"{a.first_markup_event}) with valid arguments: the server's parser broke them"
    )


detector(server_parser_evidence, "part", reports=("Q-ARGS-SERVER-PARSER-CORRUPTION",))
