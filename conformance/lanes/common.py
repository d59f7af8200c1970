"""Process and HTTP helpers shared by the lanes (a real server started and stopped by the suite).

Small API, standard library only::

    from conformance.lanes import common

    port = common.free_port()
    with common.started_process(cmd, log=log_path, env=env) as proc:   # own session
        common.wait_healthy(f"http://127.0.0.1:{port}/health", timeout=120, process=proc)
        status = common.run_with_server(["pytest", "-q"], {"X_BASE_URL": url})
    # leaving the block stops the server: SIGTERM to its process group, SIGKILL after a grace

Guarantees:

* every wait is bounded (``timeout`` arguments, no infinite loops);
* a started process runs in its own session (``start_new_session=True``), so its process group
  id equals its pid; it is stopped by that id only (``os.killpg(pid, ...)``), which reaches the
  server and any workers it forked, and nothing else on the machine;
* :func:`started_process` stops the process on every exit path: normal exit, exception,
  ``KeyboardInterrupt`` and SIGTERM/SIGHUP (turned into :class:`Terminated` by
  :func:`signals_as_exceptions`, which :func:`started_process` installs when it runs in the
  main thread).  Signals arriving during the stop itself are held back until it is done.
* a CLI should catch :class:`Terminated` and exit with ``exc.exit_status`` (128 + signum).

Errors that a user should read are :class:`LaneError` with a one-line message.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from types import FrameType

__all__ = [
    "LaneError",
    "Terminated",
    "file_lock",
    "free_port",
    "log",
    "process_group_alive",
    "run_logged",
    "run_with_server",
    "signals_as_exceptions",
    "start_process",
    "started_process",
    "stop_process",
    "tail",
    "wait_healthy",
]

DEFAULT_STOP_TIMEOUT = 10.0
"""Seconds between SIGTERM and SIGKILL when stopping a process."""


class LaneError(RuntimeError):
    """A lane could not be prepared or started; the message is one line meant for a user."""


class Terminated(BaseException):
    """Raised in the main thread when SIGTERM or SIGHUP arrives (see signals_as_exceptions)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"received {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_status(self) -> int:
        """The conventional shell exit status for death by this signal (128 + signum)."""
        return 128 + self.signum


