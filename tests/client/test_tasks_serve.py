"""Tasks end to end against our own server: `mcp serve` runs tools.yaml tools as tasks
(the 2026-07-28 extension, and 2025-11-25 core tasks with --protocol), over stdio and HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import mcp_in

from client.task_helpers import Running, sent

# Each test here waits for tasks (scripts, a served HTTP server) for a second or so: not in
# scripts/test --fast.
pytestmark = pytest.mark.slow


def test_modern_task_over_stdio(task_tools: Path) -> None:
    r = mcp_in("tools", "call", str(task_tools), "slow", "--trace")
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "slow done\n"
    (call,) = sent(r.stderr, "tools/call")
    caps = call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert "io.modelcontextprotocol/tasks" in caps["extensions"]
    assert sent(r.stderr, "tasks/get")


def test_modern_task_input_goes_back_with_tasks_update(task_tools: Path) -> None:
    r = mcp_in("tools", "call", str(task_tools), "confirm", "--elicit-json", '{"ok": true}', "--trace")
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "answer: true\n"
    (update,) = sent(r.stderr, "tasks/update")
    assert list(update["params"]["inputResponses"].values()) == [{"action": "accept", "content": {"ok": True}}]


def test_modern_max_timeout_cancels_the_script(task_tools: Path) -> None:
    r = mcp_in("tools", "call", str(task_tools), "hang", "--max-timeout", "1", "--trace")
    assert r.code == 124, r
    assert "(cancelled it)" in r.stderr
    (cancel,) = sent(r.stderr, "tasks/cancel")
    assert f'← {{"jsonrpc":"2.0","id":{cancel["id"]},"result"' in r.stderr  # acknowledged


def test_legacy_task_over_stdio(task_tools: Path) -> None:
    r = mcp_in("tools", "call", str(task_tools), "slow", "--protocol", "2025-11-25", "--trace")
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "slow done\n"
    (call,) = sent(r.stderr, "tools/call")
    assert call["params"]["task"] == {}
    assert sent(r.stderr, "tasks/result")


def test_legacy_optional_task_asks_through_tasks_result(task_tools: Path) -> None:
    r = mcp_in("tools", "call", str(task_tools), "confirm", "--task", "--protocol", "2025-11-25",
               "--elicit-json", '{"ok": false}')
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "answer: false\n"


def test_detached_tasks_over_http_in_both_eras(served_tasks: str) -> None:
    url = served_tasks
    modern = mcp_in("tools", "call", url, "slow", "--detach")
    assert modern.code == 0 and modern.json["resultType"] == "task", modern
    task_id = modern.json["taskId"]
    assert mcp_in("tasks", "get", url, task_id).json["status"] in ("working", "completed")
    done = mcp_in("tasks", "result", url, task_id)
    assert done.code == 0 and done.json["content"][0]["text"] == "slow done\n", done

    legacy = mcp_in("tools", "call", url, "slow", "--detach", "--protocol", "2025-11-25")
    assert legacy.code == 0, legacy
    legacy_id = legacy.json["task"]["taskId"]
    listed = mcp_in("tasks", "list", url, "--protocol", "2025-11-25")
    assert legacy_id in [t["taskId"] for t in listed.json["tasks"]], listed
    done = mcp_in("tasks", "result", url, legacy_id, "--protocol", "2025-11-25")
    assert done.code == 0 and done.json["content"][0]["text"] == "slow done\n", done


def test_cancel_then_result_exits_5_over_http(served_tasks: str) -> None:
    task_id = mcp_in("tools", "call", served_tasks, "hang", "--detach").json["taskId"]
    assert mcp_in("tasks", "cancel", served_tasks, task_id).code == 0
    r = mcp_in("tasks", "result", served_tasks, task_id)
    assert r.code == 5, r
    assert f"task {task_id} was cancelled" in r.stderr


def test_ctrl_c_cancels_the_task_over_http(served_tasks: str) -> None:
    run = Running("tools", "call", served_tasks, "hang", "--trace")
    run.wait_for('"method":"tasks/get"')
    code, _out, err = run.interrupt()
    assert code == 130, err
    (cancel,) = sent(err, "tasks/cancel")
    task_id = cancel["params"]["taskId"]
    assert f"cancelled task {task_id}" in err
    after = mcp_in("tasks", "get", served_tasks, task_id)
    assert after.json["status"] == "cancelled", after
