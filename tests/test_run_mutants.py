"""`toolcall-conformance run` (conformance.run), in-process, pinned by what a server's CI
reads: the exit status (0, 1, 4, 5, 6, 130), the count line, each refusal's one line, and
the files a run leaves (results, matrix, junit.xml, cassettes with the request that was
sent). The suite runs in this process (pytest inside pytest): against the committed
llama.cpp recordings (replay), an in-process reference server (live), or a closed port.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance import cli
from conformance import run as R
from conformance.scenarios import SCENARIOS
from conformance.server.testing import running_server

ROOT = Path(__file__).resolve().parent.parent
PROVIDERS = ROOT / "providers.yaml"
CASSETTES = ROOT / "cassettes"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each run starts in an empty directory, and the suite's modules it imports are
    forgotten afterwards (as pytester does), so no run sees another's state."""
    monkeypatch.chdir(tmp_path)
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("conformance.suite."):
            del sys.modules[name]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running_server() as url:
        yield url


class Ran:
    def __init__(self, code: Any, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()

    def count_line(self) -> str:
        return next(ln for ln in self.lines if ln.startswith("ran "))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Ran:
    try:
        code: Any = cli.main(["run", *argv])
    except SystemExit as e:  # argparse's own refusals
        code = e.code
    out, err = capsys.readouterr()
    return Ran(code, out, err)


def replay(capsys: pytest.CaptureFixture[str], *argv: str, scenario: str = "single") -> Ran:
    """The committed llama.cpp recordings, judged again."""
    return run(
        capsys,
        "--providers",
        str(PROVIDERS),
        "--provider",
        "llamacpp",
        "--replay",
        "--cassette-dir",
        str(CASSETTES),
        "--scenario",
        scenario,
        *argv,
    )


def usage(r: Ran) -> str:
    """The one line of a usage error (exit 4), with nothing on stdout."""
    assert r.code == R.EXIT_USAGE == 4, (r.code, r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert r.out == ""
    return lines[0]


def request_body(cassette: Path) -> dict[str, Any]:
    doc = yaml.safe_load(cassette.read_text())
    return dict(json.loads(doc["interactions"][0]["request"]["body"]))


# ------------------------------------------------------------------ --help


def test_help_lists_every_option_with_its_default_and_the_exit_statuses(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "2000")  # one line per option
    r = run(capsys, "--help")
    assert r.code == 0
    text = " ".join(r.out.split())
    for entry in (
        "Run the provider × scenario suite against one endpoint (--base-url, --model) or the "
        "providers of a file (--providers), live: cassettes are recorded and the matrix is "
        "written under the current directory unless told otherwise.",
        "target (one of): --base-url URL the endpoint, e.g. http://127.0.0.1:8000/v1",
        "--model NAME the model to ask (with --base-url)",
        "--api-key-env VAR environment variable that holds the key (with --base-url); never "
        "pass the key itself",
        "--providers FILE a providers.yaml",
        "--provider NAME only this provider of --providers (repeatable; globs allowed)",
        "run: --scenario NAME only this scenario (repeatable; default: all)",
        "--expect-quirk Q-ID=REASON declare a quirk expected, with why (repeatable)",
        "--repeat N live trials per cell (default: 1)",
        "--report-dir DIR results, matrix (JSON, Markdown, HTML) and junit.xml (default: "
        "conformance-reports)",
        "--cassette-dir DIR where the recorded traffic goes (read back with --replay) "
        "(default: conformance-cassettes)",
        "--replay replay the cassettes in --cassette-dir instead of recording",
        "--fail-on {must,should,info} the lowest level of an unexpected quirk that fails the "
        "run; should (the default) because SHOULD quirks break real clients, must to tolerate "
        "them (listed with their level), info to fail on any (default: should)",
        "-v, --verbose one line per cell with its verdict",
        "elicitation (what a small model needs to call tools; as a providers.yaml entry's "
        "elicitation block, see docs/providers.md): --max-tokens N",
        "exit status (the same for pytest --pyargs conformance.suite): 0 at least one cell",
        "5 nothing could be tested (key unset, not recorded, unsupported, inconclusive) 6 the "
        "endpoint could not be reached",
        "examples: toolcall-conformance run --base-url http://127.0.0.1:8000/v1 --model my-model",
    ):
        assert entry in text, entry
    # the epilog keeps its own line breaks (one exit status a line)
    assert "\n  4  configuration or usage error, in one line\n" in r.out
    r = Ran(*_main_help(capsys))
    assert "run the conformance suite against an endpoint (records live)" in " ".join(r.out.split())


def _main_help(capsys: pytest.CaptureFixture[str]) -> tuple[Any, str, str]:
    try:
        code: Any = cli.main(["--help"])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------ refusals: exit 4, one line


def test_no_target_and_both_targets_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    want = (
        "toolcall-conformance run: give --base-url URL --model NAME, or --providers FILE "
        "(one of them)"
    )
    assert usage(run(capsys)) == want
    assert usage(run(capsys, "--base-url", "http://h/v1", "--providers", "p.yaml")) == want


def test_each_option_that_needs_another_is_refused_with_what_it_needs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        usage(run(capsys, "--base-url", "http://127.0.0.1:9/v1"))
        == "toolcall-conformance run: --base-url needs --model NAME"
    )
    mixed = (
        "toolcall-conformance run: --model and --api-key-env go with --base-url, not --providers"
    )
    assert usage(run(capsys, "--providers", str(PROVIDERS), "--model", "m")) == mixed
    assert usage(run(capsys, "--providers", str(PROVIDERS), "--api-key-env", "K")) == mixed
    assert (
        usage(run(capsys, "--base-url", "http://h/v1", "--model", "m", "--provider", "x"))
        == "toolcall-conformance run: --provider NAME selects from --providers FILE"
    )
    for n in ("0", "-1"):
        assert (
            usage(run(capsys, "--base-url", "http://h/v1", "--model", "m", "--repeat", n))
            == "toolcall-conformance run: --repeat must be at least 1"
        )


def test_argparse_refusals_are_one_line_and_exit_4(capsys: pytest.CaptureFixture[str]) -> None:
    line = usage(run(capsys, "--fail-on", "sometimes"))
    assert line.startswith("toolcall-conformance run: argument --fail-on: invalid choice")
    assert line.endswith(" (see --help)")
    line = usage(run(capsys, "--repeat", "two"))
    assert line.startswith("toolcall-conformance run: argument --repeat: invalid int value")


def test_a_missing_suite_extra_is_named_with_how_to_install_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    for missing in ("pytest", "pytest_recording", "vcr"):
        monkeypatch.setattr(
            importlib.util, "find_spec", lambda n, *a, m=missing: None if n == m else real(n, *a)
        )
        assert usage(run(capsys, "--base-url", "http://h/v1", "--model", "m")) == (
            f"toolcall-conformance run: running the suite needs its extra ({missing} is "
            "missing): pip install 'toolcall-conformance[suite]'"
        )


def test_configuration_mistakes_are_one_line_before_anything_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base = ("--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert usage(run(capsys, *base, "--scenario", "singel")) == (
        "toolcall-conformance run: unknown scenario 'singel'; valid: " + ", ".join(SCENARIOS)
    )
    line = usage(run(capsys, *base, "--scenario", "single", "--scenario", "nope"))
    assert "unknown scenario 'nope'" in line
    line = usage(run(capsys, *base, "--expect-quirk", "Q-NOT-A-QUIRK=why"))
    assert line.startswith("toolcall-conformance run: --expect-quirk: unknown quirk id")
    line = usage(run(capsys, *base, "--expect-quirk", "Q-ID-FORMAT"))
    assert "expected Q-ID=reason" in line
    line = usage(run(capsys, "--base-url", "ftp://h/v1", "--model", "m"))
    assert line.startswith("toolcall-conformance run: --base-url:")
    line = usage(run(capsys, *base, "--api-key-env", "sk-secret-value"))
    assert "--api-key-env: must be the NAME" in line
    assert "--extra-body" in usage(run(capsys, *base, "--extra-body", "{not json"))
    assert "--few-shot" in usage(run(capsys, *base, "--few-shot", str(tmp_path / "none.json")))
    assert usage(run(capsys, *base, "--max-tokens", "0")) == (
        "toolcall-conformance run: --max-tokens must be at least 1"
    )
    # --providers: the file, then the names in it
    line = usage(run(capsys, "--providers", str(tmp_path / "none.yaml")))
    assert "none.yaml" in line
    line = usage(run(capsys, "--providers", str(PROVIDERS), "--provider", "no-such"))
    assert "no-such" in line and "llamacpp" in line
    # nothing ran: no report directory was made by a refused run
    assert not (tmp_path / R.REPORT_DIR).exists()


def test_a_report_dir_that_is_a_file_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "taken").write_text("")
    line = usage(
        run(capsys, "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--report-dir", "taken")
    )
    assert line == (
        "toolcall-conformance run: --report-dir taken: is a file, not a directory; pass a directory"
    )


