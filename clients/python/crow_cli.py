"""The crow-cli accumulator (a seed of this suite: the Python react loop its authors call
ground truth), written here from that description: the ``openai`` SDK's raw stream
(``create(stream=True)``), calls keyed by ``delta.tool_calls[].index``, id, name and argument
fragments each kept only when truthy, the fragments joined at the end, then its JSON repair:
parse; else close the unmatched ``{`` and ``[`` by counting them; else ``"{}"``."""

import json

from _driver import options, serve
from openai import OpenAI


def repair(arguments):
    """crow-cli's repair as described: count unmatched braces and brackets, close them."""
    try:
        json.loads(arguments)
        return arguments
    except ValueError:
        pass
    braces = arguments.count("{") - arguments.count("}")
    brackets = arguments.count("[") - arguments.count("]")
    closed = arguments + "}" * max(braces, 0) + "]" * max(brackets, 0)
    try:
        json.loads(closed)
        return closed
    except ValueError:
        return "{}"


def run(job):
    client = OpenAI(base_url=job["base_url"], api_key="unused", max_retries=0)
    req = job["request"]
    stream = client.chat.completions.create(
        model=job["model"], messages=req["messages"], tools=req["tools"], stream=True,
        **options(req, "tool_choice", "parallel_tool_calls", "max_tokens"))
    tool_calls = {}
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        if delta.tool_calls:
            for call in delta.tool_calls:
                index = call.index
                if index not in tool_calls:
                    tool_calls[index] = {"id": "", "function_name": "", "arguments": []}
                if call.id:
                    tool_calls[index]["id"] = call.id
                if call.function.name:
                    tool_calls[index]["function_name"] = call.function.name
                if call.function.arguments:
                    tool_calls[index]["arguments"].append(call.function.arguments)
    return [{"id": tc["id"], "name": tc["function_name"],
             "arguments": repair("".join(tc["arguments"]))}
            for tc in tool_calls.values()]


if __name__ == "__main__":
    serve("openai", run)
