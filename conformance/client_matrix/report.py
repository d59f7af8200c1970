"""Writing the client matrix: JSON (validated against its schema), Markdown and HTML.

Views: clients × seed quirks (the README's table), clients × quirks (from the profiles),
providers × clients (from the recordings), captures × clients (field evidence) when present.
Every cell links to its evidence in the HTML: the outcome, what the client assembled, the
robust reading of the same bytes, the quirks those bytes showed and the bytes themselves.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema

from conformance.client_matrix.judge import MEANING, OUTCOMES
from conformance.client_matrix.streams import SEED_QUIRKS

SYMBOL = {
    "ok": "✓",
    "n/a": "n/a",
    "id invented": "⚠ id invented",
    "silent partial": "✗ partial",
    "invalid passed": "✗ invalid passed",
    "merged": "✗ merged",
    "dropped": "✗ dropped",
    "args lost": "✗ args lost",
    "wrong": "✗",
    "crashed": "‼",
    "hung": "∞",
    "error": "!",
}
LEGEND = (
    "✓ ok: "
    + MEANING["ok"]
    + " · ✗ partial (silent partial): "
    + MEANING["silent partial"]
    + " · ✗ invalid passed: "
    + MEANING["invalid passed"]
    + " · ✗ merged: "
    + MEANING["merged"]
    + " · ✗ dropped: "
    + MEANING["dropped"]
    + " · ✗ args lost: "
    + MEANING["args lost"]
    + " · ✗ (name, id, args…): "
    + MEANING["wrong"]
    + " · ⚠ id invented: the calls are right but carry "
    + MEANING["id invented"]
    + " · ‼ crashed: "
    + MEANING["crashed"]
    + " · ∞ hung · ! error: "
    + MEANING["error"]
    + " · n/a: "
    + MEANING["n/a"]
    + " · ° the bytes this client received did not show "
    "the profile's quirk (its request did not elicit it)"
)
SHORT = {
    "id lost": "id lost",
    "id changed": "id changed",
    "name overwritten": "name",
    "name concatenated": "name+",
    "arguments concatenated": "args+",
    "arguments changed": "args",
    "extra call": "extra",
}


def schema() -> dict[str, Any]:
    text = files("conformance").joinpath("schemas/client-matrix.schema.json").read_text()
    return json.loads(text)


def validate(matrix: dict[str, Any]) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``matrix`` is valid and complete."""
    jsonschema.validate(matrix, schema())
    pairs = {(c["client"], c["stream"]) for c in matrix["cells"]}
    for client in matrix["clients"]:
        for stream in matrix["streams"]:
            if (client["id"], stream["id"]) not in pairs:
                raise jsonschema.ValidationError(
                    f"no cell for client {client['id']} on stream {stream['id']}"
                )


def anchor(cell: dict[str, Any]) -> str:
    return "e-" + re.sub(r"[^A-Za-z0-9_-]+", "-", f"{cell['client']}--{cell['stream']}")


def mark(cell: dict[str, Any]) -> str:
    text = SYMBOL[cell["outcome"]]
    if cell["outcome"] == "wrong":
        text += " " + ", ".join(SHORT[p] for p in cell.get("problems", []) if p in SHORT)
    elif cell["outcome"] == "crashed":
        text += " " + cell["detail"].split(":")[0]
    if cell.get("elicited") is False:
        text += " °"
    return text


def css(cell: dict[str, Any]) -> str:
    return re.sub(r"[^a-z]+", "-", cell["outcome"])


def _index(matrix: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["client"], c["stream"]): c for c in matrix["cells"]}


def _md_cell(cell: dict[str, Any], link: str) -> str:
    return f"[{mark(cell)}]({link}#{anchor(cell)})".replace("|", "\\|")


README_LEGEND = (
    "✓ ok: the right calls, or the problem made visible (flagged, raised, "
    "refused) where the bytes hold no right call · ✗ partial: repaired or partial "
    "arguments with no flag · ✗ invalid passed: arguments that are not JSON, no "
    "flag · ✗ merged / dropped / args lost · ✗ name, id, args: other wrong calls "
    "· ⚠ id invented: an id the wire never carried (the id contract broken; shown "
    "apart) · ‼ crashed on sound calls · ∞ hung · ! could not run · n/a: no client "
    "can assemble the right calls and nothing shows it (counted apart) · ° the "
    "client's request did not elicit the quirk. Columns "
    "marked *seed* are the suite's source algorithms, written here from their "
    "descriptions."
)


