"""A watchdog process that ends the tools' process groups when the server dies.

Every command runs in its own process group, and the server stops each group
when the call ends. That stop path needs a living server: after a SIGKILL or
an OOM kill, the groups (and the grandchildren in them) would run on past
their timeouts. So the server starts one small helper per `Runner`, this very
file run as a script with no site imports, and tells it over a pipe which
groups are running ("+ pgid grace" when one starts, "- pgid" once it is
stopped). When the pipe reaches end-of-file, the server is gone (or closed it
on shutdown): the helper sends SIGTERM to every group still registered,
SIGKILLs each one still alive after its grace (the tool's kill_grace), and
exits.

A pipe (rather than PR_SET_PDEATHSIG) works on any POSIX system, reaches the
whole group rather than only the direct child, and costs one small write per
start and per stop. Where the helper cannot start, calls run as before, just
without that guarantee.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterable

__all__ = ["Watchdog", "group_alive", "live_groups", "signal_group"]

#: The longest wait between SIGTERM and SIGKILL after the server died.
MAX_GRACE = 10.0
#: How long `close()` waits for the helper to finish stopping groups.
CLOSE_WAIT = 5.0
#: How long a write waits for a helper that is behind before it is replaced.
STALL_WAIT = 1.0


def signal_group(pgid: int, sig: int) -> bool:
    """Signal a process group; False when it no longer exists (or is not ours)."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a recycled id we do not own
        return False


#: The process file system; where it is absent (not Linux), `ps` is asked instead.
PROC = "/proc"


def _live_by_ps(present: set[int]) -> set[int]:
    """Those of `present` with a member `ps` shows not a zombie (where there is no /proc).
    If `ps` cannot answer, kill(0)'s answer stands (a zombie then waits for its grace)."""
    try:
        done = subprocess.run(["ps", "-A", "-o", "pgid=,stat="], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return present
    if done.returncode != 0:
        return present
    alive: set[int] = set()
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and int(parts[0]) in present and not parts[1].startswith("Z"):
            alive.add(int(parts[0]))
    return alive


def live_groups(pgids: set[int]) -> set[int]:
    """Those of `pgids` that still have a member that is not a zombie (one pass over /proc,
    or one `ps` where there is none)."""
    present = {pgid for pgid in pgids if signal_group(pgid, 0)}
    if not present:
        return present
    if not os.path.isdir(PROC):
        return _live_by_ps(present)
    # Zombies count for kill(0) but are done; look for live members.
    alive: set[int] = set()
    for entry in os.listdir(PROC):
        if not entry.isdigit():
            continue
        try:
            with open(f"{PROC}/{entry}/stat", "rb") as fh:
                stat = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        # fields: state ppid pgrp ...
        if len(fields) >= 3 and fields[0] not in ("Z", "X"):
            pgrp = int(fields[2])
            if pgrp in present:
                alive.add(pgrp)
    return alive


def group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is left in the group."""
    return bool(live_groups({pgid}))


class Watchdog:
    """The server's side of the watchdog: started on first use, told about each group.

    It remembers the groups it registered, so a helper that died or stopped
    reading (a write that fails or would block) is replaced by a new one that
    is told about all of them: the server never blocks on the helper, and no
    running group goes unwatched.
    """

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner = 0  # the pid that started the helper (a forked copy must not write to it)
        self._unavailable = os.name != "posix" or not sys.executable
        self._groups: dict[int, float] = {}

    def _pipe(self) -> int | None:
        """The write end of the helper's stdin, starting the helper if needed; None when it cannot run."""
        proc = self._proc
        if proc is not None and proc.stdin is not None and self._owner == os.getpid():
            return proc.stdin.fileno()
        if self._unavailable:
            return None
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", os.path.abspath(__file__)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,  # no terminal signals: it must outlive us
                bufsize=0,
            )
        except (OSError, ValueError):  # pragma: no cover - no interpreter to run it with
            self._unavailable = True
            return None
        assert proc.stdin is not None
        fd = proc.stdin.fileno()
        os.set_blocking(fd, False)
        self._proc = proc
        self._owner = os.getpid()
        if self._groups:
            replay = "".join(f"+ {pgid} {grace:g}\n" for pgid, grace in self._groups.items())
            if not self._write(fd, replay):
                return None
        return fd

    def _write(self, fd: int, text: str) -> bool:
        """Write it all, or give up on this helper (dead, or not reading for a while): False."""
        data = text.encode("ascii")
        try:
            while data:
                try:
                    data = data[os.write(fd, data):]
                except BlockingIOError:
                    # A burst got ahead of the helper: a short wait, not a new helper.
                    if not select.select([], [fd], [], STALL_WAIT)[1]:
                        raise
            return True
        except OSError:  # EPIPE (it died), or still a full pipe after STALL_WAIT
            self._abandon()
            return False

    def _send(self, line: str) -> None:
        for _attempt in range(2):  # the second with a new helper, told about every group
            fd = self._pipe()
            if fd is None or self._write(fd, line):
                return

    def start(self) -> None:
        """Have the helper running before a group starts, so registering it is one write."""
        self._pipe()

    def register(self, pgid: int, grace: float) -> None:
        """A group started: end it with the server."""
        self._groups[pgid] = grace
        self._send(f"+ {pgid} {grace:g}\n")

    def unregister(self, pgid: int) -> None:
        """A group was stopped (nothing left in it): forget it."""
        if self._groups.pop(pgid, None) is not None and self._proc is not None:
            self._send(f"- {pgid}\n")

    def _abandon(self) -> None:
        """Let go of a helper that cannot be told things any more, without it stopping the groups."""
        proc, self._proc = self._proc, None
        if proc is None or self._owner != os.getpid():
            return
        proc.kill()  # before its pipe closes: the groups are someone else's now
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait()

    def close(self) -> None:
        """Shut the helper down; it stops whatever is still registered first."""
        proc, self._proc = self._proc, None
        self._groups.clear()
        if proc is None or self._owner != os.getpid():
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(CLOSE_WAIT)
        except subprocess.TimeoutExpired:  # pragma: no cover - it is still stopping groups
            pass


def _serve(stream: Iterable[bytes]) -> dict[int, float]:
    """Follow the server's messages until end-of-file; return the groups still running."""
    groups: dict[int, float] = {}
    for raw in stream:
        parts = raw.split()
        try:
            if len(parts) == 3 and parts[0] == b"+":
                groups[int(parts[1])] = float(parts[2])
            elif len(parts) == 2 and parts[0] == b"-":
                groups.pop(int(parts[1]), None)
        except ValueError:
            continue
    return groups


def _end(groups: dict[int, float]) -> None:
    """TERM every group; KILL each one still alive once its own grace has passed."""
    now = time.monotonic()
    deadlines = {pgid: now + min(max(grace, 0.0), MAX_GRACE) for pgid, grace in groups.items()}
    for pgid in deadlines:
        signal_group(pgid, signal.SIGTERM)
    left = live_groups(set(deadlines))
    while left:
        now = time.monotonic()
        for pgid in [p for p in left if deadlines[p] <= now]:
            signal_group(pgid, signal.SIGKILL)
            left.discard(pgid)
        if left:
            time.sleep(0.02)
            left = live_groups(left)


def main() -> None:
    """The helper: run as a script by `Watchdog`, reading its stdin."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    groups = _serve(sys.stdin.buffer)
    if groups:
        _end(groups)


if __name__ == "__main__":
    main()
