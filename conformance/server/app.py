"""The reference-profile server: a Starlette app that serves every profile over real HTTP.

``POST /v1/chat/completions`` picks the profile from the request's ``model`` (or from a path
prefix ``/p/<profile>/v1/...``, in which case ``model`` can be anything), builds the reply
from the request (``streams.plan_reply``), renders OpenAI's stream and applies the profile's
transforms. Non-streaming answers are always the reference shape: the catalogued quirks are
streaming quirks, and a client can compare both answers to one request.

Per-request knobs (headers, or query parameters without the prefix):
``x-conformance-latency`` seconds before the first byte; ``x-conformance-stall`` length of
a ``Stall`` frame; ``x-conformance-interleave: 1`` interleaves parallel calls' fragments.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from conformance.mutations import Frame, Stall, apply, reference_stream, render_frame
from conformance.server.profiles import PROFILES, Profile
from conformance.server.streams import (
    RequestError,
    break_strict_schema,
    check_history,
    completion_body,
    openai_error,
    plan_reply,
    request_seed,
)


@dataclass(frozen=True)
class Reply:
    """What the server answers: a JSON body with a status, or SSE frames."""

    status: int = 200
    body: Any = None
    frames: list[Frame] | None = None
    seed: int | None = None


def respond(profile: Profile, body: dict[str, Any], *, interleave: bool = False) -> Reply:
    """The answer of ``profile`` to ``body``, without HTTP (pure, deterministic)."""
    try:
        stream = body.get("stream") is True
        if profile.fault == "stream-options-rejected" and "stream_options" in body:
            raise openai_error(
                400,
                "litellm.BadRequestError: BedrockException - extraneous key [include_usage] "
                "is not permitted",
                param="stream_options",
            )
        if profile.fault == "tools-unsupported" and stream and body.get("tools"):
            error = {"code": 500, "message": "Cannot use tools with stream"}
            raise RequestError(500, {"error": error | {"type": "server_error"}})
        messages = body.get("messages")
        if isinstance(messages, list) and all(isinstance(m, dict) for m in messages):
            check_history(messages)
            profile.check_round_trip(messages)
        seed = request_seed(profile.name, body)
        rng = random.Random(f"{seed}:base")
        plan = plan_reply(body, rng, ignore_parallel_false=profile.ignore_parallel_false)
        if profile.ignore_strict:
            plan = break_strict_schema(plan, body)
    except RequestError as error:
        return Reply(error.status, error.body)
    model = str(body.get("model") or profile.name)
    if not stream or profile.fault == "downgraded":
        return Reply(body=completion_body(plan, model), seed=seed)
    options = body.get("stream_options")
    frames = reference_stream(
        plan.calls,
        rng=rng,
        model=model,
        include_usage=isinstance(options, dict) and options.get("include_usage") is True,
        content=plan.content,
        completion_id=plan.completion_id,
        created=plan.created,
        system_fingerprint=plan.system_fingerprint,
        interleave=interleave,
        finish_reason=plan.finish_reason,
        usage=plan.usage,
    )
    if profile.applies(body):
        frames = apply(frames, profile.mutations, seed)
    return Reply(frames=frames, seed=seed)


def _knob(request: Request, name: str) -> str | None:
    return request.headers.get(f"x-conformance-{name}") or request.query_params.get(name)


def _seconds(request: Request, name: str, default: float | None) -> float | None:
    value = _knob(request, name)
    if value is None:
        return default
    seconds = float(value)  # ValueError -> 400 below
    if not 0 <= seconds <= 600:
        raise ValueError(f"{name} out of range")
    return seconds


async def _emit(frames: list[Frame], latency: float, stall: float | None) -> AsyncIterator[bytes]:
    if latency:
        await asyncio.sleep(latency)
    for frame in frames:
        if isinstance(frame, Stall):
            await asyncio.sleep(frame.seconds if stall is None else stall)
        else:
            yield render_frame(frame)


def _profile_for(request: Request, model: Any) -> Profile | None:
    return PROFILES.get(request.path_params.get("profile") or str(model))


async def chat_completions(request: Request) -> Response:
    try:
        body = json.loads(await request.body())
        if not isinstance(body, dict):
            raise ValueError("not an object")
        latency = _seconds(request, "latency", request.app.state.latency) or 0.0
        stall = _seconds(request, "stall", None)
    except ValueError as error:
        return JSONResponse(openai_error(400, f"Invalid request: {error}").body, 400)
    profile = _profile_for(request, body.get("model"))
    if profile is None:
        missing = openai_error(
            404,
            f"The model `{body.get('model')}` does not exist. GET /v1/models lists the profiles.",
            param="model",
            code="model_not_found",
        )
        return JSONResponse(missing.body, 404)
    reply = respond(profile, body, interleave=_knob(request, "interleave") in ("1", "true"))
    headers = {"x-conformance-profile": profile.name}
    if reply.seed is not None:
        headers["x-conformance-seed"] = str(reply.seed)
    if reply.frames is None:
        if latency:
            await asyncio.sleep(latency)
        return JSONResponse(reply.body, reply.status, headers=headers)
    headers["cache-control"] = "no-cache"
    return StreamingResponse(
        _emit(reply.frames, latency, stall),
        media_type="text/event-stream; charset=utf-8",
        headers=headers,
    )


def _model_entry(profile: Profile) -> dict[str, Any]:
    return {
        "id": profile.name,
        "object": "model",
        "created": 0,
        "owned_by": "conformance",
        "description": profile.description,
        "quirks": sorted(profile.quirks),
    }


async def list_models(request: Request) -> Response:
    return JSONResponse({"object": "list", "data": [_model_entry(p) for p in PROFILES.values()]})


async def get_model(request: Request) -> Response:
    profile = PROFILES.get(request.path_params["model"])
    if profile is None:
        error = openai_error(404, "No such model.", param="model", code="model_not_found")
        return JSONResponse(error.body, 404)
    return JSONResponse(_model_entry(profile))


async def health(request: Request) -> Response:
    return JSONResponse({"status": "ok", "profiles": len(PROFILES)})


def create_app(*, latency: float = 0.0) -> Starlette:
    """The app; ``latency`` seconds are waited before every answer's first byte."""
    routes = [Route("/health", health)]
    for prefix in ("", "/p/{profile}"):
        routes += [
            Route(prefix + "/v1/chat/completions", chat_completions, methods=["POST"]),
            Route(prefix + "/v1/models", list_models),
            Route(prefix + "/v1/models/{model}", get_model),
        ]
    app = Starlette(routes=routes)
    app.state.latency = latency
    return app


class PortInUse(Exception):
    """The address cannot be listened on; str() is the one line for the user."""


def serve(host: str = "127.0.0.1", port: int = 8765, latency: float = 0.0) -> None:
    """Run the server in the foreground until interrupted.

    The socket is bound here, before uvicorn starts, so that a busy port is one line
    (``PortInUse``) and ``port=0`` can print the port the OS picked.
    """
    import socket
    import sys

    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise PortInUse(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    bound = sock.getsockname()[1]
    print(
        f"toolcall-conformance serve: listening on http://{host}:{bound}/v1",
        file=sys.stderr,
        flush=True,
    )
    config = uvicorn.Config(create_app(latency=latency), log_level="info")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
