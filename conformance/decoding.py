"""One bounded decoder for every response body the suite reads.

The live transport, the replay of a cassette, ``conformance analyze`` of a cassette or a
HAR file: each undoes content codings here, and nowhere else (httpx and vcrpy never
see a ``Content-Encoding`` header of ours). What is undone:

* every coding the headers list, in every form a server can send it: one header with a
  comma list (``gzip, gzip``), the header repeated, ``identity`` among them; the last
  applied is undone first;
* then any layer the decoded bytes themselves announce with magic bytes (gzip, zstd),
  labelled or not: a key inside gzip inside gzip is found, and stored decoded.

gzip (several members), deflate (zlib or raw), brotli (the ``brotli`` package, when
installed) and zstd (``compression.zstd`` or the ``backports.zstd`` package, when
installed). A coding that cannot be undone here is a ``DecodeError``, never a body
passed on encoded (redaction could not see into it).

Every layer is decoded a bounded piece at a time (``PIECE`` bytes of output per call into
the codec): no layer, and not the result, ever holds more than ``max_bytes``; past it
the error names the limit.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

PIECE = 1 << 16  # output bytes asked of a codec at once
MAX_LAYERS = 8  # codings undone on one body, declared and announced together
DEFAULT_MAX_BYTES = 64 * 1024 * 1024  # transport.Limits().max_bytes: readers' bound
GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_GZIP = ("gzip", "x-gzip")


class DecodeError(ValueError):
    """A body that cannot be decoded within the bound: ``reason`` is one line;
    ``limit`` tells a body over ``max_bytes`` from a broken or unknown coding."""

    def __init__(self, reason: str, limit: bool = False, size: int = 0):
        super().__init__(reason)
        self.reason, self.limit, self.size = reason, limit, size


def codings(values: Iterable[str] | str | None) -> list[str]:
    """The content codings of a response, in the order they were applied: every header
    value (a header may be repeated), each split at commas, lowercased, ``identity``
    dropped."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out = []
    for value in values:
        for token in str(value).split(","):
            token = token.strip().lower()
            if token and token != "identity":
                out.append(token)
    return out


def header_codings(headers: Any) -> list[str]:
    """``codings`` of any header shape the suite holds: httpx ``Headers``, a mapping of
    names to a string or to a list of strings (vcrpy), names in any case."""
    if headers is None:
        return []
    plain = type(headers) is dict  # a reader's mapping: no attribute probe, no copy
    if not plain and hasattr(headers, "get_list"):
        return codings(headers.get_list("content-encoding"))
    values: list[str] = []
    for k, v in (headers if plain else dict(headers)).items():
        if str(k).lower() == "content-encoding":
            values += [str(x) for x in v] if isinstance(v, list | tuple) else [str(v)]
    return codings(values) if values else values


def _brotli() -> Any:
    try:
        import brotli
    except ImportError:
        return None
    return brotli if _has_limit(brotli) else None


def _has_limit(brotli: Any) -> bool:
    """brotli 1.2 and later bound each call's output (``output_buffer_limit``)."""
    return hasattr(brotli.Decompressor(), "can_accept_more_data")


def _zstd() -> Any:
    for name in ("compression.zstd", "backports.zstd"):
        try:
            module = __import__(name, fromlist=["ZstdDecompressor"])
        except ImportError:
            continue
        return module
    return None


def supported() -> tuple[str, ...]:
    """The codings this installation undoes."""
    return (
        ("gzip", "x-gzip", "deflate")
        + (("br",) if _brotli() else ())
        + (("zstd",) if _zstd() else ())
    )


class _Layer:
    """One coding undone incrementally: ``feed(data)`` and ``end()`` yield pieces of at
    most about ``PIECE`` bytes each."""

    def __init__(self, coding: str):
        self.coding = coding

    def feed(self, data: bytes) -> Iterator[bytes]:
        raise NotImplementedError

    def end(self) -> Iterator[bytes]:
        return iter(())

    def _fail(self, e: Exception) -> DecodeError:
        return DecodeError(f"the {self.coding} body could not be decoded ({e})")


class _Zlib(_Layer):
    """gzip (every member of a multi-member body) and deflate (zlib, else raw)."""

    def __init__(self, coding: str):
        super().__init__(coding)
        self._gzip = coding in _GZIP
        self._d: Any = zlib.decompressobj(16 + zlib.MAX_WBITS) if self._gzip else None
        self._head = b""  # deflate: the first two bytes tell zlib from raw deflate
        self._done = False  # a member ended: what follows is a new member or ignored

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._done and self._head:
            data, self._head = self._head + data, b""
        if self._d is None:
            self._head += data
            if len(self._head) < 2:
                return
            data, self._head = self._head, b""
            zlib_header = data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
            self._d = zlib.decompressobj(zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)
        while data:
            if self._done:
                if self._gzip and len(data) < 2 and GZIP_MAGIC.startswith(data):
                    self._head = data  # maybe the start of a next member
                    return
                if not (self._gzip and data[:2] == GZIP_MAGIC):
                    return  # trailing bytes after the body: not part of it, never kept
                self._d, self._done = zlib.decompressobj(16 + zlib.MAX_WBITS), False
            try:
                out = self._d.decompress(data, PIECE)
            except zlib.error as e:
                raise self._fail(e) from None
            if out:
                yield out
            if self._d.eof:
                self._done = True
                data = self._d.unused_data
            else:
                data = self._d.unconsumed_tail
                if not data and not out:
                    return

    def end(self) -> Iterator[bytes]:
        if self._d is None:
            if self._head:
                raise self._fail(ValueError("the compressed data ends early"))
            return
        if not self._done:
            try:
                while out := self._d.decompress(b"", PIECE):  # what a full piece kept back
                    yield out
            except zlib.error as e:
                raise self._fail(e) from None
            if not self._d.eof:
                raise self._fail(ValueError("the compressed data ends early"))


