"""The documentation: docs/quirks.md is generated from the data and up to date, every quirk
id in the README and the committed report links to an entry that exists, the README is a
front page (short, no internal vocabulary), and the key redactor never rewrites it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from conformance.report import markers, update_readme
from conformance.report.catalogue import render_quirks_doc
from conformance.rules import quirk_catalogue

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
QUIRKS_DOC = ROOT / "docs" / "quirks.md"
LINK = re.compile(r"\]\(((?:\.\./)?docs/quirks\.md)#([a-z0-9-]+)\)")


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors of the level-3 headings (the quirk ids)."""
    return {m.group(1).lower() for m in re.finditer(r"^### (Q-[A-Z0-9-]+)$", markdown, re.M)}


def test_quirks_doc_is_up_to_date() -> None:
    assert QUIRKS_DOC.read_text("utf-8") == render_quirks_doc(), (
        "docs/quirks.md is out of date: python -m conformance.report.catalogue"
    )


def test_quirks_doc_has_every_quirk_with_its_detector() -> None:
    text = QUIRKS_DOC.read_text("utf-8")
    assert _anchors(text) == {q.lower() for q in quirk_catalogue()}
    entry = text.split("### Q-EMPTY-STRING-OVERWRITE\n", 1)[1].split("\n### ", 1)[0]
    assert "- **What breaks:**" in entry and "- **Workaround:**" in entry
    assert "- **Detector:** `check_continuation_id`, `check_continuation_name`" in entry
    assert "Alibaba DashScope" in entry  # seen in public recordings


def test_quirks_doc_entry_from_hand_written_data() -> None:
    cat = {
        "Q-DEMO-ONE": {
            "title": "a demo | quirk",
            "group": "D",
            "group_title": "id",
            "breaks": "clients",
            "workaround": "keep it",
            "sources": "a#1",
            "providers": "",
            "reference_behaviour": True,
            "level": "SHOULD",
        }
    }
    text = render_quirks_doc(cat, found={"Q-DEMO-ONE": ["detect_demo"]}, seen={})
    assert "| [Q-DEMO-ONE](#q-demo-one) | a demo \\| quirk | SHOULD |" in text
    assert "## D. id\n\n### Q-DEMO-ONE\n\n**a demo | quirk** · level SHOULD · reference" in text
    assert "- **Detector:** `detect_demo`" in text
    assert "Seen with" not in text  # empty fields are left out


@pytest.mark.parametrize("path", ["README.md", "reports/quirks-matrix.md"])
def test_every_quirk_link_reaches_an_entry(path: str) -> None:
    text = (ROOT / path).read_text("utf-8")
    anchors = _anchors(QUIRKS_DOC.read_text("utf-8"))
    links = LINK.findall(text)
    if path == "reports/quirks-matrix.md" and not links:
        pytest.skip("the committed report predates the quirk links (python3 noxw -s matrix)")
    assert links, f"{path} links no quirk to docs/quirks.md"
    assert {a for _, a in links} <= anchors


def test_readme_is_a_front_page() -> None:
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= 360  # a front page, with a short glossary and the parser table
    for word in (
        "seed 000",
        "§",
        "the team",
        "catalogue group",
        "../shared",
        "DESIGN.md",
        "<redacted>",
    ):
        assert word not in text, word
    assert (
        "pip install toolcall-conformance" in text
        and 'pip install "toolcall-conformance[suite]"' in text
    )
    assert "python3 noxw -s matrix" in text and "python3 noxw -s tests" in text
    assert "<!-- matrix:start -->" in text and "<!-- matrix:end -->" in text
    for target in re.findall(r"\]\(((?:docs|reports)/[^)#]+)", text):
        if target in (
            "docs/ci.md",
            "docs/clients.md",
            "reports/client-matrix.md",
            "docs/mutation.md",
            "docs/lanes/litellm.md",
            "docs/lanes/llama-cpp-python.md",
        ):
            continue  # pages other parts of the project add
        assert (ROOT / target).exists(), target


def test_readme_update_is_not_redacted(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "# x\n\n<!-- matrix:start -->\n<!-- matrix:end -->\n\n"
        "A `?key=` or a password in `base_url`; Bearer abcdefgh12345678.\n"
    )
    assert update_readme(readme, "| a | b |\n")
    text = readme.read_text()
    assert "A `?key=` or a password in `base_url`; Bearer abcdefgh12345678." in text
    assert "<redacted>" not in text


def test_readme_clients_table_is_the_committed_client_matrix() -> None:
    """The README's clients × seed-quirks block is rendered from reports/client-matrix.json."""
    import json

    from conformance.client_matrix.report import readme_table
    from conformance.report import markers

    text = (ROOT / "README.md").read_text("utf-8")
    start, end = markers("clients")
    block = text[text.index(start) + len(start) : text.index(end)].strip("\n")
    matrix = json.loads((ROOT / "reports" / "client-matrix.json").read_text("utf-8"))
    assert block == readme_table(matrix)


