"""Keys never reach a file, whatever form they take in a body: behind JSON escapes
(``\\u0043``, ``\\u004A``, ``\\/``), key-shaped or after an authorization scheme or in a
URL inside a line longer than a redaction slice, on a line cut where a slice ends, or
split across events whose lines hold strings long enough to be cut to their ends.
Fast and in-process: what the mutation run (issue 29) needs to judge ``secrets`` first
by these tests, not by the ~1,400 others that reach ``redact``. The keys are fake
canaries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance import secrets as S

KEY = "CANARYform-09~xyz/AZaz"  # a slash (for \/), a tilde and a dash: ASCII 0x2d..0x7e


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    yield
    S.forget()


def written(tmp_path: Path, data: str | bytes) -> bytes:
    """What ``write_atomic`` leaves in a file."""
    p = tmp_path / "out"
    S.write_atomic(p, data)
    return p.read_bytes()


def escaped(text: str, upper: bool = False, every: int = 1) -> str:
    """``text`` with every ``every``-th character written as a JSON ``\\u`` escape."""
    out = []
    for i, c in enumerate(text):
        if i % every == 0:
            code = f"{ord(c):04x}"
            out.append("\\u" + (code.upper() if upper else code))
        else:
            out.append(c)
    return "".join(out)


# ------------------------------------------------------------------ JSON escapes


@pytest.mark.parametrize(
    "form",
    [
        escaped(KEY),
        escaped(KEY, upper=True),
        escaped(KEY, every=2),
        escaped(KEY, upper=True, every=3),
        KEY.replace("/", "\\/"),  # only the slash escaped: no \u at all
        escaped(KEY, every=5).replace("/", "\\/"),
    ],
)
def test_a_known_key_behind_json_escapes_never_reaches_the_file(tmp_path: Path, form: str) -> None:
    S.register(KEY)
    body = 'data: {"content":"one ' + form + ' two"}\n\n'
    expected = b'data: {"content":"one <redacted> two"}\n\n'
    assert written(tmp_path, body) == expected
    assert written(tmp_path, body.encode()) == expected
    # what a reader decodes holds no key either
    assert KEY not in json.loads(written(tmp_path, body)[6:])["content"]


def test_escapes_that_hide_no_key_are_left_as_written(tmp_path: Path) -> None:
    S.register(KEY)
    body = 'data: {"content":"\\u0043ANARY \\/ CANARYform \\u00e9"}\n\n'
    assert written(tmp_path, body) == body.encode()


def test_an_escaped_slash_stands_for_a_slash_only() -> None:
    # the key behind escapes is redacted; "\\/" where its first letter should be is no key
    S.register(KEY)
    text = "a " + escaped(KEY) + " b \\/" + KEY[1:] + " c"
    assert S.redact(text) == "a <redacted> b \\/" + KEY[1:] + " c"


def test_an_escape_of_a_character_outside_printable_ascii_is_not_undone() -> None:
    # a key is ASCII: \u0009 (a tab) never stands for one of its characters
    S.register("CANARY\tTAB99")
    assert S.redact("x CANARY\\u0009TAB99 y") == "x CANARY\\u0009TAB99 y"
    assert S.redact("x CANARY\tTAB99 y") == "x <redacted> y"


# ------------------------------------------------------------------ long lines

SMALL_SLICE = 1 << 13
LONG = b"x" * (SMALL_SLICE + 100)  # a line longer than a (small) redaction slice


@pytest.fixture
def small_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices of 8 KiB, not 1 MiB: the same paths through ``redact_bytes``, faster."""
    monkeypatch.setattr(S, "SLICE", SMALL_SLICE)


