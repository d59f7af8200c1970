"""Turn mutmut's results (mutants/**/*.meta) into docs/mutation.md.

    python tools/mutation_report.py [MODULE…]   # run by `python3 noxw -s mutation`

Figures per module are kept in docs/mutation.json, so a run over one module updates that
module's row and leaves the others as they were measured (with their date and commit).
Equivalent mutants (a change no test can observe, because the behaviour is the same) are
listed by hand in tools/mutation_equivalent.yaml, each with a one-line reason; they leave
the denominator. A mutant that no test reaches counts as a survivor, never as killed.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "mutation.md"
DATA = ROOT / "docs" / "mutation.json"
README = ROOT / "README.md"
EQUIVALENT = ROOT / "tools" / "mutation_equivalent.yaml"
# Every judged mutant's exit code, with the hash of its function's code: mutants/ lives on
# one machine, and judging the analysis package from nothing costs hours.
VERDICTS = ROOT / "tools" / "mutation_verdicts.json"
GOAL = 0.90

# name shown → the source files it covers (a package after analysis.py was split)
MODULES: dict[str, tuple[str, ...]] = {
    "analysis": ("conformance/analysis.py", "conformance/analysis/"),
    "client": ("conformance/client.py",),
    "secrets": ("conformance/secrets.py",),
    "report/diff": ("conformance/report/diff.py",),
    "runner": ("conformance/runner.py",),
    "readers": ("conformance/readers.py",),
    "client_matrix/judge": ("conformance/client_matrix/judge.py",),
    "report/common": ("conformance/report/common.py",),
    "registry": ("conformance/registry.py",),
    "verdict": ("conformance/verdict.py",),
    "providers": ("conformance/providers.py",),
    "matrix": ("conformance/matrix.py",),
    "field": ("conformance/field.py",),
    "decoding": ("conformance/decoding.py",),
    "client_matrix/report": ("conformance/client_matrix/report.py",),
    "client_matrix/streams": ("conformance/client_matrix/streams.py",),
    "client_matrix/run": ("conformance/client_matrix/run.py",),
    "profile_columns": ("conformance/profile_columns.py",),
    "gateway_columns": ("conformance/gateway_columns.py",),
    "server/profiles": ("conformance/server/profiles.py",),
    "run": ("conformance/run.py",),
    "pytest_plugin": ("conformance/pytest_plugin.py",),
    "cassettes": ("conformance/cassettes.py",),
    "transport": ("conformance/transport.py",),
    "longstrings": ("conformance/longstrings.py",),
    "report/parsers": ("conformance/report/parsers.py",),
    "lanes/vllm_scripts": ("conformance/lanes/vllm_scripts.py",),
    "sse": ("conformance/sse.py",),
    "jsontext": ("conformance/jsontext.py",),
    "parallel": ("conformance/parallel.py",),
    "cluster": ("conformance/cluster.py",),
    "lanes/vllm_columns": ("conformance/lanes/vllm_columns.py",),
}
# a failing test, pytest error, timeout, type check; -9: killed by the kernel (a mutant that
# looped appending until memory ran out). A mutant stopped by hand (-15) is not counted killed.
KILLED = {1, 3, 36, 37, -24, 24, 152, 255, -9}
SURVIVED = {0}
NO_TESTS = {5, 33}


def _path(arg: str) -> str:
    a = arg.removeprefix("conformance/").removeprefix("conformance.").removesuffix(".py")
    return a.replace(".", "/").rstrip("/")


def module_of(arg: str) -> str:
    """`secrets`, `secrets.py`, `conformance/report/diff.py`, `diff` → a MODULES key; a
    file of the analysis package (`analysis/detectors/request`) → `analysis`."""
    a = _path(arg)
    if a in MODULES:  # `run` is run.py, not client_matrix/run
        return a
    for name in MODULES:
        if a in (name, name.split("/")[-1]) or a.startswith(name + "/"):
            return name
    raise SystemExit(
        f"mutation: unknown module {arg!r} (one of: {', '.join(MODULES)}, "
        "or a file of the analysis package)"
    )


def mutant_glob(arg: str) -> str:
    """mutmut's mutant-name glob for a module or a package file
    (`conformance.report.diff.*`, `conformance.analysis.detectors.request.*`)."""
    a = _path(arg)
    name = module_of(arg)
    return "conformance." + (a if a.startswith(name + "/") else name).replace("/", ".") + ".*"


def _source(meta: Path) -> str:
    """The source file a mutants/ meta file is about (`conformance/sse.py`)."""
    return str(meta.relative_to(ROOT / "mutants")).removesuffix(".meta")


def _metas(name: str) -> list[Path]:
    out = []
    for src in MODULES[name]:
        p = ROOT / "mutants" / src
        out += sorted(p.rglob("*.py.meta")) if src.endswith("/") else [Path(f"{p}.meta")]
    return [p for p in out if p.exists()]


def survivors(name: str, new: bool = False) -> list[str]:
    """The mutants of a module not known to be killed: survivors and the ones not judged
    yet (new, or their function changed) - what `--survivors` re-judges; with ``new``, only
    the ones not judged yet (`--new`). A survivor listed as equivalent is left out: it
    survives every test by its nature (if its function changed, mutmut has reset it to not
    judged, and it is re-judged)."""
    # The entries' names are the file's unindented keys (read without PyYAML, which the
    # process running noxfile.py does not have).
    text = EQUIVALENT.read_text() if EQUIVALENT.exists() else ""
    listed = {ln.rstrip()[:-1] for ln in text.splitlines() if ln.startswith("conformance.")}
    out = []
    for meta in _metas(name):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        out += [
            k
            for k, c in codes.items()
            if c is None or (not new and c not in KILLED and k not in listed)
        ]
    return out


_PARSED: dict[str, Any] = {}  # path → its mutated module, parsed once


def _diff(mutant: str, path: str) -> str:
    """The changed lines of a mutant (`- old` / `+ new`), as `mutmut show` prints them."""
    try:
        import difflib

        import libcst as cst
        from mutmut.mutation import diff_apply as da

        functions = da.read_functions_from_index(mutant, path)
        if functions is None:
            if path not in _PARSED:
                _PARSED[path] = da.read_mutants_module(path)
            module = _PARSED[path]
            functions = (
                da.read_original_function(module, mutant),
                da.read_mutant_function(module, mutant),
            )
        old, new = (cst.Module([f]).code.strip().split("\n") for f in functions)
        out = "\n".join(difflib.unified_diff(old, new, lineterm=""))
    except Exception:  # mutmut absent or its layout changed: the name alone still helps
        return ""
    lines = [ln for ln in out.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    return " / ".join(" ".join(ln.split()) for ln in lines)


def _figures(codes: dict[str, Any], equivalent: dict[str, str]) -> dict[str, Any]:
    judged = {k: c for k, c in codes.items() if c is not None}
    killed = [k for k, c in judged.items() if c in KILLED]
    survived = sorted(k for k, c in judged.items() if c not in KILLED)
    equiv = [k for k in survived if k in equivalent]
    live = [k for k in survived if k not in equivalent]
    return {
        "mutants": len(codes),
        "judged": len(judged),
        "killed": len(killed),
        "equivalent": len(equiv),
        "survived": len(live),
        "no_tests": sum(1 for k in live if judged[k] in NO_TESTS),
        "_live": live,
        "_equiv": equiv,
    }


def measure(name: str, listed: dict[str, Any]) -> dict[str, Any] | None:
    """A module's figures from mutants/; None when none of its mutants was judged. A
    partly judged module is reported as such (``judged`` < ``mutants``). A listed
    equivalent counts only while its mutated line is still the one the entry names."""
    codes: dict[str, Any] = {}
    files: dict[str, dict[str, Any]] = {}
    where: dict[str, str] = {}
    for meta in _metas(name):
        c = json.loads(meta.read_text())["exit_code_by_key"]
        codes.update(c)
        rel = _source(meta)
        where.update(dict.fromkeys(c, rel))
    equivalent, stale = {}, []
    for k, entry in listed.items():
        if k in where and codes.get(k) is not None and codes[k] not in KILLED:
            if " ".join(entry["mutation"].split()) in _diff(k, where[k]):  # as _diff spaces it
                equivalent[k] = entry["why"]
            else:
                stale.append(k)
    for meta in _metas(name):
        c = json.loads(meta.read_text())["exit_code_by_key"]
        rel = _source(meta)
        if c:
            f = _figures(c, equivalent)
            files[rel] = {k: v for k, v in f.items() if not k.startswith("_")}
    if not codes or all(c is None for c in codes.values()):
        return None
    f = _figures(codes, equivalent)
    return {
        **{k: v for k, v in f.items() if not k.startswith("_")},
        "files": files if len(files) > 1 else {},
        "survivors": {k: _diff(k, where[k])[:160] for k in f["_live"]},
        "equivalents": {k: equivalent[k] for k in f["_equiv"]},
        "stale_equivalents": stale,
        "measured": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _commit(),
    }


def _ranges(nums: list[int]) -> str:
    """[1, 2, 3, 7] -> "1-3,7"."""
    runs: list[list[int]] = []
    for n in sorted(nums):
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _numbers(ranges: str) -> list[int]:
    out: list[int] = []
    for part in filter(None, ranges.split(",")):
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out


def _split(key: str) -> tuple[str, int]:
    """`conformance.x.xǁCǁf__mutmut_7` -> (`xǁCǁf`, 7): the function as mutmut hashes it."""
    func, _, num = key.rpartition("__mutmut_")
    return func.rpartition(".")[2], int(num)


def save_verdicts() -> int:
    """Keep mutants/'s verdicts in VERDICTS (committed): per source file and function, the
    function's hash and its mutants' exit codes. A function judged again replaces its entry;
    one of the same code not judged here keeps its saved verdicts; one whose code changed
    (or that is gone) and was not judged since loses them (they could never be restored)."""
    saved = json.loads(VERDICTS.read_text()) if VERDICTS.exists() else {}
    count = 0
    for meta in sorted((ROOT / "mutants").rglob("*.py.meta")):
        m = json.loads(meta.read_text())
        rel = _source(meta)
        hashes = m.get("hash_by_function_name", {})
        codes: dict[str, dict[int, int]] = {}
        for key, code in m["exit_code_by_key"].items():
            func, num = _split(key)
            if code is not None and func in hashes:
                codes.setdefault(func, {})[num] = code
        entry = saved.pop(rel, {})
        for func in [f for f, e in entry.items() if e["hash"] != hashes.get(f)]:
            if func not in codes:  # changed or gone, and not judged since: never restored
                del entry[func]
        for func, got in codes.items():
            old = entry.get(func, {})
            if old.get("hash") == hashes[func]:  # the same code: earlier verdicts stay
                for code, ranges in old.items():
                    if code != "hash":
                        for n in _numbers(ranges):
                            got.setdefault(n, int(code))
            by_code: dict[int, list[int]] = {}
            for n, code in got.items():
                by_code.setdefault(code, []).append(n)
            entry[func] = {"hash": hashes[func]} | {
                str(c): _ranges(ns) for c, ns in sorted(by_code.items())
            }
            count += len(got)
        if entry:
            saved[rel] = entry
    VERDICTS.write_text(json.dumps(saved, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    return count


def restore_verdicts() -> int:
    """The saved verdict of every mutant not judged in mutants/ whose function's code is
    the one it was judged on (mutmut's own rule across its runs: a function whose hash
    changed is judged again). Returns how many were restored."""
    if not VERDICTS.exists():
        return 0
    saved = json.loads(VERDICTS.read_text())
    count = 0
    for meta in sorted((ROOT / "mutants").rglob("*.py.meta")):
        rel = _source(meta)
        entry = saved.get(rel)
        if not entry:
            continue
        m = json.loads(meta.read_text())
        hashes = m.get("hash_by_function_name", {})
        known = {
            (func, n): int(code)
            for func, e in entry.items()
            if e.get("hash") == hashes.get(func)
            for code, ranges in e.items()
            if code != "hash"
            for n in _numbers(ranges)
        }
        codes = m["exit_code_by_key"]
        changed = False
        for key, code in codes.items():
            if code is None and (got := known.get(_split(key))) is not None:
                codes[key], changed = got, True
                count += 1
        if changed:
            meta.write_text(json.dumps(m, indent=4))
    return count


def _commit() -> str:
    """The commit whose code was mutated: HEAD, unless MUTATION_SOURCE_COMMIT says which
    (when the work tree moved on after the run)."""
    if os.environ.get("MUTATION_SOURCE_COMMIT"):
        return os.environ["MUTATION_SOURCE_COMMIT"]
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
    except OSError:
        return ""


def score(row: dict[str, Any]) -> float:
    """Killed over the judged, non-equivalent mutants."""
    judged = row.get("judged", row["mutants"]) - row["equivalent"]
    return row["killed"] / judged if judged else 1.0


def _row(label: str, row: dict[str, Any], when: str) -> str:
    if not row.get("judged", row["mutants"]):
        return f"| {label} | {row['mutants']} (none judged yet) | | | | | | {when} |"
    s = score(row)
    complete = row.get("judged", row["mutants"]) == row["mutants"]
    judged = "" if complete else f" ({row['judged']} judged)"
    goal = ("✓" if s >= GOAL else "✗") if complete else "partial"
    return (
        f"| {label} | {row['mutants']}{judged} | {row['killed']} | {row['survived']} "
        f"({row['no_tests']}) | {row['equivalent']} | {s:.1%} | {goal} | {when} |"
    )


def render(data: dict[str, Any]) -> str:
    lines = [
        "# Mutation testing",
        "",
        "Generated by `python3 noxw -s mutation -- [MODULE…] [--survivors]` with mutmut 3: each",
        "mutant runs only the tests that reached its function in mutmut's stats run, taken from",
        "the fast in-process test files listed in `[tool.mutmut]` of pyproject.toml (servers,",
        "subprocess suites and the browser stay out). Do not edit this file by hand; equivalent",
        "mutants are listed, with the line they change and why, in",
        "`tools/mutation_equivalent.yaml`.",
        "",
        "- `python3 noxw -s mutation` judges every mutant not judged yet (every module below:",
        "  about 14,000 mutants, hours on 2 shared cores); `-- secrets runner` re-judges those modules;",
        "  `-- analysis/detectors/request` one file of the analysis package; `--survivors` only",
        "  the mutants not known to be killed (after adding tests). Run it under `nice`.",
        "- A change to the list of test files in `[tool.mutmut]` resets every verdict (mutmut "
        "fingerprints it): new tests go into a file already listed.",
        "- Verdicts outlive the machine: each run keeps every judged mutant's exit code, with",
        "  the hash of its function's code, in `tools/mutation_verdicts.json` (committed), and",
        "  the next run, anywhere, restores those whose function is unchanged (the rule mutmut",
        "  applies between its own runs), so `--new` judges only what changed or was never",
        "  judged, and `--survivors` that and the survivors.",
        "  Naming a module still judges all of its mutants again.",
        "- Figures are per module as last measured, with the commit whose code was mutated; a",
        "  module changed since then needs a new run. *partial* means not every mutant of the",
        "  module was judged; its percentage is over the judged ones.",
        "",
        f"Goal: at least {GOAL:.0%} of the non-equivalent mutants killed in each module. "
        "*Killed* includes timeouts; a mutant no test reaches counts as *survived*.",
        "",
        "mutmut 3.8 does not mutate a function under a decorator other than `staticmethod` "
        "and `classmethod`, so the detectors and the client's repairs are declared by a "
        "call after the function (`detector(fn, hook, ...)`, `works_around(fn, ...)`), not "
        "by a decorator, and so are the pytest plugin's hook options "
        "(`pytest.hookimpl(...)(fn)`); a property that decides something (the plugin's "
        "providers) does its work in a plain method. A module measured before that change "
        "(2026-12-02) left them out. Properties that only return a field or an option are "
        "still not mutated.",
        "",
        "A mutant runs its tests fastest first and stops at the first failure. The door "
        "tests (`tests/test_pytest_plugin_mutants.py`, `tests/test_run_mutants.py`: a whole "
        "suite run in-process each) judge only the pytest plugin, `run` and the runner "
        "(`MUTATION_OWNERS` in tests/conftest.py): they reach nearly every function and "
        "would cost most of each survivor's time. A mutant elsewhere that only they would "
        "kill counts as a survivor, so this can only lower a score.",
        "",
        "| module | mutants | killed | survived (no test reaches it) | equivalent "
        "| killed / judged non-equivalent | goal | measured at |",
        "|---|---:|---:|---:|---:|---:|:-:|---|",
    ]
    for name in MODULES:
        row = data.get(name)
        if row is None:
            lines.append(f"| `{name}` | not measured yet | | | | | | |")
            continue
        lines.append(_row(f"`{name}`", row, f"{row['measured']}, `{row['commit']}`"))
        for path, sub in row.get("files", {}).items():
            lines.append(_row(f"&nbsp;&nbsp;`{path}`", sub, ""))
    lines += [
        "",
        "Reproduce one module: `python3 noxw -s mutation -- secrets` "
        "(module names as in the table). Run it under `nice` on a shared machine.",
        "",
    ]
    for name in MODULES:
        row = data.get(name)
        if not row:
            continue
        lines += [f"## `{name}`", ""]
        if row["equivalents"]:
            lines += ["Equivalent (no test can tell them from the original):", ""]
            lines += [f"- `{k}`: {why}" for k, why in row["equivalents"].items()]
            lines.append("")
        if row.get("stale_equivalents"):
            lines += [
                "Listed as equivalent for another mutation of the same name (the "
                "function changed), so counted as survivors until looked at again: "
                + ", ".join(f"`{k}`" for k in row["stale_equivalents"]),
                "",
            ]
        if row["survivors"]:
            lines += [f"<details><summary>{len(row['survivors'])} survivors</summary>", ""]
            lines += [f"- `{k}`: `{d}`" if d else f"- `{k}`" for k, d in row["survivors"].items()]
            lines += ["", "</details>", ""]
        if not row["equivalents"] and not row["survivors"]:
            lines += ["Every mutant killed.", ""]
    return "\n".join(lines).rstrip() + "\n"


def readme_table(data: dict[str, Any]) -> str:
    """The README's table (between `<!-- mutation:start/end -->`): every module with its
    mutants and the share of the non-equivalent ones killed, three modules to a row (the
    counts behind each share are in docs/mutation.md); a partly judged module says so
    instead of a percentage, a module not judged yet says that."""
    cells = []
    for name in MODULES:
        row = data.get(name)
        if not row:
            cells.append(f"`{name}` | | not judged yet")
            continue
        complete = row.get("judged", row["mutants"]) == row["mutants"]
        pct = f"{score(row):.1%}" if complete else f"{score(row):.1%} of {row['judged']:,} judged"
        cells.append(f"`{name}` | {row['mutants']:,} | {pct}")
    per_row = 3
    cells += [" | | "] * (-len(cells) % per_row)
    rows = len(cells) // per_row
    head = "| module | mutants | killed / non-equivalent "
    lines = [head * per_row + "|", "|---|---:|---:" * per_row + "|"]
    lines += [
        "| " + " | ".join(cells[r + rows * c] for c in range(per_row)) + " |" for r in range(rows)
    ]
    return "\n".join(lines)


def equivalents() -> dict[str, Any]:
    """The listed equivalent mutants, by key. A key listed twice is refused: YAML would
    keep the second entry and silently drop the first one's reason."""
    import yaml  # here, not at the top: noxfile.py imports this module without PyYAML

    if not EQUIVALENT.exists():
        return {}
    root = yaml.compose(EQUIVALENT.read_text())
    seen: set[str] = set()
    for key, _ in root.value if root is not None else ():
        if key.value in seen:
            raise SystemExit(
                f"{EQUIVALENT.name}:{key.start_mark.line + 1}: {key.value} is listed twice"
            )
        seen.add(key.value)
    return yaml.safe_load(EQUIVALENT.read_text()) or {}


def main(argv: list[str]) -> int:
    os.chdir(ROOT)  # mutmut reads its configuration and mutants/ from here
    if argv == ["--restore"]:
        print(f"mutation: {restore_verdicts()} verdicts restored from {VERDICTS.name}")
        return 0
    print(f"mutation: {save_verdicts()} verdicts kept in {VERDICTS.name}")
    names = [module_of(a) for a in argv] or list(MODULES)
    equivalent = equivalents()
    data = json.loads(DATA.read_text()) if DATA.exists() else {}
    missing = []
    for name in names:
        row = measure(name, equivalent)
        if row is None:
            missing.append(name)
        else:
            data[name] = row
    DATA.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    DOC.write_text(render(data))
    from conformance.report import update_readme

    update_readme(README, readme_table(data), block="mutation")
    for name in names:
        row = data.get(name)
        if row and name not in missing:
            print(
                f"mutation: {name}: {row['killed']} of {row['judged'] - row['equivalent']} "
                f"judged non-equivalent mutants killed ({score(row):.1%}), "
                f"{row['survived']} survived, {row['equivalent']} equivalent, "
                f"{row['mutants'] - row['judged']} not judged yet"
            )
    for name in missing:
        print(f"mutation: {name}: no mutant judged, figures left as they were", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
