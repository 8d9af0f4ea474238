"""Newline-delimited JSON-RPC on pipes, with no pump task between the pipe and the session.

A stdio connection used to run a pump task per direction and hand every message
across a memory-object stream: extra event-loop turns per message, which was most of
what a relayed call cost (`scripts/bench_gateway.py`). Here:

* a `FrameReader` (the stdio readers of both ends) is the session's read stream. On
  asyncio the event loop's pipe transport hands it bytes in a callback, where they
  are split (`LineSplitter`) and parsed at once; the session takes a response or a
  request right there (`take_at_once`: the waiting call is woken, the request's
  task started) and everything else waits, in order, in a `FrameInbox` for the
  session's receive loop. Elsewhere (trio) the receive loop reads the pipe itself.
* a send writes the frame at once (`PipeWriter`): only what the pipe will not take
  right now waits, in order, for a flusher task. Frames sent while a reader's callback
  handles what one read brought (`holding`: a relay passing on a chunk of messages)
  are written together when it ends: one write per read, not one per frame, and
  nothing waits past the callback (waiting for the event loop's turn to end put
  processes in lockstep: `scripts/bench_gateway.py`).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from mcpcli.core import jsonrpc
from mcpcli.transports import LineSplitter

if TYPE_CHECKING:
    from mcpcli.transports import Envelope

__all__ = ["BACKLOG_LIMIT", "FrameInbox", "FrameReader", "FrameWriter", "LineSplitter", "PipeWriter", "holding"]

#: Bytes a writer may hold for a pipe that is not draining before senders must wait.
BACKLOG_LIMIT = 1 << 20
#: Items parsed ahead of a session that is not reading before the pipe is paused.
INBOX_LIMIT = 64

Item = Any  # an Envelope, or an Exception to report (see `mcpcli.transports`)


class _Holding(threading.local):
    #: The writers holding frames in this thread's reader callback (None: not in one).
    writers: list[FrameWriter] | None = None


_HOLDING = _Holding()


def holding(handle: Callable[[bytes], None], data: bytes) -> None:
    """`handle(data)` (a reader's callback handling one read's bytes) with the frames it
    sends held per writer and written together as it returns, in the order sent."""
    if _HOLDING.writers is not None:
        handle(data)  # within an outer one
        return
    writers: list[FrameWriter] = []
    _HOLDING.writers = writers
    try:
        handle(data)
    finally:
        _HOLDING.writers = None
        for writer in writers:
            writer.release()


class FrameInbox:
    """Items parsed as bytes arrive, for a session: each is offered to `take_at_once`
    first (when nothing is queued before it), else queued for the receive loop. Past
    `INBOX_LIMIT` queued items the pipe is paused until the loop catches up."""

    def __init__(self) -> None:
        self.items: deque[Item] = deque()
        self.ended = False
        #: The session's "handle this now if that needs no waiting" (True: taken).
        self.take_at_once: Callable[[Item], bool] | None = None
        self.pause: Callable[[], None] | None = None
        self.resume: Callable[[], None] | None = None
        self._paused = False
        self._waiter: Any = None

    def put(self, item: Item) -> None:
        if not self.items and self.take_at_once is not None and self.take_at_once(item):
            return
        self.items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            # One turn later: whatever the items before it woke runs first (a command
            # that has its answer is done before a log line written behind it is shown).
            waiter.get_loop().call_soon(self._wake)
        if len(self.items) >= INBOX_LIMIT and self.pause is not None and not self._paused:
            self._paused = True
            self.pause()

    def end(self) -> None:
        self.ended = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        """Until there is an item or the input ended (asyncio: bytes come in callbacks)."""
        if self.items or self.ended:
            return
        import asyncio

        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def unpause(self) -> None:
        """Let the pipe flow again if it was paused (its reader is about to drop the rest)."""
        if self._paused and self.resume is not None:
            self._paused = False
            self.resume()

    def pop(self) -> Item:
        item = self.items.popleft()
        if len(self.items) <= INBOX_LIMIT // 4:
            self.unpause()
        return item


class FrameReader:
    """A session's read stream over a `FrameInbox`; subclasses fill it (`_more`)."""

    def __init__(self) -> None:
        self.inbox = FrameInbox()
        #: Set once the last item is in the inbox (what follows is the end of the stream).
        self.finished = False
        self.closed = False

    def take_at_once(self, take: Callable[[Item], bool] | None) -> None:
        """Let the session handle items in the callback that parsed them (see `FrameInbox`)."""
        self.inbox.take_at_once = take

    def __aiter__(self) -> FrameReader:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def receive(self) -> Item:
        inbox = self.inbox
        if inbox.items:
            # The next message of a chunk already read: let what the last one woke run
            # first, as a hand-over between tasks would (a command that has its answer
            # is done before a log line written behind the answer is shown).
            await anyio.lowlevel.checkpoint()
        while not inbox.items:
            if self.closed:
                raise anyio.ClosedResourceError
            if self.finished:
                raise anyio.EndOfStream
            await self._more()
        return inbox.pop()

    async def _more(self) -> None:
        """Wait for more items, or the end (`finished`)."""
        raise NotImplementedError

    # What the subclass does with the pipe's bytes (called in the event loop's callback).

    def chunk(self, data: bytes) -> None:
        raise NotImplementedError

    def eof(self) -> None:
        raise NotImplementedError

    def fail(self, exc: Exception) -> None:
        """Handling the bytes failed (a bug): say so and end the stream."""
        raise NotImplementedError

    async def connect_pipe(self, loop: Any, stream: Any) -> Any:
        """Have the asyncio `loop` hand us `stream`'s bytes as they come (`chunk`, then
        `eof`); a bug in there ends the stream (`fail`) instead of hanging it. Returns the
        loop's pipe transport, which the inbox pauses while the session lags."""
        reader = self

        class _Pushed(asyncio.Protocol):
            def data_received(self, data: bytes) -> None:
                try:
                    holding(reader.chunk, data)
                except Exception as exc:
                    reader.fail(exc)

            def eof_received(self) -> None:
                self.connection_lost(None)

            def connection_lost(self, exc: Exception | None) -> None:
                try:
                    reader.eof()
                except Exception as exc:
                    reader.fail(exc)

        transport, _ = await loop.connect_read_pipe(_Pushed, stream)
        self.inbox.pause = transport.pause_reading
        self.inbox.resume = transport.resume_reading
        return transport

    async def aclose(self) -> None:
        self.closed = True
        self.inbox.take_at_once = None
        self.inbox.items.clear()


