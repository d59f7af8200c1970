"""A big response body goes through the cassette a slice at a time (issue #16).

Saved: a body longer than ``cassettes.BIG`` is set aside before vcrpy's YAML dump and
written from its bytes, redacted a slice at a time, as one double-quoted line (text) or
as vcrpy's ``!!binary`` block (bytes that are not UTF-8). Loaded: such a line is decoded
a slice at a time (``readers.load_yaml``), by the replay's persister and by ``analyze``.
The file stays a cassette any vcrpy reads; small bodies keep libyaml's bytes.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from streams import traced
from vcr.request import Request
from vcr.serialize import serialize
from vcr.serializers import yamlserializer

from conformance import cassettes, readers, secrets
from conformance.cassettes import AtomicPersister
from conformance.transcript import InputError

MiB = 2**20
CANARY = "CANARYbody0123456789xyz"

HEAD = """interactions:
- request:
    body: '{"stream": true}'
    headers:
      content-type:
      - application/json
    method: POST
    uri: http://127.0.0.1:1/v1/chat/completions
  response:
    body:
"""
TAIL = """    headers:
      x-a:
      - b
    status:
      code: 200
      message: OK
version: 1
"""


def _cassette(body: bytes | str) -> dict[str, Any]:
    req = Request(
        "POST",
        "http://127.0.0.1:1/v1/chat/completions",
        b'{"stream": true}',
        {"content-type": "application/json"},
    )
    resp = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"x-a": ["b"]},
        "body": {"string": body},
    }
    return {"requests": [req], "responses": [resp]}


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thresholds small enough for hand-written bodies to take the sliced paths."""
    monkeypatch.setattr(cassettes, "BIG", 8)
    monkeypatch.setattr(cassettes, "PIECE", 16)
    monkeypatch.setattr(readers, "LINE", 20)
    monkeypatch.setattr(readers, "READ", 5)


@pytest.fixture
def canary() -> Iterator[str]:
    secrets.register(CANARY)
    yield CANARY
    secrets.forget(CANARY)


def _save(path: Path, body: bytes | str) -> dict[str, Any]:
    cassette = _cassette(body)
    AtomicPersister.save_cassette(path, cassette, yamlserializer)
    return cassette


def _loaded(path: Path) -> list[bytes | str]:
    """The body as each reader has it: vcrpy's own YAML load, the replay's persister,
    ``analyze``'s loader."""
    vcrpy = yaml.load(path.read_text(), Loader=yamlserializer.Loader)
    _, responses = AtomicPersister.load_cassette(path, yamlserializer)
    ours = readers.load_cassette(path)
    return [
        vcrpy["interactions"][0]["response"]["body"]["string"],
        responses[0]["body"]["string"],
        ours["interactions"][0]["response"]["body"]["string"],
    ]


# ------------------------------------------------------------------ what is written

WRITTEN = [  # (body, the body's lines in the file): written by hand
    (
        b'data: {"c": "a\xc3\xa9"}\n\ndata: [DONE]\n\n',
        '      string: "data: {\\"c\\": \\"a\\xe9\\"}\\n\\ndata: [DONE]\\n\\n"\n',
    ),
    (
        b"a\\b\r\n\t\x00\x1f\x7f\xc2\x85\xc2\xa0\xe2\x80\xa8\xe2\x80\xa9\xef\xbb\xbf"
        b"\xef\xbf\xbe\xf0\x9f\x98\x80 z",
        '      string: "a\\\\b\\r\\n\\t\\x00\\x1f\\x7f\\x85\\xa0\\u2028\\u2029\\ufeff\\ufffe'
        '\\U0001f600 z"\n',
    ),
    (
        b"\xff\xfe" * 30 + b"\x00",  # not UTF-8: vcrpy's !!binary block, 76 characters a line
        "      string: !!binary |\n"
        "        //7//v/+//7//v/+//7//v/+//7//v/+//7//v/+//7//v/+//7//v/+//7//v/+//7//v/+//7/\n"
        "        /v/+AA==\n",
    ),
]


