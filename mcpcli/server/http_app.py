"""The ASGI application of `mcp serve --http`: routing and the security checks.

`McpHttpApp` is a plain ASGI application (no web framework). One endpoint
(default `/mcp`) serves both eras, with the rule of the conformance reference
server:

* no `Mcp-Session-Id` and (`_meta` in the body, or an `MCP-Protocol-Version`
  header that does not name a legacy revision) ⇒ stateless 2026-07-28
  (`mcpcli.server.http_modern`);
* `initialize` without `_meta` creates a legacy session (2025-03-26 ..
  2025-11-25), and requests with its `Mcp-Session-Id` belong to it; 404 for
  unknown sessions (`mcpcli.server.http_sessions`);
* `GET /sse` (or a GET on the endpoint without a session) plus
  `POST /messages?sessionId=` is the 2024-11-05 HTTP+SSE transport
  (`mcpcli.server.http_legacy_sse`).

Every request first passes the DNS-rebinding checks (Host and Origin against
allow-lists, loopback names by default: 403), the bearer token when one is set
(constant-time compare: 401) and the body cap (413). The app owns the legacy
session table: it bounds it, evicts the oldest idle session when full and
closes sessions idle longer than their lifetime.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc

from mcpcli.jsonrpc import INVALID_REQUEST, PARSE_ERROR
from mcpcli.protocol import LEGACY_VERSIONS, PROTOCOL_VERSION_KEY
from mcpcli.server.core import Server
from mcpcli.server.http_asgi import (
    SERVER_BUSY,
    Disconnected,
    Headers,
    Receive,
    Scope,
    Send,
    accepts,
    error_body,
    is_json,
    plain,
    read_body,
    shutdown_error,
)
from mcpcli.server.http_legacy_sse import sse_message, sse_open
from mcpcli.server.http_modern import modern_post
from mcpcli.server.http_sessions import LegacySession, delete, get, legacy_post

__all__ = ["LOOPBACK_NAMES", "HttpOptions", "McpHttpApp", "is_loopback"]

log = logging.getLogger("mcpcli.server.http")

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


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


def is_loopback(host: str) -> bool:
    """Whether binding to `host` keeps the server on this machine."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class McpHttpApp:
    """The ASGI application. Use as an async context manager around the server's lifetime."""

    def __init__(self, server: Server, options: HttpOptions | None = None) -> None:
        self.server = server
        self.options = options = options or HttpOptions()
        self.sessions: dict[str, LegacySession] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._tg_cm: Any = None
        hosts = options.allowed_hosts if options.allowed_hosts is not None else LOOPBACK_NAMES
        self._any_host = "*" in hosts
        self._hosts = {h.strip("[]").lower() for h in hosts}
        origins = options.allowed_origins if options.allowed_origins is not None else LOOPBACK_NAMES
        self._any_origin = "*" in origins
        self._origins = {o.rstrip("/").lower() for o in origins if "://" in o}
        self._origin_hosts = {o.strip("[]").lower() for o in origins if "://" not in o}
        token = options.auth_token
        self._token = token.encode("utf-8") if token else None
        #: Who the callers are: the token's fingerprint ("" without a token).
        self.principal = "bearer:" + hashlib.sha256(self._token).hexdigest()[:16] if self._token else ""
        #: Shutdown has begun: new requests are refused, those in flight drain.
        self.stopping = False
        #: POSTs being handled (a drain ends early when none is left).
        self.inflight = 0
        #: What ends each request still in flight when the drain is over.
        self._on_stop: set[Callable[[], None]] = set()
        #: Body bytes not reserved by a request being received (`body_budget`).
        self.budget_left = options.body_budget
        self._budget_freed: anyio.Event | None = None

    async def __aenter__(self) -> McpHttpApp:
        await self.server.__aenter__()
        self._tg_cm = anyio.create_task_group()
        self._tg = await self._tg_cm.__aenter__()
        self._tg.start_soon(self._reap_sessions)
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        self.shutdown()
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        try:
            await self._tg_cm.__aexit__(*exc_info)
        finally:
            self._tg = None
            await self.server.__aexit__(*exc_info)

    def begin_shutdown(self) -> None:
        """Stop taking requests (503) and end subscriptions; calls in flight go on (`drain`)."""
        self.stopping = True
        self.server.close_subscriptions()

    def shutdown(self) -> None:
        """End the drain: answer what is still in flight with an error, close sessions and streams."""
        self.begin_shutdown()
        for stop in list(self._on_stop):
            stop()
        for session in list(self.sessions.values()):
            session.close()

    @contextmanager
    def on_stop(self, callback: Callable[[], None]) -> Iterator[None]:
        """Within the block, call `callback` when the drain ends."""
        self._on_stop.add(callback)
        try:
            yield
        finally:
            self._on_stop.discard(callback)

    async def _reap_sessions(self) -> None:
        ttl = self.options.session_ttl
        while True:
            await anyio.sleep(min(60.0, max(ttl / 4, 0.05)))
            cutoff = time.monotonic() - ttl
            for session in list(self.sessions.values()):
                if not session.busy and session.last_seen < cutoff:
                    log.debug("closing idle session %s", session.id[:6])
                    session.close()

    def new_session(self, transport: str, *, sse_transport: bool) -> LegacySession | None:
        if len(self.sessions) >= self.options.max_sessions:
            idle = [s for s in self.sessions.values() if not s.busy]
            if not idle:
                return None
            oldest = min(idle, key=lambda s: s.last_seen)
            oldest.close()
            self.sessions.pop(oldest.id, None)
        conn = self.server.connection(transport, self.principal)
        session = LegacySession(self, conn, sse_transport=sse_transport)
        self.sessions[session.id] = session
        assert self._tg is not None, "use `async with McpHttpApp(...)`"
        self._tg.start_soon(session.run)
        return session

    # -- ASGI --------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        headers = Headers(scope.get("headers") or [])
        cors = self._cors(headers)
        refusal = self._refuse(headers)
        if refusal is not None:
            status, message = refusal
            await plain(send, status, error_body(None, INVALID_REQUEST, message), cors)
            return
        method = scope["method"]
        path = scope.get("path", "")
        options = self.options
        if method == "OPTIONS":
            await self._preflight(send, cors)
            return
        if not self._authorized(headers):
            await plain(
                send, 401, error_body(None, INVALID_REQUEST, "Unauthorized: a bearer token is required"),
                [*cors, (b"www-authenticate", b'Bearer realm="mcp"')],
            )
            return
        if self.stopping:
            error = shutdown_error()
            await plain(send, 503, error_body(None, error.code, error.message, error.data), cors)
            return
        try:
            if path == options.path:
                if method == "POST":
                    self.inflight += 1
                    try:
                        await self._post(scope, receive, send, headers, cors)
                    finally:
                        self.inflight -= 1
                elif method == "GET":
                    await self._get(scope, receive, send, headers, cors)
                elif method == "DELETE":
                    await delete(self, send, headers, cors)
                else:
                    await plain(send, 405, b"", [*cors, (b"allow", b"GET, POST, DELETE")])
            elif options.legacy_sse and path == options.sse_path and method == "GET":
                await sse_open(self, scope, receive, send, cors)
            elif options.legacy_sse and path == options.messages_path and method == "POST":
                await sse_message(self, scope, receive, send, headers, cors)
            else:
                await plain(send, 404, b"Not Found", cors, content_type=b"text/plain")
        except Disconnected:
            return

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

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

    # -- checks ------------------------------------------------------------------------

    def _refuse(self, headers: Headers) -> tuple[int, str] | None:
        """403 for a foreign Host or Origin (DNS rebinding), else None."""
        host = headers.get("host")
        if not self._any_host:
            if host is None:
                return 403, "Forbidden: missing Host header"
            name = urlsplit("//" + host).hostname or ""
            if name.lower() not in self._hosts:
                return 403, f"Forbidden: host {host!r} is not allowed"
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin):
            return 403, f"Forbidden: origin {origin!r} is not allowed"
        return None

    def _origin_allowed(self, origin: str) -> bool:
        if self._any_origin:
            return True
        value = origin.rstrip("/").lower()
        if value in self._origins:
            return True
        try:
            parts = urlsplit(value)
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and (parts.hostname or "") in self._origin_hosts

    def _cors(self, headers: Headers) -> list[tuple[bytes, bytes]]:
        origin = headers.get("origin")
        if origin is None or not self._origin_allowed(origin):
            return []
        return [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-expose-headers", b"mcp-session-id"),
            (b"vary", b"origin"),
        ]

    async def _preflight(self, send: Send, cors: list[tuple[bytes, bytes]]) -> None:
        headers = [
            *cors,
            (b"access-control-allow-methods", b"GET, POST, DELETE"),
            (
                b"access-control-allow-headers",
                b"authorization, content-type, accept, last-event-id, mcp-session-id, "
                b"mcp-protocol-version, mcp-method, mcp-name, mcp-param-*",
            ),
            (b"access-control-max-age", b"600"),
        ]
        await plain(send, 204, b"", headers)

    def _authorized(self, headers: Headers) -> bool:
        if self._token is None:
            return True
        value = headers.get("authorization") or ""
        scheme, _, given = value.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(given.strip().encode("latin-1"), self._token)

    # -- the endpoint: which era and transport a request is for -----------------------

    async def _post(
        self, scope: Scope, receive: Receive, send: Send, headers: Headers,
        cors: list[tuple[bytes, bytes]],
    ) -> None:
        if not is_json(headers.get("content-type")):
            await plain(send, 415, error_body(
                None, INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json"
            ), cors)
            return
        accept = headers.get("accept")
        if not (accepts(accept, "application/json") and accepts(accept, "text/event-stream")):
            # Every Streamable HTTP revision: the client MUST accept both on a POST.
            await plain(send, 406, error_body(
                None, INVALID_REQUEST,
                "Not Acceptable: Accept must take application/json and text/event-stream",
            ), cors)
            return
        body = await self.receive_body(receive, send, headers, cors)
        if body is None:
            return
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            await plain(send, 400, error_body(None, PARSE_ERROR, "Parse error: invalid JSON"), cors)
            return
        sid = headers.get("mcp-session-id")
        session = self.sessions.get(sid) if sid is not None else None
        params = data.get("params") if isinstance(data, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        modern_meta = isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta
        if sid is not None and session is None and not modern_meta:
            await plain(send, 404, error_body(None, INVALID_REQUEST, "Session not found"), cors)
            return
        if session is not None:
            await legacy_post(self, receive, send, headers, cors, session, data)
            return
        version_header = headers.get("mcp-protocol-version")
        if isinstance(data, dict) and data.get("method") == "initialize" and meta is None:
            await legacy_post(self, receive, send, headers, cors, None, data)
            return
        legacy_header = meta is None and version_header in LEGACY_VERSIONS
        if meta is not None or (version_header is not None and not legacy_header):
            await modern_post(self, receive, send, headers, cors, data)
            return
        request_id = data.get("id") if isinstance(data, dict) else None
        await plain(
            send, 400,
            error_body(
                request_id if isinstance(request_id, (str, int)) else None, INVALID_REQUEST,
                "Bad Request: no Mcp-Session-Id; send initialize first, or the 2026-07-28 _meta",
            ),
            cors,
        )

    async def _get(
        self, scope: Scope, receive: Receive, send: Send, headers: Headers,
        cors: list[tuple[bytes, bytes]],
    ) -> None:
        if headers.get("mcp-session-id") is None:
            accept = headers.get("accept") or ""
            if self.options.legacy_sse and "text/event-stream" in accept:
                # A 2024-11-05 client falling back from Streamable HTTP: HTTP+SSE right here.
                await sse_open(self, scope, receive, send, cors)
                return
        await get(self, receive, send, headers, cors)
