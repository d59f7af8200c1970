"""Keys never reach a file, a log line or an error message.

Secrets are the values of the key variables named in providers.yaml (read from the
environment only), every credential an endpoint URL can carry (the user info, a user
alone or a user and a password, and the Basic credentials httpx makes of it; every query
parameter but ``api-version``), the headers configured with ``headers_env``, plus
anything registered by tests (canaries). ``redact`` replaces every known secret, every
key-shaped string (``sk-…``, ``Bearer …``, ``Basic …``), the user info of any URL and the
value of any query parameter whose name looks like a credential, whether known or not. It is applied to cassettes (headers, query, bodies), results, reports, error
messages and, once a secret is registered, to every log record. ``write_atomic`` is the
one way the suite writes a file: redacted, then renamed into place, so a crash never
leaves half a file.
"""

from __future__ import annotations

import base64
import codecs
import json
import logging
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

REDACTED = "<redacted>"
SECRET_HEADERS = (
    "authorization",
    "proxy-authorization",
    "api-key",
    "x-api-key",
    "x-goog-api-key",
    "cookie",
    "set-cookie",
    "x-auth-token",
    "x-amz-security-token",
    "openai-organization",
    "openai-project",
)
SECRET_QUERY = (
    "key",
    "api_key",
    "api-key",
    "apikey",
    "token",
    "access_token",
    "auth",
    "sig",
    "signature",
    "x-api-key",
    "code",
    "password",
    "secret",
)
# Key-shaped strings, redacted even when we were not told about them.
KEY_SHAPES = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}|sk-proj-[A-Za-z0-9_-]{16,}|"
    r"sk-ant-[A-Za-z0-9_-]{16,}|AIza[0-9A-Za-z_-]{30,}|"
    r"gsk_[A-Za-z0-9]{20,}|xai-[A-Za-z0-9]{20,}|hf_[A-Za-z0-9]{20,})"
)
_SHAPES = [(("sk-", "AIza", "gsk_", "xai-", "hf_"), KEY_SHAPES)]
# An authorization scheme and its credentials, in any case and spacing: "Bearer x",
# "bearer x", "BEARER\tx", "Basic x", "Token x" (Django REST, GitHub). A token after
# "token" must look like one (a digit in 12 or more characters), not like prose.
_SCHEME = re.compile(r"(?i)\b(bearer|basic|token)([ \t]+)([A-Za-z0-9._~+/=-]{8,})")


_HINT_STEP = 1 << 16  # a long text is lowered this many characters at a time


def _scheme_hint(text: str) -> bool:
    """A cheap test before ``_SCHEME`` (slow on a body): the text case-folded (a piece at a
    time when long, the pieces overlapping by a word) holds a scheme's name, in any case
    (``BeArEr`` too); "token" counts only followed by a space or a tab, as in the
    pattern, since bodies are full of ``prompt_tokens``."""
    step = _HINT_STEP
    for i in range(0, len(text), step):
        low = text[i : i + step + 6].casefold()  # as _SCHEME's (?i): "baſic" too
        if "bearer" in low or "basic" in low or "token " in low or "token\t" in low:
            return True
    return False


def _scheme(m: re.Match[str]) -> str:
    value = m.group(3)
    if m.group(1).lower() == "token" and (len(value) < 12 or not any(c.isdigit() for c in value)):
        return m.group(0)
    return m.group(1) + m.group(2) + REDACTED


# JSON escapes that can stand for a key's characters: ``\/`` and ``\u0073``. A known
# secret is also looked for with any of its characters written so (``_ESCAPABLE``): a
# pattern per secret, matched as written, so no string literal is parsed.
_HIDING = ("\\u", "\\/")


def _escapable(secret: str) -> re.Pattern[str]:
    parts = []
    for c in secret:
        hexa = "".join(f"[{h}{h.upper()}]" if h.isalpha() else h for h in f"{ord(c):04x}")
        alts = [re.escape(c), r"\\u" + hexa] + ([r"\\/"] if c == "/" else [])
        parts.append("(?:" + "|".join(alts) + ")")
    return re.compile("".join(parts))


