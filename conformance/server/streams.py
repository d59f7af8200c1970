"""What the fake model "says" to a Chat Completions request: its calls or its text.

Everything is derived from the request and a seeded ``random.Random``, so the same request
always gets the same answer. The answer is a ``Plan``; ``mutations.reference_stream`` turns
it into OpenAI's stream and ``completion_body`` into OpenAI's non-streaming body.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass, replace
from typing import Any

from conformance.mutations import CallSpec, estimate_tokens, make_usage, new_call_id, random_token


class RequestError(Exception):
    """An HTTP error answer: ``status`` and the JSON ``body`` the server sends."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status, body)
        self.status = status
        self.body = body


def openai_error(
    status: int,
    message: str,
    *,
    type: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> RequestError:
    error = {"message": message, "type": type, "param": param, "code": code}
    return RequestError(status, {"error": error})


@dataclass(frozen=True)
class Plan:
    calls: tuple[CallSpec, ...]
    content: str | None
    finish_reason: str
    completion_id: str
    created: int
    system_fingerprint: str
    prompt_tokens: int
    completion_tokens: int

    @property
    def usage(self) -> dict[str, Any]:
        return make_usage(self.prompt_tokens, self.completion_tokens)


def request_seed(profile: str, body: dict[str, Any]) -> int:
    """``body["seed"]`` if given, else a hash of profile and body.

    ``stream`` and ``stream_options`` are left out of the hash so that the streaming and the
    non-streaming answer to one request carry the same calls (a client can compare them).
    """
    seed = body.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool):
        return seed
    canon = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    text = profile + "\n" + json.dumps(canon, sort_keys=True, ensure_ascii=False, default=str)
    return int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)


# --------------------------------------------------------------------------- messages


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return text_of(message)
    return ""


def _unanswered(pending: list[str]) -> RequestError:
    return openai_error(
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(map(str, pending)),
        param="messages",
    )


def check_history(messages: list[dict[str, Any]]) -> None:
    """Every assistant tool call answered by a tool message with its id, and vice versa.

    The error texts are OpenAI's (including its spelling), so clients see what they would see.
    """
    pending: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                raise openai_error(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'.",
                    param="messages",
                )
            pending.remove(message["tool_call_id"])
            continue
        if pending:
            raise _unanswered(pending)
        if role == "assistant":
            pending = [tc.get("id") for tc in message.get("tool_calls") or []]
    if pending:
        raise _unanswered(pending)


def round_trip_answer(messages: list[dict[str, Any]]) -> str:
    """A short answer built from the trailing tool results."""
    names: dict[Any, str] = {}
    for message in messages:
        for tc in message.get("tool_calls") or []:
            names[tc.get("id")] = (tc.get("function") or {}).get("name", "tool")
    results = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        name = names.get(message.get("tool_call_id"), "tool")
        results.append(f"{name} said {text_of(message).strip()[:60]!r}")
    return "Here is what I found: " + "; ".join(reversed(results)) + "."


def text_answer(user_text: str) -> str:
    topic = user_text.strip().rstrip("?!.") or "your question"
    return f"I can answer that without calling a tool: {topic[:80]}. Anything else?"


# --------------------------------------------------------------------------- arguments

_PLACES = ("Paris", "Tokyo", "Lisbon", "Nairobi", "Lima")
_WORDS = ("alpha", "report", "summary", "draft", "notes", "quarterly", "invoice")
_STRING_HINTS: tuple[tuple[str, str], ...] = (
    (r"body|content|essay|poem", "long"),
    (r"city|location|place|town|destination|address|country|region", "place"),
    (r"query|search|question|prompt|text|message|q$", "query"),
    (r"path|file", "notes.txt"),
    (r"url|link|uri", "https://example.com/docs"),
    (r"email", "ada@example.com"),
    (r"timezone|tz", "Asia/Tokyo"),
    (r"unit", "celsius"),
    (r"lang", "en"),
    (r"date|day", "2025-03-14"),
    (r"time", "09:30"),
    (r"name|user|person", "Ada"),
)


@dataclass(frozen=True)
class Hints:
    """What the user message suggests for string arguments."""

    places: tuple[str, ...]
    non_ascii: tuple[str, ...]
    query: str
    words: int = 0  # how long a text the user asked for ("a 500-word essay", "20 lines")

    @classmethod
    def from_text(cls, text: str) -> Hints:
        words = re.findall(r"[^\W\d_][\w'-]*", text)
        non_ascii = tuple(w for w in words if len(w) > 2 and not w.isascii())
        proper = tuple(w for w in words[1:] if w[0].isupper() and len(w) > 2)
        places = tuple(dict.fromkeys(non_ascii + proper)) or _PLACES
        return cls(
            places, non_ascii, " ".join(text.split())[:60] or "latest news", _asked_length(text)
        )


