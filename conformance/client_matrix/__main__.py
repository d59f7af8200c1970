"""``python -m conformance.client_matrix``: run the clients and write the reports."""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from conformance.client_matrix.clients import BY_ID, CLIENTS
from conformance.client_matrix.report import write_reports
from conformance.client_matrix.run import run_matrix
from conformance.client_matrix.streams import capture_streams, profile_streams, provider_streams


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.client_matrix", description=__doc__)
    ap.add_argument("--out", type=Path, default=Path("reports"), help="report directory")
    ap.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="the repository (clients/ and cassettes/ under it)",
    )
    ap.add_argument("--clients", default="", help="comma-separated client ids (default all)")
    ap.add_argument(
        "--ecosystem",
        choices=("python", "npm"),
        action="append",
        help="only clients of this ecosystem (repeatable)",
    )
    ap.add_argument(
        "--streams",
        default="",
        help="only streams whose id contains one of these comma-separated words",
    )
    ap.add_argument("--captures", type=Path, help="a directory of field captures (JSONL)")
    ap.add_argument("--no-profiles", action="store_true")
    ap.add_argument("--no-providers", action="store_true")
    ap.add_argument("--python", default=sys.executable, help="interpreter for Python adapters")
    ap.add_argument("--node", default=shutil.which("node"), help="node for the npm adapters")
    ap.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds per job before it is hung (generous: a loaded 2-core "
        "machine is slow, and no stream here should take more than 4 s)",
    )
    ap.add_argument("--workers", type=int, default=2, help="clients run at once")
    ap.add_argument(
        "--min-own-ok",
        type=float,
        default=0.95,
        help="exit 1 when conformance.client is ok on fewer of its streams",
    )
    args = ap.parse_args(argv)

    wanted = [c for c in args.clients.split(",") if c]
    unknown = [c for c in wanted if c not in BY_ID]
    if unknown:
        print(
            f"client-matrix: unknown client {unknown[0]!r} (known: {', '.join(BY_ID)})",
            file=sys.stderr,
        )
        return 4
    clients = [BY_ID[c] for c in wanted] if wanted else list(CLIENTS)
    if args.ecosystem:
        clients = [c for c in clients if c.ecosystem in args.ecosystem]
    streams = [] if args.no_profiles else profile_streams()
    if not args.no_providers:
        streams += provider_streams(args.root / "cassettes")
    if args.captures is not None:
        if not args.captures.is_dir():
            print(f"client-matrix: {args.captures}: not a directory", file=sys.stderr)
            return 4
        streams += capture_streams(args.captures)
    words = [w for w in args.streams.split(",") if w]
    if words:
        streams = [s for s in streams if any(w in s.id for w in words)]
    if not clients or not streams:
        print("client-matrix: nothing to run (no client or no stream selected)", file=sys.stderr)
        return 4
    started = time.monotonic()
    print(f"client-matrix: {len(clients)} clients x {len(streams)} streams", file=sys.stderr)
    matrix = run_matrix(
        clients,
        streams,
        root=args.root.resolve(),
        python=args.python,
        node=args.node,
        timeout=args.timeout,
        workers=args.workers,
        log=lambda m: print("client-matrix: " + m, file=sys.stderr),
    )
    paths = write_reports(matrix, args.out)
    readme = args.root / "README.md"
    if args.out.resolve() == (args.root / "reports").resolve() and readme.exists():
        from conformance.client_matrix.report import readme_table
        from conformance.report import update_readme

        update_readme(readme, readme_table(matrix), block="clients")  # the README's copy
        paths.append(readme)
    print(
        f"client-matrix: wrote {', '.join(map(str, paths))} in {time.monotonic() - started:.0f} s",
        file=sys.stderr,
    )
    own = [c for c in matrix["cells"] if c["client"] == "conformance"]
    if own:
        # n/a streams hold no right calls that anyone could assemble, and our client is
        # expected to flag them: it must be ok on its share of all streams, n/a not counted
        # as right.
        share = sum(c["outcome"] == "ok" for c in own) / len(own)
        na = sum(c["outcome"] == "n/a" for c in own)
        print(
            f"client-matrix: conformance.client ok on {share:.1%} of {len(own)} streams ({na} n/a)",
            file=sys.stderr,
        )
        if share < args.min_own_ok:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
