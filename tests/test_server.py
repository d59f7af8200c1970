"""The reference-profile server over real HTTP: every profile has the shape it promises."""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from conformance.mutations import Done, Frame, Raw, apply, is_json_prefix, parse_sse, render_sse
from conformance.server import PROFILES, example_request, respond
from conformance.server.testing import running_server

SEED = 1234
STREAMED = [n for n, p in PROFILES.items() if p.fault is None]


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with running_server() as url:
        yield url


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as c:
        yield c


def post(client: httpx.Client, url: str, body: dict[str, Any], **headers: str) -> httpx.Response:
    return client.post(url + "/chat/completions", json=body, headers=headers)


def chunks(frames: list[Frame]) -> list[dict[str, Any]]:
    return [f for f in frames if isinstance(f, dict)]


def choices(frames: list[Frame]) -> list[dict[str, Any]]:
    return [ch for c in chunks(frames) for ch in c.get("choices") or []]


def deltas(frames: list[Frame]) -> list[dict[str, Any]]:
    return [tc for ch in choices(frames) for tc in (ch.get("delta") or {}).get("tool_calls") or []]


def finishes(frames: list[Frame]) -> list[Any]:
    return [ch["finish_reason"] for ch in choices(frames) if ch.get("finish_reason") is not None]


def content(frames: list[Frame], key: str = "content") -> str:
    return "".join((ch.get("delta") or {}).get(key) or "" for ch in choices(frames))


def args_of(frames: list[Frame], index: int = 0) -> str:
    return "".join(
        tc["function"].get("arguments") or ""
        for tc in deltas(frames)
        if tc.get("index") == index and isinstance(tc.get("function"), dict)
    )


def by_index(frames: list[Frame]) -> dict[Any, list[dict[str, Any]]]:
    out: dict[Any, list[dict[str, Any]]] = {}
    for tc in deltas(frames):
        out.setdefault(tc.get("index"), []).append(tc)
    return out


def assemble(frames: list[Frame]) -> list[dict[str, str]]:
    """Seed 000 §2 accumulation (index-keyed), for streams whose indices are sound."""
    calls: dict[int, dict[str, str]] = {}
    for tc in deltas(frames):
        slot = calls.setdefault(tc["index"], {"id": "", "name": "", "arguments": ""})
        slot["id"] = tc.get("id") or slot["id"]
        slot["name"] = tc.get("function", {}).get("name") or slot["name"]
        slot["arguments"] += tc.get("function", {}).get("arguments") or ""
    return [calls[k] for k in sorted(calls)]


# --------------------------------------------------------------------------- shapes per quirk

Calls = list[dict[str, str]]
Check = Callable[[list[Frame], Calls, list[Frame]], None]
SHAPES: dict[str, Check] = {}


def shape(*quirks: str) -> Callable[[Check], Check]:
    """Register the check of what ``quirks`` look like on the wire.

    A check gets the profile's frames, the calls the model meant (the non-streaming answer
    to the same request) and the reference profile's frames for the same request.
    """

    def register(fn: Check) -> Check:
        SHAPES.update(dict.fromkeys(quirks, fn))
        return fn

    return register


@shape("Q-REASONING-MUST-BE-ECHOED")
def _reasoning_first(f, c, r):
    # thinking-model shape: reasoning deltas before the first call, never in the same delta
    deltas = [x["choices"][0]["delta"] for x in f if isinstance(x, dict) and x.get("choices")]
    first_call = next(i for i, d in enumerate(deltas) if d.get("tool_calls"))
    assert any(d.get("reasoning_content") for d in deltas[:first_call])
    assert not any(d.get("reasoning_content") and d.get("tool_calls") for d in deltas)


@shape("Q-RT-GEMINI-THOUGHT-SIGNATURE")
def _thought_signatures(f, c, r):
    openers = [
        tc
        for x in f
        if isinstance(x, dict) and x.get("choices")
        for tc in x["choices"][0]["delta"].get("tool_calls") or []
        if "id" in tc
    ]
    assert openers and all(tc["extra_content"]["google"]["thought_signature"] for tc in openers)


@shape("Q-STRICT-IGNORED")
def _strict_broken(f, c, r):
    args = [json.loads(call["arguments"]) for call in c]
    assert args and all("note" in a for a in args)  # undeclared under additionalProperties


@shape("Q-SSE-COMMENT-KEEPALIVE")
def _comments(f, c, r):
    assert f[:2] == [Raw(": OPENROUTER PROCESSING\n\n")] * 2 and Raw(": ping\n\n") in f


@shape("Q-SSE-KEEPALIVE-AS-DATA")
def _keepalive_data(f, c, r):
    assert f[0] == Raw("data: : keepalive\n\n") and f.count(f[0]) == 2


