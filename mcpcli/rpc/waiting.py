"""One outgoing request's wait for its answer (`Peer.request`).

The wait ends when the answer comes, or when the request's clock runs out: its
timeout restarts with each progress notification, never past the hard limit
(`RequestClock`), and stands still while a person is busy at a prompt or signing in
(`mcpcli.rpc.clock`). A request with a time bound that has gone `slow_after` seconds
unanswered is reported once (`SlowHandler`: a person at a terminal is shown what is
awaited from whom).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from mcpcli.core.requests import RequestClock
from mcpcli.errors import McpCliError
from mcpcli.rpc.clock import CLOCK

__all__ = ["Pending", "ProgressHandler", "SlowHandler", "seconds"]

ProgressHandler = Callable[[dict[str, Any]], None]
#: Told that a request has gone unanswered for a while: (method, seconds waited); returns
#: what to call once it ends (answered, failed or given up).
SlowHandler = Callable[[str, float], Callable[[], None]]


def seconds(value: float | bool | None) -> float | None:
    """A time bound as a number of seconds (None: none)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(slots=True)
class Pending:
    """A request sent and not yet answered: its clock, and its answer once it comes."""

    method: str
    clock: RequestClock
    on_progress: ProgressHandler | None
    done: anyio.Event = field(default_factory=anyio.Event)
    result: dict[str, Any] | None = None
    error: McpCliError | None = None
    #: What the slow notice asked to be called once the request ends.
    slow_done: Callable[[], None] | None = None

    def progressed(self, params: dict[str, Any]) -> None:
        if self.clock.progressed(params, anyio.current_time()) and self.on_progress is not None:
            self.on_progress(params)

    async def wait(self, sent: float, paused_at_start: float, on_slow: SlowHandler | None, slow_after: float) -> bool:
        """Until the answer (True) or the clock running out (False); `sent`: when the
        request went, `paused_at_start`: the pause clock then."""
        clock = self.clock
        slow_at = sent + slow_after if on_slow is not None and clock.bounded else math.inf
        while not self.done.is_set():
            paused = CLOCK.paused_so_far() - paused_at_start
            current = anyio.current_time()
            remaining = clock.remaining(current, paused)
            if CLOCK.depth:
                remaining = max(remaining, 0.5)  # look again once the person is done
            if remaining <= 0:
                return False
            if slow_at != math.inf:
                until_slow = slow_at + paused - current
                if CLOCK.depth:
                    until_slow = max(until_slow, 0.5)  # a person is busy: not the server's silence
                elif until_slow <= 0:
                    assert on_slow is not None
                    slow_at = math.inf
                    self.slow_done = on_slow(self.method, current - sent - paused)
                    continue
                remaining = min(remaining, until_slow)
            if remaining == math.inf:
                await self.done.wait()
            else:
                with anyio.CancelScope(deadline=current + remaining):
                    await self.done.wait()
        return True
