"""Live HTTP exchanges: httpx streaming with hard limits, retries, and no leaked keys.

One exchange = one Transcript holding the request (without credentials), status,
headers and the body bytes exactly as the client saw them (content-encoding undone).
Under pytest-recording the same code runs with vcrpy patching httpx, so a replay yields
the bytes of the recording; the limits live in the transport so they also bound
vcrpy's read while it records.

Every failure becomes ``Transcript.transport_error`` with a one-line reason; nothing
raises out of ``exchange`` for an endpoint that misbehaves.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from conformance import secrets
from conformance.readers import exchange_transcript
from conformance.transcript import Transcript


@dataclass(frozen=True)
class Limits:
    connect_timeout: float = 10.0
    first_byte_timeout: float = 120.0  # until the response headers arrive
    idle_timeout: float = 120.0  # between two reads of the body (a stall)
    total_timeout: float = 600.0  # the whole exchange, an endless stream included
    max_bytes: int = 64 * 1024 * 1024

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Limits:
        return cls(**{k: v for k, v in (d or {}).items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class RetryPolicy:
    max: int = 2  # retries after the first attempt, for 429 and 503 only
    base_delay: float = 1.0
    max_delay: float = 30.0
    sleep: bool = True  # False on replay: the recorded waits are reported, not slept

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None, *, sleep: bool = True) -> RetryPolicy:
        kw = {k: v for k, v in (d or {}).items() if k in ("max", "base_delay", "max_delay")}
        return cls(sleep=sleep, **kw)

    def delay(self, attempt: int, retry_after: str | None, rng: random.Random) -> float:
        wait = None
        if retry_after:
            try:
                wait = float(retry_after)
            except ValueError:
                when = email.utils.parsedate_to_datetime(retry_after) if retry_after else None
                if when is not None:
                    wait = max(0.0, when.timestamp() - time.time())
        if wait is None:  # exponential backoff with +-25% jitter
            wait = self.base_delay * (2 ** attempt) * rng.uniform(0.75, 1.25)
        return min(max(wait, 0.0), self.max_delay)


class LimitExceeded(Exception):
    pass


class _LimitedStream(httpx.SyncByteStream):
    """Wraps a response stream: total bytes and total time are capped while reading."""

    def __init__(self, inner: httpx.SyncByteStream, limits: Limits, started: float):
        self._inner, self._limits, self._started = inner, limits, started

    def __iter__(self) -> Iterator[bytes]:
        seen = 0
        for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limits.max_bytes:
                raise LimitExceeded(f"stream exceeded {self._limits.max_bytes} bytes")
            if time.monotonic() - self._started > self._limits.total_timeout:
                raise LimitExceeded(f"stream still running after {self._limits.total_timeout:g} s")
            yield chunk

    def close(self) -> None:
        self._inner.close()


class LimitedTransport(httpx.HTTPTransport):
    def __init__(self, limits: Limits, **kw: Any):
        super().__init__(**kw)
        self.limits = limits

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        started = time.monotonic()
        response = super().handle_request(request)
        assert isinstance(response.stream, httpx.SyncByteStream)
        response.stream = _LimitedStream(response.stream, self.limits, started)
        return response


def make_client(limits: Limits) -> httpx.Client:
    timeout = httpx.Timeout(connect=limits.connect_timeout, read=limits.idle_timeout,
                            write=limits.connect_timeout, pool=limits.connect_timeout)
    return httpx.Client(transport=LimitedTransport(limits), timeout=timeout,
                        follow_redirects=False, trust_env=False)


def _reason(exc: BaseException, limits: Limits, got_headers: bool) -> tuple[str, str | None]:
    """A one-line reason (keys redacted) and the catalogue quirk it shows, if any."""
    if isinstance(exc, LimitExceeded):
        return str(exc), None
    if isinstance(exc, httpx.ConnectTimeout):
        return f"connection not established within {limits.connect_timeout:g} s", None
    if isinstance(exc, httpx.ConnectError):
        text = str(exc)
        if "Name or service not known" in text or "nodename nor servname" in text or \
                "Temporary failure in name resolution" in text or "No address" in text:
            return "the host name does not resolve", None
        if "refused" in text.lower():
            return "connection refused", None
        return "cannot connect: " + secrets.redact(text)[:160], None
    if isinstance(exc, httpx.ReadTimeout):
        if got_headers:
            return (f"stream stalled: no bytes for {limits.idle_timeout:g} s",
                    "Q-STREAM-STALLS")
        return f"no response headers within {limits.first_byte_timeout:g} s", None
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the server closed the connection in the middle of the response", None
    if isinstance(exc, httpx.DecodingError):
        return "the body could not be decoded (" + secrets.redact(str(exc))[:120] + ")", None
    if isinstance(exc, httpx.HTTPError):
        return f"{type(exc).__name__}: " + secrets.redact(str(exc))[:160], None
    return f"{type(exc).__name__}: " + secrets.redact(str(exc))[:160], None


def exchange(client: httpx.Client, url: str, body: dict[str, Any], *,
             headers: dict[str, str] | None = None, auth_headers: dict[str, str] | None = None,
             limits: Limits = Limits(), retry: RetryPolicy = RetryPolicy(),
             source: str = "live", rng: random.Random | None = None,
             on_attempt: Callable[[int], None] | None = None) -> Transcript:
    """POST the body and read the whole answer, within the limits, retrying 429/503."""
    rng = rng or random.Random(0)
    retries: list[dict[str, Any]] = []
    send_headers = {"accept": "text/event-stream" if body.get("stream") else "application/json",
                    **(headers or {}), **(auth_headers or {})}
    request = {"method": "POST", "uri": secrets.redact(url), "body": body,
               "headers": {k: v for k, v in (headers or {}).items()}}
    attempt = 0
    while True:
        if on_attempt:
            on_attempt(attempt)
        got_headers = False
        status: int | None = None
        resp_headers: dict[str, str] | None = None
        parts: list[bytes] = []
        error: str | None = None
        quirk: str | None = None
        started = time.monotonic()
        try:
            with client.stream("POST", url, json=body, headers=send_headers,
                               timeout=httpx.Timeout(connect=limits.connect_timeout,
                                                     read=limits.first_byte_timeout,
                                                     write=limits.connect_timeout,
                                                     pool=limits.connect_timeout)) as resp:
                got_headers = True
                status = resp.status_code
                resp_headers = {k: secrets.redact(v) for k, v in resp.headers.items()}
                for chunk in resp.iter_bytes():
                    parts.append(chunk)
        except (httpx.HTTPError, LimitExceeded, OSError) as exc:
            error, quirk = _reason(exc, limits, got_headers or bool(parts))
        raw = secrets.redact_bytes(b"".join(parts))
        elapsed = round(time.monotonic() - started, 3)
        if error is None and status in (429, 503) and attempt < retry.max:
            wait = retry.delay(attempt, (resp_headers or {}).get("retry-after"), rng)
            retries.append({"attempt": attempt + 1, "status": status, "waited": round(wait, 3)})
            if retry.sleep:
                time.sleep(wait)
            attempt += 1
            continue
        # iter_bytes() already undid any content-encoding: keep that header as a fact only.
        plain = None if resp_headers is None else {
            k: v for k, v in resp_headers.items() if k.lower() != "content-encoding"}
        t = exchange_transcript(source, "live", request, status, plain, raw)
        if resp_headers is not None and "content-encoding" in resp_headers:
            t.meta["content_encoding"] = resp_headers["content-encoding"]
        t.transport_error = error
        t.meta.update({"retries": retries, "elapsed": elapsed})
        if quirk:
            t.meta["transport_quirk"] = quirk
        return t
