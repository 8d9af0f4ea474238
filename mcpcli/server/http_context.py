"""What the HTTP routes share with the app that runs them (`HttpContext`), and its options.

The bottom of the HTTP front: `McpHttpApp` (`http_app`) creates one
`HttpContext` and hands it to the route modules (`http_modern`, `http_stateful`,
`http_legacy_sse`), as `core.Server` hands its `Runtime` to its helpers. The
routes depend on it, never on the app, so the modules import in one direction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from mcpcli.core.jsonrpc import INVALID_REQUEST
from mcpcli.server.http_asgi import (
    SERVER_BUSY,
    Headers,
    Receive,
    Send,
    error_body,
    plain,
    read_body,
)

if TYPE_CHECKING:
    from mcpcli.server.core import Server

__all__ = ["HttpContext", "HttpOptions"]


@dataclass
class HttpOptions:
    """How the HTTP endpoints behave. Hosts are names without a port."""

    path: str = "/mcp"
    #: Require `Authorization: Bearer <token>` on every request.
    auth_token: str | None = None
    #: Host header names accepted (DNS rebinding protection); None = loopback names; "*" = any.
    allowed_hosts: Sequence[str] | None = None
    #: Origins accepted (`http://host:port` or bare host names); None = loopback names; "*" = any.
    allowed_origins: Sequence[str] | None = None
    max_body: int = 4 * 1024 * 1024
    #: Seconds between `:` keep-alive comments on open SSE streams (0 = none).
    keepalive: float = 15.0
    #: Idle legacy sessions are closed after this many seconds.
    session_ttl: float = 3600.0
    max_sessions: int = 1024
    #: Serve the 2024-11-05 HTTP+SSE transport.
    legacy_sse: bool = True
    sse_path: str = "/sse"
    messages_path: str = "/messages"
    #: 2025-11-25 sessions (SSE polling, SEP-1699): close a POST stream whose answer has
    #: not come after this many seconds, telling the client to resume (None = never).
    sse_poll_after: float | None = None
    #: The `retry:` the server asks for before closing a stream (milliseconds).
    sse_retry_ms: int = 500
    #: On shutdown, requests in flight get this many seconds to finish; the rest are
    #: answered with a "server shutting down" error.
    drain: float = 2.0
    #: A request head must arrive within this many seconds (of connecting, or of its
    #: first byte on a kept-alive connection); else 408 and the connection closes.
    head_timeout: float = 10.0
    #: A request body must arrive within this many seconds of its head.
    body_timeout: float = 30.0
    #: Connections without a request in progress (slow heads, idle keep-alive): beyond
    #: this many, the oldest is closed.
    max_waiting: int = 1024
    #: Requests handled at once (open SSE streams included); beyond: 503.
    max_work: int = 1024
    #: Bytes of request bodies being received at once, over all requests (each counts
    #: its Content-Length, or `max_body` when it has none). A request that does not fit
    #: waits up to `body_wait` seconds, then gets 503 without its body being read.
    body_budget: int = 64 * 1024 * 1024
    body_wait: float = 20.0
    #: Put before every legacy session id (`mcp serve --replica NAME` makes it "NAME."), so a
    #: load balancer in front of replicas can send a session's requests to the replica that
    #: holds it: a session lives in one process's memory.
    session_prefix: str = ""


class HttpContext:
    """What every route shares: the server, the options, who the callers are, whether
    the app is stopping, the drain's callbacks and the budget of request bodies."""

    def __init__(self, server: Server, options: HttpOptions, principal: str) -> None:
        self.server = server
        self.options = options
        #: Who the callers are: the token's fingerprint ("" without a token).
        self.principal = principal
        #: Shutdown has begun: new requests are refused, those in flight drain.
        self.stopping = False
        #: What ends each request still in flight when the drain is over.
        self._on_stop: set[Callable[[], None]] = set()
        #: The drain is over: a request that gets this far only now (its body was still
        #: coming in) is ended at once, before it starts any work.
        self._drained = False
        #: Body bytes not reserved by a request being received (`body_budget`).
        self.budget_left = options.body_budget
        self._budget_freed: anyio.Event | None = None

    # -- the end of the drain ------------------------------------------------------------

    @contextmanager
    def on_stop(self, callback: Callable[[], None]) -> Iterator[None]:
        """Within the block, call `callback` when the drain ends (at once if it has)."""
        if self._drained:
            callback()
        self._on_stop.add(callback)
        try:
            yield
        finally:
            self._on_stop.discard(callback)

    def end_drain(self) -> None:
        """The drain is over: end every request still in flight (their `on_stop` callbacks)."""
        self._drained = True
        for stop in list(self._on_stop):
            stop()

    # -- request bodies: the per-request cap and the budget over all of them ------------

    async def receive_body(
        self, receive: Receive, send: Send, headers: Headers, cors: list[tuple[bytes, bytes]]
    ) -> bytes | None:
        """The request body within `max_body` and the shared budget, or None once the
        request was answered (413 too large, 503 no room in the budget)."""
        cap = self.options.max_body
        length = headers.get("content-length")
        declared = (
            int(length) if length is not None and length.isascii() and length.isdigit() and len(length) <= 18
            else None
        )
        if declared is not None and declared > cap:
            await plain(send, 413, error_body(None, INVALID_REQUEST, "Request body too large"), cors)
            return None
        need = cap if declared is None else declared
        if not await self._reserve(need):
            await plain(
                send, 503,
                error_body(None, SERVER_BUSY, "server busy: too many request bodies in flight"),
                [*cors, (b"retry-after", b"1")],  # uvicorn discards the unread body
            )
            return None
        try:
            body = await read_body(receive, headers, cap)
        finally:
            self._release(need)
        if body is None:
            await plain(send, 413, error_body(None, INVALID_REQUEST, "Request body too large"), cors)
        return body

    async def _reserve(self, need: int) -> bool:
        """Take `need` bytes of the body budget, waiting up to `body_wait` for them."""
        need = min(need, self.options.body_budget)  # one request alone always fits
        deadline = anyio.current_time() + self.options.body_wait
        while self.budget_left < need:
            if self._budget_freed is None:
                self._budget_freed = anyio.Event()
            with anyio.move_on_after(deadline - anyio.current_time()):
                await self._budget_freed.wait()
            if anyio.current_time() >= deadline and self.budget_left < need:
                return False
        self.budget_left -= need
        return True

    def _release(self, need: int) -> None:
        self.budget_left += min(need, self.options.body_budget)
        if self._budget_freed is not None:
            self._budget_freed.set()
            self._budget_freed = None
