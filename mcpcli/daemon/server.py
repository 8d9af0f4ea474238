"""The session daemon: a unix-socket listener holding one connected `Client` per session.

Each accepted connection is checked (the peer's uid must be ours: `peercred`) before
a byte is read. Its first line is a control request (`mcpcli.daemon.protocol`); `attach`
turns the connection into a JSON-RPC relay onto the session's held connection:

* the command's handshake is answered from the session's cached InitializeResult (or
  DiscoverResult), so a warm command costs the server nothing;
* requests go out under fresh ids (the held `Session` allocates them) and progress
  tokens under daemon-unique ones, so many commands share one connection without
  seeing each other's answers or progress;
* the server's requests and notifications go to the command whose request caused
  them where the transport says so (Streamable HTTP: the request whose stream carried
  them), or to the one waiting on the task a message is tagged with, else to the one
  command with requests in flight; with none or several,
  requests are declined (as a client without the capability would) and notifications
  go to the session's log;
* a 2026-07-28 `subscriptions/listen`'s notifications go to the command whose listen
  they are tagged with (`_meta` subscriptionId, the listen's id, given back as the
  command's own), or, from a server that leaves the tag out, to every command whose
  listen asks for that kind (and that URI);
* `resources/subscribe` is shared: the server sees one subscription per URI, every
  subscribed command gets its updates, and the last one to leave unsubscribes.

A server that exits puts its session in state "exited" with its last stderr lines
(restarted with backoff under `restart: on-failure`); closing a session, or stopping
the daemon (SIGTERM, the last session ending), ends the server's process group.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import math
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from mcpcli import tracecontext
from mcpcli.client import Client, ClientFeatures, ClientOptions, caused_by
from mcpcli.config import ServerEntry
from mcpcli.connect import ConnectOptions, check_profile, open_transport
from mcpcli.daemon import groups, paths, peercred, protocol
from mcpcli.errors import (
    AuthError,
    ConnectionClosed,
    McpCliError,
    RequestTimeout,
    RPCError,
    ServerShuttingDown,
    TransportError,
    UsageError,
    unwrap,
)
from mcpcli.jsonrpc import RequestId
from mcpcli.protocol import (
    LOG_LEVEL_KEY,
    RELATED_TASK_KEY,
    SHUTTING_DOWN,
    SUBSCRIPTION_ID_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcpcli.text import redact_argv
from mcpcli.transports.stdio import StdioTransport, quote_stderr

__all__ = ["Daemon", "error_answer", "main"]

log = logging.getLogger("mcpcli.daemon")

JSON = dict[str, Any]

#: A daemon nobody has opened a session on within this long exits.
STARTUP_GRACE = 30.0
#: A connection must say what it wants within this long (else it is closed).
FIRST_LINE_TIMEOUT = 30.0
#: On the way out, how long the commands being answered may take to read their answers.
DRAIN_GRACE = 5.0
#: Restart backoff under `restart: on-failure`: first delay, cap, and attempts in a row.
RESTART_FIRST_DELAY = 0.5
RESTART_MAX_DELAY = 30.0
RESTART_ATTEMPTS = 5
#: A server that stayed up this long has its failure count (and backoff) reset.
RESTART_STABLE_AFTER = 60.0
#: Messages queued for one attached command before the slowest is dropped.
OUTBOX_SIZE = 1024
#: Last stderr lines reported for an exited session.
STDERR_LINES = 20
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
#: A modern session's list results are reused while their `ttlMs` lasts, until the
#: matching list_changed notification.
LIST_CHANGED = {
    "tools/list": "notifications/tools/list_changed",
    "prompts/list": "notifications/prompts/list_changed",
    "resources/list": "notifications/resources/list_changed",
    "resources/templates/list": "notifications/resources/list_changed",
}
#: The `subscriptions/listen` flag that asks for a list_changed notification (2026-07-28).
LISTEN_FLAGS = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
}
ENTRY_FIELDS = (
    "name", "command", "args", "env", "cwd", "url", "headers", "transport", "path", "raw", "headers_helper",
)
CONNECT_FIELDS = (
    "env", "cwd", "headers", "bearer_token", "transport", "insecure",
    "auth", "token_store", "profile", "connect_timeout",
)


def _typed(exc: BaseException) -> McpCliError:
    """The typed error inside what a task group raised (anything else: a transport error)."""
    inner = unwrap(exc)
    if isinstance(inner, McpCliError):
        return inner
    return TransportError(f"{type(inner).__name__}: {inner}")


def error_answer(exc: BaseException) -> JSON:
    """A failed answer for a typed error, so the command re-raises the same kind; `type`
    (the error's own kind, e.g. "validation") lets the fast path print `--json` errors
    exactly as the one-shot command does."""
    answer = _error_answer(exc)
    if isinstance(exc, McpCliError):
        answer["error"]["type"] = exc.kind
    return answer


def _gone_message(held: Held, typed: McpCliError) -> str:
    """Why a request failed when the session's server went away under it, with the way out."""
    unavailable = held.unavailable() if held.state == "exited" else None
    text = unavailable.message if unavailable is not None else typed.message
    return f"{text} (run `mcp session restart {held.name}`)"


def _seconds(value: Any) -> float | None:
    """A `call` op's timeout field: positive seconds, else no limit."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < math.inf:
        return float(value)
    return None


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


class _RingWriter:
    """The `server_log` a stdio transport copies the server's stderr to: the session's ring."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, data: bytes) -> int:
        with contextlib.suppress(OSError):
            paths.append_ring(self.path, data)
        return len(data)

    def flush(self) -> None:
        pass


@dataclass(eq=False)
class Held:
    """One named session: its target, its held connection and what commands see of it."""

    name: str
    entry: ServerEntry
    #: What is started: the entry, or for a tools.yaml file `mcp serve FILE` as a stdio
    #: child (in the `cwd` the command gave, in its own process group, not in the daemon).
    launch: ServerEntry
    connect: ConnectOptions
    client_options: JSON
    idle_timeout: float | None
    restart: str
    log_path: Path
    state: str = "starting"
    client: Client | None = None
    transport: Any = None
    started: float = field(default_factory=time.time)
    last_used: float = field(default_factory=time.monotonic)
    calls: int = 0
    #: `call` ops being served (commands that cannot answer a server request).
    calls_in_flight: int = 0
    #: The connections of the `call` ops being served, which take their call's notifications.
    call_sinks: set[_CallSink] = field(default_factory=set)
    last_stderr: list[str] = field(default_factory=list)
    error: McpCliError | None = None
    ever_ready: bool = False
    closing: bool = False
    restart_requested: bool = False
    #: Set to wake an exited session's task (a `restart`).
    waker: anyio.Event | None = None
    ready: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    task_scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    conn_scope: anyio.CancelScope | None = None
    attached: set[Attached] = field(default_factory=set)
    #: Daemon progress token -> (the command, its own token).
    tokens: dict[str, tuple[Attached, Any]] = field(default_factory=dict)
    #: Our id of a request in flight on the held connection -> the command it is for, so
    #: a server message the transport ties to that request goes to that command.
    requests: dict[RequestId, Attached] = field(default_factory=dict)
    #: Task id -> the command with a `tasks/result` for it in flight: a server message
    #: tagged with that task (`_meta` related-task, 2025-11-25) is for that command.
    task_waiters: dict[str, Attached] = field(default_factory=dict)
    #: URI -> the commands subscribed to it (the server sees one subscription).
    subscribers: dict[str, set[Attached]] = field(default_factory=dict)
    #: (method, cursor) -> (monotonic expiry, result): a modern server's fresh list results.
    lists: dict[tuple[str, str], tuple[float, JSON]] = field(default_factory=dict)

    def target(self) -> str:
        entry = self.entry
        if entry.url:
            from mcpcli.transports.http import display_url

            return display_url(entry.url)  # no userinfo or query: they may hold secrets
        if entry.path:
            return entry.path
        return " ".join(redact_argv([entry.command or "", *entry.args])).strip()  # args may hold tokens

    def same_target(self, other: ServerEntry) -> bool:
        mine, theirs = self.entry, other
        return all(getattr(mine, f) == getattr(theirs, f) for f in ENTRY_FIELDS if f not in ("name", "raw"))

    def take_restart(self) -> bool:
        """Whether a restart was asked for (and clear the request)."""
        asked, self.restart_requested = self.restart_requested, False
        return asked

    def touch(self) -> None:
        self.last_used = time.monotonic()

    def info(self) -> JSON:
        client = self.client
        server = client.server_info if client is not None else {}
        process = self.transport.process if isinstance(self.transport, StdioTransport) else None
        pid = process.pid if process is not None and process.returncode is None else None
        busy = any(a.inflight for a in self.attached) or self.calls_in_flight > 0
        return {
            "name": self.name,
            "target": self.target(),
            "transport": self.entry.transport,
            "era": client.era if client is not None else None,
            "protocolVersion": client.protocol_version if client is not None else None,
            "server": {"name": server.get("name"), "version": server.get("version")},
            "pid": pid,
            "started": self.started,
            "idle_seconds": 0.0 if busy else round(time.monotonic() - self.last_used, 3),
            "calls": self.calls,
            "state": self.state,
            "last_stderr": list(self.last_stderr),
        }

    def unavailable(self) -> TransportError:
        """Why a command cannot use this session now (exit 4)."""
        if self.state == "exited":
            message = f"session {self.name!r} has exited"
            if self.error is not None:
                message += f": {self.error.message}"
            message = quote_stderr(message, self.last_stderr)
            return TransportError(message, hint=f"mcp session restart {self.name}")
        return TransportError(f"session {self.name!r} is {self.state}",
                              hint=f"mcp session list; mcp session restart {self.name}")


class Attached:
    """One command attached to a session: its socket, its in-flight requests, its subscriptions."""

    def __init__(self, daemon: Daemon, held: Held, stream: SocketStream) -> None:
        self.daemon = daemon
        self.held = held
        self.stream = stream
        #: The command's request id -> the scope forwarding it (cancelling it cancels on the server).
        self.inflight: dict[Any, anyio.CancelScope] = {}
        self.subscribed: set[str] = set()
        #: Our id of each request forwarded for the command -> the command's own id.
        self.theirs: dict[RequestId, Any] = {}
        #: Our id of each of its `subscriptions/listen` in flight -> what it listens for.
        self.listens: dict[RequestId, JSON] = {}
        #: Our ids of its requests in flight that ask for log messages (`_meta` logLevel,
        #: 2026-07-28: a server sends `notifications/message` for those requests only).
        self.logged: set[RequestId] = set()
        #: Our request id -> where the command's answer to a server request goes.
        self.waiting: dict[str, _Answer] = {}
        self.outbox_send, self.outbox = anyio.create_memory_object_stream[bytes](OUTBOX_SIZE)
        self.gone = anyio.Event()

    def post(self, message: JSON) -> None:
        """Queue a JSON-RPC message for the command (never blocks; drops if it stopped reading)."""
        try:
            self.outbox_send.send_nowait(protocol.encode(message))
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("session %s: a message for a command was dropped", self.held.name)
        except protocol.ProtocolViolation as exc:
            log.warning("session %s: %s", self.held.name, exc)

    async def ask(self, method: str, params: JSON) -> JSON:
        """Send the command a server request and wait for its answer (a decline if it leaves)."""
        our_id = f"mcpcli-d{next(self.daemon.ids)}"
        answer = _Answer()
        scope = anyio.CancelScope()
        self.waiting[our_id] = answer
        try:
            self.post({"jsonrpc": "2.0", "id": our_id, "method": method, "params": params})
            with scope:
                self.daemon.on_gone(self, scope)
                await answer.event.wait()
        finally:
            self.waiting.pop(our_id, None)
            self.daemon.forget_gone(self, scope)
        if answer.message is None:
            return _declined(method)
        if "error" in answer.message:
            err = answer.message["error"] if isinstance(answer.message["error"], dict) else {}
            raise RPCError(int(err.get("code", -32603)), str(err.get("message", "error")), err.get("data"))
        result = answer.message.get("result")
        return result if isinstance(result, dict) else {}


class _CallSink:
    """A `call` op's connection as a receiver of the server's notifications for that call.

    The fast path cannot answer a server request, but it prints the log messages its
    call caused, as the normal path does: when it asks (`"notifications": true`), they
    are written to its connection before the answer line, in the order they came.
    Otherwise (an older command) the answer stays the only line and they go to the
    session's log; either way the call counts as a command with a request in flight.
    """

    def __init__(self, wanted: bool) -> None:
        self.wanted = wanted
        self.outbox_send, self.outbox = anyio.create_memory_object_stream[bytes](OUTBOX_SIZE)

    def post(self, message: JSON) -> None:
        """Queue a notification for the command (never blocks; drops if it stopped reading)."""
        with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError,
                                 protocol.ProtocolViolation):
            self.outbox_send.send_nowait(protocol.encode(message))

    async def pump(self, stream: SocketStream) -> None:
        """Write what was queued until the call is answered (`outbox_send` closed)."""
        async with self.outbox:
            async for data in self.outbox:
                try:
                    await stream.send(data)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    return


