"""Fixtures for the client tests: task servers listening on 127.0.0.1 (the fake one,
`mcp serve` with task tools, server-everything's Streamable HTTP mode)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import Peers, free_port, listening

FAKE_TASKS = Path(__file__).resolve().parent / "fake_task_server.py"


@dataclass
class TaskHTTP:
    url: str
    record: Path


@pytest.fixture
def task_http(tmp_path: Path) -> Iterator[TaskHTTP]:
    """The fake task server (2026-07-28) on 127.0.0.1; its tasks outlive each `mcp` command."""
    # --work 2.5: a detached task must still be working when the next `mcp` process asks,
    # even while a busy machine takes over a second to start one.
    port = free_port()
    record = tmp_path / "http-record.jsonl"
    argv = [sys.executable, str(FAKE_TASKS), "--http", str(port), "--record", str(record), "--work", "2.5"]
    with listening(argv, port) as url:
        yield TaskHTTP(url, record)


@pytest.fixture
def everything_http(peers: Peers) -> Iterator[str]:
    """server-everything in Streamable HTTP mode (2025-11-25 tasks, kept per session)."""
    port = free_port()
    with listening(peers.everything("streamableHttp"), port, {"PORT": str(port)}) as url:
        yield url


TASK_TOOLS = """\
version: 1
tools:
  - name: slow
    description: takes a moment, reporting progress
    task: {mode: required, after: 0s, poll_interval: 100ms}
    run:
      shell: sh
      script: |
        mcp script progress 1 2 -m halfway
        sleep 1
        echo "slow done"
  - name: confirm
    description: asks, then answers
    task: {mode: optional, after: 0s, poll_interval: 100ms}
    run:
      shell: sh
      script: |
        ok=$(mcp script elicit "Go on?" --field ok:boolean --key go --get ok) || exit 1
        echo "answer: $ok"
  - name: hang
    description: never finishes
    task: {mode: required, after: 0s, poll_interval: 100ms}
    run: {argv: [sleep, "100"]}
"""


@pytest.fixture
def task_tools(tmp_path: Path) -> Path:
    """A tools.yaml whose tools run as tasks under `mcp serve`."""
    path = tmp_path / "tools.yaml"
    path.write_text(TASK_TOOLS)
    return path


@pytest.fixture
def served_tasks(task_tools: Path) -> Iterator[str]:
    """`mcp serve` over HTTP with the task tools; yields its URL."""
    port = free_port()
    with listening([sys.executable, "-m", "mcpcli", "serve", str(task_tools), "--http", str(port), "--no-auth"], port) as url:
        yield url
