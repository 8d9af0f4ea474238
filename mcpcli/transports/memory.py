"""In-memory transports: a connected pair of stream pairs, for tests and in-process serving."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import anyio

from mcpcli.transports import Envelope, Streams, Transport

__all__ = ["InProcessTransport", "memory_pair"]


@asynccontextmanager
async def memory_pair(buffer: int = 64) -> AsyncIterator[tuple[Streams, Streams]]:
    """Two connected `(read, write)` pairs: what one side writes, the other reads."""
    a_send, b_recv = anyio.create_memory_object_stream[Envelope | Exception](buffer)
    b_send, a_recv = anyio.create_memory_object_stream[Envelope | Exception](buffer)
    async with a_send, a_recv, b_send, b_recv:
        # The write halves are typed for Envelopes only; the receive halves may also
        # carry exceptions, which only a transport under test would inject.
        yield (a_recv, a_send), (b_recv, b_send)


class InProcessTransport(Transport):
    """Connects a client to a server run in the same process over memory streams.

    `serve` is called with the server's `(read, write)` pair and runs until the
    streams close; it runs in a task alongside the client.
    """

    name = "in-process"

    def __init__(self, serve: Callable[[Streams], Coroutine[Any, Any, None]]) -> None:
        self._serve = serve

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Streams]:
        async with memory_pair() as (client_side, server_side), anyio.create_task_group() as tg:
            tg.start_soon(self._serve, server_side)
            try:
                yield client_side
            finally:
                tg.cancel_scope.cancel()