@pytest.mark.parametrize("body,lines", WRITTEN, ids=["sse", "escapes", "binary"])
def test_a_big_body_is_written_from_its_bytes(
    tmp_path: Path, small: None, body: bytes, lines: str
) -> None:
    cassette = _save(tmp_path / "c.yaml", body)
    assert (tmp_path / "c.yaml").read_text() == HEAD + lines + TAIL
    assert cassette["responses"][0]["body"]["string"] is body  # vcrpy's dict unchanged
    assert _loaded(tmp_path / "c.yaml")[1:] == [body, body]


def test_a_binary_body_set_aside_is_what_vcrpy_writes(
    tmp_path: Path, small: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cassettes, "PIECE", 120)  # two base64 lines a slice: 5 slices
    body = bytes(range(256)) * 2 + b"\xff"
    _save(tmp_path / "c.yaml", body)
    assert (tmp_path / "c.yaml").read_text() == serialize(_cassette(body), yamlserializer)


@pytest.mark.parametrize(
    "body", [b"", b"12345678", "text as str, long enough", b"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8"]
)
def test_a_body_not_set_aside_keeps_libyamls_bytes(
    tmp_path: Path, small: None, body: bytes | str
) -> None:
    cassette = _save(tmp_path / "c.yaml", body)
    assert (tmp_path / "c.yaml").read_text() == serialize(_cassette(body), yamlserializer)
    assert cassette["responses"][0]["body"]["string"] is body


def test_one_byte_over_the_threshold_is_set_aside(tmp_path: Path, small: None) -> None:
    _save(tmp_path / "c.yaml", b"123456789")
    assert (tmp_path / "c.yaml").read_text() == HEAD + '      string: "123456789"\n' + TAIL


def test_several_bodies_each_in_its_place(tmp_path: Path, small: None) -> None:
    cassette = _cassette(b"first body\n")
    cassette["requests"].append(cassette["requests"][0])
    cassette["responses"].append({"body": {"string": b"second\xff body"}, "status": {}})
    cassette["responses"].append("not a mapping")  # left to vcrpy as it is
    cassette["requests"].append(cassette["requests"][0])
    AtomicPersister.save_cassette(tmp_path / "c.yaml", cassette, yamlserializer)
    text = (tmp_path / "c.yaml").read_text()
    assert '      string: "first body\\n"\n' in text
    assert "      string: !!binary |\n        c2Vjb25k/yBib2R5\n" in text
    assert "  response: not a mapping\n" in text
    _, responses = AtomicPersister.load_cassette(tmp_path / "c.yaml", yamlserializer)
    assert [r["body"]["string"] for r in responses[:2]] == [b"first body\n", b"second\xff body"]


def test_a_body_whose_placeholder_is_not_found_fails_the_write(
    tmp_path: Path, small: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "c.yaml").write_text("the previous cassette\n")
    monkeypatch.setattr(cassettes, "_MARK_LINE", re.compile("never matches"))
    with pytest.raises(RuntimeError, match="a response body set aside was not written"):
        _save(tmp_path / "c.yaml", b"a body long enough")
    # the previous file is left as it was, and no temporary file stays
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]
    assert (tmp_path / "c.yaml").read_text() == "the previous cassette\n"


def test_a_big_body_is_redacted_slice_by_slice(tmp_path: Path, small: None, canary: str) -> None:
    body = (
        b"data: a\n" * 5 + b"data: x " + canary.encode() + b" y\n"
        b"data: Bearer abcdefghijkl\ndata: sk-abcdefghijklmnopqrstu\n"
    )
    _save(tmp_path / "c.yaml", body)
    text = (tmp_path / "c.yaml").read_text()
    assert (
        text
        == HEAD
        + (
            '      string: "' + "data: a\\n" * 5 + "data: x <redacted> y\\n"
            'data: Bearer <redacted>\\ndata: <redacted>\\n"\n'
        )
        + TAIL
    )
    assert not any(canary[i : i + 12] in text for i in range(len(canary) - 11))


