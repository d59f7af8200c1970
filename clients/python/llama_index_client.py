"""llama-index-llms-openai: ``OpenAI(...).stream_chat(messages, tools=...)`` consumed to the
end, then ``get_tool_calls_from_response`` on the last response (LlamaIndex's function
calling guide). The model name must be one llama-index knows; the harness routes by path."""

from _driver import options, serve
from llama_index.core.llms import ChatMessage
from llama_index.llms.openai import OpenAI

MODEL = "gpt-4o-mini"  # llama-index checks the name against its context-window table


def run(job):
    req = job["request"]
    llm = OpenAI(model=MODEL, api_base=job["base_url"], api_key="unused", max_retries=0,
                 **options(req, "max_tokens"))
    messages = [ChatMessage(role=m["role"], content=m.get("content") or "")
                for m in req["messages"] if m.get("role") in ("system", "user")]
    response = None
    for partial in llm.stream_chat(messages, tools=req["tools"],
                                   **options(req, "tool_choice", "parallel_tool_calls")):
        response = partial  # each partial holds everything so far; the last one is whole
    if response is None:
        return []
    selections = llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
    return [{"id": s.tool_id, "name": s.tool_name, "arguments": s.tool_kwargs}
            for s in selections]


if __name__ == "__main__":
    serve("llama-index-llms-openai", run)
