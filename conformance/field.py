"""Field evidence: what public recordings show about a provider, beside the suite's own cells.

``python3 noxw -s field -- DIR`` (``python -m conformance.field DIR``) analyses every capture
in DIR with the analyzer of ``conformance analyze`` (one pipeline) and writes the facts
derived from them (verdict, quirk ids, client impact, the public source's URL) to
``conformance/data/field-evidence.json``. The capture files themselves never enter the
repository. A sources file (``conformance/data/field-sources.yaml``) maps each capture to
its provider route, the route to a matrix column (or none) and the capture to its URL.

The matrix (``conformance.matrix.build_matrix``) reads the committed data file, so a fresh
clone without the captures keeps the evidence. It is shown as a kind of evidence of its
own: seen in public recordings, not recorded by this suite; it never fills a cell.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from conformance import safeyaml
from conformance.parallel import default_jobs, jobs_arg
from conformance.transcript import InputError

FORMAT = "conformance-field-evidence/1"
DATA_DIR = Path(__file__).parent / "data"
EVIDENCE_FILE = DATA_DIR / "field-evidence.json"
SOURCES_FILE = DATA_DIR / "field-sources.yaml"
NOTE = (
    "Seen in public recordings, not recorded by this suite: facts derived from captures "
    "of other projects' recorded traffic (the captures are not in this repository)."
)
CAPTURE_SUFFIXES = (".jsonl", ".sse", ".yaml", ".yml", ".har", ".json", ".txt")


class FieldError(ValueError):
    """A sources file or capture directory that cannot be used; str() is one line."""


def load_sources(path: Path = SOURCES_FILE) -> dict[str, Any]:
    """The sources file: ``routes`` (id -> label, column) and ``captures`` (file -> route,
    source). Checked here so a typo is one line naming the entry, not a KeyError later."""
    try:
        data = safeyaml.load(Path(path).read_text("utf-8")) or {}
    except safeyaml.Refused as e:
        raise FieldError(f"{path}: {e.problem}") from None
    except (OSError, yaml.YAMLError) as e:
        raise FieldError(f"{path}: cannot be read ({type(e).__name__})") from None
    routes, captures = data.get("routes") or {}, data.get("captures") or {}
    if not isinstance(routes, dict) or not isinstance(captures, dict):
        raise FieldError(f"{path}: needs the mappings `routes` and `captures`")
    for rid, r in routes.items():
        if not isinstance(r, dict) or not r.get("label"):
            raise FieldError(f"{path}: route {rid!r} needs a label")
    for name, c in captures.items():
        if not isinstance(c, dict) or c.get("route") not in routes:
            raise FieldError(f"{path}: capture {name!r} names no known route")
        if not c.get("source"):
            raise FieldError(f"{path}: capture {name!r} needs a source")
    return {"routes": routes, "captures": captures}


def _unlisted_route(name: str) -> str:
    """A capture the sources file does not list (your own proxy logs): its route is the
    file name up to the first '-' (``groq-….jsonl`` -> ``groq``)."""
    return Path(name).name.split("-")[0].split(".")[0] or "unlisted"


def _entry(result: Any, name: str, route: str, source: str, column: str | None) -> dict[str, Any]:
    d = result.to_json()
    return {
        "capture": name,
        "route": route,
        "column": column,
        "source": source,
        "model": (result.meta or {}).get("model"),
        "verdict": result.verdict,
        "reason": result.error,
        "quirks": d["quirks"],
        "finish_reason": result.finish_reason,
        "events": result.events,
        "calls": len(result.tool_calls.get("robust") or []),
        "impact": {
            k: {f: v for f, v in i.items() if f != "detail" or v} for k, i in d["impact"].items()
        },
    }


def capture_files(directory: Path) -> list[Path]:
    """The captures of a directory, in the order of the report: by file name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FieldError(f"{directory}: not a directory of captures")
    return sorted(
        p
        for p in directory.iterdir()
        if p.is_file() and p.suffix in CAPTURE_SUFFIXES and p.name.upper() != "SOURCES.MD"
    )


def _place(name: str, sources: dict[str, Any]) -> tuple[str, str, str | None]:
    """A capture file's route, source and matrix column."""
    listed = sources["captures"].get(name)
    route = listed["route"] if listed else _unlisted_route(name)
    source = listed["source"] if listed else name
    known = sources["routes"].get(route)
    return route, source, known.get("column") if known else None


def path_record(path: Path, sources: dict[str, Any]) -> dict[str, Any]:
    """One capture file -> its record: ``{"file", "route", "entries", "error"}``; plain
    data (JSON and pickle), so a worker or a cluster node can return it. ``merge``
    turns records into the field-evidence document."""
    from conformance.analysis import analyze
    from conformance.readers import read_path

    path = Path(path)
    route, source, column = _place(path.name, sources)
    record: dict[str, Any] = {"file": path.name, "route": route, "entries": [], "error": None}
    try:
        transcripts = read_path(path)
    except InputError as e:
        record["error"] = str(e)
        return record
    for i, t in enumerate(transcripts):
        name = path.name if len(transcripts) == 1 else f"{path.name}#{i}"
        record["entries"].append(_entry(analyze(t), name, route, source, column))
    return record


