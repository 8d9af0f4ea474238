"""Helpers for the command side's tests: the fake daemon, its run directory, stopping it.

Every test gets its own run directory (MCPCLI_RUNTIME_DIR, under tmp_path) and starts
`fake_daemon.py` instead of `python -m mcpcli.daemon` (MCPCLI_DAEMON_ARGV); whatever
daemon a test started is stopped (SIGTERM: it ends its servers' groups) and reaped.
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

FAKE_DAEMON = Path(__file__).resolve().parent / "fake_daemon.py"


@dataclass
class Run:
    """The run directory of a test's daemon, and what the fake daemon recorded there."""

    dir: Path

    @property
    def socket(self) -> Path:
        return self.dir / "daemon.sock"

    def starts(self) -> list[int]:
        """The pid of every daemon started in this run directory."""
        path = self.dir / "starts"
        return [int(line) for line in path.read_text().split()] if path.exists() else []

    def requests(self) -> list[dict[str, object]]:
        """Every first line the fake daemon received."""
        path = self.dir / "requests.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _gone(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not ours to reap (or already reaped): is it still there?
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return done == pid


def daemon_pid(path: Path) -> int | None:
    """The pid of the process listening on the socket at `path` (SO_PEERCRED), if one is."""
    import socket
    import struct

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with sock:
        try:
            sock.connect(str(path))
        except OSError:
            return None
        pid, _uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        return int(pid)


def stop(pid: int) -> None:
    """SIGTERM a daemon and wait (bounded) for it; SIGKILL if it will not go."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 10
    while not _gone(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
        time.sleep(0.01)
