"""One request being handled, the `CallContext` a backend gets for it, and the
`Continuation` a 2026 call runs in.

`IncomingRequest` holds a request's params and the facts of its era (version,
client capabilities and info, log level, the connection it came on, where its
related messages go). `Call` is the `mcpcli.server.backend.CallContext` of one
tools/call, prompts/get or resources/read: strictly increasing progress, log
messages filtered by the client's level, and `ask()`, which becomes server to
client requests (legacy era) or MRTR rounds through the call's `Continuation`
(2026-07-28, see `mcpcli.server.mrtr`). Once a call has become a task
(`mcpcli.server.tasks`), its input requests and progress go to the task.

This is the bottom of the runtime's helpers: it imports none of them (what it
needs of a connection or a task is a small protocol here).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from mcpcli.core.jsonrpc import INVALID_PARAMS, Request
from mcpcli.core.protocol import Era
from mcpcli.errors import ConnectionClosed, RPCError
from mcpcli.server.backend import CallContext, InputDeclined
from mcpcli.server.meta import LEVEL_RANK, RequestMeta
from mcpcli.server.subscriptions import Sink

if TYPE_CHECKING:
    from mcpcli.jobs import JobSet

__all__ = [
    "Call",
    "Connection",
    "Continuation",
    "Handler",
    "IncomingRequest",
    "Invoke",
    "Outlet",
    "SessionFacts",
    "TaskInput",
    "legacy_request",
    "modern_request",
    "tool_call_target",
    "valid_answer",
]

JSON = dict[str, Any]
Invoke = Callable[["Call"], Awaitable[JSON]]
#: A method's handler: the request in, its result out (or an `RPCError` raised).
Handler = Callable[["IncomingRequest"], Awaitable[JSON]]

#: Which client capability each kind of `ask` needs.
_ASK_CAPABILITY = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


class Outlet(Protocol):
    """Where messages related to one request go (its stdio session, its HTTP stream).

    `mcpcli.rpc.peer.RequestContext` is one; the stateless HTTP path has its own.
    """

    async def notify(self, method: str, params: JSON | None = None) -> None: ...

    async def send_request(
        self, method: str, params: JSON | None = None, *, timeout: float | None = None
    ) -> JSON: ...


class Connection(Protocol):
    """What handlers keep on the connection a request came on (`core.ServerConnection`)."""

    #: The client's `logging/setLevel` (legacy era).
    log_level: str | None
    #: The resources the client subscribed to (legacy era).
    subscriptions: set[str]
    #: The 2026 `subscriptions/listen` streams open on it (ended when it closes).
    listens: set[Sink]


class TaskInput(Protocol):
    """What a call hands to the task it became (`tasks.store.Task`): its asks and progress."""

    def note_progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def ask(self, requests: dict[str, JSON]) -> dict[str, JSON]: ...


class IncomingRequest:
    """One request being handled: its params and the facts of its era."""

    __slots__ = (
        "answer_now",
        "caps",
        "channel",
        "conn",
        "era",
        "info",
        "log_level",
        "method",
        "outlet",
        "params",
        "principal",
        "request",
        "transport",
        "version",
    )

    def __init__(
        self,
        request: Request,
        params: JSON,
        outlet: Outlet,
        era: Era,
        version: str,
        caps: JSON,
        info: JSON,
        log_level: str | None,
        conn: Connection | None,
        transport: str,
        principal: str,
    ) -> None:
        self.request = request
        self.method = request.method
        self.params = params
        self.outlet = outlet
        self.era: Era = era
        self.version = version
        self.caps = caps
        self.info = info
        self.log_level = log_level
        #: The initialized legacy session it belongs to (None in the 2026 era).
        self.conn = conn
        self.transport = transport
        self.principal = principal
        #: The connection a request arrived on, in either era (None: stateless HTTP).
        self.channel: Connection | None = conn
        #: Answers the request before its handler returns (`Peer`'s early answer, with
        #: the server's own fields added); None where the connection ends with the request
        #: (stateless HTTP), so a call parked for input cannot stay in the request's task.
        self.answer_now: Callable[[JSON], Awaitable[None]] | None = None


class SessionFacts(Connection, Protocol):
    """What an initialized legacy session knows of its client (`core.ServerConnection`)."""

    version: str | None
    client_capabilities: JSON
    client_info: JSON
    transport: str
    principal: str


def legacy_request(request: Request, params: JSON, outlet: Outlet, conn: SessionFacts) -> IncomingRequest:
    """A request of an initialized legacy session (its era's facts are the session's)."""
    assert conn.version is not None
    return IncomingRequest(request, params, outlet, "legacy", conn.version, conn.client_capabilities,
                           conn.client_info, conn.log_level, conn, conn.transport, conn.principal)


def modern_request(request: Request, params: JSON, outlet: Outlet, meta: RequestMeta, transport: str,
                   principal: str, channel: Connection | None) -> IncomingRequest:
    """A 2026-07-28 request (its era's facts are its own `_meta`'s); `channel`: the
    stdio or in-memory connection it came on, if any."""
    rq = IncomingRequest(request, params, outlet, "modern", meta.version, meta.capabilities,
                         meta.client_info, meta.log_level, None, transport, principal)
    rq.channel = channel
    return rq


def tool_call_target(params: JSON) -> tuple[str, JSON]:
    """A `tools/call`'s tool name and arguments (-32602 unless a name and an object)."""
    name = params.get("name")
    if not isinstance(name, str):
        raise RPCError(INVALID_PARAMS, "Invalid params: tools/call needs a tool name")
    arguments = params.get("arguments")
    if arguments is None:
        return name, {}
    if not isinstance(arguments, dict):
        raise RPCError(INVALID_PARAMS, "Invalid params: arguments must be an object")
    return name, arguments


