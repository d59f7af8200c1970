"""pytest plugin: provider × scenario parametrization, cell results, the matrix at the end.

Test ids read ``test_<scenario>[<provider>]``. Replay (``--record-mode=none``, the
default of pytest-recording) never touches the network; ``--record-mode=all`` records.
Cells are written as JSON under ``<report-dir>/results`` (one file each, so pytest-xdist
workers never share a file) and the controlling process renders the matrix.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conformance import secrets
from conformance.providers import ConfigError, Provider, load_providers, select
from conformance.scenarios import SCENARIOS, Scenario


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("conformance", "streaming tool-call conformance")
    g.addoption("--providers", default="providers.yaml", help="providers file")
    g.addoption("--provider", action="append", default=[], help="run only this provider")
    g.addoption("--scenario", action="append", default=[], help="run only this scenario")
    g.addoption("--report-dir", default="reports", help="where results and the matrix go")
    g.addoption("--cassette-dir", default="cassettes", help="cassette root directory")
    g.addoption("--repeat", type=int, default=1, help="live trials per cell")
    g.addoption("--no-matrix", action="store_true", help="do not render the matrix")
    g.addoption("--reference-profiles", action="store_true",
                help="also run every reference profile (end-to-end negative controls)")
    g.addoption("--profile-server", default=os.environ.get(
        "CONFORMANCE_SERVER_URL", "http://127.0.0.1:8765/v1"),
        help="base URL of `conformance serve` for --reference-profiles")


class SuiteConfig:
    def __init__(self, config: pytest.Config):
        self.config = config
        self._providers: dict[str, Provider] | None = None

    @property
    def providers(self) -> dict[str, Provider]:
        if self._providers is None:
            try:
                self._providers = load_providers(self.config.getoption("--providers"))
            except ConfigError as e:
                raise pytest.UsageError(str(e)) from None
            secrets.register_env(p.api_key_env for p in self._providers.values())
        return self._providers

    def all_providers(self) -> dict[str, Provider]:
        out = dict(self.providers)
        if self.config.getoption("--reference-profiles"):
            from conformance.profile_columns import profile_providers
            for p in profile_providers(self.config.getoption("--profile-server")):
                out[p.name] = p
        return out

    def selected(self) -> list[Provider]:
        try:
            return select(self.all_providers(), self.config.getoption("--provider"))
        except ConfigError as e:
            raise pytest.UsageError(str(e)) from None

    def scenarios(self) -> list[Scenario]:
        names = self.config.getoption("--scenario")
        unknown = [n for n in names if n not in SCENARIOS]
        if unknown:
            raise pytest.UsageError(f"unknown scenario {unknown[0]!r}; valid: "
                                    + ", ".join(SCENARIOS))
        return [SCENARIOS[n] for n in names] if names else list(SCENARIOS.values())

    @property
    def replay(self) -> bool:
        return (self.config.getoption("--record-mode", None) or "none") == "none"

    @property
    def report_dir(self) -> Path:
        return Path(self.config.getoption("--report-dir"))

    @property
    def cassette_dir(self) -> Path:
        return Path(self.config.getoption("--cassette-dir"))

    _items: list[Any] = []


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "conformance_scenario(id): a provider × scenario cell")
    cfg = config._conformance = SuiteConfig(config)  # type: ignore[attr-defined]
    # Fail fast, before collection, with one line (pytest prints UsageError without a
    # traceback): a bad providers file, an unknown provider or scenario name.
    explicit = (config.getoption("--provider") or config.getoption("--scenario")
                or config.getoption("--providers") != "providers.yaml")
    if explicit or Path(config.getoption("--providers")).exists():
        cfg.selected()
        cfg.scenarios()


def suite(config: pytest.Config) -> SuiteConfig:
    return config._conformance  # type: ignore[attr-defined, no-any-return]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "conformance_provider" not in metafunc.fixturenames:
        return
    providers = suite(metafunc.config).selected()
    metafunc.parametrize("conformance_provider", providers, ids=[p.name for p in providers])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cells = [i for i in items if i.get_closest_marker("conformance_scenario")]
    if not cells:
        return
    wanted = {s.id for s in suite(config).scenarios()}
    keep, drop = [], []
    for item in items:
        m = item.get_closest_marker("conformance_scenario")
        prov = getattr(item, "callspec", None) and item.callspec.params.get("conformance_provider")
        # A reference profile runs only on the scenario that makes its quirk show.
        only = getattr(prov, "scenario", None) if getattr(prov, "profile", "") else None
        ok = m is None or (m.args[0] in wanted and (only is None or m.args[0] == only))
        (keep if ok else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    # pytest-xdist `--dist loadgroup`: a provider's cells are spread over `concurrency`
    # groups, so workers run different providers side by side instead of waiting on a
    # provider's lock (provider_slot still enforces the limit under any distribution).
    seen: dict[str, int] = {}
    for item in items:
        prov = getattr(item, "callspec", None) and item.callspec.params.get("conformance_provider")
        if prov is not None and item.get_closest_marker("conformance_scenario"):
            k = seen.get(prov.name, 0)
            seen[prov.name] = k + 1
            item.add_marker(pytest.mark.xdist_group(f"{prov.name}#{k % max(1, prov.concurrency)}"))
    SuiteConfig._items = [i for i in items if i.get_closest_marker("conformance_scenario")]


@contextmanager
def provider_slot(lock_dir: Path, provider: Provider) -> Iterator[None]:
    """At most ``provider.concurrency`` cells of one provider at a time, across
    pytest-xdist workers (file locks: works for every worker on this host)."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    n = max(1, provider.concurrency)
    while True:
        for i in range(n):
            f = open(lock_dir / f"{provider.name}.{i}.lock", "w")  # noqa: SIM115
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.close()
                continue
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
                f.close()
            return
        time.sleep(0.05)


