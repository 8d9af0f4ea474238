"""Tools that run as tasks: `mcp tools call` follows them, `mcp tasks` reaches them later.

Peers: server-everything over stdio (2025-11-25 core tasks: its
`simulate-research-query` requires a task, and with `ambiguous=true` asks for
an elicitation while `input_required`), and `fake_task_server.py` for the
2026-07-28 extension (stdio and HTTP) and the corners of 2025-11-25 that
server-everything does not show (optional tools, failures, tasks/list).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import fake_server, mcp, mcp_in

from client.task_helpers import EXT, Running, methods, received, sent, task_server

# -- server-everything (2025-11-25 core tasks) --------------------------------------------------

@pytest.mark.peer
def test_a_tool_that_requires_a_task_is_called_as_one(everything: list[str]) -> None:
    r = mcp("tools", "call", "simulate-research-query", "--arg", "topic=otters", "-q", "--trace",
            "--", *everything)
    assert r.code == 0, r
    assert "# Research Report: otters" in r.json["content"][0]["text"]
    (call,) = sent(r.stderr, "tools/call")
    assert call["params"]["task"] == {}
    assert sent(r.stderr, "tasks/get"), "polled the task"
    assert len(sent(r.stderr, "tasks/result")) == 1


@pytest.mark.peer
def test_input_required_is_answered_with_the_elicitation_flags(everything: list[str]) -> None:
    r = mcp("tools", "call", "simulate-research-query", "--arg", "topic=python", "--arg", "ambiguous=true",
            "--elicit-json", '{"interpretation": "snake"}', "-q", "--trace", "--", *everything)
    assert r.code == 0, r
    assert "# Research Report: python (snake)" in r.json["content"][0]["text"]
    # The answer went back tagged with the task it belongs to.
    replies = [json.loads(line[2:]) for line in r.stderr.splitlines()
               if line.startswith("→ ") and '"action":"accept"' in line]
    assert replies, r.stderr
    assert "io.modelcontextprotocol/related-task" in replies[0]["result"]["_meta"]


@pytest.mark.peer
def test_without_a_terminal_or_flags_the_elicitation_is_declined(everything: list[str]) -> None:
    r = mcp("tools", "call", "simulate-research-query", "--arg", "topic=x", "--arg", "ambiguous=true",
            "-q", "--", *everything)
    assert r.code == 0, r
    assert "User declined" in r.json["content"][0]["text"]


@pytest.mark.peer
def test_detach_prints_the_created_task(everything: list[str]) -> None:
    r = mcp("tools", "call", "simulate-research-query", "--arg", "topic=x", "--detach", "-q",
            "--", *everything)
    assert r.code == 0, r
    task = r.json["task"]
    assert task["status"] == "working" and task["taskId"]
    assert f"task {task['taskId']} ends with this stdio server" in r.stderr


@pytest.mark.peer
def test_ctrl_c_cancels_the_task_then_exits_130(everything: list[str]) -> None:
    run = Running("tools", "call", "simulate-research-query", "--arg", "topic=x", "-q", "--trace",
                  "--", *everything)
    run.wait_for('"method":"tasks/get"')
    code, out, err = run.interrupt()
    assert code == 130, err
    assert out == ""
    (cancel,) = sent(err, "tasks/cancel")
    # The server answered before we left: the task is really cancelled.
    answer = [line for line in err.splitlines()
              if line.startswith("← ") and f'"id":{cancel["id"]},' in line]
    assert answer and '"status":"cancelled"' in answer[0], err
    assert "cancelled task " in err


@pytest.mark.peer
def test_max_timeout_cancels_the_task_and_exits_124(everything: list[str]) -> None:
    r = mcp("tools", "call", "simulate-research-query", "--arg", "topic=x", "--max-timeout", "1.5",
            "-q", "--trace", "--", *everything)
    assert r.code == 124, r
    assert "did not finish within 1.5s (cancelled it)" in r.stderr
    assert len(sent(r.stderr, "tasks/cancel")) == 1
    assert r.stdout == ""


@pytest.mark.peer
def test_task_flag_on_a_tool_that_forbids_tasks_warns_and_calls_normally(everything: list[str]) -> None:
    r = mcp("tools", "call", "echo", "--arg", "message=hi", "--task", "-q", "--trace", "--", *everything)
    assert r.code == 0, r
    assert "tool 'echo' does not run as a task" in r.stderr
    (call,) = sent(r.stderr, "tools/call")
    assert "task" not in call["params"]


@pytest.mark.peer
def test_a_task_asks_for_input_over_streamable_http(everything_http: str) -> None:
    """The elicitation arrives on the tasks/result response stream."""
    r = mcp("tools", "call", everything_http, "simulate-research-query", "--arg", "topic=python",
            "--arg", "ambiguous=true", "--elicit-json", '{"interpretation": "comedy"}', "--trace")
    assert r.code == 0, r
    assert "# Research Report: python (comedy)" in r.json["content"][0]["text"]
    assert sent(r.stderr, "tasks/result")


@pytest.mark.peer
def test_tasks_list_on_a_legacy_server(everything: list[str]) -> None:
    r = mcp("tasks", "list", "-q", "--", *everything)
    assert r.code == 0, r
    assert r.json["tasks"] == []  # a fresh stdio server has none


# -- 2026-07-28 extension (fake server over stdio) ----------------------------------------------


@pytest.mark.slow
def test_modern_server_directed_task_declares_the_extension(tmp_path: Path) -> None:
    log = tmp_path / "rec.jsonl"
    r = mcp_in("tools", "call", "slow", "--arg", "text=hi", "--", *task_server("--record", str(log)))
    assert r.code == 0, r
    assert r.json == {"content": [{"type": "text", "text": "done: hi"}]}
    for item in received(log):
        msg = item["msg"]
        caps = msg["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        declared = EXT in (caps.get("extensions") or {})
        assert declared == (msg["method"] in ("tools/call", "tasks/get")), msg
        assert "task" not in msg["params"]  # no 2025-11-25 augmentation in this era
    assert methods(log).count("tasks/get") >= 2


def test_modern_input_requests_are_answered_with_tasks_update(tmp_path: Path) -> None:
    log = tmp_path / "rec.jsonl"
    r = mcp_in("tools", "call", "ask", "--elicit-json", '{"name": "Ann"}', "--",
               *task_server("--record", str(log)))
    assert r.code == 0, r
    assert '"name": "Ann"' in r.json["content"][0]["text"]
    (update,) = [m["msg"] for m in received(log) if m["msg"].get("method") == "tasks/update"]
    assert update["params"]["taskId"].startswith("task-")
    assert update["params"]["inputResponses"] == {
        "name-1": {"action": "accept", "content": {"name": "Ann"}}
    }


def test_modern_failed_task_exits_5_naming_the_task() -> None:
    r = mcp_in("tools", "call", "fail", "--", *task_server())
    assert r.code == 5, r
    assert "failed: boom (code -32099)" in r.stderr and "task task-" in r.stderr
    assert r.stdout == ""


def test_modern_tool_error_in_a_task_exits_1_with_the_result() -> None:
    r = mcp_in("tools", "call", "toolerr", "--", *task_server())
    assert r.code == 1, r
    assert r.json["isError"] is True and r.json["content"][0]["text"] == "bad input"


def test_modern_ordinary_result_needs_no_task(tmp_path: Path) -> None:
    log = tmp_path / "rec.jsonl"
    r = mcp_in("tools", "call", "quick", "--arg", "text=x", "--", *task_server("--record", str(log)))
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "quick: x"
    assert not [m for m in methods(log) if m.startswith("tasks/")]


@pytest.mark.parametrize("era", [(), ("--legacy",)], ids=["modern", "legacy"])
@pytest.mark.slow
def test_a_task_created_already_finished(era: tuple[str, ...]) -> None:
    r = mcp_in("tools", "call", "instant", "--", *task_server(*era))
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "already done"


@pytest.mark.slow
def test_modern_max_timeout_cancels_the_task(tmp_path: Path) -> None:
    log = tmp_path / "rec.jsonl"
    r = mcp_in("tools", "call", "forever", "--max-timeout", "0.5", "--",
               *task_server("--record", str(log)))
    assert r.code == 124, r
    assert methods(log).count("tasks/cancel") == 1


@pytest.mark.slow
def test_modern_ctrl_c_cancels_the_task(tmp_path: Path) -> None:
    log = tmp_path / "rec.jsonl"
    run = Running("tools", "call", "forever", "--trace", "--", *task_server("--record", str(log)))
    run.wait_for('"method":"tasks/get"')
    code, _out, err = run.interrupt()
    assert code == 130, err
    assert methods(log).count("tasks/cancel") == 1
    assert "cancelled task task-" in err


# -- 2025-11-25 corners (fake server over stdio) ------------------------------------------------


@pytest.mark.slow
def test_legacy_optional_tool_is_a_task_only_with_the_task_flag(tmp_path: Path) -> None:
    log = tmp_path / "rec.jsonl"
    plain = mcp_in("tools", "call", "opt", "--arg", "text=a", "--", *task_server("--legacy", "--record", str(log)))
    assert plain.code == 0 and plain.json["content"][0]["text"] == "quick: a", plain
    assert "tasks/get" not in methods(log)
    log.unlink()
    tasked = mcp_in("tools", "call", "opt", "--arg", "text=b", "--task", "--",
                    *task_server("--legacy", "--record", str(log)))
    assert tasked.code == 0, tasked
    assert tasked.json["content"][0]["text"] == "done: b"
    (call,) = [m["msg"] for m in received(log) if m["msg"].get("method") == "tools/call"]
    assert call["params"]["task"] == {}
    assert str(call["params"]["_meta"]["progressToken"]).startswith("mcpcli-task-")


@pytest.mark.slow
def test_legacy_failed_task_exits_5_and_tool_error_exits_1() -> None:
    r = mcp_in("tools", "call", "fail", "--", *task_server("--legacy"))
    assert r.code == 5, r
    assert "failed: boom (code -32099)" in r.stderr
    r = mcp_in("tools", "call", "toolerr", "--", *task_server("--legacy"))
    assert r.code == 1, r
    assert r.json["isError"] is True


def test_task_flag_on_a_server_without_tasks_warns_and_calls_normally() -> None:
    r = mcp_in("tools", "call", "echo", "--arg", "message=hi", "--task", "--", *fake_server())
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "hi"
    assert "does not run tools as tasks" in r.stderr


# -- mcp tasks over HTTP (2026-07-28: tasks outlive the connection) ------------------------------


@pytest.mark.slow
def test_detach_then_get_result_and_cancel_over_http(task_http: Any) -> None:
    url = task_http.url
    started = mcp_in("tools", "call", url, "stepwise", "--arg", "text=later", "--detach")
    assert started.code == 0, started
    task_id = started.json["taskId"]
    assert started.json["resultType"] == "task"
    assert f"mcp tasks result {url} {task_id}" in started.stderr

    got = mcp_in("tasks", "get", url, task_id)
    assert got.code == 0 and got.json["taskId"] == task_id and got.json["status"] == "working", got

    done = mcp_in("tasks", "result", url, task_id)
    assert done.code == 0, done
    assert done.json == {"content": [{"type": "text", "text": "done: later"}]}

    again = mcp_in("tasks", "get", url, task_id)
    assert again.json["status"] == "completed" and again.json["result"] == done.json

    gets = [r for r in received(task_http.record) if r["msg"].get("method") == "tasks/get"]
    assert gets and all(r["headers"].get("mcp-name") == task_id for r in gets)
    assert all(EXT in r["msg"]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
               for r in gets)


@pytest.mark.slow
def test_tasks_result_timeout_leaves_the_task_running(task_http: Any) -> None:
    url = task_http.url
    task_id = mcp_in("tools", "call", url, "forever", "--detach").json["taskId"]
    r = mcp_in("tasks", "result", url, task_id, "--max-timeout", "0.5")
    assert r.code == 124, r
    assert "it is still working" in r.stderr
    assert "tasks/cancel" not in methods(task_http.record)

    cancel = mcp_in("tasks", "cancel", url, task_id)
    assert cancel.code == 0, cancel
    after = mcp_in("tasks", "result", url, task_id)
    assert after.code == 5, after
    assert f"task {task_id} was cancelled" in after.stderr


@pytest.mark.slow
def test_tasks_list_is_refused_on_2026_servers(task_http: Any) -> None:
    r = mcp_in("tasks", "list", task_http.url)
    assert r.code == 2, r
    assert "cannot list tasks" in r.stderr


@pytest.mark.slow
def test_unknown_task_id_exits_5(task_http: Any) -> None:
    r = mcp_in("tasks", "get", task_http.url, "no-such-task")
    assert r.code == 5, r
    assert "Task not found" in r.stderr
