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

from mcpcli import spans
from mcpcli.core import tracecontext
from mcpcli.core.jsonrpc import Request

__all__ = ["handle", "traced"]

JSON = dict[str, Any]


def traced(request: Request) -> bool:
    """Whether `handle` has anything to do for this request (else the caller runs it
    directly: the common case costs no frame): a trace to continue, a stale one to
    clear, or spans to record."""
    params = request.params
    meta = params.get("_meta") if params else None
    return ((type(meta) is dict and tracecontext.META_PARENT in meta)
            or tracecontext.current.get() is not None or spans.tracer() is not None)


async def handle(request: Request, run: Callable[[], Awaitable[JSON]], *, transport: str,
                 version: str | None, session_id: str | None = None) -> JSON:
    """`run()` the request within its trace (see the module's docstring); see `traced`."""
    params = request.params or {}
    incoming = tracecontext.from_meta(params.get("_meta"))
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
