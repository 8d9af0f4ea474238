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
  sequence shielded, then lets the cancellation continue. A cancellation no
  shield holds off (a foreign `Task.cancel()`: a web server's shutdown timeout,
  the event loop closing) cuts the grace short: the group is killed at once.
* With a `watchdog.Watchdog` (the `Runner` passes its own), each group is
  registered while it runs, so a helper process ends it if the server itself
  is killed (SIGKILL, OOM) and never gets to run the stop sequence.
"""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

import anyio

from mcpcli.toolsfile.watchdog import Watchdog
from mcpcli.toolsfile.watchdog import group_alive as _group_alive
from mcpcli.toolsfile.watchdog import signal_group as _signal_group

__all__ = ["RunResult", "SpawnError", "Starts", "run_process", "signal_name"]

T = TypeVar("T")

PIPE_GRACE = 1.0
READ_CHUNK = 65536
#: How long one turn of the event loop may spend starting processes (see `Starts`).
TURN_BUDGET = 0.01


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


def _describe_spawn_error(exc: BaseException, argv: Sequence[str], cwd: str, env: Mapping[str, str]) -> str:
    program = argv[0] if argv else "?"
    if isinstance(exc, UnicodeEncodeError):  # a lone surrogate has no bytes to pass to exec
        return f"cannot start {program}: an argument or variable is not valid Unicode"
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


class _Child:
    """A spawned process, its pidfd (Linux 5.3+), and our ends of its pipes."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.pidfd: int | None = None
        if hasattr(os, "pidfd_open"):
            try:
                self.pidfd = os.pidfd_open(self.pid)
            except OSError:  # pragma: no cover - kernel < 5.3 or seccomp
                self.pidfd = None

    @property
    def returncode(self) -> int | None:
        return self.popen.returncode

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


class _Watch:
    """Reads the pipes, feeds stdin and notices the exit from event-loop callbacks.

    No task per stream: each readable pipe is drained in a callback, and futures
    report "the leader exited", "both pipes closed" and "output passed the cap".
    """

    def __init__(self, child: _Child, out_fd: int, err_fd: int, in_fd: int | None, stdin: bytes | None,
                 out: _Sink, err: _Sink, *, watch_overflow: bool) -> None:
        self.loop = asyncio.get_running_loop()
        self.child = child
        self.sinks = {out_fd: out, err_fd: err}
        self.open: set[int] = {out_fd, err_fd}
        self.exited: asyncio.Future[None] = self.loop.create_future()
        self.closed: asyncio.Future[None] = self.loop.create_future()
        self.overflow: asyncio.Future[None] | None = self.loop.create_future() if watch_overflow else None
        self.in_fd = in_fd
        self.pending = memoryview(stdin) if stdin is not None else None
        self._poller: asyncio.Task[None] | None = None
        #: The stop sequence ran to its end (the group is gone and the leader reaped).
        self.stopped = False
        for fd in self.open:
            self.loop.add_reader(fd, self._readable, fd)
        if in_fd is not None:
            self.loop.add_writer(in_fd, self._writable)
        if child.pidfd is not None:
            self.loop.add_reader(child.pidfd, self._check_exit)
        else:  # pragma: no cover - no pidfd: poll gently
            self._poller = self.loop.create_task(self._poll_exit())
        self._check_exit()

    def _readable(self, fd: int) -> None:
        sink = self.sinks[fd]
        while True:
            try:
                data = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.loop.remove_reader(fd)
                self.open.discard(fd)
                if not self.open and not self.closed.done():
                    self.closed.set_result(None)
                return
            if sink.feed(data) and self.overflow is not None and not self.overflow.done():
                self.overflow.set_result(None)
            if len(data) < READ_CHUNK:
                return

    def _writable(self) -> None:
        fd = self.in_fd
        if fd is None or self.pending is None:
            return
        try:
            while self.pending:
                written = os.write(fd, self.pending[:READ_CHUNK])
                self.pending = self.pending[written:]
        except BlockingIOError:
            return
        except OSError:
            pass  # the child did not read it all; its exit status tells the story
        self._close_stdin()

    def _close_stdin(self) -> None:
        if self.in_fd is not None:
            self.loop.remove_writer(self.in_fd)
            os.close(self.in_fd)
            self.in_fd = None
            self.pending = None

    def _check_exit(self) -> None:
        if self.child.popen.poll() is not None and not self.exited.done():
            if self.child.pidfd is not None:
                self.loop.remove_reader(self.child.pidfd)
            self.exited.set_result(None)

    async def _poll_exit(self) -> None:  # pragma: no cover - no pidfd
        while not self.exited.done():
            await asyncio.sleep(0.01)
            self._check_exit()

    async def wait_exit(self) -> None:
        if not self.exited.done():
            await asyncio.wait([self.exited])

    def close(self) -> None:
        for fd in list(self.open):
            self.loop.remove_reader(fd)
        self.open.clear()
        if self.child.pidfd is not None and not self.exited.done():
            self.loop.remove_reader(self.child.pidfd)
        self._close_stdin()
        if self._poller is not None:
            self._poller.cancel()


