"""The judge pinned by hand: (client, reference profile) pairs and the outcome each must have
in the committed report, written from what each library's code does with that profile's
bytes (the reason beside each). Every outcome is covered; ``hung`` and ``error`` come from
fake adapters run by the runner (no library here hangs or fails to start)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from conformance.client_matrix.clients import Client
from conformance.client_matrix.judge import OUTCOMES
from conformance.client_matrix.run import run_matrix
from conformance.client_matrix.streams import profile_streams

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "reports" / "client-matrix.json"

EXPECTED = [
    # Q-ARGS-TRUNCATED: the second call's arguments end mid-string; no right call exists.
    ("conformance", "args-truncated", "ok"),  # flags the call its repair closed
    ("ai-sdk", "args-truncated", "ok"),  # tool-call part with invalid: true
    ("langchain-openai", "args-truncated", "silent partial"),  # partial-JSON parse, no flag
    ("crow-cli", "args-truncated", "silent partial"),  # brace counting fails: "{}"
    ("openai-python-loop", "args-truncated", "invalid passed"),  # the cut text as it came
    ("cfosilvia-handler", "args-truncated", "invalid passed"),
    ("openai-node-loop", "args-truncated", "invalid passed"),
    ("haystack", "args-truncated", "dropped"),  # unparsable arguments: call skipped, a log
    ("google-adk", "args-truncated", "ok"),  # 2.1.0 raises JSONDecodeError: refuses the turn
    # Q-ID-ABSENT: two sound calls, no id on the wire.
    ("conformance", "id-absent", "ok"),
    ("cfosilvia-handler", "id-absent", "id invented"),  # call_<uuid> fallback
    ("ai-sdk", "id-absent", "id invented"),  # generated ids
    ("google-adk", "id-absent", "id invented"),  # the call's position as its id
    ("openai-agents-js", "id-absent", "crashed"),  # "missing a non-empty call ID"
    ("librechat-langchain-js", "id-absent", "dropped"),  # id-less chunks: invalid_tool_calls
    # Q-INDEX-ALL-ZERO: two calls, both on index 0, each with its id.
    ("conformance", "index-all-zero", "ok"),
    ("librechat-langchain-js", "index-all-zero", "ok"),  # its index repair
    ("ai-sdk", "index-all-zero", "ok"),
    ("openai-python-loop", "index-all-zero", "merged"),  # keyed by index
    ("cfosilvia-handler", "index-all-zero", "merged"),
    ("autogen", "index-all-zero", "merged"),
    ("langchain-openai", "index-all-zero", "args lost"),
    ("ai-sdk-openai", "index-all-zero", "args lost"),
    ("crow-cli", "index-all-zero", "dropped"),  # one entry, its JSON repair gives "{}"
    ("haystack", "index-all-zero", "dropped"),
    # Q-INDEX-ABSENT: no index on any delta.
    ("librechat-langchain-js", "index-absent", "ok"),
    ("google-adk", "index-absent", "ok"),
    ("ai-sdk-openai", "index-absent", "crashed"),  # its chunk schema requires index
    ("smolagents", "index-absent", "crashed"),  # "Tool call index is not provided"
    ("haystack", "index-absent", "crashed"),
    ("openai-python-loop", "index-absent", "merged"),  # every delta under the key None
    # Q-EMPTY-STRING-OVERWRITE: continuations carry id "" and name "".
    ("conformance", "empty-string-overwrite", "ok"),
    ("crow-cli", "empty-string-overwrite", "ok"),  # its non-empty guards
    ("haystack", "empty-string-overwrite", "wrong"),  # id overwritten by ""
    # Control markup in the arguments: not JSON.
    ("autogen", "args-control-markup", "invalid passed"),
    ("instructor", "args-control-markup", "ok"),  # raises: refuses the turn
    # Two objects on one index with no second id (Q-INDEX-REUSED-ACROSS-CALLS).
    ("ai-sdk", "index-reused-across-calls", "ok"),  # flagged invalid
    ("openai-python-loop", "index-reused-across-calls", "invalid passed"),
    ("langchain-openai", "index-reused-across-calls", "silent partial"),  # first object only
    # A call's arguments never arrived, its tool requires some (Q-ARGS-LOST-MULTITOKEN-DELTA).
    ("conformance", "args-lost-multitoken-delta", "ok"),  # flagged
    ("openai-python-loop", "args-lost-multitoken-delta", "n/a"),  # "" as the wire has it
    ("langchain-openai", "args-lost-multitoken-delta", "n/a"),
]
# Outcomes no library here shows: from fake adapters the runner drives.
FAKES = [("fake-hang", "reference", "hung"), ("fake-broken", "reference", "error")]


def _committed() -> dict[tuple[str, str], dict]:
    if not REPORT.exists():
        pytest.skip("reports/client-matrix.json is not generated yet (python3 noxw -s clients)")
    matrix = json.loads(REPORT.read_text(encoding="utf-8"))
    return {(c["client"], c["stream"]): c for c in matrix["cells"]}


def test_the_table_is_hand_written_wide_and_covers_every_outcome():
    assert len(EXPECTED) >= 30
    assert len({(c, p) for c, p, _ in EXPECTED}) == len(EXPECTED)
    covered = {o for *_, o in EXPECTED + FAKES}
    assert covered == set(OUTCOMES)


def test_the_committed_report_has_every_expected_outcome():
    cells = _committed()
    wrong = [
        (
            c,
            p,
            want,
            cells[(c, f"profile:{p}")]["outcome"],
            cells[(c, f"profile:{p}")]["detail"][:120],
        )
        for c, p, want in EXPECTED
        if cells[(c, f"profile:{p}")]["outcome"] != want
    ]
    assert not wrong, wrong


def test_n_a_is_a_lost_call_no_client_can_know_and_ours_flags_it():
    cells = _committed()
    na = [k for k, c in cells.items() if c["outcome"] == "n/a"]
    assert na, "no n/a cell: the lost-arguments profile should give one"
    for client, stream in na:
        assert any(w["status"] == "hidden" for w in cells[(client, stream)]["expected"])
        assert cells[("conformance", stream)]["outcome"] == "ok"


def test_hung_and_error_from_fake_adapters(tmp_path: Path):
    py = tmp_path / "clients" / "python"
    py.mkdir(parents=True)
    shutil.copy(ROOT / "clients" / "python" / "_driver.py", py / "_driver.py")
    (py / "fake_hang.py").write_text(
        "import time\nfrom _driver import serve\n\ndef run(job):\n"
        "    if job['job'] != 'warm-up':\n        time.sleep(60)\n    return []\n\n"
        "serve('fake', run)\n"
    )
    (py / "fake_broken.py").write_text("import a_module_that_is_not_installed\n")
    clients = [Client(c, "fake", "python", c.replace("-", "_") + ".py", c) for c, *_ in FAKES]
    streams = [s for s in profile_streams() if s.profile == "reference"]
    matrix = run_matrix(
        clients, streams, root=tmp_path, python=sys.executable, node=None, timeout=2
    )
    got = {(c["client"], c["stream"]): c["outcome"] for c in matrix["cells"]}
    assert all(got[(c, f"profile:{p}")] == o for c, p, o in FAKES), got
