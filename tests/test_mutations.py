"""The reference stream is OpenAI's shape; every mutation is pure, deterministic and minimal."""

from __future__ import annotations

import copy
import json
import random

import pytest

from conformance.mutations import (
    MUTATIONS,
    TRANSFORMS,
    CallSpec,
    Done,
    Raw,
    Stall,
    apply,
    is_json_prefix,
    parse_sse,
    reference_stream,
    render_sse,
)

CALLS = [
    CallSpec(
        "call_aaaaaaaaaaaaaaaaaaaaaaaa", "get_weather", '{"city": "Zürich", "unit": "celsius"}'
    ),
    CallSpec("call_bbbbbbbbbbbbbbbbbbbbbbbb", "get_status", "{}"),
]
ENVELOPE = ("id", "object", "created", "model", "system_fingerprint")


def ref(**kw):
    kw.setdefault("include_usage", True)
    return reference_stream(CALLS, rng=random.Random(7), model="gpt-ref", **kw)


def chunks(frames):
    return [f for f in frames if isinstance(f, dict)]


def tool_deltas(frames):
    return [
        tc
        for c in chunks(frames)
        for ch in c.get("choices") or []
        for tc in (ch.get("delta") or {}).get("tool_calls") or []
    ]


# --------------------------------------------------------------------------- reference


