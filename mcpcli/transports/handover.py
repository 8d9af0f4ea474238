"""The session-facing stream pair of Streamable HTTP, without a task in between.

Each HTTP request runs in a task of its own, so a hand-over through memory-object
streams cost every call two more event-loop turns: the session's request waited for
a writer task to start its POST, and the answer waited for the session's receive loop
to wake its caller (a gateway relays every call through both). Here:

* `Outbox`, what the session writes to: a request with nothing queued before it starts
  its task at once; anything else goes to the writer task, in order.
* `Delivered`, what the session reads: a `FrameReader` (as stdio's), so a response is
  taken by the session in the task that read it (`take_at_once`), and anything else is
  queued for the receive loop; past `INBOX_LIMIT` queued items the deliverer waits.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from mcpcli.core.jsonrpc import Request
from mcpcli.transports import Envelope
from mcpcli.transports.lines import FrameReader, Item

__all__ = ["Delivered", "Outbox"]


class Outbox:
    """The session's write stream. A request with nothing queued before it goes to
    `start` at once (which says False when the connection is ending); anything else goes
    through `queue` to the writer, which lowers `queued` as it handles each item: a
    request never overtakes the notification before it (`initialized` is posted first)."""

    __slots__ = ("_queue", "_start", "closed", "queued")

    def __init__(self, queue: MemoryObjectSendStream[Envelope],
                 start: Callable[[Envelope, Request], bool]) -> None:
        self._queue = queue
        self._start = start
        self.closed = False
        #: Items given to the writer and not yet handled by it.
        self.queued = 0

    def _at_once(self, envelope: Envelope) -> bool:
        if self.closed:
            raise anyio.ClosedResourceError
        message = envelope.message
        return not self.queued and isinstance(message, Request) and self._start(envelope, message)

    def send_nowait(self, envelope: Envelope) -> None:
        if not self._at_once(envelope):
            self._queue.send_nowait(envelope)
            self.queued += 1

    async def send(self, envelope: Envelope) -> None:
        if not self._at_once(envelope):
            self.queued += 1
            try:
                await self._queue.send(envelope)
            except BaseException:
                self.queued -= 1
                raise

    async def aclose(self) -> None:
        self.closed = True
        await self._queue.aclose()


class Delivered(FrameReader):
    """The session's read stream, filled by `put` from the tasks reading the answers;
    `end` is the end of the connection (what is queued is still read)."""

    def __init__(self) -> None:
        super().__init__()
        self._arrived: anyio.Event | None = None
        self._room: anyio.Event | None = None
        self.inbox.pause = self._full
        self.inbox.resume = self._drained

    def _full(self) -> None:
        self._room = anyio.Event()

    def _drained(self) -> None:
        room, self._room = self._room, None
        if room is not None:
            room.set()

    async def put(self, item: Item) -> None:
        """Hand `item` to the session (dropped once the connection has ended)."""
        if self.closed or self.finished:
            return
        inbox = self.inbox
        queued = len(inbox.items)
        inbox.put(item)
        if len(inbox.items) > queued:  # not taken at once: the receive loop's
            self._wake()
        while self._room is not None and not self.closed:
            await self._room.wait()

    def end(self) -> None:
        self.finished = True
        self._wake()

    def _wake(self) -> None:
        arrived, self._arrived = self._arrived, None
        if arrived is not None:
            arrived.set()

    async def _more(self) -> None:
        self._arrived = anyio.Event()
        await self._arrived.wait()

    async def aclose(self) -> None:
        await super().aclose()
        self._wake()
        self._drained()
