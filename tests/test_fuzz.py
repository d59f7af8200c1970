"""Fuzzing the analyzer with hypothesis: nothing raises, and bytes never matter.

Streams come from a grammar of tool-call deltas (OpenAI's reference shape: an opener
with id/type/name and ``arguments: ""``, then argument fragments, a finish chunk, usage,
``[DONE]``), rendered to SSE with varied framing (``data:`` with and without a space,
LF or CRLF, comments, extra blank lines). From there: mutated streams (field drops, type
swaps, duplicated / removed / swapped events, junk lines), truncated streams, and
arbitrary bytes. Properties:

- ``analyze`` / ``analyze_bytes`` / ``analyze_chunks`` never raise, and the result is JSON;
- a valid stream conforms, and every strategy assembles exactly the generated calls;
- re-chunking never changes anything: the same findings (``f.to_json()``, event numbers
  included), the same robust calls, verdict and finish_reason, whether the bytes arrive
  whole, in arbitrary blocks, one byte at a time, or split at any single byte boundary
  (fed through ``conformance.sse.iter_sse(blocks)``).

Each property runs 1,000 examples (``max_examples=1000, deadline=None``) in CI (``CI`` set,
as ``.ci/run`` runs) and with ``CONFORMANCE_FUZZ=full``; the developer loop (``python3
noxw -s tests`` on a workstation) runs a tenth of them (100, Hypothesis' own default), and
hypothesis' database replays any failing example it found before. The fuzz tests were
more than half of that loop, and at a fifth still its largest module.

Files, structure-aware (300 examples each; a tenth in the developer loop): valid vcrpy and go-vcr (v1, v2) cassettes and
HAR files with nodes replaced by values of another type, deleted or wrapped in a list, and
SSE files with odd framing, go through ``read_path`` and ``analyze``: a result or one
``InputError`` line naming the file, never another exception.
"""

from __future__ import annotations

import copy
import json
import os
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.analysis import CaptureResult, analyze, analyze_bytes, analyze_chunks
from conformance.sse import iter_sse
from conformance.transcript import Transcript

DEPTH = 1.0 if os.environ.get("CI") or os.environ.get("CONFORMANCE_FUZZ") == "full" else 0.1
FUZZ = settings(
    max_examples=int(1000 * DEPTH),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
VERDICTS = {"conforms", "quirk", "fails", "error"}


NAMES = ("get_weather", "get_time", "write_note", "ping", "lookup_ü")
ALNUM = string.ascii_letters + string.digits

# ------------------------------------------------------------------ the grammar

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=12),
)
arguments = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.one_of(
        json_scalars,
        st.lists(json_scalars, max_size=3),
        st.dictionaries(st.text(max_size=4), json_scalars, max_size=2),
    ),
    max_size=4,
)


