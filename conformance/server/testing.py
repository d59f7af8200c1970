"""Run the reference-profile server in-process, for tests and benchmarks."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn

from conformance.server.app import create_app


@contextmanager
def running_server(*, latency: float = 0.0, timeout: float = 10.0) -> Iterator[str]:
    """Serve on a free 127.0.0.1 port in a background thread; yield the ``.../v1`` base URL.

    Waits (at most ``timeout`` seconds) until ``/health`` answers, and stops the server on
    exit. The socket is bound here, so the port is known before uvicorn starts.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(latency=latency), log_level="warning", lifespan="off", backlog=1024
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"conformance-server-{port}"
    )
    thread.daemon = True
    thread.start()
    root = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(root, thread, timeout)
        yield root + "/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=timeout)
        sock.close()


def _wait_healthy(root: str, thread: threading.Thread, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not thread.is_alive():
            raise RuntimeError("the conformance server thread exited during start-up")
        try:
            if httpx.get(root + "/health", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.02)
    raise TimeoutError(f"the conformance server at {root} did not answer /health in {timeout}s")
