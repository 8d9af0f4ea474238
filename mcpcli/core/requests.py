"""One request we sent, without I/O: its shape on the wire, its clock and its cancellation.

Both request engines (the anyio `Peer` and the one-shot fast path's synchronous
client) keep their requests in flight with these, so they agree on what is sent and
when a request has waited too long:

- the request's id is its progress token unless the caller brought one;
- `timeout` restarts with each progress notification whose `progress` goes up, never
  past `max_timeout` from the start;
- a request given up (timed out, cancelled) is followed by `notifications/cancelled`,
  except `initialize`, which the spec says must never be cancelled.

Times are whatever monotonic clock the driver keeps; the driver passes `now`.
"""

from __future__ import annotations

import math
from typing import Any

from mcpcli.core.jsonrpc import Notification, Request, RequestId
from mcpcli.core.plain import Plain

__all__ = ["RequestClock", "cancel_notice", "cancels_on_giving_up", "outgoing_request", "timed_out_message"]

JSON = dict[str, Any]


def outgoing_request(method: str, params: JSON | None, request_id: RequestId, *, progress_token: bool) -> Request:
    """The request as sent: with `progress_token`, the id is `_meta.progressToken`."""
    if progress_token:
        params = dict(params or {})
        meta = dict(params.get("_meta") or {})
        meta["progressToken"] = request_id
        params["_meta"] = meta
    return Request(method, params, request_id)


def cancels_on_giving_up(method: str) -> bool:
    """Whether giving up on a request tells the peer (`initialize` is never cancelled)."""
    return method != "initialize"


def cancel_notice(request_id: RequestId, reason: str) -> Notification:
    """`notifications/cancelled` for a request we gave up on."""
    return Notification("notifications/cancelled", {"requestId": request_id, "reason": reason})


def timed_out_message(method: str, waited: float) -> str:
    return f"{method} timed out after {waited:.1f}s"


class RequestClock(Plain):
    """When a request in flight has waited too long.

    `timeout` (seconds, None for none) restarts with progress; `hard_deadline` (from
    `max_timeout`) does not move.
    """

    __slots__ = ("deadline", "hard_deadline", "last_progress", "started", "timeout")

    def __init__(self, timeout: float | None, hard_deadline: float, deadline: float, started: float,
                 last_progress: float | None = None) -> None:
        self.timeout = timeout
        self.hard_deadline = hard_deadline
        self.deadline = deadline
        self.started = started
        self.last_progress = last_progress

    @classmethod
    def start(cls, now: float, timeout: float | None, max_timeout: float | None) -> RequestClock:
        hard = now + max_timeout if max_timeout is not None else math.inf
        deadline = min(now + timeout, hard) if timeout is not None else hard
        return cls(timeout, hard, deadline, now)

    def progressed(self, params: JSON, now: float) -> bool:
        """A progress notification for this request: True if it counts (its `progress`
        went up, or it has none), which restarts `timeout`; a repeated or lower value
        changes nothing."""
        value = params.get("progress")
        if isinstance(value, (int, float)):
            if self.last_progress is not None and value <= self.last_progress:
                return False
            self.last_progress = float(value)
        if self.timeout is not None:
            self.deadline = min(now + self.timeout, self.hard_deadline)
        return True

    def remaining(self, now: float, paused: float = 0.0) -> float:
        """Seconds left (inf: no bound); `paused` is time a person spent at a prompt,
        which does not count."""
        return self.deadline + paused - now

    @property
    def bounded(self) -> bool:
        return self.deadline != math.inf