@pytest.mark.parametrize(
    ("needle", "expected"),
    [
        (b"sk-" + b"a1" * 10, b"<redacted>"),
        (b"AIza" + b"b2" * 16, b"<redacted>"),
        (b"gsk_" + b"c3" * 11, b"<redacted>"),
        (b"xai-" + b"d4" * 11, b"<redacted>"),
        (b"hf_" + b"e5" * 11, b"<redacted>"),
        (b"Bearer abcdefgh12", b"Bearer <redacted>"),
        (b"BASIC dXNlcjpwYXNz", b"BASIC <redacted>"),
        (b"token 0123456789ab", b"token <redacted>"),
        (b"Token\t0123456789ab", b"Token\t<redacted>"),
        (b"/v1?key=abcdef123", b"/v1?key=<redacted>"),
        (b"/v1?a=1&token=abcdef123", b"/v1?a=1&token=<redacted>"),
        (b"https://joe:pw1234@h.test/", b"https://<redacted>@h.test/"),
    ],
)
def test_a_key_in_a_line_longer_than_a_slice_never_reaches_the_file(
    small_slice: None, tmp_path: Path, needle: bytes, expected: bytes
) -> None:
    for body, out in [
        (b" " + needle + b" " + LONG + b"\n", b" " + expected + b" " + LONG + b"\n"),
        (LONG + b" " + needle + b"\n", LONG + b" " + expected + b"\n"),
    ]:
        assert written(tmp_path, body) == out


@pytest.mark.parametrize(
    ("prefix", "form"),
    [("", KEY), ("", escaped(KEY)), ("", KEY.replace("/", "\\/")), ("é ", KEY)],
)
def test_a_known_key_in_a_line_longer_than_a_slice_never_reaches_the_file(
    small_slice: None, tmp_path: Path, prefix: str, form: str
) -> None:
    S.register(KEY)
    body = LONG + (" " + prefix + form + " end\n").encode()
    assert written(tmp_path, body) == LONG + (" " + prefix + "<redacted> end\n").encode()


@pytest.mark.parametrize(
    "body",
    [
        LONG + b" a=b and c@d\n",  # an "=" with no "?" or "&", an "@" with no "://"
        LONG + b" ?x and &y, c://d\n",  # no "=", no "@"
        LONG + b" tokens 12 basi bearers\n".replace(b"basi ", b"bas i "),
        b"\xc3\xa9" + LONG + b" plain\n",  # not ASCII
    ],
)
def test_a_long_line_with_nothing_to_redact_is_written_as_it_is(
    small_slice: None, tmp_path: Path, body: bytes
) -> None:
    S.register(KEY)
    assert written(tmp_path, body) == body


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (KEY.encode(), b"<redacted>"),  # a known key at the body's first byte
        (b"?key=abcdef123", b"?key=<redacted>"),  # the query's "?" at the first byte
        (b"&token=abcdef123", b"&token=<redacted>"),  # its "&" there
        (b"=x ?key=abcdef123", b"=x ?key=<redacted>"),  # an "=" there, the query's later
        (b"@ https://joe:pw1234@h.test/", b"@ https://<redacted>@h.test/"),  # an "@" there
        (b"://x https://joe:pw1234@h.test/", b"://x https://<redacted>@h.test/"),  # a "://"
    ],
)
def test_a_key_at_the_first_byte_of_a_line_longer_than_a_slice_never_reaches_the_file(
    small_slice: None, tmp_path: Path, head: bytes, expected: bytes
) -> None:
    # what the cheap test of a long line looks for, found at offset 0 of the body
    S.register(KEY)
    body = head + b" " + LONG + b"\n"
    assert written(tmp_path, body) == expected + b" " + LONG + b"\n"


def test_a_long_clean_line_is_kept_after_and_before_a_redacted_one(
    small_slice: None, tmp_path: Path
) -> None:
    key = b"sk-" + b"f6" * 10
    for body, out in [
        (b"a " + key + b"\n" + LONG + b"\n", b"a <redacted>\n" + LONG + b"\n"),
        (LONG + b"\n" + b"a " + key + b"\n", LONG + b"\n" + b"a <redacted>\n"),
        (
            b"a " + key + b"\n" + LONG + b"\n" + key + b"\n",
            b"a <redacted>\n" + LONG + b"\n<redacted>\n",
        ),
    ]:
        assert written(tmp_path, body) == out


