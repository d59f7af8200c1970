"""Streams as frames, OpenAI's reference stream, and one transform per catalogued quirk.

This is the single home of "inject quirk X into a conforming stream". The reference-profile
server and the analyzer's mutation self-test both use it, so a negative control and the
server profile that serves it can never drift apart.

A stream is a list of frames: a ``dict`` is one chunk object (``data: <compact json>``),
``Raw`` is literal SSE text, ``Done`` is ``data: [DONE]`` and ``Stall`` is a pause the server
sleeps. Every transform in ``MUTATIONS`` is pure (it deep-copies its input), deterministic
given its ``random.Random`` and minimal: it injects its quirk, modelled on the wire example
in the quirk catalogue (docs/quirks.md), and nothing else. Transforms expect a
``reference_stream`` (one tool-call delta per chunk, calls keyed by ``index``); ones that
reorder calls assume calls are not interleaved, which is OpenAI's own shape.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import random
import re
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from conformance import registry

Chunk: TypeAlias = dict[str, Any]


@dataclass(frozen=True)
class Raw:
    """Literal SSE text written as-is (comments, non-JSON data, ``event:`` lines)."""

    text: str


@dataclass(frozen=True)
class Done:
    """The ``data: [DONE]`` terminator."""


@dataclass(frozen=True)
class Stall:
    """A pause of ``seconds`` before the next frame; renders as nothing."""

    seconds: float


Frame: TypeAlias = Chunk | Raw | Done | Stall
Mutation: TypeAlias = Callable[[list[Frame], random.Random], list[Frame]]


@dataclass(frozen=True)
class CallSpec:
    """One tool call as the model means it: the stream must assemble to exactly this."""

    id: str
    name: str
    arguments: str


DEFAULT_STALL_SECONDS = 3.0
_B62 = string.ascii_letters + string.digits


# --------------------------------------------------------------------------- rendering


def dumps(obj: Any) -> str:
    """Compact JSON with raw UTF-8, as OpenAI writes its events."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def render_frame(frame: Frame) -> bytes:
    if isinstance(frame, dict):
        return f"data: {dumps(frame)}\n\n".encode()
    if isinstance(frame, Raw):
        return frame.text.encode()
    if isinstance(frame, Done):
        return b"data: [DONE]\n\n"
    if isinstance(frame, Stall):
        return b""
    raise TypeError(f"not a frame: {frame!r}")


def render_sse(frames: Iterable[Frame]) -> bytes:
    return b"".join(render_frame(f) for f in frames)


def parse_sse(raw: bytes) -> list[Frame]:
    """The frames of a body ``render_sse`` wrote (stalls are invisible): for tests."""
    frames: list[Frame] = []
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        if block.startswith("data: ") and "\n" not in block:
            if block == "data: [DONE]":
                frames.append(Done())
                continue
            try:
                chunk = json.loads(block[6:])
            except ValueError:
                chunk = None
            if isinstance(chunk, dict):
                frames.append(chunk)
                continue
        frames.append(Raw(block + "\n\n"))
    return frames


# --------------------------------------------------------------------------- reference


def random_token(rng: random.Random, n: int, alphabet: str = _B62) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def new_call_id(rng: random.Random) -> str:
    return "call_" + random_token(rng, 24)


def split_fragments(text: str, rng: random.Random, lo: int = 1, hi: int = 12) -> list[str]:
    """Token-sized slices of ``text`` (anywhere in the str, escapes included)."""
    out, i = [], 0
    while i < len(text):
        n = rng.randint(lo, hi)
        out.append(text[i : i + n])
        i += n
    return out


def split_words(text: str) -> list[str]:
    """Word-sized slices (``"a b"`` -> ``["a", " b"]``), joined they give ``text`` back."""
    return [p for p in re.split(r"(?=\s)", text) if p]


def make_usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def estimate_tokens(text: str) -> int:
    """The server's token model: about one token per four characters."""
    return math.ceil(len(text) / 4)


