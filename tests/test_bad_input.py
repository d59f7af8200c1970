"""Bad inputs: one line on stderr naming the file (and line), exit 2, never a traceback.

Where the rest of a stream is still readable, the problem is a finding instead and the
exit status is 0. Also the readers on real-shaped containers: vcrpy cassettes with a
plain and a gzip ``!!binary`` body, and HAR files with plain and base64 content.
"""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
import streams as S
import yaml

from conformance.analysis import analyze
from conformance.cli import main
from conformance.readers import read_path
from conformance.sse import MAX_EVENT_BYTES
from conformance.transcript import InputError

CHUNK = S.chunks(S.REFERENCE_SINGLE_JSONL)


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["analyze", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def one_error_line(err: str, path: Path, line: int | None = None) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    where = f"{path}:{line}:" if line is not None else f"{path}:"
    assert lines[0].startswith(f"conformance: {where}"), lines[0]
    return lines[0]


# =============================================================================== unreadable


def test_empty_file(tmp_path, capsys):
    p = tmp_path / "empty.jsonl"
    p.write_bytes(b"")
    rc, out, err = run_cli(capsys, str(p))
    assert rc == 2 and out == ""
    assert "empty" in one_error_line(err, p)


def test_whitespace_only_file(tmp_path, capsys):
    p = tmp_path / "blank.sse"
    p.write_text("\n\n   \n")
    rc, _, err = run_cli(capsys, str(p))
    assert rc == 2 and "empty" in one_error_line(err, p)


def test_non_json_line_names_its_line(tmp_path, capsys):
    p = tmp_path / "bad.jsonl"
    lines = [json.dumps(c) for c in CHUNK[:2]] + ["", "this is not json", json.dumps(CHUNK[2])]
    p.write_text("\n".join(lines) + "\n")
    rc, out, err = run_cli(capsys, "--json", str(p))
    assert rc == 2
    assert "not a JSON line" in one_error_line(err, p, 4)
    assert json.loads(out) == {"captures": []}  # an unreadable input gives no half result


def test_truncated_yaml(tmp_path, capsys):
    p = tmp_path / "cut.yaml"
    text = yaml.safe_dump(_cassette([b"data: [DONE]\n\n"]), sort_keys=False)
    p.write_text(text[: text.index("string:") + 12] + '"unterminated\n')
    rc, _, err = run_cli(capsys, str(p))
    assert rc == 2
    line = one_error_line(err, p)
    assert "not valid YAML" in line
    assert line.split(":")[2].strip().isdigit()  # the YAML error's line number


def test_yaml_that_is_not_a_cassette(tmp_path, capsys):
    p = tmp_path / "other.yaml"
    p.write_text("interactions: 3\n")
    rc, _, err = run_cli(capsys, str(p))
    assert rc == 2 and "not a cassette" in one_error_line(err, p)


@pytest.mark.parametrize(
    "junk",
    [b"\x00\x01\x02binary\xff" * 100, bytes(range(128, 256)) * 30],
    ids=["with-nul", "high-bytes"],
)
def test_binary_junk(tmp_path, capsys, junk):
    p = tmp_path / "junk.bin"
    p.write_bytes(junk)
    rc, _, err = run_cli(capsys, str(p))
    assert rc == 2
    one_error_line(err, p)


def test_directory(tmp_path, capsys):
    rc, _, err = run_cli(capsys, str(tmp_path))
    assert rc == 2 and "directory" in one_error_line(err, tmp_path)


def test_missing_file(tmp_path, capsys):
    p = tmp_path / "nope.jsonl"
    rc, _, err = run_cli(capsys, str(p))
    assert rc == 2 and "no such file" in one_error_line(err, p)


def test_invalid_utf8_in_jsonl_names_the_line(tmp_path, capsys):
    p = tmp_path / "latin1.jsonl"
    p.write_bytes(json.dumps(CHUNK[0]).encode() + b'\n{"x": "caf\xe9"}\n')
    rc, _, err = run_cli(capsys, str(p))
    assert rc == 2 and "UTF-8" in one_error_line(err, p, 2)


def test_har_that_is_not_json(tmp_path, capsys):
    p = tmp_path / "cut.har"
    p.write_text('{"log": {"entries": [')
    rc, _, err = run_cli(capsys, str(p))
    assert rc == 2 and "not valid JSON" in one_error_line(err, p)


def test_one_bad_input_does_not_hide_the_good_ones(tmp_path, capsys):
    good = tmp_path / "good.jsonl"
    good.write_text(S.REFERENCE_SINGLE_JSONL)
    bad = tmp_path / "missing.jsonl"
    rc, out, err = run_cli(capsys, "--json", str(good), str(bad))
    assert rc == 2
    one_error_line(err, bad)
    (c,) = json.loads(out)["captures"]
    assert c["source"] == str(good) and c["verdict"] == "conforms"


def test_reader_errors_are_input_errors(tmp_path):
    """The library door raises InputError (str() = the one line), never a bare exception."""
    for make in (lambda p: p.write_bytes(b""), lambda p: p.write_bytes(b"\x00" * 10)):
        p = tmp_path / "x.jsonl"
        make(p)
        with pytest.raises(InputError) as e:
            read_path(p)
        assert str(e.value).startswith(str(p))


# =============================================================================== readable: findings


def test_chunk_that_is_json_but_not_an_object(tmp_path, capsys):
    p = tmp_path / "values.jsonl"
    lines = [json.dumps(CHUNK[0]), "[1, 2]", '"a string"', "42", "null"]
    lines += [json.dumps(c) for c in CHUNK[1:]]
    p.write_text("\n".join(lines) + "\n")
    rc, out, err = run_cli(capsys, "--json", str(p))
    assert rc == 0 and err == ""
    (c,) = json.loads(out)["captures"]
    (f,) = [f for f in c["findings"] if f["rule"] == "R-CHUNK-OBJECT"]
    assert (f["event"], f["pointer"], f["count"]) == (1, "", 4)
    # the chunks around them are still read: the call is assembled
    assert [t["name"] for t in c["tool_calls"]["robust"]] == ["get_weather"]


def test_fifty_megabyte_sse_event_is_a_finding_and_the_rest_is_read(tmp_path, capsys):
    big = "x" * (50 * 1024 * 1024)
    head = json.dumps({**CHUNK[0], "choices": [{"index": 0, "delta": {"content": big}}]})
    p = tmp_path / "big.sse"
    with p.open("w") as f:
        f.write(f"data: {head}\n\n")
        f.write(S.REFERENCE_SINGLE_SSE)
    rc, out, err = run_cli(capsys, "--json", str(p))
    assert rc == 0 and err == ""
    (c,) = json.loads(out)["captures"]
    (f,) = [f for f in c["findings"] if f["rule"] == "R-SSE-WELL-FORMED"]
    assert f["event"] == 0 and str(MAX_EVENT_BYTES) in f["message"]
    assert c["finish_reason"] == "tool_calls"
    assert [t["id"] for t in c["tool_calls"]["robust"]] == [S.REFERENCE_SINGLE_CALLS[0][0]]


def test_oversized_event_cut_by_the_end_of_the_stream(tmp_path):
    p = tmp_path / "cut.sse"
    p.write_text(S.REFERENCE_TEXT_SSE + "data: " + "y" * (MAX_EVENT_BYTES + 10))
    (t,) = read_path(p)
    r = analyze(t)
    faults = [f for f in r.findings if f.rule == "R-SSE-WELL-FORMED"]
    assert len(faults) == 1 and "ended inside" in faults[0].message
    assert r.finish_reason == "stop"


def test_fifty_megabyte_jsonl_line_is_read(tmp_path, capsys):
    """JSONL has no framing: a large line is a large chunk, read like any other."""
    big = "x" * (50 * 1024 * 1024)
    p = tmp_path / "big.jsonl"
    lines = [json.dumps({**CHUNK[0], "choices": [{"index": 0, "delta": {"content": big}}]})]
    p.write_text("\n".join(lines + [json.dumps(c) for c in CHUNK[1:]]) + "\n")
    rc, out, err = run_cli(capsys, "--json", str(p))
    assert rc == 0 and err == ""
    assert json.loads(out)["captures"][0]["finish_reason"] == "tool_calls"


def test_invalid_utf8_in_sse_is_a_finding(tmp_path):
    p = tmp_path / "bad.sse"
    p.write_bytes(S.REFERENCE_TEXT_SSE.encode().replace(b"sunny", b"sunn\xff"))
    (t,) = read_path(p)
    r = analyze(t)
    assert any(f.rule == "R-SSE-WELL-FORMED" and "UTF-8" in f.message for f in r.findings)
    assert r.finish_reason == "stop"


# =============================================================================== subprocess


def test_subprocess_bad_input_is_one_line_exit_2(tmp_path):
    p = tmp_path / "junk.jsonl"
    p.write_text('{"choices": []}\n{broken\n')
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "analyze", str(p)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"conformance: {p}:2: not a JSON line: {{broken"]


