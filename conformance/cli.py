"""`conformance` command line: analyze, report, serve, run.

The CLI contract of ``analyze`` is fixed by DESIGN.md: exit 0 when every input was
read (whatever the verdicts), 2 for an unreadable input with a one-line reason on
stderr naming the file; ``--fail-on LEVEL`` makes it gate: 1 when a finding at or above
LEVEL was seen. No traceback reaches the user for a bad input.

``run`` drives the pytest suite (the same pipeline, not a second one); its exit codes are
in ``conformance.run.EPILOG`` (0, 1, 4, 5, 6).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from conformance import __version__
from conformance.parallel import default_jobs, jobs_arg
from conformance.textsafe import terminal, terminal_lines
from conformance.transcript import InputError

SYMBOL = {"conforms": "✓", "quirk": "~", "fails": "✗", "error": "!"}


STDIN = "<stdin>"


def _analyze_path(
    p: str, *, json_out: bool = False, keep: str | None = None
) -> tuple[str, list[str], list[Any], str | None, int]:
    """One PATH: its captures rendered as ``analyze`` prints them (JSON items or the
    summary), the results when a report needs them (``keep="transcript"``: with their
    transcripts; ``"result"``: without, as a worker of ``-j`` returns them, a transcript
    being a reader over the file), the one-line error if any, and the highest level rank
    of its findings (-1: none; ``--fail-on`` gates on it). The rendering happens here, so
    with ``-j`` it is spread over the cores too. Each input is read once: ``-`` is
    standard input and a pipe or FIFO is copied once, bounded (``readers.read_stream``)."""
    from conformance.analysis import analyze
    from conformance.enums import Level
    from conformance.readers import read_path, read_stream

    texts: list[str] = []
    results: list[Any] = []
    worst = -1
    try:
        for t in read_stream(sys.stdin.buffer, STDIN) if p == "-" else read_path(p):
            r = analyze(t)
            texts.append(_render(r, json_out))
            worst = max([worst, *(Level(f.level).rank for f in r.findings)])
            if keep:
                if keep == "transcript":
                    r.transcript = t  # type: ignore[attr-defined]  # the report's evidence
                results.append(r)
    except InputError as e:
        return p, texts, results, str(e), worst
    except (OSError, MemoryError, RecursionError) as e:
        return p, texts, results, f"{p}: cannot be read ({type(e).__name__}: {e})", worst
    return p, texts, results, None, worst


def _render(r: Any, json_out: bool) -> str:
    if json_out:  # one item of the document, indented as json.dumps(indent=1) nests it;
        # control characters, surrogates and bidi overrides inside its strings shown as
        # the \uXXXX escape (the same document)
        item = json.dumps(r.to_json(), ensure_ascii=False, indent=1)
        return "  " + terminal_lines(item).replace("\n", "\n  ")
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        _print_summary(r)
    return buf.getvalue()


def _out(line: str) -> None:
    """One line of the summary: what the wire or the file put in it is escaped
    (``textsafe.terminal``: no ESC, OSC 52 or lone surrogate reaches the terminal)."""
    print(terminal(line))


def _print_summary(r: Any) -> None:
    _out(
        f"{SYMBOL.get(r.verdict, '·')} {r.source}: {r.verdict}"
        + (f" ({r.error})" if r.error else "")
    )
    if r.quirks:
        _out("  quirks: " + ", ".join(r.quirks))
    for f in _by_level(r.findings):
        where = f"event {f.event}" if f.event is not None else "stream"
        ptr = f" {f.pointer}" if f.pointer else ""
        more = f" (x{f.count})" if f.count > 1 else ""
        _out(
            f"  [{f.level}] {f.rule}{' ' + f.quirk if f.quirk and f.quirk != f.rule else ''}"
            f" @ {where}{ptr}: {f.message}{more}"
        )
    for c in r.tool_calls["robust"]:
        _out(f"  call {c['index']}: id={c['id']!r} {c['name']}({c['arguments'][:80]})")
    _out(
        "  client impact: "
        + ", ".join(
            f"{k} {v.status}" + (f" ({v.detail})" if v.detail and v.status != "ok" else "")
            for k, v in r.impact.items()
        )
    )


# What the `client impact` line's three readings are (printed once per analyze run).
IMPACT_LEGEND = (
    "client impact: how three ways of accumulating the deltas fare: naive "
    "copies every field present (choices[0], index as the key), guarded copies "
    "only non-empty values, robust is conformance.client (what the calls are)"
)


def _by_level(findings: list[Any]) -> list[Any]:
    """MUST first, then SHOULD, then INFO (stable within a level: event order)."""
    from conformance.enums import Level

    return sorted(findings, key=lambda f: -Level(f.level).rank)


def _gate(worst: int, fail_on: str | None) -> bool:
    """Whether a finding at or above ``fail_on`` was seen (``--fail-on``)."""
    if fail_on is None:
        return False
    from conformance.enums import Level

    return worst >= Level(fail_on.upper()).rank


def cmd_analyze(args: argparse.Namespace) -> int:
    if args.report:
        from conformance.providers import output_dir_problem

        problem = output_dir_problem("--report", args.report)
        if problem:  # before any input is read: one line, a configuration error
            print(terminal(f"conformance analyze: {problem}"), file=sys.stderr)
            return 4
    from functools import partial

    from conformance.parallel import ordered_map

    # In this process: one file, -j 1, standard input (the workers cannot read it), or a
    # report over an input that can be read only once (its evidence needs the transcript).
    here = (
        args.jobs <= 1
        or len(args.paths) <= 1
        or "-" in args.paths
        or bool(args.report and any(not Path(p).is_file() for p in args.paths))
    )
    keep = None if not args.report else "transcript" if here else "result"
    work = partial(_analyze_path, json_out=args.json, keep=keep)
    results: list[Any] = []
    errors: list[str] = []
    worst = -1
    out = sys.stdout
    if args.json:
        out.write('{\n "captures": [')
    first = True
    jobs = 1 if here else args.jobs
    for p, texts, kept, error, rank in ordered_map(work, args.paths, jobs, total=len(args.paths)):
        for text in texts:  # streamed: printed as each file's results arrive, in order
            out.write((("\n" if first else ",\n") + text) if args.json else text)
            first = False
        if kept:
            results += kept if here else _with_transcripts(p, kept)
        if error:
            errors.append(error)
        worst = max(worst, rank)
    if args.json:
        out.write("]\n}\n" if first else "\n ]\n}\n")
    elif not first:
        out.write(IMPACT_LEGEND + "\n")
    out.flush()
    if args.report:
        from conformance.report import write_field_report

        write_field_report(results, Path(args.report))
    for e in errors:
        print(terminal(f"conformance: {e}"), file=sys.stderr)
    if errors:
        return 2
    return 1 if _gate(worst, getattr(args, "fail_on", None)) else 0


def _with_transcripts(p: str, results: list[Any]) -> list[Any]:
    """The report shows each capture's wire evidence: a result that came back from a worker
    gets its transcript again (the file read, not analysed, here; a regular file only)."""
    from conformance.readers import read_path

    ts = read_path(p)
    for r, t in zip(results, ts, strict=False):  # a file cut mid-way kept fewer
        t.source = r.source
        r.transcript = t
    return results


def cmd_report(args: argparse.Namespace) -> int:
    from conformance import report

    if args.diff:
        return report.diff_command(Path(args.diff[0]), Path(args.diff[1]), markdown=args.markdown)
    return report.render_command(Path(args.out))


def cmd_serve(args: argparse.Namespace) -> int:
    from conformance.providers import ConfigError, number_flag
    from conformance.server.app import PortInUse, serve

    try:
        latency = number_flag("--latency", args.latency, 3600.0)
    except ConfigError as e:
        print(f"conformance serve: {e}", file=sys.stderr)
        return 4
    try:
        serve(host=args.host, port=args.port, latency=latency)
    except PortInUse as e:
        print(f"toolcall-conformance serve: {e}", file=sys.stderr)
        return 4
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from conformance.run import run

    return run(args)


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default when it has a meaningful one (not None/False/[])."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if (
            action.default is None
            or action.default is False
            or action.default == []
            or action.default is argparse.SUPPRESS
            or "%(default)" in (action.help or "")
        ):
            return action.help or ""
        return super()._get_help_string(action) or ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="toolcall-conformance",
        description=("Conformance suite for OpenAI-compatible streaming tool calls."),
    )
    parser.add_argument(
        "--version", action="version", version=f"toolcall-conformance {__version__}"
    )
    sub = parser.add_subparsers(dest="cmd", required=True)

    a = sub.add_parser(
        "analyze",
        help="analyse captured streams (JSONL, SSE, cassette, HAR)",
        formatter_class=_Help,
    )
    a.add_argument("--json", action="store_true", help="one JSON document on stdout")
    a.add_argument("--report", metavar="DIR", help="also write JSON/Markdown/HTML reports")
    a.add_argument(
        "-j",
        "--jobs",
        type=jobs_arg,
        default=default_jobs(),
        metavar="N",
        help="processes analysing files at once (0: every core); the output is "
        "that of -j 1, in input order",
    )
    a.add_argument(
        "--fail-on",
        choices=("must", "should", "info"),
        default=None,
        help="exit 1 when a finding at or above this level was seen (default: "
        "exit 0 whatever the verdicts; 2 for an unreadable input wins)",
    )
    a.add_argument("paths", nargs="+", metavar="PATH", help="a capture file; - reads stdin")
    a.set_defaults(func=cmd_analyze)

    r = sub.add_parser(
        "report",
        help="render a matrix again, or diff two matrices",
        description="Without --diff: render OUT/quirks-matrix.json (written by `run`) to "
        "quirks-matrix.md and quirks-matrix.html beside it. With --diff: what "
        "changed from OLD to NEW, cell by cell.",
        epilog="exit status: 0 rendered, or no regression; 1 --diff found a regression (a "
        "cell that got worse); 2 an input is missing or not a matrix (one line). In "
        "a CI summary step, `|| [ $? -eq 1 ]` keeps a regression from failing it: "
        "the run step decides.",
        formatter_class=_Help,
    )
    r.add_argument(
        "--diff",
        nargs=2,
        metavar=("OLD", "NEW"),
        help="compare two quirks-matrix.json files (OLD: a baseline, NEW: a run)",
    )
    r.add_argument(
        "--markdown",
        action="store_true",
        help="print the diff as Markdown (for $GITHUB_STEP_SUMMARY)",
    )
    r.add_argument(
        "--out",
        default="conformance-reports",
        metavar="DIR",
        help="the directory holding quirks-matrix.json (run's --report-dir)",
    )
    r.set_defaults(func=cmd_report)

    s = sub.add_parser(
        "serve", help="run the reference-profile server on 127.0.0.1", formatter_class=_Help
    )
    s.add_argument("--host", default="127.0.0.1", help="address to listen on")
    s.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    s.add_argument("--latency", default="0", help="seconds of delay per stream")
    s.set_defaults(func=cmd_serve)

    from conformance.run import add_run_parser

    add_run_parser(sub, _Help).set_defaults(func=cmd_run)

    from conformance.textsafe import install_log_escaping

    install_log_escaping()
    args, extra = parser.parse_known_args(argv)
    if extra:
        if args.cmd == "run":  # a usage error of `run` is a configuration error: 4
            print(
                f"toolcall-conformance run: unrecognized arguments: {' '.join(extra)} (see --help)",
                file=sys.stderr,
            )
            return 4
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
