"""Serving over HTTP: Streamable HTTP for every era plus the legacy HTTP+SSE transport.

`McpHttpApp` is a plain ASGI application (no web framework); `serve_http` runs
it on uvicorn, which is imported only there. One endpoint (default `/mcp`)
serves both eras, with the rule of the conformance reference server:

* no `Mcp-Session-Id` and (`_meta` in the body, or an `MCP-Protocol-Version`
  header that does not name a legacy revision) ⇒ stateless 2026-07-28: the
  `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` headers are
  checked against the body (400 + -32020), `_meta` errors are 400 (-32602,
  -32021, -32022), unknown and removed methods 404 + -32601, and closing the
  response stream cancels the request;
* `initialize` without `_meta` creates a legacy session (2025-03-26 ..
  2025-11-25): an unguessable `Mcp-Session-Id`, POST answers as JSON or SSE,
  a GET stream for unrelated messages, DELETE, 404 for unknown sessions,
  batches under 2025-03-26. As the spec says, a closed POST stream is not a
  cancellation in these revisions (`notifications/cancelled` is);
* `GET /sse` (or a GET on the endpoint without a session) plus
  `POST /messages?sessionId=` is the 2024-11-05 HTTP+SSE transport.

Every request first passes the DNS-rebinding checks (Host and Origin against
allow-lists, loopback names by default: 403), the bearer token when one is set
(constant-time compare: 401) and the body cap (413).

Responses are JSON unless a request-related notification comes first, in which
case the response becomes an SSE stream (with `:` keep-alive comments while it
stays open, e.g. `subscriptions/listen`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import json
import logging
import math
import os
import secrets
import socket
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpcli import jsonrpc
from mcpcli.errors import RPCError, TransportError, UsageError
from mcpcli.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Batch,
    ErrorObject,
    ErrorResponse,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)
from mcpcli.protocol import ALL_VERSIONS, HEADER_MISMATCH, LEGACY_VERSIONS, PROTOCOL_VERSION_KEY
from mcpcli.server.core import ModernError, Server, ServerConnection
from mcpcli.server.http_asgi import (
    Disconnected,
    Headers,
    Receive,
    Scope,
    Send,
    error_body,
    plain,
    read_body,
)
from mcpcli.server.http_exchange import Exchange
from mcpcli.server.stdio import MAX_BATCH
from mcpcli.transports import Envelope

if TYPE_CHECKING:
    from mcpcli.server.meta import RequestMeta

__all__ = ["HttpOptions", "McpHttpApp", "is_loopback", "serve_http"]

log = logging.getLogger("mcpcli.server.http")


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
TOKEN_ENV = "MCP_SERVE_TOKEN"  # noqa: S105 - the name of a variable, not a secret
_SENTINEL_PREFIX = "=?base64?"
_SENTINEL_SUFFIX = "?="
_NAME_METHODS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


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


def is_loopback(host: str) -> bool:
    """Whether binding to `host` keeps the server on this machine."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _decode_header_value(raw: str) -> str:
    """A header value as text: `=?base64?..?=` decoded; ValueError if it is not valid."""
    if (
        raw.startswith(_SENTINEL_PREFIX)
        and raw.endswith(_SENTINEL_SUFFIX)
        and len(raw) >= len(_SENTINEL_PREFIX) + len(_SENTINEL_SUFFIX)
    ):
        inner = raw[len(_SENTINEL_PREFIX) : -len(_SENTINEL_SUFFIX)]
        try:
            return base64.b64decode(inner, validate=True).decode("utf-8")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            raise ValueError("invalid base64 value") from None
    if any(not (0x20 <= ord(c) <= 0x7E or c == "\t") for c in raw):
        raise ValueError("invalid characters")
    return raw


