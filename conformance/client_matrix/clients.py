"""The client libraries under test, as data: one adapter each under ``clients/``.

Each adapter is started once and answers a batch of jobs (docs/clients.md has the protocol);
``package`` is the distribution whose version the adapter reports.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Client:
    id: str
    package: str
    ecosystem: str  # python | npm
    script: str  # under clients/<python|js>/
    label: str  # what a reader calls it
    # A seed algorithm (written here from the source's description): where it comes from.
    origin: str | None = None

    def to_json(self, version: str | None) -> dict[str, str]:
        d = {
            "id": self.id,
            "package": self.package,
            "version": version or "unknown",
            "ecosystem": self.ecosystem,
            "label": self.label,
        }
        if self.origin:
            d["origin"] = self.origin
        return d


CLIENTS: tuple[Client, ...] = (
    Client(
        "conformance",
        "toolcall-conformance",  # the distribution's name, which its version is read by
        "python",
        "conformance_client.py",
        "conformance.client (this project)",
    ),
    Client(
        "openai-python",
        "openai",
        "python",
        "openai_sdk.py",
        "openai (Python) chat.completions.stream",
    ),
    Client(
        "litellm",
        "litellm",
        "python",
        "litellm_client.py",
        "LiteLLM completion + stream_chunk_builder",
    ),
    Client(
        "langchain-openai",
        "langchain-openai",
        "python",
        "langchain_openai_client.py",
        "LangChain ChatOpenAI.stream, chunks added",
    ),
    Client(
        "pydantic-ai",
        "pydantic-ai-slim",
        "python",
        "pydantic_ai_client.py",
        "pydantic-ai model_request_stream",
    ),
    Client(
        "openai-agents",
        "openai-agents",
        "python",
        "openai_agents_client.py",
        "OpenAI Agents SDK Runner.run_streamed",
    ),
    Client(
        "llama-index",
        "llama-index-llms-openai",
        "python",
        "llama_index_client.py",
        "LlamaIndex OpenAI.stream_chat + get_tool_calls_from_response",
    ),
    Client(
        "openai-python-loop",
        "openai",
        "python",
        "openai_loop.py",
        "openai (Python) create(stream=True), the function-calling guide's hand loop",
    ),
    Client(
        "crow-cli",
        "openai",
        "python",
        "crow_cli.py",
        "seed algorithm: crow-cli's accumulator with its JSON repair",
        origin="crow-cli (the Python react loop: index map, non-empty guards, "
        "brace-counting JSON repair, {} fallback)",
    ),
    Client(
        "cfosilvia-handler",
        "httpx",
        "python",
        "cfosilvia_handler.py",
        "seed algorithm: the cfosilvia docs' streaming tool handler",
        origin='the cfosilvia documentation\'s handler (tc.get("index", 0), truthy '
        "guards, call_<uuid> fallback ids)",
    ),
    Client(
        "autogen",
        "autogen-ext",
        "python",
        "autogen_client.py",
        "AutoGen OpenAIChatCompletionClient.create_stream",
    ),
    Client(
        "haystack",
        "haystack-ai",
        "python",
        "haystack_client.py",
        "Haystack OpenAIChatGenerator with a streaming_callback",
    ),
    Client(
        "smolagents",
        "smolagents",
        "python",
        "smolagents_client.py",
        "smolagents OpenAIModel.generate_stream + agglomerate_stream_deltas",
    ),
    Client(
        "google-adk",
        "google-adk",
        "python",
        "adk_client.py",
        "Google ADK LiteLlm.generate_content_async(stream=True)",
    ),
    Client(
        "semantic-kernel",
        "semantic-kernel",
        "python",
        "semantic_kernel_client.py",
        "Semantic Kernel OpenAIChatCompletion streaming, messages added",
    ),
    Client(
        "instructor",
        "instructor",
        "python",
        "instructor_client.py",
        "instructor create_partial (Mode.TOOLS), the first tool as response model; no call ids",
    ),
    Client("openai-node", "openai", "npm", "openai.mjs", "openai (npm) chat.completions.stream"),
    Client("ai-sdk", "ai", "npm", "ai-sdk.mjs", "AI SDK streamText + @ai-sdk/openai-compatible"),
    Client(
        "langchain-js",
        "@langchain/openai",
        "npm",
        "langchain.mjs",
        "LangChain.js ChatOpenAI.stream, chunks concatenated",
    ),
    Client(
        "librechat-langchain-js",
        "@langchain/openai",
        "npm",
        "librechat.mjs",
        "seed algorithm: LibreChat's index repair feeding LangChain.js's chunk merge",
        origin="LibreChat (its pull request repairing streamed tool-call indices before "
        "LangChain merges chunks)",
    ),
    Client(
        "openai-node-loop",
        "openai",
        "npm",
        "openai-loop.mjs",
        "openai (npm) create({stream: true}), the function-calling guide's raw loop",
    ),
    Client(
        "ai-sdk-openai",
        "@ai-sdk/openai",
        "npm",
        "ai-sdk-openai.mjs",
        "AI SDK streamText + @ai-sdk/openai with baseURL (provider.chat)",
    ),
    Client(
        "openai-agents-js",
        "@openai/agents",
        "npm",
        "openai-agents.mjs",
        "OpenAI Agents SDK (JS) run(..., {stream: true}), tool_called items",
    ),
)
BY_ID = {c.id: c for c in CLIENTS}
