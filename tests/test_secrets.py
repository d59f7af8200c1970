"""Keys never reach a file, a log line, an error message or pytest's output.

The proof is a canary run: the real suite in a subprocess records and replays against a
server that echoes the caller's key back on every path it can (response headers, a
cookie, an SSE comment, a content delta, an extra chunk field, tool-call arguments split
across two fragments, an error body quoting the key and the URL), with the key sent as a
Bearer token, an ``api-key`` header, an ``x-api-key`` header and a ``?key=`` query
parameter; live logging at DEBUG level and ``--showlocals`` are on. Then every byte under
the temporary directory and everything printed is searched for the canaries.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import yaml
from faults import FaultServer, fault_server, providers_yaml, run_suite
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance import secrets
from conformance.providers import ConfigError, Provider, provider_from_entry

CANARY_BEARER = "CANARYbearer7f3a9c01d2"
CANARY_APIKEY = "CANARYapikey55e1b7c4aa"
CANARY_XAPIKEY = "CANARYxapikey9d0c2e6f1b"
CANARY_QUERY = "CANARYquery3b8d4f2a6c"
CANARY_QUERY2 = "CANARYquerytwo4e7a1c9b"
# Credentials in the other places a URL or a configuration can carry one (issue 16):
CANARY_USER = "CANARYuseronly8c2e5a7f1d"  # http://TOKEN@host: user info without a password
CANARY_BASIC_USER = "CANARYbasicuser3f9a1e7c"  # http://USER:PASS@host, sent as Basic
CANARY_BASIC_PASS = "CANARYbasicpass6d2b8f4a"
CANARY_SUBKEY = "CANARYsubkey9e4c7a2b5d"  # ?subscription-key=… (not a "key" parameter)
CANARY_HEADER = "CANARYheader2a7d5f9c3e"  # Ocp-Apim-Subscription-Key from headers_env
CANARIES = (
    CANARY_BEARER,
    CANARY_APIKEY,
    CANARY_XAPIKEY,
    CANARY_QUERY,
    CANARY_QUERY2,
    CANARY_USER,
    CANARY_BASIC_USER,
    CANARY_BASIC_PASS,
    CANARY_SUBKEY,
    CANARY_HEADER,
)


@pytest.fixture(autouse=True)
def _forget_canaries() -> Iterator[None]:
    yield
    secrets.forget()


def _forms(canary: str) -> dict[bytes, str]:
    """Every 12-character piece of a canary, plain, URL-encoded, hex and base64 (each of
    the three alignments a piece can have inside a longer encoded text, such as the
    ``user:password`` of a Basic credential): what a leak can look like."""
    out: dict[bytes, str] = {}
    for i in range(len(canary) - 11):
        piece = canary[i : i + 12].encode()
        out[piece] = canary
        out[quote(piece, safe="").encode()] = canary
        out[piece.hex().encode()] = canary
        out[piece.hex().upper().encode()] = canary
        out[base64.b64encode(piece)] = canary  # aligned: every 3-byte group is whole
    return out


FORMS: dict[bytes, str] = {}
for _c in CANARIES:
    FORMS.update(_forms(_c))


def _leaks(root: Path, texts: dict[str, str]) -> list[str]:
    found = set()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            data += b"\n" + _maybe_gunzip(data)
            found |= {
                f"{p.relative_to(root)}: {c} ({form.decode()})"
                for form, c in FORMS.items()
                if form in data
            }
    for name, text in texts.items():
        data = text.encode("utf-8", "surrogateescape")
        found |= {
            f"<{name}>: {c} ({form.decode()}): "
            + data[max(0, (i := data.find(form)) - 60) : i + 60].decode("utf-8", "replace")
            for form, c in FORMS.items()
            if form in data
        }
    return sorted(found)


def _maybe_gunzip(data: bytes) -> bytes:
    try:
        return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else b""
    except OSError:
        return b""


def _entries(fs: FaultServer) -> dict[str, dict[str, Any]]:
    lim = {"first_byte_timeout": 5, "idle_timeout": 5, "total_timeout": 10}

    def e(fault: str, env: str = "CANARY_BEARER", auth: str = "bearer", **kw: Any) -> dict:
        return {
            "base_url": fs.base_url(fault),
            "model": "reference",
            "api_key_env": env,
            "auth": auth,
            "limits": lim,
            "retries": {"max": 0},
            **kw,
        }

    return {
        "echo-bearer": e("echo"),
        "echo-apikey": e("echo", "CANARY_APIKEY", "api-key"),
        "echo-xapikey": e("echo", "CANARY_XAPIKEY", "x-api-key"),
        "echo-gzip": e("echo", base_url_env="CANARY_GZIP_URL"),
        "error-bearer": e("echo-401"),
        "error-apikey": e("echo-401", "CANARY_APIKEY", "api-key"),
        # The key in the query: the URL comes from the environment (base_url_env), as
        # providers.yaml refuses a key in a URL written in the file.
        "query-echo": e("echo", base_url_env="CANARY_QUERY_URL", api_key_env=None),
        "query-error": e("echo-401", base_url_env="CANARY_QUERY2_URL", api_key_env=None),
        # user info alone (a token as the user name), user and password (sent as Basic),
        # a key parameter outside any fixed list, a credential header from the environment
        "cred-userinfo": e("echo", base_url_env="CANARY_USER_URL", api_key_env=None),
        "cred-basic": e("echo-401", base_url_env="CANARY_BASIC_URL", api_key_env=None),
        "cred-query": e("echo", base_url_env="CANARY_SUBKEY_URL", api_key_env=None),
        "cred-header": e(
            "echo",
            api_key_env=None,
            headers={"X-Title": "conformance canary run"},
            headers_env={"Ocp-Apim-Subscription-Key": "CANARY_HEADER"},
        ),
    }


def _with_userinfo(url: str, userinfo: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{userinfo}@{rest}"


def test_canaries_never_leak_record_and_replay(tmp_path: Path) -> None:
    with fault_server() as fs:
        (tmp_path / "providers.yaml").write_text(providers_yaml(_entries(fs)))
        env = {
            "CANARY_BEARER": CANARY_BEARER,
            "CANARY_APIKEY": CANARY_APIKEY,
            "CANARY_XAPIKEY": CANARY_XAPIKEY,
            "CANARY_GZIP_URL": fs.base_url("echo", query="gzip=1"),
            "CANARY_QUERY_URL": fs.base_url("echo", query=f"key={CANARY_QUERY}"),
            "CANARY_QUERY2_URL": fs.base_url("echo-401", query=f"api_key={CANARY_QUERY2}"),
            "CANARY_USER_URL": _with_userinfo(fs.base_url("echo"), CANARY_USER),
            "CANARY_BASIC_URL": _with_userinfo(
                fs.base_url("echo-401"), f"{CANARY_BASIC_USER}:{CANARY_BASIC_PASS}"
            ),
            "CANARY_SUBKEY_URL": fs.base_url(
                "echo", query=f"api-version=2024-10-21&subscription-key={CANARY_SUBKEY}"
            ),
            "CANARY_HEADER": CANARY_HEADER,
        }
        loud = [
            "-vv",
            "-l",
            "--tb=long",
            "-rA",
            "-o",
            "log_cli=true",
            "-o",
            "log_cli_level=DEBUG",
            "--log-level=DEBUG",
            "--scenario",
            "single",
            "--scenario",
            "round-trip",
        ]
        rec = run_suite(tmp_path, "--record-mode=all", *loud, env=env)
        seen_keys = (
            {h.headers.get("authorization", "").removeprefix("Bearer ") for h in fs.hits}
            | {h.headers.get("api-key") for h in fs.hits}
            | {h.headers.get("x-api-key") for h in fs.hits}
            | {h.query.get("key") for h in fs.hits}
        )
        seen_keys |= {h.query.get("subscription-key") for h in fs.hits}
        seen_keys |= {h.headers.get("ocp-apim-subscription-key") for h in fs.hits}
        seen_keys |= {
            base64.b64decode(a[6:]).decode()
            for h in fs.hits
            if (a := h.headers.get("authorization", "")).startswith("Basic ")
        }
    # the keys did travel (the test would prove nothing otherwise)
    assert {
        CANARY_BEARER,
        CANARY_APIKEY,
        CANARY_XAPIKEY,
        CANARY_QUERY,
        CANARY_SUBKEY,
        CANARY_HEADER,
        f"{CANARY_USER}:",
        f"{CANARY_BASIC_USER}:{CANARY_BASIC_PASS}",
    } <= seen_keys, seen_keys
    out = rec.stdout + rec.stderr
    assert "Traceback" not in out, out[-3000:]
    assert "HTTP Request: POST" in out, "live DEBUG logging must be on for this proof"
    cells = [json.loads(p.read_text()) for p in (tmp_path / "reports/results").glob("*.json")]
    assert len(cells) == 24
    echoed = [
        c
        for c in cells
        if c["column"].startswith(("echo", "query-echo", "cred-"))
        and c["column"] != "cred-basic"
        and c["row"] == "single"
    ]
    assert all(c["verdict"] == "quirk" for c in echoed), [
        (c["column"], c["verdict"], c["reason"]) for c in echoed
    ]
    # the key split across two argument fragments was redacted piece by piece
    assert all(
        any(
            tc["arguments"] == '{"city": "<redacted><redacted>"}'
            for tc in c["tool_calls"]["robust"]
        )
        for c in echoed
    ), [c["tool_calls"]["robust"] for c in echoed]
    errors = [
        c
        for c in cells
        if c["column"].endswith("error")
        or c["column"].startswith("error")
        or c["column"] == "cred-basic"
    ]
    assert errors and all(c["verdict"] == "error" and "<redacted>" in c["reason"] for c in errors)

    # replay (no server, keys still set so that they are known to the redactor)
    rep = run_suite(tmp_path, "--record-mode=none", *loud, env=env)
    assert "Traceback" not in rep.stdout + rep.stderr
    assert "replay: the cassette has no recorded answer" not in rep.stdout
    leaks = _leaks(
        tmp_path,
        {
            "record stdout": rec.stdout,
            "record stderr": rec.stderr,
            "replay stdout": rep.stdout,
            "replay stderr": rep.stderr,
        },
    )
    assert not leaks, leaks

    # cassettes hold no credential header and no key-looking query parameter at all
    for p in (tmp_path / "cassettes").rglob("*.yaml"):
        doc = yaml.safe_load(p.read_text())
        for it in doc["interactions"]:
            for part in (it["request"], it["response"]):
                names = {h.lower() for h in part.get("headers") or {}}
                assert not names & set(secrets.SECRET_HEADERS), (p, names)
            assert "key=" not in it["request"]["uri"], it["request"]["uri"]
            assert "@" not in it["request"]["uri"], it["request"]["uri"]
            assert "subscription-key" not in str(it["request"]["headers"]).lower()
    matrix = json.loads((tmp_path / "reports/quirks-matrix.json").read_text())
    assert all("key" not in (c.get("base_url") or "") for c in matrix["columns"])
    assert all("@" not in (c.get("base_url") or "") for c in matrix["columns"])


def test_replay_without_keys_set_also_stays_clean(tmp_path: Path) -> None:
    """A replay in CI has no key variables at all: nothing to leak, nothing breaks."""
    with fault_server() as fs:
        entries = {
            "echo": {
                "base_url": fs.base_url("echo"),
                "model": "reference",
                "api_key_env": "CANARY_BEARER",
            }
        }
        (tmp_path / "providers.yaml").write_text(providers_yaml(entries))
        rec = run_suite(
            tmp_path,
            "--record-mode=all",
            "--scenario",
            "single",
            env={"CANARY_BEARER": CANARY_BEARER},
        )
        assert "Traceback" not in rec.stdout + rec.stderr
    rep = run_suite(tmp_path, "--scenario", "single", env={})
    assert "Traceback" not in rep.stdout + rep.stderr
    assert "1 failed" in rep.stdout or "1 passed" in rep.stdout, rep.stdout[-2000:]
    assert not _leaks(
        tmp_path, {"stdout": rep.stdout + rec.stdout, "stderr": rep.stderr + rec.stderr}
    )


# ------------------------------------------------------------------ units


def test_redact_known_shaped_query_and_userinfo() -> None:
    secrets.register("CANARYunit0123456")
    text = (
        "k=CANARYunit0123456 sk-abcdefghijklmnopqrstuv Bearer abc.def-ghi_123 "
        "http://h/v1?x=1&key=zzz9&api_key=yyy8#f https://user:pa55word@h/ AIza" + "A" * 35
    )
    out = secrets.redact(text)
    for gone in (
        "CANARYunit0123456",
        "sk-abc",
        "abc.def-ghi_123",
        "zzz9",
        "yyy8",
        "pa55word",
        "AIzaAAA",
    ):
        assert gone not in out, out
    assert "x=1" in out and "https://<redacted>@h/" in out


@pytest.mark.parametrize(
    "text, gone",
    [
        ("http://CANARYuseronly8c2e5a7f1d@h/v1", "CANARYuseronly8c2e5a7f1d"),  # a user alone
        ("POST https://h/v1?api-version=1&subscription-key=CANARYsub1234 ", "CANARYsub1234"),
        ("GET /v1?Ocp-Apim-Subscription-Key=CANARYocp1234&x=1", "CANARYocp1234"),
        ("authorization: Basic Q0FOQVJZdXNlcm9ubHk6", "Q0FOQVJZdXNlcm9ubHk6"),
    ],
)
def test_redact_credentials_it_was_not_told_about(text: str, gone: str) -> None:
    """Shapes redacted whether or not the value was registered (a replay in CI, where no
    variable is set, prints the same text)."""
    assert gone not in secrets.redact(text)


def test_redaction_keeps_what_is_not_a_credential() -> None:
    text = (
        "https://h/v1?api-version=2024-10-21&x-ratelimit-remaining-tokens=5 "
        "mail me at a@b.example, path http://h/a@b"
    )
    assert secrets.redact(text) == text


def test_url_secrets_cover_every_credential_place() -> None:
    got = secrets.url_secrets(
        "http://us%40er:pa%3Ass@h/v1?api-version=2&subscription-key=k3y%2Fvalue&other=plainvalue"
    )
    # the user, the password (as written and decoded), Basic's base64, every query value
    # but api-version's (as written and decoded)
    for want in (
        "us%40er",
        "us@er",
        "pa%3Ass",
        "pa:ss",
        "dXNAZXI6cGE6c3M=",
        "k3y/value",
        "k3y%2Fvalue",
        "plainvalue",
    ):
        assert want in got, (want, got)
    assert "2" not in got


@pytest.mark.parametrize(
    "url, user, password",
    [
        (f"http://{CANARY_USER}@h.example/v1", CANARY_USER, ""),
        (
            f"http://{CANARY_BASIC_USER}:{CANARY_BASIC_PASS}@h.example/v1",
            CANARY_BASIC_USER,
            CANARY_BASIC_PASS,
        ),
    ],
)
def test_user_info_travels_as_basic_and_never_in_a_uri(url: str, user: str, password: str) -> None:
    p = Provider("p", url, "m")
    assert p.url("chat/completions") == "http://h.example/v1/chat/completions"
    assert p.base_url == "http://h.example/v1"
    basic = base64.b64encode(f"{user}:{password}".encode()).decode()
    assert p.auth_headers() == {"Authorization": f"Basic {basic}"}
    assert {user, basic} <= secrets.known()
    assert secrets.redact(f"sent {basic} for {user}") == "sent <redacted> for <redacted>"


def test_headers_env_are_sent_registered_and_required(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = {
        "base_url": "http://h.example/v1",
        "model": "m",
        "headers": {"X-Title": "a run"},
        "headers_env": {"Ocp-Apim-Subscription-Key": "CANARY_HEADER"},
    }
    monkeypatch.delenv("CANARY_HEADER", raising=False)
    p = provider_from_entry("p", entry)
    assert p.missing_key_reason() == "set CANARY_HEADER to run it"
    monkeypatch.setenv("CANARY_HEADER", CANARY_HEADER)
    p = provider_from_entry("p", entry)
    assert p.missing_key_reason() is None
    assert p.auth_headers() == {"Ocp-Apim-Subscription-Key": CANARY_HEADER}
    assert p.headers == {"X-Title": "a run"}
    assert CANARY_HEADER in secrets.known()


def test_a_query_credential_from_the_environment_is_registered_and_hidden(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(
        "AZ_URL", f"https://h.example/v1?api-version=2024-10-21&subscription-key={CANARY_SUBKEY}"
    )
    p = provider_from_entry(
        "p", {"base_url": "http://x/v1", "base_url_env": "AZ_URL", "model": "m"}
    )
    assert p.base_url == "https://h.example/v1?api-version=2024-10-21"
    assert CANARY_SUBKEY in secrets.known()
    assert p.url("chat/completions").endswith(f"subscription-key={CANARY_SUBKEY}")


@pytest.mark.parametrize(
    "entry, field, hint",
    [
        ({"base_url": f"http://{CANARY_USER}@h.example/v1"}, "base_url", "base_url_env"),
        ({"base_url": f"http://u:{CANARY_BASIC_PASS}@h.example/v1"}, "base_url", "base_url_env"),
        (
            {"base_url": f"https://h.example/v1?subscription-key={CANARY_SUBKEY}"},
            "base_url",
            "base_url_env",
        ),
        ({"base_url": "https://h.example/v1?tenant=plain"}, "base_url", "base_url_env"),
        (
            {"headers": {"Ocp-Apim-Subscription-Key": "plainvalue"}},
            "headers.Ocp-Apim-Subscription-Key",
            "headers_env: {Ocp-Apim-Subscription-Key: VAR}",
        ),
        (
            {"headers": {"X-Custom": "Bearer abcdefghijklmnop"}},
            "headers.X-Custom",
            "headers_env: {X-Custom: VAR}",
        ),
        (
            {"headers_env": {"X-Key": "not a variable name"}},
            "headers_env.X-Key",
            "NAME of an environment variable",
        ),
    ],
)
def test_a_credential_in_the_file_is_refused_with_one_line(
    tmp_path: Path, entry: dict[str, Any], field: str, hint: str
) -> None:
    from conformance.providers import load_providers

    e = {"base_url": "https://h.example/v1", "model": "m", **entry}
    path = tmp_path / "providers.yaml"
    path.write_text(providers_yaml({"p": e}))
    with pytest.raises(ConfigError) as err:
        load_providers(path)
    msg = str(err.value)
    assert "\n" not in msg and f"provider 'p', field '{field}'" in msg and hint in msg, msg
    for c in (CANARY_USER, CANARY_BASIC_PASS, CANARY_SUBKEY, "plainvalue", "abcdefghijklmnop"):
        assert c not in msg


def test_a_file_with_only_public_places_loads(tmp_path: Path) -> None:
    from conformance.providers import load_providers

    path = tmp_path / "providers.yaml"
    path.write_text(
        providers_yaml(
            {
                "p": {
                    "base_url": "https://h.example/v1?api-version=2024-10-21",
                    "model": "m",
                    "headers": {"X-Title": "conformance", "HTTP-Referer": "https://example.org"},
                }
            }
        )
    )
    p = load_providers(path)["p"]
    assert p.base_url == "https://h.example/v1?api-version=2024-10-21"
    assert p.headers == {"X-Title": "conformance", "HTTP-Referer": "https://example.org"}


def test_redaction_keeps_json_valid() -> None:
    secrets.register("CANARYunit0123456")
    doc = {"a": "CANARYunit0123456", "u": 'https://h/?token=abc\\"d', "b": "Bearer xyzxyzxyz"}
    out = secrets.redact(json.dumps(doc))
    assert json.loads(out)["a"] == "<redacted>"


def test_redact_bytes_keeps_invalid_utf8() -> None:
    secrets.register("CANARYunit0123456")
    raw = b"\xff\xfe data: CANARYunit0123456 \xc3("
    assert secrets.redact_bytes(raw) == b"\xff\xfe data: <redacted> \xc3("
    assert secrets.redact_bytes(b"\xff plain") == b"\xff plain"


def test_provider_never_shows_its_endpoint_credentials() -> None:
    p = Provider("p", f"https://h.example/v1?key={CANARY_QUERY}&api-version=2", "m")
    assert p.base_url == "https://h.example/v1?api-version=2"
    assert CANARY_QUERY not in repr(p) and CANARY_QUERY not in str(p.__dict__.get("base_url"))
    assert p.url("chat/completions") == (
        f"https://h.example/v1/chat/completions?key={CANARY_QUERY}&api-version=2"
    )
    assert CANARY_QUERY in secrets.known()


def test_config_error_never_echoes_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BAD_URL", f"ftp://h/v1?key={CANARY_QUERY}")
    with pytest.raises(ConfigError) as e:
        provider_from_entry(
            "p", {"base_url": "http://x/v1", "base_url_env": "BAD_URL", "model": "m"}
        )
    assert CANARY_QUERY not in str(e.value) and "BAD_URL" in str(e.value)


def test_log_records_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    secrets.register("CANARYlog0123456")
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("httpx").info("HTTP Request: POST %s", "http://h/?key=CANARYlog0123456")
        logging.getLogger("conformance.x").debug("token %s", "CANARYlog0123456")
        try:
            raise ValueError("bad key CANARYlog0123456")
        except ValueError:
            logging.getLogger("vcr").exception("failed")
    assert "CANARYlog0123456" not in caplog.text, caplog.text
    assert caplog.text.count("<redacted>") >= 3


def test_exchange_reasons_and_request_record_hold_no_key() -> None:
    from faults import closed_port

    from conformance.transport import exchange, make_client

    url = f"http://127.0.0.1:{closed_port()}/v1/chat/completions?key={CANARY_QUERY}"
    with make_client() as client:
        t = exchange(
            client, url, {"stream": True}, auth_headers={"Authorization": f"Bearer {CANARY_BEARER}"}
        )
    dump = json.dumps({"req": t.request, "err": t.transport_error, "meta": t.meta})
    assert t.transport_error == "connection refused"
    assert CANARY_QUERY not in dump and CANARY_BEARER not in dump


# ------------------------------------------------------------------ atomic writes


def _no_tmp(d: Path) -> None:
    assert sorted(p.name for p in d.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
def test_write_atomic_failure_leaves_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    target = tmp_path / "quirks-matrix.json"
    target.write_text("OLD\n")

    def boom(*a: Any, **k: Any) -> None:
        raise OSError(28, "No space left on device")

    if where == "write":  # the failure happens in the middle of the data
        text = "x" * 100_000 + "\ud800"  # a lone surrogate: not encodable
        with pytest.raises(UnicodeEncodeError):
            secrets.write_atomic(target, text)
    else:
        monkeypatch.setattr(os, where, boom)
        with pytest.raises(OSError):
            secrets.write_atomic(target, "NEW\n" * 10_000)
        monkeypatch.undo()
    assert target.read_text() == "OLD\n"
    _no_tmp(tmp_path)
    secrets.write_atomic(target, "NEW\n")
    assert target.read_text() == "NEW\n"
    _no_tmp(tmp_path)


def test_results_and_cassettes_use_the_atomic_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vcr.serializers import yamlserializer

    from conformance.cassettes import AtomicPersister
    from conformance.matrix import atomic_write
    from conformance.pytest_plugin import write_cell

    cell = tmp_path / "results" / "p__single.json"
    write_cell(tmp_path, {"column": "p", "row": "single", "verdict": "conforms"})
    cassette = tmp_path / "cassettes" / "p" / "single.yaml"
    AtomicPersister.save_cassette(cassette, {"requests": [], "responses": []}, yamlserializer)
    old = {p: p.read_bytes() for p in (cell, cassette)}

    def crash(*a: Any, **k: Any) -> None:
        raise KeyboardInterrupt  # a crash, not an error: the cleanup must still run

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        write_cell(tmp_path, {"column": "p", "row": "single", "verdict": "fails"})
    with pytest.raises(KeyboardInterrupt):
        AtomicPersister.save_cassette(cassette, {"requests": [], "responses": []}, yamlserializer)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(tmp_path / "quirks-matrix.json", "{}")
    monkeypatch.undo()
    assert {p: p.read_bytes() for p in (cell, cassette)} == old
    for d in (cell.parent, cassette.parent, tmp_path):
        _no_tmp(d)
    assert not (tmp_path / "quirks-matrix.json").exists()


def test_the_atomic_writer_redacts(tmp_path: Path) -> None:
    secrets.register("CANARYunit0123456")
    secrets.write_atomic(tmp_path / "f.txt", "a CANARYunit0123456 b")
    secrets.write_atomic(tmp_path / "g.bin", b"\xff CANARYunit0123456")
    assert (tmp_path / "f.txt").read_text() == "a <redacted> b"
    assert (tmp_path / "g.bin").read_bytes() == b"\xff <redacted>"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 22), max_size=5),
    st.sampled_from(["content", "arguments"]),
    st.text(max_size=5),
    st.booleans(),
)
def test_a_key_split_across_events_is_redacted(
    cuts: list[int], field: str, around: str, cr: bool
) -> None:
    """Wherever a server cuts the key between events, neither the body nor what a client
    assembles from it holds the key."""
    from conformance.analysis import analyze_bytes

    key = "CANARYunit0123456"
    secrets.register(key)
    text = f"{around}{key}{around}"
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    pieces = [text[a:b] for a, b in zip(points, points[1:], strict=False)]
    nl = "\r" if cr else "\n"  # CR alone is an SSE line terminator too

    def delta(piece: str) -> dict[str, Any]:
        if field == "content":
            return {"content": piece}
        return {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}

    events = (
        [
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "f", "arguments": ""},
                                }
                            ]
                        },
                    }
                ]
            }
        ]
        if field == "arguments"
        else []
    )
    events += [{"choices": [{"index": 0, "delta": delta(p)}]} for p in pieces]
    raw = "".join(f"data: {json.dumps(e)}{nl}{nl}" for e in events).encode()
    out = secrets.redact_bytes(raw)
    assert key.encode() not in out
    r = analyze_bytes(out)
    assert key not in json.dumps(r.to_json())
    joined = "".join(
        json.loads(line[5:])["choices"][0]["delta"].get("content") or ""
        for line in out.decode().split(nl)
        if line.startswith("data:")
    )
    assert key not in joined
