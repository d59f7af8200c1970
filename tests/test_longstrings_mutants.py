"""Long identifiers cut before their event is decoded, pinned by the bytes the analysis
reads: which values are cut (the key, the length, whole events only, valid UTF-8 only),
what a cut keeps (its ends, never part of an escape or a key) and the marker (the whole
value's length and digest). The bounds are made small here (a line of 200 bytes is
long, an identifier of 64 bytes is cut to 4 characters each end) so each case is a few
hundred bytes; one case runs at the real bounds."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from conformance import longstrings as L
from conformance import secrets, sse

PAD = "p" * 200  # makes a line long


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(L, "LONG_LINE", 200)
    monkeypatch.setattr(L, "LONG_STRING", 64)  # longer than its two ends, as at the real bounds
    monkeypatch.setattr(L, "KEEP", 4)
    monkeypatch.setattr(L, "_ENDS", 12 * 4 + 12)
    monkeypatch.setattr(L, "_STEP", 16)
    monkeypatch.setattr(sse, "MAX_EVENT_BYTES", 4000)


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    yield
    secrets.forget()


def mark(value: str) -> str:
    digest = hashlib.sha256(value.encode("utf-16-le", "surrogatepass")).hexdigest()
    return L.marker(len(value), digest)


def short(value: str, keep: int = 4) -> str:
    return value[:keep] + mark(value) + value[-keep:]


def lit(value: str) -> bytes:
    """A value as the JSON text of the line (ASCII, as json.dumps writes it)."""
    return json.dumps(value).encode()[1:-1]


def cut(data: bytes, fresh: bool = True) -> bytes:
    return b"".join(L.pieces(data, fresh))


def event(key: str, value: str, pad: str = PAD, raw: bytes | None = None) -> bytes:
    inner = lit(value) if raw is None else raw
    return b'data: {"%s": "%s", "pad": "%s"}' % (key.encode(), inner, pad.encode())


V = "HEAD" + "x" * 92 + "TAIL"  # 100 characters


# ------------------------------------------------------------------ the marker


def test_the_marker_carries_the_length_and_32_hex_digits_of_the_digest() -> None:
    assert L.marker(8388608, "ab" * 32) == "…[8388608 characters, sha256 " + "ab" * 16 + "]…"


@pytest.mark.parametrize(
    "value, cut_",
    [
        ("call_1…[123 characters, sha256 " + "0" * 32 + "]…tail", True),
        ("…[1 characters, sha256 " + "f" * 32 + "]…", True),
        ("call_1", False),
        ("…[123 characters]…", False),  # not the marker
        ("…[x characters, sha256 " + "0" * 32 + "]…", False),
        (None, False),
        (123, False),
        (["…[1 characters, sha256 " + "f" * 32 + "]…"], False),
    ],
)
def test_is_cut_tells_a_cut_identifier(value: Any, cut_: bool) -> None:
    assert L.is_cut(value) is cut_


# ------------------------------------------------------------------ what is cut


@pytest.mark.usefixtures("small")
def test_a_long_identifier_of_a_long_event_is_cut_to_its_ends_and_marker() -> None:
    line = event("id", V)
    out = cut(line + b"\n\n")
    assert out == event("id", short(V), raw=lit(short(V))) + b"\n\n"
    assert json.loads(out[6:])["id"] == "HEAD" + mark(V) + "TAIL"
    assert L.is_cut(json.loads(out[6:])["id"])


@pytest.mark.usefixtures("small")
@pytest.mark.parametrize("key", [k.decode() for k in L.CUT_KEYS])
def test_every_identifier_field_is_cut(key: str) -> None:
    out = cut(event(key, V) + b"\n\n")
    assert json.loads(out[6:])[key] == short(V)


@pytest.mark.usefixtures("small")
@pytest.mark.parametrize("key", ["arguments", "content", "xid", "id2", "reasoning_content"])
def test_text_and_other_fields_are_never_cut(key: str) -> None:
    body = event(key, V) + b"\n\n"
    assert cut(body) == body


@pytest.mark.usefixtures("small")
def test_an_identifier_of_exactly_the_bound_is_kept_and_one_byte_more_is_cut() -> None:
    at = "i" * 64
    body = event("id", at) + b"\n\n"
    assert cut(body) == body
    over = "i" * 65
    assert json.loads(cut(event("id", over) + b"\n\n")[6:])["id"] == short(over)


@pytest.mark.usefixtures("small")
def test_a_line_of_exactly_the_long_line_bound_is_not_read() -> None:
    base = event("id", V, pad="")
    at = event("id", V, pad="p" * (200 - len(base)))
    assert len(at) == 200
    assert cut(at + b"\n\n") == at + b"\n\n"
    over = event("id", V, pad="p" * (201 - len(base)))
    assert json.loads(cut(over + b"\n\n")[6:])["id"] == short(V)


@pytest.mark.usefixtures("small")
def test_a_value_long_in_bytes_but_short_in_characters_is_kept() -> None:
    """Eight escaped characters: 96 bytes of JSON text, no longer than the two ends."""
    eight = "😀" * 8
    body = event("id", eight) + b"\n\n"
    assert len(lit(eight)) == 96
    assert cut(body) == body
    nine = "😀" * 9
    assert json.loads(cut(event("id", nine) + b"\n\n")[6:])["id"] == short(nine)


@pytest.mark.usefixtures("small")
def test_the_key_must_be_just_before_its_value() -> None:
    near = b'data: {"id":' + b" " * 34 + b'"' + lit(V) + b'", "pad": "' + PAD.encode() + b'"}'
    assert json.loads(cut(near + b"\n\n")[6:])["id"] == short(V)
    far = b'data: {"id":' + b" " * 35 + b'"' + lit(V) + b'", "pad": "' + PAD.encode() + b'"}'
    assert cut(far + b"\n\n") == far + b"\n\n"


@pytest.mark.usefixtures("small")
def test_spaces_around_the_colon_do_not_hide_the_key() -> None:
    line = b'data: { "name" :  "' + lit(V) + b'", "pad": "' + PAD.encode() + b'"}'
    assert json.loads(cut(line + b"\n\n")[6:])["name"] == short(V)


@pytest.mark.usefixtures("small")
def test_a_value_whose_key_is_part_of_another_string_is_kept() -> None:
    line = b'data: {"pad": "' + PAD.encode() + b' \\"id\\": ", "x": "' + lit(V) + b'"}'
    assert cut(line + b"\n\n") == line + b"\n\n"


@pytest.mark.usefixtures("small")
def test_every_long_identifier_of_a_line_is_cut_and_the_rest_kept() -> None:
    w = "W" * 50 + "w" * 50
    line = b'data: {"id": "%s", "pad": "%s", "name": "%s", "t": 1}' % (
        lit(V),
        PAD.encode(),
        lit(w),
    )
    out = json.loads(cut(line + b"\n\n")[6:])
    assert out == {"id": short(V), "pad": PAD, "name": short(w), "t": 1}


@pytest.mark.usefixtures("small")
def test_each_long_event_of_a_body_is_cut_and_what_lies_between_is_kept() -> None:
    head = b'data: {"a": 1}\n\n'
    mid = b": comment\n\n"
    body = head + event("id", V) + b"\n\n" + mid + event("model", V) + b"\n\ndata: [DONE]\n\n"
    out = cut(body)
    parts = out.split(b"\n\n")
    assert parts[0] + b"\n\n" == head
    assert json.loads(parts[1][6:])["id"] == short(V)
    assert parts[2] + b"\n\n" == mid
    assert json.loads(parts[3][6:])["model"] == short(V)
    assert parts[4:] == [b"data: [DONE]", b""]


@pytest.mark.usefixtures("small")
def test_a_body_with_nothing_to_cut_is_itself() -> None:
    body = b'data: {"id": "short"}\n\n' * 20
    assert [bytes(p) for p in L.pieces(body)] == [body]
    assert next(iter(L.pieces(body))) is body


# ------------------------------------------------------------------ whole events only


@pytest.mark.usefixtures("small")
@pytest.mark.parametrize(
    "before", [b"data: {}\n\n", b"data: {}\r\r", b"data: {}\r\n\r\n", b"data: {}\r\r\n", b"x\n\r\n"]
)
@pytest.mark.parametrize("after", [b"\n\n", b"\n\r", b"\r\r", b"\r\n\r\n", b"\r\n\n"])
def test_a_line_between_blank_lines_is_an_event_and_cut(before: bytes, after: bytes) -> None:
    out = cut(before + event("id", V) + after + b"data: [DONE]" + after)
    assert out.startswith(before)
    line = out[len(before) :].split(after)[0]
    assert json.loads(line[6:])["id"] == short(V)


@pytest.mark.usefixtures("small")
@pytest.mark.parametrize(
    "body",
    [
        b"event: x\n" + event("id", V) + b"\n\n",  # the second line of an event
        b"data: {}\n" + event("id", V) + b"\n\n",  # a multi-line event
        b"data: {}\r\n" + event("id", V) + b"\r\n\r\n",
        event("id", V) + b"\ndata: more\n\n",  # followed by another line of its event
        event("id", V) + b"\n",  # the body ends before the event does
        event("id", V),
        b": " + event("id", V)[2:] + b"\n\n",  # a comment, not a data line
        b"\n\n" + event("id", V).replace(b"data:", b"datum") + b"\n\n",
    ],
)
def test_a_line_that_is_not_a_whole_data_event_is_not_cut(body: bytes) -> None:
    assert cut(body) == body


@pytest.mark.usefixtures("small")
def test_a_body_s_first_line_is_an_event_start_only_in_a_fresh_stream() -> None:
    body = event("id", V) + b"\n\n"
    assert cut(body, fresh=True) != body
    assert cut(body, fresh=False) == body
    after_blank = b"\n\n" + body  # a blank line before it: an event in any block
    assert cut(after_blank, fresh=False) != after_blank


@pytest.mark.usefixtures("small")
def test_an_event_larger_than_an_event_may_be_is_not_cut() -> None:
    base = len(event("id", V, pad=""))
    body = event("id", V, pad="p" * (4000 - base)) + b"\n\n"
    assert len(body) == 4002
    assert cut(body) != body
    big = event("id", V, pad="p" * (4001 - base)) + b"\n\n"
    assert cut(big) == big


@pytest.mark.usefixtures("small")
def test_an_identifier_that_is_not_utf8_is_the_stream_s_fault_and_kept() -> None:
    bad = event("id", "", raw=b"ab\xff" + b"x" * 80 + b"cd") + b"\n\n"
    assert cut(bad) == bad
    escaped = event("id", "", raw=b"a\\u00e9b\xfe" + b"x" * 80) + b"\n\n"
    assert cut(escaped) == escaped


# ------------------------------------------------------------------ the cut itself


@pytest.mark.usefixtures("small")
def test_the_same_value_spelled_two_ways_has_the_same_marker() -> None:
    value = "Ab" + "é" * 60 + "yZ"
    plain = event("id", "", raw=value.encode())  # UTF-8 as it is
    escaped = event("id", value)  # \u00e9 escapes
    a = json.loads(cut(plain + b"\n\n")[6:])["id"]
    b = json.loads(cut(escaped + b"\n\n")[6:])["id"]
    assert a == b == short(value)


@pytest.mark.usefixtures("small")
def test_different_values_of_the_same_length_and_ends_differ() -> None:
    one = "HEAD" + "x" * 46 + "y" * 46 + "TAIL"
    two = "HEAD" + "y" * 46 + "x" * 46 + "TAIL"
    a = json.loads(cut(event("id", one) + b"\n\n")[6:])["id"]
    b = json.loads(cut(event("id", two) + b"\n\n")[6:])["id"]
    assert a != b and a[:4] == b[:4] and a[-4:] == b[-4:]


@pytest.mark.usefixtures("small")
@pytest.mark.parametrize("n", [20, 21, 30, 33])
@pytest.mark.parametrize("lead", ["", "abcdef", "abc"])
def test_characters_beyond_the_basic_plane_are_counted_once(n: int, lead: str) -> None:
    """Escaped as surrogate pairs, a pair may straddle two steps of the digest (six
    characters before them put each step's end between a pair's two escapes)."""
    value = lead + "😀" * n
    out = json.loads(cut(event("id", value) + b"\n\n")[6:])["id"]
    assert out == short(value)
    raw = json.loads(cut(event("id", "", raw=value.encode()) + b"\n\n")[6:])["id"]
    assert raw == short(value)


@pytest.mark.usefixtures("small")
def test_a_cut_never_lands_inside_an_escape_or_a_character() -> None:
    for value in ("é" * 40, "a" + "é" * 40, "ab" + "\\" * 40 + "cd", '"' * 45, "\n" * 45):
        out = cut(event("id", value) + b"\n\n")
        assert json.loads(out[6:])["id"] == short(value), value
    for value in ("é" * 40, "a" + "€" * 40, "ab" + "😀" * 30):
        out = cut(event("id", "", raw=value.encode()) + b"\n\n")
        assert json.loads(out[6:])["id"] == short(value), value


@pytest.mark.usefixtures("small")
def test_a_key_at_an_end_of_a_long_identifier_is_redacted_before_the_cut() -> None:
    key = "sk-endkey0123456789abcdef"
    secrets.register(key)
    value = key + "x" * 80 + key
    out = cut(event("id", value) + b"\n\n")
    got = json.loads(out[6:])["id"]
    assert key[:4] not in got and key[-4:] not in got
    assert got == "<red" + mark(value) + "ted>"


# ------------------------------------------------------------------ long lines


@pytest.mark.usefixtures("small")
@pytest.mark.parametrize(
    "data, lines",
    [
        (b"a" * 200, []),
        (b"\n" + b"a" * 201, [(1, 202)]),
        (b"a" * 201, [(0, 201)]),
        (b"a" * 201 + b"\n", [(0, 201)]),
        (b"a" * 200 + b"\n" + b"b" * 10, []),
        (b"short\n" + b"b" * 250 + b"\rc", [(6, 256)]),
        (b"x" * 300 + b"\r\n" + b"y" * 300, [(0, 300), (302, 602)]),
        (b"s\n" * 150 + b"z" * 201 + b"\n", [(300, 501)]),
    ],
)
def test_long_lines_are_found_wherever_they_are(data: bytes, lines: list[tuple[int, int]]) -> None:
    assert list(L.long_lines(data)) == lines


def test_at_the_real_bounds_an_identifier_as_long_as_a_body_is_cut_to_2048_characters() -> None:
    value = "I" * 2048 + "m" * (1 << 20) + "J" * 2048
    body = b'data: {"id": "' + value.encode() + b'", "choices": []}\n\ndata: [DONE]\n\n'
    out = cut(body)
    got = json.loads(out.split(b"\n\n")[0][6:])["id"]
    assert got == "I" * 2048 + mark(value) + "J" * 2048
    assert out.endswith(b'", "choices": []}\n\ndata: [DONE]\n\n')


@pytest.mark.usefixtures("small")
@pytest.mark.parametrize("lead", ["", "a", "abc", "abcdef"])
@pytest.mark.parametrize(
    "unit",
    [
        "\U00010000",  # the lowest pair: \ud800\udc00
        "\U0010ffff",  # the highest: \udbff\udfff
        "\U0010fc00",  # \udbff\udc00
        "\U0001f400",  # \ud83d\udc00
        "\udc00",  # lone low surrogates: no pair to count once
        "\ud800",  # lone high surrogates
        "中\udc00",  # a low surrogate after a character that is not a high one
        "\ud800中",
    ],
)
def test_the_length_counts_pairs_once_and_lone_surrogates_each(lead: str, unit: str) -> None:
    value = lead + unit * 24
    out = json.loads(cut(event("id", value) + b"\n\n")[6:])["id"]
    assert out == short(value)


@pytest.mark.usefixtures("small")
@pytest.mark.parametrize(
    "first",
    [
        json.dumps("😀" * 8).encode()[1:-1],  # long in bytes, eight characters: kept
        b"ab\xff" + b"x" * 80,  # not UTF-8: kept
    ],
)
def test_an_identifier_kept_does_not_stop_the_next_from_being_cut(first: bytes) -> None:
    line = b'data: {"id": "%s", "name": "%s", "pad": "%s"}' % (first, lit(V), PAD.encode())
    out = cut(line + b"\n\n")
    assert out.startswith(b'data: {"id": "%s", "name": "' % first)
    assert lit(short(V)) in out


@pytest.mark.usefixtures("small")
def test_a_long_event_far_into_a_body_is_cut() -> None:
    """The bound is on the event's own size, wherever it starts."""
    before = b'data: {"n": 1}\n\n' * 300  # 4,800 bytes: past an event's bound
    body = before + event("id", V) + b"\n\n"
    out = cut(body)
    assert out.startswith(before)
    assert json.loads(out[len(before) : -2][6:])["id"] == short(V)


@pytest.mark.usefixtures("small")
def test_a_body_is_read_as_a_fresh_stream_unless_told_otherwise() -> None:
    body = event("id", V) + b"\n\n"
    assert json.loads(b"".join(L.pieces(body))[6:-2])["id"] == short(V)


@pytest.mark.usefixtures("small")
@pytest.mark.parametrize(
    "first",
    [
        b"event: x\n" + event("id", V) + b"\n\n",  # long, but not a whole event
        event("content", V) + b"\n\n",  # a whole long event with nothing to cut
    ],
)
def test_a_long_line_left_as_it_is_does_not_stop_the_next_from_being_cut(first: bytes) -> None:
    out = cut(first + event("id", V) + b"\n\n")
    assert out.startswith(first)
    assert json.loads(out[len(first) : -2][6:])["id"] == short(V)
