"""The trace context of each request a server handles.

A request whose `_meta` carries a W3C `traceparent` continues that trace: while it is
handled, `tracecontext.current` holds the context that whatever it causes carries on
(a script's `TRACEPARENT`, a gateway's upstream request). With spans on
(`mcpcli.spans`) the request is a SERVER span, a child of the one received, and the
context is that span's; without, it is the context received, unchanged (so every
parent named downstream is a span someone recorded). A malformed `traceparent` is
ignored, as W3C says; nothing else about the request changes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcpcli import spans, tracecontext
from mcpcli.jsonrpc import Request

__all__ = ["handle"]

JSON = dict[str, Any]


async def handle(request: Request, run: Callable[[], Awaitable[JSON]], *, transport: str,
                 version: str | None, session_id: str | None = None) -> JSON:
    """`run()` the request within its trace (see the module's docstring)."""
    params = request.params or {}
    meta = params.get("_meta")
    carried = type(meta) is dict and tracecontext.META_PARENT in meta
    if not carried and tracecontext.current.get() is None and spans.tracer() is None:
        return await run()  # the common case: nothing to continue, nothing to record
    incoming = tracecontext.from_meta(meta) if carried else None
    if spans.tracer() is None:
        token = tracecontext.current.set(incoming)
        try:
            return await run()
        finally:
            tracecontext.current.reset(token)
    attributes = spans.request_attributes(request.method, params, request_id=request.id, version=version,
                                          transport=transport, session_id=session_id)
    with spans.span("server", request.method, params, parent=incoming, attributes=attributes) as span:
        token = tracecontext.current.set(span.context)
        try:
            result = await run()
        finally:
            tracecontext.current.reset(token)
        span.result(result)
        return result
