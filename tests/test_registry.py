"""The quirk registry is the one declaration of a quirk: its file validates against its
schema, every id is complete (a level, a reporter, a profile, a mutation, or a stated
reason for none), code that names an unknown id is refused with a did-you-mean, the
generated page names the reporters of every id whose failing control fires, the verdict
has one order, the detectors' order within a hook changes no verdict, and a derived
round-trip policy keeps every field of the provider's."""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import streams as S
from test_detectors import CASES, run

from conformance import registry, verdict
from conformance.analysis import analyze_chunks
from conformance.analysis import analyzer as analyzer_mod
from conformance.client import RoundTripPolicy
from conformance.enums import Level, Verdict
from conformance.mutations import MUTATIONS
from conformance.report import common as report_common
from conformance.runner import CellRunner
from conformance.server.profiles import PROFILES

ROOT = Path(__file__).resolve().parent.parent


def test_the_registry_file_validates_against_its_schema() -> None:
    schema = json.loads(registry.SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(registry.entries()))
    assert not errors, [e.message for e in errors[:3]]


def test_a_bad_entry_is_refused_by_the_schema() -> None:
    schema = json.loads(registry.SCHEMA.read_text())
    bad = dict(registry.entries())
    bad["Q-SSE-DONE-MISSING"] = dict(bad["Q-SSE-DONE-MISSING"], level="MAY")
    assert not jsonschema.Draft202012Validator(schema).is_valid(bad)
    del bad["Q-SSE-DONE-MISSING"]["level"]
    assert not jsonschema.Draft202012Validator(schema).is_valid(bad)


@pytest.mark.parametrize("qid", sorted(registry.specs()))
def test_every_id_is_complete(qid: str) -> None:
    s = registry.spec(qid)
    assert isinstance(s.level, Level)  # no silent default: the schema requires one
    reporters = registry.load_reporters()
    assert (qid in reporters) != bool(s.no_reporter), "a reporter, or the reason for none"
    assert (qid in MUTATIONS) != bool(s.no_mutation), "a mutation, or the reason for none"
    if s.profile is None:
        assert s.no_profile
    else:
        p = PROFILES[s.profile]
        assert qid in p.quirks or s.profile == "reference"
    assert s.implies <= set(registry.specs()) and s.profile_also <= set(registry.specs())
    if s.workaround_rule is not None:
        from conformance.rules import RULES

        assert s.workaround_rule in RULES


def test_every_analysis_reporter_has_a_failing_control() -> None:
    reporters = registry.load_reporters()
    analysed = {q for q, rs in reporters.items() if any(r.hook != "cell" for r in rs)}
    assert analysed - set(CASES) == set()


def test_an_unknown_id_gets_a_did_you_mean() -> None:
    with pytest.raises(registry.UnknownQuirkError, match=r"did you mean Q-SSE-DONE-MISSING\?"):
        registry.spec("Q-SSE-DONE-MISING", "providers.yaml: openai")
    with pytest.raises(
        registry.UnknownQuirkError, match=r"<locals>.fn: unknown quirk id .Q-NOT-A-QUIRK."
    ):

        def fn(a: Any) -> None: ...

        registry.detector(fn, "end", reports=("Q-NOT-A-QUIRK",))

    with pytest.raises(ValueError, match="hook 'nowhere' is not one of"):

        def fn2(a: Any) -> None: ...

        registry.detector(fn2, "nowhere")


def test_an_unknown_id_is_one_line_naming_where_and_the_nearest_id() -> None:
    with pytest.raises(registry.UnknownQuirkError) as e:
        registry.spec("q-sse-done-mising", "here")
    assert str(e.value) == (
        "here: unknown quirk id 'q-sse-done-mising' (did you mean Q-SSE-DONE-MISSING?); "
        "the known ids are in quirks.json"
    )
    with pytest.raises(registry.UnknownQuirkError) as e:
        registry.check_ids(["Q-ID-FORMAT", "ZZZZZZ"], "providers.yaml: p")
    assert str(e.value) == (
        "providers.yaml: p: unknown quirk id 'ZZZZZZ'; the known ids are in quirks.json"
    )
    registry.check_ids(["Q-ID-FORMAT"], "nowhere")  # a known id passes
    with pytest.raises(registry.UnknownQuirkError, match=r"^quirk id: unknown quirk id"):
        registry.spec("ZZZZZZ")
    assert registry.did_you_mean("Q-SSE-DONE", ["Q-SSE-DONE-MISSING", "Q-SSE-DONE-MISSING-2"]) == (
        " (did you mean Q-SSE-DONE-MISSING?)"
    )
    assert registry.did_you_mean("Q-XY", ["Q-SSE-DONE-MISSING"]) == ""


