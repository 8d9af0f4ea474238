"""The memory of stdio servers slow to exit on EOF (`cache.ExitRecords`, `spawn.eof_grace`):
a command line seen not to exit within the grace after its stdin closed gets SIGTERM right
after EOF next time, on the one-shot path (`StdioServer.stop`) and the full path
(`StdioTransport.shutdown`) alike; one seen to exit in time is forgotten.

What the shutdowns did is asserted by the order of events (the memory consulted, a wait,
what was remembered, the signals sent) and by what the server saw, never by durations."""

from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import fake_server, wait_until, wait_until_async

from mcpcli import cache
from mcpcli.cli._oneshot_pipes import Stderr, StdioServer
from mcpcli.config import cache_dir
from mcpcli.transports import spawn, stdio
from mcpcli.transports.spawn import launch

LINE = ["server", "--flag"]


def _exit_file(command_line: list[str]) -> Path:
    return cache._path(cache._stdio_key(command_line), "exit")


# -- the memory ----------------------------------------------------------------------------


def test_a_slow_exit_is_remembered_under_the_era_memory_s_key(isolated_env: Path) -> None:
    memory = cache.ExitRecords(LINE)
    assert not memory.slow_to_exit()
    memory.remember_exit(slow=True)
    path = _exit_file(LINE)
    assert path.parent == cache_dir() / "lists"
    assert str(path).startswith(str(isolated_env))  # the test's cache dir, never the user's
    record = json.loads(path.read_text())
    assert record["target"] == "stdio:" + json.dumps(LINE)  # what EraRecords keys the era by
    assert record["result"] == {"slowExit": True}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert cache.ExitRecords(LINE).slow_to_exit()
    assert not cache.ExitRecords([*LINE, "other"]).slow_to_exit()