def write_cell(report_dir: Path, cell: dict[str, Any]) -> None:
    from conformance.matrix import atomic_write
    name = f"{cell['column']}__{cell['row']}.json"
    atomic_write(report_dir / "results" / name,
                 json.dumps(cell, ensure_ascii=False, indent=1, sort_keys=True) + "\n")


def pytest_sessionstart(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: the controller owns the results directory
    results = suite(session.config).report_dir / "results"
    if results.is_dir():
        for p in results.glob("*.json"):
            p.unlink()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    cfg = suite(session.config)
    if hasattr(session.config, "workerinput") or session.config.getoption("--no-matrix"):
        return
    # Under pytest-xdist the controller collects nothing itself: the cell files decide.
    results = cfg.report_dir / "results"
    if SuiteConfig._items or (results.is_dir() and any(results.glob("*.json"))):
        try:
            render_session_matrix(cfg)
        except Exception as e:  # never lose the run's output to a traceback here
            session.config.get_terminal_writer().line(
                f"conformance: matrix not written: {secrets.redact(str(e)).splitlines()[0]}",
                red=True)
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR


def render_session_matrix(cfg: SuiteConfig) -> dict[str, Any]:
    from conformance.matrix import build_matrix
    cells = []
    for p in sorted((cfg.report_dir / "results").glob("*.json")):
        cells.append(json.loads(p.read_text("utf-8")))
    providers = cfg.selected()
    doc = build_matrix(cells, [p for p in providers if p.kind == "provider"],
                       scenarios=cfg.scenarios(), mode="replay" if cfg.replay else "live",
                       cassette_root=cfg.cassette_dir,
                       profiles=[p for p in providers if p.kind == "reference-profile"])
    write_reports(doc, cfg.report_dir)
    return doc


def write_reports(doc: dict[str, Any], out: Path) -> None:
    from conformance.matrix import atomic_write
    try:
        from conformance import report
    except ImportError:  # the renderer is optional for a bare results run
        report = None  # type: ignore[assignment]
    if report is not None and hasattr(report, "write_reports"):
        report.write_reports(doc, out)
    else:
        atomic_write(out / "quirks-matrix.json",
                     json.dumps(doc, ensure_ascii=False, indent=1) + "\n")


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["SuiteConfig", "now_iso", "provider_slot", "render_session_matrix", "suite",
           "write_cell", "write_reports"]


def pytest_recording_configure(config: pytest.Config, vcr: Any) -> None:
    """Cassettes are written atomically, after a last redaction pass."""
    from conformance.cassettes import AtomicPersister
    vcr.register_persister(AtomicPersister)
