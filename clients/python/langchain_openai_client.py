"""langchain-openai: ``ChatOpenAI(...).bind_tools(tools)``, ``.stream(messages)`` and the
chunks added up with ``+`` (LangChain's streaming guide), then ``tool_calls`` and
``invalid_tool_calls`` of the sum."""

from _driver import options, serve
from langchain_openai import ChatOpenAI


def run(job):
    req = job["request"]
    llm = ChatOpenAI(model=job["model"], base_url=job["base_url"], api_key="unused", max_retries=0,
                     **options(req, "max_tokens"))
    bound = llm.bind_tools(req["tools"], **options(req, "tool_choice", "parallel_tool_calls"))
    gathered = None
    for chunk in bound.stream(req["messages"]):
        gathered = chunk if gathered is None else gathered + chunk
    if gathered is None:
        return []
    calls = [{"id": tc.get("id"), "name": tc.get("name"), "arguments": tc.get("args")}
             for tc in gathered.tool_calls]
    calls += [{"id": tc.get("id"), "name": tc.get("name"), "arguments": tc.get("args"),
               "invalid": tc.get("error") or "in invalid_tool_calls"}
              for tc in gathered.invalid_tool_calls]
    return calls


if __name__ == "__main__":
    serve("langchain-openai", run)
