"""Live HTTP exchanges: httpx streaming with hard limits, retries, and no leaked keys.

One exchange = one Transcript holding the request (without credentials), status,
headers and the body bytes exactly as the client saw them (content-encoding undone).
Under pytest-recording the same code runs with vcrpy patching httpx, so a replay yields
the bytes of the recording.

The limits live in ``LimitedTransport``, under httpx and under vcrpy: vcrpy records a
response by reading the whole body inside ``Client.send``, so a stall, an endless
stream or a gzip bomb met while *recording* is bounded by the same limits as a live
read, and ends as the same one-line reason. The transport classifies every failure
itself (``TransportFault``: a one-line reason and, where the catalogue has one, a
quirk id), because under vcrpy the failure surfaces before the caller saw any header.

Every failure becomes ``Transcript.transport_error`` with a one-line reason; nothing
raises out of ``exchange`` for an endpoint that misbehaves.
"""

from __future__ import annotations

import email.utils
import functools
import http.cookiejar
import io
import random
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from conformance import decoding, secrets
from conformance.readers import TIMES_HEADER, exchange_transcript, line_times
from conformance.transcript import Transcript

LIMITS_EXTENSION = "conformance.limits"  # per-request Limits, read by LimitedTransport
_sleep = time.sleep  # the retry wait; tests replace it with a fake clock
# Set by the transport on a response, never taken from a server (stripped on arrival):
FAULT_HEADER = "x-conformance-transport-error"  # the body ended early; the one-line reason
QUIRK_HEADER = "x-conformance-transport-quirk"  # the catalogue id that fault shows
ENCODING_HEADER = "x-conformance-content-encoding"  # the content-encoding undone here
# The request was sent again on a new connection: the server had dropped the kept-alive
# one it first went on. The one-line reason; recorded, so a replay shows the finding.
RETRY_HEADER = "x-conformance-connection-retry"
# A limit (max_bytes, total_timeout) ended the body: only its first KEEP_ON_LIMIT bytes
# are kept. "kept the first K of N bytes received"; recorded, so a replay says it too.
CUT_HEADER = "x-conformance-body-cut"
# When each body line arrived: "L:T ..." pairs, L the lines complete once T seconds had
# passed since the request was sent (one pair per read that completed a line, at most
# TIMED_READS); recorded, so an analysis of the cassette can judge timing.
TIMED_READS = 4096
INTERNAL_HEADERS = (
    FAULT_HEADER,
    QUIRK_HEADER,
    ENCODING_HEADER,
    RETRY_HEADER,
    CUT_HEADER,
    TIMES_HEADER,
)
# What a limit fault keeps of the body: enough events to show the stream's shape; the
# rest (up to max_bytes of an endless stream) would only be copied by vcrpy, the scrub,
# the YAML writer and the analysis, several times over, to reach the same error cell.
KEEP_ON_LIMIT = decoding.KEEP
KEEPALIVE_QUIRK = "Q-KEEPALIVE-DROPPED"


