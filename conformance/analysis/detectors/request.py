"""Request semantics: what the request asked (tool_choice, parallel_tool_calls, tools).

Q-PARALLEL-TOOL-CALLS-IGNORED; R-TOOL-CHOICE, R-PARALLEL-DISABLED, R-TOOL-DECLARED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.bounded import quoted
from conformance.registry import detector

if TYPE_CHECKING:
    from conformance.analysis.analyzer import Analyzer


def detect_request_semantics(a: Analyzer) -> None:
    """Q-PARALLEL-TOOL-CALLS-IGNORED; R-TOOL-CHOICE (none / named); R-TOOL-DECLARED."""
    if a.req is None:
        return
    calls = a.robust.turn().calls
    declared = {
        (t.get("function") or {}).get("name")
        for t in a.req.get("tools") or []
        if isinstance(t, dict) and isinstance(t.get("function"), dict)
    }
    unknown = [
        c.name
        for c in calls
        if c.name and declared and c.name not in declared and c.name != "multi_tool_use.parallel"
    ]  # that one has its own quirk
    if unknown:
        a.find(
            "R-TOOL-DECLARED",
            f"the model called {quoted(unknown[0])}, which the request does not declare",
        )
    if a.req.get("parallel_tool_calls") is False and len(calls) > 1:
        a.find(
            "R-PARALLEL-DISABLED",
            f"{len(calls)} calls although parallel_tool_calls is false",
            quirk="Q-PARALLEL-TOOL-CALLS-IGNORED",
        )
    choice = a.req.get("tool_choice")
    if choice == "none" and calls:
        a.find("R-TOOL-CHOICE", 'tool_choice "none" but a tool call was streamed')
    if isinstance(choice, dict):
        want = (choice.get("function") or {}).get("name")
        wrong = [c.name for c in calls if c.name != want]
        if want and wrong:
            a.find(
                "R-TOOL-CHOICE", f"named tool_choice {quoted(want)} but called {quoted(wrong[0])}"
            )


detector(detect_request_semantics, "end", reports=("Q-PARALLEL-TOOL-CALLS-IGNORED",))
