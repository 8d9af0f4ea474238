"""The server runtime: protocol dispatch for every era over any stream pair.

`Server(backend)` answers MCP requests with what a `Backend` supplies. It speaks
both eras at once, per request:

* a request whose `params._meta` names a protocol version is served statelessly
  (2026-07-28): `_meta` is validated, results get `resultType`, cache hints and
  `serverInfo`, client input goes through `InputRequiredResult` rounds and change
  notifications through `subscriptions/listen`;
* `initialize` starts a legacy session on that connection (2024-11-05 ..
  2025-11-25): capabilities, `logging/setLevel`, `resources/subscribe`, server to
  client requests, `list_changed` notifications, batches under 2025-03-26.

Connections are JSON-RPC `Peer`s (stdio, in-memory, a legacy HTTP session);
the stateless HTTP path calls `handle_modern` directly. The runtime owns
pagination (opaque signed cursors), log-level filtering, strictly increasing
progress, cancellation (the Peer cancels the handler task; parked 2026 calls
are cancelled with their continuation) and the MRTR continuations.

This module is the dispatcher, the lifecycle and the connection state. What the
helpers share is the `Runtime` (`_state`) the server creates and hands them; none
of them imports this module. They are, bottom up: the leaves `meta` (2026
`_meta` validation) and `subscriptions` (change notifications), `calls` (one
request, the backend's `CallContext`, the continuation a 2026 call runs in),
`_state` (the `Runtime`, signed cursors and requestStates), `tasks.store` (tool
calls that run as tasks), `mrtr` (calling the backend, MRTR rounds),
`tasks.handlers` and `tasks.legacy` (the task methods of 2026-07-28 and
2025-11-25) and `handlers` (one per method).
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio

from mcpcli.core.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Notification,
    Request,
)
from mcpcli.core.protocol import (
    CACHEABLE_METHODS,
    LATEST_LEGACY,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    TASKS_EXTENSION,
)
from mcpcli.errors import ConnectionClosed, RPCError
from mcpcli.jobs import JobSet
from mcpcli.rpc.peer import HandlerError, Peer, RequestContext, log_unexpected, report_default
from mcpcli.server._state import Runtime
from mcpcli.server.backend import Backend
from mcpcli.server.calls import Outlet, legacy_request, modern_request
from mcpcli.server.handlers import Handlers
from mcpcli.server.handoff import relay_hook
from mcpcli.server.meta import ModernError, RequestMeta, check_version, parse_meta
from mcpcli.server.subscriptions import (
    LIST_CHANGED,
    SharedChanges,
    Sink,
    change_message,
    legacy_methods,
    subscribable,
)
from mcpcli.server.tasks.handlers import TaskHandlers
from mcpcli.server.tasks.legacy import TASKS_VERSION, LegacyTasks
from mcpcli.server.tasks.store import TaskStore
from mcpcli.server.tracing import handle, traced
from mcpcli.transports import Envelope, Streams

if TYPE_CHECKING:
    from mcpcli.server.tasks.records import TaskRecords
    from mcpcli.transports.memory import InProcessTransport

__all__ = ["ModernError", "Outlet", "Server", "ServerConnection"]

log = logging.getLogger("mcpcli.server")


def _call_task_failed(exc: Exception) -> None:
    """A 2026 call's task let an exception out (its own handling failed): one log line."""
    log_unexpected(log, "running a call", exc)

JSON = dict[str, Any]

#: The answer (-32600) to a request other than ping between initialize and
#: notifications/initialized (the spec: the server SHOULD NOT process it).
NOT_INITIALIZED = "Invalid request: session not initialized (send notifications/initialized first)"
#: How long a closed connection's leftover resource subscriptions may take to be released.
_UNSUBSCRIBE_GRACE = 5.0


