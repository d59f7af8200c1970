"""Every committed cell of reports/client-matrix.json against its outcome's definition,
checked here from the cell's own evidence (the calls the client returned, the calls on the
wire with their status) without the judge: an ``ok`` never holds arguments that are not
JSON or a call the wire holds no right form of, unflagged; each failure shows what names it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.client_matrix.judge import OUTCOMES, PROBLEMS, worst

REPORT = Path(__file__).resolve().parents[1] / "reports" / "client-matrix.json"


def _cells() -> list[dict[str, Any]]:
    if not REPORT.exists():
        pytest.skip("reports/client-matrix.json is not generated yet (python3 noxw -s clients)")
    return json.loads(REPORT.read_text(encoding="utf-8"))["cells"]


def _value(arguments: Any) -> Any:
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except ValueError:
        return NOT_JSON


NOT_JSON = object()


def _is_json(call: dict[str, Any], field: bool) -> bool:
    if field:
        return bool(call.get("json"))
    return _value(call["arguments"]) is not NOT_JSON or call["arguments"] in (None, "")


def _same(call: dict[str, Any], wire: dict[str, Any]) -> bool:
    got, want = _value(call["arguments"]), _value(wire["arguments"])
    if got == want and got is not NOT_JSON:
        return True
    return (
        want == {}
        and not (wire.get("raw_arguments") or "").strip()
        and call["arguments"] in (None, "", {})
    )


def test_every_ok_cell_holds_only_right_or_flagged_calls():
    bad = []
    for cell in _cells():
        if cell["outcome"] != "ok":
            continue
        field = cell.get("evidence") == "field"
        calls, wire = cell["calls"], cell.get("expected", [])
        if calls is None:  # raised: right only where the stream gave a reason to refuse
            if not cell["detail"].startswith(("raised ", "refused: raised ")):
                bad.append((cell["client"], cell["stream"], "no calls and no refusal"))
            continue
        plain = [c for c in calls if not c.get("invalid")]
        sound = [w for w in wire if w["status"] == "sound"]
        if any(not _is_json(c, field) for c in plain):
            bad.append((cell["client"], cell["stream"], "unflagged arguments that are not JSON"))
        if len(plain) != len(sound):
            bad.append(
                (
                    cell["client"],
                    cell["stream"],
                    f"{len(plain)} unflagged calls, the wire holds {len(sound)} sound ones",
                )
            )
        if not field and not all(
            any(_same(c, w) and c.get("name", w["name"]) == w["name"] for w in sound) for c in plain
        ):
            bad.append((cell["client"], cell["stream"], "an unflagged call the wire lacks"))
        if any(w["status"] == "visible" for w in wire) and sum(
            bool(c.get("invalid")) for c in calls
        ) < sum(w["status"] == "visible" for w in wire):
            bad.append(
                (cell["client"], cell["stream"], "a broken call neither flagged nor refused")
            )
    assert not bad, bad[:10]


def test_every_failure_shows_what_names_it():
    bad = []
    for cell in _cells():
        outcome, calls = cell["outcome"], cell["calls"] or []
        field = cell.get("evidence") == "field"
        wire = cell.get("expected", [])
        plain = [c for c in calls if not c.get("invalid")]
        if outcome in PROBLEMS.values() and worst(cell["problems"]) != outcome:
            bad.append((cell["client"], cell["stream"], "outcome is not its worst problem"))
        if outcome == "invalid passed" and all(_is_json(c, field) for c in plain):
            bad.append((cell["client"], cell["stream"], "invalid passed, all arguments JSON"))
        if outcome == "silent partial" and not (
            "error not surfaced" in cell["problems"]
            or (plain and any(w["status"] == "visible" for w in wire))
            or "arguments truncated" in cell["problems"]
        ):
            bad.append((cell["client"], cell["stream"], "silent partial with nothing partial"))
        if outcome == "n/a" and not any(w["status"] == "hidden" for w in wire):
            bad.append((cell["client"], cell["stream"], "n/a on a stream with right calls"))
        if outcome == "id invented" and not field:
            wire_ids = {w["id"] for w in wire}
            if not any(c.get("id") and c["id"] not in wire_ids for c in calls):
                bad.append((cell["client"], cell["stream"], "id invented, none new"))
        if (
            outcome == "merged"
            and len(calls) >= len(wire)
            and not any("calls merged" == p for p in cell["problems"])
        ):
            bad.append((cell["client"], cell["stream"], "merged, nothing merged"))
        if outcome == "crashed" and (
            cell["calls"] is not None or any(w["status"] != "sound" for w in wire)
        ):
            bad.append((cell["client"], cell["stream"], "crashed where refusing is right"))
    assert not bad, bad[:10]


def test_the_outcomes_are_ordered_and_each_problem_names_one():
    assert OUTCOMES[-1] == "ok" and OUTCOMES[-2] == "n/a"
    assert set(PROBLEMS.values()) <= set(OUTCOMES)
