"""Semantic Kernel (Python): ``OpenAIChatCompletion`` on an ``AsyncOpenAI`` client,
``get_streaming_chat_message_contents`` and the streamed messages added up with ``+`` (SK's
streaming docs), then the ``FunctionCallContent`` items of the sum. The scenario's tools go
on the execution settings as SK's function-choice behaviour puts them there (kernel
functions would rename them ``plugin-function``; the stream's handling is the same)."""

import asyncio

from _driver import serve, user_text
from openai import AsyncOpenAI
from semantic_kernel.connectors.ai.open_ai import (
    OpenAIChatCompletion,
    OpenAIChatPromptExecutionSettings,
)
from semantic_kernel.contents import ChatHistory, FunctionCallContent


async def _run(job):
    req = job["request"]
    client = AsyncOpenAI(base_url=job["base_url"], api_key="unused", max_retries=0)
    service = OpenAIChatCompletion(ai_model_id=job["model"], async_client=client)
    extra = {k: req[k] for k in ("tool_choice", "parallel_tool_calls", "max_tokens") if k in req}
    if isinstance(extra.get("tool_choice"), dict):
        extra["tool_choice"] = "required"  # SK's settings name a choice, never one tool
    settings = OpenAIChatPromptExecutionSettings(tools=req["tools"], **extra)
    history = ChatHistory()
    history.add_user_message(user_text(req))
    total = None
    async for messages in service.get_streaming_chat_message_contents(history, settings):
        for message in messages:
            if message.choice_index == 0:
                total = message if total is None else total + message
    if total is None:
        return []
    return [{"id": item.id, "name": item.name, "arguments": item.arguments}
            for item in total.items if isinstance(item, FunctionCallContent)]


def run(job):
    return asyncio.run(_run(job))


if __name__ == "__main__":
    serve("semantic-kernel", run)