def test_a_scheme_name_across_a_hint_step_is_seen(tmp_path: Path) -> None:
    # the text is lowered a piece at a time: a scheme's name across two pieces is found
    for at in range(S._HINT_STEP - 6, S._HINT_STEP + 1):
        text = "x " * (at // 2) + "x" * (at % 2) + " Bearer abcdefgh12 y"
        assert S.redact(text) == text.replace("abcdefgh12", "<redacted>")
    # and in a line longer than a (real) slice, told clean or not from its bytes
    head, tail = b"x" * (S._HINT_STEP - 4) + b" ", b"y" * S.SLICE + b"\n"
    body = head + b"bearer abcdefgh12 " + tail
    assert written(tmp_path, body) == head + b"bearer <redacted> " + tail


# ------------------------------------------------------------------ slices


@pytest.mark.parametrize("end", [b"\n", b"\r", b"\r\n"])
def test_a_key_on_a_line_where_a_slice_ends_never_reaches_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, end: bytes
) -> None:
    monkeypatch.setattr(S, "SLICE", 64)
    key = b"sk-" + b"a1b2" * 5
    # lines of every length around a slice, each starting and ending with a key
    body = b"".join(key + b" " + b"y" * n + b" " + key + end for n in range(20, 110, 7))
    out = written(tmp_path, body)
    assert b"sk-" not in out
    assert out.count(b"<redacted>") == 2 * len(range(20, 110, 7))
    assert out == body.replace(key, b"<redacted>")


def test_a_known_key_on_lines_around_slice_ends_never_reaches_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(S, "SLICE", 50)
    S.register(KEY)
    body = "".join("z" * n + KEY + "\n" for n in range(0, 120, 9)).encode()
    assert written(tmp_path, body) == body.replace(KEY.encode(), b"<redacted>")


# ------------------------------------------------------------------ split keys, long lines


def event(content: str, space: bool = True) -> str:
    chunk = {"choices": [{"index": 0, "delta": {"content": content}}]}
    return "data:" + (" " if space else "") + json.dumps(chunk) + "\n\n"


def contents(body: bytes) -> list[str]:
    return [
        json.loads(line[5:])["choices"][0]["delta"]["content"]
        for line in body.decode().splitlines()
        if line.startswith("data:")
    ]


@pytest.mark.parametrize("space", [True, False])
@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("x" * (S.LONG_LINE + 10), ""),  # the long string ends where the key starts
        ("", "y" * (S.LONG_LINE + 10)),  # the long string starts where the key ends
        ("é" * (S.LONG_LINE // 2), ""),  # escaped (\u00e9) and cut inside an escape
        ("\\" * (S.LONG_LINE + 11), ""),  # a long run of escaped backslashes
    ],
)
def test_a_key_split_across_events_with_long_strings_never_reaches_the_file(
    tmp_path: Path, before: str, after: str, space: bool
) -> None:
    S.register(KEY)
    body = (
        event("a", space)
        + event(before + KEY[:7], space)
        + event(KEY[7:] + after, space)
        + event("b", space)
    )
    # a body as bytes (written) and as text (a cassette's body string)
    for out in (written(tmp_path, body.encode()), S.redact_body(body).encode()):
        assert contents(out) == ["a", before + "<redacted>", "<redacted>" + after, "b"]


