"""Every YAML file the suite reads is read safely and bounded (``conformance.safeyaml``).

A cassette is data from anyone (committed, shared, added by a pull request): one with a
Python tag must run nothing and be refused with one line wherever it is read (the replay
of ``conformance run --replay`` and of the pytest door, which is also the matrix
session's, ``conformance analyze``, the client matrix); a "billion laughs" file of a few
hundred bytes must be refused at once, not grow to gigabytes. providers.yaml and the
field sources are read by the same loader.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from conformance import safeyaml
from conformance.providers import ConfigError, load_providers
from conformance.readers import InputError, read_path

REPO = Path(__file__).resolve().parents[1]
GOOD = REPO / "cassettes" / "vllm" / "single.yaml"
BIN = Path(sys.executable).parent


def bomb(levels: int = 9, width: int = 10) -> str:
    """A billion laughs: each level an anchored list of ``width`` aliases of the last."""
    lines = ['l0: &l0 ["lol"]']
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def pwn_cassette(tmp: Path, marker: Path) -> Path:
    """A good recorded cassette with one more top-level key whose value, built by a full
    YAML loader, runs a command that creates ``marker``."""
    path = tmp / "cassettes" / "p" / "single.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(
        f'pwn: !!python/object/apply:os.system ["touch {marker}"]\n' + GOOD.read_text("utf-8")
    )
    return path


def bomb_cassette(tmp: Path) -> Path:
    path = tmp / "cassettes" / "p" / "single.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(
        "interactions:\n- request:\n    uri: http://h/v1\n"
        + textwrap.indent(bomb(), "    ")
        + "  response: {status: {code: 200}, "
        "headers: {x: *l9}, body: {string: ''}}\nversion: 1\n"
    )
    return path


def providers(tmp: Path) -> Path:
    (tmp / "providers.yaml").write_text(
        textwrap.dedent("""\
        providers:
          p:
            base_url: http://127.0.0.1:9/v1
            model: smollm2
        """)
    )
    return tmp / "providers.yaml"


def no_traceback(out: str) -> None:
    assert "Traceback" not in out, out


# ------------------------------------------------------------------ the loader itself


def test_a_python_tag_is_refused_and_builds_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    with pytest.raises(safeyaml.Refused, match=r"a Python tag \(!!python/object/apply:os"):
        safeyaml.load(f'x: !!python/object/apply:os.system ["touch {marker}"]\n')
    assert not marker.exists()


@pytest.mark.parametrize("loader", [safeyaml.Loader, safeyaml.PyLoader])
def test_an_alias_bomb_is_refused_at_once(loader: type) -> None:
    start = time.process_time()
    with pytest.raises(safeyaml.Refused, match="an alias bomb"):
        safeyaml.load(bomb(), loader)
    assert time.process_time() - start < 1.0


def test_a_self_containing_alias_is_refused() -> None:
    with pytest.raises(safeyaml.Refused, match="contain itself"):
        safeyaml.load("a: &a [1, *a]\n")
    with pytest.raises(safeyaml.Refused, match="contain itself"):
        safeyaml.load("a: &a {b: *a}\n")


def test_a_long_string_aliased_many_times_is_a_bomb_too() -> None:
    text = "s: &s '" + "x" * 20_000 + "'\nl: [" + ", ".join(["*s"] * 10) + "]\n"
    with pytest.raises(safeyaml.Refused, match="an alias bomb"):
        safeyaml.load(text)


def test_a_few_aliases_within_the_budget_still_load() -> None:
    doc = safeyaml.load("base: &b {a: 1, b: [1, 2]}\nx: *b\ny: {<<: *b, c: 3}\n")
    assert doc["x"] == {"a": 1, "b": [1, 2]} and doc["y"]["c"] == 3


def test_every_yaml_read_of_the_package_uses_the_checked_loader() -> None:
    """No ``yaml.load``/``safe_load``/``full_load``/``unsafe_load`` outside safeyaml."""
    call = re.compile(
        r"(?<![\w.])(yaml\.(load|safe_load|full_load|unsafe_load|load_all|"
        r"safe_load_all)|yamlserializer\.deserialize)\("
    )
    offenders = [
        f"{p.relative_to(REPO)}: {m.group()}"
        for p in (REPO / "conformance").rglob("*.py")
        if p.name != "safeyaml.py"
        for m in call.finditer(p.read_text("utf-8"))
    ]
    assert not offenders


# ------------------------------------------------------------------ cassettes: every door


def test_analyze_refuses_a_python_tag_with_one_line(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    path = pwn_cassette(tmp_path, marker)
    r = subprocess.run(
        [str(BIN / "toolcall-conformance"), "analyze", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0, r.stderr
    assert f"{path}:1: refused: a Python tag" in r.stderr
    assert not marker.exists()


def test_analyze_refuses_an_alias_bomb_fast_and_small(tmp_path: Path) -> None:
    path = bomb_cassette(tmp_path)
    assert path.stat().st_size < 1000
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so the child would report
    # the pytest worker's own peak.
    code = (
        "import re, sys; from conformance.cli import main; rc = main(['analyze', "
        f"{str(path)!r}]); print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)); "
        "sys.exit(rc)"
    )
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 20
    assert r.returncode == 2, r.stdout + r.stderr
    assert "an alias bomb" in r.stderr and r.stderr.strip().count("\n") == 0
    assert int(r.stdout.split()[-1]) < 200_000  # KiB of peak RSS (main: gigabytes)


@pytest.mark.parametrize("door", ["run", "pytest"])
def test_replay_refuses_a_python_tag_and_runs_nothing(tmp_path: Path, door: str) -> None:
    marker = tmp_path / "PWNED"
    pwn_cassette(tmp_path, marker)
    providers(tmp_path)
    if door == "run":
        cmd = [
            str(BIN / "toolcall-conformance"),
            "run",
            "--providers",
            "providers.yaml",
            "--replay",
            "--cassette-dir",
            "cassettes",
            "--scenario",
            "single",
            "--report-dir",
            "out",
        ]
    else:  # the pytest door: also what the matrix session (nox -s matrix) runs
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--pyargs",
            "conformance.suite",
            "--providers=providers.yaml",
            "--record-mode=none",
            "--cassette-dir=cassettes",
            "--scenario=single",
            "--report-dir=out",
            "-q",
        ]
    r = subprocess.run(
        cmd,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
    )
    out = r.stdout + r.stderr
    assert not marker.exists(), "the cassette ran a command"
    assert r.returncode == 1, out
    refusals = [ln for ln in out.splitlines() if "refused: a Python tag" in ln]
    assert refusals and "cassettes/p/single.yaml:1:" in refusals[0], out
    no_traceback(out)
    assert "def load_cassette" not in out  # no source lines of a traceback either


def test_replay_refuses_an_alias_bomb(tmp_path: Path) -> None:
    bomb_cassette(tmp_path)
    providers(tmp_path)
    r = subprocess.run(
        [
            str(BIN / "toolcall-conformance"),
            "run",
            "--providers",
            "providers.yaml",
            "--replay",
            "--cassette-dir",
            "cassettes",
            "--scenario",
            "single",
            "--report-dir",
            "out",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "an alias bomb" in out, out
    no_traceback(out)


def test_the_persister_refuses_with_vcrpys_yaml_serializer_too(tmp_path: Path) -> None:
    """Whoever passes vcrpy's own YAML serializer (the default of a bare VCR()) to the
    persister still gets the safe loader."""
    from vcr.serializers import yamlserializer

    from conformance.cassettes import AtomicPersister, CassetteRefused, SafeYaml

    marker = tmp_path / "PWNED"
    path = pwn_cassette(tmp_path, marker)
    for serializer in (yamlserializer, SafeYaml):
        with pytest.raises(CassetteRefused, match="refused: a Python tag"):
            AtomicPersister.load_cassette(path, serializer)
    assert not marker.exists()
    shutil.copy(GOOD, path)
    requests, responses = AtomicPersister.load_cassette(path, SafeYaml)
    assert len(requests) == len(responses) >= 1


def test_the_client_matrix_skips_a_refused_cassette_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from conformance.client_matrix.streams import provider_streams

    marker = tmp_path / "PWNED"
    pwn_cassette(tmp_path, marker)
    shutil.copy(GOOD, tmp_path / "cassettes" / "p" / "parallel.yaml")
    streams = provider_streams(tmp_path / "cassettes")
    assert [s.id for s in streams] == ["p:parallel"]
    err = capsys.readouterr().err
    assert "single.yaml:1: refused: a Python tag" in err and err.count("\n") == 1
    assert not marker.exists()


def test_read_path_refuses_both(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    with pytest.raises(InputError, match="refused: a Python tag"):
        read_path(pwn_cassette(tmp_path, marker))
    (tmp_path / "cassettes" / "p" / "single.yaml").unlink()
    (tmp_path / "cassettes" / "p").rmdir()
    (tmp_path / "cassettes").rmdir()
    with pytest.raises(InputError, match="an alias bomb"):
        read_path(bomb_cassette(tmp_path))
    assert not marker.exists()


# ------------------------------------------------------------------ providers.yaml, field


def test_providers_extra_body_alias_bomb_is_a_config_error(tmp_path: Path) -> None:
    indented = textwrap.indent(bomb(), "      ")
    (tmp_path / "providers.yaml").write_text(
        "providers:\n  p:\n    base_url: http://127.0.0.1:9/v1\n    model: m\n"
        "    extra_body:\n" + indented
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ConfigError, match=r"providers\.yaml: line \d+: .*an alias bomb"):
        load_providers(tmp_path / "providers.yaml")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000


def test_providers_python_tag_is_a_config_error(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    (tmp_path / "providers.yaml").write_text(
        "providers:\n  p:\n    base_url: http://127.0.0.1:9/v1\n    model: m\n"
        f'    extra_body: {{x: !!python/object/apply:os.system ["touch {marker}"]}}\n'
    )
    with pytest.raises(ConfigError, match="a Python tag"):
        load_providers(tmp_path / "providers.yaml")
    assert not marker.exists()


def test_providers_duplicates_are_still_refused(tmp_path: Path) -> None:
    (tmp_path / "providers.yaml").write_text(
        "providers:\n  p:\n    base_url: http://127.0.0.1:9/v1\n    model: m\n"
        "  p:\n    base_url: http://127.0.0.1:9/v1\n    model: m\n"
    )
    with pytest.raises(ConfigError, match="duplicated key 'p'"):
        load_providers(tmp_path / "providers.yaml")


def test_field_sources_alias_bomb_is_refused(tmp_path: Path) -> None:
    from conformance.field import FieldError, load_sources

    (tmp_path / "s.yaml").write_text(bomb() + "routes: {}\ncaptures: {}\n")
    with pytest.raises(FieldError, match="an alias bomb"):
        load_sources(tmp_path / "s.yaml")


def test_the_committed_yaml_files_all_load() -> None:
    """The checked loader takes everything the repository commits."""
    for p in [
        *(REPO / "cassettes").rglob("*.yaml"),
        REPO / "providers.yaml",
        REPO / "conformance" / "data" / "field-sources.yaml",
    ]:
        with p.open("rb") as f:
            assert safeyaml.load(f.read()) is not None, p
    assert yaml.__version__  # PyYAML itself is what parses