# ------------------------------------------------------------------ replay: 0, 1, 5


def test_a_replayed_conforming_cell_exits_0_with_its_count_and_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r = replay(capsys, "-v")
    assert r.code == 0, r.out + r.err
    assert r.count_line() == "ran 1 cell(s): 1 conforming, 0 deviating, 0 not tested"
    assert "~ test_single[llamacpp]: quirk" in r.lines  # -v: one line per cell
    # the defaults: the report and junit under conformance-reports/ of this directory
    reports = tmp_path / R.REPORT_DIR
    assert json.loads((reports / "results" / "llamacpp__single.json").read_text())["verdict"] == (
        "quirk"
    )
    assert (reports / "quirks-matrix.json").is_file()
    assert "junit: conformance-reports/junit.xml" in r.lines
    junit = (reports / "junit.xml").read_text()
    assert "test_single[llamacpp]" in junit
    assert "<testsuites" in junit and 'name="pytest"' in junit  # xunit2
    # a replay records nothing and does not name a cassette directory
    assert not (tmp_path / R.CASSETTE_DIR).exists()
    assert not any(ln.startswith("cassettes:") for ln in r.lines)
    # the summary block ends the log: no pytest short summary after it
    assert r.lines[-1].endswith("s") and "xfailed" in r.lines[-1]
    assert not any("short test summary" in ln for ln in r.lines)
    assert "warning" not in r.out  # every option it gives pytest is one pytest knows