@shape("Q-SSE-DONE-MISSING")
def _no_done(f, c, r):
    assert not any(isinstance(x, Done) for x in f) and finishes(f) == ["tool_calls"]


@shape("Q-SSE-ERROR-ENVELOPE")
def _error_envelope(f, c, r):
    if isinstance(f[-1], Raw):  # the `event: error` variant
        assert f[-1].text.startswith('event: error\ndata: {"error":')
    else:
        assert list(f[-1]) == ["error"] and f[-1]["error"]["type"] == "server_error"
    assert not finishes(f) and Done() not in f and 0 < len(args_of(f)) < len(c[0]["arguments"])


@shape("Q-SSE-ERROR-IN-CHUNK")
def _error_chunk(f, c, r):
    assert f[-2]["choices"] == [] and f[-2]["error"]["code"] == 502 and not finishes(f)


@shape("Q-STREAM-STALLS", "Q-ARGS-NOT-PROGRESSIVE", "Q-TOOLCALL-HELD-UNTIL-FINISH")
def _stall(f, c, r):
    assert f == r  # a stall is timing only


@shape("Q-USAGE-PLACEMENT")
def _usage_on_finish(f, c, r):
    assert not any(x.get("choices") == [] for x in chunks(f))
    last = chunks(f)[-1]
    assert last["usage"]["total_tokens"] > 0 and last["choices"][0]["finish_reason"]


@shape("Q-AZURE-PROMPT-FILTER-CHUNK")
def _prompt_filter(f, c, r):
    first = chunks(f)[0]
    assert first["choices"] == [] and first["id"] == first["object"] == ""
    assert "prompt_filter_results" in first and chunks(f)[1:] == chunks(r)


@shape("Q-AZURE-CHOICE-WITHOUT-DELTA")
def _choice_without_delta(f, c, r):
    assert [ch for ch in choices(f) if "delta" not in ch][0]["content_filter_results"]


@shape("Q-ENVELOPE-FIELDS-MISSING")
def _no_choice_index(f, c, r):
    assert all("index" not in ch for ch in choices(f))


@shape("Q-CHUNK-ID-UNSTABLE")
def _chunk_ids(f, c, r):
    assert len({x["id"] for x in chunks(f)}) == len(chunks(f))


@shape("Q-EXTRA-FIELDS")
def _extra(f, c, r):
    assert all("obfuscation" in x for x in chunks(f))
    assert all("native_finish_reason" in ch for ch in choices(f))


@shape("Q-TOOLCALLS-EMPTY-ARRAY")
def _empty_array(f, c, r):
    assert choices(f)[0]["delta"] == {"role": "assistant", "content": None, "tool_calls": []}


@shape("Q-TOOLCALLS-NOT-ARRAY")
def _not_array(f, c, r):
    tcs = [ch["delta"]["tool_calls"] for ch in choices(f) if "tool_calls" in ch["delta"]]
    assert tcs and all(isinstance(t, dict) for t in tcs)


@shape("Q-INDEX-AND-ID-REUSED")
def _index_and_id_reused(f, c, r):
    openers = [tc for tc in deltas(f) if "id" in tc]
    assert len(openers) >= 2 and len({(tc["index"], tc["id"]) for tc in openers}) == 1
    assert len({tc["function"]["name"] for tc in openers}) == len(openers)


@shape("Q-NAME-NEVER-SENT")
def _name_never_sent(f, c, r):
    tcs = deltas(f)
    assert tcs and not any("name" in (tc.get("function") or {}) for tc in tcs)


@shape("Q-EMPTY-DELTA-CHUNKS")
def _empty_deltas(f, c, r):
    assert [ch["delta"] for ch in choices(f)[1:3]] == [{}, {}]


def _whole_calls(f, c):
    whole = [(tc["id"], tc["function"]["name"], tc["function"]["arguments"]) for tc in deltas(f)]
    assert whole == [(x["id"], x["name"], x["arguments"]) for x in c]


@shape("Q-INDEX-ABSENT")
def _index_absent(f, c, r):
    assert all("index" not in tc for tc in deltas(f)) and len(deltas(f)) > len(c)


@shape("Q-INDEX-ABSENT-WHOLE-CALL")
def _index_absent_whole(f, c, r):
    assert all("index" not in tc for tc in deltas(f))
    assert sum(1 for ch in choices(f) if (ch.get("delta") or {}).get("tool_calls")) == 1
    _whole_calls(f, c)


@shape("Q-INDEX-ABSENT-PARALLEL-SPLIT")
def _index_absent_split(f, c, r):
    assert all("index" not in tc for tc in deltas(f)) and len(c) >= 2
    _whole_calls(f, c)