def test_readme_mutation_table_is_docs_mutation_json() -> None:
    """The README's mutation figures are the ones docs/mutation.json holds (both written
    by tools/mutation_report.py), so a module judged again cannot leave the README behind."""
    import json

    root = Path(__file__).resolve().parent.parent
    report = _mutation_report()
    text = (root / "README.md").read_text("utf-8")
    start, end = markers("mutation")
    block = text.split(start)[1].split(end)[0]
    data = json.loads((root / "docs" / "mutation.json").read_text("utf-8"))
    assert block.strip() == report.readme_table(data)
    assert "| `client` |" in block and "| `analysis` |" in block


def _mutation_report() -> Any:
    """tools/mutation_report.py, loaded as a module (tools/ is no package)."""
    import importlib.util

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location(
        "mutation_report", root / "tools" / "mutation_report.py"
    )
    assert spec and spec.loader
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    return report


def _meta(tmp_path: Path, hashes: dict[str, str], codes: dict[str, int | None]) -> Path:
    import json

    meta = tmp_path / "mutants" / "conformance" / "m.py.meta"
    meta.parent.mkdir(parents=True, exist_ok=True)
    keys = {f"conformance.m.{k}": v for k, v in codes.items()}
    meta.write_text(json.dumps({"exit_code_by_key": keys, "hash_by_function_name": hashes}))
    return meta


def _codes(meta: Path) -> dict[str, int | None]:
    import json

    got = json.loads(meta.read_text())["exit_code_by_key"]
    return {k.removeprefix("conformance.m."): v for k, v in got.items()}


def test_mutation_verdicts_outlive_mutants_dir_while_the_function_is_unchanged(
    tmp_path: Path,
) -> None:
    report = _mutation_report()
    report.ROOT, report.VERDICTS = tmp_path, tmp_path / "verdicts.json"
    judged = {"x_f__mutmut_1": 1, "x_f__mutmut_2": 0, "x_f__mutmut_3": 1, "x_g__mutmut_1": -9}
    _meta(tmp_path, {"x_f": "a1", "x_g": "b1"}, judged)
    assert report.save_verdicts() == 4
    # Another machine: the same code, nothing judged; then g's code changed.
    meta = _meta(tmp_path, {"x_f": "a1", "x_g": "b2"}, dict.fromkeys(judged))
    assert report.restore_verdicts() == 3
    assert _codes(meta) == {**judged, "x_g__mutmut_1": None}
    # A run that judged only f's second mutant again keeps the other verdicts of f.
    _meta(tmp_path, {"x_f": "a1", "x_g": "b2"}, {"x_f__mutmut_2": 1, "x_g__mutmut_1": 0})
    report.save_verdicts()
    meta = _meta(tmp_path, {"x_f": "a1", "x_g": "b2"}, dict.fromkeys(judged))
    assert report.restore_verdicts() == 4
    assert _codes(meta) == {**judged, "x_f__mutmut_2": 1, "x_g__mutmut_1": 0}
    # A verdict already in mutants/ is never overwritten.
    meta = _meta(
        tmp_path, {"x_f": "a1", "x_g": "b2"}, {**dict.fromkeys(judged), "x_f__mutmut_1": 0}
    )
    assert report.restore_verdicts() == 3
    assert _codes(meta)["x_f__mutmut_1"] == 0


def test_mutation_verdicts_of_changed_code_not_judged_since_are_dropped(tmp_path: Path) -> None:
    import json

    report = _mutation_report()
    report.ROOT, report.VERDICTS = tmp_path, tmp_path / "verdicts.json"
    _meta(tmp_path, {"x_f": "a1", "x_g": "b1"}, {"x_f__mutmut_1": 1, "x_g__mutmut_1": 1})
    report.save_verdicts()
    _meta(tmp_path, {"x_f": "a2"}, {"x_f__mutmut_1": None})  # f changed, g is gone
    assert report.save_verdicts() == 0
    assert json.loads(report.VERDICTS.read_text()) == {}


def test_mutation_equivalents_refuse_a_key_listed_twice(tmp_path: Path) -> None:
    """The committed list loads; a mutant listed twice is refused with its line (YAML
    alone would keep the second entry and drop the first one's reason unseen)."""
    report = _mutation_report()
    assert len(report.equivalents()) > 800
    entry = "conformance.m.x_f__mutmut_1:\n  mutation: a\n  why: b\n"
    report.EQUIVALENT = tmp_path / "equivalent.yaml"
    report.EQUIVALENT.write_text(entry + "conformance.m.x_f__mutmut_2:\n  mutation: c\n  why: d\n")
    assert set(report.equivalents()) == {
        "conformance.m.x_f__mutmut_1",
        "conformance.m.x_f__mutmut_2",
    }
    report.EQUIVALENT.write_text(entry + entry)
    with pytest.raises(
        SystemExit, match=r"equivalent.yaml:4: conformance.m.x_f__mutmut_1 is listed twice"
    ):
        report.equivalents()
