"""`mcp serve --http` flags: extra allowed Host names and Origins (reverse proxies, web apps)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import REPO, free_port, mcp, wait_until

INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpcli", "serve", str(REPO / "examples/tools.yaml"),
             "--http", f"127.0.0.1:{port}", "--allow-host", "mcp.proxy.example",
             "--allow-origin", "https://app.example"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fh,
        )
    try:
        wait_until(lambda: proc.poll() is not None or "serving" in log.read_text(), what="the server")
        assert proc.poll() is None, log.read_text()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _post(url: str, **headers: str) -> int:
    import httpx

    base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    return httpx.post(url, json=INIT, headers={**base, **headers}, timeout=10).status_code


def test_extra_host_and_origin_are_accepted_others_refused(served: str) -> None:
    assert _post(served) == 200                                   # loopback still works
    assert _post(served, Host="mcp.proxy.example") == 200          # the proxy's public name
    assert _post(served, Host="evil.example") == 403               # DNS rebinding stays blocked
    assert _post(served, Origin="https://app.example") == 200
    assert _post(served, Origin="https://evil.example") == 403


def test_allow_flags_need_http() -> None:
    r = mcp("serve", str(REPO / "examples/tools.yaml"), "--allow-host", "x.example")
    assert r.code == 2
    assert "apply to --http only" in r.stderr
