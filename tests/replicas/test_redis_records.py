"""`RedisRecords`: the task records two replicas share through one real Redis. Each replica is
a `RedisRecords` with its own process id here (one of them a real process, SIGKILLed)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import wait_until, wait_until_async

from mcpcli.errors import UsageError
from mcpcli.server.tasks.records import TaskRecord, principal_key
from mcpcli.server.tasks.redis_records import RedisRecords, redis_url

pytestmark = pytest.mark.peer

ALICE, BOB = principal_key("bearer:alice"), principal_key("bearer:bob")


def _record(task_id: str, owner: str, principal: str = ALICE, status: str = "working",
            ttl: float | None = 60.0) -> TaskRecord:
    now = time.time()
    return TaskRecord(id=task_id, principal=principal, tool="slow", status=status, message=None,
                      created=now, updated=now, ttl_ms=None if ttl is None else int(ttl * 1000),
                      poll_ms=100, expires=None if ttl is None else now + ttl, owner=owner)


@pytest.fixture
def pair(redis_url: str) -> Iterator[tuple[RedisRecords, RedisRecords]]:
    a = RedisRecords(redis_url, "ns", process="replica-a", lease=1.0)
    b = RedisRecords(redis_url, "ns", process="replica-b", lease=1.0)
    yield a, b
    a.close()
    b.close()


def test_a_record_put_by_one_replica_is_read_by_the_other(pair: tuple[RedisRecords, RedisRecords],
                                                          redis_url: str) -> None:
    a, b = pair
    a.put(_record("t1", "replica-a"))
    a.put(_record("t2", "replica-a", principal=BOB))
    got = b.get("t1", time.time())
    assert got is not None and got.owner == "replica-a" and got.status == "working"
    assert [r.id for r in b.by_principal(ALICE, time.time())] == ["t1"]
    assert b.count() == 2 and b.count(BOB) == 1
    # The key expires with the task (no record outlives its ttl in Redis)...
    import redis

    raw = redis.Redis.from_url(redis_url)
    try:
        ttl_ms = raw.pttl("mcpcli:tasks:ns:task:t1")
        assert 0 < ttl_ms <= 60_000  # type: ignore[operator]
    finally:
        raw.close()
    # ...and another served file (namespace) sees none of these.
    other = RedisRecords(redis_url, "other", process="replica-c")
    try:
        assert other.get("t1", time.time()) is None and other.count() == 0
    finally:
        other.close()
    # An expired record is dropped by whichever replica sweeps first, and reported once.
    b.put(_record("t3", "replica-b", ttl=0.001))
    wait_until(lambda: b.get("t3", time.time()) is None, what="t3 to expire")
    assert a.expire(time.time()) == ["t3"] and b.expire(time.time()) == []
    assert b.count() == 2 and b.count(ALICE) == 1  # its index entries went with it


@pytest.mark.anyio
async def test_cancel_input_and_changes_reach_the_replica_that_runs_the_task(
    pair: tuple[RedisRecords, RedisRecords],
) -> None:
    a, b = pair
    cancelled: list[str] = []
    answered: list[tuple[str, Any]] = []
    changes: list[TaskRecord] = []
    a.on_delivery(lambda i, _: cancelled.append(i), lambda i, v: answered.append((i, v)))
    b.on_delivery(lambda i, _: pytest.fail("b runs no task"), lambda i, v: pytest.fail("b runs no task"))
    b.on_change(changes.append)
    a.put(_record("t1", "replica-a"))
    await wait_until_async(lambda: [c.id for c in changes] == ["t1"], what="b to hear of t1")
    b.deliver_input("t1", {"q": {"action": "accept"}})
    await wait_until_async(lambda: answered == [("t1", {"q": {"action": "accept"}})], what="the input on a")
    b.request_cancel("t1")
    await wait_until_async(lambda: cancelled == ["t1"], what="the cancel on a")


@pytest.mark.anyio
async def test_cancel_of_a_task_nobody_runs_is_settled_where_it_is_asked(redis_url: str) -> None:
    """The owner's lease is gone: no one would take the message, so the asking replica's store
    settles the record itself (TaskStore's cancel callback does)."""
    b = RedisRecords(redis_url, "ns", process="replica-b")
    try:
        here: list[str] = []
        b.on_delivery(lambda i, _: here.append(i), lambda i, v: None)
        b.put(_record("t9", "replica-long-gone"))
        b.request_cancel("t9")
        assert here == ["t9"]
    finally:
        b.close()


#: A replica in its own process: stores a running task, says so, then runs until killed.
DOOMED = """
import sys, time
from mcpcli.server.tasks.records import TaskRecord
from mcpcli.server.tasks.redis_records import RedisRecords
r = RedisRecords(sys.argv[1], "ns", process="replica-doomed", lease=1.0)
now = time.time()
r.put(TaskRecord(id="mid", principal="p", tool="slow", status="working", message=None, created=now,
                 updated=now, ttl_ms=60000, poll_ms=100, expires=now + 60, owner="replica-doomed"))
print("running", flush=True)
sys.stdin.read()
"""


@pytest.mark.anyio
async def test_a_killed_replicas_running_task_is_failed_by_a_survivor_after_its_lease(redis_url: str) -> None:
    survivor = RedisRecords(redis_url, "ns", process="replica-b", lease=1.0)
    heard: list[TaskRecord] = []
    survivor.on_change(heard.append)
    with subprocess.Popen([sys.executable, "-c", DOOMED, redis_url], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "running\n"
            record = survivor.get("mid", time.time())
            assert record is not None and record.status == "working"
            proc.kill()  # SIGKILL: no goodbye, the lease just stops being renewed
            proc.wait()
            await wait_until_async(lambda: (r := survivor.get("mid", time.time())) is not None
                                   and r.status == "failed", timeout=15, what="the survivor to fail the task")
            failed = survivor.get("mid", time.time())
            assert failed is not None
            assert failed.message == "the replica running this task stopped (its lease of 1 s ran out)"
            await wait_until_async(lambda: any(r.id == "mid" and r.status == "failed" for r in heard),
                                   what="the survivor's own listeners to hear of it")
        finally:
            if proc.poll() is None:
                proc.kill()
            survivor.close()


def test_the_url_comes_without_a_password_on_argv() -> None:
    with pytest.raises(UsageError, match="visible to every local user") as info:
        redis_url("redis://:hunter2@db:6379/0", {})
    assert "MCP_SERVE_REDIS_URL" in (info.value.hint or "")
    assert redis_url("redis://db:6379/0", {}) == "redis://db:6379/0"
    assert redis_url("redis", {"MCP_SERVE_REDIS_URL": "rediss://:pw@db:6380/1"}) == "rediss://:pw@db:6380/1"
    with pytest.raises(UsageError, match="MCP_SERVE_REDIS_URL is not set"):
        redis_url("redis", {})
    with pytest.raises(UsageError, match="expected redis://"):
        redis_url("redis", {"MCP_SERVE_REDIS_URL": "http://db"})


def test_a_finished_record_is_final(pair: tuple[RedisRecords, RedisRecords]) -> None:
    """A replica whose lease ran out while it still ran the task (a long pause) cannot turn the
    survivor's `failed` back into `completed`."""
    a, b = pair
    a.put(_record("t1", "replica-a"))
    b.put(_record("t1", "replica-a", status="failed"))
    a.put(_record("t1", "replica-a", status="completed"))
    got = b.get("t1", time.time())
    assert got is not None and got.status == "failed"
