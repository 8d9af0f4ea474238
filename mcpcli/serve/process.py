"""Run one command for a call: own process group, bounded output, and a stop path that always works.

* The child runs in a new session (so a new process group whose id is its pid),
  stdin is /dev/null unless the tool feeds it, and it never inherits the
  server's stdio or other descriptors.
* stdout and stderr are read concurrently (a child filling one pipe while we
  wait on the other would deadlock); each keeps its first `max_bytes` and the
  rest is drained and counted, so the child never blocks on a full pipe.
* Every way a run can end goes through the same stop sequence: SIGTERM to the
  whole group, `kill_grace` seconds, SIGKILL to the group, reap the leader, and
  wait at most one second for the pipes to close (a grandchild that escaped the
  group with `setsid` could hold them). When the leader exits on its own,
  whatever it left running in its group is stopped the same way: a call leaves
  nothing behind. Cancellation (client cancel, disconnect, shutdown) runs the
  sequence shielded, then lets the cancellation continue.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import anyio
from anyio.abc import ByteReceiveStream, Process

__all__ = ["RunResult", "SpawnError", "kill_all_groups", "live_groups", "run_process"]

#: Process groups of runs in progress (for an emergency stop of everything).
_LIVE: set[int] = set()
PIPE_GRACE = 1.0
READ_CHUNK = 65536


class SpawnError(Exception):
    """The process could not be started; the message says why, for the tool result."""


@dataclass
class RunResult:
    returncode: int | None  # exit status, or None when killed by a signal
    signal: int | None  # the signal that ended it, if any
    stdout: bytes
    stderr: bytes
    stdout_total: int
    stderr_total: int
    timed_out: bool = False
    overflowed: bool = False  # stopped because output passed the cap (on_overflow: kill)
    duration: float = 0.0
    stopped_by_us: bool = False

    @property
    def stdout_truncated(self) -> int:
        return self.stdout_total - len(self.stdout)

    @property
    def stderr_truncated(self) -> int:
        return self.stderr_total - len(self.stderr)


def live_groups() -> set[int]:
    return set(_LIVE)


def kill_all_groups() -> None:
    """SIGKILL every running call's process group (last resort at exit)."""
    for pgid in list(_LIVE):
        _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> bool:
    """Signal a process group; False when it no longer exists."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - a recycled id we do not own
        return False


def _group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is left in the group."""
    if not _signal_group(pgid, 0):
        return False
    if not os.path.isdir("/proc"):  # pragma: no cover - not Linux
        return True
    # Zombies count for kill(0) but are done; look for a live member.
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read().decode("utf-8", "replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        # fields: state ppid pgrp ...
        if len(fields) >= 3 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def _describe_spawn_error(exc: BaseException, argv: Sequence[str], cwd: str, env: Mapping[str, str]) -> str:
    program = argv[0] if argv else "?"
    if isinstance(exc, ValueError):
        return f"cannot start {program}: an argument or variable contains a NUL byte"
    if isinstance(exc, OSError):
        if exc.errno == errno.ENOENT:
            if not os.path.isdir(cwd):
                return f"cannot start {program}: the working directory {cwd} does not exist"
            if "/" in program:
                return f"cannot start {program}: no such file"
            return f"cannot start {program}: not found on PATH={env.get('PATH', '')}"
        if exc.errno == errno.EACCES:
            return f"cannot start {program}: permission denied (is it executable? chmod +x)"
        if exc.errno == errno.ENOEXEC:
            return f"cannot start {program}: not an executable format (a script without a #! line?)"
        if exc.errno == errno.E2BIG:
            return f"cannot start {program}: the arguments are too long (pass large values on stdin)"
        return f"cannot start {program}: {exc.strerror or exc}"
    return f"cannot start {program}: {exc}"


class _Sink:
    """Keeps the head of a stream, counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.chunks: list[bytes] = []
        self.kept = 0
        self.total = 0
        self.done = anyio.Event()

    def feed(self, data: bytes) -> bool:
        """Add data; True when the cap was just passed."""
        before = self.total
        self.total += len(data)
        room = self.cap - self.kept
        if room > 0:
            piece = data[:room]
            self.chunks.append(piece)
            self.kept += len(piece)
        return before <= self.cap < self.total

    def value(self) -> bytes:
        return b"".join(self.chunks)


async def _drain(stream: ByteReceiveStream | None, sink: _Sink, on_overflow: anyio.Event | None) -> None:
    try:
        if stream is None:
            return
        while True:
            try:
                data = await stream.receive(READ_CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            if sink.feed(data) and on_overflow is not None:
                on_overflow.set()
    finally:
        sink.done.set()


async def _feed_stdin(process: Process, data: bytes) -> None:
    stream = process.stdin
    if stream is None:
        return
    try:
        view = memoryview(data)
        for start in range(0, len(view), READ_CHUNK):
            await stream.send(bytes(view[start : start + READ_CHUNK]))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, BrokenPipeError, ConnectionResetError):
        pass  # the child did not read it all; its exit status tells the story
    finally:
        with contextlib.suppress(Exception):
            await stream.aclose()


async def _stop(process: Process, pgid: int, grace: float) -> None:
    """TERM the group, wait `grace`, KILL the group, reap the leader. Must run shielded."""
    if _signal_group(pgid, signal.SIGTERM):
        deadline = anyio.current_time() + grace
        with anyio.move_on_after(grace):
            await process.wait()
        # The leader may be gone while others in the group linger.
        while anyio.current_time() < deadline and _group_alive(pgid):
            await anyio.sleep(0.02)
        _signal_group(pgid, signal.SIGKILL)
    await process.wait()


async def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    stdin: bytes | None,
    timeout: float,
    kill_grace: float,
    max_bytes: int,
    kill_on_overflow: bool = False,
) -> RunResult:
    """Run `argv` to completion (or timeout); raise `SpawnError` if it cannot start."""
    started = time.monotonic()
    try:
        process = await anyio.open_process(
            list(argv),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=-1,
            stderr=-1,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        raise SpawnError(_describe_spawn_error(exc, argv, cwd, env)) from None
    pgid = process.pid
    _LIVE.add(pgid)
    out = _Sink(max_bytes)
    err = _Sink(max_bytes)
    overflow = anyio.Event() if kill_on_overflow else None
    timed_out = False
    overflowed = False
    stopped = False
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_drain, process.stdout, out, overflow)
            tg.start_soon(_drain, process.stderr, err, overflow)
            if stdin is not None:
                tg.start_soon(_feed_stdin, process, stdin)
            try:
                with anyio.move_on_after(timeout) as scope:
                    if overflow is not None:
                        async with anyio.create_task_group() as race:

                            async def leader() -> None:
                                await process.wait()
                                race.cancel_scope.cancel()

                            async def watch_overflow() -> None:
                                assert overflow is not None
                                await overflow.wait()
                                race.cancel_scope.cancel()

                            race.start_soon(leader)
                            race.start_soon(watch_overflow)
                        overflowed = overflow.is_set() and process.returncode is None
                    else:
                        await process.wait()
                timed_out = scope.cancelled_caught
                with anyio.CancelScope(shield=True):
                    if timed_out or overflowed:
                        stopped = True
                        await _stop(process, pgid, kill_grace)
                    else:
                        # The leader exited: stop anything it left in its group.
                        await _stop(process, pgid, min(kill_grace, 1.0))
                    with anyio.move_on_after(PIPE_GRACE):
                        await out.done.wait()
                        await err.done.wait()
                    tg.cancel_scope.cancel()
            except BaseException:
                # Cancelled from outside (client cancel, disconnect, shutdown).
                with anyio.CancelScope(shield=True):
                    await _stop(process, pgid, kill_grace)
                    tg.cancel_scope.cancel()
                raise
    finally:
        _LIVE.discard(pgid)
        with anyio.CancelScope(shield=True):
            for stream in (process.stdout, process.stderr, process.stdin):
                if stream is not None:
                    with contextlib.suppress(Exception):
                        await stream.aclose()
    code = process.returncode
    sig = -code if code is not None and code < 0 else None
    return RunResult(
        returncode=None if sig is not None else code,
        signal=sig,
        stdout=out.value(),
        stderr=err.value(),
        stdout_total=out.total,
        stderr_total=err.total,
        timed_out=timed_out,
        overflowed=overflowed,
        duration=time.monotonic() - started,
        stopped_by_us=stopped,
    )


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"
