"""Convert a llama.cpp GGUF checkpoint into a Hugging Face safetensors folder vLLM can load.

This script runs inside the vLLM virtualenv (it needs ``torch``, ``transformers``, ``gguf``
and ``accelerate``), never in the project venv::

    ~/.cache/conformance/vllm-venv/bin/python conformance/lanes/convert_gguf.py \\
        MODEL.gguf OUT_DIR [--dtype bfloat16]

Why the detour (found probing vLLM on CPU):

* transformers 5.x keeps GGUF weights packed, and ``save_pretrained`` then refuses with
  "The model is quantized with QuantizationMethod.GGUF and is not serializable".  Loading with
  ``GgufConfig(dequantize=True)`` gives real tensors; they are then copied into a fresh model
  built from a config *without* ``quantization_config`` and that clean model is saved.
* The output is written to a sibling temporary folder and renamed into place at the end, so
  an interrupted run never leaves a half-written model that a later run would trust.

Exit status: 0 on success, 1 with a one-line message on stderr otherwise.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path


def convert(gguf: Path, out: Path, dtype_name: str = "bfloat16") -> Path:
    """Dequantise *gguf* and save it as a safetensors model folder at *out*; return *out*."""
    # These live in the vLLM venv, not in the project venv that type-checks this file.
    import torch  # type: ignore[import-not-found, unused-ignore]
    from transformers import (  # type: ignore[import-not-found, unused-ignore]
        AutoModelForCausalLM,
        AutoTokenizer,
    )
    from transformers.utils.quantization_config import (  # type: ignore[import-not-found, unused-ignore]
        GgufConfig,
    )

    dtype = getattr(torch, dtype_name)
    src_dir, fname = str(gguf.parent), gguf.name
    tok = AutoTokenizer.from_pretrained(src_dir, gguf_file=fname)
    model = AutoModelForCausalLM.from_pretrained(
        src_dir,
        gguf_file=fname,
        dtype=torch.float32,
        quantization_config=GgufConfig(gguf_file=fname, dequantize=True),
    )
    state = {k: v.detach().to(dtype).contiguous() for k, v in model.state_dict().items()}
    cfg = model.config
    if hasattr(cfg, "quantization_config"):
        delattr(cfg, "quantization_config")
    cfg.architectures = [type(model).__name__]
    cfg.dtype = dtype
    clean = type(model)(cfg).to(dtype)
    missing, unexpected = clean.load_state_dict(state, strict=False)
    # Tied embeddings legitimately report lm_head as missing; anything else is a broken load.
    missing = [k for k in missing if not (cfg.tie_word_embeddings and k == "lm_head.weight")]
    if missing or unexpected:
        raise RuntimeError(f"state dict mismatch: missing={missing} unexpected={unexpected}")

    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    clean.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gguf", type=Path, help="path to the .gguf file")
    parser.add_argument("out", type=Path, help="output folder (replaced if it exists)")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    args = parser.parse_args(argv)
    if not args.gguf.is_file():
        print(f"convert_gguf: no such GGUF file: {args.gguf}", file=sys.stderr)
        return 1
    t0 = time.monotonic()
    try:
        out = convert(args.gguf.resolve(), args.out.resolve(), args.dtype)
    except Exception as exc:  # one line for the caller; the traceback helps nobody here
        print(f"convert_gguf: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
        return 1
    print(f"convert_gguf: wrote {out} in {time.monotonic() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