def test_a_key_split_across_events_with_raw_non_ascii_long_strings(tmp_path: Path) -> None:
    S.register(KEY)
    long_ = "é€" * (S.LONG_LINE // 3) + "e"  # raw UTF-8 of 2 and 3 bytes: cut inside one

    def raw(content: str) -> str:
        chunk = {"choices": [{"index": 0, "delta": {"content": content}}]}
        return "data: " + json.dumps(chunk, ensure_ascii=False) + "\n\n"

    body = raw(long_ + KEY[:5]) + raw(KEY[5:] + long_)
    out = written(tmp_path, body.encode())
    assert contents(out) == [long_ + "<redacted>", "<redacted>" + long_]


def test_a_key_holding_a_line_end_is_redacted_across_slices(
    small_slice: None, tmp_path: Path
) -> None:
    S.register("CANARY\nLINE42")
    body = b"a CANARY\nLINE42 b\n" + LONG + b"\n"
    assert written(tmp_path, body) == b"a <redacted> b\n" + LONG + b"\n"


def call(index: int, arguments: str) -> str:
    delta = {"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}) + "\n\n"


def arguments(body: bytes) -> list[str]:
    return [
        json.loads(line[5:])["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
        for line in body.decode().splitlines()
        if line.startswith("data:")
    ]


def both(tmp_path: Path, body: str) -> list[bytes]:
    """A body redacted as bytes (written) and as text (a cassette's body string)."""
    return [written(tmp_path, body.encode()), S.redact_body(body).encode()]


def test_a_key_split_before_its_last_character_never_reaches_the_file(tmp_path: Path) -> None:
    body = event("x " + KEY[:-1]) + event(KEY[-1:] + " y")
    S.register(KEY)
    for out in both(tmp_path, body):
        assert contents(out) == ["x <redacted>", "<redacted> y"]


def test_a_key_streamed_in_two_parallel_calls_never_reaches_the_file(tmp_path: Path) -> None:
    # both calls hold the key's start when the first continues it: both starts are marked
    S.register(KEY)
    body = call(0, KEY[:10]) + call(1, KEY[:10]) + call(0, KEY[10:]) + call(1, KEY[10:])
    for out in both(tmp_path, body):
        assert arguments(out) == ["<redacted>"] * 4


def test_every_start_a_key_may_continue_is_redacted_up_to_the_search_s_bound(
    tmp_path: Path,
) -> None:
    # a client may join the rest to any of the first character's events (parallel calls
    # attributed any way): the last KEEP of them, all here, are marked
    S.register(KEY)
    n = S._SplitSearch.KEEP - 1
    body = "".join(event(KEY[0]) for _ in range(n)) + event(KEY[1]) + event(KEY[2:])
    for out in both(tmp_path, body):
        assert contents(out) == ["<redacted>"] * (n + 2)


def test_pieces_of_a_key_in_two_fields_are_not_joined(tmp_path: Path) -> None:
    # a client never joins a call's name to its arguments: kept as written, while the key
    # split across two content deltas is redacted
    S.register(KEY)

    def field(name: str, value: str) -> str:
        return "data: " + json.dumps({name: value}) + "\n\n"

    others = field("name", KEY[:5]) + field("arguments", KEY[5:])
    body = event("x " + KEY[:8]) + event(KEY[8:] + " y") + others
    expected = event("x <redacted>") + event("<redacted> y") + others
    for out in both(tmp_path, body):
        assert out == expected.encode()


def test_an_event_whose_data_lines_surround_an_id_line_is_one_event(tmp_path: Path) -> None:
    # SSE: only a blank line ends an event; the JSON spans both data lines
    S.register(KEY)
    body = (
        'data: {"c":\nid: 7\ndata: "x ' + KEY[:10] + '"}\n\ndata: {"c": "' + KEY[10:] + ' y"}\n\n'
    )
    expected = 'data: {"c": "x <redacted>"}\nid: 7\n\ndata: {"c": "<redacted> y"}\n\n'
    for out in both(tmp_path, body):
        assert out == expected.encode()


def test_a_cut_off_stream_s_last_event_of_two_data_lines_is_redacted(tmp_path: Path) -> None:
    # no blank line, no line end at the end (a stream cut off): the event is rewritten as
    # one data line, ended as the data line it replaces was
    S.register(KEY)
    body = 'data: {"c": "x ' + KEY[:10] + '"}\n\ndata: {"c":\ndata: "' + KEY[10:] + ' y"}'
    expected = 'data: {"c": "x <redacted>"}\n\ndata: {"c": "<redacted> y"}\n'
    for out in both(tmp_path, body):
        assert out == expected.encode()


def test_a_data_line_removed_from_an_event_takes_its_own_line_end(tmp_path: Path) -> None:
    # line ends of three kinds in one event: each line that goes takes the end it had
    S.register(KEY)
    body = 'data: {"c":\r\ndata: "x ' + KEY[:10] + '"}\n\ndata: {"c": "' + KEY[10:] + ' y"}\r\r'
    expected = 'data: {"c": "x <redacted>"}\r\n\ndata: {"c": "<redacted> y"}\r\r'
    for out in both(tmp_path, body):
        assert out == expected.encode()


JWT_LIKE = "CANARYjwt" + "".join(f"{i % 10}{'klmnopqrst'[i % 10]}" for i in range(350))  # 709


def test_a_long_key_begun_escaped_at_the_end_of_a_long_line_never_reaches_the_file(
    tmp_path: Path,
) -> None:
    # a key of 709 characters (a JWT's size), its start written as \u escapes (six
    # characters each) at the end of a line long enough to have its strings cut: the cut
    # keeps enough of the string's end to find where the key starts
    S.register(JWT_LIKE)
    head = "x" * (S.LONG_LINE + 10)
    body = (
        'data: {"c": "' + head + escaped(JWT_LIKE[:700]) + '"}\n\n'
        'data: {"c": "' + JWT_LIKE[700:] + ' y"}\n\n'
    )
    expected = ('data: {"c": "' + head + '<redacted>"}\n\ndata: {"c": "<redacted> y"}\n\n').encode()
    assert written(tmp_path, body.encode()) == expected
    assert S.redact_body(body).encode() == expected


def test_a_long_data_line_holding_bytes_that_are_not_utf8_is_redacted_around_them(
    tmp_path: Path,
) -> None:
    # its long string cut for the split search, the bytes kept: the rest still redacted
    S.register(KEY)
    long_ = b"\xff" + b"x" * (S.LONG_LINE + 10)
    body = b'data: {"c": "' + long_ + b'"}\n\ndata: {"c": "a ' + KEY.encode() + b' b"}\n\n'
    expected = b'data: {"c": "' + long_ + b'"}\n\ndata: {"c": "a <redacted> b"}\n\n'
    assert written(tmp_path, body) == expected


# ------------------------------------------------------------------ a key a character at a time

LONG_KEY = "CANARYlong" + "".join(f"{i % 10}{'abcdefghij'[i % 10]}" for i in range(60))  # 130


@pytest.mark.parametrize("size", [1, 2])
def test_a_long_key_streamed_a_character_per_event_never_reaches_the_file(
    tmp_path: Path, size: int
) -> None:
    # more fragments than the split search keeps by default (64): every one is marked
    S.register(LONG_KEY)
    text = "x " + LONG_KEY + " y"
    body = "".join(event(text[i : i + size]) for i in range(0, len(text), size))
    for out in (written(tmp_path, body.encode()), S.redact_body(body).encode()):
        joined = "".join(contents(out))
        assert joined.replace("<redacted>", "") == "x  y"
        assert not any(LONG_KEY[i : i + 6] in joined for i in range(len(LONG_KEY) - 5))


def test_a_long_key_in_a_call_s_arguments_a_character_per_event_never_reaches_the_file(
    tmp_path: Path,
) -> None:
    S.register(LONG_KEY)
    args = '{"key": "' + LONG_KEY + '"}'

    def call(piece: str) -> str:
        delta = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
        return "data: " + json.dumps({"choices": [{"index": 0, "delta": delta}]}) + "\n\n"

    out = written(tmp_path, "".join(call(c) for c in args).encode())
    joined = "".join(
        json.loads(line[5:])["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
        for line in out.decode().splitlines()
        if line.startswith("data:")
    )
    assert joined.replace("<redacted>", "") == '{"key": ""}'


# ------------------------------------------------------------------ events rewritten


def test_an_event_of_several_data_lines_is_written_back_as_one_redacted_line(
    tmp_path: Path,
) -> None:
    S.register(LONG_KEY)
    first = json.dumps({"choices": [{"index": 0, "delta": {"content": "é " + LONG_KEY[:9]}}]})
    cut = first.index('"delta"')
    body = (
        f"data: {first[:cut]}\r\ndata: {first[cut:]}\r\n\r\n"
        + event(LONG_KEY[9:] + " y").replace("\n", "\r\n")
        + ": a comment\r\n\r\n"
    )
    out = written(tmp_path, body.encode())
    assert out.decode().split("\r\n") == [
        'data: {"choices": [{"index": 0, "delta": {"content": "é <redacted>"}}]}',
        "",
        'data: {"choices": [{"index": 0, "delta": {"content": "<redacted> y"}}]}',
        "",
        ": a comment",
        "",
        "",
    ]


def test_an_event_holding_bytes_that_are_not_utf8_is_written_back_escaped(
    tmp_path: Path,
) -> None:
    S.register(LONG_KEY)
    body = (
        b'data: {"c": "\xc3\xa9 \xff ' + LONG_KEY[:9].encode() + b'"}\n\n'
        b'data: {"c": "' + LONG_KEY[9:].encode() + b' z"}\n\n'
    )
    out = written(tmp_path, body)
    first, second = out.split(b"\n\n")[:2]
    # the event changed cannot be written raw (a lone surrogate): escaped JSON, the same text
    assert first == b'data: {"c": "\\u00e9 \\udcff <redacted>"}'
    assert second == b'data: {"c": "<redacted> z"}'


# ------------------------------------------------------------------ text sinks


def test_a_key_written_in_pieces_on_one_line_never_reaches_the_file(tmp_path: Path) -> None:
    S.register(KEY)
    p = tmp_path / "c.yaml"

    def emit(sink: S.RedactingLines) -> None:
        sink.write("a: " + KEY[:5])
        sink.write(KEY[5:12])
        sink.write(KEY[12:] + " b\nc: sk-")  # a line end inside a piece
        sink.write("a1b2c3d4e5f6a7b8c9\nd: ")
        sink.write("tail " + KEY)  # the end of the text, with no line end

    S.write_atomic_text(p, emit)
    assert p.read_text() == "a: <redacted> b\nc: <redacted>\nd: tail <redacted>"


def test_a_text_sink_writes_a_long_line_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(S, "SLICE", 10)
    p = tmp_path / "c.yaml"
    line = "é" * 25 + " sk-" + "ab12" * 5 + "\n"
    S.write_atomic_text(p, lambda sink: sink.write(line * 2))
    assert p.read_text(encoding="utf-8") == ("é" * 25 + " <redacted>\n") * 2


# ------------------------------------------------------------------ schemes


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("token abcdefghijk1", "token <redacted>"),  # 12 characters with a digit
        ("token abcdefghij1", "token abcdefghij1"),  # 11: prose-like, kept
        ("token abcdefghijkl", "token abcdefghijkl"),  # no digit: a word, kept
        ("Token\t0123456789ab", "Token\t<redacted>"),
        ("bearer abcdefgh", "bearer <redacted>"),  # a bearer token needs no digit
        ("basic abcdefgh", "basic <redacted>"),
        ("basic abcdefg", "basic abcdefg"),  # under 8 characters
        ("prompt_tokens 123456789012x", "prompt_tokens 123456789012x"),
    ],
)
def test_a_scheme_s_credentials_are_redacted_and_prose_is_kept(text: str, expected: str) -> None:
    assert S.redact("see " + text + " end") == "see " + expected + " end"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Bearer abcdefgh12 x", "Bearer <redacted> x"),
        ("basic dXNlcjpwYXNz", "basic <redacted>"),
        ("token 0123456789ab", "token <redacted>"),
    ],
)
def test_a_scheme_at_the_first_character_of_a_text_is_redacted(text: str, expected: str) -> None:
    assert S.redact(text) == expected


