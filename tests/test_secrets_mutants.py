"""Keys never reach a file, pinned where the last mutation run found the tests silent:
what a URL's credentials register (the raw query value, a password holding a colon, a
user name holding an ``@``), what a scrubbed URL keeps, which names are credentials,
that a log line never holds a recorded body, and that an already redacted user info is
left as it is."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance import secrets as S


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    yield
    S.forget()


def registered(url: str, text: str) -> str:
    S.register_url(url)
    return S.redact(text)


# ------------------------------------------------------------------ URLs


def test_a_query_value_is_a_secret_as_written_up_to_its_first_equals_sign() -> None:
    url = "http://h.test/v1?token=ab%3Dcd=efgh12"
    found = S.url_secrets(url)
    assert "ab%3Dcd=efgh12" in found  # as written
    assert "ab=cd=efgh12" in found  # decoded
    assert registered(url, "echo ab%3Dcd=efgh12 end") == "echo <redacted> end"


def test_a_public_parameter_is_no_secret_in_any_spelling() -> None:
    assert S.url_secrets("http://h.test/v1?api-version=2024-06-01") == []
    assert S.url_secrets("http://h.test/v1?API-Version=2024-06-01") == []


def test_a_query_value_holding_a_slash_is_registered_percent_encoded_too() -> None:
    url = "http://h.test/v1?key=ab/cd-ef12"
    assert S.url_secrets(url) == ["ab/cd-ef12", "ab%2Fcd-ef12"]
    assert registered(url, "GET /v1?x=ab%2Fcd-ef12") == "GET /v1?x=<redacted>"


def test_a_password_holding_a_colon_is_one_secret() -> None:
    url = "http://user1:pa:ss1234@h.test/v1"
    found = S.url_secrets(url)
    assert "pa:ss1234" in found and "user1" in found
    assert "ss1234" not in found
    assert found[-1] == S.basic_token("user1", "pa:ss1234")
    assert registered(url, "password pa:ss1234!") == "password <redacted>!"


def test_a_user_name_holding_an_at_sign_is_one_secret() -> None:
    url = "http://us%40er@name:secret77@h.test/v1"
    found = S.url_secrets(url)
    assert "us%40er@name" in found and "secret77" in found
    assert "us%40er" not in found


def test_a_blank_query_parameter_is_still_a_credential_place() -> None:
    assert S.url_credentials("http://h.test/v1?key=") == ["query parameter 'key'"]
    assert S.url_credentials("http://u@h.test/v1?api-version=1&sig=") == [
        "user info",
        "query parameter 'sig'",
    ]


def test_a_scrubbed_url_drops_a_credential_parameter_whose_value_holds_equals() -> None:
    assert S.scrub_url("http://h.test/v1?key=abc=def&x=1") == "http://h.test/v1?x=1"


def test_a_scrubbed_url_drops_the_whole_user_info_even_holding_an_at_sign() -> None:
    assert S.scrub_url("http://us@er:pw@h.test/v1?x=1") == "http://h.test/v1?x=1"


def test_redacted_user_info_is_left_as_it_is() -> None:
    text = "see https://<redacted>@h.test/v1 and ftp://joe:pw@h.test/"
    assert S.redact(text) == "see https://<redacted>@h.test/v1 and ftp://<redacted>@h.test/"


@pytest.mark.parametrize(
    "name",
    [
        "customkey",
        "appsecret",
        "dbpassword",
        "mytoken",
        "xauthorisation",
        "xauthorization",
        " Upstream_Key ",
        "X-Custom-Secret",
    ],
)
def test_a_name_ending_as_a_credential_is_one(name: str) -> None:
    assert S.credential_name(name) is True


@pytest.mark.parametrize(
    "name", ["keys", "secrets-count", "x-ratelimit-remaining-tokens", "author", "passage", "model"]
)
def test_other_names_are_not_credentials(name: str) -> None:
    assert S.credential_name(name) is False


# ------------------------------------------------------------------ logs


def test_a_recorded_body_is_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    S.register("sk-logkey-0123456789abcdef")  # installs the log redaction
    response = {"status": {"code": 200}, "body": {"string": b"data: xyz-split\n\n"}}
    with caplog.at_level(logging.INFO, logger="mutants.secrets"):
        logging.getLogger("mutants.secrets").info("recorded %s for %s", response, "cell")
    (record,) = caplog.records
    assert record.getMessage() == (
        "recorded {'status': {'code': 200}, 'body': '<17 bytes, not logged>'} for cell"
    )


def test_a_log_line_without_a_body_keeps_its_arguments(caplog: pytest.LogCaptureFixture) -> None:
    S.register("sk-logkey-0123456789abcdef")
    with caplog.at_level(logging.INFO, logger="mutants.secrets"):
        logging.getLogger("mutants.secrets").info("%s and %d", {"body": "text"}, 3)
    (record,) = caplog.records
    assert record.args == ({"body": "text"}, 3)
    assert record.getMessage() == "{'body': 'text'} and 3"


def test_a_log_line_holding_a_key_is_redacted(caplog: pytest.LogCaptureFixture) -> None:
    S.register("sk-logkey-0123456789abcdef")
    with caplog.at_level(logging.INFO, logger="mutants.secrets"):
        logging.getLogger("mutants.secrets").info("key %s", "sk-logkey-0123456789abcdef")
    (record,) = caplog.records
    assert record.getMessage() == "key <redacted>"


@pytest.fixture
def fresh_log_redaction(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The log redaction installed anew over logging's own record factory: a test run
    installs it once, at its first ``register``, and these tests read the one installed
    now."""
    previous = logging.getLogRecordFactory()
    monkeypatch.setattr(S, "_factory_installed", False)
    logging.setLogRecordFactory(logging.LogRecord)
    try:
        S.install_log_redaction()
        yield
    finally:
        logging.setLogRecordFactory(previous)


