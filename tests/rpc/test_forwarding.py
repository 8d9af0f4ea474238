"""Requests passed through two peers whole (`Peer(relay=)`, `Peer.forward`), and `Deadlines`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from mcpcli.core.jsonrpc import ErrorObject, ErrorResponse, Request, Response
from mcpcli.errors import RequestTimeout, RPCError
from mcpcli.rpc.forwarding import Deadlines
from mcpcli.rpc.peer import Peer, RequestContext
from mcpcli.transports import Envelope
from mcpcli.transports.memory import memory_pair

pytestmark = pytest.mark.anyio

JSON = dict[str, Any]


class Passed:
    """One request the relay below took: `Relayed` downstream, `Forward` upstream."""

    def __init__(self, relay: Relay, request: Request, upstream_id: int) -> None:
        self.relay, self.request, self.upstream_id = relay, request, upstream_id

    def answered(self, message: Response | ErrorResponse) -> None:
        if isinstance(message, Response):
            self.relay.down.answer_relayed(Response(self.request.id, message.result))
        else:
            self.relay.down.answer_relayed(ErrorResponse(self.request.id, message.error))

    def progressed(self, params: JSON) -> None:
        self.relay.progress.append(params)

    def failed(self, exc: Exception) -> None:
        self.relay.failures.append(exc)
        self.relay.down.answer_relayed(ErrorResponse(self.request.id, ErrorObject(-32000, f"upstream: {exc}")))

    def cancel(self) -> None:
        self.relay.cancelled.append(self.request.id)
        self.relay.up.unforward(self.upstream_id, "cancelled downstream")


class Relay:
    """Passes every request but `local/*` through to the upstream peer."""

    def __init__(self) -> None:
        self.down: Peer
        self.up: Peer
        self.progress: list[JSON] = []
        self.failures: list[Exception] = []
        self.cancelled: list[Any] = []
        self.taken: list[Passed] = []

    def __call__(self, envelope: Envelope, request: Request) -> Passed | None:
        if request.method.startswith("local/"):
            return None
        upstream_id = self.up.next_id()
        passed = Passed(self, request, upstream_id)
        if not self.up.forward(Request(request.method, request.params, upstream_id), passed):
            return None
        self.taken.append(passed)
        return passed


async def upstream_handler(request: Request, ctx: RequestContext) -> JSON:
    if request.method == "echo":
        return {"echo": request.params}
    if request.method == "refuse":
        raise RPCError(-32001, "no", {"why": "test"})
    if request.method == "forever":
        try:
            await anyio.sleep_forever()
        finally:
            UPSTREAM_CANCELLED.set()
    raise RPCError(-32601, "nope")


UPSTREAM_CANCELLED = anyio.Event()


async def local_handler(request: Request, ctx: RequestContext) -> JSON:
    return {"local": True}


@asynccontextmanager
async def chain(relay: Relay) -> AsyncIterator[tuple[Peer, Peer]]:
    """client -> (down | relay | up) -> upstream server; yields (client, upstream server)."""
    global UPSTREAM_CANCELLED
    UPSTREAM_CANCELLED = anyio.Event()
    async with memory_pair() as (a, b), memory_pair() as (c, d):
        async with Peer(d, on_request=upstream_handler) as server, Peer(c) as up, \
                Peer(b, on_request=local_handler, relay=relay) as down, Peer(a) as client:
            relay.down, relay.up = down, up
            yield client, server


async def test_a_relayed_request_is_answered_with_the_upstreams_answer() -> None:
    relay = Relay()
    with anyio.fail_after(5):
        async with chain(relay) as (client, _server):
            results = {}

            async def one(n: int) -> None:
                results[n] = await client.request("echo", {"n": n}, progress_token=False)

            async with anyio.create_task_group() as tg:
                for n in range(20):
                    tg.start_soon(one, n)
            assert results == {n: {"echo": {"n": n}} for n in range(20)}
            with pytest.raises(RPCError) as caught:
                await client.request("refuse")
            assert (caught.value.code, caught.value.rpc_message, caught.value.data) == (-32001, "no", {"why": "test"})
            assert await client.request("local/x") == {"local": True}  # declined: handled here
    assert len(relay.taken) == 21


async def test_cancelling_a_relayed_request_cancels_it_upstream() -> None:
    relay = Relay()
    with anyio.fail_after(5):
        async with chain(relay) as (client, _server):
            with pytest.raises(RequestTimeout):
                await client.request("forever", timeout=0.05)
            await UPSTREAM_CANCELLED.wait()
            assert len(relay.cancelled) == 1
            # Its answer would be dropped; the next request is answered as usual.
            assert await client.request("echo", {"again": 1}) != {}


async def test_the_upstream_going_away_fails_what_was_forwarded() -> None:
    relay = Relay()
    with anyio.fail_after(5):
        async with memory_pair() as (a, b), memory_pair() as (c, d):
            async with Peer(c) as up, Peer(b, relay=relay) as down, Peer(a) as client:
                relay.down, relay.up = down, up
                async with anyio.create_task_group() as tg:
                    errors: list[RPCError] = []

                    async def ask() -> None:
                        with pytest.raises(RPCError) as caught:
                            await client.request("forever")
                        errors.append(caught.value)

                    tg.start_soon(ask)
                    while not relay.taken:
                        await anyio.wait_all_tasks_blocked()
                    await d[1].aclose()  # the upstream server's side ends: EOF to `up`
                    await d[0].aclose()
                assert [e.rpc_message for e in errors] == [f"upstream: {relay.failures[0]}"]


async def test_the_downstream_peer_ending_lets_go_of_what_it_relayed() -> None:
    relay = Relay()
    with anyio.fail_after(5):
        async with memory_pair() as (a, b), memory_pair() as (c, d):
            async with Peer(d, on_request=upstream_handler) as _server, Peer(c) as up:
                relay.up = up
                async with Peer(a) as client:
                    async with Peer(b, relay=relay) as down:
                        relay.down = down
                        async with anyio.create_task_group() as tg:
                            tg.start_soon(client.request, "forever")
                            while not relay.taken:
                                await anyio.wait_all_tasks_blocked()
                            tg.cancel_scope.cancel()  # cancelling also tells `down`...
                    # ...or `down` ends with it in flight: either way it is let go.
                await UPSTREAM_CANCELLED.wait()
    assert len(relay.cancelled) == 1


async def test_a_relay_hands_a_request_back_to_be_handled_as_usual() -> None:
    held: list[tuple[Envelope, Request]] = []

    class Holding(Relay):
        def __call__(self, envelope: Envelope, request: Request) -> Passed | None:
            held.append((envelope, request))
            return Passed(self, request, 0)

    async def handler(request: Request, ctx: RequestContext) -> JSON:
        return {"adopted": request.params}

    relay = Holding()
    with anyio.fail_after(5):
        async with chain(relay) as (client, _server):
            async with anyio.create_task_group() as tg:
                answers: list[JSON] = []

                async def ask() -> None:
                    answers.append(await client.request("x", {"n": 1}, progress_token=False))

                tg.start_soon(ask)
                while not held:
                    await anyio.wait_all_tasks_blocked()
                relay.down.adopt_relayed(*held[0], handler)
                relay.down.adopt_relayed(*held[0], handler)  # a second time: nothing left to adopt
            assert answers == [{"adopted": {"n": 1}}]


async def test_deadlines_end_what_is_past_its_own_and_only_that() -> None:
    class Timed:
        def __init__(self, deadline: float) -> None:
            self.at = deadline
            self.ended = anyio.Event()

        def deadline(self) -> float:
            return self.at

        def expired(self) -> None:
            self.ended.set()

    deadlines = Deadlines()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            now = anyio.current_time()
            soon, moved, gone, never = Timed(now + 0.02), Timed(now + 0.02), Timed(now + 0.02), Timed(float("inf"))
            deadlines.add(never, tg)
            deadlines.add(soon, tg)  # earlier than the watcher's wake: it is woken
            deadlines.add(moved, tg)
            deadlines.discard(deadlines.add(gone, tg))
            moved.at = now + 0.1  # progress moved it
            await soon.ended.wait()
            assert not moved.ended.is_set()
            await moved.ended.wait()
            assert not gone.ended.is_set() and not never.ended.is_set()
            assert len(deadlines) == 1
            tg.cancel_scope.cancel()
