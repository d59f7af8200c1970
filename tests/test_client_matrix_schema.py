"""The client matrix's JSON Schema: the committed report validates; broken ones do not."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from conformance.client_matrix.report import render_markdown, seed_table, validate

REPORT = Path(__file__).resolve().parents[1] / "reports" / "client-matrix.json"

SMALL = {
    "generated_at": "2026-11-30T23:00:00Z",
    "suite_version": "0.1.0",
    "timeout_seconds": 10,
    "clients": [
        {"id": "openai-python", "package": "openai", "version": "2.54.0", "ecosystem": "python"},
        {"id": "ai-sdk", "package": "ai", "version": "7.0.173", "ecosystem": "npm"},
    ],
    "streams": [
        {
            "id": "profile:index-all-zero",
            "kind": "profile",
            "profile": "index-all-zero",
            "quirks": ["Q-INDEX-ALL-ZERO"],
        },
        {
            "id": "vllm:parallel",
            "kind": "provider",
            "column": "vllm",
            "source": "cassettes/vllm/parallel.yaml#0",
        },
    ],
    "cells": [
        {
            "client": "openai-python",
            "stream": "profile:index-all-zero",
            "outcome": "merged",
            "detail": "calls merged: 2 calls became 1",
            "problems": ["calls merged"],
            "calls": [{"id": "call_b", "name": "get_time", "arguments": "{}{}"}],
        },
        {
            "client": "openai-python",
            "stream": "vllm:parallel",
            "outcome": "ok",
            "detail": "",
            "calls": [],
        },
        {
            "client": "ai-sdk",
            "stream": "profile:index-all-zero",
            "outcome": "crashed",
            "detail": "TypeError: x",
            "calls": None,
        },
        {
            "client": "ai-sdk",
            "stream": "vllm:parallel",
            "outcome": "hung",
            "detail": "",
            "calls": None,
        },
    ],
}


def test_a_small_matrix_validates_and_renders_the_seed_table():
    validate(SMALL)
    table = seed_table(SMALL)
    assert "| openai-python (python) | openai 2.54.0 |" in table
    assert "✗ merged" in table
    assert "## Providers × clients" in render_markdown(SMALL)


@pytest.mark.parametrize(
    "breakage",
    [
        lambda m: m["cells"].pop(),  # a pair without a cell
        lambda m: m["cells"][0].update(outcome="fine"),  # not an outcome
        lambda m: m["cells"][0].pop("problems"),  # a failing cell that does not say how
        lambda m: m["cells"][0].update(problems=["arguments concatenated "]),  # not a kind
        lambda m: m["cells"][0]["calls"][0].update(invalid=3),  # a flag is a reason or true
        lambda m: m["clients"][1].update(ecosystem="ruby"),
        lambda m: m["streams"][0].update(id="index-all-zero"),  # a profile id names the profile
        lambda m: m["streams"][1].pop("column"),  # a provider stream names its column
    ],
)
def test_broken_matrices_do_not_validate(breakage):
    broken = copy.deepcopy(SMALL)
    breakage(broken)
    with pytest.raises(jsonschema.ValidationError):
        validate(broken)


def test_the_committed_report_validates_and_is_complete():
    if not REPORT.exists():
        pytest.skip("reports/client-matrix.json is not generated yet (python3 noxw -s clients)")
    matrix = json.loads(REPORT.read_text(encoding="utf-8"))
    validate(matrix)
    ecosystems = [c["ecosystem"] for c in matrix["clients"]]
    assert len(ecosystems) >= 20 and ecosystems.count("npm") >= 3
    # The three seed algorithms are rows, each naming where it comes from.
    origins = {c["id"]: c.get("origin", "") for c in matrix["clients"]}
    assert "crow-cli" in origins["crow-cli"]
    assert "cfosilvia" in origins["cfosilvia-handler"]
    assert "LibreChat" in origins["librechat-langchain-js"]
    own = [c for c in matrix["cells"] if c["client"] == "conformance"]
    assert own and all(c["outcome"] in ("ok", "n/a") for c in own), [
        (c["stream"], c["outcome"]) for c in own if c["outcome"] not in ("ok", "n/a")
    ]
    assert {s["kind"] for s in matrix["streams"]} >= {"profile", "provider"}
