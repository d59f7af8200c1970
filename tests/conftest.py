"""Which self-tests are end to end (decided at collection; it changes nothing a test does),
and the collected session kept out of the garbage collector's way.

The ``e2e`` mark: tests that run the suite, a door or a recipe in a subprocess, record the
reference profiles, build a wheel, start a cluster or a browser. The ``tests`` nox session
(the README's self-test loop) runs everything else, the ``tests-e2e`` session runs these;
together they are every test, and ``.ci/run`` runs both. A test can also carry
``@pytest.mark.e2e`` itself.
"""

from __future__ import annotations

import gc
import json
import locale
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Hypothesis' two timing checks (an example's deadline, "input generation is slow") fail
# on a loaded shared machine and say nothing about the code: off for every property test.
settings.register_profile(
    "shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("shared-machine")

HERE = Path(__file__).resolve().parent

# End-to-end by design: every test in these modules (or nearly) crosses a process boundary.
E2E_MODULES = frozenset(
    {
        "test_profiles_e2e.py",
        "test_gateway.py",
        "test_pipeline.py",
        "test_packaging.py",
        "test_cluster.py",
        "test_report_browser.py",
        "test_door.py",
        "test_outside_use.py",
        "test_ci_recipe.py",
        "test_loadgroup.py",
        "test_client_matrix_e2e.py",  # the adapters in their own processes
        "test_parallel.py",  # `analyze -j` and the field session: worker processes
    }
)

# End-to-end tests in modules that are otherwise in-process: each runs the suite, `run`,
# `analyze` or other processes of ours in a subprocess. (module, test function)
E2E_TESTS = frozenset(
    {
        (
            "test_calls_bound.py",
            "test_a_cell_over_the_bound_is_the_same_error_live_analysed_and_replayed",
        ),
        ("test_cell_memory.py", "test_an_endless_cell_holds_max_bytes_plus_a_constant_and_replays"),
        (
            "test_cell_memory.py",
            "test_a_body_that_ends_normally_near_max_bytes_is_kept_whole_and_held_once",
        ),
        (
            "test_cell_memory.py",
            "test_a_name_and_an_id_as_long_as_the_body_are_not_held_again_by_findings",
        ),
        (  # the same test as renamed on main
            "test_cell_memory.py",
            "test_a_name_and_an_id_as_long_as_the_body_are_held_once_more_at_most",
        ),
        ("test_config.py", "test_pytest_reports_a_bad_file_as_one_usage_line"),
        ("test_config.py", "test_pytest_unknown_provider_lists_valid_ones"),
        ("test_config.py", "test_pytest_unknown_scenario_lists_valid_ones"),
        ("test_config.py", "test_pytest_base_url_env_not_http"),
        ("test_config.py", "test_unset_key_skips_that_provider_and_the_others_run"),
        ("test_faults.py", "test_suite_end_to_end_faults_side_by_side"),
        ("test_inputs_once.py", "test_an_unusable_report_dir_is_the_one_line_config_error"),
        ("test_yaml_safety.py", "test_replay_refuses_a_python_tag_and_runs_nothing"),
        ("test_yaml_safety.py", "test_replay_refuses_an_alias_bomb"),
        ("test_hostile_text.py", "test_a_lone_surrogate_is_written_escaped_by_run"),
        ("test_hostile_text.py", "test_an_index_that_is_true_is_judged_and_the_matrix_written"),
        ("test_hostile_text.py", "test_run_prints_an_http_error_message_escaped"),
        ("test_hostile_text.py", "test_run_prints_an_error_event_escaped"),
        ("test_retries.py", "test_suite_records_retries_in_results_and_replays_them"),
        ("test_secrets.py", "test_canaries_never_leak_record_and_replay"),
        ("test_secrets.py", "test_replay_without_keys_set_also_stays_clean"),
        (
            "test_wire_hostile.py",
            "test_hidden_keys_never_leak_recorded_or_replayed_without_the_key",
        ),
        # `analyze` (the second door) in a subprocess: its exit status, streams and memory
        # as a user's shell sees them.
        ("test_bad_input.py", "test_subprocess_bad_input_is_one_line_exit_2"),
        ("test_captures.py", "test_cli_subprocess_on_captures"),
        ("test_cli_analyze.py", "test_subprocess_contract"),
        ("test_hostile_text.py", "test_analyze_with_a_surrogate_prints_and_reports"),
        ("test_hostile_text.py", "test_analyze_prints_tool_names_and_errors_escaped"),
        ("test_inputs_once.py", "test_process_substitution_is_judged_as_the_file"),
        ("test_inputs_once.py", "test_a_fifo_is_read_once_and_does_not_hang"),
        ("test_inputs_once.py", "test_stdin_still_reads"),
        ("test_inputs_once.py", "test_the_har_bound_holds_for_a_real_size"),
        ("test_inputs_once.py", "test_run_refuses_an_infinite_total_timeout_with_one_line"),
        ("test_yaml_safety.py", "test_analyze_refuses_a_python_tag_with_one_line"),
        ("test_yaml_safety.py", "test_analyze_refuses_an_alias_bomb_fast_and_small"),
        # client-matrix adapters in their own processes (as test_client_matrix_e2e.py)
        ("test_client_matrix_expectations.py", "test_hung_and_error_from_fake_adapters"),
        # the lanes' server and command processes: started, waited on, signalled, stopped
        ("test_lanes_common.py", "test_http_server_start_wait_stop"),
        ("test_lanes_common.py", "test_wait_healthy_non_200_is_not_yet"),
        ("test_lanes_common.py", "test_wait_healthy_notices_dead_process"),
        ("test_lanes_common.py", "test_stop_escalates_to_kill_and_reaches_forked_children"),
        ("test_lanes_common.py", "test_cleanup_on_exception"),
        ("test_lanes_common.py", "test_run_with_server_env_and_status"),
        ("test_lanes_common.py", "test_run_with_server_signal_death_is_128_plus"),
        ("test_lanes_common.py", "test_sigterm_to_driver_stops_server_and_command"),
    }
)


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        # Hypothesis' table of the characters UTF-8 encodes (its default alphabet for text)
        # is computed in 2 CPU-seconds by the first process that draws text, then read from
        # .hypothesis/: built here by the xdist controller, so that on a fresh clone the
        # workers read it instead of each computing it at the same time.
        st.characters(codec="utf-8").validate()
    config.addinivalue_line(
        "markers",
        "e2e: an end-to-end self-test (the suite or a door in a subprocess, every profile "
        "recorded, a wheel, a cluster, a browser): `python3 noxw -s tests-e2e`, not `tests`",
    )
    config.addinivalue_line(
        "markers",
        "runs_first: collected before the other tests (a loop guard: mutmut runs a mutant's "
        "tests fastest first with -x, so a guard that fails on an endless loop must come first)",
    )


# optionalhook: a run without xdist (-p no:xdist) has no such hook to implement
@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup` (the self-test loop) by a scheduler whose bookkeeping does not grow
    with the square of the test count (tests/scheduling.py); any other mode is xdist's."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from scheduling import PrunedLoadGroupScheduling

    return PrunedLoadGroupScheduling(config, log)


# A parameter longer than this is named by its start and its length, not spelled out whole.
LONG_ID = 100


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """Short test ids for long text and bytes parameters (a body of a MiB, a key split in
    a 64 KiB line): pytest spells a str or bytes parameter out in the id, and each xdist
    worker collected megabytes of ids, sent them to the controller and in every report of
    the test. Such an id is the value's first characters, escaped, and its length."""
    if not isinstance(val, str | bytes) or len(val) <= LONG_ID:
        return None
    head = val[:24].decode("latin-1") if isinstance(val, bytes) else val[:24]
    unit = "bytes" if isinstance(val, bytes) else "chars"
    return f"{head.encode('unicode_escape').decode('ascii')}...{len(val)}-{unit}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.parent != HERE:
            continue  # the replayed cells (conformance/suite) are not end to end
        module = item.path.name
        func = getattr(item, "originalname", item.name)
        if module in E2E_MODULES or (module, func) in E2E_TESTS:
            item.add_marker(pytest.mark.e2e)
    # A stable sort: the order of everything else is unchanged.
    items.sort(key=lambda item: item.get_closest_marker("runs_first") is None)
    mutant = os.environ.get("MUTANT_UNDER_TEST", "")
    if "__mutmut_" in mutant:
        _for_mutant(config, items, mutant)


# Under mutmut, the door tests (a whole suite run in-process each) reach nearly every
# function and cost most of a surviving mutant's time: they judge only the modules they are
# written for. Conservative: a mutant elsewhere that only they would kill counts as survived.
MUTATION_OWNERS = {
    "test_pytest_plugin_mutants.py": ("conformance.pytest_plugin.", "conformance.runner."),
    "test_run_mutants.py": (
        "conformance.run.",
        "conformance.pytest_plugin.",
        "conformance.runner.",
    ),
}


def _for_mutant(config: pytest.Config, items: list[pytest.Item], mutant: str) -> None:
    """A mutant's tests as mutmut runs them (with -x): the door tests only for their own
    modules, the module's own test files first (they are written to kill its mutants), and
    within that the fastest first (by mutmut's measured durations), so that a killed mutant
    costs its quickest failing test rather than whatever came first."""
    keep = [i for i in items if mutant.startswith(MUTATION_OWNERS.get(i.path.name, ("",)))]
    if len(keep) < len(items):
        kept = set(keep)
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = keep
    # The durations of mutmut's stats run, which the mutation session writes beside them
    # (tests run from mutants/); the stats themselves are too big to read per mutant.
    durations = HERE.parent / "mutmut-durations.json"
    took = json.loads(durations.read_text()) if durations.exists() else {}
    own = mutant.split(".")[1]  # `client` of conformance.client.x_...: test_client*.py first
    items.sort(
        key=lambda i: (
            i.get_closest_marker("runs_first") is None,
            not i.path.name.startswith(f"test_{own}"),
            took.get(i.nodeid, 0.0),
        )
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (imported modules, thousands of items and their parameters)
    lives until the session ends: it is moved out of the garbage collector's generations, so
    that no full collection walks it again. Each in-process pytest run (the doors, `run`)
    ends with full collections, and so do the tests' own: on 505 of the tests with the whole
    suite collected, over a third of the CPU time went to walking it again and again."""
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def _one_tls_context() -> Iterator[None]:
    """One verifying TLS context a process, shared by every httpx client the tests make.
    httpx builds one per client (certifi's bundle parsed: 30 ms of CPU); the transport
    keeps one of its own, but the example agent loops, the tests' own clients and the v1
    probe make a client each time, and the self-tests speak plain HTTP to local servers:
    hundreds of contexts a run, none used. Another `verify` or a client certificate still
    gets its own."""
    from httpx._transports import default

    make = default.create_ssl_context
    made: dict[tuple[Any, ...], Any] = {}

    def shared(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        if verify is not True or cert is not None:
            return make(verify=verify, cert=cert, trust_env=trust_env)
        key = (trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        if key not in made:
            made[key] = make(verify=verify, cert=cert, trust_env=trust_env)
        return made[key]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(default, "create_ssl_context", shared)
        yield


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound but not listening (refused), held so that no other server takes it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


@pytest.fixture()
def ascii_locale() -> Iterator[None]:
    """A machine whose locale is plain C (ASCII), as many CI images are."""
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, before)