@st.composite
def fragments(draw: Any, text: str) -> list[str]:
    """``text`` cut at arbitrary character positions (empty pieces allowed)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    pieces, last = [], 0
    for c in cuts:
        pieces.append(text[last:c])
        last = c
    pieces.append(text[last:])
    return [p for p in pieces if p] or [text]


@st.composite
def call_plans(draw: Any) -> list[dict[str, Any]]:
    n = draw(st.integers(1, 3))
    calls = []
    for i in range(n):
        args = json.dumps(draw(arguments), ensure_ascii=draw(st.booleans()))
        calls.append(
            {
                "index": i,
                "id": "call_" + draw(st.text(ALNUM, min_size=24, max_size=24)),
                "name": draw(st.sampled_from(NAMES)),
                "arguments": args,
                "pieces": draw(fragments(args)),
            }
        )
    return calls


def envelope(cid: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 1767778776,
        "model": "fuzz-model",
        "system_fingerprint": "fp_fuzz",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


@st.composite
def valid_streams(draw: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], bool]:
    """(chunks, the calls they carry, usage asked): OpenAI's reference shape."""
    calls = draw(call_plans())
    cid = "chatcmpl-" + draw(st.text(ALNUM, min_size=10, max_size=10))
    chunks = [envelope(cid, {"role": "assistant", "content": None})]
    for c in calls:
        chunks.append(
            envelope(
                cid,
                {
                    "tool_calls": [
                        {
                            "index": c["index"],
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": ""},
                        }
                    ]
                },
            )
        )
        for piece in c["pieces"]:
            chunks.append(
                envelope(
                    cid, {"tool_calls": [{"index": c["index"], "function": {"arguments": piece}}]}
                )
            )
    chunks.append(envelope(cid, {}, "tool_calls"))
    usage = draw(st.booleans())
    if usage:
        chunks.append(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": 1767778776,
                "model": "fuzz-model",
                "system_fingerprint": "fp_fuzz",
                "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )
    return chunks, calls, usage


def request_for(calls: list[dict[str, Any]], usage: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "fuzz-model",
        "stream": True,
        "messages": [{"role": "user", "content": "call the tools"}],
        "tools": [
            {
                "type": "function",
                "function": {"name": n, "parameters": {"type": "object", "properties": {}}},
            }
            for n in NAMES
        ],
    }
    if usage:
        body["stream_options"] = {"include_usage": True}
    return body


@st.composite
def framings(draw: Any, comments: bool = True) -> dict[str, Any]:
    """SSE framing variants. A comment line is a catalogued quirk
    (Q-SSE-COMMENT-KEEPALIVE), not reference behaviour: off for the "conforms" check."""
    return {
        "space": draw(st.booleans()),
        "crlf": draw(st.booleans()),
        "ascii": draw(st.booleans()),
        "compact": draw(st.booleans()),
        "comments": comments and draw(st.booleans()),
        "done": True,
    }


def render(chunks: list[Any], f: dict[str, Any]) -> bytes:
    nl = "\r\n" if f["crlf"] else "\n"
    out = []
    if f["comments"]:
        out.append(": keep-alive" + nl + nl)
    for c in chunks:
        if isinstance(c, _Raw):
            out.append(c.text)
            continue
        data = json.dumps(
            c, ensure_ascii=f["ascii"], separators=(",", ":") if f["compact"] else None
        )
        out.append(("data: " if f["space"] else "data:") + data + nl + nl)
    if f["done"]:
        out.append(("data: " if f["space"] else "data:") + "[DONE]" + nl + nl)
    return "".join(out).encode("utf-8")


class _Raw:
    """A junk line inserted between events by a mutation."""

    def __init__(self, text: str):
        self.text = text


# ------------------------------------------------------------------ mutations

SWAPS: list[Any] = [None, 0, -1, 1.5, "", "x", [], {}, True, [None], {"a": 1}, "0", 10**20]
JUNK = [
    "data: not json\n\n",
    'data: {"truncated": \n\n',
    ": comment\n\n",
    "event: error\n",
    "data: [DONE]\n\n",
    "\n\n\n",
    "id: 7\nretry: 10\n",
    "data: 42\n\n",
    "data: null\n\n",
    'data: {"error": {"message": "boom"}}\n\n',
    "data:\n\n",
    "garbage-line\n",
    'data: "\\ud800"\n\n',
    'data: {"choices": 5}\n\n',
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, prefix + (i,))
    return out


def _parent(value: Any, path: tuple[Any, ...]) -> Any:
    for p in path[:-1]:
        value = value[p]
    return value


mutation_ops = st.lists(
    st.tuples(
        st.sampled_from(["drop", "swap", "dup", "remove", "reorder", "junk", "empty-delta"]),
        st.integers(0, 10**6),
        st.integers(0, 10**6),
        st.integers(0, 10**6),
    ),
    min_size=1,
    max_size=5,
)


def mutate(chunks: list[dict[str, Any]], ops: list[tuple[str, int, int, int]]) -> list[Any]:
    out: list[Any] = json.loads(json.dumps(chunks))  # a deep copy
    for kind, a, b, c in ops:
        if not out:
            break
        i = a % len(out)
        target = out[i]
        if kind in ("drop", "swap") and not isinstance(target, _Raw):
            paths = _paths(target)
            if not paths:
                continue
            path = paths[b % len(paths)]
            parent = _parent(target, path)
            if kind == "drop":
                del parent[path[-1]]
            else:
                parent[path[-1]] = copy.deepcopy(SWAPS[c % len(SWAPS)])  # never shared
        elif kind == "dup":
            out.insert(
                i, json.loads(json.dumps(target)) if not isinstance(target, _Raw) else target
            )
        elif kind == "remove":
            out.pop(i)
        elif kind == "reorder" and len(out) > 1:
            j = b % len(out)
            out[i], out[j] = out[j], out[i]
        elif kind == "junk":
            out.insert(i, _Raw(JUNK[b % len(JUNK)]))
        elif (
            kind == "empty-delta"
            and isinstance(target, dict)
            and isinstance(target.get("choices"), list)
        ):
            for ch in target["choices"]:
                if isinstance(ch, dict):
                    ch["delta"] = {} if c % 2 else {"tool_calls": []}
    return out


# ------------------------------------------------------------------ helpers


def analyze_blocks(
    raw: bytes, blocks: list[bytes], request: dict[str, Any] | None
) -> CaptureResult:
    """The analyzer fed through ``iter_sse(blocks)``, the blocks being ``raw`` split."""
    assert b"".join(blocks) == raw
    t = Transcript(
        "<fuzz>",
        "sse",
        True,
        lambda: iter_sse(blocks),
        request={"body": request} if request is not None else None,
        status=200,
        headers={"content-type": "text/event-stream"},
        raw=raw,
    )
    return analyze(t)


def split_at(raw: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(raw) + 1) for c in cuts})
    blocks, last = [], 0
    for p in points:
        blocks.append(raw[last:p])
        last = p
    blocks.append(raw[last:])
    return blocks


