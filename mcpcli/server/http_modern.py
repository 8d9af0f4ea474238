"""The stateless 2026-07-28 path of Streamable HTTP.

A POST without `Mcp-Session-Id` whose body carries `_meta` (or whose
`MCP-Protocol-Version` header does not name a legacy revision) is one request,
one response. Before it runs, the `MCP-Protocol-Version`, `Mcp-Method`,
`Mcp-Name` (the task id for tasks/*) and `Mcp-Param-*` headers (the last from
the tool's `x-mcp-header` schema annotations; values may be `=?base64?...?=`)
must match the body: 400 +
-32020 otherwise. `_meta` errors are 400 (-32602, -32021, -32022), unknown and
removed methods 404 + -32601. Closing the response stream cancels the request.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import anyio

from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    ErrorObject,
    ErrorResponse,
    Message,
    Notification,
    Request,
    Response,
)
from mcpcli.core.protocol import HEADER_MISMATCH, TOOLS_CALL
from mcpcli.core.wire import NAME_FIELDS, declared_params, decode_value, same_value
from mcpcli.errors import RPCError
from mcpcli.rpc.peer import log_unexpected
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
from mcpcli.server.http_exchange import Exchange, watch_disconnect
from mcpcli.server.meta import ModernError, RequestMeta
from mcpcli.server.tracing import handle, traced

__all__ = ["modern_post"]

log = logging.getLogger("mcpcli.server.http")

#: Methods the revision removed that the runtime still answers elsewhere (stdio: real
#: clients send `ping`) but refuses here, 404 + -32601, as the conformance suite's
#: `server-stateless` scenario requires (its check sep-2575-http-server-method-not-found-404-ping).
REFUSED_OVER_HTTP = frozenset({"ping"})

def _lookup(arguments: Any, path: tuple[str, ...]) -> Any:
    value = arguments
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _check_headers(headers: Headers, message: Request, meta: RequestMeta) -> str | None:
    """Why the Mcp-* headers do not match the body, or None when they do."""
    try:
        version = headers.only("mcp-protocol-version")
        if version != meta.version:
            return f"MCP-Protocol-Version header {version!r} does not match _meta {meta.version!r}"
        method = headers.only("mcp-method")
        if method is None:
            return "missing Mcp-Method header"
        if method != message.method:
            return f"Mcp-Method header {method!r} does not match the body method {message.method!r}"
        field = NAME_FIELDS.get(message.method)
        params = message.params or {}
        if field is not None and isinstance(params.get(field), str):
            raw = headers.only("mcp-name")
            if raw is None:
                return "missing Mcp-Name header"
            try:
                name = decode_value(raw)
            except ValueError as exc:
                return f"Mcp-Name header: {exc}"
            if name != params[field]:
                return f"Mcp-Name header {name!r} does not match the body {field} {params[field]!r}"
    except ValueError as exc:
        return str(exc)
    return None


async def _check_param_headers(context: HttpContext, headers: Headers, message: Request) -> str | None:
    """Why the Mcp-Param-* headers do not match the tool call's arguments, or None."""
    if message.method != TOOLS_CALL:
        return None
    params = message.params or {}
    name = params.get("name")
    tool = await context.server.tool(name) if isinstance(name, str) else None
    if tool is None:
        return None
    arguments = params.get("arguments")
    for header, path in declared_params(tool.get("inputSchema")):
        key = "mcp-param-" + header.lower()
        try:
            raw = headers.only(key)
        except ValueError as exc:
            return str(exc)
        value = _lookup(arguments, path)
        if value is None:
            if raw is not None:
                return f"Mcp-Param-{header} header sent but {'.'.join(path)} is absent"
            continue
        if raw is None:
            return f"missing Mcp-Param-{header} header"
        try:
            decoded = decode_value(raw)
        except ValueError as exc:
            return f"Mcp-Param-{header} header: {exc}"
        if not same_value(decoded, value):
            return f"Mcp-Param-{header} header does not match {'.'.join(path)}"
    return None


async def _validate(context: HttpContext, headers: Headers, message: Request) -> RequestMeta:
    """The request's `_meta`, once it and the headers check out (else `ModernError`)."""
    if headers.get("mcp-protocol-version") is None:
        raise ModernError(HEADER_MISMATCH, "Header mismatch: missing MCP-Protocol-Version header")
    meta = context.server.modern_meta(message.params)
    problem = _check_headers(headers, message, meta)
    if problem is not None:
        raise ModernError(HEADER_MISMATCH, f"Header mismatch: {problem}")
    context.server.check_version(meta.version)
    problem = await _check_param_headers(context, headers, message)
    if problem is not None:
        raise ModernError(HEADER_MISMATCH, f"Header mismatch: {problem}")
    return meta


async def modern_post(
    context: HttpContext, scope: Scope, receive: Receive, send: Send, headers: Headers,
    cors: list[tuple[bytes, bytes]], data: Any,
) -> None:
    """Serve one stateless request: validate, run it, answer as JSON or SSE."""
    try:
        message = jsonrpc.parse_obj(data)
    except jsonrpc.ParseError as exc:
        await plain(send, 400, error_body(exc.id, exc.code, f"Invalid request: {exc}"), cors)
        return
    if isinstance(message, Notification):
        await plain(send, 202, b"", cors)
        return
    if not isinstance(message, Request):
        await plain(
            send, 400, error_body(None, INVALID_REQUEST, "a 2026-07-28 client sends no responses"), cors
        )
        return
    rid = message.id
    try:
        if message.method in REFUSED_OVER_HTTP:
            raise ModernError(METHOD_NOT_FOUND, f"Method not found: {message.method}", status=404)
        meta = await _validate(context, headers, message)
    except ModernError as exc:
        body = error_body(rid, exc.code, exc.rpc_message, exc.data)
        await plain(send, exc.status, body, cors)
        return
    accept = headers.get("accept") or "*/*"
    sse_ok = "text/event-stream" in accept or "*/*" in accept
    exchange = Exchange(send, None, sse_ok=sse_ok, keepalive=context.options.keepalive, headers=cors)
    with anyio.CancelScope() as request:  # the client leaving cancels it (`_watch`)
        watch = watch_disconnect(scope, receive, functools.partial(_gone, exchange, request))
        try:
            status = 200
            response: Message
            # The server's drain is over: end the call, and say so.
            with anyio.CancelScope() as call, context.on_stop(call.cancel):
                try:
                    run = functools.partial(context.server.handle_modern, message, exchange, transport="http",
                                            principal=context.principal, meta=meta)
                    result = await (handle(message, run, transport="http", version=meta.version)
                                    if traced(message) else run())
                    response = Response(rid, result)
                except RPCError as exc:
                    status = exc.status if isinstance(exc, ModernError) else (
                        404 if exc.code == METHOD_NOT_FOUND else 200
                    )
                    response = ErrorResponse(rid, ErrorObject(exc.code, exc.rpc_message, exc.data))
                except Exception as exc:
                    log_unexpected(log, f"failed while answering {message.method}", exc)
                    response = ErrorResponse(rid, ErrorObject(INTERNAL_ERROR, "Internal error"))
            if call.cancel_called:
                status = 503
                response = ErrorResponse(rid, shutdown_error())
            await exchange.finish(response, status)
        finally:
            if watch is not None:
                watch.cancel()
            exchange.stop()


def _gone(exchange: Exchange, request: anyio.CancelScope) -> None:
    """The client closed its connection: cancel the request (2026: that is cancellation)."""
    if not exchange.done:
        log.debug("client disconnected; cancelling the request")
        request.cancel()
