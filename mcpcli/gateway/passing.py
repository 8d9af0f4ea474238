"""A plain downstream `tools/call` passed through to its upstream whole.

The usual relayed call runs the downstream request in a task of the server's, the
backend, the link's `Calling`, the upstream client's flow and `Peer.request`: about
as much work again as the call itself. Most calls need none of it: the upstream is
connected and has a free slot, the tool cannot become a task, nothing needs catching
up. Such a call is taken as the downstream peer reads it (`mcpcli.server.handoff`),
sent upstream as our client would have sent its first round
(`Exchange.plain_call`), and answered as the upstream's answer is read
(`mcpcli.rpc.forwarding`): no task on either side.

It is still a call of the link's in every other way: known to its `Asking` (what the
upstream asks meanwhile, its log messages and progress reach the client whose call it
is, in order, before the answer), within the upstream's concurrency, timed out as
`Peer.request` would (`Deadlines`), cancelled both ways, and its failures are the
same tool errors. An answer that is not the end of the call (a 2026-07-28 input
round, a task) resumes the usual path from that answer (`Client.call_tool(first=)`),
so the upstream sees one call either way. A legacy upstream asks its questions as
requests during the call, which a 2026-07-28 client can answer only in input rounds:
the call then moves to the usual path as it is asked (`Passed.promoted`: a parked call
holding the upstream request still in flight), and the question goes to it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from mcpcli.core.handshake import round_kind, rpc_error_from
from mcpcli.core.jsonrpc import ErrorObject, ErrorResponse, Response
from mcpcli.core.protocol import TOOLS_CALL
from mcpcli.core.requests import RequestClock, outgoing_request, timed_out_message
from mcpcli.core.tasks import task_of, task_support
from mcpcli.errors import (
    McpCliError,
    RequestTimeout,
    RPCError,
    TransportError,
    UnsupportedVersionError,
)
from mcpcli.gateway.asking import Call, current_call, declined
from mcpcli.server.backend import CallContext

if TYPE_CHECKING:
    import anyio.abc

    from mcpcli.client import Client
    from mcpcli.gateway.asking import Asking
    from mcpcli.rpc.forwarding import Deadlines
    from mcpcli.server.handoff import Relay

__all__ = ["Passed", "pass_through", "tool_error"]

JSON = dict[str, Any]


def tool_error(text: str) -> JSON:
    """A tool result that is an error saying `text` (what a broken upstream answers)."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


class PassingLink(Protocol):
    """What a call passed through needs of its `Link`."""

    name: str
    asking: Asking
    deadlines: Deadlines

    @property
    def client(self) -> Client | None: ...

    @property
    def group(self) -> anyio.abc.TaskGroup | None: ...

    def take_slot(self, lease: object) -> bool: ...

    def release(self, lease: object) -> None: ...

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext, *, first: JSON | None = None) -> JSON: ...


def pass_through(entry: tuple[PassingLink | None, str, JSON], arguments: JSON, ctx: CallContext,
                 relay: Relay) -> Passed | None:
    """Pass a downstream call of a served tool (`entry`: its link, its upstream name and
    definition) through whole, when sending it on is all it needs; None: the usual way."""
    link, name, definition = entry
    if link is None:
        return None  # the local backend's
    client, tg = link.client, link.group
    if client is None or tg is None or link.asking.must_catch_up(ctx, client):
        return None  # the roots to bring up to date first
    if task_support(definition) != "forbidden" or client.options.trace_context is not None:
        return None  # it may become a task; the link's client continues a trace of its own
    call = Call(ctx)
    token = current_call.set(call)  # what a 2026-07-28 request declares is its client's
    try:
        params = client.exchange.plain_call(name, arguments, mirrors_headers=client.transport.traits.mirrors_headers)
    finally:
        current_call.reset(token)
    lease = object()
    if params is None or not link.take_slot(lease):
        return None
    peer = client.peer
    request_id = peer.next_id()
    clock = RequestClock.start(anyio.current_time(), peer.default_timeout, peer.max_timeout)
    passed = Passed(link, client, name, arguments, call, relay, request_id, clock, lease)
    if ctx.era == "modern" and client.era == "legacy":
        # A legacy upstream asks during the call; a 2026-07-28 client answers in input
        # rounds, which only the usual path (a parked call) can hold.
        call.promote = passed.promoted
    client.transport.release_output()
    if not peer.forward(outgoing_request(TOOLS_CALL, params, request_id, progress_token=True), passed):
        passed.cancel()
        return None
    if clock.bounded:
        passed.watched(link.deadlines.add(passed, tg))
    return passed


