"""Build a tiny random-weight model folder for a scripted vLLM server (run in the vLLM venv).

``python scripted_model.py SPEC.json OUT_DIR``: SPEC holds ``tokens`` (the family's markup,
added as single tokens), ``bos``, ``eos`` and ``chat_template`` (text). The folder gets:

* ``tokenizer.json`` / ``tokenizer_config.json``: a byte-level BPE trained by ``tokenizers``
  on a fixed corpus (below, never the scripts, so a changed script changes no token of
  another), plus the family's markup tokens. Every byte is in the alphabet, so any UTF-8
  text tokenizes; markup tokens are not "special" (vLLM's detokenizer keeps them, as a
  family's own tokenizer keeps e.g. ``<tool_call>``), except BOS and EOS.
* ``config.json``: a 1-layer Llama of hidden size 128, its vocabulary the tokenizer's.
  vLLM serves it with ``--load-format dummy``: no weights are read or stored.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CORPUS = [
    "The weather in Paris is mild today, and the time in Tokyo is late in the evening.",
    "Answer the question, calling the tools when they help. What is the time there?",
    "Save a note with a title and a body. The body lists items, lines and words.",
    '{"name": "value", "arguments": {"key": "text", "number": 12, "flag": true}}',
    '[{"name": "f", "parameters": {"a": "b"}}, {"name": "g", "parameters": {}}]',
    "city timezone title body unit celsius fahrenheit server alive ping note poem sea",
    "I will check the weather first, then the time. Let me think about which tool fits.",
    "Hello! I am fine, thank you. How can I help you with the weather or the time?",
    "Groceries: apples, bread, milk, eggs, cheese, rice, beans, onions, garlic, tea.",
    "Packing: shirts, socks, shoes, charger, passport, tickets, toothbrush, jacket.",
    "Rivers run from the mountains to the sea; the sea is wide and the waves are grey.",
    "function call result response tool get set write read check current local zone",
]
VOCAB = 700


def build_tokenizer(spec: dict, out: Path) -> int:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(CORPUS * 4, trainer)
    specials = [spec["bos"], spec["eos"]]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    markup = [t for t in spec["tokens"] if t not in specials]
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in markup])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=spec["bos"], eos_token=spec["eos"], model_max_length=8192
    )
    fast.chat_template = spec["chat_template"]
    fast.save_pretrained(str(out))
    return len(fast)


def build_config(spec: dict, out: Path, vocab: int) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(out))
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 64,
        "vocab_size": vocab,
        "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
        "bos_token_id": tok.bos_token_id,
        "eos_token_id": tok.eos_token_id,
    }
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id}) + "\n"
    )


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[0]).read_text("utf-8"))
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    vocab = build_tokenizer(spec, out)
    build_config(spec, out, vocab)
    print(f"scripted model: {out} (vocabulary {vocab})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