def test_reference_stream_is_openai_shape():
    frames = ref()
    assert isinstance(frames[-1], Done)
    body = chunks(frames)
    env = {k: body[0][k] for k in ENVELOPE}
    assert env["object"] == "chat.completion.chunk" and env["id"].startswith("chatcmpl-")
    for chunk in body:
        assert {k: chunk[k] for k in ENVELOPE} == env  # one completion, stable envelope
        assert list(chunk)[:5] == list(ENVELOPE)
    *streamed, usage = body
    for chunk in streamed:
        assert chunk["usage"] is None
        (choice,) = chunk["choices"]
        assert list(choice) == ["index", "delta", "logprobs", "finish_reason"]
        assert choice["index"] == 0 and choice["logprobs"] is None
    assert streamed[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    assert streamed[-1]["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "tool_calls",
    }
    assert all(c["choices"][0]["finish_reason"] is None for c in streamed[:-1])
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] > 0
    deltas = [c["choices"][0]["delta"] for c in streamed[1:-1]]
    assert all(list(d) == ["tool_calls"] and len(d["tool_calls"]) == 1 for d in deltas)
    for i, call in enumerate(CALLS):
        mine = [d["tool_calls"][0] for d in deltas if d["tool_calls"][0]["index"] == i]
        assert mine[0] == {
            "index": i,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        frags = [tc["function"]["arguments"] for tc in mine[1:]]
        assert all(list(tc) == ["index", "function"] for tc in mine[1:])
        assert all(1 <= len(f) <= 12 for f in frags) and "".join(frags) == call.arguments


def test_reference_without_usage_has_no_usage_key():
    frames = ref(include_usage=False)
    assert all("usage" not in c for c in chunks(frames))
    assert chunks(frames)[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_reference_text_answer_and_text_then_calls():
    text = reference_stream([], rng=random.Random(1), model="m", content="Hello there, Zürich.")
    body = chunks(text)
    assert body[0]["choices"][0]["delta"] == {"role": "assistant", "content": "", "refusal": None}
    assert (
        "".join(c["choices"][0]["delta"].get("content", "") for c in body) == "Hello there, Zürich."
    )
    assert body[-1]["choices"][0]["finish_reason"] == "stop"
    mixed = reference_stream(CALLS, rng=random.Random(1), model="m", content="Let me check.")
    kinds = [next(iter(c["choices"][0]["delta"]), None) for c in chunks(mixed)]
    assert kinds.index("tool_calls") > kinds.index("content")


def test_interleave_alternates_parallel_calls():
    frames = ref(interleave=True)
    order = [tc["index"] for tc in tool_deltas(frames)]
    assert order[:4] == [0, 1, 0, 1]
    for i, call in enumerate(CALLS):
        assert (
            "".join(tc["function"]["arguments"] for tc in tool_deltas(frames) if tc["index"] == i)
            == call.arguments
        )


def test_render_and_parse_round_trip():
    frames = [Raw(": ping\n\n"), *ref(), Raw("data: : keepalive\n\n")]
    raw = render_sse(frames)
    assert raw.startswith(b": ping\n\ndata: {")
    assert b"data: [DONE]\n\n" in raw and "Zü".encode() in raw  # raw UTF-8, compact JSON
    assert parse_sse(raw) == frames
    assert render_sse([Stall(1.0)]) == b""


def test_reference_is_deterministic_given_rng():
    assert render_sse(ref()) == render_sse(ref())
    assert render_sse(ref()) != render_sse(
        reference_stream(CALLS, rng=random.Random(8), model="gpt-ref", include_usage=True)
    )


# --------------------------------------------------------------------------- mutations


def aspects(frames):
    """Independent views of a stream; a minimal mutation changes only its own."""
    body = chunks(frames)
    choices = [ch for c in body for ch in c.get("choices") or []]
    return {
        "framing": [repr(f) for f in frames if not isinstance(f, dict)],
        "count": len(body),
        "envelope": sorted({json.dumps([c.get(k) for k in ENVELOPE] + sorted(c)) for c in body}),
        "role": body[0]["choices"][0] if body and body[0].get("choices") else None,
        "choice_keys": sorted({json.dumps(sorted(ch)) for ch in choices[1:]}),
        "content": [
            d[k]
            for ch in choices
            for k in ("content", "reasoning_content")
            if (d := ch.get("delta") or {}).get(k) is not None
        ],
        "tool_deltas": json.dumps(tool_deltas(frames)),
        "finish": [
            ch.get("finish_reason") for ch in choices if ch.get("finish_reason") is not None
        ],
        "usage": [c["usage"] for c in body if c.get("usage")],
    }


# What each transform may change; everything else must stay as in the reference.
TOUCHES = {
    "Q-SSE-COMMENT-KEEPALIVE": {"framing"},
    "Q-SSE-KEEPALIVE-AS-DATA": {"framing"},
    "Q-SSE-DONE-MISSING": {"framing"},
    "Q-SSE-ERROR-ENVELOPE": {"framing", "count", "envelope", "tool_deltas", "finish", "usage"},
    "Q-SSE-ERROR-IN-CHUNK": {"count", "envelope", "tool_deltas", "finish", "usage"},
    "Q-STREAM-STALLS": {"framing"},
    "Q-ARGS-NOT-PROGRESSIVE": {"framing"},
    "Q-TOOLCALL-HELD-UNTIL-FINISH": {"framing"},
    "Q-USAGE-PLACEMENT": {"count"},  # usage moved: same values, one chunk fewer
    "Q-AZURE-PROMPT-FILTER-CHUNK": {"count", "envelope", "role"},
    "Q-AZURE-CHOICE-WITHOUT-DELTA": {"count", "choice_keys"},
    "Q-ENVELOPE-FIELDS-MISSING": {"role", "choice_keys"},
    "Q-CHUNK-ID-UNSTABLE": {"envelope"},
    "Q-EXTRA-FIELDS": {"envelope", "role", "choice_keys"},
    "Q-TOOLCALLS-EMPTY-ARRAY": {"role"},
    "Q-TOOLCALLS-NOT-ARRAY": {"tool_deltas"},
    "Q-INDEX-AND-ID-REUSED": {"tool_deltas"},
    "Q-NAME-NEVER-SENT": {"tool_deltas"},
    "Q-EMPTY-DELTA-CHUNKS": {"count"},
    "Q-INDEX-ABSENT": {"tool_deltas"},
    "Q-INDEX-ABSENT-WHOLE-CALL": {"tool_deltas", "count"},
    "Q-INDEX-ABSENT-PARALLEL-SPLIT": {"tool_deltas", "count"},
    "Q-INDEX-NONZERO-START": {"tool_deltas"},
    "Q-INDEX-ALL-ZERO": {"tool_deltas"},
    "Q-INDEX-REUSED-ACROSS-CALLS": {"tool_deltas"},
    "Q-INDEX-INCONSISTENT-WITHIN-CALL": {"tool_deltas"},
    "Q-ID-ABSENT": {"tool_deltas"},
    "Q-EMPTY-STRING-OVERWRITE": {"tool_deltas"},
    "Q-ID-REPEATED": {"tool_deltas"},
    "Q-ID-CHANGES-MID-CALL": {"tool_deltas"},
    "Q-ID-FORMAT": {"tool_deltas"},
    "Q-TYPE-MISSING": {"tool_deltas"},
    "Q-NAME-REPEATED": {"tool_deltas"},
    "Q-NAME-EMPTY-OPENING-DELTA": {"tool_deltas", "count"},
    "Q-NAME-AFTER-ARGUMENTS": {"tool_deltas", "count"},
    "Q-NAME-FRAGMENTED": {"tool_deltas", "count"},
    "Q-ARGS-WHOLE-IN-ONE-DELTA": {"tool_deltas", "count"},
    "Q-ARGS-ON-OPENING-DELTA": {"tool_deltas", "count"},
    "Q-ARGS-CUMULATIVE": {"tool_deltas"},
    "Q-ARGS-DUPLICATED-ON-FLUSH": {"tool_deltas", "count"},
    "Q-ARGS-LOST-MULTITOKEN-DELTA": {"tool_deltas", "count"},
    "Q-DELTA-SHAPE-LOAD-DEPENDENT": {"tool_deltas", "count"},  # regrouped, finish with the call
    "Q-ARGS-ABSENT-NO-PARAMS": {"tool_deltas", "count"},
    "Q-ARGS-SERVER-PARSER-CORRUPTION": {"tool_deltas", "count", "content"},  # + the text
    "Q-ARGS-INVALID-JSON": {"tool_deltas", "count"},
    "Q-ARGS-INVENTED-ON-TRUNCATION": {"tool_deltas", "count", "finish"},
    "Q-ARGS-CLOSED-ON-TRUNCATION": {"tool_deltas", "count", "finish"},
    "Q-ARGS-JSON-OBJECT": {"tool_deltas", "count"},
    "Q-ARGS-CONTROL-MARKUP": {"tool_deltas", "count"},
    "Q-ARGS-NULL": {"tool_deltas", "count"},
    "Q-ARGS-TRUNCATED": {"tool_deltas", "count"},
    "Q-FINISH-STOP-WITH-TOOLCALLS": {"finish"},
    "Q-FINISH-STOP-NAMED-TOOLCHOICE": {"finish"},
    "Q-FINISH-TOOLCALLS-WITHOUT-DELTAS": {"tool_deltas", "count"},
    "Q-FINISH-EMPTY-STRING": {"finish", "role"},
    "Q-FINISH-ON-NONFINAL-CHUNK": {"finish", "role"},
    "Q-FINISH-CAMELCASE": {"finish", "choice_keys"},
    "Q-FINISH-NEVER-SENT": {"finish", "count"},
    "Q-FINISH-REPEATED": {"finish", "count"},
    "Q-FINISH-SAME-CHUNK-AS-CALL": {"count"},  # same finish value, one chunk fewer
    "Q-FINISH-NONSTANDARD-VALUE": {"finish"},
    "Q-TOOLCALL-AS-TEXT": {"tool_deltas", "count", "content", "finish"},
    "Q-TOOLCALL-DUPLICATED-IN-CONTENT": {"count", "content"},
    "Q-TOOLCALLS-MISSING-IN-STREAM": {"tool_deltas", "count", "finish"},
    "Q-REQUIRED-NOT-ENFORCED": {"count", "content"},
    "Q-REASONING-SAME-DELTA": {"content"},
    "Q-REASONING-LEAK-AT-FINISH": {"content", "count"},
    "Q-OPENAI-MULTI-TOOL-USE-WRAPPER": {"tool_deltas", "count"},
    "sse-error-event": {"framing", "count", "tool_deltas", "finish", "usage"},
    "reasoning-first": {"count", "content"},  # reasoning deltas before the calls
    "thought-signature": {"tool_deltas"},
}


def test_every_transform_declares_what_it_touches():
    assert set(TOUCHES) == set(TRANSFORMS)


@pytest.mark.parametrize("quirk", sorted(TRANSFORMS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mutation_is_pure_deterministic_and_minimal(quirk, seed):
    frames = ref()
    before = copy.deepcopy(frames)
    out = TRANSFORMS[quirk](frames, random.Random(seed))
    assert frames == before, "mutated its input"
    assert out == TRANSFORMS[quirk](frames, random.Random(seed)), "not deterministic"
    got, want = aspects(out), aspects(frames)
    changed = {k for k in want if got[k] != want[k]}
    assert changed, "injected nothing"
    assert changed <= TOUCHES[quirk], f"also changed {sorted(changed - TOUCHES[quirk])}"
    render_sse(out)  # still renderable


@pytest.mark.parametrize("quirk", sorted(TRANSFORMS))
def test_mutation_survives_streams_without_the_target(quirk):
    """Server profiles mutate every answer, text answers of a round trip included."""
    text = reference_stream([], rng=random.Random(1), model="m", content="It is 21°C.")
    empty = reference_stream([CallSpec("call_x", "f", "")], rng=random.Random(1), model="m")
    for frames in (text, empty):
        render_sse(TRANSFORMS[quirk](frames, random.Random(0)))


@pytest.mark.parametrize("quirk", sorted(MUTATIONS))
def test_mutation_docstring_cites_its_quirk(quirk):
    doc = MUTATIONS[quirk].__doc__ or ""
    assert doc.startswith(quirk) or quirk == "Q-FINISH-STOP-NAMED-TOOLCHOICE"
    assert "\n" not in doc.strip()


def test_apply_is_seeded_per_quirk():
    a = apply(ref(), ["Q-SSE-COMMENT-KEEPALIVE", "Q-ID-CHANGES-MID-CALL"], seed=5)
    assert a == apply(ref(), ["Q-SSE-COMMENT-KEEPALIVE", "Q-ID-CHANGES-MID-CALL"], seed=5)
    assert a != apply(ref(), ["Q-SSE-COMMENT-KEEPALIVE", "Q-ID-CHANGES-MID-CALL"], seed=6)


def _args_of(frames, index):
    return "".join(
        tc["function"].get("arguments", "")
        for tc in tool_deltas(frames)
        if tc.get("index") == index
    )


@pytest.mark.parametrize("seed", range(20))
def test_corruption_is_not_a_truncation_and_truncation_is(seed):
    rng = random.Random(seed)
    corrupted = MUTATIONS["Q-ARGS-INVALID-JSON"](ref(), rng)
    text = _args_of(corrupted, 0)
    assert not is_json_prefix(text) and len(text) < len(CALLS[0].arguments)
    truncated = MUTATIONS["Q-ARGS-TRUNCATED"](ref(), random.Random(seed))
    cut = _args_of(truncated, 1) if _args_of(truncated, 1) != "{}" else _args_of(truncated, 0)
    assert is_json_prefix(cut)
    with pytest.raises(ValueError):
        json.loads(cut)
    assert chunks(truncated)[-2]["choices"][0]["finish_reason"] == "tool_calls"


def test_a_few_exact_shapes():
    frames = ref()
    dash = tool_deltas(MUTATIONS["Q-EMPTY-STRING-OVERWRITE"](frames, random.Random(0)))
    assert dash[1] == {
        "index": 0,
        "id": "",
        "function": {"name": "", "arguments": dash[1]["function"]["arguments"]},
    }
    frag = tool_deltas(MUTATIONS["Q-NAME-FRAGMENTED"](frames, random.Random(0)))
    assert frag[0]["function"]["name"] == "get_" and frag[1] == {
        "index": 0,
        "function": {"name": "weather"},
    }
    zero = tool_deltas(MUTATIONS["Q-INDEX-ALL-ZERO"](frames, random.Random(0)))
    assert {tc["index"] for tc in zero} == {0} and len({tc.get("id") for tc in zero} - {None}) == 2
    wrapped = MUTATIONS["Q-OPENAI-MULTI-TOOL-USE-WRAPPER"](frames, random.Random(0))
    assert {tc["function"].get("name") for tc in tool_deltas(wrapped)} - {None} == {
        "multi_tool_use.parallel"
    }
    uses = json.loads(_args_of(wrapped, 0))["tool_uses"]
    assert [u["recipient_name"] for u in uses] == ["functions.get_weather", "functions.get_status"]
    obj = tool_deltas(MUTATIONS["Q-ARGS-JSON-OBJECT"](frames, random.Random(0)))
    assert obj[0]["function"]["arguments"] == {"city": "Zürich", "unit": "celsius"}
    no_params = tool_deltas(MUTATIONS["Q-ARGS-ABSENT-NO-PARAMS"](frames, random.Random(0)))
    assert no_params[-1] == {
        "index": 1,
        "id": CALLS[1].id,
        "type": "function",
        "function": {"name": "get_status"},
    }


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        '{"a',
        '{"a"',
        '{"a":',
        '{"a": 1.',
        '{"a": -',
        '{"a": tr',
        '{"a": [1, 2',
        '{"a": "\\u00',
        '{"a": "x"}',
        "{ }",
        '{"a": [ ]',
        '{"a": 1e',
    ],
)
def test_json_prefix_accepts_truncations(text):
    assert is_json_prefix(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a" 1}',
        '{"a": 1}}',
        '{"a":: 1',
        '{"a": 1 2',
        "{,",
        '{"a": tx',
        '{"a": 01',
        '{"a": "\\x',
        "}",
        '{"a": [1,]',
        '{"a": 1,}',
        '{"a": 1}x',
    ],
)
def test_json_prefix_rejects_corruptions(text):
    assert not is_json_prefix(text)