@dataclass
class _Answer:
    event: anyio.Event = field(default_factory=anyio.Event)
    message: JSON | None = None


def _declined(method: str) -> JSON:
    if method == "elicitation/create":
        return {"action": "decline"}
    raise RPCError(METHOD_NOT_FOUND, f"Method not found: {method} (no command is attached to answer it)")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _string_map(value: Any, *, none_ok: bool = False) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and (isinstance(v, str) or (none_ok and v is None)) for k, v in value.items()
    )


def _entry_from(raw: Any) -> ServerEntry:
    """The entry of an `open`, its fields checked (a bad one is a usage error, not a crash)."""
    if not isinstance(raw, dict):
        raise UsageError("open: `entry` must be an object")
    fields = {k: raw[k] for k in ENTRY_FIELDS if k in raw and raw[k] is not None}
    def fits(key: str, value: Any) -> bool:
        if key in ("args",):
            return _strings(value)
        if key in ("env", "headers"):
            return _string_map(value)
        if key == "transport":
            return value in ("stdio", "http", "sse", "yaml")
        if key == "raw":
            return isinstance(value, dict)
        if key == "headers_helper":
            return isinstance(value, str) or (_strings(value) and bool(value))
        return isinstance(value, str)

    bad = [k for k, v in fields.items() if not fits(k, v)]
    if bad or "name" not in fields:
        raise UsageError(f"open: bad entry field(s): {', '.join(bad) or 'name (missing)'}")
    transport = fields.get("transport", "stdio")
    needs = {"stdio": "command", "http": "url", "sse": "url", "yaml": "path"}[transport]
    if needs not in fields:
        raise UsageError(f"open: a {transport} entry needs its {needs}")
    return ServerEntry(**fields)


