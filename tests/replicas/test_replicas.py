"""Two `mcp serve --http` replicas on one Redis (`--task-store redis://...`) are one server for
tasks: every request of a task's life goes to the other replica than the one before (create on
A, get on B, input via B, cancel via A, result via B), with our own client and with the official
Python SDK client; a replica killed with SIGKILL mid-task has its task failed by the survivor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, free_port, mcp_in, wait_listening, wait_until

from mcpcli.core.protocol import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    PROTOCOL_VERSION_KEY,
    RELATED_TASK_KEY,
    TASKS_EXTENSION,
)

pytestmark = [pytest.mark.slow, pytest.mark.peer]

TOKEN = "replicas-token-0123456789"
TOOLS = """\
version: 1
tools:
  - name: quick
    description: answers at once
    task: {mode: required, after: 0s, poll_interval: 100ms}
    run: {argv: [printf, quick]}
  - name: hang
    description: never finishes
    task: {mode: required, after: 0s, poll_interval: 100ms}
    run: {argv: [sleep, "100"], kill_grace: 0.5s}
  - name: confirm
    description: asks, then answers
    task: {mode: optional, after: 0s, poll_interval: 100ms}
    run:
      shell: sh
      script: |
        ok=$(mcp script elicit "Go on?" --field ok:boolean --key go --get ok) || exit 1
        echo "answer: $ok"
"""
EXT = {"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}}


@contextmanager
def replica(tools: Path, redis_url: str, *, lease: float = 10.0,
            extra: tuple[str, ...] = ()) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """One replica in its own process group (its scripts die with it when it is killed)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpcli", "serve", str(tools), "--http", str(port), "--quiet",
         "--task-store", "redis", *extra],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "MCP_SERVE_TOKEN": TOKEN, "MCP_SERVE_REDIS_URL": f"{redis_url}{'&' if '?' in redis_url else '?'}lease={lease:g}"},
        start_new_session=True,
    )
    try:
        wait_listening(port, proc, "replica")
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)


def rpc(url: str, method: str, params: dict[str, Any]) -> Any:
    """One 2026-07-28 request (stateless: any replica may take it); its result."""
    import httpx

    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method,
               "Authorization": f"Bearer {TOKEN}"}
    if "name" in params or "taskId" in params:
        headers["Mcp-Name"] = params.get("name") or params["taskId"]
    meta = {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_INFO_KEY: {"name": "t", "version": "0"},
            CLIENT_CAPABILITIES_KEY: EXT}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    r = httpx.post(url, json=body, headers=headers, timeout=30)
    text = r.text
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    answer = json.loads(text)
    assert "result" in answer, answer
    return answer["result"]


def status(url: str, task_id: str) -> Any:
    return rpc(url, "tasks/get", {"taskId": task_id})


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    path = tmp_path / "tools.yaml"
    path.write_text(TOOLS)
    return path


