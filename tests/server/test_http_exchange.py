"""The queue a legacy session routes a response's messages through (`http_exchange.RoutedQueue`)."""

from __future__ import annotations

import anyio
import pytest

from mcpcli.core.jsonrpc import Notification
from mcpcli.server.http_exchange import QUEUE_LIMIT, RoutedQueue

pytestmark = pytest.mark.anyio


async def test_messages_come_out_in_order_and_end_lets_the_reader_finish_what_is_queued() -> None:
    queue = RoutedQueue()
    got: list[str] = []

    async def read() -> None:
        async for message in queue:
            assert isinstance(message, Notification)
            got.append(message.method)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await anyio.wait_all_tasks_blocked()
            assert queue.put(Notification("a"))  # wakes the waiting reader
            assert queue.put(Notification("b"))
            queue.end()
            assert queue.put(Notification("late"))  # after the end: nothing, not an error
    assert got == ["a", "b"]


async def test_close_drops_what_is_queued_and_a_full_queue_refuses() -> None:
    queue = RoutedQueue()
    for i in range(QUEUE_LIMIT):
        assert queue.put(Notification(str(i)))
    assert not queue.put(Notification("one too many"))
    queue.close()
    with anyio.fail_after(5):
        assert [m async for m in queue] == []