async def _stop(watch: _Watch, pgid: int, grace: float) -> None:
    """TERM the group, wait `grace`, KILL the group, reap the leader. Must run shielded."""
    if _signal_group(pgid, signal.SIGTERM):
        deadline = anyio.current_time() + grace
        with anyio.move_on_after(grace):
            await watch.wait_exit()
        # The leader may be gone while others in the group linger.
        while anyio.current_time() < deadline and _group_alive(pgid):
            await anyio.sleep(0.02)
        _signal_group(pgid, signal.SIGKILL)
    await watch.wait_exit()
    watch.stopped = True


def _kill_now(child: _Child, pgid: int) -> None:
    """The stop sequence was cut short: KILL the group and reap the leader, without waiting
    on the event loop (a cancellation anyio's shield cannot hold off, such as a foreign
    `Task.cancel()` from uvicorn's shutdown timeout or from the event loop closing, ends
    every await)."""
    _signal_group(pgid, signal.SIGKILL)
    try:
        child.popen.wait(PIPE_GRACE)
    except subprocess.TimeoutExpired:  # pragma: no cover - stuck in the kernel; nothing more to do
        pass


def _spawn(argv: Sequence[str], env: Mapping[str, str], cwd: str, with_stdin: bool) -> tuple[_Child, int, int, int | None]:
    """Start the child in its own session; returns it and our ends of its pipes (non-blocking)."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r = in_w = None
    if with_stdin:
        in_r, in_w = os.pipe()
    try:
        popen = subprocess.Popen(
            list(argv),
            stdin=in_r if in_r is not None else subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        for fd in (out_r, err_r, in_w):
            if fd is not None:
                os.close(fd)
        raise
    finally:
        for fd in (out_w, err_w, in_r):
            if fd is not None:
                os.close(fd)
    for fd in (out_r, err_r, in_w):
        if fd is not None:
            os.set_blocking(fd, False)
    return _Child(popen), out_r, err_r, in_w


class Starts:
    """Process starts in turns: a turn of the event loop spends at most `TURN_BUDGET` on them.

    Starting a process blocks the event loop until the child has exec'd (a few
    milliseconds, more on a busy machine). Many calls released at once (a burst of
    requests, a queue moving on) would otherwise start all their processes in one
    turn of the loop, and nothing else (a `ping`, another client's request) would be
    read until the last had started. Once a turn has spent its budget, the next start
    waits for the loop's next turn, which looks at its I/O first. Starts that fit in
    the budget (the usual case) wait for nothing.
    """

    def __init__(self) -> None:
        self._spent = 0.0  # seconds spent starting processes in this turn of the loop
        self._counting = False  # a callback at the next turn resets `_spent`
        self._free: anyio.Event | None = None

    async def take(self, start: Callable[[], T]) -> T:
        """`start()` in its turn; what it returns is handed back at once (nothing can
        cancel this between the start and its caller)."""
        while self._counting and self._spent >= TURN_BUDGET:
            if self._free is None:
                self._free = anyio.Event()
            await self._free.wait()
        if not self._counting:
            self._counting = True
            asyncio.get_running_loop().call_soon(self._next_turn)
        began = time.perf_counter()
        try:
            return start()
        finally:
            self._spent += time.perf_counter() - began

    def _next_turn(self) -> None:
        self._spent = 0.0
        self._counting = False
        if self._free is not None:
            self._free.set()
            self._free = None


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
    watchdog: Watchdog | None = None,
    starts: Starts | None = None,
) -> RunResult:
    """Run `argv` to completion (or timeout); raise `SpawnError` if it cannot start.

    With a `watchdog`, the group is registered while it runs, so it dies with
    the server even if the server is killed outright. With `starts`, the process
    is started in its turn (see `Starts`).
    """
    started = time.monotonic()
    if watchdog is not None:
        watchdog.start()
    try:
        spawn = partial(_spawn, argv, env, cwd, stdin is not None)
        child, out_fd, err_fd, in_fd = await (starts or Starts()).take(spawn)
    except (OSError, ValueError) as exc:
        raise SpawnError(_describe_spawn_error(exc, argv, cwd, env)) from None
    if watchdog is not None:
        watchdog.register(child.pid, kill_grace)
    out = _Sink(max_bytes)
    err = _Sink(max_bytes)
    try:
        watch = _start_watch(child, out_fd, err_fd, in_fd, stdin, out, err, watch_overflow=kill_on_overflow)
        try:
            ending = await _wait_and_stop(watch, child.pid, timeout, kill_grace)
        finally:
            if not watch.stopped:  # never let go of (and unregister) a group that may live on
                _kill_now(child, child.pid)
            watch.close()
            for fd in (out_fd, err_fd):
                os.close(fd)
            child.close()
    finally:
        if watchdog is not None:
            watchdog.unregister(child.pid)
    code = child.returncode
    sig = -code if code is not None and code < 0 else None
    return RunResult(
        returncode=None if sig is not None else code,
        signal=sig,
        stdout=out.value(),
        stderr=err.value(),
        stdout_total=out.total,
        stderr_total=err.total,
        timed_out=ending.timed_out,
        overflowed=ending.overflowed,
        duration=time.monotonic() - started,
        stopped_by_us=ending.stopped,
    )


def _start_watch(child: _Child, out_fd: int, err_fd: int, in_fd: int | None, stdin: bytes | None,
                 out: _Sink, err: _Sink, *, watch_overflow: bool) -> _Watch:
    """Watch a started child; if that fails, kill it and release everything before raising."""
    try:
        return _Watch(child, out_fd, err_fd, in_fd, stdin, out, err, watch_overflow=watch_overflow)
    except BaseException:  # pragma: no cover - no event loop to watch with: do not leave it running
        _signal_group(child.pid, signal.SIGKILL)
        child.popen.wait()
        for fd in (out_fd, err_fd, in_fd):
            if fd is not None:
                os.close(fd)
        child.close()
        raise


@dataclass
class _Ending:
    """How a run ended, from our side."""

    timed_out: bool = False
    overflowed: bool = False  # output passed the cap and the run was stopped for it
    stopped: bool = False  # we stopped it (timeout or overflow), rather than it exiting


async def _wait_and_stop(watch: _Watch, pgid: int, timeout: float, kill_grace: float) -> _Ending:
    """Wait for the leader to exit (or the timeout, or an overflow), then stop the whole group.

    A cancellation from outside (client cancel, disconnect, shutdown) also stops
    the group, shielded, before it goes on.
    """
    ending = _Ending()
    try:
        with anyio.move_on_after(timeout) as scope:
            if watch.overflow is not None:
                await asyncio.wait([watch.exited, watch.overflow], return_when=asyncio.FIRST_COMPLETED)
                ending.overflowed = watch.overflow.done() and not watch.exited.done()
            else:
                await watch.wait_exit()
        ending.timed_out = scope.cancelled_caught
        with anyio.CancelScope(shield=True):
            if ending.timed_out or ending.overflowed:
                ending.stopped = True
                await _stop(watch, pgid, kill_grace)
            else:
                # The leader exited: stop anything it left in its group.
                await _stop(watch, pgid, min(kill_grace, 1.0))
            if not watch.closed.done():
                with anyio.move_on_after(PIPE_GRACE):
                    await asyncio.wait([watch.closed])
    except BaseException:
        # Cancelled from outside (client cancel, disconnect, shutdown).
        with anyio.CancelScope(shield=True):
            await _stop(watch, pgid, kill_grace)
        raise
    return ending


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"