def test_a_tasks_whole_life_alternates_replicas(tools: Path, redis_url: str) -> None:
    with replica(tools, redis_url) as (a, _), replica(tools, redis_url) as (b, _):
        # create on A, get on B, result via B
        created = rpc(a, "tools/call", {"name": "quick", "arguments": {}})
        assert created["resultType"] == "task"
        quick = created["taskId"]
        wait_until(lambda: status(b, quick)["status"] == "completed", what="quick, seen from B")
        assert status(b, quick)["result"]["content"] == [{"type": "text", "text": "quick"}]
        # input: asked on A, answered via B, the answer reaches A's process; result via B
        confirm = rpc(a, "tools/call", {"name": "confirm", "arguments": {}})["taskId"]
        wait_until(lambda: status(b, confirm)["status"] == "input_required", what="confirm to ask")
        assert status(b, confirm)["inputRequests"]["go"]["params"]["message"] == "Go on?"
        rpc(b, "tasks/update", {"taskId": confirm,
                                "inputResponses": {"go": {"action": "accept", "content": {"ok": True}}}})
        wait_until(lambda: status(a, confirm)["status"] == "completed", what="confirm to finish")
        assert status(b, confirm)["result"]["content"] == [{"type": "text", "text": "answer: true\n"}]
        # cancel via the replica that does not run it: B runs `hang`, A cancels it
        hang = rpc(b, "tools/call", {"name": "hang", "arguments": {}})["taskId"]
        assert status(a, hang)["status"] == "working"
        rpc(a, "tasks/cancel", {"taskId": hang})
        wait_until(lambda: status(b, hang)["status"] == "cancelled", what="hang to be cancelled on B")
        assert status(a, hang)["status"] == "cancelled"
        # Our client, one command per replica: the task started through A is collected via B.
        env = {"MCP_BEARER_TOKEN": TOKEN}
        started = mcp_in("tools", "call", a, "quick", "--detach", env=env)
        assert started.code == 0, started
        task_id = started.json["taskId"]
        wait_until(lambda: mcp_in("tasks", "get", b, task_id, env=env).json["status"] == "completed",
                   what="our client's task, seen from B")
        result = mcp_in("tasks", "result", b, task_id, env=env)
        assert result.code == 0 and result.json["content"][0]["text"] == "quick", result
        # Task ids stay bound to the credential on every replica.
        for url in (a, b):
            other = mcp_in("tasks", "get", url, task_id, env={"MCP_BEARER_TOKEN": "someone-else"})
            assert other.code != 0


def test_the_official_sdk_client_reads_tasks_of_the_other_replica(tools: Path, redis_url: str, peers: Any) -> None:
    with replica(tools, redis_url) as (a, _), replica(tools, redis_url) as (b, _):
        done = rpc(a, "tools/call", {"name": "quick", "arguments": {}})["taskId"]
        hang = rpc(a, "tools/call", {"name": "hang", "arguments": {}})["taskId"]
        wait_until(lambda: status(a, done)["status"] == "completed", what="quick")
        script = REPO / "tests/toolsfile/sdk_tasks_client.py"
        proc = subprocess.run([peers.sdk(), str(script), b, TOKEN, done, hang],
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        seen = json.loads(proc.stdout)
        assert seen[done] == {"status": "completed", "statusMessage": None, "text": ["quick"]}
        assert seen[hang]["status"] == "working"


def descendants(pid: int) -> list[str]:
    """The command lines of `pid`'s living descendants (from /proc: the replica's tool processes)."""
    children: dict[int, list[int]] = {}
    cmdlines: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] == "Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
        cmdlines[int(entry.name)] = cmdline
    found: list[str] = []
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(cmdlines[child])
        todo.extend(children.get(child, []))
    return found


def test_the_official_sdk_client_drives_a_tasks_whole_life_across_replicas(
        tools: Path, redis_url: str, peers: Any) -> None:
    """The official Python SDK client (its task API is of 2025-11-25) alternates replicas per
    request: `confirm` created through A, `tasks/get` through B, its input request answered
    through B (`tasks/result` relays the elicitation to the SDK's callback while A runs the
    script), its result fetched through A; an input request refused through B (the callback
    answers a JSON-RPC error) reaches A's script as that error; `hang` created through B and
    cancelled through A, and B's `sleep` process is gone. One step is not the SDK's own API:
    the SDK reads every tools/call answer as a CallToolResult (it cannot create a task), so
    the task-augmented tools/call goes through the SDK session's JSON-RPC dispatcher."""
    with replica(tools, redis_url) as (a, _), replica(tools, redis_url) as (b, b_proc):
        script = Path(__file__).with_name("sdk_lifecycle_client.py")
        proc = subprocess.run([peers.sdk(), str(script), a, b, TOKEN],
                              capture_output=True, text=True, timeout=180, check=False)
        assert proc.returncode == 0, proc.stderr
        seen = json.loads(proc.stdout)
        assert seen["confirm_created"] == "working"
        assert seen["confirm_seen_by_b"] == "input_required"
        [asked] = seen["confirm_asked_via_b"]
        assert asked["message"] == "Go on?"
        assert asked["meta"][RELATED_TASK_KEY]["taskId"]
        done = {"text": ["answer: true\n"], "isError": False}
        assert seen["confirm_result_via_b"] == done
        assert seen["confirm_status_via_a"] == "completed"
        assert seen["confirm_result_via_a"] == done
        # the refusal crossed replicas: the script on A got the client's error, not a hang
        assert seen["refused_asked_via_b"] == 1
        refused = seen["refused_result_via_b"]
        assert refused["isError"] is True
        assert any("this client will not ask anyone" in text for text in refused["text"]), refused
        assert seen["refused_status_via_a"] == "completed"
        assert seen["hang_seen_by_a"] == "working"
        assert seen["hang_cancel_answer"] in ("working", "cancelled")
        assert seen["hang_seen_by_b"] == "cancelled"
        # the cancellation reached B, which runs the tool: its process is gone
        wait_until(lambda: not any("sleep 100" in line for line in descendants(b_proc.pid)),
                   what="hang's process on B to stop")
        assert status(b, seen["hang_id"])["status"] == "cancelled"


