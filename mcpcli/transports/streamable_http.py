"""Streamable HTTP: every message is a POST; answers come as JSON or as an SSE stream.

One transport serves both eras; which one a message belongs to is read off the
message itself:

* modern (2026-07-28) requests carry `_meta` with the protocol version. They
  get `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and the `Mcp-Param-*`
  headers the client computed (`request_headers`). There are no sessions and
  no GET stream; cancelling a request (`notifications/cancelled` from the
  session) closes its response stream instead of sending anything; a response
  stream that breaks before the response is re-issued under a new id (once;
  `subscriptions/listen` streams are re-opened a few times).
* legacy (2025-03-26 .. 2025-11-25) traffic: `Mcp-Session-Id` from the
  initialize response is sent on everything after it, `MCP-Protocol-Version`
  from 2025-06-18; server requests and notifications on a response stream are
  delivered to the session (tagged with the request whose POST opened that
  stream, `Envelope.related_request_id`) and answered by POST; a 404 on a known session
  re-initialises once; broken SSE streams resume with GET + `Last-Event-ID`
  after the server's `retry`; `open_standalone_stream()` opens the GET stream
  for server-initiated messages; the session is DELETEd on exit (405 is fine).

With `sse_fallback`, an `initialize` POST answered with 400, 404 or 405 (and
no modern JSON-RPC error in the body) switches the connection to the legacy
HTTP+SSE transport (`mcpcli.transports.sse`) without the session noticing.

Failures of one request travel to the session as a `RequestFailed` item
carrying the typed error (exit 4 for transport faults, 3 for auth); a failure
of the whole connection is a `ConnectionClosed` item.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream

from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import ErrorResponse, Notification, Request, RequestId, Response
from mcpcli.core.protocol import MAX_MESSAGE_BYTES, MODERN_ERROR_CODES, TOOLS_CALL
from mcpcli.core.wire import param_headers, standard_headers, valid_tools
from mcpcli.errors import AuthError, ConnectionClosed, McpCliError, ProtocolError, TransportError
from mcpcli.jobs import JobSet
from mcpcli.transports import Envelope, RequestFailed, Streams, Transport, TransportTraits
from mcpcli.transports.handover import Delivered, Outbox
from mcpcli.transports.http import HttpConnection, modern_version, snippet, status_text
from mcpcli.transports.http_answers import (
    DEFAULT_RETRY_MS,
    AnswerReader,
    error_response,
    initialize_result,
)
from mcpcli.transports.sse_events import SSEDecoder

if TYPE_CHECKING:
    from mcpcli.transports.http_io import ResponseStream as HttpStream
    from mcpcli.transports.sse import SseChannel

__all__ = ["StreamableHttpTransport"]

log = logging.getLogger("mcpcli.http")

ACCEPT_BOTH = "application/json, text/event-stream"
#: Bytes of an error body we read to show or to look for a JSON-RPC error.
ERROR_BODY_BYTES = 64 * 1024
#: Re-issues of a modern listen stream that broke (each after the retry delay).
MAX_LISTEN_REOPENS = 5
#: Bound on the DELETE that ends a session, and on notification POSTs.
DELETE_TIMEOUT = 2.0
NOTIFY_TIMEOUT = 30.0
#: Statuses of an `initialize` POST that mean "not Streamable HTTP; try HTTP+SSE".
SSE_FALLBACK_STATUSES = frozenset({400, 404, 405})

Deliver = Callable[[Envelope | Exception], Awaitable[None]]
#: The request id the GET stream's messages are read under: they belong to no request.


class _Active:
    """A request whose response stream is open."""

    __slots__ = ("modern", "scope")

    def __init__(self, scope: anyio.CancelScope, modern: bool) -> None:
        self.scope = scope
        self.modern = modern


class _Broken(Exception):
    """The response stream ended before the response: resumable (legacy) or re-issuable."""

    def __init__(self, decoder: SSEDecoder | None) -> None:
        super().__init__("stream ended early")
        self.decoder = decoder


class StreamableHttpTransport(Transport):
    """Streamable HTTP (both eras), optionally falling back to legacy HTTP+SSE."""

    name = "streamable-http"

    def __init__(
        self,
        connection: HttpConnection,
        *,
        sse_fallback: bool = True,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.conn = connection
        self.sse_fallback = sse_fallback
        self.max_message_bytes = max_message_bytes
        self.traits = TransportTraits(
            # A server always answers an HTTP request, so a silent era probe is not "legacy".
            probe_silence_is_legacy=False,
            # Key for the client's caches (discover and list results).
            cache_key=connection.url,
            mirrors_headers=True,
        )
        self.session_id: str | None = None
        #: The legacy protocol version the initialize handshake settled on.
        self.protocol_version: str | None = None
        self._init_request: Request | None = None
        self._reinitialized = False
        self._reinit_lock = anyio.Lock()
        self._sse: SseChannel | None = None
        self._active: dict[RequestId, _Active] = {}
        self._delivered: Delivered | None = None
        self._tg: TaskGroup | None = None
        #: The requests' tasks: plain event-loop tasks (a task group's cost more per call).
        self._jobs: JobSet | None = None
        self._standalone: anyio.Event | None = None
        self._writer_scope: anyio.CancelScope | None = None
        self._outbox: Outbox | None = None
        #: The GET stream is up (the server offers one).
        self._standalone_open = False
        self._reissues = 0
        self._answers = AnswerReader(
            connection.shown, self._deliver, max_message_bytes=max_message_bytes,
            modern_stream=self._modern_stream, note_result=self._note_result,
        )

    def _modern_stream(self, request_id: RequestId) -> bool:
        active = self._active.get(request_id)
        return active is not None and active.modern

    def describe(self) -> str:
        return self.conn.shown

    # -- hooks the client uses ---------------------------------------------------

    def request_headers(
        self, method: str, params: Mapping[str, Any], *, tool: Mapping[str, Any] | None = None
    ) -> dict[str, str]:
        """`Mcp-Param-*` for a modern `tools/call`, from the tool's `x-mcp-header`s."""
        if method != TOOLS_CALL or tool is None:
            return {}
        arguments = params.get("arguments")
        return param_headers(tool.get("inputSchema"), arguments if isinstance(arguments, dict) else None)

    def filter_tools(self, tools: list[Any]) -> tuple[list[Any], list[tuple[str, str]]]:
        """Tools with valid `x-mcp-header` annotations, and (name, reason) for the dropped."""
        return valid_tools(tools)

    async def open_standalone_stream(self) -> None:
        """Open the GET stream for server-initiated messages (legacy era; idempotent).

        It opens by itself after `notifications/initialized` (servers send
        elicitation and sampling requests there); this waits until it is up.
        """
        self._start_standalone()
        if self._standalone is not None:
            with anyio.move_on_after(self.conn.connect_timeout):
                await self._standalone.wait()

    def _start_standalone(self) -> None:
        if self._sse is not None or self._tg is None or self.protocol_version is None:
            return
        if self._standalone is None:
            self._standalone = anyio.Event()
            self._tg.start_soon(self._standalone_stream, self._standalone)

    # -- connection --------------------------------------------------------------

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Streams]:
        delivered = self._delivered = Delivered()
        write_send, write_recv = anyio.create_memory_object_stream[Envelope](64)
        outbox = self._outbox = Outbox(write_send, self._start_request)
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                jobs = self._jobs = JobSet(
                    tg, lambda exc: log.debug("a request's task failed", exc_info=exc))
                tg.start_soon(self._writer, write_recv)
                try:
                    yield delivered, outbox
                finally:
                    with anyio.CancelScope(shield=True):
                        await outbox.aclose()
                        # Requests sent while the user pressed Ctrl-C (unsubscribe,
                        # notifications/cancelled) had their chance; stop the rest.
                        for active in list(self._active.values()):
                            active.scope.cancel()
                        await self._end_session()
                        await jobs.aclose()
                    if self._writer_scope is not None:
                        self._writer_scope.cancel()
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                self._tg = None
                delivered.end()
                await delivered.aclose()
                await write_recv.aclose()
                if self._sse is not None:
                    await self._sse.aclose()
                await self.conn.aclose()

    async def _deliver(self, item: Envelope | Exception) -> None:
        delivered = self._delivered
        if delivered is not None:
            await delivered.put(item)

    async def _fail(self, request_id: RequestId, exc: McpCliError) -> None:
        """Make one request fail with a typed error (the session raises it)."""
        await self._deliver(RequestFailed(request_id, exc))

    async def _end_session(self) -> None:
        if self.session_id is None or self._sse is not None:
            return
        headers = self._legacy_headers()
        try:
            with anyio.move_on_after(DELETE_TIMEOUT):
                async with self.conn.send("DELETE", headers=headers, timeout=DELETE_TIMEOUT):
                    pass  # any status will do: 405 means the server keeps sessions itself
        except (McpCliError, OSError) as exc:
            log.debug("DELETE of the session failed: %s", exc)

    # -- writing -----------------------------------------------------------------

    async def _writer(self, inbox: MemoryObjectReceiveStream[Envelope]) -> None:
        """Send what the session writes. Shielded, like each request's task: a
        message queued while the command is being cancelled (Ctrl-C) still goes
        out; the connection's exit stops them explicitly."""
        with anyio.CancelScope(shield=True) as scope:
            self._writer_scope = scope
            await self._write_all(inbox)

    async def _write_all(self, inbox: MemoryObjectReceiveStream[Envelope]) -> None:
        async for envelope in inbox:
            try:
                await self._write_one(envelope)
            finally:
                if self._outbox is not None:
                    self._outbox.queued -= 1

    async def _write_one(self, envelope: Envelope) -> None:
        message = envelope.message
        if isinstance(message, Request):
            self._start_request(envelope, message)
        elif isinstance(message, Notification) and message.method == "notifications/cancelled":
            await self._cancel(envelope, message)
        elif isinstance(message, (Notification, Response, ErrorResponse)):
            if self._sse is not None:
                await self._post_via_sse(envelope)
            elif isinstance(message, Notification):
                # In order: `initialized` must land before the next request.
                with anyio.move_on_after(NOTIFY_TIMEOUT):
                    await self._post_one_way(envelope)
            else:
                assert self._tg is not None
                self._tg.start_soon(self._post_one_way, envelope)
        else:
            await self._deliver(ProtocolError("batches are not sent over HTTP"))

    def _start_request(self, envelope: Envelope, request: Request) -> bool:
        """Start the task that sends `request` (False: the connection is ending)."""
        jobs = self._jobs
        if self._tg is None or jobs is None:
            return False
        scope = anyio.CancelScope(shield=True)  # the connection's exit cancels it
        modern = modern_version(request.params) is not None
        self._active[request.id] = _Active(scope, modern)
        jobs.start(self._run_request, envelope, request, scope=scope)
        return True

    async def _run_request(self, envelope: Envelope, request: Request) -> None:
        try:
            if self._sse is not None:
                await self._sse.post(request)
            else:
                await self._exchange(request, envelope.headers)
        except McpCliError as exc:
            await self._fail(request.id, exc)
        except Exception as exc:
            # A bug: the request fails naming it (a task group would have torn the
            # connection down), and the JobSet logs its traceback.
            await self._fail(request.id, TransportError(
                f"{self.conn.shown}: sending {request.method} failed: {type(exc).__name__}: {exc}"))
            raise
        finally:
            self._active.pop(request.id, None)

    async def _cancel(self, envelope: Envelope, note: Notification) -> None:
        params = note.params or {}
        target = params.get("requestId")
        active = self._active.get(target) if isinstance(target, (str, int)) else None
        if active is not None and active.modern:
            # 2026-07-28: closing the response stream IS the cancellation.
            active.scope.cancel()
            return
        if self._sse is not None:
            await self._post_via_sse(envelope)
        else:
            with anyio.move_on_after(NOTIFY_TIMEOUT):
                await self._post_one_way(envelope)
        if active is not None:
            active.scope.cancel()

    async def _post_via_sse(self, envelope: Envelope) -> None:
        assert self._sse is not None
        try:
            await self._sse.post(envelope.message)  # type: ignore[arg-type]
        except McpCliError as exc:
            await self._deliver(exc)

    async def _post_one_way(self, envelope: Envelope) -> None:
        """POST a notification or a response (legacy era): expect 202."""
        message = envelope.message
        assert isinstance(message, (Notification, Response, ErrorResponse))
        version = modern_version(message.params) if isinstance(message, Notification) else None
        headers = self._post_headers()
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        else:
            headers.update(self._legacy_headers())
        body = jsonrpc.encode(message)
        try:
            async with self.conn.send("POST", headers=headers, body=body) as response:
                if 200 <= response.status < 300:
                    if isinstance(message, Notification) and message.method == "notifications/initialized":
                        self._start_standalone()
                    return
                if response.status in (401, 403):
                    raise AuthError(f"{self.conn.shown}: {status_text(response.status)}")
                raw = await response.peek()
                what = "notification" if isinstance(message, Notification) else "response"
                raise self.conn.http_error(response, raw, context=f"to our {what}")
        except McpCliError as exc:
            await self._deliver(exc)

    # -- headers -----------------------------------------------------------------

    @staticmethod
    def _post_headers() -> dict[str, str]:
        return {"Accept": ACCEPT_BOTH, "Content-Type": "application/json"}

    def _legacy_headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        version = self.protocol_version
        if version is not None and version >= "2025-06-18":
            headers["MCP-Protocol-Version"] = version
        return headers

    def _request_headers(self, request: Request, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = self._post_headers()
        version = modern_version(request.params)
        if version is not None:
            headers["MCP-Protocol-Version"] = version
            headers.update(standard_headers(request.method, request.params))
            if extra:
                headers.update(extra)
        elif request.method != "initialize":
            headers.update(self._legacy_headers())
            if extra:
                headers.update(extra)
        return headers

    # -- one request -------------------------------------------------------------

    async def _exchange(self, request: Request, extra: Mapping[str, str] | None) -> None:
        """POST a request and deliver everything its answer carries, up to the response."""
        modern = modern_version(request.params) is not None
        if request.method == "initialize":
            self._init_request = request
        sent = request
        reissues = 0
        reopens = 0
        session_retry = False
        while True:
            headers = self._request_headers(sent, extra)
            try:
                await self._post_request(sent, request.id, headers)
                return
            except _SessionExpired:
                if session_retry or modern:
                    raise TransportError(
                        f"{self.conn.shown}: the server ended the session (HTTP 404) and "
                        "starting a new one did not help",
                        status=404,
                    ) from None
                session_retry = True
                await self._reinitialize()
            except _FallBack as fallback:
                await self._fall_back_to_sse(request, fallback.reason)
                return
            except _Broken as broken:
                if not modern:
                    if broken.decoder is not None and broken.decoder.last_event_id is not None:
                        await self._resume(request, broken.decoder)
                        return
                    raise ProtocolError(
                        f"{self.conn.shown}: the response stream for {request.method} ended "
                        "before the response (truncated SSE stream)",
                        status=200,
                    ) from None
                # 2026-07-28: no resumption; a lost request is re-issued under a new id.
                listen = request.method == "subscriptions/listen"
                if listen:
                    reopens += 1
                    if reopens > MAX_LISTEN_REOPENS:
                        raise ConnectionClosed(
                            f"{self.conn.shown}: the subscription stream keeps breaking"
                        ) from None
                    retry = broken.decoder.retry if broken.decoder and broken.decoder.retry else None
                    await anyio.sleep((retry or DEFAULT_RETRY_MS) / 1000)
                else:
                    reissues += 1
                    if reissues > 1:
                        raise ProtocolError(
                            f"{self.conn.shown}: the response stream for {request.method} ended "
                            "before the response, twice (truncated SSE stream)",
                            status=200,
                        ) from None
                self._reissues += 1
                sent = Request(request.method, request.params, f"mcpcli-reissue-{self._reissues}-{request.id}")

    async def _post_request(self, sent: Request, original_id: RequestId, headers: dict[str, str]) -> None:
        body = jsonrpc.encode(sent)
        async with self.conn.send("POST", headers=headers, body=body) as response:
            status = response.status
            if status in (401, 403):
                raise AuthError(f"{self.conn.shown}: {status_text(status)}")
            if status == 404 and self.session_id is not None and sent.method != "initialize" \
                    and modern_version(sent.params) is None:
                raise _SessionExpired()
            if not 200 <= status < 300:
                raw = await self._read_capped(response, ERROR_BODY_BYTES, lenient=True)
                error = error_response(raw)
                if (
                    sent.method == "initialize"
                    and self.sse_fallback
                    and status in SSE_FALLBACK_STATUSES
                    and (error is None or error.error.code not in MODERN_ERROR_CODES)
                ):
                    raise _FallBack(self.conn.http_error(response, raw).message)
                if error is not None and status < 500:
                    # A JSON-RPC error for this request (modern servers use 400/404 with one).
                    await self._answers.message(
                        ErrorResponse(original_id, error.error), sent.id, original_id
                    )
                    return
                raise self.conn.http_error(response, raw)
            if sent.method == "initialize":
                session = response.header("mcp-session-id")
                if session is not None:
                    if not session or any(not 0x21 <= ord(c) <= 0x7E for c in session):
                        raise ProtocolError(
                            f"{self.conn.shown}: the server sent an invalid Mcp-Session-Id",
                            status=status,
                        )
                    self.session_id = session
            kind = response.content_type
            if kind == "text/event-stream":
                decoder = SSEDecoder(max_event_bytes=self.max_message_bytes)
                if not await self._answers.sse(response, decoder, sent.id, original_id):
                    raise _Broken(decoder)
                return
            if kind == "application/json" or kind.endswith("+json"):
                if sent.method == "subscriptions/listen":
                    if not await self._answers.ndjson(response, sent.id, original_id):
                        raise _Broken(None)
                    return
                raw = await self._read_capped(response, self.max_message_bytes)
                if not raw.strip():
                    raise self.conn.http_error(response, raw, context="with an empty JSON body")
                if not await self._answers.json_body(raw, sent.id, original_id, response):
                    raise ProtocolError(
                        f"{self.conn.shown}: the JSON answer to {sent.method} holds no response "
                        "to it",
                        status=status,
                    )
                return
            raw = await response.peek()
            if status == 202 and not raw and modern_version(sent.params) is None:
                # Some legacy servers accept a request and answer it on the GET stream.
                await self.open_standalone_stream()
                if self._standalone_open:
                    log.debug("%s accepted (202); waiting for its response on the GET stream", sent.method)
                    return
            if status == 202 or not raw:
                raise ProtocolError(
                    f"{self.conn.shown}: {status_text(status)} without a response to "
                    f"{sent.method}",
                    status=status,
                )
            raise ProtocolError(
                f"{self.conn.shown}: {status_text(status)} with Content-Type "
                f"{kind or 'none'} is not an MCP response (is this an MCP endpoint?): "
                f"{snippet(raw)}",
                status=status,
            )

    async def _read_capped(self, response: HttpStream, limit: int, *, lenient: bool = False) -> bytes:
        if lenient:
            body = bytearray()
            try:
                async for chunk in response.chunks():
                    body += chunk
                    if len(body) >= limit:
                        break
            except TransportError:
                pass
            return bytes(body[:limit])
        return await response.read(limit)

    def _note_result(self, request_id: RequestId, result: dict[str, Any]) -> None:
        init = self._init_request
        if init is not None and init.id == request_id:
            version = result.get("protocolVersion")
            if isinstance(version, str):
                self.protocol_version = version

    # -- legacy recovery ---------------------------------------------------------

    async def _resume(self, request: Request, decoder: SSEDecoder) -> None:
        """Resume a broken legacy stream with GET + Last-Event-ID until the response arrives."""
        await self._answers.resume(self.conn, request, decoder, self._legacy_headers)

    async def _standalone_stream(self, ready: anyio.Event) -> None:
        """The legacy GET stream: server requests and notifications outside any request."""

        def opened(is_open: bool) -> None:
            self._standalone_open = is_open

        await self._answers.standalone(self.conn, self._legacy_headers, opened, ready)

    async def _reinitialize(self) -> None:
        """The server forgot our session (404): start a new one, once per connection."""
        async with self._reinit_lock:
            if self._reinitialized:
                return
            self._reinitialized = True
            init = self._init_request
            if init is None:
                raise TransportError(f"{self.conn.shown}: the server ended the session (HTTP 404)")
            self.session_id = None
            replay = Request("initialize", init.params, "mcpcli-reinitialize")
            headers = self._post_headers()
            async with self.conn.send("POST", headers=headers, body=jsonrpc.encode(replay)) as response:
                if not 200 <= response.status < 300:
                    raw = await response.peek()
                    raise self.conn.http_error(response, raw, context="when starting a new session")
                session = response.header("mcp-session-id")
                self.session_id = session or None
                result = await initialize_result(response, self.max_message_bytes)
            if result is None:
                raise ProtocolError(f"{self.conn.shown}: no answer to a new initialize")
            version = result.get("protocolVersion")
            if isinstance(version, str):
                self.protocol_version = version
            await self._post_one_way(Envelope(Notification("notifications/initialized")))
            log.debug("started a new session after HTTP 404")

    async def _fall_back_to_sse(self, request: Request, reason: str) -> None:
        from mcpcli.transports.sse import SseChannel

        if self._sse is None:
            assert self._tg is not None
            log.debug("initialize failed over Streamable HTTP (%s); trying HTTP+SSE", reason)
            self._sse = await SseChannel.fallback(self.conn, self._deliver, self._tg, reason,
                                                  max_message_bytes=self.max_message_bytes)
            self.name = "sse"  # what `mcp info` shows from now on
        await self._sse.post(request)

class _SessionExpired(Exception):
    pass


class _FallBack(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
