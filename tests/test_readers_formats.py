"""conformance.readers, format by format, with hand-written inputs: sniffing, gzip without
its header and deflate, stream framing decided from the headers and the request, a
transport fault kept in a cassette, HAR entries, and the Transcript each one yields."""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.readers import (
    cassette_transcripts,
    decode_body,
    exchange_transcript,
    read_path,
    sniff,
)
from conformance.transcript import CHUNK, DONE, InputError

SSE = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
    b"data: [DONE]\n\n"
)


def kinds(t: Any) -> list[str]:
    return [e.kind for e in t.events()]


@pytest.mark.parametrize(
    ("head", "fmt"),
    [
        (b"data: {}\n\n", "sse"),
        (b"event: message\ndata: {}\n\n", "sse"),
        (b": keep-alive\n\n", "sse"),
        (b"id: 1\ndata: {}\n\n", "sse"),
        (b"retry: 10\n\n", "sse"),
        (b"\xef\xbb\xbf  \n\ndata: {}\n\n", "sse"),
        (b"interactions:\n- request: {}\n", "cassette"),
        (b"# recorded\nversion: 1\ninteractions: []\n", "cassette"),
        (b'{"log": {"creator": {"name": "x"}, "entries": []}}', "har"),
        (b'{"log": 1}\n{"entries": 2}\n', "har"),
        (b'{"choices": []}\n', "jsonl"),
        (b"[1, 2]\n", "jsonl"),
    ],
)
def test_sniff(tmp_path: Path, head: bytes, fmt: str) -> None:
    p = tmp_path / "x.txt"
    p.write_bytes(head)
    assert sniff(p) == fmt


def test_sniff_refuses_with_one_line(tmp_path: Path) -> None:
    p = tmp_path / "x.txt"
    p.write_bytes(b"hello world")
    with pytest.raises(InputError) as e:
        sniff(p)
    assert str(e.value) == (
        f"{p}: not JSONL, SSE, a vcrpy cassette or a HAR file (starts with 'hello world')"
    )
    p.write_bytes(b'{"a":1}\x00')
    with pytest.raises(InputError, match="binary data, not a text capture$"):
        sniff(p)


def test_decode_body_gzip_deflate_and_garbage() -> None:
    gz = gzip.compress(SSE)
    assert decode_body(gz, None) == SSE  # magic bytes, no header at all
    assert decode_body(gz, {"Content-Type": "text/event-stream"}) == SSE
    assert decode_body(gz, {"Content-Encoding": "GZIP"}) == SSE
    assert decode_body(SSE, {"content-encoding": "gzip"}) == SSE  # claimed, not gzip: as is
    assert decode_body(b"\x1f\x8bnot gzip", None) == b"\x1f\x8bnot gzip"
    assert decode_body(zlib.compress(SSE), {"Content-Encoding": "deflate"}) == SSE
    assert decode_body(b"plain", {"content-encoding": "deflate"}) == b"plain"
    assert decode_body(zlib.compress(SSE), None) == zlib.compress(SSE)  # no header: no guess
    assert decode_body(zlib.compress(SSE), {"content-encoding": "br"}) == zlib.compress(SSE)


@pytest.mark.parametrize(
    ("ctype", "stream", "body", "framing"),
    [
        ("text/event-stream; charset=utf-8", False, SSE, True),
        ("TEXT/EVENT-STREAM", False, SSE, True),
        (None, False, SSE, True),  # no content type: the body's shape decides
        (None, False, b'{"choices": []}', False),
        ("application/json", True, b"\n" + SSE, True),  # asked for a stream, got SSE anyway
        ("application/json", False, SSE, False),
        ("application/json", True, b'{"choices": []}', False),
        ("text/plain", True, b"ndata: x", False),
    ],
)
def test_framing_from_headers_request_and_body(
    ctype: str | None, stream: bool, body: bytes, framing: bool
) -> None:
    headers = {"Content-Type": ctype} if ctype else {}
    request = {"body": {"stream": stream}}
    t = exchange_transcript("s", "har", request, 200, headers, body)
    assert t.framing is framing
    assert (kinds(t) == [CHUNK, DONE]) is framing and (kinds(t) == []) is not framing
    assert (t.source, t.fmt, t.status, t.raw, t.request) == ("s", "har", 200, body, request)


