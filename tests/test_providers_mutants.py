"""providers.yaml and the command-line options that make a provider, pinned by what a user
sees: the endpoint a request goes to, the credential headers it carries, the reason a
column is skipped or a capability missing, and each refusal's one line (the file, the
entry, the field)."""

from __future__ import annotations

import re
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance import providers as P
from conformance.providers import ConfigError, Provider, load_providers

OK = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}


def load_one(tmp_path: Path, **entry: Any) -> Provider:
    p = tmp_path / "providers.yaml"
    p.write_text(yaml.safe_dump({"version": 1, "providers": {"p": {**OK, **entry}}}))
    return load_providers(p)["p"]


def refusal(tmp_path: Path, **entry: Any) -> str:
    p = tmp_path / "providers.yaml"
    p.write_text(yaml.safe_dump({"version": 1, "providers": {"p": {**OK, **entry}}}))
    with pytest.raises(ConfigError) as e:
        load_providers(p)
    return str(e.value).removeprefix(str(p))


# ------------------------------------------------------------------ the endpoint


def test_the_public_url_drops_user_info_and_every_query_but_api_version() -> None:
    url = "https://user:pw@h.example/v1?api-version=2024-06-01&key=abcdef123456&x=1"
    assert P.public_url(url) == "https://h.example/v1?api-version=2024-06-01"
    assert (
        P.public_url("https://h.example/v1?API-VERSION=1") == "https://h.example/v1?API-VERSION=1"
    )


def test_a_request_url_keeps_the_query_at_the_end_and_never_the_user_info() -> None:
    p = Provider("p", "https://u:pw@h.example/v1/?key=QUERYSECRET01", "m")
    assert p.url("/chat/completions") == "https://h.example/v1/chat/completions?key=QUERYSECRET01"
    assert p.url("models") == "https://h.example/v1/models?key=QUERYSECRET01"
    assert p.base_url == "https://h.example/v1"
    assert p.endpoint == "https://u:pw@h.example/v1?key=QUERYSECRET01"


def test_capabilities_are_supported_unless_declared_otherwise() -> None:
    p = Provider("p", "http://h/v1", "m", capabilities={"strict": False, "parallel_calls": "no"})
    assert p.supports("stream_options")
    assert not p.supports("strict")
    assert not p.supports("parallel_calls")  # a message is a missing capability
    assert p.unsupported_reason("strict") == "p declares no strict"
    assert p.unsupported_reason("parallel_calls") == "p declares no parallel calls: no"


def test_expected_quirks_apply_to_their_scenarios_only() -> None:
    p = Provider(
        "p",
        "http://h/v1",
        "m",
        expected_quirks={"Q-A": {"reason": "all"}, "Q-B": {"reason": "one", "scenarios": ["s1"]}},
    )
    assert p.expects("Q-A", "s9") == "all"
    assert p.expects("Q-B", "s1") == "one"
    assert p.expects("Q-B", "s2") is None
    assert p.expects("Q-C", "s1") is None


def test_the_server_version_comes_from_its_variable_when_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    p = Provider("p", "http://h/v1", "m", server={"version": "1.0", "version_env": "SRV_V"})
    monkeypatch.delenv("SRV_V", raising=False)
    assert p.server_version == "1.0"
    monkeypatch.setenv("SRV_V", "2.0")
    assert p.server_version == "2.0"
    assert Provider("p", "http://h/v1", "m").server_version is None


# ------------------------------------------------------------------ credentials


def test_a_missing_key_names_the_first_unset_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    p = Provider("p", "http://h/v1", "m", api_key_env="K_MAIN", headers_env={"X-Org": "K_ORG"})
    monkeypatch.delenv("K_MAIN", raising=False)
    monkeypatch.delenv("K_ORG", raising=False)
    assert p.missing_key_reason() == "set K_MAIN to run it"
    monkeypatch.setenv("K_MAIN", "v" * 12)
    assert p.missing_key_reason() == "set K_ORG to run it"
    monkeypatch.setenv("K_ORG", "o" * 12)
    assert p.missing_key_reason() is None
    assert Provider("p", "http://h/v1", "m").missing_key_reason() is None
    assert Provider("p", "http://h/v1", "m").api_key() is None


