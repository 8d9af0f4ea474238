"""stdio transport: newline-delimited JSON-RPC on a server process's pipes.

The server runs in its own process group (so a terminal Ctrl-C reaches us, not it,
and we can cancel politely) with a scrubbed environment; it may have been started
early by `spawn.prespawn` and is adopted here. Its stderr is relayed to ours.
Shutdown closes stdin, waits briefly (not at all for a command line remembered as slow
to exit on EOF: `spawn.eof_grace`), then signals the whole group: TERM, then KILL, so
neither the server nor its children outlive us.

The pipes are driven directly (non-blocking fds; stdout through the event loop's
pipe transport on asyncio, `anyio.wait_readable` elsewhere), which is what lets a
process started before the event loop existed be adopted. Nothing sits between the
pipes and the session: stdout is parsed as it arrives and a response wakes its
caller right there, a send writes stdin at once (see `_lines`).
"""

from __future__ import annotations

import os
import signal
import sys
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import IO, TYPE_CHECKING, Any

import anyio

from mcpcli.core.protocol import MAX_MESSAGE_BYTES
from mcpcli.errors import MessageTooLarge, ServerExited, TransportError
from mcpcli.jobs import running_asyncio_loop
from mcpcli.transports import Streams, Transport, TransportTraits, line_item
from mcpcli.transports.lines import FrameReader, LineSplitter, PipeWriter
from mcpcli.transports.spawn import (  # the shutdown timings are shared with the one-shot path
    FLUSH_GRACE,
    KILL_GRACE,
    STDERR_HELD_MAX,
    STDERR_TAIL_LINES,
    TERM_GRACE,
    Launch,
    Process,
    SpawnError,
    adopt,
    eof_grace,
    exit_message,
    launch,
    noted_exit,
    quote_stderr,
    spawn,
)

if TYPE_CHECKING:
    from mcpcli.transports.spawn import ExitMemory

__all__ = ["StdioTransport", "kill_all", "quote_stderr"]

READ_CHUNK = 256 * 1024

#: Transports with a running server, so a second Ctrl-C can kill them all at once.
_LIVE: set[StdioTransport] = set()


def kill_all() -> None:
    """SIGKILL every running server's process group (the user insisted)."""
    for transport in list(_LIVE):
        transport.kill()


class _Pipe:
    """Non-blocking reads on one pipe end (writes go through `PipeWriter`)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.fd = stream.fileno()
        os.set_blocking(self.fd, False)

    async def read(self) -> bytes:
        """The next chunk; b"" at end of file."""
        while True:
            try:
                return os.read(self.fd, READ_CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)

    def close(self) -> None:
        with suppress(OSError):
            self.stream.close()


class _ServerReader(FrameReader):
    """The session's read stream: the server's stdout, split and parsed as it arrives
    (see `mcpcli.transports.lines`). It ends after a `ServerExited` when the server
    closes stdout, or sends a line over the cap (the server is killed then)."""

    def __init__(self, transport: StdioTransport, pipe: _Pipe) -> None:
        super().__init__()
        self.transport = transport
        self.pipe = pipe
        self.lines = LineSplitter(transport.max_message_bytes)
        self.oversized = False
        self._pipe_transport: Any = None  # asyncio's, once `open` connected it

    async def open(self) -> None:
        """On asyncio, have the event loop hand us stdout's bytes as they come."""
        loop = running_asyncio_loop()
        if loop is not None:  # else (trio) the receive loop reads the pipe itself
            self._pipe_transport = await self.connect_pipe(loop, self.pipe.stream)

    def chunk(self, data: bytes) -> None:
        if self.oversized or self.closed or self.inbox.ended:
            return
        inbox = self.inbox
        for line in self.lines.feed(data):
            item = line_item(line, "server wrote")
            if item is not None:
                inbox.put(item)
        if self.lines.overflow:
            self.oversized = True
            self.lines.clear()
            inbox.put(MessageTooLarge(f"server sent a message larger than {self.lines.cap} bytes"))
            self.transport.kill()
            inbox.end()

    def fail(self, exc: Exception) -> None:
        """Reading failed (a bug): say so, and end the stream as if the server had gone."""
        if self.inbox.ended:
            return
        self.inbox.take_at_once = None  # nothing more is handled in the callback
        self.inbox.items.append(
            TransportError(f"reading the server's output failed: {type(exc).__name__}: {exc}")
        )
        self.transport.kill()
        self.inbox.end()

    def eof(self) -> None:
        if self.inbox.ended:
            return
        item = line_item(self.lines.rest(), "server wrote")
        if item is not None and not self.closed:
            self.inbox.put(item)
        self.inbox.end()

    async def _more(self) -> None:
        if self.inbox.ended:
            await self._end()
        elif self._pipe_transport is not None:
            await self.inbox.wait()
        else:
            try:
                data = await self.pipe.read()
            except OSError:
                data = b""
            if data:
                self.chunk(data)
            else:
                self.eof()

    async def _end(self) -> None:
        self.finished = True
        transport = self.transport
        process = transport.process
        assert process is not None
        with anyio.move_on_after(KILL_GRACE if self.oversized else FLUSH_GRACE):
            await _wait_exit(process)
        when = "after an oversized message" if self.oversized else ""
        self.inbox.items.append(transport.exited(process, when))

    async def discard(self) -> None:
        """Drop the rest of stdout (nobody listens; the server must not block writing)."""
        await FrameReader.aclose(self)  # not ours: that would also close the pipe transport
        if self._pipe_transport is not None:
            self.inbox.unpause()  # the callbacks drop what comes now
            return
        with suppress(OSError):
            while not self.inbox.ended and await self.pipe.read():
                pass

    async def aclose(self) -> None:
        await super().aclose()
        if self._pipe_transport is not None:
            self._pipe_transport.close()


async def _wait_exit(process: Process) -> int:
    """Wait for the process to exit (a pidfd on Linux; a worker thread elsewhere)."""
    if process.returncode is not None:
        return process.returncode
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        try:
            pidfd = pidfd_open(process.pid)
        except OSError:
            pidfd = -1
        if pidfd >= 0:
            try:
                await anyio.wait_readable(pidfd)
            finally:
                os.close(pidfd)
            return process.wait()
    return await anyio.to_thread.run_sync(process.wait, abandon_on_cancel=True)


class StdioTransport(Transport):
    """Run `command *args` and talk to it over stdin/stdout.

    `command` is a program (run with `args`, the configured `env` on top of the
    allow-listed environment, in `cwd`) or a `Launch` already computed by
    `_spawn.launch`, which then says all of that.
    """

    name = "stdio"

    def __init__(
        self,
        command: str | Launch,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stderr: IO[bytes] | None = None,
        server_log: IO[bytes] | None = None,
        quiet: bool = False,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.launch = command if isinstance(command, Launch) else launch(command, args, env, cwd)
        self.command = self.launch.command
        self.args = self.launch.args
        self.env = self.launch.env
        self.cwd = self.launch.cwd
        self.traits = TransportTraits(command_line=(self.command, *self.args))
        self._stderr = stderr
        self._server_log = server_log
        self._quiet = quiet
        self.max_message_bytes = max_message_bytes
        self.process: Process | None = None
        #: Whether this command line's server is slow to exit on EOF (`use_exit_memory`).
        self._exit_memory: ExitMemory | None = None
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._writer_scope: anyio.CancelScope | None = None
        self._writer_done: anyio.Event | None = None
        #: `hold_output` asked that the next connection's stderr be held.
        self._hold_next = False
        #: The current connection's stderr, held until `release_output` (None: shown as it comes).
        self._held: list[bytes] | None = None
        self._held_size = 0
        #: The current connection's stderr is discarded (it ended on the era probe).
        self._dropping = False

    def describe(self) -> str:
        from mcpcli.text import redact_argv

        return " ".join(redact_argv([self.command, *self.args]))

    def _start(self) -> Process:
        process = adopt(self.launch)
        if process is not None:
            return process
        try:
            return spawn(self.command, self.args, self.env, self.cwd)
        except SpawnError as exc:
            raise TransportError(str(exc), hint=exc.hint) from None

    def use_exit_memory(self, memory: ExitMemory) -> None:
        self._exit_memory = memory

    def hold_output(self) -> None:
        self._hold_next = True

    def release_output(self, *, drop: bool = False) -> None:
        held, self._held = self._held, None
        if drop:
            self._dropping = True
        elif held:
            self._show_stderr(b"".join(held))

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Streams]:
        if self._dropping:
            self.stderr_tail.clear()  # the ended start's words do not explain this one's failures
        shown = not self._quiet and self._server_log is None
        self._held = [] if self._hold_next and shown else None
        self._held_size = 0
        self._hold_next = self._dropping = False
        process = self._start()
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        self.process = process
        self._writer_done = anyio.Event()
        _LIVE.add(self)
        stdin, stdout, stderr = _Pipe(process.stdin), _Pipe(process.stdout), _Pipe(process.stderr)
        reader = _ServerReader(self, stdout)
        writer = PipeWriter(stdin.fd)
        try:
            await reader.open()  # a checkpoint: a cancelled connect still ends the server below
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._flush_stdin, writer)
                tg.start_soon(self._relay_stderr, stderr)
                try:
                    yield reader, writer
                finally:
                    with anyio.CancelScope(shield=True):
                        await writer.aclose()
                        # Nobody reads the server's answers any more; keep its stdout
                        # flowing so a chatty server is not stuck writing while we wait.
                        tg.start_soon(reader.discard)
                        await self.shutdown(stdin)
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await reader.aclose()
                for pipe in (stdin, stdout, stderr):
                    pipe.close()
                if process.returncode is None:  # pragma: no cover - shutdown reaps it
                    self._signal_group(signal.SIGKILL)
                    await _wait_exit(process)
            _LIVE.discard(self)

    def exited(self, process: Process, when: str) -> ServerExited:
        return ServerExited(exit_message(process.returncode, when, self.stderr_tail), returncode=process.returncode)

    async def _flush_stdin(self, writer: PipeWriter) -> None:
        """Write what the server's stdin did not take at once, in order.

        Shielded from outer cancellation, so a message queued while the user
        presses Ctrl-C (`notifications/cancelled`) still reaches the server; it
        ends when the writer closes, and shutdown stops it if it hangs.
        """
        with anyio.CancelScope(shield=True) as scope:
            self._writer_scope = scope
            await writer.flush()
        assert self._writer_done is not None
        self._writer_done.set()

    def _show_stderr(self, chunk: bytes) -> None:
        """The server's stderr to ours (unless -q, or --server-log moved it)."""
        if self._quiet or self._server_log is not None:
            return
        target = self._stderr if self._stderr is not None else sys.stderr.buffer
        try:
            target.write(chunk)
            target.flush()
        except (OSError, ValueError):
            pass

    async def _relay_stderr(self, pipe: _Pipe) -> None:
        partial = b""
        try:
            while chunk := await pipe.read():
                if self._server_log is not None:
                    self._server_log.write(chunk)
                    self._server_log.flush()
                if self._held is not None:
                    self._held.append(chunk)
                    self._held_size += len(chunk)
                    if self._held_size > STDERR_HELD_MAX:
                        self.release_output()  # a server this chatty is shown as it talks
                elif not self._dropping:
                    self._show_stderr(chunk)
                lines = (partial + chunk).split(b"\n")
                partial = lines.pop()[-4096:]
                for raw in lines:
                    text = raw.decode("utf-8", "replace").strip()
                    if text:
                        self.stderr_tail.append(text[:300])
        except (OSError, ValueError):
            pass

    # -- shutdown ----------------------------------------------------------------

    def _signal_group(self, sig: int) -> bool:
        """Signal the server's process group; False when nothing is left in it."""
        if self.process is None:
            return False
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    async def shutdown(self, stdin: _Pipe) -> None:
        """Close stdin, give the server a moment (none if it is remembered as slow to exit:
        `spawn.eof_grace`), then TERM and KILL its whole group."""
        process = self.process
        if process is None:
            return
        # Let queued messages reach the server, but never wait on a stuck pipe for long.
        if self._writer_done is not None:
            with anyio.move_on_after(FLUSH_GRACE):
                await self._writer_done.wait()
        if self._writer_scope is not None:
            self._writer_scope.cancel()
            # The writer may be parked in the event loop on stdin's fd: let it leave before
            # the fd is closed, or a new fd (the pidfd below) reuses the number while the
            # loop still watches it (FileNotFoundError from the selector).
            if self._writer_done is not None:
                with anyio.move_on_after(FLUSH_GRACE):
                    await self._writer_done.wait()
        running = process.poll() is None
        stdin.close()
        grace = eof_grace(self._exit_memory) if running else 0.0
        if grace > 0:
            with anyio.move_on_after(grace):
                await _wait_exit(process)
            noted_exit(self._exit_memory, grace, process.poll() is not None)
        for sig, wait in ((signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, None)):
            if process.returncode is not None:
                break
            self._signal_group(sig)
            if wait is None:
                await _wait_exit(process)
            else:
                with anyio.move_on_after(wait):
                    await _wait_exit(process)
        # The leader is gone; children it left in the group (npx's node, a shell's
        # sleep) must not outlive us either.
        if self._signal_group(0):
            self._signal_group(signal.SIGTERM)
            self._signal_group(signal.SIGKILL)

    def kill(self) -> None:
        """Kill the whole group now (a second Ctrl-C)."""
        self._signal_group(signal.SIGKILL)
