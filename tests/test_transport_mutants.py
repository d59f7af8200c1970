"""The live transport, pinned by what a cell shows: its body bytes, its ``error`` reason,
the quirk, the stage, the retries and what the cassette's headers say. Every exchange
here goes through the real client (``make_client``: httpx, httpcore, the suite's
``LimitedTransport``) down to a scripted network (``Net``): each connection answers its
reads from a list, raises the fault it is given, and a fake clock stands for the time
that passes. No socket, no thread, no sleep."""

from __future__ import annotations

import gzip
import random
import socket
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace as NS
from typing import Any

import httpcore
import httpcore._sync.connection_pool as pool_module
import httpx
import pytest

from conformance import decoding, secrets
from conformance import transport as T
from conformance.transport import Limits, RetryPolicy, TransportFault, exchange, make_client

URL = "http://api.test/v1/chat/completions"
REQUEST = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
SSE = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n'
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"


def ok(body: bytes = SSE, *headers: str) -> list[Any]:
    """A whole 200 answer with a content-length, as reads."""
    extra = "".join(h + "\r\n" for h in headers).encode()
    return [HEAD + extra + b"content-length: %d\r\n\r\n" % len(body), body]


def chunked(*pieces: Any, end: bool = True) -> list[Any]:
    """A chunked 200 answer, one chunk per read; a ``Later`` piece arrives later, an
    exception is raised by its read, ``Raw`` bytes are read as they are."""

    def chunk(p: Any) -> Any:
        if isinstance(p, Later):
            return Later(p.seconds, chunk(p.item))
        return p if isinstance(p, BaseException | Raw) else b"%x\r\n%s\r\n" % (len(p), p)

    out: list[Any] = [HEAD + b"transfer-encoding: chunked\r\n\r\n"]
    out += [chunk(p) for p in pieces]
    return out + ([b"0\r\n\r\n"] if end else [])


class Raw(bytes):
    """Bytes read as they are, not as a chunk."""


class Later:
    """A read that returns (or raises) ``item`` once ``seconds`` have passed."""

    def __init__(self, seconds: float, item: Any):
        self.seconds, self.item = seconds, item


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return 1_445_412_480.0  # Wed, 21 Oct 2015 07:28:00 GMT


class Wire(httpcore.NetworkStream):
    def __init__(self, script: list[Any], net: Net):
        self.script, self.net = list(script), net

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self.net.read_timeouts.append(timeout)
        item = self.script.pop(0) if self.script else b""
        if isinstance(item, Later):
            self.net.clock.now += item.seconds
            item = item.item
        if isinstance(item, BaseException):
            raise item
        if len(item) > max_bytes:  # as a socket: at most what is asked, the rest later
            self.script.insert(0, item[max_bytes:])
        return bytes(item[:max_bytes])

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.net.write_timeouts.append(timeout)
        if self.net.fail_writes and self.script:
            item = self.script.pop(0)
            if isinstance(item, Later):
                self.net.clock.now += item.seconds
                item = item.item
            raise item
        self.net.sent.append(bytes(buffer))

    def close(self) -> None:
        self.net.closed.append(self)

    def get_extra_info(self, info: str) -> Any:
        return self.net.sock if info == "socket" else None

    def start_tls(self, *a: Any, **kw: Any) -> httpcore.NetworkStream:
        return self


