"""Plain `tools/call` requests a backend takes whole, as they are read (a gateway's pass-through).

A backend with a `pass_call` method (the gateway's) is offered every `tools/call` of
a stdio or in-memory connection, or of a legacy HTTP session, that needs nothing of the
runtime's own: no task (`params.task`), no input round being answered
(`inputResponses`, `requestState`), no trace to continue or span to record, a session
that is initialized (or a valid 2026-07-28 `_meta`). It may take it: it then answers
through the `Relay` it is given, with no task of ours in between, or hands the call
back to be run as usual after all (`Relay.resume`: the upstream asked for input, or
made a task). Whatever it declines goes the usual way, which also says what is wrong
with a malformed request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from mcpcli.core.jsonrpc import ErrorObject, ErrorResponse, Request, Response
from mcpcli.core.protocol import PROTOCOL_VERSION_KEY, TOOLS_CALL
from mcpcli.errors import RPCError
from mcpcli.rpc.context import RequestContext
from mcpcli.rpc.forwarding import Relayed, RelayHook
from mcpcli.server._state import Runtime
from mcpcli.server.calls import (
    Call,
    IncomingRequest,
    Invoke,
    SessionFacts,
    legacy_request,
    modern_request,
    tool_call_target,
)
from mcpcli.server.meta import check_version, parse_meta
from mcpcli.server.mrtr import call_backend
from mcpcli.server.tracing import traced
from mcpcli.transports import Envelope

if TYPE_CHECKING:
    from mcpcli.rpc.peer import Peer

__all__ = ["PassCall", "Relay", "relay_hook"]

JSON = dict[str, Any]


#: A 2026-07-28 result as the runtime sends it (`resultType`, `serverInfo`): (method, result).
Decorate = Callable[[str, JSON], JSON]


class KnownClient(SessionFacts, Protocol):
    """What a connection knows of its client (`core.ServerConnection`)."""

    peer: Peer | None
    initialized: bool


class PassCall(Protocol):
    """A backend's `pass_call(name, arguments, ctx, relay)`: a `Relayed` if it took the call."""

    def __call__(self, name: str, arguments: JSON, ctx: Call, relay: Relay) -> Relayed | None: ...


class Relay:
    """How a backend answers a call it took whole."""

    __slots__ = ("_decorate", "_envelope", "_peer", "_request", "_rq", "_runtime")

    def __init__(self, runtime: Runtime, decorate: Decorate, peer: Peer, envelope: Envelope, request: Request,
                 rq: IncomingRequest) -> None:
        self._runtime, self._decorate, self._peer = runtime, decorate, peer
        self._envelope, self._request, self._rq = envelope, request, rq

    def answer(self, result: JSON) -> None:
        """The call's result, as the backend's `call_tool` would have returned it."""
        if self._rq.era == "modern":
            result = self._decorate(TOOLS_CALL, result)
        self._peer.answer_relayed(Response(self._request.id, result))

    def refuse(self, error: ErrorObject) -> None:
        """The call's error, as the request's answer."""
        self._peer.answer_relayed(ErrorResponse(self._request.id, error))

    def fail(self, exc: Exception) -> None:
        """The call ends as if the backend's `call_tool` raised `exc`."""

        async def invoke(ctx: Call) -> JSON:
            raise exc

        self.resume(invoke)

    def resume(self, invoke: Invoke) -> bool:
        """Run the call as usual after all, in a task of its own, with `invoke(ctx)` as the
        backend's part (the runtime's MRTR rounds, its errors and answer as for any call);
        False if the call is over (cancelled)."""
        rq, runtime, decorate = self._rq, self._runtime, self._decorate

        async def handle(request: Request, outlet: Any) -> JSON:
            rq.outlet = outlet
            result = await call_backend(runtime, rq, invoke)
            return decorate(TOOLS_CALL, result) if rq.era == "modern" else result

        return self._peer.adopt_relayed(self._envelope, self._request, handle)


def relay_hook(runtime: Runtime, decorate: Decorate, conn: KnownClient, pass_call: PassCall) -> RelayHook:
    """The connection's `Peer(relay=...)`: plain `tools/call` requests offered to `pass_call`."""

    def relay(envelope: Envelope, request: Request) -> Relayed | None:
        params = request.params
        if request.method != TOOLS_CALL or not params:
            return None
        if "task" in params or "inputResponses" in params or "requestState" in params or traced(request):
            return None
        try:
            name, arguments = tool_call_target(params)
        except RPCError:
            return None  # the usual path says what is wrong
        peer = conn.peer
        if peer is None:
            return None
        outlet = RequestContext(peer, request, envelope.context, envelope.related_request_id)
        meta = params.get("_meta")
        if type(meta) is dict and PROTOCOL_VERSION_KEY in meta:
            try:
                modern = parse_meta(params)
                check_version(modern.version)
            except RPCError:
                return None
            rq = modern_request(request, params, outlet, modern, conn.transport, conn.principal, conn)
        elif conn.initialized and conn.version is not None:
            rq = legacy_request(request, params, outlet, conn)
        else:
            return None
        return pass_call(name, arguments, Call(rq), Relay(runtime, decorate, peer, envelope, request, rq))

    return relay
