"""The pytest door (`pytest --pyargs conformance.suite`, conformance.pytest_plugin), in-process
by pytest.main, pinned by what a user of the door sees: the exit status (0, 1, 3, 4, 5, 6),
the summary block (counts, deviating cells with their levels, quirks let through by
--fail-on, why cells were not tested, where the files are), each refusal's one line, the
files written, and that an unrelated project's run is left alone. The run's decisions
(which cells count as unreachable, which were tested) are also pinned on their own.
"""

from __future__ import annotations

import http.server
import json
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from faults import serving

from conformance import pytest_plugin as P
from conformance.providers import Provider
from conformance.server.testing import running_server

ROOT = Path(__file__).resolve().parent.parent
PROVIDERS = ROOT / "providers.yaml"
CASSETTES = ROOT / "cassettes"
SUITE = ("--pyargs", "conformance.suite")
LLAMA = (
    f"--providers={PROVIDERS}",
    "--provider=llamacpp",
    f"--cassette-dir={CASSETTES}",
)


@pytest.fixture(autouse=True)
def _user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The user's directory, with its own (empty) pytest configuration: the rootdir search
    stops there and never reaches this checkout's pyproject.toml. The suite runs in this
    process by pytest.main (pytester's runs forget the modules a run imported, and the
    analysis is not made to be imported twice); the suite's own test modules are forgotten
    after each test."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith(("conformance.suite.", "test_mine")):
            del sys.modules[name]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running_server() as url:
        yield url


class Door:
    def __init__(self, code: Any, out: str, err: str) -> None:
        self.code = int(code)
        self.lines = [ln.rstrip() for ln in out.splitlines()]
        self.err = err

    @property
    def out(self) -> str:
        return "\n".join(self.lines)

    def count_line(self) -> str:
        return next(ln for ln in self.lines if ln.startswith("ran "))

    def block(self) -> list[str]:
        """The suite's summary block (from its section line to pytest's last line)."""
        start = next(i for i, ln in enumerate(self.lines) if " conformance " in ln)
        end = next(
            (i for i, ln in enumerate(self.lines) if " short test summary info " in ln),
            len(self.lines) - 1,
        )
        return self.lines[start + 1 : end]


def pytest_run(capsys: pytest.CaptureFixture[str], *args: str) -> Door:
    code = pytest.main(["-p", "no:cacheprovider", *args])
    out, err = capsys.readouterr()
    return Door(code, out, err)


def door(capsys: pytest.CaptureFixture[str], *args: str) -> Door:
    return pytest_run(capsys, *SUITE, *args)


def usage(d: Door) -> str:
    assert d.code == 4, d.out + d.err
    line = next(ln for ln in d.err.splitlines() if ln.startswith("ERROR: "))
    return line.removeprefix("ERROR: ")


def request_body(cassette: Path) -> dict[str, Any]:
    doc = yaml.safe_load(cassette.read_text())
    return dict(json.loads(doc["interactions"][0]["request"]["body"]))


# ------------------------------------------------------------------ an unrelated project


def test_an_unrelated_project_is_left_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "test_mine.py").write_text("def test_ok():\n    assert True\n")
    d = pytest_run(capsys, "test_mine.py")
    assert d.code == 0, d.out
    assert not any(" conformance " in ln or ln.startswith("ran ") for ln in d.lines)
    assert not (tmp_path / P.REPORT_DIR).exists()
    assert not any("junit" in ln for ln in d.lines)


# ------------------------------------------------------------------ refusals: 4, one line


def test_no_target_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert usage(door(capsys)) == (
        "nothing to test: pass --base-url URL --model NAME [--api-key-env VAR], or "
        "--providers FILE (no providers.yaml in this directory)"
    )


def test_a_providers_yaml_in_the_directory_is_the_default_target(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    (tmp_path / "providers.yaml").write_text(PROVIDERS.read_text())
    d = door(capsys, "--provider=llamacpp", f"--cassette-dir={CASSETTES}", "--scenario=single")
    assert d.code == 0, d.out + d.err
    assert d.count_line() == "ran 1 cell(s): 1 conforming, 0 deviating, 0 not tested"


def test_options_that_exclude_or_need_each_other_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert usage(
        door(capsys, "--base-url=http://127.0.0.1:9/v1", "--model=m", f"--providers={PROVIDERS}")
    ) == ("--base-url and --providers are exclusive: pass one of them")
    need = "--model and --api-key-env need --base-url URL"
    assert usage(door(capsys, *LLAMA, "--model=m")) == need
    assert usage(door(capsys, *LLAMA, "--api-key-env=K")) == need
    assert usage(door(capsys, "--base-url=http://127.0.0.1:9/v1")).startswith(
        "--base-url needs --model NAME"
    )


def test_unknown_names_and_bad_values_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    line = usage(door(capsys, *LLAMA, "--scenario=singel"))
    assert line.startswith("unknown scenario 'singel'; valid: single, ")
    line = usage(door(capsys, *LLAMA[:1], "--provider=no-such"))
    assert "no-such" in line and "llamacpp" in line
    line = usage(door(capsys, *LLAMA, "--expect-quirk=Q-NOT-A-QUIRK=why"))
    assert line.startswith("--expect-quirk: unknown quirk id")
    assert "--extra-body" in usage(door(capsys, *LLAMA, "--extra-body={bad"))
    assert usage(door(capsys, *LLAMA, "--few-shot=none.json")).startswith(
        "--few-shot none.json: cannot be read"
    )
    (tmp_path / "taken").write_text("")
    assert usage(door(capsys, *LLAMA, "--report-dir=taken")) == (
        "--report-dir taken: is a file, not a directory; pass a directory"
    )


def test_a_missing_recording_extra_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda n, *a: None if n == "pytest_recording" else real(n, *a),
    )
    assert usage(door(capsys, *LLAMA)) == (
        "the conformance suite needs its extra: pip install 'toolcall-conformance[suite]'"
    )


# ------------------------------------------------------------------ replay: 0, 1, 5