def signature(r: CaptureResult) -> dict[str, Any]:
    return {
        "findings": [f.to_json() for f in r.findings],
        "robust": r.tool_calls["robust"],
        "naive": r.tool_calls["naive"],
        "guarded": r.tool_calls["guarded"],
        "verdict": r.verdict,
        "finish_reason": r.finish_reason,
        "error": r.error,
        "events": r.events,
    }


def sane(r: CaptureResult) -> None:
    assert r.verdict in VERDICTS
    json.dumps(r.to_json())  # everything in a result is JSON
    for f in r.findings:  # messages quote server text: still one line each
        assert isinstance(f.message, str)
        assert "\n" not in f.message and "\r" not in f.message, f.message
    assert r.error is None or ("\n" not in r.error and "\r" not in r.error), r.error


def same_everywhere(raw: bytes, request: dict[str, Any] | None, cuts: list[int]) -> None:
    whole = analyze_bytes(raw, request=request, status=200)
    sane(whole)
    want = signature(whole)
    assert signature(analyze_blocks(raw, [raw], request)) == want
    assert signature(analyze_blocks(raw, split_at(raw, cuts), request)) == want
    ones = [raw[i : i + 1] for i in range(len(raw))]
    assert signature(analyze_blocks(raw, ones, request)) == want


# ------------------------------------------------------------------ properties


@FUZZ
@given(valid_streams(), framings(comments=False), st.lists(st.integers(0, 10**6), max_size=8))
def test_valid_streams_conform_and_assemble_the_calls(
    stream: Any, framing: dict[str, Any], cuts: list[int]
) -> None:
    chunks, calls, usage = stream
    request = request_for(calls, usage)
    raw = render(chunks, framing)
    r = analyze_bytes(raw, request=request, status=200)
    sane(r)
    judged = [f.to_json() for f in r.findings if f.level != "INFO"]
    assert r.verdict == "conforms", judged
    want = [(c["id"], c["name"], json.loads(c["arguments"])) for c in calls]
    for strategy in ("naive", "guarded", "robust"):
        got = [(c["id"], c["name"], json.loads(c["arguments"])) for c in r.tool_calls[strategy]]
        assert got == want, strategy
    assert r.finish_reason == "tool_calls"
    same_everywhere(raw, request, cuts)


@FUZZ
@given(valid_streams(), framings(), mutation_ops, st.lists(st.integers(0, 10**6), max_size=8))
def test_mutated_streams_never_raise_and_rechunk_the_same(
    stream: Any, framing: dict[str, Any], ops: Any, cuts: list[int]
) -> None:
    chunks, calls, usage = stream
    raw = render(mutate(chunks, ops), framing)
    same_everywhere(raw, request_for(calls, usage), cuts)


