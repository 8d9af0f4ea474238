"""JobSet (mcpcli/taskset.py): plain event-loop tasks, each in its own anyio cancel
scope, cancelled and awaited together as a task group's exit would."""

from __future__ import annotations

import gc

import anyio
import anyio.lowlevel
import pytest

from mcpcli.jobs import JobSet

pytestmark = pytest.mark.anyio


async def test_tasks_run_are_counted_and_waited_for() -> None:
    errors: list[Exception] = []
    gate = anyio.Event()
    done: list[int] = []

    async def work(n: int) -> None:
        await gate.wait()
        done.append(n)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tasks = JobSet(tg, errors.append)
            await tasks.wait()  # nothing running: returns at once
            for n in range(3):
                tasks.start(work, n)
            assert len(tasks) == 3
            gc.collect()  # the set holds its tasks (the loop keeps only weak references)
            await anyio.wait_all_tasks_blocked()
            assert done == []
            gate.set()
            await tasks.wait()
            assert len(tasks) == 0
            # Usable again once empty.
            tasks.start(work, 3)
            await tasks.wait()
    assert sorted(done) == [0, 1, 2, 3]
    assert errors == []


async def test_each_task_has_its_own_scope() -> None:
    errors: list[Exception] = []
    cancelled: list[str] = []
    finished: list[str] = []
    gate = anyio.Event()

    async def work(name: str) -> None:
        try:
            await gate.wait()
        except anyio.get_cancelled_exc_class():
            cancelled.append(name)
            raise
        finished.append(name)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tasks = JobSet(tg, errors.append)
            a = tasks.start(work, "a")
            given = anyio.CancelScope()
            b = tasks.start(work, "b", scope=given)
            assert b is given  # the caller's scope is the one that runs the task
            assert a is not b
            await anyio.wait_all_tasks_blocked()
            b.cancel()
            await anyio.wait_all_tasks_blocked()
            assert cancelled == ["b"]
            assert len(tasks) == 1
            gate.set()
            await tasks.wait()
    assert finished == ["a"]
    assert errors == []  # a cancelled task is no error


async def test_cancellation_is_level_triggered() -> None:
    """Like anyio's own scopes: a task that swallows one cancellation is cancelled again
    at its next await (it cannot outlive cancel_all by catching it)."""
    errors: list[Exception] = []
    seen: list[str] = []

    async def stubborn() -> None:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            seen.append("first")
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            seen.append("again")
            raise

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tasks = JobSet(tg, errors.append)
            tasks.start(stubborn)
            await anyio.wait_all_tasks_blocked()
            tasks.cancel_all()
            await tasks.wait()
    assert seen == ["first", "again"]
    assert errors == []


async def test_an_escaping_exception_goes_to_on_error_and_spares_the_others() -> None:
    errors: list[Exception] = []
    gate = anyio.Event()
    finished: list[str] = []

    async def broken() -> None:
        raise ZeroDivisionError("bug")

    async def fine() -> None:
        await gate.wait()
        finished.append("fine")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tasks = JobSet(tg, errors.append)
            tasks.start(fine)
            tasks.start(broken)
            await anyio.wait_all_tasks_blocked()
            assert [type(e) for e in errors] == [ZeroDivisionError]
            assert len(tasks) == 1  # the failed one is forgotten
            gate.set()
            await tasks.wait()
    assert finished == ["fine"]


async def test_aclose_cancels_and_waits_even_when_its_caller_is_cancelled() -> None:
    errors: list[Exception] = []
    cleaned: list[int] = []
    returned = False

    async def with_cleanup(n: int) -> None:
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                for _ in range(3):  # cleanup that takes a few turns
                    await anyio.lowlevel.checkpoint()
            cleaned.append(n)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tasks = JobSet(tg, errors.append)
            for n in range(4):
                tasks.start(with_cleanup, n)
            await anyio.wait_all_tasks_blocked()
            with anyio.CancelScope() as outer:
                outer.cancel()  # the owner is being torn down itself
                await tasks.aclose()
                returned = True
            assert returned  # aclose returned normally, not by the caller's cancellation
            assert sorted(cleaned) == [0, 1, 2, 3]  # every task finished its cleanup
            assert len(tasks) == 0
    assert errors == []


async def test_a_task_started_after_aclose_is_not_left_running() -> None:
    errors: list[Exception] = []
    async with anyio.create_task_group() as tg:
        tasks = JobSet(tg, errors.append)
        tasks.start(anyio.sleep_forever)
        await tasks.aclose()
        try:
            tasks.start(anyio.sleep_forever)  # a late starter (a request still being read)
        except RuntimeError:
            return  # refusing it is fine too
        with anyio.fail_after(10):  # bounded: a task left running would hang here
            await tasks.wait()  # it was cancelled like the rest, so it ends on its own
        assert len(tasks) == 0
