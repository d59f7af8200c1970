"""conformance.runner in-process, against a fake endpoint (httpx.MockTransport) that answers
queued bodies: how `--repeat` trials are aggregated into one cell (one test per rule), the
scenario expectations, expected and unexpected quirks, and the round trip with its probes.

Every stream is OpenAI's reference stream (conformance.mutations) with at most one quirk
injected, so the expected verdicts and quirk sets below are read off the catalogue, not
computed by the runner."""

from __future__ import annotations

import json
import random
from typing import Any

import httpx
import pytest

from conformance.client import RoundTripPolicy
from conformance.mutations import MUTATIONS, CallSpec, reference_stream, render_sse
from conformance.providers import Provider
from conformance.runner import (
    Cell,
    CellRunner,
    check_expectations,
    inconclusive_verdict,
    unsupported_cell,
)
from conformance.scenarios import SCENARIOS

WEATHER = CallSpec("call_W1a2b3c4d5e6f7g8h9i0j1k2", "get_weather", '{"city": "Paris"}')
TIME = CallSpec("call_T1a2b3c4d5e6f7g8h9i0j1k2", "get_time", '{"timezone": "Asia/Tokyo"}')
ZURICH = CallSpec("call_Z1a2b3c4d5e6f7g8h9i0j1k2", "get_weather", '{"city": "Zürich"}')
ASCII_ZURICH = CallSpec("call_Z1a2b3c4d5e6f7g8h9i0j1k2", "get_weather", '{"city": "Zurich"}')


def sse(calls: list[CallSpec], quirk: str | None = None, seed: int = 0, **kw: Any) -> bytes:
    rng = random.Random(seed)
    frames = reference_stream(calls, rng=rng, model="m", **kw)
    return render_sse(MUTATIONS[quirk](frames, rng) if quirk else frames)


OK = (200, sse([WEATHER]))
DONE_MISSING = (200, sse([WEATHER], "Q-SSE-DONE-MISSING"))  # SHOULD: a quirk cell
PROSE = (200, sse([], content="It is sunny."))  # no call: not elicited
BROKEN = (500, b'{"error": {"message": "boom"}}')


class Wire:
    """A fake endpoint: answers the queued (status, body) pairs in order, keeps requests
    (their bodies; their headers and the limits the transport was given, apart)."""

    def __init__(self, *answers: tuple[int, bytes]):
        self.answers = list(answers)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[httpx.Headers] = []
        self.limits: list[Any] = []
        self.paths: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(json.loads(request.content))
        self.headers.append(request.headers)
        self.limits.append(request.extensions.get("conformance.limits"))
        self.paths.append(request.url.path)
        status, body = self.answers.pop(0)
        if status == 0:  # the connection breaks before an answer
            raise httpx.ReadError("connection reset by peer", request=request)
        ctype = "text/event-stream" if status == 200 else "application/json"
        return httpx.Response(status, headers={"content-type": ctype}, content=body)


def run(
    scenario: str,
    *answers: tuple[int, bytes],
    repeat: int = 1,
    cassette: str | None = "c.yaml",
    runner_limits: Any = None,
    **provider: Any,
) -> tuple[Cell, Wire]:
    wire = Wire(*answers)
    runner = CellRunner(
        replay=True, limits=runner_limits, client=httpx.Client(transport=httpx.MockTransport(wire))
    )
    try:
        cell = runner.run(
            Provider("fake", "http://fake.test/v1", "m", **provider),
            SCENARIOS[scenario],
            repeat=repeat,
            cassette=cassette,
        )
    finally:
        runner.close()
    assert wire.answers == [], "every queued answer is asked for"
    return cell, wire


# ------------------------------------------------------------------ --repeat aggregation


def test_one_trial_counts_itself() -> None:
    cell, _ = run("single", DONE_MISSING)
    assert (cell.verdict, cell.quirks) == ("quirk", ["Q-SSE-DONE-MISSING"])
    assert cell.trials == {
        "n": 1,
        "quirk_counts": {"Q-SSE-DONE-MISSING": 1},
        "verdict_counts": {"quirk": 1},
    }
    assert (cell.cassette, cell.interaction) == ("c.yaml", 0)


def test_no_cassette_no_interaction() -> None:
    cell, _ = run("single", OK, cassette=None)
    assert (cell.verdict, cell.quirks, cell.cassette, cell.interaction) == (
        "conforms",
        [],
        None,
        None,
    )


def test_repeat_reads_as_the_worst_trial_and_counts_each_verdict() -> None:
    cell, _ = run("single", OK, DONE_MISSING, OK, repeat=3)
    assert cell.verdict == "quirk"
    assert cell.trials == {
        "n": 3,
        "quirk_counts": {"Q-SSE-DONE-MISSING": 1},
        "verdict_counts": {"conforms": 2, "quirk": 1},
        "exchanges_per_trial": [1, 1, 1],
    }
    assert cell.quirks == ["Q-SSE-DONE-MISSING"]
    assert (cell.cassette, cell.interaction) == ("c.yaml", 0)


def test_repeat_quirks_are_the_union_counted_once_per_trial() -> None:
    two = (200, sse([WEATHER, TIME], "Q-SSE-DONE-MISSING"))
    cell, _ = run("single", DONE_MISSING, (200, sse([WEATHER], "Q-EXTRA-FIELDS")), two, repeat=3)
    assert cell.quirks == ["Q-EXTRA-FIELDS", "Q-SSE-DONE-MISSING"]
    assert cell.trials["quirk_counts"] == {"Q-EXTRA-FIELDS": 1, "Q-SSE-DONE-MISSING": 2}
    # Q-EXTRA-FIELDS is INFO: that trial conforms; the first trial is the worst (quirk)
    assert cell.trials["verdict_counts"] == {"conforms": 1, "quirk": 2}
    assert cell.verdict == "quirk"