@shape("Q-INDEX-NONZERO-START")
def _index_from_one(f, c, r):
    assert sorted(by_index(f)) == list(range(1, len(c) + 1))


@shape("Q-INDEX-ALL-ZERO")
def _all_zero(f, c, r):
    assert len(c) >= 2 and {tc["index"] for tc in deltas(f)} == {0}
    assert [tc["id"] for tc in deltas(f) if "id" in tc] == [x["id"] for x in c]


@shape("Q-INDEX-REUSED-ACROSS-CALLS")
def _reused(f, c, r):
    assert len(c) >= 2 and {tc["index"] for tc in deltas(f)} == {0}
    assert [tc["id"] for tc in deltas(f) if "id" in tc] == [c[0]["id"]]
    assert args_of(f, 0) == "".join(x["arguments"] for x in c)


@shape("Q-INDEX-INCONSISTENT-WITHIN-CALL")
def _inconsistent(f, c, r):
    openers = sorted(k for k, g in by_index(f).items() if "id" in g[0])
    assert openers == list(range(len(c), 2 * len(c)))
    assert [args_of(f, k) for k in range(len(c))] == [x["arguments"] for x in c]


@shape("Q-ID-ABSENT")
def _id_absent(f, c, r):
    assert all("id" not in tc for tc in deltas(f)) and assemble(f)[0]["name"] == c[0]["name"]


@shape("Q-EMPTY-STRING-OVERWRITE")
def _empty_strings(f, c, r):
    rest = [tc for g in by_index(f).values() for tc in g[1:]]
    assert rest and all(tc["id"] == "" and tc["function"]["name"] == "" for tc in rest)
    assert assemble(f)[0]["id"] == c[0]["id"]  # a guarded accumulator survives it


@shape("Q-ID-REPEATED")
def _id_repeated(f, c, r):
    assert all(tc["id"] == c[k]["id"] for k, g in by_index(f).items() for tc in g)


@shape("Q-ID-CHANGES-MID-CALL")
def _id_changes(f, c, r):
    rest = [(k, tc) for k, g in by_index(f).items() for tc in g[1:]]
    assert rest and all(tc["id"].startswith("call_") and tc["id"] != c[k]["id"] for k, tc in rest)


@shape("Q-ID-FORMAT")
def _id_format(f, c, r):
    ids = [tc["id"] for tc in deltas(f) if "id" in tc]
    assert ids == [f"functions.{x['name']}:{k}" for k, x in enumerate(c)]


@shape("Q-TYPE-MISSING")
def _type_missing(f, c, r):
    assert all("type" not in tc for tc in deltas(f))


@shape("Q-NAME-REPEATED")
def _name_repeated(f, c, r):
    assert all(tc["function"]["name"] == c[k]["name"] for k, g in by_index(f).items() for tc in g)


@shape("Q-NAME-EMPTY-OPENING-DELTA")
def _name_empty_first(f, c, r):
    for k, g in by_index(f).items():
        assert g[0]["function"]["name"] == "" and g[1]["function"]["name"] == c[k]["name"]


@shape("Q-NAME-AFTER-ARGUMENTS")
def _name_late(f, c, r):
    for g in by_index(f).values():
        first_args = next(i for i, tc in enumerate(g) if tc["function"].get("arguments"))
        assert first_args < next(i for i, tc in enumerate(g) if "name" in tc["function"])
    assert assemble(f) == c


@shape("Q-NAME-FRAGMENTED")
def _name_fragments(f, c, r):
    names = [tc["function"]["name"] for tc in by_index(f)[0] if "name" in tc["function"]]
    assert names == ["get_", "weather"]


@shape("Q-ARGS-WHOLE-IN-ONE-DELTA")
def _args_whole(f, c, r):
    _whole_calls(f, c)
    assert [tc["index"] for tc in deltas(f)] == list(range(len(c)))


@shape("Q-ARGS-ON-OPENING-DELTA")
def _args_on_opener(f, c, r):
    for k, g in by_index(f).items():
        assert g[0]["function"]["arguments"]
        assert c[k]["arguments"].startswith(g[0]["function"]["arguments"])
    assert assemble(f) == c


@shape("Q-ARGS-CUMULATIVE")
def _args_cumulative(f, c, r):
    for k, g in by_index(f).items():
        sent = [tc["function"]["arguments"] for tc in g]
        assert all(b.startswith(a) and len(b) > len(a) for a, b in itertools.pairwise(sent))
        assert sent[-1] == c[k]["arguments"]