@pytest.mark.parametrize(
    "auth,header,value",
    [
        ("bearer", "Authorization", "Bearer KEYVALUE0001"),
        ("api-key", "api-key", "KEYVALUE0001"),
        ("x-api-key", "x-api-key", "KEYVALUE0001"),
    ],
)
def test_the_key_travels_in_the_header_its_auth_names(
    monkeypatch: pytest.MonkeyPatch, auth: str, header: str, value: str
) -> None:
    monkeypatch.setenv("K_MAIN", "KEYVALUE0001")
    monkeypatch.setenv("K_ORG", "ORGVALUE0001")
    p = Provider(
        "p", "http://h/v1", "m", api_key_env="K_MAIN", auth=auth, headers_env={"X-Org": "K_ORG"}
    )
    assert p.auth_headers() == {header: value, "X-Org": "ORGVALUE0001"}


def test_user_info_travels_as_basic_unless_the_key_is_the_authorization(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import base64

    p = Provider("p", "https://us%40r:p%3Aw@h.example/v1", "m")
    token = base64.b64encode(b"us@r:p:w").decode()
    assert p.auth_headers() == {"Authorization": f"Basic {token}"}
    monkeypatch.setenv("K_MAIN", "KEYVALUE0001")
    p = Provider("p", "https://u:pw@h.example/v1", "m", api_key_env="K_MAIN")
    assert p.auth_headers() == {"Authorization": "Bearer KEYVALUE0001"}
    p = Provider("p", "https://u:pw@h.example/v1", "m", api_key_env="K_MAIN", auth="api-key")
    assert p.auth_headers()["api-key"] == "KEYVALUE0001"
    assert p.auth_headers()["Authorization"].startswith("Basic ")
    monkeypatch.delenv("K_MAIN")
    assert Provider("p", "http://h/v1", "m", headers_env={"X-Org": "K_MAIN"}).auth_headers() == {}


# ------------------------------------------------------------------ loading a file


def test_a_loaded_entry_keeps_every_field_and_its_defaults(tmp_path: Path) -> None:
    p = load_one(
        tmp_path,
        expected_quirks={
            "Q-ID-ABSENT": "documented",
            "Q-INDEX-ALL-ZERO": {"reason": "r", "scenarios": ["s"]},
        },
        capabilities={"strict": False},
        concurrency=2,
        headers={"X-Trace": "on"},
    )
    assert (p.name, p.label, p.model, p.auth, p.kind, p.concurrency) == (
        "p",
        "p",
        "m",
        "bearer",
        "provider",
        2,
    )
    assert p.expected_quirks == {
        "Q-ID-ABSENT": {"reason": "documented"},
        "Q-INDEX-ALL-ZERO": {"reason": "r", "scenarios": ["s"]},
    }
    assert p.headers == {"X-Trace": "on"}
    assert not p.supports("strict")
    q = load_one(tmp_path, label="Shown", record_command="make rec")
    assert (q.label, q.record_command, q.concurrency) == ("Shown", "make rec", 4)


def test_the_default_record_command_fits_where_the_user_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert P.default_record_command("p", "my.yaml") == (
        "toolcall-conformance run --providers my.yaml --provider p"
    )
    (tmp_path / "noxfile.py").write_text("def other():\n    pass\n")
    assert P.default_record_command("p", "x").startswith("toolcall-conformance run")
    (tmp_path / "noxfile.py").write_text("def live(session):\n    pass\n")
    assert P.default_record_command("p", "x") == "python3 noxw -s live -- --provider p"


def test_base_url_env_wins_when_set_and_the_file_url_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MY_URL", raising=False)
    assert load_one(tmp_path, base_url_env="MY_URL").base_url == "http://127.0.0.1:9/v1"
    monkeypatch.setenv("MY_URL", "  https://other.example/v2  ")
    assert load_one(tmp_path, base_url_env="MY_URL").base_url == "https://other.example/v2"


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/v 1", "https://h.example/v1 "])
def test_a_file_url_with_white_space_is_refused(tmp_path: Path, url: str) -> None:
    assert refusal(tmp_path, base_url=url) == (
        ": provider 'p', field 'base_url': white space in the URL"
    )


def test_a_file_url_without_a_host_is_refused(tmp_path: Path) -> None:
    assert refusal(tmp_path, base_url="http:///v1") == (
        ": provider 'p', field 'base_url': no host in the URL"
    )


@pytest.mark.parametrize(
    "entry,field,why",
    [
        ({"concurrency": 1025}, "concurrency", "at most 1024"),
        (
            {"limits": {"total_timeout": 86_401}},
            "limits.total_timeout",
            "seconds from 0 to 86400 (got 86401)",
        ),
        (
            {"limits": {"idle_timeout": float("inf")}},
            "limits.idle_timeout",
            "seconds from 0 to 86400 (got inf)",
        ),
        (
            {"limits": {"max_bytes": (1 << 34) + 1}},
            "limits.max_bytes",
            "bytes from 0 to 1.71799e+10",
        ),
        ({"retries": {"max": 101}}, "retries.max", "retries from 0 to 100 (got 101)"),
        (
            {"retries": {"base_delay": 86_400.5}},
            "retries.base_delay",
            "seconds from 0 to 86400 (got 86400.5)",
        ),
    ],
)
def test_absurd_numbers_are_refused_with_their_unit(
    tmp_path: Path, entry: dict[str, Any], field: str, why: str
) -> None:
    msg = refusal(tmp_path, **entry)
    assert msg.startswith(f": provider 'p', field '{field}': "), msg
    assert why in msg, msg
    if field == "concurrency":
        assert msg == ": provider 'p', field 'concurrency': at most 1024"


def test_numbers_at_their_bounds_are_accepted() -> None:
    assert P._absurd_number({"concurrency": 1024}) is None
    assert P._absurd_number({"limits": {"total_timeout": 86_400, "max_bytes": 1 << 34}}) is None
    assert P._absurd_number({"limits": {"idle_timeout": 0.0}, "retries": {"max": 0}}) is None
    assert P._absurd_number({"limits": {"idle_timeout": -0.5}}) is not None
    assert P._absurd_number({"retries": {"max": -1}}) is not None
    assert P._absurd_number({"limits": {"idle_timeout": float("nan")}}) is not None
    assert P._absurd_number({"retries": {"on_status": [500], "max": True}}) is None


def test_an_unknown_field_near_a_known_one_is_named_with_it(tmp_path: Path) -> None:
    assert refusal(tmp_path, modle="m") == (
        ": provider 'p', field 'modle': unknown field 'modle' (did you mean 'model'?)"
    )
    msg = refusal(tmp_path, my_key_here="x")
    assert "name the environment variable that holds the key with api_key_env" in msg


def test_a_header_variable_must_be_a_name(tmp_path: Path) -> None:
    assert refusal(tmp_path, headers_env={"X-Org": "not a name"}) == (
        ": provider 'p', field 'headers_env.X-Org': must be the NAME of an environment "
        "variable (A-Z, 0-9, _), not its value"
    )


def test_an_expected_quirk_of_the_wrong_shape_says_what_is_expected(tmp_path: Path) -> None:
    assert refusal(tmp_path, expected_quirks={"Q-ID-ABSENT": 3}) == (
        ": provider 'p', field 'expected_quirks.Q-ID-ABSENT': must be a reason (text) or "
        "{reason: …, scenarios: […]}"
    )


def test_file_level_refusals(tmp_path: Path) -> None:
    p = tmp_path / "providers.yaml"
    p.write_text("version: 1\nproviders: {}\n")
    with pytest.raises(ConfigError, match=r": field 'providers': is empty$"):
        load_providers(p)
    p.write_text("version: 1\nproviders: {Bad Name: {base_url: 'http://h/v1', model: m}}\n")
    with pytest.raises(ConfigError, match=r": field 'providers': does not match \^\[a-z0-9\]"):
        load_providers(p)
    p.write_bytes(b"version: 1\nproviders: \xff\n")
    with pytest.raises(ConfigError, match=r"providers.yaml: not UTF-8 text$"):
        load_providers(p)
    with pytest.raises(ConfigError, match=r": is a directory, not a providers file$"):
        load_providers(tmp_path)


# ------------------------------------------------------------------ command-line options


def test_number_flags_are_finite_and_within_their_range() -> None:
    assert P.number_flag("--latency", "2.5", 10) == 2.5
    assert P.number_flag("--latency", "10", 10) == 10
    assert P.number_flag("--latency", "0", 10) == 0
    assert P.number_flag("--x", "1", 10, least=1) == 1
    for bad in ("inf", "nan", "-0.1", "10.5"):
        with pytest.raises(ConfigError) as e:
            P.number_flag("--latency", bad, 10)
        assert str(e.value) == f"--latency: must be a finite number from 0 to 10 (got {bad!r})"
    with pytest.raises(
        ConfigError, match=r"^--x: must be a finite number from 1 to 10 \(got '0.5'\)$"
    ):
        P.number_flag("--x", "0.5", 10, least=1)
    with pytest.raises(ConfigError, match=r"^--latency: not a number \('soon'\)$"):
        P.number_flag("--latency", "soon", 10)


def test_an_output_directory_that_cannot_take_files_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    assert P.output_dir_problem("--report-dir", f) == (
        f"--report-dir {f}: is a file, not a directory; pass a directory"
    )
    under = P.output_dir_problem("--report-dir", f / "sub")
    assert under is not None and under.startswith(f"--report-dir {f / 'sub'}: cannot be written (")
    assert under.endswith("); pass a directory you can write")
    new = tmp_path / "a" / "b"
    assert P.output_dir_problem("--report-dir", new) is None
    assert P.output_dir_problem("--report-dir", new) is None  # it exists now: still fine
    assert new.is_dir() and not list(new.iterdir())


def test_expect_quirk_options(monkeypatch: pytest.MonkeyPatch) -> None:
    assert P.parse_expect_quirk(" Q-ID-ABSENT = documented by them ") == (
        "Q-ID-ABSENT",
        "documented by them",
    )
    for bad in ("Q-ID-ABSENT", "Q-ID-ABSENT=", "Q-ID-ABSENT=  "):
        with pytest.raises(ConfigError) as e:
            P.parse_expect_quirk(bad)
        shown = " ".join(bad.split())  # one line, its spaces collapsed
        assert (
            str(e.value)
            == f"--expect-quirk {shown!r}: expected Q-ID=reason (say why it is accepted)"
        )
    with pytest.raises(ConfigError) as e:
        P.parse_expect_quirk("Q-ID-ABSNT=typo")
    assert (
        str(e.value) == "--expect-quirk: unknown quirk id 'Q-ID-ABSNT' (did you mean Q-ID-ABSENT?)"
    )
    with pytest.raises(ConfigError) as e:
        P.parse_expect_quirk("q-id-absent=lower case")
    assert str(e.value).startswith("--expect-quirk: unknown quirk id 'q-id-absent'")
    with pytest.raises(ConfigError) as e:
        P.parse_expect_quirk("ZZZZ=x")
    assert str(e.value) == "--expect-quirk: unknown quirk id 'ZZZZ'"
    ps = [Provider("a", "http://h/v1", "m"), Provider("b", "http://h/v1", "m")]
    P.apply_expected_quirks(ps, iter([("Q-ID-ABSENT", "r1"), ("Q-INDEX-ALL-ZERO", "r2")]))
    for p in ps:
        assert p.expected_quirks == {
            "Q-ID-ABSENT": {"reason": "r1"},
            "Q-INDEX-ALL-ZERO": {"reason": "r2"},
        }


def test_a_provider_from_options_is_named_after_its_model() -> None:
    p = P.provider_from_options("http://h.example/v1/", "Org/Model-7B.Q4", "MY_KEY")
    assert (p.name, p.label, p.model, p.api_key_env) == (
        "org-model-7b.q4",
        "Org/Model-7B.Q4",
        "Org/Model-7B.Q4",
        "MY_KEY",
    )
    assert p.record_command == (
        "toolcall-conformance run --base-url http://h.example/v1/ --model Org/Model-7B.Q4 --api-key-env MY_KEY"
    )
    p = P.provider_from_options("http://h.example/v1", "///", name=None)
    assert p.name == "server"
    assert p.record_command == "toolcall-conformance run --base-url http://h.example/v1 --model ///"
    assert P.provider_from_options("http://h/v1", "m", name="mine").name == "mine"


@pytest.mark.parametrize(
    "url,model,env,message",
    [
        ("http://h/v1", None, None, "--base-url needs --model NAME (the model to ask)"),
        ("http://h/v1", "", None, "--base-url needs --model NAME (the model to ask)"),
        ("ftp://h/v1", "m", None, "--base-url: not an http(s) URL (scheme 'ftp')"),
        ("http:///v1", "m", None, "--base-url: no host in the URL"),
        ("http://h/v1 ", "m", None, "--base-url: white space in the URL"),
        ("http://h/my v1", "m", None, "--base-url: white space in the URL"),
        (
            "https://h/v1?api_key=abcdef123456",
            "m",
            None,
            "--base-url: the URL carries a credential; pass the key in an environment "
            "variable named by --api-key-env",
        ),
        (
            "http://h/v1",
            "m",
            "sk-abc",
            "--api-key-env: must be the NAME of an environment variable (A-Z, 0-9, _), not its value",
        ),
    ],
)
def test_options_that_make_no_provider_are_refused(
    url: str, model: str | None, env: str | None, message: str
) -> None:
    with pytest.raises(ConfigError) as e:
        P.provider_from_options(url, model, env)
    assert str(e.value) == message


def test_select_keeps_file_order_takes_globs_and_lists_the_valid_names() -> None:
    ps = {n: Provider(n, "http://h/v1", "m") for n in ("b", "profile:x", "profile:y", "a[1]")}
    assert [p.name for p in P.select(ps, None)] == ["b", "profile:x", "profile:y", "a[1]"]
    assert [p.name for p in P.select(ps, ["a[1]", "profile:*"])] == [
        "profile:x",
        "profile:y",
        "a[1]",
    ]
    with pytest.raises(ConfigError) as e:
        P.select(ps, ["c"])
    assert str(e.value) == "unknown provider 'c'; valid: b, profile:x, profile:y, a[1]"
    many = {
        f"provider-{i:03d}": Provider(f"provider-{i:03d}", "http://h/v1", "m") for i in range(40)
    }
    with pytest.raises(ConfigError) as e:
        P.select(many, ["nope"])
    assert (
        str(e.value).endswith("…")
        and len(str(e.value)) == len("unknown provider 'nope'; valid: ") + 301
    )


ENTRY = "base_url: 'http://h/v1', model: m"
FILE_CASES = [
    (
        "version: 1\nfoo: 1\nproviders: {p: {%s}}\n",
        ": field 'foo': unknown field 'foo' (valid: providers, version)",
    ),
    (
        "version: 1\nproviders: {p: 3}\n",
        ": provider 'p', field '(entry)': expected object, got an integer",
    ),
    (
        "version: 1\nproviders: {p: {%s, extra_body: {stop: [a, 'sk-proj-CANARYabcdefghijklmnop123']}}}\n",
        ": provider 'p', field 'extra_body.stop.1': looks like an API key or credential; keys are "
        "never written in providers.yaml: name the environment variable that holds it with api_key_env",
    ),
    (
        "version: 1\nproviders: {p: {%s, headers: {X-Custom: 'sk-proj-CANARYabcdefghijklmnop123'}}}\n",
        ": provider 'p', field 'headers.X-Custom': credential headers are never written in "
        "providers.yaml: pass it from the environment with headers_env: {X-Custom: VAR} (or "
        "api_key_env with auth: bearer, api-key or x-api-key)",
    ),
    (
        "version: 1\nproviders: {p: {%s, headers: {X-Api-Key: 'abc'}}}\n",
        ": provider 'p', field 'headers.X-Api-Key': credential headers are never written in "
        "providers.yaml: pass it from the environment with headers_env: {X-Api-Key: VAR} (or "
        "api_key_env with auth: bearer, api-key or x-api-key)",
    ),
    (
        "version: 1\nproviders: !!python/object:object {}\n",
        ": line 2: refused: a Python tag (!!python/object:object); YAML files here are data and "
        "never build objects",
    ),
    (
        "version: 1\nproviders: {p: {%s, concurrency: 0}}\n",
        ": provider 'p', field 'concurrency': 0 is less than the minimum of 1",
    ),
    (
        "version: 1\nproviders: {p: {%s, server: {softwar: x}}}\n",
        ": provider 'p', field 'server.softwar': unknown field 'softwar' (did you mean 'software'?)",
    ),
    (
        "version: 1\nproviders: {p: {base_ulr: 'http://h/v1', model: m}}\n",
        ": provider 'p', field 'base_ulr': unknown field 'base_ulr' (did you mean 'base_url'?)",
    ),
    (
        "version: 1\nproviders: {p: {%s, elicitation: {tool_choice: auto}}}\n",
        ": provider 'p', field 'elicitation.tool_choice': must be one of: named",
    ),
    (
        "version: 1\nproviders:\n  p: {%s}\n  1: {%s}\n  1: {%s}\n",
        ": line 5: not valid YAML (duplicated key 1)",
    ),
]


FILE_CASES += [
    (
        "version: 1\nproviders: {p: {%s, expected_quirks: {Q-ID-ABSENT: ''}}}\n",
        ": provider 'p', field 'expected_quirks.Q-ID-ABSENT': '' should be non-empty",
    ),
    (  # not close enough to 'retries' to be named (cutoff 0.7)
        "version: 1\nproviders: {p: {%s, retry: 1}}\n",
        ": provider 'p', field 'retry': unknown field 'retry' (valid: api_key_env, auth, base_url, "
        "base_url_env, capabilities, concurrency, elicitation, expected_quirks, extra_body, gateway, "
        "headers, headers_env, label, limits, model, notes, record_command, retries, roundtrip, server)",
    ),
    (
        "version: 1\nproviders: {p: {%s, access-token: x}}\n",
        ": provider 'p', field 'access-token': unknown field 'access-token' (keys are never written "
        "in providers.yaml: name the environment variable that holds the key with api_key_env)",
    ),
    (
        "version: 1\nproviders: {p: {label: x}}\n",
        ": provider 'p', field 'base_url': missing required field",
    ),
    (
        "version: 1\nproviders: {p: {%s, api_key_env: 3}}\n",
        ": provider 'p', field 'api_key_env': expected string or null, got an integer",
    ),
    (
        "version: 1\nproviders: {p: {base_url: 'http://h/v1', model: 2024-01-01}}\n",
        ": provider 'p', field 'model': expected string, got date",
    ),
    (
        "version: 1\nproviders: {p: {base_url: 'localhost:8000/v1', model: m}}\n",
        ": provider 'p', field 'base_url': not an http(s) URL (scheme 'localhost:80'); only http:// "
        "and https:// endpoints are tested",
    ),
    (
        "version: 1\nproviders: {p: {base_url: 'ftp://h/x?u=http://y', model: m}}\n",
        ": provider 'p', field 'base_url': not an http(s) URL (scheme 'ftp'); only http:// and "
        "https:// endpoints are tested",
    ),
    (
        "version: 1\nproviders: {p: {%s, base_url_env: lower}}\n",
        ": provider 'p', field 'base_url_env': must be the NAME of an environment variable (A-Z, "
        "0-9, _), not its value",
    ),
]


FILE_CASES += [
    (  # a message too long for one line is cut
        "version: 1\nproviders: {p: {%s, capabilities: {strict: ["
        + ", ".join(["abcdefgh"] * 30)
        + "]}}}\n",
        ": provider 'p', field 'capabilities.strict': " + repr(["abcdefgh"] * 30)[:119] + "…",
    ),
    (
        "version: 1\nproviders: {p: {%s, concurrency: -" + "9" * 150 + "}}\n",
        ": provider 'p', field 'concurrency': -" + "9" * 118 + "…",
    ),
]


@pytest.mark.parametrize("text,message", FILE_CASES)
def test_each_refusal_names_the_file_the_entry_and_the_field(
    tmp_path: Path, text: str, message: str
) -> None:
    p = tmp_path / "providers.yaml"
    p.write_text(text.replace("%s", ENTRY))
    with pytest.raises(ConfigError) as e:
        load_providers(p)
    assert str(e.value) == f"{p}{message}"


def test_long_expect_quirk_values_are_cut_and_a_reason_may_hold_an_equals_sign() -> None:
    assert P.parse_expect_quirk("Q-ID-ABSENT=a = b") == ("Q-ID-ABSENT", "a = b")
    long = "Q" * 100
    with pytest.raises(ConfigError) as e:
        P.parse_expect_quirk(long)
    assert (
        str(e.value)
        == f"--expect-quirk {'Q' * 59 + '…'!r}: expected Q-ID=reason (say why it is accepted)"
    )
    with pytest.raises(ConfigError) as e:
        P.parse_expect_quirk(long + "=why")
    assert str(e.value) == f"--expect-quirk: unknown quirk id {'Q' * 59 + '…'!r}"


def test_the_list_of_valid_providers_is_cut_after_300_characters() -> None:
    exact = {"a" * 300: Provider("x", "http://h/v1", "m")}
    with pytest.raises(ConfigError) as e:
        P.select(exact, ["nope"])
    assert str(e.value) == "unknown provider 'nope'; valid: " + "a" * 300
    over = {"a" * 301: Provider("x", "http://h/v1", "m")}
    with pytest.raises(ConfigError) as e:
        P.select(over, ["nope"])
    assert str(e.value) == "unknown provider 'nope'; valid: " + "a" * 300 + "…"


@pytest.mark.skipif(sys.platform != "linux", reason="needs /proc: a directory nobody can write")
def test_a_directory_that_exists_but_takes_no_file_is_refused() -> None:
    """Root may write anywhere a permission bit says no; /proc takes no file even from root,
    so only a file made in the directory itself tells."""
    msg = P.output_dir_problem("--report-dir", "/proc")
    assert msg is not None
    assert re.fullmatch(
        r"--report-dir /proc: cannot be written \((No such file or directory|Permission denied)\); "
        r"pass a directory you can write",
        msg,
    ), msg


def test_every_field_of_an_entry_reaches_its_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no noxfile here: the default record command is the CLI's
    p = load_one(
        tmp_path,
        api_key_env="MY_KEY",
        auth="x-api-key",
        headers_env={"X-Org": "MY_ORG"},
        extra_body={"temperature": 0},
        server={"software": "vLLM", "version": "0.6"},
        elicitation={"max_tokens": 64},
        roundtrip={"content": "empty", "tool_message_name": True},
        retries={"max": 2},
        limits={"idle_timeout": 5},
        gateway={"base_url_env": "GW_URL"},
    )
    assert (p.api_key_env, p.auth, p.headers_env) == ("MY_KEY", "x-api-key", {"X-Org": "MY_ORG"})
    assert (p.extra_body, p.server) == ({"temperature": 0}, {"software": "vLLM", "version": "0.6"})
    assert (p.elicitation, p.retries, p.limits) == (
        {"max_tokens": 64},
        {"max": 2},
        {"idle_timeout": 5},
    )
    assert p.gateway == {"base_url_env": "GW_URL"}
    assert (p.roundtrip.content, p.roundtrip.tool_message_name) == ("empty", True)
    assert (
        p.record_command
        == f"toolcall-conformance run --providers {tmp_path / 'providers.yaml'} --provider p"
    )
    bare = P.provider_from_entry("q", dict(OK))
    assert (bare.api_key_env, bare.auth, bare.headers_env, bare.extra_body) == (
        None,
        "bearer",
        {},
        {},
    )
    assert bare.record_command == "toolcall-conformance run --providers providers.yaml --provider q"
    assert (bare.kind, P.provider_from_entry("q", dict(OK), kind="reference-profile").kind) == (
        "provider",
        "reference-profile",
    )


def test_the_default_file_is_providers_yaml_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "providers.yaml").write_text(yaml.safe_dump({"version": 1, "providers": {"p": OK}}))
    assert list(load_providers()) == ["p"]