def test_repeat_error_is_the_worst_and_not_elicited_is_counted_apart() -> None:
    cell, _ = run("single", PROSE, OK, BROKEN, repeat=3, cassette="r.yaml")
    assert (cell.verdict, cell.reason) == ("error", "HTTP 500: boom")
    assert cell.trials == {
        "n": 3,
        "quirk_counts": {},
        "verdict_counts": {"conforms": 1, "error": 1, "inconclusive": 1},
        "exchanges_per_trial": [1, 1, 1],
    }
    assert (cell.cassette, cell.interaction) == ("r.yaml", 0)


def test_repeat_not_elicited_with_an_unexpected_quirk_is_counted_as_such() -> None:
    prose_quirk = (200, sse([], "Q-SSE-DONE-MISSING", content="It is sunny."))
    cell, _ = run("single", prose_quirk, PROSE, repeat=2)
    assert cell.trials["verdict_counts"] == {"inconclusive": 1, "quirk (not elicited)": 1}
    assert (cell.verdict, cell.elicited) == ("quirk", False)


def test_repeat_is_inconclusive_only_when_no_trial_showed_the_behaviour() -> None:
    cell, _ = run("single", PROSE, PROSE, repeat=2)
    assert cell.verdict == "inconclusive"
    assert cell.trials["verdict_counts"] == {"inconclusive": 2}
    cell, _ = run("single", PROSE, OK, repeat=2)
    assert (cell.verdict, cell.elicited, cell.reason) == ("conforms", True, None)


def test_repeat_keeps_the_first_trial_when_it_is_already_the_worst() -> None:
    cell, _ = run("single", DONE_MISSING, OK, repeat=2)
    assert cell.verdict == "quirk" and cell.elicited is True
    assert cell.trials["verdict_counts"] == {"conforms": 1, "quirk": 1}
    assert cell.trials["exchanges_per_trial"] == [1, 1]


def test_repeat_fails_outranks_quirk() -> None:
    quirky = (200, sse([ZURICH], "Q-SSE-DONE-MISSING"))
    lost = (200, sse([ASCII_ZURICH]))  # non-ASCII lost: an uncatalogued MUST finding
    cell, _ = run("unicode-arguments", quirky, lost, repeat=2)
    assert cell.verdict == "fails"
    assert cell.quirks == ["Q-SSE-DONE-MISSING"]  # the union, though the worst trial has none
    assert cell.trials["verdict_counts"] == {"fails": 1, "quirk": 1}


# ------------------------------------------------------------------ one trial


def test_unsupported_scenario_sends_nothing() -> None:
    cell, wire = run("parallel", capabilities={"parallel_calls": False})
    assert (cell.verdict, cell.reason) == ("unsupported", "fake declares no parallel calls")
    assert (cell.provider, cell.scenario) == ("fake", "parallel")
    assert wire.requests == []
    assert unsupported_cell(Provider("p", "http://x", "m"), SCENARIOS["parallel"]) is None


def test_error_cell_is_neither_elicited_nor_not() -> None:
    cell, _ = run("single", BROKEN)
    assert (cell.verdict, cell.elicited, cell.quirks) == ("error", None, [])


def test_prose_answer_is_not_elicited_and_says_why() -> None:
    cell, _ = run("single", PROSE)
    assert (cell.verdict, cell.elicited) == ("inconclusive", False)
    assert cell.reason == (
        "not elicited: 0 tool call(s), the scenario needs 1 (model behaviour, not a wire fault)"
    )


def test_wrong_tool_is_not_elicited() -> None:
    cell, _ = run("single", (200, sse([TIME])))
    assert cell.reason == "not elicited: the model did not call get_weather"
    assert cell.elicited is False


def test_expected_quirks_and_missing_expected() -> None:
    expects = {
        "Q-SSE-DONE-MISSING": {"reason": "r", "scenarios": ["single"]},
        "Q-ID-REPEATED": {"reason": "r", "scenarios": ["single"]},
        "Q-INDEX-ALL-ZERO": {"reason": "r", "scenarios": ["parallel"]},
    }
    cell, _ = run("single", DONE_MISSING, expected_quirks=expects)
    assert (cell.expected, cell.unexpected, cell.missing_expected) == (
        ["Q-SSE-DONE-MISSING"],
        [],
        ["Q-ID-REPEATED"],
    )
    cell, _ = run("single", DONE_MISSING)
    assert (cell.expected, cell.unexpected, cell.missing_expected) == (
        [],
        ["Q-SSE-DONE-MISSING"],
        [],
    )


def test_missing_expected_is_not_claimed_for_error_or_not_elicited_cells() -> None:
    expects = {"Q-ID-REPEATED": {"reason": "r", "scenarios": ["single"]}}
    assert run("single", BROKEN, expected_quirks=expects)[0].missing_expected == []
    assert run("single", PROSE, expected_quirks=expects)[0].missing_expected == []


def test_info_quirks_are_listed_but_neither_expected_nor_unexpected() -> None:
    cell, _ = run("single", (200, sse([WEATHER], "Q-EXTRA-FIELDS")))
    assert (cell.verdict, cell.quirks, cell.expected, cell.unexpected) == (
        "conforms",
        ["Q-EXTRA-FIELDS"],
        [],
        [],
    )


