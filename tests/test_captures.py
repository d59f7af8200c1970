"""Reality check: the analyzer on the 28 real recorded streams of ../shared/captures.

Every expectation below was checked by hand against the capture file (and SOURCES.md):
the calls the robust strategy must assemble (id exactly as sent, name, parsed arguments),
the quirks the stream really shows, the verdict, the last finish_reason and how the two
simpler strategies fare (naive = seed 000 §2 literally: it crashes on `choices: []` and on
a missing `index`). The captures are not the project's to commit: they are read from
``../shared/captures`` next to the repository (or ``$CONFORMANCE_CAPTURES``), and the
whole module is skipped, visibly, when they are absent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.analysis import analyze
from conformance.cli import main
from conformance.readers import read_path

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = Path(os.environ.get("CONFORMANCE_CAPTURES") or ROOT.parent / "shared" / "captures")
if not CAPTURES.is_dir():
    pytest.skip(
        f"real captures not found at {CAPTURES} (set CONFORMANCE_CAPTURES)",
        allow_module_level=True,
    )

ADD = {"a": 2, "b": 3}
WHOLE = "Q-ARGS-WHOLE-IN-ONE-DELTA"
EXTRA = "Q-EXTRA-FIELDS"
FORMAT = "Q-ID-FORMAT"
USAGE0 = "Q-USAGE-EMPTY-CHOICES"
PLACEMENT = "Q-USAGE-PLACEMENT"
ENVELOPE = "Q-ENVELOPE-FIELDS-MISSING"
REPEATED = "Q-FINISH-REPEATED"
SAME_CHUNK = "Q-FINISH-SAME-CHUNK-AS-CALL"
NO_INDEX = {"Q-INDEX-ABSENT", "Q-INDEX-ABSENT-WHOLE-CALL"}

# file -> verdict, finish_reason, quirks, robust calls (id, name, arguments),
#         (naive, guarded) client impact
EXPECTED: dict[str, tuple] = {
    # index 1 for the only call (Anthropic content-block numbering); `toolu_` id.
    "anthropic-compat-claude-haiku-4-5-index-starts-at-1.jsonl": (
        "quirk",
        "tool_calls",
        {FORMAT, "Q-INDEX-NONZERO-START"},
        [("toolu_sanitized", "read_file", {"path": "a.txt"})],
        ("ok", "ok"),
    ),
    # chunk id chatcmpl-… then gen-…; native_finish_reason; finish twice, usage on the 2nd.
    "avian-kimi-k2.5-parallel-chunk-id-switch.jsonl": (
        "quirk",
        "tool_calls",
        {"Q-CHUNK-ID-UNSTABLE", EXTRA, REPEATED, FORMAT, PLACEMENT},
        [("functions.add:0", "add", ADD), ("functions.multiply:1", "multiply", ADD)],
        ("ok", "ok"),
    ),
    # leading prompt-filter chunk with `choices: []`; content_filter_results; usage chunk
    # with latency_checkpoint.
    "azure-gpt-5-mini-prompt-filter-first-chunk.jsonl": (
        "quirk",
        "tool_calls",
        {"Q-AZURE-PROMPT-FILTER-CHUNK", EXTRA, USAGE0},
        [("call_tWA8BJziGlCyhQEXhEHn6eXK", "weather", {"location": "Florence, Italy"})],
        ("crashed", "ok"),
    ),
    # `id: ""` on every continuation; a trailing delta without a finish_reason key.
    "dashscope-qwen3-max-empty-id-continuation.jsonl": (
        "quirk",
        "tool_calls",
        {"Q-EMPTY-STRING-OVERWRITE", ENVELOPE, USAGE0},
        [("call_eee11723464a4b9eb8cee71d", "weather", {"location": "San Francisco"})],
        ("crashed", "ok"),
    ),
    # `call_00_…` ids; usage on the finish chunk.
    "deepseek-reasoner-reasoning-then-tool.jsonl": (
        "quirk",
        "tool_calls",
        {FORMAT, PLACEMENT},
        [("call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather", {"location": "San Francisco"})],
        ("ok", "ok"),
    ),
    # one chunk: no chunk id, no index, id "", finish "stop" with the call and the usage.
    "gemini-2.0-flash-compat-empty-id-no-index.jsonl": (
        "quirk",
        "stop",
        {
            WHOLE,
            ENVELOPE,
            SAME_CHUNK,
            "Q-FINISH-STOP-WITH-TOOLCALLS",
            "Q-ID-ABSENT",
            PLACEMENT,
            *NO_INDEX,
        },
        [("", "return_list_of_str", {"value": ["apple", "banana", "orange"]})],
        ("crashed", "ok"),
    ),
    # reasoning with `channel`, x_groq; whole call; `fc_` id; usage on the finish chunk.
    "groq-gpt-oss-120b-whole-args-fc-id.jsonl": (
        "quirk",
        "tool_calls",
        {WHOLE, EXTRA, FORMAT, PLACEMENT},
        [("fc_bfb39741-3748-4def-9886-a93fc9c64a90", "get_something_by_name", {"name": "example"})],
        ("ok", "ok"),
    ),
    # usage on the finish chunk and again in a `choices: []` chunk.
    "groq-kimi-k2-parallel-whole-calls.jsonl": (
        "quirk",
        "tool_calls",
        {WHOLE, EXTRA, FORMAT, USAGE0, PLACEMENT},
        [("functions.add:0", "add", ADD), ("functions.multiply:1", "multiply", ADD)],
        ("crashed", "ok"),
    ),
    "groq-llama-3.3-70b-single-delta-call.jsonl": (
        "quirk",
        "tool_calls",
        {WHOLE, EXTRA, FORMAT, PLACEMENT},
        [("tk85n1k4m", "weather", {})],
        ("ok", "ok"),
    ),
    # `{"` on the opener; 32-character id; `timings` on the usage chunk.
    "llamacpp-gpt-oss-20b-args-in-first-delta.jsonl": (
        "quirk",
        "tool_calls",
        {"Q-ARGS-ON-OPENING-DELTA", EXTRA, FORMAT, USAGE0},
        [("g2KOIWzn722hzEaZQmNVP4roUPEiYafL", "weather", {"location": "Florence, Italy"})],
        ("crashed", "ok"),
    ),
    # both calls in one delta, no index and no type, finish and usage in that chunk;
    # guarded defaults the missing index to 0 and merges them.
    "mistral-large-parallel-one-delta-no-index.jsonl": (
        "quirk",
        "tool_calls",
        {WHOLE, SAME_CHUNK, FORMAT, "Q-TYPE-MISSING", PLACEMENT, *NO_INDEX},
        [("nqjf8Hqe1", "plus", {"a": 1, "b": 2}), ("ATcpCKul3", "minus", {"a": 2, "b": 1})],
        ("crashed", "wrong"),
    ),
    "mistral-small-no-index-finish-same-chunk.jsonl": (
        "quirk",
        "tool_calls",
        {WHOLE, SAME_CHUNK, FORMAT, "Q-TYPE-MISSING", PLACEMENT, *NO_INDEX},
        [("gSIMJiOkT", "weather", {"location": "San Francisco"})],
        ("crashed", "ok"),
    ),
    # `name: ""` on the continuation (naive: "Unknown tool ''"); extra `delta.index`.
    "mistral-zai-glm-5-2-empty-name-continuation.jsonl": (
        "quirk",
        "tool_calls",
        {"Q-EMPTY-STRING-OVERWRITE", EXTRA, FORMAT, PLACEMENT},
        [
            (
                "chatcmpl-tool-9f149c74c42f265b",
                "webSearchTool",
                {"query": "current Berlin weather"},
            )
        ],
        ("wrong", "ok"),
    ),
    # no index; whole call; finish "stop"; `call_` + 8 characters.
    "ollama-llama3.1-no-index-finish-stop.jsonl": (
        "quirk",
        "stop",
        {WHOLE, "Q-FINISH-STOP-WITH-TOOLCALLS", FORMAT, *NO_INDEX},
        [("call_28sm5ma0", "return_list_of_int", {"value": "[1, 2, 3, 4, 5]"})],
        ("crashed", "ok"),
    ),
    # OpenAI itself: conforming; the usage chunk is reference behaviour (INFO).
    "openai-gpt-4o-mini-single-obfuscation-usage-chunk.jsonl": (
        "conforms",
        "tool_calls",
        {USAGE0},
        [("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", {"country": "UK"})],
        ("crashed", "ok"),
    ),
    "openai-gpt-4o-parallel-empty-object-args.jsonl": (
        "conforms",
        "tool_calls",
        {USAGE0},
        [
            ("call_q2UyBRP7eXNTzAoR8lEhjc9Z", "get_country", {}),
            ("call_b51ijcpFkDiTQG1bQzsrmtW5", "get_product_name", {}),
        ],
        ("crashed", "ok"),
    ),
    "openai-gpt-4o-parallel-two-tools.jsonl": (
        "conforms",
        "tool_calls",
        {USAGE0},
        [
            (
                "call_JMW1whyEaYG438VE1OIflxA2",
                "GetWeatherArgs",
                {"city": "Edinburgh", "country": "GB", "units": "c"},
            ),
            (
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "get_stock_price",
                {"ticker": "AAPL", "exchange": "NASDAQ"},
            ),
        ],
        ("crashed", "ok"),
    ),
    "openai-gpt-4o-single-strict-tool.jsonl": (
        "conforms",
        "tool_calls",
        {USAGE0},
        [
            (
                "call_CTf1nWJLqSeRgDqaCG27xZ74",
                "get_weather",
                {"city": "San Francisco", "state": "CA"},
            )
        ],
        ("crashed", "ok"),
    ),
    "openai-gpt-4o-text-then-tool.jsonl": (
        "conforms",
        "tool_calls",
        {USAGE0},
        [("call_QgHUYg30lU8RAkIADo1bLA3P", "get_weather", {"location": "Paris"})],
        ("crashed", "ok"),
    ),
    # provider / native_finish_reason; vLLM-style `chatcmpl-tool-` id; reference usage chunk.
    "openrouter-baseten-deepseek-v3-text-then-tool.jsonl": (
        "conforms",
        "tool_calls",
        {EXTRA, FORMAT, USAGE0},
        [
            (
                "chatcmpl-tool-8841ebdbc1974669a96e3801a0338190",
                "get_weather",
                {"location": "Kyoto, Japan"},
            )
        ],
        ("crashed", "ok"),
    ),
    "openrouter-bedrock-claude-haiku-4.5-parallel-duplicate-finish.jsonl": (
        "quirk",
        "tool_calls",
        {EXTRA, REPEATED, FORMAT, PLACEMENT},
        [
            ("toolu_bdrk_01L6Xsux1sqgXSsd2xi64poF", "add", ADD),
            ("toolu_bdrk_014pCKe2FHbyMZerLY1JxG4a", "multiply", ADD),
        ],
        ("ok", "ok"),
    ),
    "openrouter-gemini-3.1-flash-lite-parallel-reasoning-details.jsonl": (
        "quirk",
        "tool_calls",
        {EXTRA, REPEATED, FORMAT, PLACEMENT},
        [
            ("tool_add_kZJN6iFNozVOBiXBMA2Y", "add", ADD),
            ("tool_multiply_7Pq02EcannPbKks8kXlA", "multiply", ADD),
        ],
        ("ok", "ok"),
    ),
    # delta.provider_metadata and generationId on the finish chunk, with the usage.
    "vercel-gateway-gemini-2.5-flash-parallel.jsonl": (
        "quirk",
        "tool_calls",
        {EXTRA, FORMAT, PLACEMENT},
        [("iSWgKq1pTuj1RcZp", "add", {"b": 3, "a": 2}), ("DHwaxxZ8DOJ5Gij4", "multiply", ADD)],
        ("ok", "ok"),
    ),
    # usage on every chunk; opener without `arguments` (R-FIRST-ARGS, SHOULD); the
    # trailing `arguments: ""` with the finish carries nothing (not SAME-CHUNK).
    "vllm-llama-3.1-8b-no-args-key-trailing-empty-args.jsonl": (
        "quirk",
        "tool_calls",
        {EXTRA, FORMAT, USAGE0, PLACEMENT},
        [
            (
                "chatcmpl-tool-b3b307239370432d9910d4b79b4dbbaa",
                "searchGoogle",
                {"query": "latest news on ai"},
            )
        ],
        ("crashed", "ok"),
    ),
    "xai-grok-2-call-and-finish-same-chunk.jsonl": (
        "quirk",
        "tool_calls",
        {WHOLE, SAME_CHUNK, FORMAT, PLACEMENT},
        [
            (
                "call_05994332",
                "return_list_of_str",
                {"value": ["apple", "banana", "orange", "grape", "strawberry"]},
            )
        ],
        ("ok", "ok"),
    ),
    # no finish_reason key until the finish chunk.
    "xai-grok-3-mini-reasoning-then-whole-call.jsonl": (
        "quirk",
        "tool_calls",
        {WHOLE, ENVELOPE, FORMAT, USAGE0},
        [("call_79382389", "weather", {"location": "San Francisco"})],
        ("crashed", "ok"),
    ),
    "xai-grok-4-fast-parallel-whole-calls.jsonl": (
        "quirk",
        "tool_calls",
        {WHOLE, ENVELOPE, FORMAT, USAGE0},
        [("call_55070233", "add", ADD), ("call_12016531", "multiply", ADD)],
        ("crashed", "ok"),
    ),
    "zai-glm-4.7-flash-parallel-after-reasoning.jsonl": (
        "quirk",
        "tool_calls",
        {WHOLE, ENVELOPE, PLACEMENT},
        [
            ("call_4f8cb52342424eb9bbc1b20e", "add", ADD),
            ("call_0d06add371834452b339ffdb", "multiply", ADD),
        ],
        ("ok", "ok"),
    ),
}


def test_every_capture_has_expectations():
    files = sorted(p.name for p in CAPTURES.glob("*.jsonl"))
    assert files == sorted(EXPECTED)
    assert len(files) == 28


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_capture(name):
    verdict, finish, quirks, calls, (naive, guarded) = EXPECTED[name]
    (t,) = read_path(CAPTURES / name)
    r = analyze(t)
    assert set(r.quirks) == quirks
    assert r.verdict == verdict
    assert r.finish_reason == finish
    got = [(c["id"], c["name"], json.loads(c["arguments"])) for c in r.tool_calls["robust"]]
    assert got == calls
    assert r.impact["robust"].status == "ok"
    assert (r.impact["naive"].status, r.impact["guarded"].status) == (naive, guarded)
    # The id is sacred: every robust id occurs verbatim in the capture (or is "").
    text = (CAPTURES / name).read_text(encoding="utf-8")
    for c in r.tool_calls["robust"]:
        assert c["id"] == "" or json.dumps(c["id"]) in text


def test_cli_analyzes_all_captures(capsys):
    paths = [str(p) for p in sorted(CAPTURES.glob("*.jsonl"))]
    assert main(["analyze", "--json", *paths]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["source"] for c in doc["captures"]] == paths
    assert {Path(c["source"]).name: c["verdict"] for c in doc["captures"]} == {
        k: v[0] for k, v in EXPECTED.items()
    }


def test_cli_subprocess_on_captures():
    paths = [str(p) for p in sorted(CAPTURES.glob("*.jsonl"))]
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "analyze", "--json", *paths],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert len(json.loads(proc.stdout)["captures"]) == 28
