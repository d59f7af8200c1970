"""Field evidence for a corpus too large for one machine, on a Dask cluster.

    pip install 'toolcall-conformance[cluster]'
    python -m conformance.cluster DIR_OR_URL [--scheduler tcp://HOST:8786 | --workers N]
                                  [--sources FILE] [--out FILE] [--batch 64]

The same pipeline as ``python -m conformance.field DIR``: each worker reads a batch of
captures (a directory, or an object-store prefix through fsspec: ``s3://bucket/logs/``,
``gs://…``, with that store's fsspec package installed on the workers), turns each
capture's bytes into its record with ``conformance.field.capture_record`` (a pure
function), and the client merges the records with ``conformance.field.merge`` into the
same document the local run writes. Only names travel to the workers and only records
come back; at most ``window`` batches are in flight. docs/cluster.md is the recipe.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conformance.field import (
    CAPTURE_SUFFIXES,
    EVIDENCE_FILE,
    SOURCES_FILE,
    FieldError,
    capture_files,
    capture_record,
    dumps,
    load_sources,
    merge,
)


def _is_url(location: str) -> bool:
    return "://" in location


def capture_names(location: str, storage: dict[str, Any] | None = None) -> list[str]:
    """The capture files directly under a directory or prefix, by name (the local run's
    order and filter; a local directory is listed as the local run lists it)."""
    if not _is_url(location):
        return [p.name for p in capture_files(Path(location))]
    import fsspec  # type: ignore[import-untyped]

    fs, root = fsspec.core.url_to_fs(location, **(storage or {}))
    if not fs.isdir(root):
        raise FieldError(f"{location}: not a directory of captures")
    names = []
    for info in fs.ls(root, detail=True):
        name = info["name"].rstrip("/").rsplit("/", 1)[-1]
        if (
            info["type"] == "file"
            and Path(name).suffix in CAPTURE_SUFFIXES
            and name.upper() != "SOURCES.MD"
        ):
            names.append(name)
    return sorted(names)


def label(location: str, name: str) -> str:
    """How a capture is named in the document: as the local run names a file of that
    directory, or the full URL."""
    if _is_url(location):
        return f"{location.rstrip('/')}/{name}"
    return str(Path(location) / name)


def records_of_batch(
    location: str, names: list[str], sources: dict[str, Any], storage: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """A worker's task: read each capture's bytes where it lies, and its record."""
    import fsspec  # type: ignore[import-untyped]

    fs, root = fsspec.core.url_to_fs(location, **(storage or {}))
    out = []
    for name in names:
        where = label(location, name)
        try:
            data = fs.cat_file(f"{root.rstrip('/')}/{name}")
        except OSError as e:
            out.append(
                {
                    "file": name,
                    "route": "unlisted",
                    "entries": [],
                    "error": f"{where}: cannot be read ({type(e).__name__}: {e})",
                }
            )
            continue
        out.append(capture_record(name, data, sources, label=where))
    return out


def _batches(names: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(names), size):
        yield names[i : i + size]


def analyse(
    client: Any,
    location: str,
    sources: dict[str, Any],
    *,
    batch: int = 64,
    window: int | None = None,
    storage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The field-evidence document of every capture at ``location``, computed on the
    cluster behind ``client`` (a ``dask.distributed.Client``)."""
    from dask.distributed import as_completed

    names = capture_names(location, storage)
    window = window or 4 * max(1, sum(client.nthreads().values()))
    todo = _batches(names, batch)
    [sources_f] = client.scatter([sources], broadcast=True)  # sent once, not per task

    def submit() -> Any | None:
        chunk = next(todo, None)
        if chunk is None:
            return None
        return client.submit(records_of_batch, location, chunk, sources_f, storage, pure=False)

    first = [f for f in (submit() for _ in range(window)) if f is not None]
    records: list[dict[str, Any]] = []
    done = as_completed(first)
    for fut in done:
        records += fut.result()
        fut.release()
        nxt = submit()
        if nxt is not None:
            done.add(nxt)
    return merge(records, sources, location)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.cluster",
        description="Field evidence of a directory or object-store prefix, on Dask.",
    )
    parser.add_argument("location", help="a directory or an fsspec URL of captures")
    parser.add_argument(
        "--scheduler", help="a running scheduler's address (default: a local cluster on 127.0.0.1)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes of the local cluster (default: the cores)",
    )
    parser.add_argument("--sources", type=Path, default=SOURCES_FILE)
    parser.add_argument("--out", type=Path, default=EVIDENCE_FILE)
    parser.add_argument("--batch", type=int, default=64, help="captures per task")
    args = parser.parse_args(argv)
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        print(
            "conformance cluster: dask is not installed; "
            "pip install 'toolcall-conformance[cluster]'",
            file=sys.stderr,
        )
        return 2
    try:
        sources = load_sources(args.sources)
        if args.scheduler:
            with Client(args.scheduler) as client:
                doc = analyse(client, args.location, sources, batch=args.batch)
        else:
            with (
                LocalCluster(
                    n_workers=args.workers,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address=None,
                ) as cluster,
                Client(cluster) as client,
            ):
                doc = analyse(client, args.location, sources, batch=args.batch)
    except FieldError as e:
        print(f"conformance cluster: {e}", file=sys.stderr)
        return 2
    from conformance.secrets import write_atomic

    write_atomic(args.out, dumps(doc))
    print(f"wrote {args.out}: {len(doc['entries'])} captures, {len(doc['routes'])} routes")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
