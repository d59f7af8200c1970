"""Field evidence from public recordings: one capture's bytes to a record, records merged
into the committed data file, the sources file's refusals, and what the matrix reads of it
(mutation testing, #29)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_report import CONFORMING, DASHSCOPE

from conformance import field

ROOT = Path(__file__).resolve().parents[1]
CAPTURES = Path(os.environ.get("CONFORMANCE_CAPTURES") or ROOT.parent / "shared" / "captures")
ROUND_TRIP = ROOT / "cassettes" / "vllm-hermes" / "id-omission.yaml"  # two exchanges

SOURCES: dict[str, Any] = {
    "routes": {
        "dashscope": {"label": "DashScope", "column": "dashscope"},
        "acme": {"label": "Acme Cloud"},
        "quiet": {"label": "Never used", "column": "quiet"},
    },
    "captures": {
        "dash.jsonl": {"route": "dashscope", "source": "https://example.org/dash"},
        "good.jsonl": {"route": "acme", "source": "https://example.org/good"},
    },
}


def _jsonl(chunks: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(c) + "\n" for c in chunks).encode()


# --------------------------------------------------------------- the committed data file


def test_each_public_capture_gives_the_committed_records() -> None:
    """The committed file, rebuilt capture by capture from the bytes (as a worker would)
    and merged in reverse order: the document is the same whatever the order."""
    if not CAPTURES.is_dir():
        pytest.skip(f"{CAPTURES} is absent: the public captures are not in this checkout")
    sources = field.load_sources()
    files = field.capture_files(CAPTURES)
    assert "SOURCES.md" not in [p.name for p in files] and len(files) == len(sources["captures"])
    records = [field.capture_record(p.name, p.read_bytes(), sources) for p in reversed(files)]
    doc = field.merge(records, sources)
    assert field.dumps(doc) == field.EVIDENCE_FILE.read_text("utf-8")
    assert field.load_evidence() == doc


def test_the_committed_file_maps_captures_to_columns_and_routes() -> None:
    doc = field.load_evidence()
    assert doc["format"] == field.FORMAT and doc["note"] == field.NOTE
    cols = field.for_columns(doc, ["dashscope", "llamacpp", "no-such-column"])
    assert sorted(cols) == ["dashscope", "llamacpp"]
    [dash] = cols["dashscope"]
    assert (dash["route"], dash["model"], dash["verdict"]) == ("dashscope", "qwen3-max", "quirk")
    assert dash["calls"] == 1 and dash["finish_reason"] == "tool_calls"
    rows = field.routes_without_column(doc, ["dashscope", "llamacpp"])
    assert [r["route"] for r in rows] == sorted(r["route"] for r in rows)
    assert "dashscope" not in [r["route"] for r in rows]
    azure = next(r for r in rows if r["route"] == "azure")
    assert azure["label"] == "Azure OpenAI"
    assert all(e["route"] == "azure" for e in azure["entries"]) and azure["entries"]
    total = sum(len(v) for v in cols.values()) + sum(len(r["entries"]) for r in rows)
    assert total == len(doc["entries"])


# ------------------------------------------------------------------------ one capture


def test_one_capture_is_one_record_with_its_route_source_and_column() -> None:
    rec = field.capture_record("dash.jsonl", _jsonl(DASHSCOPE), SOURCES)
    assert (rec["file"], rec["route"], rec["error"]) == ("dash.jsonl", "dashscope", None)
    [e] = rec["entries"]
    assert e["capture"] == "dash.jsonl" and e["route"] == "dashscope"
    assert e["column"] == "dashscope" and e["source"] == "https://example.org/dash"
    assert e["model"] == "m" and e["verdict"] == "quirk" and e["reason"] is None
    assert "Q-EMPTY-STRING-OVERWRITE" in e["quirks"]
    assert e["finish_reason"] == "tool_calls"
    assert (e["events"], e["calls"]) == (4, 1)
    # the naive client's failure keeps its detail; an ok strategy has none to keep
    assert e["impact"]["naive"]["status"] != "ok" and e["impact"]["naive"]["detail"]
    assert e["impact"]["robust"] == {"status": "ok"}
    # a route without a column: no column
    [g] = field.capture_record("good.jsonl", _jsonl(CONFORMING), SOURCES)["entries"]
    assert (g["route"], g["column"], g["verdict"]) == ("acme", None, "conforms")


def test_a_capture_the_sources_do_not_list_takes_its_route_from_its_name() -> None:
    [e] = field.capture_record("dashscope-mine.jsonl", _jsonl(DASHSCOPE), SOURCES)["entries"]
    # a known route by its name: that route's column; the file is its own source
    assert (e["route"], e["column"], e["source"]) == (
        "dashscope",
        "dashscope",
        "dashscope-mine.jsonl",
    )
    for name, route in (
        ("myproxy-session1.jsonl", "myproxy"),
        ("plain.jsonl", "plain"),
        ("a.b-c.jsonl", "a"),
        ("-lead.jsonl", "unlisted"),
    ):
        rec = field.capture_record(name, _jsonl(CONFORMING), SOURCES)
        assert rec["route"] == route, name
        assert rec["entries"][0]["column"] is None


def test_a_recording_of_several_exchanges_is_one_entry_each() -> None:
    rec = field.capture_record("vllm-rt.yaml", ROUND_TRIP.read_bytes(), SOURCES)
    assert rec["route"] == "vllm" and rec["error"] is None
    first, second = rec["entries"]
    assert (first["capture"], second["capture"]) == ("vllm-rt.yaml#0", "vllm-rt.yaml#1")
    assert (first["calls"], second["calls"]) == (1, 0)
    assert (first["finish_reason"], second["finish_reason"]) == ("tool_calls", "stop")
    assert first["model"] == second["model"] == "scripted"
    assert first["source"] == "vllm-rt.yaml"


def test_an_unreadable_capture_is_named_as_the_caller_shows_it(tmp_path: Path) -> None:
    rec = field.capture_record("empty.jsonl", b"", SOURCES)
    assert rec == {
        "file": "empty.jsonl",
        "route": "empty",
        "entries": [],
        "error": "empty.jsonl: empty file",
    }
    rec = field.capture_record("x.jsonl", b"hello", SOURCES, label="https://example.org/x")
    assert rec["error"].startswith("https://example.org/x: not JSONL, SSE")
    # read from a directory, the path is the name
    (tmp_path / "e.jsonl").write_bytes(b"")
    assert field.path_record(tmp_path / "e.jsonl", SOURCES)["error"] == (
        f"{tmp_path / 'e.jsonl'}: empty file"
    )


def test_capture_files_are_the_captures_by_name(tmp_path: Path) -> None:
    for name in ("b.jsonl", "a.sse", "c.yaml", "d.yml", "e.har", "f.json", "g.txt", "SOURCES.md"):
        (tmp_path / name).write_text("x")
    (tmp_path / "notes.md").write_text("x")
    (tmp_path / "dir.jsonl").mkdir()
    got = [p.name for p in field.capture_files(tmp_path)]
    assert got == ["a.sse", "b.jsonl", "c.yaml", "d.yml", "e.har", "f.json", "g.txt"]
    with pytest.raises(field.FieldError) as e:
        field.capture_files(tmp_path / "a.sse")
    assert str(e.value) == f"{tmp_path / 'a.sse'}: not a directory of captures"


# ----------------------------------------------------------------------------- merging


def _rec(route: str, *captures: str, error: str | None = None, file: str = "f") -> dict:
    entries = [{"route": route, "capture": c, "column": None} for c in captures]
    return {"file": file, "route": route, "entries": entries, "error": error}


def test_merge_sorts_entries_keeps_used_routes_and_lists_what_was_skipped() -> None:
    doc = field.merge(
        [
            _rec("dashscope", "z.jsonl", "a.jsonl"),
            _rec("mine", "m.jsonl"),
            _rec("acme", error="y: empty file", file="y"),
            _rec("acme", error="b: empty file", file="b"),
        ],
        SOURCES,
    )
    assert list(doc) == ["format", "note", "routes", "entries", "unreadable"]
    assert doc["format"] == field.FORMAT and doc["note"] == field.NOTE
    assert [(e["route"], e["capture"]) for e in doc["entries"]] == [
        ("dashscope", "a.jsonl"),
        ("dashscope", "z.jsonl"),
        ("mine", "m.jsonl"),
    ]
    # only routes with an entry; a route the sources do not know is its own label
    assert doc["routes"] == {
        "dashscope": {"label": "DashScope", "column": "dashscope"},
        "mine": {"label": "mine", "column": None},
    }
    assert doc["unreadable"] == ["b: empty file", "y: empty file"]  # by file
    sources_route = field.merge([_rec("acme", "g.jsonl")], SOURCES)["routes"]
    assert sources_route == {"acme": {"label": "Acme Cloud", "column": None}}


def test_merge_of_nothing_readable_is_refused_with_the_first_reason() -> None:
    with pytest.raises(field.FieldError) as e:
        field.merge(
            [_rec("a", error="z: bad", file="z"), _rec("a", error="a: bad", file="a")],
            SOURCES,
            "DIR",
        )
    assert str(e.value) == "DIR: no capture could be read (a: bad)"
    with pytest.raises(field.FieldError) as e:
        field.merge([], SOURCES)
    assert str(e.value) == "captures: no capture could be read"


def test_dumps_is_sorted_indented_utf8_with_a_final_newline() -> None:
    assert field.dumps({"b": "ü", "a": [1]}) == '{\n "a": [\n  1\n ],\n "b": "ü"\n}\n'


# ------------------------------------------------------------------------ the sources


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("routes: [a]\ncaptures: {}\n", "needs the mappings `routes` and `captures`"),
        ("routes: {}\ncaptures: [a]\n", "needs the mappings `routes` and `captures`"),
        ("routes: {a: {column: x}}\n", "route 'a' needs a label"),
        ("routes: {a: x}\n", "route 'a' needs a label"),
        (
            "routes: {a: {label: A}}\ncaptures: {c.jsonl: x}\n",
            "capture 'c.jsonl' names no known route",
        ),
        (
            "routes: {a: {label: A}}\ncaptures: {c.jsonl: {route: b, source: u}}\n",
            "capture 'c.jsonl' names no known route",
        ),
        (
            "routes: {a: {label: A}}\ncaptures: {c.jsonl: {route: a}}\n",
            "capture 'c.jsonl' needs a source",
        ),
        ("routes: {a: [\n", "cannot be read (ParserError)"),
        ("a: !!python/object:os.system {}\n", "refused: a Python tag"),
    ],
)
def test_a_bad_sources_file_is_one_line_naming_the_entry(
    tmp_path: Path, text: str, problem: str
) -> None:
    p = tmp_path / "sources.yaml"
    p.write_text(text)
    with pytest.raises(field.FieldError) as e:
        field.load_sources(p)
    assert str(e.value).startswith(f"{p}: {problem}")
    assert "\n" not in str(e.value)


def test_a_sources_file_is_read_whole_or_not_at_all(tmp_path: Path) -> None:
    p = tmp_path / "sources.yaml"
    p.write_text("")
    assert field.load_sources(p) == {"routes": {}, "captures": {}}
    p.write_text("routes: {a: {label: A, column: c}}\ncaptures: {x.jsonl: {route: a, source: u}}\n")
    assert field.load_sources(p) == {
        "routes": {"a": {"label": "A", "column": "c"}},
        "captures": {"x.jsonl": {"route": "a", "source": "u"}},
    }
    with pytest.raises(field.FieldError) as e:
        field.load_sources(tmp_path / "missing.yaml")
    assert str(e.value) == f"{tmp_path / 'missing.yaml'}: cannot be read (FileNotFoundError)"
    committed = field.load_sources()
    assert committed["routes"]["dashscope"]["column"] == "dashscope"


# ----------------------------------------------------------------------- the data file


def test_load_evidence_of_no_file_a_broken_one_and_another_format(tmp_path: Path) -> None:
    assert field.load_evidence(tmp_path / "none.json") == {
        "format": field.FORMAT,
        "note": field.NOTE,
        "routes": {},
        "entries": [],
        "unreadable": [],
    }
    p = tmp_path / "e.json"
    p.write_text("{")
    with pytest.raises(field.FieldError) as e:
        field.load_evidence(p)
    assert str(e.value).startswith(f"{p}: not JSON (")
    p.write_text('{"format": "other/2"}')
    with pytest.raises(field.FieldError) as e:
        field.load_evidence(p)
    assert str(e.value) == f"{p}: format 'other/2', expected '{field.FORMAT}'"


def test_routes_without_a_column_fall_back_to_the_route_id() -> None:
    doc = {
        "routes": {"acme": {"label": "Acme Cloud", "column": None}},
        "entries": [
            {"route": "zed", "column": None, "capture": "1"},
            {"route": "acme", "column": None, "capture": "2"},
            {"route": "acme", "column": "x", "capture": "3"},
            {"route": "acme", "column": None, "capture": "4"},
        ],
    }
    rows = field.routes_without_column(doc, ["x"])
    assert [(r["route"], r["label"], [e["capture"] for e in r["entries"]]) for r in rows] == [
        ("acme", "Acme Cloud", ["2", "4"]),
        ("zed", "zed", ["1"]),
    ]
    assert field.for_columns(doc, ["x"]) == {"x": [doc["entries"][2]]}
    assert field.for_columns({}, ["x"]) == {} and field.routes_without_column({}, []) == []


# ------------------------------------------------------------------------- the command


def test_the_field_command_says_what_it_wrote_and_what_it_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    caps = tmp_path / "caps"
    caps.mkdir()
    (caps / "dash.jsonl").write_bytes(_jsonl(DASHSCOPE))
    (caps / "good.jsonl").write_bytes(_jsonl(CONFORMING))
    (caps / "bad.jsonl").write_bytes(b"")
    src = tmp_path / "s.yaml"
    src.write_text(json.dumps(SOURCES))
    out = tmp_path / "out.json"
    assert field.main([str(caps), "--sources", str(src), "--out", str(out), "-j", "1"]) == 0
    o, err = capsys.readouterr()
    assert o == f"wrote {out}: 2 captures, 2 routes (dashscope)\n"
    assert err == f"conformance field: skipped {caps / 'bad.jsonl'}: empty file\n"
    doc = json.loads(out.read_text("utf-8"))
    assert out.read_text("utf-8") == field.dumps(doc)
    assert [e["capture"] for e in doc["entries"]] == ["good.jsonl", "dash.jsonl"]
    # no capture of a column
    (caps / "dash.jsonl").unlink()
    assert field.main([str(caps), "--sources", str(src), "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"wrote {out}: 1 captures, 1 routes (no matrix column)\n"
    # a bad sources file: exit 2, one line
    src.write_text("routes: [x]\n")
    assert field.main([str(caps), "--sources", str(src), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"conformance field: {src}: needs the mappings `routes` and `captures`\n"
    )


def test_a_directory_with_nothing_readable_is_named_in_the_refusal(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(b"")
    with pytest.raises(field.FieldError) as e:
        field.analyse_directory(tmp_path, SOURCES)
    assert str(e.value) == (
        f"{tmp_path}: no capture could be read ({tmp_path / 'a.jsonl'}: empty file)"
    )


def test_the_field_command_writes_the_committed_file_by_default_and_names_each_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "field-evidence.json"
    monkeypatch.setattr(field, "EVIDENCE_FILE", out)
    caps = tmp_path / "caps"
    caps.mkdir()
    (caps / "dash.jsonl").write_bytes(_jsonl(DASHSCOPE))
    (caps / "quiet-1.jsonl").write_bytes(_jsonl(CONFORMING))
    src = tmp_path / "s.yaml"
    src.write_text(json.dumps(SOURCES))
    assert field.main([str(caps), "--sources", str(src)]) == 0
    assert capsys.readouterr().out == f"wrote {out}: 2 captures, 2 routes (dashscope, quiet)\n"
    assert [e["column"] for e in json.loads(out.read_text("utf-8"))["entries"]] == [
        "dashscope",
        "quiet",
    ]


def test_the_field_command_explains_itself(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as e:
        field.main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(
        "usage: python -m conformance.field [-h] [--sources SOURCES] [--out OUT] [-j N] directory"
    )
    assert "\n\nAnalyse a directory of captures into the matrix's field evidence.\n\n" in text
    for line in (
        "directory  captures (JSONL, SSE, cassettes, HAR)",
        "--sources SOURCES  capture -> route, column and source URL (YAML)",
        "-j N, --jobs N  processes analysing captures at once (0: every core); the document "
        "is that of -j 1",
    ):
        assert " ".join(line.split()) in " ".join(text.split()), line


def test_a_sources_file_is_read_as_utf8_whatever_the_locale(tmp_path: Path) -> None:
    import locale

    p = tmp_path / "sources.yaml"
    p.write_text("routes: {z: {label: Zürich Cloud}}\n", "utf-8")
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")  # an ASCII locale
    try:
        routes = field.load_sources(p)["routes"]
    finally:
        locale.setlocale(locale.LC_CTYPE, before)
    assert routes == {"z": {"label": "Zürich Cloud"}}


def test_the_evidence_file_is_read_as_utf8_whatever_the_locale(tmp_path: Path) -> None:
    import locale

    p = tmp_path / "e.json"
    doc = field.load_evidence(tmp_path / "none.json")
    doc["routes"] = {"z": {"label": "Zürich Cloud", "column": None}}
    p.write_text(field.dumps(doc), "utf-8")
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")  # an ASCII locale
    try:
        got = field.load_evidence(p)
    finally:
        locale.setlocale(locale.LC_CTYPE, before)
    assert got["routes"]["z"]["label"] == "Zürich Cloud"
