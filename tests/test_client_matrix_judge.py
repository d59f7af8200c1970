"""The client-matrix judge: hand-written controls, each a stream that triggers and one that
must not. The streams are written out chunk by chunk; the answers are what a client library
could assemble from them, written by hand too."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.analysis import analyze_bytes
from conformance.client_matrix.judge import Expected, expected_from, judge


def sse(*chunks: dict[str, Any]) -> bytes:
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def tc(**kw: Any) -> dict[str, Any]:
    """One chunk carrying one tool-call delta."""
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {"tool_calls": [kw]}, "finish_reason": None}],
    }


FINISH = {
    "id": "c",
    "object": "chat.completion.chunk",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
}


def opener(index: int | None, id: Any, name: str, args: str = "") -> dict[str, Any]:
    d: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if index is not None:
        d["index"] = index
    if id is not None:
        d["id"] = id
    return tc(**d)


def frag(index: int, args: str, **extra: Any) -> dict[str, Any]:
    fn = dict(extra.pop("function", {}), arguments=args)
    return tc(index=index, function=fn, **extra)


# Two calls, distinct indices (OpenAI's shape).
TWO_CALLS = sse(
    opener(0, "call_a", "get_weather"),
    frag(0, '{"city": "Paris"}'),
    opener(1, "call_b", "get_time"),
    frag(1, '{"timezone": "Asia/Tokyo"}'),
    FINISH,
)
# Two calls both on index 0, each with its own id (Ollama, seed 004: Q-INDEX-ALL-ZERO).
ALL_ZERO = sse(
    opener(0, "call_a", "get_weather"),
    frag(0, '{"city": "Paris"}'),
    opener(0, "call_b", "get_time"),
    frag(0, '{"timezone": "Asia/Tokyo"}'),
    FINISH,
)
ONE_CALL = sse(
    opener(0, "call_a", "get_weather"), frag(0, '{"city": '), frag(0, '"Paris"}'), FINISH
)
# Continuations carry id "" and name "" (DashScope, seed 000 §5: Q-EMPTY-STRING-OVERWRITE).
EMPTY_OVERWRITE = sse(
    opener(0, "call_a", "get_weather"),
    frag(0, '{"city": "Paris"}', id="", function={"name": ""}),
    FINISH,
)
# The opener has no id at all (seed 000 §5: Q-ID-ABSENT).
NO_ID = sse(opener(0, None, "get_weather"), frag(0, '{"city": "Paris"}'), FINISH)

WEATHER = {"id": "call_a", "name": "get_weather", "arguments": '{"city": "Paris"}'}
TIME = {"id": "call_b", "name": "get_time", "arguments": '{"timezone": "Asia/Tokyo"}'}


def verdict(stream: bytes, calls: list[dict[str, Any]] | None = None, **answer: Any):
    expected = expected_from(analyze_bytes(stream))
    return judge(expected, {"calls": calls, **answer} if calls is not None else answer)


# ------------------------------------------------------------------ calls merged


def test_merged_calls_are_named_on_the_all_zero_stream():
    merged = {
        "id": "call_b",
        "name": "get_time",
        "arguments": '{"city": "Paris"}{"timezone": "Asia/Tokyo"}',
    }
    v = verdict(ALL_ZERO, [merged])
    assert v.outcome == "merged"
    assert v.problems == ["calls merged"]
    assert "get_weather+get_time in one call" in v.detail


def test_merged_calls_next_to_a_phantom_call_in_another_order():
    # LangChain.js on Ollama's stream: the merged call second, an empty one first.
    merged = {
        "id": "call_a",
        "name": "get_weather",
        "arguments": '{"city": "Paris"}{"timezone": "Asia/Tokyo"}',
    }
    phantom = {"id": "call_b", "name": "get_time", "arguments": {}}
    v = verdict(ALL_ZERO, [phantom, merged])
    assert v.problems == ["calls merged", "extra call"]


def test_merged_ids_and_names_are_merged_calls():
    # LlamaIndex on the same stream: ids and names concatenated, arguments unparsable.
    v = verdict(ALL_ZERO, [{"id": "call_acall_b", "name": "get_weatherget_time", "arguments": {}}])
    assert v.problems == ["calls merged"]


# The same call twice (a small model repeating itself, as llama.cpp's cassettes show).
TWINS = sse(
    opener(0, "call_a", "get_weather"),
    frag(0, '{"city": "Paris"}'),
    opener(1, "call_c", "get_weather"),
    frag(1, '{"city": "Paris"}'),
    FINISH,
)


def test_two_identical_calls_kept_apart_are_not_merged():
    twin = dict(WEATHER, id="call_c")
    assert verdict(TWINS, [WEATHER, twin]).outcome == "ok"
    v = verdict(
        TWINS,
        [
            {
                "id": "call_c",
                "name": "get_weather",
                "arguments": '{"city": "Paris"}{"city": "Paris"}',
            }
        ],
    )
    assert v.problems == ["calls merged"]


def test_two_separate_calls_on_the_all_zero_stream_are_ok():
    assert verdict(ALL_ZERO, [WEATHER, TIME]).outcome == "ok"


def test_a_missing_call_that_holds_nothing_of_another_is_dropped_not_merged():
    v = verdict(TWO_CALLS, [WEATHER])
    assert v.problems == ["call dropped"]
    assert "get_time" in v.detail


# ------------------------------------------------------------------ call dropped


def test_dropped_call():
    v = verdict(TWO_CALLS, [TIME])
    assert (v.outcome, v.problems) == ("dropped", ["call dropped"])
    assert "call 0 (get_weather) missing: 1 of 2 calls returned" in v.detail


def test_both_calls_kept_is_not_a_drop():
    assert verdict(TWO_CALLS, [WEATHER, TIME]).outcome == "ok"


# ------------------------------------------------------------------ id lost or changed


def test_lost_id():
    v = verdict(ONE_CALL, [dict(WEATHER, id="")])
    assert (v.outcome, v.problems) == ("wrong", ["id lost"])
    v = verdict(ONE_CALL, [dict(WEATHER, id=None)])
    assert v.problems == ["id lost"]


def test_changed_id():
    v = verdict(ONE_CALL, [dict(WEATHER, id="call_made_up")])
    assert v.problems == ["id changed"]


def test_no_wire_id_means_no_id_and_an_invented_one_is_shown_apart():
    # The wire sent no id: the contract is to keep none ("" or null), never to make one up.
    assert verdict(NO_ID, [dict(WEATHER, id="")]).outcome == "ok"
    assert verdict(NO_ID, [dict(WEATHER, id=None)]).outcome == "ok"
    v = verdict(NO_ID, [dict(WEATHER, id="call_generated_1")])
    assert (v.outcome, v.problems) == ("id invented", ["id invented"])
    # Worse failures in the same cell win over the invented id; it stays listed.
    v = verdict(NO_ID, [dict(WEATHER, id="call_generated_1", name="")])
    assert (v.outcome, v.problems) == ("wrong", ["name overwritten", "id invented"])


def test_a_library_that_exposes_no_ids_or_names_is_not_judged_on_them():
    call = {k: v for k, v in WEATHER.items() if k != "id"}
    assert verdict(ONE_CALL, [call]).outcome == "ok"
    assert verdict(NO_ID, [call]).outcome == "ok"
    bare = {"arguments": WEATHER["arguments"]}  # instructor: an object, no name, no id
    assert verdict(ONE_CALL, [bare]).outcome == "ok"
    assert verdict(ONE_CALL, [{"arguments": {"city": "Rome"}}]).outcome == "wrong"
    assert verdict(ONE_CALL, [dict(bare, name=None)]).problems == ["name overwritten"]


# ------------------------------------------------------------------ arguments concatenated


def test_concatenated_arguments_are_invalid_json_passed():
    v = verdict(ONE_CALL, [dict(WEATHER, arguments='{"city": "Paris"}{"city": "Paris"}')])
    assert (v.outcome, v.problems) == (
        "invalid passed",
        ["invalid arguments passed", "arguments concatenated"],
    )


def test_equal_json_with_other_spacing_or_parsed_is_not_concatenated():
    assert verdict(ONE_CALL, [dict(WEATHER, arguments='{"city":"Paris"}')]).outcome == "ok"
    assert verdict(ONE_CALL, [dict(WEATHER, arguments={"city": "Paris"})]).outcome == "ok"


def test_truncated_lost_and_changed_arguments():
    v = verdict(ONE_CALL, [dict(WEATHER, arguments='{"city": ')])
    assert (v.outcome, v.problems) == ("invalid passed", ["invalid arguments passed"])
    v = verdict(ONE_CALL, [dict(WEATHER, arguments='{"city": "Par"}')])
    assert (v.outcome, v.problems) == ("silent partial", ["arguments truncated"])
    v = verdict(ONE_CALL, [dict(WEATHER, arguments={})])
    assert (v.outcome, v.problems) == ("args lost", ["arguments lost"])
    v = verdict(ONE_CALL, [dict(WEATHER, arguments='{"city": "Rome"}')])
    assert (v.outcome, v.problems) == ("wrong", ["arguments changed"])


def test_flagging_a_sound_call_drops_it():
    v = verdict(ONE_CALL, [dict(WEATHER, invalid="Malformed args.")])
    assert (v.outcome, v.problems) == ("dropped", ["flagged a sound call"])


# ------------------------------------------------------------------ name overwritten


def test_overwritten_name_on_the_empty_string_stream():
    v = verdict(EMPTY_OVERWRITE, [dict(WEATHER, name="")])
    assert (v.outcome, v.problems) == ("wrong", ["name overwritten"])
    v = verdict(EMPTY_OVERWRITE, [dict(WEATHER, name="", id="")])
    assert v.problems == ["name overwritten", "id lost"]


def test_guarded_assembly_of_the_empty_string_stream_is_ok():
    assert verdict(EMPTY_OVERWRITE, [WEATHER]).outcome == "ok"


def test_repeated_name_is_named_concatenated():
    v = verdict(ONE_CALL, [dict(WEATHER, name="get_weatherget_weather")])
    assert v.problems == ["name concatenated"]


# ------------------------------------------------------------------ crashed, hung, error


def test_raising_on_a_clean_stream_is_a_crash_with_type_and_first_line():
    v = verdict(
        ONE_CALL, exception={"type": "JSONDecodeError", "message": "Expecting value\nsecond line"}
    )
    assert (v.outcome, v.detail) == ("crashed", "JSONDecodeError: Expecting value")


def test_raising_on_an_http_error_is_ok_and_returning_nothing_is_not():
    err = analyze_bytes(
        b'{"error": {"message": "Cannot use tools with stream"}}',
        status=500,
        headers={"content-type": "application/json"},
    )
    expected = expected_from(err)
    assert expected.error
    assert judge(expected, {"exception": {"type": "APIError", "message": "500"}}).outcome == "ok"
    v = judge(expected, {"calls": []})
    assert (v.outcome, v.problems) == ("silent partial", ["error not surfaced"])


def test_hung_and_error_pass_through():
    e = Expected([])
    assert judge(e, {"hung": True, "timeout": 10}).outcome == "hung"
    v = judge(e, {"error": "node is not installed"})
    assert (v.outcome, v.detail) == ("error", "node is not installed")


@pytest.mark.parametrize("stream", [TWO_CALLS, ALL_ZERO])
def test_extra_call(stream):
    v = verdict(stream, [WEATHER, TIME, TIME])
    assert v.problems == ["extra call"]


# ------------------------------------------------------------------ refusing a turn is allowed


CUT = sse(
    opener(0, "call_a", "write_note"),
    frag(0, '{"title": "Essay", "body": "Riv'),
    {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
    },
)
NO_CALL = sse(
    {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": "Hello!"}, "finish_reason": "stop"}],
    }
)
RAISED = {"exception": {"type": "LengthFinishReasonError", "message": "length limit"}}


def test_raising_on_a_turn_cut_by_length_is_ok():
    v = judge(expected_from(analyze_bytes(CUT)), RAISED)
    assert v.outcome == "ok" and "finish_reason 'length'" in v.detail


def test_raising_when_a_required_call_is_missing_is_ok_and_otherwise_a_crash():
    required = expected_from(analyze_bytes(NO_CALL), {"tool_choice": "required"})
    assert judge(required, RAISED).outcome == "ok"
    auto = expected_from(analyze_bytes(NO_CALL), {"tool_choice": "auto"})
    assert judge(auto, RAISED).outcome == "crashed"
    assert judge(auto, {"calls": []}).outcome == "ok"


# ------------------------------------------------------------------ no right call on the wire


# The second call's arguments end mid-string: the robust reading closes them, which is
# evidence, not a right answer (Q-ARGS-TRUNCATED).
TRUNCATED = sse(
    opener(0, "call_a", "get_weather"),
    frag(0, '{"city": "Paris"}'),
    opener(1, "call_b", "get_time"),
    frag(1, '{"timezone": "Asia/Tok'),
    FINISH,
)
CUT_TIME = {"id": "call_b", "name": "get_time"}


def test_truncated_arguments_are_ok_only_when_made_visible():
    expected = expected_from(analyze_bytes(TRUNCATED))
    assert [c["status"] for c in expected.calls] == ["sound", "visible"]
    flagged = dict(CUT_TIME, arguments='{"timezone": "Asia/Tok', invalid=True)
    assert judge(expected, {"calls": [WEATHER, flagged]}).outcome == "ok"
    # The robust reading's own repair, returned with no flag, is a silent partial.
    repaired = dict(CUT_TIME, arguments='{"timezone": "Asia/Tok"}')
    v = judge(expected, {"calls": [WEATHER, repaired]})
    assert (v.outcome, v.problems) == ("silent partial", ["arguments repaired silently"])
    v = judge(expected, {"calls": [WEATHER, dict(CUT_TIME, arguments="{}")]})
    assert v.outcome == "silent partial"
    raw = dict(CUT_TIME, arguments='{"timezone": "Asia/Tok')
    v = judge(expected, {"calls": [WEATHER, raw]})
    assert (v.outcome, v.problems) == ("invalid passed", ["invalid arguments passed"])
    v = judge(expected, {"calls": [WEATHER]})
    assert (v.outcome, v.problems) == ("dropped", ["broken call dropped silently"])
    refused = judge(expected, {"exception": {"type": "ValueError", "message": "bad JSON"}})
    assert refused.outcome == "ok" and refused.detail.startswith("refused: raised ValueError")


def test_raw_text_that_is_not_json_is_never_the_right_arguments():
    # Arguments repeated whole (Q-ARGS-DUPLICATED-ON-FLUSH): the right call is the one object.
    twice = sse(
        opener(0, "call_a", "get_weather"),
        frag(0, '{"city": "Paris"}'),
        frag(0, '{"city": "Paris"}'),
        FINISH,
    )
    expected = expected_from(analyze_bytes(twice))
    assert expected.calls[0]["status"] == "sound"
    assert judge(expected, {"calls": [WEATHER]}).outcome == "ok"
    v = judge(expected, {"calls": [dict(WEATHER, arguments='{"city": "Paris"}{"city": "Paris"}')]})
    assert v.outcome == "invalid passed"


# A call whose arguments never arrived although its tool requires them
# (Q-ARGS-LOST-MULTITOKEN-DELTA): nothing on the wire is wrong to read, nothing is right.
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "required": ["city"],
                "properties": {"city": {"type": "string"}},
            },
        },
    }
]
LOST = sse(opener(0, "call_a", "get_weather"), FINISH)


def test_a_call_no_client_can_know_is_na_unless_flagged():
    expected = expected_from(analyze_bytes(LOST, request={"tools": TOOLS}))
    assert [c["status"] for c in expected.calls] == ["hidden"]
    v = judge(expected, {"calls": [dict(WEATHER, arguments="{}")]})
    assert (v.outcome, v.problems) == ("n/a", ["not attributable"])
    assert judge(expected, {"calls": [dict(WEATHER, arguments="{}", invalid=True)]}).outcome == "ok"
    # n/a never hides a worse failure in the same cell.
    v = judge(expected, {"calls": [dict(WEATHER, arguments="{}", name="")]})
    assert v.outcome == "wrong"