def test_a_fresh_log_redaction_never_logs_a_recorded_body(
    fresh_log_redaction: None, caplog: pytest.LogCaptureFixture
) -> None:
    S.register("sk-logkey-0123456789abcdef")
    response = {"status": {"code": 200}, "body": {"string": "data: sk-logkey-0123\n\n"}}
    with caplog.at_level(logging.INFO, logger="mutants.secrets"):
        logging.getLogger("mutants.secrets").info("recorded %s for %s", response, "cell")
    (record,) = caplog.records
    assert record.getMessage() == (
        "recorded {'status': {'code': 200}, 'body': '<22 bytes, not logged>'} for cell"
    )
    assert "sk-logkey" not in caplog.text


def test_a_record_made_without_arguments_is_redacted(fresh_log_redaction: None) -> None:
    # LogRecord takes args=None (a record made by hand, not by a logger call)
    S.register("CANARYlog-4242")
    record = logging.getLogRecordFactory()(
        "mutants.secrets", logging.INFO, __file__, 1, "key CANARYlog-4242", None, None
    )
    assert record.getMessage() == "key <redacted>"


def test_an_exception_never_raised_is_logged_without_its_key(
    fresh_log_redaction: None, caplog: pytest.LogCaptureFixture
) -> None:
    # exc_info=exception: logging keeps (type, value, None) when it was never raised
    S.register("CANARYexc-4242")
    with caplog.at_level(logging.INFO, logger="mutants.secrets"):
        logging.getLogger("mutants.secrets").error(
            "call failed", exc_info=ValueError("refused key CANARYexc-4242")
        )
    (record,) = caplog.records
    assert record.getMessage() == "call failed (ValueError: refused key <redacted>)"
    assert record.exc_info is None
    assert "CANARYexc" not in caplog.text


# ------------------------------------------------------------------ files


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.yaml"
    target.write_text("old")

    def fail(f: object) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        S.write_atomic_text(target, fail)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.yaml"]


def test_a_failed_write_whose_temporary_is_gone_reports_its_own_error(tmp_path: Path) -> None:
    target = tmp_path / "out.yaml"

    def fail(f: object) -> None:
        for tmp in tmp_path.glob(".out.yaml.*.tmp"):  # removed by someone else
            tmp.unlink()
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        S.write_atomic_text(target, fail)
    assert list(tmp_path.iterdir()) == []