def _launch_entry(entry: ServerEntry) -> ServerEntry:
    """A tools.yaml entry runs as `python -m mcpcli serve FILE` over stdio, not in the daemon."""
    if entry.transport != "yaml" or entry.path is None:
        return entry
    return ServerEntry(name=entry.name, command=sys.executable,
                       args=["-m", "mcpcli", "serve", os.path.abspath(entry.path)],
                       env=entry.env, cwd=entry.cwd, transport="stdio", raw=entry.raw)


def _connect_from(raw: Any) -> ConnectOptions:
    fields = {k: raw[k] for k in CONNECT_FIELDS if isinstance(raw, dict) and raw.get(k) is not None}
    if not _string_map(fields.get("env", {}), none_ok=True) or not _string_map(fields.get("headers", {})):
        raise UsageError("open: connect.env and connect.headers must map names to strings")
    options = ConnectOptions(**fields)
    options.profile = check_profile(options.profile) if isinstance(options.profile, str) else None
    options.quiet = True
    if options.auth == "interactive":
        options.auth = "stored-only"  # the daemon has no terminal to sign in on
    return options


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
        self.sessions: dict[str, Held] = {}
        self.ids = itertools.count(1)
        self.stopping = anyio.Event()
        self.listening = anyio.Event()
        self._tg: Any = None
        self._connections = 0
        self._idle_connections = anyio.Event()
        self._gone_watch: dict[Attached, set[anyio.CancelScope]] = {}
        #: The servers' process groups, on disk for the next daemon should this one be killed.
        self.groups = groups.GroupRecord(self.run_dir)

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
                self._tg = tg
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
        assert self._tg is not None
        with scope:
            await listener.serve(self._handle, task_group=self._tg)

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

    def _session_ended(self, held: Held) -> None:
        if self.sessions.get(held.name) is held:
            del self.sessions[held.name]
        if not self.sessions:
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
                held = await self._usable(message.get("name"))
                await self._answer(stream, protocol.ok(session=held.info()))
                await self._relay(held, stream, reader)
                return
            if op == "call":
                sink = _CallSink(message.get("notifications") is True)
                answer = await self._unless_hung_up(reader, self._op_call(message, sink), stream, sink)
                if answer is None:
                    return  # the command went away (Ctrl-C): the call was cancelled
            else:
                answer = await getattr(self, f"_op_{op}")(message)
        except Exception as exc:  # one request's failure never ends the daemon
            typed = _typed(exc)
            if typed is not unwrap(exc):
                log.exception("daemon: %s failed", op)
            answer = error_answer(typed)
        await self._answer(stream, answer)

    async def _unless_hung_up(self, reader: BufferedByteReceiveStream, work: Awaitable[JSON],
                              stream: SocketStream, sink: _CallSink) -> JSON | None:
        """Run `work` unless the command hangs up first; then cancel it (on the server too).

        The notifications routed to `sink` meanwhile are written out before this returns
        (so before the answer), its error too."""
        done: list[JSON] = []
        failed: list[Exception] = []
        async with anyio.create_task_group() as tg:
            async def run() -> None:
                try:
                    done.append(await work)
                except Exception as exc:  # answered after the notifications it followed
                    failed.append(exc)
                sink.outbox_send.close()
                await pumped.wait()
                tg.cancel_scope.cancel()

            pumped = anyio.Event()

            async def pump() -> None:
                try:
                    await sink.pump(stream)
                finally:
                    pumped.set()

            async def watch() -> None:
                with contextlib.suppress(Exception):
                    await reader.receive()  # a command sends nothing more after its request
                tg.cancel_scope.cancel()

            tg.start_soon(run)
            tg.start_soon(watch)
            tg.start_soon(pump)
        if failed:
            raise failed[0]
        return done[0] if done else None

    def _find(self, name: Any) -> Held:
        if not isinstance(name, str) or name not in self.sessions:
            raise TransportError(f"no session {name!r}", hint=f"mcp session open {name}")
        return self.sessions[name]

    async def _usable(self, name: Any) -> Held:
        """The session, once ready: one starting or restarting is waited for."""
        held = self._find(name)
        while held.state in ("starting", "restarting"):
            await held.ready.wait()
            if held.ready.is_set() and held.state in ("starting", "restarting"):
                await anyio.sleep(0)  # a new start replaced the event: wait on that one
        if held.state != "ready" or held.client is None:
            raise held.unavailable()
        held.touch()
        return held

    # -- ops -----------------------------------------------------------------------

    async def _op_open(self, message: JSON) -> JSON:
        name = message.get("name")
        if not isinstance(name, str):
            raise UsageError("open: a session needs a name")
        entry = _entry_from(message.get("entry"))
        existing = self.sessions.get(name)
        if existing is not None:
            if not existing.same_target(entry):
                raise UsageError(f"session {name!r} is open on another server ({existing.target()})",
                                 hint=f"mcp session close {name}")
            profile = _connect_from(message.get("connect")).profile
            if existing.connect.profile != profile:
                raise UsageError(f"session {name!r} is open with profile {existing.connect.profile or 'default'!r}",
                                 hint=f"mcp session close {name}, or open another session for this profile")
            if not message.get("join", True):
                raise UsageError(f"session {name!r} is already open", hint=f"mcp session close {name}")
            await existing.ready.wait()
            if existing.state != "ready":
                raise existing.unavailable()
            return protocol.ok(session=existing.info())
        try:
            log_path = paths.session_log(name, self.run_dir)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        idle = message.get("idle_timeout")
        restart = message.get("restart") or "no"
        if restart not in ("no", "on-failure"):
            raise UsageError(f"open: restart must be 'no' or 'on-failure', not {restart!r}")
        client_options = message.get("client")
        held = Held(
            name=name,
            entry=entry,
            launch=_launch_entry(entry),
            connect=_connect_from(message.get("connect")),
            client_options=client_options if isinstance(client_options, dict) else {},
            idle_timeout=float(idle) if isinstance(idle, (int, float)) and idle > 0 else None,
            restart=restart,
            log_path=log_path,
        )
        held.connect.server_log = cast(IO[bytes], _RingWriter(log_path))
        self.sessions[name] = held
        assert self._tg is not None
        self._tg.start_soon(self._run, held)
        await held.ready.wait()
        if held.state != "ready":
            error = held.unavailable() if held.error is None else held.error
            held.closing = True
            held.task_scope.cancel()
            await held.done.wait()
            if held.last_stderr and isinstance(error, McpCliError):
                error.message = quote_stderr(error.message, held.last_stderr)
            raise error
        return protocol.ok(session=held.info())

    async def _op_list(self, message: JSON) -> JSON:
        return protocol.ok(sessions=[h.info() for h in self.sessions.values()])

    async def _op_close(self, message: JSON) -> JSON:
        if message.get("all"):
            chosen = list(self.sessions.values())
        else:
            chosen = [self._find(message.get("name"))]
        for held in chosen:
            held.closing = True
            held.task_scope.cancel()
        for held in chosen:
            await held.done.wait()
        return protocol.ok(closed=[h.name for h in chosen])

    async def _op_restart(self, message: JSON) -> JSON:
        held = self._find(message.get("name"))
        if held.state == "ready" or held.waker is not None:
            held.ready = anyio.Event()
            held.restart_requested = True
            if held.waker is not None:
                held.waker.set()  # an exited session waits for this
            elif held.conn_scope is not None:
                held.conn_scope.cancel()
        await held.ready.wait()
        if held.state != "ready":
            raise held.unavailable()
        return protocol.ok(session=held.info())

    async def _op_logs(self, message: JSON) -> JSON:
        held = self._find(message.get("name"))
        try:
            text = held.log_path.read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            text = ""
        return protocol.ok(path=str(held.log_path), text=text)

    async def _op_call(self, message: JSON, sink: _CallSink) -> JSON:
        keep_alive = message.get("keep_alive")
        if keep_alive is not None and not self._joins(message.get("name"), keep_alive):
            # Not this keepAlive server's session as `open` would join it (none, another
            # server, another profile, a config it cannot read): the command's full path
            # opens or joins it, and words any problem, itself.
            return {**protocol.error(f"no session {message.get('name')!r} of this keepAlive server"),
                    "fallback": True}
        held = await self._usable(message.get("name"))
        held.call_sinks.add(sink)
        # The command's trace (`--traceparent`, TRACEPARENT): the call's requests carry it
        # on, as the command's own client would (the daemon records no spans).
        trace = message.get("trace")
        token = tracecontext.current.set(
            tracecontext.parse(trace.get("traceparent"), trace.get("tracestate")) if isinstance(trace, dict) else None
        )
        try:
            return await self._call(held, message)
        finally:
            tracecontext.current.reset(token)
            held.call_sinks.discard(sink)

    def _joins(self, name: Any, keep_alive: Any) -> bool:
        """Whether the `call` of a keepAlive server by its name (`keep_alive`: the server's name,
        the command's config file, the values of the variables its entry names, the profile)
        may use session `name` as is: the entry resolves as the command would resolve it and
        is the session's, with the same profile (what `open` checks when it joins)."""
        from mcpcli.config import Config

        if not isinstance(keep_alive, dict) or not isinstance(name, str):
            return False
        server, config, env, profile = (keep_alive.get(k) for k in ("server", "config", "env", "profile"))
        if (not isinstance(server, str) or not isinstance(config, str) or not os.path.isabs(config)
                or not _string_map(env) or not (profile is None or isinstance(profile, str))):
            return False
        held = self.sessions.get(name)
        if held is None:
            return False
        try:
            entry = Config(Path(config)).get(server)
            if entry is None or not entry.keep_alive or entry.transport == "yaml":
                return False  # a tools.yaml path is the command's, relative to its directory
            resolved = entry.resolved(env)
        except McpCliError:
            return False
        return held.same_target(resolved) and held.connect.profile == profile

    async def _call(self, held: Held, message: JSON) -> JSON:
        from mcpcli.args import call_arguments, meta_items, needs_listing

        client = held.client
        assert client is not None
        tool = message.get("tool")
        if not isinstance(tool, str):
            raise UsageError("call: a tool name is needed")
        items = message.get("args") or []
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise UsageError("call: args must be a list of strings")
        for item in items:
            if "=@" in item:
                # A file named on the command line is relative to the command's directory.
                raise UsageError("call: --arg KEY=@FILE is read by the command, not the daemon")
        base = None
        if message.get("json") is not None:
            from mcpcli.args import read_json_source

            text = message["json"]
            if not isinstance(text, str) or text.startswith("@") or text == "-":
                raise UsageError("call: --args must be JSON text here")
            base = read_json_source(text)
        meta_raw = message.get("meta") or []
        if not isinstance(meta_raw, list) or not all(isinstance(i, str) for i in meta_raw):
            raise UsageError("call: meta must be a list of strings")
        meta = meta_items(meta_raw)  # --meta KEY=VALUE, read as the command's own client reads it
        validate = message.get("validate", True) is not False
        timeout = _seconds(message.get("timeout"))
        max_timeout = _seconds(message.get("max_timeout"))
        held.touch()
        definition = listing = None
        if needs_listing(items, validate=validate):
            # What `mcp tools call` asks before calling, under the same bound (--timeout).
            try:
                with anyio.fail_after(timeout):
                    definition = await client.get_tool(tool)
                    if definition is None and validate:
                        listing = await client.list_tools()
            except TimeoutError:
                raise RequestTimeout(f"tools/list timed out after {timeout:.1f}s") from None
        arguments = call_arguments(tool, definition, items, base=base, validate=validate, listing=listing)
        held.calls += 1
        held.calls_in_flight += 1
        try:
            # The command's --timeout and --max-timeout, as its own client would apply them
            # (progress restarts the clock; the server is told on timeout).
            result = await client.call_tool(tool, arguments, timeout=timeout, max_timeout=max_timeout,
                                            meta=meta or None)
        except Exception as exc:
            typed = _typed(exc)
            if not isinstance(typed, ConnectionClosed):
                raise
            # The server went away under the call: what the relay tells an attached command,
            # as its client words it (`session.rpc_error_from`), so both paths print one line.
            raise ServerShuttingDown(
                f"the server shut down before answering: {_gone_message(held, typed)}") from None
        finally:
            held.calls_in_flight -= 1
        return protocol.ok(result=result)

    # -- one session ---------------------------------------------------------------

    def _client_options(self, held: Held) -> ClientOptions:
        raw = held.client_options
        features = ClientFeatures(elicit=lambda params: self._server_request(held, "elicitation/create", params))
        if raw.get("sampling") is True:
            # Declared only when the opening command can sample: the capability is the
            # session's, and a command that cannot answer would only decline.
            features.sample = lambda params: self._server_request(held, "sampling/createMessage", params)
        roots = raw.get("roots")
        if isinstance(roots, list):
            features.roots = [r for r in roots if isinstance(r, dict)]
        timeout = raw.get("timeout")
        options = ClientOptions(
            features=features,
            timeout=float(timeout) if isinstance(timeout, (int, float)) else held.connect.connect_timeout,
            max_timeout=None,
            on_notification=lambda method, params: self._server_notification(held, method, params),
        )
        if isinstance(raw.get("protocol"), str):
            options.protocol = raw["protocol"]
        if isinstance(raw.get("log_level"), str):
            options.log_level = raw["log_level"]
        return options

    async def _run(self, held: Held) -> None:
        """Hold the session's connection until it is closed; restart it when asked or allowed."""
        failures = 0
        try:
            with held.task_scope:
                while True:
                    reason: McpCliError | None = None
                    ready_at = math.inf
                    held.transport = None
                    try:
                        transport = self._recorded(open_transport(held.launch, held.connect))
                        held.transport = transport
                        async with Client(transport, self._client_options(held)) as client:
                            # The handshake was bounded; a command's requests carry their own
                            # limits (the relay's are the command's, `call` sends its timeout).
                            client.session.default_timeout = None
                            held.client = client
                            held.state = "ready"
                            held.error = None
                            held.ever_ready = True
                            held.started = time.time()
                            ready_at = time.monotonic()
                            held.touch()
                            held.ready.set()
                            with anyio.CancelScope() as held.conn_scope:
                                await self._hold(held, client)
                            held.conn_scope = None
                            reason = client.session.closed
                    except Exception as exc:  # the server's failure, whatever its shape
                        reason = _typed(exc)
                    finally:
                        held.client = None
                        held.conn_scope = None
                        tail = held.transport.stderr_tail if isinstance(held.transport, StdioTransport) else ()
                        held.last_stderr = list(tail)[-STDERR_LINES:]
                        self._drop_attached(held)
                    if held.take_restart():
                        held.state = "restarting"
                        failures = 0
                        continue
                    held.state = "exited"
                    held.error = reason or TransportError("the server closed the connection")
                    held.ready.set()
                    if time.monotonic() - ready_at >= RESTART_STABLE_AFTER:
                        failures = 0
                    if held.restart == "on-failure" and held.ever_ready and failures < RESTART_ATTEMPTS:
                        delay = min(RESTART_FIRST_DELAY * 2**failures, RESTART_MAX_DELAY)
                        failures += 1
                        held.ready = anyio.Event()
                        held.state = "restarting"
                        await anyio.sleep(delay)
                        continue
                    # Wait for `restart` (or close / idle timeout) in state "exited".
                    held.waker = anyio.Event()
                    await self._idle_or(held, held.waker)
                    held.waker = None
                    if not held.take_restart():
                        break
                    held.state = "restarting"
        finally:
            held.state = "closed"
            held.client = None
            held.ready.set()
            held.done.set()
            self._session_ended(held)

    def _recorded(self, transport: Any) -> Any:
        """The transport, its server's process group (if it starts one) recorded in
        `<rundir>/groups` while it may be alive, so a killed daemon's successor ends it."""
        inner = transport.connect

        @asynccontextmanager
        async def connect() -> AsyncIterator[Any]:
            pgid = None
            try:
                async with inner() as streams:
                    process = transport.process if isinstance(transport, StdioTransport) else None
                    if process is not None:
                        pgid = process.pid
                        self.groups.add(pgid)
                    yield streams
            finally:
                # The transport ended the group on its way out; keep the record if not.
                if pgid is not None and not groups.members(pgid):
                    self.groups.discard(pgid)

        transport.connect = connect
        return transport

    async def _hold(self, held: Held, client: Client) -> None:
        """Until the server goes away, or the session idles out."""
        async with anyio.create_task_group() as tg:
            async def closed() -> None:
                await client.session.wait_closed()
                tg.cancel_scope.cancel()

            tg.start_soon(closed)
            await self._idle_or(held, None)
            held.closing = True  # idled out
            tg.cancel_scope.cancel()
            held.task_scope.cancel()

    async def _idle_or(self, held: Held, event: anyio.Event | None) -> None:
        """Return when `event` is set, or once the session has been idle for its timeout."""
        while True:
            if held.idle_timeout is None or held.attached:
                wait = 3600.0 if held.idle_timeout is None else held.idle_timeout
            else:
                wait = held.last_used + held.idle_timeout - time.monotonic()
                if wait <= 0:
                    log.info("session %s: idle for %ss; closing", held.name, held.idle_timeout)
                    held.closing = True
                    return
            if event is None:
                await anyio.sleep(wait)
            else:
                with anyio.move_on_after(wait):
                    await event.wait()
                if event.is_set():
                    return

    def _drop_attached(self, held: Held) -> None:
        """The connection is gone: end every attached command's relay (it reports exit 4)."""
        for attached in list(held.attached):
            attached.gone.set()
            for scope in attached.inflight.values():
                scope.cancel()
        held.tokens.clear()
        held.requests.clear()
        held.task_waiters.clear()
        held.subscribers.clear()

    # -- routing of the server's messages --------------------------------------------

    def _owner(
        self, held: Held, related: RequestId | None, params: JSON, method: str | None = None
    ) -> Attached | _CallSink | None:
        """The command a server message is for.

        The transport may say which of our requests caused it (`related`: the request
        whose Streamable HTTP stream carried it): then the command that request was
        forwarded for; a request no attached command made is a `call` op's when exactly
        one is running (else nobody's). A message tagged with a task (any transport) is
        for the command waiting on that task's `tasks/result`. Else the one command with
        requests in flight, if exactly one has (a `call` op counts as a command, one that
        takes notifications but cannot answer a request). A 2026-07-28 log message goes to
        the one command whose requests in flight asked for log messages (`_meta` logLevel),
        if one has, before that rule: the server sends them for such requests only."""
        if related is not None:
            owner = held.requests.get(related)
            if owner is not None and owner in held.attached:
                return owner
            return next(iter(held.call_sinks)) if len(held.call_sinks) == 1 else None
        meta = params.get("_meta")
        task = meta.get(RELATED_TASK_KEY) if isinstance(meta, dict) else None
        task_id = task.get("taskId") if isinstance(task, dict) else None
        waiter = held.task_waiters.get(task_id) if isinstance(task_id, str) else None
        if waiter is not None and waiter in held.attached:
            return waiter
        if method == "notifications/message" and held.client is not None and held.client.era == "modern":
            asking = [a for a in held.attached if a.logged]
            if held.client.options.log_level is not None and held.call_sinks:
                return None  # a `call` op's requests ask too (the session's own log level)
            if asking:
                return asking[0] if len(asking) == 1 else None
        busy: list[Attached | _CallSink] = [a for a in held.attached if a.inflight]
        busy.extend(held.call_sinks)
        return busy[0] if len(busy) == 1 else None

    async def _server_request(self, held: Held, method: str, params: JSON) -> JSON:
        owner = self._owner(held, caused_by.get(), params)
        if not isinstance(owner, Attached):
            log.info("session %s: declined %s (no single command to ask)", held.name, method)
            return _declined(method)
        return await owner.ask(method, params)

    def _server_notification(self, held: Held, method: str, params: JSON) -> None:
        if method.endswith("/list_changed"):
            for key in [k for k in held.lists if LIST_CHANGED[k[0]] == method]:
                del held.lists[key]
        if self._to_listeners(held, method, params):
            return
        if method == "notifications/progress":
            route = held.tokens.get(params.get("progressToken"))  # type: ignore[arg-type]
            if route is not None:
                attached, token = route
                attached.post({"jsonrpc": "2.0", "method": method,
                               "params": {**params, "progressToken": token}})
                return
        if method == "notifications/resources/updated":
            uri = params.get("uri")
            for attached in held.subscribers.get(uri, set()) if isinstance(uri, str) else set():
                attached.post({"jsonrpc": "2.0", "method": method, "params": params})
            return
        owner = self._owner(held, caused_by.get(), params, method)
        if owner is not None and (not isinstance(owner, _CallSink) or owner.wanted):
            owner.post({"jsonrpc": "2.0", "method": method, "params": params})
            return
        _to_log(held, method, params)

    def _to_listeners(self, held: Held, method: str, params: JSON) -> bool:
        """Deliver a `subscriptions/listen` notification (2026-07-28); False if it is none.

        The server tags each with its listen's id (`_meta` subscriptionId): ours, so the
        command that sent the listen gets it, tagged with its own id. A tag no listen in
        flight has (its command left) goes to the session's log. An untagged change
        notification from a server that leaves the tag out goes to every command whose
        listen asks for it (list_changed by kind, resources/updated by URI)."""
        meta = params.get("_meta")
        sid = meta.get(SUBSCRIPTION_ID_KEY) if isinstance(meta, dict) else None
        if isinstance(sid, (int, str)) and not isinstance(sid, bool):
            owner = held.requests.get(sid)
            if owner is None or owner not in held.attached or sid not in owner.listens:
                _to_log(held, method, params)
                return True
            tagged = {**params, "_meta": {**cast(JSON, meta), SUBSCRIPTION_ID_KEY: owner.theirs[sid]}}
            owner.post({"jsonrpc": "2.0", "method": method, "params": tagged})
            return True
        if method != "notifications/resources/updated" and method not in LISTEN_FLAGS:
            return False
        uri = params.get("uri")
        listeners = [a for a in held.attached if any(_listens_for(w, method, uri) for w in a.listens.values())]
        for attached in listeners:
            attached.post({"jsonrpc": "2.0", "method": method, "params": params})
        return bool(listeners)

    def on_gone(self, attached: Attached, scope: anyio.CancelScope) -> None:
        """Cancel `scope` when `attached` leaves (a server request it will never answer)."""
        if attached.gone.is_set():
            scope.cancel()
        self._gone_watch.setdefault(attached, set()).add(scope)

    def forget_gone(self, attached: Attached, scope: anyio.CancelScope) -> None:
        self._gone_watch.get(attached, set()).discard(scope)

    # -- the attach relay --------------------------------------------------------------

    async def _relay(self, held: Held, stream: SocketStream, reader: BufferedByteReceiveStream) -> None:
        attached = Attached(self, held, stream)
        held.attached.add(attached)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._pump_out, attached)

                async def watch() -> None:
                    await attached.gone.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(watch)
                while True:
                    try:
                        line = await reader.receive_until(b"\n", protocol.MAX_MESSAGE_BYTES)
                    except (anyio.IncompleteRead, anyio.DelimiterNotFound, anyio.EndOfStream,
                            anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        break
                    if not line.strip():
                        continue
                    try:
                        message = protocol.decode(line)
                    except protocol.ProtocolViolation:
                        attached.post({"jsonrpc": "2.0", "id": None,
                                       "error": {"code": -32700, "message": "Parse error"}})
                        continue
                    self._from_command(attached, message, tg)
                tg.cancel_scope.cancel()
        finally:
            await self._detach(attached)

    async def _pump_out(self, attached: Attached) -> None:
        async with attached.outbox:
            async for data in attached.outbox:
                try:
                    await attached.stream.send(data)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    attached.gone.set()
                    return

    async def _detach(self, attached: Attached) -> None:
        held = attached.held
        held.attached.discard(attached)
        held.touch()
        attached.gone.set()
        for scope in self._gone_watch.pop(attached, set()):
            scope.cancel()
        for answer in attached.waiting.values():
            answer.event.set()
        for token, (owner, _) in list(held.tokens.items()):
            if owner is attached:
                del held.tokens[token]
        client = held.client
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            for uri in list(attached.subscribed):
                await self._unsubscribe(attached, uri, client)
        attached.outbox_send.close()

    def _from_command(self, attached: Attached, message: JSON, tg: Any) -> None:
        method = message.get("method")
        has_id = "id" in message
        if not isinstance(method, str):
            if has_id:  # the command's answer to a server request we relayed
                answer = attached.waiting.get(message["id"])
                if answer is not None:
                    answer.message = message
                    answer.event.set()
            return
        if not has_id:
            if method == "notifications/initialized":
                return
            if method == "notifications/cancelled":
                params = message.get("params") or {}
                scope = attached.inflight.get(params.get("requestId")) if isinstance(params, dict) else None
                if scope is not None:
                    scope.cancel()  # the held session tells the server, under our id
                return
            client = attached.held.client
            if client is not None:
                tg.start_soon(self._forward_notification, client, method, message.get("params"))
            return
        request_id = message["id"]
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        handshake = self._handshake_answer(attached.held, method, params)
        if handshake is not None:
            attached.post({"jsonrpc": "2.0", "id": request_id, **handshake})
            return
        scope = anyio.CancelScope()
        attached.inflight[request_id] = scope
        tg.start_soon(self._forward, attached, request_id, method, params, scope)

    async def _forward_notification(self, client: Client, method: str, params: Any) -> None:
        with contextlib.suppress(McpCliError):
            await client.session.notify(method, params if isinstance(params, dict) else None)

    def _handshake_answer(self, held: Held, method: str, params: JSON) -> JSON | None:
        """The answer to the command's handshake, from the session's own (no server round trip)."""
        client = held.client
        if client is None or method not in ("initialize", "server/discover"):
            return None
        if method == "initialize":
            if client.era == "legacy":
                return {"result": client.handshake}
            return {"error": {"code": UNSUPPORTED_PROTOCOL_VERSION,
                              "message": "this session speaks a modern protocol revision",
                              "data": {"supported": client.supported_versions}}}
        if client.era == "modern":
            return {"result": client.handshake}
        return {"error": {"code": METHOD_NOT_FOUND, "message": "Method not found: server/discover"}}

    async def _forward(
        self, attached: Attached, request_id: Any, method: str, params: JSON, scope: anyio.CancelScope
    ) -> None:
        held = attached.held
        client = held.client
        held.calls += 1
        held.touch()
        token: str | None = None
        try:
            with scope:
                if client is None:
                    raise held.unavailable()
                if method == "resources/subscribe":
                    result = await self._subscribe(attached, params, client)
                elif method == "resources/unsubscribe":
                    uri = params.get("uri")
                    result = await self._unsubscribe(attached, uri, client) if isinstance(uri, str) else {}
                elif (cached := self._cached_list(held, method, params)) is not None:
                    result = cached
                else:
                    sent = dict(params)
                    meta = sent.get("_meta")
                    if isinstance(meta, dict) and "progressToken" in meta:
                        token = f"mcpcli-p{next(self.ids)}"
                        held.tokens[token] = (attached, meta["progressToken"])
                        sent["_meta"] = {**meta, "progressToken": token}
                    ours = client.session.next_id()
                    held.requests[ours] = attached
                    attached.theirs[ours] = request_id
                    if isinstance(meta, dict) and meta.get(LOG_LEVEL_KEY) is not None:
                        attached.logged.add(ours)
                    if method == "subscriptions/listen":
                        wanted = params.get("notifications")
                        attached.listens[ours] = wanted if isinstance(wanted, dict) else {}
                    task_id = params.get("taskId") if method == "tasks/result" else None
                    if isinstance(task_id, str):
                        held.task_waiters[task_id] = attached
                    try:
                        result = await client.session.request(
                            method, sent, timeout=None, max_timeout=None, progress_token=False,
                            headers=client.request_headers(method, sent), request_id=ours,
                        )
                    finally:
                        held.requests.pop(ours, None)
                        attached.theirs.pop(ours, None)
                        attached.listens.pop(ours, None)
                        attached.logged.discard(ours)
                        if isinstance(task_id, str) and held.task_waiters.get(task_id) is attached:
                            del held.task_waiters[task_id]
                    self._remember_list(held, method, params, result)
                    if method == "subscriptions/listen":
                        result = _retagged(result, ours, request_id)
                attached.post({"jsonrpc": "2.0", "id": request_id, "result": result})
                if _keeps_token(result):
                    token = None  # the task's progress still goes to this command
                return
        except Exception as exc:
            typed = _typed(exc)
            if isinstance(typed, RPCError):
                error: JSON = {"code": typed.code, "message": typed.rpc_message, "data": typed.data}
            else:
                # A shutting-down error: the command's client reports the connection (exit 4).
                error = {"code": SHUTTING_DOWN, "data": {"reason": "shutdown"},
                         "message": _gone_message(held, typed)}
            attached.post({"jsonrpc": "2.0", "id": request_id, "error": error})
        finally:
            attached.inflight.pop(request_id, None)
            if token is not None:
                held.tokens.pop(token, None)

    def _cached_list(self, held: Held, method: str, params: JSON) -> JSON | None:
        """A fresh list result of a modern session, to answer without a round trip."""
        if method not in LIST_CHANGED or held.client is None or held.client.era != "modern":
            return None
        hit = held.lists.get((method, json.dumps(params.get("cursor"))))
        if hit is None or hit[0] <= time.monotonic():
            return None
        return hit[1]

    def _remember_list(self, held: Held, method: str, params: JSON, result: JSON) -> None:
        ttl = result.get("ttlMs")
        if method not in LIST_CHANGED or held.client is None or held.client.era != "modern":
            return
        if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0:
            expiry = time.monotonic() + ttl / 1000
            held.lists[(method, json.dumps(params.get("cursor")))] = (expiry, result)

    async def _subscribe(self, attached: Attached, params: JSON, client: Client) -> JSON:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise RPCError(INVALID_PARAMS, "resources/subscribe needs a uri")
        held = attached.held
        subscribers = held.subscribers.setdefault(uri, set())
        if not subscribers:
            try:
                await client.session.request("resources/subscribe", params, timeout=None,
                                             max_timeout=None, progress_token=False)
            except BaseException:
                held.subscribers.pop(uri, None)
                raise
        subscribers.add(attached)
        attached.subscribed.add(uri)
        return {}

    async def _unsubscribe(self, attached: Attached, uri: str, client: Client | None) -> JSON:
        held = attached.held
        attached.subscribed.discard(uri)
        subscribers = held.subscribers.get(uri)
        if subscribers is None or attached not in subscribers:
            return {}
        subscribers.discard(attached)
        if not subscribers:
            del held.subscribers[uri]
            if client is not None:
                with contextlib.suppress(McpCliError):
                    await client.session.request("resources/unsubscribe", {"uri": uri}, timeout=10,
                                                 progress_token=False)
        return {}


def _to_log(held: Held, method: str, params: JSON) -> None:
    """A server notification no command takes: into the session's log."""
    line = protocol.encode({"notification": method, "params": params})
    with contextlib.suppress(OSError):
        paths.append_ring(held.log_path, b"[mcpcli] " + line)


def _listens_for(wanted: JSON, method: str, uri: Any) -> bool:
    """Whether a listen that asked for `wanted` (its `notifications`) takes this one."""
    if method == "notifications/resources/updated":
        uris = wanted.get("resourceSubscriptions")
        return isinstance(uris, list) and uri in uris
    return wanted.get(LISTEN_FLAGS[method]) is True


def _retagged(result: JSON, ours: RequestId, theirs: Any) -> JSON:
    """A listen's final result, its subscriptionId (ours) given back as the command's id."""
    meta = result.get("_meta")
    if not isinstance(meta, dict) or meta.get(SUBSCRIPTION_ID_KEY) != ours:
        return result
    return {**result, "_meta": {**meta, SUBSCRIPTION_ID_KEY: theirs}}


def _keeps_token(result: JSON) -> bool:
    """A task's progress outlives the request that created it."""
    return "task" in result or result.get("resultType") == "task"


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
