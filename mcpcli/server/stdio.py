"""Serving over stdio: newline-delimited JSON-RPC on our own stdin and stdout.

stdout carries MCP messages only. `serve_stdio` therefore moves the real stdout
to a private descriptor and points descriptor 1 (and `sys.stdout`) at stderr
while it runs, so a stray `print()` or a child process that inherits descriptor
1 cannot corrupt the stream. Lines that are not JSON-RPC get an error response
(-32700 parse error, -32600 invalid request) with the id when it can be read;
lines longer than the frame cap get -32600 and are skipped. At end of input
(the client shutting us down) requests already read get `EOF_GRACE` seconds to
finish and are then cancelled; if the client closes our stdout (it went away),
running calls are cancelled at once.

Pipes and sockets (the usual case: a client spawned us) are read and written
with the event loop's non-blocking pipe transports, with no task between them and
the session: stdin's bytes are parsed in the loop's callback (a request starts its
task right there, see `mcpcli.transports.lines`) and a reply is handed to the
pipe transport at once. Terminals and regular files are read and written with
blocking calls in worker threads (a writer task), so their shared descriptor flags
are never changed.
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import ErrorObject, ErrorResponse
from mcpcli.core.protocol import MAX_MESSAGE_BYTES
from mcpcli.jobs import running_asyncio_loop
from mcpcli.rpc.peer import log_unexpected
from mcpcli.transports import Envelope, Streams
from mcpcli.transports.lines import FrameReader, FrameWriter, LineSplitter

if TYPE_CHECKING:
    from mcpcli.server.core import Server

__all__ = ["serve_stdio", "stdio_streams"]

log = logging.getLogger("mcpcli.server")

#: After end of input, how long requests already read may take to finish before they
#: are cancelled (the client is shutting us down; it will signal us soon anyway).
EOF_GRACE = 2.0
#: Bound on the messages of one JSON-RPC batch (2025-03-26), each one a task.
MAX_BATCH = 256
_CHUNK = 1 << 16
#: Bytes buffered for a client that is not reading before senders wait.
_BACKLOG = 1 << 20


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _FdIO:
    """Reads and writes one pair of descriptors: pipe transports when possible, else threads."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        #: Whether stdin's bytes come in event-loop callbacks (else `read` in threads).
        self.pushes = False
        #: The event loop's writer on a piped stdout (None: write in threads).
        self.pipe_writer: Any = None
        self._transports: list[Any] = []
        self._restore: list[int] = []
        #: Set when the client closed our stdout (it went away): time to stop everything.
        self.peer_gone = anyio.Event()

    async def open(self, sink: _Reader) -> None:
        """Connect the pipes to the event loop; stdin's bytes then go to `sink` as they come."""
        loop = running_asyncio_loop()
        if loop is None:
            return
        import asyncio

        if _is_pipe(self.in_fd):
            source = os.fdopen(self.in_fd, "rb", buffering=0, closefd=False)
            transport = await sink.connect_pipe(loop, source)
            self._transports.append(transport)
            self._restore.append(self.in_fd)
            self.pushes = True
        if _is_pipe(self.out_fd):
            target = os.fdopen(self.out_fd, "wb", buffering=0, closefd=False)
            gone = self.peer_gone

            class _Watched(asyncio.streams.FlowControlMixin):
                # The pipe transport notices the reading end closing (even while we
                # are not writing): the client is gone.
                def connection_lost(self, exc: Exception | None) -> None:
                    super().connection_lost(exc)
                    loop.call_soon(gone.set)

            transport, protocol = await loop.connect_write_pipe(_Watched, target)
            self._transports.append(transport)
            self._restore.append(self.out_fd)
            self.pipe_writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def read(self) -> bytes:
        return await anyio.to_thread.run_sync(os.read, self.in_fd, _CHUNK, abandon_on_cancel=True)

    async def write(self, data: bytes) -> None:
        """A blocking write in a worker thread (stdout is not a pipe: see `_threaded`)."""
        await anyio.to_thread.run_sync(_write_all, self.out_fd, data)

    def close(self) -> None:
        self.peer_gone = anyio.Event()  # our own close is not the client leaving
        for transport in self._transports:
            transport.close()
        for fd in self._restore:
            try:
                os.set_blocking(fd, True)  # as we found it, for whoever shares the descriptor
            except OSError:
                pass


class _StdoutWriter(FrameWriter):
    """The session's write stream when stdout is a pipe: each message goes to the event
    loop's pipe transport at once (which writes what the pipe takes and buffers the
    rest), with no writer task in between; past `_BACKLOG` buffered bytes (a client
    that stopped reading) senders wait for the pipe to drain."""

    def __init__(self, writer: Any) -> None:
        self._writer = writer
        self._transport = writer.transport
        self._draining = anyio.Lock()
        self.closed = False

    def admit(self) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        if self._transport.is_closing():
            raise anyio.BrokenResourceError
        if self._transport.get_write_buffer_size() > _BACKLOG:
            raise anyio.WouldBlock

    def write_all(self, data: bytes) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        if self._transport.is_closing():
            raise anyio.BrokenResourceError
        self._transport.write(data)

    async def _room(self) -> None:
        # One drainer at a time: a stream writer takes only one on some Python versions.
        async with self._draining:
            try:
                await self._writer.drain()
            except (OSError, ConnectionError):
                raise anyio.BrokenResourceError from None

    async def aclose(self) -> None:
        self.closed = True

    async def drain(self) -> None:
        """Wait until what was written has gone out (or the client stopped reading)."""
        if self._transport.is_closing() or not self._transport.get_write_buffer_size():
            return
        self._transport.set_write_buffer_limits(high=0)  # any byte left pauses: drain waits for all
        try:
            await self._writer.drain()
        except (OSError, ConnectionError):
            pass


class _Reader(FrameReader):
    """The session's read stream: stdin split into lines as it arrives, each turned
    into an Envelope, or answered with an error reply when it is not JSON-RPC (see
    `mcpcli.transports.lines`)."""

    def __init__(self, io: Any, outbox: Any, cap: int, on_eof: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.io = io
        self.outbox = outbox
        self.lines = LineSplitter(cap)
        self.cap = cap
        self.on_eof = on_eof
        self.skipping = False  # inside an oversized line: drop bytes until its newline
        self._early: list[Envelope] = []

    async def _more(self) -> None:
        if self.inbox.ended:
            self.finished = True
        elif getattr(self.io, "pushes", False):
            await self.inbox.wait()
        else:
            try:
                chunk = await self.io.read()
            except (OSError, ConnectionError):
                chunk = b""
            if chunk:
                self.chunk(chunk)
            else:
                self.eof()

    def chunk(self, data: bytes) -> None:
        if self.inbox.ended:
            return
        for line in self.lines.feed(data):
            if self.skipping:
                self.skipping = False
                continue
            self._line(line)
        if self.lines.overflow:
            if not self.skipping:
                self._error(None, jsonrpc.INVALID_REQUEST, f"message larger than {self.cap} bytes")
            self.skipping = True
            self.lines.clear()

    def fail(self, exc: Exception) -> None:
        """Reading failed (a bug): one log line, and the input ends here."""
        log_unexpected(log, "reading stdin", exc)
        if self.inbox.ended:
            return
        self.inbox.take_at_once = None  # nothing more is handled in the callback
        self.inbox.end()
        hook, self.on_eof = self.on_eof, None
        if hook is not None:
            with suppress(Exception):  # when the hook is what failed, it has been said above
                hook()

    def eof(self) -> None:
        if self.inbox.ended:
            return
        if self.on_eof is not None:
            self.on_eof()
        rest = self.lines.rest()
        if rest.strip() and not self.skipping:
            self._line(rest)
        self.inbox.end()

    def _line(self, line: bytes) -> None:
        line = line.strip()
        if not line:
            return
        if len(line) > self.cap:
            self._error(None, jsonrpc.INVALID_REQUEST, f"message larger than {self.cap} bytes")
            return
        try:
            message = jsonrpc.parse(line, allow_batch=True)
        except jsonrpc.ParseError as exc:
            self._error(exc.id, exc.code, f"{'Parse error' if exc.code == jsonrpc.PARSE_ERROR else 'Invalid request'}: {exc}")
            return
        except RecursionError:  # absurdly deep nesting
            self._error(None, jsonrpc.PARSE_ERROR, "Parse error: JSON nested too deeply")
            return
        if isinstance(message, jsonrpc.Batch) and len(message.messages) > MAX_BATCH:
            self._error(None, jsonrpc.INVALID_REQUEST, f"Invalid request: more than {MAX_BATCH} messages in a batch")
            return
        self.inbox.put(Envelope(message))

    def set_outbox(self, outbox: Any) -> None:
        """Where error replies go; those made before there was one go out first."""
        self.outbox = outbox
        early, self._early = self._early, []
        for envelope in early:
            self._send(envelope)

    def _error(self, request_id: jsonrpc.RequestId | None, code: int, message: str) -> None:
        envelope = Envelope(ErrorResponse(request_id, ErrorObject(code, message)))
        if self.outbox is None:  # bytes came while the writer was being set up
            self._early.append(envelope)
        else:
            self._send(envelope)

    def _send(self, envelope: Envelope) -> None:
        # Written at once; dropped for a client that stopped reading long ago.
        try:
            self.outbox.send_nowait(envelope)
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass


async def _write_loop(io: _FdIO, outbox: MemoryObjectReceiveStream[Envelope]) -> None:
    """Write outgoing messages, batching whatever is queued into one write."""
    async with outbox:
        async for envelope in outbox:
            data = bytearray(jsonrpc.encode(envelope.message))
            data += b"\n"
            while True:
                try:
                    more = outbox.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream):
                    break
                data += jsonrpc.encode(more.message)
                data += b"\n"
            try:
                await io.write(bytes(data))
            except (OSError, ConnectionError):  # the client closed our stdout
                return


