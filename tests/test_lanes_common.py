"""Tests of conformance.lanes.common against real local processes (no network beyond loopback)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conformance.lanes import common

PY = sys.executable


def _http_server_cmd(port: int, directory: Path) -> list[str]:
    return [
        PY,
        "-m",
        "http.server",
        str(port),
        "--bind",
        "127.0.0.1",
        "--directory",
        str(directory),
    ]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); look at its state
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_free_port_is_bindable() -> None:
    import socket

    port = common.free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_tail_of_missing_and_existing_file(tmp_path: Path) -> None:
    assert common.tail(tmp_path / "nope.log") == ""
    f = tmp_path / "x.log"
    f.write_text("".join(f"line {i}\n" for i in range(50)))
    assert common.tail(f, 3) == "line 47\nline 48\nline 49"


def test_http_server_start_wait_stop(tmp_path: Path) -> None:
    (tmp_path / "health").write_text("ok")
    port = common.free_port()
    log = tmp_path / "server.log"
    with common.started_process(_http_server_cmd(port, tmp_path), log=log) as proc:
        pid = proc.pid
        assert os.getpgid(pid) == pid  # own session / process group
        took = common.wait_healthy(f"http://127.0.0.1:{port}/health", timeout=20, process=proc)
        assert 0 <= took < 20
        assert proc.poll() is None
    assert proc.returncode is not None
    assert not _pid_alive(pid)
    assert not common.process_group_alive(pid)
    # the port is free again
    import socket

    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))


def test_wait_healthy_times_out_with_one_line(tmp_path: Path) -> None:
    port = common.free_port()  # nothing listens here
    start = time.monotonic()
    with pytest.raises(common.LaneError) as info:
        common.wait_healthy(f"http://127.0.0.1:{port}/health", timeout=1.0)
    assert time.monotonic() - start < 5
    assert "\n" not in str(info.value)
    assert "not healthy" in str(info.value)


def test_wait_healthy_non_200_is_not_yet(tmp_path: Path) -> None:
    port = common.free_port()
    with common.started_process(_http_server_cmd(port, tmp_path), log=tmp_path / "l") as proc:
        common.wait_healthy(f"http://127.0.0.1:{port}/", timeout=20, process=proc)
        with pytest.raises(common.LaneError, match="HTTP 404"):
            common.wait_healthy(f"http://127.0.0.1:{port}/missing", timeout=1.0, process=proc)


def test_wait_healthy_notices_dead_process(tmp_path: Path) -> None:
    port = common.free_port()
    cmd = [PY, "-c", "import sys; print('boom'); sys.exit(3)"]
    with common.started_process(cmd, log=tmp_path / "dead.log") as proc:
        with pytest.raises(common.LaneError, match="status 3"):
            common.wait_healthy(f"http://127.0.0.1:{port}/health", timeout=20, process=proc)
    assert "boom" in common.tail(tmp_path / "dead.log")


def test_stop_escalates_to_kill_and_reaches_forked_children(tmp_path: Path) -> None:
    # A parent that ignores SIGTERM and forks a child that ignores it too.
    script = textwrap.dedent(
        """
        import os, signal, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = os.fork()
        if child == 0:
            time.sleep(600)
            os._exit(0)
        print(child, flush=True)
        time.sleep(600)
        """
    )
    log = tmp_path / "stubborn.log"
    with common.started_process([PY, "-c", script], log=log, stop_timeout=1.0) as proc:
        deadline = time.monotonic() + 10
        while not common.tail(log).strip() and time.monotonic() < deadline:
            time.sleep(0.05)
        child_pid = int(common.tail(log).strip())
        assert _pid_alive(child_pid)
    assert proc.returncode == -signal.SIGKILL
    assert not _pid_alive(proc.pid)
    assert not _pid_alive(child_pid)
    assert not common.process_group_alive(proc.pid)


def test_cleanup_on_exception(tmp_path: Path) -> None:
    port = common.free_port()
    with pytest.raises(RuntimeError, match="inside"):
        with common.started_process(_http_server_cmd(port, tmp_path), log=tmp_path / "l") as proc:
            common.wait_healthy(f"http://127.0.0.1:{port}/", timeout=20, process=proc)
            raise RuntimeError("inside")
    assert not _pid_alive(proc.pid)


def test_run_with_server_env_and_status() -> None:
    code = "import os, sys; sys.exit(0 if os.environ['LANE_TEST_URL'] == 'http://x/v1' else 9)"
    assert common.run_with_server([PY, "-c", code], {"LANE_TEST_URL": "http://x/v1"}) == 0
    assert common.run_with_server([PY, "-c", "import sys; sys.exit(5)"], {}) == 5
    assert common.run_with_server(["/nonexistent/definitely-not-here"], {}) == 127


def test_run_with_server_signal_death_is_128_plus(tmp_path: Path) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    assert common.run_with_server([PY, "-c", code], {}) == 128 + signal.SIGKILL


def test_sigterm_to_driver_stops_server_and_command(tmp_path: Path) -> None:
    """A driver process using started_process + run_with_server gets SIGTERM: nothing is left."""
    pidfile = tmp_path / "pids"
    driver = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from conformance.lanes import common
        port = common.free_port()
        cmd = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
        try:
            with common.started_process(cmd, log={str(tmp_path / "srv.log")!r}) as proc:
                common.wait_healthy(f"http://127.0.0.1:{{port}}/", timeout=20, process=proc)
                child = [sys.executable, "-c",
                         "import os, time; open({str(pidfile)!r}, 'a').write(str(os.getpid()))"
                         " ; time.sleep(600)"]
                Path({str(pidfile)!r}).write_text(str(proc.pid) + "\\n")
                sys.exit(common.run_with_server(child, {{}}))
        except common.Terminated as exc:
            sys.exit(exc.exit_status)
        """
    )
    drv = subprocess.Popen([PY, "-c", driver])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if pidfile.exists() and len(pidfile.read_text().split()) == 2:
                break
            time.sleep(0.05)
        server_pid, cmd_pid = (int(x) for x in pidfile.read_text().split())
        assert _pid_alive(server_pid) and _pid_alive(cmd_pid)
        drv.send_signal(signal.SIGTERM)
        assert drv.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if drv.poll() is None:
            drv.kill()
            drv.wait(timeout=10)
    assert not _pid_alive(server_pid)
    assert not _pid_alive(cmd_pid)
