"""Literal streams shared by the analyzer's self-tests.

Each constant is a stream as it travels: JSONL (one chunk object per line, no framing) or
raw SSE text (``data:`` lines). The comment above each one cites the entry of
``../shared/reference/quirks-catalogue.md`` (or the seed) whose wire example it was
written from; ``verbatim`` / ``transcribed`` / ``reconstructed`` say how close it is, as
in the catalogue, and "adapted" says what was filled in for the catalogue's ``…`` or
changed to isolate the quirk (mostly: a complete chunk envelope, so the stream shows no
other deviation). The expectations (which quirks, at which event and JSON pointer) live in
the tests, not here.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

# =============================================================================== reference
# catalogue §1, verbatim fantasy:TestOpenAICommon/openai-gpt-4o/multi_tool_streaming.yaml
# (gpt-4o-2024-08-06, stream_options.include_usage); the "…" filled in with the recorded
# shape: role chunk, opener with id/type/name/arguments "", fragments, finish chunk with an
# empty delta, usage chunk with `choices: []`, [DONE].

REFERENCE_PARALLEL_SSE = """\
data: {"id":"chatcmpl-DuLd1","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","usage":null,"choices":[{"index":0,"delta":{"role":"assistant","content":null},"logprobs":null,"finish_reason":null}],"obfuscation":"ZvYJfUINRWi"}

data: {"id":"chatcmpl-DuLd1","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","usage":null,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_ehIWdjL1abZk1h8FWGLQ0Hie","type":"function","function":{"name":"add","arguments":""}}]},"logprobs":null,"finish_reason":null}],"obfuscation":"zu"}

data: {"id":"chatcmpl-DuLd1","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","usage":null,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a\\""}}]},"logprobs":null,"finish_reason":null}],"obfuscation":""}

data: {"id":"chatcmpl-DuLd1","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","usage":null,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":2,\\"b\\":3}"}}]},"logprobs":null,"finish_reason":null}],"obfuscation":"Xy"}

data: {"id":"chatcmpl-DuLd1","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","usage":null,"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_fBSgA47J5VeONggizTIvl7AH","type":"function","function":{"name":"multiply","arguments":""}}]},"logprobs":null,"finish_reason":null}],"obfuscation":"mAgBTWJHyqam0"}

data: {"id":"chatcmpl-DuLd1","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","usage":null,"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\\"a\\":2"}}]},"logprobs":null,"finish_reason":null}],"obfuscation":"k"}

data: {"id":"chatcmpl-DuLd1","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","usage":null,"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":",\\"b\\":3}"}}]},"logprobs":null,"finish_reason":null}],"obfuscation":"Qw"}

data: {"id":"chatcmpl-DuLd1","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null,"obfuscation":"9Szx"}

data: {"id":"chatcmpl-DuLd1","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","choices":[],"usage":{"prompt_tokens":106,"completion_tokens":50,"total_tokens":156},"obfuscation":"e81oTeHXQjUjZ"}

data: [DONE]

"""
REFERENCE_PARALLEL_CALLS = [
    ("call_ehIWdjL1abZk1h8FWGLQ0Hie", "add", {"a": 2, "b": 3}),
    ("call_fBSgA47J5VeONggizTIvl7AH", "multiply", {"a": 2, "b": 3}),
]

# catalogue §1 again, one call (the single-call OpenAI recordings have the same shape).
REFERENCE_SINGLE_SSE = """\
data: {"id":"chatcmpl-DuLd2","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","usage":null,"choices":[{"index":0,"delta":{"role":"assistant","content":null},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-DuLd2","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","usage":null,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_xZtWnTjjc0jhgAbCdEfGh123","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-DuLd2","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","usage":null,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"loc"}}]},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-DuLd2","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","usage":null,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ation\\": \\"Zürich\\"}"}}]},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-DuLd2","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}

data: {"id":"chatcmpl-DuLd2","object":"chat.completion.chunk","created":1782321623,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_a1b2c3d4e5","choices":[],"usage":{"prompt_tokens":80,"completion_tokens":18,"total_tokens":98}}

data: [DONE]

"""
REFERENCE_SINGLE_CALLS = [("call_xZtWnTjjc0jhgAbCdEfGh123", "get_weather", {"location": "Zürich"})]

# A text answer (no tool call) in the same shape: rules about tool calls do not apply to it.
REFERENCE_TEXT_SSE = """\
data: {"id":"chatcmpl-T1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}

data: {"id":"chatcmpl-T1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"It is sunny."},"finish_reason":null}]}

data: {"id":"chatcmpl-T1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: [DONE]

"""


def sse_to_jsonl(sse: str) -> str:
    """The JSONL form of an SSE literal: the ``data:`` payloads, one per line, no [DONE]."""
    lines = []
    for line in sse.splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            lines.append(line[len("data: ") :])
    return "\n".join(lines) + "\n"


REFERENCE_PARALLEL_JSONL = sse_to_jsonl(REFERENCE_PARALLEL_SSE)
REFERENCE_SINGLE_JSONL = sse_to_jsonl(REFERENCE_SINGLE_SSE)


def chunks(jsonl: str) -> list[object]:
    return [json.loads(line) for line in jsonl.splitlines() if line.strip()]


# =============================================================================== A. framing

# Q-SSE-COMMENT-KEEPALIVE, verbatim fantasy:TestOpenRouterCommon/openai/multi_tool_streaming.yaml
# (provider field dropped to keep the stream free of other extras).
SSE_COMMENT_KEEPALIVE = """\
: OPENROUTER PROCESSING

: OPENROUTER PROCESSING

data: {"id":"gen-1777319818","object":"chat.completion.chunk","created":1,"model":"openai/gpt-4o","choices":[{"index":0,"delta":{"content":null,"role":"assistant","tool_calls":[{"index":0,"id":"call_8I6muAnyFaBjKyotk1gPRTwU","type":"function","function":{"name":"add","arguments":""}}]},"finish_reason":null}]}

data: {"id":"gen-1777319818","object":"chat.completion.chunk","created":1,"model":"openai/gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a\\":2,\\"b\\":3}"}}]},"finish_reason":null}]}

data: {"id":"gen-1777319818","object":"chat.completion.chunk","created":1,"model":"openai/gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]

"""

# Q-SSE-KEEPALIVE-AS-DATA, verbatim `data: : keepalive` (anomalyco/opencode#50871), before
# the stream and between two argument fragments.
SSE_KEEPALIVE_AS_DATA = """\
data: : keepalive

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"xai/grok-4.6","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"add","arguments":""}}]},"finish_reason":null}]}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"xai/grok-4.6","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a\\":"}}]},"finish_reason":null}]}

