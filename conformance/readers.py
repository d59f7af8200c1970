"""One reader per input format, one Transcript model out.

Formats: JSONL (one chunk per line, no framing), raw SSE text, YAML cassettes of
pytest-recording / vcrpy (plain or gzip ``!!binary`` bodies) and of go-vcr (formats 1
and 2, as Go SDKs record), and HAR files. The format is sniffed from the content, never
trusted from the file name alone. A container of the wrong shape (a field of the wrong
type, a missing mapping) is an ``InputError`` naming the interaction and the field.
"""

from __future__ import annotations

import base64
import codecs
import io
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

import conformance.decoding as decoding
from conformance.sse import MAX_EVENT_BYTES, iter_sse, payload_event
from conformance.transcript import Event, InputError, Transcript, header

BLOCK = 1 << 16


def __getattr__(name: str) -> Any:
    """``YamlLoader`` on demand: yaml is imported only when cassettes are read. It is
    ``safeyaml.Loader``: safe (no Python tags) and bounded (aliases), libyaml's parser."""
    if name == "YamlLoader":
        from conformance.safeyaml import Loader

        return Loader
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
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(("#", "%", "---"))]
    return any(ln.startswith("interactions:") for ln in lines[:3])


def read_path(path: str | Path) -> list[Transcript]:
    p = Path(path)
    if not p.exists():
        raise InputError(str(p), "no such file")
    if p.is_dir():
        raise InputError(str(p), "is a directory")
    if not p.is_file():  # a pipe, a FIFO, `<(cat x.sse)`: it can be read only once
        with p.open("rb") as f:
            return read_stream(f, str(p))
    fmt = sniff(p)
    return {
        "sse": read_sse_file,
        "jsonl": read_jsonl_file,
        "cassette": read_cassette_file,
        "har": read_har_file,
    }[fmt](p)


SPOOL_LIMIT = 1 << 30  # bytes of a pipe or standard input copied, at most
HAR_LIMIT = 256 << 20  # bytes of a HAR file (one JSON document, parsed whole), at most


def read_stream(stream: BinaryIO, name: str, limit: int = SPOOL_LIMIT) -> list[Transcript]:
    """The transcripts of a stream that can be read only once (standard input, a pipe, a
    FIFO): copied once, at most ``limit`` bytes, into a private temporary file that the
    sniffer and the reader then share (it is removed with the transcripts); sources and
    errors name ``name``. Past the limit, or when the copy fails (a full disk), one
    ``InputError`` line."""
    tmp = tempfile.TemporaryDirectory(prefix="conformance-input-")
    spooled = Path(tmp.name) / "input"
    try:
        with spooled.open("wb") as out:
            total = 0
            while block := stream.read(1 << 20):
                total += len(block)
                if total > limit:
                    raise InputError(
                        name,
                        f"over {limit:,} bytes, more than is read from a "
                        "stream; save it to a file and pass its path",
                    )
                out.write(block)
    except OSError as e:
        tmp.cleanup()
        raise InputError(
            name,
            f"cannot be copied to a temporary file "
            f"({e.strerror or type(e).__name__}); save it to a file and "
            "pass its path",
        ) from None
    except InputError:
        tmp.cleanup()
        raise
    try:
        transcripts = read_path(spooled)
    except InputError as e:
        tmp.cleanup()
        raise InputError(name, e.reason.replace(str(spooled), name), e.line) from None
    for t in transcripts:
        t.source = t.source.replace(str(spooled), name)
        t.events_factory = _renamed(t.events_factory, name)
        t._spool = tmp  # type: ignore[attr-defined]  # the file lives as long as they do
    return transcripts


def _renamed(factory: Callable[[], Any], name: str) -> Callable[[], Iterator[Event]]:
    """``factory``'s events; an InputError met while reading them names ``name``."""

    def events() -> Iterator[Event]:
        try:
            yield from factory()
        except InputError as e:
            raise InputError(name, e.reason, e.line) from None

    return events


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
    """The file in blocks of about 64 KiB whose concatenation is the file. A line that runs
    past its block is held, with the bytes of the blank line before it, until it ends, and
    given in one block: a line over a MiB then reaches the SSE decoder whole, as a body in
    memory does, and its long identifiers are cut before it is decoded
    (``conformance.longstrings``). The events are the same however the bytes are split;
    what is held is one line at most, and never more than an event may be."""
    held = bytearray()
    first = True
    with path.open("rb") as f:
        while block := f.read(BLOCK):
            if held:
                held += block
                if b"\n" not in block and b"\r" not in block:
                    if len(held) <= MAX_EVENT_BYTES:
                        continue  # the held line goes on
                    yield bytes(held)  # longer than any event: given as it comes
                    held.clear()
                    continue
                data = bytes(held)
                held.clear()
            else:
                data = block
            start = _unfinished_line(data, first)
            first = False
            if start < 0:
                yield data
                continue
            if start:
                yield data[:start]
            held += data[start:]
        if held:
            yield bytes(held)