def test_a_killed_replicas_task_is_failed_by_the_survivor(tools: Path, redis_url: str) -> None:
    with replica(tools, redis_url, lease=1) as (a, doomed), replica(tools, redis_url, lease=1) as (b, _):
        hang = rpc(a, "tools/call", {"name": "hang", "arguments": {}})["taskId"]
        assert status(b, hang)["status"] == "working"
        os.killpg(doomed.pid, signal.SIGKILL)
        doomed.wait(10)
        wait_until(lambda: status(b, hang)["status"] == "failed", timeout=20, what="the survivor to fail it")
        assert status(b, hang)["statusMessage"] == (
            "the replica running this task stopped (its lease of 1 s ran out)")


def test_a_listen_on_one_replica_hears_a_task_the_other_runs(tools: Path, redis_url: str) -> None:
    """`subscriptions/listen` on B following a task A runs: B gets `notifications/tasks` for
    the changes A makes (pub/sub), here the answer given via A and the completion."""
    import httpx

    with replica(tools, redis_url) as (a, _), replica(tools, redis_url) as (b, _):
        confirm = rpc(a, "tools/call", {"name": "confirm", "arguments": {}})["taskId"]
        wait_until(lambda: status(a, confirm)["status"] == "input_required", what="confirm to ask")
        meta = {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_INFO_KEY: {"name": "t", "version": "0"},
                CLIENT_CAPABILITIES_KEY: EXT}
        body = {"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
                "params": {"notifications": {"taskIds": [confirm]}, "_meta": meta}}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen",
                   "Authorization": f"Bearer {TOKEN}"}
        statuses: list[str] = []
        deadline = time.monotonic() + 25
        with httpx.stream("POST", b, json=body, headers=headers, timeout=30) as stream:
            assert stream.status_code == 200
            for line in stream.iter_lines():  # keep-alive comments every 15 s bound the wait
                assert time.monotonic() < deadline, "no completion within 20 s"
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("method") == "notifications/subscriptions/acknowledged":
                    assert message["params"]["notifications"]["taskIds"] == [confirm]
                    rpc(a, "tasks/update", {"taskId": confirm, "inputResponses": {
                        "go": {"action": "accept", "content": {"ok": True}}}})
                elif message.get("method") == "notifications/tasks":
                    assert message["params"]["taskId"] == confirm
                    statuses.append(message["params"]["status"])
                    if statuses[-1] == "completed":
                        break
        assert statuses[-1] == "completed"