class ServerConnection:
    """The state of one connection: a stdio process, an in-memory pair, a legacy HTTP session.

    Until `initialize` it serves only stateless (2026-07-28) requests and ping;
    after it, only ping until `notifications/initialized`.
    """

    def __init__(self, server: Server, transport: str, principal: str = "") -> None:
        self.server = server
        self.transport = transport
        self.principal = principal
        #: The negotiated legacy protocol version, once initialized.
        self.version: str | None = None
        self.client_capabilities: JSON = {}
        self.client_info: JSON = {}
        self.initialized = False
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        self.peer: Peer | None = None
        #: A legacy HTTP session's id (`Mcp-Session-Id`), for spans.
        self.session_id: str | None = None
        self.sink = Sink(frozenset(), self.subscriptions)
        self.sink.active = False
        #: 2026 `subscriptions/listen` streams open on this connection.
        self.listens: set[Sink] = set()
        #: At end of input, how long the requests already received may take to finish
        #: before they are cancelled (stdio: a grace period; an ended HTTP session: none).
        self.close_grace = 0.0

    async def on_request(self, request: Request, ctx: Any) -> JSON:
        if not traced(request):
            return await self.server._dispatch(self, request, ctx)
        return await handle(request, lambda: self.server._dispatch(self, request, ctx),
                            transport=self.transport, version=self._version(request), session_id=self.session_id)

    def _version(self, request: Request) -> str | None:
        """The protocol revision a request speaks: its 2026-07-28 `_meta`, else the session's."""
        params = request.params or {}
        meta = params.get("_meta")
        if type(meta) is dict and isinstance(meta.get(PROTOCOL_VERSION_KEY), str):
            return str(meta[PROTOCOL_VERSION_KEY])
        if self.version is None and request.method == "initialize":
            requested = params.get("protocolVersion")
            return requested if isinstance(requested, str) else None
        return self.version

    def quick(self, request: Request) -> JSON | None:
        """The answer to `ping`, given as it is read (the session's `quick`): ahead of the
        calls queued before it and past the concurrency cap, however busy the server is.
        Every era gets one, 2026-07-28 included (real clients still send it there); a 2026
        ping whose `_meta` is wrong takes the usual path, which says what is wrong."""
        if request.method != "ping":
            return None
        params = request.params or {}
        meta = params.get("_meta")
        if type(meta) is not dict or PROTOCOL_VERSION_KEY not in meta:
            return {}  # legacy, at any point of the handshake
        try:
            self.server.check_version(self.server.modern_meta(params).version)
        except RPCError:
            return None
        return self.server._decorate(request.method, {})

    async def on_notification(self, note: Notification, envelope: Envelope) -> None:
        if (
            note.method == "notifications/initialized"
            and self.version is not None
            and not self.initialized
        ):
            self.initialized = True
            self.sink.methods = self.server._legacy_notifications()
            self.sink.active = True
            # An optional Backend hook (the gateway's): a way to ask this client outside any
            # request (its roots, when an upstream asks for them unprompted).
            ready = getattr(self.server.backend, "client_ready", None)
            peer = self.peer
            if callable(ready) and peer is not None:

                async def ask(method: str, params: JSON) -> JSON:
                    return await peer.request(method, params)

                ready(self.transport, self.client_capabilities, ask)
        elif note.method == "notifications/roots/list_changed" and self.initialized:
            # An optional Backend hook (the gateway's: its upstreams must learn the new roots).
            changed = getattr(self.server.backend, "roots_changed", None)
            if callable(changed):
                changed()

    async def drain(self) -> None:
        """Deliver change notifications to a legacy client (on HTTP: the GET stream)."""
        async for method, params in self.sink.receive:
            peer = self.peer
            if peer is None:
                continue
            try:
                await peer.notify(method, params)
            except ConnectionClosed:
                return


