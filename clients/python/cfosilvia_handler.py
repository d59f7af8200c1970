"""The streaming tool handler of the cfosilvia documentation (a seed of this suite), written
here from that description: httpx, ``iter_text()`` split on newlines, ``data: `` lines parsed,
``choices[0].delta``, ``idx = tc.get("index", 0)``, id, name and arguments kept only when
truthy, and a ``call_<uuid>`` id generated for every call that ends without one. The request
carries the scenario's model and options beside the handler's messages, tools and stream."""

import json
import uuid

import httpx
from _driver import options, serve


def run(job):
    req = job["request"]
    body = {"model": job["model"], "messages": req["messages"], "tools": req["tools"],
            "stream": True, **options(req, "tool_choice", "parallel_tool_calls", "max_tokens")}
    tool_calls = {}
    with httpx.Client(timeout=300.0) as client, \
            client.stream("POST", job["base_url"] + "/chat/completions", json=body) as response:
        for chunk in response.iter_text():
            for line in chunk.split("\n"):
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                if data == "[DONE]":
                    continue
                parsed = json.loads(data)
                delta = parsed["choices"][0].get("delta", {})
                if "tool_calls" in delta:
                    for tc in delta["tool_calls"]:
                        idx = tc.get("index", 0)
                        if idx not in tool_calls:
                            tool_calls[idx] = {"id": "", "type": "function",
                                               "function": {"name": "", "arguments": ""}}
                        if tc.get("id"):
                            tool_calls[idx]["id"] = tc["id"]
                        func = tc.get("function", {})
                        if func.get("name"):
                            tool_calls[idx]["function"]["name"] = func["name"]
                        if func.get("arguments"):
                            tool_calls[idx]["function"]["arguments"] += func["arguments"]
    for idx in tool_calls:
        if not tool_calls[idx]["id"]:
            tool_calls[idx]["id"] = f"call_{uuid.uuid4().hex[:24]}"
    return [{"id": tool_calls[i]["id"], "name": tool_calls[i]["function"]["name"],
             "arguments": tool_calls[i]["function"]["arguments"]}
            for i in sorted(tool_calls.keys())]


if __name__ == "__main__":
    serve("httpx", run)
