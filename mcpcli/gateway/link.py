"""`Link`: the gateway's connection to one upstream, kept alive and restarted.

A link connects lazily (or at start, eager), exactly as the CLI would reach the
target, with the upstream's own env and headers and never a downstream
client's credentials. It holds the `Client` in a runner task of the gateway's
task group. When a live connection dies (a stdio server crashed) the runner
reconnects with a doubling backoff; when connecting fails, a later request tries
again once the backoff has passed. Meanwhile requests fail at once with
`Unavailable` (the backend turns that into an `isError` tool result).

What the upstream sends back goes to the downstream request that caused it: a
request for input (elicitation, sampling, roots) becomes `ctx.ask` on that
request's context, progress becomes `ctx.progress`, a log message `ctx.log`.
The request is the one whose coroutine is running (2026-07-28 input rounds are
answered inside our call, so a context variable finds it), else the one whose
upstream request carried the message (Streamable HTTP says), else the only call
in flight (a stdio upstream says nothing); it is never guessed among several
HTTP clients' calls.

Input asked of one call is asked one request at a time (a 2026-07-28 call's input
round holds one question set: two asks at once would lose one), and a call waits
for the asks made on it before it ends (nothing is asked of a finished call).
Within one call, roots are asked of the client once: a second roots/list (a
server that asks at start and again in its tool) gets the same answer.

A request that belongs to no call in flight is never parked waiting for one (a
call may never come): elicitation and sampling are refused, and roots/list is
answered at once from what the gateway knows. Behind a stdio gateway (or an
in-process one) that is the roots its one client last gave, through any upstream,
since it last said they changed; else, a legacy client that declared roots is asked
directly (its session allows that); else (a 2026-07-28 client, which can be asked
only within a call), and behind an HTTP gateway (several clients share the
upstream; none of their roots is handed out outside that client's own call), an
empty list. Such an upstream is
then behind: the next call of a client that declared roots first asks that client
for its roots, within the call, and when they differ from what the upstream was
told, sends it `notifications/roots/list_changed` and gives it a moment
(`ROOTS_RECHECK`) to ask again before the call goes on. The same happens after the
client says its roots changed (`DownstreamRoots.changed`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

import anyio
import anyio.abc

from mcpcli import tracecontext
from mcpcli.client import ROOTS_SETTLE, Client, ClientFeatures, ClientOptions, caused_by
from mcpcli.config import Config, ServerEntry
from mcpcli.errors import McpCliError, RequestTimeout, RPCError, TransportError
from mcpcli.jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND
from mcpcli.protocol import MISSING_REQUIRED_CLIENT_CAPABILITY, Era
from mcpcli.server.backend import CallContext, InputDeclined
from mcpcli.server.meta import LEVEL_RANK
from mcpcli.toolsfile.model import Upstream
from mcpcli.toolsfile.watchdog import Watchdog
from mcpcli.transports import Transport

from .coalesce import Fetches
from .nested import MakeGateway, NestedTransport, inner_options
from .options import GatewayOptions

__all__ = ["DownstreamRoots", "Link", "Unavailable", "on_behalf_of", "tool_error"]

log = logging.getLogger("mcpcli.gateway")

JSON = dict[str, Any]
#: What a link reports to its backend: ("tools" | "prompts" | "resources", "announced")
#: when the upstream said a list changed, (kind, None) when it may have (a reconnection),
#: ("resource", uri) when a subscribed resource was updated.
LinkEvents = Callable[["Link", str, "str | None"], None]

#: The downstream call whose coroutine is running (for input asked within our request).
_current: ContextVar[_Call | None] = ContextVar("mcpcli_gateway_call", default=None)
#: Set by the backend while it serves a downstream request: what an upstream request made
#: for it (a listing to find a name, a connection) belongs to.
on_behalf_of: ContextVar[CallContext | None] = ContextVar("mcpcli_gateway_ctx", default=None)

#: SIGTERM to SIGKILL for a stdio upstream's group when the watchdog ends it.
WATCHDOG_GRACE = 1.0

#: After telling an upstream that was behind that the roots changed, how long the call
#: waits for it to ask again (an upstream that does not ask costs this, once).
ROOTS_RECHECK = 1.0

#: How long the one legacy client of a stdio gateway may take to say its roots when an
#: upstream asks outside any call.
ROOTS_FETCH = 10.0

#: Client capabilities a 2026-07-28 upstream sees as the downstream client declared them.
_FORWARDED_CAPS = ("elicitation", "sampling", "roots")

#: Server requests a link passes to the downstream client.
ASKABLE = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})

#: The listings a link keeps (attributes of the same names).
LISTINGS = ("tools", "prompts", "resources", "templates")


class Unavailable(McpCliError):
    """The upstream cannot be reached right now (not connected, crashed, restarting)."""


async def _never(params: JSON) -> JSON:  # pragma: no cover - the link answers instead
    raise RPCError(METHOD_NOT_FOUND, "Method not found")


#: Downstream transports with exactly one client (unlike HTTP).
ONE_CLIENT = frozenset({"stdio", "memory"})


class DownstreamRoots:
    """What the gateway knows of its stdio client's roots, shared by its links (stdio, or an
    in-process server, has exactly one client): what that client last answered to a
    roots/list, None before."""

    def __init__(self) -> None:
        self.roots: list[JSON] | None = None
        self.links: list[Link] = []
        #: Asks the one legacy client outside any request (None: no such client).
        self.ask: Callable[[str, JSON], Awaitable[JSON]] | None = None

    def attach(self, transport: str, capabilities: JSON, ask: Callable[[str, JSON], Awaitable[JSON]]) -> None:
        """A legacy client initialized: the one client (stdio) with roots can be asked anytime."""
        if transport in ONE_CLIENT and isinstance(capabilities.get("roots"), dict):
            self.ask = ask

    async def fetch(self) -> list[JSON] | None:
        """The client's roots, asked of its session (None if it cannot be asked or fails)."""
        ask = self.ask
        if ask is None:
            return None
        with anyio.move_on_after(ROOTS_FETCH):
            try:
                answer = await ask("roots/list", {})
            except McpCliError as exc:
                log.debug("gateway: asking the client for its roots: %s", exc)
                return None
            roots = answer.get("roots") if isinstance(answer, dict) else None
            if isinstance(roots, list):
                self.roots = roots
                return roots
        return None

    def learn(self, ctx: CallContext, roots: list[JSON]) -> None:
        if ctx.transport in ONE_CLIENT:
            self.roots = roots

    def changed(self) -> None:
        """A downstream client's `notifications/roots/list_changed`: what the gateway knew is
        stale, and so is what each upstream was told (the next call brings it up to date)."""
        self.roots = None
        for link in self.links:
            link.roots_changed()


