"""The LiteLLM lane: the LiteLLM proxy (a gateway) in front of a real or a reference server.

Two upstreams, one gateway:

* ``--upstream llamacpp`` (default): the llama.cpp lane's ``llama-server`` (SmolLM2-135M),
  started here too; the suite records the ``litellm`` column through the gateway.
* ``--upstream profiles``: ``conformance serve`` (every reference profile, model = profile
  name); the suite records each profile through the gateway (gateway transparency).

Everything lives under ``~/.cache/conformance`` (``$CONFORMANCE_CACHE`` overrides the root):

* ``litellm/<LITELLM_VERSION>/``: a virtualenv of its own (never the test venv: litellm pulls
  an aiohttp that breaks vcrpy's aiohttp stub) with ``litellm==LITELLM_VERSION`` and the proxy
  dependencies listed by hand (:data:`PROXY_REQUIREMENTS`: the ``[proxy]`` extra of this
  release pins ``litellm-proxy-extras``/``litellm-enterprise`` versions that PyPI does not
  have).  A marker file records a complete install; later runs cost one ``stat``.
* ``logs/``: install log and one log per start.

The master key is generated per run (``sk-`` + 32 random characters), handed to LiteLLM and
to the command through the environment only (``LITELLM_MASTER_KEY``); it is never written to
a file, and the suite redacts it from cassettes (``api_key_env`` of the ``litellm`` entry).

CLI (runs a command against the gateway, then stops everything it started)::

    python -m conformance.lanes.litellm [--upstream llamacpp|profiles] [--url URL]
                                        [--install-only] -- CMD ...

The command sees ``LITELLM_BASE_URL``, ``LITELLM_MASTER_KEY``, ``LITELLM_SERVER_VERSION``
(LiteLLM's version and the upstream server's) and ``LITELLM_UPSTREAM``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets as pysecrets
import string
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from conformance.lanes import common
from conformance.lanes.common import LaneError

__all__ = [
    "LITELLM_VERSION",
    "PROXY_REQUIREMENTS",
    "UPSTREAMS",
    "VENV",
    "LaneError",
    "config_text",
    "ensure_venv",
    "main",
    "new_master_key",
    "running_gateway",
]

LITELLM_VERSION = "1.109.3"
"""The newest release whose proxy installs here (1.110.x needs a ``litellm-proxy`` that
PyPI does not serve)."""

PROXY_REQUIREMENTS = (
    f"litellm=={LITELLM_VERSION}",
    # The [proxy] extra pins litellm-proxy-extras==0.4.113 and litellm-enterprise==0.1.82.post1,
    # neither of which is on PyPI: the newest published ones work.
    "litellm-proxy-extras==0.4.110",
    "litellm-enterprise==0.1.83",
    # The rest of the [proxy] extra that `litellm --config` imports at start-up; the cloud
    # SDKs, redis, polars, granian and the profiler of the extra are left out (unused here).
    "gunicorn>=23.0.0,<24.0",
    "uvicorn>=0.33.0,<1.0",
    "uvloop>=0.22.1,<1.0",
    "fastapi>=0.136.3,<1.0",
    "starlette>=1.0.1,<2.0",
    "backoff>=2.2.1,<3.0",
    "pyyaml>=6.0.3,<7.0",
    "rq>=2.7.0,<3.0",
    "orjson>=3.11.6,<4.0",
    "apscheduler>=3.11.2,<4.0",
    "fastapi-sso>=0.19.0,<1.0",
    "pyjwt>=2.13.0,<3.0",
    "python-multipart>=0.0.27,<1.0",
    "cryptography>=49.0.0,<51.0",
    "pynacl>=1.6.2,<2.0",
    "websockets>=15.0.1,<16.0",
    "mcp>=2.3.0,<3",
    "httpx2>=2.10.0,<3",
    "restrictedpython>=8.5,<9.0",
    "rich>=13.9.4,<14.0",
    "tomlkit>=0.13.3,<1.0",
    "expression>=5.6.0,<6.0",
    "backports-zstd>=1.0.0,<2.0",
    "soundfile>=0.12.1,<1.0",  # imported by the proxy's pass-through endpoints at start-up
)

CACHE = Path(os.environ.get("CONFORMANCE_CACHE") or Path.home() / ".cache" / "conformance")
VENV = CACHE / "litellm" / LITELLM_VERSION
LOGS = CACHE / "logs"
_MARKER = VENV / ".conformance-litellm-ok"

UPSTREAMS = ("llamacpp", "profiles")

SERVER_ENV: Mapping[str, str] = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no download of the price list: starts offline
    "LITELLM_TELEMETRY": "False",
    "LITELLM_LOG": "ERROR",
    "NO_DOCS": "True",
    "DISABLE_ADMIN_UI": "True",
}
"""Environment added to LiteLLM's; the master key and the upstream URL are added per run."""

