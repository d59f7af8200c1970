"""Judging one client's assembled calls against the robust reading of the same bytes.

The robust reading is the analyzer's (``analyze(...).turn``, the ``robust`` strategy): the
calls the suite's reference client assembles from exactly the bytes the client library
received. A client is ``ok`` when it assembled the same calls: same count, same names, the
same arguments (equal text, equal JSON, or the text exactly as streamed before the robust
reading repaired it) and, where the wire carried an id, that id. ``wrong`` always says how.

Outcomes: ``ok`` · ``wrong`` · ``crashed`` (the library raised on a stream that reported no
error) · ``hung`` (no answer within the bound) · ``error`` (the adapter could not run).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

OUTCOMES = ("ok", "wrong", "crashed", "hung", "error")


@dataclass(frozen=True)
class Expected:
    """What the robust reading of the received bytes says the turn holds."""

    calls: list[dict[str, Any]]  # {id, name, arguments, raw_arguments, valid}
    error: str | None = None  # the stream (or HTTP status) reported an error
    # Why refusing the turn is also right: it was cut (finish_reason "length") or holds no
    # call although the request required one. A client may raise then, or return the calls.
    refusable: str | None = None


@dataclass
class Verdict:
    outcome: str
    detail: str = ""
    problems: list[str] = field(default_factory=list)  # the kinds of wrong, e.g. "calls merged"


def expected_from(result: Any, request: dict[str, Any] | None = None) -> Expected:
    """The robust reading of an analysis result (``conformance.analysis.CaptureResult``);
    ``request`` is the body the client sent (it says whether a call was required)."""
    turn = result.turn
    calls = []
    if turn is not None:
        for c in turn.calls:
            calls.append({"id": c.id, "name": c.name, "arguments": c.arguments,
                          "raw_arguments": c.raw_arguments, "valid": c.valid})
    error = result.error
    if turn is not None and turn.error is not None and not error:
        error = "error reported inside the stream"
    return Expected(calls, error, refusable_because(result, calls, request))


def refusable_because(result: Any, calls: list[dict[str, Any]],
                      request: dict[str, Any] | None) -> str | None:
    if result.finish_reason in ("length", "content_filter"):
        return f"the stream ends with finish_reason {result.finish_reason!r}"
    choice = request.get("tool_choice") if isinstance(request, dict) else None
    if not calls and (choice == "required" or isinstance(choice, dict)):
        return "the request required a tool call and the stream holds none"
    return None


def _json(text: Any) -> Any:
    if not isinstance(text, str):
        return text  # a client that hands back parsed arguments
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


_NOT_JSON = object()


def _args_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def same_arguments(got: Any, want: dict[str, Any]) -> bool:
    """Equal text, equal JSON, or the text exactly as streamed (before repair)."""
    for text in (want["arguments"], want.get("raw_arguments")):
        if text is None:
            continue
        if isinstance(got, str) and got == text:
            return True
        g, w = _json(got), _json(text)
        if g is not _NOT_JSON and w is not _NOT_JSON and g == w:
            return True
    # A parameterless call: no arguments, "" and {} are the same statement.
    if not (want.get("raw_arguments") or "").strip() and _json(want["arguments"]) == {}:
        return got in (None, "", {}) or _json(got) == {}
    return False


def _compact(text: Any) -> str:
    """Arguments without insignificant whitespace, for substring comparisons."""
    t = _args_text(text)
    v = _json(t)
    if v is not _NOT_JSON:
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    return "".join(t.split())


def _pieces(want: dict[str, Any]) -> list[str]:
    out = []
    for text in (want.get("raw_arguments"), want["arguments"]):
        if isinstance(text, str) and text.strip() and text.strip() not in ("{}",):
            out.append("".join(text.split()))
    return out


def _holds(got: Any, want: dict[str, Any]) -> bool:
    g = "".join(_args_text(got).split())
    return any(p in g for p in _pieces(want))


def _merged_into(c: dict[str, Any], robust: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The robust calls one client call holds two or more of (by arguments or by ids).

    A call that equals one robust call (two identical calls are common) holds one."""
    if any(same_arguments(c.get("arguments"), w) for w in robust):
        held = []
    else:
        held = [w for w in robust if _holds(c.get("arguments"), w)]
    if len(held) >= 2:
        return held
    cid = c.get("id") if isinstance(c.get("id"), str) else ""
    if any(cid == w["id"] for w in robust):
        return []
    held = [w for w in robust if w["id"] and w["id"] in cid]
    if len({w["id"] for w in held}) >= 2:
        return held
    return []


