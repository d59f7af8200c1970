"""Judging one client's calls, call by call, against what a correct client does with the
bytes it received.

The bytes are read by the analyzer (``analyze(...).turn``, the suite's robust accumulator),
and each call on the wire gets a status:

- ``sound``: its arguments arrived as valid JSON with nothing repaired and it has a name. The
  right call exists; a client must return it (same name, JSON-equal arguments and, where the
  wire carried an id, that id; where it carried none, no id of the client's making).
- ``visible``: no right call exists and the bytes show it (arguments that are not JSON, cut
  and only closed by a repair, interleaved beyond attribution). The only right thing is to
  make the problem visible: flag the call invalid, raise a clear error, or refuse the turn.
  The robust reading's repair is evidence, never the right answer.
- ``hidden``: no right call exists and nothing in the bytes lets a client see it (a call
  whose arguments the provider lost, fragments no index or id can attribute but which still
  parse). A client that flags it is ``ok``; one that returns what the wire says is ``n/a``.

A stream that reports an error (HTTP status, error event) holds no call to act on: raising
is right, returning calls is ``silent partial``. Raising on a stream that holds a problem
(a call that is not sound, a turn cut by ``finish_reason: "length"``, a required call
missing) is refusing it: ``ok``. Raising on a stream of sound calls is ``crashed``.

The cell's outcome is the worst of its calls' (``OUTCOMES`` is in that order, worst first);
``problems`` lists every kind found.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# Worst first: a cell shows the first that any of its calls has.
OUTCOMES = (
    "error",
    "hung",
    "crashed",
    "merged",
    "dropped",
    "args lost",
    "invalid passed",
    "silent partial",
    "wrong",
    "id invented",
    "n/a",
    "ok",
)
MEANING = {
    "ok": "the right calls; or, where the bytes hold no right call, the problem made "
    "visible (the call flagged invalid, a clear error raised, the turn refused)",
    "silent partial": "partial or repaired arguments (or the calls of a stream that "
    "reported an error) returned with no flag",
    "invalid passed": "arguments that are not valid JSON returned with no flag",
    "id invented": "an id the wire never carried (a failure of the id contract: the "
    "provider's id is the only link to the tool result; shown apart)",
    "merged": "two or more calls of the wire returned as one",
    "dropped": "a call of the wire missing from the result, or flagged invalid although its "
    "arguments were sound",
    "args lost": "a call returned with empty arguments where the wire carried them",
    "wrong": "other wrong calls: a name or an id lost or changed, arguments changed, an extra call",
    "crashed": "raised on a stream whose calls are all sound and that reported no error",
    "hung": "no answer within the bound",
    "error": "the adapter could not run (not installed, no node, failed before sending)",
    "n/a": "no client can assemble the right calls from these bytes and nothing in them "
    "shows it: not counted for or against the client",
}
# The kinds of wrong a cell can list, and the outcome each one gives.
PROBLEMS = {
    "calls merged": "merged",
    "call dropped": "dropped",
    "flagged a sound call": "dropped",
    "arguments lost": "args lost",
    "invalid arguments passed": "invalid passed",
    "arguments repaired silently": "silent partial",
    "arguments truncated": "silent partial",
    "error not surfaced": "silent partial",
    "broken call dropped silently": "dropped",
    "id invented": "id invented",
    "id lost": "wrong",
    "id changed": "wrong",
    "name overwritten": "wrong",
    "name concatenated": "wrong",
    "arguments concatenated": "wrong",
    "arguments changed": "wrong",
    "extra call": "wrong",
    "not attributable": "n/a",
}


@dataclass(frozen=True)
class Expected:
    """What the bytes hold, call by call (``status``: sound, visible or hidden)."""

    calls: list[dict[str, Any]]  # {id, name, arguments, raw_arguments, status}
    error: str | None = None  # the stream (or HTTP status) reported an error
    # Why refusing the whole turn is also right (it was cut, a required call is missing,
    # a call is not sound): a client may raise then.
    refusable: str | None = None


@dataclass
class Verdict:
    outcome: str
    detail: str = ""
    problems: list[str] = field(default_factory=list)


def _parses(text: Any) -> bool:
    return _json(text) is not _NOT_JSON


def is_json(arguments: Any) -> bool:
    """Arguments a tool can be called with: parsed already, or text that parses."""
    return _parses(arguments)


def call_status(call: Any) -> str:
    """sound, visible or hidden (module docstring) for one ``conformance.client.ToolCall``."""
    if call.valid and not call.repaired and call.name:
        return "sound"
    raw = call.raw_arguments
    if call.repaired or not call.name or (raw.strip() and not _parses(raw)):
        return "visible"
    return "hidden"


def expected_from(result: Any, request: dict[str, Any] | None = None) -> Expected:
    """The calls of an analysis result (``conformance.analysis.CaptureResult``);
    ``request`` is the body the client sent (it says whether a call was required)."""
    turn = result.turn
    calls = [
        {
            "id": c.id,
            "name": c.name,
            "arguments": c.arguments,
            "raw_arguments": c.raw_arguments,
            "status": call_status(c),
        }
        for c in (turn.calls if turn is not None else [])
    ]
    error = result.error
    if turn is not None and turn.error is not None and not error:
        error = "error reported inside the stream"
    unrecovered = turn is not None and any(not w.recovered for w in turn.workarounds)
    return Expected(calls, error, refusable_because(result, calls, request, unrecovered))


def refusable_because(
    result: Any,
    calls: list[dict[str, Any]],
    request: dict[str, Any] | None,
    unrecovered: bool = False,
) -> str | None:
    if result.finish_reason in ("length", "content_filter"):
        return f"the stream ends with finish_reason {result.finish_reason!r}"
    choice = request.get("tool_choice") if isinstance(request, dict) else None
    if not calls and (choice == "required" or isinstance(choice, dict)):
        return "the request required a tool call and the stream holds none"
    broken = [c for c in calls if c.get("status", "sound") != "sound"]
    if broken:
        return f"{len(broken)} of {len(calls)} calls have no right form on the wire"
    if unrecovered:
        return "the stream holds a problem no accumulator can undo"
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
    """JSON-equal to the wire's arguments; never the raw text when it is not JSON."""
    g, w = _json(got), _json(want["arguments"])
    if w is _NOT_JSON:
        return False
    if g is not _NOT_JSON and g == w:
        return True
    # A parameterless call: no arguments, "" and {} are the same statement.
    return not (want.get("raw_arguments") or "").strip() and w == {} and got in (None, "", {})


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


