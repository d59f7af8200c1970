"""providers.yaml: loading, validation (JSON Schema shipped in the package), lookup.

A bad file fails fast with one line naming the file, the entry and the field. Keys are
never in the file: an entry names the environment variable that holds its key, and the
key is read only when a request is sent. A credential written in the file anyway (an
unknown ``api_key`` field, a header whose name or value looks like a credential, user
info or any query parameter but ``api-version`` in ``base_url``, a key-shaped string in
any field) is refused with that line, which says how to pass it from the environment
(``api_key_env``, ``headers_env``, ``base_url_env``), without echoing the value.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import jsonschema
import yaml

from conformance import safeyaml, secrets
from conformance.client import RoundTripPolicy


class ConfigError(Exception):
    """A configuration problem; str() is the one-line message for the user."""

    def __init__(self, message: str):
        super().__init__(secrets.one_line(message, 400))


def public_url(url: str) -> str:
    """The URL without its credentials: the user info and every query parameter but
    ``api-version`` are dropped (not masked: a report must not even hint at a key)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return secrets.redact(url)
    query = urlencode(
        [
            (k, v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
            if k.lower() in secrets.PUBLIC_QUERY
        ]
    )
    return secrets.redact(urlunsplit(parts._replace(netloc=_host(parts), query=query)))


def _host(parts: Any) -> str:
    """``netloc`` without the user info."""
    return str(parts.netloc).rsplit("@", 1)[-1]


def _strip_slash(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/")))


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
    # Credential headers: header name -> the environment variable holding its value.
    headers_env: dict[str, str] = field(default_factory=dict)
    extra_body: dict[str, Any] = field(default_factory=dict)
    server: dict[str, Any] = field(default_factory=dict)
    # true/false, or the server's own message for a capability it lacks
    capabilities: dict[str, bool | str] = field(default_factory=dict)
    expected_quirks: dict[str, dict[str, Any]] = field(default_factory=dict)
    elicitation: dict[str, Any] = field(default_factory=dict)
    roundtrip: RoundTripPolicy = field(default_factory=RoundTripPolicy)
    concurrency: int = 4
    retries: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    record_command: str = ""
    gateway: dict[str, Any] = field(default_factory=dict)
    kind: str = "provider"  # provider | reference-profile | gateway-profile
    # The URL requests go to. ``base_url`` is its public form (credentials in the query
    # or userinfo redacted) and is what reports show; ``endpoint`` is never printed.
    endpoint: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        if not self.endpoint:
            self.endpoint = self.base_url
        self.endpoint = _strip_slash(self.endpoint)
        secrets.register_url(self.endpoint)
        secrets.register_env(self.headers_env.values())
        self.base_url = public_url(self.endpoint)

    def url(self, path: str) -> str:
        """``endpoint`` + ``/path``, with the endpoint's query (``?key=…``) kept at the end;
        never the user info, which travels as a Basic header (``auth_headers``) so that no
        request URI, log line or cassette holds it."""
        parts = urlsplit(self.endpoint)
        return urlunsplit(
            parts._replace(
                netloc=_host(parts), path=parts.path.rstrip("/") + "/" + path.lstrip("/")
            )
        )

    def scenario_body(self, scenario: str) -> dict[str, Any]:
        """Fields this provider adds to one scenario's request body (a scripted column's
        script, conformance.lanes.vllm_columns); none for an endpoint of providers.yaml."""
        return {}

    def supports(self, capability: str) -> bool:
        return self.capabilities.get(capability, True) is True

    def unsupported_reason(self, capability: str) -> str:
        """Why a capability is missing: the server's own message when the entry gives it."""
        value = self.capabilities.get(capability)
        declared = f"{self.name} declares no {capability.replace('_', ' ')}"
        return f"{declared}: {value}" if isinstance(value, str) else declared

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def missing_key_reason(self) -> str | None:
        for var in [self.api_key_env, *self.headers_env.values()]:
            if var and not os.environ.get(var):
                return f"set {var} to run it"
        return None

    def auth_headers(self) -> dict[str, str]:
        """Every credential header of a request: the key, the ``headers_env`` headers,
        and the endpoint's user info as Basic credentials (unless the key already uses
        ``Authorization``). The transport registers each value as a secret."""
        out: dict[str, str] = {}
        key = self.api_key()
        if key:
            name = {"api-key": "api-key", "x-api-key": "x-api-key"}.get(self.auth, "Authorization")
            out[name] = key if name != "Authorization" else f"Bearer {key}"
        for name, var in self.headers_env.items():
            value = os.environ.get(var)
            if value:
                out[name] = value
        parts = urlsplit(self.endpoint)
        if "@" in parts.netloc and "Authorization" not in out:
            user, _, password = parts.netloc.rsplit("@", 1)[0].partition(":")
            out["Authorization"] = "Basic " + secrets.basic_token(unquote(user), unquote(password))
        return out

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


def _field_path(parts: list[Any]) -> str:
    return ".".join(map(str, parts))


def _where(path: Path, parts: list[Any]) -> str:
    if len(parts) >= 2 and parts[0] == "providers":
        return f"{path}: provider '{parts[1]}', field '{_field_path(parts[2:]) or '(entry)'}'"
    if parts:
        return f"{path}: field '{_field_path(parts)}'"
    return f"{path}: (top level)"


_KEYLIKE_FIELDS = (
    "key",
    "api_key",
    "apikey",
    "api-key",
    "token",
    "secret",
    "password",
    "authorization",
    "bearer",
    "access_token",
)
_JSON_TYPES = {
    dict: "a mapping",
    list: "a list",
    str: "a string",
    bool: "true/false",
    int: "an integer",
    float: "a number",
    type(None): "null",
}


def _describe(err: jsonschema.ValidationError) -> tuple[list[Any], str]:
    """Where (a path) and what (one line): never the value itself, which may be a key."""
    parts = list(err.absolute_path)
    v, inst = err.validator, err.instance
    schema: Any = err.schema  # the entry's schema: a mapping (typed as any schema value)
    given: Any = err.validator_value
    if v == "additionalProperties" and isinstance(inst, dict):
        known = set(schema.get("properties") or {})
        extra = sorted(str(k) for k in inst if k not in known)
        name = extra[0] if extra else "?"
        near = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.7)
        keylike = name.lower().replace("-", "_") in _KEYLIKE_FIELDS
        hint = (
            " (keys are never written in providers.yaml: name the environment "
            "variable that holds the key with api_key_env)"
            if keylike or ("key" in name.lower() and not near)
            else f" (did you mean '{near[0]}'?)"
            if near
            else f" (valid: {', '.join(sorted(known))})"
            if known
            else ""
        )
        return parts + [name], f"unknown field '{name}'{hint}"
    if v == "required":
        missing = [r for r in given if isinstance(inst, dict) and r not in inst]
        return parts + missing[:1], "missing required field"
    if v == "type":
        want = err.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        got = _JSON_TYPES.get(type(inst), type(inst).__name__)
        return parts, f"expected {want}, got {got}"
    if v == "pattern":
        last = parts[-1] if parts else None
        if last == "base_url":
            if str(inst).startswith(("http://", "https://")):  # the rest has white space
                return parts, "white space in the URL"
            scheme = str(inst).split("://", 1)[0] if "://" in str(inst) else str(inst)[:12]
            return (
                parts,
                f"not an http(s) URL (scheme {scheme!r}); only http:// and "
                "https:// endpoints are tested",
            )
        if last in ("api_key_env", "base_url_env") or parts[-2:-1] == ["headers_env"]:
            return parts, (
                "must be the NAME of an environment variable (A-Z, 0-9, _), not its value"
            )
        return parts, f"does not match {err.validator_value}"
    if v == "propertyNames":
        return parts, f"invalid name {secrets.one_line(repr(inst), 60)}"
    if v == "enum":
        return parts, "must be one of: " + ", ".join(map(str, given))
    if v == "const":
        return parts, f"must be {err.validator_value!r}"
    if v == "oneOf" and parts[-2:-1] == ["expected_quirks"]:
        return parts, "must be a reason (text) or {reason: …, scenarios: […]}"
    if v == "minProperties":
        return parts, "is empty"
    if v in ("minimum", "exclusiveMinimum", "maximum", "minLength"):
        return parts, secrets.one_line(err.message, 120)
    return parts, secrets.one_line(err.message, 120)


class _Loader(safeyaml.PyLoader):
    """The checked safe loader (no Python tags, aliases bounded: ``extra_body`` is sent
    as JSON, so an alias bomb there would grow without bound) that also refuses
    duplicated keys (a second entry would silently win)."""


def _no_duplicates(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, str | int) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicated key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def _keys_in_file(p: Path, data: dict[str, Any]) -> str | None:
    """A credential written in the file: the one-line refusal, else None."""
    for name, e in data["providers"].items():
        where = f"{p}: provider '{name}'"
        places = secrets.url_credentials(e["base_url"])
        if places:
            return (
                f"{where}, field 'base_url': the URL carries a credential or a place "
                f"for one ({places[0]}; only api-version may be written in the file): "
                "put the whole URL in an environment variable named by base_url_env"
            )
        for h, v in (e.get("headers") or {}).items():
            if secrets.credential_name(h) or secrets.redact(str(v)) != str(v):
                return (
                    f"{where}, field 'headers.{h}': credential headers are never "
                    "written in providers.yaml: pass it from the environment with "
                    f"headers_env: {{{h}: VAR}} (or api_key_env with auth: bearer, "
                    "api-key or x-api-key)"
                )

        def walk(value: Any, path: list[str]) -> str | None:
            if isinstance(value, str):
                return ".".join(path) if secrets.redact(value) != value else None
            if isinstance(value, dict):
                items: Any = value.items()
            elif isinstance(value, list):
                items = enumerate(value)
            else:
                return None
            for k, v in items:
                hit = walk(v, path + [str(k)])
                if hit:
                    return hit
            return None

        for k, v in e.items():
            if k in ("base_url", "record_command"):
                continue  # URL queries are checked above; commands may name variables
            hit = walk(v, [k])
            if hit:
                return (
                    f"{where}, field '{hit}': looks like an API key or credential; keys "
                    "are never written in providers.yaml: name the environment variable "
                    "that holds it with api_key_env"
                )
    return None


def load_providers(path: str | Path = "providers.yaml") -> dict[str, Provider]:
    """Load and validate; raise ConfigError with one line naming file, entry and field."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: no such file (pass --providers PATH)")
    if p.is_dir():
        raise ConfigError(f"{p}: is a directory, not a providers file")
    try:
        data = safeyaml.load(p.read_text("utf-8"), _Loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f" line {mark.line + 1}:" if mark is not None else ""
        problem = secrets.one_line(getattr(e, "problem", None) or str(e).splitlines()[0], 120)
        if isinstance(e, safeyaml.Refused):
            raise ConfigError(f"{p}:{line} {problem}") from None
        raise ConfigError(f"{p}:{line} not valid YAML ({problem})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not UTF-8 text") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping with a 'providers' key")
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        # An unknown field explains a "missing required field" next to it (a typo'd
        # base_ulr is both): name the unknown one, with the closest valid name.
        unknown = [e for e in errors if e.validator == "additionalProperties"]
        err = unknown[0] if unknown else (jsonschema.exceptions.best_match(errors) or errors[0])
        parts, msg = _describe(err)
        raise ConfigError(f"{_where(p, parts)}: {msg}")
    refusal = _keys_in_file(p, data)
    if refusal:
        raise ConfigError(refusal)
    for name, entry in data["providers"].items():
        bad = _absurd_number(entry)
        if bad:
            raise ConfigError(f"{p}: provider '{name}', field '{bad[0]}': {bad[1]}")
    out: dict[str, Provider] = {}
    for name, entry in data["providers"].items():
        out[name] = provider_from_entry(name, entry, source=p)
    secrets.register_env(pr.api_key_env for pr in out.values())
    return out


# The most each number may be: beyond it a timer overflows (``total_timeout: .inf`` killed
# the watchdog thread with an OverflowError) or a bound bounds nothing.
DAY = 86_400.0
_BOUNDS: dict[str, dict[str, tuple[float, str]]] = {
    "limits": {
        "connect_timeout": (DAY, "seconds"),
        "first_byte_timeout": (DAY, "seconds"),
        "idle_timeout": (DAY, "seconds"),
        "total_timeout": (DAY, "seconds"),
        "max_bytes": (float(1 << 34), "bytes"),
    },
    "retries": {
        "max": (100, "retries"),
        "base_delay": (DAY, "seconds"),
        "max_delay": (DAY, "seconds"),
    },
}


def _absurd_number(entry: dict[str, Any]) -> tuple[str, str] | None:
    """(field, why) for a limit or retry setting that is not finite, is not positive
    (the schema's minimum aside: NaN passes every comparison) or is absurdly large."""
    if isinstance(entry.get("concurrency"), int) and entry["concurrency"] > 1024:
        return "concurrency", "at most 1024"
    for group, bounds in _BOUNDS.items():
        for key, value in (entry.get(group) or {}).items():
            if key not in bounds or isinstance(value, bool):
                continue
            most, unit = bounds[key]
            within = (
                0 <= value <= most
                if isinstance(value, int)
                else math.isfinite(value) and 0 <= value <= most
            )  # an int may overflow a float
            if not within:
                return f"{group}.{key}", (
                    f"must be a finite number of {unit} from 0 to {most:g} (got {value!r})"
                )
    return None


def number_flag(flag: str, value: str, most: float, *, least: float = 0.0) -> float:
    """A number given on the command line, finite and within [least, most]; else a
    ConfigError naming the flag (``--latency inf`` would overflow a sleep)."""
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{flag}: not a number ({value!r})") from None
    if not math.isfinite(number) or not least <= number <= most:
        raise ConfigError(
            f"{flag}: must be a finite number from {least:g} to {most:g} (got {value!r})"
        )
    return number


def output_dir_problem(flag: str, path: str | Path) -> str | None:
    """Why ``path`` cannot take the files a run writes (it is a file, sits under a file,
    or cannot be created or written), as one line naming ``flag``; None when it can.
    Made with the directory itself (created, a file created and removed in it): a
    permission check alone misses read-only file systems and ignores root."""
    import tempfile

    d = Path(path)
    try:
        if d.exists() and not d.is_dir():
            return f"{flag} {d}: is a file, not a directory; pass a directory"
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=d):
            pass
    except OSError as e:
        return (
            f"{flag} {d}: cannot be written ({e.strerror or type(e).__name__}); "
            "pass a directory you can write"
        )
    return None


def _url_problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
    except ValueError as e:
        return f"not a URL ({e})"
    if parts.scheme not in ("http", "https"):
        return f"not an http(s) URL (scheme {parts.scheme or url[:12]!r})"
    if not parts.hostname:
        return "no host in the URL"
    if any(c.isspace() for c in url):  # sent, it would be percent-encoded into another path
        return "white space in the URL"
    return None


def provider_from_entry(
    name: str, e: dict[str, Any], kind: str = "provider", source: str | Path = "providers.yaml"
) -> Provider:
    base = e["base_url"]
    var = e.get("base_url_env")
    if var and os.environ.get(var):
        base = os.environ[var].strip()
        secrets.register_url(base)
        problem = _url_problem(base)
        if problem:
            raise ConfigError(
                f"{source}: provider '{name}', field 'base_url_env': ${var} is {problem}"
            )
    else:
        problem = _url_problem(base)
        if problem:
            raise ConfigError(f"{source}: provider '{name}', field 'base_url': {problem}")
    quirks = {}
    for q, v in (e.get("expected_quirks") or {}).items():
        quirks[q] = {"reason": v} if isinstance(v, str) else dict(v)
    return Provider(
        name=name,
        base_url=base,
        model=e["model"],
        label=e.get("label", name),
        api_key_env=e.get("api_key_env"),
        auth=e.get("auth", "bearer"),
        headers=dict(e.get("headers") or {}),
        headers_env=dict(e.get("headers_env") or {}),
        extra_body=dict(e.get("extra_body") or {}),
        server=dict(e.get("server") or {}),
        capabilities=dict(e.get("capabilities") or {}),
        expected_quirks=quirks,
        elicitation=dict(e.get("elicitation") or {}),
        roundtrip=RoundTripPolicy.from_provider(e),
        concurrency=e.get("concurrency", 4),
        retries=dict(e.get("retries") or {}),
        limits=dict(e.get("limits") or {}),
        record_command=e.get("record_command") or default_record_command(name, source),
        gateway=dict(e.get("gateway") or {}),
        kind=kind,
    )


def default_record_command(name: str, source: str | Path) -> str:
    """A command that records this provider from where the user is: the nox session in
    a checkout of this repository, ``toolcall-conformance run`` anywhere else."""
    noxfile = Path("noxfile.py")
    if noxfile.is_file() and "def live(" in noxfile.read_text("utf-8", "replace"):
        return f"python3 noxw -s live -- --provider {name}"
    return f"toolcall-conformance run --providers {source} --provider {name}"


QUIRK_ID = re.compile(r"^Q-[A-Z0-9-]+$")


def parse_expect_quirk(value: str) -> tuple[str, str]:
    """``Q-ID=reason`` (from ``--expect-quirk``) -> (id, reason); one line when malformed.
    The id must be a known quirk (catalogued or added by this suite)."""
    from conformance.rules import quirk_catalogue

    qid, sep, reason = value.partition("=")
    qid, reason = qid.strip(), reason.strip()
    if not sep or not reason:
        raise ConfigError(
            f"--expect-quirk {secrets.one_line(value, 60)!r}: expected "
            "Q-ID=reason (say why it is accepted)"
        )
    known = quirk_catalogue()
    if not QUIRK_ID.match(qid) or qid not in known:
        near = difflib.get_close_matches(qid.upper(), list(known), n=1, cutoff=0.6)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise ConfigError(f"--expect-quirk: unknown quirk id {secrets.one_line(qid, 60)!r}{hint}")
    return qid, reason


def apply_expected_quirks(
    providers: Iterable[Provider], expected: Iterable[tuple[str, str]]
) -> None:
    """Add command-line expected quirks (``--expect-quirk``) to every provider run."""
    pairs = list(expected)
    for p in providers:
        for qid, reason in pairs:
            p.expected_quirks[qid] = {"reason": reason}


_NAME_CHARS = re.compile(r"[^a-z0-9._-]+")


def provider_from_options(
    base_url: str, model: str | None, api_key_env: str | None = None, name: str | None = None
) -> Provider:
    """The provider of ``--base-url URL --model NAME [--api-key-env VAR]``, named after
    the model (its cassettes go under ``<cassette-dir>/<name>/``)."""
    if not model:
        raise ConfigError("--base-url needs --model NAME (the model to ask)")
    problem = _url_problem(base_url)
    if problem:
        raise ConfigError(f"--base-url: {problem}")
    if secrets.url_secrets(base_url):
        raise ConfigError(
            "--base-url: the URL carries a credential; pass the key in an "
            "environment variable named by --api-key-env"
        )
    if api_key_env is not None and not re.match(r"^[A-Z_][A-Z0-9_]*$", api_key_env):
        raise ConfigError(
            "--api-key-env: must be the NAME of an environment variable "
            "(A-Z, 0-9, _), not its value"
        )
    name = name or (_NAME_CHARS.sub("-", model.lower()).strip("-._") or "server")
    cmd = f"toolcall-conformance run --base-url {public_url(base_url)} --model {model}" + (
        f" --api-key-env {api_key_env}" if api_key_env else ""
    )
    return Provider(
        name=name,
        base_url=base_url,
        model=model,
        label=model,
        api_key_env=api_key_env,
        record_command=cmd,
    )


def select(providers: dict[str, Provider], names: list[str] | None) -> list[Provider]:
    """The named providers, in file order; a name may be a glob (``'profile:*'``)."""
    if not names:
        return list(providers.values())
    chosen: set[str] = set()
    for n in names:
        # an exact name first: `vllm[hermes]` is a column, not a glob character class
        hits = [n] if n in providers else fnmatch.filter(providers, n)
        if not hits:
            valid = ", ".join(providers)
            if len(valid) > 300:
                valid = valid[:300] + "…"
            raise ConfigError(f"unknown provider {n!r}; valid: {valid}")
        chosen.update(hits)
    return [p for name, p in providers.items() if name in chosen]
