"""pytest plugin: provider × scenario parametrization, cell results, the matrix at the end.

Test ids read ``test_<scenario>[<provider>]``. Replay (``--record-mode=none``, the
default of pytest-recording) never touches the network; ``--record-mode=rewrite`` records
each cell's cassette afresh (``all`` would append to the last recording's exchanges).
Cells are written as JSON under ``<report-dir>/results`` (one file each, so pytest-xdist
workers never share a file) and the controlling process renders the matrix.

The plugin is loaded by every pytest run in an environment where ``conformance`` is
installed (entry point ``pytest11``), so it stays inert unless the suite is what the run
targets: it validates nothing and prints nothing for an unrelated project, and it never
needs pytest-recording to be importable (``toolcall-conformance[suite]`` brings it).

Exit status of a suite run (shared with ``toolcall-conformance run``): 0 when at least one cell
was tested and every tested cell conforms (expected quirks and quirks below ``--fail-on``
allowed); 1 when a tested cell deviates; 4 for a configuration error (one line); 5 when no
cell could be tested (keys unset, not recorded, unsupported, inconclusive); 6 when the
endpoint could not be reached or does not serve chat completions (every cell that ran
ended before any stream: connection refused, DNS, TLS, timeout, HTTP 401/403/404/405/5xx).
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from conformance import secrets
from conformance.providers import (
    ConfigError,
    Provider,
    apply_expected_quirks,
    load_providers,
    parse_expect_quirk,
    provider_from_options,
    select,
)
from conformance.scenarios import (
    SCENARIOS,
    Scenario,
    add_elicitation_options,
    elicitation_options,
)
from conformance.textsafe import terminal

EXIT_NOTHING_TESTED = 5  # == pytest.ExitCode.NO_TESTS_COLLECTED: "nothing was tested"
# Not one of pytest's own codes (0-5): "the endpoint is not there", not "it deviates".
EXIT_UNREACHABLE = 6
FAIL_ON = ("must", "should", "info")
# Why SHOULD by default: a SHOULD quirk breaks real clients (the naive accumulators of
# common SDKs); `--fail-on must` tolerates them, listed with their level.
DEFAULT_FAIL_ON = "should"
REPORT_DIR, CASSETTE_DIR = "conformance-reports", "conformance-cassettes"
# Verdicts of a cell that tested what its scenario tests; the others (unsupported, not
# recorded, inconclusive, a key unset) did not test anything.
CONCLUSIVE = frozenset({"conforms", "quirk", "fails", "error"})
SUITE_HINT = "pip install 'toolcall-conformance[suite]'"


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("conformance", "streaming tool-call conformance")
    g.addoption("--providers", default="providers.yaml", help="providers file")
    g.addoption("--provider", action="append", default=[], help="run only this provider")
    g.addoption("--scenario", action="append", default=[], help="run only this scenario")
    # Not the committed reports/: a bare `pytest` in a checkout must not rewrite them
    # (`nox -s matrix` passes --report-dir=reports on purpose); same default as `toolcall-conformance run`.
    g.addoption(
        "--report-dir", default=REPORT_DIR, help="where results, the matrix and junit.xml go"
    )
    # The same default as `toolcall-conformance run` (this checkout's pyproject.toml passes
    # --cassette-dir=cassettes, where the committed recordings live).
    g.addoption("--cassette-dir", default=CASSETTE_DIR, help="cassette root directory")
    g.addoption(
        "--fail-on",
        default=DEFAULT_FAIL_ON,
        choices=FAIL_ON,
        help="the lowest level of an unexpected quirk that fails a cell (default "
        "should: SHOULD quirks break real clients; must tolerates them)",
    )
    g.addoption(
        "--public-recordings",
        action="store_true",
        help="add the public recordings of other providers to the matrix (on with "
        "--reference-profiles: the repository's matrix)",
    )
    g.addoption("--cells", action="store_true", help="one line per cell with its verdict")
    add_elicitation_options(g.addoption)
    g.addoption("--repeat", type=int, default=1, help="live trials per cell")
    g.addoption("--no-matrix", action="store_true", help="do not render the matrix")
    g.addoption(
        "--reference-profiles",
        action="store_true",
        help="also run every reference profile (end-to-end negative controls)",
    )
    g.addoption(
        "--scripted-parsers",
        action="store_true",
        help="also run vLLM's tool parsers driven by a scripted model (their own "
        "section; conformance.lanes.vllm_columns)",
    )
    g.addoption(
        "--profile-server",
        default=os.environ.get("CONFORMANCE_SERVER_URL", "http://127.0.0.1:8765/v1"),
        help="base URL of `toolcall-conformance serve` for --reference-profiles",
    )
    try:  # pytest-base-url owns --base-url when installed: its value is read the same way
        g.addoption(
            "--base-url",
            default=None,
            metavar="URL",
            help="test this endpoint instead of a providers file (records live)",
        )
    except ValueError:
        pass
    g.addoption("--model", default=None, metavar="NAME", help="the model, with --base-url")
    g.addoption(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="environment variable holding the key, with --base-url",
    )
    g.addoption(
        "--expect-quirk",
        action="append",
        default=[],
        metavar="Q-ID=REASON",
        help="declare a quirk expected (the cell is then an expected failure)",
    )


class SuiteConfig:
    def __init__(self, config: pytest.Config):
        self.config = config
        self._providers: dict[str, Provider] | None = None

    @property
    def providers(self) -> dict[str, Provider]:
        # The work is in a plain method: mutmut does not mutate a property's body.
        if self._providers is None:
            self._providers = self._load_providers()
        return self._providers

    def _load_providers(self) -> dict[str, Provider]:
        opt = self.config.getoption
        try:
            expect = [parse_expect_quirk(v) for v in opt("--expect-quirk")]
            if opt("base_url", None):
                if _given(self.config, "--providers"):
                    raise ConfigError("--base-url and --providers are exclusive: pass one of them")
                p = provider_from_options(opt("base_url"), opt("--model"), opt("--api-key-env"))
                providers = {p.name: p}
            else:
                if opt("--model") or opt("--api-key-env"):
                    raise ConfigError("--model and --api-key-env need --base-url URL")
                providers = load_providers(opt("--providers"))
            apply_expected_quirks(providers.values(), expect)
            el = elicitation_from(self.config)
            for p in providers.values():
                p.elicitation.update(el)
        except (ConfigError, ValueError) as e:
            raise pytest.UsageError(str(e)) from None
        secrets.register_env(p.api_key_env for p in providers.values())
        return providers

    def all_providers(self) -> dict[str, Provider]:
        out: dict[str, Provider] = dict(self.providers)
        if self.config.getoption("--reference-profiles"):
            from conformance.gateway_columns import gateway_providers
            from conformance.profile_columns import profile_providers

            profiles = profile_providers(self.config.getoption("--profile-server"))
            for p in profiles:
                out[p.name] = p
            for gw in [p for p in self.providers.values() if p.gateway]:
                for p in gateway_providers(gw, profiles):
                    out[p.name] = p
        if self.config.getoption("--scripted-parsers") or self.config.getoption(
            "--reference-profiles"
        ):  # the suite's own columns
            from conformance.lanes.vllm_columns import scripted_providers

            for sp in scripted_providers():
                out[sp.name] = sp
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
            raise pytest.UsageError(
                f"unknown scenario {unknown[0]!r}; valid: " + ", ".join(SCENARIOS)
            )
        return [SCENARIOS[n] for n in names] if names else list(SCENARIOS.values())

    @property
    def fail_on(self) -> str:
        return str(self.config.getoption("--fail-on"))

    @property
    def max_tokens(self) -> int:
        return int(self.config.getoption("--max-tokens"))

    @property
    def replay(self) -> bool:
        return (self.config.getoption("--record-mode", None) or "none") == "none"

    @property
    def report_dir(self) -> Path:
        return Path(self.config.getoption("--report-dir"))

    @property
    def cassette_dir(self) -> Path:
        return Path(self.config.getoption("--cassette-dir"))


def elicitation_from(config: pytest.Config) -> dict[str, Any]:
    """The command line's elicitation (all but max_tokens, which is set per cell)."""
    opt = config.getoption
    return elicitation_options(
        system_prompt=opt("--system-prompt"),
        prefill=opt("--prefill"),
        few_shot=opt("--few-shot"),
        extra_body=opt("--extra-body"),
        named_tool_choice=opt("--named-tool-choice"),
    )


