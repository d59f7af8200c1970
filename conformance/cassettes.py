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
pass; then it is written through a temporary file and a rename. A body longer than
``BIG`` is written and read back a slice at a time: a cell near ``max_bytes`` holds it
once (vcrpy's bytes), not as the dumper's or the loader's text beside them.
"""

from __future__ import annotations

import base64
import codecs
import re
from pathlib import Path
from typing import Any

import yaml
from vcr.persisters.filesystem import (
    CassetteDecodeError,
    CassetteNotFoundError,
    FilesystemPersister,
)
from vcr.serialize import deserialize, serialize

from conformance import readers, secrets
from conformance.readers import CassetteRefused
from conformance.transcript import InputError


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
            headers[h] = (
                [secrets.redact(v) for v in values]
                if isinstance(values, list)
                else secrets.redact(str(values))
            )
    status = response.get("status")
    if isinstance(status, dict) and isinstance(status.get("message"), str):
        status["message"] = secrets.redact(status["message"])
    return response


def vcr_options() -> dict[str, Any]:
    return {
        "filter_headers": [(h, None) for h in secrets.SECRET_HEADERS],
        "filter_query_parameters": [(q, None) for q in secrets.SECRET_QUERY],
        # Not vcrpy's decoder (unbounded, and it runs on every cassette loaded): the
        # transport and transport.exchange undo every coding, bounded (decoding.py).
        "decode_compressed_response": False,
        # Local servers get a new port every run: a cell's cassette is its own file, so
        # method and path identify an interaction; repeats play back in recorded order.
        "match_on": ["method", "path"],
        "before_record_request": scrub_request,
        "before_record_response": scrub_response,
        "record_on_exception": False,
    }


class AtomicPersister(FilesystemPersister):
    """Writes through a temporary file and a rename, after a last redaction pass; reads
    YAML without holding a big body's text.

    YAML (the suite's format) is dumped straight into the file through that pass, line
    by line: the text of a cassette is never held whole. A response body longer than
    ``BIG`` is set aside before the dump (a placeholder in a copy of the response) and
    written from its bytes a slice at a time, redacted, as one double-quoted line (text)
    or as the ``!!binary`` block vcrpy would write (bytes that are not UTF-8). Loading
    decodes such a line a slice at a time back into bytes (``readers.load_yaml``)."""

    @classmethod
    def save_cassette(cls, cassette_path: Any, cassette_dict: Any, serializer: Any) -> None:
        if not is_yaml(serializer):
            secrets.write_atomic(Path(cassette_path), serialize(cassette_dict, serializer))
            return
        aside: dict[str, bytes] = {}
        responses = [_set_aside(r, aside) for r in cassette_dict["responses"]]
        copy = {**cassette_dict, "responses": responses}
        secrets.write_atomic_text(
            Path(cassette_path),
            lambda sink: serialize(copy, _YamlInto(sink)),
            lambda f: _BodyLines(f, aside),
        )

    @classmethod
    def load_cassette(cls, cassette_path: Any, serializer: Any) -> Any:
        """A YAML cassette is loaded safe and bounded (``readers.safe_yaml``), never with
        vcrpy's own YAML loader (PyYAML's full loader: a cassette could run code). A
        refused or invalid file is ``CassetteRefused``: one line naming it."""
        if not is_yaml(serializer):
            return super().load_cassette(cassette_path, serializer)
        path = Path(cassette_path)
        if not path.is_file():
            raise CassetteNotFoundError()
        try:
            data = readers.load_yaml(
                path, lambda text: readers.safe_yaml(text.decode("utf-8"), str(path))
            )
        except UnicodeDecodeError as err:  # what vcrpy says of a file that is not UTF-8
            raise CassetteDecodeError("Can't read Cassette, Encoding is broken") from err
        except InputError as err:
            raise CassetteRefused(f"cassette {err}") from None
        if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
            raise CassetteRefused(
                f"cassette {path}: a YAML file without an `interactions` list (not a cassette)"
            )
        return deserialize(None, _Loaded(data))  # vcrpy's checks and conversion


class SafeYaml:
    """vcrpy's YAML serializer made safe: the same dump (libyaml's where installed, as
    vcrpy's), loaded with ``safeyaml`` (no Python tags, aliases bounded). Registered as
    vcrpy's ``yaml`` serializer by the pytest plugin; its own names, not vcrpy's private
    serializer modules (vcrpy 9 removed them)."""

    @staticmethod
    def serialize(data: Any) -> str:
        return str(yaml.dump(data, Dumper=DUMPER))

    @staticmethod
    def deserialize(text: Any) -> Any:
        return readers.safe_yaml(text, "cassette")


DUMPER = getattr(yaml, "CDumper", yaml.Dumper)  # what vcrpy's YAML serializer dumps with


def is_yaml(serializer: Any) -> bool:
    """Ours, or vcrpy's YAML serializer (by its module name: nothing of vcrpy is imported,
    so a vcrpy without that module changes nothing here)."""
    return (
        serializer is SafeYaml
        or getattr(serializer, "__name__", None) == "vcr.serializers.yamlserializer"
    )


BIG = 1 << 20  # a response body longer than this is written in slices
# Bytes of it decoded, redacted and escaped at once: each step copies (UTF-8 decoding
# costs up to 3 times its input at its peak), so less than a redaction's SLICE.
PIECE = 1 << 18
_MARK = readers.SET_ASIDE


def _set_aside(response: Any, aside: dict[str, bytes]) -> Any:
    """A copy of a recorded response (vcrpy's own dict is never changed; vcrpy's
    conversion to text changes the copy), its body replaced by a placeholder when it is
    bytes longer than ``BIG``."""
    if not isinstance(response, dict) or not isinstance(response.get("body"), dict):
        return response
    body = response["body"]
    s = body.get("string")
    if isinstance(s, bytes) and len(s) > BIG:
        mark = readers.set_aside_mark(len(aside))
        aside[mark] = s
        s = mark
    return {**response, "body": {**body, "string": s}}


class _BodyLines(secrets.RedactingLines):
    """The last redaction pass, writing a set-aside body where the dumper wrote its
    placeholder line (``<indent>string: <placeholder>``)."""

    def __init__(self, f: Any, aside: dict[str, bytes]):
        super().__init__(f)
        self._aside = aside
        self._written: set[str] = set()

    def flush(self) -> None:
        super().flush()
        if len(self._written) != len(self._aside):  # never a placeholder for a body
            raise RuntimeError("a response body set aside was not written into the cassette")

    def _emit(self, text: str) -> None:
        pos = 0
        if self._aside:
            for m in _MARK_LINE.finditer(text):
                body = self._aside.get(m.group(2))
                if body is None:
                    continue
                self._written.add(m.group(2))
                super()._emit(text[pos : m.start()])
                self._f.write(m.group(1).encode() + b"string: ")
                if _utf8(body):
                    _write_text(self._f, body)
                else:
                    _write_binary(self._f, body, m.group(1) + "  ")
                pos = m.end()
        super()._emit(text[pos:])


_MARK_LINE = re.compile(r"^( *)string: (" + _MARK + r"[0-9]+-[0-9a-f]{16})\n", re.MULTILINE)


def _utf8(body: bytes) -> bool:
    """Whether vcrpy would write the body as text: valid UTF-8, checked a slice at a
    time (an incremental decoder: a character may straddle a slice end)."""
    if body.isascii():  # the common case, checked without a copy
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(body)
    try:
        for i in range(0, len(body), PIECE):
            decoder.decode(view[i : i + PIECE])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _write_text(f: Any, body: bytes) -> None:
    """The body as a YAML double-quoted scalar on one line, a slice at a time: each
    slice (``PIECE`` bytes or so) ends after a line end of the body (``secrets.slices``:
    what redaction finds is what it finds in the whole text) and is redacted, then
    escaped: ``\\``, ``"``, every line break and everything outside YAML's printable
    set (NUL, C0 and C1 controls, U+FEFF, U+FFFE, and, as ``\\x``/``\\u``/``\\U``, every
    character beyond ASCII, so that the file stays ASCII as libyaml writes it)."""
    f.write(b'"')
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(body)
    for start, end in secrets.slices(body, PIECE):
        if end - start > PIECE and secrets.clean_bytes(body, start, end):
            # a line longer than a piece (no line end to cut at) that holds nothing to
            # redact: escaped a piece at a time, never decoded whole
            for i in range(start, end, PIECE):
                j = min(end, i + PIECE)
                f.write(_escape(decoder.decode(view[i:j], j == len(body))))
            continue
        f.write(_escape(secrets.redact(decoder.decode(view[start:end], end == len(body)))))
    f.write(b'"\n')


_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _escape(text: str) -> bytes:
    text = (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    if _CONTROLS.search(text):
        text = _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    # \x85, \u2028, \u2029, \ufeff, \ufffe, astral characters: Python's escapes of them
    # are YAML's (\xHH, \uHHHH, \UHHHHHHHH)
    return text.encode("ascii", "backslashreplace")


_B64_LINE = 57  # bytes per base64 line of 76 characters, as libyaml and base64 write them


def _write_binary(f: Any, body: bytes, indent: str) -> None:
    """The body as vcrpy's YAML writer has it (``!!binary |``, base64 lines of 76
    characters), a slice at a time, each line through the last redaction pass."""
    f.write(b"!!binary |\n")
    step = PIECE // _B64_LINE * _B64_LINE or _B64_LINE
    view = memoryview(body)
    for i in range(0, len(body), step):
        lines = base64.encodebytes(view[i : i + step]).decode("ascii")
        lines = indent + lines[:-1].replace("\n", "\n" + indent) + "\n"
        f.write(secrets.redact(lines).encode("ascii"))


class _YamlInto:
    """vcrpy's YAML serializer, dumping into a sink instead of returning the text."""

    def __init__(self, sink: Any):
        self._sink = sink

    def serialize(self, data: Any) -> None:
        yaml.dump(data, self._sink, Dumper=DUMPER)


class _Loaded:
    """A serializer whose text is already loaded: vcrpy's ``deserialize`` on it."""

    def __init__(self, data: Any):
        self._data = data

    def deserialize(self, _text: Any) -> Any:
        return self._data


__all__ = [
    "AtomicPersister",
    "CassetteNotFoundError",
    "CassetteRefused",
    "SafeYaml",
    "is_yaml",
    "scrub_request",
    "scrub_response",
    "vcr_options",
]