class Net(httpcore.NetworkBackend):
    """The network: each connection opened takes the next script (a list of reads) or
    raises the exception given in its place."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.conns: list[Any] = []
        self.sent: list[bytes] = []
        self.read_timeouts: list[float | None] = []
        self.write_timeouts: list[float | None] = []
        self.connect_timeouts: list[float | None] = []
        self.connects: list[tuple[Any, ...]] = []
        self.fail_writes = False
        self.sock: Any = None  # what a connection gives as its socket
        self.closed: list[Wire] = []

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        self.connect_timeouts.append(timeout)
        self.connects.append((host, port, local_address, socket_options))
        c = self.conns.pop(0)
        if isinstance(c, Later):
            self.clock.now += c.seconds
            c = c.item
        if isinstance(c, BaseException):
            raise c
        return Wire(c, self)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        self.connect_timeouts.append(timeout)
        return Wire(self.conns.pop(0), self)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(T, "time", c)
    return c


@pytest.fixture
def net(monkeypatch: pytest.MonkeyPatch, clock: Clock) -> Net:
    n = Net(clock)
    monkeypatch.setattr(pool_module, "SyncBackend", lambda: n)  # every pool, one-offs too
    return n


@pytest.fixture
def slept(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []
    monkeypatch.setattr(T, "_sleep", waits.append)
    return waits


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    yield
    secrets.forget()


def run(net: Net, *conns: Any, limits: Limits | None = None, **kw: Any) -> Any:
    net.conns += list(conns)
    limits = limits or Limits()
    with make_client(limits) as client:
        return exchange(client, URL, REQUEST, limits=limits, **kw)


def posts(net: Net) -> list[bytes]:
    """The request heads sent, in order."""
    return [w for w in net.sent if w.startswith(b"POST ")]


def request_head(net: Net, i: int = 0) -> str:
    return posts(net)[i].split(b"\r\n\r\n")[0].decode().lower()


# ------------------------------------------------------------------ a healthy exchange


def test_an_answer_is_read_whole_with_its_line_times(net: Net) -> None:
    t = run(net, [HEAD + b"content-length: %d\r\n\r\n" % len(SSE), Later(0.25, SSE)])
    assert (t.status, t.raw, t.transport_error) == (200, SSE, None)
    assert t.meta["line_times"] == [(4, 0.25)]
    assert t.meta["retries"] == [] and "transport_stage" not in t.meta
    assert t.headers["content-type"] == "text/event-stream"
    assert t.request == {"method": "POST", "uri": URL, "body": REQUEST, "headers": {}}


def test_line_times_count_the_lines_each_read_completes(net: Net) -> None:
    t = run(
        net,
        chunked(b"data: a\n", b"\n", b"data: [DO", b"NE]\n\n"),
    )
    assert t.raw == b"data: a\n\ndata: [DONE]\n\n"
    assert [n for n, _ in t.meta["line_times"]] == [1, 2, 4]


def test_line_times_are_kept_for_the_first_4096_reads(net: Net) -> None:
    t = run(net, chunked(*[b"\n"] * 4100))
    assert len(t.raw) == 4100
    assert len(t.meta["line_times"]) == 4096
    assert t.meta["line_times"][-1][0] == 4096


def test_a_body_without_a_line_end_has_no_line_times(net: Net) -> None:
    t = run(net, ok(b'{"choices": []}'))
    assert t.raw == b'{"choices": []}' and "line_times" not in t.meta


def test_the_request_asks_for_a_stream_and_codings_it_can_undo(net: Net) -> None:
    run(net, ok(), headers={"x-extra": "1"})
    head = request_head(net)
    assert "accept: text/event-stream" in head
    assert "accept-encoding: gzip, deflate" in head
    assert "x-extra: 1" in head
    assert head.startswith("post /v1/chat/completions http/1.1")


def test_a_request_without_stream_accepts_json(net: Net) -> None:
    net.conns.append(ok(b"{}"))
    with make_client() as client:
        exchange(client, URL, {"model": "m"})
    assert "accept: application/json" in request_head(net)


def test_the_caller_s_headers_override_the_defaults_and_keys_go_last(net: Net) -> None:
    run(
        net,
        ok(),
        headers={"accept": "*/*", "accept-encoding": "identity"},
        auth_headers={"authorization": "Bearer sk-transport-0123456789abcdef"},
    )
    head = request_head(net)
    assert "accept: */*" in head and "accept-encoding: identity" in head
    assert "authorization: bearer sk-transport-0123456789abcdef" in head


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "Basic", "Token"])
def test_a_key_echoed_back_is_redacted_alone_or_with_its_scheme(net: Net, scheme: str) -> None:
    key = "sk-echoedtransport0123456789"
    body = b'data: {"k": "%s", "h": "%s %s"}\n\n' % (key.encode(), scheme.encode(), key.encode())
    t = run(
        net,
        ok(body, f"x-echo: {key}"),
        auth_headers={"authorization": f"{scheme} {key}"},
        headers={"x-mine": f"v-{key}"},
    )
    assert key.encode() not in t.raw
    assert key not in repr(t.headers) and key not in repr(t.request)
    assert t.raw.count(b"REDACTED") >= 2 or t.raw.count(b"***") >= 2 or len(t.raw) < len(body)


def test_a_key_in_a_header_without_a_scheme_is_redacted_whole(net: Net) -> None:
    key = "plainkeytransport0123456789"
    t = run(net, ok(b"data: %s\n\n" % key.encode()), auth_headers={"api-key": key})
    assert key.encode() not in t.raw


def test_a_key_in_the_url_is_redacted_in_the_request_kept(net: Net) -> None:
    net.conns.append(ok())
    url = URL + "?key=urlkeytransport0123456789"
    with make_client() as client:
        t = exchange(client, url, REQUEST)
    assert t.request is not None
    assert "urlkeytransport0123456789" not in t.request["uri"]
    assert t.request["uri"].startswith(URL + "?key=")


def test_the_source_is_the_transcript_s(net: Net) -> None:
    t = run(net, ok(), source="replay")
    assert t.source == "replay"
    assert run(net, ok()).source == "live"


def test_cookies_are_never_sent_back(net: Net) -> None:
    net.conns.append(ok(SSE, "set-cookie: session=abc; Path=/") + ok())  # one connection
    with make_client() as client:
        exchange(client, URL, REQUEST)
        exchange(client, URL, REQUEST)
        assert len(client.cookies) == 0
    assert len(posts(net)) == 2
    assert "cookie" not in request_head(net, 1)


def test_a_redirect_is_the_answer_not_followed(net: Net) -> None:
    t = run(
        net,
        [b"HTTP/1.1 302 Found\r\nlocation: http://elsewhere.test/\r\ncontent-length: 0\r\n\r\n"],
    )
    assert t.status == 302 and len(posts(net)) == 1


def test_the_environment_s_proxy_is_not_used(net: Net, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.test:3128")
    monkeypatch.setenv("ALL_PROXY", "http://proxy.test:3128")
    run(net, ok())
    assert request_head(net).startswith("post /v1/chat/completions")  # not an absolute URI


# ------------------------------------------------------------------ content codings


def test_a_gzip_answer_is_decoded_and_says_so(net: Net) -> None:
    t = run(net, ok(gzip.compress(SSE), "content-encoding: gzip"))
    assert t.raw == SSE and t.transport_error is None
    assert t.meta["content_encoding"] == "gzip"
    assert "content-encoding" not in t.headers and "content-length" not in t.headers


def test_an_unlabelled_gzip_answer_is_decoded_and_named(net: Net) -> None:
    t = run(net, ok(gzip.compress(SSE)))
    assert t.raw == SSE
    assert t.meta["content_encoding"] == "gzip (unlabelled)"
    assert "content-length" not in t.headers


def test_identity_is_no_coding_and_its_header_is_dropped(net: Net) -> None:
    t = run(net, ok(SSE, "content-encoding: identity"))
    assert t.raw == SSE and "content_encoding" not in t.meta
    assert "content-encoding" not in t.headers and "content-length" not in t.headers


def test_a_plain_answer_keeps_its_length_header(net: Net) -> None:
    t = run(net, ok())
    assert t.headers["content-length"] == str(len(SSE))
    assert "content_encoding" not in t.meta


def test_a_coding_it_cannot_undo_is_an_error_keeping_nothing(net: Net) -> None:
    t = run(net, ok(b"data: secret in lzw\n\n", "content-encoding: compress"))
    assert t.transport_error == (
        "the body is compress-encoded, which the suite cannot decode: "
        "not kept (a key inside it could not be redacted)"
    )
    assert t.raw == b"" and t.status == 200
    assert "transport_stage" not in t.meta


def test_a_bomb_is_an_error_naming_the_limit_and_keeps_whole_events(net: Net) -> None:
    event = b"data: " + b"z" * 94 + b"\n\n"
    body = gzip.compress(event * 6000)  # 612 kB decoded
    t = run(net, ok(body, "content-encoding: gzip"), limits=Limits(max_bytes=400_000))
    assert t.transport_error == "stream exceeded 400000 bytes (limits.max_bytes)"
    assert t.raw == event * (T.KEEP_ON_LIMIT // len(event))


def test_a_server_cannot_forge_the_suite_s_own_headers(net: Net) -> None:
    forged = [f"{h}: forged" for h in T.INTERNAL_HEADERS if h != "x-conformance-line-times"]
    t = run(net, ok(SSE, *forged))
    assert t.transport_error is None
    assert "transport_quirk" not in t.meta and "connection_retry" not in t.meta
    assert "content_encoding" not in t.meta
    assert not any(k.startswith("x-conformance") for k in t.headers)


# ------------------------------------------------------------------ the body's limits


def test_a_body_over_max_bytes_is_cut_after_an_event_and_the_cassette_says_so(
    net: Net,
) -> None:
    event = b"data: " + b"y" * 992 + b"\n\n"  # 1,000 bytes
    net.conns.append(chunked(*[event * 10] * 40))
    limits = Limits(max_bytes=300_000)
    with make_client(limits) as client, client.stream("POST", URL, json=REQUEST) as r:
        body = r.read()
        headers = dict(r.headers)
    assert body == event * 262
    assert headers[T.FAULT_HEADER] == "stream exceeded 300000 bytes (limits.max_bytes)"
    assert headers[T.CUT_HEADER] == "kept the first 262000 of 310000 bytes received"
    assert T.QUIRK_HEADER not in headers
    assert [int(p.split(":")[0]) for p in headers[T.TIMES_HEADER].split()][:2] == [20, 40]


def test_a_body_of_exactly_max_bytes_is_kept_whole(net: Net) -> None:
    t = run(net, ok(b"x" * 99 + b"\n"), limits=Limits(max_bytes=100))
    assert t.transport_error is None and len(t.raw) == 100


def test_max_bytes_counts_the_decoded_body(net: Net) -> None:
    body = gzip.compress(b"x" * 101)
    t = run(net, ok(body, "content-encoding: gzip"), limits=Limits(max_bytes=100))
    assert t.transport_error == "stream exceeded 100 bytes (limits.max_bytes)"


def test_a_stream_past_total_timeout_is_cut_and_says_so(net: Net) -> None:
    event = b"data: x\n\n"
    t = run(
        net,
        chunked(
            event, Later(1.0, b"5\r\n" + b"data:" + b"\r\n"), Later(2.0, b"9\r\n" + event + b"\r\n")
        ),
        limits=Limits(total_timeout=2.5),
    )
    assert t.transport_error == "stream still running after 2.5 s (limits.total_timeout)"
    assert t.raw == event  # what ends within the prefix: the first whole event


def test_a_stall_is_a_finding_with_its_quirk_and_keeps_the_body(net: Net) -> None:
    t = run(
        net,
        chunked(b"data: a\n\n", Later(3.0, httpcore.ReadTimeout("timed out")), end=False),
        limits=Limits(idle_timeout=3, total_timeout=60),
    )
    assert t.transport_error == "stream stalled: no bytes for 3 s (limits.idle_timeout)"
    assert t.meta["transport_quirk"] == "Q-STREAM-STALLS"
    assert t.raw == b"data: a\n\n"
    assert "transport_stage" not in t.meta


def test_a_read_timeout_at_the_total_deadline_is_the_total_timeout(net: Net) -> None:
    t = run(
        net,
        chunked(b"data: a\n\n", Later(9.995, httpcore.ReadTimeout("timed out")), end=False),
        limits=Limits(idle_timeout=30, total_timeout=10),
    )
    assert t.transport_error == "stream still running after 10 s (limits.total_timeout)"
    assert "transport_quirk" not in t.meta


def test_a_read_timeout_just_before_the_deadline_is_a_stall(net: Net) -> None:
    t = run(
        net,
        chunked(b"data: a\n\n", Later(9.9, httpcore.ReadTimeout("timed out")), end=False),
        limits=Limits(idle_timeout=30, total_timeout=10),
    )
    assert t.transport_error == "stream stalled: no bytes for 30 s (limits.idle_timeout)"


def test_the_body_reads_wait_at_most_idle_timeout_or_what_is_left(net: Net) -> None:
    net.conns.append([HEAD + b"content-length: 9\r\n\r\n", b"data: x\n\n"])
    limits = Limits(first_byte_timeout=7, idle_timeout=4, total_timeout=100, connect_timeout=3)
    with make_client(limits) as client:
        exchange(client, URL, REQUEST, limits=limits)
    assert net.connect_timeouts == [3]
    assert net.write_timeouts[0] == 3
    assert net.read_timeouts[:2] == [7, 4]


def test_the_reads_never_wait_past_the_total_deadline(net: Net) -> None:
    net.conns.append([Later(1.0, HEAD + b"content-length: 9\r\n\r\n"), b"data: x\n\n"])
    limits = Limits(first_byte_timeout=50, idle_timeout=40, total_timeout=5)
    with make_client(limits) as client:
        exchange(client, URL, REQUEST, limits=limits)
    assert net.read_timeouts[0] == 5  # min(first byte, total)
    assert net.read_timeouts[1] == pytest.approx(4.0)  # 4 s left of 5


def test_a_connection_closed_inside_the_body_says_so(net: Net) -> None:
    t = run(net, chunked(b"data: a\n\n", Raw(b"5\r\ndata:"), end=False))
    assert t.transport_error == (
        "the server closed the connection in the middle of the response body "
        "(incomplete chunked read)"
    )
    assert t.raw == b"data: a\n\ndata:"
    assert t.status == 200 and "transport_quirk" not in t.meta


def test_a_failed_read_inside_the_body_says_so(net: Net) -> None:
    t = run(net, chunked(b"data: a\n\n", httpcore.ReadError("connection reset by peer"), end=False))
    assert t.transport_error == (
        "the connection failed in the middle of the response body (connection reset by peer)"
    )
    assert t.raw == b"data: a\n\n"


def test_a_failed_read_without_a_message_names_its_kind(net: Net) -> None:
    t = run(net, chunked(b"data: a\n\n", httpcore.ReadError(""), end=False))
    assert (
        t.transport_error == "the connection failed in the middle of the response body (ReadError)"
    )


# ------------------------------------------------------------------ before the body


@pytest.mark.parametrize(
    "error, reason",
    [
        (
            httpcore.ConnectError("[Errno -2] Name or service not known"),
            "the host name does not resolve",
        ),
        (httpcore.ConnectError("[Errno 111] Connection refused"), "connection refused"),
        (
            httpcore.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] bad"),
            "TLS handshake failed: [SSL: CERTIFICATE_VERIFY_FAILED] bad",
        ),
        (
            httpcore.ConnectError("[Errno 113] No route to host"),
            "cannot connect: [Errno 113] No route to host",
        ),
        (
            httpcore.ConnectTimeout("timed out"),
            "connection not established within 4 s (limits.connect_timeout)",
        ),
    ],
)
def test_a_connection_that_fails_is_an_error_at_the_connect_stage(
    net: Net, error: Exception, reason: str
) -> None:
    t = run(net, error, limits=Limits(connect_timeout=4))
    assert (t.status, t.transport_error, t.raw) == (None, reason, b"")
    assert t.meta["transport_stage"] == "connect"
    assert t.headers is None


def test_a_connect_timeout_at_the_total_deadline_names_the_total(net: Net) -> None:
    t = run(net, Later(3.0, httpcore.ConnectTimeout("timed out")), limits=Limits(total_timeout=3))
    assert t.transport_error == "connection not established within 3 s (limits.total_timeout)"
    assert t.meta["transport_stage"] == "connect"


def test_no_head_within_first_byte_timeout(net: Net) -> None:
    t = run(
        net,
        [Later(5, httpcore.ReadTimeout("timed out"))],
        limits=Limits(first_byte_timeout=5, total_timeout=60),
    )
    assert t.transport_error == "no response headers within 5 s (limits.first_byte_timeout)"
    assert t.meta["transport_stage"] == "headers"


def test_first_byte_timeout_is_at_most_the_total(net: Net) -> None:
    t = run(
        net,
        [Later(1, httpcore.ReadTimeout("timed out"))],
        limits=Limits(first_byte_timeout=50, total_timeout=20),
    )
    assert t.transport_error == "no response headers within 20 s (limits.first_byte_timeout)"


def test_no_head_by_the_total_deadline(net: Net) -> None:
    t = run(net, [Later(6, httpcore.ReadTimeout("timed out"))], limits=Limits(total_timeout=6))
    assert t.transport_error == "no response headers within 6 s (limits.total_timeout)"
    assert t.meta["transport_stage"] == "headers"


def test_a_head_still_arriving_at_the_deadline_counts_its_bytes(net: Net) -> None:
    t = run(
        net,
        [b"HTTP/1.1 2", b"00 OK\r\n", Later(6, httpcore.ReadTimeout("timed out"))],
        limits=Limits(total_timeout=6),
    )
    assert t.transport_error == (
        "the response head was still arriving after 6 s (limits.total_timeout) "
        "(17 bytes of it received)"
    )


def test_endless_interim_responses_are_counted_at_the_deadline(net: Net) -> None:
    hint = b"HTTP/1.1 103 Early Hints\r\nlink: </s.css>\r\n\r\n"  # 44 bytes
    t = run(
        net,
        [hint, hint[:12], hint[12:] + hint, Later(6, httpcore.ReadTimeout("timed out"))],
        limits=Limits(total_timeout=6),
    )
    assert t.transport_error == (
        "no final response head within 6 s (limits.total_timeout): only interim "
        f"responses (3 × 1xx, {3 * len(hint)} bytes)"
    )


def test_a_request_still_being_sent_at_the_deadline(net: Net) -> None:
    net.fail_writes = True
    t = run(net, [Later(6, httpcore.WriteTimeout("timed out"))], limits=Limits(total_timeout=6))
    assert t.transport_error == (
        "the request was still being sent after 6 s (limits.total_timeout)"
    )
    assert t.meta["transport_stage"] == "headers"


@pytest.mark.parametrize("message, detail", [("timed out", "timed out"), ("", "WriteTimeout")])
def test_a_request_that_cannot_be_sent_in_time(net: Net, message: str, detail: str) -> None:
    net.fail_writes = True
    t = run(net, [Later(1, httpcore.WriteTimeout(message))], limits=Limits(total_timeout=6))
    assert t.transport_error == f"the connection failed while sending the request ({detail})"
    assert t.meta["transport_stage"] == "headers"


@pytest.mark.parametrize("message, detail", [("reset by peer", "reset by peer"), ("", "ReadError")])
def test_a_new_connection_that_fails_before_the_head(net: Net, message: str, detail: str) -> None:
    t = run(net, [httpcore.ReadError(message)])
    assert t.transport_error == f"the connection failed while sending the request ({detail})"
    assert t.meta["transport_stage"] == "headers"


def test_a_head_cut_short_on_a_new_connection(net: Net) -> None:
    t = run(net, [b"HTTP/1.1 200 OK\r\ncontent-"])
    assert t.transport_error is not None
    assert t.transport_error.startswith(
        "the server closed the connection before a complete response head ("
    )
    assert t.meta["transport_stage"] == "headers"


def test_a_dropped_kept_alive_connection_is_retried_once_and_recorded(net: Net) -> None:
    net.conns += [ok() + [b""], ok()]  # the first connection is closed after one answer
    with make_client() as client:
        first = exchange(client, URL, REQUEST)
        second = exchange(client, URL, REQUEST)
    assert "connection_retry" not in first.meta
    assert (second.status, second.raw, second.transport_error) == (200, SSE, None)
    assert second.meta["connection_retry"] == (
        "the server dropped the kept-alive connection between two requests "
        "(Server disconnected without sending a response.); sent again on a new connection"
    )
    assert len(posts(net)) == 3


def test_a_new_connection_dropped_too_is_an_error(net: Net) -> None:
    net.conns += [ok() + [b""], [b""]]
    with make_client() as client:
        exchange(client, URL, REQUEST)
        t = exchange(client, URL, REQUEST)
    assert t.transport_error == (
        "the server closed the connection before a complete response head "
        "(Server disconnected without sending a response.)"
    )
    assert t.meta["transport_stage"] == "headers"


def test_a_url_that_is_not_http_is_an_error() -> None:
    with make_client() as client:
        t = exchange(client, "ftp://api.test/v1", REQUEST)
    assert t.transport_error is not None
    assert t.transport_error.startswith("not an http(s) URL: ")


# ------------------------------------------------------------------ retries


def status(code: int, *headers: str) -> list[Any]:
    body = b'{"error": {"message": "busy"}}'
    extra = "".join(h + "\r\n" for h in headers).encode()
    return [
        b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\n%scontent-length: %d\r\n\r\n"
        % (code, extra, len(body)),
        body,
    ]


def test_a_429_with_retry_after_is_waited_and_retried(net: Net, slept: list[float]) -> None:
    t = run(net, status(429, "retry-after: 2"), ok())
    assert (t.status, t.raw) == (200, SSE)
    assert slept == [2.0]
    assert t.meta["retries"] == [
        {"attempt": 1, "status": 429, "retry_after": "2", "waited": 2.0, "slept": True}
    ]


def test_a_503_backs_off_then_gives_the_last_answer(net: Net, slept: list[float]) -> None:
    rng = NS(uniform=lambda a, b: (a, b) == (0.75, 1.25) and 1.0)
    t = run(
        net,
        status(503),
        status(503),
        status(503),
        retry=RetryPolicy(max=2, base_delay=1.5),
        rng=rng,
    )
    assert t.status == 503 and t.transport_error is None
    assert slept == [1.5, 3.0]
    assert [r["attempt"] for r in t.meta["retries"]] == [1, 2]
    assert [r["waited"] for r in t.meta["retries"]] == [1.5, 3.0]


def test_attempts_are_reported_to_the_caller(net: Net, slept: list[float]) -> None:
    seen: list[int] = []
    run(net, status(429, "retry-after: 0"), ok(), on_attempt=seen.append)
    assert seen == [0, 1]


def test_retry_after_beyond_max_delay_gives_up_at_once(net: Net, slept: list[float]) -> None:
    t = run(net, status(429, "retry-after: 90"), retry=RetryPolicy(max_delay=30))
    assert t.status == 429 and slept == []
    assert t.meta["retries"] == [
        {
            "attempt": 1,
            "status": 429,
            "retry_after": "90",
            "waited": 0,
            "slept": False,
            "gave_up": "Retry-After 90 exceeds retries.max_delay 30 s",
        }
    ]


def test_on_replay_the_waits_are_reported_not_slept(net: Net, slept: list[float]) -> None:
    t = run(net, status(429, "retry-after: 4"), ok(), retry=RetryPolicy(sleep=False))
    assert slept == [] and t.status == 200
    assert t.meta["retries"][0]["slept"] is False and t.meta["retries"][0]["waited"] == 4.0


def test_an_http_date_retry_after_is_measured_from_the_answer_s_date(
    net: Net, slept: list[float]
) -> None:
    t = run(
        net,
        status(
            503,
            "retry-after: Wed, 21 Oct 2015 07:28:07 GMT",
            "date: Wed, 21 Oct 2015 07:28:04 GMT",
        ),
        ok(),
    )
    assert slept == [3.0] and t.status == 200


@pytest.mark.parametrize("code", [500, 502, 400, 401])
def test_other_statuses_are_not_retried(net: Net, slept: list[float], code: int) -> None:
    t = run(net, status(code, "retry-after: 1"))
    assert t.status == code and t.meta["retries"] == [] and slept == []


def test_no_more_than_max_retries(net: Net, slept: list[float]) -> None:
    t = run(
        net, status(429, "retry-after: 1"), status(429, "retry-after: 1"), retry=RetryPolicy(max=1)
    )
    assert t.status == 429 and slept == [1.0] and len(t.meta["retries"]) == 1


def test_a_429_cut_short_is_an_error_not_retried(net: Net, slept: list[float]) -> None:
    answer = [b"HTTP/1.1 429 X\r\nretry-after: 1\r\ntransfer-encoding: chunked\r\n\r\n", b"5\r\nab"]
    t = run(net, answer)
    assert t.status == 429 and t.transport_error is not None and slept == []


# ------------------------------------------------------------------ the pieces, directly


def test_limits_and_retries_from_providers_yaml_take_only_their_fields() -> None:
    assert Limits.from_dict(None) == Limits()
    assert Limits.from_dict({"max_bytes": 5, "idle_timeout": 2, "bogus": 1}) == Limits(
        max_bytes=5, idle_timeout=2
    )
    assert Limits() == Limits(10.0, 120.0, 120.0, 600.0, 64 * 1024 * 1024)
    assert RetryPolicy() == RetryPolicy(2, 1.0, 30.0, True)
    assert RetryPolicy.from_dict(None) == RetryPolicy()
    assert RetryPolicy.from_dict(
        {"max": 4, "base_delay": 0.5, "max_delay": 9, "sleep": True, "x": 1}, sleep=False
    ) == RetryPolicy(4, 0.5, 9, False)


class Rng:
    def __init__(self, factor: float):
        self.factor = factor
        self.calls: list[tuple[float, float]] = []

    def uniform(self, a: float, b: float) -> float:
        self.calls.append((a, b))
        return self.factor


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    p = RetryPolicy(base_delay=2.0, max_delay=10.0)
    rng = Rng(1.0)
    assert [p.delay(a, None, rng) for a in range(4)] == [2.0, 4.0, 8.0, 10.0]  # type: ignore[arg-type]
    assert rng.calls == [(0.75, 1.25)] * 4
    assert p.delay(1, None, Rng(0.75)) == 3.0  # type: ignore[arg-type]
    assert p.delay(1, "garbage", Rng(1.25)) == 5.0  # type: ignore[arg-type]
    assert RetryPolicy(base_delay=-1).delay(0, None, Rng(1.0)) == 0.0  # type: ignore[arg-type]


def test_retry_after_is_honoured_up_to_max_delay() -> None:
    p = RetryPolicy(max_delay=30)
    rng = random.Random(0)
    assert p.delay(0, "30", rng) == 30.0
    assert p.delay(0, "30.5", rng) is None
    assert p.delay(5, "0", rng) == 0.0
    assert p.delay(0, "Wed, 21 Oct 2015 07:28:20 GMT", rng, "Wed, 21 Oct 2015 07:28:00 GMT") == 20.0


@pytest.mark.parametrize(
    "value, date, seconds",
    [
        (None, None, None),
        ("", None, None),
        (" 7 ", None, 7.0),
        ("1.5", None, 1.5),
        ("-3", None, 0.0),
        ("soon", None, None),
        ("Wed, 21 Oct 2015 07:28:10 GMT", "Wed, 21 Oct 2015 07:28:00 GMT", 10.0),
        ("Wed, 21 Oct 2015 07:27:00 GMT", "Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
        ("Wed, 21 Oct 2015 07:28:30 GMT", None, 30.0),  # from the clock
        ("Wed, 21 Oct 2015 07:28:30 GMT", "not a date", 30.0),  # from the clock
    ],
)
def test_retry_after_is_seconds_or_a_date(
    clock: Clock, value: str | None, date: str | None, seconds: float | None
) -> None:
    assert T.parse_retry_after(value, date) == seconds


def test_a_fault_is_one_redacted_line() -> None:
    secrets.register("sk-faultkey0123456789abcdef")
    f = TransportFault("bad\nthing sk-faultkey0123456789abcdef")
    assert "\n" not in f.reason and "sk-faultkey0123456789abcdef" not in f.reason
    assert f.reason.startswith("bad") and str(f) == f.reason
    assert (f.quirk, f.stage, f.limit) == (None, "body", False)
    g = TransportFault("x", "Q-X", stage="connect", limit=True)
    assert (g.quirk, g.stage, g.limit) == ("Q-X", "connect", True)
    assert T.LimitExceeded is TransportFault


@pytest.mark.parametrize(
    "text",
    [
        "[Errno -2] Name or service not known",
        "nodename nor servname provided, or not known",
        "[Errno -3] Temporary failure in name resolution",
        "[Errno -5] No address associated with hostname",
        "Name does not resolve",
        "getaddrinfo failed",
        "No such host is known",
    ],
)
def test_every_resolver_s_wording_is_a_host_that_does_not_resolve(text: str) -> None:
    assert T._connect_reason(httpx.ConnectError(text), Limits()) == "the host name does not resolve"


def test_the_connect_reasons() -> None:
    lim = Limits(connect_timeout=2.5)
    assert T._connect_reason(httpx.ConnectTimeout("x"), lim) == (
        "connection not established within 2.5 s (limits.connect_timeout)"
    )
    assert T._connect_reason(httpx.ConnectError("Connection REFUSED"), lim) == "connection refused"
    for text in ("certificate verify failed", "SSL error", "TLSV1_ALERT"):
        assert T._connect_reason(httpx.ConnectError(text), lim) == "TLS handshake failed: " + text
    long = "x" * 300
    assert T._connect_reason(httpx.ConnectError(long), lim) == "cannot connect: " + (
        secrets.one_line(long, 160)
    )
    tls = "certificate " + long
    assert T._connect_reason(httpx.ConnectError(tls), lim) == (
        "TLS handshake failed: " + tls[:139] + "…"
    )
    assert T._connect_reason(httpx.ConnectError(long), lim) == "cannot connect: " + long[:159] + "…"


def test_the_detail_is_the_last_parenthesis() -> None:
    assert T._detail(Exception("peer closed (a) (incomplete chunked read)")) == (
        "incomplete chunked read"
    )
    assert T._detail(Exception("no parenthesis")) == "no parenthesis"
    assert T._detail(ValueError()) == "ValueError"
    assert T._detail(Exception("(x) then more")) == "(x) then more"
    assert len(T._detail(Exception("y" * 300))) <= 100


@pytest.mark.parametrize(
    "exc, reason",
    [
        (TransportFault("cut", "Q-X"), ("cut", "Q-X")),
        (httpx.DecodingError("bad gzip"), ("the body could not be decoded (bad gzip)", None)),
        (httpx.ReadTimeout("slow"), ("timed out: slow", None)),
        (httpx.PoolTimeout(""), ("timed out: PoolTimeout", None)),
        (httpx.RemoteProtocolError("odd"), ("the server broke the HTTP protocol (odd)", None)),
        (httpx.UnsupportedProtocol("ftp"), ("not an http(s) URL: ftp", None)),
        (httpx.InvalidURL("bad url"), ("not an http(s) URL: bad url", None)),
        (
            type("CannotOverwriteExistingCassetteException", (Exception,), {})("x"),
            (
                "replay: the cassette has no recorded answer for this request "
                "(record the cell again)",
                None,
            ),
        ),
        (httpx.ReadError("reset"), ("ReadError: reset", None)),
        (ConnectionResetError("reset"), ("ConnectionResetError: reset", None)),
        (KeyError("k"), ("internal error while reading the response: KeyError: 'k'", None)),
    ],
)
def test_every_failure_is_one_reason(exc: BaseException, reason: tuple[str, Any]) -> None:
    assert T._reason(exc) == reason


def test_a_failure_the_transport_did_not_classify_is_still_an_error_cell() -> None:
    def boom(request: httpx.Request) -> httpx.Response:
        raise RuntimeError("a bug in a layer above")

    with httpx.Client(transport=httpx.MockTransport(boom)) as client:
        t = exchange(client, URL, REQUEST)
    assert t.transport_error == (
        "internal error while reading the response: RuntimeError: a bug in a layer above"
    )
    assert t.status is None and t.raw == b""
    assert "transport_stage" not in t.meta


def test_a_fault_after_the_head_is_at_the_body_stage() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        def body() -> Iterator[bytes]:
            yield b"data: a\n\n"
            raise httpx.ReadError("gone")

        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=Gen(body())
        )

    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        t = exchange(client, URL, REQUEST)
    assert t.transport_error == "ReadError: gone" and t.status == 200
    assert "transport_stage" not in t.meta


class Gen(httpx.SyncByteStream):
    def __init__(self, it: Iterator[bytes]):
        self.it = it

    def __iter__(self) -> Iterator[bytes]:
        yield from self.it


def replay(*headers: tuple[str, str], body: bytes) -> Any:
    """An answer as vcrpy replays it: the cassette's headers and body, unread."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers=[("content-type", "text/event-stream"), *headers],
            stream=httpx.ByteStream(body),
        )

    return httpx.Client(transport=httpx.MockTransport(answer))