def test_an_expected_finer_quirk_expects_the_coarser_one_it_implies() -> None:
    whole_call = (200, sse([WEATHER], "Q-INDEX-ABSENT-WHOLE-CALL"))
    cell, _ = run(
        "single",
        whole_call,
        expected_quirks={"Q-INDEX-ABSENT-WHOLE-CALL": {"reason": "r", "scenarios": ["single"]}},
    )
    assert cell.quirks == [
        "Q-ARGS-WHOLE-IN-ONE-DELTA",
        "Q-INDEX-ABSENT",
        "Q-INDEX-ABSENT-WHOLE-CALL",
    ]
    assert (cell.expected, cell.unexpected) == (["Q-INDEX-ABSENT", "Q-INDEX-ABSENT-WHOLE-CALL"], [])
    cell, _ = run("single", whole_call)
    assert (cell.expected, cell.unexpected) == ([], ["Q-INDEX-ABSENT", "Q-INDEX-ABSENT-WHOLE-CALL"])
    cell, _ = run(
        "single",
        whole_call,
        expected_quirks={  # expected elsewhere only
            "Q-INDEX-ABSENT-WHOLE-CALL": {"reason": "r", "scenarios": ["parallel"]}
        },
    )
    assert cell.expected == []


def test_cell_json_redacts_and_folds_the_reason() -> None:
    cell = Cell("p", "s", "error", reason="line one\n  line two sk-" + "a" * 20)
    assert cell.to_json()["reason"] == "line one line two <redacted>"
    assert (cell.to_json()["column"], cell.to_json()["row"]) == ("p", "s")
    assert "provider" not in cell.to_json()


# ------------------------------------------------------------------ scenario expectations


def _result(calls: list[CallSpec], **kw: Any) -> Any:
    from conformance.analysis import analyze_bytes

    return analyze_bytes(sse(calls, **kw))


@pytest.mark.parametrize(
    ("tool_choice", "note"),
    [
        (
            None,
            "not elicited: 0 tool call(s), the scenario needs 1 (model behaviour, not a wire "
            "fault)",
        ),
        (
            "auto",
            "not elicited: 0 tool call(s), the scenario needs 1 (model behaviour, not a "
            "wire fault)",
        ),
        ("required", None),  # forced: a missing call is R-TOOL-CHOICE's finding, not the model's
        ({"type": "function", "function": {"name": "get_time"}}, None),
    ],
)
def test_a_forced_tool_choice_is_never_not_elicited(tool_choice: Any, note: str | None) -> None:
    request = {} if tool_choice is None else {"tool_choice": tool_choice}
    found, not_elicited = check_expectations(
        SCENARIOS["required"], _result([], content="Hi"), request
    )
    assert (found, not_elicited) == ([], note)


def test_named_tool_missing_with_forced_choice_is_not_a_note() -> None:
    forced = {"tool_choice": {"type": "function", "function": {"name": "get_time"}}}
    assert check_expectations(SCENARIOS["named"], _result([WEATHER]), forced) == ([], None)
    assert check_expectations(SCENARIOS["named"], _result([WEATHER]), {}) == (
        [],
        "not elicited: the model did not call get_time",
    )
    assert check_expectations(SCENARIOS["named"], _result([TIME]), {}) == ([], None)


def test_parallel_needs_two_calls() -> None:
    one = check_expectations(SCENARIOS["parallel"], _result([WEATHER]), {})
    assert one == (
        [],
        "not elicited: 1 tool call(s), the scenario needs 2 (model behaviour, not a wire fault)",
    )
    assert check_expectations(SCENARIOS["parallel"], _result([WEATHER, TIME]), {}) == ([], None)


def test_truncation_scenario_needs_a_cut_call() -> None:
    sc = SCENARIOS["truncated-arguments"]
    assert check_expectations(sc, _result([]), {}) == (
        [],
        "not elicited: the model made no tool call to cut",
    )
    assert check_expectations(sc, _result([WEATHER]), {}) == (
        [],
        "not elicited: the arguments were complete within max_tokens",
    )
    cut = (
        _result([WEATHER], quirk="Q-ARGS-TRUNCATED")
        if "Q-ARGS-TRUNCATED" in MUTATIONS
        else _result([CallSpec(WEATHER.id, WEATHER.name, '{"city": "Pa')], finish_reason="length")
    )
    assert check_expectations(sc, cut, {}) == ([], None)


def test_non_ascii_lost_is_a_must_finding_else_not_elicited() -> None:
    sc = SCENARIOS["unicode-arguments"]
    assert check_expectations(sc, _result([ZURICH]), {}) == ([], None)
    found, note = check_expectations(sc, _result([ASCII_ZURICH]), {})
    assert note is None
    assert [(f["rule"], f["level"], f["quirk"], f["message"]) for f in found] == [
        ("R-ARGS-JSON", "MUST", None, "non-ASCII text lost from the arguments")
    ]
    paris = check_expectations(sc, _result([WEATHER]), {})
    assert paris == ([], "not elicited: no non-ASCII text in the arguments")
    assert check_expectations(sc, _result([]), {})[0] == []


def test_strict_schema_violation_is_q_strict_ignored() -> None:
    sc = SCENARIOS["strict"]
    ok = CallSpec(WEATHER.id, "get_weather", '{"city": "Paris", "unit": "celsius"}')
    assert check_expectations(sc, _result([ok]), {}) == ([], None)
    found, _ = check_expectations(sc, _result([WEATHER]), {})
    assert [(f["rule"], f["level"], f["quirk"]) for f in found] == [
        ("R-ARGS-JSON", "SHOULD", "Q-STRICT-IGNORED")
    ]
    assert found[0]["message"] == "strict schema not enforced: 'unit' is a required property"
    other = CallSpec(WEATHER.id, "get_time", '{"zone": 1}')  # not a declared tool: not judged
    assert check_expectations(sc, _result([other]), {})[0] == []


# ------------------------------------------------------------------ round trip

