"""The stdio hot path's pieces (mcpcli/transports/_lines.py): line splitting, the inbox
that hands frames to a session in the pipe's callback or in order through its receive
loop, and the writer that puts frames on a real non-blocking pipe."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from helpers import OpenFds, wait_until_async

from mcpcli.core.jsonrpc import Notification
from mcpcli.transports import Envelope
from mcpcli.transports.lines import (
    BACKLOG_LIMIT,
    INBOX_LIMIT,
    FrameInbox,
    FrameReader,
    LineSplitter,
    PipeWriter,
    holding,
)

pytestmark = pytest.mark.anyio


# -- LineSplitter ---------------------------------------------------------------


def test_lines_are_joined_across_chunks_and_empty_lines_kept() -> None:
    splitter = LineSplitter(cap=100)
    assert splitter.feed(b"") == []
    assert splitter.feed(b"ab") == []
    assert splitter.feed(b"c\nde") == [b"abc"]
    assert splitter.feed(b"f\n\ng\nh") == [b"def", b"", b"g"]
    assert splitter.rest() == b"h"
    assert splitter.rest() == b""  # rest() forgets what it returned
    assert splitter.feed(b"\n") == [b""]


def test_an_unfinished_line_past_the_cap_is_an_overflow_until_cleared() -> None:
    splitter = LineSplitter(cap=4)
    assert splitter.feed(b"1234") == []
    assert not splitter.overflow  # at the cap is fine
    assert splitter.feed(b"5") == []
    assert splitter.overflow
    splitter.clear()
    assert not splitter.overflow
    # A complete line longer than the cap is the caller's business (it is returned whole).
    assert splitter.feed(b"0123456789\nx") == [b"0123456789"]
    assert not splitter.overflow
    assert splitter.rest() == b"x"


# -- FrameInbox -----------------------------------------------------------------


def test_an_item_is_offered_at_once_only_when_nothing_is_queued_before_it() -> None:
    inbox = FrameInbox()
    offered: list[str] = []

    def take(item: Any) -> bool:
        offered.append(item)
        return bool(item.startswith("take"))

    inbox.put("before")  # no taker yet: queued
    inbox.take_at_once = take
    inbox.put("take-1")  # queued behind "before": never offered (order is kept)
    assert offered == []
    assert list(inbox.items) == ["before", "take-1"]
    assert inbox.pop() == "before"
    assert inbox.pop() == "take-1"
    inbox.put("take-2")  # nothing queued: taken in the callback
    inbox.put("keep")  # offered, refused: queued
    inbox.put("take-3")  # behind "keep": not offered
    assert offered == ["take-2", "keep"]
    assert list(inbox.items) == ["keep", "take-3"]


def test_the_pipe_is_paused_past_the_limit_and_resumed_at_a_quarter() -> None:
    inbox = FrameInbox()
    calls: list[str] = []
    inbox.pause = lambda: calls.append("pause")
    inbox.resume = lambda: calls.append("resume")
    for i in range(INBOX_LIMIT - 1):
        inbox.put(i)
    assert calls == []
    inbox.put(INBOX_LIMIT - 1)
    assert calls == ["pause"]
    inbox.put("more")  # still paused: not paused twice
    assert calls == ["pause"]
    got = []
    while len(inbox.items) > INBOX_LIMIT // 4 + 1:
        got.append(inbox.pop())
    assert calls == ["pause"]
    got.append(inbox.pop())
    assert calls == ["pause", "resume"]
    while inbox.items:
        got.append(inbox.pop())
    assert calls == ["pause", "resume"]
    assert got == [*range(INBOX_LIMIT), "more"]  # nothing lost or reordered


async def test_the_receive_loop_is_woken_a_turn_after_what_earlier_items_woke() -> None:
    """A response taken at once wakes its caller; a notification queued behind it wakes
    the receive loop one loop turn later, so the caller (which takes a few steps to
    finish) gets there first."""
    inbox = FrameInbox()
    answered = anyio.Event()
    order: list[str] = []

    def take(item: Any) -> bool:
        if item == "response":
            answered.set()
            return True
        return False

    inbox.take_at_once = take

    async def caller() -> None:
        await answered.wait()
        await anyio.lowlevel.checkpoint()  # the rest of the command's work
        order.append("caller")

    async def receive_loop() -> None:
        await inbox.wait()
        order.append("loop:" + inbox.pop())

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(caller)
            tg.start_soon(receive_loop)
            await anyio.wait_all_tasks_blocked()
            inbox.put("response")  # as the pipe callback would, in one chunk
            inbox.put("notification")
    assert order == ["caller", "loop:notification"]


async def test_end_wakes_a_waiting_reader() -> None:
    inbox = FrameInbox()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(inbox.wait)
            await anyio.wait_all_tasks_blocked()
            inbox.end()
    assert inbox.ended
    with anyio.fail_after(5):
        await inbox.wait()  # returns at once once ended


# -- FrameReader ----------------------------------------------------------------


class _Fed(FrameReader):
    """A FrameReader filled by the test (as a pipe callback would)."""

    async def _more(self) -> None:
        await self.inbox.wait()
        if self.inbox.ended and not self.inbox.items:
            self.finished = True


async def test_a_reader_hands_out_items_in_order_then_ends() -> None:
    reader = _Fed()
    reader.inbox.put("a")
    got: list[Any] = []

    async def consume() -> None:
        async for item in reader:
            got.append(item)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            assert got == ["a"]
            reader.inbox.put("b")
            reader.inbox.put("c")
            reader.inbox.end()
    assert got == ["a", "b", "c"]
    with pytest.raises(anyio.EndOfStream):
        await reader.receive()


async def test_an_already_queued_item_is_handed_out_after_a_checkpoint() -> None:
    """What the previous item woke runs before the next queued item is handed out."""
    reader = _Fed()
    reader.inbox.put("first")
    reader.inbox.put("second")
    woken = anyio.Event()
    order: list[str] = []

    async def woken_task() -> None:
        await woken.wait()
        order.append("woken")

    async def loop() -> None:
        order.append(await reader.receive())
        woken.set()  # handling "first" wakes someone
        order.append(await reader.receive())

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(woken_task)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(loop)
    assert order == ["first", "woken", "second"]


async def test_a_closed_reader_refuses_and_stops_offering() -> None:
    reader = _Fed()
    taken: list[Any] = []
    reader.take_at_once(lambda item: bool(taken.append(item)) or True)
    reader.inbox.put("x")
    assert taken == ["x"]
    reader.inbox.take_at_once = lambda item: False
    reader.inbox.put("queued")
    await reader.aclose()
    assert reader.inbox.take_at_once is None
    assert not reader.inbox.items  # what was queued is dropped
    with pytest.raises(anyio.ClosedResourceError):
        await reader.receive()


# -- PipeWriter -----------------------------------------------------------------


class Pipe(OpenFds):
    """A real pipe whose write end is non-blocking (as the stdio ends set theirs)."""

    def __init__(self) -> None:
        self.r, self.w = os.pipe()
        flags = fcntl.fcntl(self.w, fcntl.F_GETFL)
        fcntl.fcntl(self.w, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        super().__init__(self.r, self.w)


@pytest.fixture
def pipe() -> Iterator[Pipe]:
    p = Pipe()
    yield p
    p.close_all()


def _fill(fd: int) -> int:
    """Write until the pipe takes no more; how many bytes it took."""
    total = 0
    chunk = b"\0" * 65536
    while True:
        try:
            total += os.write(fd, chunk)
        except BlockingIOError:
            return total


async def _read_all(fd: int, into: bytearray) -> None:
    """Read `fd` until end of file (every write end closed), without blocking the loop."""
    os.set_blocking(fd, False)
    while True:
        await anyio.wait_readable(fd)
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            continue
        if not data:
            return
        into += data


def _frame(n: int) -> Envelope:
    return Envelope(Notification("notifications/message", {"n": n}))


async def test_a_frame_the_pipe_takes_is_written_at_once(pipe: Pipe) -> None:
    r, w = pipe.r, pipe.w
    writer = PipeWriter(w)
    writer.send_nowait(_frame(1))
    await writer.send(_frame(2))
    assert writer.idle
    data = os.read(r, 1 << 16)
    assert data == (
        b'{"jsonrpc":"2.0","method":"notifications/message","params":{"n":1}}\n'
        b'{"jsonrpc":"2.0","method":"notifications/message","params":{"n":2}}\n'
    )


async def test_what_a_full_pipe_refuses_is_flushed_in_order(pipe: Pipe) -> None:
    r, w = pipe.r, pipe.w
    writer = PipeWriter(w)
    head = _fill(w)
    frames = [bytes([65 + i]) * 40_000 for i in range(5)]
    writer.write_nowait(frames[0])  # the pipe takes none of it
    writer.write_nowait(b"small\n")  # behind the backlog, although the pipe has no room anyway
    for frame in frames[1:]:
        writer.write_nowait(frame)
    assert not writer.idle
    received = bytearray()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read_all, r, received)
            await writer.aclose()  # flush ends once the backlog is written
            await writer.flush()
            assert writer.idle
            pipe.close(w)  # so that the reader sees end of file
    assert writer.idle
    assert bytes(received[:head]) == b"\0" * head
    assert bytes(received[head:]) == frames[0] + b"small\n" + b"".join(frames[1:])


class _Counted(PipeWriter):
    def __init__(self, fd: int) -> None:
        super().__init__(fd)
        self.writes = 0

    def write_all(self, data: bytes) -> None:
        self.writes += 1
        super().write_all(data)


async def test_frames_sent_while_a_read_is_handled_go_out_together_when_it_ends(pipe: Pipe) -> None:
    writer, other = _Counted(pipe.w), _Counted(pipe.w)
    seen: list[bytes] = []

    def handle(data: bytes) -> None:
        for n in range(3):
            writer.send_nowait(_frame(n))
            other.send_nowait(_frame(10 + n))
        holding(lambda more: writer.send_nowait(_frame(3)), b"")  # within: the same hold
        seen.append(os.read(pipe.r, 1 << 16) if _readable(pipe.r) else b"")

    holding(handle, b"chunk")
    assert seen == [b""]  # nothing was written while the callback ran
    assert (writer.writes, other.writes) == (1, 1)  # then one write each, in the order sent
    lines = [json.loads(line)["params"]["n"] for line in os.read(pipe.r, 1 << 16).splitlines()]
    assert lines == [0, 1, 2, 3, 10, 11, 12]
    writer.send_nowait(_frame(4))  # outside a callback: at once, as before
    assert writer.writes == 2


async def test_a_held_send_raises_as_a_send_would_and_a_closed_writer_drops_what_it_held(pipe: Pipe) -> None:
    writer = PipeWriter(pipe.w)
    closed = PipeWriter(pipe.w)
    closed.closed = True

    def refused(data: bytes) -> None:
        with pytest.raises(anyio.ClosedResourceError):
            closed.send_nowait(_frame(1))

    holding(refused, b"")

    def then_closed(data: bytes) -> None:
        writer.send_nowait(_frame(1))
        writer.closed = True  # the session closed its stream before the callback ended

    holding(then_closed, b"")  # dropped, as a send to a closed stream would be
    assert not _readable(pipe.r)


def _readable(fd: int) -> bool:
    import select

    return bool(select.select([fd], [], [], 0)[0])


async def test_senders_get_wouldblock_or_wait_past_the_backlog_limit(pipe: Pipe) -> None:
    r, w = pipe.r, pipe.w
    writer = PipeWriter(w)
    _fill(w)
    big = b"x" * BACKLOG_LIMIT
    writer.write_nowait(big)  # the backlog reaches the limit
    with pytest.raises(anyio.WouldBlock):
        writer.send_nowait(_frame(0))
    sent = anyio.Event()
    received = bytearray()

    async def send_late() -> None:
        await writer.send(_frame(1))
        sent.set()

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(send_late)
            await anyio.wait_all_tasks_blocked()
            assert not sent.is_set()  # waits for the backlog to drain
            tg.start_soon(_read_all, r, received)
            async with anyio.create_task_group() as flushing:
                flushing.start_soon(writer.flush)
                await sent.wait()
                await writer.aclose()
            pipe.close(w)
    assert received.endswith(b"x" * 1000 + b'{"jsonrpc":"2.0","method":"notifications/message","params":{"n":1}}\n')
    assert received.count(b'"n":0') == 0  # the refused frame was not written
    assert received.count(b"x") == BACKLOG_LIMIT


async def test_a_broken_pipe_drops_later_sends_silently(pipe: Pipe) -> None:
    r, w = pipe.r, pipe.w
    pipe.close(r)
    writer = PipeWriter(w)
    writer.send_nowait(_frame(1))  # EPIPE: no exception, the reader reports how the peer ended
    assert writer.broken
    writer.send_nowait(_frame(2))
    await writer.send(_frame(3))
    assert writer.idle
    with anyio.fail_after(5):
        await writer.flush()  # nothing to do: returns at once


async def test_a_pipe_broken_under_a_backlog_releases_flush_and_senders(pipe: Pipe) -> None:
    r, w = pipe.r, pipe.w
    writer = PipeWriter(w)
    _fill(w)
    writer.write_nowait(b"y" * BACKLOG_LIMIT)
    sent = anyio.Event()

    async def send_late() -> None:
        await writer.send(_frame(1))
        sent.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(send_late)
            tg.start_soon(writer.flush)
            await anyio.wait_all_tasks_blocked()
            assert not sent.is_set()
            pipe.close(r)  # the peer goes away with our backlog unread
            await sent.wait()  # the waiting sender is released (its frame dropped)
    assert writer.broken
    assert writer.idle


async def test_aclose_refuses_new_frames_and_ends_an_idle_flush(pipe: Pipe) -> None:
    r, w = pipe.r, pipe.w
    writer = PipeWriter(w)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer.flush)
            await anyio.wait_all_tasks_blocked()
            await writer.aclose()  # flush was waiting for work: it returns
    with pytest.raises(anyio.ClosedResourceError):
        writer.send_nowait(_frame(1))
    with pytest.raises(anyio.ClosedResourceError):
        await writer.send(_frame(1))
    pipe.close(w)
    assert os.read(r, 100) == b""


# -- the stdio readers built on them, over real pipes -------------------------------


async def test_error_replies_made_before_the_server_writer_exists_go_out_first(pipe: Pipe) -> None:
    """Bytes already in stdin when the server starts are parsed while its stdout is being
    connected: the error reply for a bad line waits for the writer, then goes out first."""
    from mcpcli.rpc.peer import Peer
    from mcpcli.server.stdio import stdio_streams

    out = Pipe()
    try:
        os.write(pipe.w, b'not json\n{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        pipe.close(pipe.w)
        with anyio.fail_after(10):
            async with stdio_streams(pipe.r, out.w) as streams, Peer(streams) as session:
                await session.wait_closed()
                await session.wait_idle()
        out.close(out.w)
        lines = [json.loads(line) for line in os.read(out.r, 1 << 16).splitlines()]
    finally:
        out.close_all()
    assert [(line["id"], line["error"]["code"]) for line in lines] == [
        (None, -32700),  # the bad line's reply, made before there was a writer
        (1, -32601),  # the session has no handler
    ]


async def test_a_bug_reading_the_servers_stdin_ends_the_input(pipe: Pipe, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpcli.rpc.peer import Peer
    from mcpcli.server import stdio

    def broken(self: Any, data: bytes) -> None:
        raise RuntimeError("bug in the reader")

    monkeypatch.setattr(stdio._Reader, "chunk", broken)
    out = Pipe()
    try:
        with anyio.fail_after(10):
            async with stdio.stdio_streams(pipe.r, out.w) as streams, Peer(streams) as session:
                os.write(pipe.w, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')  # the writer stays open
                await session.wait_closed()  # instead of waiting forever for more input
    finally:
        out.close_all()


async def test_a_bug_reading_the_servers_output_ends_the_client_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from mcpcli.errors import ServerExited, TransportError
    from mcpcli.transports import stdio

    def broken(self: Any, data: bytes) -> None:
        raise RuntimeError("bug in the reader")

    monkeypatch.setattr(stdio._ServerReader, "chunk", broken)
    # A server that writes a line, then waits for input that never ends (it must be killed).
    script = "import sys; sys.stdout.write('{}\\n'); sys.stdout.flush(); sys.stdin.read()"
    transport = stdio.StdioTransport(sys.executable, ["-c", script], quiet=True)
    items: list[Any] = []
    with anyio.fail_after(20):
        async with transport.connect() as (read, _write):
            async for item in read:
                items.append(item)
    assert [type(i) for i in items] == [TransportError, ServerExited]
    assert "reading the server's output failed: RuntimeError: bug in the reader" in str(items[0])
    assert transport.process is not None and transport.process.returncode is not None


async def test_a_server_that_is_not_keeping_up_stops_reading_its_stdin(pipe: Pipe) -> None:
    """Past INBOX_LIMIT queued messages the server pauses reading its stdin (instead of
    buffering without bound) and resumes once the session catches up; every message
    arrives, in order."""
    from mcpcli.rpc.peer import Peer
    from mcpcli.server.stdio import stdio_streams

    count = 3000  # ~300 KB: more than a pipe and one read of it hold
    gate = anyio.Event()
    seen: list[int] = []
    calls: list[str] = []

    async def on_notification(note: Notification, envelope: Envelope) -> None:
        await gate.wait()  # the receive loop is stuck on the first notification
        assert note.params is not None
        seen.append(note.params["n"])

    def watch(inbox: FrameInbox) -> None:
        pause, resume = inbox.pause, inbox.resume
        assert pause is not None and resume is not None  # wired to the pipe transport
        inbox.pause = lambda: (calls.append("pause"), pause())[-1]
        inbox.resume = lambda: (calls.append("resume"), resume())[-1]

    out = Pipe()
    writer = PipeWriter(pipe.w)
    try:
        with anyio.fail_after(20):
            async with (
                stdio_streams(pipe.r, out.w) as streams,
                Peer(streams, on_notification=on_notification),
                anyio.create_task_group() as tg,
            ):
                reader = streams[0]
                assert isinstance(reader, FrameReader)
                watch(reader.inbox)
                tg.start_soon(writer.flush)
                for n in range(count):
                    await writer.send(Envelope(Notification("notifications/message", {"n": n, "pad": "x" * 40})))
                await wait_until_async(lambda: calls, what="the server to pause reading")
                assert calls == ["pause"]
                assert len(reader.inbox.items) < count - 1  # it stopped reading before the end
                gate.set()
                await writer.aclose()  # flush returns once everything is written
                await wait_until_async(lambda: len(seen) == count, what="every notification")
    finally:
        out.close_all()
    assert seen == list(range(count))
    assert calls[:2] == ["pause", "resume"]


# -- a session over a FrameReader: what is taken in the callback, what waits its turn ---


class _Sink:
    """A write stream that keeps what the session sent."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.more = anyio.Event()

    def send_nowait(self, envelope: Envelope) -> None:
        self.sent.append(envelope.message)
        self.more.set()

    async def send(self, envelope: Envelope) -> None:
        self.send_nowait(envelope)

    async def aclose(self) -> None:
        pass

    async def next_request(self) -> Any:
        from mcpcli.core.jsonrpc import Request

        while not any(isinstance(m, Request) for m in self.sent):
            self.more = anyio.Event()
            await self.more.wait()
        found = next(m for m in self.sent if isinstance(m, Request))
        self.sent.remove(found)
        return found