def test_a_replayed_gzip_body_is_decoded_and_named() -> None:
    with replay(("content-encoding", "gzip"), body=gzip.compress(SSE)) as client:
        t = exchange(client, URL, REQUEST)
    assert t.raw == SSE and t.meta["content_encoding"] == "gzip"
    assert t.headers is not None and "content-encoding" not in t.headers


def test_a_replayed_cassette_says_what_the_transport_undid() -> None:
    with replay((T.ENCODING_HEADER, "gzip (unlabelled)"), body=SSE) as client:
        t = exchange(client, URL, REQUEST)
    assert t.meta["content_encoding"] == "gzip (unlabelled)"


def test_a_replayed_fault_is_the_same_error_cell() -> None:
    with replay(
        (T.FAULT_HEADER, "stream stalled: no bytes for 3 s (limits.idle_timeout)"),
        (T.QUIRK_HEADER, "Q-STREAM-STALLS"),
        (T.RETRY_HEADER, "sent again"),
        (T.TIMES_HEADER, "2:0.500"),
        body=b"data: a\n\n",
    ) as client:
        t = exchange(client, URL, REQUEST)
    assert t.transport_error == "stream stalled: no bytes for 3 s (limits.idle_timeout)"
    assert t.meta["transport_quirk"] == "Q-STREAM-STALLS"
    assert t.meta["connection_retry"] == "sent again"
    assert t.meta["line_times"] == [(2, 0.5)]
    assert t.raw == b"data: a\n\n"
    assert t.headers is not None
    assert not any(k.startswith("x-conformance") for k in t.headers)