@shape("Q-ARGS-DUPLICATED-ON-FLUSH")
def _args_twice(f, c, r):
    assert args_of(f, len(c) - 1) == c[-1]["arguments"] * 2


@shape("Q-ARGS-LOST-MULTITOKEN-DELTA")
def _args_lost(f, c, r):
    sent = [(tc["function"]["name"], tc["function"]["arguments"]) for tc in deltas(f)]
    assert sent == [(x["name"], "") for x in c]


@shape("Q-DELTA-SHAPE-LOAD-DEPENDENT")
def _delta_shape_load(f, c, r):
    # the reference's calls, in fewer deltas (what a busy server sends for the same output)
    assert assemble(f) == assemble(r) == c and len(deltas(f)) < len(deltas(r))


@shape("Q-ARGS-ABSENT-NO-PARAMS")
def _args_absent(f, c, r):
    assert c[0]["arguments"] == "{}"
    assert [tc["function"] for tc in deltas(f)] == [{"name": c[0]["name"]}]


@shape("Q-ARGS-INVALID-JSON")
def _args_invalid(f, c, r):
    text = args_of(f, 0)
    assert not is_json_prefix(text) and len(text) < len(c[0]["arguments"])
    assert not content(f)  # nothing on the wire says whose fault it is


@shape("Q-ARGS-SERVER-PARSER-CORRUPTION")
def _args_corrupt(f, c, r):
    text = args_of(f, 0)
    assert not is_json_prefix(text) and len(text) < len(c[0]["arguments"])
    # the evidence: the model's own text of the call, with its whole arguments, in content
    assert json.dumps({"arguments": json.loads(c[0]["arguments"])}, ensure_ascii=False)[
        1:-1
    ] in content(f)


@shape("Q-ARGS-INVENTED-ON-TRUNCATION")
def _args_invented(f, c, r):
    assert [x["arguments"] for x in assemble(f)] == [x["arguments"] for x in c[:-1]] + ["{}"]
    assert c[-1]["arguments"] != "{}" and finishes(f) == ["length"]


@shape("Q-ARGS-CLOSED-ON-TRUNCATION")
def _args_closed(f, c, r):
    # the last call's arguments cut (a key dropped) yet valid JSON, the turn cut by length
    sent = [json.loads(x["arguments"]) for x in assemble(f)]
    full = json.loads(c[-1]["arguments"])
    assert sent[:-1] == [json.loads(x["arguments"]) for x in c[:-1]] and sent[-1] != full
    assert set(sent[-1]) <= set(full) and finishes(f) == ["length"]


@shape("Q-REQUIRED-NOT-ENFORCED")
def _required_prose(f, c, r):
    assert content(f) and not content(r) and assemble(f) == c
    first_call = next(
        k for k, ch in enumerate(choices(f)) if (ch.get("delta") or {}).get("tool_calls")
    )
    assert all(not (ch.get("delta") or {}).get("content") for ch in choices(f)[first_call:])


@shape("Q-ARGS-JSON-OBJECT")
def _args_object(f, c, r):
    assert [tc["function"]["arguments"] for tc in deltas(f)] == [
        json.loads(x["arguments"]) for x in c
    ]


@shape("Q-ARGS-NULL")
def _args_null(f, c, r):
    nulls = [tc for tc in deltas(f) if (tc.get("function") or {}).get("arguments", "") is None]
    assert len(nulls) == len(c) and args_of(f, 0) == c[0]["arguments"]


@shape("Q-ARGS-CONTROL-MARKUP")
def _args_markup(f, c, r):
    assert args_of(f, 0) == "[ARGS]" + c[0]["arguments"]


@shape("Q-ARGS-TRUNCATED")
def _args_truncated(f, c, r):
    text, want = args_of(f, len(c) - 1), c[-1]["arguments"]
    assert want.startswith(text) and text != want and finishes(f) == ["tool_calls"]


@shape("Q-FINISH-STOP-WITH-TOOLCALLS", "Q-FINISH-STOP-NAMED-TOOLCHOICE")
def _finish_stop(f, c, r):
    assert finishes(f) == ["stop"] and assemble(f) == c


@shape("Q-FINISH-TOOLCALLS-WITHOUT-DELTAS")
def _finish_without_calls(f, c, r):
    assert c and not deltas(f) and finishes(f) == ["tool_calls"]


@shape("Q-FINISH-EMPTY-STRING")
def _finish_empty(f, c, r):
    assert len(finishes(f)) > 2 and finishes(f) == [""] * (len(finishes(f)) - 1) + ["tool_calls"]


@shape("Q-FINISH-ON-NONFINAL-CHUNK")
def _finish_early(f, c, r):
    assert finishes(f) == ["stop", "tool_calls"] and choices(f)[0]["finish_reason"] == "stop"


