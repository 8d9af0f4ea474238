"""One request being handled, and the `CallContext` a backend gets for it.

`Rq` holds a request's params and the facts of its era (version, client
capabilities and info, log level, the connection it came on, where its related
messages go). `Call` is the `mcpcli.server.backend.CallContext` of one
tools/call, prompts/get or resources/read: strictly increasing progress, log
messages filtered by the client's level, and `ask()`, which becomes server to
client requests (legacy era) or MRTR rounds through the call's continuation
(2026-07-28, see `mcpcli.server.mrtr`). Once a call has become a task
(`mcpcli.server.tasks`), its input requests and progress go to the task.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from mcpcli.errors import ConnectionClosed
from mcpcli.jsonrpc import Request
from mcpcli.protocol import Era
from mcpcli.server.backend import CallContext, InputDeclined
from mcpcli.server.meta import LEVEL_RANK

if TYPE_CHECKING:
    from mcpcli.server.core import Server, ServerConnection
    from mcpcli.server.mrtr import Continuation
    from mcpcli.server.tasks import Task

__all__ = ["Call", "Invoke", "Outlet", "Rq", "valid_answer"]

JSON = dict[str, Any]
Invoke = Callable[["Call"], Awaitable[JSON]]

#: Which client capability each kind of `ask` needs.
_ASK_CAPABILITY = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}


class Outlet(Protocol):
    """Where messages related to one request go (its stdio session, its HTTP stream).

    `mcpcli.session.RequestContext` is one; the stateless HTTP path has its own.
    """

    async def notify(self, method: str, params: JSON | None = None) -> None: ...

    async def send_request(
        self, method: str, params: JSON | None = None, *, timeout: float | None = None
    ) -> JSON: ...


class Rq:
    """One request being handled: its params and the facts of its era."""

    __slots__ = (
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
        conn: ServerConnection | None,
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
        self.conn = conn
        self.transport = transport
        self.principal = principal
        #: The connection a request arrived on, in either era (None: stateless HTTP).
        self.channel: ServerConnection | None = conn


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

    def __init__(self, server: Server, rq: Rq) -> None:
        self._server = server
        #: Answers received so far (2026 era), by the keys the backend chose.
        self.answers: JSON = {}
        self.cont: Continuation | None = None
        #: The task this call runs as, once it became one.
        self.task: Task | None = None
        self.rebind(rq)

    def rebind(self, rq: Rq) -> None:
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


def _assert_call_context(call: Call) -> CallContext:  # pragma: no cover - typing only
    return call
