"""Gateway transparency: every reference profile, run through a gateway.

A providers.yaml entry with a ``gateway`` block (LiteLLM's proxy, say) is a gateway: with
``--reference-profiles`` each profile of ``conformance serve`` is also run through it, as a
provider of kind ``gateway-profile`` named ``gateway:<gateway>:<profile>``, on the profile's
one eliciting scenario. Its cassettes live under ``cassettes/_gateway/<gateway>/<profile>/``.
The report compares each such cell with the profile's direct cell (conformance.report.gateway):
what the upstream injected, what the gateway passed through, normalised away or added.

Judging (so a changed gateway fails a test): the quirks a profile injects are expected through
the gateway too, except those the entry declares the gateway ``removes``; quirks it declares
it ``adds`` are tolerated, never required (a profile without tool calls gives it nothing to
add to).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from conformance.profile_columns import ProfileProvider
from conformance.providers import Provider

PREFIX = "gateway:"


@dataclass
class GatewayProvider(ProfileProvider):
    gateway_name: str = ""
    tolerated: frozenset[str] = field(default_factory=frozenset)

    @property
    def cassette_key(self) -> str:
        return f"_gateway/{self.gateway_name}/{self.profile}"


def gateway_name(column: str) -> tuple[str, str]:
    """``gateway:<gateway>:<profile>`` -> (gateway, profile)."""
    gw, _, profile = column.removeprefix(PREFIX).partition(":")
    return gw, profile


def gateway_providers(gateway: Provider, profiles: list[ProfileProvider]) -> list[GatewayProvider]:
    """One provider per reference profile, reached through *gateway*."""
    spec = gateway.gateway
    base = os.environ.get(spec["base_url_env"]) or gateway.endpoint
    removes = dict(spec.get("removes") or {})
    adds = dict(spec.get("adds") or {})
    out = []
    for p in profiles:
        expected = {q: e for q, e in p.expected_quirks.items() if q not in removes}
        out.append(
            GatewayProvider(
                name=f"{PREFIX}{gateway.name}:{p.profile}",
                base_url=base,
                model=p.profile,
                label=p.profile,
                kind="gateway-profile",
                api_key_env=gateway.api_key_env,
                auth=gateway.auth,
                server=dict(gateway.server),
                expected_quirks=expected,
                record_command=spec.get("record_command") or gateway.record_command,
                limits={**gateway.limits, **p.limits},
                concurrency=gateway.concurrency,
                roundtrip=p.roundtrip,
                profile=p.profile,
                scenario=p.scenario,
                gateway_name=gateway.name,
                tolerated=frozenset(adds),
            )
        )
    return out


__all__ = ["PREFIX", "GatewayProvider", "gateway_name", "gateway_providers"]
