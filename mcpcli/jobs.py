"""Cheap tasks for per-message work: one per incoming request, one per 2026 call.

A task started through an anyio task group costs a task handle, a cancel scope and an
event besides the task itself, which is most of what a relayed call spends outside of
I/O (`scripts/bench_gateway.py`). On asyncio a `JobSet` starts a plain event-loop task
that runs inside one anyio `CancelScope` (so cancelling it is anyio's usual, level-
triggered cancellation) and remembers it until it ends; `cancel_all` and `wait` are
what a task group's exit would do. On another event loop (trio) the tasks go to the
`fallback` task group instead.

An exception escaping a task is reported to `on_error` (the task group would have
re-raised it and torn everything down; here the owner decides): the owners' tasks
catch their own errors, so this is a last resort against a bug.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio
from anyio.abc import TaskGroup

__all__ = ["JobSet", "running_asyncio_loop"]


def running_asyncio_loop() -> Any:
    """The running asyncio loop, or None (another event loop runs us: trio)."""
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # pragma: no cover - trio
        return None


class _Entry:
    """One task: its scope, the task itself, and the set that answers for it now."""

    __slots__ = ("owner", "scope", "task")

    def __init__(self, scope: anyio.CancelScope, owner: JobSet) -> None:
        self.scope = scope
        self.owner = owner
        self.task: Any = None


class JobSet:
    """Tasks that each run inside their own cancel scope, cancelled and awaited together."""

    def __init__(self, fallback: TaskGroup, on_error: Callable[[Exception], None]) -> None:
        self._fallback = fallback
        self._on_error = on_error
        #: Also the strong references to the tasks (the loop keeps only weak ones).
        self._entries: dict[anyio.CancelScope, _Entry] = {}
        self._empty: anyio.Event | None = None  # made only when someone waits
        self._loop = running_asyncio_loop()
        #: Cancelled as a whole: what starts from now on starts cancelled.
        self._closed = False

    def __len__(self) -> int:
        return len(self._entries)

    def start(
        self, fn: Callable[..., Coroutine[Any, Any, None]], *args: Any, scope: anyio.CancelScope | None = None
    ) -> anyio.CancelScope:
        """Run `fn(*args)` in a new task inside `scope` (a new one by default); the scope
        cancels it."""
        if scope is None:
            scope = anyio.CancelScope()
        if self._closed:
            scope.cancel()  # as a closed task group would: it runs only to its first checkpoint
        entry = _Entry(scope, self)
        self._entries[scope] = entry
        if self._loop is None:  # pragma: no cover - trio
            self._fallback.start_soon(self._run, fn, args, entry)
        else:
            # No done-callback (the loop would run it one turn later): `_run` forgets its task.
            entry.task = self._loop.create_task(self._run(fn, args, entry))
        return scope

    async def _run(self, fn: Callable[..., Coroutine[Any, Any, None]], args: tuple[Any, ...], entry: _Entry) -> None:
        try:
            with entry.scope:
                await fn(*args)
        except Exception as exc:
            entry.owner._on_error(exc)
        finally:
            entry.owner._forget(entry.scope)

    def _forget(self, scope: anyio.CancelScope) -> None:
        self._entries.pop(scope, None)
        if not self._entries and self._empty is not None:
            self._empty.set()
            self._empty = None

    @property
    def can_hand_over(self) -> bool:
        """Whether `hand_over` works here (plain event-loop tasks, not a task group's)."""
        return self._loop is not None

    def hand_over(self, scope: anyio.CancelScope, other: JobSet) -> bool:
        """Let `other` answer for the task running in `scope` from now on (cancel it, wait
        for it); False where that cannot be (not ours, or another event loop's task group)."""
        entry = self._entries.get(scope)
        if entry is None or entry.task is None:
            return False
        self._forget(scope)
        entry.owner = other
        other._entries[scope] = entry
        if other._closed:
            scope.cancel()
        return True

    def cancel_all(self) -> None:
        self._closed = True
        for scope in list(self._entries):
            scope.cancel()

    async def wait(self) -> None:
        """Until every task has ended."""
        while self._entries:
            if self._empty is None:
                self._empty = anyio.Event()
            await self._empty.wait()

    async def aclose(self) -> None:
        """Cancel every task and wait for them (shielded: this is cleanup)."""
        self.cancel_all()
        with anyio.CancelScope(shield=True):
            await self.wait()
