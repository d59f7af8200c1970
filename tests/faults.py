"""A real misbehaving HTTP server, for the tests of the suite's own machinery.

Every way an endpoint can fail a client, served over a real socket on 127.0.0.1 by a
small asyncio server (raw control is needed: a reply cut inside an event, headers that
never come, a body that never ends, invalid UTF-8, gzip). The healthy answer is the
reference-profile server's (``conformance.server.respond``), so a fault is a fault of
the transport, not of the tool-call stream.

    with fault_server() as fs:
        fs.base_url("stall")   # -> http://127.0.0.1:PORT/f/stall/v1
        fs.hits                # every request seen, headers and body included

Faults are chosen by path, ``/f/<fault>[/<arg>]/v1/chat/completions``:

==========================  ===================================================
``ok``                      the reference answer (healthy)
``echo``                    a 200 stream that echoes the caller's key: in a header,
                            a cookie, an SSE comment, a content delta, an extra field
                            and split across two content fragments (``?gzip=1``:
                            the whole body gzip-encoded)
``echo-401``                401 whose JSON error message quotes the key and the URL
``status/<code>``           that status with an OpenAI-style JSON error (429 and 503
                            carry ``Retry-After: 1``; ``?after=none`` omits it)
``flaky/<code>``            the first request of each body gets ``<code>`` with
                            ``Retry-After`` (``?after=1``; ``?after=date`` sends an
                            HTTP-date), the second the reference answer
``no-headers``              reads the request, never answers
``stall``                   headers and two events, then silence
``disconnect-mid-event``    chunked body cut inside an event (no terminating chunk)
``close-mid-event``         close-delimited body that ends inside an event
``json-error-200``          200 application/json ``{"error": …}``
``html-200``                200 text/html page (a captive portal, a proxy's login)
``error-event``             a stream with ``data: {"error": …}`` in the middle
``endless/<ms>``            content deltas forever, 5 kB every ``ms`` milliseconds (1)
``big-event/<MB>``          one event of ``MB`` megabytes (default 10), then the answer
``bad-utf8``                the answer with invalid UTF-8 bytes inside a content delta
``gzip``                    the answer gzip-encoded (Content-Encoding: gzip)
``gzip-bomb/<MB>``          ``MB`` megabytes of zeros, gzip-encoded to a few kB
``echo-hidden/<how>``       the reference answer with the caller's key hidden the way
                            ``how`` says: ``escaped`` (a JSON escape for one of its
                            characters), ``multiline`` (split across two events, the
                            first written over two ``data:`` lines), ``indexless``
                            (a call's arguments split, the second fragment without an
                            index), or the whole body compressed: ``gzip-unlabelled``
                            (no Content-Encoding), ``gzip-gzip`` (twice, one header),
                            ``two-headers`` (twice, two headers), ``br``, ``zstd``
``trickle-head/<ms>``       the response head one byte every ``ms`` milliseconds
                            (500): the head never completes within a short limit
``early-hints/<ms>``        ``103 Early Hints`` responses forever, one every ``ms``
                            milliseconds (200), never the final response
``keepalive-drop``          the answer on a kept-alive connection (no ``Connection:
                            close``), then the connection is closed when the next
                            request arrives on it, unanswered (as the xllamacpp
                            wheel's server does after a streamed answer)
==========================  ===================================================

Every wait is bounded (``max_wait``) and every connection is dropped when the context
manager exits.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import email.utils
import gzip
import json
import socket
import threading
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

FAULTS = (
    "ok",
    "echo",
    "echo-401",
    "status",
    "flaky",
    "no-headers",
    "stall",
    "disconnect-mid-event",
    "close-mid-event",
    "json-error-200",
    "html-200",
    "error-event",
    "endless",
    "big-event",
    "bad-utf8",
    "gzip",
    "gzip-bomb",
    "keepalive-drop",
    "trickle-head",
    "early-hints",
    "echo-hidden",
)
HIDDEN = (
    "escaped",
    "multiline",
    "indexless",
    "gzip-unlabelled",
    "gzip-gzip",
    "two-headers",
    "br",
    "zstd",
)

REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    200: "OK",
}


@dataclass
class Hit:
    """One request as the server saw it."""

    fault: str
    arg: str | None
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


@dataclass
class _Ctx:
    hit: Hit
    writer: asyncio.StreamWriter
    server: FaultServer
    reader: asyncio.StreamReader | None = None

    @property
    def key(self) -> str:
        """The credential the caller sent, wherever it sent it: a Bearer token, a key
        header (``api-key``, ``x-api-key``, ``Ocp-Apim-Subscription-Key``), the base64 of
        Basic credentials, a query parameter other than ``api-version``."""
        h = self.hit.headers
        auth = h.get("authorization", "")
        if auth.lower().startswith(("bearer ", "basic ")):
            return auth.split(" ", 1)[1]
        query = [v for k, v in self.hit.query.items() if k != "api-version"]
        return (
            h.get("api-key")
            or h.get("x-api-key")
            or h.get("ocp-apim-subscription-key")
            or self.hit.query.get("key")
            or (query[0] if query else "")
            or auth
        )

    @property
    def basic(self) -> str | None:
        """``user:password`` of Basic credentials, decoded; None without them."""
        auth = self.hit.headers.get("authorization", "")
        if not auth.lower().startswith("basic "):
            return None
        try:
            return base64.b64decode(auth[6:]).decode("utf-8", "replace")
        except ValueError:
            return None

    def request_body(self) -> dict[str, Any]:
        body = self.hit.json()
        return body if isinstance(body, dict) else {}


def _error_body(status: int, message: str, kind: str = "invalid_request_error") -> bytes:
    return json.dumps(
        {"error": {"message": message, "type": kind, "param": None, "code": None}}
    ).encode()


def _chunk(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"


def reference_answer(body: dict[str, Any]) -> tuple[int, str, bytes]:
    """(status, content type, body) of the reference profile for this request."""
    from conformance.mutations import render_frame
    from conformance.server import PROFILES, respond

    reply = respond(PROFILES["reference"], body)
    if reply.frames is None:
        return reply.status, "application/json", json.dumps(reply.body).encode()
    return (
        200,
        "text/event-stream; charset=utf-8",
        b"".join(render_frame(f) for f in reply.frames if not type(f).__name__ == "Stall"),
    )


def _envelope(events: list[bytes] | None) -> dict[str, Any]:
    """The envelope of the stream's first chunk (id, created, model, …), so that an
    inserted chunk differs from its neighbours only where the fault says so."""
    env = {
        "id": "chatcmpl-fault",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fault",
    }
    if events:
        try:
            first = json.loads(events[0].split(b"data:", 1)[1])
            env = {k: v for k, v in first.items() if k not in ("choices", "usage")}
        except (IndexError, ValueError, AttributeError):
            pass
    return env


def _content_chunk(text: str, events: list[bytes] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        **_envelope(events),
        **extra,
        "choices": [
            {"index": 0, "delta": {"content": text}, "logprobs": None, "finish_reason": None}
        ],
    }


class FaultServer:
    """The server; use ``fault_server()`` to run one."""

    def __init__(self, *, max_wait: float = 30.0):
        self.max_wait = max_wait
        self.hits: list[Hit] = []
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._seen_bodies: dict[tuple[str, bytes], int] = {}
        self._lock = threading.Lock()

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def base_url(self, fault: str, arg: str | int | None = None, query: str = "") -> str:
        if fault.split("/")[0] not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; valid: {', '.join(FAULTS)}")
        path = f"/f/{fault}" + (f"/{arg}" if arg is not None else "") + "/v1"
        return self.root + path + (f"?{query}" if query else "")

    def hits_for(self, fault: str) -> list[Hit]:
        with self._lock:
            return [h for h in self.hits if h.fault == fault]

    # ------------------------------------------------------------------ server side

    async def _serve(self, ready: threading.Event, stop: asyncio.Event) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, limit=1 << 20)
        self.port = self._server.sockets[0].getsockname()[1]
        ready.set()
        await stop.wait()
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await asyncio.wait_for(self._handle(reader, writer), self.max_wait)
        except (
            TimeoutError,
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            asyncio.CancelledError,
            OSError,
        ):
            pass
        finally:
            self._tasks.discard(task)
            await _close(writer)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        size = int(headers.get("content-length") or 0)
        body = await reader.readexactly(size) if size else b""
        url = urlsplit(target)
        segs = [unquote(s) for s in url.path.split("/") if s]
        fault, arg = "ok", None
        if len(segs) >= 2 and segs[0] == "f":
            fault = segs[1]
            if len(segs) >= 3 and segs[2] != "v1":
                arg = segs[2]
        hit = Hit(fault, arg, url.path, dict(parse_qsl(url.query)), headers, body)
        with self._lock:
            self.hits.append(hit)
        handler = _HANDLERS.get(fault)
        ctx = _Ctx(hit, writer, self, reader)
        if handler is None:
            await _json(ctx, 404, _error_body(404, f"unknown fault {fault!r}"))
            return
        await handler(ctx)

    def _first_time(self, fault: str, body: bytes) -> bool:
        with self._lock:
            n = self._seen_bodies.get((fault, body), 0)
            self._seen_bodies[(fault, body)] = n + 1
            return n == 0


# ---------------------------------------------------------------------- writing


async def _close(writer: asyncio.StreamWriter) -> None:
    """Flush what was written, then close (a FIN, not a reset); abort if that hangs."""
    try:
        writer.close()
        await asyncio.wait_for(writer.wait_closed(), 2.0)
    except (TimeoutError, asyncio.CancelledError, ConnectionError, OSError):
        writer.transport.abort()


async def _head(
    ctx: _Ctx,
    status: int,
    ctype: str,
    *,
    extra: dict[str, str] | None = None,
    length: int | None = None,
    chunked: bool = False,
    keep_alive: bool = False,
) -> None:
    lines = [
        f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}",
        f"content-type: {ctype}",
        *([] if keep_alive else ["connection: close"]),
        f"date: {email.utils.formatdate(usegmt=True)}",
    ]
    if length is not None:
        lines.append(f"content-length: {length}")
    elif chunked:
        lines.append("transfer-encoding: chunked")
    for k, v in (extra or {}).items():
        lines.append(f"{k}: {v}")
    ctx.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    await ctx.writer.drain()


async def _send_chunk(ctx: _Ctx, data: bytes) -> None:
    if data:
        ctx.writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await ctx.writer.drain()


async def _end_chunks(ctx: _Ctx) -> None:
    ctx.writer.write(b"0\r\n\r\n")
    await ctx.writer.drain()


async def _json(ctx: _Ctx, status: int, body: bytes, extra: dict[str, str] | None = None) -> None:
    await _head(ctx, status, "application/json", extra=extra, length=len(body))
    ctx.writer.write(body)
    await ctx.writer.drain()


async def _stream(ctx: _Ctx, pieces: list[bytes], extra: dict[str, str] | None = None) -> None:
    await _head(ctx, 200, "text/event-stream; charset=utf-8", extra=extra, chunked=True)
    for p in pieces:
        await _send_chunk(ctx, p)
    await _end_chunks(ctx)


async def _answer(ctx: _Ctx, extra: dict[str, str] | None = None) -> None:
    status, ctype, data = reference_answer(ctx.request_body())
    if ctype.startswith("text/event-stream"):
        await _stream(ctx, _events(data), extra)
    else:
        await _json(ctx, status, data, extra)


def _events(data: bytes) -> list[bytes]:
    return [e + b"\n\n" for e in data.split(b"\n\n") if e.strip()]


async def _sleep(ctx: _Ctx) -> None:
    await asyncio.sleep(ctx.server.max_wait)


# ---------------------------------------------------------------------- faults


async def f_ok(ctx: _Ctx) -> None:
    # ?forge=1: a server that tries to forge the transport's own verdict header.
    forged = (
        {"x-conformance-transport-error": "forged by the server"}
        if ctx.hit.query.get("forge")
        else None
    )
    await _answer(ctx, forged)


async def f_echo(ctx: _Ctx) -> None:
    key = ctx.key
    status, ctype, data = reference_answer(ctx.request_body())
    if not ctype.startswith("text/event-stream"):
        await _json(
            ctx,
            status,
            data.replace(b'"model"', f'"echo": "{key}", "model"'.encode(), 1),
            {"x-echo-key": key},
        )
        return
    events = _events(data)
    half = max(1, len(key) // 2)
    echo = [
        f": key={key} url={ctx.hit.path}?{'&'.join(f'{k}={v}' for k, v in ctx.hit.query.items())}"
        f" basic={ctx.basic}\n\n".encode(),
        _chunk(_content_chunk(f"your key is {key}", events, x_echo=key)),
        # The key split across two fragments: only the assembled text holds it whole.
        _chunk(_content_chunk(f"split {key[:half]}", events)),
        _chunk(_content_chunk(f"{key[half:]} end", events)),
    ]
    events = _with_echo_call(events, key)
    extra = {"x-echo-key": key, "set-cookie": f"session={key}; Path=/"}
    if ctx.hit.query.get("gzip"):  # the key inside a gzip body
        packed = gzip.compress(b"".join(events[:1] + echo + events[1:]))
        await _head(
            ctx, 200, ctype, extra={**extra, "content-encoding": "gzip"}, length=len(packed)
        )
        ctx.writer.write(packed)
        await ctx.writer.drain()
        return
    await _stream(ctx, events[:1] + echo + events[1:], extra)


def _with_echo_call(events: list[bytes], key: str, indexless: bool = False) -> list[bytes]:
    """One more tool call whose arguments hold the key split across two fragments:
    only the assembled arguments (in results and round-trip requests) hold it whole."""
    indices, finish = [], len(events)
    for i, e in enumerate(events):
        try:
            chunk = json.loads(e.split(b"data:", 1)[1])
        except (IndexError, ValueError):
            continue
        for ch in chunk.get("choices") or []:
            for tc in (ch.get("delta") or {}).get("tool_calls") or []:
                indices.append(tc.get("index", 0))
            if ch.get("finish_reason") and finish == len(events):
                finish = i
    if not indices:
        return events
    n, half = max(indices) + 1, max(1, len(key) // 2)

    def delta(tc: dict[str, Any]) -> bytes:
        return _chunk(
            {
                **_envelope(events),
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [tc]},
                        "logprobs": None,
                        "finish_reason": None,
                    }
                ],
            }
        )

    call = [
        delta(
            {
                "index": n,
                "id": "call_echo0123456789abcdefgh",
                "type": "function",
                "function": {"name": "get_weather", "arguments": ""},
            }
        ),
        delta({"index": n, "function": {"arguments": '{"city": "' + key[:half]}}),
        delta(
            {"function": {"arguments": key[half:] + '"}'}}
            if indexless
            else {"index": n, "function": {"arguments": key[half:] + '"}'}}
        ),
    ]
    return events[:finish] + call + events[finish:]


async def f_echo_401(ctx: _Ctx) -> None:
    url = ctx.hit.path + (
        "?" + "&".join(f"{k}={v}" for k, v in ctx.hit.query.items()) if ctx.hit.query else ""
    )
    await _json(
        ctx,
        401,
        _error_body(
            401,
            f"Incorrect API key provided: {ctx.key} (request {url}, basic {ctx.basic})",
            "invalid_api_key",
        ),
        {"www-authenticate": f'Bearer realm="{ctx.key}"'},
    )


async def f_status(ctx: _Ctx) -> None:
    code = int(ctx.hit.arg or 500)
    after = ctx.hit.query.get("after", "1")  # ?after=none: no Retry-After header
    extra = {"retry-after": after} if code in (429, 503) and after != "none" else None
    await _json(
        ctx,
        code,
        _error_body(
            code,
            f"simulated HTTP {code}",
            "server_error" if code >= 500 else "invalid_request_error",
        ),
        extra,
    )


async def f_flaky(ctx: _Ctx) -> None:
    code = int(ctx.hit.arg or 429)
    if ctx.server._first_time("flaky", ctx.hit.body):
        after = ctx.hit.query.get("after", "1")
        if after == "date":
            after = email.utils.formatdate(time.time() + 2, usegmt=True)
        await _json(
            ctx,
            code,
            _error_body(code, "Rate limit reached, retry later", "rate_limit_exceeded"),
            {"retry-after": after},
        )
        return
    await _answer(ctx)


async def f_no_headers(ctx: _Ctx) -> None:
    await _sleep(ctx)


async def f_stall(ctx: _Ctx) -> None:
    status, ctype, data = reference_answer(ctx.request_body())
    await _head(ctx, 200, "text/event-stream; charset=utf-8", chunked=True)
    for e in _events(data)[:2]:
        await _send_chunk(ctx, e)
    await _sleep(ctx)


async def f_disconnect_mid_event(ctx: _Ctx) -> None:
    status, ctype, data = reference_answer(ctx.request_body())
    events = _events(data)
    await _head(ctx, 200, "text/event-stream; charset=utf-8", chunked=True)
    for e in events[:2]:
        await _send_chunk(ctx, e)
    await _send_chunk(ctx, events[2][: len(events[2]) // 2])
    # Return without the terminating chunk: the connection is aborted.


async def f_close_mid_event(ctx: _Ctx) -> None:
    status, ctype, data = reference_answer(ctx.request_body())
    events = _events(data)
    await _head(ctx, 200, "text/event-stream; charset=utf-8")  # close-delimited body
    ctx.writer.write(b"".join(events[:2]) + events[2][: len(events[2]) // 2])
    await ctx.writer.drain()
    ctx.writer.close()


async def f_json_error_200(ctx: _Ctx) -> None:
    await _json(
        ctx, 200, _error_body(200, "The model is overloaded, try again later", "server_error")
    )


async def f_html_200(ctx: _Ctx) -> None:
    page = (
        b"<!DOCTYPE html>\n<html><head><title>Sign in to the network</title></head>\n"
        b"<body><h1>Captive portal</h1><p>Please log in.</p></body></html>\n"
    )
    await _head(ctx, 200, "text/html; charset=utf-8", length=len(page))
    ctx.writer.write(page)
    await ctx.writer.drain()


async def f_error_event(ctx: _Ctx) -> None:
    status, ctype, data = reference_answer(ctx.request_body())
    events = _events(data)
    err = _chunk(
        {
            "error": {
                "message": "upstream model crashed mid-generation",
                "type": "server_error",
                "code": 500,
            }
        }
    )
    await _stream(ctx, events[:2] + [err])


async def f_endless(ctx: _Ctx) -> None:
    pause = float(ctx.hit.arg or 1) / 1000  # milliseconds between two 5 kB writes
    await _head(ctx, 200, "text/event-stream; charset=utf-8", chunked=True)
    piece = _chunk(_content_chunk("la " * 200)) * 8
    while True:
        await _send_chunk(ctx, piece)
        await asyncio.sleep(pause)


async def f_big_event(ctx: _Ctx) -> None:
    mb = float(ctx.hit.arg or 10)
    status, ctype, data = reference_answer(ctx.request_body())
    events = _events(data)
    big = _chunk(_content_chunk("x" * int(mb * 1024 * 1024), events))
    await _head(ctx, 200, "text/event-stream; charset=utf-8", chunked=True)
    await _send_chunk(ctx, events[0])
    for i in range(0, len(big), 1 << 16):
        await _send_chunk(ctx, big[i : i + (1 << 16)])
    for e in events[1:]:
        await _send_chunk(ctx, e)
    await _end_chunks(ctx)


async def f_bad_utf8(ctx: _Ctx) -> None:
    status, ctype, data = reference_answer(ctx.request_body())
    events = _events(data)
    bad = _chunk(_content_chunk("before-MARK-after", events)).replace(b"MARK", b"\xff\xfe\xc3(")
    await _stream(ctx, events[:1] + [bad] + events[1:])


async def f_gzip(ctx: _Ctx) -> None:
    status, ctype, data = reference_answer(ctx.request_body())
    packed = gzip.compress(data)
    await _head(ctx, 200, ctype, extra={"content-encoding": "gzip"}, chunked=True)
    for i in range(0, len(packed), 97):  # small pieces: decoding is incremental
        await _send_chunk(ctx, packed[i : i + 97])
    await _end_chunks(ctx)


async def f_gzip_bomb(ctx: _Ctx) -> None:
    mb = float(ctx.hit.arg or 200)
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    await _head(ctx, 200, "text/event-stream", extra={"content-encoding": "gzip"}, chunked=True)
    block = b"\0" * (1 << 20)
    for _ in range(int(mb)):
        await _send_chunk(ctx, comp.compress(block))
    await _send_chunk(ctx, comp.flush())
    await _end_chunks(ctx)


async def f_keepalive_drop(ctx: _Ctx) -> None:
    status, ctype, data = reference_answer(ctx.request_body())
    if ctype.startswith("text/event-stream"):
        await _head(ctx, status, ctype, chunked=True, keep_alive=True)
        for e in _events(data):
            await _send_chunk(ctx, e)
        await _end_chunks(ctx)
    else:
        await _head(ctx, status, ctype, length=len(data), keep_alive=True)
        ctx.writer.write(data)
        await ctx.writer.drain()
    assert ctx.reader is not None
    head = await ctx.reader.readuntil(b"\r\n\r\n")  # the next request on this connection
    target = head.split(b" ", 2)[1].decode("latin-1") if head.count(b" ") >= 2 else ""
    with ctx.server._lock:
        ctx.server.hits.append(Hit("keepalive-drop", "dropped", urlsplit(target).path, {}, {}, b""))
    # Return unanswered: the connection is closed.


async def f_echo_hidden(ctx: _Ctx) -> None:
    how, key = ctx.hit.arg or "escaped", ctx.key
    status, ctype, data = reference_answer(ctx.request_body())
    events = _events(data)
    half = max(1, len(key) // 2)
    extra: list[tuple[str, str]] = []
    if how == "escaped":  # one character as \u00XX, as a JSON writer may escape any
        line = _chunk(_content_chunk(f"your key is {key}", events)).decode()
        events = (
            events[:1]
            + [
                line.replace(
                    key, key[:half] + f"\\u{ord(key[half]):04x}" + key[half + 1 :]
                ).encode()
            ]
            + events[1:]
        )
    elif how == "multiline":  # the first piece's event over two data: lines
        first = json.dumps(_content_chunk(f"split {key[:half]}", events))
        cut = first.index('"delta"')
        two = f"data: {first[:cut]}\ndata: {first[cut:]}\n\n".encode()
        events = (
            events[:1] + [two, _chunk(_content_chunk(f"{key[half:]} end", events))] + events[1:]
        )
    elif how == "indexless":
        events = _with_echo_call(events, key, indexless=True)
    body = b"".join(events)
    if how == "gzip-unlabelled":
        body = gzip.compress(body)
    elif how == "gzip-gzip":
        body = gzip.compress(gzip.compress(body))
        extra = [("content-encoding", "gzip")]
    elif how == "two-headers":
        body = gzip.compress(gzip.compress(body))
        extra = [("content-encoding", "gzip"), ("content-encoding", "gzip")]
    elif how == "br":
        import brotli

        body, extra = brotli.compress(body), [("content-encoding", "br")]
    elif how == "zstd":
        try:
            from compression import zstd  # type: ignore[import-not-found]
        except ImportError:
            from backports import zstd  # type: ignore[import-not-found,no-redef]
        body, extra = zstd.compress(body), [("content-encoding", "zstd")]
    head = (
        f"HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\nconnection: close\r\n"
        f"content-length: {len(body)}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in extra) + "\r\n"
    )
    ctx.writer.write(head.encode("latin-1") + body)
    await ctx.writer.drain()


async def f_trickle_head(ctx: _Ctx) -> None:
    pause = float(ctx.hit.arg or 500) / 1000
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"x-padding: " + b"p" * 4096 + b"\r\n\r\n"
    )
    for i in range(len(head)):
        ctx.writer.write(head[i : i + 1])
        await ctx.writer.drain()
        await asyncio.sleep(pause)


async def f_early_hints(ctx: _Ctx) -> None:
    pause = float(ctx.hit.arg or 200) / 1000
    while True:
        ctx.writer.write(b"HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n")
        await ctx.writer.drain()
        await asyncio.sleep(pause)


_HANDLERS: dict[str, Callable[[_Ctx], Awaitable[None]]] = {
    "ok": f_ok,
    "echo": f_echo,
    "echo-401": f_echo_401,
    "status": f_status,
    "flaky": f_flaky,
    "no-headers": f_no_headers,
    "stall": f_stall,
    "disconnect-mid-event": f_disconnect_mid_event,
    "close-mid-event": f_close_mid_event,
    "json-error-200": f_json_error_200,
    "html-200": f_html_200,
    "error-event": f_error_event,
    "endless": f_endless,
    "big-event": f_big_event,
    "bad-utf8": f_bad_utf8,
    "gzip": f_gzip,
    "gzip-bomb": f_gzip_bomb,
    "keepalive-drop": f_keepalive_drop,
    "trickle-head": f_trickle_head,
    "early-hints": f_early_hints,
    "echo-hidden": f_echo_hidden,
}


@contextlib.contextmanager
def fault_server(*, max_wait: float = 30.0, start_timeout: float = 10.0) -> Iterator[FaultServer]:
    """Run a FaultServer on a free 127.0.0.1 port in a background thread.

    ``max_wait`` bounds every connection (a stall or an endless stream ends after it);
    leaving the block cancels every open connection and stops the thread."""
    fs = FaultServer(max_wait=max_wait)
    loop = asyncio.new_event_loop()
    fs._loop = loop
    ready = threading.Event()
    stop_holder: dict[str, asyncio.Event] = {}
    failure: list[BaseException] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        stop = asyncio.Event()
        stop_holder["stop"] = stop
        try:
            loop.run_until_complete(fs._serve(ready, stop))
        except BaseException as e:  # surfaced to the caller below
            failure.append(e)
            ready.set()
        finally:
            loop.close()

    thread = threading.Thread(target=run, name="conformance-fault-server", daemon=True)
    thread.start()
    if not ready.wait(start_timeout) or failure:
        raise RuntimeError(f"the fault server did not start: {failure[:1]}")
    try:
        yield fs
    finally:
        stop = stop_holder.get("stop")
        if stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=start_timeout)


def closed_port() -> int:
    """A 127.0.0.1 port nobody listens on (bound, then released): connection refused."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


