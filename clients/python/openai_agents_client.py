"""openai-agents: an ``Agent`` on ``OpenAIChatCompletionsModel`` with the scenario's tools as
``FunctionTool``s, ``Runner.run_streamed`` and the ``tool_called`` items of
``stream_events()`` (the SDK's streaming guide). The tools only record that they were called
and ``tool_use_behavior="stop_on_first_tool"`` ends the run there: one model request."""

import asyncio

from _driver import serve, user_text
from agents import (
    Agent,
    FunctionTool,
    ModelSettings,
    OpenAIChatCompletionsModel,
    Runner,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

set_tracing_disabled(True)  # no trace export: nothing leaves the machine


async def _ok(_ctx, _args):
    return "ok"


def _tool_choice(choice):
    if isinstance(choice, dict):
        return choice["function"]["name"]
    return choice


async def _run(job):
    req = job["request"]
    client = AsyncOpenAI(base_url=job["base_url"], api_key="unused", max_retries=0)
    tools = [FunctionTool(name=t["function"]["name"],
                          description=t["function"].get("description", ""),
                          params_json_schema=t["function"].get("parameters")
                          or {"type": "object", "properties": {}},
                          on_invoke_tool=_ok, strict_json_schema=False)
             for t in req["tools"]]
    settings = ModelSettings(tool_choice=_tool_choice(req.get("tool_choice")),
                             parallel_tool_calls=req.get("parallel_tool_calls"),
                             max_tokens=req.get("max_tokens"))
    agent = Agent(name="client-matrix", instructions=None, tools=tools,
                  model=OpenAIChatCompletionsModel(model=job["model"], openai_client=client),
                  model_settings=settings, tool_use_behavior="stop_on_first_tool")
    result = Runner.run_streamed(agent, user_text(req), max_turns=1)
    calls = []
    async for event in result.stream_events():
        if event.type == "run_item_stream_event" and event.name == "tool_called":
            raw = event.item.raw_item
            calls.append({"id": getattr(raw, "call_id", None), "name": getattr(raw, "name", None),
                          "arguments": getattr(raw, "arguments", None)})
    return calls


def run(job):
    return asyncio.run(_run(job))


if __name__ == "__main__":
    serve("openai-agents", run)