@shape("Q-FINISH-CAMELCASE")
def _finish_camel(f, c, r):
    assert not finishes(f)
    assert [ch["finishReason"] for ch in choices(f) if "finishReason" in ch] == ["tool_calls"]


@shape("Q-FINISH-NEVER-SENT")
def _finish_never(f, c, r):
    assert not finishes(f) and Done() in f and assemble(f) == c


@shape("Q-FINISH-REPEATED")
def _finish_twice(f, c, r):
    assert finishes(f) == ["tool_calls", "tool_calls"]


@shape("Q-FINISH-SAME-CHUNK-AS-CALL")
def _finish_with_call(f, c, r):
    (last,) = [ch for ch in choices(f) if ch["finish_reason"]]
    assert last["delta"]["tool_calls"] and assemble(f) == c


@shape("Q-FINISH-NONSTANDARD-VALUE")
def _finish_unknown(f, c, r):
    assert finishes(f) == ["UNKNOWN"]


@shape("Q-TOOLCALL-AS-TEXT")
def _call_as_text(f, c, r):
    assert c and not deltas(f) and content(f).startswith("<tool_call>")
    assert all(x["name"] in content(f) for x in c) and finishes(f) == ["stop"]


@shape("Q-TOOLCALL-DUPLICATED-IN-CONTENT")
def _call_in_content(f, c, r):
    # ids and names as meant (the arguments may be broken: the parser-corruption profile)
    assert content(f).startswith("<tool_call>")
    assert [(x["id"], x["name"]) for x in assemble(f)] == [(x["id"], x["name"]) for x in c]


@shape("Q-TOOLCALLS-MISSING-IN-STREAM")
def _calls_missing(f, c, r):
    assert c and not deltas(f) and not content(f) and finishes(f) == ["stop"]


@shape("Q-REASONING-SAME-DELTA")
def _reasoning_with_call(f, c, r):
    assert any({"reasoning_content", "tool_calls"} <= set(ch["delta"]) for ch in choices(f))


@shape("Q-REASONING-LEAK-AT-FINISH")
def _reasoning_leak(f, c, r):
    (last,) = [ch for ch in choices(f) if ch["finish_reason"]]
    assert content(f, "reasoning_content") and last["delta"]["content"]


@shape("Q-OPENAI-MULTI-TOOL-USE-WRAPPER")
def _multi_tool_use(f, c, r):
    assert [a["name"] for a in assemble(f)] == ["multi_tool_use.parallel"]
    uses = json.loads(args_of(f, 0))["tool_uses"]
    assert [u["recipient_name"] for u in uses] == [f"functions.{x['name']}" for x in c]


@shape("Q-PARALLEL-TOOL-CALLS-IGNORED")
def _parallel_ignored(f, c, r):
    assert len(assemble(f)) >= 2 and len(assemble(r)) == 1


def test_every_streamed_quirk_has_a_shape_check():
    quirks = set().union(*(p.quirks for p in PROFILES.values() if p.mutations or p.ignore_strict))
    assert quirks | {"Q-PARALLEL-TOOL-CALLS-IGNORED"} <= set(SHAPES)


