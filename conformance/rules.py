"""Field-presence rules (from the wire-format reference: its wire format, round-trip and
provider-quirk sections) and quirk levels, as data.

A rule has an id, a level, a one-line statement, its source and what it needs to be
judged (``framing``: raw SSE bytes; ``http``: a status line; ``request``: the request
body; ``roundtrip``: a request that carries tool results). A rule whose need is not met
is reported "not applicable", never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance import registry
from conformance.enums import Level

MUST, SHOULD, INFO = Level.MUST, Level.SHOULD, Level.INFO


@dataclass(frozen=True)
class Rule:
    id: str
    level: Level
    statement: str
    source: str
    needs: str | None = None  # framing | http | request | roundtrip | tool_calls


_S0 = "crow-cli's notes on OpenAI streaming tool calls"  # the wire-format reference
RULES: dict[str, Rule] = {
    r.id: r
    for r in [
        Rule(
            "R-COMPLETE",
            MUST,
            "The exchange completes: connection, headers and the whole body within the limits.",
            "catalogue Q-STREAM-STALLS; DESIGN verdict `error`",
            "http",
        ),
        Rule(
            "R-USAGE",
            MUST,
            "`stream_options.include_usage` yields a usage object.",
            "OpenAI API reference (ChatCompletionStreamOptions)",
            "request",
        ),
        Rule(
            "R-LENGTH-VISIBLE",
            MUST,
            "Arguments cut by max_tokens end with `finish_reason: "
            '"length"`, so no client executes a parsable prefix.',
            "catalogue Q-ARGS-TRUNCATED",
            "request",
        ),
        Rule("R-HTTP-OK", MUST, "The response status is 200.", f"{_S0}: “the wire format”", "http"),
        Rule(
            "R-SSE-CONTENT-TYPE",
            MUST,
            "A `stream: true` request is answered with `text/event-stream`.",
            f"{_S0}: “the wire format”; catalogue Q-STREAM-DOWNGRADED",
            "http",
        ),
        Rule(
            "R-SSE-WELL-FORMED",
            MUST,
            "The body decodes as UTF-8 SSE and ends on an event boundary.",
            "WHATWG SSE; the quirk catalogue, group N",
            "framing",
        ),
        Rule(
            "R-SSE-DATA-JSON",
            MUST,
            "Every `data:` payload except `[DONE]` is JSON.",
            f"{_S0}: “the wire format”; catalogue Q-SSE-KEEPALIVE-AS-DATA",
            "framing",
        ),
        Rule(
            "R-SSE-DONE",
            SHOULD,
            "The stream ends with `data: [DONE]`.",
            "the cfosilvia docs' streaming handler; catalogue Q-SSE-DONE-MISSING",
            "framing",
        ),
        Rule(
            "R-CHUNK-OBJECT",
            MUST,
            "Each payload is a `chat.completion.chunk` object.",
            f"{_S0}: “the wire format”, “async-openai Rust types”",
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
            f"{_S0}: “the wire format” (field presence table)",
            "tool_calls",
        ),
        Rule(
            "R-INDEX-DISTINCT",
            MUST,
            "Parallel calls use distinct indices.",
            f"{_S0}: “the wire format” (parallel tool calls)",
            "tool_calls",
        ),
        Rule(
            "R-FIRST-ID",
            MUST,
            "The first delta of an index carries a non-empty `id`.",
            f"{_S0}: “the one rule”, “the wire format”",
            "tool_calls",
        ),
        Rule(
            "R-FIRST-TYPE",
            MUST,
            'The first delta of an index carries `type: "function"`.',
            f"{_S0}: “the wire format”",
            "tool_calls",
        ),
        Rule(
            "R-FIRST-NAME",
            MUST,
            "The first delta of an index carries a non-empty `function.name`.",
            f"{_S0}: “the wire format”",
            "tool_calls",
        ),
        Rule(
            "R-FIRST-ARGS",
            SHOULD,
            'The first delta carries `function.arguments` (may be `""`).',
            f"{_S0}: “the wire format”",
            "tool_calls",
        ),
        Rule(
            "R-CONT-ID-ABSENT",
            MUST,
            'Continuation deltas carry no `id` (absent, not `""`).',
            f"{_S0}: “the wire format”, “provider quirks”",
            "tool_calls",
        ),
        Rule(
            "R-CONT-TYPE-ABSENT",
            SHOULD,
            "Continuation deltas carry no `type`.",
            f"{_S0}: “the wire format”",
            "tool_calls",
        ),
        Rule(
            "R-CONT-NAME-ABSENT",
            MUST,
            "Continuation deltas carry no `function.name`.",
            f"{_S0}: “the wire format”, “provider quirks”",
            "tool_calls",
        ),
        Rule(
            "R-ARGS-STRING",
            MUST,
            "`function.arguments` is a string fragment.",
            f"{_S0}: “the wire format”, “async-openai Rust types”",
            "tool_calls",
        ),
        Rule(
            "R-ARGS-JSON",
            MUST,
            "The fragments of each call concatenate to valid JSON.",
            f"{_S0}: “the wire format”, “JSON argument repair”",
            "tool_calls",
        ),
        Rule(
            "R-FINISH-PRESENT",
            MUST,
            "A non-null `finish_reason` ends each choice.",
            f"{_S0}: “the wire format” (final chunk)",
        ),
        Rule(
            "R-FINISH-TOOL-CALLS",
            MUST,
            "A choice that streamed tool calls finishes with "
            '`"tool_calls"` (or `"length"` when cut).',
            f"{_S0}: “the wire format” (final chunk)",
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
            f"{_S0}: “the wire format”; catalogue group H",
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
            f"{_S0}: “the round-trip”",
            "roundtrip",
        ),
        Rule(
            "R-ROUNDTRIP-ACCEPTED",
            MUST,
            "The provider accepts the assembled assistant message and tool results and answers.",
            f"{_S0}: “the round-trip”",
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

# A quirk's level, whether the robust client can repair it and the coarser ids it implies
# are declared once, in the registry (data/quirks.json, read by conformance.registry).


def quirk_catalogue() -> dict[str, dict[str, Any]]:
    """The catalogue entries (title, group, sources...) shipped as package data."""
    return registry.entries()


def quirk_level(qid: str) -> Level:
    """The level a finding of ``qid`` carries (registry.UnknownQuirkError if unknown)."""
    return registry.level(qid)
