"""The bounded decoder, pinned by what a reader of a cell sees: the bytes a body decodes
to, the codings named as undone, the one-line refusal (a bomb, a broken or unknown
coding, too many layers) and what a refused body keeps. Everything is in memory and
small: a bomb here is a few MiB of zeros against a bound of a few KiB."""

from __future__ import annotations

import base64
import gzip
import random
import sys
import types
import zlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from conformance import decoding as D
from conformance.decoding import DecodeError, Decoder, decode

brotli = pytest.importorskip("brotli")
try:
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:
    from backports import zstd  # type: ignore[import-not-found,no-redef]

SSE = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
    b"data: [DONE]\n\n"
)
LIMIT = "stream exceeded {} bytes (limits.max_bytes)"


def raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


def gz_zeros(n: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return c.compress(b"\0" * n) + c.flush()


def stream(dec: Decoder, body: bytes, step: int) -> list[bytes]:
    """The pieces ``dec`` hands out for ``body`` fed ``step`` bytes at a time."""
    out = [p for i in range(0, len(body), step) for p in dec.feed(body[i : i + step])]
    return out + list(dec.end())


def refusal(body: bytes, declared: Any = None, max_bytes: int = 1 << 20) -> DecodeError:
    with pytest.raises(DecodeError) as e:
        decode(body, declared, max_bytes)
    return e.value


# ------------------------------------------------------------------ which codings


@pytest.mark.parametrize(
    "values, out",
    [
        (None, []),
        ("", []),
        ("gzip", ["gzip"]),
        ("GZip", ["gzip"]),
        (" br , gzip ", ["br", "gzip"]),
        ("gzip,,identity, IDENTITY ,deflate", ["gzip", "deflate"]),
        (["gzip", "br, zstd"], ["gzip", "br", "zstd"]),
        (("x-gzip",), ["x-gzip"]),
        ([], []),
    ],
)
def test_the_codings_are_every_value_split_lowercased_without_identity(
    values: Any, out: list[str]
) -> None:
    assert D.codings(values) == out


@pytest.mark.parametrize(
    "headers, out",
    [
        (None, []),
        ({}, []),
        ({"Content-Type": "gzip"}, []),
        ({"Content-Encoding": "GZIP, br"}, ["gzip", "br"]),
        ({"CONTENT-ENCODING": ["gzip", "deflate"]}, ["gzip", "deflate"]),  # vcrpy's lists
        ({"content-encoding": ("br",)}, ["br"]),
        ([("content-encoding", "zstd")], ["zstd"]),  # pairs
        (httpx.Headers([("content-encoding", "gzip"), ("Content-Encoding", "br")]), ["gzip", "br"]),
        (httpx.Headers({"x-other": "gzip"}), []),
        # the header repeated in two spellings (a HAR's list of names and values)
        ({"Content-Encoding": "br", "content-encoding": "gzip"}, ["br", "gzip"]),
    ],
)
def test_header_codings_reads_every_header_shape(headers: Any, out: list[str]) -> None:
    assert D.header_codings(headers) == out


def test_supported_names_every_coding_this_installation_undoes() -> None:
    assert D.supported() == ("gzip", "x-gzip", "deflate", "br", "zstd")


def test_without_brotli_br_is_refused_with_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "brotli", None)  # import brotli → ImportError
    assert D.supported() == ("gzip", "x-gzip", "deflate", "zstd")
    e = refusal(brotli.compress(SSE), "br")
    assert e.reason == (
        "the body is br-encoded, which the suite cannot decode (install brotli>=1.2 to "
        "decode it): not kept (a key inside it could not be redacted)"
    )
    assert e.limit is False


def test_a_brotli_without_an_output_bound_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """brotli before 1.2 decodes a whole bomb in one call: refused like no brotli."""
    old = types.ModuleType("brotli")
    old.Decompressor = type("Decompressor", (), {})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "brotli", old)
    assert "br" not in D.supported()
    assert "install brotli>=1.2" in refusal(b"x", "br").reason


