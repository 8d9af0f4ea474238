"""What a Streamable HTTP request's answer holds, read and delivered message by message.

A POST is answered with one JSON body (a message, or a batch), an SSE stream, or (some
servers' listen streams) lines of JSON. Each message goes to the session as it arrives: the
request's response under the id the client knows (a replayed request was sent under another),
a server's request or notification tied to the request whose stream carried it, a message
that is not JSON-RPC as a warning, or as the request's failure when it names that request.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import anyio

from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import ErrorResponse, Message, Notification, Request, RequestId, Response
from mcpcli.core.protocol import SUBSCRIPTION_ID_KEY
from mcpcli.errors import AuthError, MessageTooLarge, ProtocolError, TransportError
from mcpcli.transports import Envelope
from mcpcli.transports.http import HttpConnection, snippet, status_text
from mcpcli.transports.sse_events import INVALID_UTF8, SSEDecoder

if TYPE_CHECKING:
    from mcpcli.transports.http_io import ResponseStream as HttpStream

__all__ = ["STANDALONE", "AnswerReader", "chunks_or_break", "error_response", "initialize_result", "related"]

log = logging.getLogger("mcpcli.transports")

#: How long to wait before resuming a broken stream when the server set no `retry`.
DEFAULT_RETRY_MS = 1000
#: Resumptions in a row that bring nothing new before a stream is given up.
MAX_RESUMES = 5
#: The pseudo request id of what arrives on the GET stream (no request's).
STANDALONE = "\x00standalone"


def related(original_id: RequestId) -> RequestId | None:
    """The request a server message read off a response stream belongs to (its
    `Envelope.related_request_id`): the one whose POST opened that stream; None on the
    GET stream, which belongs to no request."""
    return None if original_id == STANDALONE else original_id



async def chunks_or_break(response: HttpStream) -> AsyncGenerator[bytes, None]:
    """Body chunks; a connection that breaks mid-stream just ends the iteration.

    A reader that stops early closes it (`aclosing`), which closes the body's own
    iterator: an async generator left to the garbage collector costs the event loop a
    thread-safe wake-up and a task to finalize it, on every relayed call."""
    try:
        async with aclosing(response.chunks()) as chunks:
            async for chunk in chunks:
                yield chunk
    except TransportError as exc:
        log.debug("stream broke: %s", exc)



def error_response(raw: bytes) -> ErrorResponse | None:
    """The JSON-RPC error in an HTTP error body, if there is one."""
    try:
        message = jsonrpc.parse(raw)
    except jsonrpc.ParseError:
        return None
    return message if isinstance(message, ErrorResponse) else None


async def initialize_result(response: HttpStream, limit: int) -> dict[str, Any] | None:
    """The result of a replayed initialize (JSON or SSE answer), read without delivering."""
    found: dict[str, Any] | None = None

    def take(text: str | bytes) -> None:
        nonlocal found
        try:
            message = jsonrpc.parse(text)
        except jsonrpc.ParseError:
            return
        if isinstance(message, Response) and message.id == "mcpcli-reinitialize":
            found = message.result

    if response.content_type == "text/event-stream":
        decoder = SSEDecoder(max_event_bytes=limit)
        async with aclosing(chunks_or_break(response)) as chunks:
            async for chunk in chunks:
                for event in decoder.feed(chunk):
                    if event.data.strip():
                        take(event.data)
                if found is not None:
                    break
    else:
        take(await response.read(limit))
    return found


class AnswerReader:
    """Reads answers for one transport and delivers what they hold."""

    def __init__(
        self,
        shown: str,
        deliver: Callable[[Envelope | Exception], Awaitable[None]],
        *,
        max_message_bytes: int,
        modern_stream: Callable[[RequestId], bool],
        note_result: Callable[[RequestId, dict[str, Any]], None],
    ) -> None:
        self.shown = shown
        self.deliver = deliver
        self.max_message_bytes = max_message_bytes
        #: Whether a request's stream is a 2026-07-28 one (no server requests on it).
        self.modern_stream = modern_stream
        self.note_result = note_result

    async def message(
        self, message: Message, sent_id: RequestId, original_id: RequestId, *, replayed: bool = False
    ) -> bool:
        """Deliver one message of a request's answer; True when it was that request's response."""
        if isinstance(message, (Response, ErrorResponse)):
            if message.id is None and isinstance(message, ErrorResponse):
                message = ErrorResponse(original_id, message.error)
            elif message.id == sent_id and sent_id != original_id:
                message = (
                    Response(original_id, message.result)
                    if isinstance(message, Response)
                    else ErrorResponse(original_id, message.error)
                )
            if message.id == original_id and isinstance(message, Response):
                self.note_result(original_id, message.result)
            await self.deliver(Envelope(message))
            return message.id == original_id
        if isinstance(message, Request):
            if self.modern_stream(original_id):
                await self.deliver(
                    ProtocolError(
                        f"the server sent a {message.method} request on a 2026-07-28 stream "
                        "(not allowed; ignored)"
                    )
                )
                return False
            await self.deliver(Envelope(message, related(original_id)))
            return False
        if isinstance(message, Notification) and sent_id != original_id:
            params = message.params or {}
            meta = params.get("_meta")
            if isinstance(meta, dict) and meta.get(SUBSCRIPTION_ID_KEY) == sent_id:
                if message.method == "notifications/subscriptions/acknowledged":
                    return False  # the client already has the first acknowledgement
                meta = {**meta, SUBSCRIPTION_ID_KEY: original_id}
                message = Notification(message.method, {**params, "_meta": meta})
        await self.deliver(Envelope(message, related(original_id)))
        return False

    async def parse(self, text: str | bytes, sent_id: RequestId, original_id: RequestId) -> bool:
        try:
            message = jsonrpc.parse(text)
        except jsonrpc.ParseError as exc:
            shown = text[:200] if isinstance(text, str) else text[:200].decode("utf-8", "replace")
            answered = jsonrpc.recover_response_id(text)
            error = ProtocolError(
                f"{self.shown}: the server sent a message that is not JSON-RPC "
                f"({exc}): {snippet(shown.encode())}",
                request_id=answered,
            )
            if answered is not None and answered in (sent_id, original_id):
                raise error from None  # the answer to this request is broken: fail it now
            await self.deliver(error)
            return False
        assert not isinstance(message, jsonrpc.Batch)
        return await self.message(message, sent_id, original_id)

    async def json_body(
        self, raw: bytes, sent_id: RequestId, original_id: RequestId, response: HttpStream
    ) -> bool:
        try:
            obj = json.loads(raw)
        except RecursionError:
            raise ProtocolError(
                f"{self.shown}: the server answered with JSON nested too deeply: {snippet(raw)}",
                status=response.status,
            ) from None
        except (ValueError, UnicodeDecodeError):
            obj = None
            lines = [line for line in raw.splitlines() if line.strip()]
            if len(lines) > 1:
                done = False
                for line in lines:
                    done = await self.parse(line, sent_id, original_id) or done
                return done
            raise ProtocolError(
                f"{self.shown}: the server answered with invalid JSON: {snippet(raw)}",
                status=response.status,
            ) from None
        if isinstance(obj, list):
            done = False
            for item in obj:
                done = await self.obj(item, sent_id, original_id) or done
            return done
        return await self.obj(obj, sent_id, original_id)

    async def obj(self, obj: Any, sent_id: RequestId, original_id: RequestId) -> bool:
        try:
            message = jsonrpc.parse_obj(obj)
        except jsonrpc.ParseError as exc:
            error = ProtocolError(f"{self.shown}: not a JSON-RPC message ({exc})")
            answered = obj.get("id") if isinstance(obj, dict) and ("result" in obj or "error" in obj) else None
            if answered is not None and answered in (sent_id, original_id):
                raise error from None  # the answer to this request is broken: fail it now
            await self.deliver(error)
            return False
        return await self.message(message, sent_id, original_id)

    async def sse(
        self, response: HttpStream, decoder: SSEDecoder, sent_id: RequestId, original_id: RequestId
    ) -> bool:
        """Deliver the messages of an SSE stream; True once the response has arrived."""
        # `chunks_or_break` inline (one async generator less per relayed call): a stream
        # that breaks just ends; the body's iterator is closed here, not by the collector.
        chunks = response.chunks()
        try:
            while True:
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    return False
                except TransportError as exc:
                    log.debug("stream broke: %s", exc)
                    return False
                events = decoder.feed(chunk)
                if decoder.take_invalid_utf8():
                    await self.deliver(ProtocolError(INVALID_UTF8.format(self.shown)))
                for event in events:
                    if event.event != "message" or not event.data.strip():
                        continue
                    if await self.parse(event.data, sent_id, original_id):
                        return True
        finally:
            await chunks.aclose()

    async def ndjson(self, response: HttpStream, sent_id: RequestId, original_id: RequestId) -> bool:
        """A JSON body read line by line (listen streams some servers send that way)."""
        buffer = bytearray()
        async with aclosing(chunks_or_break(response)) as chunks:
            async for chunk in chunks:
                buffer += chunk
                while (newline := buffer.find(b"\n")) >= 0:
                    line = bytes(buffer[:newline]).strip()
                    del buffer[: newline + 1]
                    if line and await self.parse(line, sent_id, original_id):
                        return True
                if len(buffer) > self.max_message_bytes:
                    raise MessageTooLarge(
                        f"{self.shown}: the server sent a message larger than "
                        f"{self.max_message_bytes} bytes"
                    )
        if buffer.strip():
            return await self.parse(bytes(buffer), sent_id, original_id)
        return False

    # -- the GET streams ---------------------------------------------------------

    async def resume(self, conn: HttpConnection, request: Request, decoder: SSEDecoder,
                     headers_of: Callable[[], dict[str, str]]) -> None:
        """Resume a broken legacy stream with GET + Last-Event-ID until the response arrives."""
        fruitless = 0
        while True:
            await anyio.sleep((decoder.retry if decoder.retry is not None else DEFAULT_RETRY_MS) / 1000)
            before = decoder.last_event_id
            headers = {"Accept": "text/event-stream", **headers_of()}
            if decoder.last_event_id is not None:
                headers["Last-Event-ID"] = decoder.last_event_id
            async with conn.send("GET", headers=headers) as response:
                if response.status in (401, 403):
                    raise AuthError(f"{conn.shown}: {status_text(response.status)}")
                if response.status != 200 or response.content_type != "text/event-stream":
                    raw = await response.peek()
                    raise conn.http_error(
                        response, raw, context=f"when resuming the stream of {request.method}"
                    )
                if await self.sse(response, decoder, request.id, request.id):
                    return
            fruitless = 0 if decoder.last_event_id != before else fruitless + 1
            if fruitless >= MAX_RESUMES:
                raise ProtocolError(
                    f"{conn.shown}: the stream of {request.method} kept ending before the "
                    "response",
                    status=200,
                )

    async def standalone(self, conn: HttpConnection, headers_of: Callable[[], dict[str, str]],
                         opened: Callable[[bool], None], ready: anyio.Event) -> None:
        """The legacy GET stream: server requests and notifications outside any request."""
        decoder = SSEDecoder(max_event_bytes=self.max_message_bytes)
        failures = 0
        try:
            while failures < MAX_RESUMES:
                headers = {"Accept": "text/event-stream", **headers_of()}
                if decoder.last_event_id is not None:
                    headers["Last-Event-ID"] = decoder.last_event_id
                try:
                    async with conn.send("GET", headers=headers) as response:
                        if response.status == 405:
                            log.debug("the server offers no GET stream (405)")
                            return
                        if response.status != 200 or response.content_type != "text/event-stream":
                            # Optional in the protocol: note it, do not bother the user.
                            raw = await response.peek()
                            log.debug("%s", conn.http_error(response, raw, context="for the GET stream"))
                            return
                        opened(True)
                        ready.set()
                        before = decoder.last_event_id
                        await self.sse(response, decoder, STANDALONE, STANDALONE)
                        failures = 0 if decoder.last_event_id != before else failures + 1
                except TransportError as exc:
                    failures += 1
                    log.debug("GET stream failed: %s", exc)
                retry = decoder.retry if decoder.retry is not None else DEFAULT_RETRY_MS
                await anyio.sleep(retry / 1000)
        finally:
            opened(False)
            ready.set()
