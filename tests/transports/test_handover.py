"""The Streamable HTTP transport's session-facing streams (`transports.handover`): a
request starts at once unless something is queued before it; answers are handed over in
order, a response at once when the session can take it."""

from __future__ import annotations

import anyio
import pytest

from mcpcli.core.jsonrpc import Notification, Request, Response
from mcpcli.transports import Envelope
from mcpcli.transports.handover import Delivered, Outbox

pytestmark = pytest.mark.anyio


async def test_a_request_never_overtakes_the_notification_before_it() -> None:
    send, receive = anyio.create_memory_object_stream[Envelope](8)
    started: list[object] = []

    def start(envelope: Envelope, request: Request) -> bool:
        started.append(request.id)
        return True

    outbox = Outbox(send, start)
    outbox.send_nowait(Envelope(Request("tools/list", {}, 1)))
    assert started == [1]  # nothing before it: at once
    outbox.send_nowait(Envelope(Notification("notifications/initialized", None)))
    await outbox.send(Envelope(Request("tools/list", {}, 2)))
    assert started == [1]  # behind the notification: through the writer, in order
    assert outbox.queued == 2
    assert isinstance(receive.receive_nowait().message, Notification)
    assert receive.receive_nowait().message == Request("tools/list", {}, 2)
    outbox.queued -= 2  # what the writer does as it handles them
    outbox.send_nowait(Envelope(Request("tools/list", {}, 3)))
    assert started == [1, 3]
    await outbox.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        outbox.send_nowait(Envelope(Request("tools/list", {}, 4)))
    receive.close()


async def test_a_request_the_ending_connection_cannot_start_is_queued() -> None:
    send, receive = anyio.create_memory_object_stream[Envelope](8)
    outbox = Outbox(send, lambda envelope, request: False)
    outbox.send_nowait(Envelope(Request("ping", {}, 1)))
    assert outbox.queued == 1 and receive.receive_nowait().message == Request("ping", {}, 1)
    await outbox.aclose()
    receive.close()


async def test_answers_are_taken_at_once_or_read_in_order_until_the_end() -> None:
    delivered = Delivered()
    taken: list[object] = []

    def take(item: object) -> bool:
        if isinstance(item, Envelope) and isinstance(item.message, Response):
            taken.append(item.message.id)
            return True
        return False

    delivered.take_at_once(take)
    await delivered.put(Envelope(Response(1, {})))
    assert taken == [1]
    note = Envelope(Notification("notifications/progress", {"progress": 1}))
    await delivered.put(note)
    await delivered.put(Envelope(Response(2, {})))  # behind the notification: in order
    assert taken == [1]
    delivered.end()
    await delivered.put(Envelope(Response(3, {})))  # after the end: dropped
    got = [item async for item in delivered]
    assert got == [note, Envelope(Response(2, {}))]


async def test_a_reader_waiting_is_woken_by_an_answer() -> None:
    delivered = Delivered()
    got: list[object] = []

    async def read() -> None:
        async for item in delivered:
            got.append(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        await anyio.wait_all_tasks_blocked()  # the reader waits for an item
        await delivered.put(ValueError("garbage"))
        delivered.end()
    assert len(got) == 1 and isinstance(got[0], ValueError)
