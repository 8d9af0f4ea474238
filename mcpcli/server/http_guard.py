"""Connection limits for `mcp serve --http` under uvicorn (slowloris and friends).

uvicorn bounds neither the time to receive a request head nor its body, and its
`limit_concurrency` counts every open connection: a thousand clients trickling a
header byte every few seconds made every real call get 503. `guarded_protocol`
subclasses uvicorn's httptools protocol so that:

* a request head must arrive within `head_timeout` seconds of the connection (or of
  its first byte on a kept-alive connection), and its body within `body_timeout`
  of the head: otherwise 408 (when no response has started) and the connection closes;
* connections without a request in progress are capped at `max_waiting`, in two
  tables: those that have not completed a request yet (slow or idle newcomers) and
  those idle between keep-alive requests (uvicorn's keep-alive timeout closes them
  too); a connection beyond a table's cap evicts that table's oldest, so a flood of
  slow connections neither exhausts descriptors nor pushes out a client's kept-alive
  connection or keeps a new client from being served;
* requests being handled (SSE streams included) are capped separately at `max_work`;
  beyond it a request gets 503 with a JSON-RPC error body and `Retry-After`.

A request's scope carries `DISCONNECT_HOOK`: callbacks called when its client leaves
before the response is complete, so that the app needs no task waiting on `receive` to
notice. It also writes a response's head together with the first write of its body
(`_HeadHeld`): uvicorn writes them apart, two `send` calls and two TCP segments
for every small JSON answer, the biggest single cost of a trivial call.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from mcpcli.server.http_asgi import (
    DISCONNECT_HOOK,
    SERVER_BUSY,
    Receive,
    Scope,
    Send,
    error_body,
    plain,
)

if TYPE_CHECKING:
    from mcpcli.server.http_context import HttpOptions

__all__ = ["guarded_protocol"]

log = logging.getLogger("mcpcli.server.http")

_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\ncontent-length: 15\r\n"
    b"connection: close\r\n\r\nRequest Timeout"
)


async def _busy(scope: Scope, receive: Receive, send: Send) -> None:
    """The answer when `max_work` requests are already being handled."""
    body = error_body(None, SERVER_BUSY, "server busy: too many requests in progress")
    await plain(send, 503, body, [(b"retry-after", b"1")])  # uvicorn discards an unread body


class _HeadHeld:
    """A request cycle's transport that holds the response head (the cycle's first write)
    until the next write, to send both at once, or until the end of this event-loop turn
    (a stream's head with nothing after it yet goes out then). Everything else is the
    connection's transport."""

    __slots__ = ("_head", "_loop", "_started", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._head: bytes | None = None
        self._started = False

    def write(self, data: bytes) -> None:
        head = self._head
        if head is not None:
            self._head = None
            self._transport.write(head + data)
        elif not self._started:
            self._started = True
            self._head = data
            self._loop.call_soon(self._flush)
        else:
            self._transport.write(data)

    def _flush(self) -> None:
        head = self._head
        if head is not None:
            self._head = None
            if not self._transport.is_closing():
                self._transport.write(head)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _client_left(cycle: Any) -> None:
    """Call the disconnect callbacks of a request whose response is not complete (once)."""
    if cycle is None or cycle.response_complete or not cycle.disconnected:
        return
    extensions = cycle.scope.get("extensions")
    if not isinstance(extensions, dict) or not isinstance(extensions.get(DISCONNECT_HOOK), list):
        return
    callbacks = extensions[DISCONNECT_HOOK]
    extensions[DISCONNECT_HOOK] = None  # gone: a callback registered from now on is called at once
    for callback in callbacks:
        try:
            callback()
        except Exception:  # pragma: no cover - a bug in a callback must not break the others
            log.exception("a disconnect callback failed")


def guarded_protocol(options: HttpOptions) -> type[asyncio.Protocol]:
    """A uvicorn HTTP protocol class enforcing `options`' timeouts and connection caps.

    Each call makes a class with its own table of waiting connections (one per server).
    """
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    fresh: OrderedDict[Guarded, None] = OrderedDict()  # no request completed yet
    idle: OrderedDict[Guarded, None] = OrderedDict()  # between keep-alive requests

    class Guarded(HttpToolsProtocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._real_app = self.app
            self._head_timer: asyncio.TimerHandle | None = None
            self._body_timer: asyncio.TimerHandle | None = None
            # A deadline is armed only when a read leaves its head or body unfinished: most
            # requests arrive whole in one read, and a timer set and cancelled in the same
            # callback cost two per request for nothing.
            self._head_due = False
            self._body_due = False

        # -- states: waiting for a head, receiving a body, idle -----------------------

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_head()
            self._wait(fresh)

        def connection_lost(self, exc: Exception | None) -> None:
            self._unlist()
            self._cancel_timers()
            super().connection_lost(exc)
            _client_left(self.cycle)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._head_due or self._body_due:
                if not self.transport.is_closing():
                    if self._head_due:
                        self._arm_head()
                    elif self._body_timer is None:
                        self._body_timer = self.loop.call_later(options.body_timeout, self._expire, False)
                self._head_due = self._body_due = False

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self._head_timer is None:  # the first byte of a request on a kept-alive connection
                self._head_due = True  # the head's deadline, unless this read brings all of it

        def on_headers_complete(self) -> None:
            self._unlist()
            self._cancel_timers()
            self._head_due = False
            self._body_due = True  # the body's deadline, unless this read brings all of it
            self.app = _busy if len(self.tasks) >= options.max_work else self._real_app
            self.scope["extensions"] = {DISCONNECT_HOOK: []}  # type: ignore[dict-item]  # the cycle's scope
            super().on_headers_complete()
            cycle = self.cycle
            if cycle is not None and cycle.transport is self.transport:  # not an upgrade
                cycle.transport = _HeadHeld(self.transport, self.loop)  # type: ignore[assignment]

        def on_message_complete(self) -> None:
            self._body_due = False
            if self._body_timer is not None:
                self._body_timer.cancel()
                self._body_timer = None
            super().on_message_complete()

        def on_response_complete(self) -> None:
            pipelined = bool(self.pipeline)
            super().on_response_complete()
            if not pipelined and not self.transport.is_closing():
                self._wait(idle)  # until the next request (or uvicorn's keep-alive timeout)

        # -- enforcement --------------------------------------------------------------

        def _wait(self, table: OrderedDict[Guarded, None]) -> None:
            self._unlist()
            table[self] = None
            while len(table) > options.max_waiting:
                oldest, _ = table.popitem(last=False)
                oldest._close(respond=False)

        def _unlist(self) -> None:
            fresh.pop(self, None)
            idle.pop(self, None)

        def _arm_head(self) -> None:
            self._cancel_timers()
            self._head_timer = self.loop.call_later(options.head_timeout, self._expire, True)

        def _cancel_timers(self) -> None:
            for timer in (self._head_timer, self._body_timer):
                if timer is not None:
                    timer.cancel()
            self._head_timer = self._body_timer = None

        def _expire(self, head: bool) -> None:
            self._head_timer = self._body_timer = None
            cycle = self.cycle
            if head:  # the cycle (if any) is the previous request's
                idle = cycle is None or cycle.response_complete
            else:  # the cycle is this request's
                idle = cycle is not None and not cycle.response_started
            self._close(respond=idle)

        def _close(self, *, respond: bool) -> None:
            """Close this connection, after a 408 if `respond`."""
            self._unlist()
            self._cancel_timers()
            if self.transport.is_closing():
                return
            if respond:
                self.transport.write(_TIMEOUT)
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                cycle.disconnected = True  # the app sees a disconnect; its writes are dropped
                cycle.message_event.set()
                _client_left(cycle)
            self.transport.close()

    return Guarded
