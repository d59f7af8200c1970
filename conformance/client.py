"""A robust accumulator for streamed Chat Completions tool calls.

Feed it chunks (raw JSON dicts, or the ``openai`` SDK's chunk objects) one at a time;
ask for the calls so far at any point; at the end take the assistant message, the
quirks it had to work around and whether any arguments needed repair.

It follows the quirk catalogue's accumulator rules (docs/quirks.md) and the index repair
of a public fix for providers' parallel indices (danny-avila's pull request 260, "repair
streamed tool-call indices"): state per choice, call starts detected by id or by name,
index-less fragments routed to the call in progress, cumulative and object arguments,
JSON repair of cut arguments. Two promises hold everywhere: the provider's ``id`` is kept
exactly as sent (``""`` included) and never invented, and unparsable arguments are never
silently replaced by ``{}``.

This module is also the analyzer's ``robust`` strategy: one implementation, not two.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.jsontext import StreamLoads, loads
from conformance.registry import works_around

__all__ = [
    "ToolCall",
    "Workaround",
    "Turn",
    "TextCutError",
    "ToolCallAccumulator",
    "RoundTripPolicy",
    "to_raw_chunk",
    "accumulate",
    "completion_as_chunk",
    "tool_result_messages",
    "assistant_message",
    "repair_json",
    "mistral_id",
]

FINAL_NOT_EXECUTABLE = frozenset({"length", "content_filter", "error"})
MAX_NOTES_PER_QUIRK = 3
REASONING_KEYS = ("reasoning_content", "reasoning", "reasoning_text")


@dataclass(frozen=True)
class Workaround:
    """A catalogued quirk the accumulator met and handled (or could not handle)."""

    quirk: str
    event: int
    message: str
    recovered: bool = True


class TextCutError(ValueError):
    """A turn whose content (or echoed reasoning) was cut by ``max_text`` cannot be sent
    back: the message would not be the turn that was received."""


@dataclass
class ToolCall:
    index: int  # position of the call in the turn (after index repair)
    id: str  # exactly as the provider sent it; "" when it sent none
    type: str
    name: str
    arguments: str  # what to send back: parsed-valid JSON text, repaired if it had to be
    raw_arguments: str  # the concatenation as streamed (after cumulative/object handling)
    repaired: bool = False
    valid: bool = True  # arguments parse as JSON (after repair)
    provider_index: int | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # e.g. extra_content, echoed back

    def parsed_arguments(self) -> Any:
        return json.loads(self.arguments)

    def as_message_entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "id": self.id,
            "type": self.type or "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }
        for k, v in self.extras.items():
            entry.setdefault(k, v)
        return entry


@dataclass
class Turn:
    """The assembled assistant turn."""

    calls: list[ToolCall]
    content: str | None
    reasoning: str | None
    finish_reason: str | None
    usage: dict[str, Any] | None
    error: Any | None
    workarounds: list[Workaround]
    # Characters received but not kept (``max_text``): the content or reasoning above is
    # then only the first part of what was streamed, and ``message()`` refuses to send it.
    content_dropped: int = 0
    reasoning_dropped: int = 0
    # The event of the first call not assembled (``max_calls``): ``calls`` are then only
    # the first calls of the turn, and ``message()`` refuses to send them back.
    calls_cut: int | None = None

    @property
    def quirks(self) -> list[str]:
        return sorted({w.quirk for w in self.workarounds})

    @property
    def repaired(self) -> bool:
        return any(c.repaired for c in self.calls)

    @property
    def recoverable(self) -> bool:
        """True when every call has a name and JSON arguments and nothing was lost."""
        return (
            self.error is None
            and all(w.recovered for w in self.workarounds)
            and all(c.name and c.valid for c in self.calls)
        )

    @property
    def executable(self) -> bool:
        """A tool turn an agent may act on: complete calls, not cut by length or an error."""
        return (
            bool(self.calls)
            and self.recoverable
            and (self.finish_reason or "") not in FINAL_NOT_EXECUTABLE
        )

    def message(self, policy: RoundTripPolicy | None = None) -> dict[str, Any]:
        return assistant_message(self, policy)


# --------------------------------------------------------------------------- helpers


def to_raw_chunk(chunk: Any) -> Any:
    """A raw JSON value for a chunk: dicts pass through; SDK (pydantic) objects are
    dumped with ``exclude_unset`` so absent, null and "" stay different facts."""
    if isinstance(chunk, dict):
        return chunk
    to_dict = getattr(chunk, "to_dict", None)
    if callable(to_dict):  # openai SDK models: mode="json", exclude_unset=True
        return to_dict()
    dump = getattr(chunk, "model_dump", None)
    if callable(dump):
        return dump(exclude_unset=True, mode="json")
    if isinstance(chunk, str | bytes):
        return json.loads(chunk)
    return chunk


def _nonempty_str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _parses(text: str) -> bool:
    try:
        loads(text)  # json.loads's value and errors, without its Python layer
    except (ValueError, RecursionError):
        return False
    return True


def _complete_json(text: str) -> bool:
    t = text.strip()
    return bool(t) and t[0] in "{[" and _parses(t)


_WS = " \t\r\n"
_LITERALS = ("true", "false", "null")
_HEX = frozenset("0123456789abcdefABCDEF")
_NUMBER_PREFIX = re.compile(r"-?(?:0|[1-9]\d*)?(?:\.\d*)?(?:[eE][+-]?\d*)?")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")


def _string_end(text: str, i: int) -> int:
    """Index after the string opening at ``text[i]``; -1 if cut off, -2 if not JSON."""
    j, n = i + 1, len(text)
    while j < n:
        ch = text[j]
        if ch == '"':
            return j + 1
        if ch == "\\":
            esc = text[j + 1 : j + 2]
            if esc == "u":
                hexes = text[j + 2 : j + 6]
                if not all(h in _HEX for h in hexes):
                    return -2
                if len(hexes) < 4:
                    return -1
                j += 6
                continue
            if not esc:
                return -1
            if esc not in '"\\/bfnrt':
                return -2
            j += 2
            continue
        if ch < " ":
            return -2
        j += 1
    return -1


def _cut_string(text: str) -> str:
    """A cut-off string (from its opening quote) closed, minus any half escape."""
    k = text.rfind("\\")
    if k >= 0:
        run = len(text[: k + 1]) - len(text[: k + 1].rstrip("\\"))  # backslashes ending at k
        tail = text[k + 1 :]
        if run % 2 == 1 and (tail == "" or (tail[:1] == "u" and len(tail) < 5)):
            text = text[:k]
    return text + '"'


def repair_json(text: str) -> str | None:
    """Complete a truncated JSON value (string- and token-aware).

    The usual repair closes unmatched ``{`` and ``[``; this also closes a cut string value
    (dropping a half escape), completes a cut ``true``/``false``/``null`` and keeps the
    valid part of a cut number. A member that never got its value (cut inside its key,
    before its ``:`` or right after it) is dropped with its comma rather than given an
    invented key or value, and so is a dangling ``,``. Only a prefix of a JSON value is
    repaired: anything else (a stray closer, two documents, a bad token) returns None, and
    so does a text that was not cut. Never returns ``"{}"`` for a text that carried a
    complete member.
    """
    repaired = _repair(text)
    return None if repaired is None or _parses(text) else repaired


def _repair(text: str) -> str | None:
    """repair_json without the final check that the text was not whole already."""
    stack: list[str] = []
    starts: list[int] = []  # per open container: where its current member starts ({ [ or ,)
    # expect: value | key | colon | comma | end | first_key | first_value (just after { or [)
    expect = "value"
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _WS:
            i += 1
            continue
        if expect == "colon":
            if ch != ":":
                return None
            expect, i = "value", i + 1
            continue
        closer = ("}" if stack[-1] == "{" else "]") if stack else None
        if expect in ("comma", "end", "first_key", "first_value") and ch == closer:
            stack.pop()
            starts.pop()
            expect, i = ("comma" if stack else "end"), i + 1
            continue
        if expect == "comma" and ch == ",":
            starts[-1] = i
            expect, i = ("key" if stack[-1] == "{" else "value"), i + 1
            continue
        if expect in ("comma", "end"):
            return None
        if ch == '"':
            end = _string_end(text, i)
            if end == -2:
                return None
            is_key = expect in ("key", "first_key")
            if end == -1:  # cut inside the string
                if is_key:
                    return _close(_drop_member(text, starts), stack)
                return _close(text[:i] + _cut_string(text[i:]), stack)
            expect, i = ("colon" if is_key else "comma" if stack else "end"), end
            continue
        if expect in ("key", "first_key"):
            return None
        if ch in "{[":
            stack.append(ch)
            starts.append(i)
            expect, i = ("first_key" if ch == "{" else "first_value"), i + 1
            continue
        word = re.match(r"[a-z]+", text[i : i + 5])
        if word:
            token = word.group()
            if i + len(token) == n:  # cut inside a literal: its only completion
                full = next((lit for lit in _LITERALS if lit.startswith(token)), None)
                return None if full is None else _close(text[:i] + full, stack)
            if token not in _LITERALS:
                return None
            expect, i = ("comma" if stack else "end"), i + len(token)
            continue
        m = _NUMBER_PREFIX.match(text, i)
        token = m.group() if m else ""
        if not token or token[0] not in "-0123456789":
            return None
        if i + len(token) == n:  # cut inside a number: keep its valid part
            whole = _NUMBER.match(token)
            if whole:
                return _close(text[:i] + whole.group(), stack)
            return _close(_drop_member(text, starts), stack) if stack else None
        if not _NUMBER.fullmatch(token):
            return None
        expect, i = ("comma" if stack else "end"), i + len(token)
    if expect == "end" or not stack:
        return None  # nothing was cut, or nothing but whitespace
    if expect in ("colon", "value", "key"):  # a member or element without its value
        return _close(_drop_member(text, starts), stack)
    return _close(text.rstrip(), stack)  # after a value, or right after { or [


def _drop_member(text: str, starts: list[int]) -> str:
    """The text without the innermost container's unfinished member (and its comma)."""
    at = starts[-1]
    return text[:at] if text[at] == "," else text[: at + 1]


def _close(body: str, stack: list[str]) -> str | None:
    out = body + "".join("}" if c == "{" else "]" for c in reversed(stack))
    return out if _parses(out) else None


def _split_json_documents(text: str) -> list[str] | None:
    """["{…}", "{…}"] when text is two or more whole JSON values back to back."""
    dec = json.JSONDecoder()
    docs, i, n = [], 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            break
        try:
            _, end = dec.raw_decode(text, i)
        except ValueError:
            return None
        docs.append(text[i:end])
        i = end
    return docs if len(docs) >= 2 else None


def _kfold(text: str) -> str | None:
    """X when text is X repeated k >= 2 times and X parses (Q-ARGS-DUPLICATED-ON-FLUSH)."""
    n = len(text)
    for k in range(2, 9):
        if n % k == 0:
            part = text[: n // k]
            if part * k == text and _parses(part):
                return part
    return None


def _declared_tools(tools: Iterable[Any] | None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(tools, Iterable) or isinstance(tools, str | bytes | Mapping):
        tools = ()  # a request's `tools` that is not a list declares nothing
    for t in tools:
        if not isinstance(t, dict):
            continue
        inner = t.get("function")
        fn: dict[str, Any] = inner if isinstance(inner, dict) else t
        name, params = fn.get("name"), fn.get("parameters")
        if isinstance(name, str):
            out[name] = params if isinstance(params, dict) else {}
    return out


# --------------------------------------------------------------------------- state


JOIN_AFTER = 64  # fragments kept apart before the newest are joined
# Characters of a call's plain reading kept beside its cumulative one (_Slot.alt): enough
# for any arguments a key that begins like the text so far can be in, not a long stream's
# quadratic sum of prefixes.
ALT_KEPT = 1 << 16


def join_tail(parts: list[str]) -> None:
    """Bounded memory for argument fragments: call when ``len(parts) > JOIN_AFTER``.

    Joins the newest fragments into one block, then merges blocks while the one before is
    at most twice as long: block sizes halve towards the tail, so the list stays short
    (O(log n)) and each character is copied O(log n) times. A million fragments of one call
    cost what its text costs, not a string object each."""
    half = JOIN_AFTER // 2
    parts[-half:] = ["".join(parts[-half:])]
    while len(parts) > 1 and len(parts[-2]) <= 2 * len(parts[-1]):
        parts[-2:] = [parts[-2] + parts[-1]]


class _Slot:
    __slots__ = (
        "ordinal",
        "provider_index",
        "id",
        "type",
        "name",
        "parts",
        "length",
        "cumulative",
        "obj",
        "extras",
        "first_event",
        "ids",
        "guessed",
        "markup",
        "lost",
        "plain",
        "grown",
        "alt",
        "alt_length",
        "latched",
        "unlatched",
    )

    def __init__(self, ordinal: int, provider_index: int | None, event: int):
        self.ordinal = ordinal
        self.provider_index = provider_index
        self.id = ""
        self.type = ""
        self.name = ""
        self.parts: list[str] = []
        self.length = 0
        self.cumulative = False
        self.obj: Any = None
        self.extras: dict[str, Any] = {}
        self.first_event = event
        self.ids: set[str] = set()
        self.guessed = False  # got a fragment that another open call could own as well
        self.markup = False  # got control markup (Q-ARGS-CONTROL-MARKUP)
        self.lost = False  # set at the end: its arguments cannot be attributed
        self.plain = True  # not cumulative, index not shared: the fast path may append
        self.grown = False  # a fragment was appended to a non-empty buffer (two or more)
        # Once latched cumulative: the fragments appended as they came (None past ALT_KEPT),
        # the latch's note, and whether the end chose the appended reading after all.
        self.alt: list[str] | None = None
        self.alt_length = 0
        self.latched: tuple[str, int] = ("", 0)
        self.unlatched = False

    def text(self) -> str:
        if len(self.parts) > 1:
            self.parts[:] = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""


class _Pieces(list[str]):
    """The pieces of content (or reasoning), all kept: a plain list (the hot path appends
    and joins it with ``join_tail``) that joins itself at the end."""

    dropped = 0  # characters received and not kept

    def joined(self) -> str | None:
        """The text, as one string that the list keeps in place of its pieces (the turn and
        the accumulator share it: one copy, not two)."""
        if not self:
            return None
        text = "".join(self)
        self[:] = [text]
        return text


class _Kept(_Pieces):
    """At most ``limit`` characters of the pieces kept; the rest counted in ``dropped``."""

    def __init__(self, limit: int) -> None:  # empty as made: no list.__init__ to call
        self.room = limit  # characters still to keep

    def append(self, text: str) -> None:
        kept = text[: self.room]  # the text itself (no copy) while there is room for it all
        if kept:
            self.room -= len(kept)
            list.append(self, kept)
        self.dropped += len(text) - len(kept)


class _Choice:
    __slots__ = ("slots", "by_index", "by_id", "current", "shared")

    def __init__(self) -> None:
        self.slots: list[_Slot] = []
        self.by_index: dict[int, _Slot] = {}
        self.by_id: dict[str, _Slot] = {}
        self.current: _Slot | None = None
        self.shared: set[int] = set()  # provider indices that more than one call used

    def open(self, provider_index: int | None, event: int) -> _Slot:
        slot = _Slot(len(self.slots), provider_index, event)
        self.slots.append(slot)
        if provider_index is not None:
            self.by_index[provider_index] = slot
        self.current = slot
        return slot


_OPENER_KEYS = frozenset({"index", "id", "type", "function"})
_FN_KEYS = frozenset({"name", "arguments"})
CONTROL_MARKUP = re.compile(
    r"^\s*\[(?:ARGS|TOOL_CALLS|CALL_ID)\]|<\|?/?tool_call|<arg_key>|<think>"
)


def _append_plain(state: _Choice, slot: _Slot, a: str) -> bool:
    """feed()'s fast path for a bare argument fragment on an open index: ``a`` appended to
    ``slot`` when the slot is plain (not cumulative, index not shared by two calls), ``a``
    is not empty, the cumulative latch cannot close (the call holds no text yet, or no
    less than the fragment, or text the fragment does not start with) and no markup can be
    in it (looked for only when it may be there). Else False, having done nothing."""
    if not (
        slot.plain
        and (n := len(a))
        and (n <= (held := slot.length) or not held or not a.startswith(slot.parts[0]))
        and (("<" not in a and "[" not in a) or not CONTROL_MARKUP.search(a))
    ):
        return False
    state.current = slot
    parts = slot.parts
    parts.append(a)
    slot.length += n
    if held:  # appended to a non-empty buffer (as _append says)
        slot.grown = True
    if len(parts) > 64:  # JOIN_AFTER, inlined: hot path
        join_tail(parts)
    return True


def _note_order(w: Workaround) -> tuple[int, str]:
    return (w.event, w.quirk)


class ToolCallAccumulator:
    """Incremental, quirk-tolerant accumulator. ``feed`` chunks, then ``result()``.

    ``max_text`` bounds the characters of content, and separately of reasoning, that are
    kept (the rest is counted in ``Turn.content_dropped`` / ``reasoning_dropped``), for a
    reader that must not hold whatever text an endpoint streams. ``max_calls`` bounds the
    calls assembled (over all choices): a delta that would open one more is ignored and
    ``Turn.calls_cut`` names its event. By default everything is kept: a client sends the
    turn back as it was received. Tool-call arguments are always kept whole."""

    def __init__(
        self,
        *,
        tools: Iterable[Any] | None = None,
        n: int = 1,
        max_text: int | None = None,
        max_calls: int | None = None,
    ):
        # No tools (every bare capture): no ABC isinstance check (what it would give).
        self._declared = _declared_tools(tools) if tools is not None else {}
        self._per_choice = n > 1
        self._choices: dict[int, _Choice] = {}
        self._choice0 = self._choices[0] = _Choice()  # with n=1 every choice is choice 0
        if max_text is not None and max_text < 0:
            raise ValueError(f"max_text is a number of characters, not {max_text}")
        # A plain list when nothing is bounded: its append stays the C one.
        self._content = _Pieces() if max_text is None else _Kept(max_text)
        self._reasoning = _Pieces() if max_text is None else _Kept(max_text)
        if max_calls is not None and max_calls < 0:
            raise ValueError(f"max_calls is a number of calls, not {max_calls}")
        self._calls_left = -1 if max_calls is None else max_calls  # -1: no bound
        self.calls_cut: int | None = None  # the event of the first call not assembled
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None
        self._error: Any = None
        self._notes: dict[tuple[str, int], Workaround] = {}
        self._noted: dict[str, int] = {}
        self._events = 0
        # Payload text parsed from its delta on when it repeats the stream's envelope
        # (jsontext.StreamLoads: the same value as loads); made for the first text fed.
        self._payloads: StreamLoads | None = None

    # -- public -------------------------------------------------------------------
    def feed(self, chunk: Any, *, event: int | None = None) -> None:
        """Apply one chunk. Anything that is not a chunk object is ignored."""
        ev = self._events
        self._events = ev + 1
        if event is not None:
            ev = event
        if type(chunk) is not dict:
            try:
                if type(chunk) is str:
                    if self._payloads is None:
                        self._payloads = StreamLoads()
                    chunk = self._payloads.loads(chunk)[0]
                else:
                    chunk = to_raw_chunk(chunk)
            except (ValueError, RecursionError):  # text that is not JSON: not a chunk
                return
            if not isinstance(chunk, dict):
                return
        if "error" in chunk and chunk["error"] is not None:
            self._error = chunk["error"]
            self._note(
                "Q-SSE-ERROR-ENVELOPE" if "choices" not in chunk else "Q-SSE-ERROR-IN-CHUNK",
                ev,
                "error reported inside the stream",
            )
        usage = chunk.get("usage")
        if usage is not None and isinstance(usage, dict):
            self._usage = usage  # last non-null usage wins; never summed
        choices = chunk.get("choices")
        if type(choices) is not list and not isinstance(choices, list):
            return
        per_choice = self._per_choice
        for choice in choices:  # one loop, no call per choice: this is the hot path
            if type(choice) is not dict and not isinstance(choice, dict):
                continue
            if per_choice:
                ci = choice.get("index")
                key = ci if isinstance(ci, int) else 0
                state = self._choices.get(key)
                if state is None:
                    state = self._choices[key] = _Choice()
            else:
                state = self._choice0
            delta = choice.get("delta")
            if type(delta) is dict or isinstance(delta, dict):  # before the finish_reason
                tcs = delta.get("tool_calls")
                if tcs is None or len(delta) > 1:
                    content = delta.get("content")
                    if isinstance(content, str) and content:
                        self._content.append(content)
                        if len(self._content) > JOIN_AFTER:
                            join_tail(self._content)
                    if not delta.keys().isdisjoint(REASONING_KEYS):  # one C call, not three
                        for k in REASONING_KEYS:
                            r = delta.get(k)
                            if isinstance(r, str) and r:
                                self._reasoning.append(r)
                                if len(self._reasoning) > JOIN_AFTER:
                                    join_tail(self._reasoning)
                                break
                if type(tcs) is list or isinstance(tcs, list):
                    by_index = state.by_index
                    for tc in tcs:
                        # Fast paths for the shapes of nearly every delta of a conforming
                        # stream; they do what the general path does for that shape, and
                        # everything else goes there. First a bare argument fragment,
                        # {"index": i, "function": {"arguments": "<fragment>"}}, on an open
                        # index (_append_plain says when it is appended here).
                        try:  # subscripts, not .get(): this runs for nearly every chunk
                            fn = tc["function"]
                            a = fn["arguments"]
                            idx = tc["index"]
                            slot = by_index.get(idx)  # no KeyError raised for each opener
                        except (KeyError, TypeError, IndexError):
                            slot = None
                        if (
                            slot is not None
                            and type(a) is str
                            and type(idx) is int
                            and len(tc) == 2
                            and len(fn) == 1
                            and _append_plain(state, slot, a)
                        ):
                            continue
                        if (
                            type(tc) is dict
                            and type(idx := tc.get("index")) is int
                            and idx not in by_index
                            and self._open_fast(state, tc, idx, ev)
                        ):
                            continue
                        if isinstance(tc, dict):
                            self._apply_tool_delta(state, tc, ev)
                elif type(tcs) is dict:
                    self._read_object_calls(state, tcs, ev)
            fr = choice.get("finish_reason")
            if fr is None and "finishReason" not in choice:
                continue
            if not (isinstance(fr, str) and fr):
                fr = choice.get("finishReason")
            if isinstance(fr, str) and fr:
                self._finish = fr  # the last non-null, non-empty value

    works_around(feed, "Q-SSE-ERROR-ENVELOPE", "Q-SSE-ERROR-IN-CHUNK")

    # The analyzer's steady path (conformance.analysis) has checked each chunk it passes
    # here: one choice, n=1, no error, usage or finish, and a delta of one kind. These do
    # what feed() does for that chunk without reading it again.
    def _feed_fragment(self, chunk: dict[str, Any], idx: int, a: str, ev: int) -> None:
        """feed() of a chunk whose delta is one bare argument fragment ``a`` for tool-call
        index ``idx``: appended on feed's fast path, else the chunk is fed."""
        state = self._choice0
        slot = state.by_index.get(idx)
        if slot is not None and _append_plain(state, slot, a):
            self._events += 1
        else:
            self.feed(chunk, event=ev)

    def _feed_call(self, chunk: dict[str, Any], tc: dict[str, Any], ev: int) -> None:
        """feed() of a chunk whose delta is the one tool-call delta ``tc`` (a dict): a new
        index's opener on feed's fast path (``_open_fast``, which changes nothing when it
        declines), else the chunk is fed."""
        state = self._choice0
        idx = tc.get("index")
        if type(idx) is int and idx not in state.by_index and self._open_fast(state, tc, idx, ev):
            self._events += 1
        else:
            self.feed(chunk, event=ev)

    def _feed_text(self, text: str) -> None:
        """feed() of a chunk whose delta is ``{"content": text}``, ``text`` not empty."""
        self._events += 1
        pieces = self._content
        pieces.append(text)
        if len(pieces) > JOIN_AFTER:
            join_tail(pieces)

    def _read_object_calls(self, state: _Choice, tc: dict[str, Any], ev: int) -> None:
        """``delta.tool_calls`` sent as one object: the call it carries, as if in an array
        (a stream that carries a call never reads as a call-free one)."""
        self._note("Q-TOOLCALLS-NOT-ARRAY", ev, "tool_calls sent as an object; read as [object]")
        self._apply_tool_delta(state, tc, ev)

    works_around(_read_object_calls, "Q-TOOLCALLS-NOT-ARRAY")

    def compact(self) -> None:
        """Join what is kept so far (content, reasoning, each call's fragments) into one
        string each; a long stream calls it now and then (the analyzer every 65,536
        events), so memory follows the text, not the number of deltas."""
        for pieces in (self._content, self._reasoning):
            if len(pieces) > 1:
                pieces[:] = ["".join(pieces)]
        for slot in self._all_slots():
            slot.text()

    def feed_many(self, chunks: Iterable[Any]) -> ToolCallAccumulator:
        for c in chunks:
            self.feed(c)
        return self

    @property
    def calls(self) -> list[ToolCall]:
        """The calls so far (arguments as accumulated, no end-of-stream repair)."""
        return [self._call(s, final=False) for s in self._all_slots()]

    def result(self) -> Turn:
        for state in self._choices.values():
            self._judge_attribution(state)
        slots = self._all_slots()
        calls = [self._call(s, final=True) for s in slots]
        if any(s.unlatched for s in slots):  # a latch the end undid: its note goes too
            kept = {s.latched for s in slots if s.cumulative and not s.unlatched}
            for s in slots:
                if s.unlatched and s.latched not in kept:
                    self._notes.pop(s.latched, None)
        return Turn(
            calls,
            self._content.joined(),
            self._reasoning.joined(),
            self._finish,
            self._usage,
            self._error,
            sorted(self._notes.values(), key=_note_order) if self._notes else [],
            self._content.dropped,
            self._reasoning.dropped,
            self.calls_cut,
        )

    # -- internals ----------------------------------------------------------------
    def _note(self, quirk: str, event: int, message: str, recovered: bool = True) -> None:
        # Bounded: the first few events of a quirk are evidence enough (a 100 MB stream of
        # index-less deltas must not keep one note per delta); losses are always kept.
        seen = self._noted.get(quirk, 0)
        if recovered and seen >= MAX_NOTES_PER_QUIRK:
            return
        if (quirk, event) not in self._notes:
            self._noted[quirk] = seen + 1
            self._notes[(quirk, event)] = Workaround(quirk, event, message, recovered)

    def _judge_attribution(self, state: _Choice) -> None:
        """Mark calls whose arguments cannot be told apart (set ``lost``; note why).

        Fragments without index, id and name go to the call in progress (the index repair),
        and fragments on an index several calls share go to the last call that opened it. When
        such a guess leaves a call's arguments unparsable, the fragments of two calls were
        interleaved: unattributable, as that fix's review says. Likewise, one call's deltas
        split over two indices (Q-INDEX-INCONSISTENT-WITHIN-CALL) leave a nameless, id-less
        call holding arguments next to a named call holding none.
        """
        for s in state.slots:  # nearly every turn: no guess, each call has an id or a name
            if s.guessed or not (s.name or s.id):
                break
        else:
            return  # nothing below can apply
        raw = {id(s): s.text() for s in state.slots}
        if any(s.guessed and raw[id(s)].strip() and not _parses(raw[id(s)]) for s in state.slots):
            for s in state.slots:
                if s.guessed or (not raw[id(s)].strip() and s.obj is None):
                    s.lost = True
                    idx = s.provider_index
                    quirk = (
                        "Q-INDEX-ABSENT"
                        if idx is None
                        else "Q-INDEX-ALL-ZERO"
                        if idx == 0
                        else "Q-INDEX-REUSED-ACROSS-CALLS"
                    )
                    self._notes[(quirk, s.first_event)] = Workaround(  # replaces a hopeful note
                        quirk,
                        s.first_event,
                        "fragments of calls that share no usable index were interleaved; "
                        "their arguments cannot be attributed",
                        recovered=False,
                    )
        orphans = [
            s
            for s in state.slots
            if not s.name and not s.id and (raw[id(s)].strip() or s.obj is not None)
        ]
        argless = [s for s in state.slots if s.name and not raw[id(s)].strip() and s.obj is None]
        if orphans and argless:
            for s in orphans:
                self._note(
                    "Q-INDEX-INCONSISTENT-WITHIN-CALL",
                    s.first_event,
                    "arguments on an index that never got an id or a name, next to a named "
                    "call without arguments: one call split over two indices",
                    recovered=False,
                )
            for s in argless:
                s.lost = True

    works_around(
        _judge_attribution,
        "Q-INDEX-ABSENT",
        "Q-INDEX-ALL-ZERO",
        "Q-INDEX-REUSED-ACROSS-CALLS",
        "Q-INDEX-INCONSISTENT-WITHIN-CALL",
    )

    def _all_slots(self) -> list[_Slot]:
        if len(self._choices) == 1:  # choice 0 alone (always there): no sort, no nesting
            return self._choice0.slots[:]
        return [s for key in sorted(self._choices) for s in self._choices[key].slots]

    def _open_fast(self, state: _Choice, tc: dict[str, Any], idx: int, ev: int) -> bool:
        """A call's opening delta on a new index with an id and a name, and only the keys
        of the reference shape: what ``_apply_tool_delta`` does for it, without the search."""
        fn = tc.get("function")
        if type(fn) is not dict:
            return False
        tid, name = tc.get("id"), fn.get("name")
        if not (type(tid) is str and tid and type(name) is str and name):
            return False
        if len(tc) > 4 or not _OPENER_KEYS.issuperset(tc) or not _FN_KEYS.issuperset(fn):
            return False
        slot: _Slot | None
        if self._calls_left < 0:  # no bound: state.open, inlined
            slot = _Slot(len(state.slots), idx, ev)
            state.slots.append(slot)
            state.by_index[idx] = state.current = slot
        else:
            slot = self._open(state, idx, ev)
            if slot is None:
                return True  # past max_calls: not assembled
        slot.id = tid
        state.by_id[tid] = slot
        slot.ids.add(tid)
        typ = tc.get("type")
        if isinstance(typ, str) and typ:
            slot.type = typ
        slot.name = name
        a = fn.get("arguments")
        if a is not None and a != "":
            self._apply_args(slot, a, ev)
        return True

    def _apply_tool_delta(self, state: _Choice, tc: dict[str, Any], ev: int) -> None:
        fn = tc.get("function")
        fn = fn if isinstance(fn, dict) else {}
        tid = _nonempty_str(tc.get("id"))
        name = _nonempty_str(fn.get("name"))
        slot = self._select(state, tc.get("index"), tid, name, fn, ev)
        state.current = slot
        if slot is None:
            return  # a call past max_calls, or a fragment that would go to one
        if tid:
            if not slot.id:
                slot.id = tid
                state.by_id[tid] = slot
            slot.ids.add(tid)
        typ = _nonempty_str(tc.get("type"))
        if typ and not slot.type:
            slot.type = typ
        if name:
            self._apply_name(slot, name, ev)
        if "arguments" in fn:
            self._apply_args(slot, fn["arguments"], ev)
        for k, v in tc.items():
            if k not in ("index", "id", "type", "function") and v is not None:
                slot.extras.setdefault(k, v)  # e.g. Gemini's extra_content: echo it back

    def _open(self, state: _Choice, provider_index: int | None, ev: int) -> _Slot | None:
        """A new call's slot; None past ``max_calls`` (the first such event is kept)."""
        if self._calls_left == 0:
            if self.calls_cut is None:
                self.calls_cut = ev
            state.current = None  # its fragments go nowhere, not to the last call kept
            return None
        self._calls_left -= 1
        return state.open(provider_index, ev)

    def _select(
        self,
        state: _Choice,
        index: Any,
        tid: str | None,
        name: str | None,
        fn: dict[str, Any],
        ev: int,
    ) -> _Slot | None:
        idx = index if type(index) is int else None
        if idx is not None:
            slot = state.by_index.get(idx)
            if slot is None:
                return self._open(state, idx, ev)
            if self._starts_new_call(slot, tid, name, fn):
                quirk = "Q-INDEX-ALL-ZERO" if idx == 0 else "Q-INDEX-REUSED-ACROSS-CALLS"
                if tid and tid == slot.id:
                    quirk = "Q-INDEX-AND-ID-REUSED"
                self._note(
                    quirk, ev, f"a new call started on occupied index {idx}; given its own slot"
                )
                slot = self._open(state, idx, ev)
                if slot is not None:
                    state.shared.add(idx)
                    slot.plain = False
                return slot
            if idx in state.shared and not tid and not name:
                slot.guessed = True  # a bare fragment on an index several calls share
            return slot
        self._note("Q-INDEX-ABSENT", ev, "tool-call delta without index; routed by id/name")
        if tid:
            known = state.by_id.get(tid)
            if known is not None:
                return known
            cur = state.current
            if cur is not None and not cur.id and not cur.name and cur.length == 0:
                return cur
            return self._open(state, None, ev)
        cur = state.current
        if name:
            if cur is not None and (not cur.name or (cur.name == name and not self._done(cur))):
                return cur
            return self._open(state, None, ev)
        if cur is None:
            return self._open(state, None, ev)
        if len(state.slots) > 1:
            cur.guessed = True  # no index, id or name: "the call in progress" is a guess
        return cur

    works_around(
        _select,
        "Q-INDEX-ABSENT",
        "Q-INDEX-ALL-ZERO",
        "Q-INDEX-REUSED-ACROSS-CALLS",
        "Q-INDEX-AND-ID-REUSED",
    )

    def _done(self, slot: _Slot) -> bool:
        return slot.obj is not None or (slot.length > 0 and _complete_json(slot.text()))

    def _starts_new_call(
        self, slot: _Slot, tid: str | None, name: str | None, fn: dict[str, Any]
    ) -> bool:
        if tid and slot.id and tid != slot.id and tid not in slot.ids:
            return name is not None  # a new id without a name is Q-ID-CHANGES-MID-CALL
        if tid and tid == slot.id and name and slot.name and name != slot.name:
            # The same id under another complete declared name: a second call
            # (Q-INDEX-AND-ID-REUSED); without declared tools, a name sent in pieces.
            return name in self._declared and slot.name in self._declared
        if tid is None and name and slot.name:
            args = fn.get("arguments")
            restarts = isinstance(args, str) and args.lstrip().startswith("{")
            if name == slot.name:
                return restarts and self._done(slot)  # id-less repeat of a finished call
            if name in self._declared and slot.name in self._declared:
                return True
            return self._done(slot)
        return False

    def _apply_name(self, slot: _Slot, name: str, ev: int) -> None:
        if not slot.name:
            slot.name = name
        elif name != slot.name:
            complete = slot.name in self._declared
            if not complete:  # a fragment of the name (Q-NAME-FRAGMENTED)
                slot.name += name
                self._note("Q-NAME-FRAGMENTED", ev, "function name arrived in pieces")

    works_around(_apply_name, "Q-NAME-FRAGMENTED")

    def _apply_args(self, slot: _Slot, a: Any, ev: int) -> None:
        if a is None:
            return
        if not isinstance(a, str):
            slot.obj = a  # object arguments: the last one wins, serialised at the end
            self._note("Q-ARGS-JSON-OBJECT", ev, "arguments sent as a JSON value, not a string")
            return
        if not a:
            return
        if not slot.markup and CONTROL_MARKUP.search(a):  # noted once a call: a note per
            slot.markup = True  # fragment would cost more than the stream it describes
            self._note(
                "Q-ARGS-CONTROL-MARKUP",
                ev,
                f"control markup in arguments: {a[:40]!r}",
                recovered=False,
            )
        if slot.cumulative:
            if slot.alt is not None:
                slot.alt_length += len(a)
                if slot.alt_length > ALT_KEPT:
                    slot.alt = None
                else:
                    slot.alt.append(a)
            buf = slot.text()
            if a.startswith(buf):
                slot.parts, slot.length = [a], len(a)
            elif not buf.startswith(a):
                slot.parts.append(a)
                slot.length += len(a)
            return
        # Each delta re-sends everything so far. A one-character buffer latches only when it
        # is "{": a fragment starting "{" after "{" can never continue a JSON object.
        # After two or more plain fragments, a restart is the flush variant of
        # Q-ARGS-DUPLICATED-ON-FLUSH (the whole arguments re-sent after a prefix that was
        # itself incomplete), not cumulative streaming, whose second fragment restarts.
        if (
            len(a) > slot.length
            and (slot.length >= 2 or (slot.length == 1 and slot.text() == "{"))
            and a.startswith(slot.text())
        ):
            flush = slot.grown
            slot.cumulative, slot.plain = True, False
            # The appended reading is kept too: a fragment that begins like the text so far
            # may be the next key (`{"` then `{": null}`); the end keeps the one that parses.
            slot.alt, slot.alt_length = [slot.text(), a], slot.length + len(a)
            slot.latched = ("Q-ARGS-DUPLICATED-ON-FLUSH" if flush else "Q-ARGS-CUMULATIVE", ev)
            slot.parts, slot.length = [a], len(a)
            if flush:
                self._note(
                    "Q-ARGS-DUPLICATED-ON-FLUSH",
                    ev,
                    "the whole arguments re-sent after an incomplete prefix; kept the re-sent",
                )
            else:
                self._note("Q-ARGS-CUMULATIVE", ev, "arguments re-sent in full on each delta")
            return
        if slot.length:
            slot.grown = True
        slot.parts.append(a)
        slot.length += len(a)
        if len(slot.parts) > JOIN_AFTER:
            join_tail(slot.parts)

    works_around(
        _apply_args,
        "Q-ARGS-JSON-OBJECT",
        "Q-ARGS-CONTROL-MARKUP",
        "Q-ARGS-CUMULATIVE",
        "Q-ARGS-DUPLICATED-ON-FLUSH",
    )

    def _unnamed(self, call: ToolCall, ev: int) -> None:
        """A call whose name never arrived: with exactly one declared tool the name can
        only be that tool's; with several (or none known) the call cannot be run."""
        if len(self._declared) == 1:
            (call.name,) = self._declared
            self._note(
                "Q-NAME-NEVER-SENT", ev, f"no name sent; the one declared tool, {call.name!r}"
            )
        else:
            self._note("Q-NAME-NEVER-SENT", ev, "no name sent", recovered=False)

    works_around(_unnamed, "Q-NAME-NEVER-SENT")

    def _call(self, slot: _Slot, *, final: bool) -> ToolCall:
        raw = slot.text()
        if final and slot.alt is not None and not _parses(raw):
            plain = "".join(slot.alt)
            if _parses(plain):  # the latch misread a key as a restart: the appended reading
                raw, slot.unlatched = plain, True
        if slot.obj is not None and not raw:
            raw = json.dumps(slot.obj, ensure_ascii=False, separators=(",", ":"))
        call = ToolCall(  # positional: a keyword call costs more, and this runs per call
            slot.ordinal,
            slot.id,
            slot.type or "function",
            slot.name,
            raw,
            raw,
            False,
            True,
            slot.provider_index,
            dict(slot.extras) if slot.extras else {},
        )
        if not final:
            return call
        ev = slot.first_event
        if slot.lost or (self._error is not None and not _parses(raw)):
            # Unattributable, or cut by an error (catalogue: discard, do not repair).
            call.valid = False
            return call
        if not slot.name and (slot.id or len(self._all_slots()) == 1):
            self._unnamed(call, ev)  # (id-less arguments beside other calls: not a call start)
        if not raw.strip():
            params = self._declared.get(slot.name)
            if params and params.get("required"):
                self._note(
                    "Q-ARGS-LOST-MULTITOKEN-DELTA",
                    ev,
                    f"no arguments streamed for {slot.name!r}, which has required parameters",
                    recovered=False,
                )
                call.arguments, call.valid = "{}", False
            else:
                self._note("Q-ARGS-ABSENT-NO-PARAMS", ev, "no arguments streamed; sent as {}")
                call.arguments = "{}"
            return call
        if _parses(raw):
            return call
        once = _kfold(raw)
        if once is not None:
            self._note("Q-ARGS-DUPLICATED-ON-FLUSH", ev, "arguments repeated whole; collapsed")
            call.arguments = once
            return call
        if _split_json_documents(raw):
            self._note(
                "Q-INDEX-REUSED-ACROSS-CALLS",
                ev,
                "two JSON documents in one call's "
                "arguments: a second call reused the index without an id",
                recovered=False,
            )
            call.valid = False
            return call
        repaired = None if slot.markup else repair_json(raw)
        if repaired is not None:
            call.arguments, call.repaired = repaired, True
            if self._finish != "length":
                self._note("Q-ARGS-TRUNCATED", ev, "arguments were cut; closed by JSON repair")
            return call
        if not slot.markup:  # markup explains it (Q-ARGS-CONTROL-MARKUP, noted on arrival)
            # Neutral: the wire rarely shows whose fault it is. The analyzer names
            # Q-ARGS-SERVER-PARSER-CORRUPTION where the model's own text is on the wire.
            self._note(
                "Q-ARGS-INVALID-JSON",
                ev,
                "arguments are not JSON and cannot be repaired; kept as sent",
                recovered=False,
            )
        call.valid = False
        return call

    works_around(
        _call,
        "Q-ARGS-ABSENT-NO-PARAMS",
        "Q-ARGS-DUPLICATED-ON-FLUSH",
        "Q-ARGS-LOST-MULTITOKEN-DELTA",
        "Q-ARGS-TRUNCATED",
        "Q-ARGS-INVALID-JSON",
        "Q-INDEX-REUSED-ACROSS-CALLS",
    )


def completion_as_chunk(body: Mapping[str, Any]) -> dict[str, Any]:
    """A non-streamed completion as one chunk (catalogue Q-STREAM-DOWNGRADED: some servers
    answer ``stream: true`` with ``application/json``; feed this to the accumulator)."""
    choices = []
    for c in body.get("choices") or []:
        if not isinstance(c, dict):
            continue
        msg = dict(c.get("message") or {})
        tcs = msg.get("tool_calls")
        if isinstance(tcs, list):
            msg["tool_calls"] = [
                dict(tc, index=i) for i, tc in enumerate(tcs) if isinstance(tc, dict)
            ]
        choices.append(
            {"index": c.get("index", 0), "delta": msg, "finish_reason": c.get("finish_reason")}
        )
    return {"choices": choices, "usage": body.get("usage")}


def accumulate(chunks: Iterable[Any], *, tools: Iterable[Any] | None = None, n: int = 1) -> Turn:
    """Convenience: feed every chunk and return the assembled turn."""
    return ToolCallAccumulator(tools=tools, n=n).feed_many(chunks).result()


# --------------------------------------------------------------------------- round trip

_B62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def mistral_id(call_id: str) -> str:
    """A deterministic 9-character [a-zA-Z0-9] id for providers that demand one
    (Q-RT-MISTRAL-TOOL-CALL-ID). Applied to both sides, so the pairing survives."""
    if re.fullmatch(r"[a-zA-Z0-9]{9}", call_id):
        return call_id
    import hashlib  # here: only round trips to Mistral need it (start-up of `analyze`)

    n = int.from_bytes(hashlib.sha256(call_id.encode("utf-8")).digest()[:8], "big")
    out = []
    for _ in range(9):
        n, r = divmod(n, 62)
        out.append(_B62[r])
    return "".join(out)


@dataclass(frozen=True)
class RoundTripPolicy:
    """Per-provider choices for sending the calls back (catalogue group J)."""

    content: str = "null"  # "null" | "empty" | "omit": the assistant message's content
    tool_message_name: bool = False  # Q-RT-TOOL-MESSAGE-NAME: add `name` to tool messages
    id_format: str | None = None  # "mistral9": remap ids to 9 alphanumerics
    echo_reasoning: bool = False  # Q-REASONING-MUST-BE-ECHOED

    @classmethod
    def from_provider(cls, entry: Mapping[str, Any] | None) -> RoundTripPolicy:
        rt = (entry or {}).get("roundtrip") or {}
        return cls(
            content=rt.get("content", "null"),
            tool_message_name=bool(rt.get("tool_message_name", False)),
            id_format=rt.get("id_format"),
            echo_reasoning=bool(rt.get("echo_reasoning", False)),
        )

    def wire_id(self, call_id: str) -> str:
        return mistral_id(call_id) if self.id_format == "mistral9" else call_id


def assistant_message(turn: Turn, policy: RoundTripPolicy | None = None) -> dict[str, Any]:
    """The assistant message that sends ``turn`` back; TextCutError when its calls were
    cut by ``max_calls``, or its content, or its reasoning that the policy echoes, by
    ``max_text``."""
    p = policy or RoundTripPolicy()
    if turn.calls_cut is not None:
        raise TextCutError(
            f"the turn had more calls than the {len(turn.calls):,} kept (one "
            f"at event {turn.calls_cut} was refused): sent back, it would not "
            "be what was received"
        )
    from conformance.longstrings import is_cut

    cut = next((c for c in turn.calls if is_cut(c.id) or is_cut(c.name)), None)
    if cut is not None:
        raise TextCutError(
            f"call {cut.index}'s {'id' if is_cut(cut.id) else 'name'} was longer than the "
            "analysis keeps: sent back, it would not be what was received"
        )
    if turn.content_dropped:
        raise TextCutError(_cut("content", turn.content, turn.content_dropped))
    if p.echo_reasoning and turn.reasoning_dropped:
        raise TextCutError(_cut("reasoning", turn.reasoning, turn.reasoning_dropped))
    msg: dict[str, Any] = {"role": "assistant"}
    if turn.content:
        msg["content"] = turn.content
    elif p.content == "null":
        msg["content"] = None
    elif p.content == "empty":
        msg["content"] = ""
    if turn.calls:
        entries = []
        for c in turn.calls:
            e = c.as_message_entry()
            e["id"] = p.wire_id(c.id)
            entries.append(e)
        msg["tool_calls"] = entries
    if p.echo_reasoning and turn.reasoning:
        msg["reasoning_content"] = turn.reasoning
    return msg


def _cut(what: str, kept: str | None, dropped: int) -> str:
    n = len(kept or "")
    return (
        f"the turn's {what} was cut (the first {n:,} of {n + dropped:,} characters "
        "kept): sent back, it would not be what was received"
    )


def tool_result_messages(
    pairs: Iterable[tuple[ToolCall, Any]], policy: RoundTripPolicy | None = None
) -> list[dict[str, Any]]:
    """One ``role: tool`` message per (call, result), ``tool_call_id`` = the call's id."""
    p = policy or RoundTripPolicy()
    out = []
    for call, result in pairs:
        content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        msg: dict[str, Any] = {
            "role": "tool",
            "tool_call_id": p.wire_id(call.id),
            "content": content,
        }
        if p.tool_message_name:
            msg["name"] = call.name
        out.append(msg)
    return out
