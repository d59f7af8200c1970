"""The three client strategies, JSON repair, index repair, and their properties.

- ``naive`` is seed 000 §2 literally and ``guarded`` is §5's non-empty guard: both are
  compared with a transcription of the seed's pseudo-code written here, on generated
  streams.
- ``robust`` follows catalogue §N and seed 004's index repair; each case of seed 004
  (including every point of its review) is a test below.
- The id is sacred: no strategy ever outputs an id that is not, verbatim, a non-empty id
  of the input (or ``""``).
- JSON repair (seed 000 §4, string-aware): reports Q-ARGS-TRUNCATED whenever it was
  needed and never turns an unrepairable string into ``"{}"``; it repairs exactly the
  texts that are prefixes of a JSON document (oracle: ``mutations.is_json_prefix``).
- Nothing escapes the SSE decoder, the readers or the strategies; robust never loses an
  argument fragment naive keeps; SSE re-chunked at every byte boundary gives identical
  findings. Example counts are moderate here; tests/test_fuzz.py runs the long fuzz.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import streams as S
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from conformance.analysis import analyze, analyze_bytes, analyze_chunks
from conformance.client import ToolCallAccumulator, accumulate, repair_json
from conformance.mutations import is_json_prefix
from conformance.readers import read_path
from conformance.sse import iter_sse, parse_sse_bytes
from conformance.strategies import GuardedAccumulator, NaiveAccumulator, RobustStrategy
from conformance.transcript import InputError, Transcript

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def chunk(*tool_deltas: dict[str, Any], finish: str | None = None, **delta: Any) -> dict:
    d = dict(delta)
    if tool_deltas:
        d["tool_calls"] = list(tool_deltas)
    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


def opener(index: int | None, cid: str | None, name: str | None, args: str = "") -> dict:
    tc: dict[str, Any] = {} if index is None else {"index": index}
    if cid is not None:
        tc["id"] = cid
    tc["type"] = "function"
    fn: dict[str, Any] = {"arguments": args}
    if name is not None:
        fn["name"] = name
    tc["function"] = fn
    return tc


def frag(index: int | None, args: str, **extra: Any) -> dict:
    tc: dict[str, Any] = {} if index is None else {"index": index}
    tc.update(extra)
    tc["function"] = {"arguments": args}
    return tc


def run(strategy: Any, chunks: list[Any]) -> Any:
    for n, c in enumerate(chunks):
        strategy.feed(c, n)
    return strategy


def calls(turn_or_chunks: Any, **kw: Any) -> list[tuple[str, str, Any]]:
    turn = accumulate(turn_or_chunks, **kw) if isinstance(turn_or_chunks, list) else turn_or_chunks
    return [(c.id, c.name, json.loads(c.arguments)) for c in turn.calls]


# =============================================================================== seed 000 §2, §5


def seed_section_2(chunks: list[dict]) -> dict[Any, dict[str, str]]:
    """Seed 000 §2, transcribed: choices[0].delta.tool_calls, keyed by index, overwrite
    id/name when present, concatenate arguments. Raises where the Rust version would."""
    acc: dict[Any, dict[str, str]] = {}
    for c in chunks:
        if "error" in c and "choices" not in c:
            continue  # the SSE loop stops on an error envelope (not a chunk)
        delta = c["choices"][0]["delta"]
        for tcd in delta.get("tool_calls") or []:
            index = tcd["index"]
            if not isinstance(index, int):
                raise TypeError("index is not a u32")
            entry = acc.setdefault(index, {"id": "", "type": "", "name": "", "arguments": ""})
            if tcd.get("id") is not None:
                entry["id"] = tcd["id"]
            if tcd.get("type") is not None:
                entry["type"] = tcd["type"]
            f = tcd.get("function") or {}
            if f.get("name") is not None:
                entry["name"] = f["name"]
            if f.get("arguments") is not None:
                entry["arguments"] += f["arguments"]
    return acc


def seed_section_5(chunks: list[dict]) -> dict[Any, dict[str, str]]:
    """Seed 000 §5's guard (and seed 003's): only non-empty values overwrite; chunks without
    choices are skipped; a missing index is 0."""
    acc: dict[Any, dict[str, str]] = {}
    for c in chunks:
        choices = c.get("choices")
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            continue
        for tcd in (choices[0].get("delta") or {}).get("tool_calls") or []:
            entry = acc.setdefault(
                tcd.get("index", 0), {"id": "", "type": "", "name": "", "arguments": ""}
            )
            f = tcd.get("function") or {}
            for key, value in (("id", tcd.get("id")), ("type", tcd.get("type"))):
                if value:
                    entry[key] = value
            if f.get("name"):
                entry["name"] = f["name"]
            if f.get("arguments"):
                entry["arguments"] += f["arguments"]
    return acc


def _int(k: Any) -> int:
    return k if isinstance(k, int) else 0


def as_calls(acc: dict[Any, dict[str, str]]) -> list[dict[str, Any]]:
    return [
        {
            "index": k if isinstance(k, int) else None,
            "id": v["id"],
            "type": v["type"] or "function",
            "name": v["name"],
            "arguments": v["arguments"],
        }
        # sorted by index (seed 000 §2); an index that is not an integer (guarded: present
        # but null) comes last, in first-seen order
        for k, v in sorted(acc.items(), key=lambda kv: (not isinstance(kv[0], int), _int(kv[0])))
    ]


# ---------------------------------------------------------------- generated streams

IDS = st.one_of(st.none(), st.just(""), st.sampled_from(["call_A", "call_B", "c-3"]))
NAMES = st.one_of(st.none(), st.just(""), st.sampled_from(["get_weather", "get_", "weather"]))
ARGS = st.one_of(st.none(), st.just(""), st.text(alphabet='{}[]":,ab1 ', max_size=6))
FINISH = st.sampled_from([None, None, "tool_calls", "stop", "", "length"])


@st.composite
def tool_delta(draw: Any) -> dict[str, Any]:
    tc: dict[str, Any] = {}
    if draw(st.booleans()) or draw(st.booleans()):
        tc["index"] = draw(st.one_of(st.integers(0, 3), st.just(None)))
    for key, values in (("id", IDS), ("type", st.sampled_from(["function", ""]))):
        if draw(st.booleans()):
            tc[key] = draw(values)
    fn: dict[str, Any] = {}
    if draw(st.booleans()):
        fn["name"] = draw(NAMES)
    if draw(st.booleans()) or draw(st.booleans()):
        fn["arguments"] = draw(ARGS)
    if fn or draw(st.booleans()):
        tc["function"] = fn
    return tc


@st.composite
def stream_chunk(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["delta"] * 6 + ["empty", "usage", "error"]))
    if kind == "empty":
        return {"choices": []}
    if kind == "usage":
        return {"choices": [], "usage": {"total_tokens": 1}}
    if kind == "error":
        return {"error": {"message": "boom"}}
    delta: dict[str, Any] = {}
    if draw(st.booleans()):
        delta["tool_calls"] = draw(st.lists(tool_delta(), max_size=3))
    if draw(st.booleans()):
        delta["content"] = draw(st.sampled_from(["", "hi", None]))
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": draw(FINISH)}]}


STREAMS = st.lists(stream_chunk(), max_size=12)


@st.composite
def indexed_chunk(draw: Any) -> dict[str, Any]:
    """A chunk naive survives: choices[0] present, every tool-call delta with an index."""
    tcs = draw(st.lists(tool_delta(), min_size=1, max_size=3))
    for tc in tcs:
        tc["index"] = draw(st.integers(0, 2))
    return {"choices": [{"index": 0, "delta": {"tool_calls": tcs}, "finish_reason": None}]}


# Both: the seed's code and ours must agree on crashes too, and on many non-crashing streams.
SEED_STREAMS = st.one_of(STREAMS, st.lists(indexed_chunk(), min_size=1, max_size=8))


@PROPS
@given(SEED_STREAMS)
def test_naive_is_seed_000_section_2(chunks):
    naive = run(NaiveAccumulator(), chunks)
    try:
        expected = as_calls(seed_section_2(chunks))
    except (KeyError, IndexError, TypeError):
        assert naive.crash is not None  # it crashes where the seed's code crashes
        return
    assert naive.crash is None
    assert naive.calls() == expected


@PROPS
@given(SEED_STREAMS)
def test_guarded_is_seed_000_section_5(chunks):
    guarded = run(GuardedAccumulator(), chunks)
    try:
        expected = as_calls(seed_section_5(chunks))
    except (TypeError, AttributeError):
        assert guarded.crash is not None
        return
    assert guarded.crash is None
    assert guarded.calls() == expected


def test_naive_and_guarded_on_the_seed_trap():
    """Seed 000 §5's trap: `id: ""` and `name: ""` on continuations."""
    chunks = S.chunks(S.EMPTY_STRING_OVERWRITE)
    (n,) = run(NaiveAccumulator(), chunks).calls()
    (g,) = run(GuardedAccumulator(), chunks).calls()
    assert (n["id"], n["name"]) == ("", "")  # "Unknown tool: ''"
    assert (g["id"], g["name"]) == ("call_eee11723464aQRSTUVWXYZab", "get_weather")
    assert n["arguments"] == g["arguments"] == '{"city":"Paris"}'


