"""The 2024-11-05 HTTP+SSE transport: `GET /sse` opens the session's stream,
whose first event names the `POST /messages?sessionId=` endpoint; every answer
and notification goes out on that one stream. Closing it ends the session."""

from __future__ import annotations

import time
from urllib.parse import parse_qs

import anyio

from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import INVALID_REQUEST, PARSE_ERROR, Batch, Request
from mcpcli.server.http_asgi import (
    Headers,
    Receive,
    Scope,
    Send,
    error_body,
    is_json,
    plain,
)
from mcpcli.server.http_stateful import StatefulConnections, stream
from mcpcli.server.stdio import MAX_BATCH
from mcpcli.transports import Envelope

__all__ = ["sse_message", "sse_open"]


async def sse_open(
    sessions: StatefulConnections, scope: Scope, receive: Receive, send: Send, cors: list[tuple[bytes, bytes]]
) -> None:
    """Start a session and stream to it until the client leaves."""
    session = sessions.open("sse", sse_transport=True)
    if session is None:
        await plain(send, 503, error_body(None, INVALID_REQUEST, "too many sessions"), cors)
        return
    endpoint = f"{scope.get('root_path', '')}{sessions.context.options.messages_path}?sessionId={session.id}"
    await stream(sessions.context, receive, send, cors, session, endpoint=endpoint)


async def sse_message(
    sessions: StatefulConnections, scope: Scope, receive: Receive, send: Send, headers: Headers,
    cors: list[tuple[bytes, bytes]],
) -> None:
    """A message for a session: 202 at once, the answer goes out on the stream."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    sid = (query.get("sessionId") or query.get("session_id") or [""])[0]
    session = sessions.get(sid)
    if session is None or not session.sse_transport:
        await plain(send, 404, error_body(None, INVALID_REQUEST, "Session not found"), cors)
        return
    if not is_json(headers.get("content-type")):
        await plain(send, 415, error_body(
            None, INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json"
        ), cors)
        return
    body = await sessions.context.receive_body(receive, send, headers, cors)
    if body is None:
        return
    try:
        parsed = jsonrpc.parse(body, allow_batch=True)
    except jsonrpc.ParseError as exc:
        await plain(send, 400, error_body(exc.id, exc.code, f"Invalid request: {exc}"), cors)
        return
    except RecursionError:
        await plain(send, 400, error_body(None, PARSE_ERROR, "Parse error: nested too deeply"), cors)
        return
    if isinstance(parsed, Batch) and len(parsed.messages) > MAX_BATCH:
        await plain(send, 400, error_body(None, INVALID_REQUEST, "Invalid request: batch too large"), cors)
        return
    session.last_seen = time.monotonic()
    for message in parsed.messages if isinstance(parsed, Batch) else [parsed]:
        if isinstance(message, Request):
            session.sse_pending.add(message.id)
    try:
        session.inbox.put(Envelope(parsed))
    except anyio.ClosedResourceError:
        await plain(send, 404, error_body(None, INVALID_REQUEST, "Session not found"), cors)
        return
    await plain(send, 202, b"Accepted", cors, content_type=b"text/plain")