@FUZZ
@given(
    valid_streams(),
    framings(),
    st.integers(0, 10**6),
    st.booleans(),
    st.lists(st.integers(0, 10**6), max_size=8),
)
def test_truncated_streams_never_raise_and_rechunk_the_same(
    stream: Any, framing: dict[str, Any], cut: int, mutated: bool, cuts: list[int]
) -> None:
    chunks, calls, usage = stream
    raw = render(chunks, framing)
    raw = raw[: cut % (len(raw) + 1)]
    if mutated and raw:  # a cut that also lands inside a multi-byte character
        raw = raw[:-1] + b"\xc3"
    same_everywhere(raw, request_for(calls, usage), cuts)


@FUZZ
@given(valid_streams(), framings(), st.integers(0, 10**6))
def test_every_single_byte_boundary(stream: Any, framing: dict[str, Any], at: int) -> None:
    """Split in two at one byte boundary, drawn over the whole stream (multi-byte UTF-8
    characters, CRLF pairs and ``data:`` prefixes included)."""
    chunks, calls, usage = stream
    request = request_for(calls, usage)
    raw = render(chunks, framing)
    at = at % (len(raw) + 1)
    whole = signature(analyze_bytes(raw, request=request, status=200))
    assert signature(analyze_blocks(raw, [raw[:at], raw[at:]], request)) == whole


@FUZZ
@given(st.binary(max_size=600), st.lists(st.integers(0, 10**6), max_size=6))
def test_arbitrary_bytes_never_raise(raw: bytes, cuts: list[int]) -> None:
    r = analyze_bytes(raw, status=200)
    sane(r)
    assert signature(analyze_blocks(raw, split_at(raw, cuts), None)) == signature(r)
    for ctype in ("application/json", "text/html", ""):
        sane(
            analyze_bytes(
                raw,
                request={"stream": True},
                status=200,
                headers={"content-type": ctype} if ctype else {},
            )
        )


sse_lines = st.lists(
    st.tuples(
        st.sampled_from(["data: ", "data:", ": ", "event: ", "id: ", "retry: ", "", "dat"]),
        st.one_of(
            st.text(max_size=30),
            st.sampled_from(JUNK),
            st.builds(
                json.dumps,
                st.recursive(
                    json_scalars,
                    lambda c: st.one_of(
                        st.lists(c, max_size=3),
                        st.dictionaries(
                            st.sampled_from(
                                [
                                    "choices",
                                    "delta",
                                    "tool_calls",
                                    "index",
                                    "id",
                                    "function",
                                    "arguments",
                                    "name",
                                    "finish_reason",
                                    "error",
                                    "usage",
                                    "type",
                                ]
                            ),
                            c,
                            max_size=4,
                        ),
                    ),
                    max_leaves=12,
                ),
            ),
        ),
        st.sampled_from(["\n", "\r\n", "\r", "\n\n", "\r\n\r\n"]),
    ),
    max_size=20,
)


@FUZZ
@given(sse_lines, st.lists(st.integers(0, 10**6), max_size=6))
def test_sse_like_text_never_raises(lines: list[tuple[str, str, str]], cuts: list[int]) -> None:
    raw = "".join(a + b + c for a, b, c in lines).encode("utf-8", "surrogatepass")
    request = {"stream": True, "tools": [{"type": "function", "function": {"name": "get_time"}}]}
    same_everywhere(raw, request, cuts)


json_values = st.recursive(
    json_scalars,
    lambda c: st.one_of(
        st.lists(c, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "id",
                    "object",
                    "choices",
                    "delta",
                    "tool_calls",
                    "index",
                    "function",
                    "name",
                    "arguments",
                    "type",
                    "finish_reason",
                    "usage",
                    "error",
                    "role",
                    "content",
                    "x",
                ]
            ),
            c,
            max_size=5,
        ),
    ),
    max_leaves=25,
)


@FUZZ
@given(st.lists(json_values, max_size=12))
def test_arbitrary_chunk_values_never_raise(values: list[Any]) -> None:
    r = analyze_chunks(values, request={"stream": True, "tools": []})
    sane(r)
    r2 = analyze_chunks(values)
    sane(r2)