def _get(client: httpx.Client, base: str, profile: str, body: dict[str, Any]) -> bytes:
    root = base.removesuffix("/v1")
    r = client.post(f"{root}/p/{profile}/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    return r.content


@pytest.mark.parametrize("name", STREAMED)
def test_profile_stream_has_its_shape(name, base, client):
    profile = PROFILES[name]
    body = example_request(name) | {"seed": SEED, "model": "any-model"}
    raw = _get(client, base, name, body)
    frames = parse_sse(raw)
    reference = parse_sse(_get(client, base, "reference", body))
    plain = body | {"stream": False}
    plain.pop("stream_options", None)
    message = client.post(base + "/chat/completions", json=plain | {"model": name}).json()
    calls = [
        {"id": tc["id"], **tc["function"]}
        for tc in message["choices"][0]["message"].get("tool_calls") or []
    ]
    assert render_sse(frames) == raw  # the server writes exactly the frames it built
    if not (profile.ignore_parallel_false or profile.ignore_strict):
        # stalls are invisible in frames: compare bytes
        assert raw == render_sse(apply(reference, profile.mutations, SEED))
    shaped = profile.mutations or profile.ignore_parallel_false or profile.ignore_strict
    for quirk in profile.quirks if shaped else ():
        SHAPES[quirk](frames, calls, reference)


@pytest.mark.parametrize("name", STREAMED)
def test_same_request_same_bytes(name, base, client):
    body = example_request(name)
    first = post(client, base, body)
    second = post(client, base, body)
    assert first.status_code == 200 and first.content == second.content
    assert first.headers["x-conformance-seed"] == second.headers["x-conformance-seed"]


# --------------------------------------------------------------------------- the reference


def test_reference_stream_is_openai_shape(base, client):
    r = post(client, base, example_request("index-all-zero") | {"model": "reference"})
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.content.endswith(b"data: [DONE]\n\n")
    frames = parse_sse(r.content)
    assert isinstance(frames[-1], Done) and all(isinstance(f, dict) for f in frames[:-1])
    env = {k: chunks(frames)[0][k] for k in ("id", "object", "created", "model")}
    assert env["object"] == "chat.completion.chunk" and env["model"] == "reference"
    assert all({k: c[k] for k in env} == env for c in chunks(frames))
    assert choices(frames)[0]["delta"] == {"role": "assistant", "content": None}
    calls = assemble(frames)
    assert [c["name"] for c in calls] == ["get_weather", "get_time"]
    assert all(re.fullmatch(r"call_[A-Za-z0-9]{24}", c["id"]) for c in calls)
    assert [json.loads(c["arguments"]) for c in calls][0]["city"] == "Zürich"
    assert finishes(frames) == ["tool_calls"]
    assert chunks(frames)[-1]["choices"] == [] and chunks(frames)[-1]["usage"]["total_tokens"]
    for group in by_index(frames).values():
        assert set(group[0]) == {"index", "id", "type", "function"}
        assert group[0]["function"]["arguments"] == ""
        assert all(set(tc) == {"index", "function"} for tc in group[1:])
        assert all(1 <= len(tc["function"]["arguments"]) <= 12 for tc in group[1:])


def ask(**extra: Any) -> dict[str, Any]:
    body = example_request("index-all-zero") | {"model": "reference"}
    body.pop("stream_options")
    return body | extra


def stream(client, base, body) -> list[Frame]:
    r = post(client, base, body)
    assert r.status_code == 200, r.text
    return parse_sse(r.content)


def test_tool_choice_none_answers_in_text(base, client):
    frames = stream(client, base, ask(tool_choice="none"))
    assert not deltas(frames) and "Zürich" in content(frames) and finishes(frames) == ["stop"]
    assert choices(frames)[0]["delta"] == {"role": "assistant", "content": "", "refusal": None}


def test_no_tools_answers_in_text(base, client):
    frames = stream(client, base, ask(tools=[]))
    assert not deltas(frames) and content(frames) and finishes(frames) == ["stop"]


def test_tool_choice_required_and_named(base, client):
    assert assemble(stream(client, base, ask(tool_choice="required")))
    named = {"type": "function", "function": {"name": "get_time"}}
    calls = assemble(stream(client, base, ask(tool_choice=named)))
    assert [c["name"] for c in calls] == ["get_time"]
    unknown = {"type": "function", "function": {"name": "nope"}}
    assert post(client, base, ask(tool_choice=unknown)).status_code == 400


def test_parallel_calls_and_parallel_false(base, client):
    assert [c["name"] for c in assemble(stream(client, base, ask()))] == [
        "get_weather",
        "get_time",
    ]
    single = assemble(stream(client, base, ask(parallel_tool_calls=False)))
    assert len(single) == 1
    ignored = assemble(
        stream(client, base, ask(parallel_tool_calls=False, model="parallel-tool-calls-ignored"))
    )
    assert len(ignored) == 2


def test_one_tool_several_asks_gives_several_calls(base, client):
    body = ask(tools=ask()["tools"][:1])
    body["messages"][0]["content"] = "Weather in Zürich and in Kraków and in Tokyo, please"
    calls = assemble(stream(client, base, body))
    assert [json.loads(c["arguments"])["city"] for c in calls] == ["Zürich", "Kraków", "Tokyo"]


def test_non_ascii_user_text_reaches_string_arguments(base, client):
    body = ask(tools=[example_request("reference")["tools"][0] | {}])
    body["tools"][0] = json.loads(json.dumps(body["tools"][0]))
    body["tools"][0]["function"]["parameters"]["properties"]["note"] = {"type": "string"}
    body["tools"][0]["function"]["parameters"]["required"].append("note")
    body["messages"][0]["content"] = "Quel temps fait-il à Besançon ?"
    args = json.loads(assemble(stream(client, base, body))[0]["arguments"])
    assert args["city"] == "Besançon" and not args["note"].isascii()


def test_max_tokens_cuts_arguments_with_finish_length(base, client):
    full = assemble(stream(client, base, ask()))
    frames = stream(client, base, ask(max_tokens=3))
    cut = assemble(frames)
    assert finishes(frames) == ["length"]
    assert len(cut) == 1 and cut[0]["arguments"] == full[0]["arguments"][:12]
    assert not is_json_prefix(cut[0]["arguments"]) or cut[0]["arguments"] != full[0]["arguments"]


def test_include_usage_adds_the_usage_chunk(base, client):
    without = stream(client, base, ask())
    assert all("usage" not in c for c in chunks(without))
    frames = stream(client, base, ask(stream_options={"include_usage": True}))
    *rest, usage = chunks(frames)
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] == (
        usage["usage"]["prompt_tokens"] + usage["usage"]["completion_tokens"]
    )
    assert all(c["usage"] is None for c in rest)


