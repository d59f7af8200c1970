"""Using the suite from outside this repository: `toolcall-conformance run` and
`pytest --pyargs conformance.suite` from an empty directory against `toolcall-conformance serve`,
their exit status (0 conforms, 1 deviates, 5 nothing tested, 4 configuration error), the
failure output a CI log needs, JUnit classnames, and the small things a user hit
(`analyze -`, `--help` defaults, a busy port, a typo'd key, file modes).

Every run here is a subprocess started in a fresh temporary directory, as a user would.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.providers import ConfigError, load_providers
from conformance.server.testing import running_server

BIN = Path(sys.executable).parent
CONFORMANCE = str(BIN / "toolcall-conformance")
TWO = ["--scenario", "single", "--scenario", "parallel"]  # enough to judge, and quick


def conformance_run(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CONFORMANCE, "run", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def pytest_door(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # A user's own directory: its own (empty) pytest configuration, so pytest's rootdir
    # search stops here and never reaches this checkout's pyproject.toml (the tests'
    # temporary directories live under .nox/, inside the checkout).
    (cwd / "pytest.ini").touch()
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--pyargs",
            "conformance.suite",
            *args,
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def as_pytest(args: list[str]) -> list[str]:
    """The same options for the pytest door (``--scenario x`` -> ``--scenario=x``)."""
    out, it = [], iter(args)
    for a in it:
        out.append(f"{a}={next(it)}")
    return out


@pytest.fixture(scope="module")
def server() -> object:
    with running_server() as url:
        yield url


DOORS = ["run", "pytest"]


def door(kind: str, cwd: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return conformance_run(cwd, *args) if kind == "run" else pytest_door(cwd, *as_pytest(args))


@pytest.mark.parametrize("kind", DOORS)
def test_a_conforming_server_exits_0(kind: str, server: str, tmp_path: Path) -> None:
    r = door(kind, tmp_path, ["--base-url", server, "--model", "reference", *TWO])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ran 2 cell(s): 2 conforming, 0 deviating, 0 not tested" in r.stdout
    assert "warning" not in r.stdout
    # Live: the traffic was recorded where the options say (the same defaults for both
    # doors, under the cwd), with the JUnit file beside the matrix.
    cassettes = tmp_path / "conformance-cassettes"
    assert (tmp_path / "conformance-reports" / "junit.xml").is_file()
    assert not (tmp_path / "conformance-reports" / ".locks").exists()
    assert sorted(p.name for p in (cassettes / "reference").glob("*.yaml")) == [
        "parallel.yaml",
        "single.yaml",
    ]


@pytest.mark.parametrize("kind", DOORS)
def test_a_deviating_server_exits_1_naming_quirk_event_and_pointer(
    kind: str, server: str, tmp_path: Path
) -> None:
    r = door(
        kind,
        tmp_path,
        ["--base-url", server, "--model", "dashscope-compatible", "--scenario", "single"],
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("unexpected MUST quirk Q-EMPTY-STRING-OVERWRITE (breaks R-CONT-ID-ABSENT: ") in r.stdout
    assert (
        ') event 2 /choices/0/delta/tool_calls/0/id: `id: ""` on a continuation delta' in r.stdout
    )
    assert "--expect-quirk Q-EMPTY-STRING-OVERWRITE='<reason>'" in r.stdout
    assert "expected_quirks: {Q-EMPTY-STRING-OVERWRITE: <reason>}" in r.stdout


@pytest.mark.parametrize("kind", DOORS)
def test_a_declared_quirk_is_accepted_and_exits_0(kind: str, server: str, tmp_path: Path) -> None:
    r = door(
        kind,
        tmp_path,
        [
            "--base-url",
            server,
            "--model",
            "dashscope-compatible",
            "--scenario",
            "single",
            "--expect-quirk",
            "Q-EMPTY-STRING-OVERWRITE=documented by the vendor",
        ],
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ran 1 cell(s): 1 conforming, 0 deviating" in r.stdout


@pytest.mark.parametrize("kind", DOORS)
def test_an_unset_key_tests_nothing_and_exits_5_saying_why(
    kind: str, server: str, tmp_path: Path
) -> None:
    var = "CONFORMANCE_TEST_SURELY_UNSET_KEY"
    assert var not in os.environ
    r = door(
        kind, tmp_path, ["--base-url", server, "--model", "reference", "--api-key-env", var, *TWO]
    )
    assert r.returncode == 5, r.stdout + r.stderr
    assert f"not tested (2): reference: set {var} to run it" in r.stdout
    assert "nothing was tested: exit status 5" in r.stdout


def test_replay_without_cassettes_exits_5_with_a_command_that_records(
    server: str, tmp_path: Path
) -> None:
    r = conformance_run(tmp_path, "--base-url", server, "--model", "reference", "--replay", *TWO)
    assert r.returncode == 5, r.stdout + r.stderr
    assert (
        f"not recorded: record with `toolcall-conformance run --base-url {server} --model "
        "reference`"
    ) in r.stdout
    # That command records, then the replay tests the cells.
    assert (
        conformance_run(tmp_path, "--base-url", server, "--model", "reference", *TWO).returncode
        == 0
    )
    again = conformance_run(
        tmp_path, "--base-url", server, "--model", "reference", "--replay", *TWO
    )
    assert again.returncode == 0, again.stdout


def test_providers_file_door_and_junit_classnames(server: str, tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(
        textwrap.dedent(f"""\
        providers:
          mysrv:
            base_url: {server}
            model: reference
          other:
            base_url: {server}
            model: dashscope-compatible
        """)
    )
    r = conformance_run(
        tmp_path, "--providers", "mine.yaml", "--provider", "mysrv", "--report-dir", "out", *TWO
    )
    assert r.returncode == 0, r.stdout + r.stderr
    cases = ET.parse(tmp_path / "out" / "junit.xml").getroot().iter("testcase")
    assert {(c.get("classname"), c.get("name")) for c in cases} == {
        ("conformance.suite.test_scenarios", "test_single[mysrv]"),
        ("conformance.suite.test_scenarios", "test_parallel[mysrv]"),
    }
    # The pytest door, with the package anywhere: the same classnames.
    # Without pytest-xdist its xdist_group mark is still registered (no warning).
    r = pytest_door(
        tmp_path,
        "--providers=mine.yaml",
        "--provider=mysrv",
        "--scenario=single",
        "--record-mode=none",
        "--cassette-dir=conformance-cassettes",
        "--junitxml=j.xml",
        "-p",
        "no:xdist",
        "-W",
        "error::pytest.PytestUnknownMarkWarning",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    names = {c.get("classname") for c in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")}
    assert names == {"conformance.suite.test_scenarios"}


@pytest.mark.parametrize(
    "args,message",
    [
        ([], "give --base-url URL --model NAME, or --providers FILE"),
        (["--base-url", "http://127.0.0.1:1/v1"], "--base-url needs --model NAME"),
        (["--base-url", "ftp://x/v1", "--model", "m"], "--base-url: not an http(s) URL"),
        (
            [
                "--base-url",
                "http://127.0.0.1:1/v1",
                "--model",
                "m",
                "--expect-quirk",
                "Q-EMPTY-STRING-OVERWRIT=x",
            ],
            "unknown quirk id 'Q-EMPTY-STRING-OVERWRIT' (did you mean Q-EMPTY-STRING-OVERWRITE?)",
        ),
        (
            [
                "--base-url",
                "http://127.0.0.1:1/v1",
                "--model",
                "m",
                "--expect-quirk",
                "Q-EMPTY-STRING-OVERWRITE",
            ],
            "expected Q-ID=reason",
        ),
        (
            ["--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--api-key-env", "sk-abc"],
            "--api-key-env: must be the NAME of an environment variable",
        ),
        (["--providers", "missing.yaml"], "missing.yaml: no such file"),
        (
            ["--base-url", "http://127.0.0.1:1/v1", "--model", "m", "--scenario", "singel"],
            "unknown scenario 'singel'",
        ),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--providers", "p.yaml", "--provider", "nope"], "unknown provider 'nope'; valid: a"),
    ],
    ids=[
        "no target",
        "no model",
        "bad url",
        "typo quirk",
        "no reason",
        "key as var",
        "missing file",
        "bad scenario",
        "bad flag",
        "bad provider",
    ],
)
def test_configuration_errors_are_one_line_and_exit_4(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    if "p.yaml" in args:
        (tmp_path / "p.yaml").write_text(
            "providers:\n  a:\n    base_url: http://127.0.0.1:1/v1\n    model: m\n"
        )
    assert main(["run", *args]) == 4
    out = capsys.readouterr()
    lines = [ln for ln in (out.out + out.err).splitlines() if ln.strip()]
    assert (
        len(lines) == 1
        and lines[0].startswith("toolcall-conformance run: ")
        and message in lines[0]
    ), lines
    assert {p.name for p in tmp_path.iterdir()} <= {"p.yaml"}  # nothing written


def test_a_usage_error_from_the_command_line_exits_4(tmp_path: Path) -> None:
    r = conformance_run(tmp_path, "--base-url", "http://127.0.0.1:1/v1")
    assert r.returncode == 4
    assert r.stderr == "toolcall-conformance run: --base-url needs --model NAME\n"


def test_pytest_door_without_a_target_is_a_usage_error(tmp_path: Path) -> None:
    r = pytest_door(tmp_path)
    assert r.returncode == 4
    assert "nothing to test: pass --base-url URL --model NAME" in r.stderr


# ------------------------------------------------------------ the plugin stays out of the way


def test_an_unrelated_project_with_its_own_providers_yaml_is_left_alone(tmp_path: Path) -> None:
    """The plugin is loaded by every pytest run where conformance is installed: it must
    not read a providers.yaml that belongs to someone else, nor print anything."""
    (tmp_path / "providers.yaml").write_text("not: [ours\n")
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    (tmp_path / "reports" / "results").mkdir(parents=True)
    (tmp_path / "reports" / "results" / "theirs.json").write_text("{}")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-W",
            "error::pytest.PytestUnknownMarkWarning",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout and "- conformance -" not in r.stdout
    assert {p.name for p in tmp_path.iterdir()} - {"__pycache__"} == {
        "providers.yaml",
        "test_one.py",
        "reports",
    }
    assert [p.name for p in (tmp_path / "reports").rglob("*")] == ["results", "theirs.json"]


# ------------------------------------------------------------ small things a user hit


JSONL = (
    "\n".join(
        [
            '{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1",'
            '"type":"function","function":{"name":"get_weather","arguments":""}}]}}]}',
            '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":'
            '"{\\"city\\": \\"Paris\\"}"}}]}}]}',
            '{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}',
        ]
    )
    + "\n"
)


def test_analyze_reads_standard_input(tmp_path: Path) -> None:
    r = subprocess.run(
        [CONFORMANCE, "analyze", "-"],
        input=JSONL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split(":")[0] in ("✓ <stdin>", "~ <stdin>")  # named <stdin>, judged
    assert 'call 0: id=\'call_1\' get_weather({"city": "Paris"})' in r.stdout
    empty = subprocess.run(
        [CONFORMANCE, "analyze", "-"],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert empty.returncode == 2
    assert empty.stderr.strip() == "conformance: <stdin>: empty file"


@pytest.mark.parametrize(
    "cmd,shown",
    [
        (
            ["run"],
            [
                "(default: conformance-reports)",
                "(default: conformance-cassettes)",
                "(default: 1)",
                "(default: should)",
                "(default: 256)",
                "0  at least one cell",
                "6  the endpoint could not be reached",
            ],
        ),
        (["serve"], ["(default: 8765)", "(default: 127.0.0.1)"]),
        (["report"], ["(default: conformance-reports)", "exit status: 0 rendered"]),
    ],
)
def test_help_shows_the_defaults(cmd: list[str], shown: list[str]) -> None:
    r = subprocess.run(
        [CONFORMANCE, *cmd, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert r.returncode == 0
    for s in shown:
        assert s in r.stdout
    assert "(default: None)" not in r.stdout


def test_serve_on_a_busy_port_is_one_line_and_non_zero() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = subprocess.run(
            [CONFORMANCE, "serve", "--port", str(port)], capture_output=True, text=True, timeout=60
        )
    assert r.returncode == 4
    assert r.stdout == ""
    assert r.stderr == (
        f"toolcall-conformance serve: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    )


@pytest.mark.parametrize(
    "typo,near",
    [
        ("base_ulr", "base_url"),
        ("modle", "model"),
        ("expected_quirk", "expected_quirks"),
        ("api_key_evn", "api_key_env"),
    ],
)
def test_a_typo_in_providers_yaml_names_the_key_and_the_closest_valid_one(
    tmp_path: Path, typo: str, near: str
) -> None:
    entry = {"base_url": "http://127.0.0.1:1/v1", "model": "m"}
    body = "\n".join(f"    {typo if k == near else k}: {v}" for k, v in entry.items())
    if near not in entry:
        body += f"\n    {typo}: X_KEY" if near == "api_key_env" else f"\n    {typo}: {{}}"
    p = tmp_path / "providers.yaml"
    p.write_text(f"providers:\n  mysrv:\n{body}\n")
    with pytest.raises(ConfigError) as e:
        load_providers(p)
    assert str(e.value) == (
        f"{p}: provider 'mysrv', field '{typo}': unknown field '{typo}' (did you mean '{near}'?)"
    )


def test_a_key_written_in_the_file_still_gets_the_key_hint(tmp_path: Path) -> None:
    p = tmp_path / "providers.yaml"
    p.write_text("providers:\n  x:\n    base_url: http://a/v1\n    model: m\n    api_key: abc\n")
    with pytest.raises(ConfigError, match="keys are never written in providers.yaml"):
        load_providers(p)


def test_written_files_follow_the_umask(tmp_path: Path) -> None:
    """Reports and cassettes are meant to be shared: 0666 less the umask, not 0600."""
    code = textwrap.dedent("""
        import os, sys, stat
        from conformance.secrets import write_atomic
        os.umask(int(sys.argv[2], 8))
        write_atomic(sys.argv[1], "x")
        print(oct(stat.S_IMODE(os.stat(sys.argv[1]).st_mode)))
    """)
    for mask, mode in (("022", "0o644"), ("002", "0o664"), ("077", "0o600")):
        r = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / f"f{mask}"), mask],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.stdout.strip() == mode, r.stderr


def test_a_run_writes_shareable_reports_and_cassettes(server: str, tmp_path: Path) -> None:
    r = subprocess.run(
        [
            "sh",
            "-c",
            'umask 002 && exec "$@"',
            "sh",
            CONFORMANCE,
            "run",
            "--base-url",
            server,
            "--model",
            "reference",
            "--scenario",
            "single",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    for f in (
        "conformance-reports/quirks-matrix.json",
        "conformance-reports/quirks-matrix.md",
        "conformance-cassettes/reference/single.yaml",
    ):
        assert stat.S_IMODE((tmp_path / f).stat().st_mode) == 0o664, f