class _Call:
    """One downstream request being served by this link."""

    __slots__ = ("_idle", "_lock", "_pending", "_tail", "asked", "asking", "ctx", "open", "own", "roots")

    def __init__(self, ctx: CallContext | None, *, own: bool = True) -> None:
        self.ctx = ctx
        #: The request is the downstream request's own (a call, a read), not one made to
        #: serve it (a listing): only then does the upstream see that client's capabilities.
        self.own = own
        self._pending = 0
        #: Set when the last relayed message is out (None: nothing relayed yet).
        self._tail: anyio.Event | None = None
        #: Keys of the inputs asked for this call (each ask needs its own: a 2026-07-28
        #: client's answers are matched to the questions by key, round after round).
        self.asked = 0
        #: False once the call is ending: nothing more is asked of it.
        self.open = True
        #: Asks in progress (waiting for their turn or for the client); one at a time.
        self.asking = 0
        self._lock: anyio.Lock | None = None
        self._idle: anyio.Event | None = None
        #: The roots the client gave within this call (asked once per call).
        self.roots: list[JSON] | None = None

    @property
    def lock(self) -> anyio.Lock:
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    def ask_done(self) -> None:
        self.asking -= 1
        if self.asking == 0 and self._idle is not None:
            self._idle.set()

    async def settle(self) -> None:
        """Close the call to new asks and wait for those in progress: a 2026-07-28 call
        asked after its backend returned would lose its answer (or its result)."""
        self.open = False
        if self.asking:
            self._idle = anyio.Event()
            await self._idle.wait()

    def relay(self, tg: anyio.abc.TaskGroup, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run `fn(*args)` soon, after what was relayed before (progress and log messages
        keep their order); `drain` waits for them all, so they precede the answer."""
        previous, done = self._tail, anyio.Event()
        self._tail = done
        self._pending += 1

        async def run() -> None:
            try:
                if previous is not None:
                    await previous.wait()
                await fn(*args)
            except Exception as exc:  # the downstream went away: nothing to tell
                log.debug("gateway: relaying to the client failed: %s", exc)
            finally:
                self._pending -= 1
                done.set()

        tg.start_soon(run)

    async def drain(self) -> None:
        tail = self._tail
        if self._pending == 0 or tail is None:
            return
        with anyio.move_on_after(5):
            await tail.wait()


class _UpstreamHooks:
    """The `ClientOptions` hooks of an upstream's client: its answers to the upstream's
    requests come from the downstream client whose call caused them."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self.client: Client | None = None

    def declare(self, era: Era, capabilities: JSON) -> JSON:
        """A 2026-07-28 request declares the downstream client's capabilities (they travel
        per request), so the upstream asks only for what that client can give. Listings
        declare the gateway's own, so they do not depend on which client asked first."""
        call = _current.get()
        if era != "modern" or call is None or call.ctx is None or not call.own:
            return capabilities
        theirs = call.ctx.client_capabilities
        return {k: v for k, v in theirs.items() if k in _FORWARDED_CAPS}

    async def answer_round(self, requests: tuple[tuple[str, str, JSON], ...]) -> JSON | None:
        """A 2026-07-28 upstream's input requests (or a task's), asked of the downstream
        client at once and under the upstream's own keys: the rounds map one to one.
        A client that lacks a capability gets what the upstream would have said to it."""
        call = _current.get()
        if call is None or call.ctx is None or not all(method in ASKABLE for _, method, _ in requests):
            return None
        return await call.ctx.ask({key: {"method": method, "params": params} for key, method, params in requests})

    async def serve_request(self, method: str, params: JSON) -> JSON:
        if method == "roots/list":
            if self.client is not None:
                self.client.roots_asked()
            self.link.roots_asked()
        if method in ASKABLE:
            return await self.link.ask(method, params)
        raise RPCError(METHOD_NOT_FOUND, f"Method not found: {method}")


class Link:
    """One upstream: its connection, limits, cached lists and subscriptions."""

    def __init__(
        self,
        upstream: Upstream,
        options: GatewayOptions,
        events: LinkEvents,
        watchdog: Watchdog | None = None,
        roots: DownstreamRoots | None = None,
        gateway: MakeGateway | None = None,
    ) -> None:
        self.upstream = upstream
        #: How a tools.yaml upstream's own `servers:` are served (`GatewayBackend`; None: not at all).
        self._gateway = gateway
        self._watchdog = watchdog
        self.name = upstream.name
        self._options = options
        self._events = events
        self._tg: anyio.abc.TaskGroup | None = None
        self._client: Client | None = None
        self._started = False
        self._closing = False
        self._attempt = anyio.Event()
        self._drop = anyio.Event()
        self._error: Exception | None = None
        #: Connecting failed: no new attempt before this time; the next delay.
        self._retry_at = 0.0
        self._delay = options.backoff[0]
        self._limiter = anyio.CapacityLimiter(max(1, upstream.concurrency))
        self._calls: list[_Call] = []
        #: The stdio client's roots, as the gateway knows them (shared by its links).
        self._roots = roots if roots is not None else DownstreamRoots()
        self._roots.links.append(self)
        #: What the upstream was last told the roots are (None: it has not asked), and
        #: whether that may not be the client's (answered outside any call, or changed since).
        self._roots_told: list[JSON] | None = None
        self._roots_behind = False
        #: Set when the upstream asks for roots (`_catch_up` waits for it to ask again).
        self._roots_reasked: anyio.Event | None = None
        #: Upstream request id -> the downstream call it was made for.
        self._by_request: dict[Any, _Call] = {}
        self._log_level: str | None = None
        self._subscriptions: dict[str, tuple[int, anyio.CancelScope]] = {}
        #: Kind -> (no new listing before, the backoff, why) after a listing failed.
        self._list_failed: dict[str, tuple[float, float, str]] = {}
        #: The upstream's own listings (None: not fetched since the last change).
        self.tools: list[JSON] | None = None
        self.prompts: list[JSON] | None = None
        self.resources: list[JSON] | None = None
        self.templates: list[JSON] | None = None
        #: Each listing as it was last known before the changes since (or the reconnection).
        self.previous: dict[str, list[JSON] | None] = {}
        #: Per kind: one listing request in flight at a time, however many changes come.
        self._fetches: dict[str, Fetches[list[JSON]]] = {kind: Fetches() for kind in LISTINGS}
        #: What the upstream declared when it last connected (None: never connected).
        self.capabilities: JSON | None = None
        self.instructions: str | None = None
        #: How many times the connection came up (a restart is the second and later).
        self.connects = 0

    # -- lifecycle ---------------------------------------------------------------------

    def attach(self, tg: anyio.abc.TaskGroup) -> None:
        self._tg = tg

    def close(self) -> None:
        """Stop reconnecting and drop the connection (the runner ends it, ending a stdio group)."""
        self._closing = True
        self._drop.set()

    def is_closed(self) -> bool:
        return self._closing

    @property
    def connected(self) -> bool:
        return self._client is not None

    def _entry(self) -> ServerEntry:
        from mcpcli.gateway.rules import upstream_entry

        return upstream_entry(self.upstream, self._options.config or Config())

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Client]:
        from mcpcli.connect import ConnectOptions, open_transport

        base = self._options.connect or ConnectOptions()
        # The upstream's own env and headers; never a bearer token or header of ours.
        options = dataclasses.replace(
            base, env={**base.env, **self.upstream.env}, headers=dict(self.upstream.headers), bearer_token=None
        )
        hooks = _UpstreamHooks(self)
        client_options = ClientOptions(
            timeout=self.upstream.timeout if self.upstream.timeout is not None else self._options.timeout,
            # Every message comes to us; `ctx.log` lets through what each client asked for.
            log_level="debug",
            protocol=self._options.protocol,
            features=ClientFeatures(elicit=_never, sample=_never, roots=[], elicit_url=True),
            on_notification=self._on_notification,
            declare=hooks.declare,
            answer_round=hooks.answer_round,
            serve_request=hooks.serve_request,
        )
        entry = self._entry()
        transport: Transport
        if entry.transport == "yaml" and entry.path is not None and not entry.keep_alive and self._gateway:
            # A tools.yaml is served in this process, with its own `servers:` behind it.
            transport = NestedTransport(entry.path, inner_options(self._options, self.name, self.upstream.env),
                                        gateway=self._gateway, watchdog=self._watchdog)
        else:
            transport = open_transport(entry, options)
        client = hooks.client = Client(transport, client_options)
        group: int | None = None
        try:
            async with client:
                self.track(client)
                group = self._watch_group(client)
                yield client
        finally:
            if group is not None and self._watchdog is not None:
                # The transport has ended the group on its way out; had the gateway been
                # killed before that, the watchdog would have.
                self._watchdog.unregister(group)

    def _watch_group(self, client: Client) -> int | None:
        """Register a stdio upstream's process group with the watchdog: if the gateway is
        killed (its client gives it 60 ms after closing stdin), the upstream goes too."""
        from mcpcli.transports.stdio import StdioTransport

        transport = client.transport
        if self._watchdog is None or not isinstance(transport, StdioTransport) or transport.process is None:
            return None
        group = transport.process.pid  # it leads its own process group
        self._watchdog.register(group, WATCHDOG_GRACE)
        return group

    async def _run(self) -> None:
        """Hold the connection. After a crash, reconnect in the background with a doubling
        backoff; when connecting fails, stop: the next request tries again, once the
        backoff has passed (no sign-in page or failing command every few seconds)."""
        # This task (and the upstream session's tasks it starts) must not inherit the
        # request that happened to start it: what the upstream sends later is not its.
        _current.set(None)
        on_behalf_of.set(None)
        tracecontext.current.set(None)  # nor its trace (the handshake is the link's own)
        first, last = self._options.backoff
        while not self.is_closed():
            up_since: float | None = None
            # A new connection: its server has been told no roots yet.
            self._roots_told, self._roots_behind = None, False
            try:
                async with self._connect() as client:
                    self._client, self._error = client, None
                    self.capabilities, self.instructions = client.capabilities, client.instructions
                    self.connects += 1
                    up_since = anyio.current_time()
                    self._attempt.set()
                    if self.connects > 1:
                        self._say("log", f"upstream {self.name}: connected again")
                        # A restarted server may list other things: look again, and let the
                        # backend announce what its clients would see change.
                        for kind in ("tools", "prompts", "resources"):
                            self._invalidate(kind, announced=False)
                    await self._hold(client)
            except Exception as exc:
                from mcpcli.errors import unwrap

                inner = unwrap(exc)
                self._error = inner if isinstance(inner, Exception) else exc
                if up_since is None:
                    self._say("warn", f"upstream {self.name}: cannot connect: {self._error}")
                    log.debug("upstream %s: connecting failed", self.name, exc_info=exc)
            finally:
                self._client = None
            if self.is_closed():
                break
            if up_since is None:
                self._retry_at = anyio.current_time() + self._delay
                self._delay = min(self._delay * 2, last)
                self._started = False
                self._attempt.set()
                return
            self._error = self._why_down()
            self._say("warn", f"upstream {self.name}: connection lost ({self._error}); reconnecting")
            if anyio.current_time() - up_since > last:
                self._delay = first
            self._attempt.set()
            with anyio.move_on_after(self._delay):
                await self._drop.wait()
            self._delay = min(self._delay * 2, last)
            self._attempt = anyio.Event()
        self._attempt.set()

    def _why_down(self) -> Exception:
        return self._error or Unavailable("the connection ended")

    async def _hold(self, client: Client) -> None:
        """Until the upstream goes away or the link is closed: watch its list changes."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch_lists, client)
            for uri in self._subscriptions:
                follow = self._follower(uri)
                if follow is not None:
                    tg.start_soon(follow)
            self._held_tg = tg
            with anyio.CancelScope() as scope:
                async def dropped() -> None:
                    await self._drop.wait()
                    scope.cancel()

                tg.start_soon(dropped)
                await client.session.wait_closed()
                self._error = client.session.closed
            tg.cancel_scope.cancel()
        self._held_tg = None

    _held_tg: anyio.abc.TaskGroup | None = None

    async def ensure(self) -> Client:
        """The connected client, connecting first if needed; `Unavailable` if it cannot be."""
        if self._closing:
            raise Unavailable(f"upstream {self.name} is shut down")
        if not self._started:
            if self._tg is None:
                raise Unavailable(f"upstream {self.name}: the gateway is not running")
            if anyio.current_time() < self._retry_at:
                raise Unavailable(f"upstream {self.name} is not available: {self._error}")
            self._started = True
            self._attempt = anyio.Event()
            self._tg.start_soon(self._run)
        if not self._attempt.is_set():  # waiting on a set event would still yield a loop turn
            await self._attempt.wait()
        client = self._client
        if client is None:
            raise Unavailable(f"upstream {self.name} is not available: {self._error}")
        return client

    def _say(self, kind: str, line: str) -> None:
        sink = self._options.warn if kind == "warn" else self._options.log
        if sink is not None:
            sink(line)
        else:
            log.info("%s", line)

    # -- requests ----------------------------------------------------------------------

    @asynccontextmanager
    async def call(self, ctx: CallContext | None) -> AsyncIterator[tuple[Client, _Call]]:
        """A connected client for one downstream request, within this upstream's limit.

        The call is known before connecting: a server that asks for roots right after
        the handshake (legacy eras) asks the client whose request made us connect.
        An upstream that is behind on the client's roots is brought up to date first.
        """
        call = _Call(ctx if ctx is not None else on_behalf_of.get(), own=ctx is not None)
        self._calls.append(call)
        token = _current.set(call)
        try:
            client = await self.ensure()
            limiter = self._limiter
            try:
                # A free slot is taken at once: `async with limiter` would first yield to
                # the event loop even then (one more loop turn per call).
                limiter.acquire_nowait()
            except anyio.WouldBlock:
                await limiter.acquire()
            try:
                if self._roots_behind and call.own:
                    await self._catch_up(client, call)
                yield client, call
                await call.drain()
                await call.settle()
            finally:
                limiter.release()
        except RPCError as exc:
            if exc.code != MISSING_REQUIRED_CLIENT_CAPABILITY:
                raise
            # The upstream needs what the client lacks: let our runtime say so, as it
            # would itself (-32021, and HTTP 400 in 2026-07-28).
            raise InputDeclined(exc.rpc_message, capabilities=_required(exc.data)) from None
        finally:
            _current.reset(token)
            self._calls.remove(call)

    async def request(self, method: str, params: JSON, ctx: CallContext | None = None) -> JSON:
        async with self.call(ctx) as (client, _call):
            result = await client.request(method, params)
        return _plain(result)

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        """Call `name` upstream; a broken or slow upstream is a tool error naming it."""
        try:
            async with self.call(ctx) as (client, call):
                tg = self._tg
                assert tg is not None

                def progress(params: JSON) -> None:
                    value = params.get("progress")
                    if isinstance(value, (int, float)):
                        call.relay(tg, ctx.progress, value, params.get("total"), params.get("message"))

                result = await client.call_tool(name, arguments, on_progress=progress)
        except Unavailable as exc:
            return tool_error(str(exc))
        except RequestTimeout as exc:
            return tool_error(f"upstream {self.name}: {exc}")
        except TransportError as exc:
            return tool_error(f"upstream {self.name} failed during the call: {exc}")
        return _plain(result)

    async def listing(self, kind: str) -> list[JSON]:
        """tools, prompts, resources or templates as the upstream lists them (cached).

        One request per kind is in flight at a time: callers share it when it began after
        the last change they could know of, else the one next request (a burst of
        `list_changed` costs at most two). A listing that fails is remembered, so `trouble`
        can say why; one that timed out backs off (doubling, per kind): until then the
        upstream is not asked again (a slow upstream is not re-asked on every client's
        listing)."""
        cached: list[JSON] | None = getattr(self, kind)
        if cached is not None and self.connected:
            return cached
        failed = self._list_failed.get(kind)
        if failed is not None and anyio.current_time() < failed[0]:
            return cached or []

        async def fetch(generation: int) -> list[JSON]:
            return await self._fetch_listing(kind, generation, cached)

        return await self._fetches[kind].get(fetch)

    async def _fetch_listing(self, kind: str, generation: int, cached: list[JSON] | None) -> list[JSON]:
        """Ask the upstream for `kind`; keep the answer unless it changed meanwhile."""
        try:
            async with self.call(None) as (client, _call):
                if kind == "tools":
                    page = await client.list_tools()
                    key = "tools"
                elif kind == "prompts":
                    page = await client.list_prompts()
                    key = "prompts"
                elif kind == "resources":
                    page = await client.list_resources()
                    key = "resources"
                else:
                    page = await client.list_resource_templates()
                    key = "resourceTemplates"
        except RPCError as exc:
            if exc.code != METHOD_NOT_FOUND:
                self._say("warn", f"upstream {self.name}: {kind}: {exc}")
            items: list[JSON] = []
        except (Unavailable, TransportError, RequestTimeout) as exc:
            log.debug("upstream %s: listing %s: %s", self.name, kind, exc)
            self._listing_failed(kind, exc)
            return cached or []
        else:
            raw = page.get(key)
            items = [item for item in raw if isinstance(item, dict)] if isinstance(raw, list) else []
        self._list_failed.pop(kind, None)
        if self._fetches[kind].current(generation):  # else it changed meanwhile: fetch again
            setattr(self, kind, items)
        return items

    def _listing_failed(self, kind: str, exc: Exception) -> None:
        """Remember why listing `kind` failed. Only a timeout (an upstream that does not answer
        the listing) backs off, doubling; a connection problem follows the link's own backoff."""
        first, last = self._options.backoff
        previous = self._list_failed.get(kind)
        delay = first if previous is None else min(previous[1] * 2, last)
        if not isinstance(exc, RequestTimeout):
            # Not connected, or the connection broke: the link's own backoff (connecting,
            # reconnecting) already says when the upstream is tried again.
            delay = 0.0
            why = str(exc) if isinstance(exc, Unavailable) else f"upstream {self.name}: listing {kind}: {exc}"
        else:
            why = f"upstream {self.name}: listing {kind}: {exc}"
            if previous is None:
                self._say("warn", why)
        self._list_failed[kind] = (anyio.current_time() + delay, delay, why)

    def trouble(self, kind: str) -> str | None:
        """Why this upstream's `kind` may be missing from what we serve (it names the
        upstream and the cause), or None when its last listing came in."""
        failed = self._list_failed.get(kind)
        if failed is not None:
            return failed[2]
        if not self.connected and self._error is not None and getattr(self, kind) is None:
            return f"upstream {self.name} is not available: {self._error}"
        return None

    def offers(self, capability: str) -> bool:
        """Whether the upstream declared `capability` (True while unknown: not yet connected)."""
        return self.capabilities is None or capability in self.capabilities

    def set_log_level(self, level: str) -> None:
        """The threshold of upstream messages logged outside any call (a client's setLevel);
        messages within a call go to it and its own level."""
        self._log_level = level

    # -- what the upstream sends ---------------------------------------------------------

    def _caller(self, *, asking: bool = False) -> _Call | None:
        """The downstream call that caused what the upstream just sent, or None if unknown.

        Known: the call whose coroutine is running (2026-07-28 input rounds), or the one
        whose upstream request carried the message (Streamable HTTP tags it). Otherwise
        (a stdio upstream says nothing) the only call in flight; several are told apart
        only when they all come from the one client behind a stdio gateway. A request for
        input is never guessed onto another HTTP client's call.
        """
        call = _current.get()
        if call is not None and call.ctx is not None and call in self._calls:
            return call
        rid = caused_by.get()
        if rid is not None and rid in self._by_request:
            return self._by_request[rid]
        waiting = [c for c in self._calls if c.ctx is not None and (c.open or not asking)]
        if len(waiting) == 1:
            return waiting[0]
        if waiting and all(c.ctx is not None and c.ctx.transport == "stdio" for c in waiting):
            return waiting[-1]
        return None

    def track(self, client: Client) -> None:
        """Note which downstream call each upstream request is made for (by request id)."""
        session = client.session
        original = session.request

        async def request(method: str, params: JSON | None = None, **kw: Any) -> JSON:
            call = _current.get()
            if call is None or kw.get("request_id") is not None:
                return await original(method, params, **kw)
            rid = session.next_id()
            self._by_request[rid] = call
            try:
                return await original(method, params, request_id=rid, **kw)
            finally:
                self._by_request.pop(rid, None)

        session.request = request  # type: ignore[method-assign]

    async def ask(self, method: str, params: JSON) -> JSON:
        """Answer the upstream's request for input by asking the downstream client."""
        call = self._caller(asking=True)
        if call is None or call.ctx is None or not call.open:
            if method == "roots/list":
                return await self._roots_unasked()
            raise RPCError(INVALID_REQUEST, f"{method}: no client request is waiting for this input")
        return await self._ask_in(call, method, params)

    async def _ask_in(self, call: _Call, method: str, params: JSON, *, tell: bool = True) -> JSON:
        """Ask `call`'s client, after the asks made on it before (one at a time). `tell`:
        the answer goes to the upstream (else the gateway asks for itself)."""
        ctx = call.ctx
        assert ctx is not None
        call.asking += 1
        try:
            async with call.lock:
                if method == "roots/list" and call.roots is not None:
                    if tell:
                        self._roots_told, self._roots_behind = call.roots, False
                    return {"roots": call.roots}
                call.asked += 1
                key = f"input-{call.asked}"
                try:
                    answers = await ctx.ask({key: {"method": method, "params": params}})
                except McpCliError:
                    if method != "roots/list":
                        raise
                    return {"roots": []}  # the client could not be asked after all
                except InputDeclined as exc:
                    if method == "elicitation/create":
                        return {"action": "decline"}
                    if method == "roots/list":
                        return {"roots": []}
                    raise RPCError(METHOD_NOT_FOUND, f"{method}: {exc}") from None
                answer = answers.get(key)
                if not isinstance(answer, dict):
                    return {}
                roots = answer.get("roots") if method == "roots/list" else None
                if isinstance(roots, list):
                    call.roots = roots
                    self._roots.learn(ctx, roots)
                    if tell:
                        self._roots_told, self._roots_behind = roots, False
                return answer
        finally:
            call.ask_done()

    async def _roots_unasked(self) -> JSON:
        """A roots/list no call in flight caused: answered at once from what the gateway
        knows (see the module docstring); the upstream is behind when that is nothing."""
        known = self._roots.roots
        if known is None:
            known = await self._roots.fetch()
        self._roots_told = known if known is not None else []
        self._roots_behind = known is None
        return {"roots": self._roots_told}

    def roots_asked(self) -> None:
        if self._roots_reasked is not None:
            self._roots_reasked.set()

    def roots_changed(self) -> None:
        """The client's roots changed: an upstream that was told some is behind."""
        if self._roots_told is not None:
            self._roots_behind = True

    async def _catch_up(self, client: Client, call: _Call) -> None:
        """Ask the calling client for its roots; when the upstream was told others, say
        they changed and give it `ROOTS_RECHECK` to ask again, before the call goes on."""
        ctx = call.ctx
        if ctx is None or not isinstance(ctx.client_capabilities.get("roots"), dict) or client.era != "legacy":
            return  # a client without roots has none to give: the next one may
        self._roots_behind = False  # tried once; a client that then says nothing is not asked again
        roots = (await self._ask_in(call, "roots/list", {}, tell=False)).get("roots")
        if not isinstance(roots, list) or roots == self._roots_told:
            return
        self._roots_reasked = reasked = anyio.Event()
        try:
            await client.session.notify("notifications/roots/list_changed")
            with anyio.move_on_after(ROOTS_RECHECK):
                await reasked.wait()
                # Servers apply the answer asynchronously (as after the handshake).
                await anyio.sleep(ROOTS_SETTLE)
        except McpCliError as exc:
            log.debug("upstream %s: roots/list_changed: %s", self.name, exc)
        finally:
            self._roots_reasked = None

    def _on_notification(self, method: str, params: JSON) -> None:
        if method == "notifications/message":
            self._relay_log(params)
        elif method.endswith("/list_changed"):
            self._list_changed(method)
        elif method == "notifications/resources/updated":
            uri = params.get("uri")
            if isinstance(uri, str):
                self._events(self, "resource", uri)

    def _relay_log(self, params: JSON) -> None:
        level = params.get("level") if isinstance(params.get("level"), str) else "info"
        data = params.get("data")
        logger = params.get("logger") if isinstance(params.get("logger"), str) else None
        call = self._caller()
        if call is not None and call.ctx is not None and self._tg is not None:
            call.relay(self._tg, call.ctx.log, level, data, logger)
            return
        threshold = LEVEL_RANK.get(self._log_level or "warning", 0)
        if LEVEL_RANK.get(str(level), len(LEVEL_RANK)) >= threshold:
            self._say("log", f"upstream {self.name}: [{level}] {data}")

    def _list_changed(self, method: str) -> None:
        kind = method.split("/")[1]
        if kind in ("tools", "prompts", "resources"):
            self._invalidate(kind, announced=True)

    def _invalidate(self, kind: str, *, announced: bool) -> None:
        """Forget a listing (kept in `previous`) and tell the backend. `announced`: the
        upstream said it changed (else we reconnected and look again)."""
        for each in (kind, "templates") if kind == "resources" else (kind,):
            known = getattr(self, each)
            if known is not None:  # a second change before a new listing: keep the last known
                self.previous[each] = known
            setattr(self, each, None)
            self._fetches[each].changed()
            self._list_failed.pop(each, None)  # worth asking again at once
        self._events(self, kind, "announced" if announced else None)

    async def _watch_lists(self, client: Client) -> None:
        """List changes: a legacy server sends them unasked (HTTP: on the standalone
        stream), a 2026-07-28 one on a `subscriptions/listen` stream."""
        caps = client.capabilities
        tools = "tools" in caps
        prompts = "prompts" in caps and self.upstream.prompts
        resource_list = "resources" in caps and self.upstream.resources
        if not (tools or prompts or resource_list):
            return
        try:
            async with client.subscribe(tools=tools, prompts=prompts, resource_list=resource_list) as stream:
                async for note in stream:
                    self._list_changed(str(note.get("method")))
        except (McpCliError, anyio.BrokenResourceError, TimeoutError) as exc:
            log.debug("upstream %s: no list-change notifications: %s", self.name, exc)

    # -- resource subscriptions ------------------------------------------------------------

    async def subscribe(self, uri: str) -> None:
        """Follow `uri` upstream. Returns once the upstream has answered its subscription
        (or refused it), so the client's is answered only then: a change right after
        reaches it. (Not connected: the subscription starts when the link connects.)"""
        count, scope = self._subscriptions.get(uri, (0, anyio.CancelScope()))
        self._subscriptions[uri] = (count + 1, scope)
        if count == 0 and self._held_tg is not None:
            follow = self._follower(uri)
            if follow is not None:
                try:
                    await self._held_tg.start(follow)
                except BaseException:  # the client's subscription was cancelled meanwhile
                    self.unsubscribe(uri)
                    raise

    def unsubscribe(self, uri: str) -> None:
        count, scope = self._subscriptions.get(uri, (0, anyio.CancelScope()))
        if count <= 1:
            self._subscriptions.pop(uri, None)
            scope.cancel()
        else:
            self._subscriptions[uri] = (count - 1, scope)

    def _follower(self, uri: str) -> Callable[..., Coroutine[Any, Any, None]] | None:
        """The task that holds the upstream subscription to `uri` (None: nothing to follow
        now). It reports itself started once the upstream answered, or gave up."""
        client = self._client
        if client is None or not self.offers("resources"):
            return None
        count, _old = self._subscriptions[uri]
        scope = anyio.CancelScope()
        self._subscriptions[uri] = (count, scope)

        async def follow(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            started = False
            with scope:
                try:
                    async with client.subscribe(resources=[uri]) as stream:
                        started = True
                        task_status.started()
                        async for _note in stream:
                            self._events(self, "resource", uri)
                except (McpCliError, anyio.BrokenResourceError, TimeoutError) as exc:
                    log.debug("upstream %s: subscribe %s: %s", self.name, uri, exc)
            if not started:
                task_status.started()

        return follow


def _required(data: Any) -> list[str]:
    """The capability names in a -32021 error's data (`requiredCapabilities`)."""
    required = data.get("requiredCapabilities") if isinstance(data, dict) else None
    if isinstance(required, dict):
        return [str(name) for name in required]
    if isinstance(required, list):
        return [str(name) for name in required]
    return []


def _plain(result: JSON) -> JSON:
    """An upstream result as a backend returns it (the runtime adds its own era fields)."""
    if "resultType" in result:
        result = {k: v for k, v in result.items() if k != "resultType"}
    return result


def tool_error(text: str) -> JSON:
    """A tool result that is an error saying `text` (what a broken upstream answers)."""
    return {"content": [{"type": "text", "text": text}], "isError": True}
