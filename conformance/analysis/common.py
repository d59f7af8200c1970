"""Field sets and small helpers shared by the analyzer and several detector groups."""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any, TypeGuard

REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text", "reasoning_details")
MAX_TOKENS_KEYS = ("max_tokens", "max_completion_tokens")


# json.dumps(value, ensure_ascii=False, separators=(",", ":")), without a new encoder
# for each call (json.dumps keeps one only for its default arguments).
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_KEY = encode_basestring  # a string key, as _COMPACT writes it (ensure_ascii=False)


def _excerpt(value: Any, limit: int = 160) -> str:
    if isinstance(value, str):
        text = value
    elif type(value) is dict or type(value) is list:
        text = _compact_head(value, limit)
    else:
        text = _COMPACT(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compact_head(value: dict[Any, Any] | list[Any], room: int) -> str:
    """``_COMPACT(value)``, or a prefix of it longer than ``room`` characters: all that an
    excerpt of ``room`` characters shows. A chunk quoted as an excerpt (the usage chunk of
    every stream) is not encoded whole: its members are, one after the other, until the
    text is longer than the excerpt (a member's text is the same alone as in its
    container, and a member is given only the room left). The commonest members (a
    string, an int, null, a container) are written here, not by the encoder's Python."""
    is_dict = type(value) is dict
    out, size, close = (["{"], 1, "}") if is_dict else (["["], 1, "]")
    try:
        for member in value.items() if is_dict else value:  # type: ignore[union-attr]
            if size > room:
                return "".join(out)
            if is_dict:
                k, v = member
                piece = ("," if size > 1 else "") + _KEY(k) + ":"
            else:
                v, piece = member, "," if size > 1 else ""
            t = type(v)
            if t is str:
                inner = _KEY(v)
            elif t is int:
                inner = int.__repr__(v)
            elif v is None:
                inner = "null"
            elif t is dict or t is list:
                inner = _compact_head(v, room - size - len(piece))
            else:
                inner = _COMPACT(v)
            out += (piece, inner)
            size += len(piece) + len(inner)
    except TypeError:  # a key that is no string (not from a parse): JSON writes it otherwise
        return _COMPACT(value)
    out.append(close)
    return "".join(out)


def json_type(value: Any) -> str:
    """A parsed JSON value's type in JSON's words, with its article: ``null``, ``a
    boolean``, ``a number``, ``a string``, ``an array``, ``an object`` (messages speak
    JSON, never Python's type names)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object"


def _nonempty(v: Any) -> TypeGuard[str]:
    return isinstance(v, str) and v != ""


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _carries(tc: dict[str, Any]) -> bool:
    """A tool-call delta that brings anything (an id, a name or an argument fragment)."""
    fn = _v if isinstance(_v := tc.get("function"), dict) else {}
    args = fn.get("arguments")
    return (
        _nonempty(tc.get("id"))
        or _nonempty(fn.get("name"))
        or _nonempty(args)
        or (args is not None and not isinstance(args, str))
    )


def _usage_requested(req: dict[str, Any]) -> bool:
    opts = req.get("stream_options")
    return bool(req.get("stream")) and isinstance(opts, dict) and opts.get("include_usage") is True


def _is_roundtrip(req: dict[str, Any] | None) -> bool:
    msgs = (req or {}).get("messages")
    return isinstance(msgs, list) and any(
        isinstance(m, dict) and m.get("role") == "tool" for m in msgs
    )


def _one_line(text: str) -> str:
    """Server text quoted in a message or a reason: one line (whitespace runs collapsed)."""
    return " ".join(text.split())


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        msg = err.get("message") or err.get("msg") or json.dumps(err)[:120]
        return _one_line(str(msg))[:200]
    return _one_line(str(err))[:200]


def _body_message(raw: bytes | None) -> str:
    if not raw:
        return "(empty body)"
    text = raw[:4000].decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        first = " ".join(text.split())[:120]
        return first or "(empty body)"
    if isinstance(data, dict) and "error" in data:
        return _error_text(data["error"])
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return _one_line(data["message"])[:200]
    return _excerpt(data, 120)