# =============================================================================== readers


def _cassette(bodies: list[bytes | str], gzip_body: bool = False) -> dict:
    interactions = []
    for body in bodies:
        raw = body.encode() if isinstance(body, str) else body
        headers = {"Content-Type": ["text/event-stream; charset=utf-8"]}
        if gzip_body:
            raw = gzip.compress(raw)
            headers["Content-Encoding"] = ["gzip"]
        interactions.append(
            {
                "request": {
                    "body": json.dumps({"model": "gpt-4o", "stream": True}),
                    "headers": {"Content-Type": ["application/json"]},
                    "method": "POST",
                    "uri": "https://api.example.com/v1/chat/completions",
                },
                "response": {
                    "body": {"string": raw if gzip_body else raw.decode()},
                    "headers": headers,
                    "status": {"code": 200, "message": "OK"},
                },
            }
        )
    return {"interactions": interactions, "version": 1}


@pytest.mark.parametrize("gzip_body", [False, True], ids=["plain-string", "gzip-binary"])
def test_vcrpy_cassette(tmp_path, capsys, gzip_body):
    p = tmp_path / "cassette.yaml"
    text = yaml.dump(_cassette([S.REFERENCE_SINGLE_SSE, S.REFERENCE_TEXT_SSE], gzip_body))
    assert ("!!binary" in text) == gzip_body  # the way vcrpy stores a gzip body
    p.write_text(text)
    rc, out, err = run_cli(capsys, "--json", str(p))
    assert rc == 0 and err == ""
    first, second = json.loads(out)["captures"]
    assert (first["source"], second["source"]) == (f"{p}#0", f"{p}#1")
    assert first["verdict"] == "conforms" and second["verdict"] == "conforms"
    assert [c["id"] for c in first["tool_calls"]["robust"]] == [S.REFERENCE_SINGLE_CALLS[0][0]]
    assert second["finish_reason"] == "stop" and second["tool_calls"]["robust"] == []
    # framing rules are judged on a cassette (it holds the raw SSE body)
    (t0, _) = read_path(p)
    assert t0.framing and analyze(t0).rules["R-SSE-DONE"] == "pass"


