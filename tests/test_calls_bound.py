"""A cell's analysis holds a bounded number of tool calls and of field names (issue #16).

- ``analyzer.CALLS_KEPT`` calls are assembled (by each strategy and by the analyzer's index
  state); a stream with more is not judged as if it were whole: an ``error`` cell naming
  the bound, as when a limit ends the body, the same in the live run, in ``conformance
  analyze`` and on replay; fragments of the calls kept are still applied.
- the client library's ``ToolCallAccumulator(max_calls=N)``: opt-in, unbounded by default.
- Q-EXTRA-FIELDS keeps only the names its message shows: the message is the same.
- the analysis of a body of many thousand tiny calls, or of a new field name on every
  event, peaks at a constant above the body (tracemalloc), not at a multiple of it.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from faults import providers_yaml, run_suite, stream_server
from streams import F, analyze_sse, cell_result, found

from conformance.analysis import analyze, analyzer
from conformance.client import TextCutError, ToolCallAccumulator
from conformance.readers import read_cassette_file

MiB = 2**20


def _event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        **extra,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return "data: " + json.dumps(chunk) + "\n\n"


def _call(i: int, index: bool = True) -> dict[str, Any]:
    tc = {
        "id": f"call_{i}",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    return {"index": i, **tc} if index else tc


def _calls(k: int, index: bool = True, more: tuple[str, ...] = ()) -> bytes:
    """A role chunk (event 0), k whole calls one per event (events 1 to k), ``more``
    events, the finish chunk and [DONE]."""
    body = [_event({"role": "assistant", "content": None})]
    body += [_event({"tool_calls": [_call(i, index)]}) for i in range(k)]
    body += [*more, _event({}, "tool_calls"), "data: [DONE]\n\n"]
    return "".join(body).encode()


WHOLE = (
    '{"index":0,"id":"call_0","type":"function","function":{"name":"get_weather",'
    '"arguments":"{\\"city\\": \\"Paris\\"}"}}'
)


def _robust(*ids: str) -> list[dict[str, Any]]:
    return [
        dict(index=i, id=c, type="function", name="get_weather", arguments='{"city": "Paris"}')
        for i, c in enumerate(ids)
    ]


def _naive(*ids: str) -> list[dict[str, Any]]:
    return [dict(r, index=i) for i, r in enumerate(_robust(*ids))]


# ------------------------------------------------------------------ the bound, small


def test_a_stream_at_the_bound_is_judged_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analyzer, "CALLS_KEPT", 2)
    r = analyze_sse(_calls(2))
    assert (r.verdict, r.error) == ("conforms", None)
    assert found(r) == [
        F(
            "Q-ARGS-WHOLE-IN-ONE-DELTA",
            "INFO",
            "Q-ARGS-WHOLE-IN-ONE-DELTA",
            1,
            "/choices/0/delta/tool_calls/0",
            "id, name and complete arguments in one delta",
            WHOLE,
            count=2,
        ),
        F(
            "Q-ID-FORMAT",
            "INFO",
            "Q-ID-FORMAT",
            1,
            "/choices/0/delta/tool_calls/0/id",
            "tool-call id 'call_0' (6 characters) is not OpenAI's shape: call_ then 24 letters or digits",
            "call_0",
            count=2,
        ),
    ]
    assert r.tool_calls == {
        "naive": _naive("call_0", "call_1"),
        "guarded": _naive("call_0", "call_1"),
        "robust": _robust("call_0", "call_1"),
    }


def test_one_call_over_the_bound_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analyzer, "CALLS_KEPT", 2)
    r = analyze_sse(_calls(3))
    assert (r.verdict, r.error) == (
        "error",
        "over 2 tool calls in one turn: the analysis assembles the first 2",
    )
    assert found(r) == [
        F(
            "Q-ARGS-WHOLE-IN-ONE-DELTA",
            "INFO",
            "Q-ARGS-WHOLE-IN-ONE-DELTA",
            1,
            "/choices/0/delta/tool_calls/0",
            "id, name and complete arguments in one delta",
            WHOLE,
            count=2,
        ),  # the third call was not opened: not judged
        F(
            "Q-ID-FORMAT",
            "INFO",
            "Q-ID-FORMAT",
            1,
            "/choices/0/delta/tool_calls/0/id",
            "tool-call id 'call_0' (6 characters) is not OpenAI's shape: call_ then 24 letters or digits",
            "call_0",
            count=3,
        ),
        F(
            "R-COMPLETE",
            "MUST",
            None,
            3,
            "/choices/0/delta/tool_calls/0/index",
            "over 2 tool calls in one turn: the analysis assembles the first 2",
        ),
    ]
    assert r.tool_calls == {
        "naive": _naive("call_0", "call_1"),
        "guarded": _naive("call_0", "call_1"),
        "robust": _robust("call_0", "call_1"),
    }
    assert r.turn.calls_cut == 3


def test_index_less_calls_over_the_bound_are_cut_where_the_client_cuts_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(analyzer, "CALLS_KEPT", 2)
    r = analyze_sse(_calls(3, index=False))
    assert (r.verdict, r.error) == (
        "error",
        "over 2 tool calls in one turn: the analysis assembles the first 2",
    )
    assert found(r)[-1] == F(
        "R-COMPLETE",
        "MUST",
        None,
        3,
        None,
        "over 2 tool calls in one turn: the analysis assembles the first 2",
    )
    assert r.tool_calls["robust"] == _robust("call_0", "call_1")


def test_fragments_of_calls_kept_still_apply_past_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(analyzer, "CALLS_KEPT", 1)
    opener = {
        "index": 0,
        "id": "call_0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": '},
    }
    raw = "".join(
        [
            _event({"tool_calls": [opener]}),
            _event({"tool_calls": [_call(1)]}),  # event 1: past the bound
            _event({"tool_calls": [{"index": 1, "function": {"arguments": "xx"}}]}),
            _event({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
            _event({}, "tool_calls"),
            "data: [DONE]\n\n",
        ]
    ).encode()
    r = analyze_sse(raw)
    assert r.error == "over 1 tool calls in one turn: the analysis assembles the first 1"
    assert r.tool_calls == {
        "naive": _naive("call_0"),
        "guarded": _naive("call_0"),
        "robust": _robust("call_0"),
    }
    assert found(r)[-1] == F(
        "R-COMPLETE",
        "MUST",
        None,
        1,
        "/choices/0/delta/tool_calls/0/index",
        "over 1 tool calls in one turn: the analysis assembles the first 1",
    )


def test_a_cut_body_keeps_its_own_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(analyzer, "CALLS_KEPT", 1)
    raw = _calls(2)[: -len("data: [DONE]\n\n") - 10]  # cut inside the finish event
    r = analyze_sse(raw)
    assert r.turn.calls_cut == 2  # the second call was refused before the cut
    assert r.error == (
        "HTTP 200 body cut inside an event after 3 event(s), with no "
        "finish_reason: the server closed the stream mid-answer"
    )
    assert [f["rule"] for f in found(r)].count("R-COMPLETE") == 1


# ------------------------------------------------------------------ the bound itself


def test_the_bound_is_1024_calls() -> None:
    under = analyze_sse(_calls(1024))
    assert (under.verdict, under.error, len(under.tool_calls["robust"])) == ("conforms", None, 1024)
    over = analyze_sse(_calls(1025))
    assert (over.verdict, over.error) == (
        "error",
        "over 1024 tool calls in one turn: the analysis assembles the first 1024",
    )
    assert [len(c) for c in over.tool_calls.values()] == [1024, 1024, 1024]
    assert found(over)[-1] == F(
        "R-COMPLETE",
        "MUST",
        None,
        1025,
        "/choices/0/delta/tool_calls/0/index",
        "over 1024 tool calls in one turn: the analysis assembles the first 1024",
    )


# ------------------------------------------------------------------ the client library


def _feed(acc: ToolCallAccumulator, raw: bytes) -> None:
    for line in raw.decode().split("\n\n"):
        if line.startswith("data: {"):
            acc.feed(json.loads(line[6:]))


def test_the_client_is_unbounded_by_default() -> None:
    acc = ToolCallAccumulator()
    _feed(acc, _calls(3))
    turn = acc.result()
    assert [c.id for c in turn.calls] == ["call_0", "call_1", "call_2"]
    assert turn.calls_cut is None
    assert [e["id"] for e in turn.message()["tool_calls"]] == ["call_0", "call_1", "call_2"]


def test_max_calls_keeps_the_first_calls_and_refuses_to_send_them_back() -> None:
    acc = ToolCallAccumulator(max_calls=2)
    _feed(acc, _calls(4))
    turn = acc.result()
    assert [c.id for c in turn.calls] == ["call_0", "call_1"]
    assert (turn.calls_cut, acc.calls_cut) == (3, 3)  # the third call's event
    with pytest.raises(TextCutError) as e:
        turn.message()
    assert str(e.value) == (
        "the turn had more calls than the 2 kept (one at event 3 was "
        "refused): sent back, it would not be what was received"
    )


def test_max_calls_refuses_index_less_and_reused_index_calls_too() -> None:
    acc = ToolCallAccumulator(max_calls=1)
    _feed(
        acc,
        _calls(2, index=False, more=(_event({"tool_calls": [{"function": {"arguments": "zz"}}]}),)),
    )  # to no call
    assert [(c.id, c.arguments) for c in acc.result().calls] == [("call_0", '{"city": "Paris"}')]
    reuse = ToolCallAccumulator(max_calls=1)
    _feed(
        reuse,
        "".join(
            [
                _event({"tool_calls": [_call(0)]}),
                _event(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_9",
                                "function": {"name": "get_time", "arguments": "{}"},
                            }
                        ]
                    }
                ),
            ]
        ).encode(),
    )
    turn = reuse.result()
    assert ([c.id for c in turn.calls], turn.calls_cut) == (["call_0"], 1)


def test_fragments_after_a_refused_call_go_to_no_call() -> None:
    acc = ToolCallAccumulator(max_calls=1)
    _feed(acc, _calls(2, more=(_event({"tool_calls": [{"function": {"arguments": "zz"}}]}),)))
    turn = acc.result()
    assert [(c.id, c.arguments) for c in turn.calls] == [("call_0", '{"city": "Paris"}')]
    assert turn.calls_cut == 2


def test_max_calls_zero_keeps_none_and_a_negative_bound_is_refused() -> None:
    acc = ToolCallAccumulator(max_calls=0)
    _feed(acc, _calls(1))
    assert (acc.result().calls, acc.calls_cut) == ([], 1)
    with pytest.raises(ValueError, match="^max_calls is a number of calls, not -1$"):
        ToolCallAccumulator(max_calls=-1)


# ------------------------------------------------------------------ Q-EXTRA-FIELDS


def _extras(names: list[str]) -> bytes:
    body = [_event({"role": "assistant", "content": ""})]
    body += [_event({"content": "hi"}, **{k: 1}) for k in names]
    body += [_event({}, "stop"), "data: [DONE]\n\n"]
    return "".join(body).encode()


EXTRA_CASES = [  # (names in stream order, the message): written by hand
    (["b", "a"], "non-standard fields: a, b"),
    (
        [f"x{i:02}" for i in range(12)],
        "non-standard fields: x00, x01, x02, x03, x04, x05, x06, x07, x08, x09, x10, x11",
    ),
    (
        [f"x{i:02}" for i in range(14, 0, -1)],  # later, smaller names take the places
        "non-standard fields: x01, x02, x03, x04, x05, x06, x07, x08, x09, x10, x11, x12",
    ),
    (
        ["z", *[f"x{i:02}" for i in range(12)], "z", "x03", "a"],
        "non-standard fields: a, x00, x01, x02, x03, x04, x05, x06, x07, x08, x09, x10",
    ),
]


@pytest.mark.parametrize(("names", "message"), EXTRA_CASES)
def test_extra_fields_name_the_first_twelve_in_sorted_order(names: list[str], message: str) -> None:
    r = analyze_sse(_extras(names))
    assert found(r) == [F("Q-EXTRA-FIELDS", "INFO", "Q-EXTRA-FIELDS", 1, None, message)]


def test_extra_fields_on_a_choice_a_delta_and_a_call_are_named_so() -> None:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": None,
                "zc": 1,
                "delta": {"zd": 1, "tool_calls": [{**_call(0), "zt": 1}]},
            }
        ],
    }
    raw = (
        "data: " + json.dumps(chunk) + "\n\n" + _event({}, "tool_calls") + "data: [DONE]\n\n"
    ).encode()
    assert [f["message"] for f in found(analyze_sse(raw)) if f["rule"] == "Q-EXTRA-FIELDS"] == [
        "non-standard fields: choice.zc, delta.zd, tool_call.zt"
    ]


# ------------------------------------------------------------------ end to end


def test_a_cell_over_the_bound_is_the_same_error_live_analysed_and_replayed(tmp_path: Path) -> None:
    raw = _calls(1025)
    with stream_server(lambda w: w.write(raw)) as base_url:
        (tmp_path / "providers.yaml").write_text(
            providers_yaml(
                {"many": {"base_url": base_url, "model": "reference", "retries": {"max": 0}}}
            )
        )
        rec = run_suite(tmp_path, "--record-mode=all", "--scenario", "single")
    assert "1 failed" in rec.stdout, rec.stdout[-3000:] + rec.stderr[-3000:]
    live = cell_result(tmp_path / "reports")
    reason = "over 1024 tool calls in one turn: the analysis assembles the first 1024"
    assert (live["verdict"], live["reason"]) == ("error", reason)
    assert [f for f in live["findings"] if f["rule"] == "R-COMPLETE"] == [
        dict(
            F("R-COMPLETE", "MUST", None, 1025, "/choices/0/delta/tool_calls/0/index", reason),
            exchange=0,
        )
    ]
    (t,) = read_cassette_file(tmp_path / "cassettes" / "many" / "single.yaml")
    assert t.raw == raw  # recorded whole: no limit ended it
    analysed = analyze(t)
    assert (analysed.verdict, analysed.error) == ("error", reason)
    assert [dict(f, exchange=0) for f in found(analysed)] == live["findings"]

    rep = run_suite(tmp_path, "--record-mode=none", "--scenario", "single")
    assert "1 failed" in rep.stdout, rep.stdout[-3000:]
    replayed = cell_result(tmp_path / "reports")
    for key in ("verdict", "reason", "quirks", "findings", "finish_reason", "tool_calls"):
        assert replayed[key] == live[key], key


# ------------------------------------------------------------------ memory


def _peak(raw: bytes) -> tuple[Any, int]:
    analyze_sse(_calls(2))  # the first analysis' imports and caches, not counted
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        r = analyze_sse(raw)
        return r, tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def test_many_tiny_calls_peak_at_a_constant_above_the_body() -> None:
    raw = _calls(10_000)
    assert 2.5 * MiB < len(raw) < 3 * MiB
    # 10,000 whole calls of 291 bytes, 2.8 MiB. Measured (tracemalloc, peak above the
    # start, the body already held): 2.9 MiB (2.7 to 2.9 MiB from 2,000 to 40,000 calls:
    # 1,024 calls kept, and one event's parse at a time); 28.0 MiB before the bound (56.1
    # MiB for 20,000: about 2.8 KB a call over the three strategies, the index state and
    # the results).
    r, peak = _peak(raw)
    assert r.error == "over 1024 tool calls in one turn: the analysis assembles the first 1024"
    assert peak < 4.5 * MiB, f"{peak / MiB:.1f} MiB"


def test_a_new_field_name_on_every_event_peaks_at_a_constant_above_the_body() -> None:
    raw = _extras([f"field_{i:06}" for i in range(30_000)])
    assert 5 * MiB < len(raw) < 6 * MiB
    # 30,000 events, each with a new name, 5.1 MiB. Measured: 2.6 MiB, as with one name
    # on every event (the 60,000 characters of content kept); 6.1 MiB when every name was
    # kept (60,000 names: 4.3 MiB, as with one name, the content kept growing; 11.4 MiB
    # before).
    r, peak = _peak(raw)
    assert [f["message"] for f in found(r)] == [
        "non-standard fields: field_000000, "
        "field_000001, field_000002, field_000003, field_000004, field_000005, field_000006, "
        "field_000007, field_000008, field_000009, field_000010, field_000011"
    ]
    assert peak < 4 * MiB, f"{peak / MiB:.1f} MiB"