PIP_TIMEOUT = 1800.0
IMPORT_CHECK_TIMEOUT = 300.0
STARTUP_TIMEOUT = 180.0
"""About 30 s on an idle 2-core machine; a loaded one takes several times that."""


def venv_python() -> Path:
    return VENV / "bin" / "python"


_file_lock = common.file_lock


_run_logged = functools.partial(common.run_logged, lane="litellm lane")


def _venv_ok() -> bool:
    return (
        venv_python().exists()
        and _MARKER.is_file()
        and _MARKER.read_text().strip() == LITELLM_VERSION
    )


def ensure_venv() -> Path:
    """Return the LiteLLM venv's python; create and install it first if it is missing.

    ``python -m venv``, ``pip install`` of :data:`PROXY_REQUIREMENTS`, then a check that
    the proxy module imports; a marker records success.  About 3 min and 600 MB here.
    """
    if _venv_ok():
        return venv_python()
    with _file_lock(CACHE / "litellm" / f".{LITELLM_VERSION}.lock"):
        if _venv_ok():
            return venv_python()
        LOGS.mkdir(parents=True, exist_ok=True)
        log = LOGS / "litellm-install.log"
        log.write_text(
            f"# LiteLLM lane install {LITELLM_VERSION}, {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
        )
        common.log(
            f"litellm lane: installing litellm=={LITELLM_VERSION} with its proxy "
            f"dependencies into {VENV} (~3 min) ..."
        )
        started = time.monotonic()
        if not venv_python().exists():
            _run_logged(
                [sys.executable, "-m", "venv", VENV], log=log, timeout=300, what="creating the venv"
            )
        pip: list[str | Path] = [venv_python(), "-m", "pip", "--disable-pip-version-check"]
        _run_logged(
            [*pip, "install", *PROXY_REQUIREMENTS],
            log=log,
            timeout=PIP_TIMEOUT,
            what=f"pip install litellm=={LITELLM_VERSION} (proxy)",
        )
        _run_logged(
            [venv_python(), "-c", "import litellm.proxy.proxy_server"],
            log=log,
            timeout=IMPORT_CHECK_TIMEOUT,
            what="importing litellm.proxy",
            env={**os.environ, **SERVER_ENV},
        )
        _MARKER.write_text(LITELLM_VERSION + "\n")
        common.log(f"litellm lane: installed in {time.monotonic() - started:.0f} s")
    return venv_python()


def new_master_key() -> str:
    """A fresh master key for one run (LiteLLM wants the ``sk-`` prefix)."""
    alphabet = string.ascii_letters + string.digits
    return "sk-" + "".join(pysecrets.choice(alphabet) for _ in range(32))


def config_text() -> str:
    """LiteLLM's config: every model name goes to the upstream as an OpenAI-compatible model;
    the key and the upstream URL are read from the environment (``os.environ/…``)."""
    return (
        "model_list:\n"
        '  - model_name: "*"\n'
        "    litellm_params:\n"
        '      model: "openai/*"\n'
        "      api_base: os.environ/CONFORMANCE_UPSTREAM_BASE_URL\n"
        '      api_key: "none"\n'
        "litellm_settings:\n"
        "  drop_params: false\n"
        "  num_retries: 0\n"
        "  request_timeout: 600\n"
        "general_settings:\n"
        "  master_key: os.environ/LITELLM_MASTER_KEY\n"
    )


