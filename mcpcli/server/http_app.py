"""The ASGI application of `mcp serve --http`: routing and the security checks.

`McpHttpApp` is a plain ASGI application (no web framework). One endpoint
(default `/mcp`) serves both eras, with the rule of the conformance reference
server:

* no `Mcp-Session-Id` and (`_meta` in the body, or an `MCP-Protocol-Version`
  header that does not name a legacy revision) ⇒ stateless 2026-07-28
  (`mcpcli.server.http_modern`);
* `initialize` without the 2026-07-28 `_meta` fields (a trace context alone is
  none) creates a legacy session (2025-03-26 .. 2025-11-25), and requests with its
  `Mcp-Session-Id` belong to it; 404 for unknown sessions
  (`mcpcli.server.http_stateful`);
* `GET /sse` (or a GET on the endpoint without a session) plus
  `POST /messages?sessionId=` is the 2024-11-05 HTTP+SSE transport
  (`mcpcli.server.http_legacy_sse`).

Every request first passes the DNS-rebinding checks (Host and Origin against
allow-lists, loopback names by default: 403), the bearer token when one is set
(constant-time compare: 401) and the body cap (413). The app holds the legacy
session table (`http_stateful.StatefulConnections`: bounded, the oldest idle session
evicted when full, sessions idle longer than their lifetime closed).

Layering (imports go one way): this app at the top; the route modules below it
(`http_modern`, `http_legacy_sse` -> `http_stateful`), handed an `HttpContext`
or the `StatefulConnections` table, never the app; at the bottom `http_exchange` (one
response, and its `Replay`), `http_context` (`HttpContext`, `HttpOptions`) and
`http_asgi` (ASGI plumbing).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc

from mcpcli.core.jsonrpc import INVALID_REQUEST, PARSE_ERROR
from mcpcli.core.protocol import LEGACY_VERSIONS, PROTOCOL_VERSION_KEY
from mcpcli.server.core import Server
from mcpcli.server.http_asgi import (
    Disconnected,
    Headers,
    Receive,
    Scope,
    Send,
    accepts,
    error_body,
    is_json,
    plain,
    shutdown_error,
)
from mcpcli.server.http_context import HttpContext, HttpOptions
from mcpcli.server.http_legacy_sse import sse_message, sse_open
from mcpcli.server.http_modern import modern_post
from mcpcli.server.http_stateful import StatefulConnections, delete, get, legacy_post

__all__ = ["LOOPBACK_NAMES", "McpHttpApp", "is_loopback"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


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
        principal = "bearer:" + hashlib.sha256(self._token).hexdigest()[:16] if self._token else ""
        #: What the routes share with the app (they are handed this, never the app).
        self.context = HttpContext(server, options, principal)
        #: The legacy sessions (bounded; idle ones are reaped).
        self.sessions = StatefulConnections(self.context)
        #: POSTs being handled (a drain ends early when none is left).
        self.inflight = 0

    async def __aenter__(self) -> McpHttpApp:
        await self.server.__aenter__()
        self._tg_cm = anyio.create_task_group()
        self._tg = self.sessions.tg = await self._tg_cm.__aenter__()
        self._tg.start_soon(self.sessions.reap)
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        self.shutdown()
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        try:
            await self._tg_cm.__aexit__(*exc_info)
        finally:
            self._tg = self.sessions.tg = None
            await self.server.__aexit__(*exc_info)

    @property
    def principal(self) -> str:
        """Who the callers are: the token's fingerprint ("" without a token)."""
        return self.context.principal

    @property
    def stopping(self) -> bool:
        """Shutdown has begun: new requests are refused, those in flight drain."""
        return self.context.stopping

    def begin_shutdown(self) -> None:
        """Stop taking requests (503) and end subscriptions; calls in flight go on (`drain`)."""
        self.context.stopping = True
        self.server.close_subscriptions()

    def shutdown(self) -> None:
        """End the drain: answer what is still in flight with an error, close sessions and streams."""
        self.begin_shutdown()
        self.context.end_drain()
        self.sessions.close_all()

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
                    await delete(self.sessions, send, headers, cors)
                else:
                    await plain(send, 405, b"", [*cors, (b"allow", b"GET, POST, DELETE")])
            elif options.legacy_sse and path == options.sse_path and method == "GET":
                await sse_open(self.sessions, scope, receive, send, cors)
            elif options.legacy_sse and path == options.messages_path and method == "POST":
                await sse_message(self.sessions, scope, receive, send, headers, cors)
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
        body = await self.context.receive_body(receive, send, headers, cors)
        if body is None:
            return
        if self.stopping:  # it stopped while the body came in: start no work now
            error = shutdown_error()
            await plain(send, 503, error_body(None, error.code, error.message, error.data), cors)
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
            await legacy_post(self.sessions, scope, receive, send, headers, cors, session, data)
            return
        version_header = headers.get("mcp-protocol-version")
        if isinstance(data, dict) and data.get("method") == "initialize" and not modern_meta:
            # Without the 2026-07-28 fields, a `_meta` (a client's trace context) is no era.
            await legacy_post(self.sessions, scope, receive, send, headers, cors, None, data)
            return
        legacy_header = meta is None and version_header in LEGACY_VERSIONS
        if meta is not None or (version_header is not None and not legacy_header):
            await modern_post(self.context, scope, receive, send, headers, cors, data)
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
        """A GET opens an SSE stream, or is refused: 405 where no stream is offered (2026-07-28
        has none; without a session, only the 2024-11-05 HTTP+SSE fallback is one), 406 when
        the `Accept` header does not list `text/event-stream`, as Streamable HTTP clients
        MUST (`*/*` is not enough: a stream that stays open is only for those asking for one)."""
        session = headers.get("mcp-session-id")
        version = headers.get("mcp-protocol-version")
        if session is None and (
            not self.options.legacy_sse or (version is not None and version not in LEGACY_VERSIONS)
        ):
            await plain(send, 405, error_body(
                None, INVALID_REQUEST, "Method Not Allowed: no GET stream without a session; POST requests",
            ), [*cors, (b"allow", b"GET, POST, DELETE")])
            return
        if not accepts(headers.get("accept"), "text/event-stream", listed=True):
            await plain(send, 406, error_body(
                None, INVALID_REQUEST, "Not Acceptable: a GET must accept text/event-stream",
            ), cors)
            return
        if session is None:
            # A 2024-11-05 client falling back from Streamable HTTP: HTTP+SSE right here.
            await sse_open(self.sessions, scope, receive, send, cors)
            return
        await get(self.sessions, receive, send, headers, cors)
