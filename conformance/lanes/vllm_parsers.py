"""The scripted vLLM lane: one real vLLM server per tool parser, its model's output scripted.

For each parser (``--parser``, default: every family of
:data:`conformance.lanes.vllm_families.FAMILIES`) and each step size (``--steps``: vLLM's
``--stream-interval``, tokens per streamed delta), the lane

1. builds the family's tiny model folder once (``scripted_model.py`` in the vLLM venv:
   byte-level BPE tokenizer with the family's markup tokens, a 1-layer Llama config; no
   weights, ``--load-format dummy``) under ``~/.cache/conformance/models/scripted-<parser>``;
2. starts ``vllm.entrypoints.openai.api_server`` on 127.0.0.1 with ``--tool-call-parser``,
   the family's reasoning parser and chat template, and the scripted logits processor;
3. for each load (``--load``: requests in flight), runs CMD with ``VLLM_SCRIPTED_BASE_URL``,
   ``VLLM_SCRIPTED_COLUMN`` (``vllm[hermes]@steps4`` …) and ``VLLM_SERVER_VERSION`` set; at a
   load of N, N-1 scripted streams run beside it the whole time (bounded in count and time);
   ``{column}`` in CMD is replaced by the column's name;
4. stops the server (its process group) on every exit path.

CLI::

    python -m conformance.lanes.vllm_parsers [--parser P]… [--steps N]… [--load N]… -- CMD…

Exit status: the worst of CMD's statuses (0 and 1 are a suite's normal outcomes and are
passed on), 2 when the lane cannot be prepared or started, 128+N on a signal.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

from conformance.lanes import common, vllm
from conformance.lanes.common import LaneError
from conformance.lanes.vllm_columns import BASE_URL_ENV, MODEL, column_name
from conformance.lanes.vllm_families import FAMILIES, Family
from conformance.lanes.vllm_scripts import script_args

BUILDER = Path(__file__).with_name("scripted_model.py")
PROCESSOR = "conformance.lanes.scripted_processor:V1"
"""The V1 model runner's interface: vLLM's CPU backend runs the V1 model runner when Triton
has no CPU backend (as here); ``:V2`` is the same processor for Model Runner V2."""
REPO = Path(__file__).resolve().parents[2]
LOAD_MAX_REQUESTS = 5000
"""A bound on the background load's requests per CMD run (it also stops when CMD ends)."""


def model_dir(family: Family) -> Path:
    return vllm.MODELS / f"scripted-{family.parser}"


