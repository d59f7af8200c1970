"""providers.yaml: a bad file fails fast with ONE line naming the file, the entry and the
field; a key written in the file is refused without echoing it; a provider whose key is
not set is skipped (live) while the others run; unknown names list the valid ones."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from faults import fault_server, providers_yaml, run_suite

from conformance.providers import ConfigError, load_providers

FAKE_KEY = "sk-proj-CANARYcfg0123456789abcdef"
OK = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}


def _load(tmp_path: Path, text: str) -> str:
    p = tmp_path / "providers.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_providers(p)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(p)), msg
    assert FAKE_KEY not in msg and "CANARY" not in msg, msg
    return msg.removeprefix(str(p))


def _entry(**kw: Any) -> str:
    return providers_yaml({"good": OK, "p": {**OK, **kw}})


CASES = [
    # (what, file text, the message after the file name: a regular expression)
    (
        "wrong type",
        _entry(concurrency="four"),
        r": provider 'p', field 'concurrency': expected integer, got a string",
    ),
    (
        "wrong type nested",
        _entry(limits={"idle_timeout": "soon"}),
        r": provider 'p', field 'limits\.idle_timeout': expected number, got a string",
    ),
    (
        "unknown field",
        _entry(timeout=3),
        r": provider 'p', field 'timeout': unknown field 'timeout' \(valid: .*base_url.*\)",
    ),
    (
        "a key literally in the file",
        _entry(api_key=FAKE_KEY),
        r": provider 'p', field 'api_key': unknown field 'api_key' \(keys are never written in "
        r"providers\.yaml: name the environment variable that holds the key with api_key_env\)",
    ),
    (
        "a key as a header",
        _entry(headers={"Authorization": f"Bearer {FAKE_KEY}"}),
        r": provider 'p', field 'headers\.Authorization': credential headers are never written .*",
    ),
    (
        "a key in the URL",
        _entry(base_url=f"https://h.example/v1?key={FAKE_KEY}"),
        r": provider 'p', field 'base_url': the URL carries a credential .* base_url_env",
    ),
    (
        "a key-shaped value anywhere",
        _entry(extra_body={"user": FAKE_KEY}),
        r": provider 'p', field 'extra_body\.user': looks like an API key or credential; .*",
    ),
    (
        "a key instead of a variable name",
        _entry(api_key_env=FAKE_KEY),
        r": provider 'p', field 'api_key_env': must be the NAME of an environment variable "
        r"\(A-Z, 0-9, _\), not its value",
    ),
    (
        "bad scheme",
        _entry(base_url="ftp://files.example/v1"),
        r": provider 'p', field 'base_url': not an http\(s\) URL \(scheme 'ftp'\); .*",
    ),
    (
        "missing field",
        providers_yaml({"p": {"base_url": "http://h/v1"}}),
        r": provider 'p', field 'model': missing required field",
    ),
    (
        "bad enum",
        _entry(auth="basic"),
        r": provider 'p', field 'auth': must be one of: bearer, api-key, x-api-key",
    ),
    (
        "bad version",
        "version: 2\nproviders: {p: {base_url: 'http://h/v1', model: m}}\n",
        r": field 'version': must be 1",
    ),
    ("no providers", "version: 1\n", r": field 'providers': missing required field"),
    (
        "bad YAML",
        "version: 1\nproviders:\n  p:\n    base_url: [http://h\n    model: m\n",
        r": line \d+: not valid YAML \(.*\)",
    ),
    (
        "duplicated provider",
        "version: 1\nproviders:\n  p: {base_url: 'http://h/v1', model: m}\n"
        "  p: {base_url: 'http://i/v1', model: n}\n",
        r": line 4: not valid YAML \(duplicated key 'p'\)",
    ),
    ("not a mapping", "- a\n- b\n", r": expected a mapping with a 'providers' key"),
]


@pytest.mark.parametrize("what,text,expected", CASES, ids=[c[0] for c in CASES])
def test_invalid_file_is_one_line(tmp_path: Path, what: str, text: str, expected: str) -> None:
    msg = _load(tmp_path, text)
    assert re.fullmatch(expected, msg), msg


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no such file \(pass --providers PATH\)"):
        load_providers(tmp_path / "nope.yaml")


def test_base_url_env_must_be_http(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_URL", f"ftp://h/v1?key={FAKE_KEY}")
    msg = _load(tmp_path, _entry(base_url_env="MY_URL"))
    assert (
        msg == ": provider 'p', field 'base_url_env': $MY_URL is not an http(s) URL (scheme 'ftp')"
    )
    monkeypatch.setenv("MY_URL", "http://")
    assert _load(tmp_path, _entry(base_url_env="MY_URL")).endswith("is no host in the URL")


def test_base_url_env_overrides_and_keeps_the_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_URL", "https://h.example/v1/?key=CANARYcfgquery01")
    (tmp_path / "providers.yaml").write_text(_entry(base_url_env="MY_URL"))
    p = load_providers(tmp_path / "providers.yaml")["p"]
    assert p.base_url == "https://h.example/v1"
    assert p.url("chat/completions") == "https://h.example/v1/chat/completions?key=CANARYcfgquery01"


def test_the_repository_providers_file_is_valid() -> None:
    root = Path(__file__).resolve().parents[1]
    providers = load_providers(root / "providers.yaml")
    assert providers and all(
        p.base_url.startswith(("http://", "https://")) for p in providers.values()
    )


# ------------------------------------------------------------------ through pytest


def _usage_error(tmp_path: Path, text: str | None, *args: str) -> str:
    if text is not None:
        (tmp_path / "providers.yaml").write_text(text)
    r = run_suite(tmp_path, *args)
    out = r.stdout + r.stderr
    assert r.returncode == 4, out  # pytest's usage error
    assert "Traceback" not in out and FAKE_KEY not in out, out
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), r.stderr
    return lines[0].removeprefix("ERROR: ")


@pytest.mark.parametrize(
    "what",
    ["wrong type", "a key literally in the file", "bad scheme", "bad YAML", "a key in the URL"],
)
def test_pytest_reports_a_bad_file_as_one_usage_line(tmp_path: Path, what: str) -> None:
    _, text, expected = next(c for c in CASES if c[0] == what)
    line = _usage_error(tmp_path, text)
    assert line.startswith(str(tmp_path / "providers.yaml"))
    assert re.fullmatch(expected, line.removeprefix(str(tmp_path / "providers.yaml"))), line


def test_pytest_unknown_provider_lists_valid_ones(tmp_path: Path) -> None:
    line = _usage_error(tmp_path, _entry(), "--provider", "nope")
    assert line == "unknown provider 'nope'; valid: good, p"


def test_pytest_unknown_scenario_lists_valid_ones(tmp_path: Path) -> None:
    line = _usage_error(tmp_path, _entry(), "--scenario", "nope")
    assert line.startswith("unknown scenario 'nope'; valid: single, parallel, ")


def test_pytest_base_url_env_not_http(tmp_path: Path) -> None:
    (tmp_path / "providers.yaml").write_text(_entry(base_url_env="MY_URL"))
    r = run_suite(tmp_path, env={"MY_URL": "file:///etc/passwd"})
    assert r.returncode == 4 and "Traceback" not in r.stdout + r.stderr
    assert r.stderr.strip() == (
        f"ERROR: {tmp_path / 'providers.yaml'}: provider 'p', field "
        "'base_url_env': $MY_URL is not an http(s) URL (scheme 'file')"
    )


def test_unset_key_skips_that_provider_and_the_others_run(tmp_path: Path) -> None:
    with fault_server() as fs:
        entries = {
            "openai": {
                "base_url": fs.base_url("ok"),
                "model": "reference",
                "api_key_env": "OPENAI_API_KEY",
            },
            "local": {"base_url": fs.base_url("ok"), "model": "reference", "api_key_env": None},
        }
        (tmp_path / "providers.yaml").write_text(providers_yaml(entries))
        r = run_suite(
            tmp_path,
            "--record-mode=all",
            "-rs",
            "--scenario",
            "single",
            "--scenario",
            "parallel",
            env={"OPENAI_API_KEY": ""},
        )
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "Traceback" not in out, out
    assert "2 passed, 2 skipped" in out, out
    assert re.search(r"SKIPPED \[2\] .*openai: set OPENAI_API_KEY to run it", out), out
    cells = [json.loads(p.read_text()) for p in (tmp_path / "reports/results").glob("*.json")]
    assert sorted((c["column"], c["verdict"]) for c in cells) == [("local", "conforms")] * 2
