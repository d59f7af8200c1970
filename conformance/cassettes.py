"""Cassettes: vcrpy options (what is scrubbed, how requests match) and an atomic persister.

vcrpy records a streamed httpx response by reading the whole body inside
``Client.send``; that read goes through ``transport.LimitedTransport``, which undoes
gzip/deflate (so no key can hide inside a compressed body, and the stored body is the
one judged) and bounds it by the provider's limits. Replay returns the same bytes to
``iter_bytes()``, so a replayed cell sees what the live run saw.

Before a cassette is written: the credential headers (Authorization, api-key,
x-api-key, cookies, any header whose name has a credential part such as
Ocp-Apim-Subscription-Key) are removed from requests and responses, the user info and
every query parameter named like a credential or holding a known secret are removed
from URIs, every known secret and key-shaped string is
redacted from URIs, headers and bodies, and the serialized text gets a last redaction
pass; then it is written through a temporary file and a rename.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from vcr.persisters.filesystem import CassetteNotFoundError, FilesystemPersister
from vcr.serialize import serialize
from vcr.serializers import yamlserializer

from conformance import secrets


def scrub_request(request: Any) -> Any:
    if request.body:
        body = request.body if isinstance(request.body, bytes) else request.body.encode()
        request.body = secrets.redact_bytes(body)
    request.uri = secrets.scrub_url(request.uri)
    for h in list(request.headers):
        if secrets.credential_name(h):
            del request.headers[h]
        else:
            request.headers[h] = secrets.redact(request.headers[h])
    return request


def scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    body = response.get("body") or {}
    s = body.get("string")
    if isinstance(s, str):
        body["string"] = secrets.redact_body(s)
    elif isinstance(s, bytes):
        body["string"] = secrets.redact_bytes(s)
    headers = response.get("headers") or {}
    for h in list(headers):
        if secrets.credential_name(h):
            del headers[h]
        else:
            values = headers[h]
            headers[h] = [secrets.redact(v) for v in values] if isinstance(values, list) \
                else secrets.redact(str(values))
    status = response.get("status")
    if isinstance(status, dict) and isinstance(status.get("message"), str):
        status["message"] = secrets.redact(status["message"])
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
    """Writes through a temporary file and a rename, after a last redaction pass.

    YAML (the suite's format) is dumped straight into the file through that pass, line
    by line: the text of a cassette is never held whole (with a body near ``max_bytes``,
    the text and its UTF-8 copy were two more bodies in memory)."""

    @classmethod
    def save_cassette(cls, cassette_path: Any, cassette_dict: Any, serializer: Any) -> None:
        if serializer is yamlserializer:
            secrets.write_atomic_text(Path(cassette_path), lambda sink: serialize(
                cassette_dict, _YamlInto(sink)))
        else:
            secrets.write_atomic(Path(cassette_path), serialize(cassette_dict, serializer))


class _YamlInto:
    """vcrpy's YAML serializer, dumping into a sink instead of returning the text."""

    def __init__(self, sink: Any):
        self._sink = sink

    def serialize(self, data: Any) -> None:
        yaml.dump(data, self._sink, Dumper=yamlserializer.Dumper)



__all__ = ["AtomicPersister", "CassetteNotFoundError", "scrub_request", "scrub_response",
           "vcr_options"]
