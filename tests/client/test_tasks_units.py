"""The task machinery in the library: wire shapes of both eras, polling bounds, and a
task followed in-process (progress that outlives the request, notifications)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from client.task_helpers import FAKE_TASKS
from mcpcli.client import Client, ClientOptions
from mcpcli.client.tasks import TaskOptions
from mcpcli.core.tasks import MAX_POLL, MIN_POLL, Task, should_augment, task_of, with_extension
from mcpcli.transports.stdio import StdioTransport

LEGACY_CAPS: dict[str, Any] = {"tasks": {"requests": {"tools": {"call": {}}}}}


def test_a_created_task_in_either_era() -> None:
    legacy = task_of({"task": {"taskId": "a", "status": "working", "ttl": 6000, "pollInterval": 500}},
                     "legacy")
    assert legacy is not None
    assert (legacy.task_id, legacy.poll_interval_ms, legacy.ttl_ms) == ("a", 500, 6000)
    modern = task_of({"resultType": "task", "taskId": "b", "status": "working", "ttlMs": None,
                      "pollIntervalMs": 250}, "modern")
    assert modern is not None
    assert (modern.task_id, modern.poll_interval_ms, modern.ttl_ms) == ("b", 250, None)
    # Ordinary results are not tasks, whatever they contain.
    assert task_of({"content": [], "task": {"taskId": "x", "status": "working"}}, "legacy") is None
    assert task_of({"resultType": "complete", "content": []}, "modern") is None


@pytest.mark.parametrize(("interval", "low", "high"), [
    (None, 1.0, 1.1),           # no suggestion: one second
    (0, MIN_POLL, MIN_POLL * 1.1),
    (500, 0.5, 0.55),
    (10**9, MAX_POLL, MAX_POLL * 1.1),
])
def test_poll_delay_honours_the_server_within_bounds(interval: int | None, low: float, high: float) -> None:
    task = Task("t", "working", poll_interval_ms=interval)
    for _ in range(20):
        assert low <= task.poll_delay() <= high


def test_augmentation_follows_capability_and_tool_policy() -> None:
    required = {"execution": {"taskSupport": "required"}}
    optional = {"execution": {"taskSupport": "optional"}}
    assert should_augment(LEGACY_CAPS, required, "auto")
    assert not should_augment(LEGACY_CAPS, optional, "auto")
    assert should_augment(LEGACY_CAPS, optional, "always")
    assert not should_augment(LEGACY_CAPS, {}, "always")           # forbidden by default
    assert not should_augment({}, required, "auto")                # no capability: never
    assert not should_augment(LEGACY_CAPS, required, "never")


def test_the_extension_joins_other_capabilities() -> None:
    caps = with_extension({"elicitation": {}, "extensions": {"other/x": {"a": 1}}})
    assert caps == {"elicitation": {}, "extensions": {"other/x": {"a": 1}, "io.modelcontextprotocol/tasks": {}}}


@pytest.mark.anyio
@pytest.mark.slow
async def test_legacy_task_progress_reaches_the_caller_after_the_call_returned() -> None:
    progress: list[dict[str, Any]] = []
    statuses: list[str] = []
    transport = StdioTransport(sys.executable, [str(FAKE_TASKS), "--legacy", "--work", "0.3"])
    async with Client(transport, ClientOptions()) as client:
        result = await client.call_tool(
            "slow", {"text": "p"}, on_progress=progress.append,
            task=TaskOptions(on_status=lambda t: statuses.append(t.status)),
        )
    assert result["content"][0]["text"] == "done: p"
    assert progress, "progress for the task's token was delivered"
    assert all(str(p["progressToken"]).startswith("mcpcli-task-") for p in progress)
    assert statuses[0] == "working" and "completed" in statuses


@pytest.mark.anyio
@pytest.mark.slow
async def test_cancelling_the_caller_cancels_the_task() -> None:
    import anyio

    options = TaskOptions()
    transport = StdioTransport(sys.executable, [str(FAKE_TASKS)])
    async with Client(transport, ClientOptions()) as client:
        with anyio.move_on_after(0.5):
            await client.call_tool("forever", {}, task=options)
        assert options.current is not None and options.current.cancel_requested
        after = await client.get_task(options.current.task_id)
    assert after["status"] == "cancelled"


@pytest.mark.anyio
@pytest.mark.slow
async def test_detach_returns_the_create_task_result() -> None:
    transport = StdioTransport(sys.executable, [str(FAKE_TASKS)])
    async with Client(transport, ClientOptions()) as client:
        created = await client.call_tool("slow", {}, task=TaskOptions(detach=True))
        assert created["resultType"] == "task" and created["status"] == "working"
        done = await client.wait_task(created["taskId"])
    assert done["content"][0]["text"] == "done: "
