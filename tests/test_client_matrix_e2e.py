"""The client matrix end to end: adapters as real processes against the harness (the
reference-profile app of ``toolcall-conformance serve`` and the replay endpoint) over real HTTP."""

from __future__ import annotations

import importlib.metadata
import shutil
import sys
from pathlib import Path

import pytest

from conformance.client_matrix.clients import BY_ID, Client
from conformance.client_matrix.report import validate
from conformance.client_matrix.run import run_matrix
from conformance.client_matrix.streams import profile_streams, provider_streams

ROOT = Path(__file__).resolve().parents[1]


def _streams(*names: str):
    return [s for s in profile_streams() if s.profile in names]


def _cells(matrix):
    return {(c["client"], c["stream"]): c for c in matrix["cells"]}


def test_own_client_and_the_openai_adapter_over_http():
    pytest.importorskip("openai", reason="the openai SDK is in the test extras")
    streams = _streams("reference", "index-all-zero", "stream-tools-unsupported")
    streams += [s for s in provider_streams(ROOT / "cassettes") if s.id == "vllm:parallel"]
    assert len(streams) == 4
    clients = [BY_ID["conformance"], BY_ID["openai-python"]]
    matrix = run_matrix(clients, streams, root=ROOT, python=sys.executable, node=None, timeout=20)
    validate(matrix)
    # Each client's row names the version that ran, ours included (read by its distribution).
    versions = {c["id"]: c["version"] for c in matrix["clients"]}
    assert versions["conformance"] == importlib.metadata.version("toolcall-conformance")
    assert versions["openai-python"] == importlib.metadata.version("openai")
    cells = _cells(matrix)
    for stream in streams:
        own = cells[("conformance", stream.id)]
        assert own["outcome"] == "ok", own
        assert own["requests"] == 1
    assert cells[("openai-python", "profile:reference")]["outcome"] == "ok"
    assert cells[("openai-python", "vllm:parallel")]["outcome"] == "ok"
    # HTTP 500 for a streamed request with tools: the SDK raises, which is right.
    err = cells[("openai-python", "profile:stream-tools-unsupported")]
    assert err["outcome"] == "ok" and err["detail"].startswith("raised ")
    # Both calls of Ollama's index-0 stream reach the robust reading...
    zero = cells[("openai-python", "profile:index-all-zero")]
    assert [c["name"] for c in zero["expected"]] == ["get_weather", "get_time"]
    assert zero["elicited"] is True and "Q-INDEX-ALL-ZERO" in zero["quirks"]
    # ...and a client keyed by index, as the SDK's accumulator is, merges them into one.
    if len(zero["calls"]) == 1:
        assert zero["outcome"] == "merged" and zero["problems"] == ["calls merged"]


FAKES = {
    "fake_crash.py": "def run(job):\n    raise ValueError('bad chunk\\nmore')\n",
    "fake_hang.py": "import time\n\ndef run(job):\n    if job['job'] != 'warm-up':\n"
    "        time.sleep(60)\n    return []\n",
    "fake_empty.py": "def run(job):\n    return []\n",
}


@pytest.fixture()
def fake_root(tmp_path: Path) -> Path:
    py = tmp_path / "clients" / "python"
    py.mkdir(parents=True)
    shutil.copy(ROOT / "clients" / "python" / "_driver.py", py / "_driver.py")
    for name, body in FAKES.items():
        (py / name).write_text(f"from _driver import serve\n\n{body}\n\nserve('fake', run)\n")
    (py / "fake_broken.py").write_text("import a_module_that_is_not_installed\n")
    return tmp_path


def fake(name: str) -> Client:
    return Client(name.replace("_", "-"), "fake", "python", f"fake_{name}.py", name)


def test_runner_outcomes_from_fake_adapters(fake_root: Path):
    streams = _streams("reference") + [
        s for s in provider_streams(ROOT / "cassettes") if s.id == "vllm:single"
    ]
    clients = [
        fake("crash"),
        fake("hang"),
        fake("empty"),
        fake("broken"),
        Client("node-less", "fake", "npm", "x.mjs", "x"),
    ]
    matrix = run_matrix(
        clients, streams, root=fake_root, python=sys.executable, node=None, timeout=2
    )
    validate(matrix)
    cells = _cells(matrix)
    for sid in ("profile:reference", "vllm:single"):
        assert cells[("crash", sid)]["outcome"] == "crashed"
        assert cells[("crash", sid)]["detail"] == "ValueError: bad chunk"
        assert cells[("hang", sid)]["outcome"] == "hung"
        assert cells[("broken", sid)]["outcome"] == "error"
        assert "a_module_that_is_not_installed" in cells[("broken", sid)]["detail"]
        assert cells[("node-less", sid)]["outcome"] == "error"
        assert cells[("node-less", sid)]["detail"] == "node is not installed"
    # A fake that sends nothing: on a replay the recorded bytes still say what it missed; on a
    # live profile no bytes exist, and that is an adapter error, not a verdict on the library.
    empty = cells[("empty", "vllm:single")]
    assert (empty["outcome"], empty["problems"]) == ("dropped", ["call dropped"])
    empty = cells[("empty", "profile:reference")]
    assert (empty["outcome"], empty["detail"]) == (
        "error",
        "the client answered without sending any request",
    )
