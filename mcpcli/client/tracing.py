"""The trace context of each request a client sends.

Every request but a legacy `initialize` carries the trace it continues in `_meta`
(`tracecontext.request_meta`): the request being handled here (a gateway's upstream
call, a script's), else the client's own `--trace-context`. With spans on
(`mcpcli.spans`) the request is a CLIENT span, a child of that context, and `_meta`
names the span instead. The counterpart of `mcpcli.server.tracing`.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from mcpcli import spans
from mcpcli.core import tracecontext
from mcpcli.core.handshake import with_meta
from mcpcli.core.protocol import PROTOCOL_VERSION_KEY
from mcpcli.core.tracecontext import TraceContext

if TYPE_CHECKING:
    from mcpcli.rpc.peer import Peer
    from mcpcli.transports import Transport

__all__ = ["traced_request"]

JSON = dict[str, Any]


def traced_request(peer: Peer, transport: Transport, version: str, method: str, params: JSON | None,
                   own: TraceContext | None, **options: Any) -> Awaitable[JSON]:
    """`peer.request(method, params, **options)` carrying the trace it continues (`own`:
    the client's, for a request made outside any handled one). `version`: the negotiated
    revision ("" before the handshake), for the span. Not a coroutine itself: the common
    case awaits the peer's request directly, with no frame in between."""
    parent = tracecontext.current.get() or own
    if spans.tracer() is not None:
        return _request_in_span(peer, transport, version, method, params, parent, **options)
    if parent is not None and (entries := tracecontext.request_meta(method, parent)):
        params = with_meta(params or {}, entries)
    return peer.request(method, params, **options)


async def _request_in_span(peer: Peer, transport: Transport, version: str, method: str, params: JSON | None,
                           parent: TraceContext | None, **options: Any) -> JSON:
    request_id = options.pop("request_id", None)
    if request_id is None:
        request_id = peer.next_id()
    attributes = spans.request_attributes(
        method, params or {}, request_id=request_id, version=version or _asked_version(params),
        transport=transport.name, session_id=_session_id(transport),
    )
    with spans.span("client", method, params or {}, parent=parent, attributes=attributes) as span:
        entries = tracecontext.request_meta(method, span.context)
        result = await peer.request(
            method, with_meta(params or {}, entries) if entries else params, request_id=request_id, **options
        )
        span.result(result)
        return result


def _asked_version(params: JSON | None) -> str | None:
    """The revision a handshake request asks for (`server/discover`'s `_meta`, `initialize`'s)."""
    params = params or {}
    meta = params.get("_meta")
    asked = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else params.get("protocolVersion")
    return asked if isinstance(asked, str) else None


def _session_id(transport: Transport) -> str | None:
    """The Streamable HTTP session a request belongs to (`Mcp-Session-Id`), if any."""
    session_id = getattr(transport, "session_id", None)
    return session_id if isinstance(session_id, str) else None
