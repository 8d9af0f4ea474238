"""A killed daemon's servers do not outlive it: the daemon records each server's process
group in `<rundir>/groups`, and the next daemon ends what is left of them (and nothing
else) before it serves."""

from __future__ import annotations

import os
import signal
import socket
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import fake_server, wait_until
from sessions.util import stop

from mcpcli import sessions
from mcpcli.daemon import groups

from .conftest import alive, open_request, start_daemon, stop_daemon
from .test_daemon import live_members


def recorded(run_dir: Path) -> list[int]:
    path = run_dir / "groups"
    return [int(line.split()[0]) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_killed_daemons_stubborn_server_is_ended_by_the_next_daemon(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = start_daemon(run_dir)
    try:
        # --stubborn ignores EOF and SIGTERM and leaves a grandchild in its group.
        pid = first.control("open", **open_request("f", fake_server("--stubborn")))["session"]["pid"]
        wait_until(lambda: len(live_members(pid)) == 2, what="the server and its grandchild")
        # Recorded in the private run directory, readable by us alone.
        assert recorded(run_dir) == [pid]
        assert stat.S_IMODE(os.stat(run_dir).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(run_dir / "groups").st_mode) == 0o600
        first.proc.kill()  # SIGKILL: the daemon cannot end anything
        first.proc.wait(30)
        assert len(live_members(pid)) == 2  # the server and its grandchild outlived it
    finally:
        stop_daemon(first)
    # The next command starts a new daemon, as `mcp session list` would.
    monkeypatch.setenv("MCPCLI_RUNTIME_DIR", str(run_dir))
    monkeypatch.delenv("MCPCLI_DAEMON_ARGV", raising=False)
    sock = sessions.ensure_daemon()
    with sock:
        daemon_pid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
    try:
        wait_until(lambda: not live_members(pid), what="the old process group ended")
        wait_until(lambda: recorded(run_dir) == [], what="the record cleared")
    finally:
        stop(daemon_pid)


def test_a_recorded_pid_now_another_process_is_not_signalled(run_dir: Path) -> None:
    # A process in its own group whose pid the record names with another start time:
    # a daemon long gone started a group with that pid, and the pid was reused since.
    stranger = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                stdin=subprocess.PIPE, start_new_session=True)
    try:
        started = groups.start_time(stranger.pid)
        assert started is not None
        (run_dir / "groups").write_text(f"{stranger.pid} {started - 1}\n")
        daemon = start_daemon(run_dir)
        try:
            wait_until(lambda: recorded(run_dir) == [], what="the record cleared")
            assert stranger.poll() is None and alive(stranger.pid)
        finally:
            stop_daemon(daemon)
    finally:
        assert stranger.stdin is not None
        stranger.stdin.close()
        stranger.wait(30)


def test_reap_ends_a_recorded_group_only_while_it_is_ours(tmp_path: Path) -> None:
    record = groups.GroupRecord(tmp_path)
    mine = subprocess.Popen([sys.executable, "-c", "import signal, sys; "
                             "signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
                             "sys.stdin.read()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert mine.stdout is not None and mine.stdout.readline() == b"ready\n"
        record.add(mine.pid)
        assert record.recorded() == [(mine.pid, groups.start_time(mine.pid))]
        # A malformed line, a group long gone, and pid 1 are skipped, not signalled.
        with open(record.path, "a") as fh:
            fh.write("garbage\n1 0\n999999999 5\n")
        later = groups.GroupRecord(tmp_path)
        assert later.recorded()[0][0] == mine.pid
        # It ignores SIGTERM: SIGKILL after the grace.
        assert groups.reap(later, grace=0.05) == [mine.pid]
        assert mine.wait(30) == -signal.SIGKILL
        assert later.recorded() == []
    finally:
        if mine.poll() is None:
            mine.kill()
            mine.wait(30)
        for pipe in (mine.stdin, mine.stdout):
            if pipe is not None:
                pipe.close()


def test_a_daemon_on_its_way_out_leaves_the_record_to_the_next_one(tmp_path: Path) -> None:
    # Once the stopping daemon has unlinked its socket a new one may have claimed the file:
    # the old one's last discards must not overwrite the new one's lines.
    old = groups.GroupRecord(tmp_path)
    old.add(os.getpid())
    old.freeze()
    (tmp_path / "groups").write_text("4242 7\n")  # the new daemon's record
    old.discard(os.getpid())
    old.add(os.getppid())
    assert (tmp_path / "groups").read_text() == "4242 7\n"