def test_framing_with_a_request_without_a_body() -> None:
    for request in (None, {}, {"body": "text"}, {"body": {"stream": False}}):
        t = exchange_transcript("s", "cassette", request, 200, {"content-type": "x/y"}, SSE)
        assert t.framing is False


def _cassette(
    tmp_path: Path,
    response: dict[str, Any],
    request_body: Any = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    interaction = {
        "request": {
            "method": "POST",
            "uri": "https://h/v1/chat/completions",
            "headers": {"Content-Type": ["application/json"]},
            "body": request_body,
        },
        "response": response,
        **(extra or {}),
    }
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump({"interactions": [interaction], "version": 1}))
    return p


def test_cassette_gzip_binary_body_without_an_encoding_header(tmp_path: Path) -> None:
    p = _cassette(
        tmp_path,
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": ["text/event-stream"]},
            "body": {"string": gzip.compress(SSE)},
        },
        request_body='{"stream": true, "model": "m"}',
    )
    (t,) = read_path(p)
    assert (t.source, t.fmt, t.status, t.raw) == (f"{p}#0", "cassette", 200, SSE)
    assert t.request == {
        "method": "POST",
        "uri": "https://h/v1/chat/completions",
        "headers": {"Content-Type": "application/json"},
        "body": {"stream": True, "model": "m"},
    }
    assert kinds(t) == [CHUNK, DONE] and t.transport_error is None


def test_cassette_headers_lists_are_joined_and_bodies_kept_as_text(tmp_path: Path) -> None:
    p = _cassette(
        tmp_path,
        {
            "status": {"code": 400},
            "headers": {"X-A": ["1", "2"], "X-B": "three"},
            "body": {"string": '{"error": "bad"}'},
        },
        request_body="not json",
        extra={"conformance": {"trial": 2}},
    )
    (t,) = read_path(p)
    assert t.headers == {"X-A": "1, 2", "X-B": "three"}
    assert (t.status, t.raw, t.request["body"], t.meta) == (
        400,
        b'{"error": "bad"}',
        "not json",
        {"trial": 2},
    )


def test_a_transport_fault_recorded_in_a_cassette_is_read_back(tmp_path: Path) -> None:
    headers = {
        "Content-Type": ["text/event-stream"],
        "x-conformance-transport-error": ["stalled: no byte for 5 s"],
        "x-conformance-transport-quirk": ["Q-STREAM-STALLS"],
    }
    p = _cassette(
        tmp_path, {"status": {"code": 200}, "headers": headers, "body": {"string": SSE[:40]}}
    )
    (t,) = read_path(p)
    assert t.transport_error == "stalled: no byte for 5 s"
    assert t.meta == {"transport_quirk": "Q-STREAM-STALLS"}
    del headers["x-conformance-transport-quirk"]
    (t,) = read_path(
        _cassette(tmp_path, {"status": {"code": 200}, "headers": headers, "body": {"string": SSE}})
    )
    assert t.transport_error == "stalled: no byte for 5 s" and t.meta == {}
    (t,) = read_path(
        _cassette(tmp_path, {"status": {"code": 200}, "headers": {}, "body": {"string": SSE}})
    )
    assert t.transport_error is None and t.meta == {}


def test_cassette_interactions_must_be_mappings_with_text_or_binary_bodies() -> None:
    with pytest.raises(InputError, match=r"^src: interaction 1 is a string, not a mapping$"):
        cassette_transcripts({"interactions": [{}, "x"]}, "src")
    with pytest.raises(
        InputError,
        match=r"^src: interaction 0: response body is a number, "
        r"neither text nor binary$",
    ):
        cassette_transcripts({"interactions": [{"response": {"body": {"string": 7}}}]}, "src")
    (t,) = cassette_transcripts({"interactions": [{}]}, "src")
    assert (t.source, t.status, t.raw, t.headers) == ("src#0", None, b"", {})
    assert t.request == {"method": None, "uri": None, "headers": {}, "body": None}


