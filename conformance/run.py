"""`toolcall-conformance run`: the suite for people outside this repository (a server's CI, a
person with a local server). It drives the same pytest suite as ``pytest --pyargs
conformance.suite`` (no second implementation): it only turns its options into pytest
arguments, isolated from whatever pytest configuration the current directory holds.

Exit status (the same for the pytest door): 0 when at least one cell was tested and every
tested cell conforms (expected quirks allowed); 1 when a cell deviates (an unexpected
quirk, fails, error); 5 when nothing could be tested (key unset, not recorded,
unsupported, inconclusive); 4 for a configuration or usage error, in one line.

This module is imported by the CLI to build its parser: pytest is imported only to run.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_DEVIATES, EXIT_USAGE, EXIT_NOTHING_TESTED = 0, 1, 4, 5
REPORT_DIR = "conformance-reports"
CASSETTE_DIR = "conformance-cassettes"
SUITE_HINT = "pip install 'toolcall-conformance[suite]'"

EPILOG = """\
exit status: 0 at least one cell was tested and every tested cell conforms (expected
quirks allowed); 1 a cell deviates (unexpected quirk, fails, error); 5 nothing could be
tested (key unset, not recorded, unsupported, inconclusive); 4 configuration error.

examples:
  toolcall-conformance run --base-url http://127.0.0.1:8000/v1 --model my-model
  toolcall-conformance run --base-url https://api.example.com/v1 --model m --api-key-env EXAMPLE_KEY \\
      --expect-quirk Q-USAGE-PLACEMENT='documented: usage on every chunk'
  toolcall-conformance run --providers providers.yaml --provider mysrv
"""


def add_run_parser(sub: Any, formatter: type) -> argparse.ArgumentParser:
    r: argparse.ArgumentParser = sub.add_parser(
        "run", help="run the conformance suite against an endpoint (records live)",
        description="Run the provider × scenario suite against one endpoint (--base-url, "
                    "--model) or the providers of a file (--providers), live: cassettes are "
                    "recorded and the matrix is written under the current directory unless "
                    "told otherwise.",
        epilog=EPILOG, formatter_class=_with_epilog(formatter))

    def error(message: str) -> Any:  # a usage error is a configuration error: one line, 4
        r.exit(EXIT_USAGE, f"toolcall-conformance run: {message} (see --help)\n")
    r.error = error  # type: ignore[method-assign]
    t = r.add_argument_group("target (one of)")
    t.add_argument("--base-url", metavar="URL", help="the endpoint, e.g. http://127.0.0.1:8000/v1")
    t.add_argument("--model", metavar="NAME", help="the model to ask (with --base-url)")
    t.add_argument("--api-key-env", metavar="VAR",
                   help="environment variable that holds the key (with --base-url); never "
                        "pass the key itself")
    t.add_argument("--providers", metavar="FILE", help="a providers.yaml")
    t.add_argument("--provider", action="append", default=[], metavar="NAME",
                   help="only this provider of --providers (repeatable; globs allowed)")
    o = r.add_argument_group("run")
    o.add_argument("--scenario", action="append", default=[], metavar="NAME",
                   help="only this scenario (repeatable; default: all)")
    o.add_argument("--expect-quirk", action="append", default=[], metavar="Q-ID=REASON",
                   help="declare a quirk expected, with why (repeatable)")
    o.add_argument("--repeat", type=int, default=1, metavar="N", help="live trials per cell")
    o.add_argument("--report-dir", default=REPORT_DIR, metavar="DIR",
                   help="results, matrix (JSON, Markdown, HTML) and junit.xml")
    o.add_argument("--cassette-dir", default=CASSETTE_DIR, metavar="DIR",
                   help="where the recorded traffic goes (read back with --replay)")
    o.add_argument("--replay", action="store_true",
                   help="replay the cassettes in --cassette-dir instead of recording")
    o.add_argument("-v", "--verbose", action="store_true", help="one line per cell")
    return r


def _with_epilog(formatter: type) -> type:
    class Formatter(formatter, argparse.RawDescriptionHelpFormatter):  # type: ignore[misc, valid-type]
        pass
    return Formatter


def _usage(message: str) -> int:
    print(f"toolcall-conformance run: {message}", file=sys.stderr)
    return EXIT_USAGE


def pytest_args(args: argparse.Namespace) -> list[str]:
    """The pytest command line for these options (``=`` forms: a value is never taken
    for a path to collect, so the current directory stays the root)."""
    suite_dir = Path(importlib.util.find_spec("conformance.suite").origin or "").parent  # type: ignore[union-attr]
    report_dir = Path(args.report_dir)
    out = ["--pyargs", "conformance.suite", "-p", "no:cacheprovider",
           # Isolated from the current directory's pytest configuration and conftest files.
           "-c", os.devnull, f"--rootdir={Path.cwd()}", f"--confcutdir={suite_dir}",
           "-rfE", "-v" if args.verbose else "-q",
           # conformance is imported before pytest starts: nothing of it needs rewriting.
           "-W", "ignore::pytest.PytestAssertRewriteWarning",
           f"--report-dir={report_dir}", f"--cassette-dir={args.cassette_dir}",
           f"--junitxml={report_dir / 'junit.xml'}", "-o", "junit_family=xunit2",
           f"--record-mode={'none' if args.replay else 'all'}", f"--repeat={args.repeat}"]
    if args.base_url is not None:
        out += [f"--base-url={args.base_url}", f"--model={args.model}"]
        if args.api_key_env:
            out.append(f"--api-key-env={args.api_key_env}")
    else:
        out.append(f"--providers={args.providers}")
        out += [f"--provider={p}" for p in args.provider]
    out += [f"--scenario={s}" for s in args.scenario]
    out += [f"--expect-quirk={q}" for q in args.expect_quirk]
    return out


def config_problem(args: argparse.Namespace) -> str | None:
    """The configuration checks of the suite, made before pytest starts so that a mistake
    is one line from this command (the plugin makes the same checks for the pytest door)."""
    from conformance.providers import (
        ConfigError,
        load_providers,
        parse_expect_quirk,
        provider_from_options,
        select,
    )
    from conformance.scenarios import SCENARIOS

    try:
        for q in args.expect_quirk:
            parse_expect_quirk(q)
        if args.base_url is not None:
            provider_from_options(args.base_url, args.model, args.api_key_env)
        else:
            select(load_providers(args.providers), args.provider)
    except ConfigError as e:
        return str(e)
    unknown = [n for n in args.scenario if n not in SCENARIOS]
    if unknown:
        return f"unknown scenario {unknown[0]!r}; valid: {', '.join(SCENARIOS)}"
    return None


def run(args: argparse.Namespace) -> int:
    if (args.base_url is None) == (args.providers is None):
        return _usage("give --base-url URL --model NAME, or --providers FILE (one of them)")
    if args.base_url is not None and not args.model:
        return _usage("--base-url needs --model NAME")
    if args.providers is not None and (args.model or args.api_key_env):
        return _usage("--model and --api-key-env go with --base-url, not --providers")
    if args.provider and args.providers is None:
        return _usage("--provider NAME selects from --providers FILE")
    if args.repeat < 1:
        return _usage("--repeat must be at least 1")
    for mod in ("pytest", "pytest_recording", "vcr"):
        if importlib.util.find_spec(mod) is None:
            return _usage(f"running the suite needs its extra ({mod} is missing): {SUITE_HINT}")
    problem = config_problem(args)
    if problem:
        return _usage(problem)
    import pytest

    code = int(pytest.main(pytest_args(args)))
    if code == pytest.ExitCode.INTERRUPTED:
        return 130
    return code