def _make_chunk(env: Chunk, delta: dict[str, Any], finish: str | None = None) -> Chunk:
    chunk = {k: v for k, v in env.items() if k not in ("choices", "usage")}
    chunk["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    if "usage" in env:
        chunk["usage"] = None
    return chunk


def _call_deltas(index: int, call: CallSpec, rng: random.Random) -> list[dict[str, Any]]:
    opener = {
        "index": index,
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": ""},
    }
    frags = split_fragments(call.arguments, rng)
    return [opener] + [{"index": index, "function": {"arguments": f}} for f in frags]


def reference_stream(
    calls: Sequence[CallSpec],
    *,
    rng: random.Random,
    model: str,
    include_usage: bool = False,
    content: str | None = None,
    completion_id: str | None = None,
    created: int | None = None,
    system_fingerprint: str | None = None,
    interleave: bool = False,
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
) -> list[Frame]:
    """OpenAI's stream for ``calls`` (and optional leading ``content``), exactly as recorded.

    ``finish_reason`` defaults to ``tool_calls`` when there are calls, else ``stop``. With
    ``include_usage`` every chunk carries ``usage: null`` and a final ``choices: []`` chunk
    carries ``usage`` (Q-USAGE-EMPTY-CHOICES is reference behaviour, not a quirk).
    """
    env: Chunk = {
        "id": completion_id or "chatcmpl-" + random_token(rng, 29),
        "object": "chat.completion.chunk",
        "created": created if created is not None else rng.randrange(1_700_000_000, 1_800_000_000),
        "model": model,
        "system_fingerprint": system_fingerprint
        or "fp_" + random_token(rng, 10, "0123456789abcdef"),
    }
    if include_usage:
        env["usage"] = None
    frames: list[Frame] = []
    if content is None:
        frames.append(_make_chunk(env, {"role": "assistant", "content": None}))
    else:
        frames.append(_make_chunk(env, {"role": "assistant", "content": "", "refusal": None}))
        frames += [_make_chunk(env, {"content": w}) for w in split_words(content)]
    per_call = [_call_deltas(i, c, rng) for i, c in enumerate(calls)]
    if interleave:
        order = []
        for step in range(max((len(d) for d in per_call), default=0)):
            order += [d[step] for d in per_call if step < len(d)]
    else:
        order = [d for deltas in per_call for d in deltas]
    frames += [_make_chunk(env, {"tool_calls": [d]}) for d in order]
    finish = finish_reason or ("tool_calls" if calls else "stop")
    frames.append(_make_chunk(env, {}, finish))
    if include_usage:
        if usage is None:
            text = (content or "") + "".join(c.name + c.arguments for c in calls)
            usage = make_usage(0, estimate_tokens(text))
        usage_chunk = {k: v for k, v in env.items() if k != "usage"}
        usage_chunk["choices"] = []
        usage_chunk["usage"] = usage
        frames.append(usage_chunk)
    frames.append(Done())
    return frames


# --------------------------------------------------------------------------- helpers


def _choice(frame: Frame | None) -> dict[str, Any] | None:
    if isinstance(frame, dict) and frame.get("choices"):
        choice = frame["choices"][0]
        return choice if isinstance(choice, dict) else None
    return None


def _delta(frame: Frame | None) -> dict[str, Any] | None:
    choice = _choice(frame)
    return choice.get("delta") if choice else None


def _tool_deltas(frames: Sequence[Frame | None]) -> list[tuple[int, dict[str, Any]]]:
    """(frame position, tool-call delta) in wire order."""
    out = []
    for pos, frame in enumerate(frames):
        delta = _delta(frame)
        for tc in (delta or {}).get("tool_calls") or []:
            out.append((pos, tc))
    return out


def _calls(frames: Sequence[Frame | None]) -> list[list[tuple[int, dict[str, Any]]]]:
    """Tool-call deltas grouped per call (by ``index``), calls in first-seen order."""
    groups: dict[Any, list[tuple[int, dict[str, Any]]]] = {}
    for pos, tc in _tool_deltas(frames):
        groups.setdefault(tc.get("index"), []).append((pos, tc))
    return list(groups.values())


def _args(tc: dict[str, Any]) -> str:
    return (tc.get("function") or {}).get("arguments") or ""


def _specs(frames: Sequence[Frame | None]) -> list[CallSpec]:
    """The calls a reference stream carries."""
    specs = []
    for group in _calls(frames):
        opener = group[0][1]
        name = (opener.get("function") or {}).get("name") or ""
        specs.append(CallSpec(opener.get("id") or "", name, "".join(_args(tc) for _, tc in group)))
    return specs


def _template(frames: Sequence[Frame | None]) -> Chunk:
    """A chunk whose envelope new chunks copy."""
    for frame in frames:
        if _choice(frame) is not None:
            return frame  # type: ignore[return-value]
    raise ValueError("stream has no chunk with choices")


def _like(
    frames: Sequence[Frame | None], delta: dict[str, Any], finish: str | None = None
) -> Chunk:
    return _make_chunk(copy.deepcopy(_template(frames)), delta, finish)


def _finish_positions(frames: Sequence[Frame | None]) -> list[int]:
    return [
        p for p, f in enumerate(frames) if (c := _choice(f)) and c.get("finish_reason") is not None
    ]


def _end(frames: Sequence[Frame | None]) -> int:
    """Position of ``[DONE]`` (or the end): insertions go before it."""
    for pos, frame in enumerate(frames):
        if isinstance(frame, Done):
            return pos
    return len(frames)


def _first_chunk(frames: Sequence[Frame | None]) -> int:
    return next(p for p, f in enumerate(frames) if isinstance(f, dict))


def _discard(frames: list[Frame | None], pos: int, tc: dict[str, Any]) -> None:
    """Remove one tool-call delta; a chunk left with nothing to say is removed too."""
    chunk = frames[pos]
    delta = _delta(chunk)
    assert delta is not None
    delta["tool_calls"] = [t for t in delta["tool_calls"] if t is not tc]
    if not delta["tool_calls"]:
        del delta["tool_calls"]
        if not delta and _choice(chunk).get("finish_reason") is None:  # type: ignore[union-attr]
            frames[pos] = None


def _compact(frames: list[Frame | None]) -> list[Frame]:
    return [f for f in frames if f is not None]


def _mid_call_cut(frames: Sequence[Frame | None], rng: random.Random) -> int:
    """A position right after an argument fragment (else a content chunk), not the last one.

    Cutting after a fragment rather than an opener leaves partial arguments behind, the
    dangerous case for a client (a half-built call that looks usable).
    """
    positions = sorted({p for p, tc in _tool_deltas(frames) if _args(tc)})
    if not positions:
        positions = [p for p, f in enumerate(frames) if (_delta(f) or {}).get("content")]
    if len(positions) >= 2:
        return rng.choice(positions[:-1]) + 1
    return (positions[0] if positions else _first_chunk(frames)) + 1


def _collapse(frames: list[Frame | None]) -> None:
    """Each call's arguments whole on its opening delta; the continuations removed."""
    for group in _calls(frames):
        (_, opener), rest = group[0], group[1:]
        opener.setdefault("function", {})["arguments"] = "".join(_args(tc) for _, tc in group)
        for pos, tc in rest:
            _discard(frames, pos, tc)


def _with_id(tc: dict[str, Any], value: str) -> dict[str, Any]:
    """``tc`` with an ``id`` key placed right after ``index``, as providers write it."""
    out = {"index": tc["index"], "id": value} if "index" in tc else {"id": value}
    out.update((k, v) for k, v in tc.items() if k not in ("index", "id"))
    return out


def _with_name(tc: dict[str, Any], name: str) -> None:
    tc["function"] = {"name": name, **{k: v for k, v in tc["function"].items() if k != "name"}}


def _replace_tool_section(frames: list[Frame | None], new: list[Chunk]) -> None:
    """Remove every tool-call delta and put ``new`` chunks where the first one was."""
    deltas = _tool_deltas(frames)
    at = deltas[0][0] if deltas else (_finish_positions(frames) or [_end(frames)])[0]
    for pos, tc in deltas:
        _discard(frames, pos, tc)
    frames[at:at] = new


def _markup(spec: CallSpec) -> str:
    try:
        args: Any = json.loads(spec.arguments or "{}")
    except ValueError:
        args = spec.arguments
    body = json.dumps({"name": spec.name, "arguments": args}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>"


def _content_chunks(frames: Sequence[Frame | None], text: str, rng: random.Random) -> list[Chunk]:
    """Token-sized content chunks; a ``<tool_call>`` tag is one token, as Ollama sent it."""
    pieces: list[str] = []
    for part in re.split(r"(</?tool_call>)", text):
        pieces += (
            [part] if part.startswith("<") and part.endswith("l>") else split_fragments(part, rng)
        )
    return [_like(frames, {"content": p}) for p in pieces if p]


def _set_finish(frames: Sequence[Frame | None], old: str | None, new: Any) -> None:
    for pos in _finish_positions(frames):
        choice = _choice(frames[pos])
        if choice is not None and (old is None or choice["finish_reason"] == old):
            choice["finish_reason"] = new


def _mutation(fn: Callable[[list[Frame | None], random.Random], list[Frame | None] | None]):
    """Run ``fn`` on a deep copy; it edits in place (or returns a new list)."""

    @functools.wraps(fn)
    def wrapper(frames: list[Frame], rng: random.Random) -> list[Frame]:
        work: list[Frame | None] = copy.deepcopy(list(frames))
        result = fn(work, rng)
        return _compact(work if result is None else result)

    return wrapper


# --------------------------------------------------------------------------- A. SSE framing


@_mutation
def sse_comment_keepalive(frames, rng):
    """Q-SSE-COMMENT-KEEPALIVE: ``: OPENROUTER PROCESSING`` comments, one more mid-stream."""
    frames.insert(rng.randrange(_first_chunk(frames) + 1, _end(frames) + 1), Raw(": ping\n\n"))
    frames[0:0] = [Raw(": OPENROUTER PROCESSING\n\n")] * 2


@_mutation
def sse_keepalive_as_data(frames, rng):
    """Q-SSE-KEEPALIVE-AS-DATA: ``data: : keepalive`` events, before and inside the stream."""
    frames.insert(_mid_call_cut(frames, rng), Raw("data: : keepalive\n\n"))
    frames.insert(0, Raw("data: : keepalive\n\n"))


@_mutation
def sse_done_missing(frames, rng):
    """Q-SSE-DONE-MISSING: the body ends after the last chunk, no ``data: [DONE]`` (Cerebras)."""
    return [f for f in frames if not isinstance(f, Done)]


@_mutation
def sse_error_envelope(frames, rng):
    """Q-SSE-ERROR-ENVELOPE: a bare ``{"error": …}`` event mid-call, nothing after (OpenAI)."""
    error = {
        "error": {
            "message": "The server had an error while processing your request. Sorry about that!",
            "type": "server_error",
        }
    }
    return frames[: _mid_call_cut(frames, rng)] + [error]


@_mutation
def sse_error_event(frames, rng):
    """Q-SSE-ERROR-ENVELOPE (variant): an ``event: error`` SSE event mid-call, nothing after."""
    body = {"error": {"message": "Internal server error", "type": "server_error", "code": 500}}
    return frames[: _mid_call_cut(frames, rng)] + [Raw(f"event: error\ndata: {dumps(body)}\n\n")]


@_mutation
def sse_error_in_chunk(frames, rng):
    """Q-SSE-ERROR-IN-CHUNK: a chunk with ``choices: []`` and ``error`` mid-call (OpenRouter)."""
    cut = _mid_call_cut(frames, rng)
    error = {k: v for k, v in _template(frames).items() if k not in ("choices", "usage")}
    error["choices"] = []
    error["error"] = {"code": 502, "message": "Worker local total request limit reached (33/32)"}
    tail = [Done()] if any(isinstance(f, Done) for f in frames) else []
    return frames[:cut] + [error] + tail


@_mutation
def stream_stalls(frames, rng):
    """Q-STREAM-STALLS: the stream pauses mid-call (MiniMax); not visible in the bytes."""
    frames.insert(_mid_call_cut(frames, rng), Stall(DEFAULT_STALL_SECONDS))


BURST_SILENCE = 1.5  # seconds: a silence the timing findings judge (at least 1 s)


def _first_tool_frame(frames: Sequence[Frame | None]) -> int | None:
    return next((pos for pos, tc in _tool_deltas(frames)), None)


@_mutation
def args_not_progressive(frames, rng):
    """Q-ARGS-NOT-PROGRESSIVE: a silence, then every fragment at once, then the finish."""
    first = _first_tool_frame(frames)
    if first is not None:
        finish = next(p for p in _finish_positions(frames) if p > first)
        frames.insert(finish, Stall(BURST_SILENCE))
        frames.insert(first, Stall(BURST_SILENCE))


@_mutation
def toolcall_held_until_finish(frames, rng):
    """Q-TOOLCALL-HELD-UNTIL-FINISH: a silence, then the calls and the finish at once."""
    first = _first_tool_frame(frames)
    if first is not None:
        frames.insert(first, Stall(BURST_SILENCE))


# --------------------------------------------------------------------------- B. envelope


@_mutation
def usage_placement(frames, rng):
    """Q-USAGE-PLACEMENT: usage on the finish chunk, no ``choices: []`` usage chunk (Z.AI)."""
    usage = None
    for pos, frame in enumerate(frames):
        if isinstance(frame, dict) and frame.get("choices") == [] and frame.get("usage"):
            usage, frames[pos] = frame["usage"], None
    if usage is None:
        text = "".join(s.name + s.arguments for s in _specs(frames))
        usage = make_usage(0, estimate_tokens(text))
    for pos in _finish_positions(frames)[-1:]:
        frames[pos]["usage"] = usage


@_mutation
def azure_prompt_filter_chunk(frames, rng):
    """Q-AZURE-PROMPT-FILTER-CHUNK: a first chunk with ``choices: []``, blank envelope, filters."""
    safe = {"filtered": False, "severity": "safe"}
    results = {
        "hate": safe,
        "jailbreak": {"detected": False, "filtered": False},
        "self_harm": safe,
        "sexual": safe,
        "violence": safe,
    }
    chunk = {
        "choices": [],
        "created": 0,
        "id": "",
        "model": "",
        "object": "",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": results}],
    }
    frames.insert(_first_chunk(frames), chunk)


@_mutation
def azure_choice_without_delta(frames, rng):
    """Q-AZURE-CHOICE-WITHOUT-DELTA: a choice with only content-filter annotations, no delta."""
    chunk = _like(frames, {})
    safe = {"filtered": False, "severity": "safe"}
    choice = chunk["choices"][0]
    del choice["delta"], choice["logprobs"]
    choice["content_filter_results"] = {"hate": safe, "self_harm": safe, "violence": safe}
    choice["content_filter_offsets"] = {"check_offset": 44, "start_offset": 44, "end_offset": 198}
    frames.insert(_mid_call_cut(frames, rng), chunk)


@_mutation
def envelope_fields_missing(frames, rng):
    """Q-ENVELOPE-FIELDS-MISSING: choices without ``index``, null keys left out (Cloudflare)."""
    for frame in frames:
        choices = frame.get("choices") if isinstance(frame, dict) else None
        for choice in choices or []:
            choice.pop("index", None)
            for key in ("finish_reason", "logprobs"):
                if key in choice and choice[key] is None:
                    del choice[key]


@_mutation
def chunk_id_unstable(frames, rng):
    """Q-CHUNK-ID-UNSTABLE: the chunk ``id`` changes on every chunk (Foundry ``chat.id.N``)."""
    n = rng.randrange(1000, 9000)
    for frame in frames:
        if isinstance(frame, dict) and "id" in frame:
            frame["id"], n = f"chat.id.{n}", n + 1


@_mutation
def extra_fields(frames, rng):
    """Q-EXTRA-FIELDS: ``obfuscation`` on every chunk, ``native_finish_reason`` on choices."""
    for frame in frames:
        if isinstance(frame, dict) and "object" in frame:
            for choice in frame.get("choices") or []:
                choice["native_finish_reason"] = choice.get("finish_reason")
            frame["obfuscation"] = random_token(rng, rng.randint(2, 14))


@_mutation
def toolcalls_empty_array(frames, rng):
    """Q-TOOLCALLS-EMPTY-ARRAY: ``"tool_calls": []`` on deltas that carry something else."""
    for frame in frames:
        delta = _delta(frame)
        if delta and "tool_calls" not in delta:
            delta["tool_calls"] = []


@_mutation
def toolcalls_not_array(frames, rng):
    """Q-TOOLCALLS-NOT-ARRAY: each one-call ``tool_calls`` array sent as the bare object."""
    for frame in frames:
        delta = _delta(frame)
        tcs = delta.get("tool_calls") if delta else None
        if isinstance(tcs, list) and len(tcs) == 1:
            delta["tool_calls"] = tcs[0]


@_mutation
def empty_delta_chunks(frames, rng):
    """Q-EMPTY-DELTA-CHUNKS: a run of ``"delta":{}`` chunks before the tool call (xAI)."""
    at = _first_chunk(frames) + 1
    frames[at:at] = [_like(frames, {}) for _ in range(rng.randint(2, 4))]


# --------------------------------------------------------------------------- C. index


def _strip_index(frames: Sequence[Frame | None]) -> None:
    for _, tc in _tool_deltas(frames):
        tc.pop("index", None)


@_mutation
def index_absent(frames, rng):
    """Q-INDEX-ABSENT: no ``index`` on any tool-call delta, arguments fragmented (Ollama legacy)."""
    _strip_index(frames)


@_mutation
def index_absent_whole_call(frames, rng):
    """Q-INDEX-ABSENT-WHOLE-CALL: every call whole and index-less, all in one delta (Gemini)."""
    specs = _specs(frames)
    whole = [
        {"id": s.id, "type": "function", "function": {"name": s.name, "arguments": s.arguments}}
        for s in specs
    ]
    _replace_tool_section(frames, [_like(frames, {"tool_calls": whole})] if whole else [])


@_mutation
def index_absent_parallel_split(frames, rng):
    """Q-INDEX-ABSENT-PARALLEL-SPLIT: index-less whole calls, one chunk each (Gemini compat)."""
    _collapse(frames)
    _strip_index(frames)


@_mutation
def index_nonzero_start(frames, rng):
    """Q-INDEX-NONZERO-START: tool-call indices start at 1 (Bedrock translators)."""
    for _, tc in _tool_deltas(frames):
        tc["index"] += 1


@_mutation
def index_all_zero(frames, rng):
    """Q-INDEX-ALL-ZERO: every call on index 0, each with its own id (Ollama parallel; LibreChat's index-repair fix)."""
    for _, tc in _tool_deltas(frames):
        tc["index"] = 0


@_mutation
def index_reused_across_calls(frames, rng):
    """Q-INDEX-REUSED-ACROSS-CALLS (variant b): later calls go on index 0 with no new id."""
    for group in _calls(frames)[1:]:
        for _, tc in group:
            tc["index"] = 0
            tc.pop("id", None)
            tc.pop("type", None)
            (tc.get("function") or {}).pop("name", None)


@_mutation
def index_and_id_reused(frames, rng):
    """Q-INDEX-AND-ID-REUSED: later calls reuse the first call's index and id, own name kept."""
    calls = _calls(frames)
    if not calls:
        return
    first = calls[0][0][1]
    for group in calls[1:]:
        for _, tc in group:
            tc["index"] = first["index"]
            if "id" in tc:
                tc["id"] = first.get("id")


@_mutation
def index_inconsistent_within_call(frames, rng):
    """Q-INDEX-INCONSISTENT-WITHIN-CALL: a call's opener on one index, its arguments on another."""
    calls = _calls(frames)
    for group in calls:
        group[0][1]["index"] += len(calls)


# --------------------------------------------------------------------------- D. id


@_mutation
def id_absent(frames, rng):
    """Q-ID-ABSENT: the opening delta has no ``id`` key (Ollama, watsonx)."""
    for _, tc in _tool_deltas(frames):
        tc.pop("id", None)


def _set_continuations(frames: list[Frame | None], fn: Callable[[dict, dict], dict]) -> None:
    """Replace every continuation delta ``tc`` by ``fn(opener, tc)``."""
    for group in _calls(frames):
        opener = group[0][1]
        for pos, tc in group[1:]:
            tcs = _delta(frames[pos])["tool_calls"]  # type: ignore[index]
            tcs[next(i for i, t in enumerate(tcs) if t is tc)] = fn(opener, tc)


@_mutation
def empty_string_overwrite(frames, rng):
    """Q-EMPTY-STRING-OVERWRITE: ``id: ""`` and ``name: ""`` on continuations (DashScope)."""

    def blank(opener, tc):
        out = _with_id(tc, "")
        _with_name(out, "")
        return out

    _set_continuations(frames, blank)


@_mutation
def id_repeated(frames, rng):
    """Q-ID-REPEATED: the opener's ``id`` repeated on every continuation (LocalAI, SGLang)."""
    _set_continuations(frames, lambda opener, tc: _with_id(tc, opener["id"]))


@_mutation
def id_changes_mid_call(frames, rng):
    """Q-ID-CHANGES-MID-CALL: a fresh ``call_…`` id on every continuation (GLM-4 server)."""
    _set_continuations(frames, lambda opener, tc: _with_id(tc, new_call_id(rng)))


@_mutation
def id_format(frames, rng):
    """Q-ID-FORMAT: ids such as ``functions.get_weather:0`` (Kimi K2 on Groq)."""
    for k, group in enumerate(_calls(frames)):
        opener = group[0][1]
        opener["id"] = f"functions.{opener['function']['name']}:{k}"


# --------------------------------------------------------------------------- E. type, name


@_mutation
def type_missing(frames, rng):
    """Q-TYPE-MISSING: the opening delta has no ``"type": "function"`` (vLLM named choice)."""
    for _, tc in _tool_deltas(frames):
        tc.pop("type", None)


@_mutation
def name_repeated(frames, rng):
    """Q-NAME-REPEATED: the full function name on every continuation (llama.cpp, vLLM 0.7.3)."""

    def repeat(opener, tc):
        _with_name(tc, opener["function"]["name"])
        return tc

    _set_continuations(frames, repeat)


def _insert_after(frames: list[Frame | None], pos: int, tc: dict[str, Any]) -> None:
    frames.insert(pos + 1, _like(frames, {"tool_calls": [tc]}))


@_mutation
def name_empty_opening_delta(frames, rng):
    """Q-NAME-EMPTY-OPENING-DELTA: opener has ``name: ""``, the real name comes next (vmlx)."""
    for group in reversed(_calls(frames)):
        pos, opener = group[0]
        name, opener["function"]["name"] = opener["function"]["name"], ""
        if len(group) > 1:
            _with_name(group[1][1], name)
        else:
            _insert_after(frames, pos, {"index": opener["index"], "function": {"name": name}})


@_mutation
def name_never_sent(frames, rng):
    """Q-NAME-NEVER-SENT: no delta of a call carries ``function.name`` (parser drops it)."""
    for group in _calls(frames):
        for _, tc in group:
            (tc.get("function") or {}).pop("name", None)


@_mutation
def name_after_arguments(frames, rng):
    """Q-NAME-AFTER-ARGUMENTS: ``function.name`` arrives after argument fragments."""
    for group in reversed(_calls(frames)):
        opener = group[0][1]
        name = opener["function"].pop("name")
        if len(group) > 2:
            _with_name(group[2][1], name)
        else:
            pos = group[-1][0]
            _insert_after(frames, pos, {"index": opener["index"], "function": {"name": name}})


@_mutation
def name_fragmented(frames, rng):
    """Q-NAME-FRAGMENTED: the name arrives in pieces, ``get_`` then ``weather`` (OpenAI)."""
    for group in reversed(_calls(frames)):
        pos, opener = group[0]
        name = opener["function"]["name"]
        if len(name) < 2:
            continue
        under = name.find("_")  # split as OpenAI's example does: ``get_`` + ``weather``
        cut = under + 1 if 0 < under < len(name) - 1 else rng.randrange(1, len(name))
        opener["function"]["name"] = name[:cut]
        _insert_after(frames, pos, {"index": opener["index"], "function": {"name": name[cut:]}})


# --------------------------------------------------------------------------- F. arguments


@_mutation
def args_whole_in_one_delta(frames, rng):
    """Q-ARGS-WHOLE-IN-ONE-DELTA: id, name and the full arguments in one delta (Groq, xAI)."""
    _collapse(frames)


@_mutation
def args_on_opening_delta(frames, rng):
    """Q-ARGS-ON-OPENING-DELTA: the opener also carries the first fragment (llama.cpp)."""
    for group in _calls(frames):
        if len(group) > 1:
            (_, opener), (pos, first) = group[0], group[1]
            opener["function"]["arguments"] = _args(opener) + _args(first)
            _discard(frames, pos, first)


@_mutation
def args_cumulative(frames, rng):
    """Q-ARGS-CUMULATIVE: each delta re-sends all arguments so far (DeepSeek, Qianfan)."""
    for group in _calls(frames):
        so_far = ""
        for _, tc in group:
            if "arguments" in (tc.get("function") or {}):
                so_far += tc["function"]["arguments"]
                tc["function"]["arguments"] = so_far


@_mutation
def args_duplicated_on_flush(frames, rng):
    """Q-ARGS-DUPLICATED-ON-FLUSH: the end-of-stream flush re-sends the whole arguments (vLLM)."""
    calls = _calls(frames)
    if calls:
        last = calls[-1]
        whole = "".join(_args(tc) for _, tc in last)
        tc = {"index": last[0][1]["index"], "function": {"arguments": whole}}
        _insert_after(frames, last[-1][0], tc)


@_mutation
def args_lost_multitoken_delta(frames, rng):
    """Q-ARGS-LOST-MULTITOKEN-DELTA: only the opener with ``""`` is streamed (vLLM parsers)."""
    for group in _calls(frames):
        for pos, tc in group[1:]:
            _discard(frames, pos, tc)


BUSY_FRAGMENTS_PER_DELTA = 4  # what one delta of a busy server carries (vLLM, 4 per step)


@_mutation
def delta_shape_load_dependent(frames, rng):
    """Q-DELTA-SHAPE-LOAD-DEPENDENT: the same calls as a busy server groups them (vLLM under load)."""
    for group in _calls(frames):
        if len(group) < 3:  # one fragment or none: nothing to regroup
            continue
        (_, opener), (pos, first), rest = group[0], group[1], group[2:]
        opener["function"]["arguments"] = _args(opener) + _args(first)  # on the opener
        _discard(frames, pos, first)
        for at in range(0, len(rest), BUSY_FRAGMENTS_PER_DELTA):
            (_, keep), *merged = rest[at : at + BUSY_FRAGMENTS_PER_DELTA]
            keep["function"]["arguments"] = _args(keep) + "".join(_args(tc) for _, tc in merged)
            for pos, tc in merged:
                _discard(frames, pos, tc)
    return finish_same_chunk_as_call(_compact(frames), rng)  # the last fragment ends the turn


@_mutation
def args_absent_no_params(frames, rng):
    """Q-ARGS-ABSENT-NO-PARAMS: a parameterless call streams no ``arguments`` key (vLLM hermes)."""
    for group in _calls(frames):
        try:
            empty = json.loads("".join(_args(tc) for _, tc in group)) == {}
        except ValueError:
            empty = False
        if empty:
            group[0][1]["function"].pop("arguments", None)
            for pos, tc in group[1:]:
                _discard(frames, pos, tc)


_LITERALS = ("true", "false", "null")
_NUMBER = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?")
_NUMBER_PREFIX = re.compile(r"-?(0|[1-9]\d*)?(\.\d*)?([eE][+-]?\d*)?")
_NUMBER_CHARS = re.compile(r"[-+.eE\d]*")
_LITERAL_CHARS = re.compile(r"[a-z]*")


def _scan_string(text: str, i: int) -> int | None:
    """End of the string opening at ``text[i]``; None if the text ends inside it, -1 if bad."""
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == '"':
            return j + 1
        if ch == "\\":
            esc = text[j + 1 : j + 2]
            if esc == "u":
                hexes = text[j + 2 : j + 6]
                if not all(h in string.hexdigits for h in hexes):
                    return -1
                j += 6
            elif esc and esc in '"\\/bfnrt':
                j += 2
            elif esc:
                return -1
            else:
                return None
            continue
        if ord(ch) < 0x20:
            return -1
        j += 1
    return None


def _token(text: str, i: int) -> str:
    """The number or literal starting at ``text[i]`` ("" if neither)."""
    for pattern in (_NUMBER_CHARS, _LITERAL_CHARS):
        if (m := pattern.match(text, i)) and m.group():
            return m.group()
    return ""


def is_json_prefix(text: str) -> bool:
    """Whether ``text`` can be completed into valid JSON: a truncation, not a corruption."""
    stack: list[str] = []
    expect = "value"  # value | key | colon | comma | end
    opened = False  # right after "{" or "[": a closer is allowed where a value is expected
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in " \t\r\n":
            i += 1
            continue
        closes = stack and ch == ("}" if stack[-1] == "{" else "]")
        was_opened, opened = opened, False
        if expect == "colon":
            if ch != ":":
                return False
            expect, i = "value", i + 1
        elif expect in ("comma", "end") or closes:
            if closes and (expect == "comma" or was_opened):
                stack.pop()
            elif ch == "," and stack and expect == "comma":
                expect = "key" if stack[-1] == "{" else "value"
                i += 1
                continue
            else:
                return False
            expect, i = ("comma" if stack else "end"), i + 1
        elif ch == '"':
            end = _scan_string(text, i)
            if end is None or end < 0:
                return end is None
            expect, i = ("colon" if expect == "key" else "comma" if stack else "end"), end
        elif expect == "key":
            return False
        elif ch in "{[":
            stack.append(ch)
            expect, i, opened = ("key" if ch == "{" else "value"), i + 1, True
        else:  # a number or a literal
            token = _token(text, i)
            if not token:
                return False
            if i + len(token) == len(text):
                if token[0].isalpha():
                    return any(lit.startswith(token) for lit in _LITERALS)
                return _NUMBER_PREFIX.fullmatch(token) is not None
            if token not in _LITERALS and not _NUMBER.fullmatch(token):
                return False
            expect, i = ("comma" if stack else "end"), i + len(token)
    return True


@_mutation
def args_invalid_json(frames, rng):
    """Q-ARGS-INVALID-JSON: a fragment lost mid-call, invalid JSON with no sign of whose fault."""
    _lose_a_fragment(frames, rng)


@_mutation
def args_server_parser_corruption(frames, rng):
    """Q-ARGS-SERVER-PARSER-CORRUPTION: the model's text in content, its parse loses a fragment."""
    specs, before = _specs(frames), copy.deepcopy(frames)
    _lose_a_fragment(frames, rng)
    if not specs or _compact(frames) == _compact(before):
        return None  # nothing to lose: no evidence to add either
    at = _tool_deltas(frames)[0][0]
    frames[at:at] = _content_chunks(frames, "\n".join(_markup(s) for s in specs), rng)
    return None


def _lose_a_fragment(frames: list[Frame | None], rng: random.Random) -> None:
    """Drop one argument fragment mid-call so that the rest is not a JSON prefix."""
    for group in _calls(frames):
        frags = [_args(tc) for _, tc in group]
        whole = "".join(frags)
        middle = [
            k
            for k in range(2, len(group) - 1)  # never the opener, first or last fragment
            if frags[k] and not is_json_prefix("".join(frags[:k] + frags[k + 1 :]))
        ]
        if middle:
            pos, tc = group[rng.choice(middle)]
            _discard(frames, pos, tc)
            return None
        colon = whole.find(":")
        if colon > 0 and len(group) > 1:  # too few fragments: lose the first ``:`` instead
            group[1][1]["function"]["arguments"] = whole[:colon]
            tail = {"index": group[0][1]["index"], "function": {"arguments": whole[colon + 1 :]}}
            for pos, tc in reversed(group[2:]):
                _discard(frames, pos, tc)
            _insert_after(frames, group[1][0], tail)
            return None
    return None


@_mutation
def args_json_object(frames, rng):
    """Q-ARGS-JSON-OBJECT: ``arguments`` is a JSON object, whole, not a string (TGI)."""
    _collapse(frames)
    for group in _calls(frames):
        function = group[0][1]["function"]
        try:
            function["arguments"] = json.loads(function["arguments"] or "{}")
        except ValueError:
            pass


@_mutation
def args_control_markup(frames, rng):
    """Q-ARGS-CONTROL-MARKUP: an ``[ARGS]`` fragment before the arguments (Rapid-MLX Devstral)."""
    for group in reversed(_calls(frames)):
        pos, opener = group[0]
        _insert_after(frames, pos, {"index": opener["index"], "function": {"arguments": "[ARGS]"}})


@_mutation
def args_invented_on_truncation(frames, rng):
    """Q-ARGS-INVENTED-ON-TRUNCATION: a call cut before its arguments sent as ``"{}"``, ``length``."""
    calls = [g for g in _calls(frames) if "".join(_args(tc) for _, tc in g).strip() != "{}"]
    if not calls:
        return None  # only "{}" calls: nothing to invent
    group = calls[-1]
    later = [d for g in _calls(frames)[_calls(frames).index(group) + 1 :] for d in g]
    for pos, tc in group[2:] + later:
        _discard(frames, pos, tc)
    if len(group) > 1:
        group[1][1]["function"]["arguments"] = "{}"
    else:
        group[0][1]["function"]["arguments"] = "{}"
    _set_finish(frames, "tool_calls", "length")
    return None


def _closed_cut(arguments: str) -> str | None:
    """The arguments cut inside and closed as valid JSON: the last key dropped, or a lone
    string value halved; None when there is nothing to cut."""
    try:
        obj = json.loads(arguments)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not obj:
        return None
    keys = list(obj)
    if len(keys) > 1:
        return json.dumps({k: obj[k] for k in keys[:-1]}, ensure_ascii=False)
    (key,) = keys
    value = obj[key]
    if not isinstance(value, str) or len(value) < 2:
        return None
    return json.dumps({key: value[: len(value) // 2]}, ensure_ascii=False)


@_mutation
def args_closed_on_truncation(frames, rng):
    """Q-ARGS-CLOSED-ON-TRUNCATION: a call cut in its arguments, closed as JSON, ``length``."""
    cuts = [(g, _closed_cut("".join(_args(tc) for _, tc in g))) for g in _calls(frames)]
    cuts = [(g, c) for g, c in cuts if c is not None]
    if not cuts:
        return None  # no arguments to cut
    group, closed = cuts[-1]
    later = [d for g in _calls(frames)[_calls(frames).index(group) + 1 :] for d in g]
    for pos, tc in group[2:] + later:
        _discard(frames, pos, tc)
    if len(group) > 1 and "arguments" in group[0][1].get("function", {}):
        group[0][1]["function"]["arguments"] = ""  # the closed text on one fragment only
    group[1 if len(group) > 1 else 0][1]["function"]["arguments"] = closed
    _set_finish(frames, "tool_calls", "length")
    return None


@_mutation
def args_null(frames, rng):
    """Q-ARGS-NULL: a continuation delta with ``arguments: null`` after each opener."""
    for group in reversed(_calls(frames)):
        pos, opener = group[0]
        _insert_after(frames, pos, {"index": opener["index"], "function": {"arguments": None}})


@_mutation
def args_truncated(frames, rng):
    """Q-ARGS-TRUNCATED: the last call's arguments stop short, finish still ``tool_calls``."""
    calls = [g for g in _calls(frames) if len("".join(_args(tc) for _, tc in g)) >= 2]
    if not calls:
        return None
    group = calls[-1]
    total = len("".join(_args(tc) for _, tc in group))
    keep = rng.randint(max(1, total // 2), total - 1)
    for pos, tc in group[1:]:
        text = _args(tc)
        if keep <= 0:
            _discard(frames, pos, tc)
        else:
            tc["function"]["arguments"] = text[:keep]
        keep -= len(text)
    return None


# --------------------------------------------------------------------------- G. finish_reason


@_mutation
def finish_stop_with_toolcalls(frames, rng):
    """Q-FINISH-STOP-WITH-TOOLCALLS: ``"stop"`` although tool calls were streamed (Gemini)."""
    _set_finish(frames, "tool_calls", "stop")


@_mutation
def finish_toolcalls_without_deltas(frames, rng):
    """Q-FINISH-TOOLCALLS-WITHOUT-DELTAS: ``"tool_calls"`` but no tool-call deltas (GLM-5.2)."""
    for pos, tc in _tool_deltas(frames):
        _discard(frames, pos, tc)


@_mutation
def finish_empty_string(frames, rng):
    """Q-FINISH-EMPTY-STRING: ``"finish_reason": ""`` on every non-final chunk (LocalAI, SGLang)."""
    for frame in frames:
        choice = _choice(frame)
        if choice is not None and choice.get("finish_reason") is None:
            choice["finish_reason"] = ""


@_mutation
def finish_on_nonfinal_chunk(frames, rng):
    """Q-FINISH-ON-NONFINAL-CHUNK: ``"stop"`` on the first chunk, long before the end."""
    _choice(frames[_first_chunk(frames)])["finish_reason"] = "stop"  # type: ignore[index]


@_mutation
def finish_camelcase(frames, rng):
    """Q-FINISH-CAMELCASE: ``finish_reason`` null, the value in ``finishReason`` (Gemini beta)."""
    for pos in _finish_positions(frames):
        choice = _choice(frames[pos])
        choice["finishReason"], choice["finish_reason"] = choice["finish_reason"], None


@_mutation
def finish_never_sent(frames, rng):
    """Q-FINISH-NEVER-SENT: no chunk has a non-null ``finish_reason`` (OpenCode Zen)."""
    for pos in _finish_positions(frames):
        choice = _choice(frames[pos])
        choice["finish_reason"] = None
        if not choice.get("delta"):
            frames[pos] = None


@_mutation
def finish_repeated(frames, rng):
    """Q-FINISH-REPEATED: the finish chunk is sent twice (OpenRouter)."""
    for pos in reversed(_finish_positions(frames)):
        frames.insert(pos + 1, copy.deepcopy(frames[pos]))


@_mutation
def finish_same_chunk_as_call(frames, rng):
    """Q-FINISH-SAME-CHUNK-AS-CALL: the last tool-call delta and ``finish_reason`` in one chunk."""
    deltas, finishes = _tool_deltas(frames), _finish_positions(frames)
    if deltas and finishes:
        last, fin = deltas[-1][0], finishes[-1]
        _choice(frames[last])["finish_reason"] = _choice(frames[fin])["finish_reason"]
        frames[fin] = None


@_mutation
def finish_nonstandard_value(frames, rng):
    """Q-FINISH-NONSTANDARD-VALUE: a value outside the enum, ``"UNKNOWN"`` (FastFlowLM)."""
    _set_finish(frames, None, "UNKNOWN")


# --------------------------------------------------------------------------- H. outside tool_calls


@_mutation
def toolcall_as_text(frames, rng):
    """Q-TOOLCALL-AS-TEXT: the call as ``<tool_call>`` content, no tool_calls, ``stop`` (Ollama)."""
    specs = _specs(frames)
    if specs:
        text = "\n".join(_markup(s) for s in specs)
        _replace_tool_section(frames, _content_chunks(frames, text, rng))
        _set_finish(frames, "tool_calls", "stop")


@_mutation
def toolcall_duplicated_in_content(frames, rng):
    """Q-TOOLCALL-DUPLICATED-IN-CONTENT: tool_calls and the raw markup as content (mlx-vlm)."""
    specs = _specs(frames)
    if specs:
        at = _tool_deltas(frames)[0][0]
        frames[at:at] = _content_chunks(frames, "\n".join(_markup(s) for s in specs), rng)


@_mutation
def required_not_enforced(frames, rng):
    """Q-REQUIRED-NOT-ENFORCED: prose before the first call under ``required`` (llama.cpp)."""
    deltas = _tool_deltas(frames)
    if deltas:
        at = deltas[0][0]
        frames[at:at] = _content_chunks(frames, "Let me check that for you.", rng)


@_mutation
def toolcalls_missing_in_stream(frames, rng):
    """Q-TOOLCALLS-MISSING-IN-STREAM: no call and no content, finish ``stop`` (Ollama /v1)."""
    for pos, tc in _tool_deltas(frames):
        _discard(frames, pos, tc)
    _set_finish(frames, "tool_calls", "stop")


# --------------------------------------------------------------------------- I. reasoning


def _reasoning(specs: Sequence[CallSpec]) -> str:
    names = " and ".join(s.name for s in specs) or "a tool"
    return f"The user needs live data, so I should call {names} rather than guess."


@_mutation
def reasoning_same_delta(frames, rng):
    """Q-REASONING-SAME-DELTA: ``reasoning_content`` and ``tool_calls`` in one delta (Z.AI)."""
    deltas, specs = _tool_deltas(frames), _specs(frames)
    if deltas:
        delta = _delta(frames[deltas[0][0]])
        items = list(delta.items())
        delta.clear()
        delta["reasoning_content"] = _reasoning(specs)
        delta.update(items)


@_mutation
def reasoning_leak_at_finish(frames, rng):
    """Q-REASONING-LEAK-AT-FINISH: reasoning streamed, its tail leaks as finish content (vLLM)."""
    specs, finishes = _specs(frames), _finish_positions(frames)
    if not specs or not finishes:
        return None
    _choice(frames[finishes[-1]])["delta"]["content"] = " Let me check."
    at = _first_chunk(frames) + 1
    words = split_words(_reasoning(specs))
    frames[at:at] = [_like(frames, {"reasoning_content": w}) for w in words]
    return None


# --------------------------------------------------------------------------- K. request semantics


@_mutation
def openai_multi_tool_use_wrapper(frames, rng):
    """Q-OPENAI-MULTI-TOOL-USE-WRAPPER: one ``multi_tool_use.parallel`` call wraps the calls."""
    specs = _specs(frames)
    if not specs:
        return None
    uses = []
    for s in specs:
        try:
            params = json.loads(s.arguments or "{}")
        except ValueError:
            params = {}
        uses.append({"recipient_name": f"functions.{s.name}", "parameters": params})
    arguments = json.dumps({"tool_uses": uses}, ensure_ascii=False)
    wrapper = CallSpec(specs[0].id, "multi_tool_use.parallel", arguments)
    new = [_like(frames, {"tool_calls": [d]}) for d in _call_deltas(0, wrapper, rng)]
    _replace_tool_section(frames, new)
    return None


MUTATIONS: dict[str, Mutation] = {
    "Q-SSE-COMMENT-KEEPALIVE": sse_comment_keepalive,
    "Q-SSE-KEEPALIVE-AS-DATA": sse_keepalive_as_data,
    "Q-SSE-DONE-MISSING": sse_done_missing,
    "Q-SSE-ERROR-ENVELOPE": sse_error_envelope,
    "Q-SSE-ERROR-IN-CHUNK": sse_error_in_chunk,
    "Q-STREAM-STALLS": stream_stalls,
    "Q-ARGS-NOT-PROGRESSIVE": args_not_progressive,
    "Q-TOOLCALL-HELD-UNTIL-FINISH": toolcall_held_until_finish,
    "Q-USAGE-PLACEMENT": usage_placement,
    "Q-AZURE-PROMPT-FILTER-CHUNK": azure_prompt_filter_chunk,
    "Q-AZURE-CHOICE-WITHOUT-DELTA": azure_choice_without_delta,
    "Q-ENVELOPE-FIELDS-MISSING": envelope_fields_missing,
    "Q-CHUNK-ID-UNSTABLE": chunk_id_unstable,
    "Q-EXTRA-FIELDS": extra_fields,
    "Q-TOOLCALLS-EMPTY-ARRAY": toolcalls_empty_array,
    "Q-TOOLCALLS-NOT-ARRAY": toolcalls_not_array,
    "Q-INDEX-AND-ID-REUSED": index_and_id_reused,
    "Q-NAME-NEVER-SENT": name_never_sent,
    "Q-EMPTY-DELTA-CHUNKS": empty_delta_chunks,
    "Q-INDEX-ABSENT": index_absent,
    "Q-INDEX-ABSENT-WHOLE-CALL": index_absent_whole_call,
    "Q-INDEX-ABSENT-PARALLEL-SPLIT": index_absent_parallel_split,
    "Q-INDEX-NONZERO-START": index_nonzero_start,
    "Q-INDEX-ALL-ZERO": index_all_zero,
    "Q-INDEX-REUSED-ACROSS-CALLS": index_reused_across_calls,
    "Q-INDEX-INCONSISTENT-WITHIN-CALL": index_inconsistent_within_call,
    "Q-ID-ABSENT": id_absent,
    "Q-EMPTY-STRING-OVERWRITE": empty_string_overwrite,
    "Q-ID-REPEATED": id_repeated,
    "Q-ID-CHANGES-MID-CALL": id_changes_mid_call,
    "Q-ID-FORMAT": id_format,
    "Q-TYPE-MISSING": type_missing,
    "Q-NAME-REPEATED": name_repeated,
    "Q-NAME-EMPTY-OPENING-DELTA": name_empty_opening_delta,
    "Q-NAME-AFTER-ARGUMENTS": name_after_arguments,
    "Q-NAME-FRAGMENTED": name_fragmented,
    "Q-ARGS-WHOLE-IN-ONE-DELTA": args_whole_in_one_delta,
    "Q-ARGS-ON-OPENING-DELTA": args_on_opening_delta,
    "Q-ARGS-CUMULATIVE": args_cumulative,
    "Q-ARGS-DUPLICATED-ON-FLUSH": args_duplicated_on_flush,
    "Q-ARGS-LOST-MULTITOKEN-DELTA": args_lost_multitoken_delta,
    "Q-DELTA-SHAPE-LOAD-DEPENDENT": delta_shape_load_dependent,
    "Q-ARGS-ABSENT-NO-PARAMS": args_absent_no_params,
    "Q-ARGS-SERVER-PARSER-CORRUPTION": args_server_parser_corruption,
    "Q-ARGS-INVALID-JSON": args_invalid_json,
    "Q-ARGS-INVENTED-ON-TRUNCATION": args_invented_on_truncation,
    "Q-ARGS-CLOSED-ON-TRUNCATION": args_closed_on_truncation,
    "Q-ARGS-JSON-OBJECT": args_json_object,
    "Q-ARGS-CONTROL-MARKUP": args_control_markup,
    "Q-ARGS-NULL": args_null,
    "Q-ARGS-TRUNCATED": args_truncated,
    "Q-FINISH-STOP-WITH-TOOLCALLS": finish_stop_with_toolcalls,
    # OpenAI's own named-tool_choice behaviour has the same wire shape; the server applies it
    # only when tool_choice names a function.
    "Q-FINISH-STOP-NAMED-TOOLCHOICE": finish_stop_with_toolcalls,
    "Q-FINISH-TOOLCALLS-WITHOUT-DELTAS": finish_toolcalls_without_deltas,
    "Q-FINISH-EMPTY-STRING": finish_empty_string,
    "Q-FINISH-ON-NONFINAL-CHUNK": finish_on_nonfinal_chunk,
    "Q-FINISH-CAMELCASE": finish_camelcase,
    "Q-FINISH-NEVER-SENT": finish_never_sent,
    "Q-FINISH-REPEATED": finish_repeated,
    "Q-FINISH-SAME-CHUNK-AS-CALL": finish_same_chunk_as_call,
    "Q-FINISH-NONSTANDARD-VALUE": finish_nonstandard_value,
    "Q-TOOLCALL-AS-TEXT": toolcall_as_text,
    "Q-TOOLCALL-DUPLICATED-IN-CONTENT": toolcall_duplicated_in_content,
    "Q-TOOLCALLS-MISSING-IN-STREAM": toolcalls_missing_in_stream,
    "Q-REQUIRED-NOT-ENFORCED": required_not_enforced,
    "Q-REASONING-SAME-DELTA": reasoning_same_delta,
    "Q-REASONING-LEAK-AT-FINISH": reasoning_leak_at_finish,
    "Q-OPENAI-MULTI-TOOL-USE-WRAPPER": openai_multi_tool_use_wrapper,
}


# Extra shapes of an already-catalogued quirk, used by server profiles; not in MUTATIONS so
# that MUTATIONS stays one transform per quirk id.
@_mutation
def reasoning_first(frames, rng):
    """(shape, not a quirk) reasoning streamed in its own deltas before the calls, the way
    thinking models answer (DeepSeek, Kimi); used by the ``rt-reasoning-echo`` profile."""
    specs = _specs(frames)
    if not specs:
        return None
    at = _first_chunk(frames) + 1
    words = split_words(_reasoning(specs))
    frames[at:at] = [_like(frames, {"reasoning_content": w}) for w in words]
    return None


@_mutation
def thought_signature(frames, rng):
    """(shape, not a quirk) each opener carries ``extra_content.google.thought_signature``
    (Gemini 3 via the OpenAI-compatible endpoint); used by ``rt-thought-signature``."""
    for call in _calls(frames):
        _, opener = call[0]
        opener["extra_content"] = {"google": {"thought_signature": random_token(rng, 24)}}
    return None


VARIANTS: dict[str, Mutation] = {
    "sse-error-event": sse_error_event,
    "reasoning-first": reasoning_first,
    "thought-signature": thought_signature,
}
TRANSFORMS: dict[str, Mutation] = {**MUTATIONS, **VARIANTS}
# MUTATIONS is keyed by registry ids (one transform per id; an unknown key is a did-you-mean).
registry.check_ids(MUTATIONS, "mutations.MUTATIONS")


def mutation_rng(seed: int | str, quirk: str) -> random.Random:
    """The rng a profile gives ``quirk``: independent of the one that built the stream."""
    return random.Random(f"{seed}:{quirk}")


def apply(frames: list[Frame], quirks: Iterable[str], seed: int | str) -> list[Frame]:
    """Apply the named transforms (``TRANSFORMS`` keys) in order, each with its own rng."""
    for quirk in quirks:
        frames = TRANSFORMS[quirk](frames, mutation_rng(seed, quirk))
    return frames