ANSWER = (200, sse([], content="It is 15 °C in Paris."))
REJECTED = (400, b'{"error": {"message": "invalid message"}}')


def test_round_trip_sends_the_calls_and_one_result_each() -> None:
    cell, wire = run("round-trip", OK, ANSWER)
    assert cell.verdict == "conforms" and cell.trials["verdict_counts"] == {"conforms": 1}
    first, second = wire.requests
    assert "tool_choice" not in second and "stream_options" not in second
    assert second["messages"][-2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": WEATHER.id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": WEATHER.id,
            "content": '{"city": "Paris", "temperature_c": 15, "sky": "partly cloudy"}',
        },
    ]
    assert second["messages"][:-2] == first["messages"]


def test_round_trip_without_a_call_is_not_elicited() -> None:
    cell, wire = run("round-trip", PROSE)
    assert len(wire.requests) == 1
    assert cell.reason == (
        "not elicited: 0 tool call(s), the scenario needs 1 (model behaviour, not a wire fault)"
    )


def test_round_trip_server_error_makes_an_error_cell() -> None:
    cell, _ = run("round-trip", OK, BROKEN)
    assert (cell.verdict, cell.reason) == ("error", "round trip: HTTP 500: boom")


def test_round_trip_rejection_is_probed_and_named() -> None:
    # rejected, then the probes in order: content "" (accepted) names the quirk
    cell, wire = run("round-trip", OK, REJECTED, ANSWER)
    assert len(wire.requests) == 3
    assert wire.requests[2]["messages"][-2]["content"] == ""
    (f,) = [f for f in cell.findings if f["rule"] == "R-ROUNDTRIP-ACCEPTED"]
    assert (f["quirk"], f["level"], f["exchange"]) == ("Q-RT-CONTENT-NULL-REJECTED", "MUST", 1)
    assert f["message"] == "round trip rejected: HTTP 400; accepted when content is empty"
    assert cell.quirks == ["Q-RT-CONTENT-NULL-REJECTED"]
    assert (cell.verdict, cell.reason) == ("quirk", None)  # a catalogued rejection


def test_round_trip_422_is_probed_too() -> None:
    cell, wire = run("round-trip", OK, (422, b'{"error": {"message": "bad"}}'), ANSWER)
    assert len(wire.requests) == 3 and cell.quirks == ["Q-RT-CONTENT-NULL-REJECTED"]


def test_round_trip_rejection_that_names_its_quirk_is_not_probed() -> None:
    named = (
        400,
        b'{"error": {"message": "Tool call id was abc but must be a-z, A-Z, 0-9, '
        b'with a length of 9."}}',
    )
    cell, wire = run("round-trip", OK, named)
    assert len(wire.requests) == 2
    assert cell.quirks == ["Q-RT-MISTRAL-TOOL-CALL-ID"]
    assert "accepted when" not in _accepted(cell)["message"]


def test_round_trip_keeps_the_body_drops_prefill_tool_choice_and_stream_options() -> None:
    cell, wire = run(
        "round-trip",
        OK,
        ANSWER,
        elicitation={"prefill": "Sure, calling the tools.", "system_prompt": "Use the tools."},
        extra_body={"tool_choice": "auto", "stream_options": {"include_usage": True}},
    )
    first, second = wire.requests
    assert first["messages"][-1] == {"role": "assistant", "content": "Sure, calling the tools."}
    assert (first["tool_choice"], first["stream_options"]) == ("auto", {"include_usage": True})
    assert "tool_choice" not in second and "stream_options" not in second
    assert second["messages"][:-2] == first["messages"][:-1]
    assert (second["model"], second["stream"], second["tools"]) == ("m", True, first["tools"])


def test_round_trip_findings_are_only_the_round_trip_s_own() -> None:
    cell, _ = run("round-trip", OK, (200, sse([], "Q-SSE-DONE-MISSING", content="15 °C.")))
    assert cell.quirks == [] and cell.verdict == "conforms"
    cell, _ = run("round-trip", OK, (200, sse([], content="15 °C.")[:-30]))
    assert [f["rule"] for f in cell.findings] == [] or {f["exchange"] for f in cell.findings} == {1}


def test_round_trip_error_event_in_a_200_answer_is_an_error_cell() -> None:
    error = (200, b'data: {"error": {"message": "upstream died", "type": "server_error"}}\n\n')
    cell, _ = run("round-trip", OK, error)
    assert cell.verdict == "error" and cell.reason.startswith("round trip: ")
    assert "upstream died" in cell.reason


def test_round_trip_retries_are_in_the_cell() -> None:
    limited = (429, b'{"error": {"message": "slow down"}}')
    cell, wire = run(
        "round-trip", OK, limited, ANSWER, retries={"max": 1, "base_delay": 0.5, "max_delay": 2}
    )
    assert len(wire.requests) == 3 and cell.verdict == "conforms"
    assert [(r["attempt"], r["status"], r["slept"]) for r in cell.retries] == [(1, 429, False)]


def test_round_trip_sends_the_provider_headers_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("I18_FAKE_KEY", "sk-canary0123456789abcdefgh")
    cell, wire = run(
        "round-trip", OK, ANSWER, headers={"X-Team": "conformance"}, api_key_env="I18_FAKE_KEY"
    )
    for h in wire.headers:
        assert h["x-team"] == "conformance"
        assert h["authorization"] == "Bearer sk-canary0123456789abcdefgh"


def test_the_limits_reach_the_transport() -> None:
    from conformance.transport import Limits

    _, wire = run("round-trip", OK, ANSWER, limits={"total_timeout": 7})
    assert [lim.total_timeout for lim in wire.limits] == [7, 7]
    _, wire = run("single", OK, runner_limits=Limits(total_timeout=3), limits={"total_timeout": 7})
    assert wire.limits[0].total_timeout == 3


