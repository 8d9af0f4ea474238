"""The session transport: MCP over the daemon's unix socket, attached to a named session.

`connect()` opens the daemon's socket, sends `{"op": "attach", "name": N}` and
reads the answer (the session's INFO, or the daemon's error form raised as the
typed error a one-shot command would raise); from then on the connection carries
JSON-RPC lines both ways, exactly like a stdio server's pipes, and the daemon
relays them to the session's live connection. The session's era, known from the
answer, becomes the transport's traits, so the client never probes: a legacy
session goes straight to `initialize`, a modern one asks `server/discover`, and
the daemon answers both from what it cached.

It is handed the socket path and, for a keepAlive server, `prepare`: the blocking
open-or-join (`mcpcli.sessions`, which starts the daemon if needed) that `connect`
builds; it runs in a worker thread, so Ctrl-C still cancels the wait. Imports
foundations (the control protocol is `mcpcli.core.localrpc`), never the daemon itself.
"""

from __future__ import annotations

import errno
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream, SocketStream

from mcpcli.core import jsonrpc, localrpc
from mcpcli.errors import (
    ConnectionClosed,
    MessageTooLarge,
    ProtocolError,
    TransportError,
    from_error_report,
)
from mcpcli.transports import Envelope, Streams, Transport, TransportTraits, line_item

__all__ = ["DaemonTransport"]

READ_CHUNK = 256 * 1024


class _Lines:
    """Newline-delimited lines from a socket stream, each at most `limit` bytes."""

    def __init__(self, stream: SocketStream, limit: int) -> None:
        self.stream = stream
        self.limit = limit
        self.buffer = bytearray()

    async def next(self) -> bytes | None:
        """The next line without its newline; None at end of stream."""
        while True:
            at = self.buffer.find(b"\n")
            if at >= 0:
                line = bytes(self.buffer[:at])
                del self.buffer[: at + 1]
                return line
            if len(self.buffer) > self.limit:
                raise MessageTooLarge(f"the session daemon sent a message larger than {self.limit} bytes")
            try:
                chunk = await self.stream.receive(READ_CHUNK)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return None
            self.buffer += chunk


class DaemonTransport(Transport):
    """Attach to session `session` held by the daemon listening on `socket_path`."""

    name = "session"

    def __init__(
        self,
        session: str,
        socket_path: Path,
        *,
        prepare: Callable[[], Any] | None = None,
        max_message_bytes: int = localrpc.MAX_MESSAGE_BYTES,
    ) -> None:
        self.session = session
        self.socket_path = socket_path
        self._prepare = prepare
        self.max_message_bytes = max_message_bytes
        #: The session as the daemon described it when we attached.
        self.info: dict[str, Any] = {}

    def describe(self) -> str:
        target = self.info.get("target")
        return f"@{self.session}" + (f" ({target})" if isinstance(target, str) and target else "")

    def _missing(self) -> TransportError:
        return TransportError(
            f"no session {self.session!r} (no session daemon is running)",
            hint=f"mcp session open {self.session}",
        )

    async def _attach(self) -> tuple[SocketStream, _Lines]:
        if self._prepare is not None:
            await anyio.to_thread.run_sync(self._prepare, abandon_on_cancel=True)
        try:
            stream = await anyio.connect_unix(str(self.socket_path))
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ECONNREFUSED):
                raise self._missing() from None
            raise TransportError(
                f"cannot reach the session daemon at {self.socket_path}: {exc.strerror or exc}"
            ) from None
        lines = _Lines(stream, self.max_message_bytes)
        try:
            await stream.send(localrpc.encode(localrpc.request("attach", name=self.session)))
            line = await lines.next()
            if line is None:
                raise ConnectionClosed("the session daemon closed the connection without answering")
            try:
                answer = localrpc.decode(line)
            except localrpc.ProtocolViolation as exc:
                raise ProtocolError(f"the session daemon sent a bad answer: {exc}") from None
            if answer.get("ok") is not True:
                raise from_error_report(answer.get("error"))
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
            raise
        info = answer.get("session")
        self.info = info if isinstance(info, dict) else {}
        era = self.info.get("era")
        # The daemon answers the handshake from its cache: a legacy session needs no probe,
        # and a modern one answers `server/discover` at once (silence is never legacy).
        self.traits = TransportTraits(legacy_only=era == "legacy", probe_silence_is_legacy=False)
        return stream, lines

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Streams]:
        stream, lines = await self._attach()
        read_send, read_recv = anyio.create_memory_object_stream[Envelope | Exception](64)
        write_send, write_recv = anyio.create_memory_object_stream[Envelope](64)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read, lines, read_send)
                tg.start_soon(self._write, stream, write_recv)
                try:
                    yield read_recv, write_send
                finally:
                    await write_send.aclose()
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await read_recv.aclose()
                await stream.aclose()

    async def _read(self, lines: _Lines, out: ObjectSendStream[Envelope | Exception]) -> None:
        async with out:
            try:
                while True:
                    try:
                        line = await lines.next()
                    except MessageTooLarge as exc:
                        await out.send(exc)
                        return
                    if line is None:
                        await out.send(
                            ConnectionClosed(
                                f"session {self.session!r} closed the connection",
                                hint=f"`mcp session list` shows its state; `mcp session restart {self.session}`",
                            )
                        )
                        return
                    item = line_item(line, "the session relayed")
                    if item is not None:
                        await out.send(item)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return

    async def _write(self, stream: SocketStream, inbox: ObjectReceiveStream[Envelope]) -> None:
        async with inbox:
            try:
                async for envelope in inbox:
                    await stream.send(jsonrpc.encode(envelope.message) + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass  # the daemon went away; the reader reports it