def _unfinished_line(data: bytes, first: bool) -> int:
    """Where to hold ``data`` from: up to 4 bytes before the start of its last line when
    that line has not ended (the blank line that may precede it); -1 when ``data`` ends
    with a line end, or is all one line that did not start in it."""
    last = max(data.rfind(b"\n"), data.rfind(b"\r"))
    if last == len(data) - 1 or (last < 0 and not first):
        return -1
    return max(0, last + 1 - 4)


def read_sse_file(path: Path) -> list[Transcript]:
    return [Transcript(str(path), "sse", True, lambda: iter_sse(_iter_file_blocks(path)))]


# ---------------------------------------------------------------- shared body handling


def decode_body(body: bytes, headers: dict[str, str] | None) -> bytes:
    """Undo every content coding (``decoding.decode_or_keep``: stacked, unlabelled,
    bounded by the default ``max_bytes``) so the SSE text is judged, not the envelope."""
    return decoding.decode_or_keep(body, headers)[0]


# The suite's transport records when each body line arrived (transport.py, where it is
# written): "L:T ..." pairs, L lines complete T seconds after the request was sent.
TIMES_HEADER = "x-conformance-line-times"


def line_times(value: str | None) -> list[tuple[int, float]] | None:
    """The pairs of a TIMES_HEADER value; None when absent or not well formed (then the
    capture has no timings and timing findings are not applicable)."""
    if not value:
        return None
    out = []
    try:
        for pair in value.split():
            lines, _, secs = pair.partition(":")
            out.append((int(lines), float(secs)))
    except ValueError:
        return None
    return out or None


def exchange_transcript(
    source: str,
    fmt: str,
    request: dict[str, Any] | None,
    status: int | None,
    headers: dict[str, str] | None,
    body: bytes,
) -> Transcript:
    body, undecodable = decoding.decode_or_keep(body, headers)  # bounded (issue 23)
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
    times = line_times(header(headers, TIMES_HEADER))
    if times is not None:  # when each line arrived (a cassette the suite wrote)
        meta["line_times"] = times
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
        transport_error=undecodable,
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
    """A cassette's document, safe and bounded (``safeyaml``): the one YAML load of
    ``analyze``, the replay's persister, the client matrix and the replay server."""
    data = load_yaml(path, lambda text: safe_yaml(text, str(path)))
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise InputError(str(path), "a YAML file without an `interactions` list (not a cassette)")
    return data


class YamlRefused(InputError):
    """Valid YAML refused (a Python tag, an alias bomb): never to be skipped silently."""


class CassetteRefused(InputError):
    """A cassette the replay will not load (a Python tag, an alias bomb, invalid YAML);
    str() is one line. Not vcrpy's ``CassetteDecodeError``, which vcrpy takes for "no
    cassette" (a refused file would then be recorded over)."""

    def __init__(self, message: str):
        Exception.__init__(self, message)
        self.source, self.line, self.reason = "", None, message


def safe_yaml(text: bytes | str, source: str) -> Any:
    """``safeyaml.load(text)``; a YAML error or a refusal (a Python tag, an alias bomb) is
    an ``InputError`` naming ``source`` and the line."""
    import yaml  # here, not at the top: only cassettes need it (start-up of `analyze`)

    from conformance import safeyaml

    try:
        return safeyaml.load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = _one_line(Exception(getattr(e, "problem", None) or str(e).splitlines()[0]))
        if isinstance(e, safeyaml.Refused):
            raise YamlRefused(source, reason, line) from None
        raise InputError(source, f"not valid YAML ({reason})", line) from None


LINE = 1 << 16  # a line longer than this is not read whole when it holds a body
READ = 1 << 18  # bytes of such a line read at once
# A body set aside stands as this plus a number and a nonce (not key-shaped: redaction
# leaves it) in the text the YAML writer and reader see.
SET_ASIDE = "conformance-set-aside-"


def set_aside_mark(n: int) -> str:
    return f"{SET_ASIDE}{n}-{os.urandom(8).hex()}"


