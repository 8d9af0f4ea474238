"""A server killed outright (SIGKILL, OOM) takes its tools' process groups with it.

Each test starts `mcp serve` (stdio or --http), calls a tool that leaves a
child and a grandchild running in its group and writes their pids, kills the
server with SIGKILL, and waits (bounded poll) until none of those processes is
left. The leftover check in tests/conftest.py then also proves that the
watchdog helper itself exited.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers import free_port, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

SCRIPT = """
      shell: sh
      timeout: 10m
      script: |
        echo $$ >> pids
        sleep 300 &
        echo $! >> pids
        sh -c 'sleep 300 & echo $! >> pids; wait' &
        echo $! >> pids
        wait
"""
TOOLS = f"""version: 1
tools:
  - name: linger
    description: leaves a child and a grandchild running
    run:{SCRIPT}
  - name: linger_task
    description: the same, as a task
    task: required
    run:{SCRIPT}
"""
INIT = {"protocolVersion": "2025-11-25", "capabilities": {"tasks": {}},
        "clientInfo": {"name": "t", "version": "1"}}
CALLS = {
    "linger": {"name": "linger", "arguments": {}},
    "linger_task": {"name": "linger_task", "arguments": {}, "task": {"ttl": 60000}},
}


def _running(pid: int) -> bool:
    """Alive and not a zombie (zombies reparented to pytest wait for the leftover check)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def _tool_pids(directory: Path) -> list[int]:
    """The leader, its child, the subshell and the grandchild, once all four are written."""
    path = directory / "pids"
    wait_until(lambda: path.exists() and len(path.read_text().split()) == 4, what="the tool's pids")
    pids = [int(p) for p in path.read_text().split()]
    assert all(_running(pid) for pid in pids)
    return pids


def _kill_and_check(proc: subprocess.Popen[bytes], pids: list[int]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    wait_until(lambda: not any(_running(pid) for pid in pids), timeout=15,
               what="the tool processes to end after the server was killed")


@contextmanager
def _stopped(proc: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _line(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, "the server closed its stdout"
    answer: dict[str, Any] = json.loads(line)
    return answer


@pytest.mark.parametrize("tool", ["linger", "linger_task"])
def test_killing_a_stdio_server_ends_its_tool_processes(tmp_path: Path, tool: str) -> None:
    (tmp_path / "tools.yaml").write_text(TOOLS)
    with open(tmp_path / "serve.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "mcpcli", "serve", "tools.yaml"], cwd=tmp_path,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
    with _stopped(proc):
        _line(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
        assert "result" in _answer(proc)
        _line(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _line(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": CALLS[tool]})
        if tool == "linger_task":
            assert _answer(proc)["result"]["task"]["status"] == "working"
        pids = _tool_pids(tmp_path)
        # The tool can write its pids before the server's spawn returns and registers the group
        # with the watchdog (the documented window); an answer to a later request means it did.
        _line(proc, {"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert _answer(proc) == {"jsonrpc": "2.0", "id": 3, "result": {}}
        _kill_and_check(proc, pids)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.stdout.close()


@pytest.mark.parametrize("tool", ["linger", "linger_task"])
def test_killing_an_http_server_ends_its_tool_processes(tmp_path: Path, tool: str) -> None:
    import httpx

    (tmp_path / "tools.yaml").write_text(TOOLS)
    port = free_port()
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "mcpcli", "serve", "tools.yaml",
                                 "--http", f"127.0.0.1:{port}", "--no-auth"], cwd=tmp_path,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}/mcp"
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with _stopped(proc):
        wait_until(lambda: proc.poll() is not None or "serving" in log_path.read_text(), what="the server")
        assert proc.poll() is None, log_path.read_text()
        first = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
                           headers=headers, timeout=10)
        assert first.status_code == 200, first.text
        headers["Mcp-Session-Id"] = first.headers["mcp-session-id"]
        headers["MCP-Protocol-Version"] = "2025-11-25"
        note = httpx.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                          headers=headers, timeout=10)
        assert note.status_code == 202
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": CALLS[tool]}
        outcome: list[BaseException | int] = []

        def post() -> None:  # a plain call answers only when the tool ends: never, here
            try:
                outcome.append(httpx.post(url, json=call, headers=headers, timeout=60).status_code)
            except httpx.HTTPError as exc:
                outcome.append(exc)

        caller = threading.Thread(target=post)
        caller.start()
        if tool == "linger_task":
            # The task is created (CreateTaskResult) while its tool runs on; the tool may have
            # started before that answer left, so wait for it before killing the server.
            caller.join(timeout=60)
            assert outcome == [200]
        try:
            pids = _tool_pids(tmp_path)
            # As over stdio: a later request answered means the group is registered.
            ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
            assert httpx.post(url, json=ping, headers=headers, timeout=10).status_code == 200
            _kill_and_check(proc, pids)
        finally:
            caller.join(timeout=60)
        if tool == "linger":
            assert len(outcome) == 1 and isinstance(outcome[0], httpx.HTTPError)


def test_the_helper_stops_registered_groups_when_its_pipe_closes(tmp_path: Path) -> None:
    """The watchdog by itself: TERM, then KILL for a group that ignores TERM, then it exits."""
    from mcpcli.toolsfile.watchdog import Watchdog, group_alive

    stubborn = subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 300 & wait; sleep 300"],
                                start_new_session=True, stdin=subprocess.DEVNULL)
    polite = subprocess.Popen(["sleep", "300"], start_new_session=True, stdin=subprocess.DEVNULL)
    done = subprocess.Popen(["true"], start_new_session=True)
    done.wait()
    watchdog = Watchdog()
    try:
        watchdog.register(stubborn.pid, 0.2)
        watchdog.register(polite.pid, 5)
        watchdog.register(done.pid, 5)
        watchdog.unregister(done.pid)
        helper = watchdog._proc
        assert helper is not None and helper.poll() is None
    finally:
        watchdog.close()
    assert helper.returncode == 0
    assert polite.wait(timeout=10) == -signal.SIGTERM
    assert stubborn.wait(timeout=10) == -signal.SIGKILL
    wait_until(lambda: not group_alive(stubborn.pid), what="the stubborn group to end")


def test_a_lost_helper_is_replaced_and_told_about_every_group() -> None:
    from mcpcli.toolsfile.watchdog import Watchdog

    first = subprocess.Popen(["sleep", "300"], start_new_session=True, stdin=subprocess.DEVNULL)
    second = subprocess.Popen(["sleep", "300"], start_new_session=True, stdin=subprocess.DEVNULL)
    watchdog = Watchdog()
    try:
        watchdog.register(first.pid, 1)
        lost = watchdog._proc
        assert lost is not None
        lost.kill()
        lost.wait()
        watchdog.register(second.pid, 1)  # finds the helper gone, starts another
        helper = watchdog._proc
        assert helper is not None and helper is not lost and helper.poll() is None
    finally:
        watchdog.close()
    assert first.wait(timeout=10) == -signal.SIGTERM
    assert second.wait(timeout=10) == -signal.SIGTERM
