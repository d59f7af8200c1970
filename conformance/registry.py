"""The quirk registry: one ``QuirkSpec`` per id, and who reports each id.

Every fact about a quirk is declared once, in ``data/quirks.json`` (its JSON Schema is
``schemas/quirks.schema.json``; ``tests/test_registry.py`` validates the file against it):
the catalogue's text, its level, whether the robust client can repair it, the coarser ids
it implies, the rule a robust-client note of it is reported under, what a request must
elicit for it to show, whether the bytes can show it, and the server profile that serves
it. Rules, the analyzer, the runner, the profiles and the generated docs read it here.

Code that reports an id declares it right after the function, with a call:
``detector(fn, hook, reports=(...))`` for an analyzer detector, ``works_around(fn, ...)``
for the client library's repairs. Each declaration checks its ids (an unknown one gets a
did-you-mean) and records the reporter; ``reporters()`` is what docs/quirks.md and the
completeness tests read (the way flake8 checks its codes by introspection, instead of a
regular expression over docstrings). A call rather than a decorator because mutmut, the
mutation tester, leaves every decorated function unmutated, and the detectors are the
code its tests most need to judge.

Nothing here imports the rest of the package but ``enums``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from conformance.enums import Level

DATA = Path(__file__).parent / "data" / "quirks.json"
SCHEMA = Path(__file__).parent / "schemas" / "quirks.schema.json"

# The hooks a reporter runs on. The analyzer's: comment(a, ev), nonjson(a, ev),
# chunk(a, chunk, n), choice(a, choice, ptr, n), tool_delta(a, tc, key, ptr, n, siblings),
# fragment(a, index_state, arguments, n), end(a) (after the analyzer's pre-pass has
# computed the body facts; end detectors only read); part: a check a detector of its
# group calls.
# Elsewhere: client (the robust client's repairs), cell (the runner's scenario checks).
HOOKS = (
    "comment",
    "nonjson",
    "chunk",
    "choice",
    "tool_delta",
    "fragment",
    "end",
    "part",
    "client",
    "cell",
)


class UnknownQuirkError(KeyError):
    """An id that is not in the registry; str() is one line with the nearest known id."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class QuirkSpec:
    """What the suite knows about one quirk id (see data/quirks.json's schema)."""

    id: str
    title: str
    group: str
    level: Level
    unrecoverable: bool
    implies: frozenset[str]
    workaround_rule: str | None
    note_reported_by_detector: bool
    needs: str | None
    visible_in_bytes: bool
    profile_also: frozenset[str]
    profile: str | None
    no_profile: str | None
    no_mutation: str | None
    no_reporter: str | None
    entry: dict[str, Any]  # the whole catalogue entry (title, sources, workaround...)

    @classmethod
    def from_entry(cls, qid: str, e: dict[str, Any]) -> QuirkSpec:
        return cls(
            id=qid,
            title=e["title"],
            group=e["group"],
            level=Level.parse(e["level"], f"{DATA.name}: {qid}: level"),
            unrecoverable=e["unrecoverable"],
            implies=frozenset(e["implies"]),
            workaround_rule=e["workaround_rule"],
            note_reported_by_detector=e["note_reported_by_detector"],
            needs=e["needs"],
            visible_in_bytes=e["visible_in_bytes"],
            profile_also=frozenset(e["profile_also"]),
            profile=e["profile"],
            no_profile=e.get("no_profile"),
            no_mutation=e.get("no_mutation"),
            no_reporter=e.get("no_reporter"),
            entry=e,
        )


@cache
def entries() -> dict[str, dict[str, Any]]:
    """The raw entries of data/quirks.json (the catalogue's text and the facts)."""
    # A path next to this module, not importlib.resources: that import alone (tempfile,
    # shutil, zipfile...) costs more than the whole of `conformance analyze` on 1k events.
    data: dict[str, dict[str, Any]] = json.loads(DATA.read_text("utf-8"))
    return data