def test_non_stream_is_openai_completion_with_the_same_calls(base, client):
    r = post(client, base, ask(stream=False))
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert body["object"] == "chat.completion" and body["usage"]["total_tokens"] > 0
    (choice,) = body["choices"]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    got = [{"id": tc["id"], **tc["function"]} for tc in choice["message"]["tool_calls"]]
    assert got == assemble(stream(client, base, ask()))


def test_unknown_model_and_prefix_and_models(base, client):
    r = post(client, base, ask(model="gpt-nope"))
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    root = base.removesuffix("/v1")
    r = client.post(root + "/p/ollama-parallel/v1/chat/completions", json=ask(model="x"))
    assert r.headers["x-conformance-profile"] == "ollama-parallel"
    assert {tc["index"] for tc in deltas(parse_sse(r.content))} == {0}
    models = client.get(base + "/models").json()
    assert {m["id"] for m in models["data"]} == set(PROFILES)
    assert client.get(base + "/models/ollama-parallel").json()["quirks"] == ["Q-INDEX-ALL-ZERO"]
    assert client.get(root + "/health").json()["status"] == "ok"
    assert post(client, base, {"model": "reference"}).status_code == 400


def test_latency_stall_and_interleave_knobs(base, client):
    t0 = time.perf_counter()
    post(client, base, ask(), **{"x-conformance-latency": "0.3"})
    assert time.perf_counter() - t0 >= 0.3
    t0 = time.perf_counter()
    stalled = post(
        client, base, ask(model="stream-stalls", seed=3), **{"x-conformance-stall": "0.3"}
    )
    assert time.perf_counter() - t0 >= 0.3
    plain = post(client, base, ask(model="reference", seed=3)).content
    assert stalled.content == plain.replace(b'"reference"', b'"stream-stalls"')
    frames = parse_sse(client.post(base + "/chat/completions?interleave=1", json=ask()).content)
    assert [tc["index"] for tc in deltas(frames)][:4] == [0, 1, 0, 1]
    assert assemble(frames) == assemble(stream(client, base, ask()))


# --------------------------------------------------------------------------- round trip


def first_turn(client, base, model="reference") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    body = ask(model=model)
    calls = assemble(stream(client, base, body))
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in calls
        ],
    }
    results = [
        {"role": "tool", "tool_call_id": c["id"], "content": f"{c['name']}: 21°C"} for c in calls
    ]
    return body["messages"] + [assistant] + results, body


@pytest.mark.parametrize("streaming", [True, False])
def test_round_trip_is_answered_in_text(base, client, streaming):
    messages, body = first_turn(client, base)
    r = post(client, base, body | {"messages": messages, "stream": streaming})
    assert r.status_code == 200
    if streaming:
        frames = parse_sse(r.content)
        assert not deltas(frames) and "21°C" in content(frames) and finishes(frames) == ["stop"]
    else:
        assert "21°C" in r.json()["choices"][0]["message"]["content"]


def test_round_trip_with_a_missing_or_foreign_result_is_400(base, client):
    messages, body = first_turn(client, base)
    r = post(client, base, body | {"messages": messages[:-1]})
    assert r.status_code == 400 and "did not have response messages" in r.json()["error"]["message"]
    wrong = messages[:-1] + [messages[-1] | {"tool_call_id": "call_other"}]
    r = post(client, base, body | {"messages": wrong})
    assert r.status_code == 400 and "must be a response" in r.json()["error"]["message"]


def _with(messages, fn):
    out = json.loads(json.dumps(messages))
    for m in out:
        fn(m)
    return out


def _remap(m):
    for tc in m.get("tool_calls") or []:
        tc["id"] = "abcDEF" + tc["id"][-3:]
    if m.get("role") == "tool":
        m["tool_call_id"] = "abcDEF" + m["tool_call_id"][-3:]


def _assistant(key, value):
    def edit(m):
        if m["role"] == "assistant":
            if value is KeyError:
                m.pop(key, None)
            else:
                m[key] = value

    return edit


def _tool_name(m):
    if m["role"] == "tool":
        m["name"] = m["content"].split(":")[0]


