"""The supervised upstream (mcpcli/relay/upstream.py): the backoff schedule, and the
supervisor under the daemon's and the gateway's policies, driven by a script of
connections instead of servers (no process; delays of zero, or ones nobody waits out)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from mcpcli.errors import TransportError
from mcpcli.relay.upstream import Backoff, Owner, Policy, Retries, Supervisor

#: The two configurations the relay's users run (`mcpcli.daemon.lifecycle`, `mcpcli.gateway.link`).
DAEMON = Backoff(first=0.5, cap=30.0, attempts=5, stable_after=60.0)
GATEWAY = Backoff(first=0.5, cap=30.0)


def schedule(retries: Retries, failures: int) -> list[float | None]:
    return [retries.next() for _ in range(failures)]


def test_the_daemons_backoff_doubles_to_five_tries() -> None:
    assert schedule(Retries(DAEMON), 7) == [0.5, 1.0, 2.0, 4.0, 8.0, None, None]


def test_the_gateways_backoff_doubles_to_its_cap_without_end() -> None:
    assert schedule(Retries(GATEWAY), 9) == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


def test_a_connection_up_long_enough_forgives_the_failures_before_it() -> None:
    retries = Retries(DAEMON)
    schedule(retries, 3)
    retries.up_for(59.9)
    assert retries.next() == 4.0  # not up long enough: the count goes on
    retries.up_for(60.0)
    assert retries.next() == 0.5
    gateway = Retries(GATEWAY)
    schedule(gateway, 4)
    gateway.up_for(30.0)  # without `stable_after`: the cap
    assert gateway.next() == 0.5


def test_a_reset_starts_the_count_again_and_a_first_delay_past_the_cap_is_kept_once() -> None:
    retries = Retries(DAEMON)
    schedule(retries, 5)
    retries.reset()
    assert retries.next() == 0.5
    assert schedule(Retries(Backoff(first=60.0, cap=30.0)), 3) == [60.0, 30.0, 30.0]


class FakeSession:
    def __init__(self) -> None:
        self.ended = anyio.Event()
        self.closed: Exception | None = None

    async def wait_closed(self) -> None:
        await self.ended.wait()

    def end(self, reason: Exception | None = None) -> None:
        self.closed = reason
        self.ended.set()


class Script:
    """Connections in turn: an exception (connecting fails) or "up" (a fake client)."""

    def __init__(self, *steps: Exception | str) -> None:
        self.steps = list(steps)
        self.sessions: list[FakeSession] = []

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Any]:
        assert self.steps, "no more connections scripted"
        step = self.steps.pop(0)
        if isinstance(step, Exception):
            raise step
        session = FakeSession()
        self.sessions.append(session)
        yield SimpleNamespace(peer=session)


class Recorder(Owner):
    """Writes down each hook; `on_up` runs when a connection is up."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.up = anyio.Event()
        self.resting = anyio.Event()
        self.retried = anyio.Event()
        self.on_up: list[Any] = []

    def connecting(self) -> None:
        self.events.append("connecting")

    def connected(self, client: Any) -> None:
        self.events.append("connected")
        self.up.set()
        if self.on_up:
            self.on_up.pop(0)(client)

    def disconnected(self) -> None:
        self.events.append("disconnected")

    def ended(self, reason: Exception | None, *, was_up: bool) -> None:
        self.events.append(("ended", str(reason) if reason else None, was_up))

    def retrying(self, delay: float) -> None:
        self.events.append(("retrying", delay))
        self.retried.set()

    def restarting(self) -> None:
        self.events.append("restarting")

    async def rest(self, wake: anyio.Event) -> None:
        self.events.append("rest")
        self.resting.set()
        await wake.wait()


def crash(client: Any) -> None:
    client.peer.end(TransportError("the server exited"))


pytestmark = pytest.mark.anyio


async def test_gateway_a_failed_connect_stops_until_the_backoff_has_passed() -> None:
    script = Script(TransportError("refused"))
    owner = Recorder()
    supervisor = Supervisor(script.connect, owner, Policy(backoff=Backoff(60.0, 60.0)))
    with anyio.fail_after(10):
        await supervisor.run()
    assert owner.events == ["connecting", "disconnected", ("ended", "refused", False)]
    assert not supervisor.running and not supervisor.may_start()
    assert supervisor.retry_at > anyio.current_time() + 59


