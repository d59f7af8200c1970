"""The streams every client is run on, as data: what to request and where.

- ``profile``: every reference profile, served live by the profile app over HTTP, asked with
  the scenario that makes its quirk show (``profile_columns.scenario_for``). The profile's
  answer is derived from the request, so each client gets its own bytes; each is judged on
  the bytes it received.
- ``provider``: the first interaction of every recorded cassette under ``cassettes/<column>/``
  (every provider column present, ``_profiles`` excepted), replayed byte for byte.
- ``capture``: field captures (JSONL chunk files, ``SOURCES.md`` beside them) rendered as SSE
  and replayed; field evidence, never committed as bytes.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.profile_columns import profile_providers
from conformance.readers import YamlRefused, read_cassette_file
from conformance.scenarios import SCENARIOS, build_request
from conformance.server.profiles import PROFILES
from conformance.server.replay import Recorded
from conformance.transcript import InputError, header

SEED_QUIRKS = (
    "Q-EMPTY-STRING-OVERWRITE",
    "Q-ARGS-TRUNCATED",
    "Q-INDEX-ALL-ZERO",
    "Q-INDEX-ABSENT",
    "Q-ID-ABSENT",
)
# The request fields an adapter passes on (the rest of a recorded body is the provider's
# elicitation: few-shot turns a replay does not need).
KEPT = ("tools", "tool_choice", "parallel_tool_calls", "max_tokens")


@dataclass
class Stream:
    id: str
    kind: str  # profile | provider | scripted | capture
    request: dict[str, Any]  # messages (last user turn), tools and the scenario's options
    path: str  # under the harness: "p/<profile>/v1" or "r/<key>/v1"
    model: str
    column: str | None = None  # the provider column (provider, capture)
    scenario: str | None = None
    profile: str | None = None
    quirks: list[str] = field(default_factory=list)  # the profile's catalogued quirks
    source: str | None = None  # cassette path or the capture's public URL
    recorded: Recorded | None = None  # replayed bytes

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "kind": self.kind}
        for key in ("column", "scenario", "profile", "source"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        if self.quirks:
            d["quirks"] = self.quirks
        return d


def _slim(body: dict[str, Any]) -> dict[str, Any]:
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    out = {"messages": users[-1:] or [{"role": "user", "content": "Hello"}]}
    out.update({k: body[k] for k in KEPT if k in body})
    out.setdefault("tools", [])
    return out


def _key(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def profile_streams() -> list[Stream]:
    out = []
    for p in profile_providers("http://unused/v1"):
        body = build_request(SCENARIOS[p.scenario], p)
        out.append(
            Stream(
                f"profile:{p.profile}",
                "profile",
                _slim(body),
                f"p/{p.profile}/v1",
                p.profile,
                scenario=p.scenario,
                profile=p.profile,
                quirks=sorted(PROFILES[p.profile].quirks),
            )
        )
    return out


def provider_streams(cassettes: Path) -> list[Stream]:
    """The first interaction of every cassette: kind ``provider``, or ``scripted`` for the
    columns of vLLM's tool parsers on a scripted model output (a real server, but its
    model's output was written by us, so it is never shown as a provider's)."""
    from conformance.lanes.vllm_columns import scripted_providers

    scripted = {p.cassette_key for p in scripted_providers("http://unused/v1")}
    out = []
    for column in sorted(d for d in cassettes.iterdir() if d.is_dir()):
        if column.name.startswith("_"):
            continue
        for path in sorted(column.glob("*.yaml")):
            try:
                transcripts = read_cassette_file(path)
            except InputError as e:
                if isinstance(e, YamlRefused):  # a Python tag, an alias bomb: say so, go on
                    print(f"client matrix: skipped {e}", file=sys.stderr)
                continue  # not a cassette: nothing recorded to replay
            if not transcripts:
                continue
            t = transcripts[0]
            body = (t.request or {}).get("body")
            if not isinstance(body, dict) or not body.get("stream"):
                continue
            sid = f"{column.name}:{path.stem}"
            ctype = header(t.headers, "content-type") or "text/event-stream"
            out.append(
                Stream(
                    sid,
                    "scripted" if column.name in scripted else "provider",
                    _slim(body),
                    f"r/{_key(sid)}/v1",
                    str(body.get("model") or column.name),
                    column=column.name,
                    scenario=path.stem,
                    source=f"{path.as_posix()}#0",
                    recorded=Recorded(t.raw or b"", int(t.status or 200), ctype),
                )
            )
    return out


def _capture_sources(directory: Path) -> dict[str, tuple[str, str]]:
    """file name -> (provider label, source URL) from the captures' SOURCES.md table."""
    out: dict[str, tuple[str, str]] = {}
    sources = directory / "SOURCES.md"
    if not sources.exists():
        return out
    for line in sources.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 6 or not cells[1].startswith("`"):
            continue
        url = re.search(r"\((https?://[^)\s]+)\)", line)
        out[cells[1].strip("`")] = (cells[2], url.group(1) if url else "")
    return out


def capture_streams(directory: Path) -> list[Stream]:
    """Field captures: each JSONL line becomes one ``data:`` event, then ``[DONE]``."""
    sources = _capture_sources(directory)
    out = []
    for path in sorted(directory.glob("*.jsonl")):
        lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
        names: list[str] = []
        for ln in lines:
            try:
                chunk = json.loads(ln)
            except ValueError:
                continue
            for choice in (chunk.get("choices") or []) if isinstance(chunk, dict) else []:
                for tc in ((choice or {}).get("delta") or {}).get("tool_calls") or []:
                    name = ((tc or {}).get("function") or {}).get("name")
                    if isinstance(name, str) and name and name not in names:
                        names.append(name)
        body = "".join(f"data: {ln}\n\n" for ln in lines) + "data: [DONE]\n\n"
        label, url = sources.get(path.name, (path.stem.split("-")[0], ""))
        # The capture holds no request: the tools are the names its calls use, any object.
        tools = [
            {
                "type": "function",
                "function": {
                    "name": n,
                    "description": n,
                    "parameters": {"type": "object", "properties": {}},
                },
            }
            for n in names
        ]
        sid = f"capture:{path.stem}"
        request = {"messages": [{"role": "user", "content": "Use the tools."}], "tools": tools}
        out.append(
            Stream(
                sid,
                "capture",
                request,
                f"r/{_key(sid)}/v1",
                "capture",
                column=label,
                source=url or path.name,
                recorded=Recorded(body.encode("utf-8")),
            )
        )
    return out
