"""``-j N``: `conformance analyze` and the field-evidence run on several processes give
byte for byte the output of ``-j 1``, in input order, and stream (a bounded window)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import field
from conformance.parallel import chunk_size, ordered_map

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import corpus  # noqa: E402


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """120 short streams (every verdict, an unreadable file), shuffled: the order given
    is not the order of the names."""
    paths = corpus.write(tmp_path_factory.mktemp("corpus"), 120)
    random.Random(5).shuffle(paths)
    return paths


def analyze(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", "analyze", *map(str, args)],
        capture_output=True,
        timeout=300,
        cwd=ROOT,
    )


@pytest.mark.parametrize("mode", [["--json"], []], ids=["json", "summary"])
def test_generated_corpus_same_bytes_and_order(generated: list[Path], mode: list[str]) -> None:
    one, two = analyze("-j", "1", *mode, *generated), analyze("-j", "2", *mode, *generated)
    assert one.returncode == two.returncode == 2  # the unreadable files: exit 2 either way
    assert two.stdout == one.stdout and two.stderr == one.stderr
    if mode:
        sources = [c["source"] for c in json.loads(two.stdout)["captures"]]
        readable = [str(p) for p in generated if p.read_bytes()[:1] != b"\x00"]
        assert sources == readable  # the order given, not the names' order
        assert {c["verdict"] for c in json.loads(two.stdout)["captures"]} >= {
            "conforms",
            "quirk",
            "fails",
        }


def test_every_cassette_same_bytes() -> None:
    cassettes = sorted((ROOT / "cassettes").rglob("*.yaml"))
    assert len(cassettes) > 100
    one, two = analyze("-j", "1", "--json", *cassettes), analyze("-j", "2", "--json", *cassettes)
    assert one.returncode == two.returncode == 0, two.stderr
    assert two.stdout == one.stdout
    assert len(json.loads(two.stdout)["captures"]) >= len(cassettes)


def test_no_capture_is_still_one_document(tmp_path: Path) -> None:
    bad = [tmp_path / "a.sse", tmp_path / "b.sse"]
    for p in bad:
        p.write_bytes(b"\x00")
    r = analyze("-j", "2", "--json", *bad)
    assert r.returncode == 2 and json.loads(r.stdout) == {"captures": []}
    assert r.stderr.decode().count("binary data") == 2


def test_jobs_must_be_a_count(generated: list[Path]) -> None:
    r = analyze("-j", "many", generated[0])
    assert r.returncode == 2 and b"a number of processes" in r.stderr


def test_field_evidence_same_document(generated: list[Path], tmp_path: Path) -> None:
    directory = generated[0].parent
    sources = {"routes": {"gateway": {"label": "A gateway", "column": None}}, "captures": {}}
    one = field.analyse_directory(directory, sources, jobs=1)
    two = field.analyse_directory(directory, sources, jobs=2)
    assert field.dumps(two) == field.dumps(one)
    assert len(one["entries"]) == 119 and len(one["unreadable"]) == 1
    assert set(one["routes"]) == set(corpus.ROUTES)


def _drawn(log: list[int], n: int):  # a generator that records how far it was read
    for i in range(n):
        log.append(i)
        yield i


def test_bounded_window_streams() -> None:
    """The consumer holds the first result while at most ``window`` chunks are in flight:
    the input is not read ahead of that (a million files are never all submitted)."""
    log: list[int] = []
    out = ordered_map(abs, _drawn(log, 10_000), 2, total=10_000, window=3)
    assert next(out) == 0
    size = chunk_size(10_000, 2)
    assert len(log) <= 4 * size  # the window, plus the chunk being cut
    assert list(out) == list(range(1, 10_000))  # and the rest, in order


def test_report_same_files(generated: list[Path], tmp_path: Path) -> None:
    """``--report``: the workers' results get their transcripts back for the evidence."""
    some = generated[:12]
    analyze("-j", "1", "--report", tmp_path / "one", *some)
    analyze("-j", "2", "--report", tmp_path / "two", *some)
    files = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert "quirks-matrix.json" in files
    for name in files:
        assert (tmp_path / "two" / name).read_bytes() == (tmp_path / "one" / name).read_bytes()
    doc = json.loads((tmp_path / "two" / "quirks-matrix.json").read_text())
    assert any(c["evidence"] for c in doc["cells"])  # the evidence is there, not empty