def valid_answer(method: str, value: Any) -> bool:
    """Whether an input response is a plausible result of the asked method."""
    if not isinstance(value, dict):
        return False
    if method == "elicitation/create":
        return value.get("action") in ("accept", "decline", "cancel")
    if method == "sampling/createMessage":
        return "content" in value
    if method == "roots/list":
        return isinstance(value.get("roots"), list)
    return True


class Call:
    """The `CallContext` a backend gets for one tools/call, prompts/get or resources/read."""

    def __init__(self, rq: IncomingRequest) -> None:
        #: Answers received so far (2026 era), by the keys the backend chose.
        self.answers: JSON = {}
        self.cont: Continuation | None = None
        #: The task this call runs as, once it became one.
        self.task: TaskInput | None = None
        self.rebind(rq)

    def rebind(self, rq: IncomingRequest) -> None:
        """Attach to a (new) request: a resumed 2026 call reports on the retry's stream."""
        self._rq = rq
        self.era: Era = rq.era
        self.protocol_version: str = rq.version
        self.client_capabilities: JSON = rq.caps
        self.client_info: JSON = rq.info
        self.transport: str = rq.transport
        #: Who is calling (the HTTP principal; "" on stdio).
        self.principal: str = rq.principal
        meta = rq.params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        valid = isinstance(token, (str, int)) and not isinstance(token, bool)
        self._progress_token: str | int | None = token if valid else None
        self._last_progress: float | None = None

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        token = self._progress_token
        if token is None and self.task is None:
            return
        # Progress must strictly increase; a stale value is dropped, not sent.
        if self._last_progress is not None and progress <= self._last_progress:
            return
        self._last_progress = progress
        if self.task is not None:
            self.task.note_progress(progress, total, message)
            return
        params: JSON = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        try:
            await self._rq.outlet.notify("notifications/progress", params)
        except ConnectionClosed:
            pass

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        rank = LEVEL_RANK.get(level)
        if rank is None:
            raise ValueError(f"unknown log level {level!r}")
        if self.task is not None:
            return  # a task has no request stream to log on
        rq = self._rq
        if rq.era == "modern":
            threshold = rq.log_level  # no logLevel in _meta: no log messages at all
            if threshold is None:
                return
        else:
            threshold = rq.conn.log_level if rq.conn is not None else None
        if threshold is not None and rank < LEVEL_RANK[threshold]:
            return
        params: JSON = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        try:
            await rq.outlet.notify("notifications/message", params)
        except ConnectionClosed:
            pass

    def _check(self, requests: dict[str, JSON]) -> None:
        if not isinstance(requests, dict) or not requests:
            raise ValueError("ask() needs a non-empty mapping of key -> {method, params}")
        missing: list[str] = []
        caps = self.client_capabilities
        for key, item in requests.items():
            method = item.get("method") if isinstance(item, dict) else None
            capability = _ASK_CAPABILITY.get(method) if isinstance(method, str) else None
            if capability is None:
                raise ValueError(f"ask({key!r}): unsupported method {method!r}")
            params = item.get("params")
            if params is not None and not isinstance(params, dict):
                raise ValueError(f"ask({key!r}): params must be an object")
            declared = caps.get(capability)
            if not isinstance(declared, dict):
                missing.append(capability)
            elif capability == "elicitation":
                mode = params.get("mode", "form") if params else "form"
                # `{}` means form only; otherwise the mode must be declared.
                supported = set(declared) if declared else {"form"}
                if mode not in supported:
                    missing.append(capability)
        if missing:
            raise InputDeclined(capabilities=sorted(set(missing)))

    async def ask(self, requests: dict[str, JSON]) -> dict[str, JSON]:
        self._check(requests)
        if self.task is not None:
            return await self.task.ask(requests)
        if self.era == "legacy":
            return await self._ask_legacy(requests)
        while True:
            missing = {
                key: {"method": item["method"], "params": item.get("params") or {}}
                for key, item in requests.items()
                if not valid_answer(item["method"], self.answers.get(key))
            }
            if not missing:
                return {key: self.answers[key] for key in requests}
            if self.cont is None:
                raise RuntimeError("ask() is only possible during tools/call, prompts/get or resources/read")
            await self.cont.suspend(missing)

    async def _ask_legacy(self, requests: dict[str, JSON]) -> dict[str, JSON]:
        outlet = self._rq.outlet
        results: dict[str, JSON] = {}

        async def one(key: str, item: JSON) -> None:
            results[key] = await outlet.send_request(item["method"], item.get("params") or {})

        if len(requests) == 1:
            [(key, item)] = requests.items()
            await one(key, item)
        else:
            async with anyio.create_task_group() as tg:
                for key, item in requests.items():
                    tg.start_soon(one, key, item)
        return {key: results[key] for key in requests}


