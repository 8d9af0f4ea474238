"""The MCP client: era negotiation, the operations of every primitive, client features.

`Client` wraps a transport and a `Peer`. On entry it finds out which era the
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
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    AsyncExitStack,
    asynccontextmanager,
    contextmanager,
)
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from mcpcli.client.options import ClientOptions
from mcpcli.client.subscriptions import Subscriptions
from mcpcli.client.tasks import TaskOptions, TaskWaiter
from mcpcli.client.tracing import traced_request
from mcpcli.core.era import NoMemory, ProbeTraits
from mcpcli.core.exchange import Exchange, ExitedOnProbe
from mcpcli.core.flow import Answer, Flow, ListTools, Notify, Op, Send, run_async
from mcpcli.core.jsonrpc import METHOD_NOT_FOUND, Notification, Request, RequestId
from mcpcli.core.protocol import RELATED_TASK_KEY, TOOLS_CALL, Era
from mcpcli.core.tasks import Task
from mcpcli.errors import (
    NotOffered,
    ProtocolError,
    RequestTimeout,
    RPCError,
    ServerExited,
    UnsupportedVersionError,
    handshake_timeout,
)
from mcpcli.rpc.peer import Peer, ProgressHandler, RequestContext
from mcpcli.transports import Envelope, Transport

__all__ = ["Client", "caused_by"]

if TYPE_CHECKING:
    from mcpcli.core.era import EraMemory

log = logging.getLogger("mcpcli.client")
T = TypeVar("T")

JSON = dict[str, Any]
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


class Client:
    """A connected MCP client. `async with Client(transport) as c: await c.list_tools()`."""

    def __init__(self, transport: Transport, options: ClientOptions | None = None) -> None:
        self.transport = transport
        self.options = options = options or ClientOptions()
        #: The protocol, decided without I/O; this client drives its flows.
        self.exchange = Exchange(
            client_info=options.client_info,
            capabilities=self._capabilities,
            protocol=options.protocol,
            timeout=options.timeout,
            probe_timeout=options.probe_timeout,
            log_level=options.log_level,
            meta=options.meta,
        )
        self._peer: Peer | None = None
        self._stack: AsyncExitStack | None = None
        #: The transport's connection and the session on it (replaced by a restart).
        self._link: AsyncExitStack | None = None
        self._subscriptions = Subscriptions(self)
        self._taps: list[NotificationTap] = []
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
        command_line = self.transport.traits.command_line
        if self.options.remember_era and command_line:
            from mcpcli.cache import ExitRecords

            # Beside the era memory: a server slow to exit on EOF gets SIGTERM right after it.
            self.transport.use_exit_memory(ExitRecords(command_line))
        link = AsyncExitStack()
        self._link = link
        streams = await link.enter_async_context(self.transport.connect())
        self._peer = await link.enter_async_context(
            Peer(
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
    def peer(self) -> Peer:
        if self._peer is None:
            raise RuntimeError("client is not connected")
        return self._peer

    # What the handshake found, kept by the exchange.

    @property
    def era(self) -> Era:
        return self.exchange.era

    @property
    def protocol_version(self) -> str:
        return self.exchange.protocol_version

    @property
    def server_info(self) -> JSON:
        return self.exchange.server_info

    @property
    def capabilities(self) -> JSON:
        return self.exchange.capabilities

    @property
    def instructions(self) -> str | None:
        return self.exchange.instructions

    @property
    def supported_versions(self) -> list[str]:
        """Versions the server said it supports (modern servers only)."""
        return self.exchange.supported_versions

    @property
    def handshake(self) -> JSON:
        """The raw `initialize` or `server/discover` result."""
        return self.exchange.handshake

    @property
    def era_from_cache(self) -> bool:
        """The era came from a cached `server/discover` result (HTTP), not a live probe."""
        return self.exchange.era_from_cache

    # -- negotiation -------------------------------------------------------------

    async def _negotiate_within(self, timeout: float | None) -> None:
        """Negotiate, the probe and the handshake together bounded by `timeout`
        (`--timeout` bounds the whole set-up, not each of its requests), a restart
        after the probe included."""
        deadline = math.inf if timeout is None else anyio.current_time() + timeout
        exchange = self.exchange
        memory: EraMemory = NoMemory()
        if self.options.remember_era:
            from mcpcli.cache import EraRecords

            traits = self.transport.traits
            memory = EraRecords(traits.command_line, traits.cache_key)
        probe = ProbeTraits(legacy_only=self.transport.traits.legacy_only,
                            silence_is_legacy=self.transport.traits.probe_silence_is_legacy)
        try:
            await self._bounded(lambda: self._drive(exchange.negotiate(probe, memory)), deadline, timeout)
        except ExitedOnProbe as exc:
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
            await self._bounded(lambda: self._drive(exchange.initialize_after_probe()), deadline, timeout)

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

    async def renegotiate(self) -> None:
        """Find the era again with a live probe (a cached era turned out wrong)."""
        await self._drive(self.exchange.renegotiate())

    def _capabilities(self, era: Era) -> JSON:
        """What this client declares: its features', or the options' per-request hook's."""
        caps = self.options.features.capabilities(era)
        if self.options.declare is not None:
            caps = self.options.declare(era, caps)
        return caps

    # -- driving the protocol core ---------------------------------------------------

    async def _drive(self, flow: Flow[T]) -> T:
        """Run one of the exchange's flows on this connection."""
        return await run_async(flow, self._perform)

    async def _perform(self, op: Op) -> Any:
        if isinstance(op, Send):
            if not op.probe:
                self.transport.release_output()
            try:
                result = await self.send(
                    op.method, op.params, timeout=op.timeout, max_timeout=op.max_timeout,
                    on_progress=op.on_progress, progress_token=op.progress_token,
                    cancel_on_timeout=op.cancel_on_timeout,
                    headers=self.request_headers(op.method, op.params or {}),
                )
            except ServerExited:
                raise  # a probe's: what the server said is dropped, if it is started again
            finally:
                if op.probe and not isinstance(self.peer.closed, ServerExited):
                    self.transport.release_output()
            return result
        if isinstance(op, Notify):
            self.transport.release_output()
            await self.peer.notify(op.method, op.params)
            return None
        if isinstance(op, Answer):
            return await self._answer_round(op.requests)
        if isinstance(op, ListTools):
            return await self.list_tools()
        raise AssertionError(f"unknown operation {op!r}")

    def send(self, method: str, params: JSON | None, **options: Any) -> Awaitable[JSON]:
        """Every request this client makes leaves through here (`options` are
        `Peer.request`'s): within the options' `request_sent` hook, given its id (a relay
        notes which downstream request it was made for), and carrying the trace it continues."""
        hook = self.options.request_sent
        if hook is not None:
            return self._send_told(hook, method, params, **options)
        return self._traced(method, params, **options)

    async def _send_told(self, hook: Callable[[RequestId], AbstractContextManager[object]], method: str,
                         params: JSON | None, **options: Any) -> JSON:
        request_id = self.peer.next_id()
        with hook(request_id):
            return await self._traced(method, params, request_id=request_id, **options)

    def _traced(self, method: str, params: JSON | None, **options: Any) -> Awaitable[JSON]:
        return traced_request(self.peer, self.transport, self.protocol_version, method, params,
                              self.options.trace_context, **options)

    async def _answer_round(self, requests: tuple[tuple[str, str, JSON], ...]) -> JSON:
        """Answer one round of input requests: the options' hook (a gateway asks its own
        client), else one by one with this client's features."""
        if self.options.answer_round is not None:
            answered = await self.options.answer_round(requests)
            if answered is not None:
                return answered
        return {key: await self._serve_client_request(method, params) for key, method, params in requests}

    # -- requests ----------------------------------------------------------------

    def request_headers(self, method: str, params: JSON) -> Mapping[str, str] | None:
        """Extra transport headers for a request. A modern `tools/call` hands the
        transport the tool's listed definition (HTTP mirrors its `x-mcp-header`s)."""
        tool: JSON | None = None
        if method == TOOLS_CALL and self.era == "modern":
            name = params.get("name")
            tool = self.known_tool(name) if isinstance(name, str) else None
        return self.transport.request_headers(method, params, tool=tool)

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
        return await run_async(self.exchange.request(
            method, params, on_progress=on_progress, timeout=timeout, max_timeout=max_timeout), self._perform)

    async def fulfil_input_requests(self, requests: Any) -> JSON:
        """Answer a map of input requests (MRTR, or a task's) with the client's features."""
        return await self._drive(self.exchange.fulfil(requests))

    async def _serve_client_request(self, method: str, params: JSON) -> JSON:
        if method == "ping":
            return {}
        if self.options.serve_request is not None:
            return await self.options.serve_request(method, params)
        if method == "roots/list":
            self.roots_asked()
        return await self.options.features.answer(method, params)

    def roots_asked(self) -> None:
        """The server has asked for our roots (the first request need wait no longer)."""
        if self._roots_asked is not None:
            self._roots_asked.set()

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
        delivered = self._subscriptions.deliver(note.method, params)
        if note.method == "notifications/tools/list_changed":
            self.exchange.tools = None
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
        method = await self._drive(self.exchange.ping())
        return method, anyio.current_time() - start

    async def _pages(self, method: str, key: str, *, limit: int | None = None) -> JSON:
        """Follow `nextCursor` and return the first page's envelope with every item."""
        return await self._drive(self.exchange.pages(method, key, limit=limit))

    async def list_tools(self, *, cache_target: str | None = None) -> JSON:
        """Every tool. With `cache_target` (the user's TARGET), a modern server's fresh
        cached listing is reused instead of asking again, and a live one is stored."""
        from mcpcli import cache

        self.tools_from_cache = False
        if cache_target and self.era == "modern":
            cached = cache.fresh(cache_target, "tools/list")
            if cached is not None and isinstance(cached.get("tools"), list):
                self.tools_from_cache = True
                self.exchange.set_tools(cached)
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
        self.exchange.set_tools(result)
        return result

    def known_tool(self, name: str) -> JSON | None:
        """A tool's definition if a listing is at hand (never asks the server)."""
        return self.exchange.known_tool(name)

    def _warn(self, exc: Exception) -> None:
        if self.options.on_error is not None:
            self.options.on_error(exc)
        else:
            log.warning("%s", exc)

    async def get_tool(self, name: str) -> JSON | None:
        """The tool's definition from `tools/list`, fetched once per connection."""
        if self.exchange.tools is None:
            await self.list_tools()
        return self.exchange.known_tool(name)

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
        first: JSON | None = None,
    ) -> JSON:
        """Call a tool and return its result, running it as a task where the server
        wants one (see `mcpcli.client.tasks`): the task is followed to its end, unless
        `task.detach` asks for the CreateTaskResult itself. `timeout`/`max_timeout`
        bound the `tools/call` request as `request` does (the daemon's `call` op passes
        the command's, since its session has no default), and `meta` is this call's
        `--meta` (the daemon's, for the command; a client's own is `options.meta`).
        `first`: the answer to the first round, which a relay sent itself
        (`exchange.plain_call`): the call goes on from there."""
        options = task or TaskOptions()
        called = await self._drive(self.exchange.call_tool(
            name, arguments, meta=meta, task_mode=options.mode, task_ttl_ms=options.ttl_ms,
            mirrors_headers=self.transport.traits.mirrors_headers, on_progress=on_progress,
            timeout=timeout, max_timeout=max_timeout, first=first,
        ))
        if called.task is None or options.detach:
            return called.result
        waiter = TaskWaiter(self, called.task, options, on_progress=on_progress, progress_token=called.progress_token)
        return await waiter.wait()

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
        task = Task.from_wire(await self.get_task(task_id))
        return await TaskWaiter(self, task, options or TaskOptions()).wait()

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
        self.options.log_level = self.exchange.log_level = level
        if self.era == "legacy":
            await self.request("logging/setLevel", {"level": level})

    def subscribe(
        self,
        *,
        resources: list[str] | None = None,
        tools: bool = False,
        prompts: bool = False,
        resource_list: bool = False,
    ) -> AbstractAsyncContextManager[MemoryObjectReceiveStream[JSON]]:
        """A stream of change notifications until the block exits.

        Legacy servers get `resources/subscribe` for each URI and deliver list
        changes on their own; modern servers get one `subscriptions/listen`.
        """
        return self._subscriptions.subscribe(resources=resources, tools=tools, prompts=prompts,
                                             resource_list=resource_list)
