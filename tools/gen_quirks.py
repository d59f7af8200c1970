"""Regenerate conformance/data/quirks.json from the quirks catalogue.

Usage: python tools/gen_quirks.py ../shared/reference/quirks-catalogue.md
The catalogue is the contract for quirk ids; this keeps id, title, group, the
"What breaks" line, the workaround and the sources as data the report can link to.
"""

import json
import re
import sys
from pathlib import Path

GROUPS = {
    "A": "SSE framing and transport",
    "B": "Chunk envelope and choices",
    "C": "index",
    "D": "id",
    "E": "type and function.name",
    "F": "function.arguments",
    "G": "finish_reason",
    "H": "Tool calls outside delta.tool_calls",
    "I": "Reasoning interleaving",
    "J": "Request-side round-trip constraints",
    "K": "Request-parameter semantics",
}
SEED_QUIRKS = {  # id: (title, group, what breaks, workaround, item of the catalogue's section L)
    "Q-EMPTY-STRING-OVERWRITE": (
        'id/name `""` on continuation deltas (DashScope compatible-mode)',
        "D",
        "a client that copies `id` and `name` whenever the key is present overwrites the "
        'opening delta\'s values with `""`: the call loses its name, and the tool result '
        "carries an empty `tool_call_id`.",
        "take `id`, `type` and `name` only from non-empty strings; keep the first non-empty "
        "value of a call.",
        1,
    ),
    "Q-ARGS-TRUNCATED": (
        "arguments not valid JSON at the end of the call (Qwen/DashScope)",
        "F",
        "`json.loads` of the concatenated arguments raises, or a lenient parser silently "
        "runs the tool with `{}` or partial values.",
        "check the arguments parse as JSON before running the tool; with `finish_reason: "
        '"length"` ask again with a larger `max_tokens`; never substitute `{}`.',
        2,
    ),
    "Q-INDEX-ALL-ZERO": (
        "several parallel calls share index 0 (Ollama)",
        "C",
        "keyed by `index`, the second call's id, name and arguments are merged into the "
        "first: one call with concatenated, invalid arguments instead of two.",
        "a delta with a new non-empty `id` on an occupied index starts a new call.",
        3,
    ),
    "Q-INDEX-ABSENT": (
        "no `index` on tool-call deltas (Ollama before v0.4.7)",
        "C",
        '`delta.tool_calls[i]["index"]` raises `KeyError`, or every call lands in one slot.',
        "without `index`, key calls by their id, and by position within the delta for whole calls.",
        3,
    ),
    "Q-ID-ABSENT": (
        "no or empty `id` for a call",
        "D",
        "the tool result cannot name the call it answers: providers reject the round trip, "
        "or a client invents an id the provider never sent.",
        'keep the id exactly as sent (also `""`); on the round trip follow the provider\'s '
        "documented policy instead of inventing ids.",
        4,
    ),
}


def field(body: str, name: str) -> str:
    m = re.search(rf"^- \*\*{name}:?\*\*:?\s*(.*?)(?=^- \*\*|\Z)", body, re.S | re.M)
    return " ".join(m.group(1).split()) if m else ""


def section_l(text: str) -> dict[int, str]:
    """The numbered items of the catalogue's section L (more sources for the five seeds)."""
    m = re.search(r"^## L\. .*?$(.*?)(?=^## )", text, re.S | re.M)
    items = re.split(r"^(\d+)\. ", m.group(1), flags=re.M) if m else []
    return {
        int(n): " ".join(body.split()) for n, body in zip(items[1::2], items[2::2], strict=True)
    }


def main(path: str) -> None:
    text = Path(path).read_text()
    more = section_l(text)
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
            "id": qid,
            "title": title,
            "group": group,
            "group_title": GROUPS[group],
            "reference_behaviour": reference,
            "providers": field(block, "Providers"),
            "breaks": field(block, "What breaks(?: \\(N1\\))?"),
            "workaround": field(block, "Workaround"),
            "sources": sources,
            "anchor": "#"
            + re.sub(r"[^a-z0-9 -]", "", (qid + " — " + title).lower()).replace(" ", "-"),
            "seed": False,
        }
    for qid, (title, group, breaks, workaround, item) in SEED_QUIRKS.items():
        out[qid] = {
            "id": qid,
            "title": title,
            "group": group,
            "group_title": GROUPS[group],
            "reference_behaviour": False,
            "providers": "",
            "breaks": breaks,
            "workaround": workaround,
            "sources": more.get(item, ""),
            "anchor": "#l-the-five-quirks-already-in-the-matrix-additional-sources-and-variants-found",
            "seed": True,
        }
    dest = Path(__file__).resolve().parent.parent / "conformance" / "data" / "quirks.json"
    dest.parent.mkdir(exist_ok=True)
    # ids added by the suite itself (not in the catalogue) are kept as they are
    old = json.loads(dest.read_text()) if dest.exists() else {}
    out.update({q: e for q, e in old.items() if q not in out})
    dest.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(out)} quirks -> {dest}")


if __name__ == "__main__":
    main(sys.argv[1])