def _header_params(schema: Any, path: tuple[str, ...] = ()) -> Iterable[tuple[str, tuple[str, ...]]]:
    """(header name, property path) for every `x-mcp-header` reachable through `properties`."""
    if not isinstance(schema, dict):
        return
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for key, sub in properties.items():
        if not isinstance(sub, dict):
            continue
        name = sub.get("x-mcp-header")
        if isinstance(name, str) and name:
            yield name, (*path, key)
        yield from _header_params(sub, (*path, key))


def _lookup(arguments: Any, path: tuple[str, ...]) -> Any:
    value = arguments
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _same_value(header: str, value: Any) -> bool:
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if isinstance(value, (int, float)):
        try:
            number = float(header)
        except ValueError:
            return False
        return math.isfinite(number) and number == value
    if isinstance(value, str):
        return header == value
    return False


#: Events kept per stream for clients that resume with Last-Event-ID, and streams per session.
REPLAY_EVENTS = 256
REPLAY_STREAMS = 64


class _Replay:
    """The events of one SSE stream of a legacy session, for `Last-Event-ID` resumption.

    Event ids are `<stream>.<seq>`, so an id names its stream (2025-11-25 asks for that).
    """

    def __init__(self, number: int) -> None:
        self.number = number
        self.seq = 0
        self.events: deque[tuple[int, bytes]] = deque(maxlen=REPLAY_EVENTS)
        self.finished = False
        self._changed = anyio.Event()

    def event_id(self, seq: int) -> bytes:
        return f"{self.number}.{seq}".encode("ascii")

    def add(self, data: bytes, *, final: bool = False) -> int:
        self.seq += 1
        self.events.append((self.seq, data))
        self.finished = self.finished or final
        self._changed.set()
        self._changed = anyio.Event()
        return self.seq

    def finish(self) -> None:
        self.finished = True
        self._changed.set()
        self._changed = anyio.Event()

    async def changed(self) -> None:
        await self._changed.wait()


class _LegacySession:
    """A handshake-era session: a `Session` fed by POSTs, answering on their streams."""

    def __init__(self, app: McpHttpApp, conn: ServerConnection, *, sse_transport: bool) -> None:
        self.app = app
        self.id = secrets.token_urlsafe(24)  # visible ASCII, 192 bits
        self.conn = conn
        self.sse_transport = sse_transport
        inbox: tuple[MemoryObjectSendStream[Envelope | Exception], MemoryObjectReceiveStream[Envelope | Exception]]
        inbox = anyio.create_memory_object_stream[Envelope | Exception](64)
        self.inbox, self._inbox_recv = inbox
        self._outbox, self._outbox_recv = anyio.create_memory_object_stream[Envelope](256)
        self.pending: dict[RequestId, Exchange] = {}
        self.standalone: Exchange | None = None
        self.last_seen = time.monotonic()
        self.ended = anyio.Event()
        self.replays: OrderedDict[int, _Replay] = OrderedDict()
        self._streams = 0

    def new_replay(self) -> _Replay:
        self._streams += 1
        replay = _Replay(self._streams)
        self.replays[replay.number] = replay
        while len(self.replays) > REPLAY_STREAMS:
            self.replays.popitem(last=False)
        return replay

    @property
    def busy(self) -> bool:
        return bool(self.pending) or self.standalone is not None

    async def run(self) -> None:
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._route)
                await self.app.server.serve((self._inbox_recv, self._outbox), connection=self.conn)
                tg.cancel_scope.cancel()
        finally:
            self.ended.set()
            self.app._sessions.pop(self.id, None)
            if self.standalone is not None and self.standalone.queue_send is not None:
                self.standalone.queue_send.close()
            for exchange in list(self.pending.values()):
                if exchange.queue_send is not None:
                    exchange.queue_send.close()
            self._inbox_recv.close()
            self._outbox_recv.close()

    def close(self) -> None:
        self.inbox.close()

    async def _route(self) -> None:
        async for envelope in self._outbox_recv:
            message = envelope.message
            target: Exchange | None = None
            context = envelope.context if isinstance(envelope.context, Exchange) else None
            if self.sse_transport:
                target = self.standalone
            elif isinstance(message, Batch):
                target = context
            elif isinstance(message, (Response, ErrorResponse)):
                target = context if message.id is None else self.pending.get(message.id)
            else:
                related = envelope.related_request_id
                target = self.pending.get(related) if related is not None else None
                if target is None or target.done:
                    target = self.standalone
            if target is None:
                log.debug("session %s: no open stream for %s", self.id[:6], type(message).__name__)
                continue
            target.offer(message)


