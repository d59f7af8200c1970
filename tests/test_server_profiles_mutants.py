"""The reference-profile server's profiles: every recorded answer is what the profile serves
today, byte for byte; the round-trip rejections' statuses and bodies; what each profile
injects, expects and needs from a request (mutation testing, #29)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance import registry
from conformance.mutations import MUTATIONS, Stall, render_frame
from conformance.profile_columns import LIVE_ONLY
from conformance.server.app import respond
from conformance.server.profiles import (
    PROFILES,
    ROUND_TRIP_CHECKS,
    Profile,
    _build,
    example_request,
    profile_name,
)
from conformance.server.streams import RequestError

ROOT = Path(__file__).resolve().parents[1]
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@pytest.fixture
def profiles() -> dict[str, Profile]:
    """The registry built afresh (milliseconds): the served one is built at import, before
    mutmut picks a mutant, so the tests judge a fresh build against the facts."""
    return _build()


def _interactions() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path in sorted((ROOT / "cassettes" / "_profiles").rglob("*.yaml")):
        doc = yaml.load(path.read_text("utf-8"), Loader=LOADER)
        out += [(path.parent.name, path.name, it) for it in doc["interactions"]]
    return out


# ------------------------------------------------------------------- the recordings


def test_every_recorded_answer_is_what_a_freshly_built_profile_serves(
    profiles: dict[str, Profile],
) -> None:
    """The committed cassettes of `nox -s profiles` were recorded over HTTP from this
    server: the same request gets the same status and bytes (a stall cuts the recording
    where the client's idle timeout gave up)."""
    seen: set[str] = set()
    statuses: set[int] = set()
    for name, file, it in _interactions():
        seen.add(name)
        reply = respond(profiles[name], json.loads(it["request"]["body"]))
        code, raw = it["response"]["status"]["code"], it["response"]["body"]["string"]
        statuses.add(code)
        assert reply.status == code, (name, file)
        if reply.frames is None:
            assert reply.body == json.loads(raw), (name, file)
            continue
        whole = b"".join(render_frame(f) for f in reply.frames if not isinstance(f, Stall))
        if name in LIVE_ONLY:  # the recording ends where the client gave up waiting
            cut = reply.frames.index(next(f for f in reply.frames if isinstance(f, Stall)))
            whole = b"".join(render_frame(f) for f in reply.frames[:cut])
        assert whole.decode("utf-8") == raw, (name, file)
    assert seen == set(profiles)  # every profile has its recording
    assert statuses == {200, 400, 500}


def test_the_committed_profile_columns_expect_what_each_built_profile_injects(
    profiles: dict[str, Profile],
) -> None:
    from conformance.profile_columns import NOT_TRIPPED

    doc = json.loads((ROOT / "reports" / "quirks-matrix.json").read_text("utf-8"))
    cols = {c["id"]: c for c in doc["columns"] if c["kind"] == "reference-profile"}
    assert set(cols) == {f"profile:{n}" for n in profiles}
    for name, p in profiles.items():
        want = set() if name in NOT_TRIPPED else set(p.expected or p.quirks)
        assert set(cols[f"profile:{name}"]["expected_quirks"]) == want, name
    served = {c["column"]: c for c in doc["cells"] if c["column"] in cols}
    shape = served["profile:delta-shape-load-dependent"]
    assert set(profiles["delta-shape-load-dependent"].expected) <= set(shape["quirks"])


# ------------------------------------------------------------------------ the profiles


def test_a_built_single_quirk_profile_is_named_after_its_id_and_injects_it(
    profiles: dict[str, Profile],
) -> None:
    p = profiles["index-all-zero"]
    assert p == Profile(
        "index-all-zero",
        (MUTATIONS["Q-INDEX-ALL-ZERO"].__doc__ or "").strip().split(": ", 1)[-1],
        mutations=("Q-INDEX-ALL-ZERO",),
        quirks=frozenset({"Q-INDEX-ALL-ZERO"}),
        expected=frozenset({"Q-INDEX-ALL-ZERO"}),
        needs="parallel",
    )
    assert not p.description.startswith("Q-") and p.description
    assert profile_name("Q-INDEX-ALL-ZERO") == "index-all-zero"
    assert profile_name("Q-ARGS-NULL") == "args-null"
    assert profile_name("X-Q-A") == "x-q-a"  # only the leading Q- goes
    # every id the transforms know is a profile of its own name
    assert all(profile_name(q) in profiles for q in MUTATIONS if q.startswith("Q-"))
    assert list(profiles)[0] == "reference" and len(profiles) == 88
    assert profiles["reference"] == Profile(
        "reference", "OpenAI's stream shape exactly; the conforming control."
    )


def test_what_a_built_profile_expects_when_its_id_is_not_in_the_bytes(
    profiles: dict[str, Profile],
) -> None:
    shape = profiles["delta-shape-load-dependent"]
    assert shape.quirks == {
        "Q-DELTA-SHAPE-LOAD-DEPENDENT",
        "Q-ARGS-ON-OPENING-DELTA",
        "Q-FINISH-SAME-CHUNK-AS-CALL",
    }
    assert shape.expected == {"Q-ARGS-ON-OPENING-DELTA", "Q-FINISH-SAME-CHUNK-AS-CALL"}
    held = profiles["toolcall-held-until-finish"]
    assert held.quirks == {"Q-TOOLCALL-HELD-UNTIL-FINISH", "Q-ARGS-NOT-PROGRESSIVE"}
    assert held.expected == frozenset()  # timing evidence: neither id is in the bytes
    assert profiles["stream-stalls"].expected == frozenset()
    assert profiles["args-closed-on-truncation"].expected == frozenset()
    named = profiles["finish-stop-named-toolchoice"]
    assert (named.when, named.needs) == ("named", "named")
    assert profiles["index-all-zero"].when is None
    assert named.description == (
        'OpenAI itself: with a named tool_choice the calls end with finish_reason "stop" '
        "(only applied when tool_choice names a function)."
    )
    assert shape.description.startswith("the reference stream's calls as a busy server")
    assert profiles["args-closed-on-truncation"].description.startswith(
        "the last call cut inside its arguments and closed as valid JSON"
    )


def test_the_built_provider_shapes_and_faults(profiles: dict[str, Profile]) -> None:
    dash = profiles["dashscope-compatible"]
    assert dash.mutations == ("Q-EMPTY-STRING-OVERWRITE",)
    assert dash.quirks == dash.expected == {"Q-EMPTY-STRING-OVERWRITE"}
    assert dash.description.startswith("Alibaba compatible-mode: the real id and name first")
    for name, quirk in (
        ("ollama-parallel", "Q-INDEX-ALL-ZERO"),
        ("ollama-legacy", "Q-INDEX-ABSENT"),
        ("qwen-truncated", "Q-ARGS-TRUNCATED"),
        ("id-omitted", "Q-ID-ABSENT"),
    ):
        assert profiles[name].mutations == (quirk,) and profiles[name].expected == {quirk}
    assert profiles["ollama-parallel"].needs == "parallel"
    ignored = profiles["parallel-tool-calls-ignored"]
    assert ignored.ignore_parallel_false and ignored.needs == "parallel-false"
    assert ignored.expected == {"Q-PARALLEL-TOOL-CALLS-IGNORED"} and ignored.mutations == ()
    sse = profiles["sse-error-event"]
    assert sse.mutations == ("sse-error-event",) and sse.expected == {"Q-SSE-ERROR-ENVELOPE"}
    faults = {n: p.fault for n, p in profiles.items() if p.fault}
    assert faults == {
        "stream-tools-unsupported": "tools-unsupported",
        "stream-downgraded": "downgraded",
        "stream-options-rejected": "stream-options-rejected",
    }
    assert all(profiles[n].expected == frozenset() for n in faults)
    strict = profiles["strict-ignored"]
    assert strict.ignore_strict and strict.needs == "strict"
    assert strict.quirks == {"Q-STRICT-IGNORED"} and strict.expected == frozenset()
    assert not any(p.ignore_strict for n, p in profiles.items() if n != "strict-ignored")
    assert not any(
        p.ignore_parallel_false for n, p in profiles.items() if n != "parallel-tool-calls-ignored"
    )


def test_the_built_round_trip_profiles_name_their_check_and_their_id(
    profiles: dict[str, Profile],
) -> None:
    rt = {
        n: (p.round_trip, sorted(p.quirks), p.mutations)
        for n, p in profiles.items()
        if p.round_trip
    }
    assert rt == {
        "rt-mistral-id": (("mistral-id",), ["Q-RT-MISTRAL-TOOL-CALL-ID"], ()),
        "rt-content-null": (("content-null",), ["Q-RT-CONTENT-NULL-REJECTED"], ()),
        "rt-content-empty": (("content-empty",), ["Q-RT-CONTENT-EMPTY-REJECTED"], ()),
        "rt-tool-name-required": (("tool-name-required",), ["Q-RT-TOOL-MESSAGE-NAME"], ()),
        "rt-tool-name-forbidden": (("tool-name-forbidden",), ["Q-RT-TOOL-MESSAGE-NAME"], ()),
        "rt-function-name-key": (
            ("function-name-key",),
            ["Q-RT-FUNCTION-NAME-KEY-REQUIRED"],
            (),
        ),
        "rt-reasoning-echo": (
            ("reasoning-echo",),
            ["Q-REASONING-MUST-BE-ECHOED"],
            ("reasoning-first",),
        ),
        "rt-thought-signature": (
            ("thought-signature",),
            ["Q-RT-GEMINI-THOUGHT-SIGNATURE"],
            ("thought-signature",),
        ),
    }
    assert all(profiles[n].expected == frozenset() for n in rt)
    assert set(ROUND_TRIP_CHECKS) == {c for checks, _, _ in rt.values() for c in checks}
    assert profiles["rt-mistral-id"].description == (
        "the next turn is rejected unless every tool call id matches ^[a-zA-Z0-9]{9}$ (Mistral)."
    )


def test_every_built_profile_names_catalogued_ids_only(profiles: dict[str, Profile]) -> None:
    for p in profiles.values():
        registry.check_ids(p.quirks | p.expected, p.name)
        assert p.expected <= p.quirks, p.name
        assert p.description.strip() == p.description and p.description, p.name


# What `GET /v1/models` serves as each hand-written profile's description (the others are
# their transform's docstring without the id).
DESCRIPTIONS = {
    "reference": "OpenAI's stream shape exactly; the conforming control.",
    "delta-shape-load-dependent": "the reference stream's calls as a busy server groups them "
    "(several fragments per delta, the first on the opening delta, the last with "
    "finish_reason; vLLM under load or at several tokens per step): the same calls as "
    "`reference`, so a client tested against both has seen the idle and the loaded shape.",
    "args-closed-on-truncation": "the last call cut inside its arguments and closed as valid "
    'JSON (a key dropped), finish_reason "length" (vLLM\'s llama3_json parser): one stream '
    "reads like a model that finished its JSON at the limit, so no id is expected from the "
    "bytes; a client must still refuse to execute it.",
    "finish-stop-named-toolchoice": "OpenAI itself: with a named tool_choice the calls end with "
    'finish_reason "stop" (only applied when tool_choice names a function).',
    "parallel-tool-calls-ignored": "several calls although parallel_tool_calls is false (vLLM).",
    "dashscope-compatible": 'Alibaba compatible-mode: the real id and name first, then id "" '
    'and name "" on every continuation delta (the wire-format reference\'s provider quirks).',
    "ollama-parallel": "Ollama: index 0 for every parallel call, each with its own id "
    "(LibreChat's index-repair fix).",
    "ollama-legacy": "Ollama before v0.4.7: no index on any tool-call delta (LibreChat's "
    "index-repair fix).",
    "qwen-truncated": "Qwen/DashScope: the arguments stop short of valid JSON, finish_reason "
    "still tool_calls (the wire-format reference's JSON repair).",
    "id-omitted": "Some Ollama models: the opening delta carries no id (the wire-format "
    "reference's provider quirks).",
    "sse-error-event": "An `event: error` SSE event with an error body mid-call, nothing after.",
    "stream-tools-unsupported": "stream with tools answered HTTP 500 (old llama.cpp).",
    "stream-downgraded": "stream:true answered with a JSON chat.completion (LocalAI, LMDeploy).",
    "stream-options-rejected": "any stream_options answered HTTP 400 (Bedrock via LiteLLM).",
    "rt-mistral-id": "the next turn is rejected unless every tool call id matches "
    "^[a-zA-Z0-9]{9}$ (Mistral).",
    "rt-content-null": "an assistant tool-call message with content null is rejected "
    "(LM Studio, Ollama).",
    "rt-content-empty": 'an assistant tool-call message with content "" is rejected '
    "(Bedrock-backed endpoints).",
    "rt-tool-name-required": "tool messages without name are rejected (Gemini compat).",
    "rt-tool-name-forbidden": "tool messages with name are rejected (OpenCode Go relay).",
    "rt-function-name-key": "replayed tool calls without a function.name key are rejected "
    "(DeepSeek).",
    "rt-reasoning-echo": "streams reasoning before the calls; a round trip without the turn's "
    "reasoning_content is rejected (DeepSeek thinking mode).",
    "rt-thought-signature": "each call carries extra_content.google.thought_signature; a round "
    "trip without it is rejected (Gemini 3 via the OpenAI-compatible endpoint).",
    "strict-ignored": "`strict: true` is accepted but the arguments break the schema: an "
    "undeclared property is added (Anthropic's OpenAI-SDK compatibility layer, documented).",
}


def test_the_models_list_describes_each_profile(profiles: dict[str, Profile]) -> None:
    for name, p in profiles.items():
        q = p.mutations[0] if p.mutations else ""
        doc = (MUTATIONS[q].__doc__ or "").strip() if q.startswith("Q-") else ""
        want = DESCRIPTIONS.get(name) or doc.split(": ", 1)[1]
        assert p.description == want, name


# ------------------------------------------------------------------- round-trip checks


def _history(
    call_id: Any = "abc123XYZ",
    *,
    content: Any = ...,
    tool: dict[str, Any] | None = None,
    function: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    call: dict[str, Any] = {
        "id": call_id,
        "type": "function",
        "function": function if function is not None else {"name": "f", "arguments": "{}"},
    }
    if extra is not None:
        call["extra_content"] = extra
    assistant: dict[str, Any] = {"role": "assistant", "tool_calls": [call]}
    if content is not ...:
        assistant["content"] = content
    return [
        {"role": "user", "content": "hi"},
        assistant,
        {"role": "tool", "tool_call_id": call_id, "content": "ok", **(tool or {})},
    ]


def _rejects(check: str, messages: list[dict[str, Any]]) -> RequestError:
    error = ROUND_TRIP_CHECKS[check](messages)
    assert error is not None
    return error


def _error(message: str) -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": None,
        }
    }