@contextlib.contextmanager
def _upstream(kind: str, startup_timeout: float) -> Iterator[tuple[str, str]]:
    """Start the upstream; yield its base URL and a description with its version."""
    if kind == "llamacpp":
        from conformance.lanes import llamacpp

        with llamacpp.running_server(startup_timeout=max(startup_timeout, 120)) as url:
            yield url, f"llama.cpp llama-server {llamacpp.SERVER_VERSION}"
        return
    from conformance import __version__

    port = common.free_port()
    log = LOGS / f"litellm-upstream-serve-{port}.log"
    log.write_text("")
    cmd = [sys.executable, "-m", "conformance", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with common.started_process(cmd, log=log) as proc:
        root = f"http://127.0.0.1:{port}"
        try:
            common.wait_healthy(f"{root}/health", timeout=60, process=proc)
        except LaneError as exc:
            raise LaneError(
                f"litellm lane: conformance serve did not start: {exc} (log: {log})"
            ) from None
        yield f"{root}/v1", f"conformance serve {__version__} (reference profiles)"


@contextlib.contextmanager
def running_gateway(
    *,
    upstream: str = "llamacpp",
    port: int | None = None,
    startup_timeout: float = STARTUP_TIMEOUT,
    master_key: str | None = None,
) -> Iterator[dict[str, str]]:
    """Start the upstream and LiteLLM in front of it; yield the command's environment.

    Both run in their own sessions on 127.0.0.1 and are stopped by their pids on every exit
    path.  Waits (bounded) for ``/health/liveliness``; LaneError if LiteLLM exits first.
    """
    if upstream not in UPSTREAMS:
        raise LaneError(
            f"litellm lane: unknown upstream {upstream!r}; valid: " + ", ".join(UPSTREAMS)
        )
    python = ensure_venv()
    key = master_key or new_master_key()
    LOGS.mkdir(parents=True, exist_ok=True)
    with (
        _upstream(upstream, startup_timeout) as (up_url, up_desc),
        tempfile.TemporaryDirectory(prefix="conformance-litellm-") as tmp,
    ):
        cfg = Path(tmp) / "config.yaml"
        cfg.write_text(config_text())
        port = port or common.free_port()
        log = LOGS / f"litellm-server-{port}.log"
        log.write_text("")
        env = {
            **os.environ,
            **SERVER_ENV,
            "LITELLM_MASTER_KEY": key,
            "CONFORMANCE_UPSTREAM_BASE_URL": up_url,
        }
        cmd = [
            str(python),
            "-m",
            "litellm.proxy.proxy_cli",
            "--config",
            str(cfg),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--num_workers",
            "1",
        ]
        root = f"http://127.0.0.1:{port}"
        with common.started_process(cmd, log=log, env=env) as proc:
            started = time.monotonic()
            try:
                common.wait_healthy(
                    f"{root}/health/liveliness", timeout=startup_timeout, process=proc
                )
            except LaneError as exc:
                raise LaneError(
                    f"litellm lane: LiteLLM did not become healthy: {exc} "
                    f"(log: {log})\n{common.tail(log, 15)}"
                ) from None
            common.log(
                f"litellm lane: LiteLLM {LITELLM_VERSION} healthy at {root} after "
                f"{time.monotonic() - started:.1f} s (pid {proc.pid}), in front of "
                f"{up_desc}"
            )
            yield {
                "LITELLM_BASE_URL": f"{root}/v1",
                "LITELLM_MASTER_KEY": key,
                "LITELLM_SERVER_VERSION": f"{LITELLM_VERSION} (upstream: {up_desc})",
                "LITELLM_UPSTREAM": upstream,
            }


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m conformance.lanes.litellm [--upstream U] [--url URL] [--install-only]
    -- CMD ...``."""
    args = list(sys.argv[1:] if argv is None else argv)
    upstream = "llamacpp"
    head = args[: args.index("--")] if "--" in args else args
    if "--upstream" in head:
        i = args.index("--upstream")
        if i + 1 >= len(args) or args[i + 1] not in UPSTREAMS:
            print("error: --upstream needs one of: " + ", ".join(UPSTREAMS), file=sys.stderr)
            return 2
        upstream = args[i + 1]
        del args[i : i + 2]
    holder: dict[str, dict[str, str]] = {}

    @contextlib.contextmanager
    def running_server(*, port: int | None, startup_timeout: float) -> Iterator[str]:
        with running_gateway(upstream=upstream, port=port, startup_timeout=startup_timeout) as env:
            holder["env"] = env
            yield env["LITELLM_BASE_URL"]

    def env_for(url: str, started: bool) -> dict[str, str]:
        if started:
            return holder["env"]
        version = common.remote_field(
            f"{url.rstrip('/').removesuffix('/v1')}/health/readiness", "litellm_version"
        )
        return {
            "LITELLM_BASE_URL": url,
            "LITELLM_SERVER_VERSION": version,
            "LITELLM_UPSTREAM": "user",
        }

    return common.lane_main(
        args,
        name="litellm",
        prog="python -m conformance.lanes.litellm",
        description="Run CMD against LiteLLM's proxy in front of the llama.cpp lane's server "
        "or `conformance serve` (both started here unless --url is given). CMD sees "
        "LITELLM_BASE_URL, LITELLM_MASTER_KEY, LITELLM_SERVER_VERSION and LITELLM_UPSTREAM.",
        prepare_flag="--install-only",
        prepare_help="only install the LiteLLM venv",
        prepare=lambda: [ensure_venv()],
        running_server=running_server,
        env_for=env_for,
        startup_timeout=STARTUP_TIMEOUT,
    )


if __name__ == "__main__":
    sys.exit(main())