async def test_a_response_waits_behind_a_notification_being_dispatched() -> None:
    """A response is taken in the callback only when the receive loop is idle: behind a
    notification whose handler is still running, it waits its turn (a progress update is
    shown before the answer it precedes)."""
    from mcpcli.core.jsonrpc import Response
    from mcpcli.rpc.peer import Peer

    reader, sink = _Fed(), _Sink()
    gate = anyio.Event()
    order: list[str] = []

    async def on_notification(note: Notification, envelope: Envelope) -> None:
        await gate.wait()
        order.append("notification handled")

    with anyio.fail_after(5):
        async with Peer((reader, sink), on_notification=on_notification) as session:

            async def ask() -> None:
                result = await session.request("x", progress_token=False)
                order.append(f"answered {result}")

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                first = await sink.next_request()
                reader.inbox.put(Envelope(Notification("notifications/message", {})))
                await anyio.wait_all_tasks_blocked()  # the loop is in the handler
                reader.inbox.put(Envelope(Response(first.id, {"n": 1})))
                await anyio.wait_all_tasks_blocked()
                assert order == []  # not answered while the notification is being handled
                gate.set()
            # An idle loop: the response is taken in the callback itself.
            settled = len(order)
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                second = await sink.next_request()
                reader.inbox.put(Envelope(Response(second.id, {"n": 2})))
                assert not reader.inbox.items  # taken at once, not queued
            reader.inbox.end()
    assert order[:settled] == ["notification handled", "answered {'n': 1}"]
    assert order[settled:] == ["answered {'n': 2}"]


