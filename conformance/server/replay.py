"""The replay endpoint: recorded response bytes served back over real HTTP.

``POST /r/<stream>/v1/chat/completions`` answers, whatever the request, with the status,
content type and body bytes recorded for ``<stream>`` (a provider cassette's interaction or a
field capture rendered as SSE). A client library pointed at ``.../r/<stream>/v1`` reads the
same bytes the suite judged, through its own HTTP stack. Unknown streams get OpenAI's 404.

    python -m conformance.server.replay cassettes/vllm/parallel.yaml --port 0
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from conformance.server.streams import openai_error

# Response headers worth replaying; framing headers are the server's own business.
KEPT_HEADERS = ("content-type", "x-request-id")
BLOCK = 512  # bytes per write: the client sees a stream, not one packet


@dataclass(frozen=True)
class Recorded:
    """One recorded answer."""

    body: bytes
    status: int = 200
    content_type: str = "text/event-stream"


async def _chunks(body: bytes) -> AsyncIterator[bytes]:
    for i in range(0, len(body), BLOCK):
        yield body[i : i + BLOCK]


def create_replay_app(streams: Mapping[str, Recorded]) -> Starlette:
    """An app serving ``streams`` (looked up at request time, so the mapping may grow)."""

    async def chat_completions(request: Request) -> Response:
        await request.body()  # read it: a client must be able to finish sending
        rec = streams.get(request.path_params["stream"])
        if rec is None:
            error = openai_error(404, "No recorded stream of that name.", code="model_not_found")
            return JSONResponse(error.body, 404)
        if "event-stream" in rec.content_type and rec.status == 200:
            return StreamingResponse(
                _chunks(rec.body),
                status_code=rec.status,
                media_type=rec.content_type,
                headers={"cache-control": "no-cache"},
            )
        return Response(rec.body, status_code=rec.status, media_type=rec.content_type)

    return Starlette(
        routes=[Route("/r/{stream}/v1/chat/completions", chat_completions, methods=["POST"])]
    )


def recorded_from_cassette(path: Path) -> dict[str, Recorded]:
    """Each interaction of a vcrpy cassette as ``<stem>-<n>`` (the bytes as stored)."""
    from conformance.readers import read_cassette_file
    from conformance.transcript import header

    out = {}
    for n, t in enumerate(read_cassette_file(path)):
        ctype = header(t.headers, "content-type") or "text/event-stream"
        out[f"{path.stem}-{n}"] = Recorded(t.raw or b"", int(t.status or 200), ctype)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m conformance.server.replay",
        description="Serve recorded cassette answers over HTTP.",
    )
    ap.add_argument("cassettes", nargs="+", type=Path)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8766)
    args = ap.parse_args(argv)
    streams: dict[str, Recorded] = {}
    for path in args.cassettes:
        try:
            streams.update(recorded_from_cassette(path))
        except Exception as error:  # one clear line, not a traceback
            print(f"replay: {path}: {error}", file=sys.stderr)
            return 2
    import uvicorn

    for name in streams:
        print(f"http://{args.host}:{args.port}/r/{name}/v1", file=sys.stderr)
    uvicorn.run(create_replay_app(streams), host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
