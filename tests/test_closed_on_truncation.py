"""Q-ARGS-CLOSED-ON-TRUNCATION: the scripted lane gives a length-cut call whose streamed
arguments are valid JSON the script never wrote its id, with three controls; the profile
serves such a call.

One stream cannot tell a parser that closed the cut JSON from a model that finished its
JSON right at the limit: the script can. Its reporter is
``conformance.report.parsers.closed_on_truncation`` (hook ``cell``), applied where the
scripted section is built."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from conformance import registry
from conformance.analysis import analyze_bytes
from conformance.mutations import MUTATIONS, CallSpec, reference_stream, render_sse
from conformance.report import parsers
from conformance.server.profiles import PROFILES

ROOT = Path(__file__).resolve().parent.parent
CLOSED = "Q-ARGS-CLOSED-ON-TRUNCATION"
SCRIPT = '{"name": "write_note", "parameters": {"title": "Essay", "body": "Rivers are the'


def cell(
    sent: str,
    finish: str | None = "length",
    quirks: tuple[str, ...] = ("Q-FINISH-SAME-CHUNK-AS-CALL",),
    reason: str | None = "not elicited: the arguments were complete within max_tokens",
) -> dict[str, Any]:
    repaired = sent if sent.endswith("}") else sent + '"}'  # what the robust client makes
    return {
        "column": "vllm[llama3_json]",
        "row": "truncated-arguments",
        "verdict": "quirk",
        "reason": reason,
        "elicited": reason is None,
        "quirks": list(quirks),
        "unexpected": ["Q-FINISH-SAME-CHUNK-AS-CALL"],
        "findings": [],
        "finish_reason": finish,
        "tool_calls": {
            k: [{"name": "write_note", "arguments": a}]
            for k, a in (("naive", sent), ("guarded", sent), ("robust", repaired))
        },
    }


# ----------------------------------------------------------------------------- controls


def test_failing_control_closed_json_the_script_never_wrote() -> None:
    found = parsers.closed_on_truncation(cell('{"title": "Essay"}'), SCRIPT)
    assert found is not None and found["quirk"] == CLOSED and found["level"] == "MUST"
    assert 'streamed \'{"title": "Essay"}\'' in found["message"]
    assert 'scripted \'{"name": "write_note"' in found["message"]
    out = parsers._with_closed(cell('{"title": "Essay"}'), SCRIPT)
    assert CLOSED in out["quirks"] and CLOSED in out["unexpected"]
    assert out["reason"] is None and out["elicited"] is True  # no longer "not elicited"
    assert out["verdict"] == "quirk"


def test_passing_controls() -> None:
    # the cut arguments streamed as the model wrote them (open, a prefix of the script):
    # the robust client's repair is not the server's
    assert parsers.closed_on_truncation(cell('{"title": "Es'), SCRIPT) is None
    # the whole script inside max_tokens: the turn was not cut
    whole = '{"title": "Essay"}'
    assert parsers.closed_on_truncation(cell(whole, finish="tool_calls"), SCRIPT) is None
    # a complete JSON the script itself wrote before the cut is a prefix, not closed
    short = '{"name": "f", "parameters": {"a": 1}} and more'
    assert parsers.closed_on_truncation(cell('{"a": 1}'), short) is None
    unchanged = cell('{"title": "Es')
    assert parsers._with_closed(unchanged, SCRIPT) is unchanged


def test_not_applicable_controls() -> None:
    assert parsers.closed_on_truncation(None, SCRIPT) is None
    assert parsers.closed_on_truncation(cell('{"title": "Essay"}'), None) is None  # no script
    # cut before its arguments: "{}" is Q-ARGS-INVENTED-ON-TRUNCATION's
    invented = cell("{}", quirks=("Q-ARGS-INVENTED-ON-TRUNCATION",))
    assert parsers.closed_on_truncation(invented, SCRIPT) is None
    # no call at all: nothing streamed to judge
    empty = cell("")
    empty["tool_calls"] = {}
    assert parsers.closed_on_truncation(empty, SCRIPT) is None


# ------------------------------------------------------------------ the committed report


def _truncated(doc: dict[str, Any], parser: str) -> dict[str, Any]:
    p = next(p for p in doc[parsers.KEY]["parsers"] if p["parser"] == parser)
    return next(c for c in p["cells"] if c["row"] == "truncated-arguments")


def test_the_committed_llama3_json_cell_carries_the_id() -> None:
    doc = json.loads((ROOT / "reports" / "quirks-matrix.json").read_text("utf-8"))
    c = _truncated(doc, "llama3_json")
    assert CLOSED in c["quirks"] and c["elicited"] and c["finish_reason"] == "length"
    assert not (c.get("reason") or "").startswith("not elicited")
    (f,) = [f for f in c["findings"] if f["quirk"] == CLOSED]
    assert '{"title": "Essay"}' in f["message"]
    # the other parsers stream their cut arguments open (the robust client closes them)
    others = [p["parser"] for p in doc[parsers.KEY]["parsers"] if p["parser"] != "llama3_json"]
    assert others and all(CLOSED not in _truncated(doc, p)["quirks"] for p in others)
    assert CLOSED in doc["quirks"]


def test_the_readme_and_the_lane_doc_name_the_id() -> None:
    doc = json.loads((ROOT / "reports" / "quirks-matrix.json").read_text("utf-8"))
    table = parsers.render_choice_table(doc)
    assert CLOSED in table
    assert table.strip() in (ROOT / "README.md").read_text("utf-8")
    lane = (ROOT / "docs" / "lanes" / "vllm-parsers.md").read_text("utf-8")
    assert table.strip() in lane and f"({CLOSED}, MUST" in lane


# ----------------------------------------------------------------- reporter and profile


def test_the_reporter_is_declared() -> None:
    (rep,) = registry.load_reporters()[CLOSED]
    assert (rep.module, rep.name, rep.hook) == (
        "conformance.report.parsers",
        "closed_on_truncation",
        "cell",
    )
    spec = registry.spec(CLOSED)
    assert spec.level == "MUST" and not spec.visible_in_bytes  # judged against the script


def test_the_profile_serves_a_cut_call_closed_as_valid_json() -> None:
    calls = [
        CallSpec("call_W1a2b3c4d5e6f7g8h9i0j1k2", "get_weather", '{"city": "Zürich"}'),
        CallSpec("call_N1a2b3c4d5e6f7g8h9i0j1k2", "write_note", '{"title": "E", "body": "R"}'),
    ]
    for seed in range(5):
        ref = reference_stream(calls, rng=random.Random(seed), model="m", include_usage=True)
        cut = MUTATIONS[CLOSED](ref, random.Random(seed))
        r = analyze_bytes(render_sse(cut))
        sent = [(c["name"], json.loads(c["arguments"])) for c in r.tool_calls["naive"]]
        assert sent == [("get_weather", {"city": "Zürich"}), ("write_note", {"title": "E"})]
        assert r.finish_reason == "length"
        assert CLOSED not in r.quirks  # one stream cannot tell: the script can
    assert PROFILES["args-closed-on-truncation"].quirks == {CLOSED}
    assert PROFILES["args-closed-on-truncation"].expected == frozenset()