class FrameWriter:
    """A session's write stream that hands each frame on at once (`write_nowait`, which
    raises `WouldBlock` while too much is waiting); `send` waits for room (`_room`).
    Within `holding`, frames wait for its end instead (`release`)."""

    _held: list[bytes] | None = None

    def write_nowait(self, data: bytes) -> None:
        self.admit()
        self.write_all(data)

    def admit(self) -> None:
        """Raise as a write would now: closed, broken, or `WouldBlock` (too much waiting)."""
        raise NotImplementedError

    def write_all(self, data: bytes) -> None:
        """Write `data` now, past the limit on what may wait (it was accepted already)."""
        raise NotImplementedError

    def release(self) -> None:
        """Write what was held (a closed or broken stream drops it, as it would a send)."""
        held, self._held = self._held, None
        if held:
            try:
                self.write_all(b"".join(held))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    async def _room(self) -> None:
        raise NotImplementedError

    def send_nowait(self, envelope: Envelope) -> None:
        data = jsonrpc.encode(envelope.message) + b"\n"
        holders = _HOLDING.writers
        if holders is None:
            self.write_nowait(data)
            return
        held = self._held
        if held is None:
            self.admit()
            self._held = held = []
            holders.append(self)
        held.append(data)

    async def send(self, envelope: Envelope) -> None:
        data = jsonrpc.encode(envelope.message) + b"\n"
        while True:
            try:
                self.write_nowait(data)
                return
            except anyio.WouldBlock:
                await self._room()


class PipeWriter(FrameWriter):
    """A write stream that puts each frame on a non-blocking pipe at once.

    Whatever the pipe does not take joins a backlog that `flush` (the owner's task)
    writes as the pipe drains, so frames keep their order; past `BACKLOG_LIMIT`
    `send_nowait` raises `WouldBlock` and `send` waits. A broken pipe (the peer went
    away) drops what is sent from then on, as a pump task would have: the reader
    reports how the peer ended, which says more than a failed write. `aclose` ends
    `flush` once the backlog is written."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._backlog: deque[bytes] = deque()
        self._pending = 0
        self._wake = anyio.Event()
        self._drained = anyio.Event()
        self._drained.set()
        self.closed = False
        self.broken = False

    def admit(self) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        if self._pending >= BACKLOG_LIMIT:
            raise anyio.WouldBlock

    def write_all(self, data: bytes) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        if self.broken:
            return
        if self._backlog:
            self._queue(data)
            return
        try:
            written = os.write(self.fd, data)
        except BlockingIOError:
            written = 0
        except OSError:
            self.broken = True
            self._wake.set()
            return
        if written < len(data):
            self._queue(data[written:])

    def _queue(self, data: bytes) -> None:
        self._backlog.append(data)
        self._pending += len(data)
        if self._drained.is_set():
            self._drained = anyio.Event()
        self._wake.set()

    async def _room(self) -> None:
        await self._drained.wait()

    async def aclose(self) -> None:
        self.closed = True
        self._wake.set()

    @property
    def idle(self) -> bool:
        """Nothing waits to be written."""
        return not self._backlog

    async def flush(self) -> None:
        """Write the backlog as the pipe drains, until closed and empty (or broken).
        However it ends (stopped by a shutdown too), what is left is dropped and a
        sender waiting for room is let go: it then finds the writer closed."""
        try:
            await self._flush()
        finally:
            if self._backlog:
                self.broken = True
                self._backlog.clear()
                self._pending = 0
            self._drained.set()

    async def _flush(self) -> None:
        while True:
            while self._backlog and not self.broken:
                data = self._backlog[0]
                try:
                    written = os.write(self.fd, data)
                except BlockingIOError:
                    await anyio.wait_writable(self.fd)
                    continue
                except OSError:
                    self.broken = True
                    break
                self._pending -= written
                if written < len(data):
                    self._backlog[0] = data[written:]
                else:
                    self._backlog.popleft()
            if self.broken:
                self._backlog.clear()
                self._pending = 0
            if not self._backlog:
                self._drained.set()
            if self.closed or self.broken:
                return
            self._wake = anyio.Event()
            if self._backlog:
                continue
            await self._wake.wait()
