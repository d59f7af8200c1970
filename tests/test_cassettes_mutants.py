"""Cassettes (conformance.cassettes), pinned by the bytes a cassette holds and what replay
gives back: what is scrubbed from a request and a response before it is written, how
requests match on replay, that a cassette is read without running code (a Python tag, a
YAML file that is not a cassette: one line naming it), and that vcrpy's other serializers
still go through the persister."""

from __future__ import annotations

import gzip
import http.server
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import vcr
import yaml
from faults import serving
from vcr.request import Request
from vcr.serializers import jsonserializer, yamlserializer

from conformance import cassettes, secrets
from conformance.cassettes import AtomicPersister, SafeYaml
from conformance.readers import CassetteRefused

CANARY = "CANARYcassette0123456789"


@pytest.fixture
def canary() -> Iterator[str]:
    secrets.register(CANARY)
    yield CANARY
    secrets.forget(CANARY)


# ------------------------------------------------------------------ what is scrubbed


def test_a_request_loses_its_credentials_and_keeps_the_rest(canary: str) -> None:
    req = Request(
        "POST",
        f"http://user:pw@127.0.0.1:9/v1/chat/completions?api_key={canary}&api-version=1",
        f'{{"model": "m", "note": "{canary}"}}'.encode(),
        {
            "Authorization": f"Bearer {canary}",
            "X-Api-Key": "k" * 30,
            "Ocp-Apim-Subscription-Key": "s" * 30,
            "Content-Type": "application/json",
            "X-Trace": f"trace {canary}",
        },
    )
    out = cassettes.scrub_request(req)
    assert out is req
    assert canary.encode() not in out.body and b'"model": "m"' in out.body
    assert "user:pw" not in out.uri and canary not in out.uri
    assert "api-version=1" in out.uri and out.uri.startswith("http://127.0.0.1:9/v1/chat")
    assert sorted(out.headers) == ["Content-Type", "X-Trace"]
    assert out.headers["Content-Type"] == "application/json"
    assert canary not in out.headers["X-Trace"] and out.headers["X-Trace"].startswith("trace ")


def test_a_request_body_given_as_text_is_scrubbed_too(canary: str) -> None:
    req = Request("POST", "http://h/v1/x", f"note {canary}", {})
    req.body = f"note {canary}"  # vcrpy's setter encodes it: scrubbed as bytes
    out = cassettes.scrub_request(req)
    assert canary.encode() not in out.body and out.body.startswith(b"note ")
    empty = Request("GET", "http://h/v1/models", None, {})
    assert cassettes.scrub_request(empty).body is None


def test_a_response_loses_its_credentials_and_keeps_the_rest(canary: str) -> None:
    for body in (f"data: {canary}\n\n", f"data: {canary}\n\n".encode()):
        resp = {
            "status": {"code": 401, "message": f"bad key {canary}"},
            "headers": {
                "Set-Cookie": ["session=abc"],
                "X-Echo": [f"you sent {canary}", "plain"],
                "X-One": f"one {canary}",
                "Content-Type": ["text/event-stream"],
            },
            "body": {"string": body},
        }
        out = cassettes.scrub_response(resp)
        assert out is resp
        s = out["body"]["string"]
        assert type(s) is type(body)
        assert (canary not in s) if isinstance(s, str) else (canary.encode() not in s)
        assert sorted(out["headers"]) == ["Content-Type", "X-Echo", "X-One"]
        assert out["headers"]["X-Echo"][1] == "plain" and canary not in out["headers"]["X-Echo"][0]
        assert out["headers"]["X-Echo"][0].startswith("you sent ")
        assert canary not in out["headers"]["X-One"] and out["headers"]["X-One"].startswith("one")
        assert out["headers"]["Content-Type"] == ["text/event-stream"]
        assert canary not in out["status"]["message"] and out["status"]["code"] == 401
    # what a response may lack
    assert cassettes.scrub_response({}) == {}
    assert cassettes.scrub_response({"status": 200, "body": {"string": None}}) == {
        "status": 200,
        "body": {"string": None},
    }


# ------------------------------------------------------------------ record and replay


class _Handler(http.server.BaseHTTPRequestHandler):
    """One canned answer: an SSE body, gzipped when the path says so."""

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self._answer()

    def do_GET(self) -> None:  # noqa: N802
        self._answer()

    def _answer(self) -> None:
        body = b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("set-cookie", "s=1")
        if "gzip" in self.path:
            body = gzip.compress(body)
            self.send_header("content-encoding", "gzip")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def origin() -> Iterator[str]:
    with serving(_Handler) as url:
        yield url


def _recorder(path: Path, mode: str) -> Any:
    v = vcr.VCR(record_mode=mode, **cassettes.vcr_options())
    v.register_serializer("yaml", SafeYaml)
    v.register_persister(AtomicPersister)
    return v.use_cassette(str(path))


