"""How a response reaches the socket: the queue a legacy session routes its messages through
(`http_exchange.RoutedQueue`) and the head written with the body (`http_guard`)."""

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


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str) -> str:
        return f"extra {name}"


async def test_a_response_head_goes_out_with_the_first_write_of_its_body() -> None:
    """One write (one send, one TCP segment) for a small answer; a head with nothing after
    it in the same event-loop turn (a stream's) still goes out then, alone."""
    import asyncio

    from mcpcli.server.http_guard import _HeadHeld

    loop = asyncio.get_running_loop()
    transport = _Transport()
    held = _HeadHeld(transport, loop)  # type: ignore[arg-type]
    held.write(b"HEAD")
    assert transport.writes == []
    held.write(b"BODY")
    held.write(b"MORE")
    assert transport.writes == [b"HEADBODY", b"MORE"]
    await asyncio.sleep(0)
    assert transport.writes == [b"HEADBODY", b"MORE"]
    assert held.get_extra_info("peername") == "extra peername"

    transport = _Transport()
    held = _HeadHeld(transport, loop)  # type: ignore[arg-type]
    held.write(b"HEAD")
    await asyncio.sleep(0)
    assert transport.writes == [b"HEAD"]
    held.write(b"event")
    assert transport.writes == [b"HEAD", b"event"]

    transport = _Transport()
    held = _HeadHeld(transport, loop)  # type: ignore[arg-type]
    held.write(b"HEAD")
    held.close()  # closing sends what is held first
    assert transport.writes == [b"HEAD"] and transport.closed


async def test_a_client_leaving_is_noticed_through_the_hook_or_else_by_a_task() -> None:
    """Under our uvicorn protocol the scope's hook takes the callback (no task; called at
    once if the client has already left); another ASGI server's request gets a task that
    waits on `receive` for the disconnect."""
    from typing import Any

    from mcpcli.server.http_asgi import DISCONNECT_HOOK
    from mcpcli.server.http_exchange import watch_disconnect

    left: list[str] = []

    async def never() -> dict[str, Any]:
        raise AssertionError("the hook path does not read the request")

    hooks: list[Any] = []
    assert watch_disconnect({"extensions": {DISCONNECT_HOOK: hooks}}, never, lambda: left.append("hook")) is None
    assert left == [] and len(hooks) == 1
    assert watch_disconnect({"extensions": {DISCONNECT_HOOK: None}}, never, lambda: left.append("gone")) is None
    assert left == ["gone"]

    gone = anyio.Event()

    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    task = watch_disconnect({"type": "http"}, receive, lambda: left.append("task"))
    assert task is not None
    gone.set()
    with anyio.fail_after(5):
        await task
    assert left == ["gone", "task"]
