"""What a handler of an incoming request can do while it runs: answer early, report
progress, send notifications and requests tied to the request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import anyio

from mcpcli.core.jsonrpc import Request, RequestId, Response
from mcpcli.jobs import JobSet
from mcpcli.transports import Envelope

__all__ = ["RequestContext"]


class _Owner(Protocol):
    """What a request's context needs of its peer (`mcpcli.rpc.peer.Peer`)."""

    @property
    def can_hand_over(self) -> bool: ...

    async def send(self, envelope: Envelope) -> None: ...

    async def notify(self, method: str, params: dict[str, Any] | None = None, *,
                     related_request_id: RequestId | None = None) -> None: ...

    async def request(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | bool | None = True,
                      max_timeout: float | bool | None = True, progress_token: bool = True,
                      related_request_id: RequestId | None = None,
                      headers: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def answered_early(self, request_id: RequestId, scope: anyio.CancelScope | None, keep_in: JobSet | None) -> None: ...


class RequestContext:
    """What a handler of an incoming request can do while it runs."""

    __slots__ = ("_peer", "_scope", "answered", "context", "related_request_id", "request")

    def __init__(
        self, peer: _Owner, request: Request, context: Any, related_request_id: RequestId | None = None
    ) -> None:
        self._peer = peer
        self.request = request
        #: The transport's facts about the request (HTTP headers, principal).
        self.context = context
        #: Our own request that caused this one, where the transport knows (it came on
        #: that request's Streamable HTTP stream).
        self.related_request_id = related_request_id
        #: The request was answered by `answer_now`; what the handler returns is dropped.
        self.answered = False
        #: The cancel scope of the task handling it (None: not a task of the session's).
        self._scope: anyio.CancelScope | None = None

    @property
    def can_answer_now(self) -> bool:
        """Whether `answer_now` may be used: the request runs in a task of its own (not
        inside a batch, whose one response holds every answer) that can be handed over."""
        return self._scope is not None and self._peer.can_hand_over

    async def answer_now(self, result: dict[str, Any], *, keep_in: JobSet | None = None) -> None:
        """Answer the request before its handler returns; the handler goes on (a 2026
        call parked for input runs on in the task that received it). From now on the
        peer's `notifications/cancelled` for this id no longer reaches the handler, and
        with `keep_in` (the server's own tasks) neither does this connection's end: the
        call may be resumed from another one."""
        peer = self._peer
        # Sent first: if that fails, nothing changed (the handler's own answer still goes out).
        await peer.send(Envelope(Response(self.request.id, result), self.request.id))
        self.answered = True
        peer.answered_early(self.request.id, self._scope, keep_in)

    @property
    def id(self) -> RequestId:
        return self.request.id

    @property
    def meta(self) -> dict[str, Any]:
        params = self.request.params or {}
        meta = params.get("_meta")
        return meta if isinstance(meta, dict) else {}

    @property
    def progress_token(self) -> str | int | None:
        token = self.meta.get("progressToken")
        return token if isinstance(token, (str, int)) and not isinstance(token, bool) else None

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification tied to this request (it travels on its HTTP stream)."""
        await self._peer.notify(method, params, related_request_id=self.request.id)

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress, if the requester asked for it with a progress token."""
        token = self.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)

    async def send_request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress_token: bool = False,
    ) -> dict[str, Any]:
        """Ask the peer something while handling this request (legacy-era sampling etc.)."""
        return await self._peer.request(
            method,
            params,
            timeout=timeout,
            max_timeout=None,
            progress_token=progress_token,
            related_request_id=self.request.id,
        )
