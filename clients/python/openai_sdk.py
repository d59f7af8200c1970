"""openai (Python): ``client.chat.completions.stream(...)``, the SDK's own accumulation,
then ``get_final_completion()`` (as the SDK's helpers documentation shows)."""

from _driver import options, serve
from openai import OpenAI


def run(job):
    client = OpenAI(base_url=job["base_url"], api_key="unused", max_retries=0)
    req = job["request"]
    with client.chat.completions.stream(
        model=job["model"], messages=req["messages"], tools=req["tools"],
        **options(req, "tool_choice", "parallel_tool_calls", "max_tokens"),
    ) as stream:
        for _event in stream:
            pass
        completion = stream.get_final_completion()
    message = completion.choices[0].message
    return [{"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
            for tc in message.tool_calls or []]


if __name__ == "__main__":
    serve("openai", run)
