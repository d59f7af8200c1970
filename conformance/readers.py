"""One reader per input format, one Transcript model out.

Formats: JSONL (one chunk per line, no framing), raw SSE text, YAML cassettes of
pytest-recording / vcrpy (plain or gzip ``!!binary`` bodies) and of go-vcr (formats 1
and 2, as Go SDKs record), and HAR files. The format is sniffed from the content, never
trusted from the file name alone. A container of the wrong shape (a field of the wrong
type, a missing mapping) is an ``InputError`` naming the interaction and the field.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conformance.sse import iter_sse, payload_event
from conformance.transcript import Event, InputError, Transcript, header

BLOCK = 1 << 16


def __getattr__(name: str) -> Any:
    """``YamlLoader`` on demand: yaml is imported only when cassettes are read."""
    if name == "YamlLoader":
        import yaml

        return getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # C: faster on large cassettes
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    if _yaml_cassette_head(text):
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


def _yaml_cassette_head(text: str) -> bool:
    """A YAML document with a top-level ``interactions:`` key near its start, after any
    comments, ``%`` directives, ``---`` and a ``version:`` line (go-vcr writes those)."""
    lines = [ln for ln in text.splitlines()
             if ln.strip() and not ln.startswith(("#", "%", "---"))]
    return any(ln.startswith("interactions:") for ln in lines[:3])


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
    meta: dict[str, Any] = {}
    retried = header(headers, "x-conformance-connection-retry")  # transport.RETRY_HEADER
    if retried:  # recorded by the suite's transport: the request went on a new connection
        meta["connection_retry"] = retried
    return Transcript(
        source,
        fmt,
        framing,
        (lambda: iter_sse([body])) if framing else (lambda: iter(())),
        request=request,
        status=status,
        headers=headers,
        raw=body,
        meta=meta,
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
    import yaml  # here, not at the top: only cassettes need it (start-up of `analyze`)

    loader = __getattr__("YamlLoader")
    try:
        data = yaml.load(path.read_bytes(), Loader=loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise InputError(str(path), f"not valid YAML ({reason})", line) from None
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise InputError(str(path), "a YAML file without an `interactions` list (not a cassette)")
    return data


def _mapping(value: Any, source: str, what: str) -> dict[str, Any]:
    """``value`` as a mapping (absent is empty); anything else is an InputError."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(source, f"{what} is {_json_kind(value)}, not a mapping")
    return value