def test_a_key_shape_is_redacted_in_a_text_holding_every_shape_s_prefix() -> None:
    text = "prefixes: sk- AIza gsk_ xai- hf_, key: sk-a1b2c3d4e5f6a7b8c9d0"
    assert S.redact(text) == "prefixes: sk- AIza gsk_ xai- hf_, key: <redacted>"


# ------------------------------------------------------------------ long strings cut to their ends


def cut(line: Any, keep: int) -> Any:
    """``line`` (str or bytes) with its long strings cut to their ends."""
    return line[:0].join(bytes(p) if isinstance(p, memoryview) else p for p in pieces(line, keep))


def pieces(line: Any, keep: int) -> list[Any]:
    return S.shorten_strings(line, 0, len(line), keep)


def test_a_long_string_whose_cut_part_ends_in_half_a_character_is_not_cut() -> None:
    # the cut part ends with the lead byte of a character that never ends: invalid UTF-8,
    # so the line is left whole (a cut would make it valid)
    line = b'["' + b"s" * 200 + b"\xc3" + b"t" * 10 + b'"]'
    assert b"".join(S.shorten_strings(line, 0, len(line), 10)) == line
    fine = b'["' + b"s" * 200 + b"\xc3\xa9" + b"t" * 10 + b'"]'
    assert (
        b"".join(S.shorten_strings(fine, 0, len(fine), 10)) == b'["' + b"s" * 10 + b"t" * 10 + b'"]'
    )