def seed_table(matrix: dict[str, Any], link: str = "reports/client-matrix.html") -> str:
    """Clients × the five seed quirks (their reference profiles), for the Markdown report."""
    cells = _index(matrix)
    profiles = {s["profile"]: s["id"] for s in matrix["streams"] if s["kind"] == "profile"}
    cols = [(q, profiles.get(q[2:].lower())) for q in SEED_QUIRKS]
    lines = [
        "| client | version | " + " | ".join(f"`{q}`" for q, _ in cols) + " |",
        "|---|---|" + "---|" * len(cols),
    ]
    for c in matrix["clients"]:
        row = [
            _md_cell(cells[(c["id"], sid)], link) if sid and (c["id"], sid) in cells else "–"
            for _, sid in cols
        ]
        seed = " *seed*" if c.get("origin") else ""
        lines.append(
            f"| {c['id']} ({c['ecosystem']}){seed} | {c['package']} {c['version']} | "
            + " | ".join(row)
            + " |"
        )
    return "\n".join(lines)


def readme_table(matrix: dict[str, Any], link: str = "reports/client-matrix.html") -> str:
    """The README's block: the five seed quirks × every client (one row per quirk, so that
    23 clients fit a front page), then the legend."""
    cells = _index(matrix)
    profiles = {s["profile"]: s["id"] for s in matrix["streams"] if s["kind"] == "profile"}
    ids = [c["id"] for c in matrix["clients"]]
    names = [f"{c['id']}{' *seed*' if c.get('origin') else ''}" for c in matrix["clients"]]
    lines = ["| quirk | " + " | ".join(names) + " |", "|---|" + "---|" * len(ids)]
    for q in SEED_QUIRKS:
        sid = profiles.get(q[2:].lower())
        row = [
            _md_cell(cells[(cid, sid)], link) if sid and (cid, sid) in cells else "–" for cid in ids
        ]
        lines.append(f"| `{q}` | " + " | ".join(row) + " |")
    versions = ", ".join(
        f"{c['id']} {c['package']} {c['version']}"
        for c in matrix["clients"]
        if c["id"] != "conformance"
    )
    return "\n".join(lines + ["", README_LEGEND + " Versions: " + versions + "."])


def _summary(matrix: dict[str, Any]) -> list[str]:
    kinds = [
        k
        for k in ("profile", "provider", "scripted", "capture")
        if any(s["kind"] == k for s in matrix["streams"])
    ]
    kind_of = {s["id"]: s["kind"] for s in matrix["streams"]}
    shown = [o for o in reversed(OUTCOMES) if o != "n/a"]
    lines = [
        "| client | streams | " + " | ".join(shown) + " | n/a (apart) |",
        "|---|---|" + "---|" * (len(shown) + 1),
    ]
    for c in matrix["clients"]:
        for k in kinds:
            mine = [
                x for x in matrix["cells"] if x["client"] == c["id"] and kind_of[x["stream"]] == k
            ]
            counts = [sum(x["outcome"] == o for x in mine) for o in [*shown, "n/a"]]
            lines.append(
                f"| {c['id']} | {len(mine)} {k} | "
                + " | ".join(str(n) if n else "·" for n in counts)
                + " |"
            )
    return lines


def _grid(
    matrix: dict[str, Any], streams: list[dict[str, Any]], label: Any, link: str
) -> list[str]:
    cells = _index(matrix)
    ids = [c["id"] for c in matrix["clients"]]
    lines = ["| stream | " + " | ".join(ids) + " |", "|---|" + "---|" * len(ids)]
    for s in streams:
        row = [_md_cell(cells[(cid, s["id"])], link) for cid in ids]
        lines.append(f"| {label(s)} | " + " | ".join(row) + " |")
    return lines


