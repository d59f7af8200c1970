"""openai (Python), the hand loop of OpenAI's function-calling guide: ``create(stream=True)``
and, per ``delta.tool_calls`` entry, the first delta of an ``index`` kept as the call and the
later deltas' ``function.arguments`` added to it (beside the SDK's stream helper)."""

from _driver import options, serve
from openai import OpenAI


def run(job):
    client = OpenAI(base_url=job["base_url"], api_key="unused", max_retries=0)
    req = job["request"]
    stream = client.chat.completions.create(
        model=job["model"], messages=req["messages"], tools=req["tools"], stream=True,
        **options(req, "tool_choice", "parallel_tool_calls", "max_tokens"))
    final_tool_calls = {}
    for chunk in stream:
        for tool_call in chunk.choices[0].delta.tool_calls or []:
            index = tool_call.index
            if index not in final_tool_calls:
                final_tool_calls[index] = tool_call
            else:
                final_tool_calls[index].function.arguments += tool_call.function.arguments
    return [{"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
            for tc in final_tool_calls.values()]


if __name__ == "__main__":
    serve("openai", run)