class _Brotli(_Layer):
    def __init__(self, coding: str, brotli: Any):
        super().__init__(coding)
        self._m = brotli
        self._d = brotli.Decompressor()

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            if self._d.is_finished():
                return
            out = self._d.process(data, output_buffer_limit=PIECE)
            while True:
                if out:
                    yield out
                # a full piece may leave output behind even when the input is all taken
                # (can_accept_more_data): ask again until a call gives nothing
                if self._d.is_finished() or (not out and self._d.can_accept_more_data()):
                    return
                out = self._d.process(b"", output_buffer_limit=PIECE)
        except self._m.error as e:
            raise self._fail(e) from None

    def end(self) -> Iterator[bytes]:
        if not self._d.is_finished():
            raise self._fail(ValueError("the compressed data ends early"))
        return iter(())


class _Zstd(_Layer):
    def __init__(self, coding: str, zstd: Any):
        super().__init__(coding)
        self._m = zstd
        self._d = zstd.ZstdDecompressor()
        self._rest = b""  # after a frame: bytes that may start the next one
        self._over = False  # bytes that start no frame followed: the body ended

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            while not self._over:
                if self._d.eof:  # a frame ended: another may follow
                    data, self._rest = self._rest + data, b""
                    if len(data) < len(ZSTD_MAGIC) and ZSTD_MAGIC.startswith(data):
                        self._rest = data  # maybe the start of a next frame
                        return
                    if data[:4] != ZSTD_MAGIC:
                        self._over = True  # trailing bytes: not part of it, never kept
                        return
                    self._d = self._m.ZstdDecompressor()
                out = self._d.decompress(data, PIECE)
                data = b""
                if out:
                    yield out
                if self._d.eof:
                    data = self._d.unused_data
                    if not data:
                        return
                    continue
                if self._d.needs_input:
                    return
        except self._m.ZstdError as e:
            raise self._fail(e) from None

    def end(self) -> Iterator[bytes]:
        if not self._d.eof:
            raise self._fail(ValueError("the compressed data ends early"))
        return iter(())


def _layer(coding: str) -> _Layer:
    if coding in (*_GZIP, "deflate"):
        return _Zlib(coding)
    if coding == "br" and (brotli := _brotli()) is not None:
        return _Brotli(coding, brotli)
    if coding == "zstd" and (zstd := _zstd()) is not None:
        return _Zstd(coding, zstd)
    hint = {
        "br": " (install brotli>=1.2 to decode it)",
        "zstd": " (install backports.zstd to decode it)",
    }.get(coding, "")
    raise DecodeError(
        f"the body is {coding}-encoded, which the suite cannot decode{hint}: "
        "not kept (a key inside it could not be redacted)"
    )