@pytest.mark.parametrize("kind", [str, bytes])
def test_a_string_is_cut_only_when_longer_than_both_ends_and_64(kind: type) -> None:
    def as_kind(text: str) -> Any:
        return text if kind is str else text.encode()

    whole = as_kind('["' + "s" * 84 + '"]')  # 2 * 10 + 64 characters: kept whole
    assert cut(whole, 10) == whole
    longer = as_kind('["' + "s" * 70 + "t" * 15 + '"]')  # one more: its ends only
    assert cut(longer, 10) == as_kind('["' + "s" * 10 + "t" * 10 + '"]')


@pytest.mark.parametrize(
    ("inside", "head"),
    [
        ("abcd\\u00e9", "abcd\\u00e9"),  # an escape ending at the cut is kept whole
        ("abcdefgh\\n", "abcdefgh\\n"),
        ("abcdefg\\\\n", "abcdefg\\\\n"),  # an escaped backslash, then a letter
        ("abcdefgh\\u00e9", "abcdefgh"),  # one across the cut goes whole
        ("abcdefghi\\n", "abcdefghi"),
        ("abcdefg\\\\\\n", "abcdefg\\\\"),  # a run of three: the last starts an escape
    ],
)
@pytest.mark.parametrize("kind", [str, bytes])
def test_a_long_string_is_never_cut_inside_an_escape(kind: type, inside: str, head: str) -> None:
    line = '["' + inside + "f" * 100 + "z" * 10 + '"]'
    expected = '["' + head + "z" * 10 + '"]'
    data = line if kind is str else line.encode()
    out = cut(data, 10)
    assert out == (expected if kind is str else expected.encode())
    assert json.loads(out)[0].endswith("z" * 10)