def test_a_runner_without_a_client_makes_one_with_the_provider_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from conformance import transport

    made: list[Any] = []
    wire = Wire(OK)

    def fake(limits: Any) -> httpx.Client:
        made.append(limits)
        return httpx.Client(transport=httpx.MockTransport(wire))

    monkeypatch.setattr(transport, "make_client", fake)
    runner = CellRunner(replay=True)
    cell = runner.run(
        Provider("fake", "http://fake.test/v1", "m", limits={"idle_timeout": 9}),
        SCENARIOS["single"],
    )
    runner.close()
    assert cell.verdict == "conforms"
    assert [lim.idle_timeout for lim in made] == [9]


def test_a_catalogued_must_quirk_is_a_quirk_cell_not_fails() -> None:
    cell, _ = run("single", (200, sse([WEATHER], "Q-ID-REPEATED")))
    assert (cell.verdict, cell.quirks) == ("quirk", ["Q-ID-REPEATED"])


def test_a_scenario_quirk_makes_a_quirk_cell() -> None:
    cell, _ = run("strict", (200, sse([WEATHER])))
    assert (cell.verdict, cell.quirks) == ("quirk", ["Q-STRICT-IGNORED"])
    assert cell.unexpected == ["Q-STRICT-IGNORED"]


def test_round_trip_probe_order_and_no_match() -> None:
    # content "" still rejected → tool messages with `name` rejected → mistral ids rejected
    cell, wire = run("round-trip", OK, REJECTED, REJECTED, REJECTED, REJECTED)
    probes = wire.requests[2:]
    assert [p["messages"][-2].get("content", "absent") for p in probes] == ["", None, None]
    assert [("name" in p["messages"][-1]) for p in probes] == [False, True, False]
    assert [p["messages"][-1]["tool_call_id"] for p in probes] == [
        WEATHER.id,
        WEATHER.id,
        probes[2]["messages"][-2]["tool_calls"][0]["id"],
    ]
    assert len(probes[2]["messages"][-1]["tool_call_id"]) == 9
    (f,) = [f for f in cell.findings if f["rule"] == "R-ROUNDTRIP-ACCEPTED"]
    assert f["quirk"] is None and "accepted when" not in f["message"]


def test_round_trip_probe_tool_message_name() -> None:
    cell, wire = run("round-trip", OK, REJECTED, REJECTED, ANSWER)
    (f,) = [f for f in cell.findings if f["rule"] == "R-ROUNDTRIP-ACCEPTED"]
    assert f["quirk"] == "Q-RT-TOOL-MESSAGE-NAME"
    assert f["message"].endswith("; accepted when tool messages carry `name`")
    assert wire.requests[3]["messages"][-1]["name"] == "get_weather"


def test_round_trip_probe_with_empty_content_policy_tries_null() -> None:
    cell, wire = run(
        "round-trip",
        OK,
        REJECTED,
        ANSWER,
        roundtrip=RoundTripPolicy(content="empty", tool_message_name=True),
    )
    assert wire.requests[1]["messages"][-2]["content"] == ""
    assert wire.requests[1]["messages"][-1]["name"] == "get_weather"
    assert wire.requests[2]["messages"][-2]["content"] is None
    (f,) = [f for f in cell.findings if f["rule"] == "R-ROUNDTRIP-ACCEPTED"]
    assert f["quirk"] == "Q-RT-CONTENT-EMPTY-REJECTED"


def test_id_omission_sends_ids_back_byte_for_byte() -> None:
    _, wire = run("id-omission", OK, ANSWER, roundtrip=RoundTripPolicy(content="empty"))
    assert wire.requests[1]["messages"][-2]["content"] == ""  # the rest of the policy holds
    cell, wire = run(
        "id-omission",
        OK,
        ANSWER,
        roundtrip=RoundTripPolicy(id_format="mistral9", tool_message_name=True),
    )
    back = wire.requests[1]["messages"]
    assert back[-2]["content"] is None
    assert back[-2]["tool_calls"][0]["id"] == WEATHER.id == back[-1]["tool_call_id"]
    assert "name" in back[-1]
    assert not [f for f in cell.findings if f["rule"] == "R-ROUNDTRIP-IDS"]
    assert cell.verdict == "conforms"


def _with_reasoning(calls: list[CallSpec], text: str = "I should look it up.") -> bytes:
    """The reference stream with a reasoning_content delta before the calls."""
    raw = sse(calls)
    first, rest = raw.split(b"\n\n", 1)
    thinking = json.loads(first[len(b"data: ") :])
    thinking["choices"][0]["delta"] = {"reasoning_content": text}
    return first + b"\n\n" + b"data: " + json.dumps(thinking).encode() + b"\n\n" + rest


def _accepted(cell: Cell) -> dict[str, Any]:
    (f,) = [f for f in cell.findings if f["rule"] == "R-ROUNDTRIP-ACCEPTED"]
    return f


def test_round_trip_probe_reasoning_echo() -> None:
    cell, wire = run(
        "round-trip", (200, _with_reasoning([WEATHER])), REJECTED, REJECTED, REJECTED, ANSWER
    )
    f = _accepted(cell)
    assert f["quirk"] == "Q-REASONING-MUST-BE-ECHOED"
    assert f["message"].endswith("; accepted when the turn's reasoning_content is sent back")
    assistant, result = wire.requests[4]["messages"][-2:]
    assert assistant["reasoning_content"] == "I should look it up."
    assert assistant["content"] is None and "name" not in result
    assert result["tool_call_id"] == WEATHER.id == assistant["tool_calls"][0]["id"]
    assert "reasoning_content" not in wire.requests[1]["messages"][-2]


