"""The quirks matrix people read as a compatibility table: its cells, each column's
provenance (which recording date, suite version and server a column shows) and the quirk
list, rebuilt from the committed report's own cells and cassettes and from small hand-made
inputs (mutation testing, #29)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conformance import __version__, providers
from conformance.analysis import analyze_chunks
from conformance.gateway_columns import gateway_providers
from conformance.matrix import (
    FORMAT,
    add_field_evidence,
    build_matrix,
    column_for,
    load_provenance,
    matrix_from_captures,
    quirk_entries,
    record_provenance,
    rule_entries,
)
from conformance.profile_columns import ProfileProvider, profile_providers
from conformance.providers import Provider, load_providers
from conformance.registry import UnknownQuirkError
from conformance.rules import RULES, quirk_catalogue
from conformance.scenarios import SCENARIOS

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "reports" / "quirks-matrix.json"
PROFILE_URL = "http://127.0.0.1:8765/v1"  # what `nox -s matrix` gives the profile columns
NO_EVIDENCE: dict[str, Any] = {"routes": {}, "entries": [], "unreadable": []}


@pytest.fixture
def committed(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The committed matrix, read from the repository root (cassette paths as it shows
    them), with no endpoint or server version taken from this machine's environment."""
    for var in set(re.findall(r"\b[A-Z][A-Z0-9_]*_(?:BASE_URL|VERSION)\b", _providers_text())):
        monkeypatch.delenv(var, raising=False)
    # the commands a checkout of this repository shows (mutmut runs the tests without
    # the noxfile next to them)
    monkeypatch.setattr(
        providers,
        "default_record_command",
        lambda name, _: f"python3 noxw -s live -- --provider {name}",
    )
    monkeypatch.chdir(ROOT)
    doc: dict[str, Any] = json.loads(REPORT.read_text("utf-8"))
    return doc


def _providers_text() -> str:
    return (ROOT / "providers.yaml").read_text("utf-8")


