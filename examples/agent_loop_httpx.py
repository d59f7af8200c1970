"""A streaming agent loop over httpx + httpx-sse with the robust accumulator.

    python examples/agent_loop_httpx.py http://127.0.0.1:8765/v1 ollama-parallel
"""

import json
import sys

import httpx
from httpx_sse import connect_sse

from conformance.client import ToolCallAccumulator, tool_result_messages

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {
        "type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}}}]


def run(base_url: str, model: str, question: str) -> list[dict]:
    messages = [{"role": "user", "content": question}]
    with httpx.Client(base_url=base_url, timeout=60) as http:
        for _ in range(4):  # a bounded loop: model -> tools -> model
            acc = ToolCallAccumulator(tools=TOOLS)
            body = {"model": model, "messages": messages, "tools": TOOLS, "stream": True}
            with connect_sse(http, "POST", "/chat/completions", json=body) as events:
                for sse in events.iter_sse():
                    if sse.data.strip() == "[DONE]":
                        break
                    if sse.data.lstrip().startswith(":"):
                        continue  # keep-alive sent as data (Q-SSE-KEEPALIVE-AS-DATA)
                    acc.feed(json.loads(sse.data))
            turn = acc.result()
            messages.append(turn.message())  # the provider's ids, exactly as sent
            if not turn.executable:
                return messages
            results = [(c, {"ok": True, "args": c.parsed_arguments()}) for c in turn.calls]
            messages.extend(tool_result_messages(results))
    return messages


if __name__ == "__main__":
    for m in run(sys.argv[1], sys.argv[2], "Weather in Paris and time in Tokyo?"):
        print(json.dumps(m, ensure_ascii=False))