def test_a_spec_holds_every_fact_of_its_entry() -> None:
    """Read from the file here, not through specs(): that one is cached at import."""
    raw = json.loads(registry.DATA.read_text("utf-8"))
    for qid, e in raw.items():
        s = registry.QuirkSpec.from_entry(qid, e)
        assert (s.id, s.title, s.group, s.entry) == (qid, e["title"], e["group"], e)
        assert s.level is Level(e["level"])
        assert s.unrecoverable is e["unrecoverable"]
        assert s.implies == frozenset(e["implies"])
        assert s.profile_also == frozenset(e["profile_also"])
        assert s.workaround_rule == e["workaround_rule"]
        assert s.note_reported_by_detector is e["note_reported_by_detector"]
        assert s.needs == e["needs"]
        assert s.visible_in_bytes is e["visible_in_bytes"]
        assert s.profile == e["profile"]
        assert s.no_profile == e.get("no_profile")
        assert s.no_mutation == e.get("no_mutation")
        assert s.no_reporter == e.get("no_reporter")
    # the facts the loop checks are not all one value
    assert {e.get("no_profile") is None for e in raw.values()} == {True, False}
    assert {e.get("no_mutation") is None for e in raw.values()} == {True, False}
    assert {e["visible_in_bytes"] for e in raw.values()} == {True, False}
    bad = {k: v for k, v in raw["Q-ID-FORMAT"].items() if k != "level"}
    with pytest.raises(KeyError):
        registry.QuirkSpec.from_entry("Q-ID-FORMAT", bad)
    with pytest.raises(ValueError, match=r"^quirks.json: Q-ID-FORMAT: level: 'LOUD' is not valid"):
        registry.QuirkSpec.from_entry("Q-ID-FORMAT", {**raw["Q-ID-FORMAT"], "level": "LOUD"})


def test_levels_and_implied_ids_come_from_the_catalogue() -> None:
    assert registry.level("Q-ID-FORMAT") is Level.INFO
    assert registry.implied("Q-INDEX-ABSENT-WHOLE-CALL") == {
        "Q-ARGS-WHOLE-IN-ONE-DELTA",
        "Q-INDEX-ABSENT",
    }
    assert registry.implied("Q-NOT-AN-ID") == frozenset()
    assert "Q-ARGS-INVALID-JSON" in registry.unrecoverable()
    assert "Q-ID-FORMAT" not in registry.unrecoverable()


def test_a_reporter_is_recorded_with_its_hook_and_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "_REPORTERS", [])

    def first(a: Any) -> None: ...

    def repair(a: Any) -> None: ...

    def second(a: Any) -> None: ...

    assert registry.detector(first, "end", reports=("Q-ID-FORMAT",)) is first
    assert registry.works_around(repair, "Q-ID-FORMAT", "Q-ID-ABSENT") is repair
    registry.detector(second, "end")

    assert registry.detectors("end") == [first, second]
    assert {r.module for r in registry._REPORTERS} == {__name__}
    assert registry.detectors("client") == [repair]
    got = {
        q: [(r.name.split(".")[-1], r.hook) for r in rs] for q, rs in registry.reporters().items()
    }
    assert got == {
        "Q-ID-FORMAT": [("first", "end"), ("repair", "client")],
        "Q-ID-ABSENT": [("repair", "client")],
    }
    with pytest.raises(ValueError) as e:

        def fn(a: Any) -> None: ...

        registry.detector(fn, "nowhere")

    assert str(e.value).endswith(
        "fn: hook 'nowhere' is not one of comment, nonjson, chunk, choice, tool_delta, "
        "fragment, end, part, client, cell"
    )


