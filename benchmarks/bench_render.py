"""Render speed and size at scale: a synthetic matrix of 100 providers x 20 scenarios.

Cells are real analyzer output (``analyze_chunks``) on chat.completion.chunk streams of
realistic size (full envelopes, fragmented arguments, usage chunks), with evidence trimmed
the way the runner trims it. Goal: Markdown + HTML in < 2 s, HTML < 5 MB. Run:
python benchmarks/bench_render.py
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from typing import Any

from conformance.analysis import analyze_chunks
from conformance.matrix import quirk_entries, rule_entries
from conformance.report import render_html, render_markdown, validate_matrix
from conformance.transcript import CHUNK, Event

N_PROVIDERS, N_SCENARIOS = 100, 20
EVIDENCE_EVENTS, EVIDENCE_CHARS = 14, 400


def envelope(rng: random.Random, model: str) -> Callable[..., dict[str, Any]]:
    cid = "chatcmpl-" + "".join(
        rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789") for _ in range(29)
    )

    def chunk(
        delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        c = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": 1767956608,
            "model": model,
            "system_fingerprint": "fp_e097fc73a4",
            "choices": [
                {"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}
            ],
        }
        c.update(extra)
        return c

    return chunk


def fragments(text: str, n: int) -> list[str]:
    step = max(1, len(text) // n)
    return [text[i : i + step] for i in range(0, len(text), step)]


ARGS = json.dumps(
    {"location": "San Francisco, CA", "unit": "celsius", "days": 3, "include": ["humidity", "wind"]}
)
ARGS2 = json.dumps({"timezone": "America/Los_Angeles", "format": "24h"})


def opener(i: int, name: str, id_: str | None = None) -> dict[str, Any]:
    return {
        "index": i,
        "id": id_ or f"call_{i}Xk9QmPz7Lw2Rt4Vb8Nc",
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }


def stream(kind: str, rng: random.Random, model: str) -> list[Any]:
    ch = envelope(rng, model)
    usage = ch(
        None, None, usage={"prompt_tokens": 187, "completion_tokens": 45, "total_tokens": 232}
    )
    usage["choices"] = []
    out = [ch({"role": "assistant", "content": None})]
    if kind in ("conforms", "empty-id", "truncated", "error"):
        out.append(ch({"tool_calls": [opener(0, "get_weather")]}))
        for k, frag in enumerate(fragments(ARGS, 9)):
            if kind == "truncated" and k > 5:
                break
            tc: dict[str, Any] = {"index": 0, "function": {"arguments": frag}}
            if kind == "empty-id":
                tc.update(id="", type="function")
                tc["function"]["name"] = ""
            out.append(ch({"tool_calls": [tc]}))
            if kind == "error" and k == 4:
                out.append({"error": {"message": "upstream overloaded", "code": 502}})
                return out
        out.append(ch({}, "length" if kind == "truncated" else "tool_calls"))
    elif kind in ("parallel", "all-zero", "no-index"):
        for i, (name, args) in enumerate((("get_weather", ARGS), ("get_time", ARGS2))):
            op = opener(0 if kind == "all-zero" else i, name)
            if kind == "no-index":
                del op["index"]
                op["function"]["arguments"] = args
                out.append(ch({"tool_calls": [op]}))
                continue
            out.append(ch({"tool_calls": [op]}))
            for frag in fragments(args, 5):
                out.append(
                    ch({"tool_calls": [{"index": op["index"], "function": {"arguments": frag}}]})
                )
        out.append(ch({}, "stop" if kind == "no-index" else "tool_calls"))
    out.append(usage)
    return out


def evidence(chunks: list[Any], findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runner's trimming: first events, +-1 around findings, the last event."""
    wanted = {f["event"] for f in findings if isinstance(f.get("event"), int)}
    near = {n + d for n in sorted(wanted)[:8] for d in (-1, 0, 1)} | {0, 1, len(chunks) - 1}
    out = []
    for ev in (
        Event(i, CHUNK, None, json.dumps(c, separators=(",", ":")), c) for i, c in enumerate(chunks)
    ):
        if ev.n in near and len(out) < EVIDENCE_EVENTS:
            data = ev.data if len(ev.data) <= EVIDENCE_CHARS else ev.data[:EVIDENCE_CHARS] + "…"
            out.append({"n": ev.n, "kind": ev.kind, "data": data, "highlight": ev.n in wanted})
    return out


