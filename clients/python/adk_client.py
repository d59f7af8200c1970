"""Google ADK: the ``LiteLlm`` model (``openai/<model>`` with ``api_base``), as an ADK agent's
runner streams it: ``generate_content_async(LlmRequest, stream=True)`` with the scenario's
tools as ``FunctionDeclaration``s (their JSON schema), and the ``function_call`` parts of the
responses that are not ``partial`` (ADK's LiteLLM model docs)."""

import asyncio
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch at import

from _driver import serve, user_text  # noqa: E402
from google.adk.models.lite_llm import LiteLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.genai import types  # noqa: E402


def _config(req):
    decls = [types.FunctionDeclaration(
        name=t["function"]["name"], description=t["function"].get("description", ""),
        parameters_json_schema=t["function"].get("parameters")
        or {"type": "object", "properties": {}}) for t in req["tools"]]
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=decls)])
    if "max_tokens" in req:
        config.max_output_tokens = req["max_tokens"]
    return config


async def _run(job):
    req = job["request"]
    extra = {k: req[k] for k in ("tool_choice", "parallel_tool_calls") if k in req}
    model = LiteLlm(model="openai/" + job["model"], api_base=job["base_url"],
                    api_key="unused", num_retries=0, **extra)
    request = LlmRequest(contents=[types.Content(role="user",
                                                 parts=[types.Part(text=user_text(req))])],
                         config=_config(req))
    calls = []
    async for response in model.generate_content_async(request, stream=True):
        if response.partial or response.content is None:
            continue
        for part in response.content.parts or []:
            if part.function_call is not None:
                fc = part.function_call
                calls.append({"id": fc.id, "name": fc.name, "arguments": fc.args})
    return calls


def run(job):
    return asyncio.run(_run(job))


if __name__ == "__main__":
    serve("google-adk", run)
