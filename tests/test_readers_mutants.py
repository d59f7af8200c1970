"""conformance.readers, pinned where mutation runs found the tests silent: the refusal
line a malformed HAR or cassette gets, word for word (its file, the entry or
interaction, the field, what the field is in the words of JSON), go-vcr's status given
as a number, a HAR body in wrapped base64, and a body holding bytes that are not UTF-8."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from conformance import readers
from conformance.readers import cassette_transcripts, read_path
from conformance.transcript import InputError

SSE = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n'


def har(tmp_path: Path, entry: Any) -> Path:
    p = tmp_path / "a.har"
    p.write_text(json.dumps({"log": {"creator": {"name": "t"}, "entries": [entry]}}))
    return p


def refusal(path: Path) -> str:
    with pytest.raises(InputError) as e:
        read_path(path)
    return str(e.value)


# ------------------------------------------------------------------ HAR refusals


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        ("x", "entry 0 is a string, not a mapping"),
        ({"request": [1]}, "entry 0: `request` is a list, not a mapping"),
        ({"response": 3}, "entry 0: `response` is a number, not a mapping"),
        ({"response": {"content": True}}, "entry 0: response content is a boolean, not a mapping"),
        (
            {"request": {"postData": "text"}},
            "entry 0: request postData is a string, not a mapping",
        ),
        (
            {"request": {"headers": {"a": "b"}}},
            "entry 0: request headers is a mapping, not a list",
        ),
        (
            {"request": {"headers": [None]}},
            "entry 0: request headers: an entry is null, not a mapping",
        ),
        (
            {"response": {"headers": [["a", "b"]]}},
            "entry 0: response headers: an entry is a list, not a mapping",
        ),
        (
            {"response": {"content": {"text": 5}}},
            "entry 0: content.text is a number, neither text nor binary",
        ),
        (
            {"response": {"content": {"text": [], "encoding": "base64"}}},
            "entry 0: content.text is a list, neither text nor binary",
        ),
        (
            {"response": {"status": "200 OK"}},
            "entry 0: response status is a string, not a number",
        ),
        ({"response": {"status": False}}, "entry 0: response status is a boolean, not a number"),
    ],
)
def test_a_malformed_har_entry_is_one_refusal_line(tmp_path: Path, entry: Any, line: str) -> None:
    p = har(tmp_path, entry)
    assert refusal(p) == f"{p}: {line}"


def test_a_har_that_is_not_json_says_what_the_parser_says(tmp_path: Path) -> None:
    p = tmp_path / "a.har"
    p.write_text('{"log": {"entries": [\n\n   }')
    assert refusal(p) == (f"{p}: not valid JSON (Expecting value: line 3 column 4 (char 26))")


def test_a_har_body_in_wrapped_base64_is_read(tmp_path: Path) -> None:
    # base64 as tools wrap it (76 characters a line): the line ends are not data
    import base64

    wrapped = base64.encodebytes(SSE).decode()
    assert "\n" in wrapped.strip()
    p = har(
        tmp_path,
        {
            "response": {
                "status": 200,
                "content": {"mimeType": "text/event-stream", "encoding": "base64", "text": wrapped},
            }
        },
    )
    (t,) = read_path(p)
    assert t.raw == SSE
    assert [e.kind for e in t.events()] == ["chunk", "done"]


# ------------------------------------------------------------------ cassette refusals


@pytest.mark.parametrize(
    ("interaction", "line"),
    [
        ({"request": "GET /"}, "interaction 0: `request` is a string, not a mapping"),
        ({"response": [200]}, "interaction 0: `response` is a list, not a mapping"),
        (
            {"response": {"status": {"code": "200"}}},
            "interaction 0: response status code is a string, not a number",
        ),
        (
            {"response": {"code": [200]}},
            "interaction 0: response `code` is a list, not a number",
        ),
        (
            {"response": {"status": "200 OK"}},
            "interaction 0: response `status` is a string, not a number",
        ),
        (
            {"response": {"status": True}},
            "interaction 0: response `status` is a boolean, not a number",
        ),
        (
            {"request": {"headers": ["a"]}},
            "interaction 0: request headers is a list, not a mapping",
        ),
        (
            {"response": {"headers": "a: b"}},
            "interaction 0: response headers is a string, not a mapping",
        ),
        (
            {"response": {"body": {"string": dt.date(2026, 1, 2)}}},
            "interaction 0: response body is a date, neither text nor binary",
        ),
        (
            {"response": {"body": {"string": {1, 2}}}},
            "interaction 0: response body is an unsupported value, neither text nor binary",
        ),
        (
            {"response": {"body": {"string": None}, "status": {"code": None}, "code": "x"}},
            None,
        ),
    ],
)
def test_a_malformed_interaction_is_one_refusal_line(interaction: Any, line: str | None) -> None:
    if line is None:  # vcrpy's status wins: go-vcr's `code` is not read then
        (t,) = cassette_transcripts({"interactions": [interaction]}, "c.yaml")
        assert (t.status, t.raw) == (None, b"")
        return
    with pytest.raises(InputError) as e:
        cassette_transcripts({"interactions": [interaction]}, "c.yaml")
    assert str(e.value) == f"c.yaml: {line}"


def test_go_vcr_status_given_as_a_number_is_the_status() -> None:
    (t,) = cassette_transcripts(
        {"interactions": [{"response": {"status": 429, "body": "x"}}]}, "c.yaml"
    )
    assert (t.status, t.raw) == (429, b"x")
    (t,) = cassette_transcripts(
        {"interactions": [{"response": {"status": "429 Too Many", "code": 429}}]}, "c.yaml"
    )
    assert t.status == 429


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (None, "null"),
        (False, "a boolean"),
        (0, "a number"),
        (0.5, "a number"),
        ("", "a string"),
        (b"", "binary data"),
        ([], "a list"),
        (dt.datetime(2026, 1, 2, 3, 4), "a date"),
        (frozenset(), "an unsupported value"),
    ],
)
def test_what_an_interaction_is_is_said_in_the_words_of_json(value: Any, kind: str) -> None:
    with pytest.raises(InputError) as e:
        cassette_transcripts({"interactions": [value]}, "c.yaml")
    assert str(e.value) == f"c.yaml: interaction 0 is {kind}, not a mapping"


def test_a_body_text_holding_bytes_that_are_not_utf8_gives_them_back() -> None:
    # a body decoded with surrogateescape (bytes that are not UTF-8) by whoever loaded it
    (t,) = cassette_transcripts(
        {"interactions": [{"response": {"body": {"string": "data: \udcff\n\n"}}}]}, "c"
    )
    assert t.raw == b"data: \xff\n\n"
    (t,) = cassette_transcripts({"interactions": [{"response": {"body": "\udcfe"}}]}, "c")
    assert t.raw == b"\xfe"


def test_an_unknown_attribute_of_the_module_is_named(tmp_path: Path) -> None:
    with pytest.raises(AttributeError) as e:
        readers.NoSuchThing  # noqa: B018
    assert str(e.value) == "module 'conformance.readers' has no attribute 'NoSuchThing'"
    assert readers.YamlLoader.__module__ == "conformance.safeyaml"


# ------------------------------------------------------------------ SSE files in blocks

NAME = "n" * (1 << 20) + "END"  # a line longer than a MiB: its name is cut when decoded whole


def call_event(name: str, end: bytes = b"\n\n") -> bytes:
    tc = {"index": 0, "id": "call_1", "type": "function", "function": {"name": name}}
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [tc]}}]}
    return b"data: " + json.dumps(chunk).encode() + end


def facts(events: Any) -> list[tuple[Any, ...]]:
    return [(e.n, e.kind, e.line, e.data, e.chunk, e.sse_event) for e in events]


@pytest.mark.parametrize(
    "body",
    [
        call_event(NAME) + b"data: [DONE]\n\n",  # the long line first in the file
        b": hi\n\n" + call_event(NAME),
        b": hi\r\n\r\n" + call_event(NAME, b"\r\n\r\n"),  # the blank line before: 4 bytes
        b": hi\r\r" + call_event(NAME, b"\r\r"),
        b": "
        + b"x" * (readers.BLOCK - 5)
        + b"\n\n"
        + call_event(NAME),  # blank line at a block end
        b"data: {}\n\n" + call_event(NAME, b"\n"),  # the file ends after the long line
    ],
)
def test_an_sse_file_gives_the_events_of_its_bytes_and_cuts_a_long_name(
    tmp_path: Path, body: bytes
) -> None:
    from conformance import longstrings
    from conformance.sse import parse_sse_bytes

    p = tmp_path / "a.sse"
    p.write_bytes(body)
    (t,) = read_path(p)
    got = facts(t.events())
    assert got == facts(parse_sse_bytes(body))
    names = [
        tc["function"]["name"]
        for _, kind, _, _, chunk, _ in got
        if kind == "chunk" and isinstance(chunk, dict) and chunk.get("choices")
        for tc in chunk["choices"][0]["delta"].get("tool_calls") or []
    ]
    if body.endswith(b"\n\n") or body.endswith(b"\r\r"):  # else the last event never ended
        assert len(names) == 1 and longstrings.is_cut(names[0]) and names[0].endswith("END")
    assert b"".join(readers._iter_file_blocks(p)) == body


def test_a_refused_cassette_is_one_line_of_at_most_160_characters(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("interactions:\n- !!python/object:os." + "x" * 300 + " {}\n")
    reason = (
        "refused: a Python tag (!!python/object:os." + "x" * 300 + "); "
        "YAML files here are data and never build objects"
    )
    assert refusal(p) == f"{p}:2: {reason[:160]}"


# ------------------------------------------------------------------ a stream read once


class Broken:
    """A stream that fails while it is read (a full disk, a dropped pipe)."""

    def __init__(self, error: OSError):
        self.error = error

    def read(self, n: int) -> bytes:
        raise self.error


@pytest.fixture
def tmpdir_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import tempfile

    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    return spool


def test_a_stream_is_read_as_the_file_it_holds_and_named_as_given(tmpdir_here: Path) -> None:
    import io

    (t,) = readers.read_stream(io.BytesIO(b'{"a": 1}\nnot json\n'), "<stdin>")
    assert (t.source, t.fmt) == ("<stdin>", "jsonl")
    events = t.events()
    assert next(events).chunk == {"a": 1}
    with pytest.raises(InputError) as e:  # read after read_stream returned: still there
        next(events)
    assert str(e.value) == "<stdin>:2: not a JSON line: not json"
    (t,) = readers.read_stream(io.BytesIO(SSE), "<pipe>")
    assert (t.source, [e.kind for e in t.events()]) == ("<pipe>", ["chunk", "done"])


def test_a_stream_that_is_no_capture_is_refused_naming_the_stream(tmpdir_here: Path) -> None:
    import io

    with pytest.raises(InputError) as e:
        readers.read_stream(io.BytesIO(b"hello"), "<stdin>")
    assert str(e.value) == (
        "<stdin>: not JSONL, SSE, a vcrpy cassette or a HAR file (starts with 'hello')"
    )
    assert e.value.source == "<stdin>"
    assert list(tmpdir_here.iterdir()) == []  # the copy is removed


def test_a_stream_past_its_bound_is_one_line_and_leaves_no_copy(tmpdir_here: Path) -> None:
    import io

    with pytest.raises(InputError) as e:
        readers.read_stream(io.BytesIO(b"x" * 1001), "<stdin>", limit=1000)
    assert str(e.value) == (
        "<stdin>: over 1,000 bytes, more than is read from a stream; "
        "save it to a file and pass its path"
    )
    assert list(tmpdir_here.iterdir()) == []
    (t,) = readers.read_stream(io.BytesIO(SSE), "<stdin>", limit=len(SSE))  # at the bound
    assert t.raw is None and [e.kind for e in t.events()] == ["chunk", "done"]


@pytest.mark.parametrize(
    ("error", "why"),
    [(OSError(28, "No space left on device"), "No space left on device"), (OSError(), "OSError")],
)
def test_a_stream_that_cannot_be_copied_is_one_line(
    tmpdir_here: Path, error: OSError, why: str
) -> None:
    with pytest.raises(InputError) as e:
        readers.read_stream(Broken(error), "<stdin>")  # type: ignore[arg-type]
    assert str(e.value) == (
        f"<stdin>: cannot be copied to a temporary file ({why}); save it to a file and "
        "pass its path"
    )
    assert list(tmpdir_here.iterdir()) == []


# ------------------------------------------------------------------ timings


def test_when_each_line_arrived_is_read_from_a_cassette() -> None:
    def read(value: str) -> Any:
        headers = {"x-conformance-line-times": [value], "content-type": ["text/event-stream"]}
        (t,) = cassette_transcripts(
            {"interactions": [{"response": {"headers": headers, "body": {"string": SSE}}}]}, "c"
        )
        return t.meta.get("line_times")

    assert read("2:0.5 4:1.25") == [(2, 0.5), (4, 1.25)]
    for bad in ("", " ", "2:x", "x:0.5", "2"):
        assert read(bad) is None, bad
    assert readers.line_times(None) is None


def test_a_connection_retry_recorded_in_a_cassette_is_read_back() -> None:
    headers = {"x-conformance-connection-retry": "after a reset"}
    (t,) = cassette_transcripts({"interactions": [{"response": {"headers": headers}}]}, "c")
    assert t.meta == {"connection_retry": "after a reset"}


def test_har_message_times_are_seconds_from_the_request(tmp_path: Path) -> None:
    started = dt.datetime(2027, 1, 15, 8, tzinfo=dt.UTC).timestamp()

    def times(entry_extra: dict[str, Any]) -> Any:
        entry = {"response": {"status": 200, "content": {"text": SSE.decode()}}, **entry_extra}
        (t,) = read_path(har(tmp_path, entry))
        return t.meta.get("event_times")

    messages = [{"time": started + 0.25}, {"time": started + 2}]
    assert times({"startedDateTime": "2027-01-15T08:00:00Z", "_eventSourceMessages": messages}) == [
        0.25,
        2.0,
    ]
    assert times(
        {"startedDateTime": "2027-01-15T09:00:00+01:00", "_eventSourceMessages": messages}
    ) == [0.25, 2.0]
    for extra in (
        {"_eventSourceMessages": messages},  # no start
        {"startedDateTime": "2027-01-15T08:00:00Z"},  # no messages
        {"startedDateTime": "2027-01-15T08:00:00Z", "_eventSourceMessages": []},
        {"startedDateTime": 5, "_eventSourceMessages": messages},
        {"startedDateTime": "2027-01-15T08:00:00Z", "_eventSourceMessages": {"a": 1}},
        {"startedDateTime": "yesterday", "_eventSourceMessages": messages},
        {"startedDateTime": "2027-01-15T08:00:00Z", "_eventSourceMessages": [{"t": 1}]},
        {"startedDateTime": "2027-01-15T08:00:00Z", "_eventSourceMessages": [{"time": "x"}]},
        {"startedDateTime": "2027-01-15T08:00:00Z", "_eventSourceMessages": [None]},
    ):
        assert times(extra) is None, extra


def test_a_har_over_its_bound_is_refused_with_its_size_in_mib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readers, "HAR_LIMIT", 1 << 20)
    entry = {"response": {"status": 200, "content": {"text": "x" * (1 << 20)}}}
    p = har(tmp_path, entry)
    assert refusal(p) == (
        f"{p}: a HAR file over 1 MiB (it is one JSON document, read whole); export fewer "
        "entries, or the streams as SSE or a cassette"
    )
    p.write_text(json.dumps({"log": {"entries": [{"response": {"status": 204}}]}}))
    (t,) = read_path(p)  # under the bound: read
    assert t.status == 204


class Endless:
    """A pipe that never ends (``yes |``), giving at most ``block`` bytes a read, as a
    pipe does: reading it whole would never return."""

    def __init__(self, block: int = 1 << 20):
        self.block, self.given = block, 0

    def read(self, n: int | None = -1) -> bytes:
        if n is None or n < 0:
            raise AssertionError("an endless pipe read whole never returns")
        n = min(n, self.block)
        self.given += n
        if self.given > 1 << 24:
            raise AssertionError("read on past any bound")
        return b"x" * n


@pytest.mark.parametrize("block", [600, 1 << 30])  # a pipe, a stream giving all it is asked
def test_an_endless_stream_is_refused_after_its_bound_and_one_read(
    tmpdir_here: Path, block: int
) -> None:
    stream = Endless(block)
    with pytest.raises(InputError, match=r"^<stdin>: over 1,000 bytes"):
        readers.read_stream(stream, "<stdin>", limit=1000)  # type: ignore[arg-type]
    assert stream.given <= 1000 + min(block, 1 << 20)  # a MiB a read, at most
    assert list(tmpdir_here.iterdir()) == []


def test_a_stream_s_copy_is_a_conformance_input_directory_while_it_is_read(
    tmpdir_here: Path,
) -> None:
    import io

    (t,) = readers.read_stream(io.BytesIO(SSE), "<stdin>")
    (copy,) = tmpdir_here.iterdir()  # what a user sees in the temporary directory
    assert copy.name.startswith("conformance-input-")
    assert [e.kind for e in t.events()] == ["chunk", "done"]


def test_a_stream_holding_broken_yaml_is_refused_with_its_line(tmpdir_here: Path) -> None:
    import io

    with pytest.raises(InputError) as e:
        readers.read_stream(io.BytesIO(b"interactions:\n- a: [1, 2\n"), "<stdin>")
    assert (e.value.source, e.value.line) == ("<stdin>", 3)
    assert str(e.value).startswith("<stdin>:3: not valid YAML (")


def test_a_har_of_exactly_its_bound_or_of_several_reads_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = (1 << 20) + 4096  # more than one read of a MiB
    monkeypatch.setattr(readers, "HAR_LIMIT", limit)
    head = json.dumps({"log": {"entries": [{"response": {"status": 204}}]}})
    p = tmp_path / "a.har"
    p.write_text(head[:-1] + " " * (limit - len(head)) + "}")  # exactly the bound
    assert p.stat().st_size == limit
    (t,) = read_path(p)
    assert t.status == 204
    p.write_text(head[:-1] + " " * (limit - len(head) + 1) + "}")  # one byte more
    assert refusal(p).startswith(f"{p}: a HAR file over 1 MiB")


def test_a_har_whose_size_the_system_does_not_tell_is_still_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a file under /proc says it is empty: the bound holds while it is read
    import os
    import types

    real = os.fstat
    monkeypatch.setattr(
        readers.os, "fstat", lambda fd: types.SimpleNamespace(st_mode=real(fd).st_mode, st_size=0)
    )
    monkeypatch.setattr(readers, "HAR_LIMIT", 1 << 16)
    entry = {"response": {"status": 200, "content": {"text": "x" * (1 << 17)}}}
    p = har(tmp_path, entry)
    with pytest.raises(InputError) as e:
        readers.read_har_file(p)
    assert str(e.value).startswith(f"{p}: a HAR file over 0 MiB")


def test_a_refused_cassette_is_one_line_with_no_separate_source_or_line() -> None:
    e = readers.CassetteRefused("cassette c.yaml: a Python tag on line 3")
    assert isinstance(e, InputError) and str(e) == "cassette c.yaml: a Python tag on line 3"
    assert (e.source, e.line, e.reason) == ("", None, "cassette c.yaml: a Python tag on line 3")


def test_read_path_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        read_path(tmp_path / "absent.sse")
    assert str(e.value) == f"{tmp_path / 'absent.sse'}: no such file"


def test_a_fifo_is_read_once_and_named_by_its_path(tmp_path: Path) -> None:
    import os
    import threading

    fifo = tmp_path / "stream.sse"
    os.mkfifo(fifo)
    body = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n'

    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(body)

    writer = threading.Thread(target=write)
    writer.start()
    [t] = read_path(fifo)
    writer.join(timeout=10)
    assert t.source == str(fifo) and t.fmt == "sse"
    assert [e.kind for e in t.events()] == ["chunk", "done"]