data: : keepalive

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"xai/grok-4.6","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"2}"}}]},"finish_reason":null}]}

data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"xai/grok-4.6","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]

"""

# Q-SSE-DONE-MISSING, verbatim fantasy (71f727f) Cerebras qwen-3-coder-480b: the last two
# events, then EOF (time_info dropped, usage kept on the finish chunk as recorded).
SSE_DONE_MISSING = """\
data: {"id":"chatcmpl-5c50","object":"chat.completion.chunk","created":1,"model":"qwen-3-coder-480b","choices":[{"delta":{"tool_calls":[{"function":{"name":"add","arguments":"{\\"a\\": 2, \\"b\\": 3}"},"type":"function","id":"ab8048658","index":0},{"function":{"name":"multiply","arguments":"{\\"a\\": 2, \\"b\\": 3}"},"type":"function","id":"b249e0b3f","index":1}]},"finish_reason":null,"index":0}]}

data: {"id":"chatcmpl-5c50","object":"chat.completion.chunk","created":1,"model":"qwen-3-coder-480b","choices":[{"delta":{},"finish_reason":"tool_calls","index":0}]}

"""

# Q-SSE-ERROR-ENVELOPE, verbatim coder:stream_error.txtar (no [DONE] follows the error).
SSE_ERROR_ENVELOPE = """\
data: {"id":"chatcmpl-BwoiP","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"write","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-BwoiP","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"text\\": \\""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"error": {"message": "The server had an error while processing your request. Sorry about that!", "type": "server_error"}}