class Decoder:
    """A body's codings undone as it arrives: ``feed(chunk)`` and ``end()`` yield the
    decoded bytes in pieces; ``DecodeError`` once a layer's output or the result passes
    ``max_bytes``, or a coding is broken or unknown. ``undone`` lists what was undone,
    announced layers included (``gzip (unlabelled)``)."""

    def __init__(self, declared: list[str], max_bytes: int):
        if len(declared) > MAX_LAYERS:
            raise DecodeError(
                f"{len(declared)} content codings on one body: at most {MAX_LAYERS} are undone"
            )
        self.max_bytes = max_bytes
        self.undone: list[str] = list(reversed(declared))
        self._layers = [_layer(c) for c in self.undone]  # the last applied first
        self._sizes = [0] * len(self._layers)
        self._sniff = _Sniff(self)
        self.size = 0  # decoded bytes handed out

    def check(self, size: int) -> None:
        if size > self.max_bytes:
            raise DecodeError(
                f"stream exceeded {self.max_bytes} bytes (limits.max_bytes)", limit=True, size=size
            )

    def announce(self, coding: str) -> _Layer:
        """A layer the bytes announce (magic bytes): one more layer, within MAX_LAYERS."""
        if len(self.undone) >= MAX_LAYERS:
            raise DecodeError(f"more than {MAX_LAYERS} content codings on one body")
        self.undone.append(f"{coding} (unlabelled)")
        return _layer(coding)

    def feed(self, data: bytes) -> Iterator[bytes]:
        return self._out(self._push(0, data))

    def end(self) -> Iterator[bytes]:
        return self._out(self._ends())

    def _ends(self) -> Iterator[bytes]:
        for i, layer in enumerate(self._layers):  # a layer's tail goes through the rest
            for piece in layer.end():
                self._sizes[i] += len(piece)
                self.check(self._sizes[i])
                yield from self._push(i + 1, piece)
        yield from self._sniff.end()

    def _out(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        for piece in pieces:
            self.size += len(piece)
            self.check(self.size)
            yield piece

    def _push(self, i: int, data: bytes) -> Iterator[bytes]:
        if i == len(self._layers):
            yield from self._sniff.feed(data)
            return
        for piece in self._layers[i].feed(data):
            self._sizes[i] += len(piece)
            self.check(self._sizes[i])
            yield from self._push(i + 1, piece)


class _Sniff:
    """After the declared layers: the first bytes say whether one more layer follows
    (gzip or zstd magic bytes), undone here, its output sniffed again; else the bytes
    pass through."""

    def __init__(self, owner: Decoder):
        self._owner = owner
        self._head = b""
        self._plain = False
        self._layer: _Layer | None = None
        self._next: _Sniff | None = None
        self._size = 0

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._plain:
            if data:
                yield data
        elif self._layer is not None:
            yield from self._through(self._layer.feed(data))
        else:
            self._head += data
            if len(self._head) < len(ZSTD_MAGIC) and (
                GZIP_MAGIC.startswith(self._head[:2]) or ZSTD_MAGIC.startswith(self._head)
            ):
                return  # too few bytes to tell yet
            yield from self._decide()

    def _decide(self) -> Iterator[bytes]:
        head, self._head = self._head, b""
        coding = "gzip" if head[:2] == GZIP_MAGIC else "zstd" if head[:4] == ZSTD_MAGIC else None
        if coding is None:
            self._plain = True
            if head:
                yield head
            return
        self._layer = self._owner.announce(coding)
        self._next = _Sniff(self._owner)
        yield from self._through(self._layer.feed(head))

    def _through(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        assert self._next is not None
        for piece in pieces:
            self._size += len(piece)
            self._owner.check(self._size)
            yield from self._next.feed(piece)

    def end(self) -> Iterator[bytes]:
        if not self._plain and self._layer is None:
            yield from self._decide()
        if self._layer is not None:
            assert self._next is not None
            yield from self._through(self._layer.end())
            yield from self._next.end()


def decode(
    body: bytes, declared: list[str] | str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[bytes, list[str]]:
    """A whole body decoded (the codings declared, then every announced layer) and what
    was undone; ``DecodeError`` past ``max_bytes`` or for a coding it cannot undo. A
    body with nothing to undo is returned as it is, without a copy."""
    declared = codings(declared) if not isinstance(declared, list) else declared
    if not declared and body[:2] != GZIP_MAGIC and body[:4] != ZSTD_MAGIC:
        if len(body) > max_bytes:
            raise DecodeError(
                f"stream exceeded {max_bytes} bytes (limits.max_bytes)", limit=True, size=len(body)
            )
        return body, []
    dec = Decoder(declared, max_bytes)
    out = io.BytesIO()
    view = memoryview(body)
    for i in range(0, len(body), 1 << 20):
        for piece in dec.feed(bytes(view[i : i + (1 << 20)])):
            out.write(piece)
    for piece in dec.end():
        out.write(piece)
    return out.getvalue(), dec.undone


KEEP = 256 * 1024  # what a body that cannot be decoded whole keeps (transport.KEEP_ON_LIMIT)


def prefix(body: bytes | memoryview, size: int = KEEP) -> bytes:
    """The first ``size`` bytes of the body, cut after the last SSE event that ends
    within them (a cut inside an event would read as the server's malformed event);
    a body with no event end in them (JSON, one huge event) is cut at ``size``."""
    out = bytes(body[:size])
    end = max(
        out.rfind(sep) + len(sep) if sep in out else 0 for sep in (b"\n\n", b"\r\n\r\n", b"\r\r")
    )
    return out[: end or size]


def kept(body: bytes, headers: Any = None, size: int = KEEP) -> bytes:
    """What a body that ``decode`` refuses keeps as evidence: its first ``size`` bytes
    once decoded (as far as they decode), cut after an event; nothing of a body in a
    coding that cannot be undone (a key inside it could not be redacted)."""
    out = io.BytesIO()
    try:
        dec = Decoder(header_codings(headers), size)
        view = memoryview(body)
        for i in range(0, len(body), PIECE):
            for piece in dec.feed(bytes(view[i : i + PIECE])):
                out.write(piece)
    except DecodeError:
        pass
    return prefix(out.getbuffer(), size)


def decode_or_keep(
    body: bytes, headers: Any = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[bytes, str | None]:
    """``decode`` by the headers' codings, for a reader: the decoded body and None; past
    ``max_bytes``, what ``kept`` keeps and the one-line reason (the cell's error). A
    body that does not decode as its header claims is read as it is (a recorder that
    stored it decoded and kept the header; invalid bytes for the analysis to judge)."""
    try:
        return decode(body, header_codings(headers), max_bytes)[0], None
    except DecodeError as e:
        if not e.limit:
            return body, None
        return kept(body, headers), e.reason
