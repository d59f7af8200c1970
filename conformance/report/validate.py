"""Validation of a matrix document: the JSON Schema, then the cross-references it cannot say."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from conformance.report.common import Doc, MatrixError


@cache
def matrix_schema() -> dict[str, Any]:
    text = (
        resources.files("conformance")
        .joinpath("schemas/quirks-matrix.schema.json")
        .read_text("utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    """The schema with its local `$ref`s replaced by their targets (it has no cycles):
    the same verdicts, without a reference lookup per instance node (2x faster)."""
    if isinstance(node, dict):
        out = {k: _inline(v, defs) for k, v in node.items() if k not in ("$defs", "$ref")}
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = _inline(defs[ref.removeprefix("#/$defs/")], defs)
            if set(target) & set(out):  # overlapping keywords: keep both, as allOf
                return {**out, "allOf": [*out.get("allOf", []), target]}
            return {**target, **out}
        if ref is not None:
            out["$ref"] = ref
        return out
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


@cache
def _validator() -> Draft202012Validator:
    schema = matrix_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(_inline(schema, schema.get("$defs", {})))


def _path(parts: Any) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _short(error: ValidationError) -> str:
    msg = error.message.replace("\n", " ")
    return msg if len(msg) <= 200 else msg[:199] + "…"


def validate_matrix(doc: Any) -> None:
    """Raise MatrixError("<path>: <message>") on the first problem; return None when valid."""
    error = best_match(_validator().iter_errors(doc))
    if error is not None:
        raise MatrixError(f"{_path(error.absolute_path)}: {_short(error)}")
    _check_references(doc)


def _check_references(doc: Doc) -> None:
    cols = {c["id"] for c in doc["columns"]}
    rows = {r["id"] for r in doc["rows"]}
    for name, items in (("columns", doc["columns"]), ("rows", doc["rows"])):
        seen: set[str] = set()
        for i, item in enumerate(items):
            if item["id"] in seen:
                raise MatrixError(f"$.{name}[{i}].id: duplicate id {item['id']!r}")
            seen.add(item["id"])
    quirks = doc["quirks"]
    pairs: set[tuple[str, str]] = set()
    for i, cell in enumerate(doc["cells"]):
        where = f"$.cells[{i}]"
        if cell["column"] not in cols:
            raise MatrixError(f"{where}.column: {cell['column']!r} is not a column id")
        if cell["row"] not in rows:
            raise MatrixError(f"{where}.row: {cell['row']!r} is not a row id")
        key = (cell["column"], cell["row"])
        if key in pairs:
            raise MatrixError(f"{where}: a second cell for column {key[0]!r}, row {key[1]!r}")
        pairs.add(key)
        referenced = list(cell.get("quirks") or []) + list(cell.get("expected") or [])
        referenced += [f["quirk"] for f in cell.get("findings") or [] if f.get("quirk")]
        for q in referenced:
            if q not in quirks:
                raise MatrixError(f"{where}: quirk {q!r} is not in $.quirks")
    field = [
        (f"$.columns[{i}].field_evidence[{j}]", e)
        for i, c in enumerate(doc["columns"])
        for j, e in enumerate(c.get("field_evidence") or [])
    ]
    field += [
        (f"$.field_providers[{i}].entries[{j}]", e)
        for i, r in enumerate(doc.get("field_providers") or [])
        for j, e in enumerate(r["entries"])
    ]
    for where, entry in field:
        for q in entry["quirks"]:
            if q not in quirks:
                raise MatrixError(f"{where}: quirk {q!r} is not in $.quirks")
    for name, ids in doc["sections"].items():
        for j, cid in enumerate(ids):
            if cid not in cols:
                raise MatrixError(f"$.sections.{name}[{j}]: {cid!r} is not a column id")


def load_matrix(path: Path) -> Doc:
    """Read and validate a matrix file; MatrixError names the file."""
    try:
        doc = json.loads(Path(path).read_text("utf-8"))
    except FileNotFoundError:
        raise MatrixError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise MatrixError(f"{path}: cannot be read ({e})") from None
    except json.JSONDecodeError as e:
        raise MatrixError(f"{path}: not JSON (line {e.lineno}: {e.msg})") from None
    try:
        validate_matrix(doc)
    except MatrixError as e:
        raise MatrixError(f"{path}: {e}") from None
    return doc  # type: ignore[no-any-return]
