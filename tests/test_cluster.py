"""The Dask recipe (conformance.cluster) on a local cluster of several worker processes
gives the field-evidence document of the single-process run, byte for byte."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from conformance import field

pytest.importorskip("dask.distributed", reason="the cluster extra: pip install '.[cluster]'")
from dask.distributed import Client, LocalCluster  # noqa: E402

from conformance import cluster  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT.parent / "shared" / "captures"
sys.path.insert(0, str(ROOT / "benchmarks"))
import corpus  # noqa: E402

SOURCES = {"routes": {"gateway": {"label": "A gateway", "column": None}}, "captures": {}}


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            n_workers=3,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as lc,
        Client(lc) as c,
    ):
        yield c


def test_generated_corpus_same_document(client, tmp_path: Path) -> None:
    corpus.write(tmp_path, 150)
    local = field.analyse_directory(tmp_path, SOURCES, jobs=1)
    # small batches and a small window: many tasks, finishing out of order
    spread = cluster.analyse(client, str(tmp_path), SOURCES, batch=7, window=4)
    assert field.dumps(spread) == field.dumps(local)
    assert len(local["unreadable"]) == 2 and str(tmp_path) in local["unreadable"][0]
    assert {e["verdict"] for e in local["entries"]} >= {"conforms", "quirk", "fails"}


def test_an_url_prefix(client, tmp_path: Path) -> None:
    """An fsspec URL (here file://) is read by the workers; unreadable files are named by
    their URL."""
    corpus.write(tmp_path, 60)
    url = tmp_path.as_uri()
    spread = cluster.analyse(client, url, SOURCES, batch=16)
    local = field.analyse_directory(tmp_path, SOURCES, jobs=1)
    assert spread["entries"] == local["entries"]
    assert spread["unreadable"] == [e.replace(str(tmp_path), url) for e in local["unreadable"]]


@pytest.mark.skipif(not CAPTURES.is_dir(), reason="the shared captures are absent")
def test_real_captures_and_committed_sources(client, tmp_path: Path) -> None:
    sources = field.load_sources()
    for p in CAPTURES.iterdir():
        shutil.copy(p, tmp_path / p.name)
    local = field.analyse_directory(tmp_path, sources, jobs=1)
    assert field.dumps(cluster.analyse(client, str(tmp_path), sources)) == field.dumps(local)


def test_not_a_directory(client, tmp_path: Path) -> None:
    with pytest.raises(field.FieldError, match="not a directory of captures"):
        cluster.analyse(client, str(tmp_path / "absent"), SOURCES)


def test_command_against_a_running_scheduler(client, tmp_path: Path, capsys) -> None:
    corpus.write(tmp_path / "logs", 30)
    sources = tmp_path / "sources.yaml"
    sources.write_text("routes:\n  gateway: {label: A gateway}\ncaptures: {}\n")
    out = tmp_path / "evidence.json"
    argv = [
        str(tmp_path / "logs"),
        "--scheduler",
        client.scheduler.address,
        "--sources",
        str(sources),
        "--out",
        str(out),
    ]
    assert cluster.main(argv) == 0
    local = field.analyse_directory(tmp_path / "logs", field.load_sources(sources), jobs=1)
    assert out.read_text("utf-8") == field.dumps(local)
    assert ": 30 captures, " in capsys.readouterr().out
    assert (
        cluster.main(
            [
                str(tmp_path / "absent"),
                "--scheduler",
                client.scheduler.address,
                "--sources",
                str(sources),
                "--out",
                str(out),
            ]
        )
        == 2
    )