def _json_kind(value: Any) -> str:
    """What a YAML/JSON value is, in the words of JSON (never a Python type name)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bytes):
        return "binary data"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "a date" if hasattr(value, "isoformat") else "an unsupported value"


def _headers(value: Any, source: str, what: str) -> dict[str, str]:
    _mapping(value, source, what)
    return _flat_headers(value)


def _status_code(value: Any, source: str, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(source, f"{what} is {_json_kind(value)}, not a number")
    return value


def _body_bytes(value: Any, source: str, what: str) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    if isinstance(value, bytes):
        return value
    raise InputError(source, f"{what} is {_json_kind(value)}, neither text nor binary")


def _interaction(it: Any, source: str, i: int) -> tuple[dict[str, Any], int | None,
                                                         dict[str, str], bytes]:
    """One recorded exchange of either dialect: (request, status, headers, body).

    vcrpy / pytest-recording: ``request.uri``, ``response.status.code``,
    ``response.body.string``. go-vcr (cassette format 1 of go-vcr v1, format 2 of
    go-vcr v2 to v4, as Go SDKs record): ``request.url``, ``response.code`` (``status``
    is the text ``200 OK``), ``response.body`` a string."""
    where = f"interaction {i}"
    if not isinstance(it, dict):
        raise InputError(source, f"{where} is {_json_kind(it)}, not a mapping")
    req = _mapping(it.get("request"), source, f"{where}: `request`")
    resp = _mapping(it.get("response"), source, f"{where}: `response`")
    raw_body = resp.get("body")
    if isinstance(raw_body, dict):  # vcrpy
        body = _body_bytes(raw_body.get("string"), source, f"{where}: response body")
    else:  # go-vcr
        body = _body_bytes(raw_body, source, f"{where}: response body")
    status = resp.get("status")
    if isinstance(status, dict):  # vcrpy
        code = _status_code(status.get("code"), source, f"{where}: response status code")
    else:  # go-vcr: `code`, and `status` as text ("200 OK")
        code = _status_code(resp.get("code"), source, f"{where}: response `code`")
        if code is None and status is not None:
            code = _status_code(status, source, f"{where}: response `status`")
    uri = req.get("uri", req.get("url"))
    request = {
        "method": None if req.get("method") is None else str(req.get("method")),
        "uri": None if uri is None else str(uri),
        "headers": _headers(req.get("headers"), source, f"{where}: request headers"),
        "body": _request_body(req.get("body")),
    }
    return request, code, _headers(resp.get("headers"), source,
                                   f"{where}: response headers"), body


def cassette_transcripts(data: dict[str, Any], source: str) -> list[Transcript]:
    out = []
    for i, it in enumerate(data["interactions"]):
        request, status, headers, body = _interaction(it, source, i)
        t = exchange_transcript(f"{source}#{i}", "cassette", request, status, headers, body)
        meta = it.get("conformance")
        if isinstance(meta, dict):
            t.meta.update(meta)
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
    except (ValueError, RecursionError) as e:
        raise InputError(str(path), f"not valid JSON ({_one_line(e)})") from None
    entries = (data.get("log") or {}).get("entries") if isinstance(data, dict) and \
        isinstance(data.get("log") or {}, dict) else None
    if not isinstance(entries, list):
        raise InputError(str(path), "a JSON file without log.entries (not a HAR file)")
    source = str(path)
    out = []
    for i, e in enumerate(entries):
        where = f"entry {i}"
        if not isinstance(e, dict):
            raise InputError(source, f"{where} is {_json_kind(e)}, not a mapping")
        req = _mapping(e.get("request"), source, f"{where}: `request`")
        resp = _mapping(e.get("response"), source, f"{where}: `response`")
        content = _mapping(resp.get("content"), source, f"{where}: response content")
        text = content.get("text")
        if content.get("encoding") == "base64":
            try:
                body = base64.b64decode(_body_bytes(text, source, f"{where}: content.text"),
                                        validate=False)
            except ValueError:
                raise InputError(source, f"{where}: content.text is not valid base64") \
                    from None
        else:
            body = _body_bytes(text, source, f"{where}: content.text")
        headers = {k: v for k, v in _har_headers(resp.get("headers"), source,
                                                 f"{where}: response headers").items()
                   if k.lower() != "content-encoding"}  # HAR bodies are stored decoded
        mime = content.get("mimeType")
        if isinstance(mime, str) and mime and not header(headers, "content-type"):
            headers["content-type"] = mime
        post = _mapping(req.get("postData"), source, f"{where}: request postData")
        url = req.get("url")
        request = {
            "method": None if req.get("method") is None else str(req.get("method")),
            "uri": None if url is None else str(url),
            "headers": _har_headers(req.get("headers"), source, f"{where}: request headers"),
            "body": _request_body(post.get("text")),
        }
        status = _status_code(resp.get("status"), source, f"{where}: response status")
        out.append(exchange_transcript(f"{path}#{i}", "har", request, status, headers, body))
    return out


def _har_headers(value: Any, source: str, what: str) -> dict[str, str]:
    """HAR headers: a list of ``{name, value}``."""
    if value is None:
        return {}
    if not isinstance(value, list):
        raise InputError(source, f"{what} is {_json_kind(value)}, not a list")
    out: dict[str, str] = {}
    for h in value:
        if not isinstance(h, dict):
            raise InputError(source, f"{what}: an entry is {_json_kind(h)}, not a mapping")
        out[str(h.get("name", ""))] = str(h.get("value", ""))
    return out


def _one_line(e: Exception) -> str:
    """A parser's message, one line (the input may hold anything)."""
    return " ".join(str(e).split())[:160]