def _har(content: dict) -> dict:
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "test", "version": "1"},
            "entries": [
                {
                    "request": {
                        "method": "POST",
                        "url": "https://api.example.com/v1/chat/completions",
                        "headers": [{"name": "content-type", "value": "application/json"}],
                        "postData": {"mimeType": "application/json", "text": '{"stream":true}'},
                    },
                    "response": {
                        "status": 200,
                        "headers": [{"name": "Content-Type", "value": "text/event-stream"}],
                        "content": content,
                    },
                }
            ],
        }
    }


@pytest.mark.parametrize("encoding", ["plain", "base64"])
def test_har_file(tmp_path, capsys, encoding):
    body = S.REFERENCE_PARALLEL_SSE
    if encoding == "base64":
        content = {
            "mimeType": "text/event-stream",
            "encoding": "base64",
            "text": base64.b64encode(body.encode()).decode(),
        }
    else:
        content = {"mimeType": "text/event-stream", "text": body}
    p = tmp_path / "capture.har"
    p.write_text(json.dumps(_har(content)))
    rc, out, err = run_cli(capsys, "--json", str(p))
    assert rc == 0 and err == ""
    (c,) = json.loads(out)["captures"]
    assert c["source"] == f"{p}#0" and c["verdict"] == "conforms"
    got = [(t["id"], t["name"]) for t in c["tool_calls"]["robust"]]
    assert got == [(i, n) for i, n, _ in S.REFERENCE_PARALLEL_CALLS]


