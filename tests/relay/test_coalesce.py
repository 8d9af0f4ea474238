"""The relay's coalescing (mcpcli/relay/listings.py): a burst of changes costs at most
one fetch or pass in flight and one after it, and nobody gets an answer older than the
change they could know of."""

from __future__ import annotations

import anyio
import pytest

from mcpcli.relay.listings import Fetches, Reruns

pytestmark = pytest.mark.anyio


async def test_fetches_share_one_in_flight_and_one_after_a_change() -> None:
    fetches: Fetches[int] = Fetches()
    began: list[int] = []
    gates: list[anyio.Event] = []

    async def fetch(generation: int) -> int:
        began.append(generation)
        gate = anyio.Event()
        gates.append(gate)
        await gate.wait()
        return generation

    got: list[int] = []

    async def get() -> None:
        got.append(await fetches.get(fetch))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(get)  # generation 0: one fetch for the three
            await anyio.wait_all_tasks_blocked()
            for _ in range(100):
                fetches.changed()  # a burst while it is in flight
            for _ in range(3):
                tg.start_soon(get)  # these want generation 100: the next fetch
            await anyio.wait_all_tasks_blocked()
            assert began == [0]
            gates[0].set()
            await anyio.wait_all_tasks_blocked()
            assert began == [0, 100]
            assert fetches.current(100) and not fetches.current(0)
            gates[1].set()
    assert sorted(got) == [0, 0, 0, 100, 100, 100]


async def test_a_failed_fetch_answers_nobody_and_a_waiter_fetches_again() -> None:
    fetches: Fetches[str] = Fetches()
    calls: list[int] = []
    first = anyio.Event()

    async def fetch(generation: int) -> str:
        calls.append(generation)
        if len(calls) == 1:
            await first.wait()
            raise RuntimeError("upstream went away")
        return "ok"

    got: list[str] = []
    failed: list[Exception] = []

    async def leader() -> None:
        try:
            await fetches.get(fetch)
        except RuntimeError as exc:
            failed.append(exc)

    async def waiter() -> None:
        got.append(await fetches.get(fetch))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(leader)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(waiter)
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            first.set()
    assert len(failed) == 1 and got == ["ok", "ok"] and calls == [0, 0]


async def test_reruns_run_once_more_after_requests_made_during_a_pass() -> None:
    passes: list[tuple[str, bool]] = []
    gate = anyio.Event()

    async def run(key: str, flag: bool) -> None:
        passes.append((key, flag))
        if len(passes) == 1:
            await gate.wait()

    reruns: Reruns[str] = Reruns(run)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            reruns.request(tg, "tools", False)
            await anyio.wait_all_tasks_blocked()
            for n in range(1000):
                reruns.request(tg, "tools", n == 500)  # one of them says so
            reruns.request(tg, "prompts", False)  # another key runs on its own
            await anyio.wait_all_tasks_blocked()
            assert passes == [("tools", False), ("prompts", False)] and len(reruns) == 1
            gate.set()
    assert passes == [("tools", False), ("prompts", False), ("tools", True)]
    assert len(reruns) == 0