class Passed:
    """One downstream call passed through whole: the downstream peer's `Relayed`, the
    upstream peer's `Forward`, a `Deadlines` entry."""

    __slots__ = ("_arguments", "_call", "_client", "_clock", "_key", "_lease", "_link", "_name", "_promotion",
                 "_registered", "_relay", "request_id")

    def __init__(self, link: PassingLink, client: Client, name: str, arguments: JSON, call: Call,
                 relay: Relay, request_id: int, clock: RequestClock, lease: object) -> None:
        self._link, self._client, self._name, self._arguments = link, client, name, arguments
        self._relay, self.request_id, self._clock, self._lease = relay, request_id, clock, lease
        self._call = call
        asking = link.asking
        asking.calls.append(call)
        self._registered: AbstractContextManager[object] | None = asking.router.sent(request_id, call)
        self._registered.__enter__()
        self._key = 0
        #: Once the call runs on the usual path (a question its client answers there).
        self._promotion: _Promotion | None = None

    # -- the upstream's side (`Forward`) -------------------------------------------------

    def answered(self, message: Response | ErrorResponse) -> None:
        if isinstance(message, ErrorResponse):
            self._error(rpc_error_from(message.error))
            return
        result = message.result
        era = self._client.era
        if era == "modern":
            kind = round_kind(TOOLS_CALL, result, creates_tasks=True, takes_input=True)
            if kind != "complete":
                self._resume(result)
                return
        elif task_of(result, era) is not None:
            self._resume(result)
            return
        if "resultType" in result:
            result = {k: v for k, v in result.items() if k != "resultType"}
        self._finish(result)

    def _error(self, exc: McpCliError) -> None:
        if isinstance(exc, UnsupportedVersionError) and self._client.era == "modern":
            self._resume(None)  # refused before it ran: the usual path picks another version
        elif isinstance(exc, TransportError):
            self.failed(exc)
        elif isinstance(exc, RPCError):
            self._finish(declined(exc) or exc)
        else:
            self._finish(exc)

    def progressed(self, params: JSON) -> None:
        if not self._clock.progressed(params, anyio.current_time()):
            return
        value = params.get("progress")
        tg = self._link.group
        if isinstance(value, (int, float)) and tg is not None:
            ctx = self._call.ctx
            assert ctx is not None
            self._call.relay(tg, ctx.progress, value, params.get("total"), params.get("message"))

    def failed(self, exc: Exception) -> None:
        """The connection ended (or broke this request): the tool error the usual path gives."""
        name = self._link.name
        if isinstance(exc, TransportError):
            self._finish(tool_error(f"upstream {name} failed during the call: {exc}"))
        elif isinstance(exc, RequestTimeout):
            self._finish(tool_error(f"upstream {name}: {exc}"))
        else:
            self._finish(exc)

    # -- the downstream's side (`Relayed`) -------------------------------------------

    def cancel(self) -> None:
        """The client cancelled the call (or went away): the upstream is told, nobody answered."""
        self._client.peer.unforward(self.request_id, "cancelled by the user")
        self._leave()

    # -- the deadline (`Deadlines`) ---------------------------------------------------

    def deadline(self) -> float:
        return self._clock.deadline

    def expired(self) -> None:
        self._key = 0
        self._client.peer.unforward(self.request_id, "timed out")
        waited = anyio.current_time() - self._clock.started
        self._finish(tool_error(f"upstream {self._link.name}: {timed_out_message(TOOLS_CALL, waited)}"))

    def watched(self, key: int) -> None:
        self._key = key

    # -- the end ----------------------------------------------------------------------

    def _finish(self, outcome: JSON | Exception) -> None:
        """End the call with `outcome` (a result, or what `call_tool` would raise) once what
        was relayed of it is out and its asks are over (as `Calling` does), at once when
        nothing is (the usual case)."""
        call = self._call
        if self._key:
            self._link.deadlines.discard(self._key)
            self._key = 0
        promotion = self._promotion
        if promotion is not None:  # the usual path answers it
            promotion.outcome = outcome
            promotion.done.set()
            return
        tg = self._link.group
        if call.quiet or tg is None:
            call.open = False
            self._leave()
            self._answer(outcome)
            return

        async def later() -> None:
            try:
                await call.drain()
                await call.settle()
            finally:
                self._leave()
            self._answer(outcome)

        tg.start_soon(later)

    def _answer(self, outcome: JSON | Exception) -> None:
        if isinstance(outcome, dict):
            self._relay.answer(outcome)
        elif isinstance(outcome, RPCError):
            self._relay.refuse(ErrorObject(outcome.code, outcome.rpc_message, outcome.data))
        else:
            self._relay.fail(outcome)

    async def promoted(self) -> Call | None:
        """The call as the usual path runs it (None: it is over), for a question its client
        can answer only there."""
        promotion = self._promotion
        if promotion is None:
            if self._registered is None:
                return None
            self._promotion = promotion = _Promotion()
            if not self._relay.resume(self._run_promoted):
                self._promotion = None
                return None
        await promotion.started.wait()
        return promotion.call

    async def _run_promoted(self, ctx: CallContext) -> JSON:
        """The backend's part of the call on the usual path: the call as `Calling` holds it,
        until the upstream's answer (`_finish`)."""
        promotion = self._promotion
        assert promotion is not None
        asking, old = self._link.asking, self._call
        call = self._call = Call(ctx)
        if old in asking.calls:
            asking.calls.remove(old)
        asking.calls.append(call)
        if self._registered is not None:
            self._registered.__exit__(None, None, None)
            self._registered = asking.router.sent(self.request_id, call)
            self._registered.__enter__()
        promotion.call = call
        promotion.started.set()
        token = current_call.set(call)
        try:
            await promotion.done.wait()
            await call.drain()
            await call.settle()
        except BaseException:
            if not promotion.done.is_set():  # cancelled (the client, or the parked call's end)
                self._client.peer.unforward(self.request_id, "cancelled by the user")
                if self._key:
                    self._link.deadlines.discard(self._key)
                    self._key = 0
            raise
        finally:
            current_call.reset(token)
            self._leave()
        outcome = promotion.outcome
        if isinstance(outcome, _Resumed):
            return await self._link.call_tool(self._name, self._arguments, ctx, first=outcome.first)
        if isinstance(outcome, Exception):
            raise outcome
        assert outcome is not None
        return outcome

    def _resume(self, first: JSON | None) -> None:
        """The call goes on the usual way, from the upstream's answer so far (`first`;
        None: from the start, the upstream having refused it unrun)."""
        if self._promotion is not None:  # on it already: go on from there
            self._finish(_Resumed(first))
            return
        if self._key:
            self._link.deadlines.discard(self._key)
            self._key = 0
        self._leave()
        link, name, arguments = self._link, self._name, self._arguments

        async def invoke(ctx: CallContext) -> JSON:
            return await link.call_tool(name, arguments, ctx, first=first)

        self._relay.resume(invoke)

    def _leave(self) -> None:
        registered, self._registered = self._registered, None
        if registered is None:
            return
        registered.__exit__(None, None, None)
        self._link.release(self._lease)
        calls = self._link.asking.calls
        if self._call in calls:
            calls.remove(self._call)


class _Resumed(Exception):
    """A promoted call's upstream answered with more to do (a task)."""

    def __init__(self, first: JSON | None) -> None:
        super().__init__("resumed")
        self.first = first


class _Promotion:
    """A call passed through that moved to the usual path (`Passed.promoted`)."""

    __slots__ = ("call", "done", "outcome", "started")

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.done = anyio.Event()
        self.call: Call | None = None
        self.outcome: JSON | Exception | None = None