def ensure_model(family: Family) -> Path:
    """The family's model folder, built (or rebuilt when its spec changed) in the vLLM venv."""
    spec = family.model_spec()
    text = json.dumps(spec, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256((text + BUILDER.read_text()).encode()).hexdigest()
    out = model_dir(family)
    stamp = out / ".conformance-spec"
    if stamp.is_file() and stamp.read_text() == digest:
        return out
    py = vllm.ensure_venv()
    vllm.LOGS.mkdir(parents=True, exist_ok=True)
    with common.file_lock(vllm.MODELS / f".scripted-{family.parser}.lock"):
        spec_file = vllm.MODELS / f"scripted-{family.parser}.spec.json"
        spec_file.write_text(text)
        common.run_logged(
            [py, BUILDER, spec_file, out],
            lane="vllm-parsers lane",
            log=vllm.LOGS / "vllm-scripted-model.log",
            timeout=600,
            what=f"building the {family.parser} model",
            env={**os.environ, **vllm.SERVER_ENV},
        )
        stamp.write_text(digest)
    return out


def server_command(
    family: Family, model: Path, port: int, steps: int = 1, python: Path | None = None
) -> list[str]:
    cmd = [
        str(python or vllm.venv_python()), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(model), "--served-model-name", MODEL,
        "--host", "127.0.0.1", "--port", str(port),
        "--load-format", "dummy", "--dtype", "bfloat16",
        "--max-model-len", "4096", "--max-num-seqs", "8", "--enforce-eager",
        "--enable-auto-tool-choice", "--tool-call-parser", family.parser,
        "--chat-template", str(model / "chat_template.jinja"),
        "--logits-processors", PROCESSOR,
        "--stream-interval", str(steps),
    ]  # fmt: skip
    if family.reasoning_parser:
        cmd += ["--reasoning-parser", family.reasoning_parser]
    return cmd


def server_env(model: Path) -> dict[str, str]:
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {
        **os.environ,
        **vllm.SERVER_ENV,
        "PYTHONPATH": path,
        "CONFORMANCE_SCRIPTED_MODEL": str(model),
    }


@contextlib.contextmanager
def running_server(
    family: Family, *, steps: int = 1, port: int | None = None, startup_timeout: float = 600
) -> Iterator[str]:
    """Start the family's scripted server, yield ``http://127.0.0.1:PORT/v1``, stop it."""
    model = ensure_model(family)
    port = port or common.free_port()
    log = vllm.LOGS / f"vllm-scripted-{family.parser}-{port}.log"
    log.write_text("")
    root = f"http://127.0.0.1:{port}"
    cmd = server_command(family, model, port, steps)
    with common.started_process(cmd, log=log, env=server_env(model)) as proc:
        started = time.monotonic()
        try:
            common.wait_healthy(f"{root}/health", timeout=startup_timeout, process=proc)
        except LaneError as exc:
            raise LaneError(
                f"vllm-parsers lane: the {family.parser} server did not become "
                f"healthy: {exc} (log: {log})\n{common.tail(log, 15)}"
            ) from None
        common.log(
            f"vllm-parsers lane: {family.parser} (stream interval {steps}) healthy at "
            f"{root} after {time.monotonic() - started:.1f} s (pid {proc.pid})"
        )
        yield f"{root}/v1"


def load_body(family: Family) -> dict[str, object]:
    """One background request: the long-arguments scenario's request and script."""
    from conformance.lanes.vllm_columns import scripted_provider
    from conformance.scenarios import SCENARIOS, build_request

    p = scripted_provider(family)
    body = build_request(SCENARIOS["long-arguments"], p)
    body["vllm_xargs"] = script_args(family, "long-arguments")
    return body


@contextlib.contextmanager
def background_load(
    base_url: str, family: Family, streams: int, max_requests: int = LOAD_MAX_REQUESTS
) -> Iterator[dict[str, int]]:
    """*streams* threads sending streamed scripted requests back to back until the block
    ends (or *max_requests* were sent): the cells recorded meanwhile share the engine's
    batch with them."""
    stats = {"sent": 0, "failed": 0}
    if streams <= 0:
        yield stats
        return
    stop = threading.Event()
    data = json.dumps(load_body(family)).encode()
    lock = threading.Lock()

    def worker() -> None:
        while not stop.is_set():
            with lock:
                if stats["sent"] >= max_requests:
                    return
                stats["sent"] += 1
            req = urllib.request.Request(
                f"{base_url}/chat/completions",
                data=data,
                headers={"content-type": "application/json"},
            )
            try:
                with urllib.request.urlopen(req, timeout=120) as resp:
                    while resp.read(4096) and not stop.is_set():
                        pass
            except OSError:
                with lock:
                    stats["failed"] += 1
                stop.wait(0.5)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(streams)]
    for t in threads:
        t.start()
    time.sleep(1.0)  # let the streams enter the batch before the first cell
    try:
        yield stats
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=130)


def forget(
    cassette_root: Path, family: Family, steps: int, load: int, scenarios: Sequence[str] | None
) -> None:
    """Remove a column's cassettes of *scenarios* (all when None) before they are recorded
    again: vcrpy appends a new recording to an existing cassette, and a replay reads the
    first."""
    from conformance.lanes.vllm_columns import scripted_provider
    from conformance.scenarios import SCENARIOS

    key = scripted_provider(family, steps, load).cassette_key
    for s in scenarios or list(SCENARIOS):
        (cassette_root / key / f"{s}.yaml").unlink(missing_ok=True)


