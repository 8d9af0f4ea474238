"""Faults over stdio, through the real `mcp` command: exit codes, messages, no leftovers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from helpers import fake_server, mcp


def test_missing_executable_exits_4_naming_the_command() -> None:
    r = mcp("tools", "list", "--", "no-such-mcp-server-xyz")
    assert r.code == 4
    assert "no-such-mcp-server-xyz: command not found" in r.stderr
    assert r.stdout == ""


def test_server_that_dies_before_answering_exits_4_with_its_stderr() -> None:
    r = mcp("tools", "list", "--", *fake_server("--exit-before-init", "7"))
    assert r.code == 4, r
    assert "server exited with code 7" in r.stderr
    assert "fatal: boot failure 2" in r.stderr
    assert "Traceback" not in r.stderr


def test_server_that_crashes_mid_call_exits_4() -> None:
    r = mcp("tools", "call", "echo", "--arg", "message=hi", "--", *fake_server("--crash-on-call", "3"))
    assert r.code == 4, r
    assert "server exited with code 3" in r.stderr


def test_garbage_on_stdout_is_reported_and_the_call_still_works() -> None:
    r = mcp("tools", "call", "echo", "--arg", "message=hi", "--", *fake_server("--garbage"))
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "hi"
    assert "not JSON-RPC" in r.stderr and "this is not json" in r.stderr


def test_timeout_exits_124_and_sends_cancellation(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    r = mcp("tools", "call", "slow", "--timeout", "0.3", "--",
            *fake_server("--never-answer", "--record", str(log)))
    assert r.code == 124, r
    assert "tools/call timed out" in r.stderr
    received = [json.loads(line) for line in log.read_text().splitlines()]
    call = next(m for m in received if m.get("method") == "tools/call")
    cancels = [m for m in received if m.get("method") == "notifications/cancelled"]
    assert cancels and cancels[0]["params"]["requestId"] == call["id"]


def test_progress_does_not_extend_past_max_timeout() -> None:
    r = mcp("tools", "call", "slow", "--timeout", "0.2", "--max-timeout", "0.6", "--",
            *fake_server("--progress-forever"))
    assert r.code == 124, r


def test_oversized_message_is_refused() -> None:
    r = mcp("tools", "call", "echo", "--arg", "message=x", "--", *fake_server("--huge", str(20 * 1024 * 1024)))
    assert r.code == 4, r
    assert "larger than" in r.stderr


def test_stubborn_server_and_its_grandchild_are_killed(tmp_path: Path) -> None:
    # The leak check in conftest fails the test if `sleep 1000` survives.
    r = mcp("tools", "call", "echo", "--arg", "message=hi", "--", *fake_server("--stubborn"))
    assert r.code == 0, r


def test_ctrl_c_sends_cancellation_and_exits_130(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpcli", "tools", "call", "slow", "--",
         *fake_server("--never-answer", "--record", str(log))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    # Wait (bounded) until the call has reached the server, then interrupt.
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if log.exists() and "tools/call" in log.read_text():
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 130, err
    received = [json.loads(line) for line in log.read_text().splitlines()]
    assert any(m.get("method") == "notifications/cancelled" for m in received)
    assert out == ""


def test_modern_server_is_detected_by_the_probe() -> None:
    r = mcp("tools", "call", "echo", "--arg", "message=007", "--", *fake_server("--modern"))
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "007"


def test_silent_legacy_server_falls_back_after_the_probe_timeout(tmp_path: Path) -> None:
    log = tmp_path / "received.jsonl"
    r = mcp("tools", "list", "--", *fake_server("--silent-probe", "--record", str(log)),
            env={"MCP_PROBE_TIMEOUT": "0.3"})
    assert r.code == 0, r
    methods = [json.loads(line).get("method") for line in log.read_text().splitlines()]
    assert methods[:3] == ["server/discover", "initialize", "notifications/initialized"]


def test_server_env_is_scrubbed(tmp_path: Path) -> None:
    env = {"AWS_SECRET_ACCESS_KEY": "canary-secret", "BASH_FUNC_x%%": "() { :; }"}
    r = mcp("tools", "list", "--env", "VISIBLE=1", "--", sys.executable, "-c",
            "import os,sys; sys.stderr.write(repr(sorted(os.environ)))", env=env)
    assert r.code == 4  # the script is not a server; we only want its environment
    assert "AWS_SECRET_ACCESS_KEY" not in r.stderr and "BASH_FUNC" not in r.stderr
    assert "'VISIBLE'" in r.stderr and "'PATH'" in r.stderr
    assert os.environ.get("AWS_SECRET_ACCESS_KEY") is None