def test_har_entries(tmp_path: Path) -> None:
    gz_text = base64.b64encode(SSE).decode()
    har = {
        "log": {
            "creator": {"name": "t"},
            "entries": [
                {
                    "request": {
                        "method": "POST",
                        "url": "https://h/v1/chat/completions",
                        "headers": [{"name": "Content-Type", "value": "application/json"}],
                        "postData": {"text": '{"stream": true}'},
                    },
                    "response": {
                        "status": 200,
                        "headers": [
                            {"name": "Content-Encoding", "value": "gzip"},
                            {"name": "content-encoding", "value": "gzip"},
                        ],
                        "content": {
                            "mimeType": "text/event-stream",
                            "encoding": "base64",
                            "text": gz_text,
                        },
                    },
                },
                {
                    "request": {},
                    "response": {
                        "status": 500,
                        "headers": [{"name": "Content-Type", "value": "application/json"}],
                        "content": {"mimeType": "text/plain", "text": '{"error": "x"}'},
                    },
                },
            ],
        }
    }
    p = tmp_path / "a.har"
    p.write_text(json.dumps(har))
    first, second = read_path(p)
    assert (first.source, first.fmt, first.status, first.raw) == (f"{p}#0", "har", 200, SSE)
    assert first.headers == {"content-type": "text/event-stream"}
    assert first.request == {
        "method": "POST",
        "uri": "https://h/v1/chat/completions",
        "headers": {"Content-Type": "application/json"},
        "body": {"stream": True},
    }
    assert kinds(first) == [CHUNK, DONE]
    assert second.headers == {"Content-Type": "application/json"}  # its own type is kept
    assert (second.status, second.raw, second.framing) == (500, b'{"error": "x"}', False)
    assert second.request == {"method": None, "uri": None, "headers": {}, "body": None}


def test_har_without_entries(tmp_path: Path) -> None:
    p = tmp_path / "a.har"
    p.write_text('{"log": {"creator": {}, "pages": []}}')
    with pytest.raises(InputError, match="without log.entries"):
        read_path(p)