def test_without_v_there_is_no_line_per_cell(capsys: pytest.CaptureFixture[str]) -> None:
    r = replay(capsys)
    assert r.code == 0
    assert not any(ln.startswith("~ test_") for ln in r.lines)


def test_fail_on_decides_whether_a_quirk_deviates(capsys: pytest.CaptureFixture[str]) -> None:
    # llama.cpp's single cell shows two INFO quirks it does not declare
    r = replay(capsys, "--fail-on", "info")
    assert r.code == R.EXIT_DEVIATES == 1, r.out + r.err
    assert r.count_line() == "ran 1 cell(s): 0 conforming, 1 deviating, 0 not tested"
    assert "unexpected INFO quirk Q-EXTRA-FIELDS" in r.out
    # the summary names what failed the cell, with its level (not just "failed")
    assert "  ✗ test_single[llamacpp]: Q-EXTRA-FIELDS (INFO); Q-ID-FORMAT (INFO)" in r.lines
    # declared on the command line, they are accepted
    r = replay(
        capsys,
        "--fail-on",
        "info",
        "--expect-quirk",
        "Q-EXTRA-FIELDS=timings",
        "--expect-quirk",
        "Q-ID-FORMAT=long ids",
    )
    assert r.code == 0, r.out
    assert r.count_line() == "ran 1 cell(s): 1 conforming, 0 deviating, 0 not tested"
    # should and must let INFO quirks through
    assert replay(capsys, "--fail-on", "must").code == 0


