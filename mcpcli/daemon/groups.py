"""The server process groups a daemon has started, recorded in `<rundir>/groups`.

A daemon that is stopped ends its sessions' process groups itself; one that is killed
(SIGKILL, the OOM killer) cannot, and a server that ignores EOF and SIGTERM, with its
children, would outlive it. So the daemon keeps one line per live group in its private
run directory, `PGID STARTTIME` (the leader's start time in clock ticks since boot,
field 22 of /proc/PID/stat), rewritten atomically as groups come and go, and the next
daemon ends what is left before it serves anything (`reap`).

A recorded group is signalled only if it is still ours: its leader, when alive, has
the recorded start time (a reused pid is someone else's) and every member runs under
our uid and started no earlier than the leader did. While any member of a group lives,
the kernel does not hand its id to a new process, so a group whose leader is gone is
still the one we started.

The process table comes from /proc where there is one (Linux: start times in clock
ticks since boot); elsewhere (macOS, the BSDs) from `ps -A -o pid=,pgid=,uid=,stat=,lstart=`
(start times in seconds since the epoch, so a pid reused within the same second would
pass for ours). Either way `os.killpg(pgid, 0)` first says whether the group exists at
all. Where neither /proc nor `ps` answers, nothing is recorded. Only the /proc path runs
on this project's test machines; the `ps` path is tested on canned output.
Stdlib only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GroupRecord", "Proc", "members", "process_table", "reap", "start_time"]

#: After SIGTERM, how long a recorded group gets to exit before SIGKILL.
TERM_GRACE = 0.2
#: The process file system; where it is absent (not Linux), `ps` is asked instead.
PROC = "/proc"
#: The `ps` columns read where there is no /proc (POSIX names; lstart is BSD and procps).
PS_ARGV = ("ps", "-A", "-o", "pid=,pgid=,uid=,stat=,lstart=")
#: How long `ps` may take.
PS_TIMEOUT = 10.0


@dataclass(frozen=True)
class Proc:
    """One process as the reaper needs it."""

    pid: int
    pgid: int
    uid: int
    zombie: bool
    #: Clock ticks since boot (/proc) or seconds since the epoch (`ps`).
    started: int


def _has_proc() -> bool:
    return os.path.isdir(f"{PROC}/self")


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (field 3 onwards)."""
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return data.rsplit(b")", 1)[-1].decode("ascii", "replace").split()


def _proc_table() -> list[Proc]:
    found = []
    try:
        entries = os.listdir(PROC)
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if fields is None or len(fields) < 20:
            continue
        try:
            uid = os.stat(f"{PROC}/{entry}").st_uid
        except OSError:
            continue
        found.append(Proc(int(entry), int(fields[2]), uid, fields[0] in ("Z", "X"), int(fields[19])))
    return found


def _run_ps(argv: list[str]) -> str | None:
    """`ps`'s output in the C locale (month and day names as `parse_ps` reads them)."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=PS_TIMEOUT, env={**os.environ, "LC_ALL": "C"}, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode in (0, 1) else None  # 1: `-p PID` matched nothing


def parse_ps(text: str) -> list[Proc]:
    """`ps -o pid=,pgid=,uid=,stat=,lstart=` lines (lstart: `Tue Nov 24 01:50:01 2026`)."""
    found = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 9 or not all(p.isdigit() for p in parts[:3]):
            continue
        try:
            started = int(time.mktime(time.strptime(" ".join(parts[4:]), "%a %b %d %H:%M:%S %Y")))
        except (ValueError, OverflowError):
            continue
        found.append(Proc(int(parts[0]), int(parts[1]), int(parts[2]), parts[3].startswith("Z"), started))
    return found


def process_table() -> list[Proc]:
    """Every process we can see: from /proc, else from `ps` (empty when neither answers)."""
    if _has_proc():
        return _proc_table()
    text = _run_ps(list(PS_ARGV))
    return parse_ps(text) if text is not None else []


def start_time(pid: int) -> int | None:
    """The process's start time (see `Proc.started`), or None when it is gone."""
    if _has_proc():
        fields = _stat_fields(pid)
        if fields is None or len(fields) < 20:
            return None
        return int(fields[19])  # field 22 overall
    text = _run_ps([*PS_ARGV[:1], "-p", str(pid), *PS_ARGV[2:]])
    found = [p for p in parse_ps(text or "") if p.pid == pid]
    return found[0].started if found else None


def _exists(pgid: int) -> bool:
    """Whether group `pgid` has any process at all (zombies count): `killpg(pgid, 0)`."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, but not as ours; the table says whose
        return True
    return True


def members(pgid: int) -> list[tuple[int, int]]:
    """(pid, start time) of the live (not zombie) processes of group `pgid` run by us."""
    if not _exists(pgid):
        return []
    uid = os.getuid()
    return [(p.pid, p.started) for p in process_table() if p.pgid == pgid and p.uid == uid and not p.zombie]


def _ours(pgid: int, started: int) -> bool:
    """Whether the group recorded as (pgid, started) is still the one we started."""
    alive = members(pgid)
    if not alive:
        return False
    leader = start_time(pgid)
    if leader is not None:
        # The pid is taken (by a live leader or an unreaped zombie): it must be ours.
        return leader == started
    return all(when >= started for _, when in alive)


class GroupRecord:
    """The daemon's record of its servers' process groups (`<rundir>/groups`)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / "groups"
        self.groups: dict[int, int] = {}
        self.frozen = False

    def freeze(self) -> None:
        """Write no more: this daemon is on its way out and has given up its socket, so a
        new daemon may already own the file (and must not lose its lines to ours). What the
        file lists stays, so groups this one is still ending are reaped if it is killed now."""
        self.frozen = True

    def add(self, pgid: int) -> None:
        """Remember a group whose leader `pgid` was just started (by us, in a new session)."""
        started = start_time(pgid)
        if started is None:
            return  # already gone, or no /proc: nothing a later daemon could check
        self.groups[pgid] = started
        self._write()

    def discard(self, pgid: int) -> None:
        """Forget a group we have ended."""
        if self.groups.pop(pgid, None) is not None:
            self._write()

    def _write(self) -> None:
        if self.frozen:
            return
        # Best effort: a record that cannot be written (a full disk) must not fail a session.
        text = "".join(f"{pgid} {started}\n" for pgid, started in self.groups.items())
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except OSError:
            pass

    def recorded(self) -> list[tuple[int, int]]:
        """What the file says (a previous daemon's groups); malformed lines are skipped."""
        try:
            text = self.path.read_text(encoding="ascii", errors="replace")
        except OSError:
            return []
        found = []
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit() and int(parts[0]) > 1:
                found.append((int(parts[0]), int(parts[1])))
        return found


def reap(
    record: GroupRecord,
    *,
    grace: float = TERM_GRACE,
    sleep: Callable[[float], object] = time.sleep,
) -> list[int]:
    """End the groups a previous daemon left behind (TERM, a short grace, KILL) and clear
    the file; returns the groups signalled. Call only once this daemon owns the socket."""
    ended = []
    for pgid, started in record.recorded():
        if not _ours(pgid, started):
            continue
        try:
            os.killpg(pgid, signal.SIGTERM)
        except OSError:
            continue
        ended.append(pgid)
    deadline = time.monotonic() + grace
    delay = 0.005
    while ended and any(members(pgid) for pgid in ended) and time.monotonic() < deadline:
        sleep(delay)
        delay = min(delay * 2, 0.05)
    for pgid in ended:
        if members(pgid):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass
    record.groups.clear()
    record._write()
    return ended
