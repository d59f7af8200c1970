"""Gateway columns: every reference profile through a gateway, judged with what the gateway
declares it removes and adds; where its cassettes live (mutation testing, #29)."""

from __future__ import annotations

import pytest

from conformance.client import RoundTripPolicy
from conformance.gateway_columns import GatewayProvider, gateway_name, gateway_providers
from conformance.profile_columns import ProfileProvider
from conformance.providers import Provider


def _profile(name: str, quirks: tuple[str, ...], **kw: object) -> ProfileProvider:
    return ProfileProvider(
        name=f"profile:{name}",
        base_url="http://127.0.0.1:8765/v1",
        model=name,
        expected_quirks={q: {"reason": "injected", "scenarios": ["usage"]} for q in quirks},
        profile=name,
        **kw,  # type: ignore[arg-type]
    )


def _gateway(**spec: object) -> Provider:
    return Provider(
        name="litellm",
        base_url="http://gateway.test:4000/v1",
        model="m",
        api_key_env="LITELLM_KEY",
        auth="header:x-api-key",
        server={"software": "LiteLLM"},
        record_command="python3 noxw -s gateway-default",
        limits={"idle_timeout": 30.0, "max_bytes": 1000},
        concurrency=3,
        gateway={"base_url_env": "MUTANTS_GATEWAY_URL", **spec},
    )


PROFILES = [
    _profile("id-absent", ("Q-ID-ABSENT", "Q-EXTRA-FIELDS")),
    _profile(
        "stream-stalls",
        ("Q-STREAM-STALLS",),
        limits={"idle_timeout": 1.0},
        scenario="parallel",
        roundtrip=RoundTripPolicy(content="empty"),
    ),
]


@pytest.fixture
def columns(monkeypatch: pytest.MonkeyPatch) -> dict[str, GatewayProvider]:
    monkeypatch.delenv("MUTANTS_GATEWAY_URL", raising=False)
    gw = _gateway(
        removes={"Q-EXTRA-FIELDS": "unknown fields do not arrive"},
        adds={"Q-INDEX-ALL-ZERO": "an absent index arrives as 0", "Q-ID-FORMAT": "new ids"},
        record_command="python3 noxw -s litellm",
    )
    return {c.profile: c for c in gateway_providers(gw, PROFILES)}


def test_one_column_per_profile_named_after_gateway_and_profile(
    columns: dict[str, GatewayProvider],
) -> None:
    assert list(columns) == ["id-absent", "stream-stalls"]
    col = columns["id-absent"]
    assert col.name == "gateway:litellm:id-absent"
    assert (col.model, col.label, col.profile) == ("id-absent",) * 3
    assert col.kind == "gateway-profile"
    assert col.gateway_name == "litellm"
    assert col.cassette_key == "_gateway/litellm/id-absent"


def test_a_column_reaches_the_gateway_with_its_credentials(
    columns: dict[str, GatewayProvider],
) -> None:
    col = columns["id-absent"]
    assert col.base_url == "http://gateway.test:4000/v1"  # no URL in the environment
    assert col.api_key_env == "LITELLM_KEY"
    assert col.auth == "header:x-api-key"
    assert col.server == {"software": "LiteLLM"}
    assert col.concurrency == 3
    assert col.record_command == "python3 noxw -s litellm"


def test_the_environment_url_wins_over_the_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MUTANTS_GATEWAY_URL", "http://elsewhere.test:9/v1")
    (col,) = gateway_providers(_gateway(), PROFILES[:1])
    assert col.base_url == "http://elsewhere.test:9/v1"


def test_removed_quirks_are_not_expected_added_ones_are_tolerated(
    columns: dict[str, GatewayProvider],
) -> None:
    assert set(columns["id-absent"].expected_quirks) == {"Q-ID-ABSENT"}
    assert columns["id-absent"].expected_quirks["Q-ID-ABSENT"]["reason"] == "injected"
    assert columns["stream-stalls"].expected_quirks == PROFILES[1].expected_quirks
    assert columns["id-absent"].tolerated == frozenset({"Q-INDEX-ALL-ZERO", "Q-ID-FORMAT"})


def test_a_gateway_that_declares_nothing_expects_every_profile_quirk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MUTANTS_GATEWAY_URL", raising=False)
    (col,) = gateway_providers(_gateway(removes=None, adds=None), PROFILES[:1])
    assert set(col.expected_quirks) == {"Q-ID-ABSENT", "Q-EXTRA-FIELDS"}
    assert col.tolerated == frozenset()
    assert col.record_command == "python3 noxw -s gateway-default"  # the entry's own


def test_the_profile_keeps_its_scenario_limits_and_client_policy(
    columns: dict[str, GatewayProvider],
) -> None:
    stall = columns["stream-stalls"]
    assert stall.scenario == "parallel"
    assert stall.limits == {"idle_timeout": 1.0, "max_bytes": 1000}  # the profile's wins
    assert stall.roundtrip.content == "empty"
    assert columns["id-absent"].limits == {"idle_timeout": 30.0, "max_bytes": 1000}
    assert columns["id-absent"].roundtrip.content == "null"


@pytest.mark.parametrize(
    ("column", "parts"),
    [
        ("gateway:litellm:index-all-zero", ("litellm", "index-all-zero")),
        ("gateway:gw:odd:name", ("gw", "odd:name")),
        ("gateway:gw", ("gw", "")),
    ],
)
def test_a_gateway_column_name_splits_into_gateway_and_profile(
    column: str, parts: tuple[str, str]
) -> None:
    assert gateway_name(column) == parts