def test_a_replayed_run_counts_its_cells_and_says_where_the_files_are(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    d = door(capsys, *LLAMA, "--scenario=single", "--scenario=named", "--cells")
    assert d.code == 0, d.out + d.err
    block = d.block()
    assert "– test_named[llamacpp]: unsupported (llamacpp declares no named tool choice)" in block
    assert "~ test_single[llamacpp]: quirk" in block
    assert "ran 2 cell(s): 1 conforming, 0 deviating, 1 not tested" in block
    assert (
        "  not tested (1): llamacpp declares no named tool choice  [test_named[llamacpp]]" in block
    )
    assert (
        "report: conformance-reports/quirks-matrix.html (and .md, .json; cell results in "
        "conformance-reports/results)" in block
    )
    assert block[-1] == "junit: conformance-reports/junit.xml"  # a replay names no cassettes
    reports = tmp_path / P.REPORT_DIR
    junit = (reports / "junit.xml").read_text()
    assert 'classname="conformance.suite.test_scenarios" name="test_single[llamacpp]"' in junit
    doc = json.loads((reports / "quirks-matrix.json").read_text())
    assert [c["id"] for c in doc["columns"]] == ["llamacpp"]
    assert [r["id"] for r in doc["rows"]] == ["single", "named"]  # the scenarios asked
    assert doc["mode"] == "replay" or doc.get("meta", {}).get("mode") == "replay"


def test_without_cells_there_is_no_line_per_cell_and_no_matrix_with_no_matrix(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    d = door(capsys, *LLAMA, "--scenario=single", "--no-matrix")
    assert d.code == 0
    assert d.block() == [
        "ran 1 cell(s): 1 conforming, 0 deviating, 0 not tested",
        "junit: conformance-reports/junit.xml",
    ]
    reports = tmp_path / P.REPORT_DIR
    assert (reports / "results" / "llamacpp__single.json").is_file()
    assert not (reports / "quirks-matrix.json").exists()
    # the other scenarios' cells are deselected, and pytest counts them so
    assert re.search(r" 14 deselected, 1 xfailed in ", d.lines[-1]), d.lines[-1]


def test_fail_on_info_fails_on_undeclared_info_quirks_and_names_them(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    d = door(capsys, *LLAMA, "--scenario=single", "--fail-on=info")
    assert d.code == 1, d.out
    assert "ran 1 cell(s): 0 conforming, 1 deviating, 0 not tested" in d.block()
    assert "  ✗ test_single[llamacpp]: Q-EXTRA-FIELDS (INFO); Q-ID-FORMAT (INFO)" in d.block()
    # the failure is reported under the suite's own node id, wherever the package lives
    assert any("conformance/suite/test_scenarios.py::test_single[llamacpp]" in ln for ln in d.lines)


def test_quirks_below_fail_on_pass_and_are_listed_with_their_level(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    entry = yaml.safe_load(PROVIDERS.read_text())["providers"]["llamacpp"]
    entry.pop("expected_quirks")
    f = tmp_path / "mine.yaml"
    f.write_text(yaml.safe_dump({"version": 1, "providers": {"llamacpp": entry}}))
    cells = [f"--scenario={s}" for s in ("single", "parallel", "interleaved", "required")]
    args = (f"--providers={f}", f"--cassette-dir={CASSETTES}", *cells)
    d = door(capsys, *args)
    assert d.code == 1, d.out
    block = d.block()
    assert "ran 4 cell(s): 0 conforming, 4 deviating, 0 not tested" in block
    assert "  ✗ test_single[llamacpp]: Q-ARGS-ON-OPENING-DELTA (SHOULD)" in block
    d = door(capsys, *args, "--fail-on=must")
    assert d.code == 0, d.out
    block = d.block()
    assert (
        "ran 4 cell(s): 4 conforming (4 with quirks below --fail-on must), 0 deviating, "
        "0 not tested" in block
    )
    assert (
        "  below --fail-on must: Q-ARGS-ON-OPENING-DELTA (SHOULD)  [test_interleaved[llamacpp], "
        "test_parallel[llamacpp], test_required[llamacpp], … (+1)]" in block
    )
    # three cells are all named
    d = door(capsys, *args[:-1], "--fail-on=must")
    assert (
        "  below --fail-on must: Q-ARGS-ON-OPENING-DELTA (SHOULD)  [test_interleaved[llamacpp], "
        "test_parallel[llamacpp], test_single[llamacpp]]" in d.block()
    )


def test_nothing_recorded_is_nothing_tested_exit_5(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cells = [f"--scenario={s}" for s in ("single", "parallel", "usage", "strict", "named")]
    d = door(capsys, *LLAMA[:2], f"--cassette-dir={tmp_path}", *cells)
    assert d.code == 5, d.out
    block = d.block()
    assert "ran 5 cell(s): 0 conforming, 0 deviating, 5 not tested" in block
    # the reasons, the most frequent first, at most three cells named
    nr = next(i for i, ln in enumerate(block) if ln.startswith("  not tested (4): not recorded"))
    assert block[nr].endswith(
        "[test_parallel[llamacpp], test_single[llamacpp], test_strict[llamacpp], … (+1)]"
    )
    assert block[nr + 1].startswith("  not tested (1): llamacpp declares no named tool choice")
    assert "conformance: nothing was tested: exit status 5, not 0 (see the reasons above)" in block
    d = door(capsys, *LLAMA[:2], f"--cassette-dir={tmp_path}", *cells[:3])
    assert "  not tested (3): not recorded" in d.out
    line = next(ln for ln in d.block() if ln.startswith("  not tested (3)"))
    assert line.endswith("  [test_parallel[llamacpp], test_single[llamacpp], test_usage[llamacpp]]")


def test_this_runs_results_replace_its_own_and_keep_other_columns(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    results = tmp_path / P.REPORT_DIR / "results"
    results.mkdir(parents=True)
    (results / "llamacpp__usage.json").write_text("{}")  # this column's: replaced
    (results / "othermodel__single.json").write_text("not json")  # another's: kept, unread
    d = door(capsys, *LLAMA, "--scenario=single")
    assert d.code == 0, d.out
    assert sorted(p.name for p in results.iterdir()) == [
        "llamacpp__single.json",
        "othermodel__single.json",
    ]


def test_a_matrix_that_cannot_be_written_is_one_line_and_exit_3(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    (tmp_path / P.REPORT_DIR / "quirks-matrix.json").mkdir(parents=True)
    d = door(capsys, *LLAMA, "--scenario=single")
    assert d.code == 3, d.out
    # (pytest's writer puts it right after the progress line)
    assert "conformance: matrix not written: [Errno 21] Is a directory" in d.out
    assert "Traceback" not in d.out


# ------------------------------------------------------------------ live: 0, 1, 6


def test_a_closed_port_is_unreachable_exit_6(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, closed_port: int
) -> None:
    url = f"http://127.0.0.1:{closed_port}/v1"
    d = door(capsys, f"--base-url={url}", "--model=m", "--scenario=single", "--scenario=usage")
    assert d.code == 6, d.out
    block = d.block()
    assert "ran 2 cell(s): 0 conforming, 2 unreachable, 0 not tested" in block
    assert not any(ln.startswith("  ✗") for ln in block)  # not listed as deviating
    assert "cassettes: conformance-cassettes" in block
    assert block[-1] == (
        "toolcall-conformance: m: the endpoint could not be reached or does not serve chat "
        "completions (connection refused): exit status 6"
    )


def test_a_base_url_without_v1_gets_the_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, server: str
) -> None:
    root = server.removesuffix("/v1")
    d = door(capsys, f"--base-url={root}", "--model=reference", "--scenario=single")
    assert d.code == 6, d.out
    assert d.block()[-1] == (
        f"toolcall-conformance: did you mean --base-url {root}/v1? {root}/v1/chat/completions "
        "answers (HTTP 200)"
    )
    # replayed, the same cells are unreachable but nothing is probed
    d = door(
        capsys, f"--base-url={root}", "--model=reference", "--scenario=single",
        "--record-mode=none",
    )  # fmt: skip
    assert d.code == 6, d.out
    assert not any("did you mean" in ln for ln in d.lines)


def test_the_reference_model_conforms_live_with_the_options_sent(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, server: str
) -> None:
    shot = [{"role": "user", "content": "an example"}, {"role": "assistant", "content": "ok"}]
    (tmp_path / "few.json").write_text(json.dumps(shot))
    d = door(
        capsys, f"--base-url={server}", "--model=reference", "--scenario=single",
        "--max-tokens=55", "--system-prompt=be brief", '--extra-body={"seed": 3}',
        "--named-tool-choice", "--prefill=<tool_call>", "--repeat=2", "--few-shot=few.json",
    )  # fmt: skip
    assert d.code == 0, d.out + d.err
    assert d.block()[0] == "ran 1 cell(s): 1 conforming, 0 deviating, 0 not tested"
    assert d.block()[-1] == "cassettes: conformance-cassettes"
    body = request_body(tmp_path / P.CASSETTE_DIR / "reference" / "single.yaml")
    assert body["max_tokens"] == 55 and body["seed"] == 3
    assert body["messages"][1:3] == shot
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert body["messages"][-1] == {"role": "assistant", "content": "<tool_call>"}
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    cell = json.loads((tmp_path / P.REPORT_DIR / "results" / "reference__single.json").read_text())
    assert cell["trials"]["n"] == 2
    doc = json.loads((tmp_path / P.REPORT_DIR / "quirks-matrix.json").read_text())
    assert "live" in json.dumps(doc.get("mode", doc.get("meta")))


def test_a_deviating_model_names_its_quirk_and_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, server: str
) -> None:
    d = door(capsys, f"--base-url={server}", "--model=dashscope-compatible", "--scenario=single")
    assert d.code == 1, d.out
    assert "ran 1 cell(s): 0 conforming, 1 deviating, 0 not tested" in d.block()
    assert any(ln.startswith("  ✗ test_single[dashscope-compatible]: Q-") for ln in d.block()), (
        d.block()
    )
    results = tmp_path / P.REPORT_DIR / "results"
    cell = json.loads((results / "dashscope-compatible__single.json").read_text())
    assert cell["trials"]["n"] == 1  # one live trial unless --repeat asks for more


# ------------------------------------------------------------------ decisions on their own


def cell(**kw: Any) -> dict[str, Any]:
    return {"column": "c", "row": "single", "verdict": "error", **kw}


@pytest.mark.parametrize(
    "reason",
    [
        "connection refused",
        "the host name does not resolve (x)",
        "TLS handshake failed: bad cert",
        "cannot connect to h",
        "connection not established",
        "no response headers within 10s",
        "the server closed the connection before a complete response head",
        "the server closed a new connection before a complete response head",
        "the connection failed while sending the request",
    ],
)
def test_a_cell_that_never_reached_a_stream_is_unreachable(reason: str) -> None:
    assert P.unreachable_reason(cell(reason=reason + " (not sent: 3 more)")) == reason
    # cut at the first note: what follows it is not the transport's reason
    twice = reason + " (not sent: the same (not sent: again))"
    assert P.unreachable_reason(cell(reason=twice)) == reason


def test_what_is_not_unreachable() -> None:
    assert P.unreachable_reason(cell(verdict="fails", reason="connection refused")) is None
    assert P.unreachable_reason(cell(reason="stream ended: connection refused")) is None
    assert P.unreachable_reason(cell(reason=None)) is None
    http = {"rule": "R-HTTP-OK", "exchange": 0}
    for status in ("401", "403", "404", "405", "500", "503"):
        f = {**http, "message": f"HTTP {status} Whatever: body"}
        assert P.unreachable_reason(cell(findings=[f])) == f"HTTP {status} Whatever: body"
    for status in ("400", "429", "4040"):
        f = {**http, "message": f"HTTP {status} x"}
        assert P.unreachable_reason(cell(findings=[f])) is None
    # a later exchange (the round trip's second request) reached the server before
    f = {**http, "exchange": 1, "message": "HTTP 500 x"}
    assert P.unreachable_reason(cell(findings=[f])) is None
    f = {"rule": "R-OTHER", "exchange": 0, "message": "HTTP 500 x"}
    assert P.unreachable_reason(cell(findings=[f])) is None
    f = {"rule": "R-HTTP-OK", "message": "HTTP 404 " + "x" * 300}  # no exchange: the first
    assert P.unreachable_reason(cell(findings=[f])) == ("HTTP 404 " + "x" * 300)[:119] + "…"


def outcomes(**nodes: str) -> P.CellOutcomes:
    seen = P.CellOutcomes()
    seen.outcome.update(nodes)
    return seen


def test_unreachable_needs_every_cell_that_ran_to_have_failed_before_a_stream() -> None:
    down = cell(reason="connection refused")
    cells = [down, {**down, "row": "usage"}]
    s = P.RunSummary(outcomes(**{"test_single[c]": "failed", "test_usage[c]": "failed"}), cells)
    assert s.unreachable == {"c": "connection refused"}
    # one cell that conformed: the endpoint is there
    ok = {"column": "c", "row": "usage", "verdict": "conforms"}
    s = P.RunSummary(
        outcomes(**{"test_single[c]": "failed", "test_usage[c]": "passed"}), [down, ok]
    )
    assert s.unreachable == {} and s.conforming == 1
    # one failure of another kind
    other = {"column": "c", "row": "usage", "verdict": "fails"}
    s = P.RunSummary(
        outcomes(**{"test_single[c]": "failed", "test_usage[c]": "failed"}), [down, other]
    )
    assert s.unreachable == {}
    # skipped cells do not make it reachable
    seen = outcomes(**{"test_single[c]": "failed", "test_usage[c]": "skipped"})
    seen.why["test_usage[c]"] = "not recorded"
    s = P.RunSummary(seen, [down])
    assert s.unreachable == {"c": "connection refused"}
    assert s.not_tested == {"not recorded": ["test_usage[c]"]}
    # nothing failed: nothing unreachable
    assert P.RunSummary(outcomes(), []).unreachable == {}


def test_the_summary_groups_every_cell_once() -> None:
    inconclusive = {"column": "c", "row": "strict", "verdict": "inconclusive", "reason": None}
    not_elicited = {"column": "c", "row": "usage", "verdict": "quirk", "elicited": False}
    tested = {"column": "c", "row": "single", "verdict": "quirk"}
    failed = {"column": "c", "row": "parallel", "verdict": "inconclusive"}
    seen = outcomes(
        **{
            "test_strict[c]": "passed",
            "test_usage[c]": "xfailed",
            "test_single[c]": "xfailed",
            "test_parallel[c]": "failed",
            "test_named[c]": "skipped",
        }
    )
    s = P.RunSummary(seen, [inconclusive, not_elicited, tested, failed])
    assert s.not_tested == {
        "inconclusive: no reason given": ["test_strict[c]"],
        "quirk: no reason given": ["test_usage[c]"],
        "skipped": ["test_named[c]"],
    }
    assert s.failed == ["test_parallel[c]"]
    assert s.conforming == 1 and s.tested_ok()
    assert [c["row"] for c in s.tested] == ["single"]
    assert not s.nothing_tested()
    assert P.RunSummary(outcomes(**{"test_strict[c]": "passed"}), [inconclusive]).nothing_tested()
    assert not P.RunSummary(outcomes(**{"test_x[c]": "failed"}), []).nothing_tested()


def test_a_failure_line_says_what_failed_the_cell() -> None:
    c = {
        "column": "c",
        "row": "single",
        "verdict": "error",
        "reason": "stream ended\nearly",
        "unexpected": ["Q-ID-FORMAT", "Q-ARGS-ON-OPENING-DELTA"],
        "findings": [
            {"rule": "R-A", "level": "MUST"},
            {"rule": "R-A", "level": "MUST"},  # once
            {"rule": "R-B", "level": "SHOULD"},
            {"rule": "R-C", "level": "MUST", "quirk": "Q-X"},
            {"rule": "R-HTTP-OK", "level": "MUST"},  # the error says it
            {"rule": "R-COMPLETE", "level": "MUST"},
        ],
        "missing_expected": ["Q-USAGE-PLACEMENT"],
    }
    s = P.RunSummary(outcomes(**{"test_single[c]": "failed", "test_usage[c]": "failed"}), [c])
    assert s.failure_lines() == [
        "  ✗ test_single[c]: error: stream ended early; Q-ID-FORMAT (INFO); "
        "Q-ARGS-ON-OPENING-DELTA (SHOULD); R-A (MUST); Q-USAGE-PLACEMENT no longer seen "
        "(declared expected)",
        "  ✗ test_usage[c]: failed",
    ]
    fails = {**c, "verdict": "fails", "unexpected": [], "missing_expected": []}
    s = P.RunSummary(outcomes(**{"test_single[c]": "failed"}), [fails])
    assert s.failure_lines() == [
        "  ✗ test_single[c]: R-A (MUST); R-HTTP-OK (MUST); R-COMPLETE (MUST)"
    ]
    # an error's reason is one line of at most 120 characters
    long = {**c, "reason": "r" * 121, "unexpected": [], "findings": [], "missing_expected": []}
    s = P.RunSummary(outcomes(**{"test_single[c]": "failed"}), [long])
    assert s.failure_lines() == ["  ✗ test_single[c]: error: " + "r" * 119 + "…"]
    s = P.RunSummary(outcomes(**{"test_single[c]": "failed"}), [{**long, "reason": "r" * 120}])
    assert s.failure_lines() == ["  ✗ test_single[c]: error: " + "r" * 120]
    # what the judge decided wins over the cell file's list
    seen = outcomes(**{"test_single[c]": "failed"})
    seen.unexpected["test_single[c]"] = ["Q-EXTRA-FIELDS (INFO)"]
    s = P.RunSummary(seen, [{**fails, "findings": []}])
    assert s.failure_lines() == ["  ✗ test_single[c]: Q-EXTRA-FIELDS (INFO)"]


def test_conclusive_cells() -> None:
    for v in ("conforms", "quirk", "fails", "error"):
        assert P.conclusive({"verdict": v})
        assert not P.conclusive({"verdict": v, "elicited": False})
        assert P.conclusive({"verdict": v, "elicited": None})
    for v in ("inconclusive", "unsupported", "not recorded", None):
        assert not P.conclusive({"verdict": v})


def test_a_cells_requests_are_bounded_by_max_tokens_unless_none() -> None:
    p = Provider("p", "http://h/v1", "m", elicitation={"default_max_tokens": 9, "prefill": "x"})
    q = P.with_max_tokens(p, 40)
    assert q.elicitation == {"default_max_tokens": 40, "prefill": "x"}
    assert P.with_max_tokens(p, None).elicitation == {"prefill": "x"}
    assert p.elicitation == {"default_max_tokens": 9, "prefill": "x"}  # the provider is kept


def test_lock_directories_are_per_report_directory(tmp_path: Path) -> None:
    a, b = P.lock_dir(tmp_path / "a"), P.lock_dir(tmp_path / "b")
    assert a != b and a == P.lock_dir(tmp_path / "a")
    assert a.parent == Path(__import__("tempfile").gettempdir())
    assert a.name.startswith(f"toolcall-conformance-locks-{__import__('os').getuid()}-")


def test_a_providers_cells_run_at_most_concurrency_at_a_time(tmp_path: Path) -> None:
    one = Provider("p", "http://h/v1", "m", concurrency=1)
    two = Provider("q", "http://h/v1", "m", concurrency=2)
    entered: list[str] = []

    def take(p: Provider, tag: str) -> None:
        with P.provider_slot(tmp_path, p):
            entered.append(tag)

    with P.provider_slot(tmp_path, two):
        t = threading.Thread(target=take, args=(two, "second of two"))
        t.start()
        t.join(2)
        assert entered == ["second of two"]  # a second slot was free
    with P.provider_slot(tmp_path, one):
        t = threading.Thread(target=take, args=(one, "second of one"))
        t.start()
        time.sleep(0.2)
        assert entered == ["second of two"]  # waits for the only slot
    t.join(2)
    assert entered == ["second of two", "second of one"]
    # a slot is given back when its cell raises
    with pytest.raises(RuntimeError), P.provider_slot(tmp_path, one):
        raise RuntimeError
    take(one, "again")
    assert entered[-1] == "again"


# ------------------------------------------------------------------ which runs are suite runs


@pytest.mark.parametrize(
    "flag",
    [
        "--provider=x",
        "--scenario=single",
        "--model=m",
        "--api-key-env=K",
        "--expect-quirk=Q-ID-FORMAT=x",
        "--reference-profiles",
        "--fail-on=must",
        "--max-tokens=5",
        "--scripted-parsers",
        "--fail-on must",
    ],
)
def test_any_suite_option_makes_a_run_a_suite_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str
) -> None:
    (tmp_path / "test_mine.py").write_text("def test_ok():\n    assert True\n")
    d = pytest_run(capsys, "test_mine.py", *flag.split(" "))
    assert usage(d).startswith("nothing to test: pass --base-url URL --model NAME")


@pytest.mark.parametrize("where", ["suite", "package", "pyargs-package"])
def test_naming_the_suite_or_a_directory_above_it_makes_a_suite_run(
    capsys: pytest.CaptureFixture[str], where: str
) -> None:
    import conformance.suite

    suite_dir = Path(conformance.suite.__file__).parent
    args = {
        "suite": [str(suite_dir)],
        "package": [str(suite_dir.parent)],
        "pyargs-package": ["--pyargs", "conformance"],
    }[where]
    d = pytest_run(capsys, *args)
    assert usage(d).startswith("nothing to test: pass --base-url URL --model NAME")


def test_a_path_that_is_not_the_suite_is_not_a_suite_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "conformance.suite").mkdir()  # a directory of the user's, not the package
    (tmp_path / "conformance.suite" / "test_mine_too.py").write_text("def test_ok():\n    pass\n")
    d = pytest_run(capsys, "conformance.suite")
    assert d.code == 0, d.out + d.err
    assert not (tmp_path / P.REPORT_DIR).exists()


# ------------------------------------------------------------------ the suite's own columns


def test_a_reference_profile_runs_only_the_scenario_that_shows_its_quirk(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = (
        f"--providers={PROVIDERS}",
        "--provider=profile:id-absent",
        f"--cassette-dir={CASSETTES}",
        "--cells",
    )
    assert "profile:id-absent" in usage(door(capsys, *args))  # not a column without the flag
    d = door(capsys, *args, "--reference-profiles", "--profile-server=http://127.0.0.1:9/v1")
    assert d.code == 0, d.out
    assert d.block()[:2] == [
        "~ test_usage[profile:id-absent]: quirk",
        "ran 1 cell(s): 1 conforming, 0 deviating, 0 not tested",
    ]
    doc = json.loads((Path.cwd() / P.REPORT_DIR / "quirks-matrix.json").read_text())
    assert doc["sections"]["reference_profiles"] == ["profile:id-absent"]
    assert doc["sections"]["providers"] == []


def test_the_scripted_parsers_are_columns_with_their_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = (
        f"--providers={PROVIDERS}",
        "--provider=vllm[hermes]",
        f"--cassette-dir={CASSETTES}",
        "--scenario=single",
        "--cells",
    )
    assert "vllm[hermes]" in usage(door(capsys, *args))
    d = door(capsys, *args, "--scripted-parsers")
    assert d.code == 0, d.out
    assert d.block()[:2] == [
        "✓ test_single[vllm[hermes]]: conforms",
        "ran 1 cell(s): 1 conforming, 0 deviating, 0 not tested",
    ]
    doc = json.loads((Path.cwd() / P.REPORT_DIR / "quirks-matrix.json").read_text())
    (parser,) = doc["scripted_parsers"]["parsers"]
    assert parser["column"] == "vllm[hermes]"
    assert doc["sections"]["providers"] == [] and doc["sections"]["reference_profiles"] == []


def test_the_public_recordings_are_in_the_matrix_only_when_asked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    matrix = tmp_path / P.REPORT_DIR / "quirks-matrix.json"
    assert door(capsys, *LLAMA, "--scenario=single").code == 0
    assert json.loads(matrix.read_text())["field_providers"] == []
    assert door(capsys, *LLAMA, "--scenario=single", "--public-recordings").code == 0
    assert len(json.loads(matrix.read_text())["field_providers"]) > 3


def test_a_junit_file_asked_elsewhere_is_the_one_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    d = door(capsys, *LLAMA, "--scenario=single", "--junitxml=out/j.xml")
    assert d.code == 0
    assert d.block()[-1] == "junit: out/j.xml"
    assert (tmp_path / "out" / "j.xml").is_file()
    assert not (tmp_path / P.REPORT_DIR / "junit.xml").exists()


def test_without_pytest_junitxml_no_junit_file_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    d = door(capsys, *LLAMA, "--scenario=single", "-p", "no:junitxml")
    assert d.code == 0
    assert any(ln.startswith("report: ") for ln in d.block())
    assert not any(ln.startswith("junit:") for ln in d.lines)  # names no file never written
    assert not (tmp_path / P.REPORT_DIR / "junit.xml").exists()


def test_a_refused_cassette_fails_its_cell_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tapes = tmp_path / "tapes" / "llamacpp"
    tapes.mkdir(parents=True)
    (tapes / "single.yaml").write_text("interactions: !!python/object/apply:os.getpid []\n")
    d = door(
        capsys, *LLAMA[:2], f"--cassette-dir={tmp_path / 'tapes'}", "--scenario=single", "--cells"
    )
    assert d.code == 1, d.out
    # no cell file was written: the line and the count come from pytest's outcome
    assert d.block()[:3] == [
        "· test_single[llamacpp]: failed",
        "ran 1 cell(s): 0 conforming, 1 deviating, 0 not tested",
        "  ✗ test_single[llamacpp]: failed",
    ]
    head = next(i for i, ln in enumerate(d.lines) if ln.startswith("____") and "test_single" in ln)
    assert d.lines[head + 1].startswith(f"cassette {tapes / 'single.yaml'}")
    assert not d.lines[head + 2].strip() or d.lines[head + 2].startswith("-")  # nothing more
    assert "Traceback" not in d.out


def test_the_v1_hint_probes_only_a_base_url_without_v1_whose_chat_path_was_not_found(
    server: str, closed_port: int
) -> None:
    root = server.removesuffix("/v1")
    hint = f"did you mean --base-url {root}/v1? {root}/v1/chat/completions answers (HTTP 200)"
    p = Provider("p", root + "/", "reference")
    assert P.v1_hints([p], {"p": "HTTP 404 Not Found"}) == [hint]
    assert P.v1_hints([p], {"p": "HTTP 405 Method Not Allowed"}) == [hint]
    for why in ("HTTP 500 x", "HTTP 401 x", "connection refused", ""):
        assert P.v1_hints([p], {"p": why}) == []
    assert P.v1_hints([p], {"other": "HTTP 404 x"}) == []  # another column's reason
    # a base URL that has /v1 already, a /v1 path that is not found either, nothing there
    assert P.v1_hints([Provider("p", server, "reference")], {"p": "HTTP 404 x"}) == []
    assert P.v1_hints([Provider("p", root, "no-such-model")], {"p": "HTTP 404 x"}) == []
    gone = Provider("p", f"http://127.0.0.1:{closed_port}", "reference")
    assert P.v1_hints([gone], {"p": "HTTP 404 x"}) == []


# ------------------------------------------------------------------ pytest --help, markers


def test_pytest_help_describes_every_option_of_the_suite(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "2000")
    d = pytest_run(capsys, "--help")
    assert d.code == 0
    text = " ".join(d.out.split())
    start = text.index("streaming tool-call conformance:")
    group = text[start:]
    for entry in (
        "--providers=PROVIDERS providers file",
        "--provider=PROVIDER run only this provider",
        "--scenario=SCENARIO run only this scenario",
        "--report-dir=REPORT_DIR where results, the matrix and junit.xml go",
        "--cassette-dir=CASSETTE_DIR cassette root directory",
        "--fail-on={must,should,info} the lowest level of an unexpected quirk that fails a "
        "cell (default should: SHOULD quirks break real clients; must tolerates them)",
        "--public-recordings add the public recordings of other providers to the matrix (on "
        "with --reference-profiles: the repository's matrix)",
        "--cells one line per cell with its verdict",
        "--repeat=REPEAT live trials per cell",
        "--no-matrix do not render the matrix",
        "--reference-profiles also run every reference profile (end-to-end negative controls)",
        "--scripted-parsers also run vLLM's tool parsers driven by a scripted model (their "
        "own section; conformance.lanes.vllm_columns)",
        "--profile-server=PROFILE_SERVER base URL of `toolcall-conformance serve` for "
        "--reference-profiles",
        "--base-url=URL test this endpoint instead of a providers file (records live)",
        "--model=NAME the model, with --base-url",
        "--api-key-env=VAR environment variable holding the key, with --base-url",
        "--expect-quirk=Q-ID=REASON declare a quirk expected (the cell is then an expected "
        "failure)",
    ):
        assert entry in group, entry
    markers = pytest_run(capsys, "--markers").lines  # each marker on its own line, exactly
    assert "@pytest.mark.conformance_scenario(id): a provider × scenario cell" in markers
    assert (
        "@pytest.mark.xdist_group(name): cells that share a pytest-xdist worker (--dist loadgroup)"
        in markers
    )


def test_a_suite_run_lists_its_cell_outcomes_plugin_by_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``pytest --trace-config`` names the plugin that collects the cells' outcomes (and
    ``-p no:NAME`` can refer to it); an unrelated project's run has no such plugin."""
    d = door(capsys, *LLAMA, "--scenario=single", "--trace-config", "--no-matrix")
    assert d.code == 0, d.out
    assert any(re.match(r" +conformance-outcomes: <", ln) for ln in d.lines), d.out
    d = pytest_run(capsys, "--trace-config", "--co", "-q")
    assert not any("conformance-outcomes" in ln for ln in d.lines)


class _Groups:
    """Records each collected cell's xdist group (which worker group runs it)."""

    def __init__(self) -> None:
        self.groups: dict[str, str] = {}

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            m = item.get_closest_marker("xdist_group")
            self.groups[item.name] = m.args[0] if m else ""


def test_a_providers_cells_are_spread_over_its_concurrency_groups(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rec = _Groups()
    code = pytest.main(
        [
            "-p", "no:cacheprovider", *SUITE, f"--providers={PROVIDERS}",
            "--provider=openai", "--provider=llamacpp", "--scenario=single",
            "--scenario=parallel", "--scenario=usage", "--scenario=strict", "--scenario=named",
            "--collect-only", "--no-matrix",
        ],
        plugins=[rec],
    )  # fmt: skip
    capsys.readouterr()
    assert code == 5  # collected, nothing tested
    # openai's concurrency is 4: one cell in each of 4 groups, then round again
    assert sorted(g for g in rec.groups.values() if g.startswith("openai")) == [
        "openai#0",
        "openai#0",
        "openai#1",
        "openai#2",
        "openai#3",
    ]
    assert {g for n, g in rec.groups.items() if n.endswith("[llamacpp]")} == {"llamacpp#0"}


def test_result_files_are_read_per_column_and_a_broken_one_is_passed_over(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "a__single.json").write_text('{"column": "a", "row": "single"}')
    (results / "a__usage.json").write_text("{broken")
    (results / "b__single.json").write_text('{"column": "b", "row": "single"}')
    (results / "a__notes.txt").write_text("{}")
    assert P.read_cells(tmp_path, {"a"}) == [{"column": "a", "row": "single"}]
    assert [c["column"] for c in P.read_cells(tmp_path)] == ["a", "b"]
    assert P.read_cells(tmp_path, set()) == []
    assert P.read_cells(tmp_path / "none") == []


def test_without_the_renderer_the_matrix_is_its_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import conformance.report

    monkeypatch.delattr(conformance.report, "write_reports")
    out = tmp_path / "out"
    P.write_reports({"title": "é", "cells": []}, out)
    assert sorted(p.name for p in out.iterdir()) == ["quirks-matrix.json"]
    text = (out / "quirks-matrix.json").read_text("utf-8")
    assert text == '{\n "title": "é",\n "cells": []\n}\n'


def test_a_timestamp_is_utc_to_the_second(monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    from datetime import UTC, datetime

    for zone in ("UTC", "Asia/Kolkata", "America/St_Johns"):  # never the local time
        monkeypatch.setenv("TZ", zone)
        time.tzset()
        stamp = P.now_iso()
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp)
        then = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert abs((datetime.now(UTC) - then).total_seconds()) < 5, zone
    monkeypatch.undo()
    time.tzset()


def test_files_outside_the_current_directory_are_named_in_full(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    elsewhere = tmp_path.parent / (tmp_path.name + "-reports")
    d = door(capsys, *LLAMA, "--scenario=single", f"--report-dir={elsewhere}")
    assert d.code == 0
    assert d.block()[-2:] == [
        f"report: {elsewhere / 'quirks-matrix.html'} (and .md, .json; cell results in "
        f"{elsewhere / 'results'})",
        f"junit: {elsewhere / 'junit.xml'}",
    ]


# ------------------------------------------------------------------ the /v1 probe on the wire


class _Anything(http.server.BaseHTTPRequestHandler):
    """Answers every POST: with the status a leading ``/sNNN`` segment names (200 without
    one); ``/auth`` paths answer 401 unless the key is sent. Each request is kept."""

    seen: list[tuple[str, dict[str, str], bytes]] = []

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        _Anything.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        m = re.match(r"/s(\d{3})/", self.path)
        status = int(m.group(1)) if m else 200
        if self.path.startswith("/auth/") and self.headers.get("authorization") != "Bearer k-1":
            status = 401
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def anything() -> Iterator[str]:
    with serving(_Anything) as url:
        yield url


def _hint(base: str, status: int = 200) -> str:
    return f"did you mean --base-url {base}/v1? {base}/v1/chat/completions answers (HTTP {status})"


def test_the_v1_probe_is_one_smallest_request_with_the_providers_credentials(
    anything: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROBE_KEY", "k-1")
    base = f"{anything}/auth"
    p = Provider("p", base, "m-1", api_key_env="PROBE_KEY", headers={"X-Org": "o"})
    _Anything.seen.clear()
    assert P.v1_hints([p], {"p": "HTTP 404 Not Found"}) == [_hint(base)]
    ((path, headers, body),) = _Anything.seen
    assert path == "/auth/v1/chat/completions"
    assert json.loads(body) == {
        "model": "m-1",
        "max_tokens": 1,
        "messages": [{"role": "user", "content": "ping"}],
    }
    assert headers["authorization"] == "Bearer k-1" and headers["x-org"] == "o"


def test_the_v1_probe_goes_only_where_v1_is_missing_and_names_what_answers(
    anything: str, closed_port: int
) -> None:
    gone = f"http://127.0.0.1:{closed_port}"
    _Anything.seen.clear()
    # the base URL ends with /v1 already: never probed, whatever its chat path says
    assert P.v1_hints([Provider("p", f"{anything}/v1", "m")], {"p": "HTTP 404 x"}) == []
    assert _Anything.seen == []
    # a last segment that only starts like v1 is no /v1
    assert P.v1_hints([Provider("p", f"{anything}/v1X", "m")], {"p": "HTTP 404 x"}) == [
        _hint(f"{anything}/v1X")
    ]
    # the /v1 path is not a chat path either (405): no hint; any other answer is one
    assert P.v1_hints([Provider("p", f"{anything}/s405", "m")], {"p": "HTTP 404 x"}) == []
    assert P.v1_hints([Provider("p", f"{anything}/s406", "m")], {"p": "HTTP 405 x"}) == [
        _hint(f"{anything}/s406", 406)
    ]
    # each column on its own: one not found, one refused, one unreachable, then a hint
    cols = [
        Provider("a", f"{anything}/a", "m"),
        Provider("b", gone, "m"),
        Provider("c", f"{anything}/c", "m"),
    ]
    why = {"a": "connection refused", "b": "HTTP 404 x", "c": "HTTP 404 x"}
    assert P.v1_hints(cols, why) == [_hint(f"{anything}/c")]


def test_the_v1_hint_keeps_an_api_version_query_at_the_end(anything: str) -> None:
    q = "?api-version=2024-10-21"
    _Anything.seen.clear()
    # the path ends with /v1 already: not probed
    assert P.v1_hints([Provider("p", f"{anything}/v1{q}", "m")], {"p": "HTTP 404 x"}) == []
    assert _Anything.seen == []
    assert P.v1_hints([Provider("p", f"{anything}/x{q}", "m")], {"p": "HTTP 404 x"}) == [
        f"did you mean --base-url {anything}/x/v1{q}? {anything}/x/v1/chat/completions{q} "
        "answers (HTTP 200)"
    ]
    assert [path for path, _, _ in _Anything.seen] == [f"/x/v1/chat/completions{q}"]


def test_the_v1_probe_gives_up_after_ten_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """An endpoint that never answers the probe delays the run's end by 10 s at most."""
    import httpx

    sent: list[dict[str, Any]] = []

    def post(url: str, **kw: Any) -> httpx.Response:
        sent.append(kw)
        raise httpx.ReadTimeout("timed out")

    monkeypatch.setattr(httpx, "post", post)
    assert P.v1_hints([Provider("p", "http://127.0.0.1:9/x", "m")], {"p": "HTTP 404 x"}) == []
    assert [kw["timeout"] for kw in sent] == [10]


def test_the_key_named_by_api_key_env_is_sent_to_a_base_url(
    capsys: pytest.CaptureFixture[str], anything: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROBE_KEY", "k-1")
    _Anything.seen.clear()
    url = f"{anything}/auth/v1"
    d = door(
        capsys, f"--base-url={url}", "--model=m", "--api-key-env=PROBE_KEY", "--scenario=single"
    )
    # the key opened the door (an empty 200, not a 401): the endpoint was reached
    assert d.code == 1, d.out
    assert _Anything.seen and all(h["authorization"] == "Bearer k-1" for _, h, _ in _Anything.seen)


# ------------------------------------------------------------------ on a colour terminal

RED_BOLD, RED = "\x1b[31m\x1b[1m", "\x1b[31m"


def _coloured(d: Door, text: str) -> str:
    """The escapes just before ``text`` on its line."""
    line = next(ln for ln in d.lines if text in ln)
    return line[: line.index(text)]


def test_why_a_run_did_not_pass_is_red_and_bold_on_a_colour_terminal(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, closed_port: int, server: str
) -> None:
    d = door(capsys, *LLAMA[:2], f"--cassette-dir={tmp_path}", "--scenario=single", "--color=yes")
    assert d.code == 5
    assert _coloured(d, "conformance: nothing was tested") == RED_BOLD
    url = f"http://127.0.0.1:{closed_port}/v1"
    d = door(capsys, f"--base-url={url}", "--model=m", "--scenario=single", "--color=yes")
    assert d.code == 6
    assert _coloured(d, "toolcall-conformance: m: the endpoint could not be reached") == RED_BOLD
    root = server.removesuffix("/v1")
    d = door(capsys, f"--base-url={root}", "--model=reference", "--scenario=single", "--color=yes")
    assert d.code == 6
    assert _coloured(d, "toolcall-conformance: did you mean") == RED_BOLD
    (tmp_path / "r" / "quirks-matrix.json").mkdir(parents=True)
    d = door(capsys, *LLAMA, "--scenario=single", "--report-dir=r", "--color=yes")
    assert d.code == 3
    assert _coloured(d, "conformance: matrix not written").endswith(RED)


def test_a_long_reason_is_cut_to_one_line_per_cell_and_per_group(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    entry = yaml.safe_load(PROVIDERS.read_text())["providers"]["llamacpp"]
    message = " ".join(f"w{i:03d}" for i in range(80))  # the server's own words, 399 characters
    entry["capabilities"] = {"named_tool_choice": message}
    f = tmp_path / "mine.yaml"
    f.write_text(yaml.safe_dump({"version": 1, "providers": {"llamacpp": entry}}))
    d = door(
        capsys, f"--providers={f}", f"--cassette-dir={CASSETTES}", "--scenario=named", "--cells"
    )
    assert d.code == 5, d.out
    why = f"llamacpp declares no named tool choice: {message}"
    assert d.block()[0] == f"– test_named[llamacpp]: unsupported ({why[:139]}…)"
    assert f"  not tested (1): {why[:299]}…  [test_named[llamacpp]]" in d.block()


def test_a_result_file_is_its_cell_as_sorted_indented_json() -> None:
    P.write_cell(Path("out"), {"row": "single", "column": "c", "reason": "é"})
    assert (Path("out") / "results" / "c__single.json").read_text("utf-8") == (
        '{\n "column": "c",\n "reason": "é",\n "row": "single"\n}\n'
    )


class _Worker:
    """Makes the run a pytest-xdist worker's (the controller owns the results)."""

    def pytest_configure(self, config: pytest.Config) -> None:
        config.workerinput = {"workerid": "gw0"}  # type: ignore[attr-defined]


def test_a_worker_writes_its_cells_and_leaves_the_rest_to_the_controller(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / P.REPORT_DIR / "results"
    results.mkdir(parents=True)
    (results / "llamacpp__usage.json").write_text("{}")  # the controller's to replace, not ours
    code = pytest.main(
        ["-p", "no:cacheprovider", *SUITE, *LLAMA, "--scenario=single"], plugins=[_Worker()]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert sorted(p.name for p in results.iterdir()) == [
        "llamacpp__single.json",
        "llamacpp__usage.json",
    ]
    assert not any(ln.startswith("ran ") for ln in out.splitlines())  # no summary
    assert not (tmp_path / P.REPORT_DIR / "quirks-matrix.json").exists()  # no matrix


class _WorkerFromTheStart:
    """A worker as pytest-xdist makes one: ``workerinput`` is set before any configure hook."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_cmdline_main(self, config: pytest.Config) -> None:
        config.workerinput = {"workerid": "gw0"}  # type: ignore[attr-defined]


def test_a_worker_leaves_the_refusal_of_a_report_dir_to_the_controller(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The controller refuses an unwritable --report-dir before any worker starts; a
    worker's own usage error would only crash it."""
    (tmp_path / "taken").write_text("")
    code = pytest.main(
        ["-p", "no:cacheprovider", *SUITE, *LLAMA, "--scenario=single", "--report-dir=taken"],
        plugins=[_WorkerFromTheStart()],
    )
    out, err = capsys.readouterr()
    assert code == 1, out + err  # its cell, not its start, failed
    assert "--report-dir taken" not in err
    assert usage(door(capsys, *LLAMA, "--report-dir=taken")) == (
        "--report-dir taken: is a file, not a directory; pass a directory"
    )


def test_a_scenario_with_a_hyphen_is_shown_with_its_cells_verdict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    d = door(capsys, *LLAMA, "--scenario=tool-choice-none", "--scenario=id-omission", "--cells")
    assert d.code == 0, d.out
    assert d.block()[:3] == [
        "~ test_id_omission[llamacpp]: quirk",
        "✓ test_tool_choice_none[llamacpp]: conforms",
        "ran 2 cell(s): 2 conforming, 0 deviating, 0 not tested",
    ]


def test_the_reference_profiles_server_is_the_environments_or_the_default(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = (
        f"--providers={PROVIDERS}",
        "--provider=profile:id-absent",
        f"--cassette-dir={CASSETTES}",
        "--reference-profiles",
    )
    matrix = Path.cwd() / P.REPORT_DIR / "quirks-matrix.json"
    monkeypatch.delenv("CONFORMANCE_SERVER_URL", raising=False)
    d = door(capsys, *args)
    assert d.code == 0, d.out  # replayed: the recorded path is the default's /v1
    assert '"http://127.0.0.1:8765/v1"' in matrix.read_text()
    monkeypatch.setenv("CONFORMANCE_SERVER_URL", "http://127.0.0.1:9/elsewhere/v1")
    d = door(capsys, *args)
    assert d.code == 1, d.out  # another path: nothing recorded for it
    assert '"http://127.0.0.1:9/elsewhere/v1"' in matrix.read_text()


def test_a_directory_above_an_installed_suite_is_not_a_suite_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    venv = tmp_path / "venv"
    suite_dir = venv / "lib" / "site-packages" / "conformance" / "suite"
    suite_dir.mkdir(parents=True)
    (venv / "test_mine_venv.py").write_text("def test_ok():\n    assert True\n")
    monkeypatch.setattr(P, "_suite_dir", lambda: suite_dir)
    # the project's own tests beside a virtualenv: the suite installed below is not run
    d = pytest_run(capsys, "venv")
    assert d.code == 0, d.out + d.err
    assert not (tmp_path / P.REPORT_DIR).exists()
    # the installed suite itself, or a file of it, is
    assert usage(pytest_run(capsys, str(suite_dir))).startswith("nothing to test")
    (suite_dir / "test_x.py").write_text("")
    assert usage(pytest_run(capsys, f"{suite_dir / 'test_x.py'}::test_y")).startswith(
        "nothing to test"
    )
    # without the suite package, a path names no suite
    monkeypatch.setattr(P, "_suite_dir", lambda: None)
    d = pytest_run(capsys, "venv/test_mine_venv.py")
    assert d.code == 0, d.out + d.err
    assert not (tmp_path / P.REPORT_DIR).exists()


def test_a_node_id_names_the_suite_by_its_path_before_the_first_colons(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite_dir = tmp_path / "my checkout" / "conformance" / "suite"  # a space in the path
    suite_dir.mkdir(parents=True)
    (suite_dir / "test_x.py").write_text("")
    monkeypatch.setattr(P, "_suite_dir", lambda: suite_dir)
    for arg in (f"{suite_dir / 'test_x.py'}::test_y", f"{suite_dir}::TestA::test_y"):
        assert usage(pytest_run(capsys, arg)).startswith("nothing to test"), arg


def test_a_gateway_runs_each_reference_profile_through_it_in_its_own_section(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = (
        f"--providers={PROVIDERS}",
        "--provider=gateway:litellm:id-absent",
        f"--cassette-dir={CASSETTES}",
        "--cells",
    )
    assert "gateway:litellm:id-absent" in usage(door(capsys, *args))  # only with the flag
    d = door(capsys, *args, "--reference-profiles", "--profile-server=http://127.0.0.1:9/v1")
    assert d.code == 0, d.out
    assert d.block()[:2] == [
        "~ test_usage[gateway:litellm:id-absent]: quirk",
        "ran 1 cell(s): 1 conforming, 0 deviating, 0 not tested",
    ]
    doc = json.loads((Path.cwd() / P.REPORT_DIR / "quirks-matrix.json").read_text())
    (through,) = doc["gateways"]["litellm"]["profiles"]
    assert through["profile"] == "id-absent" and through["through"]["verdict"] == "quirk"
    where = doc["gateways"]["litellm"]["provenance"]["cassette_dir"]
    assert where == str(CASSETTES / "_gateway" / "litellm")  # read from --cassette-dir
    assert doc["sections"]["providers"] == [] and doc["sections"]["reference_profiles"] == []


def test_the_users_own_tests_beside_the_suite_still_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "test_mine_beside.py").write_text("def test_ok():\n    assert True\n")
    d = door(capsys, *LLAMA, "--scenario=single", "test_mine_beside.py")
    assert d.code == 0, d.out
    assert re.search(r" 1 passed, 14 deselected, 1 xfailed in ", d.lines[-1]), d.lines[-1]
    assert d.count_line() == "ran 1 cell(s): 1 conforming, 0 deviating, 0 not tested"


def test_a_cell_is_shown_under_the_suites_id_and_the_users_marked_test_under_its_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "test_mine_marked.py").write_text(
        "import pytest\n\n@pytest.mark.slow\ndef test_ok():\n    assert True\n"
    )
    d = door(capsys, *LLAMA, "--scenario=single", "-v", "test_mine_marked.py")
    assert d.code == 0, d.out
    shown = [ln.split(" ", 1)[0] for ln in d.lines if ln.endswith("%]")]
    assert shown == [
        "conformance/suite/test_scenarios.py::test_single[llamacpp]",
        "test_mine_marked.py::test_ok",
    ]


def test_a_column_whose_name_holds_a_double_underscore_owns_its_results(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Result files are named ``<column>__<scenario>.json``: a provider name may itself hold
    ``__`` (``--model my__model``), and a scenario id never does."""
    entry = yaml.safe_load(PROVIDERS.read_text())["providers"]["llamacpp"]
    f = tmp_path / "mine.yaml"
    f.write_text(yaml.safe_dump({"version": 1, "providers": {"my__model": entry, "my": entry}}))
    tapes = tmp_path / "tapes" / "my__model"
    tapes.mkdir(parents=True)
    (tapes / "single.yaml").write_bytes((CASSETTES / "llamacpp" / "single.yaml").read_bytes())
    results = tmp_path / P.REPORT_DIR / "results"
    results.mkdir(parents=True)
    (results / "my__model__usage.json").write_text("{}")  # this column's last run: replaced
    d = door(
        capsys, f"--providers={f}", "--provider=my__model", f"--cassette-dir={tapes.parent}",
        "--scenario=single", "--cells",
    )  # fmt: skip
    assert d.code == 0, d.out
    assert d.block()[:2] == [
        "~ test_single[my__model]: quirk",
        "ran 1 cell(s): 1 conforming, 0 deviating, 0 not tested",
    ]
    assert sorted(p.name for p in results.iterdir()) == ["my__model__single.json"]
    doc = json.loads((tmp_path / P.REPORT_DIR / "quirks-matrix.json").read_text())
    ((cell,),) = [[c for c in doc["cells"] if c["column"] == "my__model"]]
    assert cell["verdict"] == "quirk"
    # the column "my" is another one: a run of it leaves my__model's results alone
    d = door(
        capsys, f"--providers={f}", "--provider=my", f"--cassette-dir={tapes.parent}",
        "--scenario=single", "--no-matrix",
    )  # fmt: skip
    assert d.code == 5, d.out  # nothing recorded for "my"
    assert sorted(p.name for p in results.iterdir()) == ["my__model__single.json"]


def test_the_matrix_is_written_as_json_markdown_and_html_under_a_dashed_section(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    d = door(capsys, *LLAMA, "--scenario=single")
    assert d.code == 0, d.out
    # the summary is a section of pytest's own kind: "---- conformance ----"
    (head,) = [ln for ln in d.lines if " conformance " in ln]
    assert re.fullmatch(r"-{5,} conformance -{5,}", head), head
    # the three files the summary names, not the JSON alone
    reports = tmp_path / P.REPORT_DIR
    assert sorted(p.name for p in reports.glob("quirks-matrix.*")) == [
        "quirks-matrix.html",
        "quirks-matrix.json",
        "quirks-matrix.md",
    ]
    assert "llamacpp" in (reports / "quirks-matrix.md").read_text("utf-8")
    assert (
        (reports / "quirks-matrix.html")
        .read_text("utf-8")
        .lstrip()
        .lower()
        .startswith("<!doctype html")
    )


def test_another_columns_results_stay_out_of_this_runs_matrix(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A result directory keeps other runs' cells: a gateway column this run did not select
    lends the matrix none of its quirks."""
    results = tmp_path / P.REPORT_DIR / "results"
    results.mkdir(parents=True)
    other = {"column": "gateway:litellm:other", "row": "usage", "verdict": "quirk"}
    other["quirks"] = ["Q-NOT-IN-THIS-RUN"]
    (results / "gateway:litellm:other__usage.json").write_text(json.dumps(other))
    args = (
        f"--providers={PROVIDERS}",
        "--provider=gateway:litellm:id-absent",
        f"--cassette-dir={CASSETTES}",
        "--reference-profiles",
        "--profile-server=http://127.0.0.1:9/v1",
    )
    d = door(capsys, *args)
    assert d.code == 0, d.out
    doc = json.loads((tmp_path / P.REPORT_DIR / "quirks-matrix.json").read_text())
    assert doc["quirks"] and "Q-NOT-IN-THIS-RUN" not in doc["quirks"]
    assert (results / "gateway:litellm:other__usage.json").is_file()  # kept, not read


class _Controller:
    """Makes the run a pytest-xdist controller's as far as the suite sees: the cells' reports
    reach it, but it collected none of them itself."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config) -> None:
        config.stash[P.CELL_ITEMS] = []


def test_a_controller_sums_up_cells_that_wrote_no_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tapes = tmp_path / "tapes" / "llamacpp"
    tapes.mkdir(parents=True)
    (tapes / "single.yaml").write_text("interactions: !!python/object/apply:os.getpid []\n")
    code = pytest.main(
        ["-p", "no:cacheprovider", *SUITE, *LLAMA[:2], f"--cassette-dir={tapes.parent}",
         "--scenario=single"],
        plugins=[_Controller()],
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1, out
    assert "ran 1 cell(s): 0 conforming, 1 deviating, 0 not tested" in out.splitlines()


def test_an_unreachable_cell_shows_its_reason_with_cells(
    capsys: pytest.CaptureFixture[str], closed_port: int
) -> None:
    url = f"http://127.0.0.1:{closed_port}/v1"
    d = door(capsys, f"--base-url={url}", "--model=m", "--scenario=single", "--cells")
    assert d.code == 6, d.out
    # the cell's own reason (an error cell is not skipped: pytest has no reason for it)
    assert d.block()[0] == "! test_single[m]: error (connection refused)"


def test_a_columns_results_are_read_whatever_files_sort_before_them(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "a__single.json").write_text('{"column": "a", "row": "single"}')
    (results / "b__single.json").write_text('{"column": "b", "row": "single"}')
    (results / "b__usage.json").write_text('{"column": "b", "row": "usage"}')
    assert [c["row"] for c in P.read_cells(tmp_path, {"b"})] == ["single", "usage"]


def test_a_cell_is_read_back_as_utf_8_whatever_the_locale(
    tmp_path: Path, ascii_locale: None
) -> None:
    """On a CI image whose locale is plain C, a cell with a non-ASCII reason stays in the run."""
    cell = {"column": "c", "row": "single", "verdict": "error", "reason": "délai dépassé"}
    P.write_cell(tmp_path, cell)
    assert P.read_cells(tmp_path, {"c"}) == [cell]


def test_a_cell_that_ran_but_tested_nothing_is_grouped_under_its_own_reason() -> None:
    why = "the model answered in text, not with a tool call"
    cells = [
        {"column": "c", "row": "strict", "verdict": "inconclusive", "reason": why},
        {"column": "c", "row": "usage", "verdict": "inconclusive", "reason": why},
    ]
    s = P.RunSummary(outcomes(**{"test_strict[c]": "passed", "test_usage[c]": "passed"}), cells)
    assert s.not_tested == {f"inconclusive: {why}": ["test_strict[c]", "test_usage[c]"]}
    assert s.conforming == 0 and s.nothing_tested()


def test_a_users_own_cell_without_a_result_file_shows_what_pytest_made_of_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A test of the user's marked as a cell writes no result file: --cells shows its pytest
    outcome (passed, or xfailed for an expected failure), and the count includes it."""
    (tmp_path / "test_mine_cells.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.conformance_scenario('single')\n"
        "def test_mine_passes():\n    pass\n\n"
        "@pytest.mark.conformance_scenario('single')\n"
        "@pytest.mark.xfail(reason='known')\n"
        "def test_mine_xfails():\n    assert False\n"
    )
    d = door(capsys, *LLAMA, "--scenario=single", "--cells", "--no-matrix", "test_mine_cells.py")
    assert d.code == 0, d.out
    assert d.block()[:4] == [
        "· test_mine_passes: passed",
        "· test_mine_xfails: xfailed",
        "~ test_single[llamacpp]: quirk",
        "ran 3 cell(s): 3 conforming, 0 deviating, 0 not tested",
    ]


def test_a_cell_whose_id_holds_a_double_colon_is_named_in_full(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "test_mine_colons.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.conformance_scenario('usage')\n"
        "@pytest.mark.parametrize('x', [1], ids=['a::b'])\n"
        "def test_mine(x):\n    pass\n"
    )
    d = door(capsys, *LLAMA, "--scenario=usage", "--cells", "--no-matrix", "test_mine_colons.py")
    assert d.code == 0, d.out
    assert d.block()[:2] == ["· test_mine[a::b]: passed", "~ test_usage[llamacpp]: quirk"]


def test_a_fail_on_level_that_is_not_one_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    d = door(capsys, *LLAMA, "--fail-on=sometimes")
    assert d.code == 4, d.out + d.err
    assert (
        "error: argument --fail-on: invalid choice: 'sometimes' (choose from 'must', 'should', "
        "'info')" in d.err
    )


def test_another_columns_results_do_not_make_a_run_that_tested_nothing_pass(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / P.REPORT_DIR / "results"
    results.mkdir(parents=True)
    other = {"column": "othermodel", "row": "single", "verdict": "conforms"}
    (results / "othermodel__single.json").write_text(json.dumps(other))
    d = door(capsys, *LLAMA[:2], f"--cassette-dir={tmp_path / 'none'}", "--scenario=single")
    assert d.code == 5, d.out  # llamacpp: nothing recorded here
    assert "conformance: nothing was tested: exit status 5, not 0 (see the reasons above)" in (
        d.block()
    )


def test_a_result_file_without_a_verdict_is_shown_as_unknown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A cell's line shows "?" when its result file names no verdict (a user's own marked
    test wrote it)."""
    (tmp_path / "test_mine_file.py").write_text(
        "import json, pathlib, pytest\n\n"
        "@pytest.mark.conformance_scenario('single')\n"
        "@pytest.mark.parametrize('x', [1], ids=['llamacpp'])\n"
        "def test_mine(x):\n"
        "    out = pathlib.Path('conformance-reports/results/llamacpp__mine.json')\n"
        "    out.write_text(json.dumps({'column': 'llamacpp', 'row': 'mine'}))\n"
    )
    d = door(capsys, *LLAMA, "--scenario=single", "--cells", "--no-matrix", "test_mine_file.py")
    assert d.block()[0] == "· test_mine[llamacpp]: ?", d.block()


def test_a_skipped_cell_without_a_result_file_shows_why_with_cells(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    d = door(
        capsys, *LLAMA[:2], f"--cassette-dir={tmp_path / 'none'}", "--scenario=single", "--cells"
    )
    assert d.code == 5, d.out
    assert d.block()[0] == (
        "· test_single[llamacpp]: skipped (not recorded: record with `python3 noxw -s llamacpp`)"
    )


def test_a_second_run_in_one_process_forgets_the_first_runs_cells(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A run that collects no cell (a suite option, the user's own tests) says nothing of
    the suite, even after a suite run in the same process (pytest.main called twice)."""
    assert door(capsys, *LLAMA, "--scenario=single", "--no-matrix").code == 0
    (tmp_path / "test_mine_again.py").write_text("def test_ok():\n    assert True\n")
    d = pytest_run(capsys, "--provider=llamacpp", f"--providers={PROVIDERS}", "test_mine_again.py")
    assert d.code == 0, d.out
    assert not any(ln.startswith("ran ") or " conformance " in ln for ln in d.lines), d.out


def test_a_providers_cells_go_round_its_groups_in_collection_order(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Cell k of a provider joins group k mod concurrency; a user's own test, even one that
    takes the provider and carries a mark, joins none."""
    (tmp_path / "test_mine_grouped.py").write_text(
        "import pytest\n\n@pytest.mark.slow\ndef test_mine(conformance_provider):\n    pass\n"
    )
    rec = _Groups()
    code = pytest.main(
        [
            "-p", "no:cacheprovider", *SUITE, f"--providers={PROVIDERS}", "--provider=openai",
            "--scenario=single", "--scenario=parallel", "--scenario=usage", "--scenario=strict",
            "--scenario=named", "--collect-only", "--no-matrix", "test_mine_grouped.py",
        ],
        plugins=[rec],
    )  # fmt: skip
    capsys.readouterr()
    assert code == 5  # collected, nothing tested
    assert rec.groups.pop("test_mine[openai]") == ""
    assert list(rec.groups.values()) == ["openai#0", "openai#1", "openai#2", "openai#3", "openai#0"]


def test_a_run_whose_cells_are_all_deselected_is_the_users_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A reference profile runs only its own scenario: asked for another, no cell is left,
    and the user's marked test beside it passes as in any pytest run."""
    (tmp_path / "test_mine_left.py").write_text(
        "import pytest\n\n@pytest.mark.slow\ndef test_ok():\n    assert True\n"
    )
    d = door(
        capsys, f"--providers={PROVIDERS}", "--provider=profile:id-absent",
        f"--cassette-dir={CASSETTES}", "--reference-profiles",
        "--profile-server=http://127.0.0.1:9/v1", "--scenario=single", "test_mine_left.py",
    )  # fmt: skip
    assert d.code == 0, d.out
    assert not any(ln.startswith("ran ") for ln in d.lines), d.out