def capture_record(
    name: str, data: bytes, sources: dict[str, Any], label: str | None = None
) -> dict[str, Any]:
    """The pure function: one capture's bytes (a file called ``name``) -> its record, the
    same as ``path_record`` of that file. ``label`` is how an unreadable capture is named
    in the document (default ``name``): pass the path or URL the local run would show.
    The bytes go through the same readers, from a private temporary file."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="conformance-field-") as tmp:
        path = Path(tmp) / Path(name).name
        path.write_bytes(data)
        record = path_record(path, sources)
    if record["error"]:
        record["error"] = record["error"].replace(str(path), label or name)
    return record


def merge(
    records: Iterable[dict[str, Any]], sources: dict[str, Any], where: str = "captures"
) -> dict[str, Any]:
    """Records (in any order, from any number of workers) -> the field-evidence document
    (deterministic: sorted, no timestamps). ``where`` names the input in the error raised
    when no capture could be read."""
    routes = {
        rid: {"label": r["label"], "column": r.get("column")}
        for rid, r in sources["routes"].items()
    }
    entries: list[dict[str, Any]] = []
    errors: list[tuple[str, str]] = []
    for rec in records:
        routes.setdefault(rec["route"], {"label": rec["route"], "column": None})
        entries += rec["entries"]
        if rec["error"]:
            errors.append((rec["file"], rec["error"]))
    errors.sort()
    if not entries:
        raise FieldError(
            f"{where}: no capture could be read" + (f" ({errors[0][1]})" if errors else "")
        )
    used = {e["route"] for e in entries}
    return {
        "format": FORMAT,
        "note": NOTE,
        "routes": {rid: r for rid, r in sorted(routes.items()) if rid in used},
        "entries": sorted(entries, key=lambda e: (e["route"], e["capture"])),
        "unreadable": [e for _, e in errors],
    }


def analyse_directory(directory: Path, sources: dict[str, Any], jobs: int = 1) -> dict[str, Any]:
    """Every capture in ``directory`` through ``conformance analyze``'s reader and analyzer,
    on ``jobs`` processes; returns the field-evidence document."""
    from functools import partial

    from conformance.parallel import ordered_map

    files = capture_files(directory)
    records = ordered_map(partial(path_record, sources=sources), files, jobs, total=len(files))
    return merge(records, sources, str(directory))


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def load_evidence(path: Path = EVIDENCE_FILE) -> dict[str, Any]:
    """The committed field evidence; an empty document when the file is absent."""
    try:
        doc: dict[str, Any] = json.loads(Path(path).read_text("utf-8"))
    except FileNotFoundError:
        return {"format": FORMAT, "note": NOTE, "routes": {}, "entries": [], "unreadable": []}
    except ValueError as e:
        raise FieldError(f"{path}: not JSON ({e})") from None
    if doc.get("format") != FORMAT:
        raise FieldError(f"{path}: format {doc.get('format')!r}, expected {FORMAT!r}")
    return doc


def for_columns(doc: dict[str, Any], columns: list[str]) -> dict[str, list[dict[str, Any]]]:
    """column id -> its field-evidence entries (columns without evidence are left out)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for e in doc.get("entries") or []:
        if e.get("column") in columns:
            out.setdefault(e["column"], []).append(e)
    return out


def routes_without_column(doc: dict[str, Any], columns: list[str]) -> list[dict[str, Any]]:
    """One row per provider route the matrix has no column for: id, label, entries."""
    rows: dict[str, dict[str, Any]] = {}
    for e in doc.get("entries") or []:
        if e.get("column") in columns:
            continue
        route = (doc.get("routes") or {}).get(e["route"]) or {"label": e["route"]}
        rows.setdefault(e["route"], {"route": e["route"], "label": route["label"], "entries": []})[
            "entries"
        ].append(e)
    return [rows[k] for k in sorted(rows)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.field",
        description="Analyse a directory of captures into the matrix's field evidence.",
    )
    parser.add_argument("directory", type=Path, help="captures (JSONL, SSE, cassettes, HAR)")
    parser.add_argument(
        "--sources",
        type=Path,
        default=SOURCES_FILE,
        help="capture -> route, column and source URL (YAML)",
    )
    parser.add_argument("--out", type=Path, default=EVIDENCE_FILE)
    parser.add_argument(
        "-j",
        "--jobs",
        type=jobs_arg,
        default=default_jobs(),
        metavar="N",
        help="processes analysing captures at once (0: every core); the document is that of -j 1",
    )
    args = parser.parse_args(argv)
    try:
        doc = analyse_directory(args.directory, load_sources(args.sources), args.jobs)
    except FieldError as e:
        print(f"conformance field: {e}", file=sys.stderr)
        return 2
    from conformance.secrets import write_atomic

    write_atomic(args.out, dumps(doc))  # redacted: a user's own proxy logs may hold a key
    cols = sorted({e["column"] for e in doc["entries"] if e["column"]})
    print(
        f"wrote {args.out}: {len(doc['entries'])} captures, {len(doc['routes'])} routes"
        f" ({', '.join(cols) or 'no matrix column'})"
    )
    for err in doc["unreadable"]:
        print(f"conformance field: skipped {err}", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
