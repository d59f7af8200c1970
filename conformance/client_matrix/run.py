"""Run every client on every stream and judge each cell: the one pipeline of the matrix."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conformance import __version__ as suite_version
from conformance.analysis import analyze
from conformance.client_matrix.adapters import adapter_argv, run_client
from conformance.client_matrix.clients import Client
from conformance.client_matrix.harness import Exchange, running_harness
from conformance.client_matrix.judge import expected_from, is_json, judge
from conformance.client_matrix.streams import Stream
from conformance.profile_columns import LIVE_ONLY
from conformance.readers import exchange_transcript
from conformance.server.replay import Recorded

WIRE_LIMIT = 2000  # characters of the received body kept as a cell's evidence


def _job_id(client: Client, n: int) -> str:
    return f"{client.id}.{n}"


def _analysis(stream: Stream, ex: Exchange | None) -> Any:
    """The analyzer's reading of what the client received (or of the replayed bytes)."""
    if ex is not None:
        try:
            body = json.loads(bytes(ex.request) or b"null")
        except ValueError:
            body = None
        request = {"method": "POST", "uri": stream.path, "headers": {}, "body": body}
        t = exchange_transcript(stream.id, "http", request, ex.status, ex.headers, bytes(ex.body))
        return analyze(t), bytes(ex.body), body
    if stream.recorded is not None:
        rec = stream.recorded
        body = dict(stream.request, stream=True)
        t = exchange_transcript(
            stream.id,
            "http",
            {"body": body},
            rec.status,
            {"content-type": rec.content_type},
            rec.body,
        )
        return analyze(t), rec.body, body
    return None, None, None


def judge_cell(
    client: Client, stream: Stream, answer: dict[str, Any], exchanges: list[Exchange]
) -> dict[str, Any]:
    ex = exchanges[-1] if exchanges else None  # after a retry, the last answer counts
    result, wire, body = _analysis(stream, ex)
    cell: dict[str, Any] = {"client": client.id, "stream": stream.id}
    if result is None:
        verdict = judge_without_request(answer)
        cell.update(outcome=verdict[0], detail=verdict[1], problems=[])
    else:
        expected = expected_from(result, body if isinstance(body, dict) else None)
        v = judge(expected, answer)
        cell.update(outcome=v.outcome, detail=v.detail, problems=v.problems)
        # The calls on the wire with their status: what every cell is judged against (a
        # test checks every committed cell against them).
        cell["expected"] = [
            {k: c[k] for k in ("id", "name", "arguments", "raw_arguments", "status")}
            for c in expected.calls
        ]
        cell["quirks"] = result.quirks
        if stream.kind == "profile" and stream.profile not in LIVE_ONLY:
            cell["elicited"] = not stream.quirks or bool(set(stream.quirks) & set(result.quirks))
    cell["calls"] = answer.get("calls")
    cell["requests"] = len(exchanges)
    if stream.kind == "capture":
        # Field evidence: the verdict and the kinds of wrong, never the capture's content.
        kind = cell["detail"].split(":")[0] if cell["outcome"] == "crashed" else ""
        cell["detail"] = ", ".join(cell["problems"]) or " ".join(
            x for x in (cell["outcome"], kind) if x
        )
        cell["calls"] = (
            None
            if cell["calls"] is None
            else [
                {
                    "id": None,
                    "name": c.get("name"),
                    "arguments": None,
                    "json": is_json(c.get("arguments")),
                    **({"invalid": c["invalid"]} if c.get("invalid") else {}),
                }
                for c in cell["calls"]
            ]
        )
        cell["expected"] = [
            {"id": None, "name": c["name"], "arguments": None, "status": c["status"]}
            for c in cell.get("expected", [])
        ]
        cell["evidence"] = "field"
    elif wire is not None and cell["outcome"] != "ok":
        # The bytes of a finding; an ok cell's evidence is its calls and the stream's source.
        text = wire.decode("utf-8", "replace")
        cell["wire"] = text if len(text) <= WIRE_LIMIT else text[:WIRE_LIMIT] + "\n[…]"
    return cell


def judge_without_request(answer: dict[str, Any]) -> tuple[str, str]:
    """No request reached the endpoint: the adapter failed before sending anything."""
    if answer.get("error"):
        return "error", str(answer["error"])[:300]
    if answer.get("hung"):
        return "hung", f"no answer within {answer.get('timeout')} s, no request sent"
    exc = answer.get("exception")
    if exc:
        lines = str(exc.get("message", "")).strip().splitlines() or [""]
        return "crashed", f"{exc.get('type')}: {lines[0][:200]}"
    return "error", "the client answered without sending any request"


def run_matrix(
    clients: list[Client],
    streams: list[Stream],
    *,
    root: Path,
    python: str,
    node: str | None,
    timeout: float = 10.0,
    workers: int = 2,
    log: Any = None,
) -> dict[str, Any]:
    replays: dict[str, Recorded] = {
        s.path.split("/")[1]: s.recorded for s in streams if s.recorded is not None
    }
    versions: dict[str, str | None] = {}
    answers: dict[str, dict[str, dict[str, Any]]] = {}
    with running_harness(replays) as (url, recorder):

        def one(client: Client) -> None:
            jobs = [
                {
                    "job": _job_id(client, n),
                    "base_url": f"{url}/j/{_job_id(client, n)}/{s.path}",
                    "model": s.model,
                    "request": s.request,
                    "timeout": timeout,
                }
                for n, s in enumerate(streams)
            ]
            argv = adapter_argv(client, root, python, node)
            started = time.monotonic()
            versions[client.id], answers[client.id] = run_client(client, argv, jobs)
            if log:
                counts: dict[str, int] = {}
                for a in answers[client.id].values():
                    k = next((k for k in ("error", "hung", "exception") if a.get(k)), "calls")
                    counts[k] = counts.get(k, 0) + 1
                log(f"{client.id}: {len(jobs)} jobs {counts} in {time.monotonic() - started:.0f} s")

        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(one, clients))
        exchanges = dict(recorder.exchanges)
    cells = []
    for client in clients:
        for n, stream in enumerate(streams):
            job = _job_id(client, n)
            cells.append(
                judge_cell(client, stream, answers[client.id][job], exchanges.get(job, []))
            )
    return {
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "suite_version": suite_version,
        "timeout_seconds": timeout,
        "clients": [c.to_json(versions.get(c.id)) for c in clients],
        "streams": [s.to_json() for s in streams],
        "cells": cells,
    }
