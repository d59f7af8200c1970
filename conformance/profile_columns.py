"""The reference profiles as columns of the suite: end-to-end negative controls.

Each profile of ``conformance.server`` becomes a provider of kind ``reference-profile``
named ``profile:<name>``, run on the one scenario that makes its quirk show, expecting
exactly the profile's quirks. Their cassettes live under ``cassettes/_profiles/``; the
report shows them in a section of their own, never as provider columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.client import RoundTripPolicy
from conformance.providers import Provider
from conformance.server.profiles import PROFILES, Profile

PREFIX = "profile:"
# The scenario that elicits what a profile needs (server/profiles.py `needs`).
SCENARIO_FOR_NEED = {
    None: "usage",
    "parallel": "parallel",
    "parallel-false": "parallel-disabled",
    "no-params": "no-arguments",
    "required": "required",
    "named": "named",
    "strict": "strict",
}
# A stall is timing, not bytes: it is judged live (idle timeout), and a recording of it
# holds no response to replay.
LIVE_ONLY = frozenset({"stream-stalls"})
# The client policy that trips a round-trip profile (a correct default client sends
# content null and no `name` on tool messages, so these rejections need the other choice).
ROUNDTRIP = {
    "rt-content-empty": {"content": "empty"},
    "rt-tool-name-forbidden": {"tool_message_name": True},
}
# DeepSeek's "function.name key required" cannot be tripped by a client that always sends
# the key (conformance.client does): the profile is for client authors; here it conforms.
# Gemini's thought signature is echoed by conformance.client (it keeps unknown per-call
# fields and sends them back), so that rejection is not tripped either.
# A length-cut call whose arguments were closed as valid JSON reads, in one stream, like a
# model that finished its JSON at the limit: only the script shows it (the scripted lane).
NOT_TRIPPED = frozenset(
    {"rt-function-name-key", "rt-thought-signature", "args-closed-on-truncation"}
)


@dataclass
class ProfileProvider(Provider):
    profile: str = ""
    scenario: str = "usage"

    @property
    def cassette_key(self) -> str:
        return f"_profiles/{self.profile}"


def scenario_for(profile: Profile) -> str:
    if profile.round_trip:
        return "round-trip"
    if profile.fault == "stream-options-rejected":
        return "usage"
    return SCENARIO_FOR_NEED.get(profile.needs, "usage")


def profile_providers(base_url: str) -> list[ProfileProvider]:
    out = []
    for name, prof in PROFILES.items():
        expected = frozenset() if name in NOT_TRIPPED else (prof.expected or prof.quirks)
        limits: dict[str, Any] = {"idle_timeout": 1.0} if name in LIVE_ONLY else {}
        out.append(
            ProfileProvider(
                name=PREFIX + name,
                base_url=base_url.rstrip("/"),
                model=name,
                label=name,
                kind="reference-profile",
                expected_quirks={
                    q: {
                        "reason": f"the {name} profile injects it",
                        "scenarios": [scenario_for(prof)],
                    }
                    for q in sorted(expected)
                },
                record_command="python3 noxw -s profiles",
                limits=limits,
                concurrency=8,
                roundtrip=RoundTripPolicy.from_provider({"roundtrip": ROUNDTRIP.get(name, {})}),
                profile=name,
                scenario=scenario_for(prof),
            )
        )
    return out
