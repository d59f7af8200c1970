"""pydantic-ai: the direct API's ``model_request_stream`` on an ``OpenAIChatModel`` with the
scenario's tools as ``ToolDefinition``s (pydantic-ai's "direct model requests" docs), then
the ``ToolCallPart``s of ``stream.get()``. (An ``Agent`` would also run the tools and loop;
the direct API is the same streaming code without the loop.)"""

import asyncio

from _driver import serve, user_text
from openai import AsyncOpenAI
from pydantic_ai.direct import model_request_stream
from pydantic_ai.messages import ModelRequest, ToolCallPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import ToolDefinition


async def _run(job):
    req = job["request"]
    client = AsyncOpenAI(base_url=job["base_url"], api_key="unused", max_retries=0)
    model = OpenAIChatModel(job["model"], provider=OpenAIProvider(openai_client=client))
    tools = [ToolDefinition(name=t["function"]["name"],
                            description=t["function"].get("description"),
                            parameters_json_schema=t["function"].get("parameters")
                            or {"type": "object", "properties": {}},
                            strict=t["function"].get("strict"))
             for t in req["tools"]]
    params = ModelRequestParameters(function_tools=tools,
                                    allow_text_output=req.get("tool_choice") != "required")
    settings = {k: req[k] for k in ("parallel_tool_calls", "max_tokens") if k in req}
    async with model_request_stream(model, [ModelRequest.user_text_prompt(user_text(req))],
                                    model_settings=settings or None,
                                    model_request_parameters=params) as stream:
        async for _event in stream:
            pass
        response = stream.get()
    return [{"id": p.tool_call_id, "name": p.tool_name, "arguments": p.args}
            for p in response.parts if isinstance(p, ToolCallPart)]


def run(job):
    return asyncio.run(_run(job))


if __name__ == "__main__":
    serve("pydantic-ai-slim", run)
