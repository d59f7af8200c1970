"""Keys never reach a file: every secret the run knows is redacted from any text it writes.

Secrets are the values of the key variables named in providers.yaml (read from the
environment only), plus anything registered by tests (canaries). Redaction is applied
to cassettes (headers, query, bodies), results, reports, logs and error messages.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

REDACTED = "<redacted>"
SECRET_HEADERS = ("authorization", "api-key", "x-api-key", "cookie", "set-cookie",
                  "proxy-authorization", "x-goog-api-key", "openai-organization")
SECRET_QUERY = ("key", "api_key", "api-key", "apikey", "token", "access_token", "sig",
                "signature", "x-api-key")
# Key-shaped strings, redacted even when we were not told about them.
KEY_SHAPES = re.compile(r"\b(?:sk-[A-Za-z0-9_-]{16,}|sk-proj-[A-Za-z0-9_-]{16,}|"
                        r"AIza[0-9A-Za-z_-]{30,}|gsk_[A-Za-z0-9]{20,}|"
                        r"Bearer\s+[A-Za-z0-9._~+/=-]{16,})")

_known: set[str] = set()


def register(*values: str | None) -> None:
    for v in values:
        if v and len(v) >= 6:
            _known.add(v)


def register_env(names: Iterable[str | None]) -> None:
    for n in names:
        if n:
            register(os.environ.get(n))


def known() -> frozenset[str]:
    return frozenset(_known)


def redact(text: str) -> str:
    for s in sorted(_known, key=len, reverse=True):
        if s in text:
            text = text.replace(s, REDACTED)
    return KEY_SHAPES.sub(REDACTED, text)


def redact_bytes(data: bytes) -> bytes:
    if not _known and b"sk-" not in data and b"Bearer" not in data and b"AIza" not in data \
            and b"gsk_" not in data:
        return data
    try:
        return redact(data.decode("utf-8")).encode("utf-8")
    except UnicodeDecodeError:
        for s in _known:
            data = data.replace(s.encode(), REDACTED.encode())
        return data