@cache
def specs() -> dict[str, QuirkSpec]:
    """Every id's QuirkSpec. A malformed entry is a one-line error naming the id (the
    full check is the JSON Schema, run by the tests and tools/gen_quirks.py)."""
    out = {}
    for qid, e in entries().items():
        try:
            out[qid] = QuirkSpec.from_entry(qid, e)
        except KeyError as err:
            raise ValueError(
                f"{DATA}: {qid} has no {err.args[0]!r}: add it (see {SCHEMA.name})"
            ) from None
    return out


def did_you_mean(qid: str, known: Iterable[str]) -> str:
    near = difflib.get_close_matches(str(qid).upper(), sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {near[0]}?)" if near else ""


def spec(qid: str, where: str = "quirk id") -> QuirkSpec:
    """The id's spec; an unknown id raises UnknownQuirkError with the nearest known id."""
    s = specs().get(qid)
    if s is None:
        raise UnknownQuirkError(
            f"{where}: unknown quirk id {qid!r}{did_you_mean(qid, specs())}; "
            f"the known ids are in {DATA.name}"
        )
    return s


def check_ids(ids: Iterable[str], where: str) -> None:
    """Every id known, else UnknownQuirkError naming ``where`` (a profile, a file...)."""
    for q in ids:
        spec(q, where)


def level(qid: str) -> Level:
    return spec(qid).level


def unrecoverable() -> frozenset[str]:
    return _unrecoverable()


@cache
def _unrecoverable() -> frozenset[str]:
    return frozenset(q for q, s in specs().items() if s.unrecoverable)


def implied(qid: str) -> frozenset[str]:
    """The coarser ids a finer one shows by definition (none for an unknown id)."""
    s = specs().get(qid)
    return s.implies if s is not None else frozenset()


# --------------------------------------------------------------------------- reporters


@dataclass(frozen=True)
class Reporter:
    """A function that reports quirk ids, and the hook it runs on."""

    name: str  # the function's qualified name (Class.method for a method)
    module: str
    hook: str
    reports: tuple[str, ...]
    fn: Callable[..., Any]


_REPORTERS: list[Reporter] = []
F = TypeVar("F", bound=Callable[..., Any])


def _register(hook: str, reports: Iterable[str], fn: Callable[..., Any]) -> None:
    if hook not in HOOKS:
        raise ValueError(f"{fn.__qualname__}: hook {hook!r} is not one of {', '.join(HOOKS)}")
    ids = tuple(reports)
    check_ids(ids, f"{fn.__module__}.{fn.__qualname__}")
    _REPORTERS.append(Reporter(fn.__qualname__, fn.__module__, hook, ids, fn))


def detector(fn: F, hook: str, *, reports: Iterable[str] = ()) -> F:
    """Declare ``fn`` a detector: the hook that runs it and the quirk ids it can report
    (none for a detector that reports rules only). The analyzer runs a hook's detectors in
    the order they are declared; within a hook that order changes no verdict."""
    _register(hook, reports, fn)
    return fn


def works_around(fn: F, *reports: str) -> F:
    """Declare ``fn`` a repair of the client library and the quirk ids whose workaround it
    is (the robust client's notes, which the analyzer reports)."""
    return detector(fn, "client", reports=reports)


def detectors(hook: str) -> list[Callable[..., Any]]:
    """The functions declared on ``hook``, in declaration order."""
    return [r.fn for r in _REPORTERS if r.hook == hook]


def reporters() -> dict[str, list[Reporter]]:
    """quirk id -> the reporters that declare it. Import the reporting modules first
    (``load_reporters``) so that every declaration has run."""
    out: dict[str, list[Reporter]] = {}
    for r in _REPORTERS:
        for q in r.reports:
            out.setdefault(q, []).append(r)
    return out


def load_reporters() -> dict[str, list[Reporter]]:
    """Import every module that declares reporters, then ``reporters()``."""
    import conformance.analysis  # noqa: F401  (the detectors and, through them, the client)
    import conformance.report.parsers  # noqa: F401  (the scripted lane's steps x load comparison)
    import conformance.runner  # noqa: F401  (the scenario checks)

    return reporters()
