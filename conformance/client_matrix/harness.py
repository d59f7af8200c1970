"""The HTTP endpoint the client libraries talk to, and what it records.

One uvicorn server on a free 127.0.0.1 port serves, under ``/j/<job>/``:
``/p/<profile>/v1/...`` the reference-profile server (``conformance serve``'s app) and
``/r/<stream>/v1/...`` the replay endpoint (recorded bytes). The ``/j/<job>`` prefix is
stripped before the inner app sees the request; on the way out every byte of the answer
is kept for that job, so the judge reads exactly what the client library received.
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn

from conformance.server.app import create_app
from conformance.server.replay import Recorded, create_replay_app
from conformance.server.testing import _wait_healthy

JOB_PATH = re.compile(r"^/j/([A-Za-z0-9_.-]+)(/.*)$")


@dataclass
class Exchange:
    """One request a client sent for a job, and the answer it got, byte for byte."""

    request: bytearray = field(default_factory=bytearray)
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytearray = field(default_factory=bytearray)


class RecordingApp:
    """ASGI: routes ``/j/<job>/r/...`` to the replay app, the rest to the profile app."""

    def __init__(self, profiles: Any, replay: Any):
        self.profiles, self.replay = profiles, replay
        self.exchanges: dict[str, list[Exchange]] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        match = JOB_PATH.match(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None:
            await self.profiles(scope, receive, send)
            return
        job, rest = match.groups()
        scope = dict(scope, path=rest, raw_path=rest.encode())
        ex = Exchange()
        self.exchanges.setdefault(job, []).append(ex)

        async def tee_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                ex.request += message.get("body", b"")
            return message

        async def tee_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                ex.status = message["status"]
                ex.headers = {
                    k.decode("latin-1"): v.decode("latin-1") for k, v in message.get("headers", [])
                }
            elif message["type"] == "http.response.body":
                ex.body += message.get("body", b"")
            await send(message)

        app = self.replay if rest.startswith("/r/") else self.profiles
        await app(scope, tee_receive, tee_send)


@contextmanager
def running_harness(
    replays: Mapping[str, Recorded], *, timeout: float = 10.0
) -> Iterator[tuple[str, RecordingApp]]:
    """Serve on a free port in a background thread; yield the root URL and the recorder."""
    app = RecordingApp(create_app(), create_replay_app(replays))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", backlog=1024))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, daemon=True, name=f"client-matrix-{port}"
    )
    thread.start()
    root = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(root, thread, timeout)
        yield root, app
    finally:
        server.should_exit = True
        thread.join(timeout=timeout)
        sock.close()
