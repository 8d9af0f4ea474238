"""Faults around the stdio hot path (no pump tasks): a sender stuck behind a full pipe,
a connect cancelled before it is set up, a result JSON cannot carry, an early answer
that cannot be sent, and a bug inside a pipe callback."""

from __future__ import annotations

import math
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from helpers import fake_server

from mcpcli.core.jsonrpc import Request
from mcpcli.errors import RPCError
from mcpcli.rpc.peer import Peer, RequestContext
from mcpcli.server.stdio import stdio_streams
from mcpcli.transports import Envelope, Streams
from mcpcli.transports import stdio as stdio_transport
from mcpcli.transports.lines import PipeWriter
from mcpcli.transports.stdio import StdioTransport

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def _pipes() -> AsyncIterator[tuple[Streams, Streams]]:
    """(client side, server side) over two real pipes."""
    to_server_r, to_server_w = os.pipe()
    to_client_r, to_client_w = os.pipe()
    try:
        async with (
            stdio_streams(to_server_r, to_client_w) as server_side,
            stdio_streams(to_client_r, to_server_w) as client_side,
        ):
            yield client_side, server_side
    finally:
        for fd in (to_server_r, to_server_w, to_client_r, to_client_w):
            os.close(fd)


async def test_a_sender_waiting_for_room_is_let_go_when_the_flusher_stops() -> None:
    """The peer stopped reading and the backlog is full: a sender waiting for room must
    not wait forever once shutdown stops the flusher (it finds the writer closed)."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    writer = PipeWriter(write_end)
    big = Envelope(Request("x", {"pad": "p" * 65536}, 1))
    outcome: list[str] = []
    done = anyio.Event()
    try:
        async with anyio.create_task_group() as tg:
            flusher = anyio.CancelScope()

            async def flush() -> None:
                with flusher:
                    await writer.flush()

            async def sender() -> None:
                try:
                    await writer.send(big)
                    outcome.append("sent")
                except anyio.ClosedResourceError:
                    outcome.append("closed")
                done.set()

            tg.start_soon(flush)
            while True:  # fill the pipe and the backlog past its limit
                try:
                    writer.send_nowait(big)
                except anyio.WouldBlock:
                    break
            assert not writer.idle
            tg.start_soon(sender)
            await anyio.wait_all_tasks_blocked()
            assert outcome == []  # waiting for room
            await writer.aclose()
            flusher.cancel()  # what shutdown does to a flusher stuck on a full pipe
            with anyio.fail_after(10):
                await done.wait()
    finally:
        os.close(read_end)
        os.close(write_end)
    assert outcome == ["closed"]


async def test_a_connect_cancelled_before_it_is_set_up_leaves_no_server(tmp_path: Any) -> None:
    """Cancelled at its first checkpoint (Ctrl-C during start-up, a connect timeout):
    the server that was started is still shut down and forgotten."""
    argv = fake_server()
    transport = StdioTransport(argv[0], argv[1:], quiet=True)
    with anyio.CancelScope() as scope:
        scope.cancel()
        async with transport.connect():
            pytest.fail("the body of a cancelled connect ran")
    assert transport.process is not None
    assert transport.process.returncode is not None
    assert transport not in stdio_transport._LIVE


async def test_a_result_json_cannot_carry_gets_an_internal_error() -> None:
    """A handler returning NaN (the encoder refuses it): the request is answered with
    -32603 instead of never, and the session says why once."""
    reported: list[Exception] = []

    async def handler(request: Request, ctx: RequestContext) -> dict[str, Any]:
        return {"value": math.nan} if request.method == "nan" else {"ok": True}

    async with _pipes() as (client_side, server_side):
        async with (
            Peer(server_side, on_request=handler, on_error=reported.append),
            Peer(client_side) as client,
        ):
            with anyio.fail_after(10):
                with pytest.raises(RPCError, match="Internal error"):
                    await client.request("nan", {}, progress_token=False)
                assert await client.request("ok", {}, progress_token=False) == {"ok": True}
    assert len(reported) == 1


async def test_an_early_answer_that_cannot_be_sent_changes_nothing() -> None:
    """answer_now whose answer cannot be encoded raises to its caller, and the request is
    still answered when the handler returns (nothing was marked answered)."""
    raised: list[str] = []

    async def handler(request: Request, ctx: RequestContext) -> dict[str, Any]:
        try:
            await ctx.answer_now({"value": math.nan})
        except ValueError:
            raised.append("ValueError")
        return {"late": True}

    async with _pipes() as (client_side, server_side):
        async with Peer(server_side, on_request=handler), Peer(client_side) as client:
            with anyio.fail_after(10):
                assert await client.request("x", {}, progress_token=False) == {"late": True}
    assert raised == ["ValueError"]


async def test_a_bug_in_the_servers_pipe_callback_ends_the_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader bug at end of input (here: in the end-of-input hook) is one log line and
    the end of the stream, not a reader that waits forever."""
    from mcpcli.server import stdio as server_stdio

    to_server_r, to_server_w = os.pipe()
    to_client_r, to_client_w = os.pipe()
    try:
        def broken_hook() -> None:
            raise RuntimeError("boom")

        async with server_stdio._stdio(to_server_r, to_client_w, 1 << 20, broken_hook) as ((read, _write), _io):
            os.write(to_server_w, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
            os.close(to_server_w)
            to_server_w = -1
            items: list[Any] = []
            with anyio.fail_after(10):
                async for item in read:
                    items.append(item)
        assert [i.message for i in items] == [Request("ping", None, 1)]
    finally:
        for fd in (to_server_r, to_server_w, to_client_r, to_client_w):
            if fd >= 0:
                os.close(fd)
