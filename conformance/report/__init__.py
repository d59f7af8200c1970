"""`conformance.report`: the compatibility table people read.

Reads a matrix document (``docs/matrix-format.md``, schema
``conformance/schemas/quirks-matrix.schema.json``) and renders it as GitHub Markdown and
as one self-contained HTML page; diffs two matrices for CI. Public surface:

- ``validate_matrix(doc)`` / ``load_matrix(path)``: raise ``MatrixError`` (one line).
- ``render_markdown(doc)``, ``render_html(doc)``, ``update_readme(path, markdown)``;
  ``render_headline(doc)``: the README's small table (symbols, field evidence, legend).
- ``diff_matrices(old, new) -> list[CellDiff]``.
- ``write_reports(doc, out_dir)``, ``write_field_report(results, out_dir)``.
- ``render_command(results_dir, out_dir)``, ``diff_command(old, new, markdown=)``: the CLI.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance.report.common import SYMBOL, MatrixError
from conformance.report.diff import CellDiff, column_notes, diff_matrices, format_markdown
from conformance.report.diff import format_text as format_diff_text
from conformance.report.evidence import evidence_from_events
from conformance.report.headline import render_headline
from conformance.report.html import render_html
from conformance.report.markdown import render_markdown
from conformance.report.validate import load_matrix, matrix_schema, validate_matrix
from conformance.textsafe import terminal, terminal_lines

MATRIX_NAME = "quirks-matrix"


def atomic_write(path: Path, text: str) -> None:
    """One writer for every file the suite writes: redact, temporary file, fsync, rename
    (``conformance.secrets.write_atomic``). Lone surrogates and control characters (valid
    JSON from the wire: a tool named ``"\\ud800"``) are written as ``\\uXXXX`` escapes
    (``textsafe.for_file``): always encodable, inert when printed."""
    from conformance.secrets import write_atomic
    from conformance.textsafe import for_file

    write_atomic(path, for_file(text))


def quirk_doc_link(out_dir: Path) -> str | None:
    """The catalogue page (docs/quirks.md) relative to a report directory, when the report
    sits in the project (reports/ next to docs/); None elsewhere (no dead links)."""
    return "../docs/quirks.md" if (Path(out_dir).parent / "docs" / "quirks.md").exists() else None


def write_reports(doc: dict[str, Any], out_dir: Path) -> dict[str, Path]:
    """Validate, then write quirks-matrix.json/.md/.html into out_dir; returns their paths."""
    validate_matrix(doc)
    out = Path(out_dir)
    texts = {
        "json": json.dumps(doc, ensure_ascii=False, indent=1) + "\n",
        "md": render_markdown(doc, quirk_doc=quirk_doc_link(out)),
        "html": render_html(doc),
    }
    paths = {}
    for ext, text in texts.items():
        paths[ext] = out / f"{MATRIX_NAME}.{ext}"
        atomic_write(paths[ext], text)
    return paths


_HEADING = re.compile(r"^(#{1,6}) ", re.M)


def nest_headings(markdown: str, parent_level: int) -> str:
    """Shift the Markdown's headings so its top level sits just below `parent_level`."""
    levels = [len(m.group(1)) for m in _HEADING.finditer(markdown)]
    if not levels:
        return markdown
    shift = parent_level + 1 - min(levels)
    return _HEADING.sub(lambda m: "#" * max(1, min(6, len(m.group(1)) + shift)) + " ", markdown)


def markers(block: str) -> tuple[str, str]:
    """The README's markers around a generated block (`matrix`, `clients`)."""
    return f"<!-- {block}:start -->", f"<!-- {block}:end -->"


def update_readme(readme_path: Path, markdown: str, block: str = "matrix") -> bool:
    """Replace the text between a block's markers; True when the file changed.

    The table's headings are nested under the README heading that holds the markers."""
    path = Path(readme_path)
    text = path.read_text("utf-8")
    start_mark, end_mark = markers(block)
    start, end = text.find(start_mark), text.find(end_mark)
    if start < 0 or end < 0 or end < start:
        raise MatrixError(f"{path}: needs the markers {start_mark} and {end_mark} (in that order)")
    above = [len(m.group(1)) for m in _HEADING.finditer(text[:start])]
    if above:
        markdown = nest_headings(markdown, above[-1])
    new = text[: start + len(start_mark)] + "\n" + markdown.strip("\n") + "\n" + text[end:]
    if new == text:
        return False
    from conformance.secrets import write_atomic

    # The README is our own documentation: the key redactor must not rewrite its prose
    # (it once turned "`?key=` or a password" into "`?key=<redacted>").
    from conformance.textsafe import for_file

    write_atomic(path, for_file(new), redact_secrets=False)
    return True


def write_field_report(results: Iterable[Any], out_dir: Path) -> dict[str, Path]:
    """`toolcall-conformance analyze --report DIR PATH…`: the captures as a field-mode matrix."""
    from conformance.matrix import matrix_from_captures

    return write_reports(matrix_from_captures(list(results)), Path(out_dir))


def _fail(message: str) -> int:
    print(terminal(f"toolcall-conformance report: {message}"), file=sys.stderr)
    return 2


def render_command(out_dir: Path) -> int:
    """Render <out_dir>/quirks-matrix.json to .md and .html next to it (0; 2 if invalid)."""
    src = Path(out_dir) / f"{MATRIX_NAME}.json"
    if not src.exists():
        return _fail(
            f"{src}: no such file; produce it with `toolcall-conformance run --report-dir "
            f"{out_dir} …` or `toolcall-conformance analyze --report {out_dir} PATH…`"
        )
    try:
        doc = load_matrix(src)
    except MatrixError as e:
        return _fail(str(e))
    md = render_markdown(doc, quirk_doc=quirk_doc_link(Path(out_dir)))
    for ext, text in (("md", md), ("html", render_html(doc))):
        path = src.with_suffix(f".{ext}")
        atomic_write(path, text)
        print(terminal(f"wrote {path}"))
    return 0


def diff_command(old_path: Path, new_path: Path, markdown: bool = False) -> int:
    """Print the diff of two matrix files; 1 on any regression, 0 otherwise, 2 if unreadable."""
    try:
        old, new = load_matrix(Path(old_path)), load_matrix(Path(new_path))
    except MatrixError as e:
        return _fail(str(e))
    diffs = diff_matrices(old, new)
    notes = column_notes(old, new)
    fmt = format_markdown if markdown else format_diff_text
    sys.stdout.write(terminal_lines(fmt(diffs, notes)))  # reasons come from the wire
    return 1 if any(d.regressed for d in diffs) else 0


__all__ = [
    "SYMBOL",
    "CellDiff",
    "MatrixError",
    "atomic_write",
    "diff_command",
    "diff_matrices",
    "evidence_from_events",
    "load_matrix",
    "matrix_schema",
    "nest_headings",
    "render_command",
    "render_headline",
    "render_html",
    "render_markdown",
    "update_readme",
    "validate_matrix",
    "write_field_report",
    "write_reports",
]
