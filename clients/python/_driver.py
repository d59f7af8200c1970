"""The batch protocol every Python adapter speaks (see docs/clients.md).

stdin: one job per line, ``{"job", "base_url", "model", "request", "timeout"}``.
stdout: lines starting with ``@@client-matrix@@ ``: first ``{"ready", "package", "version"}``,
then one answer per job: ``{"job", "calls": [{id, name, arguments, invalid?}], "count"}``
(``invalid``: the library flagged the call; its reason or true), or
``{"job", "exception": {"type", "message"}}``, or ``{"job", "hung": true}`` (after which the
process exits: a stuck library call cannot be cancelled, the runner starts a new process).
Whatever a library prints itself goes to stderr.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

MARK = "@@client-matrix@@ "
# One throw-away request to a closed port before "ready": the libraries import most of their
# code lazily, on first use, and on a loaded machine that first use alone can take longer
# than a job's bound.
WARM_UP = {"job": "warm-up", "base_url": "http://127.0.0.1:{port}/v1", "model": "warm-up",
           "timeout": 60, "request": {
               "messages": [{"role": "user", "content": "ping"}],
               "tools": [{"type": "function", "function": {
                   "name": "ping", "description": "ping",
                   "parameters": {"type": "object", "properties": {}}}}]}}


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def serve(package: str, run: Callable[[dict[str, Any]], list[dict[str, Any]]]) -> None:
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)  # the libraries' own prints must not mix with the answers
    sys.stdout = sys.stderr

    def say(obj: dict[str, Any]) -> None:
        out.write(MARK + json.dumps(obj, ensure_ascii=False, default=str) + "\n")
        out.flush()

    warm_up = dict(WARM_UP, base_url=WARM_UP["base_url"].format(port=_closed_port()))
    warm = threading.Thread(target=_quietly, args=(run, warm_up), daemon=True)
    warm.start()
    warm.join(WARM_UP["timeout"])
    say({"ready": True, "package": package, "version": _version(package)})
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        box: dict[str, Any] = {}

        def work(job: dict[str, Any] = job, box: dict[str, Any] = box) -> None:
            try:
                box["calls"] = run(job)
            except BaseException as error:  # the library's failure is the finding
                box["exception"] = {"type": type(error).__name__, "message": str(error)[:500]}

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        thread.join(float(job.get("timeout", 10)))
        if thread.is_alive():
            say({"job": job["job"], "hung": True, "timeout": job.get("timeout")})
            os._exit(3)
        if "calls" in box:
            calls = [_call(c) for c in box["calls"]]
            say({"job": job["job"], "calls": calls, "count": len(calls)})
        else:
            say({"job": job["job"], "exception": box.get("exception")})


def _call(c: dict[str, Any]) -> dict[str, Any]:
    """One call as answered: ``invalid`` is the library's own flag (its reason, or true);
    a library that exposes no call ids (or names) leaves ``id`` (``name``) out, and the judge
    then checks none."""
    out = {"arguments": c.get("arguments")}
    for key in ("id", "name"):
        if key in c:
            out[key] = c[key]
    if c.get("invalid"):
        out["invalid"] = c["invalid"] if isinstance(c["invalid"], str) else True
    return out


def _closed_port() -> int:
    with socket.socket() as sock:  # a port that was just free: nothing listens there
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _quietly(run: Callable[[dict[str, Any]], Any], job: dict[str, Any]) -> None:
    try:
        run(job)
    except BaseException:  # the closed port answers with an error: that is the point
        pass


def options(request: dict[str, Any], *keys: str) -> dict[str, Any]:
    """The request fields among ``keys`` that the scenario sets (passed on as the user would)."""
    return {k: request[k] for k in keys if k in request}


def user_text(request: dict[str, Any]) -> str:
    users = [m for m in request["messages"] if m.get("role") == "user"]
    return str(users[-1]["content"]) if users else ""
