"""Regenerate conformance/data/quirks.json from the team's quirks catalogue.

Usage: python tools/gen_quirks.py ../shared/reference/quirks-catalogue.md
The catalogue is the contract for quirk ids; this keeps id, title, group, the
"What breaks" line, the workaround and the sources as data the report can link to.
"""

import json
import re
import sys
from pathlib import Path

GROUPS = {
    "A": "SSE framing and transport", "B": "Chunk envelope and choices", "C": "index",
    "D": "id", "E": "type and function.name", "F": "function.arguments", "G": "finish_reason",
    "H": "Tool calls outside delta.tool_calls", "I": "Reasoning interleaving",
    "J": "Request-side round-trip constraints", "K": "Request-parameter semantics",
}
SEED_QUIRKS = {
    "Q-EMPTY-STRING-OVERWRITE": ("id/name `\"\"` on continuation deltas (DashScope compatible-mode)", "D"),
    "Q-ARGS-TRUNCATED": ("arguments not valid JSON at the end of the call (Qwen/DashScope)", "F"),
    "Q-INDEX-ALL-ZERO": ("several parallel calls share index 0 (Ollama)", "C"),
    "Q-INDEX-ABSENT": ("no `index` on tool-call deltas (Ollama before v0.4.7)", "C"),
    "Q-ID-ABSENT": ("no or empty `id` for a call", "D"),
}


def field(body: str, name: str) -> str:
    m = re.search(rf"^- \*\*{name}:?\*\*:?\s*(.*?)(?=^- \*\*|\Z)", body, re.S | re.M)
    return " ".join(m.group(1).split()) if m else ""


def main(path: str) -> None:
    text = Path(path).read_text()
    out = {}
    group = None
    for block in re.split(r"^(?=## |### )", text, flags=re.M):
        head = block.splitlines()[0] if block else ""
        gm = re.match(r"## ([A-K])\. ", head)
        if gm:
            group = gm.group(1)
            continue
        qm = re.match(r"### (Q-[A-Z0-9-]+) — (.*)", head)
        if not qm or group is None:
            continue
        qid, title = qm.group(1), qm.group(2)
        reference = "**[OpenAI]**" in title
        title = title.replace("**[OpenAI]**", "").strip()
        sources = field(block, "Sources")
        out[qid] = {
            "id": qid, "title": title, "group": group, "group_title": GROUPS[group],
            "reference_behaviour": reference,
            "providers": field(block, "Providers")[:400],
            "breaks": field(block, "What breaks(?: \\(N1\\))?")[:400],
            "workaround": field(block, "Workaround")[:400],
            "sources": sources[:600],
            "anchor": "#" + re.sub(r"[^a-z0-9 -]", "", (qid + " — " + title).lower()).replace(" ", "-"),
            "seed": False,
        }
    for qid, (title, group) in SEED_QUIRKS.items():
        out[qid] = {"id": qid, "title": title, "group": group, "group_title": GROUPS[group],
                    "reference_behaviour": False, "providers": "", "breaks": "",
                    "workaround": "", "sources": "seeds 000 §4-§5, 004; catalogue §L",
                    "anchor": "#l-the-five-quirks-already-in-the-matrix-additional-sources-and-variants-found",
                    "seed": True}
    dest = Path(__file__).resolve().parent.parent / "conformance" / "data" / "quirks.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(out)} quirks -> {dest}")


if __name__ == "__main__":
    main(sys.argv[1])
