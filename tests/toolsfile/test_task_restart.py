"""Tasks survive a restart of a real `mcp serve --http` (the SQLite task store).

The server is killed with SIGKILL (its process group: the scripts die with it)
while one task has finished, one runs and one waits for input, then started
again on the same state directory. Our client (`mcp tasks get/result`) and the
official Python SDK client (2025-11-25 `tasks/get` and `tasks/result`) then
see the finished task's result, and the two others `failed` with the restart
message, never `working`. With `--task-store memory` the tasks are gone.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers import free_port, mcp, mcp_in, wait_listening, wait_until, wait_until_async

from mcpcli.server.tasks.records import RESTARTED

pytestmark = pytest.mark.slow

TOKEN = "restart-token-0123456789"
SECRET = "sk-live-restart-98765"
TOOLS = """\
version: 1
secrets:
  KEY: {from_env: RESTART_KEY}
tools:
  - name: quick
    description: answers at once, with a secret in its output
    task: {mode: required, after: 0s, poll_interval: 100ms}
    run:
      shell: sh
      script: echo "done key=$KEY"
      env: {KEY: {secret: KEY}}
  - name: hang
    description: never finishes
    task: {mode: required, after: 0s, poll_interval: 100ms}
    run: {argv: [sleep, "100"]}
  - name: confirm
    description: asks, then answers
    task: {mode: optional, after: 0s, poll_interval: 100ms}
    run:
      shell: sh
      script: |
        ok=$(mcp script elicit "Go on?" --field ok:boolean --key go --get ok) || exit 1
        echo "answer: $ok"
"""


@contextmanager
def serving(tools: Path, port: int, *extra: str) -> Iterator[subprocess.Popen[bytes]]:
    """`mcp serve --http` in its own process group until the test kills or ends it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpcli", "serve", str(tools), "--http", str(port), "--auth-token", TOKEN,
         "--quiet", *extra],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "RESTART_KEY": SECRET}, start_new_session=True,
    )
    try:
        wait_listening(port, proc, "mcp serve")
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)