def test_every_byte_boundary_of_fixed_streams() -> None:
    """Deterministic and exhaustive: every single split point of two reference streams
    (one with CRLF and non-ASCII arguments)."""
    for crlf, args in ((False, '{"city": "Paris"}'), (True, '{"note": "Zürich ☃ 東京 😀"}')):
        chunks = [
            envelope("chatcmpl-x", {"role": "assistant", "content": None}),
            envelope(
                "chatcmpl-x",
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_" + "a" * 24,
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    ]
                },
            ),
            envelope(
                "chatcmpl-x", {"tool_calls": [{"index": 0, "function": {"arguments": args[:7]}}]}
            ),
            envelope(
                "chatcmpl-x", {"tool_calls": [{"index": 0, "function": {"arguments": args[7:]}}]}
            ),
            envelope("chatcmpl-x", {}, "tool_calls"),
        ]
        raw = render(
            chunks,
            {
                "space": True,
                "crlf": crlf,
                "ascii": False,
                "compact": True,
                "comments": False,
                "done": True,
            },
        )
        request = request_for([], False)
        whole = signature(analyze_bytes(raw, request=request, status=200))
        assert whole["verdict"] == "conforms"
        for at in range(len(raw) + 1):
            assert signature(analyze_blocks(raw, [raw[:at], raw[at:]], request)) == whole, at


# ------------------------------------------------------------------ analyzer bugs found here


@pytest.mark.parametrize("value", ["true", "1", "1.5"])
def test_scalar_tool_calls_does_not_crash(value: str) -> None:
    """Found by this fuzzer (TypeError: 'bool' object is not iterable in
    detect_choice_shape); fixed in analysis.py; kept as a regression test."""
    raw = (
        'data: {"choices":[{"index":0,"delta":{"tool_calls":' + value + "},"
        '"finish_reason":null}]}\n\ndata: [DONE]\n\n'
    ).encode()
    sane(analyze_bytes(raw, status=200))


def test_cut_event_message_is_one_line() -> None:
    """Found by this fuzzer: sse.py quoted a cut event's data lines joined with "\\n";
    fixed in sse.py; kept as a regression test."""
    r = analyze_bytes(b'data: {"a":\ndata: 1}', status=200)
    msgs = [f.message for f in r.findings if f.rule == "R-SSE-WELL-FORMED"]
    assert msgs and all("\n" not in m for m in msgs), msgs


@pytest.mark.parametrize(
    "status,raw",
    [
        (500, b'{"error": {"message": "upstream failed\\n  at line 2"}}'),
        (200, b'data: {"error": {"message": "boom\\nsecond line"}}\n\n'),
    ],
)
def test_error_reason_is_one_line(status: int, raw: bytes) -> None:
    """Found by this fuzzer: a server's multi-line error message made a multi-line cell
    reason (analysis.py _error_text/_body_message); fixed there; a regression test."""
    ctype = "application/json" if status != 200 else "text/event-stream"
    r = analyze_bytes(raw, request={"stream": True}, status=status, headers={"content-type": ctype})
    assert r.verdict == "error"
    assert r.error and "\n" not in r.error, r.error


# ------------------------------------------------------------------ files, structure-aware
#
# `toolcall-conformance analyze` on a file: whatever a cassette, a HAR or an SSE file holds, the
# readers and the analyzer end in a result or in one InputError line naming the file,
# never in another exception (a traceback). Valid documents of each supported format are
# mutated where their structure is: a field of the wrong type, a missing key, a list
# where a mapping belongs.

FILES = settings(
    max_examples=int(300 * DEPTH),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
GO_VCR = __import__("pathlib").Path(__file__).parent / "data" / "go-vcr"
_SSE_BODY = (
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    '"type":"function","function":{"name":"f","arguments":""}}]}}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":'
    '{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n'
)


def _vcrpy_doc() -> dict[str, Any]:
    return {
        "version": 1,
        "interactions": [
            {
                "request": {
                    "body": '{"stream": true}',
                    "headers": {"Content-Type": ["application/json"]},
                    "method": "POST",
                    "uri": "https://h.example/v1/chat/completions",
                },
                "response": {
                    "body": {"string": _SSE_BODY},
                    "headers": {"Content-Type": ["text/event-stream"]},
                    "status": {"code": 200, "message": "OK"},
                },
                "conformance": {"scenario": "single"},
            }
        ],
    }


def _har_doc() -> dict[str, Any]:
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "t", "version": "1"},
            "entries": [
                {
                    "request": {
                        "method": "POST",
                        "url": "https://h.example/v1/chat/completions",
                        "headers": [{"name": "content-type", "value": "application/json"}],
                        "postData": {"mimeType": "application/json", "text": '{"stream":true}'},
                    },
                    "response": {
                        "status": 200,
                        "headers": [{"name": "Content-Type", "value": "text/event-stream"}],
                        "content": {"mimeType": "text/event-stream", "text": _SSE_BODY},
                    },
                }
            ],
        }
    }