def test_round_trip_reasoning_already_echoed_is_not_probed_again() -> None:
    cell, wire = run(
        "round-trip",
        (200, _with_reasoning([WEATHER])),
        REJECTED,
        REJECTED,
        REJECTED,
        ANSWER,
        roundtrip=RoundTripPolicy(echo_reasoning=True),
    )
    assert wire.requests[1]["messages"][-2]["reasoning_content"] == "I should look it up."
    assert _accepted(cell)["quirk"] == "Q-RT-MISTRAL-TOOL-CALL-ID"


def test_id_omission_keeps_the_providers_reasoning_echo() -> None:
    # id-omission sends the ids back byte for byte (no id_format), but the rest of the
    # provider's policy still holds: a provider that needs reasoning echoed gets it.
    cell, wire = run(
        "id-omission",
        (200, _with_reasoning([WEATHER])),
        ANSWER,
        roundtrip=RoundTripPolicy(
            echo_reasoning=True, id_format="mistral9", tool_message_name=True
        ),
    )
    assistant, result = wire.requests[1]["messages"][-2:]
    assert assistant["reasoning_content"] == "I should look it up."
    assert assistant["tool_calls"][0]["id"] == WEATHER.id == result["tool_call_id"]
    assert result["name"] == "get_weather"
    assert cell.verdict != "error", cell.reason


def test_round_trip_probe_mistral_ids() -> None:
    cell, wire = run("round-trip", OK, REJECTED, REJECTED, REJECTED, ANSWER)
    f = _accepted(cell)
    assert f["quirk"] == "Q-RT-MISTRAL-TOOL-CALL-ID"
    assert f["message"].endswith("; accepted when ids are 9 alphanumerics")
    assistant, result = wire.requests[4]["messages"][-2:]
    short = assistant["tool_calls"][0]["id"]
    assert len(short) == 9 and short.isalnum() and result["tool_call_id"] == short
    assert assistant["content"] is None and "name" not in result
    assert [m["content"] for m in wire.requests[4]["messages"][-1:]] == [
        '{"city": "Paris", "temperature_c": 15, "sky": "partly cloudy"}'
    ]


def test_round_trip_probes_keep_the_rest_of_the_policy() -> None:
    policy = RoundTripPolicy(content="null", tool_message_name=True, id_format="mistral9")
    cell, wire = run("round-trip", OK, REJECTED, REJECTED, ANSWER, roundtrip=policy)
    sent, content_probe, name_probe = (r["messages"][-2:] for r in wire.requests[1:])
    short = sent[0]["tool_calls"][0]["id"]
    assert len(short) == 9
    # content "" probe: name and short ids kept
    assert content_probe[0]["content"] == "" and content_probe[1]["name"] == "get_weather"
    assert content_probe[1]["tool_call_id"] == short
    # name probe: `name` dropped, content and short ids kept, no id probe after it
    assert name_probe[0]["content"] is None and "name" not in name_probe[1]
    assert name_probe[1]["tool_call_id"] == short
    f = _accepted(cell)
    assert f["quirk"] == "Q-RT-TOOL-MESSAGE-NAME"
    assert f["message"].endswith("; accepted when tool messages omit `name`")


def test_round_trip_with_prose_skips_the_content_probe() -> None:
    mixed = (200, sse([WEATHER], content="Let me check."))
    cell, wire = run("round-trip", mixed, REJECTED, ANSWER)
    assert wire.requests[1]["messages"][-2]["content"] == "Let me check."
    assert "name" in wire.requests[2]["messages"][-1]
    assert _accepted(cell)["quirk"] == "Q-RT-TOOL-MESSAGE-NAME"


def test_cell_json_redacts_a_non_ascii_secret() -> None:
    from conformance import secrets

    secrets.register("Zürich-geheim-42")
    try:
        cell = Cell(
            "p",
            "s",
            "error",
            reason="key Zürich-geheim-42 refused",
            meta={"note": "Zürich-geheim-42"},
        )
        d = cell.to_json()
        assert (d["reason"], d["meta"]) == ("key <redacted> refused", {"note": "<redacted>"})
    finally:
        secrets.forget("Zürich-geheim-42")


def test_non_ascii_finding_is_a_whole_finding() -> None:
    cell, _ = run("unicode-arguments", (200, sse([ASCII_ZURICH])))
    assert [f for f in cell.findings if f["rule"] == "R-ARGS-JSON"] == [
        {
            "rule": "R-ARGS-JSON",
            "level": "MUST",
            "quirk": None,
            "event": None,
            "pointer": None,
            "message": "non-ASCII text lost from the arguments",
            "exchange": 0,
        }
    ]
    assert cell.verdict == "fails" and cell.uncatalogued_must == [
        f for f in cell.findings if f["rule"] == "R-ARGS-JSON"
    ]


@pytest.mark.parametrize(
    ("city", "note"),
    [
        ("Paris\u007f", "not elicited: no non-ASCII text in the arguments"),  # DEL is ASCII
        ("Paris\u0080", None),
    ],
)
def test_non_ascii_starts_at_128(city: str, note: str | None) -> None:
    c = CallSpec(WEATHER.id, "get_weather", json.dumps({"city": city}, ensure_ascii=False))
    assert check_expectations(SCENARIOS["unicode-arguments"], _result([c]), {}) == ([], note)


def test_strict_schema_is_checked_on_every_valid_call() -> None:
    undeclared = CallSpec("call_X1a2b3c4d5e6f7g8h9i0j1k2", "get_time", '{"zone": 1}')
    found, _ = check_expectations(SCENARIOS["strict"], _result([undeclared, WEATHER]), {})
    assert [f["quirk"] for f in found] == ["Q-STRICT-IGNORED"]