def test_without_zstd_it_is_refused_with_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "compression.zstd", None)
    monkeypatch.setitem(sys.modules, "backports.zstd", None)
    assert D.supported() == ("gzip", "x-gzip", "deflate", "br")
    assert refusal(zstd.compress(SSE), "zstd").reason == (
        "the body is zstd-encoded, which the suite cannot decode (install backports.zstd "
        "to decode it): not kept (a key inside it could not be redacted)"
    )


def test_either_zstd_module_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The standard library's first (Python 3.14), else the backport."""
    monkeypatch.setitem(sys.modules, "compression.zstd", zstd)
    monkeypatch.setitem(sys.modules, "backports.zstd", None)
    assert decode(zstd.compress(SSE), "zstd") == (SSE, ["zstd"])
    monkeypatch.setitem(sys.modules, "compression.zstd", None)
    monkeypatch.setitem(sys.modules, "backports.zstd", zstd)
    assert decode(zstd.compress(SSE), "zstd") == (SSE, ["zstd"])


def test_an_unknown_coding_is_refused_without_a_hint() -> None:
    e = refusal(b"CANARY" * 10, "compress")
    assert e.reason == (
        "the body is compress-encoded, which the suite cannot decode: "
        "not kept (a key inside it could not be redacted)"
    )
    assert (e.limit, e.size) == (False, 0)


# ------------------------------------------------------------------ what is undone


@pytest.mark.parametrize(
    "declared, body, undone",
    [
        ("gzip", gzip.compress(SSE, mtime=0), ["gzip"]),
        ("x-gzip", gzip.compress(SSE, mtime=0), ["x-gzip"]),
        ("deflate", zlib.compress(SSE), ["deflate"]),
        ("deflate", raw_deflate(SSE), ["deflate"]),
        ("br", brotli.compress(SSE), ["br"]),
        ("zstd", zstd.compress(SSE), ["zstd"]),
        ("br, gzip", gzip.compress(brotli.compress(SSE), mtime=0), ["gzip", "br"]),
        (["deflate", "zstd"], zstd.compress(zlib.compress(SSE)), ["zstd", "deflate"]),
        (None, gzip.compress(SSE, mtime=0), ["gzip (unlabelled)"]),
        (None, zstd.compress(SSE), ["zstd (unlabelled)"]),
        (
            "gzip",
            gzip.compress(gzip.compress(SSE, mtime=0), mtime=0),
            ["gzip", "gzip (unlabelled)"],
        ),
        (
            None,
            gzip.compress(zstd.compress(SSE), mtime=0),
            ["gzip (unlabelled)", "zstd (unlabelled)"],
        ),
        (
            "gzip",
            gzip.compress(SSE[:40], mtime=0) + gzip.compress(SSE[40:], mtime=0),
            ["gzip"],
        ),  # two members
        ("zstd", zstd.compress(SSE[:40]) + zstd.compress(SSE[40:]), ["zstd"]),  # two frames
        ("identity", SSE, []),
        (None, SSE, []),
    ],
)
def test_each_coding_is_undone_and_named_whatever_the_piece_sizes(
    declared: Any, body: bytes, undone: list[str]
) -> None:
    assert decode(body, declared) == (SSE, undone)
    for step in (1, 2, 3, 7, len(body)):
        dec = Decoder(D.codings(declared), 1 << 20)
        assert b"".join(stream(dec, body, step)) == SSE, step
        assert dec.undone == undone
        assert dec.size == len(SSE)


def test_a_body_with_nothing_to_undo_is_returned_as_it_is() -> None:
    body = bytes(SSE)
    out, undone = decode(body)
    assert out is body and undone == []


def test_an_empty_body_decodes_to_nothing() -> None:
    assert decode(b"") == (b"", [])
    assert decode(b"", "deflate") == (b"", ["deflate"])
    assert b"".join(stream(Decoder([], 10), b"", 1)) == b""


@pytest.mark.parametrize("head", [b"\x1f", b"\x28", b"\x28\xb5", b"\x28\xb5\x2f", b"\x1f\x8c"])
def test_a_body_shorter_than_a_magic_or_unlike_one_passes_as_it_is(head: bytes) -> None:
    for step in (1, len(head)):
        dec = Decoder([], 100)
        assert b"".join(stream(dec, head, step)) == head
        assert dec.undone == []
    dec = Decoder([], 100)
    assert b"".join(stream(dec, head + b"data: x\n\n", 1)) == head + b"data: x\n\n"


