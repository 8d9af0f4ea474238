"""Legacy sessions over Streamable HTTP (2025-03-26 .. 2025-11-25): their
POST, GET and DELETE requests, their SSE streams and resumption.

`initialize` without `_meta` creates a `StatefulConnection`: a JSON-RPC `Peer`
fed by POSTs, with an unguessable `Mcp-Session-Id`. Each POST with requests is
answered on its own response (JSON, or SSE once related messages come first);
messages unrelated to a pending request go to the session's GET stream.
Batches are allowed under 2025-03-26. As the spec says, a closed POST stream is
not a cancellation in these revisions (`notifications/cancelled` is): the
request goes on and its events are kept (`Replay`) for a GET that resumes with
`Last-Event-ID`. 2025-11-25 streams may be closed early for polling (SEP-1699).
The 2024-11-05 HTTP+SSE transport (`mcpcli.server.http_legacy_sse`) uses the
same sessions with a single stream.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import anyio

from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import (
    INVALID_REQUEST,
    Batch,
    ErrorResponse,
    Message,
    Request,
    RequestId,
    Response,
)
from mcpcli.core.protocol import ALL_VERSIONS
from mcpcli.server.http_asgi import (
    Headers,
    Receive,
    Scope,
    Send,
    error_body,
    plain,
    shutdown_error,
)
from mcpcli.server.http_context import HttpContext
from mcpcli.server.http_exchange import Exchange, Replay, watch_disconnect
from mcpcli.server.stdio import MAX_BATCH
from mcpcli.transports import Envelope
from mcpcli.transports.lines import FrameReader

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from mcpcli.server.core import ServerConnection

__all__ = [
    "REPLAY_STREAMS",
    "StatefulConnection",
    "StatefulConnections",
    "delete",
    "get",
    "legacy_post",
    "stream",
]

log = logging.getLogger("mcpcli.server.http")

Cors = list[tuple[bytes, bytes]]

#: Streams per session kept for clients that resume with Last-Event-ID (events per
#: stream: `http_exchange.REPLAY_EVENTS`).
REPLAY_STREAMS = 64


class StatefulConnection:
    """A handshake-era session: a `Peer` fed by POSTs, answering on their streams."""

    def __init__(self, table: StatefulConnections, conn: ServerConnection, *, sse_transport: bool) -> None:
        self._table = table
        # visible ASCII, 192 random bits after the replica's routing prefix (if any)
        self.id = table.context.options.session_prefix + secrets.token_urlsafe(24)
        self.conn = conn
        self.sse_transport = sse_transport
        #: What the POSTs hand the session's peer (`put`), and where its messages go.
        self.inbox = _Inbox()
        self._outbox = _Router(self)
        self.pending: dict[RequestId, Exchange] = {}
        self.standalone: Exchange | None = None
        self.last_seen = time.monotonic()
        self.ended = anyio.Event()
        self.replays: OrderedDict[int, Replay] = OrderedDict()
        self._streams = 0
        #: HTTP+SSE (2024-11-05): requests posted and not answered yet on the stream.
        self.sse_pending: set[RequestId] = set()

    def new_replay(self) -> Replay:
        self._streams += 1
        replay = Replay(self._streams)
        self.replays[replay.number] = replay
        while len(self.replays) > REPLAY_STREAMS:
            self.replays.popitem(last=False)
        return replay

    @property
    def version(self) -> str | None:
        """The protocol revision negotiated so far (None before `initialize`)."""
        return self.conn.version

    @property
    def busy(self) -> bool:
        return bool(self.pending) or self.standalone is not None

    async def run(self) -> None:
        try:
            server = self._table.context.server
            await server.serve((self.inbox, self._outbox), connection=self.conn)
        finally:
            self.ended.set()
            self._table.pop(self.id)
            if self.standalone is not None:
                self.standalone.end_queue()
            for exchange in list(self.pending.values()):
                exchange.end_queue()
            self.inbox.closed = True
            self._outbox.closed = True

    def close(self) -> None:
        self.inbox.end()

    def route(self, envelope: Envelope) -> None:
        """Deliver a message of the session's peer to the response it belongs to (a POST's,
        or the GET stream), as the peer sends it."""
        message = envelope.message
        target: Exchange | None = None
        context = envelope.context if isinstance(envelope.context, Exchange) else None
        if self.sse_transport:
            target = self.standalone
            for sent in message.messages if isinstance(message, Batch) else [message]:
                if isinstance(sent, (Response, ErrorResponse)) and sent.id is not None:
                    self.sse_pending.discard(sent.id)
        elif isinstance(message, Batch):
            target = context
        elif isinstance(message, (Response, ErrorResponse)):
            target = context if message.id is None else self.pending.get(message.id)
        else:
            related = envelope.related_request_id
            target = self.pending.get(related) if related is not None else None
            if target is None or target.done:
                target = self.standalone
        if target is None:
            log.debug("session %s: no open stream for %s", self.id[:6], type(message).__name__)
            return
        target.offer(message)


class _Inbox(FrameReader):
    """A session's read stream, fed by its POSTs (`put`): the peer takes a request as it is
    put (its task started at once, `take_at_once`); the rest waits in order for its receive
    loop. (A memory-object stream cost the receive loop's turn per message.)"""

    def put(self, envelope: Envelope) -> None:
        """Hand the peer a message; ClosedResourceError once the session is ending."""
        if self.closed or self.finished:
            raise anyio.ClosedResourceError
        self.inbox.put(envelope)

    def end(self) -> None:
        """No more messages: the session ends once it has read those already put."""
        self.finished = True
        self.inbox.end()

    async def _more(self) -> None:
        await self.inbox.wait()


class _Router:
    """A session's write stream: each message is routed to its response as it is sent
    (`StatefulConnection.route`), with no task or queue between the peer and the response."""

    def __init__(self, session: StatefulConnection) -> None:
        self._session = session
        self.closed = False

    def send_nowait(self, envelope: Envelope) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        self._session.route(envelope)

    async def send(self, envelope: Envelope) -> None:
        self.send_nowait(envelope)

    async def aclose(self) -> None:
        self.closed = True


class StatefulConnections:
    """The table of legacy sessions, by id: bounded (when full, the oldest idle
    session is closed for a new one) and reaped (idle longer than `session_ttl`: closed).

    The app creates it and lends it its task group while it runs (`tg`), where the
    sessions and the reaper run; the routes of the legacy half are handed it."""

    def __init__(self, context: HttpContext) -> None:
        self.context = context
        #: Where sessions run, while the app runs (set by the app).
        self.tg: TaskGroup | None = None
        self._table: dict[str, StatefulConnection] = {}

    def get(self, sid: str) -> StatefulConnection | None:
        return self._table.get(sid)

    def pop(self, sid: str) -> StatefulConnection | None:
        return self._table.pop(sid, None)

    def open(self, transport: str, *, sse_transport: bool) -> StatefulConnection | None:
        """A new running session, or None when the table is full of busy ones."""
        if len(self._table) >= self.context.options.max_sessions:
            idle = [s for s in self._table.values() if not s.busy]
            if not idle:
                return None
            oldest = min(idle, key=lambda s: s.last_seen)
            oldest.close()
            self._table.pop(oldest.id, None)
        context = self.context
        conn = context.server.connection(transport, context.principal)
        session = StatefulConnection(self, conn, sse_transport=sse_transport)
        conn.session_id = session.id
        self._table[session.id] = session
        assert self.tg is not None, "use `async with McpHttpApp(...)`"
        self.tg.start_soon(session.run)
        return session

    def close_all(self) -> None:
        for session in list(self._table.values()):
            session.close()

    async def reap(self) -> None:
        """Close sessions idle longer than `session_ttl`, forever (run it in `tg`)."""
        ttl = self.context.options.session_ttl
        while True:
            await anyio.sleep(min(60.0, max(ttl / 4, 0.05)))
            cutoff = time.monotonic() - ttl
            for session in list(self._table.values()):
                if not session.busy and session.last_seen < cutoff:
                    log.debug("closing idle session %s", session.id[:6])
                    session.close()


# -- POST ----------------------------------------------------------------------------------


async def legacy_post(
    sessions: StatefulConnections, scope: Scope, receive: Receive, send: Send, headers: Headers,
    cors: Cors, session: StatefulConnection | None, data: Any,
) -> None:
    """A POST to a session, or the `initialize` that creates one."""
    version = headers.get("mcp-protocol-version")
    if version is not None and version not in ALL_VERSIONS:
        await plain(
            send, 400, error_body(None, INVALID_REQUEST, f"Unsupported MCP-Protocol-Version: {version}"), cors
        )
        return
    try:
        parsed = _parse(data)
    except jsonrpc.ParseError as exc:
        await plain(send, 400, error_body(exc.id, exc.code, f"Invalid request: {exc}"), cors)
        return
    messages = parsed.messages if isinstance(parsed, Batch) else [parsed]
    requests = [m for m in messages if isinstance(m, Request)]
    extra: Cors = list(cors)
    if session is None:
        session = sessions.open("http", sse_transport=False)
        if session is None:
            await plain(send, 503, error_body(None, INVALID_REQUEST, "too many sessions"), cors)
            return
        extra.append((b"mcp-session-id", session.id.encode("ascii")))
    session.last_seen = time.monotonic()
    ids = [r.id for r in requests]
    if len(set(ids)) != len(ids) or any(i in session.pending for i in ids):
        clash = next(i for i in ids if i in session.pending or ids.count(i) > 1)
        await plain(
            send, 409, error_body(clash, INVALID_REQUEST, "duplicate request id: one is still pending"),
            extra,
        )
        return
    if await _answered_at_once(session, parsed, send, extra):
        return
    if not requests:
        try:
            session.inbox.put(Envelope(parsed))
        except anyio.ClosedResourceError:
            await plain(send, 404, error_body(None, INVALID_REQUEST, "Session not found"), cors)
            return
        await plain(send, 202, b"", cors)
        return
    await _answer(sessions.context, scope, receive, send, headers, extra, session, parsed, requests)


async def _answered_at_once(session: StatefulConnection, parsed: Message | Batch, send: Send, extra: Cors) -> bool:
    """A lone `ping`, answered here rather than behind the work queued in the session (a
    busy server must not starve it). False for anything else."""
    if not isinstance(parsed, Request):
        return False
    result = session.conn.quick(parsed)
    if result is None:
        return False
    await plain(send, 200, jsonrpc.encode(Response(parsed.id, result)), extra)
    return True


def _parse(data: Any) -> Message | Batch:
    """The posted JSON as a message or a batch (ParseError when it is neither)."""
    if isinstance(data, list):
        if not data:
            raise jsonrpc.ParseError("empty batch", INVALID_REQUEST)
        if len(data) > MAX_BATCH:
            raise jsonrpc.ParseError(f"more than {MAX_BATCH} messages in a batch", INVALID_REQUEST)
        return Batch([jsonrpc.parse_obj(item) for item in data])
    return jsonrpc.parse_obj(data)


async def _answer(
    context: HttpContext, scope: Scope, receive: Receive, send: Send, headers: Headers, extra: Cors,
    session: StatefulConnection, parsed: Message | Batch, requests: list[Request],
) -> None:
    """Hand the POSTed requests to the session and answer them on this response."""
    accept = headers.get("accept") or "*/*"
    sse_ok = "text/event-stream" in accept or "*/*" in accept
    exchange = Exchange(
        send, None, sse_ok=sse_ok, keepalive=context.options.keepalive, headers=extra, session=session
    )
    exchange.batch = isinstance(parsed, Batch)
    exchange.request_ids = {r.id for r in requests}
    queue = exchange.open_queue()
    for request in requests:
        session.pending[request.id] = exchange
    watch = None
    try:
        try:
            session.inbox.put(Envelope(parsed, context=exchange))
        except anyio.ClosedResourceError:
            await exchange.finish_raw(error_body(None, INVALID_REQUEST, "Session not found"), 404)
            return
        # A closed POST connection is not a cancellation in these revisions: the
        # request goes on and its messages are kept for a resuming GET.
        watch = watch_disconnect(scope, receive, exchange.client_left)
        poll = context.options.sse_poll_after
        if poll is not None and sse_ok and session.conn.version == "2025-11-25":
            exchange.spawn(_poll_later(context, exchange, poll))
        with context.on_stop(exchange.end_queue):
            async for message in queue:
                if exchange.is_final(message):
                    await exchange.finish(message)
                    break
                await exchange.write(message)
            else:
                if context.stopping and exchange.request_ids:
                    await _shutting_down(exchange)
                else:
                    await exchange.close()  # the session ended under us
    finally:
        for request in requests:
            if session.pending.get(request.id) is exchange:
                del session.pending[request.id]
        exchange.done = True
        exchange.close_queue()
        session.last_seen = time.monotonic()
        if watch is not None:
            watch.cancel()
        exchange.stop()


async def _shutting_down(exchange: Exchange) -> None:
    """Answer the requests of a POST the server stopped with errors that say so (503 if
    nothing was sent yet), instead of a bare 202 that would leave the client waiting."""
    error = shutdown_error()
    answers: list[Message] = [ErrorResponse(rid, error) for rid in exchange.request_ids]
    await exchange.finish(Batch(answers) if exchange.batch else answers[0], 503)


async def _poll_later(context: HttpContext, exchange: Exchange, delay: float) -> None:
    await anyio.sleep(delay)
    if not exchange.done:
        await exchange.poll_close(context.options.sse_retry_ms)


# -- GET: the session's stream, or resuming one ------------------------------------------------


async def get(sessions: StatefulConnections, receive: Receive, send: Send, headers: Headers, cors: Cors) -> None:
    """A GET with `Mcp-Session-Id` (the app checked): resume a stream (`Last-Event-ID`) or
    open the session's stream."""
    session = sessions.get(headers.get("mcp-session-id") or "")
    if session is None or session.sse_transport:
        await plain(send, 404, error_body(None, INVALID_REQUEST, "Session not found"), cors)
        return
    replay = _replay_for(session, headers.get("last-event-id"))
    if replay is not None:
        await _resume(sessions.context, receive, send, cors, session, *replay)
        return
    if session.standalone is not None and not session.standalone.done:
        await plain(send, 409, error_body(None, INVALID_REQUEST, "Conflict: a stream is already open for this session"), cors)
        return
    await stream(sessions.context, receive, send, cors, session, endpoint=None)


def _replay_for(session: StatefulConnection, last: str | None) -> tuple[Replay, int] | None:
    """The stream a `Last-Event-ID` names in this session, and the last seq seen."""
    if not last:
        return None
    number, _, seq = last.partition(".")
    # ASCII digits of a sane length: "¹".isdigit() is true, and int() of 5,000 digits raises.
    if not all(part.isascii() and part.isdigit() and len(part) <= 18 for part in (number, seq)):
        return None
    replay = session.replays.get(int(number))
    if replay is None:
        return None
    return replay, int(seq)


async def _resume(
    context: HttpContext, receive: Receive, send: Send, cors: Cors,
    session: StatefulConnection, replay: Replay, seen: int,
) -> None:
    """Replay a stream's events after `seen`, then follow it until its answer."""
    async with anyio.create_task_group() as tg:
        exchange = Exchange(send, tg, sse_ok=True, keepalive=context.options.keepalive, headers=cors)
        tg.start_soon(_watch_stream, receive, tg.cancel_scope)
        try:
            await exchange.start_stream()
            while True:
                pending = [(seq, data) for seq, data in replay.events if seq > seen]
                for seq, data in pending:
                    await exchange.replayed(replay.event_id(seq), data)
                    seen = seq
                if replay.finished and seen >= replay.seq:
                    break
                await replay.changed()
            await exchange.close()
        finally:
            exchange.done = True
            session.last_seen = time.monotonic()
            tg.cancel_scope.cancel()


async def stream(
    context: HttpContext, receive: Receive, send: Send, cors: Cors,
    session: StatefulConnection, *, endpoint: str | None,
) -> None:
    """The long-lived SSE stream of a session (GET stream, or the HTTP+SSE stream)."""
    async with anyio.create_task_group() as tg:
        exchange = Exchange(send, tg, sse_ok=True, keepalive=context.options.keepalive, headers=cors)
        queue = exchange.open_queue()
        session.standalone = exchange
        with context.on_stop(exchange.end_queue):
            try:
                if endpoint is not None:
                    await exchange.event(endpoint.encode("utf-8"), b"endpoint")
                else:
                    await exchange.start_stream()
                tg.start_soon(_watch_stream, receive, tg.cancel_scope)
                async for message in queue:
                    await exchange.event(jsonrpc.encode(message))
                if context.stopping and session.sse_transport:
                    # HTTP+SSE answers every request on this stream: the unanswered ones say why.
                    error = shutdown_error()
                    for rid in list(session.sse_pending):
                        await exchange.event(jsonrpc.encode(ErrorResponse(rid, error)))
                    session.sse_pending.clear()
                await exchange.close()
            finally:
                exchange.done = True
                exchange.close_queue()
                if session.standalone is exchange:
                    session.standalone = None
                session.last_seen = time.monotonic()
                if endpoint is not None:
                    session.close()  # HTTP+SSE: the stream is the session
                tg.cancel_scope.cancel()


async def _watch_stream(receive: Receive, scope: anyio.CancelScope) -> None:
    """Stop streaming when the client goes away."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            scope.cancel()
            return


# -- DELETE ----------------------------------------------------------------------------------


async def delete(sessions: StatefulConnections, send: Send, headers: Headers, cors: Cors) -> None:
    """End a session at the client's request."""
    sid = headers.get("mcp-session-id")
    if sid is None:
        await plain(send, 400, error_body(None, INVALID_REQUEST, "Bad Request: Mcp-Session-Id header required"), cors)
        return
    session = sessions.pop(sid)
    if session is None:
        await plain(send, 404, error_body(None, INVALID_REQUEST, "Session not found"), cors)
        return
    session.close()
    await plain(send, 200, b"", cors)
