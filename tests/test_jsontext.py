"""conformance.jsontext.loads takes the stdlib scanner's short path: it must give exactly
what json.loads gives (the value, or the same error) for any text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.jsontext import loads


def outcome(fn, text):
    try:
        return "value", fn(text)
    except (ValueError, RecursionError) as e:
        return type(e).__name__, str(e)


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a":1}', {"a": 1}),
        ('  {"a":1}', {"a": 1}),  # leading whitespace: json.loads takes it
        ('{"a":1}\n\r\t ', {"a": 1}),  # trailing whitespace too
        ("[1,2]", [1, 2]),
        ('"x"', "x"),
        ("NaN", "nan"),  # compared as a string below: NaN != NaN
    ],
)
def test_values_equal_json_loads(text: str, expected: object) -> None:
    value = loads(text)
    assert (str(value) if expected == "nan" else value) == expected


@pytest.mark.parametrize(
    "text, error",
    [
        ("", "Expecting value: line 1 column 1 (char 0)"),
        ("{", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ('{"a":1} x', "Extra data: line 1 column 9 (char 8)"),
        ('{"a":1}{}', "Extra data: line 1 column 8 (char 7)"),
        ("\ufeff{}", "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"),
    ],
)
def test_errors_are_json_loads_errors(text: str, error: str) -> None:
    with pytest.raises(json.JSONDecodeError) as e:
        loads(text)
    assert str(e.value) == error


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(
    json_values,
    st.sampled_from(["", " ", "\n", "x", "}", "{}", "\ufeff"]),
    st.sampled_from(["", " ", "\t"]),
)
def test_any_document_with_any_prefix_or_suffix(value, suffix, prefix) -> None:
    text = prefix + json.dumps(value) + suffix
    assert outcome(loads, text) == outcome(json.loads, text)


@given(st.text(max_size=40))
def test_any_text(text: str) -> None:
    assert outcome(loads, text) == outcome(json.loads, text)


@pytest.mark.parametrize(
    "after", ["\x0b", "\x0c", "\x1c", "\u00a0", "\u2028", " \x0c ", "X", " XX"]
)
def test_only_json_white_space_may_follow_a_value(after: str) -> None:
    """str.strip() would take the white space among these too; JSON does not (extra data), nor
    does loads."""
    with pytest.raises(json.JSONDecodeError) as want:
        json.loads("1" + after)
    with pytest.raises(json.JSONDecodeError) as got:
        loads("1" + after)
    assert str(got.value) == str(want.value)