@pytest.mark.parametrize(
    "body", [gzip.compress(SSE, mtime=0) + b"trailing junk", gzip.compress(SSE, mtime=0) + b"\x1f"]
)
def test_bytes_after_the_last_gzip_member_are_not_part_of_the_body(body: bytes) -> None:
    for step in (1, 5, len(body)):
        assert b"".join(stream(Decoder(["gzip"], 1 << 20), body, step)) == SSE


def test_a_second_member_split_after_its_first_magic_byte_is_still_read() -> None:
    first, second = gzip.compress(SSE[:40], mtime=0), gzip.compress(SSE[40:], mtime=0)
    dec = Decoder(["gzip"], 1 << 20)
    out = list(dec.feed(first + second[:1])) + list(dec.feed(second[1:])) + list(dec.end())
    assert b"".join(out) == SSE


def test_deflate_ends_its_body_and_ignores_what_follows() -> None:
    body = zlib.compress(SSE) + zlib.compress(b"not this")
    assert decode(body, "deflate")[0] == SSE


def test_bytes_after_the_last_zstd_frame_are_not_part_of_the_body() -> None:
    body = zstd.compress(SSE) + b"junk after the frame"
    for step in (1, len(body)):
        assert b"".join(stream(Decoder(["zstd"], 1 << 20), body, step)) == SSE


def test_a_small_brotli_body_that_decodes_to_many_pieces_is_read_whole() -> None:
    """brotli takes all the input at once and holds the output back: a body of a few
    hundred bytes that decodes to a MiB is asked for its pieces until it gives none
    (it was refused as ending early)."""
    data = b"".join(b'data: {"n": %d}\n\n' % (i % 7) for i in range(60_000))
    body = brotli.compress(data)
    assert len(body) < 2000 < D.PIECE < len(data)
    for step in (len(body), 100):
        dec = Decoder(["br"], 2 << 20)
        assert b"".join(stream(dec, body, step)) == data, step
    assert decode(body, "br")[0] == data


@pytest.mark.parametrize("step", [1, 2, 3, 5])
def test_a_zstd_frame_whose_magic_arrives_in_pieces_is_read(step: int) -> None:
    """The next frame's first four bytes split across reads: kept until they tell (its
    frame was dropped, the body silently cut)."""
    first, second = zstd.compress(SSE[:40]), zstd.compress(SSE[40:])
    dec = Decoder(["zstd"], 1 << 20)
    out = list(dec.feed(first)) + stream(dec, second, step)
    assert b"".join(out) == SSE
    junk = first + b"\x28\xb5junk" + second
    assert b"".join(stream(Decoder(["zstd"], 1 << 20), junk, step)) == SSE[:40]


def test_bytes_after_a_brotli_stream_are_not_decoded() -> None:
    dec = Decoder(["br"], 1 << 20)
    out = list(dec.feed(brotli.compress(SSE))) + list(dec.feed(b"more")) + list(dec.end())
    assert b"".join(out) == SSE


# ------------------------------------------------------------------ broken codings


@pytest.mark.parametrize(
    "declared, body, reason",
    [
        ("gzip", b"not gzip at all", "the gzip body could not be decoded (Error -3 "),
        ("deflate", b"\xff\xff\xff\xff", "the deflate body could not be decoded (Error -3 "),
        (
            "gzip",
            gzip.compress(SSE, mtime=0)[:-12],
            "the gzip body could not be decoded (the compress",
        ),
        ("deflate", zlib.compress(SSE)[:-6], "the deflate body could not be decoded (the comp"),
        ("deflate", b"x", "the deflate body could not be decoded (the compressed data ends early)"),
        ("br", b"\xff\xff\xff\xff", "the br body could not be decoded (brotli: decoder failed)"),
        ("br", brotli.compress(SSE)[:-4], "the br body could not be decoded (the compressed"),
        (
            "zstd",
            zstd.compress(b"data: x\n\n" * 50)[:6]
            + b"\xd3"
            + zstd.compress(b"data: x\n\n" * 50)[7:],
            "the zstd body could not be decoded (Unable to decompress Zstandard data: Data corr",
        ),
        ("zstd", zstd.compress(SSE)[:-4], "the zstd body could not be decoded (the compressed"),
        (None, b"\x1f\x8bnot gzip", "the gzip body could not be decoded (Error -3 "),
        (
            None,
            gzip.compress(SSE, mtime=0)[:-12],
            "the gzip body could not be decoded (the compressed",
        ),
        (None, zstd.compress(SSE)[:-4], "the zstd body could not be decoded (the compressed"),
    ],
)
def test_a_broken_coding_is_refused_and_named(declared: Any, body: bytes, reason: str) -> None:
    for step in (1, len(body)):
        with pytest.raises(DecodeError) as e:
            stream(Decoder(D.codings(declared), 1 << 20), body, step)
        assert e.value.reason.startswith(reason), e.value.reason
        assert e.value.limit is False
        assert str(e.value) == e.value.reason