def test_an_escape_across_the_cut_after_a_long_run_of_other_characters() -> None:
    # the backslashes before an escape are counted back 64 characters at a time: an
    # escape 129 characters further back is no part of the run
    inside = "s" * 68 + "\\u00e9" + "s" * 123 + "\\u00e9" + "t" * 400 + "y" * 200
    out = cut('["' + inside + '"]', 200)
    assert out == '["' + inside[:197] + "y" * 200 + '"]'
    assert json.loads(out) == ["s" * 68 + "é" + "s" * 123 + "y" * 200]


def test_a_long_string_of_raw_utf8_is_cut_between_characters() -> None:
    # "Ā" is C4 80: its second byte, 0x80, is the lowest continuation byte
    line = ('["' + "Ā" * 60 + '"]').encode()
    assert cut(line, 11).decode() == '["' + "Ā" * 11 + '"]'


def test_a_byte_that_is_no_utf8_is_kept_as_it_is_at_the_cut() -> None:
    # 0xC0 is never UTF-8, nor a continuation byte: the last 11 bytes are kept from it
    line = b'["' + b"s" * 100 + b"\xc0" + b"t" * 10 + b'"]'
    assert cut(line, 11) == b'["' + b"s" * 11 + b"\xc0" + b"t" * 10 + b'"]'


def test_a_later_long_string_is_cut_after_one_that_cannot_be() -> None:
    line = b'["' + b"s" * 100 + b"\xff" + b"t" * 10 + b'", "' + b"u" * 100 + b'"]'
    assert cut(line, 10) == b'["' + b"s" * 100 + b"\xff" + b"t" * 10 + b'", "' + b"u" * 20 + b'"]'