# Query parameters that never carry a credential: the only ones a base_url written in
# providers.yaml may hold, and the only ones a report shows.
PUBLIC_QUERY = ("api-version",)
# A header or query parameter whose name has one of these parts (split at - _ .) holds a
# credential, whatever its value looks like: Ocp-Apim-Subscription-Key, subscription-key,
# X-Goog-Api-Key, x-amz-security-token, sig. ("tokens", as in x-ratelimit-*-tokens, is a
# count, not a credential.)
CREDENTIAL_PARTS = frozenset(
    {
        "key",
        "apikey",
        "secret",
        "auth",
        "authorization",
        "password",
        "passwd",
        "pass",
        "credential",
        "credentials",
        "cookie",
        "signature",
        "sig",
        "subscription",
        "token",
        "session",
        "jwt",
        "bearer",
        "pwd",
    }
)
# Spellings and forms of "authorization" a header name may use: Authorisation,
# Authentication, authn, authz, X-Authtoken (the "auth" part is enough; "author" is not).
_AUTH_PART = re.compile(
    r"auth(?:ori[sz]ation|entication|n|z|token|key)?$|"
    r"(?:api|access|auth|private|secret)(?:key|token)$"
)
_PARTS = re.compile(r"[-_.\s]+")
_NAME = r"[A-Za-z0-9_.~%-]*"
# ?key=VALUE / &subscription-key=VALUE inside any text (a URL in an error message, a log
# line): the listed names, and any name with a credential part.
_QUERY = re.compile(
    r"([?&](?:"
    + "|".join(re.escape(q) for q in SECRET_QUERY)
    + "|"
    + "|".join(rf"(?:{_NAME}[-_.])?{p}(?:[-_.]{_NAME})?" for p in sorted(CREDENTIAL_PARTS))
    + r")=)([^&#\s\"'<>\\]+)",
    re.IGNORECASE,
)
# scheme://user:password@host and scheme://user@host: a user name can be a token too.
_USERINFO = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)([^/\s@?#]+)(@)")
MIN_SECRET = 6  # shorter values would redact ordinary words

_known: set[str] = set()
_by_length: tuple[str, ...] = ()  # _known, longest first: read without the lock
_escaped: tuple[re.Pattern[str], ...] = ()  # each of them with JSON escapes allowed
_lock = threading.Lock()


def _refresh() -> None:
    global _by_length, _escaped
    _by_length = tuple(sorted(_known, key=len, reverse=True))
    _escaped = tuple(_escapable(s) for s in _by_length)


def register(*values: str | None) -> None:
    """Remember secret values; from now on they are redacted everywhere, logs included."""
    added = False
    with _lock:
        for v in values:
            if v and len(v) >= MIN_SECRET and v not in _known and v != REDACTED:
                _known.add(v)
                added = True
        if added:
            _refresh()
    if added:
        install_log_redaction()


def register_env(names: Iterable[str | None]) -> None:
    for n in names:
        if n:
            register(os.environ.get(n))


def credential_name(name: str) -> bool:
    """Whether a header or query parameter of this name carries a credential."""
    low = name.strip().lower()
    if low in SECRET_HEADERS or low in SECRET_QUERY:
        return True
    parts = _PARTS.split(low)
    return any(p in CREDENTIAL_PARTS or _AUTH_PART.match(p) for p in parts) or low.endswith(
        ("key", "token", "secret", "password", "authorisation", "authorization")
    )


def url_credentials(url: str) -> list[str]:
    """Where a URL carries a credential, as words for a refusal: ``user info``, and
    ``query parameter 'name'`` for each parameter outside ``PUBLIC_QUERY``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    out = ["user info"] if "@" in parts.netloc else []
    return out + [
        f"query parameter {k!r}"
        for k, _ in parse_qsl(parts.query, keep_blank_values=True)
        if k.lower() not in PUBLIC_QUERY
    ]


def url_secrets(url: str) -> list[str]:
    """The secret parts of a URL: every query value but ``api-version``'s, the user name
    and the password (as written and percent-decoded) and the Basic credentials that
    httpx makes of them."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    out = []
    for k, v in parse_qsl(parts.query, keep_blank_values=True):
        if v and k.lower() not in PUBLIC_QUERY:
            out += [v, quote(v, safe="")]
    out += _raw_query_values(parts.query)
    if "@" in parts.netloc:
        user, _, password = parts.netloc.rsplit("@", 1)[0].partition(":")
        for v in (user, password):
            if v:
                out += [v, unquote(v)]
        out.append(basic_token(unquote(user), unquote(password)))
    return list(dict.fromkeys(out))  # each once, in order


def scrub_url(url: str) -> str:
    """A URL to record: without user info, without every query parameter whose name looks
    like a credential or whose value is a known secret, the rest redacted."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    kept = [
        pair
        for pair in parts.query.split("&")
        if pair
        and not (
            credential_name(unquote(pair.partition("=")[0]))
            or redact(unquote(pair.partition("=")[2])) != unquote(pair.partition("=")[2])
        )
    ]
    netloc = parts.netloc.rsplit("@", 1)[-1]
    return redact(urlunsplit(parts._replace(netloc=netloc, query="&".join(kept))))


def _raw_query_values(query: str) -> list[str]:
    """Query values as written (percent-encoded), outside ``PUBLIC_QUERY``."""
    out = []
    for pair in query.split("&"):
        k, _, v = pair.partition("=")
        if v and unquote(k).lower() not in PUBLIC_QUERY:
            out.append(v)
    return out


def basic_token(user: str, password: str) -> str:
    """The base64 part of ``Authorization: Basic …`` for these credentials."""
    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def register_url(url: str | None) -> None:
    if url:
        register(*url_secrets(url))


def known() -> frozenset[str]:
    return frozenset(_known)


def forget(*values: str) -> None:
    """For tests: drop registered values (all of them when none are given)."""
    with _lock:
        if values:
            _known.difference_update(values)
        else:
            _known.clear()
        _refresh()


_ASCII_ESCAPE = re.compile(r"\\u00[2-7][0-9a-fA-F]")  # an escaped printable ASCII character


def _hidden(text: str) -> bool:
    """Whether a known secret stands in ``text`` behind JSON escapes: the text with
    ``\\/`` and escaped ASCII undone (C-speed; a key is ASCII) holds one."""
    if "\\" not in text or not any(h in text for h in _HIDING):
        return False
    plain = text.replace("\\/", "/")
    plain = _ASCII_ESCAPE.sub(lambda m: chr(int(m.group()[2:], 16)), plain)
    return any(s in plain for s in _by_length)


def redact(text: str) -> str:
    if _by_length and _hidden(text):
        for pattern in _escaped:  # a known secret behind JSON escapes (CANARY\u0073…)
            text = pattern.sub(REDACTED, text)
    for s in _by_length:
        if s in text:
            text = text.replace(s, REDACTED)
    for prefixes, shape in _SHAPES:  # a cheap substring test first: bodies can be large
        if any(p in text for p in prefixes):
            text = shape.sub(REDACTED, text)
    if _scheme_hint(text):
        text = _SCHEME.sub(_scheme, text)
    if "=" in text and ("?" in text or "&" in text):
        text = _QUERY.sub(r"\1" + REDACTED, text)
    if "@" in text and "://" in text:
        text = _USERINFO.sub(_userinfo, text)
    return text


def _userinfo(m: re.Match[str]) -> str:
    return m.group(0) if m.group(2) == REDACTED else m.group(1) + REDACTED + m.group(3)


def redact_bytes(data: bytes) -> bytes:
    """Redact a body (bytes that need not be UTF-8: invalid bytes pass through
    unchanged), including a known secret split across several SSE events.

    A body is redacted a slice of about ``SLICE`` bytes at a time, each cut after a line
    end (no pattern and no known secret spans one, so this is the whole-text redaction):
    its text is never held whole beside its bytes, and a body with nothing to redact is
    returned as it is; a line longer than a slice that ``clean_bytes`` finds clean is not
    even decoded. Only a body where ``_split_found`` sees a known secret in a field
    of several events (or a secret holding a line end) is decoded and redacted whole."""
    if _whole_needed(data):
        text = data.decode("utf-8", "surrogateescape")
        out = redact(redact_split(text))
        return data if out == text else out.encode("utf-8", "surrogateescape")
    view = memoryview(data)
    done: list[bytes] | None = None  # from the first slice that changed on
    for start, end in slices(data):
        if end - start > SLICE and clean_bytes(data, start, end):  # a line longer than a
            # slice that holds nothing to redact, told from its bytes: not decoded whole
            if done is not None:
                done.append(data[start:end])
            continue
        text = str(view[start:end], "utf-8", "surrogateescape")
        red = redact(text)
        if done is None and red != text:
            done = [data[:start]]
        if done is not None:
            done.append(red.encode("utf-8", "surrogateescape"))
    return data if done is None else b"".join(done)


_PREFIXES_B = tuple(p.encode() for prefixes, _ in _SHAPES for p in prefixes)
_HIDING_B = tuple(h.encode() for h in _HIDING)


def clean_bytes(data: bytes, start: int = 0, end: int | None = None) -> bool:
    """Whether ``redact`` leaves ``data[start:end]`` (decoded) as it is, told from the
    bytes without decoding them or copying more than ``_HINT_STEP`` bytes: ASCII (so
    case-folding is ``lower``) holding none of what ``redact`` looks for (a known secret,
    a JSON escape that could hide one, a key shape's prefix, a scheme's name, a query's
    ``=`` with ``?`` or ``&``, a URL's ``@`` with ``://``). False when unsure: a slice
    that is not clean is redacted as text, so this only spares the decoding of a line
    as long as a body that holds nothing to redact."""
    end = len(data) if end is None else end
    step = _HINT_STEP
    for i in range(start, end, step):  # first: the scheme test below relies on ASCII
        piece = data[i : min(end, i + step + 6)]
        if not piece.isascii():
            return False
        low = piece.lower()
        if b"bearer" in low or b"basic" in low or b"token " in low or b"token\t" in low:
            return False
    known = _by_length
    hiding = _HIDING_B if known else ()
    for needle in (*_PREFIXES_B, *hiding):
        if data.find(needle, start, end) >= 0:
            return False
    for s in known:
        if not s.isascii() or data.find(s.encode("ascii"), start, end) >= 0:
            return False  # (a secret beyond ASCII cannot be in ASCII text: unsure anyway)
    if data.find(b"=", start, end) >= 0 and (
        data.find(b"?", start, end) >= 0 or data.find(b"&", start, end) >= 0
    ):
        return False
    return not (data.find(b"@", start, end) >= 0 and data.find(b"://", start, end) >= 0)


SLICE = 1 << 20  # bytes of a body redacted at once
_LINE_END = re.compile(rb"[\r\n]")


def slices(data: bytes, size: int | None = None) -> Iterator[tuple[int, int]]:
    """``data`` as (start, end) slices of about ``size`` (``SLICE``) bytes, each cut
    after a line end: the pieces a body is redacted in without changing what redaction
    finds."""
    start = 0
    while start < len(data):
        end = _slice_end(data, start, size)
        yield start, end
        start = end


def _slice_end(data: bytes, start: int, size: int | None = None) -> int:
    """Where the slice from ``start`` ends: after the last line end within ``size``
    (``SLICE``) bytes, else after the next one (a line longer than a slice is one
    slice)."""
    limit = start + (size or SLICE)
    if limit >= len(data):
        return len(data)
    cut = max(data.rfind(b"\n", start, limit), data.rfind(b"\r", start, limit))
    if cut >= 0:
        return cut + 1
    m = _LINE_END.search(data, limit)
    return m.end() if m else len(data)


def _whole_needed(data: bytes) -> bool:
    secrets_ = _by_length
    if not secrets_:
        return False
    if any("\n" in s or "\r" in s for s in secrets_):
        return True
    if b"data:" not in data:
        return False
    view = memoryview(data)
    keep = _split_keep(secrets_)

    def value(m: re.Match[bytes]) -> str:  # decoded once: no copy of a line as long as a body
        start = m.start() + 5 + (data[m.start() + 5 : m.start() + 6] == b" ")
        if m.end() - start > LONG_LINE:  # its long strings cut to their ends first
            pieces = shorten_strings(data, start, m.end(), keep)
            if len(pieces) > 1:
                return b"".join(pieces).decode("utf-8", "surrogateescape")
        return str(view[start : m.end()], "utf-8", "surrogateescape")

    return _split_found_in(
        _payloads(
            ((m.start(), m.end(), value(m)) for m in DATA_LINE_B.finditer(data)),
            lambda end, start: BLANK_B.search(data, end, start) is not None,
            _joined,
        )
    )


def redact_body(text: str) -> str:
    """``redact_bytes`` for a body that is already text."""
    return redact(redact_split(text))


def _fragments(value: Any, path: tuple[Any, ...], out: list[tuple[tuple[Any, ...], str]]) -> None:
    """Every string in a chunk with its exact path (dict keys, list positions)."""
    stack = [(value, path)]
    while stack:  # iteratively: a server may nest deeply
        v, p = stack.pop()
        if isinstance(v, str):
            out.append((p, v))
        elif isinstance(v, dict):
            stack.extend((x, p + (k,)) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((x, p + (i,)) for i, x in reversed(list(enumerate(v))))


def _field(path: tuple[Any, ...]) -> tuple[Any, ...]:
    """The field a fragment belongs to, whatever call or choice it is attributed to: its
    path without list positions (``choices.delta.tool_calls.function.arguments``). A
    client may join any fragments of one field (by index, by id, by name, to the call in
    progress...), so the search joins them every way that keeps their order."""
    return tuple(k for k in path if isinstance(k, str))


def _set_at(value: Any, path: tuple[Any, ...], new: str) -> None:
    for k in path[:-1]:
        value = value[k]
    value[path[-1]] = new


_LINES = re.compile(r"(\r\n|\r|\n)")  # the SSE line terminators
# A line that starts with "data:" (at the start or after a terminator), to its end.
DATA_LINE_B = re.compile(rb"(?:^|(?<=[\r\n]))data:[^\r\n]*")
_DATA_LINE = re.compile(DATA_LINE_B.pattern.decode())
# Two line ends in a row: a blank line, which ends an SSE event.
BLANK_B = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r|\n)")
_BLANK = re.compile(BLANK_B.pattern.decode())


def _payload(lines: list[str]) -> str:
    """An event's data (SSE): its ``data:`` lines' values, one leading space dropped,
    joined with line feeds (a JSON chunk may span several lines)."""
    values = [ln[5:] for ln in lines]
    return "\n".join(v[1:] if v.startswith(" ") else v for v in values)


def _event_fragments(payload: str) -> tuple[Any, list[tuple[tuple[Any, ...], str]]] | None:
    """An event's JSON object or array and its string fragments by path; None when the
    payload is not JSON of that kind."""
    payload = payload.strip()
    if not payload.startswith(("{", "[")):
        return None
    try:
        obj = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    fragments: list[tuple[tuple[Any, ...], str]] = []
    _fragments(obj, (), fragments)
    return obj, fragments


def _joined(values: list[str]) -> str:
    """``_payload`` of lines given without their ``data:`` and its space (one value is
    itself, not a copy)."""
    return "\n".join(values)


def _payloads(
    matches: Iterable[tuple[int, int, str]],
    gap: Callable[[int, int], bool],
    payload: Callable[[list[str]], str] = _payload,
) -> Iterator[str]:
    """The data of each event from its ``data:`` lines (start, end, text), in order:
    consecutive lines with no blank line between them (``gap``) make one event."""
    lines: list[str] = []
    end = -1
    for start, stop, text in matches:
        if lines and gap(end, start):
            yield payload(lines)
            lines = []
        lines.append(text)
        end = stop
    if lines:
        yield payload(lines)


class _SplitSearch:
    """Finds a known secret that a client would assemble from several fragments of one
    field: any later fragment may continue any earlier one (every attribution that
    keeps the event order), so a secret split as a call's first fragment and a second
    one without an index, or across interleaved calls, is found as it is by index.

    The state per field is, for each secret and each length of it matched so far, the
    fragments that made that match (the last ``KEEP`` of them, or as many as the secret
    has characters: a secret streamed a character per event is marked whole): bounded by
    the secrets' lengths, not by the stream. ``marks`` are the characters to redact, by
    fragment."""

    KEEP = 64

    def __init__(self, secrets_: tuple[str, ...]):
        self.secrets = secrets_
        self.keep = [max(self.KEEP, len(s)) for s in secrets_]  # a match's fragments, at most
        # per field: the next character each match so far waits for -> its matches
        self.pending: dict[tuple[Any, ...], dict[str, dict[tuple[int, int], list[Any]]]] = {}
        self.marks: dict[Any, list[tuple[int, int]]] = {}
        self.found = False

    def feed(self, field: tuple[Any, ...], ref: Any, value: str) -> None:
        if not value:
            return
        waiting = self.pending.setdefault(field, {})
        grown: list[tuple[int, int, list[Any]]] = []
        for (si, m), chain in waiting.get(value[0], {}).items():  # continued by this value?
            rest = self.secrets[si][m:]
            if value.startswith(rest):
                self.found = True
                for r, a, b in chain:
                    self.marks.setdefault(r, []).append((a, b))
                self.marks.setdefault(ref, []).append((0, len(rest)))
            elif rest.startswith(value):
                grown.append(
                    (si, m + len(value), chain[1 - self.keep[si] :] + [(ref, 0, len(value))])
                )
        for si, s in enumerate(self.secrets):  # a secret's start at this value's end
            p = value.find(s[0], max(0, len(value) - len(s) + 1))
            while p >= 0:
                if s.startswith(value[p:]):
                    grown.append((si, len(value) - p, [(ref, p, len(value))]))
                p = value.find(s[0], p + 1)
        for si, m, chain in grown:
            at = waiting.setdefault(self.secrets[si][m], {})
            at[(si, m)] = (at.get((si, m), []) + chain)[-self.keep[si] :]


def _split_found(lines: Iterable[str]) -> bool:
    """``_split_found_in`` of ``data:`` lines, each an event of its own."""
    return _split_found_in(_payload([line]) for line in lines)


def _split_found_in(payloads: Iterable[str]) -> bool:
    """Whether ``redact_split`` has anything to do: one pass over the events' data,
    holding only ``_SplitSearch``'s state."""
    search = _SplitSearch(_by_length)
    for payload in payloads:
        parsed = _event_fragments(payload)
        if parsed is None:
            continue
        for path, value in parsed[1]:
            search.feed(_field(path), None, value)
            if search.found:
                return True
    return False


def _text_payloads(text: str) -> Iterator[str]:
    keep = _split_keep(_by_length)

    def value(m: re.Match[str]) -> str:  # as _whole_needed's: a long line's strings cut
        start = m.start() + 5 + (text[m.start() + 5 : m.start() + 6] == " ")
        if m.end() - start > LONG_LINE:
            return "".join(shorten_strings(text, start, m.end(), keep))
        return text[start : m.end()]

    return _payloads(
        ((m.start(), m.end(), value(m)) for m in _DATA_LINE.finditer(text)),
        lambda end, start: _BLANK.search(text, end, start) is not None,
        _joined,
    )


# ------------------------------------------------------------------ long strings

LONG_LINE = 1 << 16  # a data line longer than this has its long strings cut to their ends
# A JSON string literal, as the grammar has it (only its escapes, no control character):
# a literal that is not one is never cut, so a payload that is not JSON stays not JSON.
_JSON_STRING = r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"'
_JSON_STRING_B = re.compile(_JSON_STRING.encode())
_JSON_STRING_S = re.compile(_JSON_STRING)


def _split_keep(secrets_: tuple[str, ...]) -> int:
    """What of a long string's ends the split search needs: a secret continued at its
    start or begun at its end, each character written as a ``\\uXXXX`` escape at worst."""
    return max(4096, 8 * len(secrets_[0])) if secrets_ else 4096


def shorten_strings(data: Any, start: int, end: int, keep: int) -> list[Any]:
    """``data[start:end]`` (str, or bytes as UTF-8: pieces as memoryviews) as pieces, each JSON string literal in
    it longer than about ``2 * keep`` cut to its first and last ``keep`` characters or so
    (never inside an escape or a UTF-8 character; never where the cut part is not
    valid UTF-8): the same JSON structure, its strings' ends, its first ``keep``
    characters, and its validity as JSON and as UTF-8, without a copy of an 8 MiB tool
    name. What the split-key search needs of a long line, and the evidence of an event."""
    text = isinstance(data, str)
    pattern = _JSON_STRING_S if text else _JSON_STRING_B
    ascii_ = text or data.isascii()
    view = data if text else memoryview(data)  # bytes handed on as views: no copy
    out, pos = [], start
    for m in pattern.finditer(data, start, end):
        a, b = m.start() + 1, m.end() - 1  # the literal's inside
        if b - a <= 2 * keep + 64:
            continue
        head = _char_start(data, _escape_cut(data, a, a + keep), a)
        tail = _char_start(data, _escape_cut(data, a, b - keep), head)
        if not ascii_ and not _utf8_between(data, head, tail):
            continue
        out.append(view[pos:head])
        pos = tail
    out.append(view[pos:end])
    return out


def _escape_cut(data: Any, a: int, x: int) -> int:
    """``x``, or the start of the escape that ``x`` falls inside (in a string literal
    whose inside starts at ``a``: an escape starts at a backslash ending an odd run)."""
    bs = "\\" if isinstance(data, str) else b"\\"
    p = data.rfind(bs, max(a, x - 5), x)
    if p < 0:
        return x
    q = p  # the run's start, found 64 characters at a time (a run may be long)
    while q > a:
        window = data[max(a, q - 64) : q]
        n = len(window) - len(window.rstrip(bs))
        q -= n
        if n < len(window):
            break
    if (p - q) % 2:  # an even run ends at p: the backslash at p is escaped, no escape
        return x
    size = 6 if data[p + 1 : p + 2] in ("u", b"u") else 2
    return p if p + size > x else x


def _char_start(data: Any, x: int, floor: int) -> int:
    """``x``, moved back to the start of the UTF-8 character it falls inside (bytes)."""
    if isinstance(data, str):
        return x
    while x > floor and 0x80 <= data[x] < 0xC0:
        x -= 1
    return x


def _utf8_between(data: bytes, a: int, b: int) -> bool:
    """Whether ``data[a:b]`` is valid UTF-8, decoded a slice at a time."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for i in range(a, b, SLICE):
            decoder.decode(view[i : min(b, i + SLICE)])
        decoder.decode(b"", True)
    except UnicodeDecodeError:
        return False
    return True


def redact_split(text: str) -> str:
    """Redact a known secret that a server split across the fragments of one field of
    an SSE stream (``"CANA"`` in one content delta, ``"RY…"`` in the next; a call's
    arguments across fragments however a client attributes them): the fragments are
    read per event (every ``data:`` line of it), every way of joining them is searched
    (``_SplitSearch``), and only the characters a secret spans are replaced. An event
    changed is written back as one ``data:`` line."""
    secrets_ = _by_length
    if not secrets_ or "data:" not in text:
        return text
    if not _split_found_in(_text_payloads(text)):
        return text  # the common case, found holding one event at a time
    lines = _LINES.split(text)  # lines at even positions, their terminators in between
    events: list[list[int]] = []
    current: list[int] = []
    for no in range(0, len(lines), 2):
        if lines[no].startswith("data:"):
            current.append(no)
        elif lines[no] == "" and current:
            events.append(current)
            current = []
    if current:
        events.append(current)
    search = _SplitSearch(secrets_)
    parsed: dict[int, tuple[Any, dict[int, tuple[tuple[Any, ...], str]]]] = {}
    for e, nos in enumerate(events):
        data = _event_fragments(_payload([lines[no] for no in nos]))
        if data is None:
            continue
        parsed[e] = (data[0], dict(enumerate(data[1])))
        for f, (path, value) in enumerate(data[1]):
            search.feed(_field(path), (e, f), value)
    changed: set[int] = set()
    for (e, f), spans in search.marks.items():
        obj, frags = parsed[e]
        path, value = frags[f]
        _set_at(obj, path, _mask(value, spans))  # a path: the payload is {…} or […]
        changed.add(e)
    for e in changed:
        nos = events[e]
        lines[nos[0]] = "data: " + _dumps(parsed[e][0])
        for no in nos[1:]:  # the event's other data lines (and their line ends) go
            lines[no] = ""
            if no + 1 < len(lines):
                lines[no + 1] = ""
    return "".join(lines)


def _mask(value: str, spans: list[tuple[int, int]]) -> str:
    """``value`` with every character inside a span replaced, a run by one REDACTED."""
    marked = bytearray(len(value))
    for a, b in spans:
        marked[a:b] = b"\1" * (b - a)
    out, i = [], 0
    while i < len(value):
        if marked[i]:
            while i < len(value) and marked[i]:
                i += 1
            out.append(REDACTED)
        else:
            out.append(value[i])
            i += 1
    return "".join(out)


def _dumps(obj: Any) -> str:
    """JSON text as the stream had it where it can be (non-ASCII kept), escaped where
    a lone surrogate would make it unwritable."""
    text = json.dumps(obj, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj)
    return text


def redact_obj(value: Any) -> Any:
    """Redact every string inside a JSON-like value (keys included)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, bytes):
        return redact_bytes(value)
    if isinstance(value, dict):
        return {redact_obj(k): redact_obj(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_obj(v) for v in value)
    return value


def one_line(text: str, limit: int = 200) -> str:
    """A redacted single line, at most ``limit`` characters: the shape of every reason."""
    text = " ".join(redact(str(text)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------ logs

_factory_installed = False


def install_log_redaction() -> None:
    """Redact every log record made from now on (all loggers: httpx, httpcore, vcr, ours).

    Installed by the first ``register``; it rewrites a record's message only when it
    holds something to redact, so ordinary records keep their arguments.
    """
    global _factory_installed
    with _lock:
        if _factory_installed:
            return
        _factory_installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if isinstance(record.args, tuple) and any(_holds_body(a) for a in record.args):
            record.args = tuple(_without_body(a) for a in record.args)
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to logging to report
            return record
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            if redact(str(exc)) != str(exc):  # never print a traceback that holds a key
                record.msg = f"{clean} ({type(exc).__name__}: {one_line(str(exc))})"
                record.exc_info, record.exc_text = None, None
        return record

    logging.setLogRecordFactory(factory)


def _holds_body(arg: Any) -> bool:
    return isinstance(arg, dict) and isinstance(arg.get("body"), dict)


def _without_body(arg: Any) -> Any:
    """A recorded response as vcrpy logs it, without its body: a key a server split
    across events is redacted only by ``redact_split`` on the body itself, which a
    ``repr`` of it defeats, so a log line never holds a body."""
    if not _holds_body(arg):
        return arg
    s = arg["body"].get("string")
    size = len(s) if isinstance(s, str | bytes) else 0
    return {**arg, "body": f"<{size} bytes, not logged>"}


# ------------------------------------------------------------------ files


def write_atomic(path: str | Path, data: str | bytes, *, redact_secrets: bool = True) -> None:
    """Redact, write to a temporary file next to ``path``, fsync, rename into place.

    ``redact_secrets=False`` is for documentation the suite generates (README, docs/): text we
    wrote ourselves, where a phrase like ``?key=`` is prose, not a secret.

    A failure at any point (a full disk, an encoding error, a crash before the rename)
    leaves the previous file untouched and removes the temporary file.
    """
    if not redact_secrets:
        payload = data if isinstance(data, bytes) else data.encode("utf-8")
    elif isinstance(data, bytes):
        payload = redact_bytes(data)
    else:
        payload = redact(data).encode("utf-8")
    _write_atomic(Path(path), lambda f: f.write(payload))


class RedactingLines:
    """A text sink (``write(str)``) that redacts whole lines and writes them as UTF-8 to
    ``f``: a text as long as a body is written without ever being held whole. For YAML
    this is the whole-text redaction: no pattern spans a line end, and a YAML writer
    escapes or indents every line end inside a value, so no known secret spans one in
    the text either."""

    def __init__(self, f: Any):
        self._f = f
        self._pending: list[str] = []  # the start of a line not ended yet

    def write(self, text: str) -> None:
        cut = text.rfind("\n") + 1
        if not cut:
            self._pending.append(text)
            return
        self._pending.append(text[:cut])
        self._line_end()
        if cut < len(text):
            self._pending.append(text[cut:])

    def flush(self) -> None:
        self._line_end()

    def _line_end(self) -> None:
        head = "".join(self._pending)  # one copy, even of a line as long as a body
        self._pending = []
        self._emit(head)

    def _emit(self, text: str) -> None:
        """Write whole lines (or the end of the text), redacted."""
        text = redact(text)
        for i in range(0, len(text), SLICE):  # encoded a slice at a time, not whole
            self._f.write(text[i : i + SLICE].encode("utf-8"))


def write_atomic_text(
    path: str | Path,
    emit: Callable[[Any], None],
    lines: Callable[[Any], RedactingLines] = RedactingLines,
) -> None:
    """``write_atomic`` for a text made by ``emit(sink)`` calling ``sink.write(str)``
    (a YAML dumper), redacted line by line and never held whole in memory; ``lines``
    makes the sink (a ``RedactingLines``) around the file."""

    def fill(f: Any) -> None:
        sink = lines(f)
        emit(sink)
        sink.flush()

    _write_atomic(Path(path), fill)


def _write_atomic(path: Path, fill: Callable[[Any], Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file 0600; reports and cassettes are meant to be shared, so
        # they get the mode any new file gets here (0666 less the umask).
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "wb") as f:
            fill(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def current_umask() -> int:
    """The process umask, read without changing it (Linux: /proc); elsewhere it is set
    and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask
