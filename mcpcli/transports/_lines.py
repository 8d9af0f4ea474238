"""Newline-delimited JSON-RPC on pipes, read and written in the session's own task.

A stdio connection used to run a pump task per direction and hand every message
across a memory-object stream: two extra event-loop turns per message, which is most
of what a relayed call costs (`scripts/bench_gateway.py`). Here the session's
receive loop reads and splits the bytes itself (`LineSplitter`, used by the readers
of both ends), and a send writes the frame at once (`PipeWriter`): only what the pipe
will not take right now waits, in order, for a flusher task.
"""

from __future__ import annotations

import os
from collections import deque
from typing import TYPE_CHECKING

import anyio

from mcpcli import jsonrpc

if TYPE_CHECKING:
    from mcpcli.transports import Envelope

__all__ = ["BACKLOG_LIMIT", "LineSplitter", "PipeWriter"]

#: Bytes a writer may hold for a pipe that is not draining before senders must wait.
BACKLOG_LIMIT = 1 << 20


class LineSplitter:
    """Cuts a byte stream into lines, holding at most `cap` bytes of an unfinished one.

    `feed` returns the complete lines of a chunk; `overflow` says the unfinished line
    outgrew the cap (what to do about it is the caller's: a client gives up on the
    server, a server answers an error and skips to the next newline)."""

    __slots__ = ("_buffer", "cap")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        buffer = self._buffer
        while (newline := chunk.find(b"\n", start)) >= 0:
            if buffer:
                buffer += chunk[start:newline]
                lines.append(bytes(buffer))
                buffer.clear()
            else:
                lines.append(chunk[start:newline])
            start = newline + 1
        if start < len(chunk):
            buffer += chunk[start:]
        return lines

    @property
    def overflow(self) -> bool:
        return len(self._buffer) > self.cap

    def rest(self) -> bytes:
        """What is left after the last newline (at end of input), and forget it."""
        data = bytes(self._buffer)
        self._buffer.clear()
        return data

    def clear(self) -> None:
        self._buffer.clear()


class PipeWriter:
    """A write stream that puts each frame on a non-blocking pipe at once.

    Whatever the pipe does not take joins a backlog that `flush` (the owner's task)
    writes as the pipe drains, so frames keep their order; past `BACKLOG_LIMIT`
    `send_nowait` raises `WouldBlock` and `send` waits. A broken pipe (the peer went
    away) makes sends raise `BrokenResourceError`; `aclose` ends `flush` once the
    backlog is written."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._backlog: deque[bytes] = deque()
        self._pending = 0
        self._wake = anyio.Event()
        self._drained = anyio.Event()
        self._drained.set()
        self.closed = False
        self.broken = False

    def send_nowait(self, envelope: Envelope) -> None:
        self.write_nowait(jsonrpc.encode(envelope.message) + b"\n")

    def write_nowait(self, data: bytes) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        if self.broken:
            raise anyio.BrokenResourceError
        if self._backlog:
            if self._pending >= BACKLOG_LIMIT:
                raise anyio.WouldBlock
            self._queue(data)
            return
        try:
            written = os.write(self.fd, data)
        except BlockingIOError:
            written = 0
        except OSError:
            self.broken = True
            self._wake.set()
            raise anyio.BrokenResourceError from None
        if written < len(data):
            self._queue(data[written:])

    def _queue(self, data: bytes) -> None:
        self._backlog.append(data)
        self._pending += len(data)
        if self._drained.is_set():
            self._drained = anyio.Event()
        self._wake.set()

    async def send(self, envelope: Envelope) -> None:
        data = jsonrpc.encode(envelope.message) + b"\n"
        while True:
            try:
                self.write_nowait(data)
                return
            except anyio.WouldBlock:
                await self._drained.wait()

    async def aclose(self) -> None:
        self.closed = True
        self._wake.set()

    @property
    def idle(self) -> bool:
        """Nothing waits to be written."""
        return not self._backlog

    async def flush(self) -> None:
        """Write the backlog as the pipe drains, until closed and empty (or broken)."""
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
