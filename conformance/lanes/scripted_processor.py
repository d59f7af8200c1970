"""A vLLM logits processor that makes the model emit a per-request script, token by token.

Loaded by the server (``--logits-processors conformance.lanes.scripted_processor:V1`` or
``:V2``, the repository root on ``PYTHONPATH``); imports nothing of the suite but this file,
so it runs in the vLLM virtualenv. Everything after sampling is the real server: detokenizer,
reasoning parser, tool parser, the OpenAI serving layer, SSE.

Per request, ``vllm_xargs`` (the request body field vLLM copies into
``SamplingParams.extra_args``) carries:

* ``script``: the text the model emits, special tokens spelled as text (``<tool_call>``);
* optionally ``script_after_tool`` and ``tool_marker``: when the rendered prompt contains
  ``tool_marker`` (the family's tool-result markup), ``script_after_tool`` is emitted instead
  (the round trip's second turn).

The script is tokenized with the served model's tokenizer; a script that does not decode back
to exactly its own text (a character the vocabulary lacks, a marker that is not one token)
is refused at admission with HTTP 400 and one line naming the text. After the script the
end-of-sequence token is forced, so the request ends with ``stop``; ``max_tokens`` cuts it
earlier exactly as it cuts a real model (``length``). A request without ``vllm_xargs.script``
is left alone (the random weights then speak).

Two interfaces, one behaviour: :class:`V1` for vLLM's V1 model runner (the one the CPU
backend uses when Triton has no CPU backend) and :class:`V2` for Model Runner V2.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Any

try:  # vLLM >= 0.32: both interfaces
    from vllm.v1.sample.logits_processor import BatchUpdate
    from vllm.v1.sample.logits_processor import LogitsProcessor as _V1Base
except ImportError:  # pragma: no cover - an older vLLM
    BatchUpdate = Any  # type: ignore[misc, assignment]
    _V1Base = object  # type: ignore[misc, assignment]
try:
    from vllm.v1.worker.gpu.sample.logits_processor.interface import (
        LogitsProcessor as _V2Base,
    )
except ImportError:  # pragma: no cover
    _V2Base = object  # type: ignore[misc, assignment]

log = logging.getLogger("conformance.scripted")
MODEL_ENV = "CONFORMANCE_SCRIPTED_MODEL"
"""The model folder whose tokenizer scripts are checked with (the lane sets it; the
processor falls back to the served model's tokenizer path)."""


class ScriptError(ValueError):
    """A script that cannot be emitted as written (HTTP 400 at admission)."""


@functools.lru_cache(maxsize=4)
def _tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def _model_path(vllm_config: Any = None) -> str:
    path = os.environ.get(MODEL_ENV)
    if not path and vllm_config is not None:
        mc = vllm_config.model_config
        path = getattr(mc, "tokenizer", None) or mc.model
    if not path:
        raise ScriptError(f"scripted processor: set {MODEL_ENV} to the served model folder")
    return str(path)


def _short(text: str, n: int = 60) -> str:
    return repr(text if len(text) <= n else text[:n] + "…")


@functools.lru_cache(maxsize=512)
def encode(path: str, text: str) -> tuple[int, ...]:
    """The token ids of *text*, refused unless they decode back to it exactly."""
    tok = _tokenizer(path)
    ids = tuple(tok.encode(text, add_special_tokens=False))
    back = tok.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)
    if back != text:
        at = next(
            (i for i, (a, b) in enumerate(zip(back, text, strict=False)) if a != b),
            min(len(back), len(text)),
        )
        raise ScriptError(
            f"vllm_xargs.script does not tokenize to what it says: at character {at} the "
            f"text {_short(text[at:], 30)} comes back as {_short(back[at:], 30)} (a character "
            "or marker missing from the model's vocabulary): fix the script or the tokenizer"
        )
    return ids


def _args(params: Any) -> dict[str, Any]:
    return dict(getattr(params, "extra_args", None) or {})


def check(params: Any, path: str) -> None:
    """Admission check: the scripts' types, and that each tokenizes to what it says."""
    xa = _args(params)
    if "script" not in xa:
        return
    for key in ("script", "script_after_tool", "tool_marker"):
        if key in xa and not isinstance(xa[key], str):
            raise ScriptError(f"vllm_xargs.{key} must be a string, got {type(xa[key]).__name__}")
    if ("script_after_tool" in xa) != ("tool_marker" in xa):
        raise ScriptError(
            "vllm_xargs.script_after_tool and vllm_xargs.tool_marker go "
            "together: give both or neither"
        )
    eos = _eos(path)
    for key in ("script", "script_after_tool"):
        if key not in xa:
            continue
        if not xa[key]:
            raise ScriptError(f"vllm_xargs.{key} is empty: give the text the model emits")
        if eos in encode(path, xa[key]):
            raise ScriptError(
                f"vllm_xargs.{key} contains the end-of-sequence token, which "
                "would end the output there: remove it (it is added at the end)"
            )