class Server:
    """An MCP server over a `Backend`, for every protocol era.

    Usage::

        server = Server(backend)
        await serve_stdio(server)                    # mcp serve (stdio)
        await serve_http(server, port=8080)          # mcp serve --http
        async with Client(server.transport()) as c:  # in-process, tests
            ...

    `serve(streams)` runs one connection; to run several at once (HTTP), enter
    the server first (`async with server:`), which starts the task group that
    parks 2026 calls waiting for client input.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        page_size: int = 100,
        list_ttl_ms: int = 60_000,
        read_ttl_ms: int = 0,
        cache_scope: str = "public",
        input_ttl: float = 600.0,
        max_parked: int = 128,
        max_tasks: int = 1000,
        secret: bytes | None = None,
        task_records: TaskRecords | None = None,
        max_tasks_per_principal: int | None = None,
        max_task_result: int | None = None,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be positive")
        #: What the helpers share (settings, signer, parked calls, subscribers, task group).
        self.runtime = runtime = Runtime(
            backend,
            page_size=page_size,
            list_ttl_ms=list_ttl_ms,
            read_ttl_ms=read_ttl_ms,
            cache_scope=cache_scope,
            input_ttl=input_ttl,
            max_parked=max_parked,
            secret=secret,
        )
        self.backend = backend
        self._tg_cm: Any = None
        self._depth = 0
        self._loop: Any = None
        self._loop_thread: int | None = None
        self._server_info: JSON = dict(backend.server_info())
        self._tools: dict[str, JSON] | None = None
        backend.set_change_listener(self._on_change)
        #: Tool calls running as tasks (`tasks.store`), and their methods in each era.
        self.tasks = TaskStore(runtime, max_tasks=max_tasks, records=task_records,
                               max_per_principal=max_tasks_per_principal, max_result_bytes=max_task_result)
        self.task_handlers = TaskHandlers(runtime, self.tasks)
        #: Replicas sharing a task store that relays notifications (Redis) also share
        #: list changes and resource updates, so a listen on any replica hears them.
        self._shared: SharedChanges | None = None
        self._relay: Any = getattr(self.tasks.records, "relay_notification", None)
        if self._relay is not None:
            self._shared = SharedChanges()
            self.tasks.records.on_notification(self._relayed)  # type: ignore[attr-defined]
        self.legacy_tasks = LegacyTasks(runtime, self.task_handlers)
        handlers = Handlers(runtime, self.capabilities, self.task_handlers, self.legacy_tasks)
        self._legacy = handlers.legacy()
        self._legacy.update(self.legacy_tasks.handlers())
        self._modern = handlers.modern()
        self._modern.update(self.task_handlers.modern())

    # -- lifecycle -----------------------------------------------------------------

    async def __aenter__(self) -> Server:
        if self._depth == 0:
            self._tg_cm = anyio.create_task_group()
            self.runtime.tg = await self._tg_cm.__aenter__()
            self.runtime.calls = JobSet(self.runtime.tg, _call_task_failed)
            self.runtime.tg.start_soon(self.tasks.sweeper)
            self._loop_thread = threading.get_ident()
            try:
                import asyncio

                self._loop = asyncio.get_running_loop()
            except RuntimeError:  # pragma: no cover - trio
                self._loop = None
        self._depth += 1
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        self._depth -= 1
        if self._depth > 0:
            return None
        self.close_subscriptions()
        runtime = self.runtime
        assert runtime.tg is not None
        assert runtime.calls is not None
        runtime.tg.cancel_scope.cancel()
        await runtime.calls.aclose()
        cm, self._tg_cm, runtime.tg, runtime.calls = self._tg_cm, None, None, None
        return bool(await cm.__aexit__(exc_type, exc, tb))

    @property
    def running(self) -> bool:
        return self.runtime.tg is not None

    def close_subscriptions(self) -> None:
        """End every subscription gracefully (listen streams get their final result)."""
        for sink in list(self.runtime.sinks):
            sink.close()

    def connection(self, transport: str, principal: str = "") -> ServerConnection:
        return ServerConnection(self, transport, principal)

    async def serve(
        self,
        streams: Streams,
        *,
        transport: str = "memory",
        connection: ServerConnection | None = None,
    ) -> None:
        """Serve one connection until its read stream ends."""
        if self.runtime.tg is None:
            async with self:
                await self._serve(streams, connection or self.connection(transport))
        else:
            await self._serve(streams, connection or self.connection(transport))

    async def _serve(self, streams: Streams, conn: ServerConnection) -> None:
        # A backend that passes plain tool calls through whole (the gateway's): `passing`.
        pass_call = getattr(self.backend, "pass_call", None)
        async with Peer(
            streams,
            on_request=conn.on_request,
            on_notification=conn.on_notification,
            on_error=self._transport_warning,
            quick=conn.quick,
            relay=relay_hook(self.runtime, self._decorate, conn, pass_call) if pass_call is not None else None,
        ) as peer:
            conn.peer = peer
            self.runtime.sinks.add(conn.sink)
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(conn.drain)
                    await peer.wait_closed()
                    for sink in list(conn.listens):
                        sink.close()  # listen streams end with their final result
                    if conn.close_grace > 0:
                        # Quick answers still go out (`printf '...' | mcp serve`); then the
                        # rest is cancelled, as a shutdown should.
                        with anyio.move_on_after(conn.close_grace):
                            await peer.wait_idle()
                    tg.cancel_scope.cancel()
            finally:
                self.runtime.sinks.discard(conn.sink)
                conn.sink.close()
                conn.sink.receive.close()
                await self._end_subscriptions(conn)

    async def _end_subscriptions(self, conn: ServerConnection) -> None:
        """A connection that ends without unsubscribing (a client that just went away) no
        longer follows its resources: a backend that follows them elsewhere (a gateway,
        upstream) is told, as if the client had sent `resources/unsubscribe` for each."""
        uris = sorted(conn.subscriptions)
        conn.subscriptions.clear()
        hook = getattr(self.backend, "unsubscribe_resource", None)
        if hook is None or not uris:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(_UNSUBSCRIBE_GRACE):
            for uri in uris:
                try:
                    await hook(uri)
                except Exception as exc:  # a backend's bug must not break the teardown
                    log_unexpected(log, f"unsubscribing {uri} for a closed connection", exc)

    def transport(self) -> InProcessTransport:
        """A client transport that talks to this server in-process."""
        from mcpcli.transports.memory import InProcessTransport

        async def serve(streams: Streams) -> None:
            await self.serve(streams, transport="memory")

        return InProcessTransport(serve)

    @staticmethod
    def _transport_warning(exc: Exception) -> None:
        if isinstance(exc, HandlerError):  # a bug in a handler: one line for the operator
            report_default(exc)
        else:
            log.debug("transport: %s", exc)

    # -- facts -----------------------------------------------------------------------

    @property
    def server_info(self) -> JSON:
        return self._server_info

    def capabilities(self, version: str) -> JSON:
        """The server capabilities for a protocol revision."""
        declared = self.backend.capabilities()
        caps: JSON = {}
        if "tools" in declared:
            caps["tools"] = {"listChanged": True}
        if "prompts" in declared:
            caps["prompts"] = {"listChanged": True}
        if "resources" in declared:
            resources: JSON = {"listChanged": True}
            if subscribable(declared):
                resources["subscribe"] = True
            caps["resources"] = resources
        if "completions" in declared and version != "2024-11-05":
            caps["completions"] = {}
        caps["logging"] = {}
        if "tasks" in declared:
            if version in MODERN_VERSIONS:
                caps["extensions"] = {TASKS_EXTENSION: {}}
            elif version == TASKS_VERSION:
                caps["tasks"] = self.legacy_tasks.capability()
        return caps

    def _legacy_notifications(self) -> frozenset[str]:
        return legacy_methods(self.backend.capabilities())

    async def tool(self, name: str) -> JSON | None:
        """A tool's definition (cached until the backend announces a tools change)."""
        if self._tools is None:
            tools = await self.backend.list_tools()
            self._tools = {t["name"]: t for t in tools if isinstance(t, dict) and "name" in t}
        return self._tools.get(name)

    # -- change notifications ----------------------------------------------------------

    def _on_change(self, kind: str, uri: str | None = None) -> None:
        if (
            self._loop is not None
            and self._loop_thread is not None
            and threading.get_ident() != self._loop_thread
        ):
            self._loop.call_soon_threadsafe(self._fan_out, kind, uri)
            return
        self._fan_out(kind, uri)

    def _fan_out(self, kind: str, uri: str | None) -> None:
        if kind == "tools":
            self._tools = None
        message = change_message(kind, uri)
        if message is None:
            return
        method, params = message
        self._server_info = dict(self.backend.server_info())
        shared = self._shared
        if shared is not None:
            if not shared.local(method, params):
                return
            self._relay(method, params)
        self.runtime.offer(method, params)

    def _relayed(self, method: str, params: JSON) -> None:
        """A change another replica noticed (on the event loop)."""
        if self._shared is not None and self._shared.remote(method, params):
            if method == LIST_CHANGED["tools"]:
                self._tools = None
            self.runtime.offer(method, params)

    # -- dispatch ----------------------------------------------------------------------

    async def _dispatch(self, conn: ServerConnection, request: Request, ctx: Any) -> JSON:
        params = request.params
        if params is None:
            params = {}
        meta = params.get("_meta")
        if type(meta) is dict and PROTOCOL_VERSION_KEY in meta:
            return await self.handle_modern(
                request, ctx, transport=conn.transport, principal=conn.principal, connection=conn
            )
        method = request.method
        if conn.version is None:
            if method == "initialize":
                return self._initialize(conn, params)
            if method == "ping":
                return {}
            if method in self._modern:
                return await self.handle_modern(
                    request, ctx, transport=conn.transport, principal=conn.principal,
                    connection=conn,
                )
            raise RPCError(
                INVALID_PARAMS,
                "Invalid params: missing _meta; send initialize first (2024-11-05..2025-11-25) "
                "or the 2026-07-28 per-request _meta",
            )
        if method == "initialize":
            raise RPCError(INVALID_REQUEST, "the session is already initialized")
        handler = self._legacy.get(method)
        if handler is None:
            raise RPCError(METHOD_NOT_FOUND, f"Method not found: {method}")
        if not conn.initialized and method != "ping":
            # The handshake is not over until notifications/initialized; a client
            # that does not wait would see capabilities and notifications half set up.
            raise RPCError(INVALID_REQUEST, NOT_INITIALIZED)
        return await handler(legacy_request(request, params, ctx, conn))

    def _initialize(self, conn: ServerConnection, params: JSON) -> JSON:
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise RPCError(INVALID_PARAMS, "initialize: protocolVersion must be a string")
        version = requested if requested in LEGACY_VERSIONS else LATEST_LEGACY
        caps = params.get("capabilities")
        info = params.get("clientInfo")
        conn.client_capabilities = caps if isinstance(caps, dict) else {}
        conn.client_info = info if isinstance(info, dict) else {}
        conn.version = version
        if conn.peer is not None:
            conn.peer.allow_batch = version == "2025-03-26"
        result: JSON = {
            "protocolVersion": version,
            "capabilities": self.capabilities(version),
            "serverInfo": self._server_info,
        }
        instructions = self.backend.instructions()
        if instructions:
            result["instructions"] = instructions
        return result

    #: Validate the required `_meta` of a 2026-07-28 request (-32602 when malformed).
    modern_meta = staticmethod(parse_meta)
    #: Refuse a protocol revision this server does not serve statelessly (-32022).
    check_version = staticmethod(check_version)

    async def handle_modern(
        self,
        request: Request,
        outlet: Outlet,
        *,
        transport: str,
        principal: str = "",
        meta: RequestMeta | None = None,
        connection: ServerConnection | None = None,
    ) -> JSON:
        """Answer one stateless 2026-07-28 request; raise `RPCError` (maybe `ModernError`).

        `connection` is the stdio/in-memory connection it came on, if any (only used
        to end its listen streams when the connection closes)."""
        params = request.params
        if params is None:
            params = {}
        if meta is None:
            meta = self.modern_meta(params)
        self.check_version(meta.version)
        handler = self._modern.get(request.method)
        if handler is None:
            raise ModernError(METHOD_NOT_FOUND, f"Method not found: {request.method}", status=404)
        rq = modern_request(request, params, outlet, meta, transport, principal, connection)
        if connection is not None and isinstance(outlet, RequestContext) and outlet.can_answer_now:
            early = outlet.answer_now

            async def answer_now(result: JSON) -> None:
                # The parked call becomes the server's: a retry may come on another connection.
                await early(self._decorate(request.method, result), keep_in=self.runtime.call_tasks())

            rq.answer_now = answer_now
        result = await handler(rq)
        return self._decorate(request.method, result)

    def _decorate(self, method: str, result: JSON) -> JSON:
        out = dict(result)
        kind = out.setdefault("resultType", "complete")
        meta = out.get("_meta")
        meta = dict(meta) if isinstance(meta, dict) else {}
        meta[SERVER_INFO_KEY] = self._server_info
        out["_meta"] = meta
        if kind == "complete" and method in CACHEABLE_METHODS:
            runtime = self.runtime
            ttl = out.get("ttlMs")
            if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0:
                out["ttlMs"] = runtime.read_ttl_ms if method == "resources/read" else runtime.list_ttl_ms
            if out.get("cacheScope") not in ("public", "private"):
                out["cacheScope"] = runtime.cache_scope
        return out