def test_ndjson_served_as_an_event_stream_is_not_silently_empty(tmp_path):
    """Lines that are no SSE field (here: NDJSON) carry no event; each is a framing fault,
    not a stream that merely "never sent a finish_reason"."""
    p = tmp_path / "c.yaml"
    text = yaml.dump(_cassette([S.REFERENCE_SINGLE_JSONL]))
    p.write_text(text)
    (t,) = read_path(p)
    r = analyze(t)
    (f,) = [f for f in r.findings if f.rule == "R-SSE-WELL-FORMED"]
    assert f.message.startswith("not an SSE field: {") and f.count == len(CHUNK)
    assert r.verdict == "fails"


def test_byte_order_mark_is_not_a_field(tmp_path):
    p = tmp_path / "bom.sse"
    p.write_bytes(b"\xef\xbb\xbf" + S.REFERENCE_TEXT_SSE.encode())
    (t,) = read_path(p)
    r = analyze(t)
    assert r.verdict == "conforms" and r.findings == []


# =============================================================================== go-vcr

GO_VCR = Path(__file__).parent / "data" / "go-vcr"


def test_go_vcr_v2_cassette_is_analysed(capsys):
    """go-vcr's format 2 (Go SDKs' recordings): ``response.body`` is the body itself,
    ``response.code`` the status; a file the team wrote in that format."""
    p = GO_VCR / "v2-tool-call-streams.yaml"
    rc, out, err = run_cli(capsys, "--json", str(p))
    assert rc == 0 and err == ""
    first, second = json.loads(out)["captures"]
    assert (first["source"], second["source"]) == (f"{p}#0", f"{p}#1")
    assert first["verdict"] == "conforms" and first["finish_reason"] == "tool_calls"
    assert [(c["id"], c["name"], c["arguments"]) for c in first["tool_calls"]["robust"]] == [
        ("call_goVcrTeamWritten0000000A", "get_weather", '{"city": "Paris"}')
    ]
    assert second["verdict"] == "quirk" and second["quirks"] == ["Q-EMPTY-STRING-OVERWRITE"]
    # a naive client overwrites the id with "": the impact is read from the Go recording
    assert second["tool_calls"]["naive"][0]["id"] == ""
    (t0, _) = read_path(p)
    assert t0.status == 200 and t0.request["uri"].endswith("/v1/chat/completions")
    assert t0.framing and analyze(t0).rules["R-SSE-DONE"] == "pass"


def test_go_vcr_v1_cassette_is_analysed(capsys):
    p = GO_VCR / "v1-tool-call-stream.yaml"
    rc, out, err = run_cli(capsys, "--json", str(p))
    assert rc == 0 and err == ""
    ok, refused = json.loads(out)["captures"]
    assert ok["verdict"] == "conforms"
    assert ok["tool_calls"]["robust"][0]["id"] == "call_goVcrTeamWritten0000000C"
    assert refused["verdict"] == "error"
    assert [f["message"] for f in refused["findings"]] == ["HTTP 401: Incorrect API key provided"]


