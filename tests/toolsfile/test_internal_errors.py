"""A call that fails inside the server gets -32603, and the log gets one line, never a traceback.

The failure used here is a schema `--check` accepts but jsonschema cannot use at
call time: a definition that refers to itself (a `$ref` cycle ends in RecursionError).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import free_port, mcp_in, wait_until

from mcpcli.core.protocol import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY

pytestmark = pytest.mark.slow  # real server processes

TOOLS = """version: 1
tools:
  - name: dangling
    description: its schema refers to a definition that refers to itself
    input_schema:
      type: object
      $defs: {loop: {$ref: '#/$defs/loop'}}
      properties:
        a: {$ref: '#/$defs/loop'}
    run: {argv: [cat], stdin: json}
  - name: dangling_task
    description: the same, as a task
    task: required
    input_schema:
      type: object
      $defs: {loop: {$ref: '#/$defs/loop'}}
      properties:
        a: {$ref: '#/$defs/loop'}
    run: {argv: [cat], stdin: json}
"""
CALL = {"name": "dangling", "arguments": {"a": 1}}
INTERNAL = {"code": -32603, "message": "Internal error"}


def _one_line_logged(log: str, what: str = "failed while answering tools/call") -> None:
    lines = [line for line in log.splitlines() if "failed" in line]
    assert len(lines) == 1, log
    assert f"{what}: RecursionError: maximum recursion depth exceeded" in lines[0], log
    assert "Traceback" not in log


def _stdio(tmp_path: Path, *messages: dict[str, Any], debug: bool = False) -> tuple[dict[Any, Any], str]:
    """Run `mcp serve` over stdio on these messages (after the handshake); answers by id, and stderr."""
    (tmp_path / "tools.yaml").write_text(TOOLS)
    assert mcp_in("serve", "--check", "tools.yaml", cwd=tmp_path).code == 0
    init = {"protocolVersion": "2025-11-25", "capabilities": {"tasks": {}},
            "clientInfo": {"name": "t", "version": "1"}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *messages,
    ]
    first = ["--debug"] if debug else []
    proc = subprocess.run([sys.executable, "-m", "mcpcli", *first, "serve", "tools.yaml"], cwd=tmp_path, timeout=60,
                          input="".join(json.dumps(m) + "\n" for m in lines).encode(), capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    return {m["id"]: m for m in map(json.loads, proc.stdout.splitlines())}, proc.stderr.decode()


def test_a_failing_call_over_stdio_logs_one_line(tmp_path: Path) -> None:
    by_id, log = _stdio(tmp_path, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": CALL},
                        {"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert by_id[2]["error"] == INTERNAL
    assert by_id[3]["result"] == {}  # the server goes on
    _one_line_logged(log)


def test_debug_adds_the_traceback(tmp_path: Path) -> None:
    by_id, log = _stdio(tmp_path, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": CALL}, debug=True)
    assert by_id[2]["error"] == INTERNAL
    assert "failed while answering tools/call: RecursionError" in log
    assert "Traceback (most recent call last)" in log


def test_a_failing_task_logs_one_line(tmp_path: Path) -> None:
    (tmp_path / "tools.yaml").write_text(TOOLS)
    init = {"protocolVersion": "2025-11-25", "capabilities": {"tasks": {}},
            "clientInfo": {"name": "t", "version": "1"}}
    call = {"name": "dangling_task", "arguments": {"a": 1}, "task": {"ttl": 60000}}
    with open(tmp_path / "serve.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "mcpcli", "serve", "tools.yaml"], cwd=tmp_path,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        def send(message: dict[str, Any]) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()

        def answer() -> dict[str, Any]:
            assert proc.stdout is not None
            found: dict[str, Any] = json.loads(proc.stdout.readline())
            return found

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert "result" in answer()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        task_id = answer()["result"]["task"]["taskId"]
        send({"jsonrpc": "2.0", "id": 3, "method": "tasks/result", "params": {"taskId": task_id}})
        assert answer()["error"] == INTERNAL
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    _one_line_logged((tmp_path / "serve.log").read_text(), "task failed")


def test_a_failing_stateless_call_over_http_logs_one_line(tmp_path: Path) -> None:
    (tmp_path / "tools.yaml").write_text(TOOLS)
    port = free_port()
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "mcpcli", "serve", "tools.yaml", "--http",
                                 f"127.0.0.1:{port}", "--no-auth"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_until(lambda: proc.poll() is not None or "serving" in log_path.read_text(), what="the server")
        assert proc.poll() is None, log_path.read_text()
        meta: dict[str, Any] = {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_INFO_KEY: {"name": "t", "version": "1"},
                                CLIENT_CAPABILITIES_KEY: {}}
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {**CALL, "_meta": meta}}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "dangling"}
        response = httpx.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers, timeout=30)
        assert response.json()["error"] == INTERNAL, response.text
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    _one_line_logged(log_path.read_text())
