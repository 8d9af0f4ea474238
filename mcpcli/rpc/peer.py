"""The JSON-RPC engine: one symmetric peer over a transport's stream pair.

Both the client and the server run on `Peer`. It owns request ids and their
correlation, concurrent outgoing requests, timeouts that progress notifications
reset (up to a hard maximum), cancellation in both directions, and dispatch of
incoming requests and notifications to the handlers it was given, and requests a
relay passes through whole (`mcpcli.rpc.forwarding`).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup

from mcpcli.core import jsonrpc
from mcpcli.core.handshake import rpc_error_from
from mcpcli.core.jsonrpc import (
    Batch,
    ErrorObject,
    ErrorResponse,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)
from mcpcli.core.requests import (
    RequestClock,
    cancel_notice,
    cancels_on_giving_up,
    outgoing_request,
    timed_out_message,
)
from mcpcli.errors import (
    ConnectionClosed,
    McpCliError,
    ProtocolError,
    RequestTimeout,
    RPCError,
)
from mcpcli.jobs import JobSet
from mcpcli.rpc.clock import CLOCK as _CLOCK
from mcpcli.rpc.clock import user_interaction
from mcpcli.rpc.context import RequestContext
from mcpcli.rpc.faults import HandlerError, log_unexpected, report_default
from mcpcli.rpc.faults import internal as _internal
from mcpcli.rpc.forwarding import Forward, Passthrough, RelayHook
from mcpcli.rpc.waiting import Pending, ProgressHandler, SlowHandler, seconds
from mcpcli.transports import Envelope, RequestFailed, Streams
from mcpcli.transports.lines import FrameReader

__all__ = [
    "HandlerError", "Peer", "ProgressHandler", "RequestContext", "SlowHandler", "log_unexpected", "report_default",
    "rpc_error_from", "user_interaction",
]

log = logging.getLogger("mcpcli.rpc.peer")

RequestHandler = Callable[[Request, "RequestContext"], Awaitable[dict[str, Any]]]
#: The answer to a request that needs no work (None: it does): given at once.
QuickAnswer = Callable[[Request], "dict[str, Any] | None"]
NotificationHandler = Callable[[Notification, Envelope], Awaitable[None]]
Tracer = Callable[[str, Message | Batch], None]
ErrorReporter = Callable[[Exception], None]

#: How many incoming requests may run at once before new ones are refused.
MAX_CONCURRENT_INCOMING = 64


class Peer:
    """A JSON-RPC 2.0 peer. Use as an async context manager around a stream pair."""

    def __init__(
        self,
        streams: Streams,
        *,
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
        on_error: ErrorReporter | None = None,
        trace: Tracer | None = None,
        allow_batch: bool = False,
        default_timeout: float | None = None,
        max_timeout: float | None = None,
        on_slow: SlowHandler | None = None,
        slow_after: float = 3.0,
        quick: QuickAnswer | None = None,
        relay: RelayHook | None = None,
    ) -> None:
        """`on_slow`: see `mcpcli.rpc.waiting`. `relay`: offered each incoming request as it
        is read, to pass it through (`mcpcli.rpc.forwarding`)."""
        self._read, self._write = streams
        self._on_request = on_request
        #: Answers that need no work (ping), sent as the request is read: ahead of the
        #: work queued before them and past the concurrency cap, which must not starve them.
        self._quick = quick
        self._through = Passthrough(relay)
        self._on_notification = on_notification
        self._on_error = on_error
        self._trace = trace
        self.allow_batch = allow_batch
        self.default_timeout = default_timeout
        self.max_timeout = max_timeout
        self.on_slow = on_slow
        self.slow_after = slow_after
        self._ids = itertools.count(1)
        self._pending: dict[RequestId, Pending] = {}
        self._incoming: dict[RequestId, anyio.CancelScope] = {}
        self._closed: ConnectionClosed | None = None
        self._closed_event = anyio.Event()
        self._active = 0  # incoming requests and batches being handled
        self._idle: anyio.Event | None = None  # set when `_active` drops to 0
        self._tg: TaskGroup | None = None
        self._tg_cm: Any = None
        #: The tasks answering incoming requests (cheaper than the task group's).
        self._requests: JobSet | None = None
        #: The receive loop is handling a message (what arrives meanwhile waits for it).
        self._dispatching = False

    # -- lifecycle -------------------------------------------------------------

    async def __aenter__(self) -> Peer:
        self._tg_cm = anyio.create_task_group()
        self._tg = await self._tg_cm.__aenter__()
        self._requests = JobSet(self._tg, lambda exc: self._report(_internal("answering a request", exc)))
        if isinstance(self._read, FrameReader):
            self._read.take_at_once(self._take_at_once)
        self._tg.start_soon(self._receive_loop)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        assert self._requests is not None
        if isinstance(self._read, FrameReader):
            self._read.take_at_once(None)
        self._through.let_go()
        self._tg.cancel_scope.cancel()
        try:
            await self._requests.aclose()
            return bool(await self._tg_cm.__aexit__(exc_type, exc, tb))
        finally:
            await self._write.aclose()

    @property
    def closed(self) -> ConnectionClosed | None:
        """Why the connection ended, once it has."""
        return self._closed

    async def wait_closed(self) -> None:
        """Wait until the read stream has ended (the peer went away)."""
        await self._closed_event.wait()

    async def wait_idle(self) -> None:
        """Wait until no incoming request is being handled (e.g. to answer them all at EOF)."""
        while self._active:
            if self._idle is None:  # made only when someone waits: most requests end unwatched
                self._idle = anyio.Event()
            await self._idle.wait()

    def _busy(self) -> None:
        self._active += 1

    def _done(self) -> None:
        self._active -= 1
        if self._active == 0 and self._idle is not None:
            self._idle.set()
            self._idle = None

    @property
    def can_hand_over(self) -> bool:
        """Whether an incoming request's task may be handed over (`RequestContext.answer_now`)."""
        return self._requests is not None and self._requests.can_hand_over

    def answered_early(self, request_id: RequestId, scope: anyio.CancelScope | None, keep_in: JobSet | None) -> None:
        """An incoming request was answered before its handler returned: it is no longer
        this peer's to cancel or wait for, and with `keep_in` its task is handed over."""
        self._incoming.pop(request_id, None)
        self._done()  # what goes on is not this request any more (EOF need not wait for it)
        if keep_in is not None and scope is not None and self._requests is not None:
            self._requests.hand_over(scope, keep_in)

    # -- outgoing --------------------------------------------------------------

    def next_id(self) -> int:
        return next(self._ids)

    async def send(self, envelope: Envelope) -> None:
        # A reply may still go out after the peer's stream ended (a stdio server
        # answers what it read before end of input); anything else may not.
        reply = isinstance(envelope.message, (Response, ErrorResponse, Batch))
        if self._closed is not None and not reply:
            raise self._closed
        if self._trace is not None:
            self._trace("send", envelope.message)
        try:
            try:
                # At once when there is room: `send()` would first yield to the event
                # loop, one more loop turn per message.
                self._write.send_nowait(envelope)
            except anyio.WouldBlock:
                await self._write.send(envelope)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise self._closed or ConnectionClosed("connection closed") from None

    async def notify(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        related_request_id: RequestId | None = None,
    ) -> None:
        await self.send(Envelope(Notification(method, params), related_request_id))

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | bool | None = True,
        max_timeout: float | bool | None = True,
        on_progress: ProgressHandler | None = None,
        progress_token: bool = True,
        cancel_on_timeout: bool = True,
        headers: Mapping[str, str] | None = None,
        related_request_id: RequestId | None = None,
        request_id: RequestId | None = None,
    ) -> dict[str, Any]:
        """Send a request and wait for its result; raise `RPCError` on an error response.

        `timeout` (seconds; True means the session default, None means none) is
        reset by each progress notification but never beyond `max_timeout`. On
        timeout or cancellation the peer gets `notifications/cancelled`.
        `request_id` (taken from `next_id()`) is for a caller that must know the id
        before the answer comes (to tell which server messages the request caused).
        """
        tmo = self.default_timeout if timeout is True else timeout
        hard = self.max_timeout if max_timeout is True else max_timeout
        if request_id is None:
            request_id = self.next_id()
        request = outgoing_request(method, params, request_id, progress_token=progress_token)
        now = anyio.current_time()
        clock = RequestClock.start(now, seconds(tmo), seconds(hard))
        pending = Pending(method, clock, on_progress)
        self._pending[request_id] = pending
        paused_at_start = _CLOCK.paused_so_far()
        try:
            await self.send(Envelope(request, related_request_id, headers))
            if not await pending.wait(now, paused_at_start, self.on_slow, self.slow_after):
                if cancel_on_timeout and cancels_on_giving_up(method):
                    await self._cancel_remote(request_id, "timed out")
                raise RequestTimeout(timed_out_message(method, anyio.current_time() - now))
        except anyio.get_cancelled_exc_class():
            if cancels_on_giving_up(method) and not pending.done.is_set():
                with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                    await self._cancel_remote(request_id, "cancelled by the user")
            raise
        finally:
            self._pending.pop(request_id, None)
            if pending.slow_done is not None:
                pending.slow_done()
        if pending.error is not None:
            raise pending.error
        assert pending.result is not None
        return pending.result

    async def _cancel_remote(self, request_id: RequestId, reason: str) -> None:
        try:
            await self.send(Envelope(cancel_notice(request_id, reason)))
        except ConnectionClosed:
            pass

    # -- passed through whole (mcpcli.rpc.forwarding) ----------------------------

    def forward(self, request: Request, to: Forward) -> bool:
        """Send `request` (id from `next_id`) now, its answer, progress and failure going to
        `to`; False if it cannot go at once (no room, or closed): nothing was sent."""
        if self._closed is not None:
            return False
        if self._trace is not None:
            self._trace("send", request)
        try:
            self._write.send_nowait(Envelope(request))
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False
        self._through.forwarded[request.id] = to
        return True

    def unforward(self, request_id: RequestId, reason: str | None) -> None:
        """Forget a forwarded request (a late answer is dropped); `reason`: it is cancelled."""
        if self._through.forwarded.pop(request_id, None) is None or reason is None or self._closed is not None:
            return
        self._send_soon(Envelope(cancel_notice(request_id, reason)))

    def adopt_relayed(self, envelope: Envelope, request: Request, handler: RequestHandler) -> bool:
        """Handle a request a relay took as usual after all: in a task, by `handler`."""
        if self._through.relayed.pop(request.id, None) is None:
            return False  # cancelled meanwhile
        assert self._requests is not None
        scope = anyio.CancelScope()
        self._incoming[request.id] = scope
        self._requests.start(self._run_request, envelope, request, scope, handler, scope=scope)
        return True

    def answer_relayed(self, message: Response | ErrorResponse) -> None:
        """The answer to an incoming request a relay took (dropped if it was cancelled)."""
        if self._through.relayed.pop(message.id, None) is None:
            return
        self._done()
        self._reply_now(message)

    # -- incoming --------------------------------------------------------------

    def _take_at_once(self, item: Envelope | Exception) -> bool:
        """Handle `item` in the reader's callback when that needs no waiting: a response
        wakes its request, a request starts its task (or is answered, `quick`). False:
        the receive loop takes it, in order (anything else, or while the loop is busy
        with an earlier message)."""
        if self._dispatching or self._trace is not None or type(item) is not Envelope:
            return False
        message = item.message
        if isinstance(message, Request):
            self._start_request(item, message)
            return True
        if isinstance(message, (Response, ErrorResponse)):
            self._resolve(message)
            return True
        return False

    async def _receive_loop(self) -> None:
        closed: ConnectionClosed | None = None
        try:
            async for item in self._read:
                if isinstance(item, ConnectionClosed):
                    closed = item
                    continue
                if isinstance(item, RequestFailed):
                    self._fail_request(item)
                    continue
                if isinstance(item, Exception):
                    if not self._fail_pending(item):
                        self._report(item)
                    continue
                self._dispatching = True
                try:
                    await self._dispatch(item)
                finally:
                    self._dispatching = False
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        self._closed = closed or ConnectionClosed("the server closed the connection")
        for pending in list(self._pending.values()):
            if not pending.done.is_set():
                pending.error = self._closed
                pending.done.set()
        self._through.fail_all(self._closed)
        self._closed_event.set()

    def _fail_request(self, failed: RequestFailed) -> None:
        """The transport failed one request (an HTTP error status): raise its typed error."""
        pending = self._pending.get(failed.request_id)
        if pending is None and self._through.failed(failed.request_id, failed.error):
            return
        if pending is None or pending.done.is_set():
            log.debug("ignoring a failure of unknown request id %r: %s", failed.request_id, failed.error)
            return
        pending.error = failed.error
        pending.done.set()

    def _fail_pending(self, exc: Exception) -> bool:
        """End the request a broken answer was meant for (a `ProtocolError` naming it)."""
        if not isinstance(exc, ProtocolError) or exc.request_id is None:
            return False
        pending = self._pending.get(exc.request_id)
        if pending is None and self._through.failed(exc.request_id, exc):
            return True
        if pending is None or pending.done.is_set():
            return False
        pending.error = exc
        pending.done.set()
        return True

    def _report(self, exc: Exception) -> None:
        if self._on_error is not None:
            self._on_error(exc)
        else:
            report_default(exc)

    async def _dispatch(self, envelope: Envelope) -> None:
        message = envelope.message
        if self._trace is not None:
            self._trace("recv", message)
        if isinstance(message, Batch):
            assert self._tg is not None
            if not self.allow_batch:
                # Only 2025-03-26 allows batches; otherwise the whole array is invalid.
                await self._send_invalid_batch(envelope)
                return
            self._busy()
            self._tg.start_soon(self._handle_batch, envelope, message)
        elif isinstance(message, Request):
            self._start_request(envelope, message)
        elif isinstance(message, Notification):
            await self._handle_notification(envelope, message)
        else:
            self._resolve(message)

    def _resolve(self, message: Response | ErrorResponse) -> None:
        pending = self._pending.get(message.id) if message.id is not None else None
        if pending is None and self._through.forwarded and self._through.answered(message):
            return
        if pending is None or pending.done.is_set():
            if isinstance(message, ErrorResponse) and message.id is None:
                # An error the peer could not tie to a request (e.g. it could not parse ours).
                self._report(rpc_error_from(message.error))
            else:
                log.debug("ignoring a response for unknown request id %r", message.id)
            return
        if isinstance(message, Response):
            pending.result = message.result
        else:
            pending.error = rpc_error_from(message.error)
        pending.done.set()

    async def _handle_notification(self, envelope: Envelope, note: Notification) -> None:
        params = note.params or {}
        if note.method == "notifications/progress":
            pending = self._pending.get(params.get("progressToken"))  # type: ignore[arg-type]
            if pending is not None:
                pending.progressed(params)
                return
            if self._through.forwarded and self._through.progressed(params):
                return
        elif note.method == "notifications/cancelled":
            scope = self._incoming.get(params.get("requestId"))  # type: ignore[arg-type]
            if scope is not None:
                scope.cancel()
            elif self._through.relayed and self._through.cancel(params.get("requestId")):
                self._done()
            return
        if self._on_notification is not None:
            try:
                await self._on_notification(note, envelope)
            except Exception as exc:  # a handler bug must not kill the connection
                self._report(_internal(f"handling {note.method}", exc))

    def _start_request(self, envelope: Envelope, request: Request) -> None:
        assert self._tg is not None
        if request.id in self._incoming or request.id in self._through.relayed:
            self._reply_now(ErrorResponse(request.id, ErrorObject(jsonrpc.INVALID_REQUEST, "duplicate request id")))
            return
        if self._quick is not None:
            result = self._quick(request)
            if result is not None:
                self._reply_now(Response(request.id, result))
                return
        if len(self._incoming) + len(self._through.relayed) >= MAX_CONCURRENT_INCOMING:
            # Written at once too: a flood of refusals queued as tasks would delay the rest.
            self._reply_now(ErrorResponse(
                request.id, ErrorObject(jsonrpc.INTERNAL_ERROR, "too many concurrent requests")))
            return
        if self._through.take(envelope, request):
            self._busy()
            return
        assert self._requests is not None
        scope = anyio.CancelScope()
        self._incoming[request.id] = scope
        self._busy()
        self._requests.start(self._run_request, envelope, request, scope, scope=scope)

    def _reply_now(self, message: Response | ErrorResponse) -> None:
        """Send a reply from the reader."""
        self._send_soon(Envelope(message, message.id))

    def _send_soon(self, envelope: Envelope) -> None:
        """Send at once when the stream has room, else in a task (a gone peer: dropped)."""
        if self._trace is not None:
            self._trace("send", envelope.message)
        try:
            self._write.send_nowait(envelope)
        except anyio.WouldBlock:
            assert self._tg is not None
            self._tg.start_soon(self._send_later, envelope)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the peer is gone: nobody to tell

    async def _send_later(self, envelope: Envelope) -> None:
        try:
            await self._write.send(envelope)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    async def _send_invalid_batch(self, envelope: Envelope) -> None:
        error = ErrorResponse(
            None,
            ErrorObject(jsonrpc.INVALID_REQUEST, "JSON-RPC batches are not supported in this protocol version"),
        )
        try:
            await self.send(Envelope(error, None, context=envelope.context))
        except ConnectionClosed:
            pass

    async def _send_error(self, request_id: RequestId | None, code: int, message: str) -> None:
        try:
            await self.send(
                Envelope(ErrorResponse(request_id, ErrorObject(code, message)), request_id)
            )
        except ConnectionClosed:
            pass

    async def _answer(self, envelope: Envelope, request: Request, ctx: RequestContext | None = None,
                      handler: RequestHandler | None = None) -> Message:
        """Run the handler for one request: its response (a cancelled one raises)."""
        response: Message
        on_request = handler or self._on_request
        try:
            if on_request is None:
                raise RPCError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {request.method}")
            if ctx is None:
                ctx = RequestContext(self, request, envelope.context, envelope.related_request_id)
            result = await on_request(request, ctx)
            response = Response(request.id, result)
        except RPCError as exc:
            response = ErrorResponse(request.id, ErrorObject(exc.code, exc.rpc_message, exc.data))
        except McpCliError as exc:
            response = ErrorResponse(
                request.id, ErrorObject(jsonrpc.INTERNAL_ERROR, exc.message)
            )
        except Exception as exc:
            # The peer gets "Internal error"; whoever owns the session one line.
            self._report(_internal(f"answering {request.method}", exc))
            response = ErrorResponse(
                request.id, ErrorObject(jsonrpc.INTERNAL_ERROR, "Internal error")
            )
        return response

    async def _run_request(
        self, envelope: Envelope, request: Request, scope: anyio.CancelScope,
        handler: RequestHandler | None = None,
    ) -> None:
        """Answer one request; runs inside `scope`, which `notifications/cancelled` cancels."""
        ctx = RequestContext(self, request, envelope.context, envelope.related_request_id)
        ctx._scope = scope
        try:
            try:
                response = await self._answer(envelope, request, ctx, handler)
            finally:
                if not ctx.answered:
                    self._incoming.pop(request.id, None)
            if scope.cancel_called or ctx.answered:
                return  # a cancelled request gets no response; an answered one has had it
            try:
                await self.send(Envelope(response, request.id))
            except ConnectionClosed:
                pass
            except (ValueError, TypeError) as exc:  # a result JSON cannot carry (NaN, an object)
                self._report(_internal(f"answering {request.method}", exc))
                await self._send_error(request.id, jsonrpc.INTERNAL_ERROR, "Internal error")
        finally:
            if not ctx.answered:
                self._done()

    async def _handle_batch(self, envelope: Envelope, batch: Batch) -> None:
        try:
            await self._answer_batch(envelope, batch)
        finally:
            self._done()

    async def _answer_batch(self, envelope: Envelope, batch: Batch) -> None:
        responses: list[Message] = []

        async def one(request: Request) -> None:
            responses.append(await self._answer(envelope, request))

        async with anyio.create_task_group() as tg:
            for message in batch.messages:
                if isinstance(message, Request):
                    tg.start_soon(one, message)
                elif isinstance(message, Notification):
                    await self._handle_notification(envelope, message)
                else:
                    self._resolve(message)
        if responses:
            try:
                await self.send(Envelope(Batch(responses), None, context=envelope.context))
            except ConnectionClosed:
                pass