def cell(column: str, row: str, kind: str, rng: random.Random, model: str) -> dict[str, Any]:
    if kind == "unsupported":
        return {
            "column": column,
            "row": row,
            "verdict": "unsupported",
            "reason": f"{column} declares no parallel tool calls",
        }
    chunks = stream(kind, rng, model)
    j = analyze_chunks(chunks, source=f"{column}/{row}").to_json()
    return {
        "column": column,
        "row": row,
        "verdict": j["verdict"],
        "reason": j.get("error"),
        "quirks": j["quirks"],
        "expected": [],
        "findings": j["findings"],
        "evidence": evidence(chunks, j["findings"]),
        "impact": j["impact"],
        "tool_calls": j["tool_calls"],
        "finish_reason": j["finish_reason"],
        "cassette": f"cassettes/{column}/{row}.yaml",
        "interaction": 0,
        "trials": {
            "n": 1,
            "quirk_counts": {q: 1 for q in j["quirks"]},
            "verdict_counts": {j["verdict"]: 1},
        },
        "retries": [],
        "meta": {"model": model, "system_fingerprint": ["fp_e097fc73a4"], "elapsed": 0.8},
    }


PERSONALITIES = [
    ["conforms"] * 8 + ["parallel"] * 4,
    ["conforms", "empty-id", "empty-id", "parallel", "truncated"],
    ["conforms", "all-zero", "no-index", "parallel", "unsupported"],
    ["conforms", "parallel", "error", "truncated", "empty-id", "no-index"],
]


def synthetic_matrix(seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    rows = [
        {
            "id": f"scenario-{i:02d}",
            "title": f"Scenario number {i}",
            "description": "a request shape and what it should produce",
        }
        for i in range(N_SCENARIOS)
    ]
    columns, cells = [], []
    for p in range(N_PROVIDERS):
        cid, model = f"provider-{p:03d}", f"vendor-{p % 17}/model-{p:03d}-instruct"
        recorded = p % 25 != 24
        columns.append(
            {
                "id": cid,
                "kind": "provider",
                "label": f"Provider {p} ({model})",
                "model": model,
                "base_url": f"https://api.provider-{p}.example/v1",
                "status": "recorded" if recorded else "not recorded",
                "record_command": f"nox -s live -- --provider {cid}",
                "provenance": {
                    "how": "replayed" if recorded else None,
                    "recorded_at": "2026-11-29T10:00:00Z" if recorded else None,
                    "suite_version_at_record": "0.1.0" if recorded else None,
                    "cassette_dir": f"cassettes/{cid}" if recorded else None,
                    "server": {
                        "software": f"server-{p % 5}",
                        "version": f"1.{p % 9}.0",
                        "seen": {
                            "server_header": "uvicorn",
                            "system_fingerprint": ["fp_e097fc73a4"],
                            "model_field": model,
                        },
                    },
                },
                "expected_quirks": {},
                "client_advice": "",
            }
        )
        kinds = PERSONALITIES[p % len(PERSONALITIES)]
        for r in rows:
            if not recorded:
                cells.append(
                    {
                        "column": cid,
                        "row": r["id"],
                        "verdict": "not recorded",
                        "reason": "no cassette",
                    }
                )
            else:
                cells.append(cell(cid, r["id"], rng.choice(kinds), rng, model))
    return {
        "format": "conformance-quirks-matrix/1",
        "suite_version": "0.1.0",
        "generated": "2026-11-30T04:10:00Z",
        "mode": "replay",
        "title": "Streaming tool-call conformance (synthetic, 100 x 20)",
        "columns": columns,
        "rows": rows,
        "cells": cells,
        "quirks": quirk_entries(cells),
        "rules": rule_entries(),
        "sections": {
            "providers": [c["id"] for c in columns],
            "reference_profiles": [],
            "captures": [],
        },
    }


def best_of(n: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(n):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> int:
    t = time.perf_counter()
    doc = synthetic_matrix()
    built = time.perf_counter() - t
    json_size = len(json.dumps(doc, ensure_ascii=False, indent=1).encode())
    t_val, _ = best_of(3, lambda: validate_matrix(doc))
    t_md, md = best_of(3, lambda: render_markdown(doc))
    t_html, page = best_of(3, lambda: render_html(doc))
    html_mb = len(page.encode()) / 1e6
    total = t_md + t_html
    print(
        f"matrix: {N_PROVIDERS} providers x {N_SCENARIOS} scenarios = {len(doc['cells'])} "
        f"cells, {len(doc['quirks'])} quirks (built in {built:.1f} s; JSON "
        f"{json_size / 1e6:.2f} MB)"
    )
    print(f"validate (schema + references): {t_val:.3f} s")
    print(f"markdown: {t_md:.3f} s, {len(md.encode()) / 1e6:.2f} MB")
    print(f"html:     {t_html:.3f} s, {html_mb:.2f} MB")
    ok = total < 2.0 and html_mb < 5.0
    print(
        f"markdown + html: {total:.3f} s (goal < 2 s), html {html_mb:.2f} MB (goal < 5 MB): "
        f"{'OK' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
