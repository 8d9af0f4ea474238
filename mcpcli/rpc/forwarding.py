"""Requests passed through a peer whole, without a task of their own on either side.

A relay (the gateway's pass-through of a plain `tools/call`) takes an incoming
request as the downstream `Peer` reads it (`Peer(relay=...)`: the hook returns a
`Relayed`, or None to let the request be handled as usual), sends it on with
`Peer.forward` on the upstream peer, and answers it with `Peer.answer_relayed` when
the upstream's answer comes. Both peers keep counting such a request as theirs: the
downstream one as in flight (end of input waits for it, `notifications/cancelled`
reaches it, its id is not reused), the upstream one as sent (its answer, progress
and the connection's end go to the `Forward`).

`Deadlines` times such requests out: one task per relay for all of them (a timer per
request would cost what the pass-through saves).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc

if TYPE_CHECKING:
    from mcpcli.core.jsonrpc import ErrorResponse, Request, Response
    from mcpcli.transports.base import Envelope

__all__ = ["Deadlines", "Forward", "Passthrough", "RelayHook", "Relayed"]

JSON = dict[str, Any]


class Relayed(Protocol):
    """An incoming request a relay took: the downstream peer tells it of a cancellation."""

    def cancel(self) -> None: ...


class Forward(Protocol):
    """Where what concerns a forwarded request goes, as the upstream peer reads it."""

    def answered(self, message: Response | ErrorResponse) -> None: ...

    def progressed(self, params: JSON) -> None: ...

    def failed(self, exc: Exception) -> None: ...


#: Offered each incoming request as it is read: a `Relayed` if the relay takes it.
RelayHook = Callable[["Envelope", "Request"], "Relayed | None"]


class Passthrough:
    """One peer's requests passed through whole: the incoming ones a relay took
    (`relayed`) and those it sent for a relay (`forwarded`), by id. Each method says
    whether the id was one of them (the peer then has nothing more to do)."""

    __slots__ = ("forwarded", "relay", "relayed")

    def __init__(self, relay: RelayHook | None) -> None:
        self.relay = relay
        self.relayed: dict[Any, Relayed] = {}
        self.forwarded: dict[Any, Forward] = {}

    def take(self, envelope: Envelope, request: Request) -> bool:
        """Offer an incoming request to the relay."""
        if self.relay is None:
            return False
        taken = self.relay(envelope, request)
        if taken is None:
            return False
        self.relayed[request.id] = taken
        return True

    def cancel(self, request_id: Any) -> bool:
        """The peer cancelled a request the relay took."""
        taken = self.relayed.pop(request_id, None)
        if taken is None:
            return False
        taken.cancel()
        return True

    def let_go(self) -> None:
        """The connection ends: nobody is left to answer what the relay took."""
        relayed, self.relayed = self.relayed, {}
        for taken in relayed.values():
            taken.cancel()

    def answered(self, message: Response | ErrorResponse) -> bool:
        to = self.forwarded.pop(message.id, None)
        if to is None:
            return False
        to.answered(message)
        return True

    def progressed(self, params: JSON) -> bool:
        to = self.forwarded.get(params.get("progressToken"))
        if to is None:
            return False
        to.progressed(params)
        return True

    def failed(self, request_id: Any, exc: Exception) -> bool:
        to = self.forwarded.pop(request_id, None)
        if to is None:
            return False
        to.failed(exc)
        return True

    def fail_all(self, exc: Exception) -> None:
        forwarded, self.forwarded = self.forwarded, {}
        for to in forwarded.values():
            to.failed(exc)


class Timed(Protocol):
    """What `Deadlines` watches: a request whose deadline may move (progress)."""

    def deadline(self) -> float: ...

    def expired(self) -> None: ...


class Deadlines:
    """The deadlines of one relay's requests in flight, watched by one task.

    The task sleeps until the earliest deadline, then ends every request past its own
    (`Timed.expired`); it ends when none is left and starts again with the next. The
    requests are few at a time (an upstream's concurrency limit), so each wake looks
    at them all; a new request never needs to wake it when its deadline is the latest
    (one timeout per relay), and does otherwise."""

    def __init__(self) -> None:
        self._timed: dict[int, Timed] = {}
        self._keys = 0
        self._running = False
        self._until = float("inf")
        self._wake: anyio.Event | None = None

    def add(self, timed: Timed, tg: anyio.abc.TaskGroup) -> int:
        """Watch `timed` until `discard`; its key."""
        self._keys += 1
        key = self._keys
        self._timed[key] = timed
        deadline = timed.deadline()
        if not self._running:
            self._running = True
            self._until = deadline
            tg.start_soon(self._watch)
        elif deadline < self._until and self._wake is not None:
            self._wake.set()
        return key

    def discard(self, key: int) -> None:
        self._timed.pop(key, None)

    def __len__(self) -> int:
        return len(self._timed)

    async def _watch(self) -> None:
        try:
            while self._timed:
                now = anyio.current_time()
                earliest = float("inf")
                for key, timed in list(self._timed.items()):
                    deadline = timed.deadline()
                    if deadline <= now:
                        self._timed.pop(key, None)
                        timed.expired()
                    else:
                        earliest = min(earliest, deadline)
                if not self._timed:
                    break
                self._until = earliest
                self._wake = anyio.Event()
                if earliest == float("inf"):
                    await self._wake.wait()
                else:
                    with anyio.move_on_after(earliest - now):
                        await self._wake.wait()
                self._wake = None
        finally:
            self._running = False
            self._until = float("inf")
            self._wake = None