def _yaml_doc(name: str) -> dict[str, Any]:
    import yaml

    return yaml.safe_load((GO_VCR / name).read_text())  # type: ignore[no-any-return]


file_values = st.one_of(
    json_values, st.binary(max_size=20), st.just({"string": 5}), st.just([{"name": 1}])
)


@st.composite
def mutated(draw: Any, doc: Any, values: Any) -> Any:
    """``doc`` with one to three of its nodes replaced, deleted or wrapped in a list."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        parent, key, node = None, None, doc
        while isinstance(node, dict | list) and node and draw(st.booleans()):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            parent, key = node, draw(st.sampled_from(keys))
            node = node[key]
        if parent is None:
            continue
        op = draw(st.sampled_from(["replace", "delete", "wrap"]))
        if op == "delete":
            del parent[key]
        elif op == "wrap":
            parent[key] = [node]
        else:
            parent[key] = copy.deepcopy(draw(values))  # never mutate a drawn object
    return doc


def _read_and_analyze(path: Any) -> None:
    from conformance.readers import read_path
    from conformance.transcript import InputError

    try:
        for t in read_path(path):
            sane(analyze(t))
    except InputError as e:
        assert str(e).startswith(str(path)) and "\n" not in str(e), str(e)


def _write_yaml(doc: Any, go_style: bool) -> Any:
    import tempfile

    import yaml

    fd, name = tempfile.mkstemp(suffix=".yaml")
    with open(fd, "w") as f:
        f.write(("---\n" if go_style else "") + yaml.safe_dump(doc, allow_unicode=True))
    return __import__("pathlib").Path(name)


@pytest.mark.parametrize("base", ["vcrpy", "v2-tool-call-streams.yaml", "v1-tool-call-stream.yaml"])
def test_mutated_cassettes_never_raise(base: str) -> None:
    doc = _vcrpy_doc() if base == "vcrpy" else _yaml_doc(base)

    @FILES
    @given(mutated(doc, file_values))
    def check(bad: Any) -> None:
        path = _write_yaml(bad, base != "vcrpy")
        try:
            _read_and_analyze(path)
        finally:
            path.unlink()

    check()


@FILES
@given(mutated(_har_doc(), json_values))
def test_mutated_har_files_never_raise(bad: Any) -> None:
    import tempfile
    from pathlib import Path

    fd, name = tempfile.mkstemp(suffix=".har")
    with open(fd, "w") as f:
        json.dump(bad, f)
    try:
        _read_and_analyze(Path(name))
    finally:
        Path(name).unlink()


sse_file_lines = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "data: ",
                "data:",
                "data",
                ": ",
                "event: ",
                "id: ",
                "retry: ",
                "\ufeff",
                "DATA: ",
                " data: ",
                "data:\t",
                "",
                "id: \x00",
            ]
        ),
        st.one_of(
            st.text(max_size=20),
            st.sampled_from(JUNK),
            st.sampled_from(_SSE_BODY.split("\n\n")[:2]).map(lambda e: e[6:]),
        ),
        st.sampled_from(["\n", "\r\n", "\r", "\n\n", "\r\n\r\n", "\n\r", ""]),
    ),
    max_size=15,
)


@FILES
@given(st.sampled_from(["data: ", ": ", "event: x\n", "retry: 5\n"]), sse_file_lines, st.booleans())
def test_sse_files_with_odd_framing_never_raise(
    first: str, lines: list[tuple[str, str, str]], binary_tail: bool
) -> None:
    import tempfile
    from pathlib import Path

    raw = (first + "".join(a + b + c for a, b, c in lines)).encode("utf-8", "surrogatepass")
    if binary_tail:
        raw += b"\xff\xfe\x00data: {\n\n"
    fd, name = tempfile.mkstemp(suffix=".sse")
    with open(fd, "wb") as f:
        f.write(raw)
    try:
        _read_and_analyze(Path(name))
    finally:
        Path(name).unlink()
