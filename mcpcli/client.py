"""The MCP client: era negotiation, the operations of every primitive, client features.

`Client` wraps a transport and a `Session`. On entry it finds out which era the
server speaks: it probes with `server/discover` (modern, stateless 2026-07-28)
and falls back to the `initialize` handshake (legacy, 2024-11-05 .. 2025-11-25)
on any answer that is not recognisably modern (a stdio server that ends on the
probe, as rmcp servers do, is started again for it). After that every operation looks
the same to the caller: modern requests get their `_meta`, multi-round-trip
results are answered and retried, pages are followed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpcli import __version__, spans, tracecontext
from mcpcli import tasks as _tasks
from mcpcli.errors import (
    McpCliError,
    NotOffered,
    ProtocolError,
    RequestTimeout,
    RPCError,
    ServerExited,
    TransportError,
    UnsupportedVersionError,
    handshake_timeout,
)
from mcpcli.handshake import (
    Handshake,
    next_round,
    offered_versions,
    parse_discover,
    parse_initialize,
    request_meta,
    round_kind,
    with_meta,
)
from mcpcli.jsonrpc import METHOD_NOT_FOUND, Notification, Request, RequestId
from mcpcli.protocol import (
    ALL_VERSIONS,
    CLIENT_CAPABILITIES_KEY,
    HEADER_MISMATCH,
    LATEST_LEGACY,
    LATEST_MODERN,
    LEGACY_VERSIONS,
    MAX_INPUT_ROUNDS,
    MAX_PAGES,
    MODERN_VERSIONS,
    MRTR_METHODS,
    PROTOCOL_VERSION_KEY,
    RELATED_TASK_KEY,
    SUBSCRIPTION_ID_KEY,
    Era,
    era_of,
    input_requests,
    is_modern_error,
    pick_version,
)
from mcpcli.session import ProgressHandler, RequestContext, Session, SlowHandler, Tracer
from mcpcli.tasks import TaskOptions
from mcpcli.tracecontext import TraceContext
from mcpcli.transports import Envelope, Transport

__all__ = ["Client", "ClientFeatures", "ClientOptions", "Subscription", "caused_by"]

log = logging.getLogger("mcpcli.client")

JSON = dict[str, Any]
Elicitor = Callable[[JSON], Awaitable[JSON]]
Sampler = Callable[[JSON], Awaitable[JSON]]
NotificationCallback = Callable[[str, JSON], None]
#: Sees notifications before anyone else; True means it consumed the notification.
NotificationTap = Callable[[str, JSON], bool]

#: While a feature callback (elicit, sample) or `on_notification` runs: the id of our
#: request whose stream carried the server's message (Streamable HTTP), else None.
#: A context variable, so every callback keeps its one-argument shape; the session
#: daemon reads it to route the message to the command that made that request.
caused_by: ContextVar[RequestId | None] = ContextVar("mcpcli_caused_by", default=None)

#: With roots declared, how long a legacy server may take to ask `roots/list` after
#: the handshake before the first request goes out anyway.
ROOTS_WAIT = 0.3
#: After answering `roots/list`: servers apply roots asynchronously (the official
#: filesystem server checks each directory), so the first request waits this long.
ROOTS_SETTLE = 0.05


async def _decline(params: JSON) -> JSON:
    return {"action": "decline"}


@dataclass
class ClientFeatures:
    """What this client answers when a server asks: elicitation, sampling, roots.

    A capability is declared only when we really answer it. Elicitation is always
    answered (declining is an answer); sampling needs a `sample` callback and
    roots a list.
    """

    elicit: Elicitor = _decline
    sample: Sampler | None = None
    roots: list[JSON] | None = None
    #: Whether URL-mode elicitation can be shown to a person (a TTY).
    elicit_url: bool = False

    def capabilities(self, era: Era) -> JSON:
        caps: JSON = {}
        elicitation: JSON = {"form": {}}
        if self.elicit_url:
            elicitation["url"] = {}
        caps["elicitation"] = elicitation
        if self.sample is not None:
            caps["sampling"] = {}
        if self.roots is not None:
            caps["roots"] = {} if era == "modern" else {"listChanged": False}
        return caps


@dataclass
class ClientOptions:
    client_info: JSON = field(
        default_factory=lambda: {"name": "mcpcli", "title": "mcpcli", "version": __version__}
    )
    #: Force one protocol version (skips negotiation across eras).
    protocol: str | None = None
    timeout: float | None = 60.0
    max_timeout: float | None = 3600.0
    #: How long a stdio server may stay silent on the era probe before we call it legacy.
    probe_timeout: float = 5.0
    log_level: str | None = None
    features: ClientFeatures = field(default_factory=ClientFeatures)
    on_notification: NotificationCallback | None = None
    on_error: Callable[[Exception], None] | None = None
    trace: Tracer | None = None
    #: Extra `_meta` entries for every request after the handshake (`--meta`); a key the
    #: client sets itself (progressToken, the 2026-07-28 fields) wins over these.
    meta: JSON = field(default_factory=dict)
    #: The trace every request continues (`--traceparent`, `TRACEPARENT`): its
    #: `traceparent` and `tracestate` go into each request's `_meta`, in every era. The
    #: request being handled here (`tracecontext.current`: a gateway's) comes first.
    trace_context: TraceContext | None = None
    #: Reuse and store what was learnt of the server's era (a cached `server/discover`
    #: result, a stdio command line remembered as legacy). False: always a live probe
    #: (`mcp check` judges the handshake itself).
    remember_era: bool = True
    #: Told when a request has gone `slow_after` seconds unanswered (see `Session`): a
    #: person at a terminal is shown what is awaited from whom.
    on_slow: SlowHandler | None = None
    slow_after: float = 3.0
    #: Told what the client did on its own that a person tracing wants to know (a server
    #: started again after it exited on the era probe); `--trace` prints it.
    note: Callable[[str], None] | None = None


class _ExitedOnProbe(Exception):
    """The server exited, or closed its stdout, on the era probe without answering it."""

    def __init__(self, exited: ServerExited) -> None:
        super().__init__(exited.message)
        self.exited = exited


@dataclass
class Subscription:
    """Notifications delivered to one `subscribe` consumer."""

    methods: frozenset[str]
    send: MemoryObjectSendStream[JSON]
    #: Modern servers tag notifications with the listen request's id, learnt from the ack.
    subscription_id: Any = None
    acked: anyio.Event = field(default_factory=anyio.Event)
    error: BaseException | None = None


class Client:
    """A connected MCP client. `async with Client(transport) as c: await c.list_tools()`."""

    def __init__(self, transport: Transport, options: ClientOptions | None = None) -> None:
        self.transport = transport
        self.options = options or ClientOptions()
        self.era: Era = "legacy"
        self.protocol_version: str = ""
        self.server_info: JSON = {}
        self.capabilities: JSON = {}
        self.instructions: str | None = None
        #: Versions the server said it supports (modern servers only).
        self.supported_versions: list[str] = []
        #: The raw initialize or discover result.
        self.handshake: JSON = {}
        self._session: Session | None = None
        self._stack: AsyncExitStack | None = None
        #: The transport's connection and the session on it (replaced by a restart).
        self._link: AsyncExitStack | None = None
        self._subscriptions: list[Subscription] = []
        self._taps: list[NotificationTap] = []
        self._tools: dict[str, JSON] | None = None
        #: The era came from a cached `server/discover` result (HTTP), not a live probe.
        self.era_from_cache = False
        #: The last `list_tools` answer came from the on-disk cache (its ttlMs allowed it).
        self.tools_from_cache = False
        #: Set once the server has asked for our roots (a legacy server does after the handshake).
        self._roots_asked: anyio.Event | None = None

    # -- lifecycle ---------------------------------------------------------------

    async def __aenter__(self) -> Client:
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            stack.push_async_exit(self._close_link)
            # What the server says on stderr waits for the era probe's outcome: a server
            # that dies of the probe is started again, and its first words are not shown.
            await self._open_link(hold_output=True)
            self._roots_asked = anyio.Event()
            try:
                await self._negotiate_within(self.options.timeout)
            finally:
                self.transport.release_output()
            await self._await_roots()
        except BaseException as exc:
            await stack.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._stack = stack
        return self

    async def _open_link(self, *, hold_output: bool) -> None:
        """Connect the transport and start a session on it (again, after a restart)."""
        if hold_output:
            self.transport.hold_output()
        link = AsyncExitStack()
        self._link = link
        streams = await link.enter_async_context(self.transport.connect())
        self._session = await link.enter_async_context(
            Session(
                streams,
                on_request=self._on_request,
                on_notification=self._on_notification,
                on_error=self.options.on_error,
                trace=self.options.trace,
                default_timeout=self.options.timeout,
                max_timeout=self.options.max_timeout,
                on_slow=self.options.on_slow,
                slow_after=self.options.slow_after,
            )
        )

    async def _close_link(self, *exc_info: Any) -> bool:
        link, self._link = self._link, None
        if link is None:
            return False
        return bool(await link.__aexit__(*exc_info))

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        stack, self._stack = self._stack, None
        if stack is None:
            return None
        return bool(await stack.__aexit__(*exc_info))

    @property
    def session(self) -> Session:
        if self._session is None:
            raise RuntimeError("client is not connected")
        return self._session

    # -- negotiation -------------------------------------------------------------

    async def _negotiate_within(self, timeout: float | None) -> None:
        """Negotiate, the probe and the handshake together bounded by `timeout`
        (`--timeout` bounds the whole set-up, not each of its requests), a restart
        after the probe included."""
        deadline = math.inf if timeout is None else anyio.current_time() + timeout
        try:
            await self._bounded(self._negotiate, deadline, timeout)
        except _ExitedOnProbe as exc:
            # rmcp servers (Rust) end at a first message that is not `initialize`.
            # The restart happens outside the deadline's scope: the session's own
            # scopes must not be exited inside one entered after them.
            what = (f"the server ended on the era probe, unanswered ({exc.exited.message}); "
                    "starting it again for the initialize handshake")
            log.info("%s", what)
            if self.options.note is not None:
                self.options.note(what)
            self.transport.release_output(drop=True)
            await self._close_link(None, None, None)
            await self._open_link(hold_output=False)
            await self._bounded(self._initialize_after_probe, deadline, timeout)

    @staticmethod
    async def _bounded(step: Callable[[], Awaitable[None]], deadline: float, timeout: float | None) -> None:
        if timeout is None:
            await step()
            return
        try:
            with anyio.CancelScope(deadline=deadline) as scope:
                await step()
        except RequestTimeout:
            # A handshake request's own deadline (the same --timeout, started a moment
            # later) can fire first: "initialize timed out after 0.0s" says less.
            raise handshake_timeout(timeout) from None
        if scope.cancelled_caught:
            raise handshake_timeout(timeout)

    async def _await_roots(self) -> None:
        """With roots declared, let a legacy server ask for them before our first request.

        Servers ask `roots/list` after `initialized` and apply the answer
        asynchronously, so a first request sent at once races it (and the official
        filesystem server denies it). Bounded: a server that never asks costs ROOTS_WAIT.
        """
        if self.options.features.roots is None or self.era != "legacy" or self._roots_asked is None:
            return
        with anyio.move_on_after(ROOTS_WAIT) as scope:
            await self._roots_asked.wait()
        if not scope.cancelled_caught:
            await anyio.sleep(ROOTS_SETTLE)

    async def _negotiate(self) -> None:
        forced = self.options.protocol
        if forced is not None:
            self.transport.release_output()  # no probe
            if forced not in ALL_VERSIONS:
                raise ProtocolError(
                    f"unknown protocol version {forced!r}",
                    hint="known versions: " + ", ".join(ALL_VERSIONS),
                )
            if era_of(forced) == "modern":
                await self._discover(forced, probe=False)
            else:
                await self._initialize(forced)
            return
        if self.transport.traits.legacy_only:
            # HTTP+SSE (2024-11-05) predates the modern era: no probe.
            self.transport.release_output()
            await self._initialize(LATEST_LEGACY)
            return
        cached = self._cached_discover()
        if cached is not None and self._adopt_discover(cached, LATEST_MODERN):
            self.era_from_cache = True
            return
        remembered = self._remembered_legacy()
        if remembered is not None:
            # This command line was a legacy server last time: skip the probe, which
            # some servers answer with pages of warnings on stderr (SDK 1.x), and some
            # (rmcp) by exiting.
            self.transport.release_output()
            try:
                await self._initialize(LATEST_LEGACY)
            except (RPCError, ProtocolError) as exc:
                log.debug("initialize failed on a remembered legacy server (%s); probing", exc)
                self._remember_legacy(None)
            else:
                if _version_of(self.server_info) != remembered.get("version"):
                    self._remember_legacy(None)  # upgraded: probe again next time
                return
        try:
            modern = await self._discover(LATEST_MODERN, probe=True)
        except ServerExited as exc:
            raise _ExitedOnProbe(exc) from None
        self.transport.release_output()
        if modern:
            return  # nothing to forget: a remembered legacy server returned or was forgotten above
        await self._initialize_after_probe()

    async def _initialize_after_probe(self) -> None:
        """The probe found no modern server: `initialize`, and remember the command line."""
        try:
            await self._initialize(LATEST_LEGACY)
        except UnsupportedVersionError as exc:
            # The probe went unanswered in time (a slow-booting server) but the server
            # is modern and refuses `initialize`: ask it again, without a probe's bound.
            if exc.supported and pick_version(exc.supported, prefer=MODERN_VERSIONS) is None:
                raise
            log.debug("initialize refused (%s); the server is modern after all", exc)
            choice = pick_version(exc.supported, prefer=MODERN_VERSIONS) or LATEST_MODERN
            await self._discover(choice, probe=False)
            return
        self._remember_legacy(self.server_info)

    def _probe_memory_key(self) -> str | None:
        """The command line of a stdio server, whose era is remembered across runs."""
        command_line = self.transport.traits.command_line
        if not command_line or not self.options.remember_era:
            return None
        import json

        return "stdio:" + json.dumps(list(command_line))

    def _remembered_legacy(self) -> JSON | None:
        key = self._probe_memory_key()
        if key is None:
            return None
        from mcpcli import cache

        record = cache.load(key, "era")
        result = record.get("result") if record else None
        if isinstance(result, dict) and result.get("era") == "legacy":
            return result
        return None

    def _remember_legacy(self, server_info: JSON | None) -> None:
        """Remember (or, with None, forget) that the probe failed on this command line."""
        key = self._probe_memory_key()
        if key is None:
            return
        from mcpcli import cache

        if server_info is None:
            cache.forget(key, "era")
            return
        cache.store(key, "era", {"era": "legacy", "version": _version_of(server_info)})

    def _cache_key(self) -> str | None:
        """Where this server's cacheable results live (HTTP servers only: a URL)."""
        if not self.options.remember_era:
            return None
        return self.transport.traits.cache_key or None

    def _cached_discover(self) -> JSON | None:
        key = self._cache_key()
        if key is None:
            return None
        from mcpcli import cache

        return cache.fresh(key, "server/discover")

    def _store_discover(self, result: JSON) -> None:
        key = self._cache_key()
        ttl = result.get("ttlMs")
        if key is None or not isinstance(ttl, int) or ttl <= 0:
            return
        if result.get("cacheScope", "public") != "public":
            return
        from mcpcli import cache

        cache.store(key, "server/discover", result)

    async def renegotiate(self) -> None:
        """Find the era again with a live probe (a cached era turned out wrong)."""
        from mcpcli import cache

        key = self._cache_key()
        if key is not None:
            cache.store(key, "server/discover", {})  # forget it: no ttlMs, never fresh
        self.era_from_cache = False
        self._tools = None
        if await self._discover(LATEST_MODERN, probe=True):
            return
        await self._initialize(LATEST_LEGACY)

    def _meta(self, version: str) -> JSON:
        return request_meta(version, self.options.client_info, self.options.features.capabilities("modern"),
                            self.options.log_level)

    async def _discover(self, version: str, *, probe: bool) -> bool:
        """Try the modern era. False means the server is legacy (only when probing).

        Over stdio a server that stays silent is legacy; over HTTP every request
        gets an answer, so the probe waits the normal timeout and an HTTP error
        status (400/404/405 from a legacy server, or any other) means legacy.
        """
        tried: dict[str, int] = {}
        silence_is_legacy = self.transport.traits.probe_silence_is_legacy
        probe_timeout: float | bool | None = True
        if probe and silence_is_legacy:
            probe_timeout = self.options.probe_timeout
            if self.options.timeout is not None:
                probe_timeout = min(probe_timeout, self.options.timeout)
        while True:
            tried[version] = tried.get(version, 0) + 1
            try:
                result = await self._send(
                    "server/discover",
                    {"_meta": self._meta(version)},
                    timeout=probe_timeout,
                    progress_token=False,
                    cancel_on_timeout=False,
                )
            except UnsupportedVersionError as exc:
                choice = pick_version(exc.supported, prefer=MODERN_VERSIONS)
                # The same version may be retried once: the server may have refused
                # something else about the first attempt (a stale gateway, a header).
                if choice is None or tried.get(choice, 0) >= (2 if choice == version else 1):
                    legacy = pick_version(exc.supported, prefer=LEGACY_VERSIONS)
                    if legacy is not None and probe:
                        # A dual-era server that does not speak our modern revision.
                        return False
                    raise ProtocolError(
                        "the server supports none of our protocol versions "
                        f"(it offers {', '.join(exc.supported) or 'none'})"
                    ) from None
                version = choice
                continue
            except RPCError as exc:
                if not probe or is_modern_error(exc.code, exc.data):
                    raise
                log.debug("server/discover failed (%s); falling back to initialize", exc)
                return False
            except TransportError as exc:
                # An HTTP error status: a legacy server that does not know the method
                # (400/404/405), or one that breaks on it; `initialize` will tell. So
                # does a broken answer (one that names the probe but cannot be parsed).
                broken_answer = isinstance(exc, ProtocolError) and exc.request_id is not None
                if not probe or (exc.status is None and not broken_answer):
                    raise
                log.debug("server/discover failed (%s); falling back to initialize", exc)
                return False
            except RequestTimeout:
                if not probe or not silence_is_legacy:
                    raise
                log.debug("no answer to server/discover; falling back to initialize")
                return False
            if not self._adopt_discover(result, version):
                offered = offered_versions(result)
                if probe and (offered is None or pick_version(offered, prefer=LEGACY_VERSIONS)):
                    return False
                if offered is None:
                    raise ProtocolError("server/discover result has no supportedVersions")
                raise ProtocolError(
                    "the server supports none of our protocol versions "
                    f"(it offers {', '.join(offered) or 'none'})"
                )
            self._store_discover(result)
            return True

    def _adopt_discover(self, result: JSON, version: str) -> bool:
        """Take a `server/discover` result as the session's; False if it has no version for us."""
        adopted = parse_discover(result, version)
        if adopted is None:
            return False
        self._adopt(adopted, result)
        return True

    def _adopt(self, adopted: Handshake, result: JSON) -> None:
        self.era = adopted.era
        self.protocol_version = adopted.protocol_version
        if adopted.supported_versions is not None:
            self.supported_versions = adopted.supported_versions
        self.handshake = result
        self.capabilities = adopted.capabilities
        self.server_info = adopted.server_info
        self.instructions = adopted.instructions

    async def _initialize(self, version: str) -> None:
        params = {
            "protocolVersion": version,
            "capabilities": self.options.features.capabilities("legacy"),
            "clientInfo": self.options.client_info,
        }
        result = await self._send("initialize", params, progress_token=False)
        self._adopt(parse_initialize(result), result)
        await self.session.notify("notifications/initialized")
        if self.options.log_level is not None and "logging" in self.capabilities:
            await self._send(
                "logging/setLevel", {"level": self.options.log_level}, progress_token=False
            )

    # -- requests ----------------------------------------------------------------

    def request_headers(self, method: str, params: JSON) -> Mapping[str, str] | None:
        """Extra transport headers for a request. A modern `tools/call` hands the
        transport the tool's listed definition (HTTP mirrors its `x-mcp-header`s)."""
        tool: JSON | None = None
        if method == "tools/call" and self.era == "modern":
            name = params.get("name")
            tool = self.known_tool(name) if isinstance(name, str) else None
        return self.transport.request_headers(method, params, tool=tool)

    def _send(self, method: str, params: JSON | None, **options: Any) -> Awaitable[JSON]:
        """`session.request` for every request we make, carrying the trace it continues.

        The trace context (the request being handled here, else `options.trace_context`)
        goes into `_meta` as it is (`tracecontext.request_meta`: every request but a legacy
        `initialize`); with spans on, the request is a CLIENT span, its child, and `_meta`
        names that span instead. Not a coroutine itself: the common case awaits the
        session's request directly, with no frame in between."""
        parent = tracecontext.current.get() or self.options.trace_context
        if spans.tracer() is not None:
            return self._send_in_span(method, params, parent, **options)
        if parent is not None and (entries := tracecontext.request_meta(method, parent)):
            params = with_meta(params or {}, entries)
        return self.session.request(method, params, **options)

    async def _send_in_span(self, method: str, params: JSON | None, parent: TraceContext | None,
                            **options: Any) -> JSON:
        request_id = self.session.next_id()
        attributes = spans.request_attributes(
            method, params or {}, request_id=request_id, version=self.protocol_version or _asked_version(params),
            transport=self.transport.name, session_id=_session_id(self.transport),
        )
        with spans.span("client", method, params or {}, parent=parent, attributes=attributes) as span:
            entries = tracecontext.request_meta(method, span.context)
            result = await self.session.request(
                method, with_meta(params or {}, entries) if entries else params, request_id=request_id, **options
            )
            span.result(result)
            return result

    async def request(
        self,
        method: str,
        params: JSON | None = None,
        *,
        on_progress: ProgressHandler | None = None,
        timeout: float | bool | None = True,
        max_timeout: float | bool | None = True,
    ) -> JSON:
        """Send one MCP request in the negotiated era and return its final result.

        A `progressToken` already in `params["_meta"]` is kept (a task's progress
        outlives the request); otherwise the request's id is the token.
        """
        limits = {"timeout": timeout, "max_timeout": max_timeout}
        if self.era_from_cache:
            try:
                return await self._request(method, params, on_progress=on_progress, **limits)
            except (RPCError, TransportError) as exc:
                if not _looks_legacy(exc):
                    raise
                log.debug("%s failed (%s); the cached era may be stale: probing again", method, exc)
                await self.renegotiate()
        return await self._request(method, params, on_progress=on_progress, **limits)

    async def _request(
        self,
        method: str,
        params: JSON | None,
        *,
        on_progress: ProgressHandler | None,
        timeout: float | bool | None,
        max_timeout: float | bool | None,
    ) -> JSON:
        params = dict(params or {})
        given = params.get("_meta")
        own_token = isinstance(given, dict) and "progressToken" in given
        if self.options.meta:
            params["_meta"] = {**self.options.meta, **(given if isinstance(given, dict) else {})}
        limits: dict[str, Any] = {
            "on_progress": on_progress, "timeout": timeout, "max_timeout": max_timeout,
            "progress_token": not own_token,
        }
        if self.era == "legacy":
            return await self._send(
                method, params, headers=self.request_headers(method, params), **limits
            )
        base = params
        for _round in range(MAX_INPUT_ROUNDS):
            meta = self._meta(self.protocol_version)
            if method in _tasks.DECLARE_ON:
                meta[CLIENT_CAPABILITIES_KEY] = _tasks.with_extension(meta[CLIENT_CAPABILITIES_KEY])
            sent = with_meta(base, meta)
            try:
                result = await self._send(
                    method, sent, headers=self.request_headers(method, sent), **limits
                )
            except UnsupportedVersionError as exc:
                choice = pick_version(exc.supported, prefer=MODERN_VERSIONS)
                if choice is None or choice == self.protocol_version:
                    raise
                self.protocol_version = choice
                continue
            kind = round_kind(method, result, creates_tasks=method in _tasks.TASK_CREATING_METHODS,
                              takes_input=method in MRTR_METHODS)
            if kind == "complete":
                self.era_from_cache = False  # the era works
                return result
            if kind == "task":
                return result  # the caller drives the task (call_tool does)
            base = next_round(params, result, await self._fulfil(result.get("inputRequests")))
        raise ProtocolError(f"{method}: the server kept asking for input ({MAX_INPUT_ROUNDS} rounds)")

    async def fulfil_input_requests(self, requests: Any) -> JSON:
        """Answer a map of input requests (MRTR, or a task's) with the client's features."""
        return await self._fulfil(requests)

    async def _fulfil(self, requests: Any) -> JSON:
        return {
            key: await self._serve_client_request(method, params)
            for key, method, params in input_requests(requests)
        }

    async def _serve_client_request(self, method: str, params: JSON) -> JSON:
        features = self.options.features
        if method == "ping":
            return {}
        if method == "elicitation/create":
            return await features.elicit(params)
        if method == "sampling/createMessage" and features.sample is not None:
            return await features.sample(params)
        if method == "roots/list" and features.roots is not None:
            if self._roots_asked is not None:
                self._roots_asked.set()
            return {"roots": features.roots}
        raise RPCError(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def _on_request(self, request: Request, ctx: RequestContext) -> JSON:
        token = caused_by.set(ctx.related_request_id)
        try:
            result = await self._serve_client_request(request.method, request.params or {})
        finally:
            caused_by.reset(token)
        related = ctx.meta.get(RELATED_TASK_KEY)
        if isinstance(related, dict):
            # A request on behalf of a task (2025-11-25): the answer says which task.
            result = dict(result)
            result["_meta"] = {**(result.get("_meta") or {}), RELATED_TASK_KEY: related}
        return result

    @contextmanager
    def tap(self, tap: NotificationTap) -> Iterator[None]:
        """While the block runs, `tap` sees every notification first (and may consume it)."""
        self._taps.append(tap)
        try:
            yield
        finally:
            self._taps.remove(tap)

    async def _on_notification(self, note: Notification, envelope: Envelope) -> None:
        params = note.params or {}
        for tap in list(self._taps):
            if tap(note.method, params):
                return
        meta = params.get("_meta")
        sid = meta.get(SUBSCRIPTION_ID_KEY) if isinstance(meta, dict) else None
        if note.method == "notifications/subscriptions/acknowledged":
            for sub in self._subscriptions:
                if not sub.acked.is_set():
                    sub.subscription_id = sid
                    sub.acked.set()
                    return
        delivered = False
        for sub in self._subscriptions:
            if note.method not in sub.methods:
                continue
            if sub.subscription_id is not None and sid is not None and sid != sub.subscription_id:
                continue
            try:
                sub.send.send_nowait({"method": note.method, "params": params})
                delivered = True
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
        if note.method.endswith("/list_changed") and note.method.startswith("notifications/tools"):
            self._tools = None
        callback = self.options.on_notification
        if callback is not None and not delivered:
            token = caused_by.set(envelope.related_request_id)
            try:
                callback(note.method, params)
            finally:
                caused_by.reset(token)

    # -- operations --------------------------------------------------------------

    async def ping(self) -> tuple[str, float]:
        """Round trip to the server: `ping` on legacy servers, `server/discover` on modern ones."""
        start = anyio.current_time()
        if self.era == "legacy":
            await self._send("ping", {"_meta": dict(self.options.meta)} if self.options.meta else None,
                             progress_token=False)
            method = "ping"
        else:
            await self.request("server/discover")
            method = "server/discover"
        return method, anyio.current_time() - start

    async def _pages(self, method: str, key: str, *, limit: int | None = None) -> JSON:
        """Follow `nextCursor` and return the first page's envelope with every item."""
        items: list[Any] = []
        seen: set[str] = set()
        first: JSON | None = None
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            result = await self.request(method, {"cursor": cursor} if cursor is not None else None)
            if first is None:
                first = result
            page = result.get(key)
            if isinstance(page, list):
                items.extend(page)
            nxt = result.get("nextCursor")
            if not isinstance(nxt, str) or (limit is not None and len(items) >= limit):
                break
            if nxt in seen:
                log.warning("%s: the server repeated cursor %r; stopping", method, nxt)
                break
            seen.add(nxt)
            cursor = nxt
        else:
            log.warning("%s: stopped after %d pages", method, MAX_PAGES)
        out = dict(first or {})
        out[key] = items
        out.pop("nextCursor", None)
        return out

    async def list_tools(self, *, cache_target: str | None = None) -> JSON:
        """Every tool. With `cache_target` (the user's TARGET), a modern server's fresh
        cached listing is reused instead of asking again, and a live one is stored."""
        from mcpcli import cache

        self.tools_from_cache = False
        if cache_target and self.era == "modern":
            cached = cache.fresh(cache_target, "tools/list")
            if cached is not None and isinstance(cached.get("tools"), list):
                self.tools_from_cache = True
                self._set_tools(cached)
                return cached
        async with self._feature("tools", "tools"):
            result = await self._pages("tools/list", "tools")
        if self.era == "modern":
            kept, dropped = self.transport.filter_tools(result["tools"])
            for name, reason in dropped:
                self._warn(ProtocolError(f"ignoring tool {name!r}: {reason}"))
            result["tools"] = kept
        if cache_target:
            cache.remember(cache_target, "tools/list", result)
        self._set_tools(result)
        return result

    def _set_tools(self, listing: JSON) -> None:
        tools = listing.get("tools")
        self._tools = {
            t["name"]: t for t in tools or [] if isinstance(t, dict) and isinstance(t.get("name"), str)
        }

    def known_tool(self, name: str) -> JSON | None:
        """A tool's definition if a listing is at hand (never asks the server)."""
        return self._tools.get(name) if self._tools is not None else None

    def _warn(self, exc: Exception) -> None:
        if self.options.on_error is not None:
            self.options.on_error(exc)
        else:
            log.warning("%s", exc)

    async def get_tool(self, name: str) -> JSON | None:
        """The tool's definition from `tools/list`, fetched once per connection."""
        if self._tools is None:
            await self.list_tools()
        assert self._tools is not None
        return self._tools.get(name)

    async def call_tool(
        self,
        name: str,
        arguments: JSON | None = None,
        *,
        on_progress: ProgressHandler | None = None,
        task: TaskOptions | None = None,
        timeout: float | bool | None = True,
        max_timeout: float | bool | None = True,
        meta: JSON | None = None,
    ) -> JSON:
        """Call a tool and return its result, running it as a task where the server
        wants one (see `mcpcli.tasks`): the task is followed to its end, unless
        `task.detach` asks for the CreateTaskResult itself. `timeout`/`max_timeout`
        bound the `tools/call` request as `request` does (the daemon's `call` op passes
        the command's, since its session has no default), and `meta` is this call's
        `--meta` (the daemon's, for the command; a client's own is `options.meta`)."""
        options = task or TaskOptions()
        params: JSON = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if meta:
            params["_meta"] = dict(meta)
        token = await _tasks.augment(self, name, params, options)
        result = await self._call_tool(params, on_progress, timeout=timeout, max_timeout=max_timeout)
        created = _tasks.task_of(result, self.era)
        if created is None or options.detach:
            return result
        waiter = _tasks.TaskWaiter(self, created, options, on_progress=on_progress, progress_token=token)
        return await waiter.wait()

    async def _call_tool(
        self,
        params: JSON,
        on_progress: ProgressHandler | None,
        *,
        timeout: float | bool | None = True,
        max_timeout: float | bool | None = True,
    ) -> JSON:
        mirrors = self.transport.traits.mirrors_headers
        if mirrors and self.era == "modern" and self._tools is None:
            # Over HTTP the tool's x-mcp-header parameters travel as headers too.
            await self.list_tools()
        limits: dict[str, Any] = {"timeout": timeout, "max_timeout": max_timeout}
        try:
            return await self.request("tools/call", params, on_progress=on_progress, **limits)
        except RPCError as exc:
            if exc.code != HEADER_MISMATCH or not mirrors or self.era != "modern":
                raise
            # The server disagrees about the Mcp-Param headers: the tool may have
            # changed since we listed it. List again and retry once.
            log.debug("tools/call: header mismatch (%s); listing tools again", exc)
            await self.list_tools()
            return await self.request("tools/call", params, on_progress=on_progress, **limits)

    # -- tasks -----------------------------------------------------------------------

    async def get_task(self, task_id: str) -> JSON:
        """A task's state (`tasks/get`)."""
        return await self.request("tasks/get", {"taskId": task_id})

    async def cancel_task(self, task_id: str) -> JSON:
        """Ask the server to cancel a task (`tasks/cancel`)."""
        return await self.request("tasks/cancel", {"taskId": task_id})

    async def list_tasks(self) -> JSON:
        """Every task the server lists (2025-11-25; the 2026-07-28 extension has no tasks/list)."""
        return await self._pages("tasks/list", "tasks")

    async def wait_task(self, task_id: str, options: TaskOptions | None = None) -> JSON:
        """Follow an existing task to its end and return its result (`mcp tasks result`)."""
        task = _tasks.Task.from_wire(await self.get_task(task_id))
        return await _tasks.TaskWaiter(self, task, options or TaskOptions()).wait()

    def offers(self, capability: str) -> bool:
        """Whether the handshake declared `capability` (tools, resources, prompts, completions...)."""
        return capability in self.capabilities

    @property
    def server_name(self) -> str:
        name = self.server_info.get("name")
        if isinstance(name, str) and name:
            return name
        return self.transport.describe() or "the server"

    @asynccontextmanager
    async def _feature(self, capability: str, what: str, *, optional: bool = False) -> AsyncIterator[None]:
        """Turn "method not found" for an undeclared capability into `NotOffered`.

        The request is still sent: some servers serve a feature they forgot to declare.
        `optional` parts of a capability (resource templates) may be missing even
        when it is declared (Python SDK 1.x servers do not answer templates/list).
        """
        try:
            yield
        except RPCError as exc:
            if exc.code != METHOD_NOT_FOUND or isinstance(exc, NotOffered):
                raise
            if self.offers(capability) and not optional:
                raise
            raise NotOffered(self.server_name, capability, what, exc.data) from None

    async def list_resources(self) -> JSON:
        async with self._feature("resources", "resources"):
            return await self._pages("resources/list", "resources")

    async def list_resource_templates(self) -> JSON:
        async with self._feature("resources", "resource templates", optional=True):
            return await self._pages("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str) -> JSON:
        """Read one resource; an error that does not say which URI failed is made to."""
        try:
            async with self._feature("resources", "resources"):
                return await self.request("resources/read", {"uri": uri})
        except RPCError as exc:
            if uri in exc.rpc_message or isinstance(exc, (UnsupportedVersionError, NotOffered)):
                raise
            raise RPCError(exc.code, f"resource {uri}: {exc.rpc_message}", exc.data) from None

    async def list_prompts(self) -> JSON:
        async with self._feature("prompts", "prompts"):
            return await self._pages("prompts/list", "prompts")

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> JSON:
        params: JSON = {"name": name}
        if arguments:
            params["arguments"] = dict(arguments)
        async with self._feature("prompts", "prompts"):
            return await self.request("prompts/get", params)

    async def complete(
        self, ref: JSON, argument: str, value: str, context: Mapping[str, str] | None = None
    ) -> JSON:
        params: JSON = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": dict(context)}
        async with self._feature("completions", "completions"):
            return await self.request("completion/complete", params)

    async def set_log_level(self, level: str) -> None:
        """Ask for log messages at `level` and above (legacy: setLevel; modern: per request)."""
        self.options.log_level = level
        if self.era == "legacy":
            await self.request("logging/setLevel", {"level": level})

    @asynccontextmanager
    async def subscribe(
        self,
        *,
        resources: list[str] | None = None,
        tools: bool = False,
        prompts: bool = False,
        resource_list: bool = False,
    ) -> AsyncIterator[MemoryObjectReceiveStream[JSON]]:
        """Yield a stream of change notifications until the block exits.

        Legacy servers get `resources/subscribe` for each URI and deliver list
        changes on their own; modern servers get one `subscriptions/listen`.
        """
        methods = set()
        if resources:
            methods.add("notifications/resources/updated")
        if tools:
            methods.add("notifications/tools/list_changed")
        if prompts:
            methods.add("notifications/prompts/list_changed")
        if resource_list:
            methods.add("notifications/resources/list_changed")
        send, receive = anyio.create_memory_object_stream[JSON](256)
        sub = Subscription(frozenset(methods), send)
        self._subscriptions.append(sub)
        try:
            async with send, receive:
                if self.era == "legacy":
                    async with self._legacy_subscribe(resources or []):
                        yield receive
                else:
                    async with self._listen(sub, resources, tools, prompts, resource_list):
                        yield receive
        finally:
            self._subscriptions.remove(sub)

    @asynccontextmanager
    async def _legacy_subscribe(self, uris: list[str]) -> AsyncIterator[None]:
        # Streamable HTTP delivers unrelated server messages on a GET stream.
        await self.transport.open_standalone_stream()
        for uri in uris:
            await self.request("resources/subscribe", {"uri": uri})
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                for uri in uris:
                    try:
                        await self.request("resources/unsubscribe", {"uri": uri})
                    except (RPCError, TransportError, RequestTimeout):
                        break

    @asynccontextmanager
    async def _listen(
        self,
        sub: Subscription,
        resources: list[str] | None,
        tools: bool,
        prompts: bool,
        resource_list: bool,
    ) -> AsyncIterator[None]:
        wanted: JSON = {}
        if tools:
            wanted["toolsListChanged"] = True
        if prompts:
            wanted["promptsListChanged"] = True
        if resource_list:
            wanted["resourcesListChanged"] = True
        if resources:
            wanted["resourceSubscriptions"] = list(resources)
        params: JSON = {"notifications": wanted, "_meta": {**self.options.meta, **self._meta(self.protocol_version)}}

        async def listen() -> None:
            try:
                await self._send(
                    "subscriptions/listen",
                    params,
                    timeout=None,
                    max_timeout=None,
                    progress_token=False,
                    headers=self.request_headers("subscriptions/listen", params),
                )
            except (RPCError, TransportError) as exc:
                sub.error = exc
            finally:
                # The server ended the subscription (or it failed): end the stream.
                sub.acked.set()
                sub.send.close()

        async with anyio.create_task_group() as tg:
            tg.start_soon(listen)
            with anyio.move_on_after(self.options.timeout):
                await sub.acked.wait()
            if not sub.acked.is_set():
                # A typed timeout (exit 124), not anyio's bare TimeoutError (an "internal error").
                raise RequestTimeout(
                    f"subscriptions/listen was not acknowledged within {self.options.timeout:g}s"
                )
            if sub.error is not None:
                raise sub.error
            yield
            tg.cancel_scope.cancel()


def _asked_version(params: JSON | None) -> str | None:
    """The revision a handshake request asks for (`server/discover`'s `_meta`, `initialize`'s)."""
    params = params or {}
    meta = params.get("_meta")
    asked = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else params.get("protocolVersion")
    return asked if isinstance(asked, str) else None


def _session_id(transport: Transport) -> str | None:
    """The Streamable HTTP session a request belongs to (`Mcp-Session-Id`), if any."""
    session_id = getattr(transport, "session_id", None)
    return session_id if isinstance(session_id, str) else None


def _version_of(server_info: JSON) -> str:
    """`name version` of a server, what the probe memory is keyed on besides its command."""
    return f"{server_info.get('name', '')} {server_info.get('version', '')}".strip()


def _looks_legacy(exc: McpCliError) -> bool:
    """An error a legacy server gives a modern request (a cached era may be stale)."""
    if isinstance(exc, TransportError):
        return exc.status in (400, 404, 405)
    if isinstance(exc, RPCError):
        return exc.code in (-32000, -32600, -32601)
    return False
