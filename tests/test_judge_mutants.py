"""The client-matrix judge, cell by cell, pinned by what the report shows: the outcome, the
one-line detail a reader sees beside it, and the kinds of wrong it lists. The wire's calls
are written out (``Expected``) instead of analysed, so each case names exactly what the
bytes held; tests/test_client_matrix_judge.py judges real streams."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from conformance.client_matrix import judge as J
from conformance.client_matrix.judge import Expected, judge


def wire(
    id: str | None, name: str, args: str, status: str = "sound", raw: str | None = None
) -> dict[str, Any]:
    return {
        "id": id,
        "name": name,
        "arguments": args,
        "raw_arguments": args if raw is None else raw,
        "status": status,
    }


A = wire("call_a", "get_weather", '{"city": "Paris"}')
B = wire("call_b", "get_time", '{"tz": "UTC"}')
# cut, so no right form; the reading's repair closes it (evidence, not the answer)
V = wire("call_v", "get_time", '{"tz": "UT"}', status="visible", raw='{"tz": "UT')
H = wire("call_h", "get_weather", "{}", status="hidden", raw="")  # lost: nothing shows it


def cell(expected: Expected, **answer: Any) -> tuple[str, str, list[str]]:
    v = judge(expected, answer)
    return v.outcome, v.detail, v.problems


# ------------------------------------------------------------------ sound calls


CASES = [
    ([A, B], [A, B], ("ok", "2 call(s) right", [])),
    (
        [A, B],
        [dict(A, invalid="bad JSON"), B],
        (
            "dropped",
            "flagged a sound call: call 0: flagged invalid ('bad JSON') although its "
            "arguments are whole JSON",
            ["flagged a sound call"],
        ),
    ),
    (
        [A, B],
        [A],
        (
            "dropped",
            "call dropped: call 1 (get_time) missing: 1 of 2 calls returned",
            ["call dropped"],
        ),
    ),
    (
        [A, dict(B, name="")],
        [A],
        ("dropped", "call dropped: call 1 (?) missing: 1 of 2 calls returned", ["call dropped"]),
    ),
    (
        [A, B],
        [A, B, {"id": "x", "name": "extra", "arguments": "{}"}],
        ("wrong", "extra call: 3 calls, the stream holds 2; not in it: 'extra'", ["extra call"]),
    ),
    (
        [A, B],
        [dict(A, arguments='{"city": "Paris"}{"tz": "UTC"}')],
        ("merged", "calls merged: get_weather+get_time in one call", ["calls merged"]),
    ),
    (
        [A, dict(B, name="")],
        [dict(A, id="call_a+call_b")],
        ("merged", "calls merged: get_weather+? in one call", ["calls merged"]),
    ),
    (
        [A],
        [dict(A, arguments='{"city": "Par')],
        (
            "invalid passed",
            'invalid arguments passed: call 0: arguments \'{"city":"Par\', '
            'want \'{"city":"Paris"}\'',
            ["invalid arguments passed"],
        ),
    ),
    (
        [A],
        [dict(A, arguments='{"city": "Paris"}{"city": "Paris"}')],
        (
            "invalid passed",
            "invalid arguments passed: call 0: arguments "
            '\'{"city":"Paris"}{"city":"Paris"}\', want \'{"city":"Paris"}\'; '
            "arguments concatenated: call 0: arguments "
            '\'{"city":"Paris"}{"city":"Paris"}\', want \'{"city":"Paris"}\'',
            ["invalid arguments passed", "arguments concatenated"],
        ),
    ),
    (
        [A],
        [dict(A, arguments='{"city": "Lyon"}')],
        (
            "wrong",
            'arguments changed: call 0: arguments \'{"city":"Lyon"}\', want \'{"city":"Paris"}\'',
            ["arguments changed"],
        ),
    ),
    (
        [A],
        [dict(A, arguments='{"city": "Paris", "x": 1}')],
        (
            "wrong",
            'arguments changed: call 0: arguments \'{"city":"Paris","x":1}\', '
            'want \'{"city":"Paris"}\'',
            ["arguments changed"],
        ),
    ),
    (
        [A],
        [dict(A, arguments="")],
        (
            "args lost",
            "arguments lost: call 0: arguments '', want '{\"city\":\"Paris\"}'",
            ["arguments lost"],
        ),
    ),
    (
        [A],
        [dict(A, arguments=None)],
        (
            "args lost",
            "arguments lost: call 0: arguments 'null', want '{\"city\":\"Paris\"}'",
            ["arguments lost"],
        ),
    ),
    ([A], [dict(A, arguments={"city": "Paris"})], ("ok", "1 call(s) right", [])),
    (
        [A],
        [dict(A, id=None)],
        ("wrong", "id lost: call 0: id None, the wire sent 'call_a'", ["id lost"]),
    ),
    (
        [A],
        [dict(A, id="other")],
        ("wrong", "id changed: call 0: id 'other', the wire sent 'call_a'", ["id changed"]),
    ),
    (
        [dict(A, id=None)],
        [dict(A, id="made_up")],
        ("id invented", "id invented: call 0: id 'made_up', the wire sent none", ["id invented"]),
    ),
    ([dict(A, id=None)], [dict(A, id=None)], ("ok", "1 call(s) right", [])),
    (
        [A],
        [dict(A, name="get_weatherget_weather")],
        (
            "wrong",
            "name concatenated: call 0: name 'get_weatherget_weather', want 'get_weather'",
            ["name concatenated"],
        ),
    ),
    (
        [A],
        [dict(A, name="")],
        (
            "wrong",
            "name overwritten: call 0: name '', the wire named 'get_weather'",
            ["name overwritten"],
        ),
    ),
    (
        [A],
        [dict(A, name=None)],
        (
            "wrong",
            "name overwritten: call 0: name None, the wire named 'get_weather'",
            ["name overwritten"],
        ),
    ),
    # no right form on the wire
    (
        [V],
        [dict(V, arguments='{"tz": "UT"}')],
        (
            "silent partial",
            'arguments repaired silently: call 0: \'{"tz":"UT"}\' returned with no flag; '
            "the wire's '{\"tz\": \"UT' has no right form",
            ["arguments repaired silently"],
        ),
    ),
    (
        [V],
        [dict(V, invalid=True)],
        ("ok", "0 call(s) right, 1 flagged invalid where the wire holds no right form", []),
    ),
    (
        [V],
        [],
        (
            "dropped",
            "broken call dropped silently: call 0 (get_time) has no right form and was left "
            "out with no flag or error",
            ["broken call dropped silently"],
        ),
    ),
    (
        [H],
        [],
        (
            "n/a",
            "not attributable: call 0 is lost on the wire and not returned",
            ["not attributable"],
        ),
    ),
    (
        [H],
        [H],
        (
            "n/a",
            "not attributable: call 0: '{}' returned as the wire has it; no client can know "
            "the right arguments",
            ["not attributable"],
        ),
    ),
]


Z = wire("call_z", "get_weather", '{"city": "Zürich"}')
W2 = wire("call_w", "f", '{"a": 1, "b": 2}')
C3 = wire("call_c", "g", '{"c": 3}')
CASES += [
    (
        [A],
        [dict(A, arguments='{"city": "Lyon"}', invalid=True)],
        (
            "dropped",
            'flagged a sound call: call 0: arguments \'{"city":"Lyon"}\', '
            'want \'{"city":"Paris"}\' (flagged invalid)',
            ["flagged a sound call"],
        ),
    ),
    (
        [A],
        [dict(A, arguments='[{"city": "Paris"}, {"city": "Paris"}]')],
        (
            "wrong",
            "arguments concatenated: call 0: arguments "
            '\'[{"city":"Paris"},{"city":"Paris"}]\', want \'{"city":"Paris"}\'',
            ["arguments concatenated"],
        ),
    ),
    (  # longer than the wire's and not a prefix of it once closed: changed, not truncated
        [wire("c", "f", '{"c": "a"}')],
        [{"id": "c", "name": "f", "arguments": '{"c": "aX"}'}],
        (
            "wrong",
            'arguments changed: call 0: arguments \'{"c":"aX"}\', want \'{"c":"a"}\'',
            ["arguments changed"],
        ),
    ),
    (  # the detail shows the text as written, not escaped
        [Z],
        [dict(Z, arguments='{"city": "Genève"}')],
        (
            "wrong",
            'arguments changed: call 0: arguments \'{"city":"Genève"}\', '
            'want \'{"city":"Zürich"}\'',
            ["arguments changed"],
        ),
    ),
    (  # parsed arguments holding two calls of the wire
        [Z, B],
        [{"id": "call_z", "name": "get_weather", "arguments": [{"city": "Zürich"}, {"tz": "UTC"}]}],
        ("merged", "calls merged: get_weather+get_time in one call", ["calls merged"]),
    ),
    (
        [W2, C3],
        [{"id": "call_w", "name": "f", "arguments": {"x": {"a": 1, "b": 2}, "y": {"c": 3}}}],
        ("merged", "calls merged: f+g in one call", ["calls merged"]),
    ),
    (  # a call with no right form is merged by its raw text too
        [A, V],
        [{"id": "call_a", "name": "get_weather", "arguments": '{"city": "Paris"}{"tz": "UT'}],
        ("merged", "calls merged: get_weather+get_time in one call", ["calls merged"]),
    ),
    (
        [wire("n1", "now", "{}")],
        [{"id": "n1", "name": "now", "arguments": "null"}],
        ("wrong", "arguments changed: call 0: arguments 'null', want '{}'", ["arguments changed"]),
    ),
    (  # no right form because the name never came: the wire's empty raw text is shown
        [wire("v2", "", "{}", status="visible", raw="")],
        [{"id": "v2", "name": "f", "arguments": "{}"}],
        (
            "silent partial",
            "arguments repaired silently: call 0: '{}' returned with no flag; the wire's '' "
            "has no right form",
            ["arguments repaired silently"],
        ),
    ),
]


@pytest.mark.parametrize("wire_calls,client,want", CASES)
def test_each_kind_of_answer_gets_its_outcome_and_detail(
    wire_calls: list[dict[str, Any]], client: list[dict[str, Any]], want: tuple[str, str, list[str]]
) -> None:
    assert cell(Expected(wire_calls), calls=[dict(c) for c in client]) == want


def test_a_wire_call_that_lost_its_name_is_not_judged_on_its_name() -> None:
    assert cell(Expected([dict(A, name="")]), calls=[dict(A, name="mine")])[0] == "ok"


def test_the_position_pairs_calls_the_ids_do_not() -> None:
    # The client's ids are its own; the second call still pairs with the second wire call.
    wire_calls = [dict(A, id=None), dict(B, id=None)]
    assert cell(Expected(wire_calls), calls=[dict(A, id=None), dict(B, id=None)])[0] == "ok"
    # Returned in the other order with the wire's ids: paired by id, nothing is wrong.
    assert cell(Expected([A, B]), calls=[dict(B), dict(A)])[0] == "ok"
    # Wire ids the client changed: paired by position, each call's id is wrong.
    v = cell(Expected([A, B]), calls=[dict(A, id="x1"), dict(B, id="x2")])
    assert v[2] == ["id changed"] and "call 1: id 'x2'" in v[1]


def test_two_parameterless_calls_are_not_merged_into_one_with_an_empty_object() -> None:
    n1, n2 = wire("n1", "now", "{}"), wire("n2", "now", "{}")
    v = cell(Expected([n1, n2]), calls=[{"id": "n1", "name": "now", "arguments": '{"opts": {}}'}])
    assert v[0] == "dropped" and "calls merged" not in v[2]


def test_a_parameterless_call_returned_with_no_arguments_is_right() -> None:
    none = wire("call_n", "now", "{}", raw="")
    for got in (None, "", {}, "{}"):
        assert cell(Expected([none]), calls=[dict(none, arguments=got)])[0] == "ok"
    assert cell(Expected([none]), calls=[dict(none, arguments="[]")])[0] == "wrong"
    spaced = wire("call_n", "now", "{}", raw="  ")
    assert cell(Expected([spaced]), calls=[dict(spaced, arguments="")])[0] == "ok"


# ------------------------------------------------------------------ errors, raising, hanging


def test_an_error_stream_must_be_surfaced() -> None:
    e = Expected([A], error="HTTP 500\nmore")
    assert cell(e, calls=[A]) == (
        "silent partial",
        "error not surfaced: the stream reports an error (HTTP 500) and the client "
        "returned 1 call(s) without raising",
        ["error not surfaced"],
    )
    e = Expected([A], error="  \n boom  \n")
    assert cell(e, exception={"message": "\n\nfirst\nsecond"}) == (
        "ok",
        "raised Exception: first (the stream reports: boom)",
        [],
    )


def test_raising_is_refusing_only_where_the_turn_is_refusable() -> None:
    raised = {"type": "ValueError", "message": "bad"}
    assert cell(Expected([V], refusable="why"), exception=raised) == (
        "ok",
        "refused: raised ValueError: bad (why)",
        [],
    )
    assert cell(Expected([A]), exception={}) == ("crashed", "Exception: ", [])
    assert cell(Expected([], refusable="required"), calls=[]) == (
        "ok",
        "no call returned (required)",
        [],
    )
    assert cell(Expected([]), calls=[]) == ("ok", "0 call(s) right", [])


def test_hung_error_and_a_shapeless_answer() -> None:
    assert cell(Expected([A]), hung=True) == ("hung", "no answer within ? s", [])
    assert cell(Expected([A]), hung=True, timeout=30) == ("hung", "no answer within 30 s", [])
    assert cell(Expected([A]), error="\n  node missing  \nstack") == ("error", "node missing", [])
    assert cell(Expected([A]), error="x" * 300)[1] == "x" * 200
    assert cell(Expected([A]), calls=None) == (
        "error",
        "the adapter answered without calls or an exception",
        [],
    )
    assert cell(Expected([A]), calls="x")[0] == "error"
    # error wins over hung, hung over an exception
    assert cell(Expected([A]), error="e", hung=True)[0] == "error"
    assert cell(Expected([A]), hung=True, exception={"type": "X"})[0] == "hung"


def test_a_cell_shows_the_worst_of_its_problems() -> None:
    assert J.worst([]) == "ok"
    assert J.worst(["id invented", "not attributable"]) == "id invented"
    assert J.worst(["extra call", "calls merged"]) == "merged"
    assert J.worst(["arguments lost", "call dropped"]) == "dropped"


def test_long_arguments_are_cut_in_the_detail() -> None:
    assert J._short("x" * 60) == repr("x" * 60)
    assert J._short("x" * 61) == repr("x" * 59 + "…")
    long = wire("c", "f", '{"k": "' + "v" * 100 + '"}')
    v = cell(Expected([long]), calls=[dict(long, arguments='{"k": "w"}')])
    assert v[1] == 'arguments changed: call 0: arguments \'{"k":"w"}\', want ' + repr(
        '{"k":"' + "v" * 53 + "…"
    )


# ------------------------------------------------------------------ what the bytes hold


def _call(**kw: Any) -> NS:
    base = {"valid": True, "repaired": False, "name": "f", "raw_arguments": '{"a": 1}'}
    base.update(kw)
    return NS(id="i", arguments=base["raw_arguments"], **base)


@pytest.mark.parametrize(
    "kw,status",
    [
        ({}, "sound"),
        ({"valid": False}, "hidden"),
        ({"repaired": True}, "visible"),
        ({"name": ""}, "visible"),
        ({"valid": False, "raw_arguments": "   "}, "hidden"),
        ({"valid": False, "raw_arguments": '{"a"'}, "visible"),
    ],
)
def test_call_status(kw: dict[str, Any], status: str) -> None:
    assert J.call_status(_call(**kw)) == status


def _result(**kw: Any) -> NS:
    return NS(**{"finish_reason": "tool_calls", "turn": None, "error": None, **kw})


def test_what_makes_a_turn_refusable() -> None:
    r = J.refusable_because
    assert r(_result(finish_reason="content_filter"), [], None) == (
        "the stream ends with finish_reason 'content_filter'"
    )
    assert r(_result(finish_reason="length"), [], None) == (
        "the stream ends with finish_reason 'length'"
    )
    required = "the request required a tool call and the stream holds none"
    assert r(_result(), [], {"tool_choice": {"type": "function"}}) == required
    assert r(_result(), [], {"tool_choice": "required"}) == required
    assert r(_result(), [], {"tool_choice": "auto"}) is None
    assert r(_result(), [], ["not", "a", "request"]) is None
    assert r(_result(), [{"status": "sound"}], {"tool_choice": "required"}) is None
    assert r(_result(), [{"status": "sound"}, {"status": "hidden"}, {}], None) == (
        "1 of 3 calls have no right form on the wire"
    )
    assert r(_result(), [{"status": "sound"}], None, True) == (
        "the stream holds a problem no accumulator can undo"
    )
    assert r(_result(), [{"status": "sound"}], None) is None


def test_expected_from_reads_calls_errors_and_unrecovered_workarounds() -> None:
    turn = NS(
        calls=[_call(), _call(repaired=True, name="g")],
        error={"message": "boom"},
        workarounds=[NS(recovered=True)],
    )
    e = J.expected_from(_result(turn=turn))
    assert [c["status"] for c in e.calls] == ["sound", "visible"]
    assert e.calls[1] == {
        "id": "i",
        "name": "g",
        "arguments": '{"a": 1}',
        "raw_arguments": '{"a": 1}',
        "status": "visible",
    }
    assert e.error == "error reported inside the stream"
    assert e.refusable == "1 of 2 calls have no right form on the wire"
    e = J.expected_from(_result(turn=turn, error="HTTP 502"))
    assert e.error == "HTTP 502"
    clean = NS(calls=[_call()], error=None, workarounds=[NS(recovered=True)])
    e = J.expected_from(_result(turn=clean))
    assert (e.error, e.refusable) == (None, None)
    lost = NS(calls=[_call()], error=None, workarounds=[NS(recovered=True), NS(recovered=False)])
    assert J.expected_from(_result(turn=lost)).refusable == (
        "the stream holds a problem no accumulator can undo"
    )
    e = J.expected_from(_result(error="HTTP 500"), {"tool_choice": "required"})
    assert (e.calls, e.error, e.refusable) == (
        [],
        "HTTP 500",
        "the request required a tool call and the stream holds none",
    )


def test_arguments_a_tool_can_be_called_with() -> None:
    assert J.is_json({"a": 1})
    assert J.is_json("1")
    assert not J.is_json("x")
    assert not J.same_arguments('{"a"', {"arguments": '{"a"', "raw_arguments": '{"a"'})


# ------------------------------------------------------------------ which call a detail names

CX = wire("call_c", "get_x", '{"x": 1}')
MERGED_AB = {"id": "call_a", "name": "get_weather", "arguments": '{"city": "Paris"}{"tz": "UTC"}'}


def test_details_follow_the_wire_order_and_name_the_wire_position() -> None:
    # Paired by id in the other order: the details still go call 0, then call 1.
    assert cell(Expected([A, B]), calls=[dict(B, name="x"), dict(A, name="y")]) == (
        "wrong",
        "name overwritten: call 0: name 'y', the wire named 'get_weather'; "
        "name overwritten: call 1: name 'x', the wire named 'get_time'",
        ["name overwritten"],
    )
    # After two calls merged into one, the third is still the wire's call 2.
    assert cell(Expected([A, B, CX]), calls=[MERGED_AB, dict(CX, name="zz")]) == (
        "merged",
        "calls merged: get_weather+get_time in one call; "
        "name overwritten: call 2: name 'zz', the wire named 'get_x'",
        ["calls merged", "name overwritten"],
    )
    assert cell(Expected([A, B, CX]), calls=[MERGED_AB]) == (
        "merged",
        "calls merged: get_weather+get_time in one call; "
        "call dropped: call 2 (get_x) missing: 1 of 3 calls returned",
        ["calls merged", "call dropped"],
    )
    # A call without the wire's id takes the wire call its id did not claim.
    assert cell(Expected([A, B]), calls=[dict(B), dict(A, id="zzz")]) == (
        "wrong",
        "id changed: call 0: id 'zzz', the wire sent 'call_a'",
        ["id changed"],
    )


def test_extra_calls_are_listed_in_the_clients_order_and_flags_are_counted() -> None:
    extra = [
        {"id": "e1", "name": "y", "arguments": "{}"},
        {"id": "e2", "name": "x", "arguments": "{}"},
    ]
    assert cell(Expected([A]), calls=[A, *extra]) == (
        "wrong",
        "extra call: 3 calls, the stream holds 1; not in it: 'y', 'x'",
        ["extra call"],
    )
    assert cell(Expected([A, V]), calls=[A, dict(V, invalid=True)]) == (
        "ok",
        "1 call(s) right, 1 flagged invalid where the wire holds no right form",
        [],
    )


def test_pairing_by_position_takes_the_first_free_call_in_order() -> None:
    c = Expected([A, B, CX])
    # The last call claims the first wire call by its id; the others pair in order.
    v = cell(c, calls=[dict(B, id=None), dict(CX, id=None), dict(A)])
    assert v[0] == "wrong" and v[2] == ["name overwritten", "arguments changed", "id lost"]
    assert cell(c, calls=[dict(CX, id=None), dict(B, id=None), dict(A)])[2] == ["id lost"]
    # A call paired by its id does not stop the position pairing of the next one.
    assert cell(Expected([A, B]), calls=[dict(A), dict(B, id="zz")]) == (
        "wrong",
        "id changed: call 1: id 'zz', the wire sent 'call_b'",
        ["id changed"],
    )


def test_a_client_id_that_is_not_text_merges_nothing() -> None:
    wire_calls = [dict(A, id="X"), dict(B, id="XX")]
    v = cell(Expected(wire_calls), calls=[dict(A, id=None), dict(B, id=None)])
    assert v[0] == "wrong" and v[2] == ["id lost"]


def test_a_nameless_broken_call_dropped_is_named_by_a_question_mark() -> None:
    assert cell(Expected([A, dict(V, name="")]), calls=[A]) == (
        "dropped",
        "broken call dropped silently: call 1 (?) has no right form and was left out with no "
        "flag or error",
        ["broken call dropped silently"],
    )


def test_an_empty_answer_is_the_wires_empty_object_only_when_the_wire_sent_none() -> None:
    said = wire("n", "now", "{}", raw="{}")
    assert cell(Expected([said]), calls=[dict(said, arguments={})])[0] == "ok"
    assert cell(Expected([said]), calls=[dict(said, arguments=None)])[0] == "wrong"
