"""conformance.secrets against hand-written expectations: literal header and parameter
lists (not read back from the module), case variants, length thresholds, the order of
replacements and the one-line shape of a reason."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import secrets
from conformance.cassettes import scrub_request, scrub_response, vcr_options

# Written out by hand: removing one from secrets.SECRET_HEADERS must fail a test.
CREDENTIAL_HEADERS = [
    "Authorization",
    "Proxy-Authorization",
    "api-key",
    "X-Api-Key",
    "x-goog-api-key",
    "Cookie",
    "Set-Cookie",
    "X-Auth-Token",
    "X-Amz-Security-Token",
    "OpenAI-Organization",
    "OpenAI-Project",
]
KEY_PARAMETERS = [
    "key",
    "api_key",
    "api-key",
    "apikey",
    "token",
    "access_token",
    "auth",
    "sig",
    "signature",
    "x-api-key",
    "code",
    "password",
    "secret",
]
LONG = "Zq8wXv3nT5"  # 10 characters, no key shape


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    secrets.forget()
    yield
    secrets.forget()


class _Request:
    def __init__(
        self,
        headers: dict[str, str],
        uri: str = "https://h/v1/chat",
        body: bytes | str | None = None,
    ):
        self.headers, self.uri, self.body = dict(headers), uri, body


@pytest.mark.parametrize("name", CREDENTIAL_HEADERS)
def test_every_credential_header_is_dropped_from_a_cassette(name: str) -> None:
    req = scrub_request(_Request({name: "v", "Content-Type": "application/json"}))
    assert req.headers == {"Content-Type": "application/json"}
    resp = scrub_response({"headers": {name: ["v"], "Server": ["uvicorn"]}, "body": {}})
    assert resp["headers"] == {"Server": ["uvicorn"]}
    assert (name.lower(), None) in vcr_options()["filter_headers"]


@pytest.mark.parametrize("name", KEY_PARAMETERS)
def test_every_key_parameter_is_a_secret_in_any_case(name: str) -> None:
    for variant in (name, name.upper(), name.title()):
        url = f"https://h/v1?model=m&{variant}={LONG}"
        # every query value is a secret (issue 16), "m" as well (too short to register)
        assert secrets.url_secrets(url) == ["m", LONG]
        assert secrets.redact(url) == f"https://h/v1?model=m&{variant}=<redacted>"
        assert (
            secrets.redact(f"see https://h/v1?{variant}={LONG} now")
            == f"see https://h/v1?{variant}=<redacted> now"
        )
    assert (name, None) in vcr_options()["filter_query_parameters"]


def test_ordinary_parameters_are_secrets_of_a_url_but_not_redacted_by_shape() -> None:
    """Issue 16: every query value of an endpoint URL but api-version's is a secret when the
    URL is registered; text is redacted by shape only where a name looks like a key."""
    assert secrets.url_secrets("https://h/v1?model=gpt&keys=abcdefgh&key=&api-version=2") == [
        "gpt",
        "abcdefgh",
    ]
    assert secrets.redact("https://h/v1?model=gpt-4o-mini") == "https://h/v1?model=gpt-4o-mini"
    assert secrets.url_secrets("https://user:hunter22@h/v1?key=abcdefgh") == [
        "abcdefgh",
        "user",
        "hunter22",
        "dXNlcjpodW50ZXIyMg==",
    ]  # base64("user:hunter22")
    assert secrets.url_secrets("http://[::1") == []  # unparsable: nothing, no exception


def test_query_redaction_needs_a_separator_before_the_name() -> None:
    assert secrets.redact("key=Zq8wXv3nT5") == "key=Zq8wXv3nT5"
    assert secrets.redact("a&token=Zq8wXv3nT5#frag") == "a&token=<redacted>#frag"
    assert secrets.redact("?key=Zq8wXv3nT5&x=1") == "?key=<redacted>&x=1"


def test_userinfo_is_redacted_whole() -> None:
    """Issue 16: a user name can be a token (``http://TOKEN@host``): the whole user info
    goes, a user alone too."""
    assert (
        secrets.redact("https://alice:pa55word@h.example/v1") == "https://<redacted>@h.example/v1"
    )
    assert secrets.redact("https://Zq8wXv3nT5@h.example/v1") == "https://<redacted>@h.example/v1"
    assert secrets.redact("mail alice@h.example") == "mail alice@h.example"


def test_minimum_secret_length_is_six() -> None:
    secrets.register("abcde", None, "", secrets.REDACTED)
    assert secrets.known() == frozenset()
    assert secrets.redact("abcde") == "abcde"
    secrets.register("abcdef")
    assert secrets.known() == {"abcdef"}
    assert secrets.redact("xabcdefx") == "x<redacted>x"


def test_longest_known_secret_is_replaced_first() -> None:
    secrets.register("Zq8wXv", "Zq8wXv3nT5")
    assert secrets.redact("[Zq8wXv3nT5] [Zq8wXv]") == "[<redacted>] [<redacted>]"
    secrets.register("zzzzzz", "Azzzzzzz")  # the longer one sorts first by length only
    assert secrets.redact("[Azzzzzzz]") == "[<redacted>]"


def test_forget_some_or_all() -> None:
    secrets.register("Zq8wXv3nT5", "Yp7vWu2mS4")
    secrets.forget("Zq8wXv3nT5")
    assert secrets.known() == {"Yp7vWu2mS4"}
    assert secrets.redact("Zq8wXv3nT5 Yp7vWu2mS4") == "Zq8wXv3nT5 <redacted>"
    secrets.forget()
    assert secrets.known() == frozenset()
    assert secrets.redact("Yp7vWu2mS4") == "Yp7vWu2mS4"


def test_register_env_and_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("I18_KEY", "envsecret99")
    monkeypatch.delenv("I18_UNSET", raising=False)
    secrets.register_env(["I18_KEY", None, "I18_UNSET"])
    secrets.register_url("https://u:pw123456@h/v1?api_key=urlsecret77")
    secrets.register_url(None)
    # the Basic credentials of the user info too: base64("u:pw123456")
    assert secrets.known() == {"envsecret99", "pw123456", "urlsecret77", "dTpwdzEyMzQ1Ng=="}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sk-" + "a" * 16, "<redacted>"),
        ("sk-" + "a" * 15, "sk-" + "a" * 15),
        ("sk-proj-" + "b" * 16, "<redacted>"),
        ("AIza" + "c" * 30, "<redacted>"),
        ("AIza" + "c" * 29, "AIza" + "c" * 29),
        ("gsk_" + "d" * 20, "<redacted>"),
        ("xai-" + "e" * 20, "<redacted>"),
        ("hf_" + "f" * 20, "<redacted>"),
        ("hf_" + "f" * 19, "hf_" + "f" * 19),
        ("Authorization: Bearer abcdefgh", "Authorization: Bearer <redacted>"),
        ("Authorization: Bearer abcdefg", "Authorization: Bearer abcdefg"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic <redacted>"),
        ("Authorization: Basic dXNlcjp", "Authorization: Basic dXNlcjp"),
    ],
)
def test_key_shapes_and_their_minimum_lengths(text: str, expected: str) -> None:
    assert secrets.redact(text) == expected


def test_redact_bytes_and_body() -> None:
    secrets.register("Zq8wXv3nT5")
    clean = b'data: {"a": 1}\n\n\xff'
    assert secrets.redact_bytes(clean) is clean  # untouched bytes come back as they were
    assert secrets.redact_bytes(b"x Zq8wXv3nT5 \xff") == b"x <redacted> \xff"
    split = (
        'data: {"choices":[{"index":0,"delta":{"content":"Zq8w"}}]}\n\n'
        'data: {"choices":[{"index":0,"delta":{"content":"Xv3nT5!"}}]}\n\n'
    )
    assert secrets.redact_body(split) == (
        'data: {"choices": [{"index": 0, "delta": {"content": "<redacted>"}}]}\n\n'
        'data: {"choices": [{"index": 0, "delta": {"content": "<redacted>!"}}]}\n\n'
    )


def test_redact_obj_walks_keys_values_lists_and_tuples() -> None:
    secrets.register("Zq8wXv3nT5")
    got = secrets.redact_obj(
        {"Zq8wXv3nT5": ["a Zq8wXv3nT5", ("Zq8wXv3nT5", 3)], "b": b"Zq8wXv3nT5", "n": None}
    )
    assert got == {"<redacted>": ["a <redacted>", ("<redacted>", 3)], "b": b"<redacted>", "n": None}


def test_one_line_is_redacted_collapsed_and_bounded() -> None:
    secrets.register("Zq8wXv3nT5")
    assert secrets.one_line("a\n  b\tZq8wXv3nT5 ") == "a b <redacted>"
    assert secrets.one_line("x" * 200) == "x" * 200
    assert secrets.one_line("x" * 201) == "x" * 199 + "…"
    assert secrets.one_line("abcdef", limit=5) == "abcd…"


def test_log_record_with_a_key_in_its_exception_loses_the_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secrets.register("Zq8wXv3nT5")
    log = logging.getLogger("i18.secrets")
    with caplog.at_level(logging.INFO, logger="i18.secrets"):
        try:
            raise ValueError("bad key Zq8wXv3nT5")
        except ValueError:
            log.exception("failed for %s", "Zq8wXv3nT5")
        try:
            raise ValueError("harmless")
        except ValueError:
            log.exception("plain %s", "failure")
    first, second = caplog.records
    assert first.getMessage() == ("failed for <redacted> (ValueError: bad key <redacted>)")
    assert first.exc_info is None and first.args is None
    assert second.getMessage() == "plain failure" and second.args == ("failure",)
    assert second.exc_info is not None


def test_write_atomic_redacts_text_and_bytes_and_makes_the_directory(tmp_path: Path) -> None:
    secrets.register("Zq8wXv3nT5")
    target = tmp_path / "a" / "b" / "f.txt"
    secrets.write_atomic(target, "k=Zq8wXv3nT5")
    assert target.read_text() == "k=<redacted>"
    secrets.write_atomic(target, b"\xffZq8wXv3nT5")
    assert target.read_bytes() == b"\xff<redacted>"
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.txt"]


def test_the_first_register_installs_the_log_redaction(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """From a process where nothing was registered yet (the factory is process-wide)."""
    monkeypatch.setattr(secrets, "_factory_installed", False)
    original = logging.getLogRecordFactory()
    logging.setLogRecordFactory(logging.LogRecord)
    try:
        secrets.register("Zq8wXv3nT5")
        installed = logging.getLogRecordFactory()
        assert installed is not logging.LogRecord
        secrets.install_log_redaction()  # a second install is a no-op
        assert logging.getLogRecordFactory() is installed
        log = logging.getLogger("i18.install")
        with caplog.at_level(logging.INFO, logger="i18.install"):
            log.info("key %s", "Zq8wXv3nT5")
            log.info("plain %s", "words")
            try:
                raise KeyError("Zq8wXv3nT5")
            except KeyError:
                log.exception("lookup")
            try:
                raise KeyError("harmless")
            except KeyError:
                log.exception("plain lookup")
        key, plain, exc, harmless = caplog.records
        assert (key.msg, key.args, key.getMessage()) == ("key <redacted>", None, "key <redacted>")
        assert (plain.msg, plain.args) == ("plain %s", ("words",))
        assert exc.getMessage() == "lookup (KeyError: '<redacted>')"
        assert (exc.exc_info, exc.exc_text) == (None, None)
        assert harmless.getMessage() == "plain lookup" and harmless.exc_info is not None
    finally:
        logging.setLogRecordFactory(original)


def _event(tool_calls: list[dict[str, object]]) -> str:
    return (
        "data: "
        + json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": tool_calls}}]})
        + "\n\n"
    )


def test_a_split_secret_is_joined_per_call_index_not_per_position() -> None:
    secrets.register("CANARY12345")
    text = (
        _event([{"index": 1, "function": {"arguments": '{"k": "CANA'}}])
        + _event([{"index": 0, "function": {"arguments": "xyz"}}])
        + _event([{"index": 1, "function": {"arguments": 'RY12345"}'}}])
    )
    out = [json.loads(e[6:]) for e in secrets.redact_body(text).split("\n\n") if e]
    args = [e["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for e in out]
    assert args == ['{"k": "<redacted>', "xyz", '<redacted>"}']


def test_a_split_secret_without_usable_indices_is_joined_by_position() -> None:
    secrets.register("CANARY12345")
    text = _event(
        [
            {"index": None, "function": {"arguments": "CANA"}},
            {"index": None, "function": {"arguments": "plain"}},
        ]
    ) + _event(
        [
            {"index": None, "function": {"arguments": "RY12345"}},
            {"index": None, "function": {"arguments": "text"}},
        ]
    )
    out = [json.loads(e[6:]) for e in secrets.redact_body(text).split("\n\n") if e]
    args = [
        [tc["function"]["arguments"] for tc in e["choices"][0]["delta"]["tool_calls"]] for e in out
    ]
    assert args == [["<redacted>", "plain"], ["<redacted>", "text"]]


def test_a_split_secret_in_a_list_of_strings_and_untouched_events() -> None:
    secrets.register("CANARY12345")
    text = (
        'data: {"a": ["x", "CANA"]}\n\n: comment\n\ndata: not json\n\n'
        'data: {"a": ["y", "RY12345"], "b": "CANA"}\n\ndata: {"b": "other"}\n\n'
    )
    assert secrets.redact_body(text) == (
        'data: {"a": ["x", "<redacted>"]}\n\n: comment\n\ndata: not json\n\n'
        'data: {"a": ["y", "<redacted>"], "b": "CANA"}\n\ndata: {"b": "other"}\n\n'
    )


def test_write_atomic_writes_a_hidden_temporary_next_to_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    moves: list[tuple[str, str]] = []
    real = os.replace

    def replace(src: str, dst: object) -> None:
        moves.append((str(src), str(dst)))
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", replace)
    target = tmp_path / "f.txt"
    secrets.write_atomic(target, "x")
    ((src, dst),) = moves
    assert dst == str(target) and Path(src).parent == tmp_path
    assert Path(src).name.startswith(".f.txt.") and Path(src).name.endswith(".tmp")


def test_write_atomic_failure_keeps_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    target = tmp_path / "f.txt"
    target.write_text("old")

    def broken(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError, match="disk full"):
        secrets.write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


@pytest.fixture
def umask_022() -> Iterator[None]:
    import os

    old = os.umask(0o022)
    yield
    os.umask(old)


def test_written_files_get_0666_less_the_umask(tmp_path: Path, umask_022: None) -> None:
    import os

    target = tmp_path / "f.txt"
    secrets.write_atomic(target, "x")
    assert target.stat().st_mode & 0o777 == 0o644
    os.umask(0o027)
    secrets.write_atomic(target, b"y")
    assert target.stat().st_mode & 0o777 == 0o640


def test_current_umask_from_proc_and_without_it(
    monkeypatch: pytest.MonkeyPatch, umask_022: None
) -> None:
    import builtins
    import os

    os.umask(0o027)
    assert secrets.current_umask() == 0o027
    real_open = builtins.open

    def no_proc(file: object, *args: object, **kwargs: object) -> object:
        if str(file).startswith("/proc/"):
            raise OSError("no /proc here")
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(builtins, "open", no_proc)
    assert secrets.current_umask() == 0o027
    assert os.umask(0o027) == 0o027  # read, then put back as it was


def test_unredacted_writes_are_for_our_own_prose(tmp_path: Path) -> None:
    secrets.register("Zq8wXv3nT5")
    target = tmp_path / "README.md"
    secrets.write_atomic(target, "see ?key=value and Zq8wXv3nT5", redact_secrets=False)
    assert target.read_text() == "see ?key=value and Zq8wXv3nT5"
    secrets.write_atomic(target, b"raw ?key=value", redact_secrets=False)
    assert target.read_bytes() == b"raw ?key=value"


def test_blank_key_parameters_are_skipped_and_query_needs_an_equals_sign() -> None:
    assert secrets.url_secrets("https://h/v1?key=&token=abcdefgh") == ["abcdefgh"]
    assert secrets.redact("what? & why") == "what? & why"
    assert secrets.redact("a ?key value") == "a ?key value"


def _content_events(*pieces: str, compact: bool = False) -> str:
    sep = "data:" if compact else "data: "
    return "".join(
        sep
        + json.dumps({"choices": [{"index": 0, "delta": {"content": p}}]}, ensure_ascii=False)
        + "\n\n"
        for p in pieces
    )


def _contents(text: str) -> list[str]:
    return [
        json.loads(e.split(":", 1)[1])["choices"][0]["delta"]["content"]
        for e in text.split("\n\n")
        if e
    ]


def test_split_secret_over_three_events_twice_and_overlapping() -> None:
    secrets.register("CANARY12345")
    out = secrets.redact_body(_content_events("x CAN", "ARY12", "345 y CANA", "RY12345 z"))
    assert _contents(out) == [
        "x <redacted>",
        "<redacted>",
        "<redacted> y <redacted>",
        "<redacted> z",
    ]
    secrets.forget()
    secrets.register("aaaaaa")
    assert _contents(secrets.redact_body(_content_events("aaaa", "aaa"))) == [
        "<redacted>",
        "<redacted>",
    ]


def test_split_secret_in_compact_lines_arrays_and_non_ascii_text() -> None:
    secrets.register("CANARY12345")
    assert _contents(
        secrets.redact_body(_content_events("Zürich CANA", "RY12345", compact=True))
    ) == ["Zürich <redacted>", "<redacted>"]
    arrays = 'data: ["CANA", "x"]\n\ndata: ["RY12345", "y"]\n\n'
    assert (
        secrets.redact_body(arrays) == 'data: ["<redacted>", "x"]\n\ndata: ["<redacted>", "y"]\n\n'
    )
    assert "Zürich" in secrets.redact_body(_content_events("Zürich CANA", "RY12345"))


@pytest.mark.parametrize(
    ("name", "credential"),
    [
        ("Authorization", True),
        ("x-api-key", True),
        ("Ocp-Apim-Subscription-Key", True),
        ("api_key", True),
        ("mytoken", True),
        ("X-Session-Id", True),
        ("sig", True),
        ("user_password ", True),
        ("x-ratelimit-remaining-tokens", False),
        ("model", False),
        ("Content-Type", False),
    ],
)
def test_credential_names(name: str, credential: bool) -> None:
    assert secrets.credential_name(name) is credential


def test_url_credentials_are_named_for_a_refusal() -> None:
    assert secrets.url_credentials("https://u:p@h/v1?api-version=1&key=x&model=m") == [
        "user info",
        "query parameter 'key'",
        "query parameter 'model'",
    ]
    assert secrets.url_credentials("https://h/v1?api-version=1") == []
    assert secrets.url_credentials("http://[::1") == []


def test_scrub_url_drops_user_info_credential_parameters_and_known_secret_values() -> None:
    assert (
        secrets.scrub_url("https://u:p@h/v1?api-version=2024&key=abc&model=gpt&Sub%2DKey=1&x=plain")
        == "https://h/v1?api-version=2024&model=gpt&x=plain"
    )
    secrets.register("Zq8wXv3nT5")
    assert secrets.scrub_url("https://h/v1?x=Zq8wXv3nT5&y=1&&z") == "https://h/v1?y=1&z"
    assert secrets.scrub_url("http://[::1/Zq8wXv3nT5") == "http://[::1/<redacted>"


def test_url_secrets_as_written_decoded_and_as_basic_credentials() -> None:
    import base64

    assert secrets.url_secrets("https://us%40er:p%40ss@h/v1?model=gpt-4&api-version=1&q=a%20b") == [
        "gpt-4",
        "a b",
        "a%20b",
        "us%40er",
        "us@er",
        "p%40ss",
        "p@ss",
        base64.b64encode(b"us@er:p@ss").decode(),
    ]
    assert secrets.url_secrets("https://h/v1?api-version=1&e=") == []


def test_a_logged_response_never_carries_its_body() -> None:
    assert secrets._without_body({"body": {"string": b"abcd"}, "status": 200}) == {
        "body": "<4 bytes, not logged>",
        "status": 200,
    }
    assert secrets._without_body({"body": {"string": 5}}) == {"body": "<0 bytes, not logged>"}
    assert secrets._without_body({"body": "x"}) == {"body": "x"}
    assert secrets._without_body("text") == "text"