def test_a_placeholder_is_not_redacted_and_not_a_body_elsewhere(
    tmp_path: Path, small: None
) -> None:
    # the marks are plain words: no key shape, no query, no user info
    mark = readers.set_aside_mark(3)
    assert secrets.redact(mark) == mark and len(mark) == len("conformance-set-aside-3-") + 16
    # a string equal to a mark in a request is not replaced by a body
    _save(tmp_path / "c.yaml", b"x" * 20)
    text = (tmp_path / "c.yaml").read_text()
    assert "conformance-set-aside" not in text


SLICES = [  # (data, size, the slices): written by hand, SLICE left at 1 MiB
    (b"ab\ncd\nef", 4, [(0, 3), (3, 6), (6, 8)]),
    (b"ab\ncd\nef", 6, [(0, 6), (6, 8)]),
    (b"abcdef\ngh", 2, [(0, 7), (7, 9)]),  # a line longer than a slice is one slice
    (b"ab\ncd\nef", None, [(0, 8)]),  # the default: SLICE
    (b"", 4, []),
]


@pytest.mark.parametrize("data,size,want", SLICES)
def test_a_body_is_written_in_slices_of_the_size_asked(
    data: bytes, size: int | None, want: list[tuple[int, int]]
) -> None:
    assert list(secrets.slices(data, size)) == want


# ------------------------------------------------------------------ round trips

# no "=", "@", "_" or "-": no query, user info or key shape for redaction to change
PIECES = st.characters(blacklist_categories=("Cs",), blacklist_characters="=@_-") | st.sampled_from(
    [
        "\x00",
        "\r",
        "\n",
        "\r\n",
        "\x85",
        "\u2028",
        "\u2029",
        "\ufeff",
        "\ufffe",
        "\U0001f600",
        '"',
        "\\",
        "\\x41",
        "\\u00e9",
        "\t",
        "é",
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    text=st.lists(PIECES, max_size=40).map("".join),
    raw=st.binary(max_size=60),
    read=st.integers(1, 12),
    slice_=st.integers(1, 24),
    binary=st.booleans(),
)
def test_every_body_round_trips_through_every_reader(
    tmp_path_factory: pytest.TempPathFactory,
    text: str,
    raw: bytes,
    read: int,
    slice_: int,
    binary: bool,
) -> None:
    body = raw if binary else text.encode()
    path = tmp_path_factory.mktemp("c") / "c.yaml"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cassettes, "BIG", 0)
        mp.setattr(cassettes, "PIECE", slice_)
        mp.setattr(readers, "LINE", 20)
        mp.setattr(readers, "READ", read)  # escapes straddle the slice ends
        _save(path, body)
        loaded = _loaded(path)
    as_bytes = [b.encode() if isinstance(b, str) else b for b in loaded]
    assert as_bytes == [body, body, body]
    # read with the default line size: the body line is short, libyaml reads it
    assert _loaded(path)[1] == body


@pytest.mark.parametrize("read", range(1, 13))
def test_escapes_straddle_the_slice_ends(
    tmp_path: Path, small: None, read: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readers, "READ", read)
    body = 'é"\\\\\n\U0001f600\x00\u2028x\\'.encode() * 3
    _save(tmp_path / "c.yaml", body)
    assert _loaded(tmp_path / "c.yaml")[1:] == [body, body]


# ------------------------------------------------------------------ what the loader reads


