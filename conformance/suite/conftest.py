"""vcrpy wiring for the cell tests: where cassettes go, what is scrubbed, how they are
written (atomically), and the fixture that runs and judges one cell."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance import secrets
from conformance.cassettes import vcr_options
from conformance.enums import Level
from conformance.matrix import record_provenance
from conformance.providers import Provider
from conformance.pytest_plugin import (
    lock_dir,
    now_iso,
    provider_slot,
    suite,
    with_max_tokens,
    write_cell,
)
from conformance.rules import INFO, RULES, quirk_catalogue, quirk_level
from conformance.runner import Cell, CellRunner, unsupported_cell
from conformance.scenarios import Scenario
from conformance.textsafe import terminal


@pytest.fixture(scope="module")
def vcr_cassette_dir(request: pytest.FixtureRequest) -> str:
    return str(suite(request.config).cassette_dir.resolve())


@pytest.fixture
def default_cassette_name(request: pytest.FixtureRequest) -> str:
    provider = request.node.callspec.params["conformance_provider"]
    scenario = request.node.get_closest_marker("conformance_scenario").args[0]
    return f"{cassette_key(provider)}/{scenario}"


def cassette_key(provider: Provider) -> str:
    return str(getattr(provider, "cassette_key", provider.name))


@pytest.fixture
def vcr_config() -> dict[str, Any]:
    return vcr_options()


@pytest.fixture(scope="session")
def cell_runner(request: pytest.FixtureRequest) -> Iterator[CellRunner]:
    runner = CellRunner(replay=suite(request.config).replay)
    yield runner
    runner.close()


def judge(
    cell: Cell,
    tolerated: frozenset[str] = frozenset(),
    *,
    quirks_only: bool = False,
    fail_on: str = "should",
    provider: Provider | None = None,
    request: pytest.FixtureRequest | None = None,
) -> None:
    """A MUST violation fails; an expected quirk is an expected failure with its reason;
    an unexpected quirk fails; an expected quirk that disappeared fails (strict). An
    error whose cause is an expected quirk is an expected failure too. A cell that did
    not show the behaviour its scenario tests (``inconclusive``) is skipped with why:
    it tested nothing, so it neither passes nor fails. ``quirks_only`` (a reference
    profile through a gateway, whose upstream breaks the stream on purpose): only the
    quirks are judged against what the gateway is declared to do. ``fail_on``: the lowest
    level of an unexpected quirk that fails (``--fail-on``); the ones below it pass the
    cell and are listed with their level in the run's summary."""
    if cell.verdict == "unsupported":
        pytest.skip(terminal(cell.reason or "unsupported"))
    if cell.verdict == "inconclusive":
        pytest.skip(terminal(f"inconclusive: {cell.reason or 'the behaviour was not shown'}"))
    problems = []
    unexpected = [q for q in cell.unexpected if q not in tolerated]
    if fail_on == "info" and provider is not None:  # INFO quirks are judged only then
        unexpected += sorted(
            q
            for q in cell.quirks
            if quirk_level(q) == INFO
            and not provider.expects(q, cell.scenario)
            and q not in tolerated
        )
    floor = Level(fail_on.upper()).rank
    below = [q for q in unexpected if Level(quirk_level(q)).rank < floor]
    unexpected = [q for q in unexpected if q not in below]
    if below and request is not None:
        request.node.user_properties.append(
            ("conformance_tolerated", [f"{q} ({quirk_level(q)})" for q in below])
        )
    if unexpected and request is not None:  # the run's summary names what failed the cell
        request.node.user_properties.append(
            ("conformance_unexpected", [f"{q} ({quirk_level(q)})" for q in unexpected])
        )
    if cell.verdict == "error" and not (cell.expected and not unexpected) and not quirks_only:
        problems.append(f"error: {cell.reason}")
    for f in [] if quirks_only else cell.uncatalogued_must:
        problems.append(f"MUST rule {f['rule']} broken{_where(f)}: {f['message']}")
    for q in unexpected:
        problems += unexpected_quirk_lines(cell, q)
    if unexpected:
        problems.append(declare_hint(cell.provider, unexpected))
    if cell.missing_expected:
        problems.append(
            "expected quirks no longer seen (remove them from expected_quirks "
            "or --expect-quirk): " + ", ".join(cell.missing_expected)
        )
    if problems:
        # Reasons and messages quote the wire: each line escaped (no ESC, no OSC 52)
        pytest.fail("\n".join(terminal(secrets.redact(p)) for p in problems), pytrace=False)
    if cell.expected:
        pytest.xfail("expected quirks: " + ", ".join(cell.expected))
    if cell.elicited is False:
        pytest.xfail(terminal(cell.reason or "not elicited"))