@pytest.mark.parametrize(
    ("stream", "error"),
    [
        (S.REFERENCE_SINGLE_JSONL, "IndexError"),  # the usage chunk's `choices: []`
        (S.INDEX_ABSENT, "KeyError"),  # no index
        (S.ARGS_JSON_OBJECT, "TypeError"),  # `args += {…}`
    ],
)
def test_naive_crashes_as_the_catalogue_says(stream, error):
    naive = run(NaiveAccumulator(), S.chunks(stream))
    assert naive.crash is not None and error in naive.crash


# =============================================================================== the id is sacred


def input_ids(value: Any) -> set[str]:
    """Every non-empty string under an "id" key of a tool-call delta, anywhere in the input."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "id" and isinstance(v, str) and v:
                out.add(v)
            out |= input_ids(v)
    elif isinstance(value, list):
        for v in value:
            out |= input_ids(v)
    return out


KEYS = [
    "choices", "delta", "tool_calls", "index", "id", "type", "function", "name",
    "arguments", "finish_reason", "error", "usage", "content",
]  # fmt: skip
JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=4)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)
    ),
    max_leaves=20,
)


@PROPS
@given(st.one_of(STREAMS, st.lists(JSON, max_size=8)))
def test_no_strategy_ever_invents_an_id(chunks):
    allowed = {""} | {i for c in chunks for i in input_ids(c)}
    for strategy in (NaiveAccumulator(), GuardedAccumulator(), RobustStrategy()):
        run(strategy, chunks)
        for c in strategy.calls():
            assert c["id"] in allowed, (type(strategy).__name__, c)
    r = analyze_chunks(chunks)  # and through the analyzer (tool_calls of the JSON document)
    for name, cs in r.tool_calls.items():
        assert all(c["id"] in allowed for c in cs), name


def test_id_absent_is_kept_empty_in_both_messages():
    turn = accumulate(S.chunks(S.ID_ABSENT))
    from conformance.client import assistant_message, tool_result_messages

    msg = assistant_message(turn)
    (result,) = tool_result_messages([(turn.calls[0], "21°C")])
    assert msg["tool_calls"][0]["id"] == "" == result["tool_call_id"]


# =============================================================================== JSON repair

JSON_DOCS = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**6), 10**6),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=6),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=12,
).filter(lambda v: isinstance(v, dict | list))


@PROPS
@given(JSON_DOCS, st.data())
def test_every_cut_of_an_object_is_repaired(doc, data):
    text = json.dumps(doc, ensure_ascii=data.draw(st.booleans()))
    cut = data.draw(st.integers(1, len(text) - 1)) if len(text) > 1 else 1
    prefix = text[:cut]
    assume(not _parses(prefix))
    repaired = repair_json(prefix)
    assert repaired is not None, prefix
    value = json.loads(repaired)
    assert type(value) is type(doc)
    if isinstance(doc, dict):  # only members of the original, the last one possibly cut
        assert set(value) <= set(doc)


@PROPS
@given(st.text(alphabet='{}[]":,ab1-. tnul\\e', max_size=14))
def test_repair_exactly_the_json_prefixes(text):
    """What repair_json repairs is a cut JSON text (independent oracle), it needed repair,
    and the result parses. (The converse is test_every_cut_of_an_object_is_repaired.)"""
    repaired = repair_json(text)
    if repaired is not None:
        assert is_json_prefix(text) and _parses(repaired)
        assert not _parses(text)


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    ("text", "repaired"),
    [
        ('{"location": "Par', '{"location": "Par"}'),  # seed 000 §4's case: close what is open
        ('{"a": [1, {"b": 2', '{"a": [1, {"b": 2}]}'),
        ('{"a": 1, "b', '{"a": 1}'),  # a member without its value is dropped, not invented
        ('{"a": 1, "b":', '{"a": 1}'),
        ('{"a": tr', '{"a": true}'),
        ('{"a": "x\\', '{"a": "x"}'),  # half an escape is dropped
        ('{"a": "\\u00', '{"a": ""}'),
        ("[1, 2,", "[1, 2]"),
        ("{", "{}"),  # the only "{}": an object cut right after its brace
    ],
)
def test_repair_cases(text, repaired):
    assert repair_json(text) == repaired


@pytest.mark.parametrize(
    "text",
    ['{"a": 1}}', '{"a" 1}', "{'a': 1}", '{"a": 1}{"b": 2}', "nonsense", '{"a": 01}', ""],
)
def test_unrepairable_is_none(text):
    assert repair_json(text) is None


def test_truncated_arguments_are_reported_and_repaired():
    r = analyze_chunks(S.chunks(S.ARGS_TRUNCATED))
    assert "Q-ARGS-TRUNCATED" in r.quirks
    (c,) = r.turn.calls
    assert c.repaired and c.arguments == '{"city": "Par"}' and c.raw_arguments == '{"city": "Par'


def test_cut_by_length_is_repaired_without_the_quirk():
    """Cut by max_tokens and honest about it: R-LENGTH-CUT (INFO), not Q-ARGS-TRUNCATED."""
    r = analyze_chunks(S.chunks(S.ARGS_CUT_BY_LENGTH))
    assert "Q-ARGS-TRUNCATED" not in r.quirks
    assert r.turn.calls[0].repaired and not r.turn.executable
    assert any(f.rule == "R-LENGTH-CUT" for f in r.findings)


@PROPS
@given(st.text(max_size=20))
def test_unparsable_arguments_never_become_empty_object(text):
    """Whatever the arguments, the robust call either parses them as sent, repairs them
    (reported), or keeps them as sent and marks the call invalid: never a silent "{}"."""
    chunks = [chunk(opener(0, "call_x", "f", text), finish="tool_calls")]
    turn = accumulate(chunks)
    (c,) = turn.calls
    quirks = set(turn.quirks)
    if not text.strip():
        assert c.arguments == "{}" and quirks == {"Q-ARGS-ABSENT-NO-PARAMS"}
    elif _parses(text):
        assert c.arguments == text and not c.repaired and c.valid
    elif "Q-ARGS-DUPLICATED-ON-FLUSH" in quirks:  # X repeated k times: collapsed to X
        assert c.valid and text == c.arguments * (len(text) // len(c.arguments))
    elif c.repaired:  # a cut JSON text, closed, and said so
        assert "Q-ARGS-TRUNCATED" in quirks and _parses(c.arguments)
        assert is_json_prefix(text)
    else:  # kept exactly as sent, marked invalid, and said why
        assert not c.valid and c.arguments == text
        assert quirks & {
            "Q-ARGS-INVALID-JSON",  # the client cannot tell whose fault
            "Q-INDEX-REUSED-ACROSS-CALLS",
            "Q-ARGS-CONTROL-MARKUP",
        }


# =============================================================================== seed 004 index repair


def test_ollama_index_zero_for_every_call():
    """Ollama streams index 0 for every call of a batch (ollama/ollama#15457)."""
    chunks = [
        chunk(opener(0, "call_a", "alpha")),
        chunk(frag(0, '{"x": 1}')),
        chunk(opener(0, "call_b", "beta")),
        chunk(frag(0, '{"y": 2}'), finish="tool_calls"),
    ]
    turn = accumulate(chunks)
    assert calls(turn) == [("call_a", "alpha", {"x": 1}), ("call_b", "beta", {"y": 2})]
    assert "Q-INDEX-ALL-ZERO" in turn.quirks and turn.recoverable


def test_index_missing_entirely_routes_by_id():
    """Older Ollama omitted index (ollama/ollama#7881): a new id opens a call."""
    chunks = [
        chunk(opener(None, "call_a", "alpha")),
        chunk(frag(None, '{"x": 1}')),
        chunk(opener(None, "call_b", "beta")),
        chunk(frag(None, '{"y": 2}'), finish="tool_calls"),
    ]
    assert calls(chunks) == [("call_a", "alpha", {"x": 1}), ("call_b", "beta", {"y": 2})]


def test_review_starts_before_fragments_are_unattributable():
    """Review 1: several starts (same index) before their fragments, fragments with neither
    id nor index: "inherently unattributable". Robust says so instead of guessing."""
    chunks = [
        chunk(opener(0, "call_a", "alpha"), opener(0, "call_b", "beta")),
        chunk(frag(0, '{"x": 1}')),
        chunk(frag(0, '{"y": 2}'), finish="tool_calls"),
    ]
    turn = accumulate(chunks)
    assert [c.id for c in turn.calls] == ["call_a", "call_b"]  # both calls, ids kept
    assert not turn.recoverable and not turn.executable
    assert any(w.quirk == "Q-INDEX-ALL-ZERO" and not w.recovered for w in turn.workarounds)


def test_review_state_is_per_choice():
    """Review 2: with n > 1, each choice's index 0 is its own call."""
    chunks = [
        {"choices": [{"index": 0, "delta": {"tool_calls": [opener(0, "call_a", "alpha")]}}]},
        {"choices": [{"index": 1, "delta": {"tool_calls": [opener(0, "call_b", "beta")]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [frag(0, '{"x": 1}')]}}]},
        {"choices": [{"index": 1, "delta": {"tool_calls": [frag(0, '{"y": 2}')]}}]},
    ]
    turn = accumulate(chunks, n=2)
    assert calls(turn) == [("call_a", "alpha", {"x": 1}), ("call_b", "beta", {"y": 2})]
    assert "Q-INDEX-ALL-ZERO" not in turn.quirks
    # and the analyzer passes the request's n through
    r = analyze_chunks(chunks, request={"n": 2})
    assert "Q-INDEX-ALL-ZERO" not in r.quirks


@pytest.mark.parametrize("declared", [False, True], ids=["undeclared", "declared-tools"])
def test_review_id_less_starts_split_by_name(declared):
    """Review 3: id-less starts that reuse index 0: the name alone marks a new call."""
    chunks = [
        chunk(opener(0, None, "alpha")),
        chunk(frag(0, '{"x": 1}')),
        chunk(opener(0, None, "beta", '{"y": 2}'), finish="tool_calls"),
    ]
    tools = [{"type": "function", "function": {"name": n}} for n in ("alpha", "beta")]
    turn = accumulate(chunks, tools=tools if declared else None)
    assert calls(turn) == [("", "alpha", {"x": 1}), ("", "beta", {"y": 2})]


def test_review_index_less_fragments_go_to_the_call_in_progress():
    """Review 4: starts carry distinct indices, fragments carry none."""
    chunks = [
        chunk(opener(0, "call_a", "alpha")),
        chunk(frag(None, '{"x": 1}')),
        chunk(opener(1, "call_b", "beta")),
        chunk(frag(None, '{"y": 2}'), finish="tool_calls"),
    ]
    turn = accumulate(chunks)
    assert calls(turn) == [("call_a", "alpha", {"x": 1}), ("call_b", "beta", {"y": 2})]
    assert turn.recoverable


def test_fragments_that_repeat_their_id_are_keyed_by_it_even_interleaved():
    """The providers that fragment "typically repeat the id on continuations (which we key
    on)" (seed 004): then interleaving is harmless."""
    chunks = [
        chunk(opener(None, "call_a", "alpha")),
        chunk(opener(None, "call_b", "beta")),
        chunk(frag(None, '{"x":', id="call_a")),
        chunk(frag(None, '{"y":', id="call_b")),
        chunk(frag(None, " 1}", id="call_a")),
        chunk(frag(None, " 2}", id="call_b"), finish="tool_calls"),
    ]
    assert calls(chunks) == [("call_a", "alpha", {"x": 1}), ("call_b", "beta", {"y": 2})]


def test_well_behaved_streams_pass_through_unchanged():
    """Seed 004: official OpenAI streams are untouched by the repair."""
    turn = accumulate(S.chunks(S.REFERENCE_PARALLEL_JSONL))
    assert turn.workarounds == [] and [c.provider_index for c in turn.calls] == [0, 1]


def test_new_id_without_name_is_the_same_call():
    """§N.3: on an occupied index a different id without a name continues the call
    (Q-ID-CHANGES-MID-CALL) and the first id is kept."""
    turn = accumulate(S.chunks(S.ID_CHANGES_MID_CALL))
    assert calls(turn) == [
        ("call_DfU25035HyRrY03K6JBO94Xf", "get_current_weather", {"location": "Paris"})
    ]


# =============================================================================== no exception escapes


@PROPS
@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=5))
def test_sse_decoder_never_raises(raw, cuts):
    bounds = sorted({0, len(raw), *(c for c in cuts if c <= len(raw))})
    blocks = [raw[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    events = list(iter_sse(blocks))
    assert [e.n for e in events] == list(range(len(events)))


@PROPS
@given(st.binary(max_size=400), st.sampled_from([".jsonl", ".sse", ".yaml", ".har", ""]))
def test_readers_never_raise_anything_but_input_error(tmp_path_factory, raw, suffix):
    path = Path(tmp_path_factory.mktemp("r")) / f"in{suffix}"
    path.write_bytes(raw)
    try:
        for t in read_path(path):
            analyze(t)
    except InputError as e:
        assert str(e).startswith(str(path)) and "\n" not in str(e)


@PROPS
@given(st.lists(JSON, max_size=10))
def test_strategies_never_raise(values):
    for strategy in (NaiveAccumulator(), GuardedAccumulator(), RobustStrategy()):
        run(strategy, values)
        strategy.calls()
    acc = ToolCallAccumulator()
    for v in values:
        acc.feed(v)
    acc.result()
    json.dumps(analyze_chunks(values).to_json())


@PROPS
@given(st.lists(st.text(max_size=30), max_size=10))
def test_accumulator_ignores_text_that_is_not_a_chunk(texts):
    acc = ToolCallAccumulator()
    for t in texts:
        acc.feed(t)  # JSON text is parsed (the public API accepts it); anything else ignored
    acc.result()


# =============================================================================== robust keeps naive's fragments


@st.composite
def tagged_stream(draw: Any) -> list[dict]:
    """Streams whose argument fragments are unique tags ``<k>``: a fragment can be found
    again, and none is a prefix of another (so no cumulative-mode latch is triggered)."""
    out, k = [], 0
    for _ in range(draw(st.integers(1, 10))):
        tcs = []
        for _ in range(draw(st.integers(0, 3))):
            tc = draw(tool_delta())
            tc["index"] = draw(st.integers(0, 3))  # naive needs one; robust sees the rest
            fn = tc.get("function")
            if isinstance(fn, dict) and fn.get("arguments"):
                fn["arguments"] = f"<{k}>"
                k += 1
            tcs.append(tc)
        out.append({"choices": [{"index": 0, "delta": {"tool_calls": tcs}, "finish_reason": None}]})
    return out


@PROPS
@given(tagged_stream())
def test_robust_never_loses_a_fragment_naive_keeps(chunks):
    """For streams where naive does not crash: every non-empty fragment naive appended
    occurs in exactly one of robust's calls (raw arguments), and within a call the
    fragments keep their stream order."""
    naive = run(NaiveAccumulator(), chunks)
    assume(naive.crash is None)
    kept = [
        tc["function"]["arguments"]
        for c in chunks
        for tc in c["choices"][0]["delta"]["tool_calls"]
        if isinstance(tc.get("function"), dict) and tc["function"].get("arguments")
    ]
    assert "".join(c["arguments"] for c in naive.calls()).count("<") == len(kept)
    raws = [c.raw_arguments for c in accumulate(chunks).calls]
    for f in kept:
        assert sum(r.count(f) for r in raws) == 1, (f, raws)
    order = {f: i for i, f in enumerate(kept)}
    for r in raws:
        seen = [order[t] for t in re.findall(r"<\d+>", r)]
        assert seen == sorted(seen)


# =============================================================================== re-chunking


def _findings_by_blocks(raw: bytes, blocks: list[bytes]) -> tuple:
    t = Transcript("x", "sse", True, lambda: iter_sse(blocks))
    r = analyze(t)
    return [f.to_json() for f in r.findings], r.tool_calls, r.verdict, r.finish_reason


RECHUNK = {
    "reference-parallel": S.REFERENCE_PARALLEL_SSE.encode(),
    "comments": S.SSE_COMMENT_KEEPALIVE.encode(),
    "keepalive-as-data": S.SSE_KEEPALIVE_AS_DATA.encode(),
    "crlf-and-utf8": S.REFERENCE_SINGLE_SSE.replace("\n", "\r\n").encode(),
    "invalid-utf8-and-cut": S.REFERENCE_TEXT_SSE.encode().replace(b"sunny", b"s\xc3\xbc\xffn")
    + b"data: {",
}


@pytest.mark.parametrize("name", sorted(RECHUNK))
def test_sse_rechunked_at_every_byte_boundary_gives_identical_findings(name):
    raw = RECHUNK[name]
    whole = _findings_by_blocks(raw, [raw])
    assert whole == _findings_by_blocks(raw, [raw[i : i + 1] for i in range(len(raw))])
    for i in range(1, len(raw)):
        assert _findings_by_blocks(raw, [raw[:i], raw[i:]]) == whole, i


@PROPS
@given(st.sampled_from(sorted(RECHUNK)), st.lists(st.integers(0, 4000), max_size=8))
def test_sse_rechunked_anywhere(name, cuts):
    raw = RECHUNK[name]
    bounds = sorted({0, len(raw), *(c for c in cuts if c <= len(raw))})
    blocks = [raw[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    assert _findings_by_blocks(raw, blocks) == _findings_by_blocks(raw, [raw])


def test_parse_sse_bytes_matches_iter():
    raw = RECHUNK["comments"]
    assert [(e.n, e.kind, e.line) for e in parse_sse_bytes(raw)] == [
        (e.n, e.kind, e.line) for e in iter_sse([raw[:7], raw[7:]])
    ]


def test_analyze_bytes_agrees_with_the_file_door(tmp_path):
    p = tmp_path / "s.sse"
    p.write_text(S.REFERENCE_PARALLEL_SSE)
    (t,) = read_path(p)
    a = analyze(t)
    b = analyze_bytes(p.read_bytes(), source=str(p), headers={})
    assert [f.to_json() for f in a.findings] == [f.to_json() for f in b.findings]
