"""A session's life: its connection held by a `mcpcli.relay.upstream.Supervisor` until it
is closed or idles out, and made again when asked (`restart`) or allowed.

States: "starting" (the first connection), "ready", "restarting" (a restart asked for,
or under `restart: on-failure` after the server exited: 0.5 s doubling up to 30 s, five
times in a row at most, the count forgiven after 60 s up), "exited" (waiting for a
`restart`, or its idle timeout, with the server's last stderr lines), "closed".
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from mcpcli.client import Client, ClientFeatures, ClientOptions
from mcpcli.connect import open_transport
from mcpcli.daemon import groups
from mcpcli.errors import TransportError
from mcpcli.relay.upstream import Backoff, Owner, Policy, Supervisor
from mcpcli.transports.stdio import StdioTransport

from .held import Held, Sessions, typed
from .routing import server_notification, server_request

__all__ = ["RESTART", "restart_session", "run_session"]

log = logging.getLogger("mcpcli.daemon")

#: Restart backoff under `restart: on-failure`: first delay, cap, attempts in a row; a
#: server that stayed up 60 s has its failure count (and backoff) reset.
RESTART = Backoff(first=0.5, cap=30.0, attempts=5, stable_after=60.0)
#: Last stderr lines reported for an exited session.
STDERR_LINES = 20


def _client_options(held: Held) -> ClientOptions:
    raw = held.client_options
    features = ClientFeatures(elicit=lambda params: server_request(held, "elicitation/create", params))
    if raw.get("sampling") is True:
        # Declared only when the opening command can sample: the capability is the
        # session's, and a command that cannot answer would only decline.
        features.sample = lambda params: server_request(held, "sampling/createMessage", params)
    roots = raw.get("roots")
    if isinstance(roots, list):
        features.roots = [r for r in roots if isinstance(r, dict)]
    timeout = raw.get("timeout")
    options = ClientOptions(
        features=features,
        timeout=float(timeout) if isinstance(timeout, (int, float)) else held.connect.connect_timeout,
        max_timeout=None,
        on_notification=lambda method, params: server_notification(held, method, params),
        request_sent=held.request_sent,
    )
    if isinstance(raw.get("protocol"), str):
        options.protocol = raw["protocol"]
    if isinstance(raw.get("log_level"), str):
        options.log_level = raw["log_level"]
    return options


class _Upkeep(Owner):
    """The session's side of its supervised connection: its state, the commands attached."""

    def __init__(self, held: Held, record: groups.GroupRecord) -> None:
        self.held = held
        self.record = record

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Client]:
        held = self.held
        transport = _recorded(open_transport(held.launch, held.connect), self.record)
        held.transport = transport
        async with Client(transport, _client_options(held)) as client:
            yield client

    def connecting(self) -> None:
        self.held.transport = None

    def connected(self, client: Client) -> None:
        held = self.held
        # The handshake was bounded; a command's requests carry their own limits (the
        # relay's are the command's, `call` sends its timeout).
        client.peer.default_timeout = None
        held.state = "ready"
        held.error = None
        held.started = time.time()
        held.touch()
        held.ready.set()

    async def hold(self, client: Client) -> None:
        """Until the server goes away, or the session idles out."""
        held = self.held
        async with anyio.create_task_group() as tg:
            async def closed() -> None:
                await client.peer.wait_closed()
                tg.cancel_scope.cancel()

            tg.start_soon(closed)
            await _idle_or(held, None)
            held.closing = True  # idled out
            tg.cancel_scope.cancel()
            held.task_scope.cancel()

    def disconnected(self) -> None:
        """The connection is gone: end every attached command's relay (it reports exit 4)."""
        held = self.held
        tail = held.transport.stderr_tail if isinstance(held.transport, StdioTransport) else ()
        held.last_stderr = list(tail)[-STDERR_LINES:]
        for attached in list(held.attached):
            attached.gone.set()
            for scope in attached.inflight.values():
                scope.cancel()
        held.tokens.clear()
        held.router.clear()
        held.subscribers.clear()

    def ended(self, reason: Exception | None, *, was_up: bool) -> None:
        held = self.held
        held.state = "exited"
        held.error = typed(reason) if reason is not None else TransportError("the server closed the connection")
        held.ready.set()

    def retrying(self, delay: float) -> None:
        held = self.held
        held.ready = anyio.Event()
        held.state = "restarting"

    def restarting(self) -> None:
        self.held.state = "restarting"

    async def rest(self, wake: anyio.Event) -> None:
        """Exited: wait for `restart` (or close, or the idle timeout)."""
        await _idle_or(self.held, wake)


async def run_session(held: Held, sessions: Sessions) -> None:
    """Hold the session's connection until it is closed; restart it when asked or allowed."""
    upkeep = _Upkeep(held, sessions.groups)
    on_failure = held.restart == "on-failure"
    held.supervisor = Supervisor(upkeep.connect, upkeep, Policy(
        backoff=RESTART, after_lost=on_failure, after_failed=on_failure, otherwise="wait"))
    try:
        with held.task_scope:
            await held.supervisor.run()
    finally:
        held.state = "closed"
        held.ready.set()
        held.done.set()
        sessions.ended(held)


def restart_session(held: Held) -> None:
    """Make the session's connection again (`restart` op): the one up ends, or an exited
    session wakes; one starting or restarting is left to it (its next state is waited for)."""
    if held.supervisor is not None and held.supervisor.restart():
        held.ready = anyio.Event()


def _recorded(transport: Any, record: groups.GroupRecord) -> Any:
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
                    record.add(pgid)
                yield streams
        finally:
            # The transport ended the group on its way out; keep the record if not.
            if pgid is not None and not groups.members(pgid):
                record.discard(pgid)

    transport.connect = connect
    return transport


async def _idle_or(held: Held, event: anyio.Event | None) -> None:
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
