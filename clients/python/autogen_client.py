"""AutoGen: ``OpenAIChatCompletionClient(...).create_stream(messages, tools=...)`` from
autogen-ext, the scenario's tools as ``ToolSchema`` dicts; the stream ends with a
``CreateResult`` whose content is the ``FunctionCall`` list (AutoGen's model-client docs)."""

import asyncio

from _driver import serve, user_text
from autogen_core.models import UserMessage
from autogen_ext.models.openai import OpenAIChatCompletionClient

INFO = {"vision": False, "function_calling": True, "json_output": False,
        "family": "unknown", "structured_output": False}


async def _run(job):
    req = job["request"]
    client = OpenAIChatCompletionClient(model=job["model"], base_url=job["base_url"],
                                        api_key="unused", model_info=INFO, max_retries=0)
    tools = [{"name": t["function"]["name"],
              "description": t["function"].get("description", ""),
              "parameters": t["function"].get("parameters")
              or {"type": "object", "properties": {}}} for t in req["tools"]]
    choice = req.get("tool_choice", "auto")
    if isinstance(choice, dict):
        choice = "required"  # AutoGen names a forced tool by its Tool object only
    extra = {k: req[k] for k in ("parallel_tool_calls", "max_tokens") if k in req}
    result = None
    try:
        async for item in client.create_stream([UserMessage(content=user_text(req),
                                                            source="user")],
                                               tools=tools, tool_choice=choice,
                                               extra_create_args=extra):
            result = item
    finally:
        await client.close()
    if result is None or isinstance(result, str) or isinstance(result.content, str):
        return []
    return [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in result.content]


def run(job):
    return asyncio.run(_run(job))


if __name__ == "__main__":
    serve("autogen-ext", run)
