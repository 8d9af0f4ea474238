"""`Link`: the gateway's connection to one upstream, kept alive and restarted.

A link connects lazily (or at start, eager), exactly as the CLI would reach the
target, with the upstream's own env and headers and never a downstream
client's credentials. A `mcpcli.relay.upstream.Supervisor` holds the `Client` in a
runner task of the gateway's task group. When a live connection dies (a stdio server
crashed) it reconnects with a doubling backoff; when connecting fails, a later request
tries again once the backoff has passed. Meanwhile requests fail at once with
`Unavailable` (the backend turns that into an `isError` tool result).

What the upstream sends back goes to the downstream request that caused it
(`mcpcli.gateway.asking`): a request for input (elicitation, sampling, roots) becomes
`ctx.ask` on that request's context, progress becomes `ctx.progress`, a log message
`ctx.log`. Its listings are kept (`mcpcli.relay.listings.Listings`) until it says they
changed, and one listing of each kind is in flight at a time.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc

from mcpcli.client import Client, ClientFeatures, ClientOptions, caused_by
from mcpcli.config import Config, ServerEntry
from mcpcli.core import tracecontext
from mcpcli.core.jsonrpc import METHOD_NOT_FOUND
from mcpcli.errors import McpCliError, RequestTimeout, RPCError, TransportError
from mcpcli.relay.listings import Listings
from mcpcli.relay.upstream import Backoff, Owner, Policy, Supervisor
from mcpcli.rpc.forwarding import Deadlines
from mcpcli.server.backend import CallContext
from mcpcli.server.meta import LEVEL_RANK
from mcpcli.toolsfile.model import Upstream
from mcpcli.toolsfile.watchdog import Watchdog
from mcpcli.transports import Transport

from .asking import (
    Asking,
    Calling,
    DownstreamRoots,
    UpstreamHooks,
    current_call,
    on_behalf_of,
)
from .nested import MakeGateway, NestedTransport, inner_options
from .options import GatewayOptions
from .passing import tool_error

__all__ = ["Link", "Unavailable"]

log = logging.getLogger("mcpcli.gateway")

JSON = dict[str, Any]
#: What a link reports to its backend: ("tools" | "prompts" | "resources", "announced")
#: when the upstream said a list changed, (kind, None) when it may have (a reconnection),
#: ("resource", uri) when a subscribed resource was updated.
LinkEvents = Callable[["Link", str, "str | None"], None]

#: SIGTERM to SIGKILL for a stdio upstream's group when the watchdog ends it.
WATCHDOG_GRACE = 1.0

#: The listings a link keeps (tools, prompts, resources, templates: readable as its
#: attributes of the same names), and which of them each list_changed makes stale.
STALE = {
    "notifications/tools/list_changed": ("tools",),
    "notifications/prompts/list_changed": ("prompts",),
    "notifications/resources/list_changed": ("resources", "templates"),
}


class Unavailable(McpCliError):
    """The upstream cannot be reached right now (not connected, crashed, restarting)."""


async def _never(params: JSON) -> JSON:  # pragma: no cover - the link answers instead
    raise RPCError(METHOD_NOT_FOUND, "Method not found")


class _Upkeep(Owner):
    """What the link does as its supervised connection comes and goes."""

    def __init__(self, link: Link) -> None:
        self.link = link

    def connecting(self) -> None:
        link = self.link
        # The runner task (and the upstream session's tasks it starts) must not inherit the
        # request that happened to start it: what the upstream sends later is not its.
        current_call.set(None)
        on_behalf_of.set(None)
        tracecontext.current.set(None)  # nor its trace (the handshake is the link's own)
        link.asking.connected_anew()
        if link._attempt.is_set():
            link._attempt = anyio.Event()

    def connected(self, client: Client) -> None:
        link = self.link
        link._error = None
        link.capabilities, link.instructions = client.capabilities, client.instructions
        link.connects += 1
        link._attempt.set()
        if link.connects > 1:
            link._say("log", f"upstream {link.name}: connected again")
            # A restarted server may list other things: look again, and let the
            # backend announce what its clients would see change.
            for notification in STALE:
                link._invalidate(notification, announced=False)

    async def hold(self, client: Client) -> None:
        await self.link._hold(client)

    def ended(self, reason: Exception | None, *, was_up: bool) -> None:
        link = self.link
        if not was_up:
            link._error = reason
            link._say("warn", f"upstream {link.name}: cannot connect: {reason}")
            log.debug("upstream %s: connecting failed", link.name, exc_info=reason)
        elif not link.is_closed():
            link._error = reason or Unavailable("the connection ended")
        link._attempt.set()

    def retrying(self, delay: float) -> None:
        link = self.link
        link._say("warn", f"upstream {link.name}: connection lost ({link._error}); reconnecting")


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
        first, last = options.backoff
        #: Reconnects after a crash without end; after a failed connect it stops, and the
        #: next request starts it once the backoff has passed.
        self._supervisor = Supervisor(self._connect, _Upkeep(self), Policy(
            backoff=Backoff(first, last), after_lost=True, after_failed=False, otherwise="stop"))
        #: Set once the connection under way is up or has failed.
        self._attempt = anyio.Event()
        self._error: Exception | None = None
        self._limiter = anyio.CapacityLimiter(max(1, upstream.concurrency))
        #: The timeouts of the calls passed through whole (`mcpcli.gateway.passing`).
        self.deadlines = Deadlines()
        #: The calls in flight and what the upstream asks of them (roots shared by the links).
        self.asking = Asking(self.name, roots if roots is not None else DownstreamRoots())
        self._log_level: str | None = None
        self._subscriptions: dict[str, tuple[int, anyio.CancelScope]] = {}
        #: Kind -> (no new listing before, the backoff, why) after a listing failed.
        self._list_failed: dict[str, tuple[float, float, str]] = {}
        #: The upstream's own listings by kind (none kept: not fetched since the last change).
        self.listings: Listings[list[JSON]] = Listings(STALE)
        #: What the upstream declared when it last connected (None: never connected).
        self.capabilities: JSON | None = None
        self.instructions: str | None = None
        #: How many times the connection came up (a restart is the second and later).
        self.connects = 0

    # The listings, as the backend reads them (None: not fetched since the last change).

    @property
    def tools(self) -> list[JSON] | None:
        return self.listings.get("tools")

    @property
    def prompts(self) -> list[JSON] | None:
        return self.listings.get("prompts")

    @property
    def resources(self) -> list[JSON] | None:
        return self.listings.get("resources")

    @property
    def templates(self) -> list[JSON] | None:
        return self.listings.get("templates")

    @property
    def previous(self) -> dict[str, list[JSON]]:
        """Each listing as it was last known before the changes since (or the reconnection)."""
        return self.listings.previous

    # -- lifecycle ---------------------------------------------------------------------

    def attach(self, tg: anyio.abc.TaskGroup) -> None:
        self._tg = tg

    def close(self) -> None:
        """Stop reconnecting and drop the connection (the runner ends it, ending a stdio group)."""
        self._supervisor.close()

    def is_closed(self) -> bool:
        return self._supervisor.closing

    @property
    def client(self) -> Client | None:
        """The connected client (None: not connected)."""
        return self._supervisor.client

    @property
    def connected(self) -> bool:
        return self._supervisor.client is not None

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
        hooks = UpstreamHooks(self.asking)
        client_options = ClientOptions(
            timeout=self.upstream.timeout if self.upstream.timeout is not None else self._options.timeout,
            # Every message comes to us; `ctx.log` lets through what each client asked for.
            log_level="debug",
            protocol=self._options.protocol,
            probe_timeout=self._options.probe_timeout,
            features=ClientFeatures(elicit=_never, sample=_never, roots=[], elicit_url=True),
            on_notification=self._on_notification,
            declare=hooks.declare,
            answer_round=hooks.answer_round,
            serve_request=hooks.serve_request,
            request_sent=self.asking.request_sent,
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

    async def _hold(self, client: Client) -> None:
        """Until the upstream goes away (or the link is closed): watch its list changes."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_lists, client)
                for uri in self._subscriptions:
                    follow = self._follower(uri)
                    if follow is not None:
                        tg.start_soon(follow)
                self._held_tg = tg
                await client.peer.wait_closed()
                tg.cancel_scope.cancel()
        finally:
            self._held_tg = None

    _held_tg: anyio.abc.TaskGroup | None = None

    async def ensure(self) -> Client:
        """The connected client, connecting first if needed; `Unavailable` if it cannot be."""
        supervisor = self._supervisor
        if supervisor.closing:
            raise Unavailable(f"upstream {self.name} is shut down")
        if not supervisor.running:
            if self._tg is None:
                raise Unavailable(f"upstream {self.name}: the gateway is not running")
            if not supervisor.may_start():
                raise Unavailable(f"upstream {self.name} is not available: {self._error}")
            self._attempt = anyio.Event()
            supervisor.start(self._tg)
        if not self._attempt.is_set():  # waiting on a set event would still yield a loop turn
            await self._attempt.wait()
        client = supervisor.client
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

    def call(self, ctx: CallContext | None) -> Calling:
        """`async with link.call(ctx) as (client, call)`: a connected client for one
        downstream request, within this upstream's limit.

        The call is known before connecting: a server that asks for roots right after
        the handshake (legacy eras) asks the client whose request made us connect.
        An upstream that is behind on the client's roots is brought up to date first.
        """
        return Calling(self.asking, self.ensure, self._limiter, ctx)

    async def request(self, method: str, params: JSON, ctx: CallContext | None = None) -> JSON:
        async with self.call(ctx) as (client, _call):
            result = await client.request(method, params)
        return _plain(result)

    @property
    def group(self) -> anyio.abc.TaskGroup | None:
        """The gateway's task group (None: not running)."""
        return self._tg

    def take_slot(self, lease: object) -> bool:
        """A slot of the upstream's concurrency for a call passed through whole, if one is free."""
        try:
            self._limiter.acquire_on_behalf_of_nowait(lease)
        except anyio.WouldBlock:
            return False
        return True

    def release(self, lease: object) -> None:
        """A call passed through whole gives its slot back."""
        self._limiter.release_on_behalf_of(lease)

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext, *, first: JSON | None = None) -> JSON:
        """Call `name` upstream; a broken or slow upstream is a tool error naming it.
        `first`: the upstream's answer to a call passed through that needs more (its input
        round, its task): the call goes on from there."""
        try:
            async with self.call(ctx) as (client, call):
                tg = self._tg
                assert tg is not None

                def progress(params: JSON) -> None:
                    value = params.get("progress")
                    if isinstance(value, (int, float)):
                        call.relay(tg, ctx.progress, value, params.get("total"), params.get("message"))

                result = await client.call_tool(name, arguments, on_progress=progress, first=first)
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
        cached = self.listings.get(kind)
        if cached is not None and self.connected:
            return cached
        failed = self._list_failed.get(kind)
        if failed is not None and anyio.current_time() < failed[0]:
            return cached or []

        async def fetch(generation: int) -> list[JSON]:
            return await self._fetch_listing(kind, generation, cached)

        return await self.listings.fetch(kind, fetch)

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
        self.listings.put(kind, items, generation=generation)  # unless it changed meanwhile
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
        call = self.asking.caller(method="notifications/message", params=params, related=caused_by.get())
        if call is not None and call.ctx is not None and self._tg is not None:
            call.relay(self._tg, call.ctx.log, level, data, logger)
            return
        threshold = LEVEL_RANK.get(self._log_level or "warning", 0)
        if LEVEL_RANK.get(str(level), len(LEVEL_RANK)) >= threshold:
            self._say("log", f"upstream {self.name}: [{level}] {data}")

    def _list_changed(self, method: str) -> None:
        self._invalidate(method, announced=True)

    def _invalidate(self, notification: str, *, announced: bool) -> None:
        """Forget the listings `notification` makes stale (kept in `previous`) and tell the
        backend. `announced`: the upstream said it changed (else we reconnected and look again)."""
        kinds = self.listings.changed(notification)
        for kind in kinds:
            self._list_failed.pop(kind, None)  # worth asking again at once
        if kinds:
            self._events(self, kinds[0], "announced" if announced else None)

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
        client = self.client
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


def _plain(result: JSON) -> JSON:
    """An upstream result as a backend returns it (the runtime adds its own era fields)."""
    if "resultType" in result:
        result = {k: v for k, v in result.items() if k != "resultType"}
    return result