async def test_gateway_a_lost_connection_is_made_again_with_the_backoff() -> None:
    script = Script("up", "up", TransportError("refused"))
    owner = Recorder()
    owner.on_up = [crash, crash]
    supervisor = Supervisor(script.connect, owner, Policy(backoff=Backoff(0.0, 0.0)))
    with anyio.fail_after(10):
        await supervisor.run()
    lost = ("ended", "the server exited", True)
    assert owner.events == [
        "connecting", "connected", "disconnected", lost, ("retrying", 0.0),
        "connecting", "connected", "disconnected", lost, ("retrying", 0.0),
        "connecting", "disconnected", ("ended", "refused", False),
    ]
    assert supervisor.ever_up and supervisor.client is None


async def test_daemon_on_failure_retries_a_failed_reconnection_then_waits_for_a_restart() -> None:
    failures = [TransportError("refused")] * 2
    script = Script("up", *failures, "up")
    owner = Recorder()
    owner.on_up = [crash]
    policy = Policy(backoff=Backoff(0.0, 0.0, attempts=2), after_lost=True, after_failed=True, otherwise="wait")
    supervisor = Supervisor(script.connect, owner, policy)
    async with anyio.create_task_group() as tg:
        tg.start_soon(supervisor.run)
        with anyio.fail_after(10):
            await owner.resting.wait()
        assert owner.events[-3:] == ["disconnected", ("ended", "refused", False), "rest"]
        assert owner.events.count(("retrying", 0.0)) == 2  # two tries in a row, then rest
        owner.up = anyio.Event()
        assert supervisor.restart()  # `mcp session restart`
        with anyio.fail_after(10):
            await owner.up.wait()
        assert owner.events[-3:] == ["restarting", "connecting", "connected"]
        tg.cancel_scope.cancel()
    assert owner.events[-1] == "disconnected"


async def test_daemon_restart_no_waits_and_never_retries_on_its_own() -> None:
    script = Script("up")
    owner = Recorder()
    owner.on_up = [crash]
    supervisor = Supervisor(script.connect, owner, Policy(after_lost=False, otherwise="wait"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(supervisor.run)
        with anyio.fail_after(10):
            await owner.resting.wait()
        tg.cancel_scope.cancel()
    assert ("retrying", 0.5) not in owner.events and owner.events[-1] == "rest"


async def test_a_restart_while_up_ends_the_connection_and_makes_it_again_at_once() -> None:
    script = Script("up", "up")
    owner = Recorder()
    supervisor = Supervisor(script.connect, owner, Policy(backoff=Backoff(60.0, 60.0), otherwise="wait"))
    supervisor.retries.failures = 3
    async with anyio.create_task_group() as tg:
        tg.start_soon(supervisor.run)
        with anyio.fail_after(10):
            await owner.up.wait()
        owner.up = anyio.Event()
        assert supervisor.restart()
        with anyio.fail_after(10):
            await owner.up.wait()
        assert supervisor.retries.failures == 0
        assert not script.sessions[0].ended.is_set()  # ended by us, not by the server
        tg.cancel_scope.cancel()
    assert owner.events[:6] == ["connecting", "connected", "disconnected", "restarting", "connecting", "connected"]


async def test_nothing_to_restart_before_it_runs_or_while_it_waits_out_a_delay() -> None:
    """(The daemon's `restart` op then waits for the coming connection.)"""
    assert not Supervisor(Script().connect, Recorder(), Policy()).restart()
    owner = Recorder()
    owner.on_up = [crash]
    supervisor = Supervisor(Script("up").connect, owner, Policy(backoff=Backoff(3600.0, 3600.0)))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(supervisor.run)
            await owner.retried.wait()
            assert not supervisor.restart()
            supervisor.close()


async def test_close_ends_the_connection_and_a_pause_and_nothing_is_made_again() -> None:
    script = Script("up", "up")
    owner = Recorder()
    supervisor = Supervisor(script.connect, owner, Policy(backoff=Backoff(3600.0, 3600.0)))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(supervisor.run)
            await owner.up.wait()
            supervisor.close()
    assert owner.events == ["connecting", "connected", "disconnected", ("ended", None, True)]
    owner.events.clear()
    owner.on_up = [crash]
    again = Supervisor(Script("up").connect, owner, Policy(backoff=Backoff(3600.0, 3600.0)))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(again.run)
            await owner.retried.wait()
            again.close()  # wakes the hour's pause
    assert not again.running and owner.events[-1] == ("retrying", 3600.0)