@pytest.mark.parametrize(("value", "env", "message"), [
    ("redis://:hunter2@127.0.0.1:6379/0", {}, "a Redis password on the command line is visible"),
    ("redis", {}, "MCP_SERVE_REDIS_URL is not set"),
])
def test_redis_credentials_come_from_the_environment(tools: Path, value: str, env: dict[str, str],
                                                     message: str) -> None:
    r = mcp_in("serve", str(tools), "--http", "0", "--task-store", value, env=env)
    assert r.code == 2 and message in r.stderr and "Traceback" not in r.stderr, r
    assert "hunter2" not in r.stderr


def test_an_unreachable_redis_is_a_connection_error(tools: Path) -> None:
    r = mcp_in("serve", str(tools), "--http", "0", "--task-store", f"redis://127.0.0.1:{free_port()}/0")
    assert r.code == 4 and "task store redis://127.0.0.1:" in r.stderr and "Traceback" not in r.stderr, r


STATE = """\
version: 1
resources:
  - {uri: 'mem://state', name: state, file: state.txt, subscribe: true}
"""


def test_a_resource_update_one_replica_sees_reaches_a_listen_on_the_other(tmp_path: Path, redis_url: str) -> None:
    """Replicas on different machines (here: directories) each watch their own copy of a
    file: a change only A can see still reaches a listen on B, relayed through Redis."""
    import httpx

    trees = []
    for name in ("a", "b"):
        tree = tmp_path / name
        tree.mkdir()
        (tree / "tools.yaml").write_text(STATE)
        (tree / "state.txt").write_text("v1")
        trees.append(tree)
    shared = f"{redis_url}?namespace=shared"  # different paths, one logical server
    with replica(trees[0] / "tools.yaml", shared, extra=("--watch",)) as (_, _a), \
            replica(trees[1] / "tools.yaml", shared, extra=("--watch",)) as (b, _b):
        meta = {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_INFO_KEY: {"name": "t", "version": "0"},
                CLIENT_CAPABILITIES_KEY: {}}
        body = {"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
                "params": {"notifications": {"resourceSubscriptions": ["mem://state"]}, "_meta": meta}}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen",
                   "Authorization": f"Bearer {TOKEN}"}
        updated: list[str] = []
        deadline = time.monotonic() + 25
        with httpx.stream("POST", b, json=body, headers=headers, timeout=30) as stream:
            assert stream.status_code == 200
            for line in stream.iter_lines():  # keep-alive comments every 15 s bound the wait
                assert time.monotonic() < deadline, "no update within 20 s"
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("method") == "notifications/subscriptions/acknowledged":
                    assert message["params"]["notifications"]["resourceSubscriptions"] == ["mem://state"]
                    (trees[0] / "state.txt").write_text("version two, seen on a only")
                elif message.get("method") == "notifications/resources/updated":
                    updated.append(message["params"]["uri"])
                    break
        assert updated == ["mem://state"]


def test_a_clients_update_cannot_pass_for_a_forwarded_refusal(tools: Path, redis_url: str) -> None:
    """Replicas forward a 2025-11-25 client's refusal to answer under a reserved key; the same
    value sent by a client in `tasks/update` through the other replica is dropped, so the
    script on A still waits for a real answer."""
    from mcpcli.server.tasks.store import REJECTED

    with replica(tools, redis_url) as (a, _), replica(tools, redis_url) as (b, _):
        confirm = rpc(a, "tools/call", {"name": "confirm", "arguments": {}})["taskId"]
        wait_until(lambda: status(b, confirm)["status"] == "input_required", what="confirm to ask")
        forged = {"go": {REJECTED: {"code": -32600, "message": "forged"}}}
        rpc(b, "tasks/update", {"taskId": confirm, "inputResponses": forged})
        rpc(a, "tasks/update", {"taskId": confirm, "inputResponses": forged})
        assert status(a, confirm)["status"] == "input_required"
        rpc(b, "tasks/update", {"taskId": confirm,
                                "inputResponses": {"go": {"action": "accept", "content": {"ok": True}}}})
        wait_until(lambda: status(b, confirm)["status"] == "completed", what="confirm to finish")
        assert status(a, confirm)["result"]["content"] == [{"type": "text", "text": "answer: true\n"}]
