"""What an upstream asks back through the gateway: elicitation, sampling and roots, asked
of the downstream client whose call caused it.

Each link keeps an `Asking`: the downstream calls in flight on it (`Call`) and the
`mcpcli.relay.routing.Router` that finds the one a message is for. That is the call whose
coroutine is running (2026-07-28 input rounds are answered inside our call, so a context
variable finds it), else the one whose upstream request carried the message (Streamable
HTTP says; our client tells us each request's id, `ClientOptions.request_sent`), else the
only call in flight (a stdio upstream says nothing); it is never guessed among several
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

import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any

import anyio
import anyio.abc

from mcpcli.client import ROOTS_SETTLE, Client, caused_by
from mcpcli.core.jsonrpc import INVALID_REQUEST, METHOD_NOT_FOUND, RequestId
from mcpcli.core.protocol import MISSING_REQUIRED_CLIENT_CAPABILITY, Era
from mcpcli.errors import McpCliError, RPCError
from mcpcli.relay.routing import Message, Router
from mcpcli.server.backend import CallContext, InputDeclined

__all__ = ["ASKABLE", "Asking", "Call", "Calling", "DownstreamRoots", "UpstreamHooks", "current_call", "declined", "on_behalf_of", "serving"]

log = logging.getLogger("mcpcli.gateway")

JSON = dict[str, Any]

#: The downstream call whose coroutine is running (for input asked within our request).
current_call: ContextVar[Call | None] = ContextVar("mcpcli_gateway_call", default=None)
#: Set by the backend while it serves a downstream request: what an upstream request made
#: for it (a listing to find a name, a connection) belongs to.
on_behalf_of: ContextVar[CallContext | None] = ContextVar("mcpcli_gateway_ctx", default=None)

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

#: Downstream transports with exactly one client (unlike HTTP).
ONE_CLIENT = frozenset({"stdio", "memory"})

@contextmanager
def serving(ctx: CallContext) -> Iterator[None]:
    """While a downstream request is served, upstream requests made for it belong to it."""
    token = on_behalf_of.set(ctx)
    try:
        yield
    finally:
        on_behalf_of.reset(token)


class DownstreamRoots:
    """What the gateway knows of its stdio client's roots, shared by its links (stdio, or an
    in-process server, has exactly one client): what that client last answered to a
    roots/list, None before."""

    def __init__(self) -> None:
        self.roots: list[JSON] | None = None
        self.askers: list[Asking] = []
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
        for asking in self.askers:
            asking.roots_changed()


class Call:
    """One downstream request being served by a link."""

    __slots__ = ("_idle", "_lock", "_pending", "_tail", "asked", "asking", "ctx", "open", "own", "promote", "roots")

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
        #: A call passed through whole that its client can be asked within only on the
        #: usual path: that call, once it runs there (`mcpcli.gateway.passing`).
        self.promote: Callable[[], Awaitable[Call | None]] | None = None

    @property
    def lock(self) -> anyio.Lock:
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    @property
    def quiet(self) -> bool:
        """Nothing relayed is still going out and nothing is being asked: the answer may go."""
        return self._pending == 0 and self.asking == 0

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


class Calling:
    """`Link.call`: one downstream request's hold on a link (`async with ... as (client,
    call)`): the call known to the link's `Asking`, the connected client, a slot of the
    upstream's concurrency. A class rather than an `asynccontextmanager`, which costs an
    async generator (and the loop's bookkeeping of it) on every relayed call."""

    __slots__ = ("_asking", "_call", "_ensure", "_limited", "_limiter", "_token")

    def __init__(self, asking: Asking, ensure: Callable[[], Awaitable[Client]],
                 limiter: anyio.CapacityLimiter, ctx: CallContext | None) -> None:
        self._asking, self._ensure, self._limiter = asking, ensure, limiter
        self._call = Call(ctx if ctx is not None else on_behalf_of.get(), own=ctx is not None)
        self._limited = False

    async def __aenter__(self) -> tuple[Client, Call]:
        asking, call = self._asking, self._call
        asking.calls.append(call)
        self._token = current_call.set(call)
        try:
            client = await self._ensure()
            try:
                # A free slot is taken at once: `async with limiter` would first yield to
                # the event loop even then (one more loop turn per call).
                self._limiter.acquire_nowait()
            except anyio.WouldBlock:
                await self._limiter.acquire()
            self._limited = True
            if call.own and asking.must_catch_up(call.ctx, client):
                await asking.catch_up(client, call)
        except BaseException as exc:
            self._leave()
            _declined(exc)
            raise
        return client, call

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        try:
            if exc is None:
                await self._call.drain()
                await self._call.settle()
        except BaseException as failure:
            self._leave()
            _declined(failure)
            raise
        self._leave()
        if exc is not None:
            _declined(exc)

    def _leave(self) -> None:
        if self._limited:
            self._limited = False
            self._limiter.release()
        current_call.reset(self._token)
        self._asking.calls.remove(self._call)


def _declined(exc: BaseException) -> None:
    """The upstream needs what the client lacks: let our runtime say so, as it would
    itself (-32021, and HTTP 400 in 2026-07-28)."""
    if isinstance(exc, RPCError):
        lacking = declined(exc)
        if lacking is not None:
            raise lacking from None


def declined(exc: RPCError) -> InputDeclined | None:
    """What the upstream's -32021 (the client lacks a capability) is to our runtime."""
    if exc.code != MISSING_REQUIRED_CLIENT_CAPABILITY:
        return None
    return InputDeclined(exc.rpc_message, capabilities=_required(exc.data))


def _required(data: Any) -> list[str]:
    """The capability names in a -32021 error's data (`requiredCapabilities`)."""
    required = data.get("requiredCapabilities") if isinstance(data, dict) else None
    if isinstance(required, dict):
        return [str(name) for name in required]
    if isinstance(required, list):
        return [str(name) for name in required]
    return []


def _stdio_tie(waiting: Sequence[Call]) -> Call | None:
    """Several calls, all from the one client behind a stdio gateway: the latest."""
    if all(c.ctx is not None and c.ctx.transport == "stdio" for c in waiting):
        return waiting[-1]
    return None


class Asking:
    """One link's downstream calls in flight, and what its upstream asks of them."""

    def __init__(self, name: str, roots: DownstreamRoots) -> None:
        self.name = name
        #: The downstream requests being served, oldest first.
        self.calls: list[Call] = []
        self.router: Router[Call] = Router(self._waiting, current=self._running, tie=_stdio_tie)
        #: The stdio client's roots, as the gateway knows them (shared by its links).
        self._roots = roots
        roots.askers.append(self)
        #: What the upstream was last told the roots are (None: it has not asked), and
        #: whether that may not be the client's (answered outside any call, or changed since).
        self._roots_told: list[JSON] | None = None
        self.behind = False
        #: Set when the upstream asks for roots (`catch_up` waits for it to ask again).
        self._roots_reasked: anyio.Event | None = None

    def _running(self) -> Call | None:
        call = current_call.get()
        if call is not None and call.ctx is not None and call in self.calls:
            return call
        return None

    def _waiting(self, message: Message) -> list[Call]:
        return [c for c in self.calls if c.ctx is not None and (c.open or not message.asking)]

    def caller(self, *, asking: bool = False, method: str = "", params: JSON | None = None,
               related: RequestId | None = None) -> Call | None:
        """The downstream call that caused what the upstream just sent, or None if unknown
        (see the module docstring); `related`: our request whose stream carried it."""
        return self.router.route(Message(method, params or {}, related, asking))

    def request_sent(self, request_id: RequestId) -> AbstractContextManager[object]:
        """Our client sends a request: it is made for the call whose coroutine runs, if any."""
        return self.router.sent(request_id, current_call.get())

    def connected_anew(self) -> None:
        """A new connection: its server has been told no roots yet."""
        self._roots_told, self.behind = None, False

    async def ask(self, method: str, params: JSON, related: RequestId | None) -> JSON:
        """Answer the upstream's request for input by asking the downstream client."""
        call = self.caller(asking=True, method=method, params=params, related=related)
        if call is not None and call.promote is not None:
            call = await call.promote()
        if call is None or call.ctx is None or not call.open:
            if method == "roots/list":
                return await self._roots_unasked()
            raise RPCError(INVALID_REQUEST, f"{method}: no client request is waiting for this input")
        return await self._ask_in(call, method, params)

    async def _ask_in(self, call: Call, method: str, params: JSON, *, tell: bool = True) -> JSON:
        """Ask `call`'s client, after the asks made on it before (one at a time). `tell`:
        the answer goes to the upstream (else the gateway asks for itself)."""
        ctx = call.ctx
        assert ctx is not None
        call.asking += 1
        try:
            async with call.lock:
                if method == "roots/list" and call.roots is not None:
                    if tell:
                        self._roots_told, self.behind = call.roots, False
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
                        self._roots_told, self.behind = roots, False
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
        self.behind = known is None
        return {"roots": self._roots_told}

    def roots_asked(self) -> None:
        if self._roots_reasked is not None:
            self._roots_reasked.set()

    def roots_changed(self) -> None:
        """The client's roots changed: an upstream that was told some is behind."""
        if self._roots_told is not None:
            self.behind = True

    def must_catch_up(self, ctx: CallContext | None, client: Client) -> bool:
        """Whether a call of `ctx` first brings the upstream up to date on the roots (a
        client without roots has none to give: the next one may)."""
        return (self.behind and ctx is not None and isinstance(ctx.client_capabilities.get("roots"), dict)
                and client.era == "legacy")

    async def catch_up(self, client: Client, call: Call) -> None:
        """Ask the calling client for its roots; when the upstream was told others, say
        they changed and give it `ROOTS_RECHECK` to ask again, before the call goes on."""
        ctx = call.ctx
        if not self.must_catch_up(ctx, client):
            return
        assert ctx is not None
        self.behind = False  # tried once; a client that then says nothing is not asked again
        roots = (await self._ask_in(call, "roots/list", {}, tell=False)).get("roots")
        if not isinstance(roots, list) or roots == self._roots_told:
            return
        self._roots_reasked = reasked = anyio.Event()
        try:
            await client.peer.notify("notifications/roots/list_changed")
            with anyio.move_on_after(ROOTS_RECHECK):
                await reasked.wait()
                # Servers apply the answer asynchronously (as after the handshake).
                await anyio.sleep(ROOTS_SETTLE)
        except McpCliError as exc:
            log.debug("upstream %s: roots/list_changed: %s", self.name, exc)
        finally:
            self._roots_reasked = None


class UpstreamHooks:
    """The `ClientOptions` hooks of one upstream connection's client: its answers to the
    upstream's requests come from the downstream client whose call caused them."""

    def __init__(self, asking: Asking) -> None:
        self.asking = asking
        self.client: Client | None = None

    def declare(self, era: Era, capabilities: JSON) -> JSON:
        """A 2026-07-28 request declares the downstream client's capabilities (they travel
        per request), so the upstream asks only for what that client can give. Listings
        declare the gateway's own, so they do not depend on which client asked first."""
        call = current_call.get()
        if era != "modern" or call is None or call.ctx is None or not call.own:
            return capabilities
        theirs = call.ctx.client_capabilities
        return {k: v for k, v in theirs.items() if k in _FORWARDED_CAPS}

    async def answer_round(self, requests: tuple[tuple[str, str, JSON], ...]) -> JSON | None:
        """A 2026-07-28 upstream's input requests (or a task's), asked of the downstream
        client at once and under the upstream's own keys: the rounds map one to one.
        A client that lacks a capability gets what the upstream would have said to it."""
        call = current_call.get()
        if call is None or call.ctx is None or not all(method in ASKABLE for _, method, _ in requests):
            return None
        return await call.ctx.ask({key: {"method": method, "params": params} for key, method, params in requests})

    async def serve_request(self, method: str, params: JSON) -> JSON:
        if method == "roots/list":
            if self.client is not None:
                self.client.roots_asked()
            self.asking.roots_asked()
        if method in ASKABLE:
            return await self.asking.ask(method, params, caused_by.get())
        raise RPCError(METHOD_NOT_FOUND, f"Method not found: {method}")
