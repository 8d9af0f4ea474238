"""Fixtures for the HTTP tests: real peers listening on 127.0.0.1, and the fake server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import LOOPBACK, Peers, free_port, stop_group, wait_listening
from httpfake import FakeHTTP, Handler

HERE = Path(__file__).resolve().parent


def _serve(argv: list[str], port: int, what: str, env: dict[str, str] | None = None) -> Iterator[int]:
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=full_env, start_new_session=True,
    )
    try:
        wait_listening(port, proc, what)
        yield port
    finally:
        stop_group(proc)


@pytest.fixture(scope="module")
def everything_http(peers: Peers) -> Iterator[str]:
    """server-everything in `streamableHttp` mode; yields its /mcp URL."""
    argv = peers.everything("streamableHttp")
    port = free_port()
    node, script = argv[0], argv[1:]
    cmd = [node, "--require", str(LOOPBACK), *script]
    for p in _serve(cmd, port, "server-everything streamableHttp", {"PORT": str(port)}):
        yield f"http://127.0.0.1:{p}/mcp"


@pytest.fixture(scope="module")
def everything_sse(peers: Peers) -> Iterator[str]:
    """server-everything in legacy `sse` mode; yields its /sse URL."""
    argv = peers.everything("sse")
    port = free_port()
    node, script = argv[0], argv[1:]
    cmd = [node, "--require", str(LOOPBACK), *script]
    for p in _serve(cmd, port, "server-everything sse", {"PORT": str(port)}):
        yield f"http://127.0.0.1:{p}/sse"


@pytest.fixture(scope="module")
def sdk_http(peers: Peers) -> Iterator[str]:
    """The official-SDK test server over Streamable HTTP (both eras); yields its /mcp URL."""
    port = free_port()
    cmd = [peers.sdk(), str(HERE / "sdk_http_server.py"), str(port), "--tick"]
    for p in _serve(cmd, port, "SDK HTTP server"):
        yield f"http://127.0.0.1:{p}/mcp"


@pytest.fixture
def fake() -> Iterator[Callable[..., FakeHTTP]]:
    """Start fake HTTP servers with a handler; all are stopped after the test."""
    started: list[FakeHTTP] = []

    def start(handler: Handler, **kwargs: Any) -> FakeHTTP:
        server = FakeHTTP(handler, **kwargs).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
