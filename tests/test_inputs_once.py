"""Inputs read once and bounded; output directories and limits checked up front.

A pipe, a FIFO or ``analyze <(cat good.sse)`` is read once (the sniffer and the reader
share one copy), standard input and HAR files have a bound with a one-line error past
it, an unusable ``--report-dir`` is the one-line configuration error (exit 4), and a
limit that is not finite or is absurd is refused before any request.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from conformance import readers
from conformance.cli import main
from conformance.providers import ConfigError, load_providers, output_dir_problem
from conformance.transcript import InputError

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GOOD = (
    b"".join(
        b"data: " + json.dumps(c).encode() + b"\n\n"
        for c in [
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_abc123",
                                    "type": "function",
                                    "function": {
                                        "name": "get_weather",
                                        "arguments": '{"city": "Paris"}',
                                    },
                                }
                            ],
                        },
                        "finish_reason": None,
                    }
                ],
            },
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
            },
        ]
    )
    + b"data: [DONE]\n\n"
)


def verdict_of(path: Path) -> str:
    r = subprocess.run(
        [str(BIN / "toolcall-conformance"), "analyze", "--json", str(path)],
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return str(json.loads(r.stdout)["captures"][0]["verdict"])


# ------------------------------------------------------------------ read once


def test_process_substitution_is_judged_as_the_file(tmp_path: Path) -> None:
    good = tmp_path / "good.sse"
    good.write_bytes(GOOD)
    whole = verdict_of(good)
    assert whole in ("conforms", "quirk")
    r = subprocess.run(
        ["bash", "-c", f"{BIN / 'toolcall-conformance'} analyze --json <(cat {good})"],
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    capture = json.loads(r.stdout)["captures"][0]
    assert capture["verdict"] == whole
    assert capture["source"].startswith("/dev/fd/")  # named as given, not the copy


def test_a_fifo_is_read_once_and_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with fifo.open("wb") as f:
            f.write(GOOD)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    r = subprocess.run(
        [str(BIN / "toolcall-conformance"), "analyze", "--json", str(fifo)],
        capture_output=True,
        timeout=30,
    )
    writer.join(timeout=5)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["captures"][0]["source"] == str(fifo)


def test_stdin_past_the_bound_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    big = GOOD * 100
    with pytest.raises(InputError, match=r"<stdin>: over 1,000 bytes.*save it to a file"):
        readers.read_stream(io.BytesIO(big), "<stdin>", limit=1000)
    left = [
        p
        for p in Path(os.environ.get("TMPDIR", "/tmp")).glob("conformance-input-*")
        if not any(p.iterdir())
    ]
    assert not left  # the copy is removed


def test_stdin_on_a_full_disk_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    real_open = Path.open

    def full(self: Path, mode: str = "r", *a: object, **k: object) -> object:
        if mode == "wb" and self.name == "input":
            raise OSError(28, "No space left on device")
        return real_open(self, mode, *a, **k)  # type: ignore[call-overload]

    monkeypatch.setattr(Path, "open", full)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(GOOD)))
    assert main(["analyze", "-"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "conformance: <stdin>: cannot be copied to a temporary file (No space "
        "left on device); save it to a file and pass its path\n"
    )


def test_stdin_still_reads(tmp_path: Path) -> None:
    r = subprocess.run(
        [str(BIN / "toolcall-conformance"), "analyze", "--json", "-"],
        input=GOOD,
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["captures"][0]["source"] == "<stdin>"


def test_a_har_over_the_bound_is_one_line_without_reading_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readers, "HAR_LIMIT", 1 << 16)
    har = tmp_path / "big.har"
    entry = {
        "request": {"method": "POST", "url": "http://h/v1/chat/completions"},
        "response": {
            "status": 200,
            "content": {"mimeType": "text/event-stream", "text": GOOD.decode()},
        },
    }
    har.write_text(json.dumps({"log": {"creator": {"name": "x"}, "entries": [entry] * 200}}))
    assert har.stat().st_size > 1 << 16
    with pytest.raises(InputError, match=r"big\.har: a HAR file over 0 MiB"):
        readers.read_path(har)


def test_the_har_bound_holds_for_a_real_size(tmp_path: Path) -> None:
    """A sparse file past the bound: refused at once, with little memory."""
    har = tmp_path / "huge.har"
    with har.open("wb") as f:
        f.write(b'{"log": {"creator": {}, "entries": [' + b" " * 8192)  # text to the sniffer
        f.truncate(readers.HAR_LIMIT + (1 << 20))
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so the child would report
    # the pytest worker's own peak.
    code = (
        "import re, sys; from conformance.cli import main; rc = main(['analyze', "
        f"{str(har)!r}]); print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)); "
        "sys.exit(rc)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "a HAR file over 256 MiB" in r.stderr, r.stderr
    assert int(r.stdout.split()[-1]) < readers.HAR_LIMIT // 1024 + 150_000  # KiB


# ------------------------------------------------------------------ output directories


@pytest.mark.parametrize("case", ["a file", "under a file", "read-only"])
def test_an_unusable_report_dir_is_the_one_line_config_error(tmp_path: Path, case: str) -> None:
    (tmp_path / "f").write_text("x")
    report = {
        "a file": str(tmp_path / "f"),
        "under a file": str(tmp_path / "f" / "sub"),
        "read-only": "/proc/conformance-reports",
    }[case]
    (tmp_path / "providers.yaml").write_text(
        "providers:\n  p:\n    base_url: http://127.0.0.1:9/v1\n    model: m\n"
    )
    for cmd in (
        [
            str(BIN / "toolcall-conformance"),
            "run",
            "--providers",
            "providers.yaml",
            "--report-dir",
            report,
            "--scenario",
            "single",
        ],
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--pyargs",
            "conformance.suite",
            "--providers=providers.yaml",
            f"--report-dir={report}",
            "--scenario=single",
            "-q",
        ],
        [
            str(BIN / "toolcall-conformance"),
            "analyze",
            "--report",
            report,
            str(REPO / "cassettes" / "vllm" / "single.yaml"),
        ],
    ):
        r = subprocess.run(
            cmd,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
        )
        out = r.stdout + r.stderr
        assert r.returncode == 4, (cmd, out)
        assert "Traceback" not in out
        lines = [ln for ln in out.splitlines() if report in ln]
        assert lines and ("is a file" in lines[0] or "cannot be written" in lines[0]), out


def test_a_writable_report_dir_is_created(tmp_path: Path) -> None:
    assert output_dir_problem("--report-dir", tmp_path / "new" / "dir") is None
    assert (tmp_path / "new" / "dir").is_dir()


# ------------------------------------------------------------------ limits


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("limits.total_timeout", ".inf"),
        ("limits.total_timeout", "1e300"),
        ("limits.idle_timeout", ".nan"),
        ("limits.max_bytes", "1e300"),
        ("limits.max_bytes", "1" + "0" * 400),
        ("limits.connect_timeout", "-1"),
        ("retries.max_delay", ".inf"),
        ("retries.base_delay", ".nan"),
        ("retries.max", "1000000"),
    ],
)
def test_a_limit_that_is_not_finite_or_absurd_is_a_config_error(
    tmp_path: Path, field: str, value: str
) -> None:
    group, key = field.split(".")
    (tmp_path / "providers.yaml").write_text(
        textwrap.dedent(f"""\
        providers:
          p:
            base_url: http://127.0.0.1:9/v1
            model: m
            {group}: {{{key}: {value}}}
        """)
    )
    with pytest.raises(ConfigError) as e:
        load_providers(tmp_path / "providers.yaml")
    assert f"provider 'p', field '{field}'" in str(e.value) and "\n" not in str(e.value)


def test_sane_limits_still_load(tmp_path: Path) -> None:
    (tmp_path / "providers.yaml").write_text(
        "providers:\n  p:\n    base_url: http://127.0.0.1:9/v1\n    model: m\n"
        "    limits: {total_timeout: 3600, max_bytes: 1073741824}\n"
        "    retries: {max: 3, max_delay: 60}\n"
    )
    assert load_providers(tmp_path / "providers.yaml")["p"].limits["total_timeout"] == 3600


def test_run_refuses_an_infinite_total_timeout_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "providers.yaml").write_text(
        "providers:\n  p:\n    base_url: http://127.0.0.1:9/v1\n    model: m\n"
        "    limits: {total_timeout: .inf}\n"
    )
    r = subprocess.run(
        [
            str(BIN / "toolcall-conformance"),
            "run",
            "--providers",
            "providers.yaml",
            "--scenario",
            "single",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 4
    assert r.stderr.count("\n") == 1 and "limits.total_timeout" in r.stderr


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "1e300", "x"])
def test_serve_refuses_an_absurd_latency(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--port", "0", "--latency", value]) == 4
    err = capsys.readouterr().err
    assert err.startswith("conformance serve: --latency: ") and err.count("\n") == 1
