"""Memory of one recorded cell: peak RSS of the real suite recording one cell.

Run:  python benchmarks/bench_cell_memory.py  [--max-mb 64] [--cases endless long]

Each case records one cell (``--scenario single``, ``--record-mode=all``) of a provider
whose ``limits.max_bytes`` is ``--max-mb`` MiB, through ``conformance/suite`` in a
subprocess, the way a user runs it (vcrpy reads the body, the scrub, the cassette
write, the analysis). The subprocess reports its own peak RSS (VmHWM) at the end of the
cell and, in a second run, the peak that ``tracemalloc`` saw during the cell and during
its teardown (where the cassette is written); each run then replays its cassette
(``--record-mode=none``) and reports the same, the replay's setup being the cassette's
load.

- ``endless``: the test fakes' (``tests/faults.py``) ``endless`` route (content deltas forever); the
  cell ends at ``max_bytes`` as an ``error``. Goal (issue 16): the cell holds at most
  ``max_bytes`` plus a constant.
- ``long``: a stream that ends normally at about 90 % of ``max_bytes`` (content deltas
  of ordinary text, then a tool call and ``[DONE]``), served here: the body is kept
  whole, so the cell holds a few copies of it.
- ``long-key``: the same with an API key (``api_key_env``), as a real provider has: the
  body's redaction then also looks for the key split across events.

``refused`` (a closed port: the cell ends before any byte) is the floor: interpreter,
pytest, imports and one cell's machinery.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the test-only fakes (tests/faults.py)

PLUGIN = """
import json, os, tracemalloc, pytest

def _hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

TRACE = os.environ["CELLMEM_TRACE"] == "1"
_peaks, _phases = [], {}

def _phase(name):
    if not TRACE:
        yield
        return
    _peaks.append(tracemalloc.get_traced_memory()[1])
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    yield
    peak = tracemalloc.get_traced_memory()[1]
    _phases[name + "_mb"] = (peak - start) / 2**20
    _peaks.append(peak)

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _phase("setup")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _phase("call")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield from _phase("teardown")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if TRACE:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
    yield
    peak = max(_peaks + [tracemalloc.get_traced_memory()[1]]) - base if TRACE else None
    with open(os.environ["CELLMEM_OUT"], "w") as f:
        json.dump({"rss_mb": _hwm(), "traced_mb": peak and peak / 2**20, **_phases}, f)
"""


def _chunk(
    content: str | None = None, tool: dict | None = None, finish: str | None = None
) -> bytes:
    delta: dict = {}
    if content is not None:
        delta["content"] = content
    if tool is not None:
        delta["tool_calls"] = [tool]
    chunk = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def long_body(w: Any, size: int) -> None:
    """A finite stream of about ``size`` bytes: content deltas, one tool call, [DONE]."""
    piece = _chunk("the quick brown fox jumps over the lazy dog " * 16) * 64
    sent = 0
    while sent + len(piece) < size:
        w.write(piece)
        sent += len(piece)
    call = {
        "index": 0,
        "id": "call_bench",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    w.write(_chunk(tool=call) + _chunk(finish="tool_calls") + b"data: [DONE]\n\n")


def record(base_url: str, max_bytes: int, trace: bool, key: bool = False) -> dict:
    """One cell recorded, then replayed from its cassette (``replay_*``)."""
    from faults import providers_yaml, run_suite

    with tempfile.TemporaryDirectory() as tmp:
        tmp_p = Path(tmp)
        (tmp_p / "cellmem.py").write_text(PLUGIN)
        (tmp_p / "providers.yaml").write_text(
            providers_yaml(
                {
                    "p": {
                        "base_url": base_url,
                        "model": "reference",
                        "retries": {"max": 0},
                        "limits": {"max_bytes": max_bytes},
                        **({"api_key_env": "BENCH_KEY"} if key else {}),
                    }
                }
            )
        )
        out = tmp_p / "out.json"
        env = {
            "PYTHONPATH": tmp,
            "CELLMEM_OUT": str(out),
            "CELLMEM_TRACE": "01"[trace],
            "BENCH_KEY": "sk-bench0123456789abcdefghij",
        }
        t0 = time.perf_counter()
        r = run_suite(
            tmp_p,
            "--record-mode=all",
            "-p",
            "cellmem",
            "--scenario",
            "single",
            env=env,
            timeout=900,
        )
        seconds = time.perf_counter() - t0
        if not out.exists():
            raise SystemExit(f"the cell did not run: {r.stdout[-2000:]}{r.stderr[-2000:]}")
        res = json.loads(out.read_text())
        cassette = next((tmp_p / "cassettes").rglob("*.yaml"), None)
        res.update(
            seconds=seconds,
            cassette_mb=cassette.stat().st_size / 2**20 if cassette else 0.0,
            outcome=r.stdout.strip().splitlines()[-1],
        )
        if cassette:
            out.unlink()
            run_suite(
                tmp_p,
                "--record-mode=none",
                "-p",
                "cellmem",
                "--scenario",
                "single",
                env=env,
                timeout=900,
            )
            if out.exists():
                res.update({f"replay_{k}": v for k, v in json.loads(out.read_text()).items()})
        return res


def _mb(res: dict, key: str) -> str:
    v = res.get(key)
    return "-" if v is None else f"{v:.1f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-mb", type=float, default=64.0)
    cases = ["refused", "endless", "long", "long-key"]
    ap.add_argument("--cases", nargs="+", default=cases, choices=cases)
    args = ap.parse_args()
    max_bytes = int(args.max_mb * 2**20)
    from faults import closed_port, fault_server, stream_server

    print(
        f"load: {os.getloadavg()[0]:.2f} (1 min); limits.max_bytes = {max_bytes} "
        f"({args.max_mb:g} MiB)"
    )
    print(
        "traced: MiB above the cell's start; write: the teardown (the cassette written); "
        "load: a replay's setup (the cassette read)"
    )
    print(
        f"{'case':>8} {'peak RSS MB':>12} {'traced MiB':>11} {'traced/max':>10} "
        f"{'write MiB':>9} {'cassette MiB':>12} {'s':>6} {'replay RSS MB':>13} "
        f"{'replay traced':>13} {'load MiB':>8}  outcome"
    )
    size = int(max_bytes * 0.9)
    with fault_server(max_wait=900) as fs, stream_server(lambda w: long_body(w, size)) as long_url:
        for case in args.cases:
            url = {
                "endless": fs.base_url("endless"),
                "long": long_url,
                "long-key": long_url,
                "refused": f"http://127.0.0.1:{closed_port()}/v1",
            }[case]
            key = case == "long-key"
            rss = record(url, max_bytes, trace=False, key=key)
            traced = record(url, max_bytes, trace=True, key=key)
            print(
                f"{case:>8} {rss['rss_mb']:>12.1f} {traced['traced_mb']:>11.1f} "
                f"{traced['traced_mb'] * 2**20 / max_bytes:>10.2f} "
                f"{_mb(traced, 'teardown_mb'):>9} "
                f"{rss['cassette_mb']:>12.2f} {rss['seconds']:>6.1f} "
                f"{_mb(rss, 'replay_rss_mb'):>13} {_mb(traced, 'replay_traced_mb'):>13} "
                f"{_mb(traced, 'replay_setup_mb'):>8}  {rss['outcome']}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
