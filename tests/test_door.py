"""What a server's CI meets first, through both doors (`toolcall-conformance run` and
`pytest --pyargs conformance.suite`), from an empty directory against the reference server:
the ideal server passes every cell, an endpoint that is not there has an exit status of
its own (with the /v1 hint), `--fail-on` with levels in the log, bounded requests, one
summary block, results kept per model, the run's matrix about its own server only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.scenarios import DEFAULT_MAX_TOKENS, SCENARIOS, build_request
from conformance.server.testing import running_server

BIN = Path(sys.executable).parent
COMMAND = str(BIN / "toolcall-conformance")
EXIT_UNREACHABLE = 6


def door(kind: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if kind == "run":
        cmd = [COMMAND, "run", *args]
    else:  # the same options as `--opt=value` (a value is never taken for a path)
        it, pairs = iter(args), []
        for a in it:
            pairs.append(a if a in ("-v", "--cells") else f"{a}={next(it)}")
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--pyargs",
            "conformance.suite",
            *["--cells" if a == "-v" else a for a in pairs],
        ]
        # A user's own directory: its own (empty) pytest configuration, so pytest's rootdir
        # search stops here and never reaches this checkout's pyproject.toml (the tests'
        # temporary directories live under .nox/, inside the checkout).
        (cwd / "pytest.ini").touch()
    return subprocess.run(
        cmd,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def server() -> object:
    with running_server() as url:
        yield url


DOORS = ["run", "pytest"]


@pytest.mark.parametrize("kind", DOORS)
def test_the_reference_model_tests_and_passes_all_15_cells(
    kind: str, server: str, tmp_path: Path
) -> None:
    r = door(kind, tmp_path, "--base-url", server, "--model", "reference", "-v")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (
        f"ran {len(SCENARIOS)} cell(s): {len(SCENARIOS)} conforming, 0 deviating, "
        "0 not tested" in r.stdout
    )
    # -v: one line per cell with its verdict, and each cell once.
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("✓ test_")]
    assert len(lines) == len(SCENARIOS) and all(ln.endswith(": conforms") for ln in lines)
    assert "✓ test_truncated_arguments[reference]: conforms" in lines
    cell = json.loads(
        (
            tmp_path / "conformance-reports" / "results" / "reference__truncated-arguments.json"
        ).read_text()
    )
    assert cell["finish_reason"] == "length"
    # The summary block ends the log: where the report, JUnit and cassettes are.
    tail = r.stdout.splitlines()[-5:]
    assert any(ln.startswith("report: conformance-reports/quirks-matrix.html") for ln in tail)
    assert "junit: conformance-reports/junit.xml" in tail
    assert "cassettes: conformance-cassettes" in tail
    assert (tmp_path / "conformance-cassettes" / "reference" / "single.yaml").is_file()


@pytest.mark.parametrize("kind", DOORS)
def test_a_closed_port_exits_with_the_unreachable_status(
    kind: str, tmp_path: Path, closed_port: int
) -> None:
    url = f"http://127.0.0.1:{closed_port}/v1"
    r = door(
        kind,
        tmp_path,
        "--base-url",
        url,
        "--model",
        "m",
        "--scenario",
        "single",
        "--scenario",
        "parallel",
    )
    assert r.returncode == EXIT_UNREACHABLE, r.stdout + r.stderr
    assert (
        "m: the endpoint could not be reached or does not serve chat completions "
        f"(connection refused): exit status {EXIT_UNREACHABLE}"
    ) in r.stdout
    assert "did you mean" not in r.stdout
    # The counts agree with the status: nothing deviated, nothing was reached.
    assert "ran 2 cell(s): 0 conforming, 2 unreachable, 0 not tested" in r.stdout
    assert "deviating" not in r.stdout


@pytest.mark.parametrize("kind", DOORS)
def test_a_base_url_without_v1_is_unreachable_with_a_hint(
    kind: str, server: str, tmp_path: Path
) -> None:
    root = server.removesuffix("/v1")
    r = door(kind, tmp_path, "--base-url", root, "--model", "reference", "--scenario", "single")
    assert r.returncode == EXIT_UNREACHABLE, r.stdout + r.stderr
    assert "(HTTP 404: Not Found)" in r.stdout
    assert f"did you mean --base-url {root}/v1? {root}/v1/chat/completions answers" in r.stdout


def test_a_deviating_server_still_exits_1_not_unreachable(server: str, tmp_path: Path) -> None:
    r = door(
        "run",
        tmp_path,
        "--base-url",
        server,
        "--model",
        "dashscope-compatible",
        "--scenario",
        "single",
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "✗ test_single[dashscope-compatible]: Q-EMPTY-STRING-OVERWRITE (MUST)" in r.stdout


@pytest.mark.parametrize("kind", DOORS)
def test_fail_on_must_passes_should_quirks_and_lists_them_with_their_level(
    kind: str, server: str, tmp_path: Path
) -> None:
    args = ["--base-url", server, "--model", "sse-done-missing", "--scenario", "single"]
    strict = door(kind, tmp_path, *args)
    assert strict.returncode == 1, strict.stdout + strict.stderr
    # The failure line: level, quirk, the rule it breaks (not the quirk id twice).
    assert "unexpected SHOULD quirk Q-SSE-DONE-MISSING (breaks R-SSE-DONE: " in strict.stdout
    assert "✗ test_single[sse-done-missing]: Q-SSE-DONE-MISSING (SHOULD)" in strict.stdout
    lenient = door(kind, tmp_path, *args, "--fail-on", "must")
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr
    assert (
        "below --fail-on must: Q-SSE-DONE-MISSING (SHOULD)  [test_single[sse-done-missing]]"
        in lenient.stdout
    )
    assert "1 conforming (1 with quirks below --fail-on must)" in lenient.stdout


def test_a_quirk_judged_on_its_own_names_its_catalogue_entry_not_its_id_twice(
    server: str, tmp_path: Path
) -> None:
    r = door(
        "run",
        tmp_path,
        "--base-url",
        server,
        "--model",
        "args-on-opening-delta",
        "--scenario",
        "single",
    )
    assert r.returncode == 1
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("unexpected "))
    assert line.startswith("unexpected SHOULD quirk Q-ARGS-ON-OPENING-DELTA (catalogued as: ")
    assert line.count("Q-ARGS-ON-OPENING-DELTA") == 1


@pytest.mark.parametrize("kind", DOORS)
def test_two_models_into_one_directory_keep_both_results(
    kind: str, server: str, tmp_path: Path
) -> None:
    for model in ("reference", "usage-placement"):
        door(
            kind,
            tmp_path,
            "--base-url",
            server,
            "--model",
            model,
            "--scenario",
            "single",
            "--fail-on",
            "must",
        )
    results = sorted(p.name for p in (tmp_path / "conformance-reports" / "results").iterdir())
    assert results == ["reference__single.json", "usage-placement__single.json"]
    # The run's matrix is about the run's own server: no public recordings of others.
    md = (tmp_path / "conformance-reports" / "quirks-matrix.md").read_text()
    assert "usage-placement" in md and "Anthropic" not in md and "xAI" not in md
    doc = json.loads((tmp_path / "conformance-reports" / "quirks-matrix.json").read_text())
    assert doc["field_providers"] == []
    assert [c["id"] for c in doc["columns"]] == ["usage-placement"]
    shown = {q for c in doc["cells"] for q in (c.get("quirks") or []) + (c.get("expected") or [])}
    html = (tmp_path / "conformance-reports" / "quirks-matrix.html").read_text()
    assert f'Quirks <span class="count">{len(shown)} referenced' in html


@pytest.mark.parametrize("kind", DOORS)
def test_a_second_live_run_records_the_cell_afresh_and_replays_it(
    kind: str, server: str, tmp_path: Path
) -> None:
    """A live run rewrites the cell's cassette: appended to the last run's, a replay would
    play the old exchange first (vcrpy's "all" mode keeps what the file held)."""
    args = ["--base-url", server, "--model", "reference", "--scenario", "single"]
    for _ in range(2):
        assert door(kind, tmp_path, *args).returncode == 0
    cassette = (tmp_path / "conformance-cassettes" / "reference" / "single.yaml").read_text()
    assert cassette.count("uri: ") == 1
    if kind == "run":
        assert door("run", tmp_path, *args, "--replay").returncode == 0


def test_every_request_carries_max_tokens() -> None:
    provider = SimpleNamespace(
        model="m",
        extra_body={},
        scenario_body=lambda _: {},
        elicitation={"default_max_tokens": DEFAULT_MAX_TOKENS},
    )
    for s in SCENARIOS.values():
        body = build_request(s, provider)
        assert isinstance(body.get("max_tokens"), int), s.id
    assert build_request(SCENARIOS["truncated-arguments"], provider)["max_tokens"] == 24
    assert build_request(SCENARIOS["single"], provider)["max_tokens"] == DEFAULT_MAX_TOKENS
    assert (
        build_request(SCENARIOS["long-arguments"], provider)["max_tokens"] == 4 * DEFAULT_MAX_TOKENS
    )
    # A provider's own elicitation.max_tokens wins; without a default none is invented
    # (a cassette recorded before the default existed is judged as it was sent).
    own = SimpleNamespace(
        model="m",
        extra_body={},
        scenario_body=lambda _: {},
        elicitation={"max_tokens": 99, "default_max_tokens": 500},
    )
    assert build_request(SCENARIOS["single"], own)["max_tokens"] == 99
    bare = SimpleNamespace(model="m", extra_body={}, scenario_body=lambda _: {}, elicitation={})
    assert "max_tokens" not in build_request(SCENARIOS["single"], bare)


def test_the_max_tokens_and_elicitation_options_reach_the_requests(
    server: str, tmp_path: Path
) -> None:
    shots = tmp_path / "shots.json"
    shots.write_text(
        json.dumps([{"role": "user", "content": "example"}, {"role": "assistant", "content": "ok"}])
    )
    r = door(
        "run",
        tmp_path,
        "--base-url",
        server,
        "--model",
        "reference",
        "--scenario",
        "single",
        "--max-tokens",
        "77",
        "--system-prompt",
        "Call tools.",
        "--few-shot",
        str(shots),
        "--extra-body",
        '{"temperature": 0}',
    )
    assert r.returncode == 0, r.stdout + r.stderr
    import yaml

    cassette = yaml.safe_load(
        (tmp_path / "conformance-cassettes" / "reference" / "single.yaml").read_text()
    )
    sent = json.loads(cassette["interactions"][0]["request"]["body"])
    assert sent["max_tokens"] == 77 and sent["temperature"] == 0
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "user"]
    prov = json.loads(
        (tmp_path / "conformance-cassettes" / "reference" / "provenance.json").read_text()
    )
    assert prov["scenarios"]["single"]["default_max_tokens"] == 77
    # Replayed, the same bound is sent: the verdict is the recorded one.
    again = door(
        "run",
        tmp_path,
        "--base-url",
        server,
        "--model",
        "reference",
        "--scenario",
        "single",
        "--replay",
    )
    assert again.returncode == 0, again.stdout + again.stderr