_NUMBERS = {"ten": 10, "twenty": 20, "thirty": 30, "fifty": 50, "hundred": 100}
_WORDS_PER_LINE = 6


def _asked_length(text: str) -> int:
    """The words a long text should have: what the user asked, as a model would write it
    (a max_tokens budget then cuts it, as it cuts a real model's)."""
    if m := re.search(r"(\d+)[- ]word", text):
        return min(int(m.group(1)), 2000)
    if m := re.search(r"(\d+|" + "|".join(_NUMBERS) + r") (?:lines|items)", text, re.I):
        n = m.group(1).lower()
        return min(int(n) if n.isdigit() else _NUMBERS[n], 300) * _WORDS_PER_LINE
    return 0


def long_text(rng: random.Random, words: int) -> str:
    out = []
    for i in range(words):
        out.append(
            rng.choice(_WORDS) + ("\n" if i % _WORDS_PER_LINE == _WORDS_PER_LINE - 1 else " ")
        )
    return "".join(out).strip()


def synthesize(schema: Any, rng: random.Random, hints: Hints, key: str = "", k: int = 0) -> Any:
    """A value for a JSON schema: required properties always, optional ones by coin toss.

    ``k`` is the call's ordinal, so several calls of one tool ask about different places.
    """
    if not isinstance(schema, dict):
        return {}
    if "enum" in schema and schema["enum"]:
        return rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    for combinator in ("anyOf", "oneOf", "allOf"):
        if schema.get(combinator):
            return synthesize(schema[combinator][0], rng, hints, key, k)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((t for t in kind if t != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        props = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        return {
            name: synthesize(sub, rng, hints, name, k)
            for name, sub in props.items()
            if name in required or rng.random() < 0.5
        }
    if kind == "array":
        return [
            synthesize(schema.get("items"), rng, hints, key, k) for _ in range(rng.randint(1, 2))
        ]
    if kind == "integer":
        lo, hi = schema.get("minimum", 1), schema.get("maximum", max(schema.get("minimum", 1), 10))
        return rng.randint(int(lo), int(hi))
    if kind == "number":
        return round(rng.uniform(schema.get("minimum", 0), schema.get("maximum", 100)), 1)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return _string(key, rng, hints, k)


def _string(key: str, rng: random.Random, hints: Hints, k: int) -> str:
    for pattern, value in _STRING_HINTS:
        if re.search(pattern, key, re.IGNORECASE):
            if value == "place":
                return hints.places[k % len(hints.places)]
            if value == "query":
                return hints.query
            if value == "long":
                return long_text(rng, hints.words) if hints.words else rng.choice(_WORDS)
            return value
    # The user wrote non-ASCII: make sure the arguments carry some too.
    if hints.non_ascii:
        return hints.non_ascii[k % len(hints.non_ascii)]
    return rng.choice(_WORDS)


# --------------------------------------------------------------------------- the plan


def _functions(body: dict[str, Any]) -> list[dict[str, Any]]:
    tools = body.get("tools") or []
    if not isinstance(tools, list):
        raise openai_error(400, "Invalid type for 'tools': expected an array.", param="tools")
    out = []
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise openai_error(
                400, f"Missing required parameter: 'tools[{i}].function.name'.", param="tools"
            )
        out.append(function)
    return out


def _chosen(body: dict[str, Any], functions: list[dict[str, Any]]) -> str | None:
    """``None`` for a text answer, else the tool_choice mode or the named function."""
    choice = body.get("tool_choice") or ("auto" if functions else "none")
    if choice == "none" or not functions and choice == "auto":
        return None
    if not functions:
        raise openai_error(
            400,
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' "
            "are specified.",
            param="tool_choice",
        )
    if choice in ("auto", "required"):
        return choice
    name = ((choice or {}).get("function") or {}).get("name") if isinstance(choice, dict) else None
    if name not in {f["name"] for f in functions}:
        raise openai_error(
            400,
            f"Invalid value for 'tool_choice': no function named {name!r} was specified "
            "in the 'tools' parameter.",
            param="tool_choice",
        )
    return f"named:{name}"


def _ranked(functions: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """Functions whose name words appear in the user text first (stable otherwise)."""
    words = set(re.findall(r"\w+", text.lower()))

    def score(function: dict[str, Any]) -> int:
        return -len(set(re.split(r"[_\W]+", function["name"].lower())) & words)

    return sorted(functions, key=score)


def _count_calls(functions: list[dict[str, Any]], text: str, parallel: bool) -> int:
    """Several calls when parallel calls are allowed and there are several tools or asks."""
    if not parallel:
        return 1
    asks = 1 + len(re.findall(r"\band\b|&|;", text, re.IGNORECASE))
    return min(3, max(asks, len(functions) if len(functions) >= 2 else 1))


def _budget(body: dict[str, Any]) -> int | None:
    """The character budget from ``max_completion_tokens``/``max_tokens`` (4 chars a token)."""
    limit = next(
        (body[k] for k in ("max_completion_tokens", "max_tokens") if body.get(k) is not None), None
    )
    if limit is None:
        return None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise openai_error(400, "Invalid 'max_tokens': must be a positive integer.")
    return 4 * limit


def _cut_calls(calls: list[CallSpec], budget: int) -> tuple[list[CallSpec], bool]:
    kept: list[CallSpec] = []
    left = budget
    for call in calls:
        if left <= 0:
            return kept, True
        if len(call.arguments) > left:
            return kept + [replace(call, arguments=call.arguments[:left])], True
        kept.append(call)
        left -= len(call.arguments)
    return kept, False


def plan_reply(
    body: dict[str, Any], rng: random.Random, *, ignore_parallel_false: bool = False
) -> Plan:
    """The answer to ``body``: a text answer, or tool calls synthesised from the tools."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise openai_error(400, "Missing required parameter: 'messages'.", param="messages")
    if not all(isinstance(m, dict) for m in messages):
        raise openai_error(400, "Invalid type for 'messages': expected objects.", param="messages")
    completion_id = "chatcmpl-" + random_token(rng, 29)
    created = rng.randrange(1_700_000_000, 1_800_000_000)
    fingerprint = "fp_" + random_token(rng, 10, "0123456789abcdef")
    functions = _functions(body)
    user_text = _last_user_text(messages)
    calls: list[CallSpec] = []
    content: str | None = None
    if messages[-1].get("role") == "tool":
        content = round_trip_answer(messages)
    elif (mode := _chosen(body, functions)) is None:
        content = text_answer(user_text)
    else:
        if mode.startswith("named:"):
            picked = [next(f for f in functions if f["name"] == mode[6:])]
        else:
            parallel = body.get("parallel_tool_calls") is not False or ignore_parallel_false
            ranked = _ranked(functions, user_text)
            n = _count_calls(functions, user_text, parallel)
            picked = [ranked[k % len(ranked)] for k in range(n)]
        hints = Hints.from_text(user_text)
        for k, function in enumerate(picked):
            args = synthesize(function.get("parameters") or {"type": "object"}, rng, hints, k=k)
            calls.append(
                CallSpec(new_call_id(rng), function["name"], json.dumps(args, ensure_ascii=False))
            )
    truncated = False
    budget = _budget(body)
    if budget is not None:
        if calls:
            calls, truncated = _cut_calls(calls, budget)
        elif content is not None and len(content) > budget:
            content, truncated = content[:budget], True
    finish = "length" if truncated else ("tool_calls" if calls else "stop")
    spoken = (content or "") + "".join(c.name + c.arguments for c in calls)
    prompt = json.dumps(messages, ensure_ascii=False) + json.dumps(functions, ensure_ascii=False)
    return Plan(
        calls=tuple(calls),
        content=content,
        finish_reason=finish,
        completion_id=completion_id,
        created=created,
        system_fingerprint=fingerprint,
        prompt_tokens=estimate_tokens(prompt),
        completion_tokens=estimate_tokens(spoken) + 3 * len(calls),
    )


def break_strict_schema(plan: Plan, body: dict[str, Any]) -> Plan:
    """Q-STRICT-IGNORED: calls to a `strict: true` tool get an undeclared property, which
    `additionalProperties: false` forbids, as a layer that ignores `strict` may produce."""
    strict = {f.get("name") for f in _functions(body) if f.get("strict") is True}
    calls = []
    for call in plan.calls:
        if call.name in strict:
            args = json.loads(call.arguments or "{}")
            args["note"] = "added although the schema is strict"
            call = replace(call, arguments=json.dumps(args, ensure_ascii=False))
        calls.append(call)
    return replace(plan, calls=tuple(calls))


def completion_body(plan: Plan, model: str) -> dict[str, Any]:
    """OpenAI's non-streaming ``chat.completion`` for the same plan."""
    message: dict[str, Any] = {"role": "assistant", "content": plan.content}
    if plan.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in plan.calls
        ]
    message["refusal"] = None
    message["annotations"] = []
    return {
        "id": plan.completion_id,
        "object": "chat.completion",
        "created": plan.created,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": plan.finish_reason}
        ],
        "usage": plan.usage,
        "system_fingerprint": plan.system_fingerprint,
    }