@contextlib.contextmanager
def stream_server(write: Callable[[Any], None]) -> Iterator[str]:
    """A 127.0.0.1 server answering every POST with an event stream that ``write(wfile)``
    writes (a long or odd body that no fault route serves); yields its base URL, and
    stops when the block ends."""
    from http.server import BaseHTTPRequestHandler

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            write(self.wfile)

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as origin:
        yield origin + "/v1"


@contextlib.contextmanager
def serving(handler: type[Any]) -> Iterator[str]:
    """A threaded 127.0.0.1 server of an ``http.server`` handler class; yields its origin
    (``http://127.0.0.1:PORT``) and stops, with a bounded wait, when the block ends."""
    from http.server import ThreadingHTTPServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


UNRESOLVABLE = "http://conformance-fault.invalid/v1"  # RFC 6761: .invalid never resolves


# ---------------------------------------------------------------------- running the suite


def providers_yaml(entries: dict[str, dict[str, Any]]) -> str:
    """A providers.yaml text for ``entries`` (name -> entry), JSON-flavoured YAML."""
    return "version: 1\nproviders:\n" + "".join(
        f"  {name}: {json.dumps(entry)}\n" for name, entry in entries.items()
    )


def run_suite(
    tmp: Any, *args: str, env: dict[str, str] | None = None, timeout: float = 300.0
) -> Any:
    """Run the real pytest suite (``conformance/suite``) in a subprocess, the way a user
    does: ``--providers TMP/providers.yaml --cassette-dir TMP/cassettes --report-dir
    TMP/reports`` plus ``args``. Returns the CompletedProcess (text output captured)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    tmp = Path(tmp)
    repo = Path(__file__).resolve().parents[1]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    clean.update(env or {})
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(repo / "conformance" / "suite"),
        "--providers",
        str(tmp / "providers.yaml"),
        "--cassette-dir",
        str(tmp / "cassettes"),
        "--report-dir",
        str(tmp / "reports"),
        "-p",
        "no:cacheprovider",
        "-q",
        *args,
    ]
    return subprocess.run(
        cmd, cwd=tmp, env=clean, capture_output=True, text=True, timeout=timeout, check=False
    )


__all__ = [
    "FAULTS",
    "UNRESOLVABLE",
    "FaultServer",
    "Hit",
    "closed_port",
    "fault_server",
    "providers_yaml",
    "reference_answer",
    "run_suite",
    "stream_server",
]