def test_jsonl_lines_blank_lines_and_bad_lines(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a": 1}\n\n  \n{"b": 2}\nnot json\n')
    (t,) = read_path(p)
    assert (t.fmt, t.framing) == ("jsonl", False)
    events = t.events()
    first, second = next(events), next(events)
    assert [(e.n, e.line, e.chunk) for e in (first, second)] == [(0, 1, {"a": 1}), (1, 4, {"b": 2})]
    with pytest.raises(InputError) as e:
        next(events)
    assert str(e.value) == f"{p}:5: not a JSON line: not json"


def test_sse_file_is_read_in_blocks(tmp_path: Path) -> None:
    p = tmp_path / "a.sse"
    p.write_bytes(SSE * 5000)  # beyond one 64 KiB block
    (t,) = read_path(p)
    assert (t.fmt, t.framing) == ("sse", True)
    assert kinds(t) == [CHUNK, DONE] * 5000


def test_jsonl_numbers_every_event_and_cuts_a_long_bad_line(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    bad = "x" * 70
    p.write_text('{"a": 1}\n{"a": 2}\n{"a": 3}\n' + bad + "\n")
    (t,) = read_path(p)
    events = t.events()
    assert [next(events).n for _ in range(3)] == [0, 1, 2]
    with pytest.raises(InputError) as e:
        next(events)
    assert str(e.value) == f"{p}:4: not a JSON line: " + "x" * 60


def test_har_that_is_json_but_not_an_object(tmp_path: Path) -> None:
    from conformance.readers import read_har_file

    p = tmp_path / "a.har"
    p.write_text("[1, 2]")
    with pytest.raises(InputError) as e:
        read_har_file(p)
    assert str(e.value) == f"{p}: a JSON file without log.entries (not a HAR file)"


def test_har_entry_without_text_or_header_fields(tmp_path: Path) -> None:
    har = {
        "log": {
            "entries": [
                {
                    "request": {"headers": [{"value": "v"}, {"name": "n"}]},
                    "response": {
                        "status": 204,
                        "headers": [{"value": "w"}, {"name": "m"}],
                        "content": {},
                    },
                }
            ]
        }
    }
    p = tmp_path / "a.har"
    p.write_text(json.dumps(har))
    (t,) = read_path(p)
    assert (t.status, t.raw) == (204, b"")
    assert t.headers == {"": "w", "m": ""}
    assert t.request["headers"] == {"": "v", "n": ""}


def test_broken_cassette_yaml_names_the_problem_and_its_line(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_bytes(b"interactions:\n- a: [1, 2\n")
    with pytest.raises(InputError) as e:
        read_path(p)
    assert str(e.value) == f"{p}:3: not valid YAML (did not find expected ',' or ']')"
    assert e.value.line == 3
    p.write_bytes(b"interactions:\n- a: 1\n\xff\n")  # a reader error has no mark
    with pytest.raises(InputError) as e:
        read_path(p)
    assert str(e.value) == (
        f"{p}: not valid YAML (unacceptable character #x00ff: invalid leading UTF-8 octet)"
    )
    assert e.value.line is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty file"),
        (b" \n\t ", "empty file"),
        (
            b"XYZ says hello to everyone",
            "not JSONL, SSE, a vcrpy cassette or a HAR file (starts with 'XYZ says hello to ev')",
        ),
    ],
)
def test_sniff_refusals_word_for_word(tmp_path: Path, data: bytes, message: str) -> None:
    p = tmp_path / "x.txt"
    p.write_bytes(data)
    with pytest.raises(InputError) as e:
        read_path(p)
    assert str(e.value) == f"{p}: {message}"


def test_a_directory_and_a_yaml_that_is_not_a_cassette(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        read_path(tmp_path)
    assert str(e.value) == f"{tmp_path}: is a directory"
    p = tmp_path / "c.yaml"
    p.write_text("# x\ninteractions: 3\n")
    with pytest.raises(InputError) as e:
        read_path(p)
    assert str(e.value) == f"{p}: a YAML file without an `interactions` list (not a cassette)"


@pytest.mark.parametrize(("at", "fmt"), [(4095, "binary"), (4096, "jsonl"), (5000, "jsonl")])
def test_sniff_reads_the_first_4096_bytes_only(tmp_path: Path, at: int, fmt: str) -> None:
    p = tmp_path / "a.jsonl"
    line = b'{"a": "' + b"x" * 100 + b'"}\n'
    data = (line * 60)[:at] + b"\x00" + (line * 60)[at:]
    p.write_bytes(data)
    if fmt == "binary":
        with pytest.raises(InputError, match="binary data"):
            sniff(p)
    else:
        assert sniff(p) == fmt


def test_sniff_looks_for_markers_within_their_windows(tmp_path: Path) -> None:
    p = tmp_path / "x.yaml"

    def sniffed(text: str) -> str:
        p.write_text(text)
        try:
            return sniff(p)
        except InputError:
            return "refused"

    # `interactions:` among the first three lines that are not comments, directives or ---
    assert (
        sniffed("# " + "p" * 300 + "\n%YAML 1.1\n---\nversion: 1\nx: 2\ninteractions: []\n")
        == "cassette"
    )
    assert sniffed("version: 1\nx: 2\ny: 3\ninteractions: []\n") == "refused"
    # a HAR file: '"log"' within 200 characters, '"creator"' within 400 (or "entries")
    assert sniffed('{"a": "' + "q" * 185 + '", "log": {"creator": {}}}') == "har"
    assert sniffed('{"a": "' + "q" * 186 + '", "log": {"creator": {}}}') == "jsonl"
    assert sniffed('{"log": {}, "b": "' + "q" * 370 + '", "creator": 1}') == "har"
    assert sniffed('{"log": {}, "b": "' + "q" * 371 + '", "creator": 1}') == "jsonl"
    assert sniffed('{"entries": [], "x": 1}\n') == "jsonl"  # entries without "log"


def test_cassette_request_bodies_of_every_kind(tmp_path: Path) -> None:
    def body_of(request_body: Any) -> Any:
        p = _cassette(
            tmp_path,
            {"status": {"code": 200}, "headers": {}, "body": {"string": SSE}},
            request_body=request_body,
        )
        return read_path(p)[0].request["body"]

    assert body_of(b'{"stream": true}') == {"stream": True}
    assert body_of(b"caf\xe9 au lait") == "caf\ufffd au lait"
    assert body_of(5) is None
    assert body_of("") is None
    assert body_of(None) is None


def test_exchange_transcript_undoes_a_declared_deflate_and_finds_sse_without_a_type() -> None:
    t = exchange_transcript(
        "s",
        "live",
        None,
        200,
        {"Content-Encoding": "deflate", "Content-Type": "text/event-stream"},
        zlib.compress(SSE),
    )
    assert (t.raw, kinds(t)) == (SSE, [CHUNK, DONE])
    t = exchange_transcript("s", "live", None, 200, {}, b"\n\n" + SSE)
    assert t.framing is True