@asynccontextmanager
async def stdio_streams(
    stdin_fd: int = 0, stdout_fd: int = 1, *, max_message_bytes: int = MAX_MESSAGE_BYTES
) -> AsyncIterator[Streams]:
    """A `(read, write)` pair over two file descriptors, for `Server.serve`."""
    async with _stdio(stdin_fd, stdout_fd, max_message_bytes) as (streams, _io):
        yield streams


@asynccontextmanager
async def _stdio(
    stdin_fd: int, stdout_fd: int, max_message_bytes: int, on_eof: Callable[[], None] | None = None
) -> AsyncIterator[tuple[Streams, _FdIO]]:
    io = _FdIO(stdin_fd, stdout_fd)
    reader = _Reader(io, None, max_message_bytes, on_eof)
    try:
        await io.open(reader)
        if io.pipe_writer is not None:
            writer = _StdoutWriter(io.pipe_writer)
            reader.set_outbox(writer)
            try:
                yield (reader, writer), io
            finally:
                await writer.aclose()
                await reader.aclose()
                # Let written replies go out, but never hang on a client that stopped reading.
                with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                    await writer.drain()
            return
        async with _threaded(io, reader) as streams:
            yield streams, io
    finally:
        io.close()


@asynccontextmanager
async def _threaded(io: _FdIO, reader: _Reader) -> AsyncIterator[Streams]:
    """A terminal or a regular file: a writer task writes with blocking calls in a thread."""
    outbox_send, outbox_recv = anyio.create_memory_object_stream[Envelope](256)
    reader.set_outbox(outbox_send.clone())
    async with anyio.create_task_group() as tg:
        writer_done = anyio.Event()

        async def write() -> None:
            try:
                await _write_loop(io, outbox_recv)
            finally:
                writer_done.set()

        tg.start_soon(write)
        try:
            yield reader, outbox_send
        finally:
            # Let queued replies go out, but never hang on a client that stopped reading.
            await outbox_send.aclose()
            await reader.outbox.aclose()
            await reader.aclose()
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                await writer_done.wait()
            tg.cancel_scope.cancel()


async def serve_stdio(
    server: Server,
    *,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    protect_stdout: bool = True,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    eof_grace: float = EOF_GRACE,
    on_eof: Callable[[], None] | None = None,
) -> None:
    """Serve `server` on stdin/stdout until end of input (the `mcp serve` default).

    `on_eof` is called when stdin ends (what is left is finishing and stopping)."""
    saved_stdout = sys.stdout
    out_fd = stdout_fd
    if protect_stdout and stdout_fd == 1:
        sys.stdout.flush()
        out_fd = os.dup(1)
        os.set_inheritable(out_fd, False)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    try:
        async with (
            server,
            _stdio(stdin_fd, out_fd, max_message_bytes, on_eof) as (streams, io),
            anyio.create_task_group() as tg,
        ):

            async def client_gone() -> None:
                # The client closed our stdout: nobody can read answers any more, so
                # cancel what runs instead of finishing it (end of input alone finishes).
                await io.peer_gone.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(client_gone)
            connection = server.connection("stdio")
            connection.close_grace = eof_grace
            await server.serve(streams, connection=connection)
            tg.cancel_scope.cancel()
    finally:
        if out_fd != stdout_fd:
            sys.stdout = saved_stdout
            os.dup2(out_fd, 1)
            os.close(out_fd)