_BODY_LINE = re.compile(rb'( *)string: "')


def load_yaml(path: Path, load: Callable[[bytes], Any]) -> Any:
    """``load(text)`` of a YAML cassette, where every line longer than ``LINE`` that
    holds a body on one line (``<indent>string: "…"``, as ``save_cassette`` writes one)
    is decoded a slice at a time into bytes and stands in the text as a placeholder,
    then put back in what ``load`` returns: its text is never held. Any other long line
    is read whole. A body line that is not what this reader knows (an escape it does not
    decode, no closing quote) has the whole file loaded by ``load`` instead."""
    text: list[bytes] = []
    bodies: dict[str, bytes] = {}
    with path.open("rb") as f:
        while line := f.readline(LINE):
            m = _BODY_LINE.match(line)
            if line.endswith(b"\n") or len(line) < LINE or not m:
                text.append(line)
                while not line.endswith(b"\n") and (line := f.readline(LINE)):
                    text.append(line)  # a long line that holds no body: whole
                continue
            try:
                body = _read_body(f, line[m.end() :])
            except ValueError:
                return load(path.read_bytes())
            mark = set_aside_mark(len(bodies))
            bodies[mark] = body
            text.append(m.group(1) + b"string: " + mark.encode() + b"\n")
    data = load(b"".join(text))
    if bodies and _put_back(data, bodies) != len(bodies):
        return load(path.read_bytes())  # a body line inside something else: a block scalar
    return data


def _read_body(f: Any, head: bytes) -> bytes:
    """The bytes of a double-quoted scalar whose first ``head`` was read, read from ``f``
    to the end of its line a slice at a time (an escape may straddle a slice end)."""
    out = io.BytesIO()  # grown in place, handed on without a copy
    pending = head
    while True:
        chunk = f.readline(READ)
        last = not chunk or chunk.endswith(b"\n")  # the line's end, or the file's
        data = pending + chunk if pending else chunk
        del chunk
        view = memoryview(data)
        if last:
            end = len(data) - 2 if data.endswith(b'"\n') else -1  # before the closing quote
            if end < 0 or _open_escape(data, end) != end:
                raise ValueError("no closing quote")
            out.write(_unescape(view[:end]))
            return out.getvalue()
        # kept back: the last byte (the closing quote?) and an escape the slice end cuts
        cut = _open_escape(data, len(data) - 1)
        out.write(_unescape(view[:cut]))
        pending = data[cut:]


def _open_escape(data: bytes, end: int) -> int:
    """Where an escape that ``data[:end]`` ends before completing starts (``end`` when
    none does). Only the last backslash can start one: it starts one when the run of
    backslashes it ends is odd (``\\\\`` is an escaped backslash)."""
    at = data.rfind(b"\\", max(0, end - 10), end)
    if at < 0:
        return end
    run = at + 1 - len(data[max(0, at - 63) : at + 1].rstrip(b"\\")) - max(0, at - 63)
    if run == 64:  # a long run of backslashes: counted whole
        run = at + 1 - len(data[: at + 1].rstrip(b"\\"))
    if run % 2 == 0:
        return end
    size = {ord("x"): 4, ord("u"): 6, ord("U"): 10}.get(data[at + 1], 2) if at + 1 < end else 2
    return at if at + size > end else end


_NOT_PRINTABLE_ASCII = re.compile(rb"[^\t\x20-\x7e]")
_NOT_PYTHONS = re.compile(rb'\\[^xuUnrt"\\]')
_YAML_ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.?)", re.DOTALL)
_SIMPLE = {
    b"0": "\0",
    b"a": "\a",
    b"b": "\b",
    b"t": "\t",
    b"\t": "\t",
    b"n": "\n",
    b"v": "\v",
    b"f": "\f",
    b"r": "\r",
    b"e": "\x1b",
    b" ": " ",
    b'"': '"',
    b"/": "/",
    b"\\": "\\",
    b"N": "\x85",
    b"_": "\xa0",
    b"L": "\u2028",
    b"P": "\u2029",
}


def _unescape(data: memoryview) -> bytes:
    """The UTF-8 bytes of a slice of a double-quoted scalar's content (whole escapes).
    What ``_escape`` writes is ASCII with escapes Python's ``unicode_escape`` decodes as
    YAML does (fast, in C); other escapes go one by one. A raw byte outside printable
    ASCII (which YAML's reader may reject) is a ValueError: the file is loaded whole."""
    if _NOT_PRINTABLE_ASCII.search(data):
        raise ValueError("a raw byte outside printable ASCII")
    if not _NOT_PYTHONS.search(data):
        return codecs.unicode_escape_decode(data)[0].encode("utf-8")
    return _YAML_ESCAPE.sub(_one_escape, bytes(data))