@pytest.mark.parametrize(
    "args,message",
    [
        (["--max-tokens", "0"], "--max-tokens must be at least 1"),
        (["--extra-body", "[1]"], "--extra-body: expected a JSON object"),
        (["--few-shot", "nope.json"], "--few-shot nope.json: cannot be read"),
    ],
)
def test_bad_elicitation_options_are_one_line_and_exit_4(
    tmp_path: Path, args: list[str], message: str
) -> None:
    r = door("run", tmp_path, "--base-url", "http://127.0.0.1:1/v1", "--model", "m", *args)
    assert r.returncode == 4
    assert r.stderr.strip() == f"toolcall-conformance run: {message}" or r.stderr.startswith(
        f"toolcall-conformance run: {message}"
    ), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_report_help_describes_every_option_and_results_is_gone() -> None:
    r = subprocess.run(
        [COMMAND, "report", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert r.returncode == 0
    assert "--results" not in r.stdout
    for opt in ("--diff OLD NEW", "--markdown", "--out DIR"):
        line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith(opt))
        assert len(line.strip()) > len(opt) + 10, line  # it says what the option does
    assert "1 --diff found a regression" in r.stdout


def test_report_without_a_matrix_says_how_to_make_one(tmp_path: Path) -> None:
    r = subprocess.run(
        [COMMAND, "report", "--out", str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 2
    said = r.stderr.replace(str(tmp_path), "<dir>")  # the path may hold .nox/ (a scratch dir)
    assert "nox" not in said and "toolcall-conformance run --report-dir" in said


SSE_MUST_AND_INFO = (
    # an empty-string id on a continuation (MUST) after an opening delta (INFO-free)
    'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    '"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function",'
    '"function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}\n\n'
    'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    '"delta":{"tool_calls":[{"index":0,"id":"","function":{"arguments":"{}"}}]},'
    '"finish_reason":null}]}\n\n'
    'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    '"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n'
)


def test_analyze_lists_must_first_explains_the_readings_and_gates_with_fail_on(
    tmp_path: Path,
) -> None:
    f = tmp_path / "s.sse"
    f.write_text(SSE_MUST_AND_INFO)
    r = subprocess.run([COMMAND, "analyze", str(f)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr  # no gate by default: the DESIGN contract
    levels = [
        ln.split("]", 1)[0].strip(" [") for ln in r.stdout.splitlines() if ln.startswith("  [")
    ]
    assert "MUST" in levels and "INFO" in levels
    rank = {"MUST": 0, "SHOULD": 1, "INFO": 2}
    assert levels == sorted(levels, key=rank.__getitem__), levels
    assert sum("naive copies every field present" in ln for ln in r.stdout.splitlines()) == 1
    assert "is not OpenAI's shape: call_ then 24 letters or digits" in r.stdout
    gated = subprocess.run(
        [COMMAND, "analyze", "--fail-on", "must", str(f)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert gated.returncode == 1
    ok = tmp_path / "ok.sse"
    ok.write_text(
        'data: {"choices":[{"index":0,"delta":{"content":"hi"},'
        '"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    assert (
        subprocess.run(
            [COMMAND, "analyze", "--fail-on", "must", str(ok)],
            capture_output=True,
            text=True,
            timeout=60,
        ).returncode
        == 0
    )


def test_the_html_renders_the_catalogues_markdown_and_escapes_everything_else() -> None:
    from conformance.report.html import rich

    assert (
        rich("**Missing `id`.** then *this*")
        == "<strong>Missing <code>id</code>.</strong> then <em>this</em>"
    )
    assert rich("[docs](https://example.org/a) <script>x</script> `**raw**`") == (
        '<a href="https://example.org/a" rel="noreferrer">docs</a> &lt;script&gt;x&lt;/script'
        "&gt; <code>**raw**</code>"
    )
    assert "<a" not in rich("[x](javascript:alert(1))")
    # a URL keeps its balanced parentheses; a closing one it did not open ends it
    wiki = "https://en.wikipedia.org/wiki/Mutation_(disambiguation)"
    assert rich(f"(see {wiki})") == f'(see <a href="{wiki}" rel="noreferrer">{wiki}</a>)'
    assert rich(f"[w]({wiki}).") == f'<a href="{wiki}" rel="noreferrer">w</a>.'
    assert rich("(https://example.org/a).") == (
        '(<a href="https://example.org/a" rel="noreferrer">https://example.org/a</a>).'
    )
    assert rich("2*3 and a*b*c") == "2*3 and a*b*c"
    # Every catalogue entry renders without a raw ** left outside code.
    import re as _re

    from conformance.rules import quirk_catalogue

    for q, entry in quirk_catalogue().items():
        for key in ("title", "breaks", "workaround"):
            html = _re.sub(r"<code>.*?</code>", "", rich(str(entry.get(key) or "")))
            assert "**" not in html, (q, key)
