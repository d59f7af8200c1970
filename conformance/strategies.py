"""The three client strategies the matrix reports impact for.

- ``naive``: the accumulation loop the guides show, literally: ``choices[0]``, key by
  ``index``, overwrite id/name/type whenever the key is present (``Some("")`` included),
  append arguments.
- ``guarded``: the guides' non-empty guard (and a tutorial's guards, without its
  invented fallback ids): skip chunks without choices, index defaults to 0,
  overwrite only with non-empty values.
- ``robust``: ``conformance.client.ToolCallAccumulator``, the suite's reference client.

A strategy that raises is reported as crashed, with the exception, not propagated.
"""

from __future__ import annotations

import json
from typing import Any

from conformance.client import JOIN_AFTER, ToolCallAccumulator, Turn, join_tail
from conformance.enums import Strategy


class NaiveAccumulator:
    guard = False

    def __init__(self, max_calls: int | None = None) -> None:
        self.acc: dict[Any, dict[str, Any]] = {}
        self.crash: str | None = None
        self.max_calls = max_calls  # indexes given an entry; a new one past it is ignored

    def feed(self, chunk: Any, event: int) -> None:
        if self.crash is not None or not isinstance(chunk, dict):
            return
        if not self.guard and type(c := chunk.get("choices")) is list and not c:
            # `choices[0]` of the usage chunk every stream ends with: the crash it gives,
            # without raising and catching it
            self.crash = f"event {event}: {_EMPTY_CHOICES}"
            return
        try:
            self._feed(chunk)
        except (KeyError, IndexError, TypeError, AttributeError) as e:
            self.crash = f"event {event}: {type(e).__name__}: {e}"

    def _feed(self, chunk: dict[str, Any]) -> None:
        choices = chunk.get("choices")
        if self.guard:
            if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
                return
            delta = choices[0].get("delta") or {}
        else:
            if "error" in chunk and "choices" not in chunk:
                return  # even a naive SSE loop stops on an error envelope
            delta = chunk["choices"][0]["delta"]
        for tc in delta.get("tool_calls") or ():
            idx = tc.get("index", 0) if self.guard else tc["index"]
            if not self.guard and not isinstance(idx, int):
                raise TypeError(f"tool-call index is {idx!r}, not an integer")
            entry = self.acc.get(idx)
            if entry is None:
                if self.max_calls is not None and len(self.acc) >= self.max_calls:
                    continue  # past the analysis' bound on calls: not assembled
                entry = self.acc[idx] = {"id": "", "type": "", "name": "", "arguments": []}
            fn = tc.get("function") or {}
            guard = self.guard
            # id, type and name: overwritten when present (all read first: a `function`
            # that is no object crashes the reading before it changes anything)
            tid, typ, name = tc.get("id"), tc.get("type"), fn.get("name")
            if tid is not None and (tid or not guard):
                entry["id"] = tid
            if typ is not None and (typ or not guard):
                entry["type"] = typ
            if name is not None and (name or not guard):
                entry["name"] = name
            args = fn.get("arguments")
            if args is not None and (args or not self.guard):
                if not isinstance(args, str):  # what `str += args` raises: a crash
                    raise TypeError(
                        f'can only concatenate str (not "{type(args).__name__}") to str'
                    )
                parts = entry["arguments"]
                parts.append(args)  # joined at the end (no quadratic `+=`), bounded meanwhile
                if len(parts) > JOIN_AFTER:
                    join_tail(parts)

    def compact(self) -> None:
        """Each call's fragments joined into one string: memory follows the text kept, not
        the number of deltas (one small string per fragment costs ~50 bytes more)."""
        for entry in self.acc.values():
            parts = entry["arguments"]
            if len(parts) > 1:
                parts[:] = ["".join(parts)]

    def calls(self) -> list[dict[str, Any]]:
        acc = self.acc
        keys = list(acc)
        if _INT_ONLY.issuperset(map(type, keys)):  # nearly always: their own order, no key
            keys.sort()
        else:
            keys.sort(key=lambda k: (not isinstance(k, int), k if isinstance(k, int) else 0))
        out = []
        for k in keys:
            v = acc[k]
            i, t, name = v["id"], v["type"], v["name"]
            out.append(
                {
                    "index": k if type(k) is int else None,  # `"index": true` is no index
                    "id": i if type(i) is str else _text(i),
                    "type": (t if type(t) is str else _text(t)) or "function",
                    "name": name if type(name) is str else _text(name),
                    "arguments": "".join(v["arguments"]),
                }
            )
        return out


class GuardedAccumulator(NaiveAccumulator):
    guard = True


class RobustStrategy:
    def __init__(
        self,
        tools: Any = None,
        n: int = 1,
        max_text: int | None = None,
        max_calls: int | None = None,
    ) -> None:
        self.acc = ToolCallAccumulator(tools=tools, n=n, max_text=max_text, max_calls=max_calls)
        self.crash: str | None = None
        self._turn: Turn | None = None

    def feed(self, chunk: Any, event: int) -> None:
        if isinstance(chunk, dict):  # a parsed payload; a JSON string is no chunk (not re-parsed)
            self.acc.feed(chunk, event=event)

    def compact(self) -> None:
        self.acc.compact()

    @property
    def calls_cut(self) -> int | None:
        """The event of the first call past ``max_calls``, not assembled."""
        return self.acc.calls_cut

    def turn(self) -> Turn:
        if self._turn is None:
            self._turn = self.acc.result()
        return self._turn

    def calls(self) -> list[dict[str, Any]]:
        return [
            {"index": c.index, "id": c.id, "type": c.type, "name": c.name, "arguments": c.arguments}
            for c in self.turn().calls
        ]


try:  # what `chunk["choices"][0]` raises on an empty list, as a crash reads it
    [][0]
except IndexError as e:
    _EMPTY_CHOICES = f"{type(e).__name__}: {e}"

_INT_ONLY = frozenset({int})  # the key types that sort as they are (bool is no index)


def _text(value: Any) -> str:
    """A field a naive client copied as it came, as CALL's string: another JSON value
    (``"id": 7``, which its finding reports) as its JSON text."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


STRATEGIES = tuple(Strategy)