def test_a_character_yaml_refuses_is_named_without_a_line(tmp_path: Path) -> None:
    p = tmp_path / "providers.yaml"
    p.write_text("version: 1\nproviders: {p: {base_url: 'http://h/v1', model: 'a\x00b'}}\n")
    with pytest.raises(ConfigError) as e:
        load_providers(p)
    assert str(e.value) == (
        f"{p}: not valid YAML (unacceptable character #x0000: special characters are not allowed)"
    )


def test_a_key_in_the_url_is_refused_with_where_to_put_it(tmp_path: Path) -> None:
    assert refusal(tmp_path, base_url="https://h.example/v1?key=abcdef123456") == (
        ": provider 'p', field 'base_url': the URL carries a credential or a place for one "
        "(query parameter 'key'; only api-version may be written in the file): put the whole URL "
        "in an environment variable named by base_url_env"
    )
    # a path that merely looks like a key is not a credential place: the entry loads
    p = load_one(tmp_path, base_url="https://h.example/sk-proj-CANARYabcdefghijklmnop123/v1")
    assert p.endpoint == "https://h.example/sk-proj-CANARYabcdefghijklmnop123/v1"


def test_numbers_past_a_skipped_setting_and_at_a_float_bound() -> None:
    assert P._absurd_number({"retries": {"on_status": [500], "max": 101}}) == (
        "retries.max",
        "must be a finite number of retries from 0 to 100 (got 101)",
    )
    assert P._absurd_number({"limits": {"total_timeout": 86_400.0}}) is None
    assert P._absurd_number({"limits": {"max_bytes": 10**400}})[0] == "limits.max_bytes"  # type: ignore[index]