def _one_escape(m: re.Match[bytes]) -> bytes:
    code = m.group(1)
    if len(code) > 2:
        return chr(int(code[1:], 16)).encode("utf-8")  # a surrogate: ValueError, load whole
    if code not in _SIMPLE:
        raise ValueError(f"an escape YAML does not know: {code!r}")
    return _SIMPLE[code].encode("utf-8")


def _put_back(data: Any, bodies: dict[str, bytes]) -> int:
    """Replace each placeholder string in ``data`` by its body (iteratively: no recursion
    limit on what a file nests); how many were put back."""
    stack, done = [data], 0
    while stack:
        node = stack.pop()
        items = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node)
            if isinstance(node, list)
            else ()
        )
        for k, v in list(items):
            if isinstance(v, str) and v in bodies:
                node[k] = bodies[v]
                done += 1
            elif isinstance(v, dict | list):
                stack.append(v)
    return done


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


def _interaction(
    it: Any, source: str, i: int
) -> tuple[dict[str, Any], int | None, dict[str, str], bytes]:
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
    return request, code, _headers(resp.get("headers"), source, f"{where}: response headers"), body


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
    with path.open("rb") as f:
        # Never more than the bound, whatever stat says (a pipe, /proc), read in blocks:
        # one read(HAR_LIMIT + 1) allocates the whole bound up front even for a small file.
        st = os.fstat(f.fileno())
        too_big = stat.S_ISREG(st.st_mode) and st.st_size > HAR_LIMIT  # refused unread
        raw = bytearray()
        while not too_big and (block := f.read(min(1 << 20, HAR_LIMIT + 1 - len(raw)))):
            raw += block
            too_big = len(raw) > HAR_LIMIT
    if too_big:
        raise InputError(
            str(path),
            f"a HAR file over {HAR_LIMIT >> 20} MiB (it is one JSON "
            "document, read whole); export fewer entries, or the "
            "streams as SSE or a cassette",
        )
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise InputError(str(path), f"not valid JSON ({_one_line(e)})") from None
    entries = (
        (data.get("log") or {}).get("entries")
        if isinstance(data, dict) and isinstance(data.get("log") or {}, dict)
        else None
    )
    if not isinstance(entries, list):
        raise InputError(str(path), "a JSON file without log.entries (not a HAR file)")
    source = str(path)
    out = []
    for i, entry in enumerate(entries):
        where = f"entry {i}"
        if not isinstance(entry, dict):
            raise InputError(source, f"{where} is {_json_kind(entry)}, not a mapping")
        req = _mapping(entry.get("request"), source, f"{where}: `request`")
        resp = _mapping(entry.get("response"), source, f"{where}: `response`")
        content = _mapping(resp.get("content"), source, f"{where}: response content")
        text = content.get("text")
        if content.get("encoding") == "base64":
            try:
                body = base64.b64decode(
                    _body_bytes(text, source, f"{where}: content.text"), validate=False
                )
            except ValueError:
                raise InputError(source, f"{where}: content.text is not valid base64") from None
        else:
            body = _body_bytes(text, source, f"{where}: content.text")
        headers = {
            k: v
            for k, v in _har_headers(
                resp.get("headers"), source, f"{where}: response headers"
            ).items()
            if k.lower() != "content-encoding"
        }  # HAR bodies are stored decoded
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
        t = exchange_transcript(f"{path}#{i}", "har", request, status, headers, body)
        times = _har_event_times(entry)
        if times is not None:
            t.meta["event_times"] = times
        out.append(t)
    return out


def _har_event_times(entry: dict[str, Any]) -> list[float] | None:
    """When each SSE message arrived, in seconds from the request: the entry's
    ``_eventSourceMessages`` (the browsers' HAR extension; each message's ``time`` in
    seconds since the epoch, like ``_webSocketMessages``) less its ``startedDateTime``.
    The k-th message is the body's k-th data event. None when the entry has no times."""
    messages = entry.get("_eventSourceMessages")
    started = entry.get("startedDateTime")
    if not isinstance(messages, list) or not messages or not isinstance(started, str):
        return None
    try:
        t0 = datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp()
        times = [float(m["time"]) - t0 for m in messages]
    except (ValueError, TypeError, KeyError):
        return None
    return times


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