def test_mistral_ids_are_nine_letters_or_digits_everywhere_they_appear() -> None:
    check = ROUND_TRIP_CHECKS["mistral-id"]
    assert check(_history("abc123XYZ")) is None
    assert check([{"role": "user", "content": "no calls yet"}]) is None
    for bad in ("call_abc123", "abc123XY", "abc123XYZ0", "abc-23XYZ", None, 123456789):
        e = _rejects("mistral-id", _history(bad))
        assert e.status == 400
        assert e.body == {
            "object": "error",
            "message": f"Tool call id was {bad} but must be a-z, A-Z, 0-9, with a length of 9.",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    # the tool message's id is checked too
    msgs = _history("abc123XYZ")
    msgs[2]["tool_call_id"] = "call_x"
    assert "was call_x but" in _rejects("mistral-id", msgs).body["message"]
    msgs = _history("call_x")
    msgs[2]["tool_call_id"] = "abc123XYZ"  # the assistant's own call ids are checked
    assert "was call_x but" in _rejects("mistral-id", msgs).body["message"]
    # a user message with an odd id is not a tool call
    assert check([{"role": "user", "tool_call_id": "nope"}]) is None


def test_content_null_or_empty_on_an_assistant_tool_call_turn() -> None:
    null, empty = ROUND_TRIP_CHECKS["content-null"], ROUND_TRIP_CHECKS["content-empty"]
    assert null(_history()) is None and empty(_history()) is None  # no content key
    assert null(_history(content="")) is None and empty(_history(content=None)) is None
    e = _rejects("content-null", _history(content=None))
    assert (e.status, e.body) == (
        400,
        _error("Invalid 'content': 'content' field must be a string or an array of objects."),
    )
    e = _rejects("content-empty", _history(content=""))
    assert (e.status, e.body) == (
        400,
        _error("ValidationException: messages: text content blocks must be non-empty"),
    )
    # an assistant turn without calls is not the one these servers check
    plain = [{"role": "assistant", "content": None}, {"role": "assistant", "content": ""}]
    assert null(plain) is None and empty(plain) is None
    no_calls = [{"role": "assistant", "content": None, "tool_calls": []}]
    assert null(no_calls) is None


def test_a_tool_message_name_required_or_forbidden() -> None:
    required, forbidden = (
        ROUND_TRIP_CHECKS["tool-name-required"],
        ROUND_TRIP_CHECKS["tool-name-forbidden"],
    )
    named = _history(tool={"name": "f"})
    assert required(named) is None and forbidden(_history()) is None
    e = _rejects("tool-name-required", _history())
    assert (e.status, e.body) == (
        400,
        {
            "error": {
                "code": 400,
                "message": "Request contains an invalid argument.",
                "status": "INVALID_ARGUMENT",
            }
        },
    )
    assert _rejects("tool-name-required", _history(tool={"name": ""})).status == 400
    e = _rejects("tool-name-forbidden", named)
    assert (e.status, e.body) == (
        400,
        _error('messages[2]: "name" is not supported by this endpoint'),
    )
    assert _rejects("tool-name-forbidden", _history(tool={"name": ""})).status == 400
    assert required([{"role": "user", "content": "x"}]) is None


def test_replayed_calls_need_a_function_name_key() -> None:
    check = ROUND_TRIP_CHECKS["function-name-key"]
    assert check(_history(function={"name": "", "arguments": "{}"})) is None  # the key is there
    e = _rejects("function-name-key", _history(function={"arguments": "{}"}))
    assert (e.status, e.body) == (400, _error("messages[1]: missing field `name`"))
    msgs = _history()
    msgs[1]["tool_calls"][0].pop("function")
    assert _rejects("function-name-key", msgs).body == _error("messages[1]: missing field `name`")
    msgs = _history()
    msgs[1]["tool_calls"].append({"id": "b", "function": {"arguments": "{}"}})  # the second
    assert _rejects("function-name-key", msgs).status == 400


def test_reasoning_must_be_echoed_on_a_call_turn() -> None:
    check = ROUND_TRIP_CHECKS["reasoning-echo"]
    msgs = _history()
    msgs[1]["reasoning_content"] = "I thought"
    assert check(msgs) is None
    for missing in (None, ""):
        msgs[1]["reasoning_content"] = missing
        e = _rejects("reasoning-echo", msgs)
        assert (e.status, e.body) == (
            400,
            _error("The `reasoning_content` in the thinking mode must be passed back to the API."),
        )
    assert check([{"role": "assistant", "content": "no calls"}]) is None


def test_each_call_must_carry_its_thought_signature_back() -> None:
    check = ROUND_TRIP_CHECKS["thought-signature"]
    assert check(_history(extra={"google": {"thought_signature": "sig"}})) is None
    for extra in (
        None,
        {},
        {"google": None},
        {"google": {}},
        {"google": {"thought_signature": ""}},
    ):
        e = _rejects("thought-signature", _history(extra=extra))
        assert (e.status, e.body) == (
            400,
            {
                "error": {
                    "code": 400,
                    "status": "INVALID_ARGUMENT",
                    "message": "Function call is missing a thought_signature in functionCall parts.",
                }
            },
        )


def test_a_profile_runs_its_own_checks_only_and_raises_the_first() -> None:
    history = _history("call_x", content=None)
    PROFILES["reference"].check_round_trip(history)  # no check: accepted
    PROFILES["rt-content-empty"].check_round_trip(history)
    with pytest.raises(RequestError) as e:
        PROFILES["rt-mistral-id"].check_round_trip(history)
    assert "call_x" in e.value.body["message"]
    both = Profile("x", "", round_trip=("content-null", "mistral-id"))
    with pytest.raises(RequestError) as e:
        both.check_round_trip(history)
    assert e.value.body["error"]["message"].startswith("Invalid 'content'")


def test_a_named_profile_applies_only_when_tool_choice_names_a_function() -> None:
    named = PROFILES["finish-stop-named-toolchoice"]
    assert named.applies({"tool_choice": {"type": "function", "function": {"name": "f"}}})
    assert not named.applies({"tool_choice": "required"})
    assert not named.applies({})
    assert PROFILES["index-all-zero"].applies({})
    assert PROFILES["index-all-zero"].applies({"tool_choice": "none"})


# ------------------------------------------------------------------- example requests


def test_the_example_request_elicits_what_each_profile_needs() -> None:
    base = example_request("id-absent")
    assert base == {
        "model": "id-absent",
        "messages": [{"role": "user", "content": "What's the weather in Zürich?"}],
        "tools": [base["tools"][0]],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    weather = base["tools"][0]["function"]
    assert weather["name"] == "get_weather"
    assert weather["parameters"]["required"] == ["city", "unit"]
    assert weather["parameters"]["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]
    par = example_request("index-all-zero")
    assert par["messages"][0]["content"] == "What's the weather in Zürich and the time in Tokyo?"
    assert [t["function"]["name"] for t in par["tools"]] == ["get_weather", "get_time"]
    assert par["tools"][1]["function"]["parameters"]["required"] == ["timezone"]
    assert "parallel_tool_calls" not in par and "tool_choice" not in par
    off = example_request("parallel-tool-calls-ignored")
    assert off["parallel_tool_calls"] is False and len(off["tools"]) == 2
    none = example_request("args-absent-no-params")
    assert none["messages"][0]["content"] == "Is the service up?"
    assert [t["function"]["name"] for t in none["tools"]] == ["get_status"]
    assert none["tools"][0]["function"]["parameters"] == {"type": "object", "properties": {}}
    assert example_request("required-not-enforced")["tool_choice"] == "required"
    assert example_request("finish-stop-named-toolchoice")["tool_choice"] == {
        "type": "function",
        "function": {"name": "get_weather"},
    }
    strict = example_request("strict-ignored")["tools"]
    assert len(strict) == 1 and strict[0]["type"] == "function"
    fn = strict[0]["function"]
    assert fn["strict"] is True and fn["name"] == "get_weather"
    assert fn["parameters"]["additionalProperties"] is False
    assert fn["parameters"]["required"] == ["city", "unit"]
    assert "additionalProperties" not in weather["parameters"]  # the shared tool untouched
    # stream_options only on a stream, never to the profile that rejects it
    assert "stream_options" not in example_request("stream-options-rejected")
    plain = example_request("id-absent", stream=False)
    assert plain["stream"] is False and "stream_options" not in plain


def test_each_example_request_shows_the_profiles_quirk() -> None:
    from conformance.analysis import analyze_bytes

    for name in ("index-all-zero", "args-absent-no-params", "finish-stop-named-toolchoice"):
        request = example_request(name)
        reply = respond(PROFILES[name], request)
        body = b"".join(render_frame(f) for f in reply.frames or [] if not isinstance(f, Stall))
        assert PROFILES[name].expected <= set(analyze_bytes(body, request=request).quirks), name