def test_a_url_without_a_scheme_shows_its_first_twelve_characters() -> None:
    with pytest.raises(ConfigError) as e:
        P.provider_from_options("example.com/v1/chat", "m")
    assert str(e.value) == "--base-url: not an http(s) URL (scheme 'example.com/')"


def test_a_config_error_is_one_line_of_at_most_400_characters() -> None:
    assert str(ConfigError("x" * 500)) == "x" * 399 + "…"
    assert str(ConfigError("a\nb")) == "a b"


def test_a_noxfile_that_is_not_utf8_still_says_where_to_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "noxfile.py").write_bytes(b"# \xff\ndef live(session):\n    pass\n")
    assert P.default_record_command("p", "x") == "python3 noxw -s live -- --provider p"


def test_user_info_splits_at_the_last_at_sign_and_the_first_colon() -> None:
    import base64

    def basic(url: str) -> str:
        header = Provider("p", url, "m").auth_headers()["Authorization"]
        return base64.b64decode(header.removeprefix("Basic ")).decode()

    assert basic("https://u:p:w@h.example/v1") == "u:p:w"
    assert basic("https://u@x:pw@h.example/v1") == "u@x:pw"  # user u@x, password pw
    p = Provider("p", "https://u:p:w@h.example/v1", "m")
    assert p.base_url == "https://h.example/v1"


