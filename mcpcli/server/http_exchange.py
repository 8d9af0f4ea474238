"""One HTTP response carrying JSON-RPC messages: a JSON body, or an SSE stream.

A response starts as JSON and becomes a `text/event-stream` when a message
related to the request has to go out before its answer (a notification, a
server to client request), or when it is a session's long-lived stream. Open
streams get `:` keep-alive comments. On a legacy session's stream every message
event gets an id `<stream>.<seq>` and is recorded in the stream's `Replay`, so a
client can resume with `Last-Event-ID`; a 2025-11-25 stream starts with a
priming event and may be closed early for polling (SEP-1699).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

import anyio
import anyio.abc

from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import (
    INTERNAL_ERROR,
    Batch,
    ErrorResponse,
    Message,
    Notification,
    RequestId,
    Response,
)
from mcpcli.errors import RPCError
from mcpcli.server.http_asgi import DISCONNECT_HOOK, JSON, Receive, Scope, Send

__all__ = ["QUEUE_LIMIT", "REPLAY_EVENTS", "Exchange", "Replay", "RoutedQueue", "StreamOwner", "start_task", "watch_disconnect"]

log = logging.getLogger("mcpcli.server.http")

#: Events kept per stream for clients that resume with Last-Event-ID.
REPLAY_EVENTS = 256
#: Messages routed to a response and not written yet, at most (then they are dropped).
QUEUE_LIMIT = 256


def start_task(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    """A helper task of one request (its disconnect watch, its stream's keep-alive) as a
    plain asyncio task, which the request ends with asyncio's cheap cancel: a task group
    per request cost an event-loop turn at its exit, and anyio's cancel formats the
    current task's repr (together a fifth of a small request's CPU). The HTTP server runs
    on uvicorn, on asyncio."""
    return asyncio.get_running_loop().create_task(coro)


def watch_disconnect(scope: Scope, receive: Receive, gone: Callable[[], None]) -> asyncio.Task[None] | None:
    """Call `gone()` if the client leaves before the response is complete: through our
    uvicorn protocol's hook (`DISCONNECT_HOOK`: no task at all), else from a task waiting
    on `receive` (returned; cancel it when the response is over)."""
    extensions = scope.get("extensions") or {}
    if DISCONNECT_HOOK in extensions:
        hooks = extensions[DISCONNECT_HOOK]
        if hooks is None:  # it has already left
            gone()
        else:
            hooks.append(gone)
        return None
    return start_task(_wait_disconnect(receive, gone))


async def _wait_disconnect(receive: Receive, gone: Callable[[], None]) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone()
            return


class Replay:
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


class RoutedQueue:
    """The messages a legacy session routes to one response, for the task writing it, in
    order: at most `QUEUE_LIMIT` waiting. `end` lets the reader finish what is queued;
    `close` drops it too. (An anyio memory-object stream cost an event-loop turn per
    message received, even one already waiting.)"""

    __slots__ = ("_ended", "_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[Message | Batch] = deque()
        self._ended = False
        self._waiter: asyncio.Future[None] | None = None

    def put(self, message: Message | Batch) -> bool:
        """Queue `message` (nothing once ended); False when the queue is full."""
        if self._ended:
            return True
        if len(self._items) >= QUEUE_LIMIT:
            return False
        self._items.append(message)
        self._wake()
        return True

    def end(self) -> None:
        self._ended = True
        self._wake()

    def close(self) -> None:
        self.end()
        self._items.clear()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __aiter__(self) -> RoutedQueue:
        return self

    async def __anext__(self) -> Message | Batch:
        while not self._items:
            if self._ended:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()


class StreamOwner(Protocol):
    """The legacy session a response streams for, as the exchange needs it
    (`http_stateful.StatefulConnection`): where its events are recorded, and whether to prime."""

    @property
    def sse_transport(self) -> bool:
        """A 2024-11-05 HTTP+SSE session (its one stream is not resumable)."""

    @property
    def version(self) -> str | None:
        """The protocol revision negotiated so far (None before `initialize`)."""

    def new_replay(self) -> Replay:
        """The record of a new stream of the session, for `Last-Event-ID`."""


class Exchange:
    """One HTTP response carrying JSON-RPC messages: a single JSON body, or an SSE stream.

    It is also the `Outlet` of a stateless request: notifications turn it into a
    stream. Legacy sessions deliver routed messages through `offer`.
    """

    def __init__(
        self,
        send: Send,
        tg: anyio.abc.TaskGroup | None,
        *,
        sse_ok: bool,
        keepalive: float,
        headers: list[tuple[bytes, bytes]] | None = None,
        session: StreamOwner | None = None,
    ) -> None:
        self._send = send
        self._tg = tg
        self.sse_ok = sse_ok
        self._keepalive = keepalive
        self.headers = headers or []
        #: The legacy session whose stream this is (event ids, resumption), if any.
        self.session = session
        self.replay: Replay | None = None
        self.sse = False
        self.started = False
        self.done = False
        #: The HTTP response is over (the client left, or the server closed it for
        #: polling) while messages may still come: they are only kept for resumption.
        self.http_closed = False
        # Taken without a trip through the event loop when free (most answers are one write).
        self._lock = anyio.Lock(fast_acquire=True)
        self._last_write = 0.0
        # Legacy routing: ids of the requests this exchange answers.
        self.request_ids: set[RequestId] = set()
        self.batch = False
        self.queue: RoutedQueue | None = None
        #: Without `tg`: the tasks it started (`stop` ends them).
        self._tasks: list[asyncio.Task[None]] = []

    def client_left(self) -> None:
        """The client closed the connection: stop writing (what comes is only recorded)."""
        self.http_closed = True

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run a task for this response: in `tg`, or until `stop`."""
        if self._tg is not None:
            self._tg.start_soon(lambda: coro)
        else:
            self._tasks.append(start_task(coro))

    def stop(self) -> None:
        """End the tasks started without a task group (the response is over)."""
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()

    def open_queue(self) -> RoutedQueue:
        """Messages routed to this exchange by a legacy session (the caller closes it)."""
        self.queue = RoutedQueue()
        return self.queue

    def end_queue(self) -> None:
        """No more routed messages: the reader sees the end of the queue (the server stops)."""
        if self.queue is not None:
            self.queue.end()

    def close_queue(self) -> None:
        if self.queue is not None:
            self.queue.close()

    # -- outlet (stateless requests) ---------------------------------------------------

    async def notify(self, method: str, params: JSON | None = None) -> None:
        await self.write(Notification(method, params))

    async def send_request(
        self, method: str, params: JSON | None = None, *, timeout: float | None = None
    ) -> JSON:
        raise RPCError(INTERNAL_ERROR, "a 2026-07-28 server cannot send requests to the client")

    # -- writing -----------------------------------------------------------------------

    async def _start_sse(self, retry_ms: int | None = None) -> None:
        if self.started:
            return
        self.started = self.sse = True
        headers = [
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
            *self.headers,
        ]
        await self._send({"type": "http.response.start", "status": 200, "headers": headers})
        self._last_write = anyio.current_time()
        session = self.session
        if session is not None and not session.sse_transport:
            self.replay = session.new_replay()
            if session.version == "2025-11-25":
                # SEP-1699: a priming event (an id, no data) so the client can resume at once.
                retry = b"retry: %d\n" % retry_ms if retry_ms is not None else b""
                await self._chunk(b"id: " + self.replay.event_id(0) + b"\n" + retry + b"data: \n\n")
        if self._keepalive > 0:
            self.spawn(self._keep_alive())

    async def _keep_alive(self) -> None:
        while True:
            await anyio.sleep(max(0.05, self._last_write + self._keepalive - anyio.current_time()))
            if self.done or self.http_closed:
                return
            if anyio.current_time() - self._last_write >= self._keepalive:
                async with self._lock:
                    if not (self.done or self.http_closed):
                        await self._chunk(b":\n\n")

    async def _chunk(self, data: bytes) -> None:
        self._last_write = anyio.current_time()
        await self._send({"type": "http.response.body", "body": data, "more_body": True})

    async def event(self, data: bytes, event: bytes = b"message") -> None:
        """One SSE event (starting the stream if needed), recorded for resumption."""
        async with self._lock:
            if not self.done:
                await self._event(data, event)

    async def start_stream(self) -> None:
        """Start the SSE stream now, before any message (a session's GET stream)."""
        async with self._lock:
            await self._start_sse()

    async def replayed(self, event_id: bytes, data: bytes) -> None:
        """Resend a recorded message event with its original id (resumption)."""
        async with self._lock:
            await self._chunk(b"id: " + event_id + b"\nevent: message\ndata: " + data + b"\n\n")

    async def _event(self, data: bytes, event: bytes = b"message", *, final: bool = False) -> None:
        if not self.http_closed:
            await self._start_sse()
        ident = b""
        if self.replay is not None and event == b"message":
            ident = b"id: " + self.replay.event_id(self.replay.add(data, final=final)) + b"\n"
        if not self.http_closed:
            await self._chunk(ident + b"event: " + event + b"\ndata: " + data + b"\n\n")

    async def write(self, message: Message | Batch) -> None:
        """A message before the final one: it needs a stream (dropped if SSE is not accepted)."""
        if not self.sse_ok:
            log.debug("dropping a message: the client does not accept text/event-stream")
            return
        await self.event(jsonrpc.encode(message))

    async def finish(self, message: Message | Batch, status: int = 200) -> None:
        """The final message: a JSON body, or the last event of the stream."""
        await self.finish_raw(jsonrpc.encode(message), status)

    async def finish_raw(self, body: bytes, status: int = 200) -> None:
        async with self._lock:
            if self.done:
                return
            if self.sse:
                await self._event(body, final=True)
                if not self.http_closed:
                    await self._send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                self.started = True
                headers = [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode("ascii")),
                    *self.headers,
                ]
                await self._send({"type": "http.response.start", "status": status, "headers": headers})
                await self._send({"type": "http.response.body", "body": body, "more_body": False})
            self.done = True

    async def poll_close(self, retry_ms: int) -> None:
        """Close the HTTP response now, asking the client to resume after `retry_ms`;
        the request goes on and its messages wait for the client's GET."""
        async with self._lock:
            if self.done or self.http_closed:
                return
            if not self.started:
                await self._start_sse(retry_ms)
            else:
                await self._chunk(b"retry: %d\n\n" % retry_ms)
            self.http_closed = True
            await self._send({"type": "http.response.body", "body": b"", "more_body": False})

    async def close(self) -> None:
        """End an SSE stream without a final message (or answer 202 if nothing was sent)."""
        async with self._lock:
            if self.done:
                return
            self.done = True
            if self.replay is not None:
                self.replay.finish()
            if self.http_closed:
                return
            if self.started:
                await self._send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                headers = [(b"content-length", b"0"), *self.headers]
                await self._send({"type": "http.response.start", "status": 202, "headers": headers})
                await self._send({"type": "http.response.body", "body": b"", "more_body": False})

    # -- legacy routing ----------------------------------------------------------------

    def offer(self, message: Message | Batch) -> None:
        if self.queue is not None and not self.queue.put(message):
            log.warning("dropping a message for a client that does not read its stream")

    def is_final(self, message: Message | Batch) -> bool:
        if isinstance(message, Batch):
            return True
        if isinstance(message, (Response, ErrorResponse)):
            if message.id is None:
                return True
            self.request_ids.discard(message.id)
            return not self.request_ids
        return False
