"""Coalescing what an upstream's change notifications set off.

An upstream may send `notifications/tools/list_changed` thousands of times in a burst.
Re-listing once per notification would send the upstream as many `tools/list` requests
(and the downstream clients as many announcements). Two helpers bound that to at most
one run in flight and one pending, whatever the burst:

* `Fetches`: a listing and its generation. Each change starts a new generation; a
  caller wants a fetch that began at the generation it saw (or later), so callers
  arriving while a good enough fetch is in flight share it, and those that arrived
  after a change share the one next fetch.
* `Reruns`: passes of a piece of work per key (the gateway's relist-and-announce): a
  request while a pass runs only marks one more pass, which runs after it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

import anyio
import anyio.abc

__all__ = ["Fetches", "Reruns"]

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


class _Flight(Generic[T]):
    """One fetch in flight: the generation it began at and, once done, its result."""

    __slots__ = ("done", "generation", "ok", "result")

    def __init__(self, generation: int) -> None:
        self.generation = generation
        self.done = anyio.Event()
        self.ok = False
        self.result: T | None = None


class Fetches(Generic[T]):
    """Fetches of one changing thing, coalesced: at most one in flight and one pending."""

    def __init__(self) -> None:
        #: Bumped by each change; a fetch that began at the current one is up to date.
        self.generation = 0
        self._flight: _Flight[T] | None = None
        #: The last fetch that succeeded.
        self._last: _Flight[T] | None = None

    def changed(self) -> None:
        self.generation += 1

    async def get(self, fetch: Callable[[int], Awaitable[T]]) -> T:
        """The result of a fetch that began at this call's generation or later: the one in
        flight if it qualifies, else the next one, which this call runs as
        `fetch(generation)` unless another waiter does first. A fetch that failed (raised)
        answers nobody: its waiters try again, one of them fetching."""
        wanted = self.generation
        while (flight := self._flight) is not None:
            await flight.done.wait()
            # That one, or one a fellow waiter ran since (it may not have had to wait).
            for done in (flight, self._last):
                if done is not None and done.ok and done.generation >= wanted:
                    return done.result  # type: ignore[return-value]
        flight = self._flight = _Flight(self.generation)
        try:
            flight.result = await fetch(flight.generation)
            flight.ok = True
            self._last = flight
        finally:
            self._flight = None
            flight.done.set()
        return flight.result

    def current(self, generation: int) -> bool:
        """Whether nothing changed since `generation` (a fetch begun then may be kept)."""
        return generation == self.generation


class Reruns(Generic[K]):
    """Passes of `run(key, flag)` per key in a task group: at most one running and one pending.

    `request(key, flag)` starts a pass when none runs for `key`; while one runs it marks
    one more pass, whose flag is true if any request since said so."""

    def __init__(self, run: Callable[[K, bool], Awaitable[None]]) -> None:
        self._run = run
        #: Key -> whether a request made while its pass runs said so (None: none made).
        self._pending: dict[K, bool | None] = {}

    def __len__(self) -> int:
        """How many keys have a pass running."""
        return len(self._pending)

    def request(self, tg: anyio.abc.TaskGroup, key: K, flag: bool) -> None:
        if key in self._pending:
            self._pending[key] = bool(self._pending[key]) or flag
            return
        self._pending[key] = None
        tg.start_soon(self._passes, key, flag)

    async def _passes(self, key: K, flag: bool) -> None:
        try:
            while True:
                await self._run(key, flag)
                more = self._pending[key]
                if more is None:
                    return
                flag, self._pending[key] = more, None
        finally:
            self._pending.pop(key, None)
