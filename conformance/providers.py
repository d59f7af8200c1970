"""providers.yaml: loading, validation (JSON Schema shipped in the package), lookup.

A bad file fails fast with one line naming the file, the entry and the field. Keys are
never in the file: an entry names the environment variable that holds its key, and the
key is read only when a request is sent.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from conformance.client import RoundTripPolicy

CAPABILITIES = ("parallel_calls", "tool_choice_required", "named_tool_choice", "stream_options",
                "strict")


class ConfigError(Exception):
    """A configuration problem; str() is the one-line message for the user."""


@cache
def _schema() -> dict[str, Any]:
    text = resources.files("conformance").joinpath("schemas/providers.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


@dataclass
class Provider:
    name: str
    base_url: str
    model: str
    label: str = ""
    api_key_env: str | None = None
    auth: str = "bearer"
    headers: dict[str, str] = field(default_factory=dict)
    extra_body: dict[str, Any] = field(default_factory=dict)
    server: dict[str, Any] = field(default_factory=dict)
    capabilities: dict[str, bool] = field(default_factory=dict)
    expected_quirks: dict[str, dict[str, Any]] = field(default_factory=dict)
    elicitation: dict[str, Any] = field(default_factory=dict)
    roundtrip: RoundTripPolicy = field(default_factory=RoundTripPolicy)
    concurrency: int = 4
    retries: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    record_command: str = ""
    kind: str = "provider"  # provider | reference-profile

    def supports(self, capability: str) -> bool:
        return self.capabilities.get(capability, True)

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def missing_key_reason(self) -> str | None:
        if self.api_key_env and not os.environ.get(self.api_key_env):
            return f"set {self.api_key_env} to run it"
        return None

    def auth_headers(self) -> dict[str, str]:
        key = self.api_key()
        if not key:
            return {}
        if self.auth == "api-key":
            return {"api-key": key}
        if self.auth == "x-api-key":
            return {"x-api-key": key}
        return {"Authorization": f"Bearer {key}"}

    def expects(self, quirk: str, scenario: str) -> str | None:
        e = self.expected_quirks.get(quirk)
        if e is None:
            return None
        scen = e.get("scenarios")
        return e["reason"] if (not scen or scenario in scen) else None

    @property
    def server_version(self) -> str | None:
        env = self.server.get("version_env")
        return (os.environ.get(env) if env else None) or self.server.get("version")


def _where(path: Path, error: jsonschema.ValidationError) -> str:
    parts = list(error.absolute_path)
    if len(parts) >= 2 and parts[0] == "providers":
        entry, fld = parts[1], ".".join(map(str, parts[2:])) or "(entry)"
        return f"{path}: provider '{entry}', field '{fld}'"
    return f"{path}: field '{'.'.join(map(str, parts)) or '(top level)'}'"


def load_providers(path: str | Path = "providers.yaml") -> dict[str, Provider]:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: no such file (pass --providers PATH)")
    try:
        data = yaml.safe_load(p.read_text("utf-8"))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{p}:{line} is not valid YAML ({getattr(e, 'problem', e)})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not UTF-8 text") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping with a 'providers' key")
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = jsonschema.exceptions.best_match(errors) or errors[0]
        msg = err.message
        if err.validator == "pattern" and list(err.absolute_path)[-1:] == ["base_url"]:
            msg = f"{err.instance!r} is not an http(s) URL"
        raise ConfigError(f"{_where(p, err)}: {msg}")
    out: dict[str, Provider] = {}
    for name, e in data["providers"].items():
        out[name] = provider_from_entry(name, e)
    return out


def provider_from_entry(name: str, e: dict[str, Any], kind: str = "provider") -> Provider:
    base = e["base_url"]
    if e.get("base_url_env") and os.environ.get(e["base_url_env"]):
        base = os.environ[e["base_url_env"]]
        if not base.startswith(("http://", "https://")):
            raise ConfigError(f"{e['base_url_env']}={base!r} is not an http(s) URL")
    quirks = {}
    for q, v in (e.get("expected_quirks") or {}).items():
        quirks[q] = {"reason": v} if isinstance(v, str) else dict(v)
    return Provider(
        name=name, base_url=base.rstrip("/"), model=e["model"], label=e.get("label", name),
        api_key_env=e.get("api_key_env"), auth=e.get("auth", "bearer"),
        headers=dict(e.get("headers") or {}), extra_body=dict(e.get("extra_body") or {}),
        server=dict(e.get("server") or {}), capabilities=dict(e.get("capabilities") or {}),
        expected_quirks=quirks, elicitation=dict(e.get("elicitation") or {}),
        roundtrip=RoundTripPolicy.from_provider(e), concurrency=e.get("concurrency", 4),
        retries=dict(e.get("retries") or {}), limits=dict(e.get("limits") or {}),
        record_command=e.get("record_command") or f"nox -s live -- --provider {name}",
        kind=kind)


def select(providers: dict[str, Provider], names: list[str] | None) -> list[Provider]:
    if not names:
        return list(providers.values())
    unknown = [n for n in names if n not in providers]
    if unknown:
        raise ConfigError(f"unknown provider {unknown[0]!r}; valid: {', '.join(providers)}")
    return [providers[n] for n in names]