def write_metadata(cassette_root: Path, family: Family, steps: int, load: int) -> Path:
    """``scripts.json`` beside a column's cassettes: what the model was made to emit (each
    request's body holds its own script too), with the chat template and the server's flags."""
    from conformance.lanes.vllm_columns import scripted_provider

    p = scripted_provider(family, steps, load)
    out = cassette_root / p.cassette_key / "scripts.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "column": p.name,
        "vllm_version": vllm.VLLM_VERSION,
        "parser": family.parser,
        "family": family.name,
        "reasoning_parser": family.reasoning_parser,
        "stream_interval": steps,
        "requests_in_flight": load,
        "processor": PROCESSOR,
        "model": "1-layer Llama, random weights (--load-format "
        "dummy); byte-level BPE tokenizer (scripted_model.py) with the family's markup tokens",
        "markup_tokens": list(family.tokens),
        "eos": family.eos,
        "chat_template": family.chat_template(),
        "scripts": p.scripts,
    }
    from conformance.secrets import write_atomic

    write_atomic(out, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    cmd: list[str] = []
    if "--" in args:
        i = args.index("--")
        args, cmd = args[:i], args[i + 1 :]
    ap = argparse.ArgumentParser(
        prog="python -m conformance.lanes.vllm_parsers",
        description="Run CMD against one scripted vLLM server per "
        "tool parser (and step size, and load).",
    )
    ap.add_argument(
        "--parser",
        action="append",
        choices=sorted(FAMILIES),
        help="a parser to run (repeatable; default: all)",
    )
    ap.add_argument(
        "--steps",
        action="append",
        type=int,
        help="tokens per streamed delta, --stream-interval (repeatable; default 1)",
    )
    ap.add_argument(
        "--load",
        action="append",
        type=int,
        help="requests in flight while CMD runs (repeatable; default 1)",
    )
    ap.add_argument(
        "--scenario",
        action="append",
        help="the scenarios CMD records (repeatable; default: all): their old "
        "cassettes are removed first, since a recording appends to a cassette",
    )
    ap.add_argument(
        "--prepare-only", action="store_true", help="only install the venv and build the models"
    )
    ap.add_argument("--startup-timeout", type=float, default=600.0)
    ap.add_argument(
        "--cassette-dir",
        type=Path,
        default=Path(os.environ.get("CONFORMANCE_CASSETTE_DIR") or "cassettes"),
        help="where each column's scripts.json goes (beside its cassettes)",
    )
    opts = ap.parse_args(args)
    families = [FAMILIES[p] for p in (opts.parser or list(FAMILIES))]
    steps_list, loads = opts.steps or [1], opts.load or [1]
    if not cmd and not opts.prepare_only:
        ap.error("give a command after --, or --prepare-only")
    worst = 0
    try:
        for fam in families:
            ensure_model(fam)
        if opts.prepare_only:
            return 0
        for fam in families:
            for steps in steps_list:
                with running_server(fam, steps=steps, startup_timeout=opts.startup_timeout) as base:
                    for load in loads:
                        col = column_name(fam.parser, steps, load)
                        env = {
                            BASE_URL_ENV: base,
                            "VLLM_SCRIPTED_COLUMN": col,
                            "VLLM_SERVER_VERSION": vllm.server_version(base),
                        }
                        forget(opts.cassette_dir, fam, steps, load, opts.scenario)
                        started = time.monotonic()
                        with background_load(base, fam, load - 1) as stats:
                            rc = common.run_with_server(
                                [c.replace("{column}", col) for c in cmd], env
                            )
                        common.log(
                            f"vllm-parsers lane: {col}: status {rc} in "
                            f"{time.monotonic() - started:.0f} s"
                            + (
                                f", background requests {stats['sent']} ({stats['failed']} failed)"
                                if load > 1
                                else ""
                            )
                        )
                        worst = max(worst, rc)
                        write_metadata(opts.cassette_dir, fam, steps, load)
    except LaneError as exc:
        common.log(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        return 130
    except common.Terminated as exc:
        return exc.exit_status
    return worst


if __name__ == "__main__":
    sys.exit(main())