def test_a_replayed_bomb_is_cut_to_whole_events() -> None:
    event = b"data: " + b"z" * 94 + b"\n\n"
    with replay(("content-encoding", "gzip"), body=gzip.compress(event * 6000)) as client:
        t = exchange(client, URL, REQUEST, limits=Limits(max_bytes=400_000))
    assert t.transport_error == "stream exceeded 400000 bytes (limits.max_bytes)"
    assert t.raw == event * (T.KEEP_ON_LIMIT // len(event))


def test_a_replayed_broken_gzip_is_an_error_keeping_what_decoded() -> None:
    with replay(("content-encoding", "gzip"), body=b"not gzip") as client:
        t = exchange(client, URL, REQUEST)
    assert t.transport_error is not None
    assert t.transport_error.startswith("the gzip body could not be decoded (")
    assert t.raw == b""


# ------------------------------------------------------------------ the deadline, directly


def test_the_deadline_names_the_phase_it_ran_out_in(clock: Clock) -> None:
    d = T._Deadline(2.5, clock.now)
    assert d.reason() == "connection not established within 2.5 s (limits.total_timeout)"
    d.phase = "request"
    assert d.reason() == "the request was still being sent after 2.5 s (limits.total_timeout)"
    d.phase = "head"
    assert d.reason() == "no response headers within 2.5 s (limits.total_timeout)"
    d.received(b"HTTP/1.1 200")
    assert d.head_bytes == 12
    assert d.reason() == (
        "the response head was still arriving after 2.5 s (limits.total_timeout) "
        "(12 bytes of it received)"
    )


def test_the_deadline_counts_head_bytes_only_in_the_head(clock: Clock) -> None:
    d = T._Deadline(5, clock.now)
    d.received(b"HTTP/1.1 103 x\r\n")  # in the connect phase: not the head
    d.phase = "body"
    d.received(b"HTTP/1.1 103 x\r\n")
    assert (d.head_bytes, d.interim) == (0, 0)
    d.phase = "head"
    d.received(b"")
    assert d.head_bytes == 0


def test_interim_responses_are_counted_once_across_reads(clock: Clock) -> None:
    d = T._Deadline(5, clock.now)
    d.phase = "head"
    for piece in (b"HTTP/1.1 1", b"03 Early\r\n\r\nHTTP/1.1 103 ", b"x\r\n\r\nHTTP/2 100 ", b"y"):
        d.received(piece)
    assert d.interim == 3
    d2 = T._Deadline(5, clock.now)
    d2.phase = "head"
    d2.received(b"HTTP/1.1 200 OK\r\nx: HTTP/1.1 103 \r\n")  # not at a line start
    assert d2.interim == 0


def test_the_deadline_expires_within_a_millisecond(clock: Clock) -> None:
    d = T._Deadline(2, clock.now)
    assert d.left() == 2 and not d.expired()
    clock.now += 1.998
    assert not d.expired()
    clock.now += 0.0015
    assert d.expired()


def test_a_socket_wait_is_capped_by_what_is_left(clock: Clock) -> None:
    assert T._capped(7.0, None, httpcore.ReadTimeout) == 7.0
    assert T._capped(None, None, httpcore.ReadTimeout) is None
    d = T._Deadline(5, clock.now)
    assert T._capped(7.0, d, httpcore.ReadTimeout) == 5
    assert T._capped(3.0, d, httpcore.ReadTimeout) == 3.0
    assert T._capped(None, d, httpcore.ReadTimeout) == 5
    clock.now += 4.9995
    with pytest.raises(httpcore.ReadTimeout, match="total_timeout ran out"):
        T._capped(3.0, d, httpcore.ReadTimeout)


class _Sock:
    def __init__(self) -> None:
        self.shut = threading.Event()
        self.how: list[int] = []

    def shutdown(self, how: int) -> None:
        self.how.append(how)
        self.shut.set()


@pytest.mark.parametrize(
    "after",
    [
        httpx.ReadError("shut"),
        httpx.ReadTimeout("shut"),
        httpx.RemoteProtocolError("peer closed connection (incomplete chunked read)"),
        None,  # a body without a length: the shut socket reads as its end
    ],
)
def test_at_the_total_deadline_the_socket_is_shut_and_the_read_ends(
    after: Exception | None,
) -> None:
    sock = _Sock()

    class Blocking(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield b"data: a\n\n"
            sock.shut.wait(5)  # a read blocked until the socket is shut
            if after is not None:
                raise after

    s = T._LimitedStream(Blocking(), Limits(total_timeout=0.05), time.monotonic(), sock=sock)
    s.headers_raw = [(b"content-type", b"text/event-stream")]
    s.response = httpx.Response(200, headers=s.headers_raw)
    assert b"".join(s) == b"data: a\n\n"
    assert sock.how == [socket.SHUT_RDWR]
    assert s.response.headers[T.FAULT_HEADER] == (
        "stream still running after 0.05 s (limits.total_timeout)"
    )
    assert s.response.headers[T.CUT_HEADER] == "kept the first 9 of 9 bytes received"


def test_a_socket_that_cannot_be_shut_is_left_alone() -> None:
    s = T._LimitedStream(Gen(iter(())), Limits(), time.monotonic(), sock=object())
    s._expire()  # no shutdown: nothing raised
    assert s._expired


def test_a_stream_closed_closes_the_one_off_connection_too() -> None:
    closed: list[str] = []

    class Inner(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield b""

        def close(self) -> None:
            closed.append("inner")

    s = T._LimitedStream(
        Inner(), Limits(), time.monotonic(), on_close=lambda: closed.append("pool")
    )
    s.close()
    assert closed == ["inner", "pool"]


def test_the_socket_of_a_response() -> None:
    sock = object()
    stream = NS(get_extra_info=lambda info: sock if info == "socket" else None)
    assert T._socket_of(httpx.Response(200, extensions={"network_stream": stream})) is sock
    assert T._socket_of(httpx.Response(200)) is None

    def broken(info: str) -> Any:
        raise RuntimeError

    assert (
        T._socket_of(httpx.Response(200, extensions={"network_stream": NS(get_extra_info=broken)}))
        is None
    )


def test_a_limit_before_the_head_was_handed_on_raises() -> None:
    s = T._LimitedStream(Gen(iter([b"x" * 10])), Limits(max_bytes=5), time.monotonic())
    with pytest.raises(TransportFault) as e:
        list(s)
    assert (e.value.reason, e.value.limit) == ("stream exceeded 5 bytes (limits.max_bytes)", True)


def test_an_empty_chunk_still_checks_the_deadline(clock: Clock) -> None:
    def pieces() -> Iterator[bytes]:
        yield b"data: a\n\n"
        clock.now += 10
        yield b""
        yield b"data: b\n\n"

    s = T._LimitedStream(Gen(pieces()), Limits(total_timeout=5), clock.now)
    s.headers_raw = []
    s.response = httpx.Response(200)
    assert b"".join(s) == b"data: a\n\n"
    assert (
        s.response.headers[T.FAULT_HEADER]
        == "stream still running after 5 s (limits.total_timeout)"
    )


class _Tls(httpcore.NetworkStream):
    """A stream that records how it was asked to start TLS."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, Any, Any]] = []

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self.calls.append(("read", max_bytes, timeout))
        return b""

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.calls.append(("write", buffer, timeout))

    def close(self) -> None:
        pass

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        self.calls.append((ssl_context, server_hostname, timeout))
        return _Tls()

    def get_extra_info(self, info: str) -> Any:
        return "extra-" + info


class _Unix(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.slept: list[float] = []

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.NetworkStream:
        self.calls.append((path, timeout, socket_options))
        return _Tls()

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


def test_tls_and_unix_sockets_keep_the_exchange_s_deadline(clock: Clock) -> None:
    inner = _Unix()
    backend = T._DeadlineBackend(inner)
    T._current.deadline = T._Deadline(4, clock.now)
    try:
        stream = backend.connect_unix_socket("/tmp/x.sock", timeout=9, socket_options=["o"])
        assert isinstance(stream, T._DeadlineStream)
        ctx: Any = "ctx"
        tls = stream.start_tls(ctx, "api.test", timeout=20)
        assert isinstance(tls, T._DeadlineStream)
        assert tls.get_extra_info("socket") == "extra-socket"
        backend.sleep(0.5)
        clock.now += 4
        with pytest.raises(httpcore.ConnectTimeout):
            stream.start_tls(ctx, "api.test", timeout=20)
        with pytest.raises(httpcore.ConnectTimeout):
            backend.connect_unix_socket("/tmp/x.sock", timeout=9)
    finally:
        del T._current.deadline
    assert inner.calls == [("/tmp/x.sock", 4, ["o"])]
    assert stream._s.calls == [("ctx", "api.test", 4)]  # type: ignore[attr-defined]
    assert inner.slept == [0.5]


def test_without_an_exchange_a_connection_keeps_its_own_timeouts() -> None:
    inner = _Unix()
    backend = T._DeadlineBackend(inner)
    T._current.__dict__.pop("deadline", None)  # an earlier exchange's, in this thread
    stream = backend.connect_unix_socket("/tmp/y.sock", timeout=9)
    ctx: Any = "ctx"
    stream.start_tls(ctx, "h", timeout=20)
    assert stream.read(10, timeout=8) == b""
    stream.write(b"x", timeout=7)
    assert inner.calls == [("/tmp/y.sock", 9, None)]
    assert stream._s.calls == [  # type: ignore[attr-defined]
        ("ctx", "h", 20),
        ("read", 10, 8),
        ("write", b"x", 7),
    ]


# ------------------------------------------------------------------ what httpcore is given


def test_a_read_in_the_head_waits_at_most_what_is_left(net: Net) -> None:
    net.conns.append([Later(3, b"HTTP/1.1 200 OK\r\n"), b"content-length: 0\r\n\r\n"])
    limits = Limits(first_byte_timeout=50, total_timeout=5)
    with make_client(limits) as client:
        exchange(client, URL, REQUEST, limits=limits)
    assert net.read_timeouts[:2] == [5, 2]


def test_the_request_carries_the_limits_as_httpcore_timeouts(net: Net) -> None:
    net.conns.append(ok())
    limits = Limits(connect_timeout=3, first_byte_timeout=7, idle_timeout=4, total_timeout=100)
    with make_client(limits) as client, client.stream("POST", URL, json=REQUEST) as r:
        r.read()
        assert r.request.extensions["timeout"] == {"connect": 3, "write": 3, "pool": 3, "read": 4}


def test_a_request_s_own_limits_come_before_the_client_s(net: Net) -> None:
    net.conns.append(ok(b"x" * 50))
    with make_client(Limits(max_bytes=1000)) as client:
        t = exchange(client, URL, REQUEST, limits=Limits(max_bytes=10))
    assert t.transport_error == "stream exceeded 10 bytes (limits.max_bytes)"


def test_a_caller_s_trace_sees_every_event_and_is_given_back(net: Net) -> None:
    net.conns.append(ok() + ok())
    events: list[str] = []
    infos: dict[str, Any] = {}

    def trace(event: str, info: dict[str, Any]) -> None:
        events.append(event)
        infos[event] = info

    with make_client() as client:
        with client.stream("POST", URL, json=REQUEST, extensions={"trace": trace}) as r:
            r.read()
        assert r.request.extensions["trace"] is trace
        with client.stream("POST", URL, json=REQUEST) as r2:
            assert "trace" not in r2.request.extensions
    assert "connection.connect_tcp.started" in events
    assert "http11.receive_response_headers.started" in events
    # with what httpcore tells about each event: where it connects, what it sends
    assert infos["connection.connect_tcp.started"]["host"] == "api.test"
    assert infos["http11.send_request_headers.started"]["request"].method == b"POST"


def test_a_declared_and_an_announced_layer_are_both_named(net: Net) -> None:
    t = run(net, ok(gzip.compress(gzip.compress(SSE)), "content-encoding: gzip"))
    assert t.raw == SSE
    assert t.meta["content_encoding"] == "gzip, gzip (unlabelled)"
    assert "content-length" not in t.headers


def test_the_transport_wraps_its_network_once() -> None:
    t = T.LimitedTransport(Limits())
    first = t._pool._network_backend
    assert isinstance(first, T._DeadlineBackend)
    assert T._keep_deadlines(t)._pool._network_backend is first
    assert t.limits == Limits()
    assert T.LimitedTransport(Limits(max_bytes=3)).limits.max_bytes == 3


def test_a_body_shorter_than_a_magic_is_handed_on_at_its_end(net: Net) -> None:
    for body in (b"(", b"\x1f", b"\x28\xb5\x2f"):
        t = run(net, ok(body))
        assert (t.raw, t.transport_error) == (body, None)
        assert "content_encoding" not in t.meta


def test_an_empty_body_in_a_coding_it_cannot_undo_is_still_refused(net: Net) -> None:
    t = run(net, ok(b"", "content-encoding: compress"))
    assert t.transport_error is not None
    assert t.transport_error.startswith("the body is compress-encoded")


def test_the_times_are_kept_to_the_millisecond(net: Net, slept: list[float]) -> None:
    t = run(net, [Later(0.12345, HEAD + b"content-length: 0\r\n\r\n")])
    assert t.meta["elapsed"] == 0.123 and t.meta["total_elapsed"] == 0.123
    t = run(net, [Later(2.0, status(503)[0]), status(503)[1]], ok(), rng=Rng(1.23456))
    assert slept == [1.23456]
    assert t.meta["retries"][0]["waited"] == 1.235
    assert t.meta["elapsed"] == 0.0 and t.meta["total_elapsed"] == 2.0


def test_a_replayed_body_cut_short_keeps_every_event_it_decoded() -> None:
    event = b"data: " + b"z" * 94 + b"\n\n"
    body = gzip.compress(event * 3000)[:-8]  # 300 kB of events, the trailer lost
    with replay(("content-encoding", "gzip"), body=body) as client:
        t = exchange(client, URL, REQUEST)
    assert (
        t.transport_error == "the gzip body could not be decoded (the compressed data ends early)"
    )
    assert t.raw == event * 3000


def test_a_millisecond_left_is_no_time_left(clock: Clock) -> None:
    clock.now = 0.0
    d = T._Deadline(0.001, 0.0)  # exactly 0.001 s left
    assert d.left() == 0.001 and d.expired()
    with pytest.raises(httpcore.ConnectTimeout):
        T._capped(1.0, d, httpcore.ConnectTimeout)
    d = T._Deadline(0.002, 0.0)
    assert not d.expired()
    assert T._capped(1.0, d, httpcore.ConnectTimeout) == 0.002


def test_a_read_asked_for_once_the_deadline_passed_is_a_timeout(net: Net) -> None:
    t = run(
        net,
        [Later(6, b"HTTP/1.1 2"), b"00 OK\r\ncontent-length: 0\r\n\r\n"],
        limits=Limits(total_timeout=6),
    )
    assert t.transport_error == (
        "the response head was still arriving after 6 s (limits.total_timeout) "
        "(10 bytes of it received)"
    )


LONG = "m" * 300


@pytest.mark.parametrize(
    "exc, reason",
    [
        (httpx.DecodingError(LONG), "the body could not be decoded (" + LONG[:119] + "…)"),
        (httpx.ReadTimeout(LONG), "timed out: " + LONG[:159] + "…"),
        (
            httpx.RemoteProtocolError(LONG),
            "the server broke the HTTP protocol (" + LONG[:119] + "…)",
        ),
        (httpx.InvalidURL(LONG), "not an http(s) URL: " + LONG[:119] + "…"),
        (httpx.ReadError(LONG), "ReadError: " + LONG[:159] + "…"),
        (
            KeyError(LONG),
            "internal error while reading the response: KeyError: '" + LONG[:138] + "…",
        ),
    ],
)
def test_a_long_reason_is_cut_to_its_bound(exc: BaseException, reason: str) -> None:
    assert T._reason(exc) == (reason, None)


def test_connecting_and_sending_wait_at_most_what_is_left(net: Net) -> None:
    net.conns.append(ok())
    limits = Limits(connect_timeout=10, total_timeout=4)
    with make_client(limits) as client:
        t = exchange(client, URL, REQUEST, limits=limits)
    assert t.transport_error is None
    assert net.connect_timeouts == [4] and net.write_timeouts[0] == 4
    assert net.connects == [("api.test", 80, None, None)]


def test_a_request_not_sent_by_the_deadline_says_so(net: Net) -> None:
    t = run(net, Later(4, ok()), limits=Limits(total_timeout=4))
    assert t.transport_error == "the request was still being sent after 4 s (limits.total_timeout)"
    assert t.meta["transport_stage"] == "headers"


def test_the_transport_s_own_options_reach_every_connection(net: Net) -> None:
    net.conns += [ok() + [b""], ok()]  # the second request finds the first connection dropped
    transport = T.LimitedTransport(Limits(), local_address="127.0.0.2", socket_options=[(1, 2, 3)])
    with httpx.Client(transport=transport) as client:
        exchange(client, URL, REQUEST)
        t = exchange(client, URL, REQUEST)
    assert "connection_retry" in t.meta
    assert net.connects == [("api.test", 80, "127.0.0.2", [(1, 2, 3)])] * 2


def test_without_an_exchange_a_tcp_connection_keeps_its_own_timeout(clock: Clock) -> None:
    net = Net(clock)
    net.conns.append([])
    T._current.__dict__.pop("deadline", None)
    T._DeadlineBackend(net).connect_tcp("h.test", 443, timeout=9)
    assert net.connect_timeouts == [9] and net.connects == [("h.test", 443, None, None)]


def test_a_new_connection_after_the_deadline_is_not_attempted(net: Net) -> None:
    """The kept-alive connection is found dropped only when the exchange's time is up."""
    net.conns += [ok() + [Later(5, b"")], ok()]
    limits = Limits(total_timeout=5)
    with make_client(limits) as client:
        exchange(client, URL, REQUEST, limits=limits)
        t = exchange(client, URL, REQUEST, limits=limits)
    # the deadline ran out while the request waited for its head: that is what it says
    assert t.transport_error == "no response headers within 5 s (limits.total_timeout)"
    assert t.meta["transport_stage"] == "connect"
    assert len(net.connects) == 1


# ------------------------------------------------------------------ what the client's caller is told


@pytest.mark.parametrize(
    "conn, stage, limit",
    [
        (Later(5, httpcore.ConnectTimeout("slow")), "connect", True),  # the total deadline
        ([Later(5, httpcore.ReadTimeout("slow"))], "headers", True),
        (httpcore.ConnectError("connection refused"), "connect", False),  # not a limit
        ([httpcore.ReadError("reset by peer")], "headers", False),
    ],
)
def test_a_fault_before_the_head_tells_the_client_s_caller_where_and_whether_a_limit(
    net: Net, conn: Any, stage: str, limit: bool
) -> None:
    """Whoever sends with the suite's client, not only ``exchange``, is told at which
    stage the request failed and whether one of the suite's own limits ended it."""
    net.conns.append(conn)
    with make_client(Limits(total_timeout=5)) as client:
        with pytest.raises(TransportFault) as e:
            client.post(URL, json=REQUEST)
    assert (e.value.stage, e.value.limit) == (stage, limit)


LONG_CAUSE = "m" * 300


@pytest.mark.parametrize(
    "conn, reason",
    [
        (  # a request not sent in time, before the deadline
            [Later(1, httpcore.WriteTimeout(LONG_CAUSE))],
            "the connection failed while sending the request (",
        ),
        ([httpcore.ReadError(LONG_CAUSE)], "the connection failed while sending the request ("),
        (
            [httpcore.RemoteProtocolError(LONG_CAUSE)],
            "the server closed the connection before a complete response head (",
        ),
    ],
)
def test_a_long_cause_before_the_head_is_cut_to_its_bound(
    net: Net, conn: list[Any], reason: str
) -> None:
    net.fail_writes = isinstance(conn[0], Later)
    t = run(net, conn, limits=Limits(total_timeout=6))
    assert t.transport_error == reason + "m" * 99 + "…)"
    assert t.meta["transport_stage"] == "headers"


# ------------------------------------------------------------------ the watchdog, the headers handed on


class _Timer:
    """threading.Timer, recorded: ``fire`` says whether it goes off as soon as started
    (the total deadline passes while the body is read)."""

    made: list[_Timer] = []
    fire = False

    def __init__(self, interval: float, function: Any):
        self.interval, self.function = interval, function
        self.daemon, self.started, self.cancelled = False, False, False
        _Timer.made.append(self)

    def start(self) -> None:
        self.started = True
        if _Timer.fire:
            self.function()

    def cancel(self) -> None:
        self.cancelled = True


@pytest.fixture
def timers(monkeypatch: pytest.MonkeyPatch) -> list[_Timer]:
    monkeypatch.setattr(_Timer, "made", [])
    monkeypatch.setattr(_Timer, "fire", False)
    monkeypatch.setattr(T, "threading", NS(Timer=_Timer))
    return _Timer.made


@pytest.mark.parametrize("head_after, left", [(1.0, 4.0), (4.5, 0.5)])
def test_a_live_body_s_socket_is_shut_when_the_total_deadline_passes(
    net: Net, timers: list[_Timer], head_after: float, left: float
) -> None:
    """The watchdog is set for what is left of the total once the head is in, never
    holds the process open, and at the deadline shuts the response's own socket."""
    _Timer.fire = True
    net.sock = _Sock()
    t = run(
        net,
        [Later(head_after, HEAD + b"content-length: 9\r\n\r\n"), b"data: a\n\n"],
        limits=Limits(total_timeout=5),
    )
    assert [(w.interval, w.daemon, w.started, w.cancelled) for w in timers] == [
        (left, True, True, True)
    ]
    assert net.sock.how == [socket.SHUT_RDWR]
    assert t.transport_error == "stream still running after 5 s (limits.total_timeout)"
    assert t.raw == b"data: a\n\n"


def test_a_body_without_a_socket_has_no_watchdog(net: Net, timers: list[_Timer]) -> None:
    """A replayed or in-memory body: its reads check the clock themselves."""
    t = run(net, ok(), limits=Limits(total_timeout=5))
    assert timers == [] and t.transport_error is None


def test_the_deadline_passing_before_any_byte_keeps_nothing_and_says_so(
    clock: Clock, timers: list[_Timer]
) -> None:
    class Blocking(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            timers[0].function()  # the first read is still waiting at the deadline
            raise httpx.ReadError("shut")
            yield b""

    s = T._LimitedStream(Blocking(), Limits(total_timeout=5), clock.now, sock=_Sock())
    s.headers_raw = []
    s.response = httpx.Response(200)
    assert b"".join(s) == b""
    assert s.response.headers[T.FAULT_HEADER] == (
        "stream still running after 5 s (limits.total_timeout)"
    )
    assert s.response.headers[T.CUT_HEADER] == "kept the first 0 of 0 bytes received"


def test_a_body_whose_last_byte_arrives_at_the_total_deadline_is_kept_whole(net: Net) -> None:
    t = run(
        net,
        [HEAD + b"content-length: 9\r\n\r\n", Later(5, b"data: a\n\n")],
        limits=Limits(total_timeout=5),
    )
    assert (t.transport_error, t.raw) == (None, b"data: a\n\n")


def test_a_read_timeout_ten_milliseconds_before_the_deadline_is_the_total_timeout(
    net: Net,
) -> None:
    """The read was given what was left; a clock a few ms off is not a stall."""
    t = run(
        net,
        chunked(b"data: a\n\n", Later(4.0, httpcore.ReadTimeout("timed out")), end=False),
        limits=Limits(idle_timeout=30, total_timeout=4.01),
    )
    assert t.transport_error == "stream still running after 4.01 s (limits.total_timeout)"


def test_an_empty_last_read_past_the_deadline_is_the_total_timeout(clock: Clock) -> None:
    def pieces() -> Iterator[bytes]:
        yield b"data: a\n\n"
        clock.now += 10
        yield b""

    s = T._LimitedStream(Gen(pieces()), Limits(total_timeout=5), clock.now)
    s.headers_raw = []
    s.response = httpx.Response(200)
    assert b"".join(s) == b"data: a\n\n"
    assert s.response.headers[T.FAULT_HEADER] == (
        "stream still running after 5 s (limits.total_timeout)"
    )


def test_a_long_cause_inside_the_body_is_cut_to_its_bound(net: Net) -> None:
    t = run(net, chunked(b"data: a\n\n", httpcore.ReadError(LONG_CAUSE), end=False))
    assert t.transport_error == (
        "the connection failed in the middle of the response body (" + "m" * 99 + "…)"
    )
    assert t.raw == b"data: a\n\n"


def test_a_body_without_a_line_end_hands_on_no_line_times_header(net: Net) -> None:
    """Nothing for the cassette to record: not even an empty value."""
    net.conns.append(ok(b'{"choices": []}'))
    with make_client() as client, client.stream("POST", URL, json=REQUEST) as r:
        assert r.read() == b'{"choices": []}'
        assert T.TIMES_HEADER not in r.headers


def test_an_unlabelled_layer_in_a_stream_not_yet_handed_on_is_undone() -> None:
    s = T._LimitedStream(Gen(iter([gzip.compress(SSE)])), Limits(), time.monotonic())
    assert b"".join(s) == SSE


def test_a_server_cannot_forge_the_suite_s_headers_on_a_coded_answer(net: Net) -> None:
    forged = [f"{h}: forged" for h in T.INTERNAL_HEADERS]
    t = run(net, ok(gzip.compress(SSE), "content-encoding: gzip", *forged))
    assert (t.transport_error, t.raw) == (None, SSE)
    assert t.meta["content_encoding"] == "gzip"
    assert "transport_quirk" not in t.meta and "connection_retry" not in t.meta
    assert t.headers is not None
    assert not any(k.startswith("x-conformance") for k in t.headers)


def test_every_coding_a_header_lists_is_named(net: Net) -> None:
    t = run(net, ok(gzip.compress(gzip.compress(SSE)), "content-encoding: gzip, gzip"))
    assert t.raw == SSE and t.meta["content_encoding"] == "gzip, gzip"


def test_the_one_off_connection_of_a_retry_is_closed_with_its_answer(net: Net) -> None:
    net.conns += [ok() + [b""], ok()]  # the first connection is closed after one answer
    with make_client() as client:
        exchange(client, URL, REQUEST)
        t = exchange(client, URL, REQUEST)
        assert "connection_retry" in t.meta
        # the dropped one and the one-off one, before the client itself is closed
        assert len(net.closed) == 2


def test_the_answer_keeps_its_reason_phrase(net: Net) -> None:
    """What a cassette records as the status message."""
    net.conns.append([b"HTTP/1.1 429 Slow Down\r\ncontent-length: 0\r\n\r\n"])
    with make_client() as client:
        r = client.post(URL, json=REQUEST)
    assert (r.status_code, r.reason_phrase) == (429, "Slow Down")


def test_a_request_s_own_limits_are_the_timeouts_httpcore_is_given(net: Net) -> None:
    """Not the client's: one client serves providers with different limits."""
    net.conns.append([HEAD + b"content-length: 9\r\n\r\n", b"data: x\n\n"])
    limits = Limits(connect_timeout=3, first_byte_timeout=7, idle_timeout=4, total_timeout=100)
    with make_client(Limits()) as client:
        with client.stream("POST", URL, json=REQUEST, extensions={T.LIMITS_EXTENSION: limits}) as r:
            r.read()
            assert r.request.extensions["timeout"] == {
                "connect": 3,
                "write": 3,
                "pool": 3,
                "read": 4,
            }
    assert net.connect_timeouts == [3] and net.write_timeouts[0] == 3
    assert net.read_timeouts[:2] == [7, 4]


def test_a_body_read_waits_at_most_idle_timeout_even_under_a_second(net: Net) -> None:
    net.conns.append([HEAD + b"content-length: 9\r\n\r\n", b"data: x\n\n"])
    limits = Limits(idle_timeout=0.2, total_timeout=0.5)
    with make_client(limits) as client:
        exchange(client, URL, REQUEST, limits=limits)
    assert net.read_timeouts[:2] == [0.5, 0.2]


def test_the_retry_waits_are_the_same_on_every_run(net: Net, slept: list[float]) -> None:
    """Without an rng of the caller's, the jitter is seeded: a replay reports the waits
    the recording made, to the millisecond."""
    ts = [
        run(net, status(503), status(200), retry=RetryPolicy(max=1, base_delay=1.0))
        for _ in range(2)
    ]
    assert len(slept) == 2 and slept[0] == slept[1] != round(slept[0], 3)
    assert [t.meta["retries"][0]["waited"] for t in ts] == [round(slept[0], 3)] * 2


def test_a_key_with_a_space_inside_is_redacted_whole(net: Net) -> None:
    key = "abcd efgh-0123456789xyz"
    t = run(
        net,
        ok(b'data: {"echo": "%s"}\n\n' % key.encode()),
        auth_headers={"authorization": f"Bearer {key}"},
    )
    assert b"abcd" not in t.raw and b"efgh" not in t.raw


def test_a_key_after_two_spaces_is_redacted_when_echoed_alone(net: Net) -> None:
    key = "k2sp-0123456789abcdefXYZ"
    t = run(
        net,
        ok(b'data: {"echo": "%s"}\n\n' % key.encode()),
        auth_headers={"authorization": f"Bearer  {key}"},
    )
    assert key.encode() not in t.raw and b"<redacted>" in t.raw


def test_a_replayed_body_in_two_codings_names_both() -> None:
    body = gzip.compress(gzip.compress(SSE))
    with replay(("content-encoding", "gzip, gzip"), body=body) as client:
        t = exchange(client, URL, REQUEST)
    assert t.raw == SSE and t.meta["content_encoding"] == "gzip, gzip"


def test_a_replayed_body_that_cannot_be_decoded_keeps_no_content_encoding() -> None:
    """Its bytes were read as decoded (none were): a header saying gzip would have the
    next reader decode them again."""
    with replay(("content-encoding", "gzip"), body=b"not gzip") as client:
        t = exchange(client, URL, REQUEST)
    assert t.transport_error is not None and t.headers is not None
    assert "content-encoding" not in {k.lower() for k in t.headers}


def test_a_retry_s_new_connection_is_held_to_the_request_s_own_limits(net: Net) -> None:
    """The kept-alive connection was found dropped: the one-off connection that carries
    the request again connects and waits for its head within the same limits."""
    limits = Limits(connect_timeout=3, first_byte_timeout=7)
    net.conns += [ok() + [b""], httpcore.ConnectTimeout("slow")]
    with make_client(limits) as client:
        exchange(client, URL, REQUEST, limits=limits)
        t = exchange(client, URL, REQUEST, limits=limits)
    assert t.transport_error == "connection not established within 3 s (limits.connect_timeout)"
    assert t.meta["transport_stage"] == "connect"
    net.conns += [ok() + [b""], [Later(7, httpcore.ReadTimeout("slow"))]]
    with make_client(limits) as client:
        exchange(client, URL, REQUEST, limits=limits)
        t = exchange(client, URL, REQUEST, limits=limits)
    assert t.transport_error == "no response headers within 7 s (limits.first_byte_timeout)"
    assert t.meta["transport_stage"] == "headers"


def test_every_client_verifies_certificates_with_one_shared_tls_context() -> None:
    import ssl

    with make_client() as a, make_client(Limits(connect_timeout=3)) as b:
        contexts = [c._transport._pool._ssl_context for c in (a, b)]  # type: ignore[attr-defined]
    assert contexts[0] is contexts[1]  # the CA bundle is read once per process
    assert contexts[0].verify_mode == ssl.CERT_REQUIRED and contexts[0].check_hostname


# ------------------------------------------------------------------ what is sent, what is redacted


def test_the_transport_on_its_own_holds_a_request_without_timeouts_to_the_limits(
    net: Net,
) -> None:
    """Under another library's transport or client, a request may come without httpx's
    timeout extension: it is sent all the same, within the limits."""
    net.conns.append([HEAD + b"content-length: 9\r\n\r\n", b"data: x\n\n"])
    limits = Limits(connect_timeout=3, first_byte_timeout=7, idle_timeout=4, total_timeout=100)
    request = httpx.Request("POST", URL, json=REQUEST)
    assert "timeout" not in request.extensions
    with T.LimitedTransport(limits) as transport:
        r = transport.handle_request(request)
        assert (r.status_code, r.read()) == (200, b"data: x\n\n")
    assert net.connect_timeouts == [3] and net.write_timeouts[0] == 3
    assert net.read_timeouts[:2] == [7, 4]


@pytest.mark.parametrize(
    "body, accept", [(REQUEST, b"text/event-stream"), ({"model": "m"}, b"application/json")]
)
def test_the_accept_headers_on_the_wire_are_the_suite_s_byte_for_byte(
    net: Net, body: dict[str, Any], accept: bytes
) -> None:
    """What a cassette records of the request: one of each, as written here (not httpx's
    default ``gzip, deflate, br``, not in another case)."""
    net.conns.append(ok())
    with make_client() as client:
        exchange(client, URL, body)
    lines = posts(net)[0].split(b"\r\n")
    assert [ln for ln in lines if ln.lower().startswith(b"accept")] == [
        b"accept: " + accept,
        b"accept-encoding: gzip, deflate",
    ]


@pytest.mark.parametrize(
    "scheme, key",
    [
        ("Basic", "plainechokey0123456789"),  # no key shape: only its registration hides it
        ("BASIC", "plainechokey0123456789"),
        ("Token", "plainechokey0123456789"),
        ("token", "plainechokey0123456789"),
        ("Bearer", "XXedge-key-0123456789XX"),  # redacted to its edges, nothing left over
    ],
)
def test_a_key_after_its_scheme_is_redacted_whole_when_echoed_alone(
    net: Net, scheme: str, key: str
) -> None:
    t = run(
        net,
        ok(b'data: {"echo": "%s"}\n\n' % key.encode()),
        auth_headers={"authorization": f"{scheme} {key}"},
    )
    assert t.raw == b'data: {"echo": "<redacted>"}\n\n'


def test_a_key_in_the_url_is_redacted_wherever_it_comes_back(net: Net) -> None:
    key = "urlechokey0123456789"  # no key shape: only its registration hides it
    net.conns.append(ok(b'data: {"echo": "%s"}\n\n' % key.encode(), f"x-echo: {key}"))
    with make_client() as client:
        t = exchange(client, f"{URL}?key={key}", REQUEST)
    assert t.raw == b'data: {"echo": "<redacted>"}\n\n'
    assert t.headers is not None and t.headers["x-echo"] == "<redacted>"


def test_the_backoff_s_jitter_is_the_one_a_recording_reported(net: Net, slept: list[float]) -> None:
    """Without an rng of the caller's the jitter is seeded with 0, in every version: a
    replay of a cell recorded earlier reports the wait its recording reported."""
    t = run(net, status(503), status(200), retry=RetryPolicy(max=1, base_delay=1.0))
    assert t.meta["retries"][0]["waited"] == 1.172  # 1 s × Random(0).uniform(0.75, 1.25)


def test_a_caller_s_accept_headers_in_any_case_replace_the_suite_s(net: Net) -> None:
    """providers.yaml ``headers: {Accept-Encoding: identity}``: that one is sent, not both."""
    run(net, ok(), headers={"Accept": "*/*", "ACCEPT-ENCODING": "identity"})
    lines = posts(net)[0].split(b"\r\n")
    assert [ln for ln in lines if ln.lower().startswith(b"accept")] == [
        b"Accept: */*",
        b"ACCEPT-ENCODING: identity",
    ]


@pytest.mark.parametrize(
    "name, value",
    [
        ("x-api-key", "plain!key#0123456789\n"),  # no scheme, no key shape
        ("authorization", "Bearer plain!key#0123456789\r\n"),
        ("authorization", "Basic plain!key#0123456789\n"),
    ],
)
def test_a_key_ending_in_a_line_end_is_refused_and_never_in_the_error_line(
    net: Net, name: str, value: str
) -> None:
    """A key read from a file with its line end: h11 refuses to send it and says so
    quoting the value escaped (``…0123456789\\n``); the key is redacted there too."""
    t = run(net, ok(), auth_headers={name: value})
    assert posts(net) == [] and t.status is None
    assert t.transport_error is not None and "<redacted>" in t.transport_error
    assert "plain!key" not in t.transport_error and "0123456789" not in t.transport_error


def test_a_blank_key_after_its_scheme_is_an_error_cell_and_hides_no_word(net: Net) -> None:
    """``Bearer`` and two blanks: h11 refuses the value; the scheme's name alone is not
    taken for a key (every later "Bearer" would read ``<redacted>``)."""
    t = run(net, ok(), auth_headers={"authorization": "Bearer  "})
    assert t.transport_error is not None and posts(net) == []
    assert secrets.redact("Bearer token") == "Bearer token"


def test_a_request_sent_again_still_being_sent_at_the_deadline_says_so(net: Net) -> None:
    """The kept-alive connection was found dropped at once; the request sent again on a
    new connection was still being written when the total ran out: that is the reason,
    not "no response headers" (the phase of the first attempt)."""
    net.conns += [ok() + [b""], [Later(5, httpcore.WriteTimeout("slow"))]]
    limits = Limits(total_timeout=5)

    def trace(event: str, info: Any) -> None:  # only the new connection's write is slow
        if event == "connection.connect_tcp.complete":
            net.fail_writes = len(net.connects) == 2

    with make_client(limits) as client:
        exchange(client, URL, REQUEST, limits=limits)
        with pytest.raises(TransportFault) as e:
            client.post(URL, json=REQUEST, extensions={"trace": trace, T.LIMITS_EXTENSION: limits})
    assert e.value.reason == "the request was still being sent after 5 s (limits.total_timeout)"
    assert (e.value.stage, e.value.limit) == ("headers", True)
    assert len(net.connects) == 2


def test_a_key_too_short_to_redact_alone_is_redacted_with_its_scheme(net: Net) -> None:
    """A key under six characters alone would redact ordinary words: the whole value
    ``Bearer k3y!z`` is the secret then, and an echo of it is redacted."""
    t = run(
        net,
        ok(b'data: {"echo": "Bearer k3y!z"}\n\n'),
        auth_headers={"authorization": "Bearer k3y!z"},
    )
    assert t.raw == b'data: {"echo": "<redacted>"}\n\n'


def test_the_cut_header_counts_every_byte_received(net: Net) -> None:
    """What the cassette says of a body the total ended: the bytes received, the piece
    that came too late included."""
    net.conns.append(chunked(b"data: a\n\n", Later(6, b"data: b\n\n")))
    with make_client(Limits(total_timeout=5)) as client:
        with client.stream("POST", URL, json=REQUEST) as r:
            assert r.read() == b"data: a\n\n"
    assert r.headers[T.FAULT_HEADER] == "stream still running after 5 s (limits.total_timeout)"
    assert r.headers[T.CUT_HEADER] == "kept the first 9 of 18 bytes received"


def _held_back(payload: bytes) -> bytes:
    """The first cut of ``payload`` gzipped after which zlib has handed on a full piece
    and still holds decoded bytes back (a long run cut mid-match), handed on at the end."""
    body = gzip.compress(payload, mtime=0)
    for cut in range(1, len(body)):
        decoder = decoding.Decoder(["gzip"], len(payload))
        if sum(map(len, decoder.feed(body[:cut]))) != decoding.PIECE:
            continue
        try:
            if next(decoder.end(), b""):  # then it ends early: cut short
                return body[:cut]
        except decoding.DecodeError:  # nothing held back, cut short
            continue
    raise AssertionError("no such cut")


def test_the_cut_header_counts_the_bytes_a_coding_held_back_to_the_end(net: Net) -> None:
    """The total runs out while the last read (the chunked body's end) waits: the bytes
    zlib held back are handed on after it and counted with the rest."""
    body = _held_back(b"\0" * (decoding.PIECE + 1))
    net.conns.append(
        [
            HEAD + b"content-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n",
            b"%x\r\n%s\r\n" % (len(body), body),
            Later(6, b"0\r\n\r\n"),
        ]
    )
    with make_client(Limits(total_timeout=5)) as client:
        with client.stream("POST", URL, json=REQUEST) as r:
            r.read()
    assert r.headers[T.FAULT_HEADER] == "stream still running after 5 s (limits.total_timeout)"
    assert r.headers[T.CUT_HEADER].endswith(f" of {decoding.PIECE + 1} bytes received")


def test_a_fault_after_the_head_is_at_the_body_stage_whatever_it_names() -> None:
    """A status came: the endpoint answered, so the runner's fail-fast (no response at
    all) must not stop on it, even when the fault names an earlier stage (a suite
    transport nested under the caller's client fails its own request mid-body)."""

    def answer(request: httpx.Request) -> httpx.Response:
        def body() -> Iterator[bytes]:
            yield b"data: a\n\n"
            raise TransportFault("no response headers within 5 s", stage="headers")

        return httpx.Response(
            200, headers={"content-type": "text/event-stream"}, stream=Gen(body())
        )

    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        t = exchange(client, URL, REQUEST)
    assert t.transport_error == "no response headers within 5 s" and t.status == 200
    assert "transport_stage" not in t.meta
