"""conformance.cluster in process (the mutation run's tests for it): which files of a
directory or prefix are captures, how each is named, what a worker's batch returns for an
unreadable one, how names are cut into tasks, and what the command says and exits with.
Dask's client is a synchronous stand-in here (see ``_Client``); tests/test_cluster.py runs
the recipe on a real local cluster of worker processes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from conformance import field

pytest.importorskip("dask.distributed", reason="the cluster extra: pip install '.[cluster]'")
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
    (tmp / "d.sse ").write_text("")  # the suffix is ".sse ", as the local run reads it
    (tmp / "e.jsonX").write_text("")
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


def test_storage_options_reach_every_filesystem_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fsspec

    seen: list[dict[str, Any]] = []
    real = fsspec.core.url_to_fs

    def spy(url: str, **kw: Any) -> Any:
        seen.append(kw)
        return real(url, **kw)

    monkeypatch.setattr(fsspec.core, "url_to_fs", spy)
    corpus.write(tmp_path, 5)
    storage = {"auto_mkdir": False}
    client = _Client()
    got = cluster.analyse(client, tmp_path.as_uri(), SOURCES, storage=storage)
    assert seen == [storage, storage]  # the listing, then the one batch
    assert [args[3] for args, _ in client.submitted] == [storage]
    assert len(got["entries"]) == 5


def test_help_names_the_command_and_every_option(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        cluster.main(["--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith("usage: python -m conformance.cluster ")
    for text in (
        "Field evidence of a directory or object-store prefix, on Dask.",
        "location a directory or an fsspec URL of captures",
        "--scheduler SCHEDULER a running scheduler's address (default: a local cluster on 127.0.0.1)",
        "--workers WORKERS worker processes of the local cluster (default: the cores)",
        "--sources SOURCES",
        "--out OUT",
        "--batch BATCH captures per task",
    ):
        assert f" {text} " in f" {out} ", text  # whole words: nothing added around it


def test_label() -> None:
    assert cluster.label("s3://bucket/X/", "a.sse") == "s3://bucket/X/a.sse"
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


@pytest.mark.parametrize("folder", ["logsX", "logs "])
def test_a_batch_in_any_folder_names_an_unreadable_capture_by_its_place(
    tmp_path: Path, folder: str
) -> None:
    d = tmp_path / folder
    d.mkdir()
    (d / "gateway-1.sse").write_bytes(corpus.stream(1))
    (d / "gateway-2.sse").write_bytes(b"\x00binary")
    for where in (str(d), f"file://{d}"):  # fsspec reads a URL's path as written
        ok, bad = cluster.records_of_batch(where, ["gateway-1.sse", "gateway-2.sse"], SOURCES)
        assert ok["error"] is None and ok["entries"]
        assert bad["error"].startswith(cluster.label(where, "gateway-2.sse") + ": ")


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


class _Future:
    """A task that has run, as ``analyse`` sees a Dask future."""

    def __init__(self, owner: _Client, value: Any):
        self.owner, self.value = owner, value
        owner.in_flight += 1
        owner.most = max(owner.most, owner.in_flight)

    def result(self) -> Any:
        return self.value

    def release(self) -> None:
        self.owner.in_flight -= 1
        self.owner.released += 1


class _Client:
    """Dask's client as ``cluster.analyse`` uses it, run synchronously in this process.

    A stand-in, not the real part: the mutation run forks a process per mutant, and an
    in-process Dask cluster hung there. tests/test_cluster.py runs the recipe on a real
    local cluster of worker processes; this one counts what ``analyse`` asks of it."""

    def __init__(self, nthreads: dict[str, int] | None = None):
        self.threads = {"a": 1, "b": 2} if nthreads is None else nthreads
        self.in_flight = self.most = self.released = 0
        self.scattered: list[tuple[Any, bool]] = []
        self.submitted: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def nthreads(self) -> dict[str, int]:
        return self.threads

    def scatter(self, values: list[Any], broadcast: bool = False) -> list[Any]:
        self.scattered.append((values, broadcast))
        return list(values)  # Dask resolves a scattered future to its value in a task

    def submit(self, fn: Any, *args: Any, **kw: Any) -> _Future:
        self.submitted.append((args, kw))
        return _Future(self, fn(*args))

    def __enter__(self) -> _Client:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _AsCompleted:
    """Dask's ``as_completed``: here the last task added finishes first, so records come
    back out of their order."""

    def __init__(self, futures: list[_Future]):
        self.todo = list(futures)

    def add(self, future: _Future) -> None:
        self.todo.append(future)

    def __iter__(self) -> _AsCompleted:
        return self

    def __next__(self) -> _Future:
        if not self.todo:
            raise StopIteration
        return self.todo.pop()


@pytest.fixture(autouse=True)
def _dask(monkeypatch: pytest.MonkeyPatch) -> None:
    import dask.distributed as dd

    monkeypatch.setattr(dd, "as_completed", _AsCompleted)


@pytest.mark.parametrize(("batch", "window"), [(1, 1), (3, 2), (64, None), (1, None)])
def test_analyse_is_the_local_document(tmp_path: Path, batch: int, window: Any) -> None:
    corpus.write(tmp_path, 40)
    local = field.analyse_directory(tmp_path, SOURCES, jobs=1)
    client = _Client()
    got = cluster.analyse(client, str(tmp_path), SOURCES, batch=batch, window=window)
    assert field.dumps(got) == field.dumps(local)
    assert len(got["entries"]) >= 38
    names = cluster.capture_names(str(tmp_path))
    tasks = [args[1] for args, _ in client.submitted]
    assert [n for t in tasks for n in t] == names  # every name once, in batches of `batch`
    assert all(len(t) == batch for t in tasks[:-1]) and 0 < len(tasks[-1]) <= batch
    # at most `window` tasks in flight (default: four per worker thread), each released
    assert client.most == min(len(tasks), window or 4 * 3)
    assert client.released == len(tasks) and client.in_flight == 0
    assert client.scattered == [([SOURCES], True)]  # the sources sent once, to every worker
    for args, kw in client.submitted:  # impure: a file changed since is read again
        assert args[0] == str(tmp_path) and args[2] is SOURCES and args[3] is None
        assert kw == {"pure": False}


def test_the_default_batch_is_64(tmp_path: Path) -> None:
    for n in range(130):
        (tmp_path / f"gateway-{n}.sse").write_bytes(b"data: [DONE]\n\n")
    client = _Client()
    cluster.analyse(client, str(tmp_path), SOURCES)
    assert [len(args[1]) for args, _ in client.submitted] == [64, 64, 2]


def test_the_default_window_without_worker_threads_is_four(tmp_path: Path) -> None:
    corpus.write(tmp_path, 10)
    client = _Client(nthreads={})
    cluster.analyse(client, str(tmp_path), SOURCES, batch=1)
    assert client.most == 4


def test_analyse_of_nothing_is_an_error_naming_the_place(tmp_path: Path) -> None:
    with pytest.raises(field.FieldError, match=str(tmp_path)):
        cluster.analyse(_Client(), str(tmp_path), SOURCES)


def _argv(tmp: Path, *more: str) -> list[str]:
    corpus.write(tmp / "logs", 12)
    (tmp / "sources.yaml").write_text("routes:\n  gateway: {label: A gateway}\ncaptures: {}\n")
    return [str(tmp / "logs"), "--sources", str(tmp / "sources.yaml"), *more]


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """What ``main`` starts: clients (by address or cluster) and local clusters."""
    import dask.distributed as dd

    seen: list[tuple[str, Any]] = []

    def client(where: Any) -> _Client:
        made = _Client()
        seen.append(("client", where))
        seen.append(("made", made))
        return made

    def local(**kw: Any) -> _Client:
        made = _Client()  # a context manager too
        seen.append(("cluster", kw))
        seen.append(("made", made))
        return made

    monkeypatch.setattr(dd, "Client", client)
    monkeypatch.setattr(dd, "LocalCluster", local)
    return seen


def test_main_on_a_running_scheduler(started, tmp_path: Path, capsys) -> None:
    out = tmp_path / "evidence.json"
    argv = _argv(tmp_path, "--out", str(out), "--batch", "5", "--scheduler", "tcp://10.0.0.9:8786")
    assert cluster.main(argv) == 0
    assert started[0] == ("client", "tcp://10.0.0.9:8786") and len(started) == 2
    batches = [len(args[1]) for args, _ in started[1][1].submitted]
    assert batches == [5, 5, 2]  # --batch 5: 12 captures
    local = field.analyse_directory(
        tmp_path / "logs", field.load_sources(tmp_path / "sources.yaml")
    )
    assert out.read_text("utf-8") == field.dumps(local)
    n, routes = len(local["entries"]), len(local["routes"])
    assert capsys.readouterr().out == f"wrote {out}: {n} captures, {routes} routes\n"


def test_main_starts_a_local_cluster_of_single_threaded_processes_on_loopback(
    started, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "e.json"
    argv = _argv(tmp_path, "--workers", "3", "--out", str(out), "--batch", "5")
    assert cluster.main(argv) == 0
    kw = {
        "n_workers": 3,
        "threads_per_worker": 1,
        "processes": True,
        "host": "127.0.0.1",
        "dashboard_address": None,
    }
    assert started[0] == ("cluster", kw) and started[2] == ("client", started[1][1])
    assert len(started) == 4  # the cluster, then a client of that cluster
    assert [len(args[1]) for args, _ in started[3][1].submitted] == [5, 5, 2]
    assert out.exists() and capsys.readouterr().out.startswith(f"wrote {out}: 12 captures")
    started.clear()
    assert cluster.main(_argv(tmp_path / "again", "--out", str(out))) == 0
    assert started[0] == ("cluster", {**kw, "n_workers": None})  # default: Dask's own


def test_main_default_out_and_batch(
    started, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    got: dict[str, Any] = {}

    def fake(client: Any, location: str, sources: Any, *, batch: int) -> dict[str, Any]:
        got.update(location=location, batch=batch, sources=sources)
        return {"entries": [], "routes": {}}

    written: list[Path] = []
    monkeypatch.setattr(cluster, "analyse", fake)
    monkeypatch.setattr("conformance.secrets.write_atomic", lambda p, text: written.append(p))
    assert cluster.main([str(tmp_path), "--scheduler", "tcp://127.0.0.1:1"]) == 0
    assert got == {"location": str(tmp_path), "batch": 64, "sources": field.load_sources()}
    assert written == [field.EVIDENCE_FILE]


def test_main_says_what_is_wrong_in_one_line_and_exits_2(started, tmp_path: Path, capsys) -> None:
    argv = _argv(tmp_path, "--scheduler", "tcp://127.0.0.1:1")
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