@pytest.mark.parametrize(
    ("verdict", "not_elicited", "unexpected", "expected"),
    [
        ("conforms", "not elicited: x", [], "inconclusive"),
        ("quirk", "not elicited: x", [], "inconclusive"),  # on expected quirks alone
        ("quirk", "not elicited: x", ["Q-X"], "quirk"),  # an unexpected quirk still shows
        ("fails", "not elicited: x", [], "fails"),
        ("error", "not elicited: x", [], "error"),
        ("conforms", None, [], "conforms"),
        ("quirk", None, ["Q-X"], "quirk"),
    ],
)
def test_inconclusive_verdict(
    verdict: str, not_elicited: str | None, unexpected: list[str], expected: str
) -> None:
    assert inconclusive_verdict(verdict, not_elicited, unexpected) == expected


WHOLE = (200, sse([WEATHER], "Q-ARGS-WHOLE-IN-ONE-DELTA"))  # INFO: a conforming cell


def test_a_cell_holds_its_trial() -> None:
    cell, wire = run("single", WHOLE)
    assert wire.paths == ["/v1/chat/completions"]
    assert (cell.provider, cell.scenario, cell.verdict, cell.reason) == (
        "fake",
        "single",
        "conforms",
        None,
    )
    assert [(f["rule"], f["level"], f["event"], f["exchange"]) for f in cell.findings] == [
        ("Q-ARGS-WHOLE-IN-ONE-DELTA", "INFO", 1, 0)
    ]
    assert [(e["n"], e["exchange"]) for e in cell.evidence][:2] == [(0, 0), (1, 0)]
    assert '"name":"get_weather"' in cell.evidence[1]["data"]
    assert cell.impact == {
        s: {"status": "ok", "detail": ""} for s in ("naive", "guarded", "robust")
    }
    assert cell.tool_calls["robust"] == [
        {
            "index": 0,
            "id": WEATHER.id,
            "type": "function",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        }
    ]
    assert (cell.finish_reason, cell.elicited, cell.retries) == ("tool_calls", True, [])
    assert cell.meta["model"] == "m"


def test_evidence_data_is_redacted() -> None:
    from conformance import secrets

    secret = "Zq8wXv3nT5-evidence"
    secrets.register(secret)
    try:
        leaky = CallSpec(WEATHER.id, "get_weather", json.dumps({"city": secret}))
        cell, _ = run("single", (200, sse([leaky], "Q-ARGS-WHOLE-IN-ONE-DELTA")))
        assert cell.evidence and all(secret not in e["data"] for e in cell.evidence)
        assert any("<redacted>" in e["data"] for e in cell.evidence)
    finally:
        secrets.forget(secret)


def test_round_trip_cell_counts_its_exchanges() -> None:
    limited = (429, b'{"error": {"message": "slow down"}}')
    cell, _ = run(
        "round-trip",
        limited,
        WHOLE,
        ANSWER,
        OK,
        limited,
        ANSWER,
        repeat=2,
        retries={"max": 1, "base_delay": 0.5, "max_delay": 2},
    )
    assert cell.trials["exchanges_per_trial"] == [3, 3]
    assert [(r["status"], r["slept"]) for r in cell.retries] == [(429, False)]
    assert [f["rule"] for f in cell.findings] == ["Q-ARGS-WHOLE-IN-ONE-DELTA"]
    assert cell.evidence and {e["exchange"] for e in cell.evidence} == {0}


def test_retry_jitter_is_seeded_by_provider_scenario_and_trial() -> None:
    unavailable = (503, b'{"error": {"message": "busy"}}')
    cell, _ = run(
        "single",
        unavailable,
        OK,
        unavailable,
        OK,
        repeat=2,
        retries={"max": 1, "base_delay": 1.0, "max_delay": 5},
    )
    first = cell.retries[0]["waited"]
    assert first == round(random.Random("fake/single/0").uniform(0.75, 1.25), 3)
    assert cell.trials["exchanges_per_trial"] == [2, 2]


def test_round_trip_forced_without_a_call_has_nothing_to_send_back() -> None:
    cell, wire = run("round-trip", PROSE, extra_body={"tool_choice": "required"})
    assert len(wire.requests) == 1
    assert cell.reason == "not elicited: no tool call to send back"
    assert cell.elicited is False


def test_closing_the_runner_closes_its_client() -> None:
    client = httpx.Client(transport=httpx.MockTransport(Wire()))
    runner = CellRunner(replay=True, client=client)
    runner.close()
    assert client.is_closed
    CellRunner(replay=True).close()  # no client yet: nothing to close


def test_check_expectations_without_a_turn() -> None:
    from conformance.analysis import CaptureResult

    r = CaptureResult("s", "conforms", [], None, {}, {}, {}, turn=None)
    assert check_expectations(SCENARIOS["single"], r, {}) == (
        [],
        "not elicited: 0 tool call(s), the scenario needs 1 (model behaviour, not a wire fault)",
    )


def test_every_missing_name_is_listed() -> None:
    ping = CallSpec("call_P1a2b3c4d5e6f7g8h9i0j1k2", "ping", "{}")
    other = CallSpec("call_Q1a2b3c4d5e6f7g8h9i0j1k2", "ping", "{}")
    assert check_expectations(SCENARIOS["parallel"], _result([ping, other]), {}) == (
        [],
        "not elicited: the model did not call get_weather, get_time",
    )


def test_a_z_without_rich_is_not_a_lost_umlaut() -> None:
    zagreb = CallSpec(WEATHER.id, "get_weather", '{"city": "Zagreb"}')
    assert check_expectations(SCENARIOS["unicode-arguments"], _result([zagreb]), {}) == (
        [],
        "not elicited: no non-ASCII text in the arguments",
    )


