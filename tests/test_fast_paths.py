"""The analysis' shortcuts give what the work they skip would give (issue 28).

Each shortcut skips work whose result it can prove: these tests state the proof's premise
so that a change to the skipped code (a new marker, a new key) cannot silently break it.
"""

from __future__ import annotations

import codecs
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.analysis.analyzer import _call_key, _raw_key
from conformance.analysis.common import _COMPACT, _excerpt
from conformance.analysis.detectors.content import TOOL_MARKUP, _may_hold_markup
from conformance.sse import SSEParser
from conformance.strategies import GuardedAccumulator, NaiveAccumulator

# One text per alternative of TOOL_MARKUP (each family's marker, as its template writes it).
MARKERS = [
    "<tool_call>",
    "<|tool_call|>",
    "[TOOL_CALLS]",
    "<function=get_weather>",
    "<function>",
    "<parameter=city>",
    "<｜DSML｜",
    "<｜tool▁calls▁begin｜>",
    "[Calling tool: get_weather",
    "<|python_tag|>",
    "<arg_key>",
    "<arg_value>",
    "<minimax:tool_call>",
    "<|channel|> commentary",
    "to=functions.get_weather",
    "<|call|>",
    "<|tool_calls_section_begin|>",
    '{"name": "get_weather", "arguments": {}}',
]


def test_every_alternative_has_a_sample() -> None:
    # A new alternative in TOOL_MARKUP needs a sample here, and _may_hold_markup a look.
    alternatives = re.split(r"\|(?![^()]*\))(?<!\\\|)", TOOL_MARKUP.pattern)
    assert len(alternatives) == 17
    for alt in alternatives:
        assert any(re.search(alt, m) for m in MARKERS), alt
    for m in MARKERS:
        assert TOOL_MARKUP.search(m) and _may_hold_markup(m), m


@given(
    st.lists(
        st.sampled_from([*MARKERS, *(m[1:] for m in MARKERS), " ", "a", "to=", "<", "{"]),
        max_size=6,
    ),
    st.integers(0, 3),
)
def test_markup_is_never_skipped(pieces: list[str], cut: int) -> None:
    text = "".join(pieces)[cut:]
    if TOOL_MARKUP.search(text):
        assert _may_hold_markup(text)


def test_plain_prose_skips_the_regex() -> None:
    assert not _may_hold_markup("Let me look that up for you.")


def test_equal_raw_calls_have_equal_keys() -> None:
    a = {"id": "call_1", "name": "f", "arguments": '{"b": 1, "a": 2}'}
    b = dict(a)
    assert _raw_key(a) == _raw_key(b) and _call_key(a) == _call_key(b)
    c = {**a, "arguments": '{"a": 2, "b": 1}'}  # differs raw, equal once normalised
    assert _raw_key(a) != _raw_key(c) and _call_key(a) == _call_key(c)


# JSON values as a parse gives them, with the characters JSON escapes and long strings.
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(alphabet=st.sampled_from('ab"\\\n\x00é€😀'), max_size=200),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=40), inner),
    max_leaves=60,
)


@given(JSON_VALUES, st.sampled_from([160, 60, 2, 1]))
def test_an_excerpt_of_a_container_is_its_whole_texts_head(value: Any, limit: int) -> None:
    # _excerpt encodes a dict or a list member by member, only as far as the excerpt shows
    # (a string is quoted as it is)
    text = value if isinstance(value, str) else _COMPACT(value)
    want = text if len(text) <= limit else text[: limit - 1] + "…"
    assert _excerpt(value, limit) == want


def test_a_deep_container_is_quoted_without_encoding_its_depth() -> None:
    deep: Any = "x"
    for _ in range(100_000):
        deep = [deep]
    assert _excerpt({"a": deep}) == '{"a":' + "[" * 154 + "…"


# Bytes that cut, break and mix UTF-8 sequences (a 4-byte character, a lone surrogate's
# encoding, a stray continuation byte, a lead byte at the end).
UTF8_PIECES = [*"hé✓𝄞ж".encode(), 0xFF, 0xED, 0xA0, 0x80, 0xC3, 0x82, 0xE2, 0xF0, 0x9D]


@given(
    st.lists(st.sampled_from(UTF8_PIECES), max_size=40),
    st.lists(st.integers(0, 40), max_size=5),
)
def test_the_sse_parser_decodes_utf8_as_codecs_incremental_decoder(
    body: list[int], cuts: list[int]
) -> None:
    # SSEParser._decode_text holds a cut character's bytes itself (no codecs decoder
    # object per stream): the text of every block, and the switch to U+FFFD at the first
    # invalid byte, are the incremental decoder's
    raw = bytes(body)
    at = sorted({min(c, len(raw)) for c in cuts})
    blocks = [raw[i:j] for i, j in zip([0, *at], [*at, len(raw)], strict=True)] + [b""]
    ref, bad = codecs.getincrementaldecoder("utf-8")("strict"), False
    want = []
    for k, block in enumerate(blocks):
        final = k == len(blocks) - 1
        try:
            want.append(ref.decode(block, final))
        except UnicodeDecodeError:
            bad, state = True, ref.getstate()
            ref = codecs.getincrementaldecoder("utf-8")("replace")
            ref.setstate(state)
            want.append(ref.decode(block, final))
    p = SSEParser()
    got = [p._decode_text(block, k == len(blocks) - 1) for k, block in enumerate(blocks)]
    assert (got, p._bad_utf8) == (want, bad)


@pytest.mark.parametrize(
    "chunk",
    [{"id": "c", "choices": [], "usage": {"total_tokens": 3}}, {"error": "x", "choices": []}],
)
def test_the_naive_crash_on_empty_choices_is_the_one_raised(chunk: dict[str, Any]) -> None:
    # NaiveAccumulator.feed writes the crash of `choices[0]` on an empty list without
    # raising it: the text is the raised one's; the guarded reading skips the chunk
    naive = NaiveAccumulator()
    naive.feed(chunk, 7)
    with pytest.raises(IndexError) as raised:
        NaiveAccumulator()._feed(chunk)
    assert naive.crash == f"event 7: {raised.type.__name__}: {raised.value}"
    guarded = GuardedAccumulator()
    guarded.feed(chunk, 7)
    assert guarded.crash is None and guarded.calls() == []


@given(
    st.lists(
        st.sampled_from(
            ['data: {"a":1}\n\n', "data: [DONE]\n\n", ": c\r\n\r\n", "data: x\n", "\n", "\r"]
            + ["event: e\n", "data: {", "é", "\n\n"]
        ),
        max_size=8,
    ),
    st.lists(st.integers(0, 80), max_size=4),
    st.booleans(),
)
def test_the_sse_parser_closes_early_only_where_closing_gives_nothing(
    pieces: list[str], cuts: list[int], bad: bool
) -> None:
    # SSEParser.close returns [] without _close() when nothing is held: _close() would
    # give [] there too
    raw = "".join(pieces).encode() + (b"\xc3" if bad else b"")
    at = sorted({min(c, len(raw)) for c in cuts})
    p, q = SSEParser(), SSEParser()
    for i, j in zip([0, *at], [*at, len(raw)], strict=True):
        assert list(p.events(raw[i:j])) == list(q.events(raw[i:j]))
    assert p.close() == q._close()