def log(message: str) -> None:
    """Write one progress line to stderr (lanes never print progress on stdout)."""
    print(message, file=sys.stderr, flush=True)


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free on *host* a moment ago (bind to port 0, read, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def tail(path: Path | str, lines: int = 20) -> str:
    """The last *lines* lines of a text file (``""`` if it does not exist), for error messages."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


@contextlib.contextmanager
def signals_as_exceptions(
    signums: Sequence[int] = (signal.SIGTERM, signal.SIGHUP),
) -> Iterator[None]:
    """Within the block, SIGTERM/SIGHUP raise :class:`Terminated` so ``finally`` blocks run.

    Only possible in the main thread; elsewhere this is a no-op.  Previous handlers are
    restored on exit.  Nested use is fine (the inner block restores the outer handler).
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum: int, _frame: FrameType | None) -> None:
        raise Terminated(signum)

    previous = {}
    for signum in signums:
        previous[signum] = signal.getsignal(signum)
        signal.signal(signum, _raise)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP back while cleaning up; they are delivered afterwards."""
    sigs = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def start_process(
    cmd: Sequence[str],
    *,
    log: Path | str,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
) -> subprocess.Popen[bytes]:
    """Start *cmd* in a new session with stdout+stderr appended to the file *log*.

    stdin is ``/dev/null``.  The returned process's pid is also its process-group id.  Pair it
    with :func:`stop_process` (or use :func:`started_process`, which does both).
    """
    log_path = Path(log)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as out:
        return subprocess.Popen(
            list(cmd),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )


def process_group_alive(pgid: int) -> bool:
    """True if any process is still in process group *pgid* (zombies included)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists but is not ours; treat as alive, never signal it
        return True
    return True


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stop_process(proc: subprocess.Popen[bytes], *, timeout: float = DEFAULT_STOP_TIMEOUT) -> int:
    """Stop a process started by :func:`start_process`: SIGTERM, then SIGKILL after *timeout*.

    Signals go to the process group whose id is ``proc.pid`` (the session this module created),
    so workers the server forked are stopped too.  Waits (bounded) until the leader is reaped
    and the group is empty.  Returns the leader's return code.  Safe to call twice.
    """
    pgid = proc.pid
    if proc.poll() is None or process_group_alive(pgid):
        _signal_group(pgid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _signal_group(pgid, signal.SIGKILL)
            proc.wait(timeout=timeout)
    # The leader is gone; forked workers may linger for a moment (or ignore SIGTERM).
    deadline = time.monotonic() + timeout
    while process_group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if process_group_alive(pgid):
        _signal_group(pgid, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while process_group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
    rc = proc.returncode
    return int(rc) if rc is not None else -int(signal.SIGKILL)


@contextlib.contextmanager
def started_process(
    cmd: Sequence[str],
    *,
    log: Path | str,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    stop_timeout: float = DEFAULT_STOP_TIMEOUT,
) -> Iterator[subprocess.Popen[bytes]]:
    """Start *cmd* (see :func:`start_process`), yield it, and always stop it on the way out.

    SIGTERM/SIGHUP received while inside the block become :class:`Terminated` (main thread
    only), so the process is stopped before the signal's default behaviour is restored.
    """
    with signals_as_exceptions():
        proc = start_process(cmd, log=log, env=env, cwd=cwd)
        try:
            yield proc
        finally:
            with _signals_deferred():
                stop_process(proc, timeout=stop_timeout)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Exclusive advisory lock, so parallel workers never build, install or convert twice."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run_logged(
    cmd: Sequence[str | os.PathLike[str]],
    *,
    lane: str,
    log: Path,
    timeout: float,
    what: str,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run one step in its own session, output appended to *log*; LaneError on failure.

    The step is stopped (process group, TERM then KILL) on timeout, Ctrl-C and SIGTERM."""
    argv = [str(c) for c in cmd]
    with open(log, "a") as fh:
        fh.write(f"\n$ {' '.join(argv)}\n")
    with started_process(argv, log=log, env=env) as proc:
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise LaneError(
                f"{lane}: {what} did not finish within {timeout:g} s (log: {log})"
            ) from None
    if rc != 0:
        last = tail(log, 1).strip()
        raise LaneError(f"{lane}: {what} failed with status {rc}: {last} (log: {log})")


def wait_healthy(
    url: str,
    *,
    timeout: float,
    process: subprocess.Popen[bytes] | None = None,
    interval: float = 0.25,
) -> float:
    """Poll ``GET url`` until it answers 200; return the seconds it took.

    Raises :class:`LaneError` (one line) if *timeout* seconds pass first, or if *process* is
    given and exits meanwhile.  Non-200 answers (e.g. 503 "loading model") and connection
    errors count as "not yet".
    """
    start = time.monotonic()
    deadline = start + timeout
    last = "no answer"
    while True:
        if process is not None and process.poll() is not None:
            raise LaneError(
                f"process exited with status {process.returncode} before {url} was healthy"
            )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LaneError(f"{url} not healthy after {timeout:g} s (last: {last})")
        try:
            with urllib.request.urlopen(url, timeout=max(0.1, min(2.0, remaining))) as resp:
                if resp.status == 200:
                    return time.monotonic() - start
                last = f"HTTP {resp.status}"
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}"
        except (OSError, ValueError) as exc:
            last = type(exc).__name__
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))


def run_with_server(
    cmd: Sequence[str],
    env_updates: Mapping[str, str],
    *,
    stop_timeout: float = DEFAULT_STOP_TIMEOUT,
) -> int:
    """Run *cmd* in the foreground with *env_updates* added to the environment; return its status.

    The command stays in our process group, so a terminal Ctrl-C reaches it directly.  If we
    are interrupted (KeyboardInterrupt, or :class:`Terminated` inside
    :func:`signals_as_exceptions`), the command gets SIGTERM, then SIGKILL after
    *stop_timeout*, and the exception propagates so the caller stops its server.
    Death by signal N is reported as 128 + N, like a shell.  A missing executable gives 127.
    """
    env = {**os.environ, **env_updates}
    try:
        proc = subprocess.Popen(list(cmd), env=env)
    except FileNotFoundError:
        log(f"error: command not found: {cmd[0] if cmd else '(empty)'}")
        return 127
    try:
        rc = proc.wait()
    except BaseException:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=stop_timeout)
        raise
    return 128 - rc if rc < 0 else rc


def lane_main(
    argv: Sequence[str] | None,
    *,
    name: str,
    prog: str,
    description: str,
    prepare_flag: str,
    prepare_help: str,
    prepare: Callable[[], Sequence[Path]],
    running_server: Callable[..., AbstractContextManager[str]],
    env_for: Callable[[str, bool], dict[str, str]],
    startup_timeout: float,
) -> int:
    """The command line both lanes share: ``[--url URL] [PREPARE] [--port P]
    [--startup-timeout S] -- CMD ...``. With --url, CMD runs against a user's server and
    nothing is started; otherwise the lane prepares, starts, runs CMD and stops its server.
    ``env_for(url, started)`` names what CMD sees. Returns CMD's exit status (128+N if it
    died of signal N); 2 if the lane could not be prepared or started; 130 on Ctrl-C;
    128+N on SIGTERM/SIGHUP."""
    import argparse

    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--url", help="use this OpenAI-compatible base URL (…/v1); start nothing")
    parser.add_argument(prepare_flag, dest="prepare_only", action="store_true", help=prepare_help)
    parser.add_argument("--port", type=int, default=None, help="port for the started server")
    parser.add_argument("--startup-timeout", type=float, default=startup_timeout)
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ...")
    args = parser.parse_args(argv)
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd and not args.prepare_only:
        parser.error("missing command after --")
    try:
        with signals_as_exceptions():
            if args.prepare_only:
                for path in prepare():
                    print(path)
                return 0
            if args.url:
                return run_with_server(cmd, env_for(args.url, False))
            with running_server(port=args.port, startup_timeout=args.startup_timeout) as url:
                return run_with_server(cmd, env_for(url, True))
    except LaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Terminated as exc:
        print(f"{name} lane: {exc}, server stopped", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        print(f"{name} lane: interrupted, server stopped", file=sys.stderr)
        return 130


def remote_field(url: str, key: str, timeout: float = 10.0) -> str:
    """Best effort: ``key`` of the JSON object at ``url`` (a server's version), else
    ``"unknown"``; never raises."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            data = json.load(resp)
    except (OSError, ValueError, urllib.error.URLError):
        return "unknown"
    return str(data.get(key) or "unknown") if isinstance(data, dict) else "unknown"


def remote_model(base_url: str, timeout: float = 10.0) -> str:
    """Best effort model id of a user's server: the first ``id`` of ``GET /v1/models``."""
    try:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/models", timeout=timeout) as resp:
            data = json.load(resp).get("data") or []
        return str(data[0]["id"]) if data else ""
    except (OSError, ValueError, KeyError, TypeError, AttributeError, urllib.error.URLError):
        return ""
