"""The reaper's decisions where there is no /proc (macOS, the BSDs): the process table from
`ps`, liveness from `killpg(pgid, 0)`. The platform is injected (`PROC` pointed at a
directory that does not exist, canned `ps` output); this machine is Linux, so the real
`ps` it runs is procps, not macOS's or FreeBSD's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import wait_until

from mcpcli.daemon import groups
from mcpcli.toolsfile import watchdog

UID = os.getuid()


def lstart(epoch: int) -> str:
    return time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(epoch))


@pytest.fixture
def no_proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(groups, "PROC", str(tmp_path / "no-proc"))
    monkeypatch.setattr(watchdog, "PROC", str(tmp_path / "no-proc"))


class Table:
    """Canned `ps` output and the signals `killpg` got (groups with no line do not exist)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.lines: list[tuple[int, int, int, str, int]] = []
        self.signals: list[tuple[int, int]] = []
        self.asked: list[list[str]] = []
        monkeypatch.setattr(groups, "_run_ps", self.run_ps)
        monkeypatch.setattr(groups.os, "killpg", self.killpg)

    def add(self, pid: int, pgid: int, started: int, *, uid: int = UID, stat: str = "S") -> None:
        self.lines.append((pid, pgid, uid, stat, started))

    def run_ps(self, argv: list[str]) -> str:
        self.asked.append(argv)
        rows = self.lines
        if "-p" in argv:
            rows = [row for row in rows if row[0] == int(argv[argv.index("-p") + 1])]
        return "".join(f"{pid:>6} {pgid:>6} {uid:>5} {stat:<4} {lstart(t)}\n" for pid, pgid, uid, stat, t in rows)

    def killpg(self, pgid: int, sig: int) -> None:
        self.signals.append((pgid, sig))
        if not any(row[1] == pgid for row in self.lines):
            raise ProcessLookupError(pgid)
        if sig == signal.SIGKILL:
            self.lines = [row for row in self.lines if row[1] != pgid]


@pytest.fixture
def table(no_proc: None, monkeypatch: pytest.MonkeyPatch) -> Table:
    return Table(monkeypatch)


def test_parse_ps_reads_macos_and_procps_lines_and_skips_the_rest() -> None:
    text = (f"  501   501   501 Ss   {lstart(1_700_000_000)}\n"
            f"  502   501     0 Z+   Tue Nov  4 09:05:01 2025\n"
            "garbage line\n"
            "  503   501   501 S    not a date at all here\n")
    procs = groups.parse_ps(text)
    assert [(p.pid, p.pgid, p.uid, p.zombie) for p in procs] == [(501, 501, 501, False), (502, 501, 0, True)]
    assert procs[0].started == 1_700_000_000


def test_start_time_and_members_come_from_ps_without_proc(table: Table) -> None:
    table.add(700, 700, 1000)
    table.add(701, 700, 1005)
    table.add(702, 700, 1006, stat="Z")  # a zombie is done
    table.add(703, 700, 1007, uid=UID + 1)  # not ours
    table.add(800, 800, 2000)
    assert groups.start_time(701) == 1005
    assert table.asked[-1][1:3] == ["-p", "701"]
    assert groups.start_time(999) is None
    assert groups.members(700) == [(700, 1000), (701, 1005)]
    asked = len(table.asked)
    assert groups.members(900) == []  # killpg(900, 0): no such group, ps not even asked
    assert (900, 0) in table.signals and len(table.asked) == asked


@pytest.mark.parametrize(
    ("rows", "recorded", "ours"),
    [
        ([(700, 700, 1000)], 1000, True),  # the leader, started when recorded
        ([(700, 700, 1000)], 999, False),  # pid 700 reused since: someone else's
        ([(701, 700, 1005)], 1000, True),  # leader gone, a member started after it
        ([(701, 700, 990)], 1000, False),  # a member older than our leader: not our group
        ([], 1000, False),  # nothing left
    ],
)
def test_a_group_is_ours_only_while_its_start_times_say_so(
    table: Table, rows: list[tuple[int, int, int]], recorded: int, ours: bool
) -> None:
    for pid, pgid, started in rows:
        table.add(pid, pgid, started)
    assert groups._ours(700, recorded) is ours


def test_reap_without_proc_terms_then_kills_what_is_ours(table: Table, tmp_path: Path) -> None:
    table.add(700, 700, 1000)  # ours, ignores SIGTERM (canned table: it stays)
    table.add(800, 800, 2000)  # pid reused: recorded with another start time
    record = groups.GroupRecord(tmp_path)
    record.path.write_text("700 1000\n800 1999\n")
    slept: list[float] = []
    assert groups.reap(record, grace=0.01, sleep=slept.append) == [700]
    assert (700, signal.SIGTERM) in table.signals and (700, signal.SIGKILL) in table.signals
    assert not [s for s in table.signals if s[0] == 800 and s[1] != 0]
    assert record.recorded() == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="checks ps against /proc")
def test_the_real_ps_agrees_with_proc_on_this_machine(no_proc: None) -> None:
    # procps here: the same columns as macOS's and FreeBSD's ps (start times to the second).
    mine = groups.members(os.getpgrp())
    assert os.getpid() in [pid for pid, _ in mine]
    started = groups.start_time(os.getpid())
    assert started is not None and dict(mine)[os.getpid()] == started
    assert abs(started - time.time()) < 24 * 3600 * 365


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sees the zombie in /proc")
def test_the_watchdogs_live_groups_skip_zombies_without_proc(no_proc: None) -> None:
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE, start_new_session=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    try:
        # Not reaped yet: a zombie, which kill(0) still finds.
        def zombie() -> bool:
            with open(f"/proc/{dead.pid}/stat") as fh:
                return fh.read().rsplit(")", 1)[-1].split()[0] == "Z"

        wait_until(zombie, what="the child to exit")
        assert watchdog.signal_group(dead.pid, 0)
        assert watchdog.live_groups({live.pid, dead.pid}) == {live.pid}
        assert watchdog.group_alive(live.pid) and not watchdog.group_alive(dead.pid)
    finally:
        assert live.stdin is not None
        live.stdin.close()
        live.wait(30)
        dead.wait(30)