def test_a_truncated_gzip_body_says_it_ends_early() -> None:
    e = refusal(gzip.compress(SSE, mtime=0)[:-12], "gzip")
    assert e.reason == "the gzip body could not be decoded (the compressed data ends early)"


def test_a_bad_second_gzip_member_is_refused() -> None:
    body = gzip.compress(SSE, mtime=0) + b"\x1f\x8b" + b"\xff" * 20
    assert refusal(body, "gzip").reason.startswith("the gzip body could not be decoded (Error")


# ------------------------------------------------------------------ the bound


def test_eight_codings_are_undone_and_nine_refused() -> None:
    body = SSE
    for _ in range(8):
        body = gzip.compress(body, mtime=0)
    assert decode(body, ["gzip"] * 8) == (SSE, ["gzip"] * 8)
    e = refusal(gzip.compress(body, mtime=0), ["gzip"] * 9)
    assert e.reason == "9 content codings on one body: at most 8 are undone"
    assert e.limit is False


def test_announced_layers_count_towards_the_eight() -> None:
    body = SSE
    for _ in range(8):
        body = gzip.compress(body, mtime=0)
    assert decode(body)[1] == ["gzip (unlabelled)"] * 8
    assert decode(body, ["gzip"] * 4)[1] == ["gzip"] * 4 + ["gzip (unlabelled)"] * 4
    e = refusal(gzip.compress(body, mtime=0), ["gzip"] * 4)
    assert e.reason == "more than 8 content codings on one body"
    assert refusal(gzip.compress(body, mtime=0)).reason == "more than 8 content codings on one body"


BOMB = gz_zeros(4 << 20)  # 4 MiB of zeros in about 4 KB


@pytest.mark.parametrize(
    "declared, body",
    [
        ("gzip", BOMB),
        (None, BOMB),  # unlabelled
        ("gzip", gzip.compress(BOMB, mtime=0)),  # the outer layer is small, the inner one the bomb
        ("gzip, gzip", gzip.compress(BOMB, mtime=0)),
        ("gzip", gzip.compress(gzip.compress(BOMB, mtime=0), mtime=0)),
        ("deflate", zlib.compress(b"\0" * (4 << 20))),
        ("br", brotli.compress(b"\0" * (4 << 20), quality=1)),
        ("zstd", zstd.compress(b"\0" * (4 << 20))),
        (None, zstd.compress(b"\0" * (4 << 20))),
    ],
)
def test_a_bomb_is_refused_at_the_bound_naming_it(declared: Any, body: bytes) -> None:
    e = refusal(body, declared, 100_000)
    assert e.reason == LIMIT.format(100_000)
    assert e.limit is True
    assert 100_000 < e.size <= 100_000 + D.PIECE * 3 // 2


def test_a_body_exactly_at_the_bound_is_kept_and_one_byte_more_is_not() -> None:
    body = b"x" * 1000
    for declared in ("gzip", None):
        coded = gzip.compress(body, mtime=0)
        assert decode(coded, declared, 1000)[0] == body
        e = refusal(coded, declared, 999)
        assert (e.reason, e.limit, e.size) == (LIMIT.format(999), True, 1000)


def test_a_plain_body_over_the_bound_is_refused_with_its_size() -> None:
    assert decode(b"x" * 10, None, 10)[0] == b"x" * 10
    e = refusal(b"x" * 11, None, 10)
    assert (e.reason, e.limit, e.size) == (LIMIT.format(10), True, 11)


