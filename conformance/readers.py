"""One reader per input format, one Transcript model out.

Formats: JSONL (one chunk per line, no framing), raw SSE text, pytest-recording /
vcrpy cassettes (YAML, plain or gzip ``!!binary`` bodies) and HAR files. The format is
sniffed from the content, never trusted from the file name alone.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from conformance.sse import iter_sse, payload_event
from conformance.transcript import Event, InputError, Transcript, header

try:  # the C loader is several times faster on large cassettes
    YamlLoader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    YamlLoader = yaml.SafeLoader

BLOCK = 1 << 16


def sniff(path: Path) -> str:
    with path.open("rb") as f:
        head = f.read(4096)
    if not head.strip():
        raise InputError(str(path), "empty file")
    if b"\x00" in head:
        raise InputError(str(path), "binary data, not a text capture")
    text = head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if text.startswith(("data:", "event:", ":", "id:", "retry:")):
        return "sse"
    if text.startswith("interactions:") or "\ninteractions:" in text[:200]:
        return "cassette"
    if (
        text.startswith("{")
        and '"log"' in text[:200]
        and ('"entries"' in text or '"creator"' in text[:400])
    ):
        return "har"
    if text.startswith(("{", "[")):
        return "jsonl"
    raise InputError(
        str(path), f"not JSONL, SSE, a vcrpy cassette or a HAR file (starts with {text[:20]!r})"
    )


def read_path(path: str | Path) -> list[Transcript]:
    p = Path(path)
    if not p.exists():
        raise InputError(str(p), "no such file")
    if p.is_dir():
        raise InputError(str(p), "is a directory")
    fmt = sniff(p)
    return {
        "sse": read_sse_file,
        "jsonl": read_jsonl_file,
        "cassette": read_cassette_file,
        "har": read_har_file,
    }[fmt](p)


# ---------------------------------------------------------------- JSONL


def _iter_jsonl(path: Path) -> Iterator[Event]:
    n = 0
    with path.open("rb") as f:
        for line_no, raw in enumerate(f, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(str(path), f"invalid UTF-8 ({e.reason})", line_no) from None
            if not text.strip():
                continue
            ev = payload_event(n, text.strip(), line_no)
            if ev.kind == "nonjson":
                raise InputError(str(path), "not a JSON line: " + text.strip()[:60], line_no)
            yield ev
            n += 1


def read_jsonl_file(path: Path) -> list[Transcript]:
    # Validate eagerly but cheaply: the first line must be JSON, the rest is checked lazily
    # by the analyzer, which turns a late bad line into an InputError with its line number.
    return [Transcript(str(path), "jsonl", False, lambda: _iter_jsonl(path))]


# ---------------------------------------------------------------- raw SSE


def _iter_file_blocks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as f:
        while block := f.read(BLOCK):
            yield block


def read_sse_file(path: Path) -> list[Transcript]:
    return [Transcript(str(path), "sse", True, lambda: iter_sse(_iter_file_blocks(path)))]


# ---------------------------------------------------------------- shared body handling


def decode_body(body: bytes, headers: dict[str, str] | None) -> bytes:
    """Undo Content-Encoding (gzip/deflate) so the SSE text is judged, not the envelope."""
    enc = (header(headers, "content-encoding") or "").lower()
    if body[:2] == b"\x1f\x8b" or enc == "gzip":
        try:
            return gzip.decompress(body)
        except (OSError, EOFError, zlib.error):
            return body
    if enc == "deflate":
        try:
            return zlib.decompress(body)
        except zlib.error:
            return body
    return body


def exchange_transcript(
    source: str,
    fmt: str,
    request: dict[str, Any] | None,
    status: int | None,
    headers: dict[str, str] | None,
    body: bytes,
) -> Transcript:
    body = decode_body(body, headers)
    ctype = (header(headers, "content-type") or "").lower()
    stream_requested = bool(
        request and isinstance(request.get("body"), dict) and request["body"].get("stream")
    )
    framing = "text/event-stream" in ctype or (not ctype and body.lstrip().startswith(b"data:"))
    if not framing and stream_requested and body.lstrip().startswith(b"data:"):
        framing = True
    return Transcript(
        source,
        fmt,
        framing,
        (lambda: iter_sse([body])) if framing else (lambda: iter(())),
        request=request,
        status=status,
        headers=headers,
        raw=body,
    )


def _request_body(text: Any) -> Any:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str) or not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


# ---------------------------------------------------------------- vcrpy cassettes


def _flat_headers(h: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(h, dict):
        for k, v in h.items():
            out[str(k)] = ", ".join(map(str, v)) if isinstance(v, list) else str(v)
    return out


def load_cassette(path: Path) -> dict[str, Any]:
    try:
        data = yaml.load(path.read_bytes(), Loader=YamlLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(str(path), f"not valid YAML ({reason})", line) from None
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise InputError(str(path), "a YAML file without an `interactions` list (not a cassette)")
    return data


def cassette_transcripts(data: dict[str, Any], source: str) -> list[Transcript]:
    out = []
    for i, it in enumerate(data["interactions"]):
        if not isinstance(it, dict):
            raise InputError(source, f"interaction {i} is not a mapping")
        req, resp = it.get("request") or {}, it.get("response") or {}
        body = (resp.get("body") or {}).get("string", b"")
        if isinstance(body, str):
            body = body.encode("utf-8")
        elif not isinstance(body, bytes):
            raise InputError(source, f"interaction {i}: response body is neither text nor binary")
        status = (resp.get("status") or {}).get("code")
        request = {
            "method": req.get("method"),
            "uri": req.get("uri"),
            "headers": _flat_headers(req.get("headers")),
            "body": _request_body(req.get("body")),
        }
        t = exchange_transcript(
            f"{source}#{i}", "cassette", request, status, _flat_headers(resp.get("headers")), body
        )
        t.meta.update(it.get("conformance") or {})
        _recorded_fault(t)
        out.append(t)
    return out


def _recorded_fault(t: Transcript) -> None:
    """A fault the suite met while recording (a stall, a cut body) is kept in the
    cassette as response headers; a reader of the cassette sees the same error."""
    from conformance.transport import FAULT_HEADER, QUIRK_HEADER

    reason = header(t.headers, FAULT_HEADER)
    if reason:
        t.transport_error = reason
        quirk = header(t.headers, QUIRK_HEADER)
        if quirk:
            t.meta["transport_quirk"] = quirk


def read_cassette_file(path: Path) -> list[Transcript]:
    return cassette_transcripts(load_cassette(path), str(path))


# ---------------------------------------------------------------- HAR


def read_har_file(path: Path) -> list[Transcript]:
    try:
        data = json.loads(path.read_bytes())
    except ValueError as e:
        raise InputError(str(path), f"not valid JSON ({e})") from None
    entries = (data.get("log") or {}).get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise InputError(str(path), "a JSON file without log.entries (not a HAR file)")
    out = []
    for i, e in enumerate(entries):
        req, resp = e.get("request") or {}, e.get("response") or {}
        content = resp.get("content") or {}
        text = content.get("text") or ""
        body = base64.b64decode(text) if content.get("encoding") == "base64" else text.encode()
        headers = {h.get("name", ""): h.get("value", "") for h in resp.get("headers") or []}
        headers.pop("content-encoding", None)  # HAR bodies are stored decoded
        headers = {k: v for k, v in headers.items() if k.lower() != "content-encoding"}
        if content.get("mimeType") and not header(headers, "content-type"):
            headers["content-type"] = content["mimeType"]
        request = {
            "method": req.get("method"),
            "uri": req.get("url"),
            "headers": {h.get("name", ""): h.get("value", "") for h in req.get("headers") or []},
            "body": _request_body((req.get("postData") or {}).get("text")),
        }
        out.append(
            exchange_transcript(f"{path}#{i}", "har", request, resp.get("status"), headers, body)
        )
    return out
