"""Fixtures of the inspector tests: server-everything over Streamable HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import LOOPBACK, Peers, free_port

HERE = Path(__file__).resolve().parent


@pytest.fixture
def everything_http_url(peers: Peers) -> Iterator[str]:
    """server-everything over Streamable HTTP on 127.0.0.1."""
    import os
    import signal
    import subprocess

    from helpers import wait_listening

    node, *script = peers.everything("streamableHttp")
    port = free_port()
    proc = subprocess.Popen([node, "--require", str(LOOPBACK), *script], env={**os.environ, "PORT": str(port)},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        wait_listening(port, proc, "server-everything streamableHttp")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