def test_every_hook_detector_is_declared_once_and_analyzer_lists_come_from_the_registry() -> None:
    assert analyzer_mod.END_DETECTORS == registry.detectors("end")
    assert analyzer_mod.CHUNK_DETECTORS == registry.detectors("chunk")
    names = [r.name for r in registry.load_reporters().get("Q-ARGS-TRUNCATED", [])]
    assert "check_length_and_usage" in names and "ToolCallAccumulator._call" in names


def _page_detectors() -> dict[str, str]:
    text = (ROOT / "docs" / "quirks.md").read_text("utf-8")
    out = {}
    for block in re.split(r"^### ", text, flags=re.M)[1:]:
        qid = block.split("\n", 1)[0].strip()
        m = re.search(r"^- \*\*Detector:\*\* (.*)$", block, re.M)
        out[qid] = m.group(1) if m else ""
    return out


@pytest.mark.parametrize("qid", sorted(CASES))
def test_the_page_names_the_reporters_of_every_id_whose_control_fires(qid: str) -> None:
    """docs/quirks.md (regenerate with ``python -m conformance.report.catalogue``)."""
    c = CASES[qid]
    r = run(
        c.stream,
        request=c.request,
        status=c.status,
        headers=c.headers,
        transport_error=c.transport_error,
        transport_quirk=c.transport_quirk,
        comparison=c.comparison,
    )
    assert qid in r.quirks
    line = _page_detectors()[qid]
    assert not line.startswith("none"), f"{qid} fires but the page says {line!r}"
    for rep in registry.load_reporters()[qid]:
        assert f"`{rep.name}" in line


# ----------------------------------------------------------------------------- verdicts


def test_one_verdict_order_error_above_fails() -> None:
    assert verdict.worst(["fails", "error", "quirk"]) is Verdict.ERROR
    assert verdict.worst(["inconclusive", "conforms"]) is Verdict.CONFORMS
    ranked = sorted(report_common.RANK, key=report_common.RANK.__getitem__)
    assert ranked == ["conforms", "quirk", "fails", "error"]
    assert report_common.RANK["error"] > report_common.RANK["fails"]


def test_the_cell_verdict_is_the_capture_policy_on_more_findings() -> None:
    must = {"rule": "R-ARGS-JSON", "level": "MUST", "quirk": None}
    strict = {"rule": "R-ARGS-JSON", "level": "SHOULD", "quirk": "Q-STRICT-IGNORED"}
    info = {"rule": "Q-ID-FORMAT", "level": "INFO", "quirk": "Q-ID-FORMAT"}
    assert verdict.cell("conforms", [info]) is Verdict.CONFORMS
    assert verdict.cell("conforms", [strict]) is Verdict.QUIRK
    assert verdict.cell("quirk", [must]) is Verdict.FAILS
    assert verdict.cell("fails", [info]) is Verdict.FAILS


def test_the_capture_policy_one_finding_at_a_time() -> None:
    j = verdict.judge
    assert j([]) is Verdict.CONFORMS
    assert j([("MUST", None)], error="HTTP 500") is Verdict.ERROR
    assert j([], recoverable=False) is Verdict.FAILS
    assert j([("MUST", None)]) is Verdict.FAILS  # a MUST no quirk explains
    assert j([("SHOULD", None)]) is Verdict.CONFORMS  # a rule note below MUST, no quirk
    assert j([("INFO", "Q-ID-FORMAT")]) is Verdict.CONFORMS
    assert j([("SHOULD", "Q-STRICT-IGNORED")]) is Verdict.QUIRK
    assert j([("MUST", "Q-INDEX-ALL-ZERO")]) is Verdict.QUIRK  # explained by its quirk
    assert (
        j([("INFO", "Q-ARGS-INVALID-JSON")]) is Verdict.FAILS
    )  # the robust client cannot repair it
    assert j(iter([("INFO", "Q-ID-FORMAT"), ("SHOULD", "Q-STRICT-IGNORED")])) is Verdict.QUIRK
    with pytest.raises(ValueError):
        verdict.worst([])


