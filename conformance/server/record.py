"""Run a command while the reference-profile server is up (`nox -s profiles`).

    python -m conformance.server.record -- CMD ...

Starts the server on a free 127.0.0.1 port (bounded wait), exports
CONFORMANCE_SERVER_URL for the command, stops the server, exits with CMD's status.
"""

from __future__ import annotations

import os
import subprocess
import sys

from conformance.server.testing import running_server


def main(argv: list[str]) -> int:
    if "--" not in argv or not argv[argv.index("--") + 1 :]:
        print("usage: python -m conformance.server.record -- CMD ...", file=sys.stderr)
        return 2
    cmd = argv[argv.index("--") + 1 :]
    with running_server() as url:
        env = dict(os.environ, CONFORMANCE_SERVER_URL=url)
        try:
            return subprocess.call(cmd, env=env)
        except KeyboardInterrupt:
            return 130


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