def test_a_plain_body_fed_past_the_bound_is_refused() -> None:
    dec = Decoder([], 10)
    assert b"".join(dec.feed(b"x" * 6)) == b"x" * 6
    with pytest.raises(DecodeError) as e:
        list(dec.feed(b"x" * 5))
    assert (e.value.reason, e.value.limit, e.value.size) == (LIMIT.format(10), True, 11)


@pytest.mark.parametrize("declared", [["gzip"], []])
def test_a_layer_is_bounded_even_when_the_next_one_shrinks_it(declared: list[str]) -> None:
    """Each layer's output counts, not only the result: a large middle layer is a bomb,
    declared or announced."""
    inner = gzip.compress(b"x" * 100, mtime=0)
    padded = inner + b"\0" * 200_000  # bytes after the member: not part of the result
    body = gzip.compress(padded, mtime=0)
    assert decode(body, declared, 250_000)[0] == b"x" * 100
    e = refusal(body, declared, 150_000)  # the outer layer gives 200 kB+ of bytes
    assert e.reason == LIMIT.format(150_000)


def test_a_declared_layer_ending_past_the_bound_is_refused() -> None:
    """What the codec kept back until the end counts too."""
    data = b"\0" * 300_000
    dec = Decoder(["gzip"], 200_000)
    with pytest.raises(DecodeError) as e:
        stream(dec, gzip.compress(data, mtime=0), len(data))
    assert e.value.reason == LIMIT.format(200_000)


def test_an_unlabelled_layer_counts_its_own_output() -> None:
    inner = gzip.compress(b"\0" * 200_000, mtime=0) + b"\0" * 100_000
    body = gzip.compress(inner, mtime=0)
    assert decode(body, None, 200_000)[0] == b"\0" * 200_000
    e = refusal(body, None, 150_000)
    assert e.reason == LIMIT.format(150_000)


@pytest.mark.parametrize(
    "declared, body",
    [
        ("gzip", gz_zeros(1 << 20)),
        ("deflate", zlib.compress(b"\0" * (1 << 20))),
        ("br", brotli.compress(b"\0" * (1 << 20))),
        ("zstd", zstd.compress(b"\0" * (1 << 20))),
        (None, gz_zeros(1 << 20)),
        (None, zstd.compress(b"\0" * (1 << 20))),
    ],
)
def test_a_bomb_comes_out_a_piece_at_a_time(declared: Any, body: bytes) -> None:
    """No piece a codec is asked for is larger than PIECE: a bomb is never held whole."""
    dec = Decoder(D.codings(declared), 2 << 20)
    pieces = stream(dec, body, len(body))
    assert b"".join(pieces) == b"\0" * (1 << 20)
    # brotli's output bound is not exact: at most half a piece over it
    assert max(len(p) for p in pieces) <= D.PIECE * 3 // 2


def test_a_large_body_is_decoded_a_mebibyte_of_input_at_a_time() -> None:
    data = random.Random(29).randbytes(3_000_000)  # 3 MB that does not compress
    body = gzip.compress(data, 1, mtime=0)
    assert len(body) > 2 << 20  # three slices of input, none read twice or skipped
    assert decode(body, "gzip", 4 << 20) == (data, ["gzip"])


# ------------------------------------------------------------------ what a refused body keeps


def test_prefix_cuts_after_the_last_whole_event() -> None:
    assert D.prefix(b"data: a\n\ndata: b\n\ndata: c", 20) == b"data: a\n\ndata: b\n\n"
    assert D.prefix(b"data: a\r\n\r\ndata: b", 100) == b"data: a\r\n\r\n"
    assert D.prefix(b"data: a\r\rdata: b", 100) == b"data: a\r\r"
    assert D.prefix(b"a\r\rb\n\nc", 100) == b"a\r\rb\n\n"
    assert D.prefix(b'{"a": "long json"}', 5) == b'{"a":'
    assert D.prefix(b"x" * (D.KEEP + 10)) == b"x" * D.KEEP
    assert D.prefix(memoryview(b"data: a\n\nxyz"), 10) == b"data: a\n\n"