def test_the_providers_file_decides_what_is_expected(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The same recording under an entry that declares nothing deviates (SHOULD quirk)."""
    entry = yaml.safe_load(PROVIDERS.read_text())["providers"]["llamacpp"]
    entry.pop("expected_quirks")
    f = tmp_path / "mine.yaml"
    f.write_text(yaml.safe_dump({"version": 1, "providers": {"llamacpp": entry}}))
    r = run(
        capsys, "--providers", str(f), "--replay", "--cassette-dir", str(CASSETTES),
        "--scenario", "single",
    )  # fmt: skip
    assert r.code == 1, r.out + r.err
    assert "  ✗ test_single[llamacpp]: Q-ARGS-ON-OPENING-DELTA (SHOULD)" in r.lines


def test_nothing_recorded_is_nothing_tested_exit_5(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r = run(
        capsys, "--providers", str(PROVIDERS), "--provider", "llamacpp", "--replay",
        "--cassette-dir", str(tmp_path / "empty"), "--scenario", "single",
        "--scenario", "parallel",
    )  # fmt: skip
    assert r.code == R.EXIT_NOTHING_TESTED == 5, r.out + r.err
    assert r.count_line() == "ran 2 cell(s): 0 conforming, 0 deviating, 2 not tested"
    assert any(ln.startswith("conformance: nothing was tested: exit status 5") for ln in r.lines)


def test_scenarios_and_report_dir_are_passed_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    r = run(
        capsys, "--providers", str(PROVIDERS), "--provider", "llamac*", "--replay",
        "--cassette-dir", str(CASSETTES), "--scenario", "single", "--scenario",
        "tool-choice-none", "--report-dir", "out/rep", "-v",
    )  # fmt: skip
    assert r.code == 0, r.out + r.err
    assert r.count_line() == "ran 2 cell(s): 2 conforming, 0 deviating, 0 not tested"
    assert "✓ test_tool_choice_none[llamacpp]: conforms" in r.lines
    results = sorted(p.name for p in (tmp_path / "out/rep/results").iterdir())
    assert results == ["llamacpp__single.json", "llamacpp__tool-choice-none.json"]
    assert (tmp_path / "out/rep/junit.xml").is_file()
    assert not (tmp_path / R.REPORT_DIR).exists()


def test_the_current_directorys_pytest_configuration_is_not_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --no-such-option -x\n")
    (tmp_path / "conftest.py").write_text("raise RuntimeError('a conftest of the user')\n")
    r = replay(capsys)
    assert r.code == 0, r.out + r.err
    assert r.count_line() == "ran 1 cell(s): 1 conforming, 0 deviating, 0 not tested"


def test_an_interrupted_run_exits_130(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pytest, "main", lambda args: pytest.ExitCode.INTERRUPTED)
    assert replay(capsys).code == 130
    monkeypatch.setattr(pytest, "main", lambda args: pytest.ExitCode.TESTS_FAILED)
    assert replay(capsys).code == 1


# ------------------------------------------------------------------ live: 0, 1, 6


def test_a_closed_port_exits_6_naming_the_endpoint(
    capsys: pytest.CaptureFixture[str], closed_port: int
) -> None:
    url = f"http://127.0.0.1:{closed_port}/v1"
    r = run(capsys, "--base-url", url, "--model", "m", "--scenario", "single")
    assert r.code == R.EXIT_UNREACHABLE == 6, r.out + r.err
    assert r.count_line() == "ran 1 cell(s): 0 conforming, 1 unreachable, 0 not tested"
    assert any(
        "m: the endpoint could not be reached" in ln and ln.endswith("exit status 6")
        for ln in r.lines
    )
    assert "cassettes: conformance-cassettes" in r.lines  # a live run names them


def test_a_live_run_records_what_it_sent(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, server: str
) -> None:
    shots = tmp_path / "shots.json"
    shots.write_text(json.dumps([{"role": "user", "content": "an example"}]))
    r = run(
        capsys, "--base-url", server, "--model", "reference", "--scenario", "single",
        "--max-tokens", "77", "--system-prompt", "be brief", "--few-shot", str(shots),
        "--extra-body", '{"seed": 7}', "--named-tool-choice", "--repeat", "2",
        "--cassette-dir", "tapes",
    )  # fmt: skip
    assert r.code == 0, r.out + r.err
    assert r.count_line() == "ran 1 cell(s): 1 conforming, 0 deviating, 0 not tested"
    assert "cassettes: tapes" in r.lines
    body = request_body(tmp_path / "tapes" / "reference" / "single.yaml")
    assert body["max_tokens"] == 77
    assert body["seed"] == 7
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
    assert {"role": "user", "content": "an example"} in body["messages"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    cell = json.loads((tmp_path / R.REPORT_DIR / "results" / "reference__single.json").read_text())
    assert cell["trials"]["n"] == 2


def test_a_live_run_with_a_prefill(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, server: str
) -> None:
    r = run(
        capsys, "--base-url", server, "--model", "reference", "--scenario", "single",
        "--prefill", "<tool_call>",
    )  # fmt: skip
    assert r.code == 0, r.out + r.err
    body = request_body(tmp_path / R.CASSETTE_DIR / "reference" / "single.yaml")
    assert body["messages"][-1] == {"role": "assistant", "content": "<tool_call>"}
    assert body["max_tokens"] == 256  # the default bound
    assert "tool_choice" not in body or isinstance(body["tool_choice"], str)


def test_an_unset_key_variable_is_nothing_tested_exit_5(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    monkeypatch.delenv("MUT_RUN_UNSET_KEY", raising=False)
    url = f"http://127.0.0.1:{closed_port}/v1"
    r = run(
        capsys, "--base-url", url, "--model", "m", "--scenario", "single",
        "--api-key-env", "MUT_RUN_UNSET_KEY",
    )  # fmt: skip
    assert r.code == 5, r.out + r.err
    assert r.count_line() == "ran 1 cell(s): 0 conforming, 0 deviating, 1 not tested"
    assert any("not tested (1)" in ln and "MUT_RUN_UNSET_KEY" in ln for ln in r.lines)


def test_a_deviating_model_exits_1(capsys: pytest.CaptureFixture[str], server: str) -> None:
    r = run(capsys, "--base-url", server, "--model", "dashscope-compatible", "--scenario", "single")
    assert r.code == 1, r.out + r.err
    assert r.count_line() == "ran 1 cell(s): 0 conforming, 1 deviating, 0 not tested"