@dataclass(frozen=True)
class Limits:
    """providers.yaml ``limits``: seconds, and bytes of the (decoded) body."""

    connect_timeout: float = 10.0
    first_byte_timeout: float = 120.0  # until the response headers arrive
    idle_timeout: float = 120.0  # between two reads of the body (a stall)
    total_timeout: float = 600.0  # the whole exchange, an endless stream included
    max_bytes: int = 64 * 1024 * 1024  # the body after content-encoding is undone

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Limits:
        return cls(**{k: v for k, v in (d or {}).items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class RetryPolicy:
    """providers.yaml ``retries``: 429 and 503 only, bounded, jittered, Retry-After honoured."""

    max: int = 2  # retries after the first attempt
    base_delay: float = 1.0
    max_delay: float = 30.0
    sleep: bool = True  # False on replay: the recorded waits are reported, not slept

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None, *, sleep: bool = True) -> RetryPolicy:
        kw = {k: v for k, v in (d or {}).items() if k in ("max", "base_delay", "max_delay")}
        return cls(sleep=sleep, **kw)

    def delay(
        self, attempt: int, retry_after: str | None, rng: random.Random, date: str | None = None
    ) -> float | None:
        """Seconds to wait before retry ``attempt + 1``; None when Retry-After asks for
        longer than ``max_delay`` (retrying sooner would only be refused again)."""
        wait = parse_retry_after(retry_after, date)
        if wait is not None:
            return None if wait > self.max_delay else wait
        # Exponential backoff with +-25% jitter, capped.
        wait = self.base_delay * (2**attempt) * rng.uniform(0.75, 1.25)
        return min(max(wait, 0.0), self.max_delay)


def parse_retry_after(value: str | None, date: str | None = None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP-date (RFC 9110 §10.2.3).

    An HTTP-date is measured from the response's own ``Date`` header when it has one
    (deterministic on replay), else from the clock. Garbage yields None (backoff)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    now = time.time()
    if date:
        try:
            now = email.utils.parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            pass
    try:
        return max(0.0, when.timestamp() - now)
    except (OverflowError, OSError, ValueError):
        return None


class TransportFault(httpx.TransportError):
    """A classified transport failure: ``str()`` is the one-line reason (keys redacted),
    ``quirk`` the catalogue id it shows, if any, ``stage`` where it happened: ``connect``
    (no connection), ``headers`` (connected, no response head), ``body``; ``limit``
    whether one of the suite's own limits (max_bytes, total_timeout) ended the body."""

    def __init__(
        self, reason: str, quirk: str | None = None, stage: str = "body", limit: bool = False
    ):
        super().__init__(secrets.one_line(reason))
        self.reason, self.quirk, self.stage, self.limit = str(self), quirk, stage, limit


# Kept for callers of the first version.
LimitExceeded = TransportFault


def _connect_reason(exc: Exception, limits: Limits) -> str:
    if isinstance(exc, httpx.ConnectTimeout):
        return (
            f"connection not established within {limits.connect_timeout:g} s "
            "(limits.connect_timeout)"
        )
    text = str(exc)
    low = text.lower()
    if any(
        s in low
        for s in (
            "name or service not known",
            "nodename nor servname",
            "temporary failure in name resolution",
            "no address associated",
            "name does not resolve",
            "getaddrinfo failed",
            "no such host",
        )
    ):
        return "the host name does not resolve"
    if "refused" in low:
        return "connection refused"
    if "certificate" in low or "ssl" in low or "tls" in low:
        return "TLS handshake failed: " + secrets.one_line(text, 140)
    return "cannot connect: " + secrets.one_line(text, 160)


def _detail(exc: Exception) -> str:
    """The short part of an h11/httpcore message: 'incomplete chunked read'."""
    text = secrets.one_line(str(exc) or type(exc).__name__, 100)
    m = re.search(r"\(([^()]+)\)\s*$", text)
    return m.group(1) if m else text


class _LimitedStream(httpx.SyncByteStream):
    """Wraps a response stream: body bytes and total time are capped while reading, a
    read timeout becomes a stall, and every content coding is undone here
    (``decoding.Decoder``: stacked, repeated, unlabelled; so that the cap holds for the
    decoded size of every layer, and vcrpy records the decoded body).

    A fault met after the headers ends the body where it stopped and is written into
    the response's own headers (``x-conformance-transport-error``): vcrpy reads the
    headers only after the body, so a recording keeps the partial body and the reason,
    and its replay ends in the same error cell with the same evidence.

    The body is held here until it ends, then handed on: when a limit ends it (an
    endless stream, a flood), only its first ``KEEP_ON_LIMIT`` bytes are handed on and
    ``x-conformance-body-cut`` says so. What a cell holds is then at most ``max_bytes``
    (this buffer) while reading, and a bounded prefix after, whatever the endpoint
    sends; the live run and its replay judge the same prefix."""

    def __init__(
        self,
        inner: httpx.SyncByteStream,
        limits: Limits,
        started: float,
        decoder: Any = None,
        sock: Any = None,
        on_close: Callable[[], None] | None = None,
    ):
        self._inner, self._limits, self._started = inner, limits, started
        self._decoder = decoder or decoding.Decoder([], limits.max_bytes)
        self._declared = list(self._decoder.undone)
        self._sock, self._on_close = sock, on_close
        self._expired = False
        self._seen = 0  # body bytes received (decoded)
        self.response: httpx.Response | None = None
        self.headers_raw: list[tuple[bytes, bytes]] = []

    def _expire(self) -> None:
        """At the total deadline: shut the socket down, which ends a read blocked in
        another thread at once (a trickle of bytes would otherwise keep each read within
        ``idle_timeout`` and the cell past ``total_timeout``)."""
        self._expired = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass

    def _total_fault(self) -> TransportFault:
        return TransportFault(
            f"stream still running after {self._limits.total_timeout:g} s (limits.total_timeout)",
            limit=True,
        )

    def _check(self, seen: int) -> None:
        lim = self._limits
        self._seen = seen
        if seen > lim.max_bytes:
            raise TransportFault(
                f"stream exceeded {lim.max_bytes} bytes (limits.max_bytes)", limit=True
            )
        if time.monotonic() - self._started > lim.total_timeout:
            raise self._total_fault()

    def __iter__(self) -> Iterator[bytes]:
        left = self._limits.total_timeout - (time.monotonic() - self._started)
        timer = threading.Timer(max(0.0, left), self._expire) if self._sock is not None else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        # The body so far, grown in place: BytesIO over-allocates by an eighth, reallocs
        # (no second copy: realloc moves a large block's pages) and ``getvalue()`` hands
        # its buffer on without a copy; a list of pieces joined at the end held the body
        # twice for a moment, and one byte per chunk would cost some 40 bytes per byte.
        held = io.BytesIO()
        lines, times = 0, list[str]()  # "lines complete:seconds since the request", per read
        try:
            for piece in self._read():
                held.write(piece)
                if (k := piece.count(b"\n")) and len(times) < TIMED_READS:
                    lines += k
                    times.append(f"{lines}:{time.monotonic() - self._started:.3f}")
            if self._expired:
                raise self._total_fault()
            if times and self.response is not None:  # a new Headers object: see below
                self.response.headers = httpx.Headers(
                    list(self.headers_raw) + [(TIMES_HEADER.encode(), " ".join(times).encode())]
                )
        except TransportFault as fault:
            if self.response is None:
                raise
            # A new Headers object, not an update: vcrpy reads the body inside
            # ``patch.dict(resp.headers, …)``, which restores the old object's contents
            # afterwards, then records ``resp.headers``: it records this one.
            raw = list(self.headers_raw) + [(FAULT_HEADER.encode(), fault.reason.encode())]
            if times:
                raw.append((TIMES_HEADER.encode(), " ".join(times).encode()))
            if fault.quirk:
                raw.append((QUIRK_HEADER.encode(), fault.quirk.encode()))
            if fault.limit:
                kept = _prefix(held.getbuffer(), KEEP_ON_LIMIT)
                held = io.BytesIO(kept)
                raw.append(
                    (
                        CUT_HEADER.encode(),
                        f"kept the first {len(kept)} of {self._seen} bytes received".encode(),
                    )
                )
            self.response.headers = httpx.Headers(raw)
        finally:
            if timer is not None:
                timer.cancel()
        if self.response is not None and self._decoder.undone != self._declared:
            # A layer the body announced (gzip magic bytes without a header): the length
            # is no longer the body's, and the cassette says what was undone.
            raw = [
                (k, v)
                for k, v in self.response.headers.raw
                if k.lower() not in (b"content-length", ENCODING_HEADER.encode())
            ]
            raw.append((ENCODING_HEADER.encode(), ", ".join(self._decoder.undone).encode()))
            self.response.headers = httpx.Headers(raw)
        # One piece: the consumer's join (httpx's read) returns it as it is.
        body = held.getvalue()
        del held
        if body:
            yield body

    def _read(self) -> Iterator[bytes]:
        seen = 0
        lim = self._limits
        try:
            for chunk in self._inner:
                for piece in self._decoder.feed(chunk):
                    seen += len(piece)
                    self._check(seen)
                    yield piece
                if not chunk:
                    self._check(seen)
            for piece in self._decoder.end():
                seen += len(piece)
                self._check(seen)
                yield piece
        except decoding.DecodeError as e:
            self._seen = max(seen, e.size)  # the piece over the limit counts as received
            raise TransportFault(e.reason, limit=e.limit) from None
        except httpx.ReadTimeout:
            if self._expired or time.monotonic() - self._started >= lim.total_timeout - 0.01:
                raise self._total_fault() from None
            raise TransportFault(
                f"stream stalled: no bytes for {lim.idle_timeout:g} s (limits.idle_timeout)",
                "Q-STREAM-STALLS",
            ) from None
        except httpx.RemoteProtocolError as e:
            if self._expired:
                raise self._total_fault() from None
            raise TransportFault(
                "the server closed the connection in the middle of the "
                f"response body ({_detail(e)})"
            ) from None
        except httpx.ReadError as e:
            if self._expired:
                raise self._total_fault() from None
            raise TransportFault(
                "the connection failed in the middle of the response body ("
                + secrets.one_line(str(e) or type(e).__name__, 100)
                + ")"
            ) from None

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            if self._on_close is not None:
                self._on_close()


_prefix = decoding.prefix

# ---------------------------------------------------------------- the exchange's deadline

_current = threading.local()  # .deadline: the _Deadline of the request this thread sends
_INTERIM = re.compile(rb"(?:^|\n)HTTP/\d(?:\.\d)? 1\d\d ")


class _Deadline:
    """``total_timeout`` of one exchange, from the connect to the last byte: every
    socket operation of it waits at most what is left (``_DeadlineStream``), so a status
    line trickled a byte at a time or endless ``103 Early Hints`` end at the deadline
    like a trickled body. Counts what arrived before the final response head, for the
    reason."""

    def __init__(self, total: float, started: float):
        self.total, self.at = total, started + total
        self.phase = "connect"  # connect, request, head, body
        self.head_bytes = 0
        self.interim = 0  # 1xx responses seen before the final head
        self._carry = b""

    def left(self) -> float:
        return self.at - time.monotonic()

    def expired(self) -> bool:
        return self.left() <= 0.001

    def received(self, data: bytes) -> None:
        if self.phase != "head" or not data:
            return
        self.head_bytes += len(data)
        text = self._carry + data
        self.interim += sum(1 for m in _INTERIM.finditer(text) if m.end() > len(self._carry))
        self._carry = text[-16:]

    def reason(self) -> str:
        total = f"{self.total:g} s (limits.total_timeout)"
        if self.phase == "connect":
            return f"connection not established within {total}"
        if self.phase == "request":
            return f"the request was still being sent after {total}"
        if self.interim:
            return (
                f"no final response head within {total}: only interim responses "
                f"({self.interim} × 1xx, {self.head_bytes} bytes)"
            )
        if self.head_bytes:
            return (
                f"the response head was still arriving after {total} "
                f"({self.head_bytes} bytes of it received)"
            )
        return f"no response headers within {total}"


def _capped(
    timeout: float | None, deadline: _Deadline | None, error: type[Exception]
) -> float | None:
    """A socket operation's timeout within what is left of the exchange."""
    if deadline is None:
        return timeout
    left = deadline.left()
    if left <= 0.001:
        raise error("the exchange's total_timeout ran out")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream):
        self._s = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        d = getattr(_current, "deadline", None)
        data = self._s.read(max_bytes, _capped(timeout, d, httpcore.ReadTimeout))
        if d is not None:
            d.received(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        d = getattr(_current, "deadline", None)
        if d is not None and d.phase == "connect":
            d.phase = "request"
        self._s.write(buffer, _capped(timeout, d, httpcore.WriteTimeout))

    def close(self) -> None:
        self._s.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        d = getattr(_current, "deadline", None)
        return _DeadlineStream(
            self._s.start_tls(
                ssl_context, server_hostname, _capped(timeout, d, httpcore.ConnectTimeout)
            )
        )

    def get_extra_info(self, info: str) -> Any:
        return self._s.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's backend whose streams keep the exchange's deadline."""

    def __init__(self, inner: httpcore.NetworkBackend):
        self._b = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        d = getattr(_current, "deadline", None)
        return _DeadlineStream(
            self._b.connect_tcp(
                host,
                port,
                _capped(timeout, d, httpcore.ConnectTimeout),
                local_address,
                socket_options,
            )
        )

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        d = getattr(_current, "deadline", None)
        return _DeadlineStream(
            self._b.connect_unix_socket(
                path, _capped(timeout, d, httpcore.ConnectTimeout), socket_options
            )
        )

    def sleep(self, seconds: float) -> None:
        self._b.sleep(seconds)


def _keep_deadlines(transport: httpx.HTTPTransport) -> httpx.HTTPTransport:
    """Every connection of the transport's pool keeps the exchange's deadline (httpx
    takes no backend of its own: its pool's is wrapped)."""
    pool = transport._pool
    if not isinstance(pool._network_backend, _DeadlineBackend):
        pool._network_backend = _DeadlineBackend(pool._network_backend)
    return transport


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context (certificates verified against certifi's roots, or
    SSL_CERT_FILE / SSL_CERT_DIR), built once per process: building it reads the whole CA
    bundle (about 70 ms), and every cell opens a client of its own."""
    return httpx.create_ssl_context()


class LimitedTransport(httpx.HTTPTransport):
    """httpx's transport with the suite's limits: the response headers must arrive within
    ``first_byte_timeout``, each body read within ``idle_timeout``, the whole exchange
    (connect, request, head, 1xx responses, body) within ``total_timeout``, and the body
    may not exceed ``max_bytes`` once decoded. The limits
    of a request come from its ``conformance.limits`` extension (one client serves
    providers with different limits), else from the transport's own."""

    def __init__(self, limits: Limits | None = None, **kw: Any):
        kw.setdefault("verify", _tls_context())
        super().__init__(**kw)
        _keep_deadlines(self)
        self.limits = limits or Limits()
        self._kw = kw  # to open a one-off pool for a retry on a new connection

    def _send(
        self,
        request: httpx.Request,
        limits: Limits,
        timeout: dict[str, Any],
        transport: httpx.HTTPTransport,
    ) -> httpx.Response:
        """One attempt; a failure before the response head is a TransportFault whose
        ``stage`` says whether a connection was made. A kept-alive connection that the
        server had dropped is the ``_Dropped`` fault: the caller retries it once."""
        opened: list[str] = []
        outer = request.extensions.get("trace")
        deadline: _Deadline = _current.deadline

        def trace(event: str, info: dict[str, Any]) -> None:
            if event.startswith("connection.connect_"):
                opened.append(event)
            if event.startswith("http11.send_request_headers"):  # on a retry's new
                deadline.phase = "request"  # connection too: the request is sent again
            elif event == "http11.receive_response_headers.started":
                deadline.phase = "head"
            if outer is not None:
                outer(event, info)

        request.extensions["trace"] = trace
        try:
            return httpx.HTTPTransport.handle_request(transport, request)
        except (httpx.ConnectError, httpx.ConnectTimeout) as e:
            if isinstance(e, httpx.ConnectTimeout) and deadline.expired():
                raise TransportFault(deadline.reason(), stage="connect", limit=True) from None
            raise TransportFault(_connect_reason(e, limits), stage="connect") from None
        except (httpx.ReadTimeout, httpx.WriteTimeout) as e:
            if deadline.expired():
                raise TransportFault(deadline.reason(), stage="headers", limit=True) from None
            if isinstance(e, httpx.WriteTimeout):
                raise TransportFault(
                    "the connection failed while sending the request ("
                    + secrets.one_line(str(e) or type(e).__name__, 100)
                    + ")",
                    stage="headers",
                ) from None
            raise TransportFault(
                f"no response headers within {timeout['read']:g} s (limits.first_byte_timeout)",
                stage="headers",
            ) from None
        except (httpx.RemoteProtocolError, httpx.WriteError, httpx.ReadError) as e:
            if not opened:  # no connection was opened for it: it went on a kept-alive one
                raise _Dropped(e) from None
            if isinstance(e, httpx.RemoteProtocolError):
                raise TransportFault(
                    "the server closed the connection before a complete "
                    "response head (" + secrets.one_line(str(e), 100) + ")",
                    stage="headers",
                ) from None
            raise TransportFault(
                "the connection failed while sending the request ("
                + secrets.one_line(str(e) or type(e).__name__, 100)
                + ")",
                stage="headers",
            ) from None
        finally:
            if outer is None:
                request.extensions.pop("trace", None)
            else:
                request.extensions["trace"] = outer

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        limits: Limits = request.extensions.get(LIMITS_EXTENSION) or self.limits
        started = time.monotonic()
        _current.deadline = _Deadline(limits.total_timeout, started)
        timeout = dict(request.extensions.get("timeout") or {})
        timeout.update(
            connect=limits.connect_timeout,
            write=limits.connect_timeout,
            pool=limits.connect_timeout,
            read=min(limits.first_byte_timeout, limits.total_timeout),
        )
        request.extensions["timeout"] = timeout
        retried: str | None = None
        one_off: httpx.HTTPTransport | None = None
        try:
            response = self._send(request, limits, timeout, self)
        except _Dropped as dropped:
            # The server closed a kept-alive connection between two requests without
            # saying so (no `Connection: close`): the request never reached it. Sent once
            # more, on a connection of its own (the pool may hold more dropped ones).
            retried = (
                "the server dropped the kept-alive connection between two requests "
                f"({_detail(dropped.cause)}); sent again on a new connection"
            )
            one_off = _keep_deadlines(httpx.HTTPTransport(**self._kw))
            try:
                response = self._send(request, limits, timeout, one_off)
            except _Dropped as again:
                one_off.close()
                raise TransportFault(
                    "the server closed a new connection before a complete "
                    f"response head ({_detail(again.cause)})",
                    stage="headers",
                ) from None
            except BaseException:
                one_off.close()
                raise
        _current.deadline.phase = "body"
        # The body reads: what the server may idle between two reads. httpcore reads
        # this dict (shared with the request it was given) when the body is first read.
        left = limits.total_timeout - (time.monotonic() - started)
        request.extensions["timeout"] = dict(
            timeout, read=max(0.001, min(limits.idle_timeout, left))
        )
        assert isinstance(response.stream, httpx.SyncByteStream)
        # Every coding is undone here (decoding.Decoder: stacked, repeated, unlabelled,
        # bounded by max_bytes); httpx and vcrpy never see a Content-Encoding to undo.
        declared = decoding.header_codings(response.headers)
        try:
            decoder: decoding.Decoder | _Refused = decoding.Decoder(declared, limits.max_bytes)
        except decoding.DecodeError as e:  # a coding it cannot undo: the body is not kept
            decoder = _Refused(e)
        drop = {h.encode() for h in INTERNAL_HEADERS}  # a server cannot forge our verdicts
        if declared or response.headers.get("content-encoding") is not None:
            drop |= {b"content-encoding", b"content-length"}
        raw = [(k, v) for k, v in response.headers.raw if k.lower() not in drop]
        if declared:
            raw.append((ENCODING_HEADER.encode(), ", ".join(declared).encode()))
        if retried:
            raw.append((RETRY_HEADER.encode(), retried.encode()))
        stream = _LimitedStream(
            response.stream,
            limits,
            started,
            decoder,
            _socket_of(response),
            one_off.close if one_off is not None else None,
        )
        limited = httpx.Response(
            response.status_code,
            headers=raw,
            stream=stream,
            extensions=response.extensions,
            request=request,
        )
        stream.response, stream.headers_raw = limited, raw  # where a fault is written
        return limited


class _Refused:
    """The decoder of a body whose coding cannot be undone: its first read fails."""

    def __init__(self, error: decoding.DecodeError):
        self.error = error
        self.undone: list[str] = []

    def feed(self, data: bytes) -> Iterator[bytes]:
        raise self.error

    def end(self) -> Iterator[bytes]:
        raise self.error


class _Dropped(Exception):
    """A request met a kept-alive connection the server had closed (internal)."""

    def __init__(self, cause: Exception):
        super().__init__(str(cause))
        self.cause = cause


def _socket_of(response: httpx.Response) -> Any:
    """The response's socket (HTTP/1.1 over TCP), for the total-deadline watchdog."""
    stream = response.extensions.get("network_stream")
    try:
        return stream.get_extra_info("socket") if stream is not None else None
    except Exception:  # noqa: BLE001 - a stream without one: no watchdog, the checks hold
        return None


def _no_cookies() -> http.cookiejar.CookieJar:
    """A cookie jar that keeps nothing: no provider's cookie is ever sent back. The jar
    itself goes to httpx (a ``Cookies`` would be copied into a jar of the default policy,
    which keeps every cookie)."""
    return http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))


def make_client(limits: Limits | None = None) -> httpx.Client:
    limits = limits or Limits()
    timeout = httpx.Timeout(
        connect=limits.connect_timeout,
        read=limits.first_byte_timeout,
        write=limits.connect_timeout,
        pool=limits.connect_timeout,
    )
    return httpx.Client(
        transport=LimitedTransport(limits),
        timeout=timeout,
        follow_redirects=False,
        trust_env=False,
        cookies=_no_cookies(),
    )


def _reason(exc: BaseException) -> tuple[str, str | None]:
    """A one-line reason (keys redacted) and the catalogue quirk it shows, if any."""
    if isinstance(exc, TransportFault):
        return exc.reason, exc.quirk
    if isinstance(exc, httpx.DecodingError):
        return "the body could not be decoded (" + secrets.one_line(str(exc), 120) + ")", None
    if isinstance(exc, httpx.TimeoutException):
        return "timed out: " + secrets.one_line(str(exc) or type(exc).__name__, 160), None
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the server broke the HTTP protocol (" + secrets.one_line(str(exc), 120) + ")", None
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return "not an http(s) URL: " + secrets.one_line(str(exc), 120), None
    if type(exc).__name__ == "CannotOverwriteExistingCassetteException":
        return (
            "replay: the cassette has no recorded answer for this request (record the cell again)"
        ), None
    if isinstance(exc, httpx.HTTPError | OSError):
        return f"{type(exc).__name__}: " + secrets.one_line(str(exc), 160), None
    return f"internal error while reading the response: {type(exc).__name__}: " + secrets.one_line(
        str(exc), 140
    ), None


def exchange(
    client: httpx.Client,
    url: str,
    body: dict[str, Any],
    *,
    headers: dict[str, str] | None = None,
    auth_headers: dict[str, str] | None = None,
    limits: Limits = Limits(),
    retry: RetryPolicy = RetryPolicy(),
    source: str = "live",
    rng: random.Random | None = None,
    on_attempt: Callable[[int], None] | None = None,
) -> Transcript:
    """POST the body and read the whole answer, within the limits, retrying 429/503."""
    rng = rng or random.Random(0)
    retries: list[dict[str, Any]] = []
    given = {**(headers or {}), **(auth_headers or {})}
    named = {k.lower() for k in given}
    defaults = {
        "accept": "text/event-stream" if body.get("stream") else "application/json",
        "accept-encoding": "gzip, deflate",
    }
    # The caller's headers replace these whatever their case ("Accept" too): a dict
    # merge alone would send both.
    send_headers = {k: v for k, v in defaults.items() if k not in named} | given
    for v in (auth_headers or {}).values():
        # The value, and the key alone: after its scheme ("Bearer  key"), without the
        # blanks around it (a key read from a file ends in a line end, which h11 refuses
        # quoting the value escaped, "key\\n": "key\n" would not redact it there).
        scheme, _, key = v.partition(" ")
        secrets.register(v, (key if scheme.lower() in ("bearer", "basic", "token") else v).strip())
    secrets.register_url(url)
    request = {
        "method": "POST",
        "uri": secrets.redact(url),
        "body": body,
        "headers": {k: secrets.redact(v) for k, v in (headers or {}).items()},
    }
    attempt = 0
    total_started = time.monotonic()
    while True:
        if on_attempt:
            on_attempt(attempt)
        status: int | None = None
        resp_headers: dict[str, str] | None = None
        parts: list[bytes] = []
        error: str | None = None
        quirk: str | None = None
        stage: str | None = None
        started = time.monotonic()
        undone: list[str] = []
        try:
            with client.stream(
                "POST", url, json=body, headers=send_headers, extensions={LIMITS_EXTENSION: limits}
            ) as resp:
                status = resp.status_code
                resp_headers = {k: secrets.redact(v) for k, v in resp.headers.items()}
                # Live, the transport has undone every coding; a replayed cassette's
                # codings are undone here, bounded, never by httpx (unbounded).
                declared = decoding.header_codings(resp.headers)
                if "content-encoding" in resp.headers:
                    del resp.headers["content-encoding"]
                decoder = decoding.Decoder(declared, limits.max_bytes)
                for chunk in resp.iter_bytes():
                    parts.extend(decoder.feed(chunk))
                parts.extend(decoder.end())
                undone = decoder.undone
                # Read after the body: a fault met while reading it is written here.
                resp_headers = {k: secrets.redact(v) for k, v in resp.headers.items()}
        except decoding.DecodeError as exc:
            error = exc.reason
            if exc.limit:
                parts = [_prefix(b"".join(parts), KEEP_ON_LIMIT)]
        except Exception as exc:  # noqa: BLE001 - every failure is a reason, never a raise
            error, quirk = _reason(exc)
            stage = getattr(exc, "stage", None) if resp_headers is None else "body"
        if resp_headers is not None and resp_headers.get(FAULT_HEADER):
            error = secrets.one_line(resp_headers[FAULT_HEADER])
            quirk = resp_headers.get(QUIRK_HEADER) or None
        raw = secrets.redact_bytes(b"".join(parts))
        elapsed = round(time.monotonic() - started, 3)
        if error is None and status in (429, 503) and attempt < retry.max:
            after = (resp_headers or {}).get("retry-after")
            wait = retry.delay(attempt, after, rng, (resp_headers or {}).get("date"))
            if wait is not None:
                retries.append(
                    {
                        "attempt": attempt + 1,
                        "status": status,
                        "retry_after": after,
                        "waited": round(wait, 3),
                        "slept": retry.sleep,
                    }
                )
                if retry.sleep:
                    _sleep(wait)
                attempt += 1
                continue
            retries.append(
                {
                    "attempt": attempt + 1,
                    "status": status,
                    "retry_after": after,
                    "waited": 0,
                    "slept": False,
                    "gave_up": f"Retry-After {after} exceeds retries.max_delay "
                    f"{retry.max_delay:g} s",
                }
            )
        plain = (
            None
            if resp_headers is None
            else {
                k: v
                for k, v in resp_headers.items()
                if k.lower() not in ("content-encoding", *INTERNAL_HEADERS)
            }
        )
        t = exchange_transcript(source, "live", request, status, plain, raw)
        if resp_headers is not None:
            enc = resp_headers.get(ENCODING_HEADER) or ", ".join(undone)
            if enc:
                t.meta["content_encoding"] = enc
        t.transport_error = error
        t.meta.update(
            {
                "retries": retries,
                "elapsed": elapsed,
                "total_elapsed": round(time.monotonic() - total_started, 3),
            }
        )
        if quirk:
            t.meta["transport_quirk"] = quirk
        if stage in ("connect", "headers"):  # no response at all: see runner's fail-fast
            t.meta["transport_stage"] = stage
        retried = (resp_headers or {}).get(RETRY_HEADER)
        if retried:
            t.meta["connection_retry"] = secrets.one_line(retried)
        times = line_times((resp_headers or {}).get(TIMES_HEADER))
        if times is not None:  # the live analysis judges what the cassette will keep
            t.meta["line_times"] = times
        return t
