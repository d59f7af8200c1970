"""Cassettes: vcrpy options (what is scrubbed, how requests match) and an atomic persister.

vcrpy stores a streamed httpx response as the full body it read (the stub reads the
stream before handing it back), undecoded; with ``decode_compressed_response`` the body
is stored decoded so that no key can hide inside gzip. Replay returns the same bytes to
``iter_bytes()``, so a replayed cell sees what the live run saw.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from vcr.persisters.filesystem import CassetteNotFoundError, FilesystemPersister
from vcr.serialize import serialize

from conformance import secrets


def scrub_request(request: Any) -> Any:
    if request.body:
        body = request.body if isinstance(request.body, bytes) else request.body.encode()
        request.body = secrets.redact_bytes(body)
    request.uri = secrets.redact(request.uri)
    for h in list(request.headers):
        if h.lower() in secrets.SECRET_HEADERS:
            del request.headers[h]
        else:
            request.headers[h] = secrets.redact(request.headers[h])
    return request


def scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    body = response.get("body") or {}
    s = body.get("string")
    if isinstance(s, str):
        body["string"] = secrets.redact(s)
    elif isinstance(s, bytes):
        body["string"] = secrets.redact_bytes(s)
    headers = response.get("headers") or {}
    for h in list(headers):
        if h.lower() in secrets.SECRET_HEADERS:
            del headers[h]
        else:
            headers[h] = [secrets.redact(v) for v in headers[h]]
    return response


def vcr_options() -> dict[str, Any]:
    return {
        "filter_headers": [(h, None) for h in secrets.SECRET_HEADERS],
        "filter_query_parameters": [(q, None) for q in secrets.SECRET_QUERY],
        "decode_compressed_response": True,
        # Local servers get a new port every run: a cell's cassette is its own file, so
        # method and path identify an interaction; repeats play back in recorded order.
        "match_on": ["method", "path"],
        "before_record_request": scrub_request,
        "before_record_response": scrub_response,
        "record_on_exception": False,
    }


class AtomicPersister(FilesystemPersister):
    """Writes through a temporary file and a rename, after a last redaction pass."""

    @classmethod
    def save_cassette(cls, cassette_path: Any, cassette_dict: Any, serializer: Any) -> None:
        data = secrets.redact(serialize(cassette_dict, serializer))
        path = Path(cassette_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(data, encoding="utf-8")
        os.replace(tmp, path)


def pytest_recording_configure(config: Any, vcr: Any) -> None:
    vcr.register_persister(AtomicPersister)


__all__ = ["AtomicPersister", "CassetteNotFoundError", "scrub_request", "scrub_response",
           "vcr_options"]