def test_the_memory_does_not_follow_the_cache_dir_s_variable_for_peers(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """MCPCLI_CACHE (where the test peers live) is no place for it: the user's cache dir is."""
    monkeypatch.setenv("MCPCLI_CACHE", str(tmp_path / "peers"))
    cache.ExitRecords(LINE).remember_exit(slow=True)
    assert not (tmp_path / "peers").exists()
    assert _exit_file(LINE).is_file()


def test_a_symlink_in_the_memory_s_place_is_replaced_not_followed(isolated_env: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    path = _exit_file(LINE)
    path.parent.mkdir(parents=True)
    path.symlink_to(victim)
    cache.ExitRecords(LINE).remember_exit(slow=True)
    assert victim.read_text() == "precious"
    assert not path.is_symlink()
    assert json.loads(path.read_text())["result"] == {"slowExit": True}


def test_a_stale_memory_is_not_trusted_and_an_exit_in_time_forgets_it(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.ExitRecords(LINE).remember_exit(slow=True)
    monkeypatch.setattr(cache, "EXIT_MEMORY_TTL", 0.0)
    memory = cache.ExitRecords(LINE)
    assert not memory.slow_to_exit()  # one slow exit on a loaded box does not stick
    assert _exit_file(LINE).exists()
    memory.remember_exit(slow=False)
    assert not _exit_file(LINE).exists()


def test_a_broken_memory_file_is_not_trusted(isolated_env: Path) -> None:
    path = _exit_file(LINE)
    path.parent.mkdir(parents=True)
    path.write_text('{"target": "stdio:[\\"server\\", \\"--flag\\"]", "result": {"slowExit": "yes"}}')
    assert not cache.ExitRecords(LINE).slow_to_exit()
    path.write_text("not json")
    assert not cache.ExitRecords(LINE).slow_to_exit()


# -- the shutdowns -------------------------------------------------------------------------


class Log:
    """What a shutdown did, in order: the memory asked and told, waits, signals."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[Any] = []
        real_killpg = os.killpg

        def killpg(pgid: int, sig: int) -> None:
            if sig:
                self.events.append(signal.Signals(sig).name)
            real_killpg(pgid, sig)

        monkeypatch.setattr(os, "killpg", killpg)

    def memory(self, command_line: list[str]) -> Any:
        log = self.events
        inner = cache.ExitRecords(command_line)

        class Spy:
            def slow_to_exit(self) -> bool:
                slow = inner.slow_to_exit()
                log.append(("slow?", slow))
                return slow

            def remember_exit(self, slow: bool) -> None:
                log.append(("remember", slow))
                inner.remember_exit(slow)

        return Spy()

    def before_first_signal(self) -> list[Any]:
        signals = [i for i, e in enumerate(self.events) if isinstance(e, str) and e.startswith("SIG")]
        return self.events[: signals[0]] if signals else self.events


def _events(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def _started(starts: Path) -> bool:
    """The fake has started (its SIGTERM handler is in place): it wrote its pid."""
    return starts.exists() and starts.read_text().endswith("\n")


def _stop_one_shot(argv: list[str], starts: Path, log: Log, monkeypatch: pytest.MonkeyPatch) -> int:
    """Start the server and, once it runs, stop it as the one-shot path does, logging its waits."""
    process = spawn.spawn(argv[0], argv[1:], launch(argv[0]).env, None)
    wait_until(lambda: _started(starts), what="the server to start")
    server = StdioServer(process, Stderr(), True, log.memory(argv))
    real_wait = server.wait_exit

    def wait_exit(timeout: float | None) -> bool:
        if timeout:
            log.events.append("wait")
        return real_wait(timeout)

    monkeypatch.setattr(server, "wait_exit", wait_exit)
    server.stop()
    assert process.returncode is not None
    return process.returncode


def _stop_full_path(argv: list[str], starts: Path, log: Log, monkeypatch: pytest.MonkeyPatch) -> int:
    """Connect a `StdioTransport` and, once the server runs, close it, logging its waits."""
    real_wait = stdio._wait_exit

    async def wait_exit(process: spawn.Process) -> int:
        log.events.append("wait")
        return await real_wait(process)

    monkeypatch.setattr(stdio, "_wait_exit", wait_exit)
    transport = stdio.StdioTransport(launch(argv[0], argv[1:]), quiet=True)
    transport.use_exit_memory(log.memory(argv))

    async def run() -> None:
        async with transport.connect():
            await wait_until_async(lambda: _started(starts), what="the server to start")

    anyio.run(run)
    assert transport.process is not None
    assert transport.process.returncode is not None
    return transport.process.returncode


STOPS = {"one-shot path": _stop_one_shot, "full path": _stop_full_path}


def _server(tmp_path: Path, *flags: str) -> tuple[Path, Path, list[str]]:
    """A fake server writing its events and its starts to files in `tmp_path`: (events, starts, argv)."""
    events, starts = tmp_path / "events", tmp_path / "starts"
    return events, starts, fake_server(*flags, "--events", str(events), "--starts", str(starts))


@pytest.mark.slow
@pytest.mark.parametrize("path", list(STOPS))
def test_a_server_slow_to_exit_gets_sigterm_right_after_eof_once_remembered(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events, starts, argv = _server(tmp_path, "--linger")
    stop = STOPS[path]
    # However busy the machine, the server's SIGTERM handler runs (writes `term`, exits)
    # before any SIGKILL: the wait after SIGTERM ends as soon as it exits.
    monkeypatch.setattr(spawn, "TERM_GRACE", 60.0)
    monkeypatch.setattr(stdio, "TERM_GRACE", 60.0)

    first = Log(monkeypatch)
    stop(argv, starts, first, monkeypatch)
    # Not remembered: the grace is waited, the server stays, it is remembered, then TERM.
    assert first.before_first_signal() == [("slow?", False), "wait", ("remember", True)]
    assert "SIGTERM" in first.events
    assert _events(events)[-1] == "term"
    assert json.loads(_exit_file(argv).read_text())["result"] == {"slowExit": True}

    events.unlink()
    starts.unlink()
    second = Log(monkeypatch)
    stop(argv, starts, second, monkeypatch)
    # Remembered: stdin closed, then TERM with no wait first, and nothing to write.
    assert second.before_first_signal() == [("slow?", True)]
    assert second.events[1] == "SIGTERM"
    assert ("remember", True) not in second.events
    assert _events(events)[-1] == "term"
    assert _exit_file(argv).exists()


@pytest.mark.slow
@pytest.mark.parametrize("path", list(STOPS))
def test_a_server_that_exits_on_eof_is_never_signalled_and_clears_the_memory(
    path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events, starts, argv = _server(tmp_path)
    stop = STOPS[path]
    # However busy the machine, it exits within the grace (the wait ends when it does).
    monkeypatch.setattr(spawn, "EOF_GRACE", 60.0)

    log = Log(monkeypatch)
    assert stop(argv, starts, log, monkeypatch) == 0
    assert log.events == [("slow?", False), "wait", ("remember", False)]
    assert _events(events) == ["eof"]
    assert not _exit_file(argv).exists()

    # Remembered once (a loaded box), and the memory has gone stale: waited for, and forgotten.
    cache.ExitRecords(argv).remember_exit(slow=True)
    monkeypatch.setattr(cache, "EXIT_MEMORY_TTL", 0.0)
    events.unlink()
    starts.unlink()
    log = Log(monkeypatch)
    assert stop(argv, starts, log, monkeypatch) == 0
    assert log.events == [("slow?", False), "wait", ("remember", False)]
    assert _events(events) == ["eof"]
    assert not _exit_file(argv).exists()