def _by_column(
    matrix: dict[str, Any], streams: list[dict[str, Any]], head: str = "provider"
) -> list[str]:
    cells = _index(matrix)
    ids = [c["id"] for c in matrix["clients"]]
    lines = [f"| {head} | " + " | ".join(ids) + " |", "|---|" + "---|" * len(ids)]
    for column in dict.fromkeys(s["column"] for s in streams):
        mine = [s["id"] for s in streams if s["column"] == column]
        row = []
        for cid in ids:
            judged = [sid for sid in mine if cells[(cid, sid)]["outcome"] != "n/a"]
            right = sum(cells[(cid, sid)]["outcome"] == "ok" for sid in judged)
            row.append(f"{right}/{len(judged)}")
        lines.append(f"| {column} | " + " | ".join(row) + " |")
    return lines


def _profile_label(s: dict[str, Any]) -> str:
    quirks = ", ".join(f"`{q}`" for q in s.get("quirks", [])) or "control"
    return f"{s['profile']} ({quirks})"


def _provider_label(s: dict[str, Any]) -> str:
    return f"{s['column']}: {s.get('scenario') or s['id']}"


# The sections of replayed streams, by kind: title, what the reader is looking at, the
# head of the per-column table, each stream's label in the grid.
_REPLAYED: tuple[tuple[str, str, str, str, Callable[[dict[str, Any]], str]], ...] = (
    (
        "provider",
        "Providers × clients (recorded cassettes, replayed over HTTP)",
        "Recorded traffic of a real server, replayed byte for byte. Per provider: the "
        "recorded scenarios each client assembled right.",
        "provider",
        _provider_label,
    ),
    (
        "scripted",
        "vLLM's tool parsers × clients (scripted model output, replayed over HTTP)",
        "Recorded from a real vLLM server whose model output was scripted by this project, "
        "one column per tool parser: what each parser makes of a known output, not what any "
        "provider's model sends. Replayed byte for byte.",
        "parser column",
        _provider_label,
    ),
    (
        "capture",
        "Field captures × clients (field evidence)",
        "Public recordings of real providers (sources in the HTML view); derived verdicts "
        "only, the recordings themselves are not in this repository.",
        "provider",
        lambda s: f"{s['column']} ({s['id'][8:]})",
    ),
)


def render_markdown(matrix: dict[str, Any], link: str = "client-matrix.html") -> str:
    streams = matrix["streams"]
    out = [
        "# Client matrix: which client libraries survive which streams",
        "",
        f"Generated {matrix['generated_at']} by `python3 noxw -s clients"
        + (
            " -- --captures DIR` (DIR: field captures; suite "
            if any(s["kind"] == "capture" for s in streams)
            else "` (suite "
        )
        + f"{matrix['suite_version']}). Each client library streamed one request per stream "
        "through its normal streaming API; what it assembled is judged call by call against "
        "what a correct client does with the very bytes it received: the right call where "
        "the bytes hold one (the analyzer's reading of them says which do), a flag, an "
        "error or a refusal where they hold none; the robust reading's repair is evidence, "
        f"never the right answer. A job is hung after {matrix['timeout_seconds']:g} s. "
        "Every cell links to its evidence in the HTML view. See docs/clients.md.",
        "",
        LEGEND,
        "",
        "## Clients",
        "",
        "| id | package | version | ecosystem | how it is used |",
        "|---|---|---|---|---|",
    ]
    for c in matrix["clients"]:
        out.append(
            f"| {c['id']} | {c['package']} | {c['version']} | {c['ecosystem']} | "
            f"{c.get('label', '')} |"
        )
    out += [
        "",
        "## Summary",
        "",
        *_summary(matrix),
        "",
        "## Clients × seed quirks",
        "",
        "The five quirks of the seed documents, each on its reference profile.",
        "",
        seed_table(matrix, link),
        "",
    ]
    profiles = [s for s in streams if s["kind"] == "profile"]
    if profiles:
        out += [
            "## Clients × quirks (reference profiles, live over HTTP)",
            "",
            *_grid(matrix, profiles, _profile_label, link),
            "",
        ]
    for kind, title, intro, head, label in _REPLAYED:
        mine = [s for s in streams if s["kind"] == kind]
        if mine:
            out += [f"## {title}", "", intro, "", *_by_column(matrix, mine, head), ""]
            out += [*_grid(matrix, mine, label, link), ""]
    bad = [c for c in matrix["cells"] if c["outcome"] not in ("ok", "n/a", "error")]
    if bad:
        out += ["## Findings", ""]
        for c in bad:
            out.append(f"- **{c['client']}** on `{c['stream']}`: {c['outcome']}: {c['detail']}")
        out.append("")
    return "\n".join(out)


