"""The reference profiles as columns: which scenario each runs, which quirks it must show,
where its cassette lives and how its client sends calls back (mutation testing, #29)."""

from __future__ import annotations

import pytest

from conformance.profile_columns import (
    ProfileProvider,
    profile_providers,
    scenario_for,
)
from conformance.server.profiles import PROFILES, Profile


# Built per test (milliseconds), so mutmut maps every test that reads a column to the code.
@pytest.fixture
def columns() -> dict[str, ProfileProvider]:
    return {p.profile: p for p in profile_providers("http://127.0.0.1:8765/v1/")}


def test_every_profile_is_one_column_named_after_it(columns: dict[str, ProfileProvider]) -> None:
    assert list(columns) == list(PROFILES)
    col = columns["index-all-zero"]
    assert col.name == "profile:index-all-zero"
    assert (col.model, col.label, col.profile) == ("index-all-zero",) * 3
    assert col.kind == "reference-profile"
    assert col.base_url == "http://127.0.0.1:8765/v1"  # the trailing slash is dropped
    assert col.record_command == "python3 noxw -s profiles"
    assert col.concurrency == 8


def test_a_profile_cassette_lives_under_profiles(columns: dict[str, ProfileProvider]) -> None:
    assert columns["id-absent"].cassette_key == "_profiles/id-absent"


@pytest.mark.parametrize(
    ("profile", "scenario"),
    [
        ("id-absent", "usage"),  # no need: the default scenario
        ("index-all-zero", "parallel"),
        ("parallel-tool-calls-ignored", "parallel-disabled"),
        ("args-absent-no-params", "no-arguments"),
        ("required-not-enforced", "required"),
        ("finish-stop-named-toolchoice", "named"),
        ("strict-ignored", "strict"),
        ("rt-content-empty", "round-trip"),
        ("stream-options-rejected", "usage"),
    ],
)
def test_each_profile_runs_the_scenario_that_makes_its_quirk_show(
    columns: dict[str, ProfileProvider], profile: str, scenario: str
) -> None:
    assert scenario_for(PROFILES[profile]) == scenario
    assert columns[profile].scenario == scenario
    expected = columns[profile].expected_quirks
    assert all(e["scenarios"] == [scenario] for e in expected.values())


def test_the_scenario_choice_by_kind_of_profile() -> None:
    # a round trip wins over what the stream needs; a rejected stream_options is seen on
    # the usage scenario whatever else the profile needs; an unknown need falls back to usage
    assert scenario_for(Profile("x", "", round_trip=("c",), needs="parallel")) == "round-trip"
    rejected = Profile("x", "", fault="stream-options-rejected", needs="parallel")
    assert scenario_for(rejected) == "usage"
    assert scenario_for(Profile("x", "", fault="downgraded", needs="parallel")) == "parallel"
    assert scenario_for(Profile("x", "", needs="no-such-need")) == "usage"


def test_a_column_expects_exactly_its_profile_quirks(columns: dict[str, ProfileProvider]) -> None:
    assert columns["reference"].expected_quirks == {}
    assert columns["id-absent"].expected_quirks == {
        "Q-ID-ABSENT": {"reason": "the id-absent profile injects it", "scenarios": ["usage"]}
    }
    # `expected` narrows what the profile shows end to end, in sorted order
    shape = columns["delta-shape-load-dependent"].expected_quirks
    assert list(shape) == sorted(PROFILES["delta-shape-load-dependent"].expected)
    assert set(shape) != set(PROFILES["delta-shape-load-dependent"].quirks)
    assert list(columns["toolcall-held-until-finish"].expected_quirks) == [
        "Q-ARGS-NOT-PROGRESSIVE",
        "Q-TOOLCALL-HELD-UNTIL-FINISH",
    ]


def test_profiles_this_client_cannot_trip_expect_nothing(
    columns: dict[str, ProfileProvider],
) -> None:
    for name in ("rt-function-name-key", "rt-thought-signature"):
        assert PROFILES[name].quirks
        assert columns[name].expected_quirks == {}


def test_only_the_stall_is_judged_by_an_idle_timeout(columns: dict[str, ProfileProvider]) -> None:
    assert columns["stream-stalls"].limits == {"idle_timeout": 1.0}
    assert columns["id-absent"].limits == {}


def test_round_trip_profiles_get_the_client_policy_that_trips_them(
    columns: dict[str, ProfileProvider],
) -> None:
    empty = columns["rt-content-empty"].roundtrip
    assert (empty.content, empty.tool_message_name) == ("empty", False)
    named = columns["rt-tool-name-forbidden"].roundtrip
    assert (named.content, named.tool_message_name) == ("null", True)
    default = columns["rt-content-null"].roundtrip
    assert (default.content, default.tool_message_name) == ("null", False)