class Script:
    """One request's forced tokens: the script's ids, then end-of-sequence."""

    def __init__(self, params: Any, prompt_ids: Any, path: str, eos: int):
        self.off_script = False
        xa = _args(params)
        text = xa["script"]
        if "tool_marker" in xa and prompt_ids is not None:
            prompt = _tokenizer(path).decode(list(prompt_ids), skip_special_tokens=False)
            if xa["tool_marker"] in prompt:
                text = xa["script_after_tool"]
        self.ids = encode(path, text)
        self.eos = eos

    def next_token(self, produced: int) -> int:
        return self.ids[produced] if produced < len(self.ids) else self.eos

    def steer(self, row: Any, produced: int) -> None:
        """Force this step's token into *row* (a logits row), unless off the script."""
        if self.off_script:
            return
        token = self.next_token(produced)
        if not _force(row, token, self.eos):
            self.off_script = True
            log.warning(
                "scripted processor: the request's grammar forbids token %d at "
                "output position %d (the script disagrees with vLLM's constraint); "
                "ending there if allowed, else following the grammar",
                token,
                produced,
            )


def _eos(path: str) -> int:
    tok = _tokenizer(path)
    if tok.eos_token_id is None:
        raise ScriptError(f"scripted processor: the tokenizer at {path} has no eos token")
    return int(tok.eos_token_id)


def _force(row: Any, token: int, eos: int) -> bool:
    """Make *token* the only choice; False when the request's grammar forbids it.

    A structured output (vLLM's own tool grammar for ``tool_choice`` required or named,
    ``parallel_tool_calls: false``) may mask the scripted token: the script and vLLM's
    constraint disagree. The processor then does what a model under that grammar ends up
    doing: it stops (EOS) where the grammar allows stopping, else it takes the grammar's
    best allowed token, and the request leaves its script (the server log says so)."""
    if bool(row[token].isfinite()):
        row.fill_(float("-inf"))
        row[token] = 0.0
        return True
    if bool(row[eos].isfinite()):
        row.fill_(float("-inf"))
        row[eos] = 0.0
    return False


class V1(_V1Base):  # type: ignore[misc, valid-type]
    """The V1 model runner's interface: batch rows, ``update_state`` with added requests."""

    def __init__(self, vllm_config: Any, device: Any, is_pin_memory: bool):
        self.path = _model_path(vllm_config)
        self.eos = _eos(self.path)
        self.rows: dict[int, tuple[Script, list[int]]] = {}

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        check(sampling_params, _model_path())

    def is_argmax_invariant(self) -> bool:
        return False  # it changes the argmax: greedy requests must run it too

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is None:
            return
        for index in batch_update.removed:
            self.rows.pop(index, None)
        for index, params, prompt_ids, output_ids in batch_update.added:
            if params is not None and "script" in _args(params):
                self.rows[index] = (Script(params, prompt_ids, self.path, self.eos), output_ids)
            else:
                self.rows.pop(index, None)
        for a, b, direction in batch_update.moved:
            ra, rb = self.rows.pop(a, None), self.rows.pop(b, None)
            if ra is not None:
                self.rows[b] = ra
            if rb is not None and str(direction).endswith("SWAP"):
                self.rows[a] = rb

    def apply(self, logits: Any) -> Any:
        for index, (script, output_ids) in self.rows.items():
            if index < logits.shape[0]:
                script.steer(logits[index], len(output_ids))
        return logits


def _host(buf: Any) -> Any:
    """A model-runner buffer as read here: its host copy when it keeps one (UVA-backed),
    else its device tensor (staged-write buffers)."""
    return buf.np if hasattr(buf, "np") else buf.gpu


class V2(_V2Base):  # type: ignore[misc, valid-type]
    """Model Runner V2's interface: per-slot state, committed tokens read on the host."""

    def __init__(self, vllm_config: Any, req_states: Any):
        self.path = _model_path(vllm_config)
        self.eos = _eos(self.path)
        self.req_states = req_states
        self.slots: dict[int, tuple[Any, Script | None]] = {}

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        check(sampling_params, _model_path())

    def add_request(self, req_idx: int, sampling_params: Any) -> bool:
        if "script" not in _args(sampling_params):
            self.slots.pop(req_idx, None)
            return False
        self.slots[req_idx] = (sampling_params, None)  # the prompt is read at first apply
        return True

    def _lengths(self, slot: int) -> tuple[int, int]:
        return int(_host(self.req_states.prompt_len)[slot]), int(
            _host(self.req_states.total_len)[slot]
        )

    def apply(self, logits: Any, ctx: Any) -> Any:
        rows = ctx.expanded_idx_mapping.tolist()
        local = ctx.expanded_local_pos.tolist()
        for row, slot in enumerate(rows):
            entry = self.slots.get(slot)
            if entry is None:
                continue
            params, script = entry
            prompt_len, total = self._lengths(slot)
            if script is None:
                prompt = _host(self.req_states.all_token_ids)[slot, :prompt_len].tolist()
                script = Script(params, prompt, self.path, self.eos)
                self.slots[slot] = (params, script)
            script.steer(logits[row], total - prompt_len + local[row])
        return logits


__all__ = ["V1", "V2", "Script", "ScriptError", "check", "encode"]