def test_a_cell_that_did_not_show_its_behaviour_is_inconclusive() -> None:
    inc = verdict.inconclusive
    assert inc("conforms", "no call came", []) is Verdict.INCONCLUSIVE
    assert inc("quirk", "no call came", []) is Verdict.INCONCLUSIVE
    assert inc("quirk", "no call came", ["Q-STRICT-IGNORED"]) is Verdict.QUIRK
    assert inc("fails", "no call came", []) is Verdict.FAILS
    assert inc("error", "no call came", []) is Verdict.ERROR
    assert inc("conforms", None, []) is Verdict.CONFORMS
    assert inc("quirk", "", []) is Verdict.QUIRK


# ----------------------------------------------------------------- detector order


HOOK_LISTS = ("CHUNK_DETECTORS", "CHOICE_DETECTORS", "END_DETECTORS")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_order_of_detectors_within_a_hook_changes_no_verdict(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def outcome() -> dict[str, tuple[str, tuple[str, ...], str]]:
        out = {}
        for q, c in CASES.items():
            r = run(
                c.stream,
                request=c.request,
                status=c.status,
                headers=c.headers,
                transport_error=c.transport_error,
                transport_quirk=c.transport_quirk,
                comparison=c.comparison,
            )
            out[q] = (r.verdict, tuple(r.quirks), r.impact["robust"].status)
        return out

    before = outcome()
    rng = random.Random(seed)
    for name in HOOK_LISTS:
        order = list(getattr(analyzer_mod, name))
        order.reverse() if seed == 0 else rng.shuffle(order)
        monkeypatch.setattr(analyzer_mod, name, order)
    assert outcome() == before


def test_a_downgraded_stream_is_read_before_any_end_detector(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The robust reading of a JSON completion is a body fact: with the HTTP detector last
    the robust client still gets the call (it once got none: the turn was cached)."""
    c = CASES["Q-STREAM-DOWNGRADED"]
    ends = [d for d in analyzer_mod.END_DETECTORS if d.__name__ != "detect_http_level"]
    http = [d for d in analyzer_mod.END_DETECTORS if d.__name__ == "detect_http_level"]
    monkeypatch.setattr(analyzer_mod, "END_DETECTORS", ends + http)
    r = run(c.stream, request=c.request, status=c.status, headers=c.headers)
    assert len(r.tool_calls["robust"]) == 1 and "Q-STREAM-DOWNGRADED" in r.quirks


# ---------------------------------------------------------------- derived policies


def _reasoning_turn() -> Any:
    chunks = [
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "reasoning_content": "think"},
                    "finish_reason": None,
                }
            ],
        },
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "get_weather",
                                    "arguments": '{"city":"Paris"}',
                                },
                            }
                        ]
                    },
                    "finish_reason": None,
                }
            ],
        },
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
        },
    ]
    return analyze_chunks(chunks)


@pytest.mark.parametrize(
    "policy",
    [
        RoundTripPolicy(echo_reasoning=True),
        RoundTripPolicy(content="empty", echo_reasoning=True, tool_message_name=True),
        RoundTripPolicy(content="omit", echo_reasoning=True, id_format="mistral9"),
    ],
)
def test_every_probe_keeps_the_providers_policy_but_the_field_it_probes(
    policy: RoundTripPolicy,
) -> None:
    """A provider that needs its reasoning echoed gets it on every probe (the probes once
    rebuilt the policy by hand and dropped echo_reasoning: no probe carried it)."""
    r1 = _reasoning_turn()
    sent: list[tuple[str, dict[str, Any]]] = []

    class Rejected:
        status, transport_error = 400, None

    def send(body: dict[str, Any], tag: str) -> Any:
        sent.append((tag, body))
        return Rejected()

    quirk, _ = CellRunner(replay=True)._probe_roundtrip(send, {"model": "m"}, [], r1, policy)
    assert quirk is None and len(sent) >= 2
    for tag, body in sent:
        assistant = body["messages"][0]
        assert assistant["reasoning_content"] == "think", tag
    tags = {t for t, _ in sent}
    assert "#probe:Q-RT-TOOL-MESSAGE-NAME" in tags
    name_probe = dict(sent)["#probe:Q-RT-TOOL-MESSAGE-NAME"]
    tool = name_probe["messages"][-1]
    assert ("name" in tool) is (not policy.tool_message_name)
    assert replace(policy) == policy  # (the policy itself is untouched)


# ----------------------------------------------- passing and not-applicable controls

# The input that lacks what an id is judged with (its registry entry's ``judged_with``):
# on it the id cannot show, whatever the stream does. Derived from the id's failing
# control (tests/test_detectors.py), so the same bytes that show the id no longer do.


def _without(c: Any, what: str) -> Any:
    """The failing control ``c`` analysed without ``what``."""
    from conformance.sse import parse_sse_bytes
    from conformance.transcript import CHUNK

    if what == "request":
        return run(
            c.stream,
            status=c.status,
            headers=c.headers,
            transport_error=c.transport_error,
            transport_quirk=c.transport_quirk,
            comparison=c.comparison,
        )
    if what == "timings":
        return run(c.stream, request=c.request)  # the same bytes, no arrival times
    if what in ("framing", "http"):  # the chunks alone, as a JSONL capture holds them
        text = c.stream if c.status is None else ""
        if text.lstrip().startswith(("data:", ":", "event:")):
            chunks = [e.chunk for e in parse_sse_bytes(text.encode()) if e.kind == CHUNK]
        else:
            chunks = S.chunks(text) if text.strip() else []
        return analyze_chunks(chunks, request=c.request)
    if what == "tool_calls":  # a call-free stream
        return run(S.REFERENCE_TEXT_SSE, request=c.request)
    if what == "content":  # structured calls, no content text
        return run(S.REFERENCE_SINGLE_SSE, request=c.request)
    assert what == "stream"
    return analyze_chunks([], request=c.request)  # no chunk at all


@pytest.mark.parametrize("qid", sorted(registry.specs()))
def test_every_id_has_a_not_applicable_control(qid: str) -> None:
    s = registry.spec(qid)
    what = s.entry.get("judged_with")
    if qid not in CASES:
        assert s.entry.get("no_controls") or what, "a judged_with, or why no controls"
        return
    assert what, f"{qid}: say what it is judged with (judged_with in quirks.json)"
    r = _without(CASES[qid], what)
    assert qid not in r.quirks, f"{qid} reported on an input without {what}"
    if what == "timings":
        assert r.timing[qid] == "not applicable"


@pytest.mark.parametrize("qid", sorted(CASES))
def test_every_analysed_id_has_a_passing_control(qid: str) -> None:
    """OpenAI's own shapes (one call, two parallel calls, text), with the request that
    produced them, and timed as a progressive stream: no id fires on them (an id that is
    OpenAI's own behaviour, without the chunk that shows it)."""
    request = {
        "model": "gpt-4o",
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": S.TOOLS_WEATHER,
    }
    progressive = {
        "content-type": "text/event-stream",
        "x-conformance-line-times": " ".join(f"{k}:{k / 10:.3f}" for k in range(1, 40)),
    }
    for stream in (S.REFERENCE_SINGLE_SSE, S.REFERENCE_PARALLEL_SSE, S.REFERENCE_TEXT_SSE):
        if registry.spec(qid).entry["reference_behaviour"]:  # OpenAI's own: without it
            stream = "\n\n".join(e for e in stream.split("\n\n") if '"choices":[]' not in e)
        r = run(stream, request=request, headers=progressive)
        assert qid not in r.quirks


def test_the_strict_check_fails_passes_and_is_not_applicable() -> None:
    """Q-STRICT-IGNORED is a cell check (the runner's): its three controls."""
    from conformance.client import ToolCall
    from conformance.runner import _schema_findings
    from conformance.scenarios import Scenario

    params = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    tool = {
        "type": "function",
        "function": {"name": "get_weather", "strict": True, "parameters": params},
    }
    scenario = Scenario("strict", "t", "d", "u", tools=(tool,))

    def call(args: str, name: str = "get_weather", valid: bool = True) -> ToolCall:
        return ToolCall(0, "call_1", "function", name, args, args, valid=valid)

    (f,) = _schema_findings(scenario, [call('{"city": "Paris", "note": 1}')])
    assert f["quirk"] == "Q-STRICT-IGNORED"
    assert _schema_findings(scenario, [call('{"city": "Paris"}')]) == []
    # not applicable: a call to an undeclared tool, or arguments that are not JSON
    assert (
        _schema_findings(scenario, [call('{"x": 1}', name="other"), call("{", valid=False)]) == []
    )