async def test_a_request_waits_behind_a_notification_being_dispatched() -> None:
    from mcpcli.core.jsonrpc import Request
    from mcpcli.rpc.peer import Peer, RequestContext

    reader, sink = _Fed(), _Sink()
    gate = anyio.Event()
    order: list[str] = []

    async def on_notification(note: Notification, envelope: Envelope) -> None:
        await gate.wait()
        order.append("notifications/initialized")

    async def on_request(request: Request, ctx: RequestContext) -> dict[str, Any]:
        order.append(request.method)
        return {}

    with anyio.fail_after(5):
        async with Peer((reader, sink), on_request=on_request, on_notification=on_notification):
            reader.inbox.put(Envelope(Notification("notifications/initialized", {})))
            await anyio.wait_all_tasks_blocked()
            reader.inbox.put(Envelope(Request("tools/list", None, 1)))
            await anyio.wait_all_tasks_blocked()
            assert order == []  # the request waits for the notification before it
            gate.set()
            await wait_until_async(lambda: len(order) == 2, what="the request to be handled")
            reader.inbox.put(Envelope(Request("ping", None, 2)))  # an idle loop: started at once
            assert not reader.inbox.items
            await wait_until_async(lambda: len(order) == 3, what="the second request")
            reader.inbox.end()
    assert order == ["notifications/initialized", "tools/list", "ping"]