def _pre(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False)
    return f"<pre>{html.escape(text)}</pre>"


def render_html(matrix: dict[str, Any]) -> str:
    body = render_markdown(matrix, link="")
    # The tables: Markdown rendered to HTML by a small converter (tables, headings, lists).
    parts = [_md_to_html(body)]
    streams = {s["id"]: s for s in matrix["streams"]}
    parts.append("<h2>Evidence</h2>")
    for c in matrix["cells"]:
        s = streams[c["stream"]]
        src = s.get("source")
        source = (
            f' · source: <a href="{html.escape(src)}">{html.escape(src)}</a>'
            if src and src.startswith("http")
            else f" · source: {html.escape(src)}"
            if src
            else ""
        )
        parts.append(
            f'<section id="{anchor(c)}" class="ev {css(c)}"><h3>{html.escape(c["client"])}'
            f" on {html.escape(c['stream'])}: {html.escape(mark(c))}</h3>"
            f"<p>{html.escape(c['outcome'])}: {html.escape(c['detail'])}{source}"
            + (" · field evidence (derived; no bytes kept)" if c.get("evidence") else "")
            + (" · requests: " + str(c.get("requests", 0)))
            + "</p>"
            + (
                "<p>quirks in these bytes: "
                + html.escape(", ".join(c["quirks"]) or "none")
                + "</p>"
                if "quirks" in c
                else ""
            )
            + "<h4>client assembled</h4>"
            + _pre(c.get("calls"))
            + (
                "<h4>the calls on the wire (the robust reading of the same bytes, with each "
                "call's status: sound, visible or hidden)</h4>" + _pre(c["expected"])
                if "expected" in c
                else ""
            )
            + (
                "<details><summary>bytes received</summary>" + _pre(c["wire"]) + "</details>"
                if "wire" in c
                else ""
            )
            + "</section>"
        )
    return (
        "<!doctype html><html lang=en><meta charset=utf-8>"
        "<title>Client matrix</title><style>"
        "body{font:14px system-ui,sans-serif;margin:1.5em;max-width:100%}"
        "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
        "padding:2px 5px;white-space:nowrap}a{text-decoration:none}"
        "pre{background:#f6f6f6;padding:.5em;overflow:auto;max-height:20em}"
        ".ev{border-top:1px solid #ddd}.ev:target{background:#fff6d5}"
        "</style><body>" + "\n".join(parts) + "</body></html>\n"
    )


def _inline(text: str) -> str:
    text = html.escape(text, quote=False)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)]*)\)", r'<a href="\2">\1</a>', text)


def _md_to_html(md: str) -> str:
    out: list[str] = []
    rows: list[str] = []
    items: list[str] = []

    def flush() -> None:
        if rows:
            head, *rest = rows
            cells = lambda r: [c.strip() for c in re.split(r"(?<!\\)\|", r.strip()[1:-1])]  # noqa: E731
            out.append(
                "<table><tr>"
                + "".join(f"<th>{_inline(c)}</th>" for c in cells(head))
                + "</tr>"
                + "".join(
                    "<tr>"
                    + "".join(
                        f"<td>{_inline(c.replace(chr(92) + '|', '|'))}</td>" for c in cells(r)
                    )
                    + "</tr>"
                    for r in rest[1:]
                )
                + "</table>"
            )
            rows.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
            items.clear()

    for line in md.splitlines():
        if line.startswith("|"):
            rows.append(line)
            continue
        if line.startswith("- "):
            items.append(line[2:])
            continue
        flush()
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    flush()
    return "\n".join(out)


def write_reports(matrix: dict[str, Any], out: Path) -> list[Path]:
    validate(matrix)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "client-matrix.json", out / "client-matrix.md", out / "client-matrix.html"]
    paths[0].write_text(json.dumps(matrix, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    paths[1].write_text(render_markdown(matrix) + "\n", encoding="utf-8")
    paths[2].write_text(render_html(matrix), encoding="utf-8")
    return paths