def _rebuilt(doc: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """The committed matrix again, from its recorded cells only: the `not recorded` cells
    and every column's provenance are the matrix's to make."""
    known = load_providers(ROOT / "providers.yaml")
    profiles = {p.name: p for p in profile_providers(PROFILE_URL)}
    cols = doc["columns"]
    return build_matrix(
        [c for c in doc["cells"] if c["verdict"] != "not recorded"],
        [known[c["id"]] for c in cols if c["kind"] == "provider"],
        profiles=[profiles[c["id"]] for c in cols if c["kind"] == "reference-profile"],
        **kw,
    )


# ------------------------------------------------------------------- the committed matrix


def test_the_committed_table_is_rebuilt_from_its_cells_and_cassettes(
    committed: dict[str, Any],
) -> None:
    doc = _rebuilt(committed)
    for key in ("format", "suite_version", "generated", "mode", "title", "rows", "rules"):
        assert doc[key] == committed[key], key
    assert doc["sections"] == committed["sections"]
    # every column: its status, its recording date, suite version, server, advice, evidence
    assert [c["id"] for c in doc["columns"]] == [c["id"] for c in committed["columns"]]
    for got, want in zip(doc["columns"], committed["columns"], strict=True):
        assert got == want, got["id"]
    assert doc["cells"] == committed["cells"]  # the `not recorded` cells with their command
    assert doc["field_providers"] == committed["field_providers"]
    assert set(doc["quirks"]) <= set(committed["quirks"])
    assert all(doc["quirks"][q] == committed["quirks"][q] for q in doc["quirks"])


def test_a_column_shows_its_newest_recording_and_a_replay_says_so(
    committed: dict[str, Any],
) -> None:
    doc = _rebuilt(committed)
    cols = {c["id"]: c for c in doc["columns"]}
    prov = json.loads((ROOT / "cassettes" / "llamacpp" / "provenance.json").read_text())
    newest = max(s["recorded_at"] for s in prov["scenarios"].values())
    oldest = min(s["recorded_at"] for s in prov["scenarios"].values())
    assert newest != oldest
    llama = cols["llamacpp"]["provenance"]
    assert llama["recorded_at"] == newest == "2026-11-30T04:53:09Z"
    assert (llama["how"], llama["cassette_dir"]) == ("replayed", "cassettes/llamacpp")
    assert llama["suite_version_at_record"] == "0.1.0"
    assert llama["server"]["software"] == "llama.cpp llama-server"
    # never recorded: no date, no how, no directory, and the command that records it
    openai = cols["openai"]
    assert openai["status"] == "not recorded"
    assert openai["provenance"]["how"] is None
    assert openai["provenance"]["recorded_at"] is None
    assert openai["provenance"]["cassette_dir"] is None
    cell = next(c for c in doc["cells"] if c["column"] == "openai" and c["row"] == "single")
    assert cell["reason"] == f"no cassette; record with: {openai['record_command']}"
    # a live run says live
    live = {c["id"]: c for c in _rebuilt(committed, mode="live")["columns"]}
    assert live["llamacpp"]["provenance"]["how"] == "live"
    assert live["openai"]["provenance"]["how"] is None
    # the document's date is the newest recording of any column, not the wall clock
    assert doc["generated"] == max(
        c["provenance"]["recorded_at"] for c in doc["columns"] if c["provenance"]["recorded_at"]
    )


def test_the_gateway_section_shows_the_gateways_newest_recording(
    committed: dict[str, Any],
) -> None:
    known = load_providers(ROOT / "providers.yaml")
    profiles = profile_providers(PROFILE_URL)
    gws = gateway_providers(known["litellm"], profiles)
    want = committed["gateways"]["litellm"]["provenance"]
    dates = [
        s["recorded_at"]
        for p in (ROOT / "cassettes" / "_gateway" / "litellm").glob("*/provenance.json")
        for s in json.loads(p.read_text())["scenarios"].values()
    ]
    assert want["recorded_at"] == max(dates) != min(dates)
    through = _cell("gateway:litellm:id-absent", "usage", "quirk", quirks=["Q-INDEX-ABSENT"])
    # with the profile columns, and without them (their definitions then give the injected ids)
    for with_profiles in (profiles, []):
        doc = build_matrix(
            [through], [], profiles=with_profiles, gateways=gws, field_evidence=NO_EVIDENCE
        )
        gw = doc["gateways"]["litellm"]
        assert gw["provenance"] == want
        rows = {r["profile"]: r for r in gw["profiles"]}
        assert rows["id-absent"]["injected"] == ["Q-ID-ABSENT"]
        # the ids seen through the gateway join the list, in order
        assert list(doc["quirks"]) == ["Q-INDEX-ABSENT"]
    # the injected ids are the selected profile columns' own (what this run expected)
    narrowed = [
        ProfileProvider(
            name="profile:id-absent",
            base_url=PROFILE_URL,
            model="id-absent",
            kind="reference-profile",
            profile="id-absent",
            expected_quirks={"Q-ARGS-NULL": {"reason": "r"}, "Q-EXTRA-FIELDS": {"reason": "r"}},
        )
    ]
    doc = build_matrix([], [], profiles=narrowed, gateways=gws, field_evidence=NO_EVIDENCE)
    rows = {r["profile"]: r for r in doc["gateways"]["litellm"]["profiles"]}
    assert rows["id-absent"]["injected"] == ["Q-ARGS-NULL", "Q-EXTRA-FIELDS"]
    assert rows["index-all-zero"]["injected"] == []  # not selected: nothing injected


# ------------------------------------------------------------------------- provenance


def _provider(**kw: Any) -> Provider:
    base: dict[str, Any] = {
        "name": "acme",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "acme-1",
        "record_command": "python3 noxw -s acme",
    }
    return Provider(**(base | kw))


def _cell(column: str, row: str, verdict: str = "conforms", **kw: Any) -> dict[str, Any]:
    return {"column": column, "row": row, "verdict": verdict, "quirks": [], **kw}


def test_record_provenance_writes_one_file_per_column_and_keeps_other_scenarios(
    tmp_path: Path,
) -> None:
    p = _provider(server={"software": "Acme Serve", "version": "2.1"}, model="acmé-1")
    record_provenance(
        tmp_path,
        p,
        "single",
        "2026-01-02T03:04:05Z",
        3,
        {"server_header": "acme/2", "model_field": ""},
        {"elicitation": "prefill", "empty": None},
    )
    record_provenance(tmp_path, p, "parallel", "2026-02-02T00:00:00Z", 1, {"x": "y"})
    text = (tmp_path / "provenance.json").read_text("utf-8")
    want = {
        "model": "acmé-1",
        "provider": "acme",
        "scenarios": {
            "parallel": {
                "recorded_at": "2026-02-02T00:00:00Z",
                "suite_version": __version__,
                "trials": 1,
            },
            "single": {
                "elicitation": "prefill",
                "recorded_at": "2026-01-02T03:04:05Z",
                "suite_version": __version__,
                "trials": 3,
            },
        },
        "seen": {"server_header": "acme/2", "x": "y"},
        "server": {"software": "Acme Serve", "version": "2.1"},
    }
    assert text == json.dumps(want, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert load_provenance(tmp_path) == want
    # nothing seen: the file has no `seen`
    record_provenance(tmp_path / "b", p, "single", "t", 1, {})
    assert "seen" not in load_provenance(tmp_path / "b")


def test_what_a_server_said_is_written_even_when_it_is_not_valid_unicode(
    tmp_path: Path,
) -> None:
    # a lone surrogate from the wire: written as its JSON escape, read back the same
    record_provenance(tmp_path, _provider(), "single", "t", 1, {"server_header": "x\ud800"})
    assert "\\ud800" in (tmp_path / "provenance.json").read_text("utf-8")
    assert load_provenance(tmp_path)["seen"] == {"server_header": "x\ud800"}


def test_load_provenance_of_no_file_or_a_broken_one_is_empty(tmp_path: Path) -> None:
    assert load_provenance(tmp_path) == {}
    (tmp_path / "provenance.json").write_text("{not json", "utf-8")
    assert load_provenance(tmp_path) == {}


def test_column_for_takes_the_newest_date_and_version_and_what_the_server_said() -> None:
    p = _provider(
        label="Acme Cloud",
        server={"software": "Acme Serve", "version": "1.0"},
        expected_quirks={"Q-ID-ABSENT": {"reason": "documented", "scenarios": ["single"]}},
    )
    prov = {
        "scenarios": {
            "b": {"recorded_at": "2026-03-01T00:00:00Z", "suite_version": "0.2.0"},
            "a": {"recorded_at": "2026-01-01T00:00:00Z", "suite_version": "0.10.0"},
            "c": {"recorded_at": "2026-02-01T00:00:00Z", "suite_version": "0.1.0"},
            "d": {"recorded_at": None, "suite_version": None},
            "e": {"trials": 1},
        },
        "seen": {"model_field": "from-the-file", "empty": ""},
        "server": {"software": "Acme Serve Pro", "version": None},
    }
    cells = [
        _cell("acme", "single", meta={"model": "m-cell", "system_fingerprint": "fp1"}),
        _cell("acme", "parallel", meta={"system_fingerprint": "fp2", "server": "acme/2"}),
        _cell("acme", "usage", meta={"server": "acme/3"}),
        _cell("acme", "named", meta=None),
    ]
    col = column_for(p, cells, prov, True, "cassettes/acme")
    assert col["id"] == "acme" and col["kind"] == "provider" and col["model"] == "acme-1"
    assert col["label"] == "Acme Cloud" and col["base_url"] == "http://127.0.0.1:9/v1"
    assert col["status"] == "recorded" and col["record_command"] == "python3 noxw -s acme"
    assert col["provenance"] == {
        "how": "replayed",
        "recorded_at": "2026-03-01T00:00:00Z",  # the newest, whatever the scenario order
        "suite_version_at_record": "0.2.0",  # the greatest string: as the matrix always did
        "cassette_dir": "cassettes/acme",
        "server": {
            "software": "Acme Serve Pro",  # the recording's server wins
            "version": "1.0",  # ... and the entry fills what it did not say
            "seen": {
                "model_field": "from-the-file",  # the file's own wins over a cell's
                "empty": "",
                "system_fingerprint": "fp1",  # the first cell that says
                "server_header": "acme/2",
            },
        },
    }
    assert col["expected_quirks"] == {"Q-ID-ABSENT": "documented"}
    assert col["client_advice"] == ""
    assert prov["seen"] == {"model_field": "from-the-file", "empty": ""}  # not written to


def test_column_for_a_column_never_recorded_has_no_provenance() -> None:
    p = _provider(server={"software": "Acme Serve", "version": "1.0"})
    cells = [_cell("acme", "single", "not recorded", meta={"model": "m"})]
    col = column_for(p, cells, {}, True, "cassettes/acme")
    assert col["label"] == "acme"  # no label: the name
    assert col["status"] == "not recorded"
    assert col["provenance"] == {
        "how": None,
        "recorded_at": None,
        "suite_version_at_record": None,
        "cassette_dir": None,
        "server": {"software": "Acme Serve", "version": "1.0", "seen": {"model_field": "m"}},
    }
    # one recorded cell is enough, and the live mode says live
    cells.append(_cell("acme", "parallel", "quirk"))
    col = column_for(p, cells, {}, False, None)
    assert (col["status"], col["provenance"]["how"]) == ("recorded", "live")
    assert col["provenance"]["cassette_dir"] is None


# ------------------------------------------------------------------------------ build


def test_build_matrix_fills_what_was_not_recorded_and_dates_the_document(
    tmp_path: Path,
) -> None:
    acme = _provider()
    other = _provider(name="other", record_command="python3 noxw -s other")
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "provenance.json").write_text(
        json.dumps(
            {
                "scenarios": {
                    "single": {"recorded_at": "2026-05-01T00:00:00Z", "suite_version": "0.1.0"},
                    "usage": {"recorded_at": "2026-04-01T00:00:00Z", "suite_version": "0.1.0"},
                }
            }
        )
    )
    prof = ProfileProvider(
        name="profile:id-absent",
        base_url=PROFILE_URL,
        model="id-absent",
        kind="reference-profile",
        profile="id-absent",
        scenario="usage",
    )
    (tmp_path / "_profiles" / "id-absent").mkdir(parents=True)
    (tmp_path / "_profiles" / "id-absent" / "provenance.json").write_text(
        json.dumps({"scenarios": {"usage": {"recorded_at": "2026-06-01T00:00:00Z"}}})
    )
    scen = [SCENARIOS["single"], SCENARIOS["usage"]]
    broken = {"naive": {"status": "wrong"}, "guarded": {"status": "ok"}, "robust": {"status": "ok"}}
    cells = [
        _cell("acme", "single", "quirk", quirks=["Q-ID-ABSENT"], impact=broken),
        _cell("profile:id-absent", "usage", "quirk", quirks=["Q-INDEX-ABSENT"], impact=broken),
    ]
    doc = build_matrix(
        cells,
        [acme, other],
        scenarios=scen,
        cassette_root=tmp_path,
        profiles=[prof],
        title="My table",
        field_evidence=NO_EVIDENCE,
    )
    assert doc["format"] == FORMAT and doc["suite_version"] == __version__
    assert doc["title"] == "My table" and doc["mode"] == "replay"
    assert doc["generated"] == "2026-06-01T00:00:00Z"  # the newest column's date
    assert doc["rows"] == [
        {"id": s.id, "title": s.title, "description": s.description} for s in scen
    ]
    assert doc["sections"] == {
        "providers": ["acme", "other"],
        "reference_profiles": ["profile:id-absent"],
        "captures": [],
    }
    # the profile is judged on its one scenario only; a provider gets every scenario
    assert [(c["column"], c["row"], c["verdict"]) for c in doc["cells"]] == [
        ("acme", "single", "quirk"),
        ("acme", "usage", "not recorded"),
        ("other", "single", "not recorded"),
        ("other", "usage", "not recorded"),
        ("profile:id-absent", "usage", "quirk"),
    ]
    assert doc["cells"][3] == {
        "column": "other",
        "row": "usage",
        "verdict": "not recorded",
        "reason": "no cassette; record with: python3 noxw -s other",
        "quirks": [],
        "expected": [],
        "findings": [],
        "evidence": [],
        "impact": {},
        "tool_calls": {},
        "finish_reason": None,
        "cassette": None,
        "interaction": None,
        "trials": {},
        "retries": [],
    }
    cols = {c["id"]: c for c in doc["columns"]}
    assert cols["acme"]["provenance"]["cassette_dir"] == str(tmp_path / "acme")
    assert cols["acme"]["provenance"]["recorded_at"] == "2026-05-01T00:00:00Z"
    assert cols["other"]["status"] == "not recorded"
    assert cols["profile:id-absent"]["provenance"]["cassette_dir"] == str(
        tmp_path / "_profiles" / "id-absent"
    )
    assert list(doc["quirks"]) == ["Q-ID-ABSENT", "Q-INDEX-ABSENT"]
    assert doc["rules"] == rule_entries()
    # advice comes from each column's own cells
    assert "Q-ID-ABSENT" in cols["acme"]["client_advice"]
    assert "Q-INDEX-ABSENT" not in cols["acme"]["client_advice"]
    assert "Q-INDEX-ABSENT" in cols["profile:id-absent"]["client_advice"]
    assert cols["other"]["client_advice"] == "no client impact recorded"
    # field evidence is asked for: each provider column carries its (empty) list
    assert cols["acme"]["field_evidence"] == [] and doc["field_providers"] == []
    assert "field_evidence" not in cols["profile:id-absent"]
    # recorded cells but no cassette directory (a live run writing elsewhere): none shown
    live = build_matrix(
        [_cell("other", "single")], [other], scenarios=scen, cassette_root=tmp_path / "none"
    )
    assert live["columns"][0]["status"] == "recorded"
    assert live["columns"][0]["provenance"]["cassette_dir"] is None
    # nothing recorded at all: no date
    bare = build_matrix([], [other], scenarios=scen, cassette_root=tmp_path / "none")
    assert bare["generated"] is None
    assert [c["id"] for c in bare["rows"]] == ["single", "usage"]


def test_build_matrix_defaults_to_every_scenario_and_the_committed_field_evidence(
    tmp_path: Path,
) -> None:
    doc = build_matrix([], [_provider(name="dashscope")], cassette_root=tmp_path)
    assert [r["id"] for r in doc["rows"]] == list(SCENARIOS)
    assert doc["title"] == "Streaming tool-call conformance"
    [col] = doc["columns"]
    assert col["field_evidence"] and all(e["column"] == "dashscope" for e in col["field_evidence"])
    assert "Q-EMPTY-STRING-OVERWRITE" in doc["quirks"]  # seen in public recordings
    assert doc["field_providers"]  # routes without a column
    assert list(doc["quirks"]) == sorted(doc["quirks"])


def test_field_evidence_never_changes_a_cell_and_its_ids_join_the_list() -> None:
    evidence = {
        "routes": {"acme": {"label": "Acme", "column": None}},
        "entries": [
            {"route": "x", "column": "x", "capture": "a", "quirks": ["Q-INDEX-ABSENT"]},
            {"route": "acme", "column": None, "capture": "b", "quirks": ["Q-ARGS-NULL"]},
        ],
    }
    cat = quirk_catalogue()
    doc = {
        "columns": [
            {"id": "x", "kind": "provider"},
            {"id": "p", "kind": "reference-profile"},
            {"id": "y", "kind": "provider"},
        ],
        "cells": [{"column": "x", "row": "single", "verdict": "not recorded"}],
        "quirks": {"Q-ID-ABSENT": {"title": "kept as it was"}},
    }
    out = add_field_evidence(doc, evidence)
    assert out["columns"][0]["field_evidence"] == [evidence["entries"][0]]
    assert out["columns"][2]["field_evidence"] == []
    assert "field_evidence" not in out["columns"][1]
    assert out["field_providers"] == [
        {"route": "acme", "label": "Acme", "entries": [evidence["entries"][1]]}
    ]
    assert out["cells"][0]["verdict"] == "not recorded"
    assert list(out["quirks"]) == ["Q-ARGS-NULL", "Q-ID-ABSENT", "Q-INDEX-ABSENT"]
    assert out["quirks"]["Q-ID-ABSENT"] == {"title": "kept as it was"}  # the doc's own wins
    assert out["quirks"]["Q-ARGS-NULL"]["title"] == cat["Q-ARGS-NULL"]["title"]


# -------------------------------------------------------------------------- the lists


def test_quirk_entries_carry_the_catalogue_text_and_the_level() -> None:
    cat = quirk_catalogue()
    cells = [{"quirks": ["Q-INDEX-ALL-ZERO", "Q-ID-ABSENT"]}, {"verdict": "conforms"}]
    out = quirk_entries(cells, extra=["Q-EXTRA-FIELDS"])
    assert list(out) == ["Q-EXTRA-FIELDS", "Q-ID-ABSENT", "Q-INDEX-ALL-ZERO"]
    e, c = out["Q-INDEX-ALL-ZERO"], cat["Q-INDEX-ALL-ZERO"]
    assert e == {
        "title": c["title"],
        "group": c["group"],
        "group_title": c["group_title"],
        "level": "MUST",
        "reference_behaviour": c["reference_behaviour"],
        "anchor": c["anchor"],
        "sources": c["sources"],
        "breaks": c["breaks"],
        "workaround": c["workaround"],
    }
    assert all(e[k] for k in ("title", "group", "group_title", "anchor", "breaks"))
    assert out["Q-EXTRA-FIELDS"]["level"] == "INFO"
    assert quirk_entries([]) == {}
    with pytest.raises(UnknownQuirkError):  # an id outside the catalogue is refused
        quirk_entries([{"quirks": ["Q-NO-SUCH-QUIRK"]}])


def test_rule_entries_are_every_rule_with_its_level_statement_and_source() -> None:
    out = rule_entries()
    assert list(out) == list(RULES)
    r = next(iter(RULES.values()))
    assert out[r.id] == {"level": r.level, "statement": r.statement, "source": r.source}
    assert all(v["statement"] and v["level"] in ("MUST", "SHOULD", "INFO") for v in out.values())


# ------------------------------------------------------------------------ scripted lane


def test_the_scripted_section_joins_the_document_and_its_comparison_ids_the_list(
    tmp_path: Path,
) -> None:
    from conformance.lanes.vllm_columns import scripted_providers

    cols = [p for p in scripted_providers() if p.parser == "hermes"]
    base = cols[0].name
    load = next(p.name for p in cols if p.load > 1 and p.steps == 1)
    calls = {"robust": [{"name": "get_weather", "arguments": '{"city": "Paris"}'}]}
    cells = [
        _cell(
            base,
            "single",
            "quirk",
            quirks=["Q-ID-FORMAT"],
            tool_calls=calls,
            finish_reason="tool_calls",
        )
    ]
    cells.append(
        _cell(
            load,
            "single",
            "quirk",
            quirks=["Q-ARGS-WHOLE-IN-ONE-DELTA", "Q-ID-FORMAT"],
            tool_calls=calls,
            finish_reason="tool_calls",
        )
    )
    doc = build_matrix(
        cells,
        [],
        scripted=cols,
        scenarios=[SCENARIOS["single"]],
        cassette_root=tmp_path,
        field_evidence=NO_EVIDENCE,
    )
    assert doc["columns"] == [] and doc["cells"] == []  # never merged with a column
    assert doc["scripted_parsers"]["parsers"][0]["column"] == base
    # found by the steps × load comparison only: listed like every other id, in order
    assert "Q-DELTA-SHAPE-LOAD-DEPENDENT" in doc["quirks"]
    assert list(doc["quirks"]) == ["Q-DELTA-SHAPE-LOAD-DEPENDENT", "Q-ID-FORMAT"]


# ------------------------------------------------------------------- analyze --report


def test_captures_become_a_field_mode_table_of_their_own() -> None:
    from test_report import CONFORMING, DASHSCOPE

    first = [dict(c, system_fingerprint="fp_1") for c in DASHSCOPE]
    a = analyze_chunks(first, source="/tmp/caps/dash.jsonl#2")
    b = analyze_chunks(CONFORMING, source="good.jsonl")
    doc = matrix_from_captures([a, b])
    assert doc["format"] == FORMAT and doc["mode"] == "field"
    assert doc["title"] == "Field captures" and doc["generated"] is None
    assert doc["sections"] == {
        "providers": [],
        "reference_profiles": [],
        "captures": ["/tmp/caps/dash.jsonl#2", "good.jsonl"],
    }
    assert doc["rows"] == [
        {"id": "capture", "title": "Capture", "description": "a captured stream"}
    ]
    col = doc["columns"][0]
    assert col["label"] == "dash.jsonl"  # the file's name, without the transcript index
    assert col["kind"] == "capture" and col["status"] == "recorded"
    assert col["model"] == "m" and col["base_url"] is None
    assert col["record_command"] == "" and col["expected_quirks"] == {}
    assert col["provenance"] == {
        "how": "capture",
        "recorded_at": None,
        "suite_version_at_record": None,
        "cassette_dir": None,
        "server": {
            "software": None,
            "version": None,
            "seen": {"model_field": "m", "system_fingerprint": ["fp_1"]},
        },
    }
    assert "Q-EMPTY-STRING-OVERWRITE" in col["client_advice"]
    cell = doc["cells"][0]
    assert cell["column"] == "/tmp/caps/dash.jsonl#2" and cell["row"] == "capture"
    assert cell["verdict"] == "quirk" and "Q-EMPTY-STRING-OVERWRITE" in cell["quirks"]
    assert cell["finish_reason"] == "tool_calls"
    assert cell["evidence"] == []  # no transcript kept: no wire evidence
    assert cell["tool_calls"]["robust"][0]["arguments"] == '{"city": "Paris"}'
    assert cell["impact"]["naive"]["status"] != "ok"
    assert doc["cells"][1]["verdict"] == "conforms"
    assert "Q-EMPTY-STRING-OVERWRITE" not in doc["cells"][1]["quirks"]
    assert "Q-EMPTY-STRING-OVERWRITE" in doc["quirks"]


def test_a_capture_that_keeps_its_transcript_gets_the_wire_evidence(tmp_path: Path) -> None:
    from test_report import DASHSCOPE

    from conformance.analysis import analyze
    from conformance.readers import read_path

    p = tmp_path / "dash.jsonl"
    p.write_text("".join(json.dumps(c) + "\n" for c in DASHSCOPE))
    [t] = read_path(p)
    r = analyze(t)
    r.transcript = t  # type: ignore[attr-defined]  # as `analyze --report` keeps it
    [cell] = matrix_from_captures([r])["cells"]
    hot = [e for e in cell["evidence"] if e.get("highlight")]
    assert any('"id": ""' in e["data"] for e in hot)


def test_provenance_is_read_as_utf8_whatever_the_locale(tmp_path: Path) -> None:
    import locale

    record_provenance(tmp_path, _provider(model="acmé-1"), "single", "t", 1, {})
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")  # an ASCII locale
    try:
        prov = load_provenance(tmp_path)
    finally:
        locale.setlocale(locale.LC_CTYPE, before)
    assert prov["model"] == "acmé-1"