def test_kept_is_the_decoded_start_of_a_bomb_cut_after_an_event() -> None:
    event = b"data: " + b"z" * 94 + b"\n\n"  # 102 bytes
    body = gzip.compress(event * 50_000, mtime=0)  # 5.1 MB
    out = D.kept(body, {"content-encoding": "gzip"})
    assert out == event * (D.KEEP // len(event))
    # a smaller bound: the decoded pieces within it, cut after their last event
    out = D.kept(body, {"content-encoding": "gzip"}, 200_000)
    assert out == event * (len(out) // len(event))
    assert 200_000 - D.PIECE < len(out) <= 200_000


def test_kept_of_a_broken_or_unknown_coding_is_what_decoded_before_it() -> None:
    assert D.kept(b"CANARY secret in lzw", {"content-encoding": "compress"}) == b""
    good = gzip.compress(SSE, mtime=0)
    assert D.kept(good[:-8], {"content-encoding": "gzip"}) == SSE  # no trailer: all decoded
    assert D.kept(b"\x1f\x8bbroken", {}) == b""
    assert D.kept(SSE) == SSE


def test_kept_reads_a_body_longer_than_a_piece() -> None:
    event = b"data: " + b"q" * 1018 + b"\n\n"  # 1 KiB
    body = event * 150 + b"data: cut"  # 150 KiB, plain: three slices
    assert D.kept(body, None, 200_000) == event * 150
    assert (
        D.kept(gzip.compress(body, mtime=0), {"content-encoding": "gzip"}, 200_000) == event * 150
    )


def test_decode_or_keep_decodes_by_the_headers() -> None:
    assert D.decode_or_keep(gzip.compress(SSE, mtime=0), {"Content-Encoding": "gzip"}) == (
        SSE,
        None,
    )
    assert D.decode_or_keep(SSE) == (SSE, None)


def test_decode_or_keep_reads_a_body_that_does_not_decode_as_it_is() -> None:
    """A recorder that stored the body decoded and kept its header."""
    assert D.decode_or_keep(SSE, {"content-encoding": "gzip"}) == (SSE, None)
    assert D.decode_or_keep(SSE, {"content-encoding": "compress"}) == (SSE, None)


def test_decode_or_keep_past_the_bound_keeps_the_start_and_says_why() -> None:
    event = b"data: " + b"z" * 94 + b"\n\n"
    body = gzip.compress(event * 5000, mtime=0)  # 510 kB decoded
    out, reason = D.decode_or_keep(body, {"content-encoding": "gzip"}, 300_000)
    assert reason == LIMIT.format(300_000)
    assert out == event * (D.KEEP // len(event))
    out, reason = D.decode_or_keep(event * 5000, None, 300_000)
    assert reason == LIMIT.format(300_000)
    assert out == event * (D.KEEP // len(event))


@pytest.mark.parametrize(
    "coding, body", [("deflate", zlib.compress(SSE)), ("br", brotli.compress(SSE))]
)
def test_decode_or_keep_undoes_a_coding_only_its_header_names(coding: str, body: bytes) -> None:
    """deflate and brotli have no magic bytes: only the header says what to undo."""
    assert D.decode_or_keep(body, {"Content-Encoding": coding}) == (SSE, None)


def test_decode_or_keep_past_the_bound_keeps_the_decoded_start_of_a_header_s_coding() -> None:
    event = b"data: " + b"z" * 94 + b"\n\n"
    out, reason = D.decode_or_keep(
        zlib.compress(event * 5000), {"content-encoding": "deflate"}, 300_000
    )
    assert reason == LIMIT.format(300_000)
    assert out == event * (D.KEEP // len(event))


def test_decode_or_keep_default_bound_is_the_transport_s() -> None:
    from conformance.transport import Limits

    assert D.DEFAULT_MAX_BYTES == Limits().max_bytes
    body = b"x" * 100
    assert D.decode_or_keep(body)[0] is body


def _chunks(body: bytes, n: int) -> Iterator[bytes]:
    for i in range(0, len(body), n):
        yield body[i : i + n]


def test_a_multi_layer_body_fed_in_odd_chunks_gives_every_byte_once() -> None:
    data = b"".join(b"data: %d\n\n" % i for i in range(3000))
    body = gzip.compress(brotli.compress(zlib.compress(data)), mtime=0)
    dec = Decoder(["deflate", "br", "gzip"], 1 << 20)
    out = [p for c in _chunks(body, 333) for p in dec.feed(c)] + list(dec.end())
    assert b"".join(out) == data
    assert dec.undone == ["gzip", "br", "deflate"]


# ------------------------------------------------------------------ member and frame edges


def stored(data: bytes, final: bool, first: int | None = None) -> bytes:
    """A raw deflate stored block; ``first`` overrides its first byte (the header's three
    bits and five padding bits, which a decoder ignores)."""
    head = first if first is not None else int(final)
    n = len(data)
    return bytes([head]) + n.to_bytes(2, "little") + (n ^ 0xFFFF).to_bytes(2, "little") + data


@pytest.mark.parametrize(
    "body, data",
    [
        # 0x01 0x17: divisible by 31 like a zlib header, but not deflate's method 8
        (stored(b"x" * 23, True), b"x" * 23),
        # 0x08 0x05: method 8 in the low bits, but not divisible by 31
        (stored(b"abcde", False, first=0x08) + stored(b"fg", True), b"abcdefg"),
    ],
)
def test_raw_deflate_that_half_looks_like_zlib_is_read_raw(body: bytes, data: bytes) -> None:
    for step in (1, 2, len(body)):
        assert b"".join(stream(Decoder(["deflate"], 1000), body, step)) == data


def test_a_two_byte_deflate_body_is_decided_on_its_two_bytes() -> None:
    assert raw_deflate(b"") == b"\x03\x00"
    assert decode(b"\x03\x00", "deflate") == (b"", ["deflate"])


def test_a_third_member_after_a_split_magic_is_read() -> None:
    one, two, three = (gzip.compress(SSE[i : i + 40], mtime=0) for i in (0, 40, 80))
    dec = Decoder(["gzip"], 1 << 20)
    out = list(dec.feed(one + two[:1])) + list(dec.feed(two[1:])) + list(dec.feed(three))
    assert b"".join(out + list(dec.end())) == SSE


def test_a_member_cut_after_its_magic_ends_early_and_one_byte_is_trailing() -> None:
    body = gzip.compress(SSE, mtime=0)
    assert refusal(body + b"\x1f\x8b", "gzip").reason == (
        "the gzip body could not be decoded (the compressed data ends early)"
    )
    assert decode(body + b"\x1f", "gzip")[0] == SSE


def test_a_zstd_frame_cut_after_its_magic_ends_early() -> None:
    body = zstd.compress(SSE)
    assert refusal(body + D.ZSTD_MAGIC, "zstd").reason == (
        "the zstd body could not be decoded (the compressed data ends early)"
    )
    assert decode(body + D.ZSTD_MAGIC[:3], "zstd")[0] == SSE  # too short to start one


def test_three_zstd_frames_each_in_its_own_read_are_read() -> None:
    frames = [zstd.compress(b"\0" * (200_000 if i == 0 else 10) + b"%d" % i) for i in range(3)]
    dec = Decoder(["zstd"], 1 << 20)
    out = [p for f in frames for p in dec.feed(f)] + list(dec.end())
    assert b"".join(out) == b"\0" * 200_000 + b"0" + b"\0" * 10 + b"1" + b"\0" * 10 + b"2"


@pytest.mark.parametrize("inner", [b"(", b"\x1f", b"\x28\xb5\x2f"])
def test_a_decoded_body_shorter_than_a_magic_is_handed_out_at_the_end(inner: bytes) -> None:
    """Too short to tell whether one more layer follows: kept until the end, then given."""
    assert decode(gzip.compress(inner, mtime=0), "gzip") == (inner, ["gzip"])
    dec = Decoder(["gzip"], 100)
    assert b"".join(dec.feed(gzip.compress(inner, mtime=0))) == b""
    assert b"".join(dec.end()) == inner


# A gzip body cut short: its first 65,536 bytes come out while it is fed, and zlib holds
# back the last 198 it decoded (the rest of a match) until it is asked at the end.
CUT_GZIP = base64.b64decode(
    "H4sIAAAAAAAAA+3PyZWEMAwFQC355zxfpjOYa/HAYFkLtVXTs1m6qnu6dr/ITgKVa3MnUrM7846SlCf7"
    "vGfz3iut7U108nHxVHXv1fdt0uPXMDM6J9nvjUnR3nKT9/6gb8Zv4Ld5Ca/rpX0pfX3mDag3koODg4OD"
    "g4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4OD"
    "g4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4OD"
    "g4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4OD"
    "g4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4ODg4OD"
    "g4ODg4ODg4OD"
)


def test_a_cut_body_hands_out_every_byte_it_decoded_before_it_ends_early() -> None:
    whole = zlib.decompressobj(31).decompress(CUT_GZIP)  # unbounded: every byte it holds
    assert len(whole) == 65_734
    dec = Decoder(["gzip"], 1 << 20)
    out = list(dec.feed(CUT_GZIP))
    assert b"".join(out) == whole[: D.PIECE]
    with pytest.raises(DecodeError, match="ends early"):
        for piece in dec.end():
            out.append(piece)
    assert b"".join(out) == whole


def test_a_cut_body_whose_held_back_bytes_pass_the_bound_is_refused_for_it() -> None:
    dec = Decoder(["gzip"], 65_600)
    assert len(b"".join(dec.feed(CUT_GZIP))) == D.PIECE
    with pytest.raises(DecodeError) as e:
        list(dec.end())
    assert (e.value.reason, e.value.limit) == (LIMIT.format(65_600), True)


def test_a_zlib_body_labelled_gzip_is_refused() -> None:
    e = refusal(zlib.compress(SSE), "gzip")
    assert e.reason.startswith("the gzip body could not be decoded (Error -3 ")


@pytest.mark.parametrize("body", [gzip.compress(SSE, mtime=0), zstd.compress(SSE)])
def test_an_unlabelled_layer_is_decoded_as_it_arrives(body: bytes) -> None:
    """Its bytes are not held until the end: the events come out of the feed."""
    dec = Decoder([], 1 << 20)
    assert b"".join(dec.feed(body)) == SSE
    assert b"".join(dec.end()) == b""
    dec = Decoder([], 1 << 20)
    out = b"".join(p for i in range(0, len(body), 5) for p in dec.feed(body[i : i + 5]))
    assert out == SSE


def test_a_plain_body_stays_plain_whatever_a_later_read_starts_with() -> None:
    """Only a body's first bytes can announce a layer: gzip magic bytes further on are
    bytes of the body, handed out as they are."""
    later = gzip.compress(b"data: y\n\n")
    dec = Decoder([], 1000)
    out = list(dec.feed(b"data: x\n\n")) + list(dec.feed(later)) + list(dec.end())
    assert b"".join(out) == b"data: x\n\n" + later
    assert dec.undone == []


# gzip(gzip(100 "x") + 70,000 zero bytes) cut 30 bytes short: the outer layer gives 65,536
# bytes while it is fed and 22 more it held back when asked at the end; the inner layer
# gives 100 bytes of "x" (the zeros after its member are not part of the body).
CUT_OUTER_GZIP = base64.b64decode(
    "H4sIAAAAAAAEA+3QoRHAIBREwT/EoNJCKkkpoOgmghaQmaFJJqkBuSeeOLnXk+NbOuY77oheztr+RwgQ"
    "IECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAEC"
    "BAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECA"
    "AAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQ"
    "IECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAEC"
    "BAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAAECBAgQIECAAA=="
)


def test_an_outer_layer_whose_held_back_bytes_pass_the_bound_is_refused_for_it() -> None:
    """The outer layer's own output counts at the end too, though the inner layer shrinks
    it to 100 bytes: refused for the bound (a bomb), not read as a body that ends early."""
    dec = Decoder(["gzip", "gzip"], 1 << 20)
    assert b"".join(dec.feed(CUT_OUTER_GZIP)) == b"x" * 100
    with pytest.raises(DecodeError, match="ends early") as e:
        list(dec.end())
    dec = Decoder(["gzip", "gzip"], 65_540)
    assert b"".join(dec.feed(CUT_OUTER_GZIP)) == b"x" * 100
    with pytest.raises(DecodeError) as e:
        list(dec.end())
    assert (e.value.reason, e.value.limit) == (LIMIT.format(65_540), True)