def _pair(client: list[dict[str, Any]], robust: list[dict[str, Any]],
          skip: set[int]) -> tuple[list[tuple[int, int]], set[int], set[int]]:
    """Client calls paired with robust calls: by the wire's id first, then by position."""
    pairs: list[tuple[int, int]] = []
    used = set(skip)
    for i, w in enumerate(robust):
        j = next((k for k, c in enumerate(client) if k not in used and w["id"]
                  and c.get("id") == w["id"]), None)
        if j is not None:
            pairs.append((j, i))
            used.add(j)
    paired = {i for _, i in pairs}
    for i in range(len(robust)):
        if i in paired:
            continue
        free = [k for k in range(len(client)) if k not in used]
        if not free:
            break
        j = i if i in free else free[0]
        pairs.append((j, i))
        used.add(j)
        paired.add(i)
    return sorted(pairs, key=lambda p: p[1]), set(range(len(robust))) - paired, \
        set(range(len(client))) - used


def _compare_pair(c: dict[str, Any], w: dict[str, Any], n: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    name, want_name = c.get("name"), w["name"]
    if name != want_name:
        if not name:
            out.append(("name overwritten", f"call {n}: name {name!r}, the wire named "
                                            f"{want_name!r}"))
        elif want_name and want_name in name:
            out.append(("name concatenated", f"call {n}: name {name!r}, want {want_name!r}"))
        else:
            out.append(("name overwritten", f"call {n}: name {name!r}, want {want_name!r}"))
    if not same_arguments(c.get("arguments"), w):
        got, want = _compact(c.get("arguments")), _compact(w["arguments"])
        if want and want != got and want in got:
            out.append(("arguments concatenated",
                        f"call {n}: arguments {_short(got)}, want {_short(want)}"))
        elif got in ("", "{}", "null") and want not in ("", "{}"):
            out.append(("arguments lost",
                        f"call {n}: arguments {_short(got)}, want {_short(want)}"))
        elif want.startswith(got):
            out.append(("arguments truncated",
                        f"call {n}: arguments {_short(got)}, want {_short(want)}"))
        else:
            out.append(("arguments changed",
                        f"call {n}: arguments {_short(got)}, want {_short(want)}"))
    cid, want_id = c.get("id"), w["id"]
    if want_id and cid != want_id:
        if not cid:
            out.append(("id lost", f"call {n}: id {cid!r}, the wire sent {want_id!r}"))
        else:
            out.append(("id changed", f"call {n}: id {cid!r}, the wire sent {want_id!r}"))
    return out


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def judge(expected: Expected, answer: dict[str, Any]) -> Verdict:
    """One cell: the adapter's answer (``calls`` / ``exception`` / ``hung`` / ``error``)."""
    if answer.get("error"):
        return Verdict("error", _first_line(str(answer["error"])))
    if answer.get("hung"):
        return Verdict("hung", f"no answer within {answer.get('timeout', '?')} s")
    exc = answer.get("exception")
    if exc is not None:
        text = f"{exc.get('type', 'Exception')}: {_first_line(str(exc.get('message', '')))}"
        if expected.error:
            return Verdict("ok", f"raised {text} (the stream reports: "
                                 f"{_first_line(expected.error)})")
        if expected.refusable:
            return Verdict("ok", f"raised {text} ({expected.refusable})")
        return Verdict("crashed", text)
    client = answer.get("calls")
    if not isinstance(client, list):
        return Verdict("error", "the adapter answered without calls or an exception")
    robust = expected.calls
    problems: list[tuple[str, str]] = []
    if expected.error:
        # The calls of a stream cut by an error are not to be acted on: say so, or raise.
        problems.append(("error not surfaced", f"the stream reports an error "
                                               f"({_first_line(expected.error)}) and the "
                                               f"client returned {len(client)} call(s)"))
    else:
        merged = {k: _merged_into(c, robust) for k, c in enumerate(client)}
        merged = {k: v for k, v in merged.items() if v}
        for held in merged.values():
            problems.append(("calls merged", "+".join(w["name"] or "?" for w in held)
                                             + " in one call"))
        covered = {id(w) for held in merged.values() for w in held}
        rest = [w for w in robust if id(w) not in covered]
        pairs, lost, extra = _pair(client, rest, set(merged))
        for j, i in pairs:
            problems.extend(_compare_pair(client[j], rest[i], robust.index(rest[i])))
        if lost:
            names = ", ".join(rest[i]["name"] or "?" for i in sorted(lost))
            why = " (arguments not JSON)" if any(not rest[i]["valid"] for i in lost) else ""
            problems.append(("call dropped", f"{len(lost)} of {len(robust)} calls missing: "
                                             f"{names}{why}"))
        if extra:
            names = ", ".join(repr(client[k].get("name")) for k in sorted(extra))
            problems.append(("extra call", f"{len(client)} calls, the stream holds "
                                           f"{len(robust)}; not in it: {names}"))
    if not problems:
        detail = f"{len(client)} call(s) as the robust reading"
        return Verdict("ok", detail)
    kinds = list(dict.fromkeys(k for k, _ in problems))
    detail = "; ".join(f"{k}: {d}" for k, d in problems)
    return Verdict("wrong", detail, kinds)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""
