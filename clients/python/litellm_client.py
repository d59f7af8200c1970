"""litellm: ``litellm.completion(..., stream=True)`` on an ``openai/`` model with
``api_base``, then ``litellm.stream_chunk_builder(chunks)`` (LiteLLM's documented way to
rebuild the message from a stream)."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch at import

import litellm  # noqa: E402
from _driver import options, serve  # noqa: E402


def run(job):
    req = job["request"]
    stream = litellm.completion(
        model="openai/" + job["model"], api_base=job["base_url"], api_key="unused",
        messages=req["messages"], tools=req["tools"], stream=True,
        **options(req, "tool_choice", "parallel_tool_calls", "max_tokens"),
    )
    chunks = list(stream)
    response = litellm.stream_chunk_builder(chunks, messages=req["messages"])
    if response is None:
        return []
    message = response.choices[0].message
    return [{"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
            for tc in message.tool_calls or []]


if __name__ == "__main__":
    serve("litellm", run)