def kill(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


def client(*args: str) -> Any:
    return mcp_in(*args, env={"MCP_BEARER_TOKEN": TOKEN})


def status(url: str, task_id: str) -> str:
    r = client("tasks", "get", url, task_id)
    assert r.code == 0, r
    return str(r.json["status"])


def started(url: str, tool: str, want: str) -> str:
    r = client("tools", "call", url, tool, "--detach")
    assert r.code == 0 and r.json["resultType"] == "task", r
    task_id = str(r.json["taskId"])
    wait_until(lambda: status(url, task_id) == want, what=f"{tool} to be {want}")
    return task_id


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    path = tmp_path / "tools.yaml"
    path.write_text(TOOLS)
    return path


@pytest.mark.peer
def test_finished_tasks_survive_a_restart_and_unfinished_ones_fail(tools: Path, tmp_path: Path,
                                                                    peers: Any) -> None:
    state = tmp_path / "state"
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with serving(tools, port, "--state-dir", str(state)) as proc:
        done = started(url, "quick", "completed")
        running = started(url, "hang", "working")
        waiting = started(url, "confirm", "input_required")
        kill(proc)

    # What is on disk: private, and the secret masked in output is not there either.
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE((state / "tasks.db").stat().st_mode) == 0o600
    stored = b"".join(p.read_bytes() for p in state.iterdir() if p.name.startswith("tasks.db"))
    assert SECRET.encode() not in stored and TOKEN.encode() not in stored
    assert b"done key=***" in stored

    with serving(tools, port, "--state-dir", str(state)):
        result = client("tasks", "result", url, done)
        assert result.code == 0 and result.json["content"][0]["text"] == "done key=***\n", result
        for task_id in (running, waiting):
            got = client("tasks", "get", url, task_id)
            assert (got.json["status"], got.json["statusMessage"]) == ("failed", RESTARTED), got
            failed = client("tasks", "result", url, task_id)
            assert failed.code == 5 and RESTARTED in failed.stderr, failed

        proc = subprocess.run(
            [peers.sdk(), str(Path(__file__).with_name("sdk_tasks_client.py")), url, TOKEN, done, running, waiting],
            capture_output=True, text=True, timeout=120, check=False,
        )
        assert proc.returncode == 0, proc.stderr
        seen = json.loads(proc.stdout)
        assert seen[done] == {"status": "completed", "statusMessage": None, "text": ["done key=***\n"]}
        for task_id in (running, waiting):
            assert seen[task_id]["status"] == "failed"
            assert seen[task_id]["statusMessage"] == RESTARTED
            assert RESTARTED in seen[task_id]["error"]

        # Another credential never sees them.
        other = mcp_in("tasks", "get", url, done, env={"MCP_BEARER_TOKEN": "someone-else"})
        assert other.code != 0


def test_with_the_memory_store_a_restart_forgets_the_tasks(tools: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with serving(tools, port, "--state-dir", str(state), "--task-store", "memory") as proc:
        done = started(url, "quick", "completed")
        kill(proc)
    assert not state.exists()
    with serving(tools, port, "--state-dir", str(state), "--task-store", "memory"):
        gone = client("tasks", "get", url, done)
        assert gone.code == 5 and "Task not found" in gone.stderr, gone


def test_the_default_state_dir_is_per_tools_file_and_one_server_owns_it(tools: Path, tmp_path: Path) -> None:
    from mcpcli.cli._serve_tasks import default_state_dir

    port = free_port()
    with serving(tools, port):
        state = default_state_dir(str(tools))
        assert (state / "tasks.db").exists()
        assert str(state).startswith(os.environ["XDG_STATE_HOME"])
        # Named explicitly, a taken state directory is an error...
        second = mcp_in("serve", str(tools), "--http", str(free_port()), "--no-auth", "--state-dir", str(state),
                        env={"RESTART_KEY": SECRET})
        assert second.code == 4, second
        assert "another mcp serve keeps its tasks in" in second.stderr
        # ...by default (an editor's second stdio server of the same file) tasks stay in memory.
        stdio = mcp("serve", str(tools), input="", env={"RESTART_KEY": SECRET})
        assert stdio.code == 0, stdio
        assert "this one keeps its tasks in memory" in stdio.stderr


@pytest.mark.parametrize(("value", "message"), [
    ("postgres://db", "expected memory, sqlite or redis://HOST:PORT/DB"),
    ("sqlite3", "expected memory, sqlite or redis://HOST:PORT/DB"),
])
def test_an_unknown_task_store_is_a_usage_error(tools: Path, value: str, message: str) -> None:
    r = mcp_in("serve", str(tools), "--task-store", value)
    assert r.code == 2 and message in r.stderr and "Traceback" not in r.stderr, r


SECRET_TOOLS = """
version: 1
secrets:
  KEY: {from_env: MASKED_KEY}
tools:
  - name: fails
    description: fails with its secret in the JSON-RPC error
    task: {mode: required, after: 0s}
    run:
      shell: sh
      script: 'printf "{\\"error\\": {\\"code\\": -32001, \\"message\\": \\"bad %s\\", \\"data\\": {\\"k\\": \\"%s\\"}}}" "$K" "$K"'
      env: {K: {secret: KEY}}
    output: {format: mcp}
  - name: structured
    description: answers with its secret in structured content and text
    task: {mode: required, after: 0s}
    run:
      shell: sh
      script: 'printf "{\\"content\\": [{\\"type\\": \\"text\\", \\"text\\": \\"%s\\"}], \\"structuredContent\\": {\\"k\\": \\"%s\\"}}" "$K" "$K"'
      env: {K: {secret: KEY}}
    output: {format: mcp}
"""


@pytest.mark.anyio
async def test_stored_results_and_errors_never_hold_a_masked_secret(make_backend: Any, tmp_path: Path) -> None:
    import anyio

    from mcpcli.core.protocol import (
        CLIENT_CAPABILITIES_KEY,
        CLIENT_INFO_KEY,
        PROTOCOL_VERSION_KEY,
        TASKS_EXTENSION,
    )
    from mcpcli.rpc.peer import Peer
    from mcpcli.server import Server
    from mcpcli.server.tasks.sqlite import SQLiteRecords
    from mcpcli.transports.memory import memory_pair

    backend = make_backend(SECRET_TOOLS, environ={"MASKED_KEY": SECRET})
    state = tmp_path / "state"
    server = Server(backend, task_records=SQLiteRecords(state))
    meta = {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_INFO_KEY: {"name": "t", "version": "0"},
            CLIENT_CAPABILITIES_KEY: {"extensions": {TASKS_EXTENSION: {}}}}
    seen = []
    async with (memory_pair() as (client_side, server_side), anyio.create_task_group() as tg,
                server):
        tg.start_soon(server.serve, server_side)
        async with Peer(client_side) as s:
            for name in ("fails", "structured"):
                task_id = (await s.request("tools/call", {"name": name, "arguments": {}, "_meta": meta}))["taskId"]

                async def ended(task_id: str = task_id) -> bool:
                    got = await s.request("tasks/get", {"taskId": task_id, "_meta": meta})
                    seen.append(got)
                    return bool(got["status"] in ("completed", "failed"))

                await wait_until_async(ended, what=f"{name} to end")
        tg.cancel_scope.cancel()
    server.tasks.close()
    assert seen[-1]["result"]["structuredContent"] == {"k": "***"}
    stored = b"".join(p.read_bytes() for p in state.iterdir() if p.name.startswith("tasks.db"))
    assert b"bad ***" in stored and b'"k":"***"' in stored
    assert SECRET.encode() not in stored
