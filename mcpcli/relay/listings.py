"""What an upstream listed, kept until it says the list changed, and the re-listing that
its change notifications set off, coalesced.

`Listings` keeps one upstream's listings by key (a list method for the daemon, a kind for
the gateway) and page (a cursor; None: the whole listing), each until the matching
`list_changed` notification (or, for a 2026-07-28 result with `ttlMs`, its expiry).

An upstream may send `notifications/tools/list_changed` thousands of times in a burst.
Re-listing once per notification would send the upstream as many `tools/list` requests
(and the downstream clients as many announcements). Two helpers bound that to at most
one run in flight and one pending, whatever the burst:

* `Fetches`: a listing and its generation. Each change starts a new generation; a
  caller wants a fetch that began at the generation it saw (or later), so callers
  arriving while a good enough fetch is in flight share it, and those that arrived
  after a change share the one next fetch. `Listings.fetch` is one per key.
* `Reruns`: passes of a piece of work per key (the gateway's relist-and-announce): a
  request while a pass runs only marks one more pass, which runs after it.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import anyio
import anyio.abc

__all__ = ["STALE_BY_METHOD", "Fetches", "Listings", "Reruns"]

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

#: The list methods whose results each list_changed notification makes stale.
STALE_BY_METHOD: Mapping[str, tuple[str, ...]] = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}


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


class Listings(Generic[T]):
    """One upstream's listings by key and page, until they change (see the module docstring).

    `stale`: the keys each list_changed notification makes stale (`STALE_BY_METHOD` for
    keys that are list methods)."""

    def __init__(self, stale: Mapping[str, Sequence[str]]) -> None:
        self._stale = stale
        #: (key, page) -> (expiry on the caller's clock, the listing).
        self._entries: dict[tuple[str, str | None], tuple[float, T]] = {}
        self._fetches: dict[str, Fetches[Any]] = {}
        #: Each key's whole listing (page None) as last known before the changes since.
        self.previous: dict[str, T] = {}

    def get(self, key: str, page: str | None = None, *, now: float = -math.inf) -> T | None:
        """The listing kept for `key` and `page`, unless it expired by `now`."""
        entry = self._entries.get((key, page))
        if entry is None or entry[0] <= now:
            return None
        return entry[1]

    def put(self, key: str, value: T, page: str | None = None, *, expires: float = math.inf,
            generation: int | None = None) -> bool:
        """Keep `value` until `expires`, unless it was fetched at a `generation` a change
        has made stale since (then False)."""
        if generation is not None and not self.current(key, generation):
            return False
        self._entries[key, page] = (expires, value)
        return True

    def changed(self, notification: str) -> tuple[str, ...]:
        """The upstream sent `notification`: forget what it makes stale (those keys)."""
        keys = tuple(self._stale.get(notification, ()))
        for key in keys:
            self.forget(key)
        return keys

    def forget(self, key: str) -> None:
        """`key` may have changed: drop its pages (its whole listing kept in `previous`), and
        a fetch of it in flight began too early to be kept."""
        whole = self._entries.get((key, None))
        if whole is not None:
            self.previous[key] = whole[1]
        for stale in [k for k in self._entries if k[0] == key]:
            del self._entries[stale]
        self._flights(key).changed()

    async def fetch(self, key: str, fetch: Callable[[int], Awaitable[T]]) -> T:
        """`fetch(generation)`, coalesced per key (`Fetches.get`)."""
        flights: Fetches[T] = self._flights(key)
        return await flights.get(fetch)

    def current(self, key: str, generation: int) -> bool:
        """Whether `key` has not changed since `generation`."""
        return self._flights(key).current(generation)

    def _flights(self, key: str) -> Fetches[Any]:
        flights = self._fetches.get(key)
        if flights is None:
            flights = self._fetches[key] = Fetches()
        return flights