def _where(f: dict[str, Any]) -> str:
    out = ""
    if f.get("exchange"):
        out += f" exchange {f['exchange']}"
    if f.get("event") is not None:
        out += f" event {f['event']}"
    if f.get("pointer"):
        out += f" {f['pointer']}"
    return out


def broken(f: dict[str, Any]) -> str:
    """The rule a finding breaks: its R- rule with the statement's start, or (a quirk
    judged on its own) the quirk's catalogue title; never the quirk id again."""
    rule = RULES.get(f.get("rule") or "")
    if rule is not None:
        return f"breaks {rule.id}: {secrets.one_line(rule.statement, 90)}"
    title = (quirk_catalogue().get(f.get("quirk") or "") or {}).get("title")
    return f"catalogued as: {secrets.one_line(title, 90)}" if title else "catalogued quirk"


def unexpected_quirk_lines(cell: Cell, quirk: str) -> list[str]:
    """One line per finding of the quirk: level, id, the rule it breaks, event number,
    JSON pointer, message."""
    found = [f for f in cell.findings if f.get("quirk") == quirk]
    level = quirk_level(quirk)
    if not found:
        return [f"unexpected {level} quirk {quirk}"]
    return [
        f"unexpected {f.get('level') or level} quirk {quirk} ({broken(f)}){_where(f)}: "
        f"{f['message']}"
        for f in found[:5]
    ] + ([f"  … {len(found) - 5} more"] if len(found) > 5 else [])


def declare_hint(provider: str, quirks: list[str]) -> str:
    flags = " ".join(f"--expect-quirk {q}='<reason>'" for q in quirks)
    return (
        f"if this is known and accepted, declare it expected: {flags} (toolcall-conformance run "
        f"or pytest), or under provider '{provider}' in providers.yaml: expected_quirks: "
        + "{"
        + ", ".join(f"{q}: <reason>" for q in quirks)
        + "}"
    )


@pytest.fixture
def conformance_cell(
    request: pytest.FixtureRequest, cell_runner: CellRunner
) -> Callable[[Provider, Scenario], Cell]:
    cfg = suite(request.config)

    def run(provider: Provider, scenario: Scenario) -> Cell:
        cassette = cfg.cassette_dir / cassette_key(provider) / f"{scenario.id}.yaml"
        unsupported = unsupported_cell(provider, scenario)
        if unsupported is not None:  # declared, not observed: no traffic needed
            write_cell(cfg.report_dir, unsupported.to_json())
            judge(unsupported)
        if cfg.replay and not cassette.exists():
            pytest.skip(f"not recorded: record with `{provider.record_command}`")
        if not cfg.replay and provider.missing_key_reason():
            pytest.skip(f"{provider.name}: {provider.missing_key_reason()}")
        repeat = 1 if cfg.replay else request.config.getoption("--repeat")
        max_tokens: int | None = cfg.max_tokens
        if cfg.replay:
            repeat = max(1, _recorded_trials(cfg.cassette_dir, provider, scenario))
            # The bound the recording was sent with (none before the default existed).
            max_tokens = _recorded(cfg.cassette_dir, provider, scenario).get("default_max_tokens")
        sent = with_max_tokens(provider, max_tokens)
        with provider_slot(lock_dir(cfg.report_dir), provider):
            cell = cell_runner.run(sent, scenario, repeat=repeat, cassette=str(_rel(cassette)))
        write_cell(cfg.report_dir, cell.to_json())
        if not cfg.replay:
            record_provenance(
                cfg.cassette_dir / cassette_key(provider),
                provider,
                scenario.id,
                now_iso(),
                repeat,
                {k: cell.meta.get(k) for k in ("model", "system_fingerprint", "server")},
                scenario_extra={"default_max_tokens": max_tokens},
            )
        judge(
            cell,
            getattr(provider, "tolerated", frozenset()),
            quirks_only=provider.kind == "gateway-profile",
            fail_on=cfg.fail_on,
            provider=provider,
            request=request,
        )
        return cell

    return run


def _recorded(root: Path, provider: Provider, scenario: Scenario) -> dict[str, Any]:
    from conformance.matrix import load_provenance

    prov = load_provenance(root / cassette_key(provider))
    return dict((prov.get("scenarios") or {}).get(scenario.id) or {})


def _recorded_trials(root: Path, provider: Provider, scenario: Scenario) -> int:
    return int(_recorded(root, provider, scenario).get("trials", 1))


def _rel(p: Path) -> Path:
    try:
        return p.resolve().relative_to(Path.cwd())
    except ValueError:
        return p
