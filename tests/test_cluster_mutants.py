"""conformance.cluster in process (the mutation run's tests for it): which files of a
directory or prefix are captures, how each is named, what a worker's batch returns for an
unreadable one, how names are cut into tasks, and what the command says and exits with.
The cluster here is Dask's in-process one (threads, no worker processes), so a mutant of
this module is what runs; tests/test_cluster.py runs the recipe on worker processes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from conformance import field

pytest.importorskip("dask.distributed", reason="the cluster extra: pip install '.[cluster]'")
from dask.distributed import Client, LocalCluster  # noqa: E402

from conformance import cluster  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import corpus  # noqa: E402

SOURCES = {"routes": {"gateway": {"label": "A gateway", "column": None}}, "captures": {}}


def _dir(tmp: Path) -> Path:
    """A directory with captures, and files and a folder that are not captures."""
    (tmp / "b.sse").write_bytes(corpus.stream(0))
    (tmp / "a.jsonl").write_text("")
    (tmp / "c.YAML").write_text("")  # the suffix is matched as written
    (tmp / "notes.md").write_text("")
    (tmp / "sources.md").write_text("")
    (tmp / "Sources.txt").write_text("")  # a capture: only SOURCES.md is left out
    (tmp / "sub.sse").mkdir()
    return tmp


@pytest.mark.parametrize("url", [False, True])
def test_capture_names_local_and_url_alike(tmp_path: Path, url: bool) -> None:
    d = _dir(tmp_path)
    where = d.as_uri() + ("/" if url else "") if url else str(d)
    assert cluster.capture_names(where) == ["Sources.txt", "a.jsonl", "b.sse"]


def test_capture_names_of_an_url_that_is_not_a_directory(tmp_path: Path) -> None:
    url = (tmp_path / "absent").as_uri()
    with pytest.raises(field.FieldError) as e:
        cluster.capture_names(url)
    assert str(e.value) == f"{url}: not a directory of captures"
    (tmp_path / "one.sse").write_text("")
    with pytest.raises(field.FieldError):
        cluster.capture_names((tmp_path / "one.sse").as_uri())


def test_label() -> None:
    assert cluster.label("logs/day1", "a.sse") == str(Path("logs/day1") / "a.sse")
    assert cluster.label("s3://bucket/logs/", "a.sse") == "s3://bucket/logs/a.sse"
    assert cluster.label("s3://bucket/logs", "a.sse") == "s3://bucket/logs/a.sse"
    assert cluster.label("file:///tmp/x", "b.jsonl") == "file:///tmp/x/b.jsonl"


def test_a_batch_is_each_capture_s_record_in_order(tmp_path: Path) -> None:
    for n in (3, 1):
        (tmp_path / f"gateway-{n}.sse").write_bytes(corpus.stream(n))
    names = ["gateway-3.sse", "gateway-1.sse"]
    for where in (str(tmp_path), tmp_path.as_uri() + "/"):
        got = cluster.records_of_batch(where, names, SOURCES)
        assert got == [
            field.capture_record(
                n, (tmp_path / n).read_bytes(), SOURCES, label=cluster.label(where, n)
            )
            for n in names
        ]
        assert [r["file"] for r in got] == names and all(r["entries"] for r in got)


def test_an_unreadable_capture_in_a_batch_is_a_record_that_says_so(tmp_path: Path) -> None:
    (tmp_path / "gateway-1.sse").write_bytes(corpus.stream(1))
    got = cluster.records_of_batch(str(tmp_path), ["gone.sse", "gateway-1.sse"], SOURCES)
    where = str(tmp_path / "gone.sse")
    error = got[0].pop("error")
    assert got[0] == {"file": "gone.sse", "route": "unlisted", "entries": []}
    assert error.startswith(f"{where}: cannot be read (FileNotFoundError: ") and error[-1] == ")"
    assert got[1]["file"] == "gateway-1.sse" and got[1]["error"] is None


@pytest.mark.parametrize(
    ("n", "size", "sizes"),
    [(0, 3, []), (1, 3, [1]), (3, 3, [3]), (7, 3, [3, 3, 1]), (64, 64, [64]), (65, 64, [64, 1])],
)
def test_batches(n: int, size: int, sizes: list[int]) -> None:
    names = [f"{i}.sse" for i in range(n)]
    got = list(cluster._batches(names, size))
    assert [len(b) for b in got] == sizes
    assert [x for b in got for x in b] == names


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as lc,
        Client(lc) as c,
    ):
        yield c


@pytest.mark.parametrize(("batch", "window"), [(1, 1), (3, 2), (64, None)])
def test_analyse_is_the_local_document(client, tmp_path: Path, batch: int, window: Any) -> None:
    corpus.write(tmp_path, 40)
    local = field.analyse_directory(tmp_path, SOURCES, jobs=1)
    got = cluster.analyse(client, str(tmp_path), SOURCES, batch=batch, window=window)
    assert field.dumps(got) == field.dumps(local)
    assert len(got["entries"]) >= 38


def test_analyse_of_nothing_is_an_error_naming_the_place(client, tmp_path: Path) -> None:
    with pytest.raises(field.FieldError, match=str(tmp_path)):
        cluster.analyse(client, str(tmp_path), SOURCES)


def _argv(tmp: Path, *more: str) -> list[str]:
    corpus.write(tmp / "logs", 12)
    (tmp / "sources.yaml").write_text("routes:\n  gateway: {label: A gateway}\ncaptures: {}\n")
    return [str(tmp / "logs"), "--sources", str(tmp / "sources.yaml"), *more]


def test_main_on_a_running_scheduler(client, tmp_path: Path, capsys) -> None:
    out = tmp_path / "evidence.json"
    argv = _argv(
        tmp_path, "--out", str(out), "--batch", "5", "--scheduler", client.scheduler.address
    )
    assert cluster.main(argv) == 0
    local = field.analyse_directory(
        tmp_path / "logs", field.load_sources(tmp_path / "sources.yaml")
    )
    assert out.read_text("utf-8") == field.dumps(local)
    n, routes = len(local["entries"]), len(local["routes"])
    assert capsys.readouterr().out == f"wrote {out}: {n} captures, {routes} routes\n"


def test_main_starts_a_local_cluster_of_single_threaded_processes_on_loopback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import dask.distributed as dd

    seen: list[dict[str, Any]] = []

    def recording(**kw: Any) -> LocalCluster:  # what main asks for, run in threads here
        seen.append(kw)
        return LocalCluster(n_workers=1, processes=False, dashboard_address=None)

    monkeypatch.setattr(dd, "LocalCluster", recording)
    out = tmp_path / "e.json"
    assert cluster.main(_argv(tmp_path, "--workers", "3", "--out", str(out))) == 0
    assert seen == [
        {
            "n_workers": 3,
            "threads_per_worker": 1,
            "processes": True,
            "host": "127.0.0.1",
            "dashboard_address": None,
        }
    ]
    assert out.exists() and capsys.readouterr().out.startswith(f"wrote {out}: 12 captures")
    seen.clear()
    assert cluster.main(_argv(tmp_path / "again", "--out", str(out))) == 0
    assert seen[0]["n_workers"] is None  # default: Dask's own (the cores)


def test_main_default_out_and_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dask.distributed as dd

    got: dict[str, Any] = {}

    def fake(client: Any, location: str, sources: Any, *, batch: int) -> dict[str, Any]:
        got.update(location=location, batch=batch, sources=sources)
        return {"entries": [], "routes": {}}

    written: list[Path] = []
    monkeypatch.setattr(cluster, "analyse", fake)
    monkeypatch.setattr(dd, "Client", lambda *a, **k: _Null())
    monkeypatch.setattr("conformance.secrets.write_atomic", lambda p, text: written.append(p))
    assert cluster.main([str(tmp_path), "--scheduler", "tcp://127.0.0.1:1"]) == 0
    assert got == {"location": str(tmp_path), "batch": 64, "sources": field.load_sources()}
    assert written == [field.EVIDENCE_FILE]


class _Null:
    def __enter__(self) -> _Null:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def test_main_says_what_is_wrong_in_one_line_and_exits_2(client, tmp_path: Path, capsys) -> None:
    argv = _argv(tmp_path, "--scheduler", client.scheduler.address)
    argv[0] = str(tmp_path / "absent")
    assert cluster.main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"conformance cluster: {tmp_path / 'absent'}: not a directory of captures\n"
    bad = tmp_path / "bad.yaml"
    bad.write_text("routes: [")
    assert cluster.main([str(tmp_path / "logs"), "--sources", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"conformance cluster: {bad}")


def test_main_without_dask_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import fails
    assert cluster.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "conformance cluster: dask is not installed; pip install 'toolcall-conformance[cluster]'\n"
    )
