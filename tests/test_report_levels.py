"""A quirk's level in the renderers: the document's, else the registry's, never a guess."""

from __future__ import annotations

import pytest

from conformance import registry
from conformance.report.common import MatrixError, quirk_level


def test_the_documents_level_is_used_first() -> None:
    doc = {"quirks": {"Q-ID-ABSENT": {"level": "INFO"}}}
    assert quirk_level(doc, "Q-ID-ABSENT") == "INFO"


def test_a_document_without_a_level_gets_the_registrys_not_should() -> None:
    must = next(q for q, s in registry.specs().items() if s.level.value == "MUST")
    info = next(q for q, s in registry.specs().items() if s.level.value == "INFO")
    assert quirk_level({"quirks": {}}, must) == "MUST"
    assert quirk_level({}, info) == "INFO"


def test_an_unknown_id_takes_its_findings_highest_level() -> None:
    cell = {
        "findings": [
            {"quirk": "Q-FROM-A-NEWER-CATALOGUE", "level": "INFO"},
            {"quirk": "Q-FROM-A-NEWER-CATALOGUE", "level": "MUST"},
            {"quirk": "Q-ID-ABSENT", "level": "INFO"},
        ]
    }
    assert quirk_level({}, "Q-FROM-A-NEWER-CATALOGUE", cell) == "MUST"


def test_an_id_nobody_knows_is_refused_in_one_line() -> None:
    with pytest.raises(MatrixError, match="Q-FROM-A-NEWER-CATALOGUE: no level") as e:
        quirk_level({}, "Q-FROM-A-NEWER-CATALOGUE", {"findings": []})
    assert "\n" not in str(e.value)