def with_max_tokens(provider: Provider, max_tokens: int | None) -> Provider:
    """The provider for one cell, its requests bounded by ``max_tokens`` by default (None:
    no default bound, as a cassette recorded before the default existed was sent)."""
    p = copy.copy(provider)
    p.elicitation = {k: v for k, v in provider.elicitation.items() if k != "default_max_tokens"}
    if max_tokens is not None:
        p.elicitation["default_max_tokens"] = max_tokens
    return p


def lock_dir(report_dir: Path) -> Path:
    """Where the per-provider slot locks live: not in the report directory (an uploaded
    artifact), one directory per report directory so runs into different ones never wait
    on each other."""
    key = hashlib.sha256(str(report_dir.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"toolcall-conformance-locks-{os.getuid()}-{key}"


def _given(config: pytest.Config, flag: str) -> bool:
    """Whether ``flag`` was on the command line (as ``--flag V`` or ``--flag=V``)."""
    return any(a == flag or a.startswith(flag + "=") for a in config.invocation_params.args)


_OWN_FLAGS = (
    "--providers",
    "--provider",
    "--scenario",
    "--base-url",
    "--model",
    "--api-key-env",
    "--expect-quirk",
    "--reference-profiles",
    "--fail-on",
    "--max-tokens",
    "--scripted-parsers",
)


def _suite_dir() -> Path | None:
    spec = importlib.util.find_spec("conformance.suite")
    locs = list(spec.submodule_search_locations or []) if spec else []
    return Path(locs[0]).resolve() if locs else None


def targets_suite(config: pytest.Config) -> bool:
    """Whether this run is about the conformance suite: one of its options was given,
    or an argument (or ``testpaths``) names the suite (``--pyargs conformance.suite``, its
    directory, or, in a checkout, a directory above it). An unrelated project's run is
    not, and then the plugin does nothing."""
    if any(_given(config, f) for f in _OWN_FLAGS):
        return True
    suite_dir = _suite_dir()
    if suite_dir is None:
        return False
    installed = "site-packages" in suite_dir.parts
    for arg in config.args:
        a = str(arg).split("::", 1)[0]
        if a == "conformance" or a.startswith("conformance.suite"):
            if config.getoption("pyargs", False):
                return True
        p = (config.invocation_params.dir / a).resolve()
        if p == suite_dir or suite_dir in p.parents:
            return True
        if not installed and p in suite_dir.parents:
            return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "conformance_scenario(id): a provider × scenario cell")
    # Registered here so that a run without pytest-xdist does not warn about it.
    config.addinivalue_line(
        "markers", "xdist_group(name): cells that share a pytest-xdist worker (--dist loadgroup)"
    )
    cfg = config._conformance = SuiteConfig(config)  # type: ignore[attr-defined]
    config._conformance_outcomes = CellOutcomes()  # type: ignore[attr-defined]
    config._conformance_active = targets_suite(config)  # type: ignore[attr-defined]
    if not active(config):
        return  # not even a hook on each test report of an unrelated project's run
    config.pluginmanager.register(config._conformance_outcomes, "conformance-outcomes")  # type: ignore[attr-defined]
    from conformance.textsafe import install_log_escaping

    install_log_escaping()  # log lines quote the wire (httpx: the reason phrase)
    if importlib.util.find_spec("pytest_recording") is None:
        raise pytest.UsageError(f"the conformance suite needs its extra: {SUITE_HINT}")
    if config.getoption("base_url", None) and not _given(config, "--record-mode"):
        # an endpoint given on the command line is live; each cell's cassette is recorded
        # afresh ("all" would append to the last run's, and a replay would play the old first)
        config.option.record_mode = "rewrite"
    if (
        hasattr(config.option, "xmlpath")
        and not config.option.xmlpath
        and not hasattr(config, "workerinput")
    ):
        # The same files as `toolcall-conformance run`: JUnit beside the matrix (unless
        # pytest's junitxml plugin is off, `-p no:junitxml`: nothing would write it).
        config.option.xmlpath = str(cfg.report_dir / "junit.xml")
    # Fail fast, before collection, with one line (pytest prints UsageError without a
    # traceback): a bad providers file, an unknown provider or scenario name, no target.
    if (
        not config.getoption("base_url", None)
        and not _given(config, "--providers")
        and not Path(config.getoption("--providers")).exists()
    ):
        raise pytest.UsageError(
            "nothing to test: pass --base-url URL --model NAME [--api-key-env VAR], or "
            "--providers FILE (no providers.yaml in this directory)"
        )
    cfg.selected()
    cfg.scenarios()
    from conformance.providers import output_dir_problem

    problem = output_dir_problem("--report-dir", cfg.report_dir)
    if problem and not hasattr(config, "workerinput"):
        raise pytest.UsageError(problem)


# The hooks' options are set by a call after the function, not a decorator: mutmut does
# not mutate a decorated function. tryfirst: before pytest's junitxml reads --junitxml.
pytest.hookimpl(tryfirst=True)(pytest_configure)


def suite(config: pytest.Config) -> SuiteConfig:
    return config._conformance  # type: ignore[attr-defined, no-any-return]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "conformance_provider" not in metafunc.fixturenames:
        return
    providers = suite(metafunc.config).selected()
    metafunc.parametrize("conformance_provider", providers, ids=[p.name for p in providers])


# The cells this process collected, per run (an xdist controller collects none): kept in
# the config's stash, so that a second in-process run never sees the last one's.
CELL_ITEMS = pytest.StashKey[list[pytest.Item]]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cells = [i for i in items if i.get_closest_marker("conformance_scenario")]
    if not cells:
        return
    wanted = {s.id for s in suite(config).scenarios()}
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        m = item.get_closest_marker("conformance_scenario")
        prov = (cs := getattr(item, "callspec", None)) and cs.params.get("conformance_provider")
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
        prov = (cs := getattr(item, "callspec", None)) and cs.params.get("conformance_provider")
        if prov is not None and item.get_closest_marker("conformance_scenario"):
            k = seen.get(prov.name, 0)
            seen[prov.name] = k + 1
            item.add_marker(pytest.mark.xdist_group(f"{prov.name}#{k % max(1, prov.concurrency)}"))
    config.stash[CELL_ITEMS] = [i for i in items if i.get_closest_marker("conformance_scenario")]


CELL_MODULE = "conformance/suite/test_scenarios.py"


def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    """A cell's report carries the same id wherever the package lives (a checkout, a
    virtualenv's site-packages, outside the root directory): the terminal shows
    ``conformance/suite/test_scenarios.py::test_single[x]`` and JUnit classnames read
    ``conformance.suite.test_scenarios``."""
    report = yield
    if item.get_closest_marker("conformance_scenario") is not None:
        report.nodeid = f"{CELL_MODULE}::{item.name}"
        from conformance.readers import CassetteRefused

        if call.excinfo is not None and call.excinfo.errisinstance(CassetteRefused):
            report.longrepr = terminal(call.excinfo.value)  # one line, no traceback
    return report


pytest.hookimpl(wrapper=True)(pytest_runtest_makereport)


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
    atomic_write(
        report_dir / "results" / name,
        json.dumps(cell, ensure_ascii=False, indent=1, sort_keys=True) + "\n",
    )


class CellOutcomes:
    """What happened to each cell, as the controlling process sees it (under pytest-xdist
    the workers' reports arrive here too): the outcome and, for a cell that was not
    tested, why."""

    def __init__(self) -> None:
        self.outcome: dict[str, str] = {}
        self.why: dict[str, str] = {}
        self.tolerated: dict[str, list[str]] = {}  # node -> quirks below --fail-on
        # node -> the unexpected quirks that failed it, with their level, as judged (with
        # --fail-on info they include INFO quirks that the cell's file does not list)
        self.unexpected: dict[str, list[str]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if "conformance_scenario" not in report.keywords:
            return
        # CELL_MODULE::<item name>: the name is all after the first "::" (an id may hold "::")
        node = report.nodeid.split("::", 1)[-1]
        for name, value in report.user_properties:
            if name == "conformance_tolerated":
                self.tolerated[node] = list(value)  # type: ignore[call-overload]  # a list
            elif name == "conformance_unexpected":
                self.unexpected[node] = list(value)  # type: ignore[call-overload]  # a list
        if report.skipped and not hasattr(report, "wasxfail"):
            self.outcome[node] = "skipped"
            self.why[node] = _skip_reason(report)
        elif report.failed:
            self.outcome[node] = "failed"
        elif report.when == "call":
            self.outcome.setdefault(node, "xfailed" if hasattr(report, "wasxfail") else "passed")


def _skip_reason(report: pytest.TestReport) -> str:
    lr = report.longrepr
    text = lr[2] if isinstance(lr, tuple) and len(lr) == 3 else str(lr)
    return text.removeprefix("Skipped: ")


def outcomes(config: pytest.Config) -> CellOutcomes:
    return config._conformance_outcomes  # type: ignore[attr-defined, no-any-return]


def _own(path: Path, columns: set[str] | None) -> bool:
    """Whether a result file belongs to one of these columns (None: any). The column is
    what comes before the last ``__``: a provider's name may hold ``__``, a scenario id not."""
    return columns is None or path.name.rsplit("__", 1)[0] in columns


def read_cells(report_dir: Path, columns: set[str] | None = None) -> list[dict[str, Any]]:
    """The cell results of these columns (a result directory keeps other runs' too)."""
    cells = []
    for p in sorted((report_dir / "results").glob("*.json")):
        if not _own(p, columns):
            continue
        try:
            cells.append(json.loads(p.read_text("utf-8")))
        except ValueError:
            continue
    return cells


def run_columns(config: pytest.Config) -> set[str]:
    return {p.name for p in suite(config).selected()}


def conclusive(cell: dict[str, Any]) -> bool:
    """A cell that showed what its scenario tests (``inconclusive`` and not-elicited cells
    did not; unsupported and not-recorded cells were not run)."""
    return cell.get("verdict") in CONCLUSIVE and cell.get("elicited") is not False


def active(config: pytest.Config) -> bool:
    return bool(getattr(config, "_conformance_active", False))


def pytest_sessionstart(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput") or not active(session.config):
        return  # an xdist worker (the controller owns the results), or not a suite run
    # Only this run's providers are replaced: another model's results stay.
    results = suite(session.config).report_dir / "results"
    if results.is_dir():
        columns = run_columns(session.config)
        for p in results.glob("*.json"):
            if _own(p, columns):
                p.unlink()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    cfg = suite(session.config)
    if hasattr(session.config, "workerinput") or not active(session.config):
        return
    # Under pytest-xdist the controller collects nothing itself: the cell files decide.
    columns = run_columns(session.config)
    cells = read_cells(cfg.report_dir, columns)
    cells_ran = bool(outcomes(session.config).outcome)
    if session.config.stash.get(CELL_ITEMS, []) or cells_ran or cells:
        session.config._conformance_summary = summary = RunSummary(  # type: ignore[attr-defined]
            outcomes(session.config), cells
        )
        if summary.unreachable and session.exitstatus in (
            pytest.ExitCode.OK,
            pytest.ExitCode.TESTS_FAILED,
        ):
            session.exitstatus = EXIT_UNREACHABLE
            if not cfg.replay:
                summary.hints = v1_hints(cfg.selected(), summary.unreachable)
        elif summary.nothing_tested() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = EXIT_NOTHING_TESTED
        if session.config.getoption("--no-matrix"):
            return
        try:
            render_session_matrix(cfg)
        except Exception as e:  # never lose the run's output to a traceback here
            session.config.get_terminal_writer().line(
                terminal(
                    "conformance: matrix not written: " + secrets.redact(str(e)).splitlines()[0]
                ),
                red=True,
            )
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR


# A cell whose first exchange ended before any stream because the endpoint is not there
# or does not serve chat completions (the reasons transport.py gives a connect failure).
_UNREACHABLE_REASON = re.compile(
    r"^(connection refused|the host name does not resolve|TLS handshake failed|cannot "
    r"connect|connection not established|no response headers|the server closed (the|a new) "
    r"connection before a complete response head|the connection failed while sending)"
)
_UNREACHABLE_STATUS = re.compile(r"^HTTP (401|403|404|405|5\d\d)\b")


def unreachable_reason(cell: dict[str, Any]) -> str | None:
    """Why a cell never reached a stream (None when it did, or failed otherwise)."""
    if cell.get("verdict") != "error":
        return None
    reason = str(cell.get("reason") or "")
    if _UNREACHABLE_REASON.match(reason):
        return reason.split(" (not sent:", 1)[0]
    for f in cell.get("findings") or []:
        if (
            f.get("rule") == "R-HTTP-OK"
            and f.get("exchange", 0) == 0
            and _UNREACHABLE_STATUS.match(str(f.get("message")))
        ):
            return secrets.one_line(str(f["message"]), 120)
    return None


def v1_hints(providers: list[Provider], columns: dict[str, str]) -> list[str]:
    """ "did you mean …/v1": for a base URL without /v1 whose chat path answered 404/405,
    one probe of BASE/v1/chat/completions (any answer but 404/405 is a chat path)."""
    import httpx

    out = []
    for p in providers:
        why = columns.get(p.name, "")
        # the path's: a query (Azure's ?api-version=) stays at the end of the URL
        base = urlsplit(p.base_url)
        if not why.startswith(("HTTP 404", "HTTP 405")) or base.path.endswith("/v1"):
            continue
        url = p.url("v1/chat/completions")
        try:
            r = httpx.post(
                url,
                json={
                    "model": p.model,
                    "max_tokens": 1,
                    "messages": [{"role": "user", "content": "ping"}],
                },
                headers={**p.headers, **p.auth_headers()},
                timeout=10,
            )
        except httpx.HTTPError:
            continue
        if r.status_code not in (404, 405):
            v1 = urlunsplit(base._replace(path=base.path + "/v1"))
            chat = urlunsplit(base._replace(path=base.path + "/v1/chat/completions"))
            out.append(f"did you mean --base-url {v1}? {chat} answers (HTTP {r.status_code})")
    return out


class RunSummary:
    """The cells of a run, each in one group: conforming, deviating or not tested (with
    why); ``unreachable`` (column -> why) when every cell that ran never reached a stream."""

    def __init__(self, seen: CellOutcomes, cells: list[dict[str, Any]]):
        by_id = {f"test_{c['row'].replace('-', '_')}[{c['column']}]": c for c in cells}
        self.by_id = by_id
        self.ran = sorted(seen.outcome)
        self.tested = [c for c in cells if conclusive(c)]
        self.failed = sorted(n for n, o in seen.outcome.items() if o == "failed")
        self.unexpected = seen.unexpected
        self.not_tested: dict[str, list[str]] = {}
        for node, o in sorted(seen.outcome.items()):
            cell = by_id.get(node)
            if o == "skipped":
                why = seen.why.get(node) or "skipped"
            elif cell is not None and not conclusive(cell) and o != "failed":
                why = f"{cell.get('verdict')}: {cell.get('reason') or 'no reason given'}"
            else:
                continue
            self.not_tested.setdefault(why, []).append(node)
        n_not = sum(len(v) for v in self.not_tested.values())
        self.conforming = len(self.ran) - len(self.failed) - n_not
        self.tolerated: dict[str, list[str]] = {}  # "Q-ID (LEVEL)" -> cells
        for node in sorted(seen.outcome):
            for q in seen.tolerated.get(node, []):
                self.tolerated.setdefault(q, []).append(node)
        self.unreachable: dict[str, str] = {}
        failed_cells = [by_id.get(n) for n in self.failed]
        whys: list[str | None] = [unreachable_reason(c) if c else None for c in failed_cells]
        if (
            failed_cells
            and len(self.failed) + n_not == len(self.ran)
            and all(whys)
            and not self.tested_ok()
        ):
            for c, reason in zip(failed_cells, whys, strict=True):
                self.unreachable.setdefault(c["column"], str(reason))  # type: ignore[index]
        self.hints: list[str] = []

    def tested_ok(self) -> bool:
        return self.conforming > 0

    def nothing_tested(self) -> bool:
        return not self.tested and not self.failed

    def failure_lines(self) -> list[str]:
        """Each deviating cell with what failed it and the level."""
        from conformance.rules import quirk_level

        out = []
        for node in self.failed:
            c = self.by_id.get(node) or {}
            judged = self.unexpected.get(node)
            parts = (
                list(judged)
                if judged is not None
                else [f"{q} ({quirk_level(q)})" for q in c.get("unexpected") or []]
            )
            parts += [
                f"{f['rule']} (MUST)"
                for f in c.get("findings") or []
                if f.get("level") == "MUST"
                and not f.get("quirk")
                and not (c.get("verdict") == "error" and f["rule"] in ("R-HTTP-OK", "R-COMPLETE"))
            ]
            if c.get("verdict") == "error":
                parts.insert(0, f"error: {secrets.one_line(str(c.get('reason')), 120)}")
            parts += [
                f"{q} no longer seen (declared expected)" for q in c.get("missing_expected") or []
            ]
            out.append(f"  ✗ {node}: " + ("; ".join(dict.fromkeys(parts)) or "failed"))
        return out


VERDICT_MARK = {
    "conforms": "✓",
    "quirk": "~",
    "fails": "✗",
    "error": "!",
    "inconclusive": "?",
    "unsupported": "–",
    "not recorded": "∅",
}


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    summary: RunSummary | None = getattr(config, "_conformance_summary", None)
    if summary is None:
        return
    tw = terminalreporter
    cfg = suite(config)
    tw.section("conformance", sep="-")
    if config.getoption("--cells"):
        for node in summary.ran:
            c = summary.by_id.get(node)
            verdict = c.get("verdict", "?") if c else outcomes(config).outcome[node]
            why = (c or {}).get("reason") or outcomes(config).why.get(node) or ""
            mark = VERDICT_MARK.get(verdict, "·")
            tw.line(
                terminal(
                    f"{mark} {node}: {verdict}"
                    + (f" ({secrets.one_line(why, 140)})" if why else "")
                )
            )
    n_not = sum(len(v) for v in summary.not_tested.values())
    passing = {n for nodes in summary.tolerated.values() for n in nodes} - set(summary.failed)
    below = f" ({len(passing)} with quirks below --fail-on {cfg.fail_on})" if passing else ""
    # An unreachable endpoint's cells never reached a stream: they are counted as such, not
    # as deviating, so the counts agree with the exit status (6, not 1).
    failed = (
        f"{len(summary.failed)} unreachable"
        if summary.unreachable
        else (f"{len(summary.failed)} deviating")
    )
    tw.line(
        f"ran {len(summary.ran)} cell(s): {summary.conforming} conforming{below}, "
        f"{failed}, {n_not} not tested"
    )
    for line in [] if summary.unreachable else summary.failure_lines():
        tw.line(terminal(line))
    for q, nodes in sorted(summary.tolerated.items()):
        shown = ", ".join(nodes[:3]) + (f", … (+{len(nodes) - 3})" if len(nodes) > 3 else "")
        tw.line(terminal(f"  below --fail-on {cfg.fail_on}: {q}  [{shown}]"))
    for why, nodes in sorted(summary.not_tested.items(), key=lambda kv: -len(kv[1])):
        shown = ", ".join(nodes[:3]) + (f", … (+{len(nodes) - 3})" if len(nodes) > 3 else "")
        tw.line(terminal(f"  not tested ({len(nodes)}): {secrets.one_line(why, 300)}  [{shown}]"))
    if not config.getoption("--no-matrix"):
        tw.line(
            f"report: {_shown(cfg.report_dir / 'quirks-matrix.html')} (and .md, .json; "
            f"cell results in {_shown(cfg.report_dir / 'results')})"
        )
    xml = getattr(config.option, "xmlpath", None)
    if xml:
        tw.line(f"junit: {_shown(Path(xml))}")
    if not cfg.replay:
        tw.line(f"cassettes: {_shown(cfg.cassette_dir)}")
    if summary.unreachable:
        for col, why in sorted(summary.unreachable.items()):
            tw.line(
                terminal(
                    f"toolcall-conformance: {col}: the endpoint could not be reached or "
                    f"does not serve chat completions ({why}): exit status "
                    f"{EXIT_UNREACHABLE}"
                ),
                red=True,
                bold=True,
            )
        for hint in summary.hints:
            tw.line(terminal(f"toolcall-conformance: {hint}"), red=True, bold=True)
    elif summary.nothing_tested():
        tw.line(
            f"conformance: nothing was tested: exit status {EXIT_NOTHING_TESTED}, "
            "not 0 (see the reasons above)",
            red=True,
            bold=True,
        )


def _shown(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(p)


NO_PUBLIC_RECORDINGS: dict[str, Any] = {"routes": {}, "entries": [], "unreadable": []}


def render_session_matrix(cfg: SuiteConfig) -> dict[str, Any]:
    """The run's matrix: its own columns; the public recordings of other providers only
    for the repository's matrix (``--reference-profiles``) or ``--public-recordings``."""
    from conformance.matrix import build_matrix

    providers = cfg.selected()
    cells = read_cells(cfg.report_dir, {p.name for p in providers})
    public = cfg.config.getoption("--public-recordings") or cfg.config.getoption(
        "--reference-profiles"
    )
    doc = build_matrix(
        cells,
        [p for p in providers if p.kind == "provider"],
        field_evidence=None if public else NO_PUBLIC_RECORDINGS,
        scenarios=cfg.scenarios(),
        mode="replay" if cfg.replay else "live",
        cassette_root=cfg.cassette_dir,
        profiles=[p for p in providers if p.kind == "reference-profile"],
        gateways=[p for p in providers if p.kind == "gateway-profile"],
        scripted=[p for p in providers if p.kind == "scripted"],
    )
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
        atomic_write(
            out / "quirks-matrix.json", json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
        )


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = [
    "CONCLUSIVE",
    "EXIT_NOTHING_TESTED",
    "SuiteConfig",
    "conclusive",
    "now_iso",
    "provider_slot",
    "render_session_matrix",
    "suite",
    "targets_suite",
    "write_cell",
    "write_reports",
]


def pytest_recording_configure(config: pytest.Config, vcr: Any) -> None:
    """Cassettes are written atomically, after a last redaction pass, and read safe and
    bounded (never with PyYAML's full loader: a cassette must not run code)."""
    from conformance.cassettes import AtomicPersister, SafeYaml

    vcr.register_serializer("yaml", SafeYaml)
    vcr.register_persister(AtomicPersister)


# optionalhook: pytest-recording may be absent, and then this is never called
pytest.hookimpl(optionalhook=True)(pytest_recording_configure)
