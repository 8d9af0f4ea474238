"""The legacy HTTP+SSE transport (protocol 2024-11-05; deprecated, still common).

The client GETs the server URL and keeps the event stream open. The first
event is `endpoint`, whose data is the URL to POST every client message to
(usually relative: `/message?sessionId=...`); every server message arrives on
the stream as an `event: message`. An endpoint on another origin is refused:
our credentials and messages go only where the user pointed us.

`SseChannel` is that connection; `SseTransport` (`--transport sse`, or a config
entry of `"type": "sse"`) uses it from the start, and the Streamable HTTP
transport switches to it when a server does not speak Streamable HTTP.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from urllib.parse import urljoin

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream

from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import Message, Request
from mcpcli.core.protocol import MAX_MESSAGE_BYTES
from mcpcli.errors import AuthError, ConnectionClosed, McpCliError, ProtocolError, TransportError
from mcpcli.transports import Envelope, RequestFailed, Streams, Transport, TransportTraits
from mcpcli.transports.http import (
    HttpConnection,
    display_url,
    origin_of,
    snippet,
    status_text,
)
from mcpcli.transports.sse_events import INVALID_UTF8, SSEDecoder

__all__ = ["SseChannel", "SseTransport"]

log = logging.getLogger("mcpcli.http")

Deliver = Callable[[Envelope | Exception], Awaitable[None]]


class SseChannel:
    """One HTTP+SSE connection: the event stream (a task) and POSTs to its endpoint."""

    def __init__(
        self, conn: HttpConnection, deliver: Deliver, *, max_message_bytes: int = MAX_MESSAGE_BYTES
    ) -> None:
        self.conn = conn
        self._deliver = deliver
        self.max_message_bytes = max_message_bytes
        self.endpoint: str | None = None
        self._scope: anyio.CancelScope | None = None

    async def open(self, tg: TaskGroup) -> None:
        """GET the stream and wait for its `endpoint` event (errors raise here)."""
        await tg.start(self._run)

    @classmethod
    async def fallback(
        cls, conn: HttpConnection, deliver: Deliver, tg: TaskGroup, reason: str, *, max_message_bytes: int,
    ) -> SseChannel:
        """An open channel for a Streamable HTTP connection whose `initialize` was refused
        (`reason`); failing that too, an error that says both failed."""
        channel = cls(conn, deliver, max_message_bytes=max_message_bytes)
        try:
            await channel.open(tg)
        except TransportError as exc:
            raise TransportError(
                f"{reason}; and as HTTP+SSE: {exc.message}",
                status=exc.status,
                hint="check the URL: it answers neither Streamable HTTP nor HTTP+SSE",
            ) from None
        return channel

    async def aclose(self) -> None:
        if self._scope is not None:
            self._scope.cancel()

    async def _run(self, *, task_status: TaskStatus[None]) -> None:
        decoder = SSEDecoder(max_event_bytes=self.max_message_bytes)
        started = False
        with anyio.CancelScope() as scope:
            self._scope = scope
            scope.deadline = anyio.current_time() + self.conn.connect_timeout
            try:
                async with self.conn.send("GET", headers={"Accept": "text/event-stream"}) as response:
                    if response.status in (401, 403):
                        raise AuthError(f"{display_url(response.url)}: {status_text(response.status)}")
                    if response.status != 200 or response.content_type != "text/event-stream":
                        raw = await response.peek()
                        raise self.conn.http_error(response, raw, context="for the SSE stream")
                    async for chunk in response.chunks():
                        events = decoder.feed(chunk)
                        if decoder.take_invalid_utf8():
                            await self._deliver(ProtocolError(INVALID_UTF8.format(self.conn.shown)))
                        for event in events:
                            if event.event == "endpoint":
                                if not started:
                                    self.endpoint = self._endpoint(response.url, event.data)
                                    scope.deadline = math.inf
                                    started = True
                                    task_status.started()
                                continue
                            if event.event == "message" and started and event.data.strip():
                                await self._message(event.data)
            except McpCliError as exc:
                if not started:
                    raise
                await self._deliver(ConnectionClosed(f"the SSE stream broke: {exc.message}"))
                return
        if scope.cancelled_caught and not started:
            raise TransportError(
                f"{self.conn.shown}: no endpoint event on the SSE stream within "
                f"{self.conn.connect_timeout:g}s"
            )
        if not started:
            raise ProtocolError(
                f"{self.conn.shown}: the SSE stream ended without an endpoint event", status=200
            )
        if not scope.cancel_called:
            await self._deliver(ConnectionClosed(f"{self.conn.shown}: the server closed the SSE stream"))

    def _endpoint(self, stream_url: str, data: str) -> str:
        try:
            target = urljoin(stream_url, data.strip())  # ValueError: "http://[::1"
            same = origin_of(target) == origin_of(stream_url)
        except ValueError:
            target, same = data.strip(), False
        if not same:
            raise ProtocolError(
                f"{self.conn.shown}: the SSE endpoint event points to another origin "
                f"({display_url(target)}); refusing to send messages there",
                status=200,
            )
        return target

    async def _message(self, data: str) -> None:
        try:
            message = jsonrpc.parse(data)
        except jsonrpc.ParseError as exc:
            await self._deliver(
                ProtocolError(f"{self.conn.shown}: the server sent a message that is not JSON-RPC "
                              f"({exc}): {snippet(data.encode())}",
                              request_id=jsonrpc.recover_response_id(data))
            )
            return
        await self._deliver(Envelope(message))

    async def post(self, message: Message) -> None:
        """POST one message to the endpoint; the answer (if any) comes on the stream."""
        if self.endpoint is None:
            raise ConnectionClosed(f"{self.conn.shown}: the SSE stream is not open")
        body = jsonrpc.encode(message)
        headers = {"Content-Type": "application/json"}
        async with self.conn.send("POST", url=self.endpoint, headers=headers, body=body) as response:
            if 200 <= response.status < 300:
                return
            if response.status in (401, 403):
                raise AuthError(f"{display_url(response.url)}: {status_text(response.status)}")
            raw = await response.peek()
            raise self.conn.http_error(response, raw)


class SseTransport(Transport):
    """The HTTP+SSE transport on its own (`--transport sse`)."""

    name = "sse"

    def __init__(self, connection: HttpConnection, *, max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self.conn = connection
        self.max_message_bytes = max_message_bytes
        #: HTTP+SSE predates the modern era: go straight to `initialize`.
        self.traits = TransportTraits(legacy_only=True, cache_key=connection.url)
        #: Shielded scopes of the writer and of request POSTs, cancelled on exit.
        self._scopes: set[anyio.CancelScope] = set()

    def describe(self) -> str:
        return self.conn.shown

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Streams]:
        read_send, read_recv = anyio.create_memory_object_stream[Envelope | Exception](64)
        write_send, write_recv = anyio.create_memory_object_stream[Envelope](64)

        async def deliver(item: Envelope | Exception) -> None:
            try:
                await read_send.send(item)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

        channel = SseChannel(self.conn, deliver, max_message_bytes=self.max_message_bytes)
        try:
            async with anyio.create_task_group() as tg:
                await channel.open(tg)
                tg.start_soon(self._writer, channel, write_recv, deliver, tg)
                try:
                    yield read_recv, write_send
                finally:
                    with anyio.CancelScope(shield=True):
                        await write_send.aclose()
                    for scope in list(self._scopes):
                        scope.cancel()
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await read_send.aclose()
                await read_recv.aclose()
                await write_recv.aclose()
                await self.conn.aclose()

    async def _writer(
        self,
        channel: SseChannel,
        inbox: MemoryObjectReceiveStream[Envelope],
        deliver: Deliver,
        tg: TaskGroup,
    ) -> None:
        """POST what the session writes. Shielded (as each request POST is): a message
        queued while the command is being cancelled (Ctrl-C: unsubscribe,
        notifications/cancelled) still goes out; the connection's exit stops them."""

        async def send_request(request: Request) -> None:
            with anyio.CancelScope(shield=True) as scope:
                self._scopes.add(scope)
                try:
                    await channel.post(request)
                except McpCliError as exc:
                    await deliver(RequestFailed(request.id, exc))
                finally:
                    self._scopes.discard(scope)

        with anyio.CancelScope(shield=True) as scope:
            self._scopes.add(scope)
            async for envelope in inbox:
                message = envelope.message
                if isinstance(message, Request):
                    tg.start_soon(send_request, message)
                elif isinstance(message, jsonrpc.Batch):
                    await deliver(ProtocolError("batches are not sent over HTTP"))
                else:
                    try:
                        await channel.post(message)
                    except McpCliError as exc:
                        await deliver(exc)
