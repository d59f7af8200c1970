"""Haystack: ``OpenAIChatGenerator`` with ``api_base_url`` and a ``streaming_callback``
(streaming is on when one is set), ``run(messages, tools=...)`` with the scenario's tools as
``haystack.tools.Tool``s, then the ``tool_calls`` of the reply (Haystack's generator docs)."""

from _driver import options, serve, user_text
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage
from haystack.tools import Tool
from haystack.utils import Secret


def _ok(**_kwargs):
    return "ok"


def run(job):
    req = job["request"]
    kwargs = options(req, "tool_choice", "parallel_tool_calls", "max_tokens")
    generator = OpenAIChatGenerator(api_key=Secret.from_token("unused"), model=job["model"],
                                    api_base_url=job["base_url"], max_retries=0,
                                    streaming_callback=lambda chunk: None,
                                    generation_kwargs=kwargs)
    tools = [Tool(name=t["function"]["name"], description=t["function"].get("description", ""),
                  parameters=t["function"].get("parameters")
                  or {"type": "object", "properties": {}}, function=_ok)
             for t in req["tools"]]
    result = generator.run(messages=[ChatMessage.from_user(user_text(req))], tools=tools)
    calls = []
    for reply in result["replies"]:
        calls += [{"id": tc.id, "name": tc.tool_name, "arguments": tc.arguments}
                  for tc in reply.tool_calls]
    return calls


if __name__ == "__main__":
    serve("haystack-ai", run)