class Continuation:
    """A 2026 backend call that can be parked inside `ask()` across MRTR rounds and
    resumed by the client's retry: it runs in a task of the server's (`start`), or its
    first round in the request's own task (`run_inline`, see `mcpcli.server.mrtr`)."""

    def __init__(self, call: Call) -> None:
        self.call = call
        call.cont = self
        self.scope = anyio.CancelScope()
        #: Where it waits for the client's retry, and under which id (see `park`).
        self.cid: str | None = None
        self._lot: OrderedDict[str, Continuation] | None = None
        self.finished = False
        self._round = anyio.Event()
        self._resume: anyio.Event | None = None
        self._outcome: tuple[str, Any] = ("cancelled", None)
        #: While the first round runs in the request's own task: how to answer it early.
        self._answer_early: Callable[[dict[str, JSON]], Awaitable[None]] | None = None
        self.answered_early = False

    @property
    def dead(self) -> bool:
        return self.finished or self.scope.cancel_called

    async def run(self, invoke: Invoke) -> None:
        """Run the call inside its scope (in a task of the caller's)."""
        with self.scope:
            await self._body(invoke)

    def start(self, tasks: JobSet, invoke: Invoke) -> None:
        """Run the call in a task of `tasks` (the runtime's), inside its scope."""
        tasks.start(self._body, invoke, scope=self.scope)

    async def run_inline(
        self, invoke: Invoke, answer_early: Callable[[dict[str, JSON]], Awaitable[None]]
    ) -> tuple[str, Any] | None:
        """Run the call in the request's own task (no task or hand-over of its own): its
        first outcome, or None when it asked for input. Then `answer_early(missing)` has
        answered the request (the InputRequiredResult) and this task has gone on as the
        parked call, whose later outcomes go to the retries (`next_round`)."""
        self._answer_early = answer_early
        with self.scope:
            await self._body(invoke)
        if self.answered_early:
            return None
        self._answer_early = None
        return self._outcome

    async def _body(self, invoke: Invoke) -> None:
        try:
            try:
                result = await invoke(self.call)
            except Exception as exc:
                self._report("error", exc)
            else:
                self._report("done", result)
        finally:
            self.finished = True
            lot = self._lot
            if lot is not None and self.cid is not None and lot.get(self.cid) is self:
                del lot[self.cid]
            if not self._round.is_set():
                self._report("cancelled", None)

    def park(self, lot: OrderedDict[str, Continuation], cid: str) -> None:
        """Wait in `lot` (the runtime's parked calls) under `cid`; the call leaves it when it ends."""
        self.cid = cid
        self._lot = lot
        lot[cid] = self

    def _report(self, kind: str, value: Any) -> None:
        self._outcome = (kind, value)
        self._round.set()

    async def suspend(self, missing: dict[str, JSON]) -> None:
        """Called by the backend (inside ask): hand the request back, wait for the retry."""
        self._resume = anyio.Event()
        answer_early, self._answer_early = self._answer_early, None
        if answer_early is not None:  # the first round, in the request's task: answer it now
            self.answered_early = True
            await answer_early(missing)
        else:
            self._report("input", missing)
        await self._resume.wait()

    def resume(self) -> None:
        self.scope.deadline = math.inf
        if self._resume is not None:
            self._resume.set()

    async def next_round(self, timeout: float | None = None) -> tuple[str, Any] | None:
        """The call's next outcome: ("done", result), ("error", exc), ("input", requests)
        or ("cancelled", None); None when `timeout` seconds pass first."""
        try:
            if timeout is None:
                await self._round.wait()
            else:
                with anyio.move_on_after(timeout):
                    await self._round.wait()
                if not self._round.is_set():
                    return None
        except BaseException:
            # The request was cancelled (client closed the stream, notifications/cancelled).
            self.scope.cancel()
            raise
        outcome = self._outcome
        if outcome[0] == "input":
            self._round = anyio.Event()  # for the round after the client's retry
        return outcome


def _assert_call_context(call: Call) -> CallContext:  # pragma: no cover - typing only
    return call
