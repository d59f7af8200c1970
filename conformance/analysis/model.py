"""What an analysis returns: findings, the strategies' impact, the capture's result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.client import Turn
from conformance.enums import ImpactStatus, Level, Strategy, Verdict


@dataclass
class Finding:
    rule: str
    level: Level
    quirk: str | None
    event: int | None
    pointer: str | None
    message: str
    excerpt: str | None = None
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "rule": self.rule,
            "level": self.level,
            "quirk": self.quirk,
            "event": self.event,
            "pointer": self.pointer,
            "message": self.message,
        }
        if self.excerpt is not None:
            d["excerpt"] = self.excerpt
        if self.count > 1:
            d["count"] = self.count
        return d


@dataclass
class Impact:
    status: ImpactStatus
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"status": self.status, "detail": self.detail}


@dataclass
class CaptureResult:
    source: str
    verdict: Verdict
    findings: list[Finding]
    finish_reason: str | None
    tool_calls: dict[Strategy, list[dict[str, Any]]]
    impact: dict[str, Impact]
    rules: dict[str, str]
    error: str | None = None
    turn: Turn | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    events: int = 0
    # pass | fail | not applicable per timing id (detectors/timing.py); in the JSON only
    # when the capture recorded arrival times (``timed``): without them every one is
    # not applicable, and the output of an untimed capture stays as it was.
    timing: dict[str, str] = field(default_factory=dict)
    timed: bool = False

    @property
    def quirks(self) -> list[str]:
        return sorted({f.quirk for f in self.findings if f.quirk})

    def quirks_at(self, min_level: str = Level.SHOULD) -> list[str]:
        rank = Level(min_level).rank
        return sorted({f.quirk for f in self.findings if f.quirk and Level(f.level).rank >= rank})

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "source": self.source,
            "verdict": self.verdict,
            "quirks": self.quirks,
            "findings": [f.to_json() for f in self.findings],
            "finish_reason": self.finish_reason,
            "tool_calls": self.tool_calls,
            "impact": {k: v.to_json() for k, v in self.impact.items()},
            "rules": self.rules,
            "events": self.events,
        }
        if self.error:
            d["error"] = self.error
        if self.meta:
            d["meta"] = self.meta
        if self.timed:
            d["timing"] = self.timing
        return d
