"""Fixtures for the recording tests: `mcp serve` processes over HTTP (a tools.yaml, a replay)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import Peers, free_port, stop_process, wait_listening


@pytest.fixture
def http_serve(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start `mcp serve ARGS --http PORT` and return its URL; stopped at teardown."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> str:
        port = free_port()
        log = open(tmp_path / f"serve-{port}.log", "wb")  # noqa: SIM115 - closed below
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpcli", "serve", "--http", f"127.0.0.1:{port}", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
        )
        log.close()
        procs.append(proc)
        wait_listening(port, proc, "mcp serve")
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for proc in procs:
        stop_process(proc)


@pytest.fixture
def everything_http(peers: Peers) -> Iterator[str]:
    """server-everything in `streamableHttp` mode; yields its /mcp URL, stopped at teardown."""
    port = free_port()
    proc = subprocess.Popen(
        peers.everything("streamableHttp"), env={**os.environ, "PORT": str(port)},
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, proc, "server-everything streamableHttp")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
