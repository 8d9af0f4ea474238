"""The MCP client: era negotiation, the operations of every primitive, client features.

`Client` wraps a transport and a `Session`. On entry it finds out which era the
server speaks: it probes with `server/discover` (modern, stateless 2026-07-28)
and falls back to the `initialize` handshake (legacy, 2024-11-05 .. 2025-11-25)
on any answer that is not recognisably modern. After that every operation looks
the same to the caller: modern requests get their `_meta`, multi-round-trip
results are answered and retried, pages are followed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpcli import __version__
from mcpcli.errors import (
    ProtocolError,
    RequestTimeout,
    RPCError,
    TransportError,
    UnsupportedVersionError,
)
from mcpcli.jsonrpc import METHOD_NOT_FOUND, Notification, Request
from mcpcli.protocol import (
    ALL_VERSIONS,
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LATEST_LEGACY,
    LATEST_MODERN,
    LEGACY_VERSIONS,
    LOG_LEVEL_KEY,
    MODERN_VERSIONS,
    MRTR_METHODS,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
    Era,
    era_of,
    is_modern_error,
    pick_version,
)
from mcpcli.session import ProgressHandler, RequestContext, Session, Tracer
from mcpcli.transports import Envelope, Transport

__all__ = ["Client", "ClientFeatures", "ClientOptions", "Subscription"]

log = logging.getLogger("mcpcli.client")

JSON = dict[str, Any]
Elicitor = Callable[[JSON], Awaitable[JSON]]
Sampler = Callable[[JSON], Awaitable[JSON]]
NotificationCallback = Callable[[str, JSON], None]

#: Bound on multi-round-trip retries of one request.
MAX_INPUT_ROUNDS = 16
#: Bound on pages followed by a list operation.
MAX_PAGES = 1000


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
        self._subscriptions: list[Subscription] = []
        self._tools: dict[str, JSON] | None = None

    # -- lifecycle ---------------------------------------------------------------

    async def __aenter__(self) -> Client:
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            streams = await stack.enter_async_context(self.transport.connect())
            self._session = await stack.enter_async_context(
                Session(
                    streams,
                    on_request=self._on_request,
                    on_notification=self._on_notification,
                    on_error=self.options.on_error,
                    trace=self.options.trace,
                    default_timeout=self.options.timeout,
                    max_timeout=self.options.max_timeout,
                )
            )
            await self._negotiate()
        except BaseException as exc:
            await stack.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        self._stack = stack
        return self

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

    async def _negotiate(self) -> None:
        forced = self.options.protocol
        if forced is not None:
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
        if await self._discover(LATEST_MODERN, probe=True):
            return
        await self._initialize(LATEST_LEGACY)

    def _meta(self, version: str) -> JSON:
        meta: JSON = {
            PROTOCOL_VERSION_KEY: version,
            CLIENT_INFO_KEY: self.options.client_info,
            CLIENT_CAPABILITIES_KEY: self.options.features.capabilities("modern"),
        }
        if self.options.log_level is not None:
            meta[LOG_LEVEL_KEY] = self.options.log_level
        return meta

    async def _discover(self, version: str, *, probe: bool) -> bool:
        """Try the modern era. False means the server is legacy (only when probing)."""
        tried: set[str] = set()
        while True:
            tried.add(version)
            try:
                result = await self.session.request(
                    "server/discover",
                    {"_meta": self._meta(version)},
                    timeout=self.options.probe_timeout if probe else True,
                    progress_token=False,
                    cancel_on_timeout=False,
                )
            except UnsupportedVersionError as exc:
                choice = pick_version(exc.supported, prefer=MODERN_VERSIONS)
                if choice is None or choice in tried:
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
            except RequestTimeout:
                if not probe:
                    raise
                log.debug("no answer to server/discover; falling back to initialize")
                return False
            versions = result.get("supportedVersions")
            if not isinstance(versions, list):
                if probe:
                    return False
                raise ProtocolError("server/discover result has no supportedVersions")
            offered = [v for v in versions if isinstance(v, str)]
            choice = version if version in offered else pick_version(offered, prefer=MODERN_VERSIONS)
            if choice is None:
                if probe and pick_version(offered, prefer=LEGACY_VERSIONS):
                    return False
                raise ProtocolError(
                    "the server supports none of our protocol versions "
                    f"(it offers {', '.join(offered) or 'none'})"
                )
            self.era = "modern"
            self.protocol_version = choice
            self.supported_versions = offered
            self.handshake = result
            caps = result.get("capabilities")
            self.capabilities = caps if isinstance(caps, dict) else {}
            meta = result.get("_meta")
            info = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
            self.server_info = info if isinstance(info, dict) else {}
            instructions = result.get("instructions")
            self.instructions = instructions if isinstance(instructions, str) else None
            return True

    async def _initialize(self, version: str) -> None:
        params = {
            "protocolVersion": version,
            "capabilities": self.options.features.capabilities("legacy"),
            "clientInfo": self.options.client_info,
        }
        result = await self.session.request("initialize", params, progress_token=False)
        chosen = result.get("protocolVersion")
        if not isinstance(chosen, str) or chosen not in LEGACY_VERSIONS:
            raise ProtocolError(
                f"the server chose protocol version {chosen!r}, which this client does not speak"
            )
        self.era = "legacy"
        self.protocol_version = chosen
        self.handshake = result
        caps = result.get("capabilities")
        self.capabilities = caps if isinstance(caps, dict) else {}
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None
        await self.session.notify("notifications/initialized")
        if self.options.log_level is not None and "logging" in self.capabilities:
            await self.session.request(
                "logging/setLevel", {"level": self.options.log_level}, progress_token=False
            )

    # -- requests ----------------------------------------------------------------

    def request_headers(self, method: str, params: JSON) -> Mapping[str, str] | None:
        """Extra transport headers for a request; HTTP transports override via hooks."""
        hook = getattr(self.transport, "request_headers", None)
        if hook is None:
            return None
        headers: Mapping[str, str] | None = hook(self, method, params)
        return headers

    async def request(
        self,
        method: str,
        params: JSON | None = None,
        *,
        on_progress: ProgressHandler | None = None,
        timeout: float | bool | None = True,
    ) -> JSON:
        """Send one MCP request in the negotiated era and return its final result."""
        params = dict(params or {})
        if self.era == "legacy":
            return await self.session.request(
                method, params, on_progress=on_progress, timeout=timeout,
                headers=self.request_headers(method, params),
            )
        base = params
        for _round in range(MAX_INPUT_ROUNDS):
            sent = dict(base)
            meta = dict(sent.get("_meta") or {})
            meta.update(self._meta(self.protocol_version))
            sent["_meta"] = meta
            try:
                result = await self.session.request(
                    method, sent, on_progress=on_progress, timeout=timeout,
                    headers=self.request_headers(method, sent),
                )
            except UnsupportedVersionError as exc:
                choice = pick_version(exc.supported, prefer=MODERN_VERSIONS)
                if choice is None or choice == self.protocol_version:
                    raise
                self.protocol_version = choice
                continue
            kind = result.get("resultType", "complete")
            if kind == "complete":
                return result
            if kind != "input_required":
                raise ProtocolError(f"{method}: unknown resultType {kind!r}")
            if method not in MRTR_METHODS:
                raise ProtocolError(f"{method}: the server asked for input, which this method cannot")
            base = dict(params)
            base["inputResponses"] = await self._fulfil(result.get("inputRequests"))
            if "requestState" in result:
                base["requestState"] = result["requestState"]
        raise ProtocolError(f"{method}: the server kept asking for input ({MAX_INPUT_ROUNDS} rounds)")

    async def _fulfil(self, requests: Any) -> JSON:
        if requests is None:
            return {}
        if not isinstance(requests, dict):
            raise ProtocolError("inputRequests is not an object")
        responses: JSON = {}
        for key, item in requests.items():
            if not isinstance(item, dict) or not isinstance(item.get("method"), str):
                raise ProtocolError(f"input request {key!r} is malformed")
            item_params = item.get("params")
            responses[key] = await self._serve_client_request(
                item["method"], item_params if isinstance(item_params, dict) else {}
            )
        return responses

    async def _serve_client_request(self, method: str, params: JSON) -> JSON:
        features = self.options.features
        if method == "ping":
            return {}
        if method == "elicitation/create":
            return await features.elicit(params)
        if method == "sampling/createMessage" and features.sample is not None:
            return await features.sample(params)
        if method == "roots/list" and features.roots is not None:
            return {"roots": features.roots}
        raise RPCError(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def _on_request(self, request: Request, ctx: RequestContext) -> JSON:
        return await self._serve_client_request(request.method, request.params or {})

    async def _on_notification(self, note: Notification, envelope: Envelope) -> None:
        params = note.params or {}
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
            callback(note.method, params)

    # -- operations --------------------------------------------------------------

    async def ping(self) -> tuple[str, float]:
        """Round trip to the server: `ping` on legacy servers, `server/discover` on modern ones."""
        start = anyio.current_time()
        if self.era == "legacy":
            await self.session.request("ping", None, progress_token=False)
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

    async def list_tools(self) -> JSON:
        result = await self._pages("tools/list", "tools")
        self._tools = {t["name"]: t for t in result["tools"] if isinstance(t, dict) and "name" in t}
        return result

    async def get_tool(self, name: str) -> JSON | None:
        """The tool's definition from `tools/list`, fetched once per connection."""
        if self._tools is None:
            await self.list_tools()
        assert self._tools is not None
        return self._tools.get(name)

    async def call_tool(
        self, name: str, arguments: JSON | None = None, *, on_progress: ProgressHandler | None = None
    ) -> JSON:
        params: JSON = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self.request("tools/call", params, on_progress=on_progress)

    async def list_resources(self) -> JSON:
        return await self._pages("resources/list", "resources")

    async def list_resource_templates(self) -> JSON:
        return await self._pages("resources/templates/list", "resourceTemplates")

    async def read_resource(self, uri: str) -> JSON:
        return await self.request("resources/read", {"uri": uri})

    async def list_prompts(self) -> JSON:
        return await self._pages("prompts/list", "prompts")

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> JSON:
        params: JSON = {"name": name}
        if arguments:
            params["arguments"] = dict(arguments)
        return await self.request("prompts/get", params)

    async def complete(
        self, ref: JSON, argument: str, value: str, context: Mapping[str, str] | None = None
    ) -> JSON:
        params: JSON = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": dict(context)}
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
        params: JSON = {"notifications": wanted, "_meta": self._meta(self.protocol_version)}

        async def listen() -> None:
            try:
                await self.session.request(
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
            with anyio.fail_after(self.options.timeout):
                await sub.acked.wait()
            if sub.error is not None:
                raise sub.error
            yield
            tg.cancel_scope.cancel()