def _wrapper(arguments: str) -> CallSpec:
    return CallSpec("call_M1a2b3c4d5e6f7g8h9i0j1k2", "multi_tool_use.parallel", arguments)


@pytest.mark.parametrize(
    ("arguments", "note"),
    [
        (
            json.dumps(
                {
                    "tool_uses": [
                        {
                            "recipient_name": "functions.get_weather",
                            "parameters": {"city": "Paris"},
                        },
                        {"recipient_name": "functions.get_time", "parameters": {"timezone": "UTC"}},
                    ]
                }
            ),
            None,
        ),
        (
            json.dumps(
                {
                    "tool_uses": [
                        {"recipient_name": "functions.get_weather"},
                        "x",
                        {"parameters": {}},
                    ]
                }
            ),
            "not elicited: the model did not call get_time",
        ),
        (
            json.dumps({"tool_uses": []}),
            "not elicited: 1 tool call(s), the scenario needs 2 "
            "(model behaviour, not a wire fault)",
        ),
        (
            json.dumps({"tool_uses": "get_weather"}),
            "not elicited: 1 tool call(s), the scenario "
            "needs 2 (model behaviour, not a wire fault)",
        ),
        (
            json.dumps({"tool_uses": ["x"]}),
            "not elicited: 1 tool call(s), the scenario needs 2 "
            "(model behaviour, not a wire fault)",
        ),
        (
            json.dumps({"tool_uses": 5}),
            "not elicited: 1 tool call(s), the scenario needs 2 "
            "(model behaviour, not a wire fault)",
        ),
        (
            "null",
            "not elicited: 1 tool call(s), the scenario needs 2 (model behaviour, not a wire "
            "fault)",
        ),
    ],
)
def test_openai_s_parallel_wrapper_counts_as_the_calls_it_carries(
    arguments: str, note: str | None
) -> None:
    found, not_elicited = check_expectations(
        SCENARIOS["parallel"], _result([_wrapper(arguments)]), {}
    )
    assert (found, not_elicited) == ([], note)


def test_a_wrapper_named_like_a_tool_is_only_itself() -> None:
    from conformance.client import ToolCall
    from conformance.runner import _wrapped_names

    args = '{"tool_uses": [{"recipient_name": "functions.get_time"}]}'
    assert _wrapped_names(ToolCall(0, "c", "function", "get_weather", args, args)) == [
        "get_weather"
    ]
    assert _wrapped_names(ToolCall(0, "c", "function", "multi_tool_use.parallel", args, args)) == [
        "get_time"
    ]
    broken = ToolCall(0, "c", "function", "multi_tool_use.parallel", "{", "{", valid=False)
    assert _wrapped_names(broken) == ["multi_tool_use.parallel"]
    empty = ToolCall(0, "c", "function", "multi_tool_use.parallel", "", "")
    assert _wrapped_names(empty) == ["multi_tool_use.parallel"]


def test_probes_keep_the_body_and_the_rest_of_the_policy() -> None:
    policy = RoundTripPolicy(content="empty", tool_message_name=True)
    cell, wire = run(
        "round-trip", (200, _with_reasoning([WEATHER])), *[REJECTED] * 5, roundtrip=policy
    )
    content, name, reasoning, mistral = (r["messages"][-2:] for r in wire.requests[2:])
    assert [r["model"] for r in wire.requests[2:]] == ["m"] * 4
    assert all(r["tools"] == wire.requests[0]["tools"] for r in wire.requests[2:])
    assert content[0]["content"] is None and content[1]["name"] == "get_weather"
    assert name[0]["content"] == "" and "name" not in name[1]
    assert reasoning[0]["content"] == "" and reasoning[1]["name"] == "get_weather"
    assert reasoning[0]["reasoning_content"] == "I should look it up."
    assert mistral[0]["content"] == "" and mistral[1]["name"] == "get_weather"
    assert len(mistral[1]["tool_call_id"]) == 9 and "reasoning_content" not in mistral[0]
    assert _accepted(cell)["quirk"] is None


def test_the_reasoning_probe_keeps_short_ids() -> None:
    policy = RoundTripPolicy(id_format="mistral9")
    _, wire = run(
        "round-trip", (200, _with_reasoning([WEATHER])), *[REJECTED] * 4, roundtrip=policy
    )
    reasoning = wire.requests[4]["messages"][-2:]
    assert "reasoning_content" in reasoning[0] and len(reasoning[1]["tool_call_id"]) == 9
    assert len(wire.requests) == 5  # no id probe: the ids are short already


def test_round_trip_jitter_continues_the_trial_s_random_sequence() -> None:
    unavailable = (503, b'{"error": {"message": "busy"}}')
    cell, _ = run(
        "round-trip", OK, unavailable, ANSWER, retries={"max": 1, "base_delay": 1.0, "max_delay": 5}
    )
    assert [r["waited"] for r in cell.retries] == [
        round(random.Random("fake/round-trip/0").uniform(0.75, 1.25), 3)
    ]


def test_round_trip_cut_by_the_network_is_an_error_with_its_finding() -> None:
    cell, _ = run("round-trip", OK, (0, b""))
    assert cell.verdict == "error" and cell.reason.startswith("round trip: ")
    assert [(f["rule"], f["exchange"]) for f in cell.findings] == [("R-COMPLETE", 1)]


def test_an_error_reason_is_not_replaced_by_a_not_elicited_note() -> None:
    cell, _ = run("id-omission", (200, sse([TIME])), BROKEN)
    assert (cell.verdict, cell.reason) == ("error", "round trip: HTTP 500: boom")
