"""Time during which every request's clock stands still because a person is busy."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

import anyio

__all__ = ["CLOCK", "user_interaction"]


class _PauseClock:
    """Time during which request clocks stand still because a person is busy.

    A browser sign-in started by a 401 can take minutes; it must not time out the
    request that triggered it, nor others waiting meanwhile. Process-wide on
    purpose: the sign-in runs in the transport, far from the waiting requests.
    """

    def __init__(self) -> None:
        self.depth = 0
        self._total = 0.0
        self._since = 0.0

    def paused_so_far(self) -> float:
        if not self.depth:
            return self._total
        return self._total + anyio.current_time() - self._since

    @contextmanager
    def pause(self) -> Iterator[None]:
        if self.depth == 0:
            self._since = anyio.current_time()
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            if self.depth == 0:
                self._total += anyio.current_time() - self._since


CLOCK = _PauseClock()


def user_interaction() -> AbstractContextManager[None]:
    """`with user_interaction():` stops every request's timeout clock meanwhile."""
    return CLOCK.pause()
