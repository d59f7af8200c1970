"""smolagents: ``OpenAIModel(...).generate_stream(messages, tools_to_call_from=...)`` and
``agglomerate_stream_deltas`` (what its ToolCallingAgent does with ``stream_outputs=True``).
The tools are described to it as smolagents describes a tool (name, description, inputs);
a parameter the schema does not require is marked nullable, as smolagents marks it."""

from types import SimpleNamespace

from _driver import options, serve, user_text
from smolagents.models import ChatMessage, MessageRole, OpenAIModel, agglomerate_stream_deltas


def _tool(t):
    fn = t["function"]
    params = fn.get("parameters") or {}
    required = set(params.get("required") or [])
    inputs = {}
    for name, schema in (params.get("properties") or {}).items():
        spec = dict(schema)
        spec.setdefault("type", "any")
        spec.setdefault("description", name)
        if name not in required:
            spec["nullable"] = True
        inputs[name] = spec
    return SimpleNamespace(name=fn["name"], description=fn.get("description", ""),
                           inputs=inputs, output_type="string")


def run(job):
    req = job["request"]
    model = OpenAIModel(model_id=job["model"], api_base=job["base_url"], api_key="unused",
                        client_kwargs={"max_retries": 0},
                        **options(req, "parallel_tool_calls", "max_tokens"))
    messages = [ChatMessage(role=MessageRole.USER,
                            content=[{"type": "text", "text": user_text(req)}])]
    # tool_choice: the scenario's, else smolagents' own default ("required").
    deltas = list(model.generate_stream(messages, **options(req, "tool_choice"),
                                        tools_to_call_from=[_tool(t) for t in req["tools"]]))
    message = agglomerate_stream_deltas(deltas)
    return [{"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
            for tc in message.tool_calls or []]


if __name__ == "__main__":
    serve("smolagents", run)
