"""Servers started by `os.posix_spawn` (`transports.spawn.spawn`), as `subprocess.Popen`
started them: their own session, exactly the environment `launch()` computes, our cwd (a
cwd of their own goes through `Popen`), the pipes on 0-2 and no other descriptor of ours,
the signals Python ignores back to their defaults, the same errors; and the process is
adopted by the full path as by the one-shot path."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from helpers import fake_server

from mcpcli.client import Client
from mcpcli.transports import spawn
from mcpcli.transports.spawn import Launch, Process, SpawnError, launch
from mcpcli.transports.stdio import StdioTransport

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="POSIX")]

#: Prints what it was started with: session, group, cwd, descriptors, a line of its stdin.
REPORT = """
import json, os, sys
fds = sorted(int(n) for n in os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
print(json.dumps({"pid": os.getpid(), "sid": os.getsid(0), "pgrp": os.getpgrp(), "cwd": os.getcwd(),
                  "fds": fds, "line": sys.stdin.readline()}))
sys.stderr.write("on stderr\\n")
"""


def _report(process: Process) -> dict[str, object]:
    process.stdin.write(b"hello\n")
    process.stdin.close()
    out = process.stdout.read()
    err = process.stderr.read()
    process.stdout.close()
    process.stderr.close()
    assert process.wait() == 0, err
    assert err == b"on stderr\n"
    report: dict[str, object] = json.loads(out)
    return report


def test_a_server_runs_in_its_own_session_on_the_pipes_with_no_other_descriptor_of_ours() -> None:
    ours = os.pipe()  # inheritable: what Popen(close_fds=True) keeps from a child
    for fd in ours:
        os.set_inheritable(fd, True)
    try:
        spec = launch(sys.executable, ["-c", REPORT])
        process = spawn.spawn(spec.command, spec.args, spec.env, spec.cwd)
    finally:
        for fd in ours:
            os.close(fd)
    report = _report(process)
    assert report["sid"] == report["pid"] == report["pgrp"] == process.pid
    assert report["line"] == "hello\n"
    assert report["cwd"] == os.getcwd()
    if report["fds"] is not None:
        assert set(report["fds"]) - {0, 1, 2} <= {max(report["fds"])}  # the listing's own


def _output(spec: Launch) -> str:
    """Spawn `spec` with nothing on its stdin; what it wrote, once it exited 0."""
    process = spawn.spawn(spec.command, spec.args, spec.env, spec.cwd)
    process.stdin.close()
    out = process.stdout.read().decode()
    for stream in (process.stdout, process.stderr):
        stream.close()
    assert process.wait() == 0
    return out


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux's /proc")
def test_the_signals_python_ignores_are_back_to_their_defaults_in_a_server() -> None:
    """Python ignores SIGPIPE and SIGXFSZ; a server (here `cat`, which does not set them
    itself) must not inherit that, as `Popen(restore_signals=True)` saw to."""
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN  # what the server must not inherit
    status = _output(launch("cat", ["/proc/self/status"]))
    ignored = int(next(line for line in status.splitlines() if line.startswith("SigIgn:")).split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))
    assert not ignored & (1 << (signal.SIGXFSZ - 1))


def test_a_server_gets_exactly_the_environment_launch_computes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPCLI_TEST_NOT_PASSED", "1")
    monkeypatch.setenv("MCPCLI_TEST_PASSED", "ours")
    spec = launch("env", [], {"CONFIGURED": "x"}, passed={"MCPCLI_TEST_PASSED": None})
    out = _output(spec)
    assert dict(line.split("=", 1) for line in out.splitlines()) == spec.env


def test_a_server_with_a_cwd_of_its_own_starts_there(tmp_path: Path) -> None:
    """posix_spawn cannot change directory (before Python offers addchdir): `Popen` does."""
    spec = launch(sys.executable, ["-c", REPORT], cwd=str(tmp_path))
    report = _report(spawn.spawn(spec.command, spec.args, spec.env, spec.cwd))
    assert report["cwd"] == str(tmp_path)
    assert report["sid"] == report["pid"]


def test_the_one_shot_path_starts_its_server_before_subprocess_signal_or_locale_load() -> None:
    code = (
        "import sys\n"
        "from mcpcli.transports.spawn import launch, spawn\n"
        f"spec = launch({sys.executable!r}, ['-c', 'pass'])\n"
        "process = spawn(spec.command, spec.args, spec.env, spec.cwd)\n"
        "print(sorted(m for m in ('subprocess', 'signal', 'locale', 'threading') if m in sys.modules))\n"
        "process.stdin.close(); process.wait()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"


@pytest.mark.parametrize("cwd", [False, True], ids=["posix_spawn", "Popen"])
def test_errors_say_what_they_said(tmp_path: Path, cwd: bool) -> None:
    env = launch("x").env
    where = str(tmp_path) if cwd else None
    with pytest.raises(SpawnError, match=r"^cannot start server: mcpcli-no-such-command: command not found$"):
        spawn.spawn("mcpcli-no-such-command", [], env, where)
    plain = tmp_path / "plain"
    plain.write_text("#!/bin/sh\n")
    with pytest.raises(SpawnError, match=rf"^cannot start server: {plain}: permission denied$"):
        spawn.spawn(str(plain), [], env, where)
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x7fELF not really")
    garbage.chmod(0o755)
    with pytest.raises(SpawnError, match=rf"^cannot start server: {garbage}: Exec format error$"):
        spawn.spawn(str(garbage), [], env, where)


def test_wait_with_a_timeout_and_poll_reap_the_server() -> None:
    spec = launch(sys.executable, ["-c", "import sys; sys.stdin.read(); sys.exit(3)"])
    process = spawn.spawn(spec.command, spec.args, spec.env, spec.cwd)
    assert process.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(0.01)
    process.stdin.close()
    assert process.wait(60) == 3
    assert process.poll() == 3
    process.stdout.close()
    process.stderr.close()


def test_the_full_path_adopts_the_server_spawned_early(tmp_path: Path) -> None:
    """`main()` spawns a `--` server before anything loads; the stdio transport adopts that
    process (started by posix_spawn) instead of starting another."""
    starts = tmp_path / "starts"
    argv = fake_server("--starts", str(starts))
    spec = launch(argv[0], argv[1:])
    spawn.prespawn(spec)
    transport = StdioTransport(launch(argv[0], argv[1:]))

    async def run() -> list[str]:
        async with Client(transport) as client:
            tools = await client.list_tools()
            assert transport.process is not None
            assert starts.read_text().split() == [str(transport.process.pid)]
            return [tool["name"] for tool in tools["tools"]]

    assert "echo" in anyio.run(run)
    assert transport.process is not None
    assert starts.read_text().split() == [str(transport.process.pid)]  # started once
    assert spawn.adopt(spec) is None
