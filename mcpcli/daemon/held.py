"""A session the daemon holds (`Held`), and the table of them (`Sessions`).

A session is a named, supervised connection to one server (`mcpcli.relay.upstream`),
the commands attached to it, and what the relay knows for them: which command each
request in flight on the held connection is for (`mcpcli.relay.routing.Router`), the
progress tokens and resource subscriptions it shares out, and the server's fresh list
results (`mcpcli.relay.listings.Listings`).
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from mcpcli import rundir as paths
from mcpcli.config import ServerEntry
from mcpcli.connect import ConnectOptions
from mcpcli.core.jsonrpc import RequestId
from mcpcli.daemon import groups
from mcpcli.errors import McpCliError, TransportError, unwrap
from mcpcli.relay.listings import STALE_BY_METHOD, Listings
from mcpcli.relay.routing import NOBODY, Message, Nobody, Router
from mcpcli.text import redact_argv
from mcpcli.transports.stdio import StdioTransport, quote_stderr

from .commands import Attached, CallSink

if TYPE_CHECKING:
    from mcpcli.client import Client
    from mcpcli.relay.upstream import Supervisor

__all__ = ["ENTRY_FIELDS", "Held", "RingWriter", "Sessions", "gone_message", "typed"]

JSON = dict[str, Any]

ENTRY_FIELDS = (
    "name", "command", "args", "env", "cwd", "url", "headers", "transport", "path", "raw", "headers_helper",
)

#: What a command relaying through a session answers to (an attached command or a `call` op).
Downstream = Attached | CallSink

#: The `call` op whose call this task makes: the session's client counts the requests it
#: sends meanwhile as that op's (`Held.request_sent`).
calling: ContextVar[CallSink | None] = ContextVar("mcpcli_daemon_calling", default=None)


def typed(exc: BaseException) -> McpCliError:
    """The typed error inside what a task group raised (anything else: a transport error)."""
    inner = unwrap(exc)
    if isinstance(inner, McpCliError):
        return inner
    return TransportError(f"{type(inner).__name__}: {inner}")


class RingWriter:
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
    #: Holds the connection (`mcpcli.daemon.lifecycle` makes it).
    supervisor: Supervisor | None = None
    transport: Any = None
    started: float = field(default_factory=time.time)
    last_used: float = field(default_factory=time.monotonic)
    calls: int = 0
    #: `call` ops being served (commands that cannot answer a server request).
    calls_in_flight: int = 0
    #: The connections of the `call` ops being served, which take their call's notifications.
    call_sinks: set[CallSink] = field(default_factory=set)
    last_stderr: list[str] = field(default_factory=list)
    error: McpCliError | None = None
    closing: bool = False
    ready: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    task_scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    attached: set[Attached] = field(default_factory=set)
    #: Daemon progress token -> (the command, its own token).
    tokens: dict[str, tuple[Attached, Any]] = field(default_factory=dict)
    #: URI -> the commands subscribed to it (the server sees one subscription).
    subscribers: dict[str, set[Attached]] = field(default_factory=dict)
    #: (list method, cursor) -> a modern server's list result while its `ttlMs` lasts.
    listings: Listings[JSON] = field(default_factory=lambda: Listings(STALE_BY_METHOD))
    #: Which command a server message is for (see `mcpcli.daemon.routing`); what it knows:
    #: our id of each request in flight -> its command, task id -> the command with a
    #: `tasks/result` for it in flight.
    router: Router[Downstream] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.router = Router(
            self._in_flight,
            alive=lambda downstream: downstream in self.attached or downstream in self.call_sinks,
            # A request nobody registered (the client's own) is a `call` op's, when exactly
            # one runs.
            unregistered=lambda: list(self.call_sinks),
            rules=(self._asked_for_logs,),
        )

    def request_sent(self, request_id: RequestId) -> AbstractContextManager[object]:
        """The session's client sends a request (`ClientOptions.request_sent`): made within
        a `call` op, it is that op's, so that what the server sends with it (Streamable HTTP
        says) goes to that command."""
        return self.router.sent(request_id, calling.get())

    @property
    def client(self) -> Client | None:
        return self.supervisor.client if self.supervisor is not None else None

    def _in_flight(self, message: Message) -> list[Downstream]:
        """The commands with requests in flight (a `call` op counts: it takes notifications)."""
        busy: list[Downstream] = [a for a in self.attached if a.inflight]
        busy.extend(self.call_sinks)
        return busy

    def _asked_for_logs(self, message: Message) -> Downstream | Nobody | None:
        """A 2026-07-28 log message goes to the one command whose requests in flight asked
        for log messages (`_meta` logLevel): the server sends them for such requests only."""
        client = self.client
        if message.method != "notifications/message" or client is None or client.era != "modern":
            return None
        if client.options.log_level is not None and self.call_sinks:
            return NOBODY  # a `call` op's requests ask too (the session's own log level)
        asking = [a for a in self.attached if a.logged]
        if asking:
            return asking[0] if len(asking) == 1 else NOBODY
        return None

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


def gone_message(held: Held, error: McpCliError) -> str:
    """Why a request failed when the session's server went away under it, with the way out."""
    unavailable = held.unavailable() if held.state == "exited" else None
    text = unavailable.message if unavailable is not None else error.message
    return f"{text} (run `mcp session restart {held.name}`)"


@dataclass(eq=False)
class Sessions:
    """The daemon's sessions by name, and what their tasks share."""

    run_dir: Path
    #: The servers' process groups, on disk for the next daemon should this one be killed.
    groups: groups.GroupRecord
    by_name: dict[str, Held] = field(default_factory=dict)
    #: Ids no two commands share (server requests relayed to them, progress tokens).
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    #: Where the sessions' tasks run (the daemon's task group, once it serves).
    tg: anyio.abc.TaskGroup | None = None
    #: Told when the last session has ended.
    on_empty: Callable[[], None] = lambda: None

    def find(self, name: Any) -> Held:
        if not isinstance(name, str) or name not in self.by_name:
            raise TransportError(f"no session {name!r}", hint=f"mcp session open {name}")
        return self.by_name[name]

    async def usable(self, name: Any) -> Held:
        """The session, once ready: one starting or restarting is waited for."""
        held = self.find(name)
        while held.state in ("starting", "restarting"):
            await held.ready.wait()
            if held.ready.is_set() and held.state in ("starting", "restarting"):
                await anyio.sleep(0)  # a new start replaced the event: wait on that one
        if held.state != "ready" or held.client is None:
            raise held.unavailable()
        held.touch()
        return held

    def ended(self, held: Held) -> None:
        """`held`'s task is over: it is no longer listed."""
        if self.by_name.get(held.name) is held:
            del self.by_name[held.name]
        if not self.by_name:
            self.on_empty()

