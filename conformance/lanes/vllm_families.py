"""The model families behind vLLM's tool parsers, as the scripted lane serves them.

A :class:`Family` says what a server of one ``--tool-call-parser`` needs: the markup tokens
its parser looks up (added to the tiny model's vocabulary as single tokens), BOS/EOS, the
reasoning parser the family is served with, and the chat template: the family's turn markup,
tools listed as JSON in the system turn, earlier tool calls and tool results rendered in the
family's own format (``tool_marker`` is the text a rendered tool result starts with: the
scripted processor switches to the round trip's second script when the prompt holds it).

The templates are the lane's own, written from each family's documented turn format (no
model hub is reachable here); the model's weights are random and its output scripted, so the
template only has to render every scenario's messages the way the family does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_SKELETON = (
    "{{- BOS -}}"
    "{%- if tools -%}SYS_OPEN{% if messages[0].role == 'system' %}{{ messages[0].content }}\n\n"
    "{% endif %}You can call these tools (JSON schemas, one per line):\n"
    "{% for t in tools %}{{ t | tojson }}\n{% endfor %}SYS_CLOSE{%- endif -%}"
    "{%- for m in messages -%}"
    "{%- if m.role == 'system' -%}{% if not tools %}SYS_OPEN{{ m.content }}SYS_CLOSE{% endif %}"
    "{%- elif m.role == 'user' -%}USER_OPEN{{ m.content }}USER_CLOSE"
    "{%- elif m.role == 'assistant' -%}ASSIST_OPEN{{ m.content or '' }}"
    "{%- if m.tool_calls -%}CALLS_OPEN{%- for tc in m.tool_calls -%}"
    "{%- set a = tc.function.arguments -%}"
    "{%- set args = a if a is string else a | tojson -%}"
    "{%- set kv = {} if a is string else a -%}"
    "{%- if not loop.first %}CALL_SEP{% endif -%}CALL{%- endfor -%}CALLS_CLOSE{%- endif -%}"
    "ASSIST_CLOSE"
    "{%- elif m.role == 'tool' -%}TOOL_RESULT"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}ASSIST_OPEN{%- endif -%}"
)


@dataclass(frozen=True)
class Family:
    name: str
    parser: str  # --tool-call-parser
    tokens: tuple[str, ...]
    bos: str
    eos: str
    parts: dict[str, str]
    tool_marker: str
    reasoning_parser: str | None = None
    # What vLLM's grammar for `required` / named tool_choice makes the model write: the
    # family's own markup (a structural tag, vLLM 0.32's default), or "json_array" (a bare
    # JSON array of {"name", "arguments"}: the Mistral parser's grammar for a tokenizer that
    # is not mistral_common's), or "json_schema" (vLLM's generic tool schema: an array of
    # {"name", "parameters"} for required, the arguments object for named; pythonic).
    constrained_format: str = "native"
    # Whether the family's model writes text before its calls in one message (the Llama 3
    # JSON and pythonic formats are the whole message: their parsers read a call only there).
    text_before_calls: bool = True
    label: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def column(self) -> str:
        return f"vllm[{self.parser}]"

    def chat_template(self) -> str:
        text = _SKELETON.replace("{{- BOS -}}", self.bos)
        for key in (
            "SYS_OPEN",
            "SYS_CLOSE",
            "USER_OPEN",
            "USER_CLOSE",
            "ASSIST_OPEN",
            "ASSIST_CLOSE",
            "CALLS_OPEN",
            "CALLS_CLOSE",
            "CALL_SEP",
            "TOOL_RESULT",
        ):
            text = text.replace(key, self.parts.get(key, ""))
        return text.replace("CALL", self.parts["CALL"])

    def model_spec(self) -> dict[str, object]:
        return {
            "tokens": list(self.tokens),
            "bos": self.bos,
            "eos": self.eos,
            "chat_template": self.chat_template(),
        }


_CHATML = {
    "SYS_OPEN": "<|im_start|>system\n",
    "SYS_CLOSE": "<|im_end|>\n",
    "USER_OPEN": "<|im_start|>user\n",
    "USER_CLOSE": "<|im_end|>\n",
    "ASSIST_OPEN": "<|im_start|>assistant\n",
    "ASSIST_CLOSE": "<|im_end|>\n",
    "TOOL_RESULT": "<|im_start|>user\n<tool_response>\n{{ m.content }}\n</tool_response>"
    "<|im_end|>\n",
}
_CHATML_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
_LLAMA3 = {
    "SYS_OPEN": "<|start_header_id|>system<|end_header_id|>\n\n",
    "SYS_CLOSE": "<|eot_id|>",
    "USER_OPEN": "<|start_header_id|>user<|end_header_id|>\n\n",
    "USER_CLOSE": "<|eot_id|>",
    "ASSIST_OPEN": "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "ASSIST_CLOSE": "<|eot_id|>",
    "TOOL_RESULT": "<|start_header_id|>ipython<|end_header_id|>\n\n{{ m.content }}<|eot_id|>",
}
_LLAMA3_TOKENS = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|python_tag|>",
)
_KV = "{% for k, v in kv.items() %}"

FAMILIES: dict[str, Family] = {
    f.parser: f
    for f in [
        Family(
            "Hermes 2 Pro / Qwen2.5 (ChatML)",
            "hermes",
            _CHATML_TOKENS,
            "<|endoftext|>",
            "<|im_end|>",
            dict(
                _CHATML,
                CALL='<tool_call>\n{"name": "{{ tc.function.name }}", '
                '"arguments": {{ args }}}\n</tool_call>',
                CALL_SEP="\n",
            ),
            "<tool_response>",
        ),
        Family(
            "Mistral (v11 tokenizer: [TOOL_CALLS]name[ARGS]{…})",
            "mistral",
            (
                "<s>",
                "</s>",
                "[INST]",
                "[/INST]",
                "[TOOL_CALLS]",
                "[ARGS]",
                "[AVAILABLE_TOOLS]",
                "[/AVAILABLE_TOOLS]",
                "[TOOL_RESULTS]",
                "[/TOOL_RESULTS]",
                "[SYSTEM_PROMPT]",
                "[/SYSTEM_PROMPT]",
                "[THINK]",
                "[/THINK]",
            ),
            "<s>",
            "</s>",
            {
                "SYS_OPEN": "[SYSTEM_PROMPT]",
                "SYS_CLOSE": "[/SYSTEM_PROMPT]",
                "USER_OPEN": "[INST]",
                "USER_CLOSE": "[/INST]",
                "ASSIST_CLOSE": "</s>",
                "CALL": "[TOOL_CALLS]{{ tc.function.name }}[ARGS]{{ args }}",
                "TOOL_RESULT": "[TOOL_RESULTS]{{ m.content }}[/TOOL_RESULTS]",
            },
            "[TOOL_RESULTS]",
            constrained_format="json_array",
        ),
        Family(
            "Llama 3.1 / 3.2 (JSON tool calls)",
            "llama3_json",
            _LLAMA3_TOKENS,
            "<|begin_of_text|>",
            "<|eot_id|>",
            dict(
                _LLAMA3,
                CALL='{"name": "{{ tc.function.name }}", "parameters": {{ args }}}',
                CALL_SEP="; ",
            ),
            "<|start_header_id|>ipython",
            text_before_calls=False,
        ),
        Family(
            "Llama 3.2 / pythonic tool calls",
            "pythonic",
            _LLAMA3_TOKENS,
            "<|begin_of_text|>",
            "<|eot_id|>",
            dict(
                _LLAMA3,
                CALLS_OPEN="[",
                CALLS_CLOSE="]",
                CALL_SEP=", ",
                CALL="{{ tc.function.name }}(" + _KV + "{% if not loop.first %}"
                ", {% endif %}{{ k }}={{ v | tojson }}{%- endfor -%})",
            ),
            "<|start_header_id|>ipython",
            text_before_calls=False,
            constrained_format="json_schema",
        ),
        Family(
            "Qwen3-Coder (XML parameters)",
            "qwen3_coder",
            _CHATML_TOKENS,
            "<|endoftext|>",
            "<|im_end|>",
            dict(
                _CHATML,
                CALL="<tool_call>\n<function={{ tc.function.name }}>\n"
                + _KV
                + "<parameter={{ k }}>\n{{ v }}\n</parameter>\n"
                "{%- endfor %}\n</function>\n</tool_call>",
                CALL_SEP="\n",
            ),
            "<tool_response>",
        ),
        Family(
            "Kimi K2",
            "kimi_k2",
            (
                "[BOS]",
                "[EOS]",
                "<|im_user|>",
                "<|im_assistant|>",
                "<|im_system|>",
                "<|im_middle|>",
                "<|im_end|>",
                "<|tool_calls_section_begin|>",
                "<|tool_calls_section_end|>",
                "<|tool_call_begin|>",
                "<|tool_call_argument_begin|>",
                "<|tool_call_end|>",
                "<think>",
                "</think>",
            ),
            "[BOS]",
            "<|im_end|>",
            {
                "SYS_OPEN": "<|im_system|>system<|im_middle|>",
                "SYS_CLOSE": "<|im_end|>",
                "USER_OPEN": "<|im_user|>user<|im_middle|>",
                "USER_CLOSE": "<|im_end|>",
                "ASSIST_OPEN": "<|im_assistant|>assistant<|im_middle|>",
                "ASSIST_CLOSE": "<|im_end|>",
                "CALLS_OPEN": "<|tool_calls_section_begin|>",
                "CALLS_CLOSE": "<|tool_calls_section_end|>",
                "CALL": "<|tool_call_begin|>functions.{{ tc.function.name }}:{{ loop.index0 }}"
                "<|tool_call_argument_begin|>{{ args }}<|tool_call_end|>",
                "TOOL_RESULT": "<|im_system|>tool<|im_middle|>## Return of {{ m.tool_call_id }}\n"
                "{{ m.content }}<|im_end|>",
            },
            "<|im_system|>tool",
            reasoning_parser="kimi_k2",
        ),
        Family(
            "DeepSeek V3 / R1",
            "deepseek_v3",
            (
                "<｜begin▁of▁sentence｜>",
                "<｜end▁of▁sentence｜>",
                "<｜User｜>",
                "<｜Assistant｜>",
                "<｜tool▁calls▁begin｜>",
                "<｜tool▁calls▁end｜>",
                "<｜tool▁call▁begin｜>",
                "<｜tool▁call▁end｜>",
                "<｜tool▁sep｜>",
                "<｜tool▁outputs▁begin｜>",
                "<｜tool▁outputs▁end｜>",
                "<｜tool▁output▁begin｜>",
                "<｜tool▁output▁end｜>",
                "<think>",
                "</think>",
            ),
            "<｜begin▁of▁sentence｜>",
            "<｜end▁of▁sentence｜>",
            {
                "SYS_CLOSE": "\n\n",
                "USER_OPEN": "<｜User｜>",
                "ASSIST_OPEN": "<｜Assistant｜>",
                "ASSIST_CLOSE": "<｜end▁of▁sentence｜>",
                "CALLS_OPEN": "<｜tool▁calls▁begin｜>",
                "CALLS_CLOSE": "<｜tool▁calls▁end｜>",
                "CALL": "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{{ tc.function.name }}\n"
                "```json\n{{ args }}\n```<｜tool▁call▁end｜>",
                "TOOL_RESULT": "<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>{{ m.content }}"
                "<｜tool▁output▁end｜><｜tool▁outputs▁end｜>",
            },
            "<｜tool▁output▁begin｜>",
            reasoning_parser="deepseek_r1",
        ),
        # vLLM 0.32 serves glm45 with GLM-4.7's parser and, with strict tool calling on by
        # default, constrains calls to 4.7's compact form (no newline after the name or between
        # tags): a 4.5 model's newlines are masked, so the script is written in the compact form.
        Family(
            "GLM-4.5 … 4.7 (arg_key / arg_value, compact)",
            "glm45",
            (
                "[gMASK]",
                "<sop>",
                "<|endoftext|>",
                "<|system|>",
                "<|user|>",
                "<|assistant|>",
                "<|observation|>",
                "<tool_call>",
                "</tool_call>",
                "<arg_key>",
                "</arg_key>",
                "<arg_value>",
                "</arg_value>",
                "<tool_response>",
                "</tool_response>",
                "<think>",
                "</think>",
            ),
            "[gMASK]",
            "<|endoftext|>",
            {
                "SYS_OPEN": "<|system|>\n",
                "USER_OPEN": "<|user|>\n",
                "ASSIST_OPEN": "<|assistant|>",
                "CALL": "<tool_call>{{ tc.function.name }}"
                + _KV
                + "<arg_key>{{ k }}</arg_key><arg_value>{{ v }}</arg_value>"
                "{%- endfor %}</tool_call>",
                "TOOL_RESULT": "<|observation|>\n<tool_response>\n{{ m.content }}\n"
                "</tool_response>",
            },
            "<|observation|>",
            reasoning_parser="glm45",
        ),
    ]
}


__all__ = ["FAMILIES", "Family"]
