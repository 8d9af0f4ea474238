"""The SQLite task records (`mcpcli.server.tasks.sqlite`) under the real runtime, in-process.

A "restart" here is a second `Server` opening the same state directory after
the first one's store is closed: what the file keeps decides what the second
serves (ttl, limits, the result bound, what a record holds of the caller).
The end-to-end restart of `mcp serve --http` is tests/toolsfile/test_task_restart.py.
"""

from __future__ import annotations

import stat
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from server_backends import TaskBackend
from server_support import modern_meta, raw

from mcpcli.core.protocol import TASKS_EXTENSION
from mcpcli.errors import RPCError, TransportError
from mcpcli.rpc.peer import Peer
from mcpcli.server import Server
from mcpcli.server.backend import TaskPolicy
from mcpcli.server.tasks.records import RESTARTED, MemoryRecords
from mcpcli.server.tasks.sqlite import SQLiteRecords

pytestmark = pytest.mark.anyio

JSON = dict[str, Any]
EXT = {"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}}
NOW = TaskPolicy("optional", after=0)


async def req(s: Peer, method: str, params: JSON) -> JSON:
    return await s.request(method, {**params, "_meta": modern_meta(EXT)}, progress_token=False)


async def until(s: Peer, task_id: str, *statuses: str) -> JSON:
    with anyio.fail_after(10):
        while True:
            task = await req(s, "tasks/get", {"taskId": task_id})
            if task["status"] in statuses:
                return task
            await anyio.sleep(0.01)


def server_on(state: Path, **kw: Any) -> Server:
    backend = TaskBackend({"echo": NOW, "slow": NOW, "same_key": NOW})
    return Server(backend, task_records=SQLiteRecords(state), **kw)


async def test_finished_tasks_are_served_after_a_restart_and_running_ones_fail(tmp_path: Path) -> None:
    server = server_on(tmp_path)
    async with raw(server) as s:
        done = (await req(s, "tools/call", {"name": "echo", "arguments": {"text": "kept"}}))["taskId"]
        await until(s, done, "completed")
        running = (await req(s, "tools/call", {"name": "slow", "arguments": {}}))["taskId"]
        waiting = (await req(s, "tools/call", {"name": "same_key", "arguments": {}}))["taskId"]
        asked = await until(s, waiting, "input_required")
        assert asked["inputRequests"]
    server.tasks.close()

    again = server_on(tmp_path)
    async with raw(again) as s:
        kept = await req(s, "tasks/get", {"taskId": done})
        assert kept["status"] == "completed" and kept["result"]["content"][0]["text"] == "kept"
        for task_id in (running, waiting):
            lost = await req(s, "tasks/get", {"taskId": task_id})
            assert (lost["status"], lost["statusMessage"]) == ("failed", RESTARTED)
            assert lost["error"]["message"] == RESTARTED and "inputRequests" not in lost
        await req(s, "tasks/cancel", {"taskId": running})  # ended: acknowledged, and still failed
        assert (await req(s, "tasks/get", {"taskId": running}))["status"] == "failed"
    again.tasks.close()


async def test_ttl_expiry_holds_across_a_restart_and_is_swept_at_start(tmp_path: Path) -> None:
    server = server_on(tmp_path)
    async with server:
        short = server.tasks.create("alice", TaskPolicy("optional", after=0, ttl=0.2))
        long = server.tasks.create("alice", NOW)
        assert short is not None and long is not None
        short.finish("done", {"content": []})
        long.finish("done", {"content": []})
    server.tasks.close()
    with anyio.fail_after(5):
        while time.time() < short.created + 0.2:
            await anyio.sleep(0.02)

    records = SQLiteRecords(tmp_path)
    assert records.count() == 2  # the file still holds it until a sweep
    again = Server(TaskBackend({}), task_records=records)  # sweeps at start
    assert records.count() == 1
    with pytest.raises(RPCError):
        again.tasks.find(short.id, "alice")
    assert again.tasks.find(long.id, "alice").status == "completed"
    again.tasks.close()


async def test_limits_count_the_stored_tasks(tmp_path: Path) -> None:
    server = server_on(tmp_path)
    async with server:
        first, second = server.tasks.create("alice", NOW), server.tasks.create("alice", NOW)
        assert first is not None and second is not None
        first.finish("done", {"content": []})
    server.tasks.close()

    # The restarted server counts the two stored tasks against its bounds.
    again = server_on(tmp_path, max_tasks=3, max_tasks_per_principal=2)
    async with again:
        store = again.tasks
        assert len(store) == 2
        third = store.create("alice", NOW)  # alice is full: her oldest finished task goes
        assert third is not None
        with pytest.raises(RPCError):
            store.find(first.id, "alice")
        assert store.find(second.id, "alice").status == "failed"  # it ran when the server stopped
        fourth = store.create("alice", NOW)  # the failed one goes next
        assert fourth is not None
        assert store.create("alice", NOW) is None  # both of hers run: no task for her call
        assert store.create("bob", NOW) is not None  # bob has room of his own: 3 in all now
        assert store.create("carol", NOW) is None  # the total bound, all running
        assert len(store) == 3
    again.tasks.close()


async def test_an_oversized_result_fails_the_task_with_a_clear_message(tmp_path: Path) -> None:
    server = server_on(tmp_path, max_task_result=64)
    async with raw(server) as s:
        small = (await req(s, "tools/call", {"name": "echo", "arguments": {"text": "ok"}}))["taskId"]
        assert (await until(s, small, "completed", "failed"))["status"] == "completed"
        big = (await req(s, "tools/call", {"name": "echo", "arguments": {"text": "x" * 200}}))["taskId"]
        failed = await until(s, big, "completed", "failed")
        assert failed["status"] == "failed"
        assert "too large to keep" in failed["statusMessage"] and "the limit is 64" in failed["statusMessage"]
        assert "x" * 200 not in (tmp_path / "tasks.db").read_bytes().decode("latin-1") + "".join(
            p.read_bytes().decode("latin-1") for p in tmp_path.glob("tasks.db-wal"))
    server.tasks.close()


async def test_the_file_is_private_and_keeps_no_principal(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    state.chmod(0o755)
    records = SQLiteRecords(state)
    server = Server(TaskBackend({}), task_records=records)
    async with server:
        task = server.tasks.create("bearer:credential-of-alice", NOW)
        assert task is not None
    records.close()
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    for path in state.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
        assert b"credential-of-alice" not in path.read_bytes()


async def test_one_server_per_state_directory_and_a_broken_file_is_a_clear_error(tmp_path: Path) -> None:
    first = SQLiteRecords(tmp_path / "a")
    with pytest.raises(TransportError, match="another mcp serve keeps its tasks in"):
        SQLiteRecords(tmp_path / "a")
    first.close()
    SQLiteRecords(tmp_path / "a").close()  # free again once the first is closed

    broken = tmp_path / "b"
    broken.mkdir()
    (broken / "tasks.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(TransportError, match="cannot open the task store"):
        SQLiteRecords(broken)


async def test_the_memory_store_is_the_runtimes_default() -> None:
    server = Server(TaskBackend({}))
    assert isinstance(server.tasks.records, MemoryRecords)
    assert server.tasks.max_result_bytes is None  # today's behaviour: no bound


async def test_expired_tasks_are_swept_while_nobody_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpcli.server.tasks import store as store_module

    monkeypatch.setattr(store_module, "SWEEP_INTERVAL", 0.05)
    records = SQLiteRecords(tmp_path)
    server = Server(TaskBackend({}), task_records=records)
    async with server:
        task = server.tasks.create("alice", TaskPolicy("optional", after=0, ttl=0.1))
        assert task is not None
        task.finish("done", {"content": []})
        assert records.count() == 1
        with anyio.fail_after(10):
            while records.count():  # no request comes: the sweeper drops it from the file
                await anyio.sleep(0.05)
    records.close()