def _merged_into(c: dict[str, Any], wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The wire's calls one client call holds two or more of (by arguments or by ids).

    A call that equals one wire call (two identical calls are common) holds one."""
    if any(same_arguments(c.get("arguments"), w) for w in wire):
        held = []
    else:
        held = [w for w in wire if _holds(c.get("arguments"), w)]
    if len(held) >= 2:
        return held
    cid = c.get("id") if isinstance(c.get("id"), str) else ""
    if any(cid == w["id"] for w in wire):
        return []
    held = [w for w in wire if w["id"] and isinstance(cid, str) and w["id"] in cid]
    if len({w["id"] for w in held}) >= 2:
        return held
    return []


def _pair(
    client: list[dict[str, Any]], wire: list[dict[str, Any]], skip: set[int]
) -> tuple[list[tuple[int, int]], set[int], set[int]]:
    """Client calls paired with wire calls: by the wire's id first, then by position."""
    pairs: list[tuple[int, int]] = []
    used = set(skip)
    for i, w in enumerate(wire):
        j = next(
            (
                k
                for k, c in enumerate(client)
                if k not in used and w["id"] and c.get("id") == w["id"]
            ),
            None,
        )
        if j is not None:
            pairs.append((j, i))
            used.add(j)
    paired = {i for _, i in pairs}
    for i in range(len(wire)):
        if i in paired:
            continue
        free = [k for k in range(len(client)) if k not in used]
        if not free:
            break
        j = i if i in free else free[0]
        pairs.append((j, i))
        used.add(j)
        paired.add(i)
    return (
        sorted(pairs, key=lambda p: p[1]),
        set(range(len(wire))) - paired,
        set(range(len(client))) - used,
    )


def _id_problems(c: dict[str, Any], w: dict[str, Any], n: int) -> list[tuple[str, str]]:
    if "id" not in c:  # the library exposes no call ids (its row says so)
        return []
    cid, want_id = c.get("id"), w["id"]
    if want_id and cid != want_id:
        kind = "id lost" if not cid else "id changed"
        return [(kind, f"call {n}: id {cid!r}, the wire sent {want_id!r}")]
    if not want_id and cid:
        return [("id invented", f"call {n}: id {cid!r}, the wire sent none")]
    return []


def _name_problems(c: dict[str, Any], w: dict[str, Any], n: int) -> list[tuple[str, str]]:
    if "name" not in c:  # the library hands back an object, not a named call (its row says so)
        return []
    name, want = c.get("name"), w["name"]
    if name == want or not want:
        return []
    if name and want in name:
        return [("name concatenated", f"call {n}: name {name!r}, want {want!r}")]
    return [("name overwritten", f"call {n}: name {name!r}, the wire named {want!r}")]


def _args_problems(c: dict[str, Any], w: dict[str, Any], n: int) -> list[tuple[str, str]]:
    """A sound wire call: the client must return its arguments, unflagged."""
    if same_arguments(c.get("arguments"), w):
        if c.get("invalid"):
            return [
                (
                    "flagged a sound call",
                    f"call {n}: flagged invalid "
                    f"({_short(str(c['invalid']))}) although its "
                    "arguments are whole JSON",
                )
            ]
        return []
    got, want = _compact(c.get("arguments")), _compact(w["arguments"])
    say = f"call {n}: arguments {_short(got)}, want {_short(want)}"
    if c.get("invalid"):
        return [("flagged a sound call", say + " (flagged invalid)")]
    if not _parses(c.get("arguments")) and c.get("arguments") not in (None, ""):
        how = [("arguments concatenated", say)] if want in got else []
        return [("invalid arguments passed", say), *how]
    if got in ("", "{}", "null") and want not in ("", "{}"):
        return [("arguments lost", say)]
    if want != got and want in got:
        return [("arguments concatenated", say)]
    core = got.rstrip('}]"')
    if len(core) < len(want) and want.startswith(core):
        return [("arguments truncated", say)]
    return [("arguments changed", say)]


def _broken_problems(c: dict[str, Any], w: dict[str, Any], n: int) -> list[tuple[str, str]]:
    """A wire call with no right form: only a flag (or a refusal) is right."""
    if c.get("invalid"):
        return []
    got = c.get("arguments")
    shown = _short(_compact(got))
    if w["status"] == "hidden":
        return [
            (
                "not attributable",
                f"call {n}: {shown} returned as the wire has it; no "
                "client can know the right arguments",
            )
        ]
    if isinstance(got, str) and got.strip() and not _parses(got):
        return [("invalid arguments passed", f"call {n}: {shown} is not JSON and carries no flag")]
    return [
        (
            "arguments repaired silently",
            f"call {n}: {shown} returned with no flag; the "
            f"wire's {_short(w['raw_arguments'] or '')} has "
            "no right form",
        )
    ]


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def worst(kinds: list[str]) -> str:
    outcomes = {PROBLEMS[k] for k in kinds} or {"ok"}
    return next(o for o in OUTCOMES if o in outcomes)


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
            return Verdict(
                "ok", f"raised {text} (the stream reports: {_first_line(expected.error)})"
            )
        if expected.refusable:
            return Verdict("ok", f"refused: raised {text} ({expected.refusable})")
        return Verdict("crashed", text)
    client = answer.get("calls")
    if not isinstance(client, list):
        return Verdict("error", "the adapter answered without calls or an exception")
    wire = expected.calls
    problems: list[tuple[str, str]] = []
    if expected.error:
        # The calls of a stream cut by an error are not to be acted on: say so, or raise.
        problems.append(
            (
                "error not surfaced",
                f"the stream reports an error "
                f"({_first_line(expected.error)}) and the "
                f"client returned {len(client)} call(s) "
                "without raising",
            )
        )
    else:
        merged = {k: _merged_into(c, wire) for k, c in enumerate(client)}
        merged = {k: v for k, v in merged.items() if v}
        for held in merged.values():
            problems.append(
                ("calls merged", "+".join(w["name"] or "?" for w in held) + " in one call")
            )
        covered = {id(w) for held in merged.values() for w in held}
        rest = [w for w in wire if id(w) not in covered]
        pairs, lost, extra = _pair(client, rest, set(merged))
        for j, i in pairs:
            c, w, n = client[j], rest[i], wire.index(rest[i])
            problems.extend(_name_problems(c, w, n))
            problems.extend(
                _args_problems(c, w, n) if w["status"] == "sound" else _broken_problems(c, w, n)
            )
            problems.extend(_id_problems(c, w, n))
        for i in sorted(lost):
            w = rest[i]
            if w["status"] == "sound":
                problems.append(
                    (
                        "call dropped",
                        f"call {wire.index(w)} ({w['name'] or '?'}) "
                        f"missing: {len(client)} of {len(wire)} "
                        "calls returned",
                    )
                )
            elif w["status"] == "visible":
                problems.append(
                    (
                        "broken call dropped silently",
                        f"call {wire.index(w)} ({w['name'] or '?'}) has no right "
                        "form and was left out with no flag or error",
                    )
                )
            else:
                problems.append(
                    (
                        "not attributable",
                        f"call {wire.index(w)} is lost on the wire and not returned",
                    )
                )
        if extra:
            names = ", ".join(repr(client[k].get("name")) for k in sorted(extra))
            problems.append(
                (
                    "extra call",
                    f"{len(client)} calls, the stream holds {len(wire)}; not in it: {names}",
                )
            )
    if not problems:
        flagged = sum(bool(c.get("invalid")) for c in client)
        detail = f"{len(client) - flagged} call(s) right" + (
            f", {flagged} flagged invalid where the wire holds no right form" if flagged else ""
        )
        if not client and expected.refusable:
            detail = f"no call returned ({expected.refusable})"
        return Verdict("ok", detail)
    kinds = list(dict.fromkeys(k for k, _ in problems))
    detail = "; ".join(f"{k}: {d}" for k, d in problems)
    return Verdict(worst(kinds), detail, kinds)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""