"""

# Q-SSE-ERROR-IN-CHUNK, reconstructed from diegosouzapw/OmniRoute#8210 and OpenRouter's docs:
# a chunk-shaped object with `choices: []` and an `error`, mid-call.
SSE_ERROR_IN_CHUNK = """\
data: {"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"add","arguments":""}}]},"finish_reason":null}]}

data: {"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a\\":"}}]},"finish_reason":null}]}

data: {"id":"gen-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"error":{"code":502,"message":"Worker local total request limit reached (33/32)"}}

data: [DONE]

"""

# Q-STREAM-TOOLS-UNSUPPORTED, verbatim HTTP 500 body of llama.cpp before #12379; judged with
# the request (stream + tools) and the status.
BODY_TOOLS_UNSUPPORTED = (
    '{"code":500,"message":"Cannot use tools with stream","type":"server_error"}'
)

# Q-STREAM-OPTIONS-REJECTED, the catalogue's verbatim Azure message (with data_sources), as a 400.
BODY_STREAM_OPTIONS_REJECTED = (
    '{"error":{"message":"Validation error at #/stream_options: Extra inputs are not '
    'permitted","type":"invalid_request_error","param":null,"code":null}}'
)

# Q-STREAM-DOWNGRADED, reconstructed (LocalAI / LMDeploy): `stream: true` answered with one
# `application/json` completion.
BODY_STREAM_DOWNGRADED = (
    '{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
    '"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_0123456789abQRSTUVWXYZab",'
    '"type":"function","function":{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}]},'
    '"finish_reason":"tool_calls"}]}'
)

# =============================================================================== B. envelope

# Q-USAGE-PLACEMENT, verbatim fantasy:TestOpenAICompatibleCommon/groq-kimi-k2: usage on the
# finish chunk and again in a `choices: []` chunk (x_groq dropped).
USAGE_PLACEMENT = """\
{"id":"chatcmpl-a74a","object":"chat.completion.chunk","created":1,"model":"moonshotai/kimi-k2","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"call_5b7e0a1c2dQRSTUVWXYZabcd","type":"function","function":{"name":"add","arguments":"{\\"a\\":2,\\"b\\":3}"},"index":0}]},"logprobs":null,"finish_reason":null}]}
{"id":"chatcmpl-a74a","object":"chat.completion.chunk","created":1,"model":"moonshotai/kimi-k2","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":200,"completion_tokens":59,"total_tokens":259}}
{"id":"chatcmpl-a74a","object":"chat.completion.chunk","created":1,"model":"moonshotai/kimi-k2","choices":[],"usage":{"prompt_tokens":200,"completion_tokens":59,"total_tokens":259}}
"""

# Q-AZURE-PROMPT-FILTER-CHUNK, verbatim fantasy:TestAzureCommon/azure-gpt-5-mini/
# tool_streaming.yaml (content_filter_results and obfuscation trimmed from the later chunks).
AZURE_PROMPT_FILTER_CHUNK = """\
{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"jailbreak":{"detected":false,"filtered":false}}}]}
{"choices":[{"delta":{"content":null,"refusal":null,"role":"assistant","tool_calls":[{"function":{"arguments":"","name":"weather"},"id":"call_tWA8BJziGlCyhQEXhEHn6eXK","index":0,"type":"function"}]},"finish_reason":null,"index":0,"logprobs":null}],"created":1782321623,"id":"chatcmpl-DuLY","model":"gpt-5-mini-2025-08-07","object":"chat.completion.chunk"}
{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{\\"location\\":\\"Florence\\"}"},"index":0}]},"finish_reason":null,"index":0,"logprobs":null}],"created":1782321623,"id":"chatcmpl-DuLY","model":"gpt-5-mini-2025-08-07","object":"chat.completion.chunk"}
{"choices":[{"delta":{},"finish_reason":"tool_calls","index":0,"logprobs":null}],"created":1782321623,"id":"chatcmpl-DuLY","model":"gpt-5-mini-2025-08-07","object":"chat.completion.chunk"}
"""

# Q-AZURE-CHOICE-WITHOUT-DELTA, adapted from microsoft/autogen#6465: a choice that carries
# only finish_reason and index (the verbatim one also has content_filter_* annotations,
# which are Q-EXTRA-FIELDS; left out here to isolate the missing delta).
AZURE_CHOICE_WITHOUT_DELTA = """\
{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"add","arguments":"{\\"a\\":2}"}}]},"finish_reason":null}]}
{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"finish_reason":null}],"usage":null}
{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-ENVELOPE-FIELDS-MISSING, verbatim vercel/ai#4031 (Cloudflare: no choices[].index, no
# finish_reason key); the tool call and finish chunk added in the same shape.
ENVELOPE_FIELDS_MISSING = """\
{"id":"id-1733737971956","object":"chat.completion.chunk","created":1733737971,"model":"@cf/meta/llama-3.1-8b-instruct-fast","choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"add","arguments":"{\\"a\\":2}"}}]}}]}
{"id":"id-1733737971956","object":"chat.completion.chunk","created":1733737971,"model":"@cf/meta/llama-3.1-8b-instruct-fast","choices":[{"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-CHUNK-ID-UNSTABLE, adapted from microsoft/foundry-local#144 (`chat.id.N` per chunk).
CHUNK_ID_UNSTABLE = """\
{"id":"chat.id.4114","object":"chat.completion.chunk","created":1,"model":"phi-4","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"add","arguments":""}}]},"finish_reason":null}]}
{"id":"chat.id.4115","object":"chat.completion.chunk","created":1,"model":"phi-4","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a\\":2}"}}]},"finish_reason":null}]}
{"id":"chat.id.4116","object":"chat.completion.chunk","created":1,"model":"phi-4","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-EXTRA-FIELDS, verbatim fantasy:TestVercelCommon/gpt-5 finish chunk (delta.provider_metadata,
# top-level generationId), trimmed.
EXTRA_FIELDS = """\
{"id":"gen_01KKHTQPSHJ5CM7TAQZYWNAQTV","object":"chat.completion.chunk","created":1773346216,"model":"openai/gpt-5","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"add","arguments":"{\\"a\\":2}"}}]},"finish_reason":null}]}
{"id":"gen_01KKHTQPSHJ5CM7TAQZYWNAQTV","object":"chat.completion.chunk","created":1773346216,"model":"openai/gpt-5","choices":[{"index":0,"delta":{"provider_metadata":{"openai":{"responseId":"resp_0ba3","serviceTier":"default"}}},"finish_reason":"tool_calls"}],"system_fingerprint":"fp_m0dg9o8dnf","service_tier":"default","generationId":"gen_01KKHTQPSHJ5CM7TAQZYWNAQTV"}
"""

# Q-TOOLCALLS-EMPTY-ARRAY, verbatim delta of Blaizzy/mlx-vlm#900 shape (`tool_calls: []` on
# a content delta); plain content here so that no tool markup is involved.
TOOLCALLS_EMPTY_ARRAY = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Checking.","tool_calls":[]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"add","arguments":"{\\"a\\":2}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-EMPTY-DELTA-CHUNKS, verbatim fantasy (26cd05c) xai-grok-4-fast: role chunk, then
# `"delta":{}` chunks while reasoning is hidden (finish_reason null kept).
EMPTY_DELTA_CHUNKS = """\
{"id":"28dfbfa4","object":"chat.completion.chunk","created":1,"model":"grok-4-fast-reasoning","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}
{"id":"28dfbfa4","object":"chat.completion.chunk","created":1,"model":"grok-4-fast-reasoning","choices":[{"index":0,"delta":{},"finish_reason":null}]}
{"id":"28dfbfa4","object":"chat.completion.chunk","created":1,"model":"grok-4-fast-reasoning","choices":[{"index":0,"delta":{},"finish_reason":null}]}
{"id":"28dfbfa4","object":"chat.completion.chunk","created":1,"model":"grok-4-fast-reasoning","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"add","arguments":""}}]},"finish_reason":null}]}
{"id":"28dfbfa4","object":"chat.completion.chunk","created":1,"model":"grok-4-fast-reasoning","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a\\":2}"}}]},"finish_reason":null}]}
{"id":"28dfbfa4","object":"chat.completion.chunk","created":1,"model":"grok-4-fast-reasoning","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# =============================================================================== C. index

# Q-INDEX-ABSENT (seed 004, Ollama before v0.4.7: ollama/ollama#7881), reconstructed: the
# OpenAI shape with no `index` on any tool-call delta.
INDEX_ABSENT = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama3.1","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama3.1","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{\\"city\\": "}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama3.1","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"\\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama3.1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-INDEX-ABSENT-WHOLE-CALL, verbatim THU-MAIC/OpenMAIC#1556 (thought_signature shortened),
# plus the finish chunk; no chunk id, as Gemini sends it (so Q-ENVELOPE-FIELDS-MISSING too).
INDEX_ABSENT_WHOLE_CALL = """\
{"choices":[{"delta":{"role":"assistant","tool_calls":[{"extra_content":{"google":{"thought_signature":"EjQKMgEMOdbH"}},"function":{"arguments":"{\\"offset\\":1,\\"limit\\":100,\\"path\\":\\"/app/skills/agent-runtime/stage-design/SKILL.md\\"}","name":"read"},"id":"call_297140","type":"function"}]},"index":0}],"model":"gemini-3.8-flash","object":"chat.completion.chunk"}
{"choices":[{"delta":{},"finish_reason":"tool_calls","index":0}],"model":"gemini-3.8-flash","object":"chat.completion.chunk"}
"""

# Q-INDEX-ABSENT-PARALLEL-SPLIT, reconstructed in the catalogue from noho/dayu-agent#91 and
# open-webui/computer#224 (envelope added; finish "stop" as in the catalogue).
INDEX_ABSENT_PARALLEL_SPLIT = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-2.5-flash","choices":[{"index":0,"delta":{"tool_calls":[{"id":"function-call-1","type":"function","function":{"name":"get_weather","arguments":"{\\"location\\":\\"Sydney\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-2.5-flash","choices":[{"index":0,"delta":{"tool_calls":[{"id":"function-call-2","type":"function","function":{"name":"get_weather","arguments":"{\\"location\\":\\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-2.5-flash","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
"""

# Q-INDEX-NONZERO-START, verbatim coder:streaming_injected_tool_nonzero_index.txtar (object
# and finish_reason keys added, usage dropped; `arguments: ""` is all the call gets).
INDEX_NONZERO_START = """\
{"id":"msg_vrtx_01Fi","object":"chat.completion.chunk","created":1769199774,"model":"claude-haiku-4.5","choices":[{"index":0,"delta":{"content":"oder workspaces:","role":"assistant"},"finish_reason":null}]}
{"id":"msg_vrtx_01Fi","object":"chat.completion.chunk","created":1769199774,"model":"claude-haiku-4.5","choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"function":{"name":"bmcp_coder_coder_list_workspaces"},"id":"call_DbFqUgk6aAtJ4nQRSTUVWXYZ","index":1,"type":"function"}]},"finish_reason":null}]}
{"id":"msg_vrtx_01Fi","object":"chat.completion.chunk","created":1769199774,"model":"claude-haiku-4.5","choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"function":{"arguments":"{}"},"index":1}]},"finish_reason":null}]}
{"id":"msg_vrtx_01Fi","object":"chat.completion.chunk","created":1769199774,"model":"claude-haiku-4.5","choices":[{"finish_reason":"tool_calls","index":0,"delta":{"content":null}}]}
"""

# Q-INDEX-ALL-ZERO (seed 004, ollama/ollama#15457), transcribed from the variant-a wire of
# Q-INDEX-REUSED-ACROSS-CALLS (ai-dynamo/dynamo#4723): two calls, both on index 0.
INDEX_ALL_ZERO = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_9439f8318d70QRSTUVWXYZab","type":"function","function":{"name":"add_numbers","arguments":"{\\"b\\":2,\\"a\\":2}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_84eb6907b8e3QRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":"{\\"unit\\":\\"celsius\\",\\"location\\":\\"Tokyo\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-INDEX-REUSED-ACROSS-CALLS variant a, on index 1 (a relay that numbers from 1 and then
# stays there): a new id and a name on an occupied non-zero index.
INDEX_REUSED_NEW_ID = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_aaaaaaaaaaaaQRSTUVWXYZab","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_bbbbbbbbbbbbQRSTUVWXYZab","type":"function","function":{"name":"add","arguments":"{\\"a\\":1}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_ccccccccccccQRSTUVWXYZab","type":"function","function":{"name":"add","arguments":"{\\"a\\":2}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-INDEX-REUSED-ACROSS-CALLS variant b, verbatim dyedd/lens#49 (comments removed; chunk
# envelope added): the second call's arguments on index 0 with no new id, `name: ""`.
INDEX_REUSED_NO_ID = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-3.1-pro","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"toolu_530f","type":"function","function":{"name":"glob","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-3.1-pro","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"","arguments":"{\\"path\\":\\"\\",\\"pattern\\":\\"**/*\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-3.1-pro","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"","arguments":"{\\"path\\":\\"content/wiki\\",\\"pattern\\":\\"\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-3.1-pro","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-INDEX-INCONSISTENT-WITHIN-CALL, reconstructed in the catalogue from
# danny-avila/LibreChat#13987 / #14416: id/name on index 2, the arguments on index 1.
INDEX_INCONSISTENT_WITHIN_CALL = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"call_tooluse0123QRSTUVWXYZabc","type":"function","function":{"name":"get_time","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\\"timezone\\":\\"Europe/Madrid\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# =============================================================================== D. id

# Q-ID-ABSENT (seed 000 §5; catalogue L.4: Ollama gpt-oss, continuedev/continue#13225):
# the first delta has an index but no id.
ID_ABSENT = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-oss:20b","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-oss:20b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\":\\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-oss:20b","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-EMPTY-STRING-OVERWRITE, seed 000 §5 (alibaba compatible-mode): the real id and name
# first, then `id: ""` and `name: ""` on every continuation.
EMPTY_STRING_OVERWRITE = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3.8-max-preview","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_eee11723464aQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3.8-max-preview","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"","function":{"name":"","arguments":"{\\"city\\":"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3.8-max-preview","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"","function":{"name":"","arguments":"\\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3.8-max-preview","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-ID-REPEATED, verbatim sigoden/aichat#580 (LocalAI; trimmed, finish_reason "" replaced by
# null to isolate the id): the same id on every delta.
ID_REPEATED = """\
{"created":1718031283,"object":"chat.completion.chunk","id":"f5f63d03","model":"llama3-8b-inst","choices":[{"index":0,"finish_reason":null,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_f5f63d039bd7QRSTUVWXYZab","type":"function","function":{"name":"get_current_weather","arguments":""}}]}}]}
{"created":1718031283,"object":"chat.completion.chunk","id":"f5f63d03","model":"llama3-8b-inst","choices":[{"index":0,"finish_reason":null,"delta":{"tool_calls":[{"index":0,"id":"call_f5f63d039bd7QRSTUVWXYZab","function":{"arguments":"{\\"location\\":\\"Paris\\"}"}}]}}]}
{"created":1718031283,"object":"chat.completion.chunk","id":"f5f63d03","model":"llama3-8b-inst","choices":[{"index":0,"finish_reason":"tool_calls","delta":{}}]}
"""

# Q-ID-CHANGES-MID-CALL, transcribed zai-org/GLM-4#194 (the repeated `type` left out to
# isolate the id): a fresh id on every later delta, no name.
ID_CHANGES_MID_CALL = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"glm-4","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_DfU25035HyRrY03K6JBO94Xf","type":"function","function":{"name":"get_current_weather","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"glm-4","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_LEN0pThnXuYgjRcJ4HQbNLJy","function":{"arguments":"{\\""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"glm-4","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_6bAgqnOvlFcg9mwTZ4kP7dP0","function":{"arguments":"location\\": \\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"glm-4","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-ID-FORMAT, verbatim ids of fantasy:TestOpenAICompatibleCommon/groq-kimi-k2
# (`functions.add:0`), in the OpenAI shape.
ID_FORMAT = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"kimi-k2","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"functions.add:0","type":"function","function":{"name":"add","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"kimi-k2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a\\":2,\\"b\\":3}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"kimi-k2","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# =============================================================================== E. type, name

# Q-TYPE-MISSING, reconstructed in the catalogue from vllm-project/vllm#16340.
TYPE_MISSING = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen2.5","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","function":{"name":"get_current_weather","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen2.5","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\":\\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen2.5","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-NAME-REPEATED, reconstructed in the catalogue from ggml-org/llama.cpp#13774 (the
# misplaced `function.id` replaced by a tool-call `id` to isolate the name).
NAME_REPEATED = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"final_result","arguments":"{\\""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"final_result","arguments":"answer"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"final_result","arguments":"\\": 42}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-NAME-EMPTY-OPENING-DELTA, verbatim jjang-ai/vmlx#244: opener `name: ""`, the real name on
# the next delta (which repeats the id: Q-ID-REPEATED too, as recorded).
NAME_EMPTY_OPENING_DELTA = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"MiniMax-M2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x0123456789QRSTUVWXYZabc","type":"function","function":{"name":"","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"MiniMax-M2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_x0123456789QRSTUVWXYZabc","function":{"name":"bash","arguments":"{\\"cmd\\":\\"ls\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"MiniMax-M2","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-NAME-AFTER-ARGUMENTS, reconstructed in the catalogue from vercel/ai#14722 (the `type`
# added on the opener to isolate the name).
NAME_AFTER_ARGUMENTS = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1230123456QRSTUVWXYZabcd","type":"function","function":{"arguments":"{\\"command\\": "}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"bash","arguments":"\\"ls -la\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-NAME-FRAGMENTED, reconstructed in the catalogue (openai/openai-agents-python#326):
# `get_` then `weather`.
NAME_FRAGMENTED = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1abcdefghQRSTUVWXYZabcde","type":"function","function":{"name":"get_","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"weather"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\":\\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# =============================================================================== F. arguments

# Q-ARGS-WHOLE-IN-ONE-DELTA, verbatim fantasy:TestOpenAICompatibleCommon/groq-kimi-k2 (ids in
# OpenAI's shape to isolate the quirk from Q-ID-FORMAT).
ARGS_WHOLE_IN_ONE_DELTA = """\
{"id":"chatcmpl-a74a","object":"chat.completion.chunk","created":1,"model":"kimi-k2","choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_add0123456QRSTUVWXYZabcd","type":"function","function":{"name":"add","arguments":"{\\"a\\":2,\\"b\\":3}"},"index":0}]},"logprobs":null,"finish_reason":null}]}
{"id":"chatcmpl-a74a","object":"chat.completion.chunk","created":1,"model":"kimi-k2","choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_mul0123456QRSTUVWXYZabcd","type":"function","function":{"name":"multiply","arguments":"{\\"a\\":2,\\"b\\":3}"},"index":1}]},"logprobs":null,"finish_reason":null}]}
{"id":"chatcmpl-a74a","object":"chat.completion.chunk","created":1,"model":"kimi-k2","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}
"""

# Q-ARGS-ON-OPENING-DELTA, verbatim fantasy:TestOpenAICompatibleCommon/llama-cpp-gpt-oss/
# tool_streaming.yaml (id in OpenAI's shape).
ARGS_ON_OPENING_DELTA = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-oss-20b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_g2KOIWzn722hQRSTUVWXYZab","type":"function","function":{"name":"weather","arguments":"{\\""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-oss-20b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"location"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-oss-20b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\":\\"Florence\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-oss-20b","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-ARGS-CUMULATIVE, reconstructed in the catalogue from NousResearch/hermes-agent#35718.
ARGS_CUMULATIVE = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"deepseek-chat","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"read","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"deepseek-chat","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"path\\":"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"deepseek-chat","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"path\\":\\"notes.txt\\""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"deepseek-chat","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"path\\":\\"notes.txt\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"deepseek-chat","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-ARGS-DUPLICATED-ON-FLUSH, reconstructed in the catalogue (vllm-project/vllm#51697, xlam):
# the end-of-stream flush re-sends the whole arguments.
ARGS_DUPLICATED_ON_FLUSH = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"xlam","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"xlam","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\": \\"Seattle\\", "}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"xlam","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"state\\": \\"WA\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"xlam","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\": \\"Seattle\\", \\"state\\": \\"WA\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"xlam","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-ARGS-LOST-MULTITOKEN-DELTA, reconstructed in the catalogue from vllm-project/vllm#55082 /
# #31501: the opener with `arguments: ""`, then the finish. Judged against the request's
# tool schema (get_weather requires `city`), see TOOLS_WEATHER.
ARGS_LOST_MULTITOKEN_DELTA = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"glm-4.5","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"glm-4.5","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""
TOOLS_WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]

# Q-ARGS-ABSENT-NO-PARAMS, verbatim coder:streaming_injected_tool_nonzero_index.txtar pattern
# at index 0: the name delta, then `arguments: ""`, then the finish.
ARGS_ABSENT_NO_PARAMS = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"list_workspaces","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-ARGS-SERVER-PARSER-CORRUPTION, reconstructed from vllm-project/vllm#21360 (the `[{"` of
# an array-of-objects argument dropped): valid JSON text in, invalid fragments out.
ARGS_SERVER_PARSER_CORRUPTION = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"add_items","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"items\\": "}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"name\\": \\"a\\"}]}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-ARGS-SERVER-PARSER-CORRUPTION with its evidence: the stream above, after the model's own
# text of the call streamed as content (as servers that echo the raw output do, catalogue
# Q-TOOLCALL-DUPLICATED-IN-CONTENT): that text holds valid arguments, the parse does not.
ARGS_SERVER_PARSER_CORRUPTION_SEEN = (
    '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"content":"<tool_call>\\n{\\"name\\": \\"add_items\\", \\"arguments\\": {\\"items\\": [{\\"name\\": \\"a\\"}]}}\\n</tool_call>"},"finish_reason":null}]}\n'
    + ARGS_SERVER_PARSER_CORRUPTION
)

# Q-ARGS-INVENTED-ON-TRUNCATION, reconstructed from docs/lanes/vllm.md (vLLM 0.32.0 hermes,
# `max_tokens: 14`): the model had written only `<tool_call>\n{"name": "get_weather",`; the
# server sent one chunk with id, name, `arguments: "{}"` and `finish_reason: "length"`
# (the id in OpenAI's shape here, to isolate the quirk from Q-ID-FORMAT).
ARGS_INVENTED_ON_TRUNCATION = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"smollm2","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"smollm2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},"finish_reason":"length"}]}
"""

# Q-REQUIRED-NOT-ENFORCED, reconstructed from docs/lanes/llamacpp.md (`tool_choice:
# "required"` without a prefill: the required grammar lets free text come first): prose,
# then the call.
REQUIRED_NOT_ENFORCED = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"smollm2","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"smollm2","choices":[{"index":0,"delta":{"content":"The weather in Paris is mostly sunny. "},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"smollm2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"smollm2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\": \\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"smollm2","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""
# ... and the same prose with no call at all, until max_tokens (the lane's plain request).
REQUIRED_PROSE_ONLY = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"smollm2","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"smollm2","choices":[{"index":0,"delta":{"content":"The weather in Paris is mostly sunny."},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"smollm2","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}
"""

# Q-ARGS-JSON-OBJECT, verbatim huggingface/text-generation-inference#2136 tool call (as a
# streamed delta; `description: null` dropped).
ARGS_JSON_OBJECT = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"tgi","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"retrieve_payment_status","arguments":{"transaction_id":"T1001"}}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"tgi","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-ARGS-NULL (issue 16): `arguments: null` on the opener, then the real fragments.
ARGS_NULL = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":null}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\": \\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-ARGS-CONTROL-MARKUP, reconstructed in the catalogue from raullenchai/Rapid-MLX#579:
# `[ARGS]` emitted as an argument fragment.
ARGS_CONTROL_MARKUP = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"devstral-small-2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"read_file","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"devstral-small-2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"[ARGS]"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"devstral-small-2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"file_path\\": \\"a.txt\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"devstral-small-2","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-ARGS-TRUNCATED (seed 000 §4; catalogue L.2, Qwen/DashScope): the arguments stop short,
# the finish still says tool_calls.
ARGS_TRUNCATED = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen-plus","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen-plus","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\": \\"Par"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen-plus","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# The same cut, but honest: `finish_reason: "length"` (R-LENGTH-VISIBLE passes, R-LENGTH-CUT).
ARGS_CUT_BY_LENGTH = ARGS_TRUNCATED.replace(
    '"finish_reason":"tool_calls"', '"finish_reason":"length"'
)

# =============================================================================== G. finish

# Q-FINISH-STOP-WITH-TOOLCALLS, reconstructed in the catalogue from googleapis/python-genai#2868
# (the call given an index and an envelope to isolate the finish).
FINISH_STOP_WITH_TOOLCALLS = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-2.5-flash","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-2.5-flash","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"location\\":\\"Sydney\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-2.5-flash","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
"""
# Q-FINISH-STOP-NAMED-TOOLCHOICE: the same wire with `tool_choice` naming get_weather
# (vllm-project/vllm#25054's table): OpenAI's own behaviour.
TOOL_CHOICE_WEATHER = {"type": "function", "function": {"name": "get_weather"}}

# Q-FINISH-TOOLCALLS-WITHOUT-DELTAS (earendil-works/pi#6357): the finish says tool_calls, no
# tool-call delta came.
FINISH_TOOLCALLS_WITHOUT_DELTAS = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"glm-5.2","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"glm-5.2","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-FINISH-EMPTY-STRING, verbatim sgl-project/sglang#3387 chunk (role null and matched_stop
# left out to isolate the finish): `finish_reason: ""` on non-final chunks.
FINISH_EMPTY_STRING = """\
{"id":"pvTMmBwCgREi3g-CaZkn1","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":""}],"usage":null}
{"id":"pvTMmBwCgREi3g-CaZkn1","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\":\\"Paris\\"}"}}]},"logprobs":null,"finish_reason":""}],"usage":null}
{"id":"pvTMmBwCgREi3g-CaZkn1","object":"chat.completion.chunk","created":1,"model":"llama","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}
"""

# Q-FINISH-ON-NONFINAL-CHUNK (open-webui/open-webui#16377): `"stop"` on a reasoning chunk,
# the tool call after it.
FINISH_ON_NONFINAL_CHUNK = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"I need the weather."},"finish_reason":"stop"}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-FINISH-CAMELCASE (jakobdylanc/llmcord#84): `finish_reason` null and `finishReason` set.
FINISH_CAMELCASE = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-2.0-flash","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-2.0-flash","choices":[{"index":0,"delta":{},"finish_reason":null,"finishReason":"tool_calls"}]}
"""

# Q-FINISH-NEVER-SENT (anomalyco/opencode#43882): the stream ends without any finish_reason.
FINISH_NEVER_SENT = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"muse-spark-1.2","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"muse-spark-1.2","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\":\\"Paris\\"}"}}]},"finish_reason":null}]}
"""

# Q-FINISH-REPEATED, verbatim fantasy:TestOpenRouterCommon/openai (provider fields dropped):
# two finish chunks; the usage goes to a `choices: []` chunk to isolate the repeat.
FINISH_REPEATED = """\
{"id":"gen-1777319818","object":"chat.completion.chunk","created":1,"model":"openai/gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_8I6muAnyFaBjKyotk1gPRTwU","type":"function","function":{"name":"add","arguments":"{\\"a\\":2}"}}]},"finish_reason":null}]}
{"id":"gen-1777319818","object":"chat.completion.chunk","created":1,"model":"openai/gpt-4o","choices":[{"index":0,"delta":{"content":"","role":"assistant"},"finish_reason":"tool_calls"}]}
{"id":"gen-1777319818","object":"chat.completion.chunk","created":1,"model":"openai/gpt-4o","choices":[{"index":0,"delta":{"content":"","role":"assistant"},"finish_reason":"tool_calls"}]}
"""

# Q-FINISH-SAME-CHUNK-AS-CALL, reconstructed in the catalogue (BerriAI/litellm#27638).
FINISH_SAME_CHUNK_AS_CALL = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}
"""

# Q-FINISH-NONSTANDARD-VALUE (higress-group/higress#2408: upper-case `STOP` from a Gemini
# translator) on a text answer, so no other finish rule is involved.
FINISH_NONSTANDARD_VALUE = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini","choices":[{"index":0,"delta":{"role":"assistant","content":"Done."},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini","choices":[{"index":0,"delta":{},"finish_reason":"STOP"}]}
"""

# =============================================================================== H. outside tool_calls

# Q-TOOLCALL-AS-TEXT, verbatim ollama/ollama#5915 (llama3-groq-tool-use:8b), continued to
# the end of the call and a "stop" finish.
TOOLCALL_AS_TEXT = """\
{"id":"chatcmpl-20","object":"chat.completion.chunk","created":1,"model":"llama3-groq-tool-use:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"\\u003ctool_call\\u003e"},"finish_reason":null}]}
{"id":"chatcmpl-20","object":"chat.completion.chunk","created":1,"model":"llama3-groq-tool-use:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"{\\""},"finish_reason":null}]}
{"id":"chatcmpl-20","object":"chat.completion.chunk","created":1,"model":"llama3-groq-tool-use:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"id\\": 0, \\"name\\": \\"get_weather\\", \\"arguments\\": {\\"city\\": \\"Paris\\"}}"},"finish_reason":null}]}
{"id":"chatcmpl-20","object":"chat.completion.chunk","created":1,"model":"llama3-groq-tool-use:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"\\u003c/tool_call\\u003e"},"finish_reason":null}]}
{"id":"chatcmpl-20","object":"chat.completion.chunk","created":1,"model":"llama3-groq-tool-use:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
"""

# Q-TOOLCALL-DUPLICATED-IN-CONTENT, verbatim Blaizzy/mlx-vlm#900 content (the `tool_calls: []`
# left out to isolate it), then the parsed call in the final chunk as mlx-vlm sent it.
TOOLCALL_DUPLICATED_IN_CONTENT = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemma","choices":[{"index":0,"delta":{"role":"assistant","content":"<|tool_call>call:web_search{query:weather}"},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemma","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"web_search","arguments":"{\\"query\\":\\"weather\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemma","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-TOOLCALLS-MISSING-IN-STREAM (earendil-works/pi#1125, Ollama /v1): with tool_choice
# "required", empty content and finish "stop".
TOOLCALLS_MISSING_IN_STREAM = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
"""

# =============================================================================== I. reasoning

# Q-REASONING-SAME-DELTA, reconstructed in the catalogue from symfony/ai#1856.
REASONING_SAME_DELTA = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"glm-4.6","choices":[{"index":0,"delta":{"reasoning_content":"Need the weather.","tool_calls":[{"index":0,"id":"call_1abcdefghQRSTUVWXYZabcde","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"glm-4.6","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"glm-4.6","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-REASONING-LEAK-AT-FINISH (vllm-project/vllm#32997): reasoning, the call, then leftover
# text as content on the tool_calls finish chunk.
REASONING_LEAK_AT_FINISH = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"The user wants the weather."},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"get_weather","arguments":"{\\"city\\":\\"Paris\\"}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"content":" so I call it."},"finish_reason":"tool_calls"}]}
"""

# =============================================================================== K. request semantics

# Q-OPENAI-MULTI-TOOL-USE-WRAPPER, reconstructed in the catalogue
# (craft-ai-agents/craft-agents-oss#449).
OPENAI_MULTI_TOOL_USE_WRAPPER = """\
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-5","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0123456789abQRSTUVWXYZab","type":"function","function":{"name":"multi_tool_use.parallel","arguments":""}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-5","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"tool_uses\\":[{\\"recipient_name\\":\\"functions.add\\",\\"parameters\\":{}}]}"}}]},"finish_reason":null}]}
{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-5","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
"""

# Q-PARALLEL-TOOL-CALLS-IGNORED (vllm-project/vllm#9451): two calls although the request said
# `parallel_tool_calls: false`; the wire is OpenAI's parallel shape (REFERENCE_PARALLEL_SSE).

# =============================================================================== J. round trip
# The follow-up request (the assistant message with the call and its tool result) and the
# provider's 400 answer; the rejection texts are verbatim from the catalogue's sources.

ROUNDTRIP_REQUEST = {
    "model": "m",
    "stream": True,
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_xZtWnTjjc0jhg",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_xZtWnTjjc0jhg", "content": "15°C"},
    ],
}
# Q-RT-MISTRAL-TOOL-CALL-ID, the catalogue's verbatim error.
RT_MISTRAL_TOOL_CALL_ID = (
    '{"object":"error","message":"Tool call id was abc123 but must be a-z, A-Z, 0-9, with a '
    'length of 9.","type":"invalid_request_error","param":null,"code":null}'
)
# Q-RT-CONTENT-NULL-REJECTED, LM Studio 0.3.x's message as the catalogue quotes it.
RT_CONTENT_NULL_REJECTED = (
    "{\"error\":\"Invalid 'content': 'content' field must be a string or an array of objects.\"}"
)
# Q-RT-CONTENT-EMPTY-REJECTED, the Bedrock-backed endpoints' message as the catalogue quotes it.
RT_CONTENT_EMPTY_REJECTED = (
    '{"error":{"message":"ValidationException: messages: text content blocks must be non-empty"}}'
)
# Q-RT-TOOL-MESSAGE-NAME, the Gemini-backed relays' message as the catalogue quotes it.
RT_TOOL_MESSAGE_NAME = (
    '{"error":{"message":"function_response.name: [REQUIRED_FIELD_MISSING]","code":400}}'
)
# Q-RT-FUNCTION-NAME-KEY-REQUIRED, DeepSeek's message as the catalogue quotes it.
RT_FUNCTION_NAME_KEY_REQUIRED = '{"error":{"message":"messages[1]: missing field name"}}'
# Q-RT-GEMINI-THOUGHT-SIGNATURE, verbatim (0xsline/OpenChatCut#6, trimmed).
RT_GEMINI_THOUGHT_SIGNATURE = (
    '{"error":{"message":"Function call is missing a thought_signature in functionCall parts."}}'
)
# Q-REASONING-MUST-BE-ECHOED, reconstructed: the catalogue gives no wording, only "HTTP 400
# unless reasoning_content is sent back" (DeepSeek thinking mode); this 400 names the field.
RT_REASONING_MUST_BE_ECHOED = (
    '{"error":{"message":"Missing `reasoning_content` field in the assistant message at '
    'message index 1.","type":"invalid_request_error"}}'
)


def found(r: Any) -> list[dict[str, Any]]:
    """A result's findings as the JSON the report writes."""
    return [f.to_json() for f in r.findings]


def F(
    rule: str,
    level: str,
    quirk: str | None,
    event: int | None,
    pointer: str | None,
    message: str,
    excerpt: str | None = None,
    count: int = 1,
) -> dict[str, Any]:
    """One finding as `found` gives it, written by hand (excerpt and count only when set)."""
    d: dict[str, Any] = {
        "rule": rule,
        "level": level,
        "quirk": quirk,
        "event": event,
        "pointer": pointer,
        "message": message,
    }
    if excerpt is not None:
        d["excerpt"] = excerpt
    if count > 1:
        d["count"] = count
    return d


# =============================================================================== helpers
WEATHER_REQUEST = {
    "body": {"stream": True, "tools": [{"type": "function", "function": {"name": "get_weather"}}]}
}


def analyze_sse(raw: bytes, request: dict[str, Any] | None = None) -> Any:
    """The analysis of a 200 event-stream body answering ``request`` (get_weather's)."""
    from conformance.analysis import analyze
    from conformance.readers import exchange_transcript

    return analyze(
        exchange_transcript(
            "<t>",
            "sse",
            request or WEATHER_REQUEST,
            200,
            {"content-type": "text/event-stream"},
            raw,
        )
    )


def traced(fn: Callable[[], Any]) -> tuple[Any, int]:
    """What ``fn()`` returns and the peak of memory traced while it ran."""
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ------------------------------------------------------------------ a cell's memory

# A pytest plugin for the suite's own process (``-p cellmem``, written by ``cell_peaks``):
# tracemalloc from the start of the cell (its setup, where a replay loads the cassette;
# the exchange under vcrpy and the analysis; its teardown, where pytest-recording writes
# the cassette) to its end, and the peak of each of those three phases above what was
# allocated when it began. The result, in bytes, goes to ``$CELLMEM_OUT`` as JSON: ``peak``
# (the whole cell, above what was allocated before it), ``setup``, ``call``, ``teardown``,
# and ``hwm``, the process' peak RSS (VmHWM; interpreter and pytest included).
CELL_PEAKS_PLUGIN = """
import json, os, tracemalloc, pytest

_peaks, _phases = [], {}

def _phase(name):
    _peaks.append(tracemalloc.get_traced_memory()[1])
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    yield
    peak = tracemalloc.get_traced_memory()[1]
    _phases[name] = peak - start
    _peaks.append(peak)

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _phase("setup")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _phase("call")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield from _phase("teardown")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    yield
    peak = max(_peaks + [tracemalloc.get_traced_memory()[1]]) - base
    tracemalloc.stop()
    with open("/proc/self/status") as f:  # the process' peak RSS (Linux), for benchmarks
        hwm = next((int(x.split()[1]) * 1024 for x in f if x.startswith("VmHWM:")), None)
    with open(os.environ["CELLMEM_OUT"], "w") as f:
        json.dump({"cell": item.nodeid, "peak": peak, **_phases, "hwm": hwm}, f)
"""


def cell_peaks(
    tmp: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[Any, dict[str, Any]]:
    """Run the real suite (``faults.run_suite``) on ``tmp``'s providers.yaml with
    ``args`` and ``CELL_PEAKS_PLUGIN``: its process and the peaks of its one cell."""
    from faults import run_suite

    (tmp / "cellmem.py").write_text(CELL_PEAKS_PLUGIN)
    out = tmp / "peak.json"
    out.unlink(missing_ok=True)
    proc = run_suite(
        tmp,
        *args,
        "-p",
        "cellmem",
        env={**(env or {}), "PYTHONPATH": str(tmp), "CELLMEM_OUT": str(out)},
    )
    assert out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, json.loads(out.read_text())


def long_names_body(name: int = 8 << 20, id_: int = 4 << 20) -> bytes:
    """A stream that ends normally, made mostly of one tool call's name (8 MiB) and id
    (4 MiB) in one event: what would make every copy of a field as costly as the body."""
    env = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m"}

    def ev(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + json.dumps({**env, "choices": [choice]}).encode() + b"\n\n"

    call = {"index": 0, "id": "c" * id_, "type": "function"}
    return (
        ev({"role": "assistant", "content": None})
        + ev({"tool_calls": [{**call, "function": {"name": "n" * name, "arguments": ""}}]})
        + ev({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "P"}'}}]})
        + ev({}, "tool_calls")
        + b"data: [DONE]\n\n"
    )


def cell_result(reports: Path) -> dict[str, Any]:
    """The one cell a suite run wrote under ``reports``."""
    (path,) = (reports / "results").glob("*.json")
    return json.loads(path.read_text())