def _no_function_name(m):
    for tc in m.get("tool_calls") or []:
        del tc["function"]["name"]


REJECTIONS = {
    # profile: (edit that makes the history acceptable, edit that it rejects, error text)
    "rt-mistral-id": (_remap, lambda m: None, "with a length of 9"),
    "rt-content-null": (_assistant("content", ""), lambda m: None, "'content' field must be"),
    "rt-content-empty": (
        _assistant("content", KeyError),
        _assistant("content", ""),
        "must be non-empty",
    ),
    "rt-tool-name-required": (_tool_name, lambda m: None, "invalid argument"),
    "rt-tool-name-forbidden": (lambda m: None, _tool_name, "is not supported"),
    "rt-function-name-key": (lambda m: None, _no_function_name, "missing field"),
}


@pytest.mark.parametrize("name", sorted(REJECTIONS))
def test_round_trip_rejection_profiles(name, base, client):
    good, bad, text = REJECTIONS[name]
    messages, body = first_turn(client, base, model=name)
    rejected = post(client, base, body | {"messages": _with(messages, bad)})
    assert rejected.status_code == 400 and text in rejected.text
    accepted = post(client, base, body | {"messages": _with(messages, good)})
    assert accepted.status_code == 200, accepted.text
    assert "21°C" in content(parse_sse(accepted.content))


def test_request_fault_profiles(base, client):
    r = post(client, base, ask(model="stream-tools-unsupported"))
    assert r.status_code == 500 and "Cannot use tools with stream" in r.text
    assert post(client, base, ask(model="stream-tools-unsupported", stream=False)).is_success
    r = post(client, base, ask(model="stream-downgraded"))
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["object"] == "chat.completion"
    opts = {"include_usage": True}
    r = post(client, base, ask(model="stream-options-rejected", stream_options=opts))
    assert r.status_code == 400 and "include_usage" in r.text
    assert post(client, base, ask(model="stream-options-rejected")).status_code == 200


# --------------------------------------------------------------------------- with the analyzer


@pytest.mark.parametrize("name", STREAMED)
def test_analysis_reports_what_the_profile_injects(name):
    analysis = pytest.importorskip("conformance.analysis")
    body = example_request(name)
    reply = respond(PROFILES[name], body)
    from conformance.readers import exchange_transcript
    from conformance.runner import _stream_comparison

    def send(b: dict, tag: str):  # the profile's answer to the runner's stream-false request
        plain = respond(PROFILES[name], b)
        raw = json.dumps(plain.body).encode()
        json_head = {"content-type": "application/json"}
        return exchange_transcript(name, "live", {"body": b}, plain.status, json_head, raw)

    sse = {"content-type": "text/event-stream"}
    t = exchange_transcript(name, "sse", {"body": body}, 200, sse, render_sse(reply.frames))
    t.meta["stream_comparison"], _ = _stream_comparison(send, body)
    result = analysis.analyze(t)
    from conformance import registry
    from conformance.rules import INFO, quirk_level

    profile = PROFILES[name]
    got = set(result.quirks)
    assert profile.expected <= got, f"missed {sorted(profile.expected - got)}"
    # Exactly the profile's quirk(s): besides what they imply, only INFO-level notes
    # (reference behaviour such as the usage chunk, cosmetic id formats) may appear.
    implied = {c for q in profile.expected for c in registry.implied(q)}
    extra = {q for q in got - profile.expected - implied if quirk_level(q) != INFO}
    assert not extra, f"also reported {sorted(extra)}"


def test_docs_list_every_profile():
    from pathlib import Path

    docs = (Path(__file__).parent.parent / "docs" / "server.md").read_text()
    assert not [name for name in PROFILES if f"| `{name}` |" not in docs]


def test_openai_sdk_meets_the_catalogued_failures(base):
    """The official SDK's own accumulator, as the catalogue describes it, against real HTTP."""
    openai = pytest.importorskip("openai")
    sdk = openai.OpenAI(base_url=base, api_key="unused")

    def final(profile: str):
        body = {k: v for k, v in example_request(profile).items() if k != "stream"}
        with sdk.chat.completions.stream(**body) as events:
            for _ in events:
                pass
            return events.get_final_completion().choices[0].message.tool_calls

    (call,) = final("reference")
    assert call.function.name == "get_weather" and json.loads(call.function.arguments)
    (merged,) = final("ollama-parallel")  # two calls on index 0: concatenated into one
    assert merged.function.name == "get_weatherget_time"
    with pytest.raises(TypeError, match="NoneType"):  # Q-INDEX-ABSENT-WHOLE-CALL's symptom
        final("ollama-legacy")