def _file(tmp_path: Path, line: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_bytes((HEAD + line + TAIL).encode("utf-8"))
    return path


ESCAPES = [  # (the body line, the body): written by hand; YAML's escapes Python lacks
    '      string: "a\\0b\\ac\\bd\\ve\\ff\\eg\\ h\\/i\\Nj\\_k\\Ll\\Pm\\\tn\\x41\\u00e9"\n',
    '      string: "\\\\0 \\\\e \\\\\\" z\\U0001F600"\n',
]
ESCAPED = [
    "a\0b\ac\bd\ve\ff\x1bg h/i\x85j\xa0k\u2028l\u2029m\tnA\u00e9".encode(),
    '\\0 \\e \\" z\U0001f600'.encode(),
]


@pytest.mark.parametrize("line,body", list(zip(ESCAPES, ESCAPED, strict=True)))
def test_yamls_other_escapes_are_decoded(
    tmp_path: Path, small: None, line: str, body: bytes
) -> None:
    loaded = _loaded(_file(tmp_path, line))
    assert [loaded[0].encode(), loaded[1], loaded[2]] == [body, body, body]


LOADED_WHOLE = [  # body lines the slice reader leaves to the YAML loader, and what it gives
    ('      string: "caf\xe9 au lait, raw"\n', "caf\xe9 au lait, raw"),  # raw non-ASCII
    (
        '      string: "a long line folded\n        on the next one"\n',
        "a long line folded on the next one",
    ),  # no closing quote on the line
    ('      string: "a long line ending \\"\n        there"\n', 'a long line ending " there'),
]


@pytest.mark.parametrize("line,value", LOADED_WHOLE)
def test_what_the_slice_reader_does_not_know_is_loaded_whole(
    tmp_path: Path, small: None, line: str, value: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes((HEAD + line + TAIL).encode("utf-8"))
    assert readers.load_cassette(path)["interactions"][0]["response"]["body"]["string"] == value


@pytest.mark.parametrize(
    "end,valid", [('"', True), ('"\r', True), ("", False), ("\\", False), ('\\"', False)]
)
def test_a_body_line_that_ends_the_file_is_loaded_whole(
    tmp_path: Path, small: None, end: str, valid: bool
) -> None:
    path = tmp_path / "c.yaml"
    path.write_bytes(
        b'interactions:\n- response:\n    body:\n      string: "a long body at '
        b"the end" + end.encode()
    )  # no line end: the last line of the file
    if valid:
        assert readers.load_cassette(path) == {
            "interactions": [{"response": {"body": {"string": "a long body at the end"}}}]
        }
    else:
        with pytest.raises(InputError, match="not valid YAML"):
            readers.load_cassette(path)


def test_a_body_line_inside_a_block_scalar_stays_text(tmp_path: Path, small: None) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        'interactions:\n- note: |\n    string: "inside a block, long"\n  response: {}\nversion: 1\n'
    )
    assert readers.load_cassette(path)["interactions"] == [
        {"note": 'string: "inside a block, long"\n', "response": {}}
    ]


BAD_ESCAPES = [  # (the body line, the YAML loader's reason): the file is loaded whole
    ('      string: "a long body with a \\q bad escape"\n', "found unknown escape character"),
    (
        '      string: "a long line with \\ud83d alone"\n',
        "found invalid Unicode character escape code",
    ),
    ('      string: "a long line with \\xZZ in it"\n', "did not find expected hexdecimal number"),
]


@pytest.mark.parametrize("line,reason", BAD_ESCAPES)
def test_a_bad_escape_is_the_yaml_error_with_its_line(
    tmp_path: Path, small: None, line: str, reason: str
) -> None:
    path = _file(tmp_path, line)
    with pytest.raises(InputError) as e:
        readers.load_cassette(path)
    assert str(e.value) == f"{path}:11: not valid YAML ({reason})"


def test_an_error_after_a_body_line_has_its_line(tmp_path: Path, small: None) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(HEAD + '      string: "a body long enough"\n' + TAIL + "[bad\n")
    with pytest.raises(InputError) as e:
        readers.load_cassette(path)
    # the body line stands as one line: the numbers of the lines after it hold
    assert str(e.value) == f"{path}:20: not valid YAML (could not find expected ':')"


def test_a_long_line_that_is_no_body_is_read_whole(tmp_path: Path, small: None) -> None:
    path = _file(tmp_path, "      string: a plain scalar, long enough\n")
    assert _loaded(path) == [
        "a plain scalar, long enough",
        b"a plain scalar, long enough",
        "a plain scalar, long enough",
    ]


def test_a_file_that_is_not_utf8_is_vcrpys_decode_error(tmp_path: Path) -> None:
    from vcr.persisters.filesystem import CassetteDecodeError

    path = tmp_path / "c.yaml"
    path.write_bytes(HEAD.encode() + b"      string: caf\xe9\n" + TAIL.encode())
    with pytest.raises(CassetteDecodeError):
        AtomicPersister.load_cassette(path, yamlserializer)


def test_a_missing_cassette_is_vcrpys_not_found(tmp_path: Path) -> None:
    with pytest.raises(cassettes.CassetteNotFoundError):
        AtomicPersister.load_cassette(tmp_path / "none.yaml", yamlserializer)


# ------------------------------------------------------------------ memory

EVENT = (
    'data: {"choices": [{"index": 0, "delta": {"content": "'
    + '\u00e9t\u00e9 \\"quoted\\" ' * 40
    + '"}}]}\n\n'
).encode()


def test_a_big_body_is_saved_and_loaded_within_a_constant(tmp_path: Path) -> None:
    body = EVENT * (8 * MiB // len(EVENT))  # 8 MiB held as bytes, many escapes
    path = tmp_path / "c.yaml"
    _, peak = traced(lambda: _save(path, body))
    # Measured: 3.2 MiB whatever the body's size (a 1 MiB slice as text, redacted,
    # escaped and encoded); the dump of the whole body, 3 times the body and more.
    assert peak < 5 * MiB, peak / MiB
    assert path.stat().st_size > 10 * MiB
    (_, responses), peak = traced(lambda: AtomicPersister.load_cassette(path, yamlserializer))
    assert responses[0]["body"]["string"] == body
    # Measured: the body + 1.0 MiB (grown in place, a 256 KiB slice decoded); vcrpy's
    # loader held the text of the file and the body's str beside the bytes.
    assert peak < len(body) + 2 * MiB, peak / MiB
    data, peak = traced(lambda: readers.load_cassette(path))
    assert data["interactions"][0]["response"]["body"]["string"] == body
    assert peak < len(body) + 2 * MiB, peak / MiB


# ------------------------------------------------------------------ the slice reader's parts
# The loader falls back to the whole file on any ValueError, so its parts are judged here
# directly: a wrong decode would otherwise only cost memory.

UNESCAPED = [  # (a slice of a body line, its bytes): written by hand
    (b'a\\"b\\\\c\\n\\r\\t\\x41\\u00e9\\U0001f600 z', 'a"b\\c\n\r\tA\u00e9\U0001f600 z'.encode()),
    (b"\\0\\x41\\u00e9\\U0001F600\\e\\\\q", "\0A\u00e9\U0001f600\x1b\\q".encode()),
    (b"\\\\0 \\\\e", b"\\0 \\e"),
    (b"", b""),
]


@pytest.mark.parametrize("data,body", UNESCAPED)
def test_a_slice_is_unescaped_as_yaml_does(data: bytes, body: bytes) -> None:
    assert readers._unescape(memoryview(data)) == body


UNESCAPE_ERRORS = [  # (a slice, the ValueError's message): written by hand
    (b"caf\xc3\xa9", "a raw byte outside printable ASCII"),
    (b"a\x00b", "a raw byte outside printable ASCII"),
    (b"\\q", "an escape YAML does not know: b'q'"),
    (b"\\0\\x4", "an escape YAML does not know: b'x'"),
    (b"\\0\\", "an escape YAML does not know: b''"),
]


@pytest.mark.parametrize("data,message", UNESCAPE_ERRORS)
def test_what_the_slice_reader_cannot_decode_is_a_value_error(data: bytes, message: str) -> None:
    with pytest.raises(ValueError) as e:
        readers._unescape(memoryview(data))
    assert str(e.value) == message


OPEN_ESCAPES = [  # (data, end, where an escape cut by end starts, else end): by hand
    (b"abc", 3, 3),
    (b"ab\\", 3, 2),  # a lone backslash
    (b"ab\\\\", 4, 4),  # an escaped backslash
    (b"ab\\\\\\", 5, 4),  # and a lone one
    (b"a\\n", 3, 3),
    (b"a\\x4", 4, 1),
    (b"a\\x41", 5, 5),
    (b"a\\u00e", 6, 1),
    (b"a\\u00e9", 7, 7),
    (b"a\\U0001f60", 10, 1),
    (b"a\\U0001f600", 11, 11),
    (b'ab\\"', 3, 2),  # what lies past end is not looked at
    (b"\\" * 64, 64, 64),  # a long run, counted whole
    (b"\\" * 65, 65, 64),
    (b"x" * 70 + b"\\", 71, 70),
    (b"x" * 70 + b"\\\\", 72, 72),
]


@pytest.mark.parametrize("data,end,at", OPEN_ESCAPES)
def test_an_escape_cut_by_the_slice_end_is_kept_back(data: bytes, end: int, at: int) -> None:
    assert readers._open_escape(data, end) == at


def test_a_body_line_is_read_to_its_closing_quote(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readers, "READ", 3)
    f = io.BytesIO(b'"b\\x41c\\\\"\nnext: 1\n')
    assert readers._read_body(f, b"a\\") == b'a"bAc\\'  # the head ends inside an escape
    assert f.read() == b"next: 1\n"  # the line read to its end, no further


@pytest.mark.parametrize("rest", [b"abc\n", b'abc\\"\n', b'abc"', b'abc" \n', b""])
def test_a_body_line_without_its_closing_quote_is_a_value_error(
    monkeypatch: pytest.MonkeyPatch, rest: bytes
) -> None:
    monkeypatch.setattr(readers, "READ", 2)
    with pytest.raises(ValueError) as e:
        readers._read_body(io.BytesIO(rest), b"")
    assert str(e.value) == "no closing quote"


def test_every_body_is_put_back_and_counted() -> None:
    data = {"a": [{"string": "m1"}, {"string": "m2"}, "m1x"], "b": "m2"}
    assert readers._put_back(data, {"m1": b"one", "m2": b"two"}) == 3
    assert data == {"a": [{"string": b"one"}, {"string": b"two"}, "m1x"], "b": b"two"}


def test_only_a_line_longer_than_line_is_sliced_and_each_body_has_its_mark(
    tmp_path: Path, small: None
) -> None:
    seen: list[bytes] = []

    def load(text: bytes) -> Any:
        seen.append(text)
        return yaml.safe_load(text)

    path = tmp_path / "c.yaml"
    whole = b'a:\n  string: "1234567"\n'  # its body line is LINE bytes, line end included
    assert len(whole.splitlines(keepends=True)[1]) == readers.LINE
    path.write_bytes(whole)
    assert readers.load_yaml(path, load) == {"a": {"string": "1234567"}}
    assert seen == [whole]  # read as it is, once
    seen.clear()
    path.write_bytes(b'a:\n  string: "one body, long"\nb:\n  string: "another long body"\n')
    assert readers.load_yaml(path, load) == {
        "a": {"string": b"one body, long"},
        "b": {"string": b"another long body"},
    }
    (text,) = seen  # loaded once: the bodies put back, not the file loaded again
    assert re.fullmatch(
        rb"a:\n  string: conformance-set-aside-0-[0-9a-f]{16}\n"
        rb"b:\n  string: conformance-set-aside-1-[0-9a-f]{16}\n",
        text,
    ), text
