"""The session daemon: a unix-socket listener holding one connected `Client` per session.

Each accepted connection is checked (the peer's uid must be ours: `peercred`) before
a byte is read. Its first line is a control request (`mcpcli.core.localrpc`): an op on
the sessions (`ops`), a tool call (`call`), or `attach`, which turns the connection into
a JSON-RPC relay onto the session's held connection (`attach`; what the server sends
back is routed to the command that caused it by `routing`).

Each session's connection is held by the relay's supervisor (`lifecycle`): a server
that exits puts its session in state "exited" with its last stderr lines (restarted with
backoff under `restart: on-failure`); closing a session, or stopping the daemon
(SIGTERM, the last session ending), ends the server's process group.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from mcpcli import rundir as paths
from mcpcli.core import localrpc as protocol
from mcpcli.daemon import groups, peercred
from mcpcli.errors import (
    AuthError,
    McpCliError,
    RequestTimeout,
    RPCError,
    TransportError,
    UsageError,
    unwrap,
)

from .attach import relay
from .call import serve_call
from .held import Sessions, typed
from .ops import Ops

__all__ = ["Daemon", "error_answer", "main"]

log = logging.getLogger("mcpcli.daemon")

JSON = dict[str, Any]

#: A daemon nobody has opened a session on within this long exits.
STARTUP_GRACE = 30.0
#: A connection must say what it wants within this long (else it is closed).
FIRST_LINE_TIMEOUT = 30.0
#: On the way out, how long the commands being answered may take to read their answers.
DRAIN_GRACE = 5.0


def error_answer(exc: BaseException) -> JSON:
    """A failed answer for a typed error, so the command re-raises the same kind; `type`
    (the error's own kind, e.g. "validation") lets the fast path print `--json` errors
    exactly as the one-shot command does."""
    answer = _error_answer(exc)
    if isinstance(exc, McpCliError):
        answer["error"]["type"] = exc.kind
    return answer


def _error_answer(exc: BaseException) -> JSON:
    hint = exc.hint if isinstance(exc, McpCliError) else None
    message = exc.message if isinstance(exc, McpCliError) else str(exc) or type(exc).__name__
    if isinstance(exc, RPCError):
        return protocol.error(exc.rpc_message, kind="rpc", hint=hint, code=exc.code, data=exc.data)
    if isinstance(exc, UsageError):
        return protocol.error(message, kind="usage", hint=hint)
    if isinstance(exc, AuthError):
        return protocol.error(message, kind="auth", hint=hint)
    if isinstance(exc, RequestTimeout):
        return protocol.error(message, kind="timeout", hint=hint)
    return protocol.error(message, kind="transport", hint=hint)


class Daemon:
    """The daemon's state and its listener. `await Daemon().serve()` runs until stopped."""

    def __init__(
        self, run_dir: Path | None = None, *, expected_uid: int | None = None, platform: str | None = None
    ) -> None:
        self.run_dir = run_dir or paths.run_dir()
        self.socket_path = paths.socket_path(self.run_dir)
        #: The uid every peer must have (ours; tests inject another to see the refusal).
        self.expected_uid = os.getuid() if expected_uid is None else expected_uid
        #: How peers' uids are read (`peercred`); tests inject another platform.
        self.platform = platform or sys.platform
        #: The sessions, and what their tasks share (the servers' process groups, on disk
        #: for the next daemon should this one be killed).
        self.table = Sessions(self.run_dir, groups.GroupRecord(self.run_dir), on_empty=self._last_ended)
        self.sessions = self.table.by_name
        self.groups = self.table.groups
        self.ops = Ops(self.table)
        self.stopping = anyio.Event()
        self.listening = anyio.Event()
        self._connections = 0
        self._idle_connections = anyio.Event()

    # -- lifecycle -----------------------------------------------------------------

    def stop(self) -> None:
        self.stopping.set()

    async def serve(self, handle_signals: bool = True) -> None:
        """Listen until stopped, then end every session (and its server's process group).

        `handle_signals` is off only where the loop is not in the main thread (tests)."""
        if not peercred.supported(self.platform):
            # Never serve connections whose uid cannot be checked.
            raise TransportError(
                f"the session daemon cannot check who connects to its socket on {self.platform} "
                "(no SO_PEERCRED or LOCAL_PEERCRED); sessions are not available here",
                hint="run commands without @NAME or keepAlive",
            )
        listener = await self._listen()
        # Only now is this the one daemon: end what a killed predecessor left running.
        for pgid in groups.reap(self.groups):
            log.info("daemon: ended process group %d left by a previous daemon", pgid)
        try:
            async with anyio.create_task_group() as tg:
                self.table.tg = tg
                accepting = anyio.CancelScope()
                tg.start_soon(self._serve_listener, listener, accepting)
                if handle_signals:
                    tg.start_soon(self._signals)
                tg.start_soon(self._startup_grace)
                self.listening.set()
                await self.stopping.wait()
                # Stop accepting and free the socket path first: a command arriving now
                # starts a new daemon instead of talking to one on its way out.
                accepting.cancel()
                self._unlink_own_socket()
                # A newer daemon may own `groups` from now on; ours keeps what it lists.
                self.groups.freeze()
                await self._close_all()
                # Let the commands being answered (a `close`) get their answers.
                with anyio.move_on_after(DRAIN_GRACE):
                    while self._connections:
                        self._idle_connections = anyio.Event()
                        await self._idle_connections.wait()
                tg.cancel_scope.cancel()
        finally:
            with contextlib.suppress(OSError):
                await listener.aclose()
            self._unlink_own_socket()

    async def _listen(self) -> Any:
        """Bind the socket, replacing a stale one (nothing answers on it)."""
        path = self.socket_path
        if path.exists() or path.is_symlink():
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(str(path))
            except OSError:
                path.unlink()  # stale: its daemon is gone
            else:
                raise TransportError(f"a daemon is already listening on {path}")
            finally:
                probe.close()
        listener = await anyio.create_unix_listener(path, mode=0o600)
        self._inode = os.stat(path).st_ino
        return listener

    def _unlink_own_socket(self) -> None:
        """Remove our socket file, never the one a newer daemon bound since."""
        with contextlib.suppress(OSError):
            if os.stat(self.socket_path).st_ino == self._inode:
                self.socket_path.unlink()

    async def _serve_listener(self, listener: Any, scope: anyio.CancelScope) -> None:
        assert self.table.tg is not None
        with scope:
            await listener.serve(self._handle, task_group=self.table.tg)

    async def _signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for signum in signals:
                log.info("daemon: %s, stopping", signal.Signals(signum).name)
                self.stop()
                return

    async def _startup_grace(self) -> None:
        await anyio.sleep(STARTUP_GRACE)
        if not self.sessions and not self._connections:
            log.info("daemon: no session was opened; exiting")
            self.stop()

    async def _close_all(self) -> None:
        for held in list(self.sessions.values()):
            held.closing = True
            held.task_scope.cancel()
        for held in list(self.sessions.values()):
            await held.done.wait()

    def _last_ended(self) -> None:
        log.info("daemon: the last session ended; exiting")
        self.stop()

    # -- connections ---------------------------------------------------------------

    async def _handle(self, stream: SocketStream) -> None:
        from anyio.abc import SocketAttribute

        self._connections += 1
        try:
            async with stream:
                raw = stream.extra(SocketAttribute.raw_socket)  # noqa: S610 - anyio, not Django
                try:
                    uid = peercred.peer_uid(raw, self.platform)
                except OSError as exc:
                    log.warning("daemon: refused a connection whose uid cannot be read: %s", exc)
                    return
                if uid != self.expected_uid:
                    log.warning("daemon: refused a connection from uid %s", uid)
                    return
                reader = BufferedByteReceiveStream(stream)
                line = b""
                with anyio.move_on_after(FIRST_LINE_TIMEOUT):
                    try:
                        line = await reader.receive_until(b"\n", protocol.MAX_MESSAGE_BYTES)
                    except (anyio.IncompleteRead, anyio.DelimiterNotFound, anyio.EndOfStream,
                            anyio.BrokenResourceError, OSError):
                        return
                if not line:
                    return  # silent, or an empty line: nothing to answer
                try:
                    message = protocol.decode(line)
                except protocol.ProtocolViolation as exc:
                    await self._answer(stream, protocol.error(str(exc), kind="usage"))
                    return
                await self._dispatch(stream, reader, message)
        finally:
            self._connections -= 1
            if not self._connections:
                self._idle_connections.set()

    async def _answer(self, stream: SocketStream, message: JSON) -> None:
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await stream.send(protocol.encode(message))

    async def _dispatch(
        self, stream: SocketStream, reader: BufferedByteReceiveStream, message: JSON
    ) -> None:
        op = message.get("op")
        if message.get("mcpcli") != protocol.VERSION or op not in protocol.OPS:
            await self._answer(stream, protocol.error(
                f"unsupported request (mcpcli {message.get('mcpcli')!r}, op {op!r})", kind="usage",
                hint="the daemon and this command are different versions: mcp session close --all"))
            return
        try:
            if op == "attach":
                held = await self.table.usable(message.get("name"))
                await self._answer(stream, protocol.ok(session=held.info()))
                await relay(held, stream, reader, self.table.ids)
                return
            if op == "call":
                answer = await serve_call(self.table, message, stream, reader)
                if answer is None:
                    return  # the command went away (Ctrl-C): the call was cancelled
            else:
                answer = await getattr(self.ops, f"op_{op}")(message)
        except Exception as exc:  # one request's failure never ends the daemon
            failure = typed(exc)
            if failure is not unwrap(exc):
                log.exception("daemon: %s failed", op)
            answer = error_answer(failure)
        await self._answer(stream, answer)


def main() -> int:
    """`python -m mcpcli.daemon`: serve until the last session ends or SIGTERM."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    # A daemon pins no directory; a session's server runs in the `cwd` its `open` names.
    os.chdir("/")
    try:
        daemon = Daemon()
    except paths.RunDirError as exc:
        log.error("%s", exc)
        return 4
    try:
        anyio.run(daemon.serve)
    except TransportError as exc:
        log.error("%s", exc.message)
        return 4
    return 0