def test_go_vcr_cassette_without_a_comment_and_with_a_binary_body(tmp_path, capsys):
    """As go-vcr writes it: ``---`` first, no comment; a body that is not UTF-8 is a YAML
    ``!!binary`` (Go's yaml writes one) and is judged as bytes."""
    doc = yaml.safe_load((GO_VCR / "v2-tool-call-streams.yaml").read_text())
    body = doc["interactions"][0]["response"]["body"]
    doc["interactions"][0]["response"]["body"] = body.replace("Paris", "Par\xe9s").encode("latin-1")
    p = tmp_path / "go.yaml"
    p.write_text("---\n" + yaml.safe_dump(doc, sort_keys=False))
    rc, out, err = run_cli(capsys, "--json", str(p))
    assert rc == 0 and err == ""
    first = json.loads(out)["captures"][0]
    assert first["verdict"] == "fails"  # invalid UTF-8 in the stream is a framing finding
    assert any(f["rule"] == "R-SSE-WELL-FORMED" for f in first["findings"])


@pytest.mark.parametrize(
    "where, value, says",
    [
        (("response",), "oops", "interaction 0: `response` is a string, not a mapping"),
        (
            ("response", "body"),
            12,
            "interaction 0: response body is a number, neither text nor binary",
        ),
        (("response", "body"), {"string": ["a"]}, "interaction 0: response body is a list"),
        (("response", "code"), "200", "interaction 0: response `code` is a string, not a number"),
        (("response", "status"), {"code": None, "message": "OK"}, None),  # vcrpy, no code: read
        (("response", "headers"), ["Content-Type"], "interaction 0: response headers is a list"),
        (("request",), None, None),  # no request at all: read
        (("request", "headers"), 5, "interaction 0: request headers is a number"),
    ],
)
def test_wrong_typed_cassette_field_is_one_line(tmp_path, capsys, where, value, says):
    doc = yaml.safe_load((GO_VCR / "v2-tool-call-streams.yaml").read_text())
    node = doc["interactions"][0]
    for k in where[:-1]:
        node = node[k]
    node[where[-1]] = value
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(doc))
    rc, out, err = run_cli(capsys, str(p))
    if says is None:
        assert rc == 0 and err == "", err
    else:
        assert rc == 2
        assert says in one_error_line(err, p)


@pytest.mark.parametrize(
    "mutate, says",
    [
        (lambda h: h["log"]["entries"].append("x"), "entry 1 is a string, not a mapping"),
        (lambda h: h["log"]["entries"][0].pop("response"), None),  # no response: read, error
        (
            lambda h: h["log"]["entries"][0]["response"].update(headers={"a": "b"}),
            "entry 0: response headers is a mapping, not a list",
        ),
        (
            lambda h: h["log"]["entries"][0]["response"]["content"].update(
                encoding="base64", text="!!not base64!!"
            ),
            "entry 0: content.text is not valid base64",
        ),
        (
            lambda h: h["log"]["entries"][0]["response"].update(status="200"),
            "entry 0: response status is a string, not a number",
        ),
        (lambda h: h["log"].update(entries={"a": 1}), "a JSON file without log.entries"),
    ],
)
def test_har_with_missing_or_wrong_typed_keys_is_one_line(tmp_path, capsys, mutate, says):
    har = _har({"mimeType": "text/event-stream", "text": S.REFERENCE_SINGLE_SSE})
    mutate(har)
    p = tmp_path / "bad.har"
    p.write_text(json.dumps(har))
    rc, out, err = run_cli(capsys, str(p))
    if says is None:
        assert rc == 0 and err == "", err
    else:
        assert rc == 2
        assert says in one_error_line(err, p)
