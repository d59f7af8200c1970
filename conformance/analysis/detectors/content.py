"""Groups H/I, content and reasoning: tool calls written as text, reasoning next to calls.

Q-REASONING-SAME-DELTA, Q-REASONING-LEAK-AT-FINISH, Q-TOOLCALL-AS-TEXT,
Q-TOOLCALL-DUPLICATED-IN-CONTENT, Q-TOOLCALLS-MISSING-IN-STREAM.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from conformance.analysis.common import REASONING_FIELDS, _excerpt, _nonempty

if TYPE_CHECKING:
    from conformance.analysis.analyzer import Analyzer

TOOL_MARKUP = re.compile(
    r"<tool_call>|<\|tool_call|\[TOOL_CALLS\]|<function[=>\s]|<｜DSML｜|\[Calling tool:|"
    r"<\|tool_calls_section_begin\|>|\{\s*\"name\"\s*:\s*\"[^\"]+\"\s*,\s*\"(?:arguments|parameters)\""
)


def detect_content_and_reasoning(a: Analyzer, choice: dict[str, Any], ptr: str, n: int) -> None:
    """Q-REASONING-SAME-DELTA, Q-REASONING-LEAK-AT-FINISH; collects content for group H."""
    delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
    reasoning = any(delta.get(k) not in (None, "", []) for k in REASONING_FIELDS)
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
        if sum(len(c) for c in a.content) < 200_000:
            a.content.append(content)
        if a.first_markup_event is None and TOOL_MARKUP.search(content):
            a.first_markup_event = n
        if a.reasoning_seen and choice.get("finish_reason") == "tool_calls":
            a.find(
                "Q-REASONING-LEAK-AT-FINISH",
                "content text on the tool_calls finish chunk after reasoning",
                event=n,
                pointer=ptr + "/delta/content",
                excerpt=content,
            )


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
    if (
        forced
        and not calls
        and not a.error_seen
        and (a.t.status in (None, 200))
        and not a.t.transport_error
        and a.events
    ):
        a.find(
            "R-TOOL-CHOICE",
            f"tool_choice {_excerpt(choice, 60)} but no tool call streamed",
            quirk="Q-TOOLCALLS-MISSING-IN-STREAM",
        )
