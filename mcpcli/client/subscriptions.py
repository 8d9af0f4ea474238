"""A client's subscriptions: each `Client.subscribe` block gets a stream of the change
notifications it asked for, in either era (what is asked and which notification is whose
is `mcpcli.core.subscriptions`'s)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpcli.core.subscriptions import (
    ACKNOWLEDGED,
    LISTEN,
    notification_methods,
    subscription_id,
    takes,
    wanted,
)
from mcpcli.errors import RequestTimeout, RPCError, TransportError

if TYPE_CHECKING:
    from mcpcli.client.options import ClientOptions
    from mcpcli.core.exchange import Exchange
    from mcpcli.rpc.peer import Peer
    from mcpcli.transports import Transport

__all__ = ["Subscription", "Subscriptions"]

JSON = dict[str, Any]


class _Client(Protocol):
    """What subscribing needs of the client (`Client`)."""

    @property
    def era(self) -> str: ...
    @property
    def peer(self) -> Peer: ...
    transport: Transport
    exchange: Exchange
    options: ClientOptions

    async def request(self, method: str, params: JSON | None = None) -> JSON: ...
    def send(self, method: str, params: JSON | None, **options: Any) -> Awaitable[JSON]: ...
    def request_headers(self, method: str, params: JSON) -> Mapping[str, str] | None: ...


@dataclass
class Subscription:
    """Notifications delivered to one `subscribe` consumer."""

    methods: frozenset[str]
    send: MemoryObjectSendStream[JSON]
    #: Modern servers tag notifications with the listen request's id, learnt from the ack.
    subscription_id: Any = None
    acked: anyio.Event = field(default_factory=anyio.Event)
    error: BaseException | None = None


class Subscriptions:
    """The subscriptions open on one client."""

    def __init__(self, client: _Client) -> None:
        self._client = client
        self._open: list[Subscription] = []

    def deliver(self, method: str, params: JSON) -> bool:
        """A notification from the server: to the subscriptions that take it; True if any
        did (or it was a listen's acknowledgement)."""
        if method == ACKNOWLEDGED:
            for sub in self._open:
                if not sub.acked.is_set():
                    sub.subscription_id = subscription_id(params)
                    sub.acked.set()
                    return True
        delivered = False
        for sub in self._open:
            if not takes(sub.methods, sub.subscription_id, method, params):
                continue
            try:
                sub.send.send_nowait({"method": method, "params": params})
                delivered = True
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
        return delivered

    @asynccontextmanager
    async def subscribe(
        self, *, resources: list[str] | None, tools: bool, prompts: bool, resource_list: bool,
    ) -> AsyncIterator[MemoryObjectReceiveStream[JSON]]:
        send, receive = anyio.create_memory_object_stream[JSON](256)
        methods = notification_methods(resources=resources, tools=tools, prompts=prompts, resource_list=resource_list)
        sub = Subscription(methods, send)
        self._open.append(sub)
        try:
            async with send, receive:
                if self._client.era == "legacy":
                    async with self._legacy(resources or []):
                        yield receive
                else:
                    notifications = wanted(resources=resources, tools=tools, prompts=prompts,
                                           resource_list=resource_list)
                    async with self._listen(sub, notifications):
                        yield receive
        finally:
            self._open.remove(sub)

    @asynccontextmanager
    async def _legacy(self, uris: list[str]) -> AsyncIterator[None]:
        client = self._client
        # Streamable HTTP delivers unrelated server messages on a GET stream.
        await client.transport.open_standalone_stream()
        for uri in uris:
            await client.request("resources/subscribe", {"uri": uri})
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                for uri in uris:
                    try:
                        await client.request("resources/unsubscribe", {"uri": uri})
                    except (RPCError, TransportError, RequestTimeout):
                        break

    @asynccontextmanager
    async def _listen(self, sub: Subscription, notifications: JSON) -> AsyncIterator[None]:
        client = self._client
        params = client.exchange.listen_params(notifications)

        async def listen() -> None:
            try:
                await client.send(
                    LISTEN, params, timeout=None, max_timeout=None, progress_token=False,
                    headers=client.request_headers(LISTEN, params),
                )
            except (RPCError, TransportError) as exc:
                sub.error = exc
            finally:
                # The server ended the subscription (or it failed): end the stream.
                sub.acked.set()
                sub.send.close()

        timeout = client.options.timeout
        async with anyio.create_task_group() as tg:
            tg.start_soon(listen)
            with anyio.move_on_after(timeout):
                await sub.acked.wait()
            if not sub.acked.is_set():
                # A typed timeout (exit 124), not anyio's bare TimeoutError (an "internal error").
                raise RequestTimeout(f"subscriptions/listen was not acknowledged within {timeout:g}s")
            if sub.error is not None:
                raise sub.error
            yield
            tg.cancel_scope.cancel()