def test_a_recorded_exchange_is_scrubbed_on_disk_and_replays_on_another_port(
    tmp_path: Path, canary: str, origin: str
) -> None:
    path = tmp_path / "c.yaml"
    with _recorder(path, "all"), httpx.Client() as client:
        r = client.post(
            f"{origin}/v1/chat/completions?key={canary}",
            json={"model": "m"},
            headers={"authorization": f"Bearer {canary}", "x-keep": "yes"},
        )
        assert r.content == b"data: [DONE]\n\n"
    text = path.read_text()
    assert canary not in text
    doc = yaml.safe_load(text)
    (one,) = doc["interactions"]
    assert "x-keep" in {k.lower() for k in one["request"]["headers"]}
    assert "authorization" not in {k.lower() for k in one["request"]["headers"]}
    assert "set-cookie" not in {k.lower() for k in one["response"]["headers"]}
    assert "key=" not in one["request"]["uri"]
    assert one["response"]["body"]["string"] == "data: [DONE]\n\n"
    # replayed: another port (a local server gets a new one each run) and another query
    with _recorder(path, "none"), httpx.Client() as client:
        r = client.post("http://127.0.0.1:9/v1/chat/completions?x=1", json={"model": "x"})
        assert r.status_code == 200 and r.content == b"data: [DONE]\n\n"
    # but not another path or method
    refused = vcr.errors.CannotOverwriteExistingCassetteException
    with _recorder(path, "none"), httpx.Client() as client, pytest.raises(refused):
        client.post("http://127.0.0.1:9/v1/completions", json={})
    with _recorder(path, "none"), httpx.Client() as client, pytest.raises(refused):
        client.get("http://127.0.0.1:9/v1/chat/completions")


def test_a_cell_that_raised_leaves_no_cassette(tmp_path: Path, origin: str) -> None:
    path = tmp_path / "c.yaml"
    with pytest.raises(RuntimeError), _recorder(path, "all"), httpx.Client() as client:
        client.post(f"{origin}/v1/chat/completions", json={})
        raise RuntimeError("the cell broke after its first exchange")
    assert not path.exists()
    with _recorder(path, "all"), httpx.Client() as client:  # the same, ending normally
        client.post(f"{origin}/v1/chat/completions", json={})
    assert path.exists()


def test_a_compressed_body_is_stored_as_sent(tmp_path: Path, origin: str) -> None:
    """vcrpy's decoder stays off: the transport undoes codings, bounded."""
    path = tmp_path / "c.yaml"
    with _recorder(path, "all"), httpx.Client() as client:
        client.post(f"{origin}/gzip/v1/chat/completions", json={})
    doc = yaml.safe_load(path.read_text())
    resp = doc["interactions"][0]["response"]
    assert resp["headers"]["content-encoding"] == ["gzip"]
    assert gzip.decompress(resp["body"]["string"]) == b"data: [DONE]\n\n"


# ------------------------------------------------------------------ reading safely


CASSETTE = """interactions:
- request:
    body: '{}'
    headers: {}
    method: POST
    uri: http://127.0.0.1:1/v1/chat/completions
  response:
    body:
      string: 'data: [DONE]

'
    headers: {}
    status:
      code: 200
      message: OK
version: 1
"""


def test_a_cassette_is_loaded_and_converted_as_vcrpy_does(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CASSETTE)
    for serializer in (SafeYaml, yamlserializer):
        requests, responses = AtomicPersister.load_cassette(path, serializer)
        assert [r.method for r in requests] == ["POST"]
        assert requests[0].uri == "http://127.0.0.1:1/v1/chat/completions"
        assert responses[0]["body"]["string"] == b"data: [DONE]\n"
        assert responses[0]["status"]["code"] == 200


def test_a_python_tag_is_refused_in_one_line_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = tmp_path / "c.yaml"
    path.write_text(
        f"interactions: !!python/object/apply:os.system ['touch {marker}']\nversion: 1\n"
    )
    for serializer in (SafeYaml, yamlserializer):
        with pytest.raises(CassetteRefused) as e:
            AtomicPersister.load_cassette(path, serializer)
        assert str(e.value).startswith(f"cassette {path}")
        assert "\n" not in str(e.value)
    with pytest.raises(Exception):  # noqa: B017  # refused by SafeYaml too, whatever the error
        SafeYaml.deserialize(path.read_text())
    assert not marker.exists()


