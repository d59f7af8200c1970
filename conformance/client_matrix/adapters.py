"""Starting adapter processes and talking to them: one process per client answers a batch
of jobs, one JSON line each; a job with no answer in time is ``hung`` and its process is
killed (by its pid) and replaced for the jobs after it."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from conformance.client_matrix.clients import Client

MARK = "@@client-matrix@@ "
GRACE = 5.0  # seconds beyond a job's own bound before the runner stops waiting
SECRETS = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.I)


def adapter_env() -> dict[str, str]:
    """The adapters' environment: no credentials, and never a proxy for the local harness."""
    env = {k: v for k, v in os.environ.items() if not SECRETS.search(k)}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def adapter_argv(client: Client, root: Path, python: str, node: str | None) -> list[str] | str:
    """The command line for a client's adapter, or why it cannot run."""
    if client.ecosystem == "python":
        return [python, str(root / "clients" / "python" / client.script)]
    if node is None:
        return "node is not installed"
    js = root / "clients" / "js"
    if not (js / "node_modules").is_dir():
        return "clients/js/node_modules is missing (npm ci in clients/js)"
    return [node, str(js / client.script)]


class Adapter:
    """One running adapter process."""

    def __init__(self, argv: list[str], log: Any):
        self.log = log
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=adapter_env(),
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(MARK):
                self.lines.put(line[len(MARK) :])
        self.lines.put(None)  # end of output: the process exited

    def next(self, timeout: float) -> dict[str, Any] | None:
        """The next answer; None when the process ended or nothing came in time."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is None:
            return None
        return json.loads(line)

    def send(self, job: dict[str, Any]) -> bool:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(job, ensure_ascii=False) + "\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def stop(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


def _last_line(log: Any) -> str:
    log.flush()
    try:
        text = Path(log.name).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def run_client(
    client: Client, argv: list[str] | str, jobs: list[dict[str, Any]], *, startup: float = 300.0
) -> tuple[str | None, dict[str, dict[str, Any]]]:
    """Run every job through the client's adapter; the version it reports and the answers."""
    answers: dict[str, dict[str, Any]] = {}
    if isinstance(argv, str):
        return None, {j["job"]: {"error": argv} for j in jobs}
    version: str | None = None
    adapter: Adapter | None = None
    with tempfile.NamedTemporaryFile(
        "w+", prefix=f"client-{client.id}-", suffix=".log", delete=False, encoding="utf-8"
    ) as log:
        for n, job in enumerate(jobs):
            if adapter is None:
                try:
                    adapter = Adapter(argv, log)
                except OSError as error:
                    reason = f"cannot start the adapter: {error}"
                    answers.update({j["job"]: {"error": reason} for j in jobs[n:]})
                    break
                ready = adapter.next(startup)
                if not ready or not ready.get("ready"):
                    reason = "the adapter did not start: " + (_last_line(log) or "no output")
                    adapter.stop()
                    answers.update({j["job"]: {"error": reason} for j in jobs[n:]})
                    adapter = None
                    break
                version = ready.get("version")
            started = time.monotonic()
            answer = adapter.next(float(job["timeout"]) + GRACE) if adapter.send(job) else None
            if answer is None or answer.get("job") != job["job"]:
                alive = adapter.proc.poll() is None
                adapter.proc.kill()  # our own child, by its handle
                adapter.stop()
                adapter = None
                if alive and time.monotonic() - started >= float(job["timeout"]):
                    answer = {"hung": True, "timeout": job["timeout"]}
                else:
                    answer = {"error": "the adapter exited: " + (_last_line(log) or "?")}
            elif answer.get("hung"):
                adapter.stop()
                adapter = None
            answers[job["job"]] = answer
        if adapter is not None:
            adapter.stop()
    os.unlink(log.name)
    return version, answers
