"""conformance.client (this project): httpx + httpx-sse and ``ToolCallAccumulator``, as the
README's "robust accumulator as a library" section shows; a JSON answer to a streamed request
goes through ``completion_as_chunk`` and an error status or in-stream error is raised; a call
the accumulator repaired or could not make valid carries its flag (``ToolCall.repaired``,
``ToolCall.valid``)."""

import json

import httpx
from _driver import serve
from httpx_sse import EventSource

from conformance.client import ToolCallAccumulator, completion_as_chunk


def run(job):
    req = job["request"]
    body = dict(req, model=job["model"], stream=True)
    acc = ToolCallAccumulator(tools=req["tools"])
    with httpx.Client(base_url=job["base_url"], timeout=60) as http, \
            http.stream("POST", "/chat/completions", json=body) as response:
        if response.status_code >= 400:
            response.read()
            raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
        if "json" in response.headers.get("content-type", ""):
            acc.feed(completion_as_chunk(json.loads(response.read())))
        else:
            for sse in EventSource(response).iter_sse():
                data = sse.data.strip()
                if data and data != "[DONE]" and not data.startswith(":"):
                    try:
                        acc.feed(json.loads(data))
                    except ValueError:
                        continue  # not a chunk (a keep-alive written as data)
    turn = acc.result()
    if turn.error is not None:
        raise RuntimeError(f"error in the stream: {json.dumps(turn.error)[:200]}")
    # The flags the library gives: a call whose arguments are not JSON, were closed by the
    # JSON repair, or could not be attributed is not to be run as it stands.
    return [{"id": c.id, "name": c.name, "arguments": c.arguments,
             "invalid": ("arguments closed by JSON repair" if c.repaired else
                         "arguments not valid JSON or not attributable" if not c.valid else
                         "no name" if not c.name else None)}
            for c in turn.calls]


if __name__ == "__main__":
    serve("toolcall-conformance", run)  # the distribution, for its version
