"""The llama-cpp-python lane: ``llama_cpp.server`` (its own OpenAI-compatible server and its
own streaming tool-call code), serving SmolLM2-135M.

Everything lives under ``~/.cache/conformance`` (``$CONFORMANCE_CACHE`` overrides the root):

* ``llama-cpp-python/wheels/llama_cpp_python-<VERSION>-….whl``: built once from PyPI's sdist
  with CMake and ``CMAKE_ARGS=-DGGML_NATIVE=OFF`` (a native build died with SIGILL on this
  kind of CPU); about 30 min on a loaded 2-core machine, so the wheel is cached per version.
* ``llama-cpp-python/<VERSION>/``: a virtualenv of its own with that wheel and its
  ``[server]`` extra (never the test venv).
* ``models/SmolLM2-135M-Instruct.Q4_1.gguf``: shared with the llama.cpp lane
  (:func:`conformance.lanes.llamacpp.ensure_model`).
* ``logs/``: build, install and per-start logs.

The server runs ``--chat_format chatml-function-calling``: the only chat format of
llama-cpp-python that streams tool calls itself (docs/lanes/llama-cpp-python.md).

CLI (runs a command against the server, then stops it; exits with the command's status)::

    python -m conformance.lanes.llama_cpp_python [--url URL] [--build-only] -- CMD ...

The command sees ``LLAMA_CPP_PYTHON_BASE_URL``, ``LLAMA_CPP_PYTHON_SERVER_VERSION`` and
``LLAMA_CPP_PYTHON_MODEL``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from conformance.lanes import common
from conformance.lanes.common import LaneError

__all__ = [
    "CHAT_FORMAT",
    "MODEL_ALIAS",
    "VERSION",
    "LaneError",
    "ensure_venv",
    "ensure_wheel",
    "main",
    "running_server",
    "server_command",
]

VERSION = "0.3.36"
CACHE = Path(os.environ.get("CONFORMANCE_CACHE") or Path.home() / ".cache" / "conformance")
ROOT = CACHE / "llama-cpp-python"
WHEELS = ROOT / "wheels"
VENV = ROOT / VERSION
LOGS = CACHE / "logs"
_MARKER = VENV / ".conformance-llama-cpp-python-ok"

CMAKE_ARGS = "-DGGML_NATIVE=OFF"
CHAT_FORMAT = "chatml-function-calling"
MODEL_ALIAS = "smollm2-135m-instruct-q4_1"
SEED = 1
CONTEXT = 4096
THREADS = 1
"""One thread, as in the llama.cpp lane: output independent of the core count."""

BUILD_TIMEOUT = 3 * 3600.0
PIP_TIMEOUT = 1800.0
STARTUP_TIMEOUT = 120.0


_file_lock = common.file_lock


_run_logged = functools.partial(common.run_logged, lane="llama-cpp-python lane")


def _cached_wheel() -> Path | None:
    found = sorted(WHEELS.glob(f"llama_cpp_python-{VERSION}-*.whl"))
    return found[-1] if found else None


def ensure_wheel() -> Path:
    """Return the cached wheel; build it from the sdist first if it is missing.

    ``pip wheel --no-deps --no-binary llama-cpp-python llama-cpp-python==VERSION`` with
    ``CMAKE_ARGS=-DGGML_NATIVE=OFF`` (build requirements come from PyPI as wheels), logged to
    ``logs/llama-cpp-python-build.log``; ``build-info.json`` beside the wheel records how.
    """
    wheel = _cached_wheel()
    if wheel:
        return wheel
    with _file_lock(ROOT / f".wheel-{VERSION}.lock"):
        wheel = _cached_wheel()
        if wheel:
            return wheel
        if not shutil.which("cmake") or not any(shutil.which(c) for c in ("c++", "g++")):
            raise LaneError(
                "llama-cpp-python lane: building the wheel needs cmake and a C++ "
                "compiler (Debian: apt-get install cmake g++), or pass --url"
            )
        LOGS.mkdir(parents=True, exist_ok=True)
        log = LOGS / "llama-cpp-python-build.log"
        log.write_text(
            f"# llama-cpp-python {VERSION} wheel build, {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
        )
        jobs = max(1, os.cpu_count() or 1)
        env = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS, "CMAKE_BUILD_PARALLEL_LEVEL": str(jobs)}
        common.log(
            f"llama-cpp-python lane: building llama-cpp-python=={VERSION} from the sdist "
            f"(about 30 min on 2 cores; log: {log}) ..."
        )
        started = time.monotonic()
        WHEELS.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".build-", dir=ROOT) as tmp:
            _run_logged(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "wheel",
                    "--disable-pip-version-check",
                    "--no-deps",
                    "--no-binary",
                    "llama-cpp-python",
                    "-w",
                    tmp,
                    f"llama-cpp-python=={VERSION}",
                ],
                log=log,
                timeout=BUILD_TIMEOUT,
                what="pip wheel",
                env=env,
            )
            built = sorted(Path(tmp).glob("llama_cpp_python-*.whl"))
            if not built:
                raise LaneError(f"llama-cpp-python lane: pip wheel made no wheel (log: {log})")
            part = WHEELS / (built[0].name + ".part")
            shutil.copy2(built[0], part)
            os.replace(part, WHEELS / built[0].name)
        seconds = round(time.monotonic() - started, 1)
        (WHEELS / "build-info.json").write_text(
            json.dumps(
                {
                    "version": VERSION,
                    "cmake_args": CMAKE_ARGS,
                    "jobs": jobs,
                    "build_seconds": seconds,
                    "machine": platform.machine(),
                    "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
                indent=2,
            )
            + "\n"
        )
        common.log(f"llama-cpp-python lane: built the wheel in {seconds:.0f} s")
    wheel = _cached_wheel()
    assert wheel is not None
    return wheel


def venv_python() -> Path:
    return VENV / "bin" / "python"


def _venv_ok() -> bool:
    return venv_python().exists() and _MARKER.is_file() and _MARKER.read_text().strip() == VERSION


def ensure_venv() -> Path:
    """Return the server venv's python; install the cached wheel with ``[server]`` first."""
    if _venv_ok():
        return venv_python()
    wheel = ensure_wheel()
    with _file_lock(ROOT / f".venv-{VERSION}.lock"):
        if _venv_ok():
            return venv_python()
        LOGS.mkdir(parents=True, exist_ok=True)
        log = LOGS / "llama-cpp-python-install.log"
        log.write_text("")
        if not venv_python().exists():
            _run_logged(
                [sys.executable, "-m", "venv", VENV], log=log, timeout=300, what="creating the venv"
            )
        _run_logged(
            [
                venv_python(),
                "-m",
                "pip",
                "--disable-pip-version-check",
                "install",
                f"{wheel}[server]",
            ],
            log=log,
            timeout=PIP_TIMEOUT,
            what="pip install llama-cpp-python[server]",
        )
        _run_logged(
            [venv_python(), "-c", "import llama_cpp.server.app"],
            log=log,
            timeout=300,
            what="importing llama_cpp.server",
        )
        _MARKER.write_text(VERSION + "\n")
    return venv_python()