@pytest.mark.parametrize("text", ["just text\n", "- a list\n", "interactions: 3\n", "{}\n"])
def test_a_yaml_file_that_is_not_a_cassette_is_refused_naming_it(tmp_path: Path, text: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(CassetteRefused) as e:
        AtomicPersister.load_cassette(path, SafeYaml)
    assert str(e.value) == (
        f"cassette {path}: a YAML file without an `interactions` list (not a cassette)"
    )


def test_a_directory_is_no_cassette(tmp_path: Path) -> None:
    with pytest.raises(cassettes.CassetteNotFoundError):
        AtomicPersister.load_cassette(tmp_path, SafeYaml)


def test_the_yaml_serializer_dumps_as_vcrpy_and_loads_safe() -> None:
    # a long line of escapes: libyaml keeps it on one line, PyYAML's own dumper folds it
    data = {"interactions": [{"a": "é", "b": b"\xff", "c": "é" * 100}], "version": 1}
    text = SafeYaml.serialize(data)
    assert "\\xE9" * 100 in text
    assert text == yaml.dump(data, Dumper=getattr(yaml, "CDumper", yaml.Dumper))
    assert SafeYaml.deserialize(text) == data
    assert cassettes.DUMPER is getattr(yaml, "CDumper", yaml.Dumper)


def test_which_serializers_are_yaml() -> None:
    assert cassettes.is_yaml(SafeYaml)
    assert cassettes.is_yaml(yamlserializer)
    assert not cassettes.is_yaml(jsonserializer)
    assert not cassettes.is_yaml(object())


def test_a_json_cassette_is_written_atomically_and_read_by_vcrpy(
    tmp_path: Path, canary: str
) -> None:
    path = tmp_path / "sub" / "c.json"
    req = Request("POST", "http://127.0.0.1:1/v1/chat/completions", b"{}", {})
    resp = {
        "status": {"code": 200, "message": "OK"},
        "headers": {},
        "body": {"string": f"data: {canary}\n\n"},
    }
    AtomicPersister.save_cassette(path, {"requests": [req], "responses": [resp]}, jsonserializer)
    text = path.read_text()
    assert canary not in text  # the last redaction pass
    assert json.loads(text)["interactions"][0]["request"]["method"] == "POST"
    requests, responses = AtomicPersister.load_cassette(path, jsonserializer)
    assert requests[0].method == "POST" and responses[0]["status"]["code"] == 200
    assert [p.name for p in path.parent.iterdir()] == ["c.json"]  # no temporary file left


def test_a_cassette_text_that_is_not_yaml_is_refused_naming_the_cassette() -> None:
    from conformance.transcript import InputError

    with pytest.raises(InputError) as e:
        SafeYaml.deserialize("interactions: [\n")
    assert str(e.value).startswith("cassette:") and "not valid YAML" in str(e.value)


class _Writes:
    """A file that keeps each write apart."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, b: bytes) -> None:
        self.writes.append(bytes(b))

    @property
    def text(self) -> bytes:
        return b"".join(self.writes)


def test_a_big_body_is_written_exact_and_a_piece_at_a_time(
    monkeypatch: pytest.MonkeyPatch, canary: str
) -> None:
    monkeypatch.setattr(cassettes, "PIECE", 16)
    # short lines, a clean line far longer than a piece, then a line with a secret
    body = b"ab\n" * 20 + b"x" * 100 + b"\n" + f"key {canary}\n".encode() + b"cd\n" * 20
    f = _Writes()
    cassettes._write_text(f, body)
    want = (
        '"' + "ab\\n" * 20 + "x" * 100 + "\\n" + f"key {secrets.REDACTED}\\n" + "cd\\n" * 20 + '"\n'
    )
    assert f.text.decode() == want
    # nothing is escaped (or decoded) whole: each write is about a piece (an escaped line
    # end doubles its byte)
    assert max(len(w) for w in f.writes) <= 2 * 16 + len(secrets.REDACTED)


def test_a_body_is_text_only_when_all_of_it_is_utf8(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cassettes, "PIECE", 4)
    assert cassettes._utf8(b"plain ascii")
    assert cassettes._utf8("aé€😀 straddling every piece end".encode())
    assert not cassettes._utf8(b"\xff" + "é".encode())  # the first byte counts
    assert not cassettes._utf8("é".encode() + b"\xc3")  # a character cut at the end
    assert not cassettes._utf8("été".encode()[:-1])


def test_a_clean_line_is_decoded_across_piece_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cassettes, "PIECE", 16)
    body = ("a" + "é" * 40 + "\nb\n").encode()  # characters straddle the piece ends
    f = _Writes()
    cassettes._write_text(f, body)
    assert f.text.decode() == '"a' + "\\xe9" * 40 + '\\nb\\n"\n'


def test_a_body_set_aside_and_never_written_fails_the_write_saying_so() -> None:
    import io

    lines = cassettes._BodyLines(io.BytesIO(), {"mark": b"body"})
    with pytest.raises(RuntimeError) as e:
        lines.flush()
    assert str(e.value) == "a response body set aside was not written into the cassette"


def test_a_body_that_reads_like_a_placeholder_is_kept_and_a_big_body_after_it_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cassettes, "BIG", 8)
    look_alike = "conformance-set-aside-0-0123456789abcdef"  # a recorded body, not ours
    req = Request("POST", "http://127.0.0.1:1/v1/chat/completions", b"{}", {})
    resps = [
        {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": b}}
        for b in (look_alike, b"x" * 20)
    ]
    path = tmp_path / "c.yaml"
    AtomicPersister.save_cassette(path, {"requests": [req, req], "responses": resps}, SafeYaml)
    doc = yaml.safe_load(path.read_text())
    assert [i["response"]["body"]["string"] for i in doc["interactions"]] == [
        look_alike,
        "x" * 20,
    ]
