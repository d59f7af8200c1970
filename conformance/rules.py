"""Field-presence rules (seed 000 §1, §3, §5) and quirk levels, as data.

A rule has an id, a level, a one-line statement, its source and what it needs to be
judged (``framing``: raw SSE bytes; ``http``: a status line; ``request``: the request
body; ``roundtrip``: a request that carries tool results). A rule whose need is not met
is reported "not applicable", never guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

MUST, SHOULD, INFO = "MUST", "SHOULD", "INFO"
LEVEL_RANK = {MUST: 3, SHOULD: 2, INFO: 1}


@dataclass(frozen=True)
class Rule:
    id: str
    level: str
    statement: str
    source: str
    needs: str | None = None  # framing | http | request | roundtrip | tool_calls


_S0 = "seed 000"
RULES: dict[str, Rule] = {
    r.id: r
    for r in [
        Rule("R-COMPLETE", MUST, "The exchange completes: connection, headers and the whole body "
         "within the limits.", "catalogue Q-STREAM-STALLS; DESIGN verdict `error`", "http"),
    Rule("R-USAGE", MUST, "`stream_options.include_usage` yields a usage object.",
         "OpenAI API reference (ChatCompletionStreamOptions)", "request"),
    Rule("R-LENGTH-VISIBLE", MUST, "Arguments cut by max_tokens end with `finish_reason: "
         "\"length\"`, so no client executes a parsable prefix.", "catalogue Q-ARGS-TRUNCATED",
         "request"),
    Rule("R-HTTP-OK", MUST, "The response status is 200.", f"{_S0} §1", "http"),
        Rule(
            "R-SSE-CONTENT-TYPE",
            MUST,
            "A `stream: true` request is answered with `text/event-stream`.",
            f"{_S0} §1; catalogue Q-STREAM-DOWNGRADED",
            "http",
        ),
        Rule(
            "R-SSE-WELL-FORMED",
            MUST,
            "The body decodes as UTF-8 SSE and ends on an event boundary.",
            "WHATWG SSE; catalogue §N.1",
            "framing",
        ),
        Rule(
            "R-SSE-DATA-JSON",
            MUST,
            "Every `data:` payload except `[DONE]` is JSON.",
            f"{_S0} §1; catalogue Q-SSE-KEEPALIVE-AS-DATA",
            "framing",
        ),
        Rule(
            "R-SSE-DONE",
            SHOULD,
            "The stream ends with `data: [DONE]`.",
            "seed 003; catalogue Q-SSE-DONE-MISSING",
            "framing",
        ),
        Rule(
            "R-CHUNK-OBJECT",
            MUST,
            "Each payload is a `chat.completion.chunk` object.",
            f"{_S0} §1, §6",
        ),
        Rule(
            "R-NO-ERROR",
            MUST,
            "No error is reported inside a 200 stream.",
            "catalogue Q-SSE-ERROR-ENVELOPE, Q-SSE-ERROR-IN-CHUNK",
        ),
        Rule(
            "R-INDEX-PRESENT",
            MUST,
            "Every tool-call delta carries an integer `index`.",
            f"{_S0} §1 (field presence table)",
            "tool_calls",
        ),
        Rule(
            "R-INDEX-DISTINCT",
            MUST,
            "Parallel calls use distinct indices.",
            f"{_S0} §1 (parallel tool calls)",
            "tool_calls",
        ),
        Rule(
            "R-FIRST-ID",
            MUST,
            "The first delta of an index carries a non-empty `id`.",
            f"{_S0} §0, §1",
            "tool_calls",
        ),
        Rule(
            "R-FIRST-TYPE",
            MUST,
            'The first delta of an index carries `type: "function"`.',
            f"{_S0} §1",
            "tool_calls",
        ),
        Rule(
            "R-FIRST-NAME",
            MUST,
            "The first delta of an index carries a non-empty `function.name`.",
            f"{_S0} §1",
            "tool_calls",
        ),
        Rule(
            "R-FIRST-ARGS",
            SHOULD,
            'The first delta carries `function.arguments` (may be `""`).',
            f"{_S0} §1",
            "tool_calls",
        ),
        Rule(
            "R-CONT-ID-ABSENT",
            MUST,
            'Continuation deltas carry no `id` (absent, not `""`).',
            f"{_S0} §1, §5",
            "tool_calls",
        ),
        Rule(
            "R-CONT-TYPE-ABSENT",
            SHOULD,
            "Continuation deltas carry no `type`.",
            f"{_S0} §1",
            "tool_calls",
        ),
        Rule(
            "R-CONT-NAME-ABSENT",
            MUST,
            "Continuation deltas carry no `function.name`.",
            f"{_S0} §1, §5",
            "tool_calls",
        ),
        Rule(
            "R-ARGS-STRING",
            MUST,
            "`function.arguments` is a string fragment.",
            f"{_S0} §1, §6",
            "tool_calls",
        ),
        Rule(
            "R-ARGS-JSON",
            MUST,
            "The fragments of each call concatenate to valid JSON.",
            f"{_S0} §1, §4",
            "tool_calls",
        ),
        Rule(
            "R-FINISH-PRESENT",
            MUST,
            "A non-null `finish_reason` ends each choice.",
            f"{_S0} §1 (final chunk)",
        ),
        Rule(
            "R-FINISH-TOOL-CALLS",
            MUST,
            "A choice that streamed tool calls finishes with "
            '`"tool_calls"` (or `"length"` when cut).',
            f"{_S0} §1 (final chunk)",
            "tool_calls",
        ),
        Rule(
            "R-FINISH-VALUE",
            MUST,
            "`finish_reason` is null or one of stop, length, "
            "tool_calls, content_filter, function_call.",
            "OpenAI API reference",
        ),
        Rule(
            "R-TOOLCALLS-STRUCTURED",
            MUST,
            "Tool calls arrive in `delta.tool_calls`, not as content text.",
            f"{_S0} §1; catalogue group H",
        ),
        Rule(
            "R-TOOL-CHOICE",
            MUST,
            "`tool_choice` is honoured: none → no call, named → that "
            "tool, required → at least one call.",
            "OpenAI API reference",
            "request",
        ),
        Rule(
            "R-PARALLEL-DISABLED",
            MUST,
            "`parallel_tool_calls: false` gives at most one call.",
            "OpenAI API reference; catalogue Q-PARALLEL-TOOL-CALLS-IGNORED",
            "request",
        ),
        Rule(
            "R-ROUNDTRIP-IDS",
            MUST,
            "Every tool result's `tool_call_id` equals an id in the assistant's `tool_calls`.",
            f"{_S0} §3",
            "roundtrip",
        ),
        Rule(
            "R-ROUNDTRIP-ACCEPTED",
            MUST,
            "The provider accepts the assembled assistant message and tool results and answers.",
            f"{_S0} §3",
            "roundtrip",
        ),
        Rule(
            "R-TOOL-DECLARED",
            INFO,
            "Each call names a tool the request declared (else an agent answers `Unknown "
            "tool`; model behaviour rather than wire format).",
            "OpenAI API reference (tools); catalogue Q-OPENAI-MULTI-TOOL-USE-WRAPPER",
            "request",
        ),
        Rule(
            "R-LENGTH-CUT",
            INFO,
            'Calls cut by `finish_reason: "length"` are incomplete and must not be executed.',
            "catalogue Q-FINISH-STOP-WITH-TOOLCALLS workaround",
            "tool_calls",
        ),
    ]
}

# The level a quirk's finding carries. MUST: it breaks a MUST rule above. SHOULD: a
# deviation that breaks some clients. INFO: documented reference behaviour, or harmless.
QUIRK_LEVEL: dict[str, str] = {
    "Q-SSE-COMMENT-KEEPALIVE": SHOULD,
    "Q-SSE-KEEPALIVE-AS-DATA": MUST,
    "Q-SSE-DONE-MISSING": SHOULD,
    "Q-SSE-ERROR-ENVELOPE": MUST,
    "Q-SSE-ERROR-IN-CHUNK": MUST,
    "Q-STREAM-TOOLS-UNSUPPORTED": MUST,
    "Q-STREAM-DOWNGRADED": MUST,
    "Q-STREAM-STALLS": MUST,
    "Q-KEEPALIVE-DROPPED": INFO,  # the transport retried: shown, the cell is not judged on it
    "Q-USAGE-EMPTY-CHOICES": INFO,
    "Q-USAGE-PLACEMENT": SHOULD,
    "Q-STREAM-OPTIONS-REJECTED": MUST,
    "Q-AZURE-PROMPT-FILTER-CHUNK": SHOULD,
    "Q-AZURE-CHOICE-WITHOUT-DELTA": SHOULD,
    "Q-ENVELOPE-FIELDS-MISSING": SHOULD,
    "Q-CHUNK-ID-UNSTABLE": SHOULD,
    "Q-EXTRA-FIELDS": INFO,
    "Q-TOOLCALLS-EMPTY-ARRAY": SHOULD,
    "Q-EMPTY-DELTA-CHUNKS": INFO,
    "Q-INDEX-ABSENT": MUST,
    "Q-INDEX-ABSENT-WHOLE-CALL": MUST,
    "Q-INDEX-ABSENT-PARALLEL-SPLIT": MUST,
    "Q-INDEX-ABSENT-OTHER": MUST,
    "Q-INDEX-NONZERO-START": SHOULD,
    "Q-INDEX-ALL-ZERO": MUST,
    "Q-INDEX-REUSED-ACROSS-CALLS": MUST,
    "Q-INDEX-INCONSISTENT-WITHIN-CALL": MUST,
    "Q-ID-ABSENT": MUST,
    "Q-EMPTY-STRING-OVERWRITE": MUST,
    "Q-ID-REPEATED": MUST,
    "Q-ID-CHANGES-MID-CALL": MUST,
    "Q-ID-FORMAT": INFO,
    "Q-TYPE-MISSING": MUST,
    "Q-NAME-REPEATED": MUST,
    "Q-NAME-EMPTY-OPENING-DELTA": MUST,
    "Q-NAME-AFTER-ARGUMENTS": MUST,
    "Q-NAME-FRAGMENTED": INFO,
    "Q-ARGS-WHOLE-IN-ONE-DELTA": INFO,
    "Q-ARGS-ON-OPENING-DELTA": SHOULD,
    "Q-ARGS-CUMULATIVE": MUST,
    "Q-ARGS-DUPLICATED-ON-FLUSH": MUST,
    "Q-ARGS-LOST-MULTITOKEN-DELTA": MUST,
    "Q-ARGS-ABSENT-NO-PARAMS": SHOULD,
    "Q-ARGS-SERVER-PARSER-CORRUPTION": MUST,
    "Q-ARGS-JSON-OBJECT": MUST,
    "Q-ARGS-NULL": MUST,
    "Q-ARGS-CONTROL-MARKUP": MUST,
    "Q-ARGS-TRUNCATED": MUST,
    "Q-FINISH-STOP-WITH-TOOLCALLS": MUST,
    "Q-FINISH-STOP-NAMED-TOOLCHOICE": INFO,
    "Q-FINISH-TOOLCALLS-WITHOUT-DELTAS": MUST,
    "Q-FINISH-EMPTY-STRING": SHOULD,
    "Q-FINISH-ON-NONFINAL-CHUNK": SHOULD,
    "Q-FINISH-CAMELCASE": MUST,
    "Q-FINISH-NEVER-SENT": MUST,
    "Q-FINISH-REPEATED": SHOULD,
    "Q-FINISH-SAME-CHUNK-AS-CALL": SHOULD,
    "Q-FINISH-NONSTANDARD-VALUE": MUST,
    "Q-TOOLCALL-AS-TEXT": MUST,
    "Q-TOOLCALL-DUPLICATED-IN-CONTENT": SHOULD,
    "Q-TOOLCALLS-MISSING-IN-STREAM": MUST,
    "Q-REASONING-SAME-DELTA": SHOULD,
    "Q-REASONING-LEAK-AT-FINISH": SHOULD,
    "Q-REASONING-MUST-BE-ECHOED": MUST,
    "Q-PARALLEL-TOOL-CALLS-IGNORED": MUST,
    "Q-OPENAI-MULTI-TOOL-USE-WRAPPER": INFO,
    "Q-RT-MISTRAL-TOOL-CALL-ID": MUST,
    "Q-RT-CONTENT-NULL-REJECTED": MUST,
    "Q-RT-CONTENT-EMPTY-REJECTED": MUST,
    "Q-RT-TOOL-MESSAGE-NAME": MUST,
    "Q-RT-FUNCTION-NAME-KEY-REQUIRED": MUST,
    "Q-RT-GEMINI-THOUGHT-SIGNATURE": MUST,
    # Ids the suite added (conformance/data/quirks.json, not in the catalogue). The
    # required-not-enforced finding is MUST where no call came at all.
    "Q-ARGS-INVENTED-ON-TRUNCATION": MUST,
    "Q-ARGS-INVALID-JSON": MUST,
    "Q-REQUIRED-NOT-ENFORCED": SHOULD,
}

# Quirks the robust strategy cannot repair: the right calls are not on the wire.
UNRECOVERABLE = frozenset(
    {
        "Q-ARGS-SERVER-PARSER-CORRUPTION",
        "Q-ARGS-INVALID-JSON",
        "Q-ARGS-LOST-MULTITOKEN-DELTA",
        "Q-ARGS-CONTROL-MARKUP",
        "Q-INDEX-INCONSISTENT-WITHIN-CALL",
        "Q-FINISH-TOOLCALLS-WITHOUT-DELTAS",
        "Q-TOOLCALL-AS-TEXT",
        "Q-TOOLCALLS-MISSING-IN-STREAM",
    }
)

# A finer quirk that, by its definition, also shows a coarser one on the same stream.
IMPLIES: dict[str, frozenset[str]] = {
    "Q-INDEX-ABSENT-WHOLE-CALL": frozenset({"Q-INDEX-ABSENT", "Q-ARGS-WHOLE-IN-ONE-DELTA"}),
    "Q-INDEX-ABSENT-PARALLEL-SPLIT": frozenset({"Q-INDEX-ABSENT"}),
    "Q-INDEX-ABSENT-OTHER": frozenset({"Q-INDEX-ABSENT"}),
}


@cache
def quirk_catalogue() -> dict[str, dict[str, Any]]:
    """The catalogue entries (title, group, sources...) shipped as package data."""
    # A path next to this module, not importlib.resources: that import alone (tempfile,
    # shutil, zipfile...) costs more than the whole of `conformance analyze` on 1k events.
    text = (Path(__file__).parent / "data" / "quirks.json").read_text("utf-8")
    data: dict[str, dict[str, Any]] = json.loads(text)
    return data


def quirk_level(qid: str) -> str:
    return QUIRK_LEVEL.get(qid, SHOULD)
