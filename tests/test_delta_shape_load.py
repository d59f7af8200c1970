"""Q-DELTA-SHAPE-LOAD-DEPENDENT: the scripted lane's steps × load comparison reports it, with
its three controls; every difference the comparison finds carries an id; the profile serves
the reference's calls regrouped as a busy server sends them.

The id is a comparison of two recordings of one output (one token per step and alone,
against several tokens per step or eight requests in flight), not a property of one stream:
its reporter is ``conformance.report.parsers.compare`` (hook ``cell``), not a detector."""

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
SHAPE = "Q-DELTA-SHAPE-LOAD-DEPENDENT"
LOST = "Q-ARGS-LOST-MULTITOKEN-DELTA"
PARIS = (("get_weather", '{"city": "Paris"}'),)


def cell(
    quirks: tuple[str, ...] = (),
    calls: tuple[tuple[str, str], ...] = PARIS,
    finish: str | None = "tool_calls",
    verdict: str | None = None,
) -> dict[str, Any]:
    return {
        "column": "vllm[x]",
        "row": "single",
        "verdict": verdict or ("quirk" if quirks else "conforms"),
        "quirks": list(quirks),
        "finish_reason": finish,
        "cassette": None,
        "tool_calls": {"robust": [{"name": n, "arguments": a} for n, a in calls]},
    }


def ids(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(f["kind"], f["change"], f["quirk"]) for f in result.get("findings") or []]


# ----------------------------------------------------------------------------- controls


def test_failing_control_the_same_calls_in_other_deltas() -> None:
    r = parsers.compare(
        cell(("Q-ARGS-ON-OPENING-DELTA",)),
        cell(("Q-FINISH-SAME-CHUNK-AS-CALL",)),
    )
    assert r["status"] == "same"  # the calls are the same: no difference in the calls
    assert ids(r) == [("shape", "", SHAPE)]
    (f,) = r["findings"]
    assert f["evidence"] == "+Q-FINISH-SAME-CHUNK-AS-CALL, -Q-ARGS-ON-OPENING-DELTA"


def test_passing_control_the_same_shape() -> None:
    same = cell(("Q-ARGS-ON-OPENING-DELTA", "Q-ID-FORMAT"))
    r = parsers.compare(same, cell(("Q-ARGS-ON-OPENING-DELTA",)))
    assert r["status"] == "same" and r["findings"] == []  # an INFO id alone: no shape
    assert r["info"] == ["-Q-ID-FORMAT"]


def test_not_applicable_controls() -> None:
    # no call to shape: a text answer whose empty chunks come and go
    text = parsers.compare(
        cell(calls=(), finish="stop"), cell(("Q-EMPTY-DELTA-CHUNKS",), calls=(), finish="stop")
    )
    assert text["findings"] == []
    # not recorded
    assert parsers.compare(cell(), None) == {"status": "not recorded"}
    # other calls: not the same output, so not a shape (a calls finding instead)
    other = parsers.compare(
        cell(), cell(("Q-FINISH-SAME-CHUNK-AS-CALL",), calls=(("get_weather", "{}"),))
    )
    assert SHAPE not in [q for _, _, q in ids(other)]


# ----------------------------------------------------------- every difference has an id


def test_calls_lost_with_no_id_in_the_cell_are_found_by_the_comparison() -> None:
    """deepseek_v3 at load 8: the call vanished with the reasoning's last delta; the cell
    alone reads as a model that did not call."""
    r = parsers.compare(cell(), cell(calls=(), finish="stop", verdict="inconclusive"))
    assert r["status"] == "differs"
    assert ids(r) == [("calls", "", LOST)]
    assert "calls differ: 1 -> 0" in r["findings"][0]["evidence"]


def test_a_must_id_that_comes_or_goes_is_the_finding() -> None:
    lost = cell((LOST,), calls=(("get_weather", "{}"),))
    assert ids(parsers.compare(cell(), lost)) == [("calls", "+", LOST)]
    assert ids(parsers.compare(lost, cell())) == [("calls", "-", LOST)]
    leak = parsers.compare(cell(), cell(("Q-REASONING-LEAK-AT-FINISH",)))
    assert ids(leak) == [("quirks", "+", "Q-REASONING-LEAK-AT-FINISH")]


def test_the_committed_comparison_gives_every_difference_an_id() -> None:
    doc = json.loads((ROOT / "reports" / "quirks-matrix.json").read_text("utf-8"))
    shaped = differing = 0
    for p in doc[parsers.KEY]["parsers"]:
        for v in p["variants"]:
            for s, r in v["scenarios"].items():
                if r["status"] == "not recorded":
                    continue
                qs = [f["quirk"] for f in r["findings"]]
                assert all(q in registry.specs() for q in qs), (v["column"], s, qs)
                if r["status"] == "differs":
                    differing += 1
                    assert any(f["kind"] != "shape" for f in r["findings"]), (v["column"], s)
                elif any(i.lstrip("+-") in _shape_ids() for i in r["info"]) and _calls(p, s):
                    shaped += 1
                    assert qs == [SHAPE], (v["column"], s)
    assert differing and shaped  # the lane's recordings show both


def _shape_ids() -> frozenset[str]:
    from conformance.lanes.vllm_columns import SHAPE_QUIRKS

    return SHAPE_QUIRKS


def _calls(parser: dict[str, Any], scenario: str) -> bool:
    base = next(c for c in parser["cells"] if c["row"] == scenario)
    return bool((base.get("tool_calls") or {}).get("robust"))


def test_the_readme_table_names_the_id() -> None:
    doc = json.loads((ROOT / "reports" / "quirks-matrix.json").read_text("utf-8"))
    table = parsers.render_choice_table(doc)
    assert SHAPE in table and f"{LOST}: " in table
    assert table.strip() in (ROOT / "README.md").read_text("utf-8")


# ----------------------------------------------------------------- reporter and profile


def test_the_comparison_is_the_declared_reporter() -> None:
    (rep,) = registry.load_reporters()[SHAPE]
    assert (rep.module, rep.name, rep.hook) == ("conformance.report.parsers", "compare", "cell")
    assert not registry.spec(SHAPE).visible_in_bytes  # two recordings, not one stream


def test_the_profile_serves_the_reference_calls_regrouped() -> None:
    calls = [
        CallSpec("call_W1a2b3c4d5e6f7g8h9i0j1k2", "get_weather", '{"city": "Zürich"}'),
        CallSpec("call_T1a2b3c4d5e6f7g8h9i0j1k2", "get_time", '{"tz": "Asia/Tokyo"}'),
    ]
    for seed in range(5):
        ref = reference_stream(calls, rng=random.Random(seed), model="m", include_usage=True)
        busy = MUTATIONS[SHAPE](ref, random.Random(seed))
        a, b = analyze_bytes(render_sse(ref)), analyze_bytes(render_sse(busy))
        assert a.tool_calls["robust"] == b.tool_calls["robust"]  # the same calls
        assert len([f for f in busy if isinstance(f, dict)]) < len(
            [f for f in ref if isinstance(f, dict)]
        )
        shown = set(b.quirks) - {"Q-USAGE-EMPTY-CHOICES"}
        assert (
            shown
            == registry.spec(SHAPE).profile_also
            == PROFILES["delta-shape-load-dependent"].expected
        )