def test_the_endpoint_keeps_its_path_and_registers_its_query_as_a_secret() -> None:
    from conformance import secrets

    assert Provider("p", "https://u@x:pw@h.example/v1", "m").base_url == "https://h.example/v1"
    p = Provider("p", "http://h.example/apiX/", "m")
    assert p.endpoint == "http://h.example/apiX"
    assert p.url("/Xchat") == "http://h.example/apiX/Xchat"
    # a value new to this process: secrets are registered process-wide
    fresh = "QUERYSECRET" + uuid.uuid4().hex[:12]
    Provider("p", f"https://h.example/v1?key={fresh}", "m")
    assert fresh not in secrets.redact(f"sent {fresh} here")
    assert P.public_url("https://h.example/v1?api-version=") == "https://h.example/v1?api-version="
    assert P.public_url("http://[bad") == "http://[bad"


def test_a_yaml_error_names_its_problem_not_its_context(tmp_path: Path) -> None:
    p = tmp_path / "providers.yaml"
    p.write_text("version: 1\nproviders:\n  p: {base_url: [http://h\n    model: m\n")
    with pytest.raises(ConfigError) as e:
        load_providers(p)
    assert str(e.value) == f"{p}: line 4: not valid YAML (expected ',' or ']', but got ':')"
    k = "k" * 150
    p.write_text(f"version: 1\nproviders:\n  {k}: 1\n  {k}: 2\n")
    with pytest.raises(ConfigError) as e:
        load_providers(p)
    assert str(e.value) == f"{p}: line 4: not valid YAML (duplicated key '{'k' * 103}…)"