def server_command(python: Path, model: Path, port: int) -> list[str]:
    return [
        str(python),
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        MODEL_ALIAS,
        "--chat_format",
        CHAT_FORMAT,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(CONTEXT),
        "--seed",
        str(SEED),
        "--n_threads",
        str(THREADS),
        "--verbose",
        "False",
    ]


@contextlib.contextmanager
def running_server(
    *, port: int | None = None, startup_timeout: float = STARTUP_TIMEOUT
) -> Iterator[str]:
    """Start ``llama_cpp.server`` on 127.0.0.1, yield its ``…/v1`` URL, stop it by its pid."""
    from conformance.lanes import llamacpp

    python = ensure_venv()
    model = llamacpp.ensure_model()
    port = port or common.free_port()
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"llama-cpp-python-server-{port}.log"
    log.write_text("")
    root = f"http://127.0.0.1:{port}"
    with common.started_process(server_command(python, model, port), log=log) as proc:
        started = time.monotonic()
        try:
            common.wait_healthy(f"{root}/v1/models", timeout=startup_timeout, process=proc)
        except LaneError as exc:
            raise LaneError(
                f"llama-cpp-python lane: the server did not start: {exc} "
                f"(log: {log})\n{common.tail(log, 15)}"
            ) from None
        common.log(
            f"llama-cpp-python lane: llama_cpp.server {VERSION} ready at {root} after "
            f"{time.monotonic() - started:.1f} s (pid {proc.pid})"
        )
        yield f"{root}/v1"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m conformance.lanes.llama_cpp_python [--url URL] [--build-only] -- CMD``."""

    def env_for(url: str, started: bool) -> dict[str, str]:
        return {
            "LLAMA_CPP_PYTHON_BASE_URL": url,
            "LLAMA_CPP_PYTHON_SERVER_VERSION": VERSION if started else "unknown",
            "LLAMA_CPP_PYTHON_MODEL": MODEL_ALIAS if started else common.remote_model(url),
        }

    def prepare() -> list[Path]:
        from conformance.lanes import llamacpp

        return [ensure_wheel(), ensure_venv(), llamacpp.ensure_model()]

    return common.lane_main(
        argv,
        name="llama-cpp-python",
        prog="python -m conformance.lanes.llama_cpp_python",
        description="Run CMD against llama-cpp-python's server (built and started here unless "
        "--url is given). CMD sees LLAMA_CPP_PYTHON_BASE_URL, LLAMA_CPP_PYTHON_SERVER_VERSION "
        "and LLAMA_CPP_PYTHON_MODEL.",
        prepare_flag="--build-only",
        prepare_help="only build/install the server and the model",
        prepare=prepare,
        running_server=running_server,
        env_for=env_for,
        startup_timeout=STARTUP_TIMEOUT,
    )


if __name__ == "__main__":
    sys.exit(main())
