"""The same loop over the `openai` SDK's stream (pip install openai).

    python examples/agent_loop_openai.py http://127.0.0.1:8765/v1 dashscope-compatible

SDK chunk objects are converted with exclude_unset, so `"id": ""` (DashScope) stays
different from an absent id, which is what the accumulator needs to see.
"""

import json
import sys

from openai import OpenAI

from conformance.client import ToolCallAccumulator, tool_result_messages

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {
        "type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}}}]


def run(base_url: str, model: str, question: str) -> list[dict]:
    client = OpenAI(base_url=base_url, api_key="unused-for-local-servers")
    messages = [{"role": "user", "content": question}]
    for _ in range(4):
        acc = ToolCallAccumulator(tools=TOOLS)
        stream = client.chat.completions.create(model=model, messages=messages, tools=TOOLS,
                                                stream=True)
        for chunk in stream:
            acc.feed(chunk)  # SDK objects are accepted as they are
        turn = acc.result()
        messages.append(turn.message())
        if not turn.executable:
            return messages
        messages.extend(tool_result_messages([(c, {"ok": True}) for c in turn.calls]))
    return messages


if __name__ == "__main__":
    for m in run(sys.argv[1], sys.argv[2], "Weather in Paris and time in Tokyo?"):
        print(json.dumps(m, ensure_ascii=False))
