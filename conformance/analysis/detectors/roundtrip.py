"""Group K, the round trip: a request that sends tool results back.

Q-RT-MISTRAL-TOOL-CALL-ID, Q-RT-GEMINI-THOUGHT-SIGNATURE, Q-RT-FUNCTION-NAME-KEY-REQUIRED,
Q-REASONING-MUST-BE-ECHOED, Q-RT-CONTENT-NULL-REJECTED, Q-RT-CONTENT-EMPTY-REJECTED,
Q-RT-TOOL-MESSAGE-NAME; R-ROUNDTRIP-IDS, R-ROUNDTRIP-ACCEPTED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.analysis.common import _body_message, _is_roundtrip
from conformance.registry import detector

if TYPE_CHECKING:
    from conformance.analysis.analyzer import Analyzer


def detect_roundtrip(a: Analyzer) -> None:
    """R-ROUNDTRIP-IDS, R-ROUNDTRIP-ACCEPTED; Q-RT-MISTRAL-TOOL-CALL-ID,
    Q-RT-GEMINI-THOUGHT-SIGNATURE, Q-RT-FUNCTION-NAME-KEY-REQUIRED, Q-REASONING-MUST-BE-ECHOED,
    Q-RT-CONTENT-NULL-REJECTED, Q-RT-CONTENT-EMPTY-REJECTED, Q-RT-TOOL-MESSAGE-NAME from the
    provider's rejection text."""
    if not _is_roundtrip(a.req):
        return
    assert a.req is not None
    ids: set[str] = set()
    for m in a.req.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "assistant":
            for tc in m.get("tool_calls") or []:
                if isinstance(tc, dict) and isinstance(tc.get("id"), str):
                    ids.add(tc["id"])
    for m in a.req.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id") not in ids:
            a.find("R-ROUNDTRIP-IDS", f"tool result for unknown id {m.get('tool_call_id')!r}")
    if a.t.status is not None and a.t.status != 200:
        low = _body_message(a.t.raw).lower()
        quirk = None
        if "tool call id" in low and "9" in low:
            quirk = "Q-RT-MISTRAL-TOOL-CALL-ID"
        elif "thought_signature" in low or "thought signature" in low:
            quirk = "Q-RT-GEMINI-THOUGHT-SIGNATURE"
        elif "missing field" in low and "name" in low:
            quirk = "Q-RT-FUNCTION-NAME-KEY-REQUIRED"
        elif "reasoning_content" in low:
            quirk = "Q-REASONING-MUST-BE-ECHOED"
        elif (
            "content" in low
            and ("null" in low or "<nil>" in low or "must be a string" in low)
            or _pydantic_content_none(a.t.raw)
        ):
            quirk = "Q-RT-CONTENT-NULL-REJECTED"
        elif "content" in low and ("empty" in low or "non-empty" in low):
            quirk = "Q-RT-CONTENT-EMPTY-REJECTED"
        elif "name" in low and ("tool" in low or "function_response" in low):
            quirk = "Q-RT-TOOL-MESSAGE-NAME"
        a.find("R-ROUNDTRIP-ACCEPTED", f"round trip rejected: HTTP {a.t.status}", quirk=quirk)


detector(
    detect_roundtrip,
    "end",
    reports=(
        "Q-RT-MISTRAL-TOOL-CALL-ID",
        "Q-RT-GEMINI-THOUGHT-SIGNATURE",
        "Q-RT-FUNCTION-NAME-KEY-REQUIRED",
        "Q-REASONING-MUST-BE-ECHOED",
        "Q-RT-CONTENT-NULL-REJECTED",
        "Q-RT-CONTENT-EMPTY-REJECTED",
        "Q-RT-TOOL-MESSAGE-NAME",
    ),
)


def _pydantic_content_none(raw: bytes | None) -> bool:
    """llama-cpp-python's 500: pydantic lists every message type the assistant message
    failed; the assistant one says its ``content`` (None) is not a valid string."""
    text = (raw or b"")[:16000].decode("utf-8", "replace").lower()
    return (
        "assistantmessage', 'content'), 'msg': 'input should be a valid string', 'input': none"
    ) in text
