"""`toolcall-conformance run`: the suite for people outside this repository (a server's CI, a
person with a local server). It drives the same pytest suite as ``pytest --pyargs
conformance.suite`` (no second implementation): it only turns its options into pytest
arguments, isolated from whatever pytest configuration the current directory holds.

Exit status (the same for the pytest door): see EPILOG.

This module is imported by the CLI to build its parser: pytest is imported only to run.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_DEVIATES, EXIT_USAGE, EXIT_NOTHING_TESTED, EXIT_UNREACHABLE = 0, 1, 4, 5, 6
REPORT_DIR = "conformance-reports"
CASSETTE_DIR = "conformance-cassettes"
SUITE_HINT = "pip install 'toolcall-conformance[suite]'"
FAIL_ON = ("must", "should", "info")

EPILOG = """\
exit status (the same for pytest --pyargs conformance.suite):
  0  at least one cell was tested and every tested cell conforms (declared quirks and
     quirks below --fail-on allowed)
  1  a tested cell deviates: an unexpected quirk at or above --fail-on, a broken MUST
     rule, an error after the endpoint answered
  4  configuration or usage error, in one line
  5  nothing could be tested (key unset, not recorded, unsupported, inconclusive)
  6  the endpoint could not be reached or does not serve chat completions: every cell
     that ran ended before any stream (connection refused, DNS, TLS, timeout, HTTP
     401/403/404/405/5xx); a base URL without /v1 whose /v1 answers gets a hint

examples:
  toolcall-conformance run --base-url http://127.0.0.1:8000/v1 --model my-model
  toolcall-conformance run --base-url https://api.example.com/v1 --model m --api-key-env EXAMPLE_KEY \\
      --expect-quirk Q-USAGE-PLACEMENT='documented: usage on every chunk'
  toolcall-conformance run --providers providers.yaml --provider mysrv
"""


def add_run_parser(sub: Any, formatter: type) -> argparse.ArgumentParser:
    r: argparse.ArgumentParser = sub.add_parser(
        "run",
        help="run the conformance suite against an endpoint (records live)",
        description="Run the provider × scenario suite against one endpoint (--base-url, "
        "--model) or the providers of a file (--providers), live: cassettes are "
        "recorded and the matrix is written under the current directory unless "
        "told otherwise.",
        epilog=EPILOG,
        formatter_class=_with_epilog(formatter),
    )

    def error(message: str) -> Any:  # a usage error is a configuration error: one line, 4
        r.exit(EXIT_USAGE, f"toolcall-conformance run: {message} (see --help)\n")

    r.error = error  # type: ignore[method-assign]
    t = r.add_argument_group("target (one of)")
    t.add_argument("--base-url", metavar="URL", help="the endpoint, e.g. http://127.0.0.1:8000/v1")
    t.add_argument("--model", metavar="NAME", help="the model to ask (with --base-url)")
    t.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="environment variable that holds the key (with --base-url); never pass the key itself",
    )
    t.add_argument("--providers", metavar="FILE", help="a providers.yaml")
    t.add_argument(
        "--provider",
        action="append",
        default=[],
        metavar="NAME",
        help="only this provider of --providers (repeatable; globs allowed)",
    )
    o = r.add_argument_group("run")
    o.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME",
        help="only this scenario (repeatable; default: all)",
    )
    o.add_argument(
        "--expect-quirk",
        action="append",
        default=[],
        metavar="Q-ID=REASON",
        help="declare a quirk expected, with why (repeatable)",
    )
    o.add_argument("--repeat", type=int, default=1, metavar="N", help="live trials per cell")
    o.add_argument(
        "--report-dir",
        default=REPORT_DIR,
        metavar="DIR",
        help="results, matrix (JSON, Markdown, HTML) and junit.xml",
    )
    o.add_argument(
        "--cassette-dir",
        default=CASSETTE_DIR,
        metavar="DIR",
        help="where the recorded traffic goes (read back with --replay)",
    )
    o.add_argument(
        "--replay",
        action="store_true",
        help="replay the cassettes in --cassette-dir instead of recording",
    )
    o.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default="should",
        help="the lowest level of an unexpected quirk that fails the run; should "
        "(the default) because SHOULD quirks break real clients, must to "
        "tolerate them (listed with their level), info to fail on any",
    )
    o.add_argument(
        "-v", "--verbose", action="store_true", help="one line per cell with its verdict"
    )
    from conformance.scenarios import add_elicitation_options

    add_elicitation_options(
        r.add_argument_group(
            "elicitation (what a small model needs to call tools; as a providers.yaml entry's "
            "elicitation block, see docs/providers.md)"
        ).add_argument
    )
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
    out = [
        # The suite's directory, not `--pyargs conformance.suite`: without a path to
        # collect, pytest loads the current directory's conftest.py (a server repository's
        # own, which --confcutdir does not stop).
        str(suite_dir),
        "-p",
        "no:cacheprovider",
        # Isolated from the current directory's pytest configuration and conftest files.
        "-c",
        os.devnull,
        f"--rootdir={Path.cwd()}",
        f"--confcutdir={suite_dir}",
        # The suite's own summary block ends the log (no short summary after it).
        "-rN",
        "-q",
        # conformance is imported before pytest starts: nothing of it needs rewriting.
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
        f"--report-dir={report_dir}",
        f"--cassette-dir={args.cassette_dir}",
        f"--junitxml={report_dir / 'junit.xml'}",
        "-o",
        "junit_family=xunit2",
        f"--record-mode={'none' if args.replay else 'rewrite'}",
        f"--repeat={args.repeat}",
        f"--fail-on={args.fail_on}",
        f"--max-tokens={args.max_tokens}",
    ]
    if args.verbose:
        out.append("--cells")
    for flag in ("system_prompt", "few_shot", "prefill", "extra_body"):
        if getattr(args, flag) is not None:
            out.append(f"--{flag.replace('_', '-')}={getattr(args, flag)}")
    if args.named_tool_choice:
        out.append("--named-tool-choice")
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
    from conformance.scenarios import SCENARIOS, elicitation_options

    try:
        elicitation_options(
            system_prompt=args.system_prompt,
            prefill=args.prefill,
            few_shot=args.few_shot,
            extra_body=args.extra_body,
            max_tokens=args.max_tokens,
        )
        for q in args.expect_quirk:
            parse_expect_quirk(q)
        if args.base_url is not None:
            provider_from_options(args.base_url, args.model, args.api_key_env)
        else:
            select(load_providers(args.providers), args.provider)
    except (ConfigError, ValueError) as e:
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
    from conformance.providers import output_dir_problem

    problem = output_dir_problem("--report-dir", args.report_dir)
    if problem:
        return _usage(problem)
    import pytest

    code = int(pytest.main(pytest_args(args)))
    if code == pytest.ExitCode.INTERRUPTED:
        return 130
    return code
