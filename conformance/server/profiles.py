"""Server profiles: which quirks a fake endpoint injects, and what analysing it should report.

A profile is data: a name (what clients send as ``model``), a description, the transforms it
applies to the reference stream (keys of ``conformance.mutations.TRANSFORMS``), the catalogue
ids it exhibits (``quirks``), the subset an analysis of its stream bytes must report
(``expected``; a stall or a round-trip rejection is not in the bytes; nothing else above
INFO may be reported), and request-side behaviour: round-trip rejections
(catalogue group J), request faults, and ``parallel_tool_calls`` handling.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance import registry
from conformance.mutations import MUTATIONS
from conformance.server.streams import RequestError, openai_error

# --------------------------------------------------------------------------- round trip


def _assistant_calls(messages: list[dict[str, Any]]):
    for i, message in enumerate(messages):
        if message.get("role") == "assistant" and message.get("tool_calls"):
            yield i, message


def _mistral_id(messages: list[dict[str, Any]]) -> RequestError | None:
    ids = [tc.get("id") for _, m in _assistant_calls(messages) for tc in m["tool_calls"]]
    ids += [m.get("tool_call_id") for m in messages if m.get("role") == "tool"]
    for call_id in ids:
        if not isinstance(call_id, str) or not re.fullmatch(r"[a-zA-Z0-9]{9}", call_id):
            message = f"Tool call id was {call_id} but must be a-z, A-Z, 0-9, with a length of 9."
            body = {"object": "error", "message": message, "type": "invalid_request_error"}
            return RequestError(400, body | {"param": None, "code": None})
    return None


def _content_null(messages: list[dict[str, Any]]) -> RequestError | None:
    for _, message in _assistant_calls(messages):
        if "content" in message and message["content"] is None:
            return openai_error(
                400,
                "Invalid 'content': 'content' field must be a string or an array of objects.",
                param="messages",
            )
    return None


def _content_empty(messages: list[dict[str, Any]]) -> RequestError | None:
    for _, message in _assistant_calls(messages):
        if message.get("content") == "":
            return openai_error(
                400,
                "ValidationException: messages: text content blocks must be non-empty",
                param="messages",
            )
    return None


def _tool_name_required(messages: list[dict[str, Any]]) -> RequestError | None:
    for message in messages:
        if message.get("role") == "tool" and not message.get("name"):
            error = {"code": 400, "message": "Request contains an invalid argument."}
            return RequestError(400, {"error": error | {"status": "INVALID_ARGUMENT"}})
    return None


def _tool_name_forbidden(messages: list[dict[str, Any]]) -> RequestError | None:
    for i, message in enumerate(messages):
        if message.get("role") == "tool" and "name" in message:
            text = f'messages[{i}]: "name" is not supported by this endpoint'
            return openai_error(400, text, param="messages")
    return None


def _function_name_key(messages: list[dict[str, Any]]) -> RequestError | None:
    for i, message in _assistant_calls(messages):
        if any("name" not in (tc.get("function") or {}) for tc in message["tool_calls"]):
            return openai_error(400, f"messages[{i}]: missing field `name`", param="messages")
    return None


def _reasoning_echo(messages: list[dict[str, Any]]) -> RequestError | None:
    for _, message in _assistant_calls(messages):
        if not message.get("reasoning_content"):
            return openai_error(
                400,
                "The `reasoning_content` in the thinking mode must be passed back to the API.",
                param="messages",
            )
    return None


def _thought_signature(messages: list[dict[str, Any]]) -> RequestError | None:
    for _, message in _assistant_calls(messages):
        for tc in message["tool_calls"]:
            sig = ((tc.get("extra_content") or {}).get("google") or {}).get("thought_signature")
            if not sig:
                error = {
                    "code": 400,
                    "status": "INVALID_ARGUMENT",
                    "message": "Function call is missing a thought_signature in "
                    "functionCall parts.",
                }
                return RequestError(400, {"error": error})
    return None


ROUND_TRIP_CHECKS: dict[str, Callable[[list[dict[str, Any]]], RequestError | None]] = {
    "reasoning-echo": _reasoning_echo,
    "thought-signature": _thought_signature,
    "mistral-id": _mistral_id,
    "content-null": _content_null,
    "content-empty": _content_empty,
    "tool-name-required": _tool_name_required,
    "tool-name-forbidden": _tool_name_forbidden,
    "function-name-key": _function_name_key,
}


# --------------------------------------------------------------------------- profiles


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    mutations: tuple[str, ...] = ()
    quirks: frozenset[str] = frozenset()
    expected: frozenset[str] = frozenset()
    round_trip: tuple[str, ...] = ()
    # Request-level behaviour instead of a stream shape:
    # "tools-unsupported" | "downgraded" | "stream-options-rejected".
    fault: str | None = None
    ignore_parallel_false: bool = False
    # Arguments for a `strict: true` tool break its schema (Q-STRICT-IGNORED).
    ignore_strict: bool = False
    # "named": mutate only when tool_choice names a function (OpenAI's ``stop`` there).
    when: str | None = None
    # What a request must elicit for the quirk to show: "parallel" (>= 2 calls),
    # "parallel-false", "no-params" (a parameterless tool), "named" (named tool_choice),
    # "required" (tool_choice "required").
    needs: str | None = None

    def applies(self, body: dict[str, Any]) -> bool:
        return self.when != "named" or isinstance(body.get("tool_choice"), dict)

    def check_round_trip(self, messages: list[dict[str, Any]]) -> None:
        for check in self.round_trip:
            if (error := ROUND_TRIP_CHECKS[check](messages)) is not None:
                raise error


def profile_name(quirk: str) -> str:
    """``Q-INDEX-ALL-ZERO`` -> ``index-all-zero``."""
    return quirk.removeprefix("Q-").lower()


# What a quirk's profile needs from the request (``needs``), the ids it shows along with
# its own (``profile_also``: its evidence) and whether its bytes show it at all
# (``visible_in_bytes``: a stall is timing) are the quirk's registry entry.


_DESCRIPTIONS = {
    "Q-ARGS-CLOSED-ON-TRUNCATION": "the last call cut inside its arguments and closed as valid "
    'JSON (a key dropped), finish_reason "length" (vLLM\'s llama3_json parser): one stream '
    "reads like a model that finished its JSON at the limit, so no id is expected from the "
    "bytes; a client must still refuse to execute it.",
    "Q-DELTA-SHAPE-LOAD-DEPENDENT": "the reference stream's calls as a busy server groups them "
    "(several fragments per delta, the first on the opening delta, the last with "
    "finish_reason; vLLM under load or at several tokens per step): the same calls as "
    "`reference`, so a client tested against both has seen the idle and the loaded shape.",
    "Q-FINISH-STOP-NAMED-TOOLCHOICE": "OpenAI itself: with a named tool_choice the calls end with "
    'finish_reason "stop" (only applied when tool_choice names a function).',
}


def _single(quirk: str, name: str | None = None, description: str | None = None) -> Profile:
    spec = registry.spec(quirk, "server profile")
    doc = (MUTATIONS[quirk].__doc__ or "").strip().split(": ", 1)[-1]  # without the id
    shown = frozenset({quirk}) | spec.profile_also
    return Profile(
        name=name or profile_name(quirk),
        description=description or _DESCRIPTIONS.get(quirk) or doc,
        mutations=(quirk,),
        quirks=shown,
        # an id the bytes cannot show is not expected, its evidence is (a load-dependent
        # shape: the regrouped stream's own shapes)
        expected=shown
        if spec.visible_in_bytes
        else frozenset(q for q in spec.profile_also if registry.spec(q).visible_in_bytes),
        when="named" if spec.needs == "named" else None,
        needs=spec.needs,
    )


def _round_trip(name: str, check: str, quirk: str, description: str) -> Profile:
    return Profile(name, description, round_trip=(check,), quirks=frozenset({quirk}))


def _build() -> dict[str, Profile]:
    profiles = [
        Profile("reference", "OpenAI's stream shape exactly; the conforming control."),
        *(_single(q) for q in MUTATIONS),
        Profile(
            "parallel-tool-calls-ignored",
            "several calls although parallel_tool_calls is false (vLLM).",
            quirks=frozenset({"Q-PARALLEL-TOOL-CALLS-IGNORED"}),
            expected=frozenset({"Q-PARALLEL-TOOL-CALLS-IGNORED"}),
            ignore_parallel_false=True,
            needs=registry.spec("Q-PARALLEL-TOOL-CALLS-IGNORED").needs,
        ),
        # Provider shapes from the seeds.
        _single(
            "Q-EMPTY-STRING-OVERWRITE",
            "dashscope-compatible",
            'Alibaba compatible-mode: the real id and name first, then id "" and name "" '
            "on every continuation delta (the wire-format reference's provider quirks).",
        ),
        _single(
            "Q-INDEX-ALL-ZERO",
            "ollama-parallel",
            "Ollama: index 0 for every parallel call, each with its own id (LibreChat's index-repair fix).",
        ),
        _single(
            "Q-INDEX-ABSENT",
            "ollama-legacy",
            "Ollama before v0.4.7: no index on any tool-call delta (LibreChat's index-repair fix).",
        ),
        _single(
            "Q-ARGS-TRUNCATED",
            "qwen-truncated",
            "Qwen/DashScope: the arguments stop short of valid JSON, finish_reason still "
            "tool_calls (the wire-format reference's JSON repair).",
        ),
        _single(
            "Q-ID-ABSENT",
            "id-omitted",
            "Some Ollama models: the opening delta carries no id (the wire-format reference's provider quirks).",
        ),
        # Framing faults beyond the single-quirk profiles.
        Profile(
            "sse-error-event",
            "An `event: error` SSE event with an error body mid-call, nothing after.",
            mutations=("sse-error-event",),
            quirks=frozenset({"Q-SSE-ERROR-ENVELOPE"}),
            expected=frozenset({"Q-SSE-ERROR-ENVELOPE"}),
        ),
        # Request faults: the stream never starts or is not a stream.
        Profile(
            "stream-tools-unsupported",
            "stream with tools answered HTTP 500 (old llama.cpp).",
            fault="tools-unsupported",
            quirks=frozenset({"Q-STREAM-TOOLS-UNSUPPORTED"}),
        ),
        Profile(
            "stream-downgraded",
            "stream:true answered with a JSON chat.completion (LocalAI, LMDeploy).",
            fault="downgraded",
            quirks=frozenset({"Q-STREAM-DOWNGRADED"}),
        ),
        Profile(
            "stream-options-rejected",
            "any stream_options answered HTTP 400 (Bedrock via LiteLLM).",
            fault="stream-options-rejected",
            quirks=frozenset({"Q-STREAM-OPTIONS-REJECTED"}),
        ),
        # Round-trip rejections (catalogue group J): the stream conforms, the next turn fails.
        _round_trip(
            "rt-mistral-id",
            "mistral-id",
            "Q-RT-MISTRAL-TOOL-CALL-ID",
            "the next turn is rejected unless every tool call id "
            "matches ^[a-zA-Z0-9]{9}$ (Mistral).",
        ),
        _round_trip(
            "rt-content-null",
            "content-null",
            "Q-RT-CONTENT-NULL-REJECTED",
            "an assistant tool-call message with content null is rejected (LM Studio, Ollama).",
        ),
        _round_trip(
            "rt-content-empty",
            "content-empty",
            "Q-RT-CONTENT-EMPTY-REJECTED",
            'an assistant tool-call message with content "" is '
            "rejected (Bedrock-backed endpoints).",
        ),
        _round_trip(
            "rt-tool-name-required",
            "tool-name-required",
            "Q-RT-TOOL-MESSAGE-NAME",
            "tool messages without name are rejected (Gemini compat).",
        ),
        _round_trip(
            "rt-tool-name-forbidden",
            "tool-name-forbidden",
            "Q-RT-TOOL-MESSAGE-NAME",
            "tool messages with name are rejected (OpenCode Go relay).",
        ),
        _round_trip(
            "rt-function-name-key",
            "function-name-key",
            "Q-RT-FUNCTION-NAME-KEY-REQUIRED",
            "replayed tool calls without a function.name key are rejected (DeepSeek).",
        ),
        Profile(
            "rt-reasoning-echo",
            "streams reasoning before the calls; a round trip without the turn's "
            "reasoning_content is rejected (DeepSeek thinking mode).",
            mutations=("reasoning-first",),
            round_trip=("reasoning-echo",),
            quirks=frozenset({"Q-REASONING-MUST-BE-ECHOED"}),
        ),
        Profile(
            "rt-thought-signature",
            "each call carries extra_content.google.thought_signature; a round trip without "
            "it is rejected (Gemini 3 via the OpenAI-compatible endpoint).",
            mutations=("thought-signature",),
            round_trip=("thought-signature",),
            quirks=frozenset({"Q-RT-GEMINI-THOUGHT-SIGNATURE"}),
        ),
        Profile(
            "strict-ignored",
            "`strict: true` is accepted but the arguments break the schema: an undeclared "
            "property is added (Anthropic's OpenAI-SDK compatibility layer, documented).",
            quirks=frozenset({"Q-STRICT-IGNORED"}),
            ignore_strict=True,
            needs=registry.spec("Q-STRICT-IGNORED").needs,
        ),
    ]
    for p in profiles:
        registry.check_ids(p.quirks | p.expected, f"server profile {p.name!r}")
    return {p.name: p for p in profiles}


PROFILES: dict[str, Profile] = _build()


# --------------------------------------------------------------------------- example requests

_WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
        },
    },
}
_TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current local time in a timezone.",
        "parameters": {
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"],
        },
    },
}
_STATUS = {
    "type": "function",
    "function": {
        "name": "get_status",
        "description": "Whether the service is up.",
        "parameters": {"type": "object", "properties": {}},
    },
}


def example_request(profile: str, *, stream: bool = True) -> dict[str, Any]:
    """A request that makes ``profile`` show its quirk (the first turn of a round trip)."""
    needs = PROFILES[profile].needs
    body: dict[str, Any] = {
        "model": profile,
        "messages": [{"role": "user", "content": "What's the weather in Zürich?"}],
        "tools": [_WEATHER],
        "stream": stream,
    }
    if needs in ("parallel", "parallel-false"):
        body["messages"][0]["content"] = "What's the weather in Zürich and the time in Tokyo?"
        body["tools"] = [_WEATHER, _TIME]
    if needs == "parallel-false":
        body["parallel_tool_calls"] = False
    if needs == "no-params":
        body["messages"][0]["content"] = "Is the service up?"
        body["tools"] = [_STATUS]
    if needs == "required":
        body["tool_choice"] = "required"
    if needs == "strict":
        body["tools"] = [
            {
                "type": "function",
                "function": dict(
                    _WEATHER["function"],
                    strict=True,
                    parameters=dict(_WEATHER["function"]["parameters"], additionalProperties=False),
                ),
            }
        ]
    if needs == "named":
        body["tool_choice"] = {"type": "function", "function": {"name": "get_weather"}}
    if stream and PROFILES[profile].fault != "stream-options-rejected":
        body["stream_options"] = {"include_usage": True}
    return body