class McpHttpApp:
    """The ASGI application. Use as an async context manager around the server's lifetime."""

    def __init__(self, server: Server, options: HttpOptions | None = None) -> None:
        self.server = server
        self.options = options = options or HttpOptions()
        self._sessions: dict[str, _LegacySession] = {}
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
        self._principal = "bearer:" + hashlib.sha256(self._token).hexdigest()[:16] if self._token else ""

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

    def shutdown(self) -> None:
        """Begin a graceful stop: end subscriptions and sessions so their streams close."""
        self.server.close_subscriptions()
        for session in list(self._sessions.values()):
            session.close()

    async def _reap_sessions(self) -> None:
        ttl = self.options.session_ttl
        while True:
            await anyio.sleep(min(60.0, max(ttl / 4, 0.05)))
            cutoff = time.monotonic() - ttl
            for session in list(self._sessions.values()):
                if not session.busy and session.last_seen < cutoff:
                    log.debug("closing idle session %s", session.id[:6])
                    session.close()

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
        try:
            if path == options.path:
                if method == "POST":
                    await self._post(scope, receive, send, headers, cors)
                elif method == "GET":
                    await self._get(scope, receive, send, headers, cors)
                elif method == "DELETE":
                    await self._delete(send, headers, cors)
                else:
                    await plain(send, 405, b"", [*cors, (b"allow", b"GET, POST, DELETE")])
            elif options.legacy_sse and path == options.sse_path and method == "GET":
                await self._sse_open(scope, receive, send, cors)
            elif options.legacy_sse and path == options.messages_path and method == "POST":
                await self._sse_message(scope, receive, send, headers, cors)
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

    # -- POST on the endpoint ------------------------------------------------------------

    async def _post(
        self, scope: Scope, receive: Receive, send: Send, headers: Headers,
        cors: list[tuple[bytes, bytes]],
    ) -> None:
        body = await read_body(receive, headers, self.options.max_body)
        if body is None:
            await plain(send, 413, error_body(None, INVALID_REQUEST, "Request body too large"), cors)
            return
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            await plain(send, 400, error_body(None, PARSE_ERROR, "Parse error: invalid JSON"), cors)
            return
        sid = headers.get("mcp-session-id")
        session = self._sessions.get(sid) if sid is not None else None
        params = data.get("params") if isinstance(data, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        modern_meta = isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta
        if sid is not None and session is None and not modern_meta:
            await plain(send, 404, error_body(None, INVALID_REQUEST, "Session not found"), cors)
            return
        if session is not None:
            await self._legacy_post(receive, send, headers, cors, session, data)
            return
        version_header = headers.get("mcp-protocol-version")
        if isinstance(data, dict) and data.get("method") == "initialize" and meta is None:
            await self._legacy_post(receive, send, headers, cors, None, data)
            return
        legacy_header = meta is None and version_header in LEGACY_VERSIONS
        if meta is not None or (version_header is not None and not legacy_header):
            await self._modern_post(receive, send, headers, cors, data)
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

    # -- stateless (2026-07-28) ------------------------------------------------------------

    def _check_headers(self, headers: Headers, message: Request, meta: RequestMeta) -> str | None:
        """Why the Mcp-* headers do not match the body, or None when they do."""
        try:
            version = headers.only("mcp-protocol-version")
            if version != meta.version:
                return f"MCP-Protocol-Version header {version!r} does not match _meta {meta.version!r}"
            method = headers.only("mcp-method")
            if method is None:
                return "missing Mcp-Method header"
            if method != message.method:
                return f"Mcp-Method header {method!r} does not match the body method {message.method!r}"
            field = _NAME_METHODS.get(message.method)
            params = message.params or {}
            if field is not None and isinstance(params.get(field), str):
                raw = headers.only("mcp-name")
                if raw is None:
                    return "missing Mcp-Name header"
                try:
                    name = _decode_header_value(raw)
                except ValueError as exc:
                    return f"Mcp-Name header: {exc}"
                if name != params[field]:
                    return f"Mcp-Name header {name!r} does not match the body {field} {params[field]!r}"
        except ValueError as exc:
            return str(exc)
        return None

    async def _check_param_headers(self, headers: Headers, message: Request) -> str | None:
        if message.method != "tools/call":
            return None
        params = message.params or {}
        name = params.get("name")
        tool = await self.server.tool(name) if isinstance(name, str) else None
        if tool is None:
            return None
        arguments = params.get("arguments")
        for header, path in _header_params(tool.get("inputSchema")):
            key = "mcp-param-" + header.lower()
            try:
                raw = headers.only(key)
            except ValueError as exc:
                return str(exc)
            value = _lookup(arguments, path)
            if value is None:
                if raw is not None:
                    return f"Mcp-Param-{header} header sent but {'.'.join(path)} is absent"
                continue
            if raw is None:
                return f"missing Mcp-Param-{header} header"
            try:
                decoded = _decode_header_value(raw)
            except ValueError as exc:
                return f"Mcp-Param-{header} header: {exc}"
            if not _same_value(decoded, value):
                return f"Mcp-Param-{header} header does not match {'.'.join(path)}"
        return None

    async def _modern_post(
        self, receive: Receive, send: Send, headers: Headers,
        cors: list[tuple[bytes, bytes]], data: Any,
    ) -> None:
        try:
            message = jsonrpc.parse_obj(data)
        except jsonrpc.ParseError as exc:
            await plain(send, 400, error_body(exc.id, exc.code, f"Invalid request: {exc}"), cors)
            return
        if isinstance(message, Notification):
            await plain(send, 202, b"", cors)
            return
        if not isinstance(message, Request):
            await plain(
                send, 400, error_body(None, INVALID_REQUEST, "a 2026-07-28 client sends no responses"), cors
            )
            return
        rid = message.id
        try:
            if headers.get("mcp-protocol-version") is None:
                raise ModernError(HEADER_MISMATCH, "Header mismatch: missing MCP-Protocol-Version header")
            meta = self.server.modern_meta(message.params)
            problem = self._check_headers(headers, message, meta)
            if problem is not None:
                raise ModernError(HEADER_MISMATCH, f"Header mismatch: {problem}")
            self.server.check_version(meta.version)
            problem = await self._check_param_headers(headers, message)
            if problem is not None:
                raise ModernError(HEADER_MISMATCH, f"Header mismatch: {problem}")
        except ModernError as exc:
            body = error_body(rid, exc.code, exc.rpc_message, exc.data)
            await plain(send, exc.status, body, cors)
            return
        accept = headers.get("accept") or "*/*"
        sse_ok = "text/event-stream" in accept or "*/*" in accept
        async with anyio.create_task_group() as tg:
            exchange = Exchange(send, tg, sse_ok=sse_ok, keepalive=self.options.keepalive, headers=cors)
            tg.start_soon(self._watch, receive, exchange, tg.cancel_scope)
            status = 200
            response: Message
            try:
                result = await self.server.handle_modern(
                    message, exchange, transport="http", principal=self._principal, meta=meta
                )
                response = Response(rid, result)
            except RPCError as exc:
                status = exc.status if isinstance(exc, ModernError) else (
                    404 if exc.code == METHOD_NOT_FOUND else 200
                )
                response = ErrorResponse(rid, ErrorObject(exc.code, exc.rpc_message, exc.data))
            except Exception:
                log.exception("handler for %s failed", message.method)
                response = ErrorResponse(rid, ErrorObject(INTERNAL_ERROR, "Internal error"))
            await exchange.finish(response, status)
            tg.cancel_scope.cancel()

    @staticmethod
    async def _watch(receive: Receive, exchange: Exchange, scope: anyio.CancelScope) -> None:
        """Cancel the request when the client closes its connection (2026: that is cancellation)."""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                if not exchange.done:
                    log.debug("client disconnected; cancelling the request")
                    scope.cancel()
                return

    # -- legacy sessions -------------------------------------------------------------------

    def _new_session(self, transport: str, *, sse_transport: bool) -> _LegacySession | None:
        if len(self._sessions) >= self.options.max_sessions:
            idle = [s for s in self._sessions.values() if not s.busy]
            if not idle:
                return None
            oldest = min(idle, key=lambda s: s.last_seen)
            oldest.close()
            self._sessions.pop(oldest.id, None)
        conn = self.server.connection(transport, self._principal)
        session = _LegacySession(self, conn, sse_transport=sse_transport)
        self._sessions[session.id] = session
        assert self._tg is not None, "use `async with McpHttpApp(...)`"
        self._tg.start_soon(session.run)
        return session

    async def _legacy_post(
        self, receive: Receive, send: Send, headers: Headers,
        cors: list[tuple[bytes, bytes]], session: _LegacySession | None, data: Any,
    ) -> None:
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in ALL_VERSIONS:
            await plain(
                send, 400, error_body(None, INVALID_REQUEST, f"Unsupported MCP-Protocol-Version: {version}"), cors
            )
            return
        try:
            if isinstance(data, list):
                if not data:
                    raise jsonrpc.ParseError("empty batch", INVALID_REQUEST)
                if len(data) > MAX_BATCH:
                    raise jsonrpc.ParseError(f"more than {MAX_BATCH} messages in a batch", INVALID_REQUEST)
                parsed: Message | Batch = Batch([jsonrpc.parse_obj(item) for item in data])
            else:
                parsed = jsonrpc.parse_obj(data)
        except jsonrpc.ParseError as exc:
            await plain(send, 400, error_body(exc.id, exc.code, f"Invalid request: {exc}"), cors)
            return
        messages = parsed.messages if isinstance(parsed, Batch) else [parsed]
        requests = [m for m in messages if isinstance(m, Request)]
        extra: list[tuple[bytes, bytes]] = list(cors)
        if session is None:
            session = self._new_session("http", sse_transport=False)
            if session is None:
                await plain(send, 503, error_body(None, INVALID_REQUEST, "too many sessions"), cors)
                return
            extra.append((b"mcp-session-id", session.id.encode("ascii")))
        session.last_seen = time.monotonic()
        ids = [r.id for r in requests]
        if len(set(ids)) != len(ids) or any(i in session.pending for i in ids):
            clash = next(i for i in ids if i in session.pending or ids.count(i) > 1)
            await plain(
                send, 409, error_body(clash, INVALID_REQUEST, "duplicate request id: one is still pending"),
                extra,
            )
            return
        if not requests:
            try:
                await session.inbox.send(Envelope(parsed))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                await plain(send, 404, error_body(None, INVALID_REQUEST, "Session not found"), cors)
                return
            await plain(send, 202, b"", cors)
            return
        accept = headers.get("accept") or "*/*"
        sse_ok = "text/event-stream" in accept or "*/*" in accept
        async with anyio.create_task_group() as tg:
            exchange = Exchange(
                send, tg, sse_ok=sse_ok, keepalive=self.options.keepalive, headers=extra, session=session
            )
            exchange.batch = isinstance(parsed, Batch)
            exchange.request_ids = {r.id for r in requests}
            queue = exchange.open_queue()
            for request in requests:
                session.pending[request.id] = exchange
            try:
                try:
                    await session.inbox.send(Envelope(parsed, context=exchange))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await exchange.finish_raw(error_body(None, INVALID_REQUEST, "Session not found"), 404)
                    return
                # A closed POST connection is not a cancellation in these revisions: the
                # request goes on and its messages are kept for a resuming GET.
                tg.start_soon(self._watch_post, receive, exchange)
                poll = self.options.sse_poll_after
                if poll is not None and sse_ok and session.conn.version == "2025-11-25":
                    tg.start_soon(self._poll_later, exchange, poll)
                async with queue:
                    async for message in queue:
                        if exchange.is_final(message):
                            await exchange.finish(message)
                            break
                        await exchange.write(message)
                    else:
                        await exchange.close()  # the session ended under us
            finally:
                for request in requests:
                    if session.pending.get(request.id) is exchange:
                        del session.pending[request.id]
                exchange.done = True
                exchange.close_queue()
                session.last_seen = time.monotonic()
                tg.cancel_scope.cancel()

    @staticmethod
    async def _watch_legacy(receive: Receive, scope: anyio.CancelScope) -> None:
        """Stop streaming when the client goes away."""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                scope.cancel()
                return

    @staticmethod
    async def _watch_post(receive: Receive, exchange: Exchange) -> None:
        """Notice a client that left: stop writing, keep recording for resumption."""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                exchange.http_closed = True
                return

    async def _poll_later(self, exchange: Exchange, delay: float) -> None:
        await anyio.sleep(delay)
        if not exchange.done:
            await exchange.poll_close(self.options.sse_retry_ms)

    async def _get(
        self, scope: Scope, receive: Receive, send: Send, headers: Headers,
        cors: list[tuple[bytes, bytes]],
    ) -> None:
        sid = headers.get("mcp-session-id")
        if sid is None:
            accept = headers.get("accept") or ""
            if self.options.legacy_sse and "text/event-stream" in accept:
                # A 2024-11-05 client falling back from Streamable HTTP: HTTP+SSE right here.
                await self._sse_open(scope, receive, send, cors)
                return
            await plain(send, 400, error_body(None, INVALID_REQUEST, "Bad Request: Mcp-Session-Id header required"), cors)
            return
        session = self._sessions.get(sid)
        if session is None or session.sse_transport:
            await plain(send, 404, error_body(None, INVALID_REQUEST, "Session not found"), cors)
            return
        replay = self._replay_for(session, headers.get("last-event-id"))
        if replay is not None:
            await self._resume(receive, send, cors, session, *replay)
            return
        if session.standalone is not None and not session.standalone.done:
            await plain(send, 409, error_body(None, INVALID_REQUEST, "Conflict: a stream is already open for this session"), cors)
            return
        await self._stream(receive, send, cors, session, endpoint=None)

    @staticmethod
    def _replay_for(session: _LegacySession, last: str | None) -> tuple[_Replay, int] | None:
        """The stream a `Last-Event-ID` names in this session, and the last seq seen."""
        if not last:
            return None
        number, _, seq = last.partition(".")
        if not (number.isdigit() and seq.isdigit()):
            return None
        replay = session.replays.get(int(number))
        if replay is None:
            return None
        return replay, int(seq)

    async def _resume(
        self, receive: Receive, send: Send, cors: list[tuple[bytes, bytes]],
        session: _LegacySession, replay: _Replay, seen: int,
    ) -> None:
        """Replay a stream's events after `seen`, then follow it until its answer."""
        async with anyio.create_task_group() as tg:
            exchange = Exchange(send, tg, sse_ok=True, keepalive=self.options.keepalive, headers=cors)
            tg.start_soon(self._watch_legacy, receive, tg.cancel_scope)
            try:
                await exchange.start_stream()
                while True:
                    pending = [(seq, data) for seq, data in replay.events if seq > seen]
                    for seq, data in pending:
                        await exchange.replayed(replay.event_id(seq), data)
                        seen = seq
                    if replay.finished and seen >= replay.seq:
                        break
                    await replay.changed()
                await exchange.close()
            finally:
                exchange.done = True
                session.last_seen = time.monotonic()
                tg.cancel_scope.cancel()

    async def _stream(
        self, receive: Receive, send: Send, cors: list[tuple[bytes, bytes]],
        session: _LegacySession, *, endpoint: str | None,
    ) -> None:
        """The long-lived SSE stream of a session (GET stream, or the HTTP+SSE stream)."""
        async with anyio.create_task_group() as tg:
            exchange = Exchange(send, tg, sse_ok=True, keepalive=self.options.keepalive, headers=cors)
            queue = exchange.open_queue()
            session.standalone = exchange
            try:
                if endpoint is not None:
                    await exchange.event(endpoint.encode("utf-8"), b"endpoint")
                else:
                    await exchange.start_stream()
                tg.start_soon(self._watch_legacy, receive, tg.cancel_scope)
                async with queue:
                    async for message in queue:
                        await exchange.event(jsonrpc.encode(message))
                await exchange.close()
            finally:
                exchange.done = True
                exchange.close_queue()
                if session.standalone is exchange:
                    session.standalone = None
                session.last_seen = time.monotonic()
                if endpoint is not None:
                    session.close()  # HTTP+SSE: the stream is the session
                tg.cancel_scope.cancel()

    async def _delete(self, send: Send, headers: Headers, cors: list[tuple[bytes, bytes]]) -> None:
        sid = headers.get("mcp-session-id")
        if sid is None:
            await plain(send, 400, error_body(None, INVALID_REQUEST, "Bad Request: Mcp-Session-Id header required"), cors)
            return
        session = self._sessions.pop(sid, None)
        if session is None:
            await plain(send, 404, error_body(None, INVALID_REQUEST, "Session not found"), cors)
            return
        session.close()
        await plain(send, 200, b"", cors)

    # -- HTTP+SSE (2024-11-05) -----------------------------------------------------------

    async def _sse_open(
        self, scope: Scope, receive: Receive, send: Send, cors: list[tuple[bytes, bytes]]
    ) -> None:
        session = self._new_session("sse", sse_transport=True)
        if session is None:
            await plain(send, 503, error_body(None, INVALID_REQUEST, "too many sessions"), cors)
            return
        endpoint = f"{scope.get('root_path', '')}{self.options.messages_path}?sessionId={session.id}"
        await self._stream(receive, send, cors, session, endpoint=endpoint)

    async def _sse_message(
        self, scope: Scope, receive: Receive, send: Send, headers: Headers,
        cors: list[tuple[bytes, bytes]],
    ) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        sid = (query.get("sessionId") or query.get("session_id") or [""])[0]
        session = self._sessions.get(sid)
        if session is None or not session.sse_transport:
            await plain(send, 404, error_body(None, INVALID_REQUEST, "Session not found"), cors)
            return
        body = await read_body(receive, headers, self.options.max_body)
        if body is None:
            await plain(send, 413, error_body(None, INVALID_REQUEST, "Request body too large"), cors)
            return
        try:
            parsed = jsonrpc.parse(body, allow_batch=True)
        except jsonrpc.ParseError as exc:
            await plain(send, 400, error_body(exc.id, exc.code, f"Invalid request: {exc}"), cors)
            return
        except RecursionError:
            await plain(send, 400, error_body(None, PARSE_ERROR, "Parse error: nested too deeply"), cors)
            return
        if isinstance(parsed, Batch) and len(parsed.messages) > MAX_BATCH:
            await plain(send, 400, error_body(None, INVALID_REQUEST, "Invalid request: batch too large"), cors)
            return
        session.last_seen = time.monotonic()
        try:
            await session.inbox.send(Envelope(parsed))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            await plain(send, 404, error_body(None, INVALID_REQUEST, "Session not found"), cors)
            return
        await plain(send, 202, b"Accepted", cors, content_type=b"text/plain")


# -- running on uvicorn ------------------------------------------------------------------


def _bind(host: str, port: int) -> socket.socket:
    """Bind the listening socket ourselves: a clear error instead of uvicorn's exit."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    # A name like "localhost" may resolve to ::1 first; IPv4 is what most clients try.
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    family, _, proto, _, address = infos[0]
    # proto must say TCP: asyncio only sets TCP_NODELAY on accepted sockets that do
    # (without it, Nagle + delayed ACKs add ~40 ms to every keep-alive response).
    sock = socket.socket(family, socket.SOCK_STREAM, proto or socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6 and host in ("::", ""):
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise TransportError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


async def serve_http(
    server: Server,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    auth_token: str | None = None,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] | None = None,
    max_body: int = 4 * 1024 * 1024,
    legacy_sse: bool = True,
    keepalive: float = 15.0,
    sse_poll_after: float | None = None,
    on_ready: Callable[[str], None] | None = None,
    options: HttpOptions | None = None,
) -> None:
    """Serve `server` over HTTP on uvicorn until cancelled (then stop gracefully).

    Binding beyond loopback needs a bearer token (`auth_token` or $MCP_SERVE_TOKEN);
    without one this raises UsageError before listening. `on_ready(url)` is called
    with the endpoint URL once the socket listens (port 0 picks a free port).
    `options` sets the rest (path, limits, session lifetime); the keyword
    arguments for token, hosts and origins always win.
    """
    token = auth_token or os.environ.get(TOKEN_ENV) or None
    if not is_loopback(host) and not token:
        raise UsageError(
            f"refusing to listen on {host} without a bearer token",
            hint=f"pass --auth-token or set {TOKEN_ENV}; or bind 127.0.0.1",
        )
    hosts = allowed_hosts
    if hosts is None:
        if is_loopback(host):
            hosts = LOOPBACK_NAMES
        elif host in ("0.0.0.0", "::", ""):  # noqa: S104 - deciding, not binding
            hosts = ("*",)  # any name may reach a wildcard bind; the token guards it
        else:
            hosts = (*LOOPBACK_NAMES, host)
    if options is None:
        options = HttpOptions(
            path=path, max_body=max_body, legacy_sse=legacy_sse, keepalive=keepalive,
            sse_poll_after=sse_poll_after,
        )
    options = replace(options, auth_token=token, allowed_hosts=hosts, allowed_origins=allowed_origins)
    path = options.path
    sock = _bind(host, port)
    try:
        import uvicorn

        app = McpHttpApp(server, options)
        config = uvicorn.Config(
            app, lifespan="off", log_config=None, access_log=False, ws="none",
            proxy_headers=False, server_header=False, timeout_graceful_shutdown=3,
            limit_concurrency=1024,
        )

        class _Uvicorn(uvicorn.Server):
            def install_signal_handlers(self) -> None:  # older uvicorn
                pass

            def capture_signals(self) -> Any:  # the caller owns signals; we stop on cancel
                from contextlib import nullcontext

                return nullcontext()

        uv = _Uvicorn(config)
        bound_host, bound_port = sock.getsockname()[:2]
        async with app:
            done = anyio.Event()

            async def run() -> None:
                try:
                    with anyio.CancelScope(shield=True):
                        await uv.serve(sockets=[sock])
                finally:
                    done.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                if on_ready is not None:
                    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
                    on_ready(f"http://{shown}:{bound_port}{path}")
                try:
                    await done.wait()
                finally:
                    with anyio.CancelScope(shield=True):
                        app.shutdown()
                        uv.should_exit = True
                        with anyio.move_on_after(10):
                            await done.wait()
    finally:
        sock.close()
