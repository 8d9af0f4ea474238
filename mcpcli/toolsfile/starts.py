"""Where process starts run: on worker threads, or on the event loop in turns.

Starting a process blocks its caller until the child has exec'd. `Spawner` keeps
that wait off the event loop where the interpreter lets it (`THREADED_STARTS`), and
`Starts` bounds it where it cannot.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Generic, TypeVar

import anyio

__all__ = ["SPAWN_THREADS", "THREADED_STARTS", "Spawner", "Starts"]

T = TypeVar("T")

#: How many processes may be starting at once (see `Spawner`): on a busy machine a child
#: waits for a CPU to exec, and its start's thread with it, so more overlap helps (at
#: concurrency 16, 16 threads served 1.5x the calls of 8 and 3x those of 1).
SPAWN_THREADS = 16
#: Whether a start lets other threads run while its child execs: CPython on Linux holds the
#: GIL through vfork() before 3.11.6 and 3.12 (gh-104372); elsewhere a start forks and then
#: waits in a read, without the GIL.
THREADED_STARTS = not sys.platform.startswith("linux") or sys.version_info >= (3, 11, 6)
#: How long one turn of the event loop may spend starting processes (see `Starts`).
TURN_BUDGET = 0.01


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


class Spawner:
    """Starts processes on worker threads, so the event loop is not held while a child execs.

    Starting a process blocks its caller until the child has exec'd (a few
    milliseconds on a busy machine, when the child waits for a CPU). On the event loop
    that wait would stall everything else: a burst of calls would be read, answered
    and reaped in between starts only. On `SPAWN_THREADS` threads the loop goes on,
    and several children exec at once. A start, once made, reaches its caller even if
    the call is cancelled meanwhile, by anyio or by a foreign `Task.cancel()`: the
    cancellation comes at the caller's next checkpoint, so the caller stops the process
    as it stops any. If the wait ends otherwise (the loop going away), `discard` ends
    what the start made, on its thread. Where a start
    would hold the GIL through the exec (`THREADED_STARTS` false), a thread would
    hold the loop all the same, so starts run on the loop in turns (`Starts`).
    """

    def __init__(self, threads: int = 0, *, threaded: bool | None = None) -> None:
        self._size = threads or SPAWN_THREADS
        self._threaded = THREADED_STARTS if threaded is None else threaded
        self._turns = Starts()
        # A bare queue and threads, not a ThreadPoolExecutor: its futures and their chaining
        # to the loop cost ~40 us of CPU per start, this ~7 us.
        self._jobs: _Queue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    async def take(self, start: Callable[[], T], discard: Callable[[T], None]) -> T:
        """`start()` on a worker thread; what it returns (or raises) is handed back."""
        if not self._threaded:
            return await self._turns.take(start)
        if not self._threads:
            for n in range(self._size):
                thread = threading.Thread(target=self._work, name=f"mcp-spawn-{n}", daemon=True)
                thread.start()
                self._threads.append(thread)
        job = _Job(start, discard, asyncio.get_running_loop(), self._jobs)
        self._jobs.put(job)
        foreign = False  # a Task.cancel() came meanwhile
        try:
            while True:
                try:
                    with anyio.CancelScope(shield=True):
                        made = await asyncio.shield(job.future)
                    break
                except asyncio.CancelledError:
                    if job.future.cancelled():  # pragma: no cover - the loop is going away
                        raise
                    foreign = True  # the start is made first, then the cancellation goes on
        except BaseException:
            job.future.add_done_callback(partial(_abandoned, self._jobs, discard))
            raise
        finally:
            if foreign:
                task = asyncio.current_task()
                if task is not None:
                    task.cancel()  # comes at the caller's next checkpoint, with the start in hand
        return made

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            with contextlib.suppress(Exception):  # a failed discard must not end the thread
                job()

    def close(self) -> None:
        """Let the threads go once the starts under way are made."""
        threads, self._threads = self._threads, []
        for _ in threads:
            self._jobs.put(None)
        for thread in threads:
            thread.join()


_Queue = queue.SimpleQueue["Callable[[], None] | None"]


class _Job(Generic[T]):
    """One start for a worker thread; its outcome goes to `future`, on the loop's thread."""

    def __init__(self, start: Callable[[], T], discard: Callable[[T], None], loop: asyncio.AbstractEventLoop,
                 jobs: _Queue) -> None:
        self.start = start
        self.discard = discard
        self.loop = loop
        self.future: asyncio.Future[T] = loop.create_future()
        self.jobs = jobs

    def __call__(self) -> None:
        try:
            made = self.start()
        except BaseException as exc:  # handed to the caller as is
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody to tell
                self.loop.call_soon_threadsafe(self._failed, exc)
            return
        try:
            self.loop.call_soon_threadsafe(self._made, made)
        except RuntimeError:  # the loop is closed: nobody will take what was made
            self.discard(made)

    def _made(self, made: T) -> None:
        if self.future.done():  # pragma: no cover - cancelled with the loop going away
            self.jobs.put(partial(self.discard, made))
        else:
            self.future.set_result(made)

    def _failed(self, error: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(error)


def _abandoned(jobs: _Queue, discard: Callable[[T], None], future: asyncio.Future[T]) -> None:
    """A start whose caller is gone: `discard` what it made, on a worker thread."""
    if not future.cancelled() and future.exception() is None:
        jobs.put(partial(discard, future.result()))
