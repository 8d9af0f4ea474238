"""The official Python SDK client (its own venv) against our server, over stdio and HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from server_http import running

from mcpcli.server import Server

pytestmark = [pytest.mark.peer, pytest.mark.anyio]

HERE = Path(__file__).parent
DRIVER = str(HERE / "sdk_client_driver.py")
DEMO = [sys.executable, str(HERE / "demo_stdio.py")]


def _check(out: dict[str, Any], modern: bool) -> None:
    assert out["protocol"] == ("2026-07-28" if modern else "2025-11-25")
    assert out["server"] == "demo"
    assert out["echo"] == ["hello; $(id)"]
    assert out["progress"] == [0, 50, 100]
    assert out["elicit"] == ["Hello, Ada!"]
    assert out["sample"] == ["sampled: 4"]
    assert out["roots"] == ["roots: file:///sdk/root"]
    assert out["two_questions"] == ["Ada Ada"]
    assert out["logs"] == ["warning", "error"]
    assert out["fail"] == {"isError": True, "text": ["it failed"]}
    assert out["unknown_tool"] == -32602
    assert out["missing"] == (-32602 if modern else -32002)
    assert out["resource"] == ["hello"]
    assert out["prompt"] == ["Hello Ada"]
    assert out["completion"] == ["alice", "alfred"]
    if modern:
        assert out["honored"] is True
        assert out["event"] == "ToolsListChanged"
    else:
        assert out["subscribed"] is True


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_sdk_client_over_stdio(peers: Any, mode: str) -> None:
    proc = subprocess.run(
        [peers.sdk(), DRIVER, json.dumps(DEMO), mode], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check(json.loads(proc.stdout.strip().splitlines()[-1]), modern=mode == "auto")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_client_over_streamable_http(peers: Any, server: Server, mode: str) -> None:
    async with running(server) as url:
        with anyio.fail_after(120):
            proc = await anyio.run_process([peers.sdk(), DRIVER, url, mode], check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    _check(json.loads(proc.stdout.decode().strip().splitlines()[-1]), modern=mode == "auto")


async def test_sdk_client_over_legacy_http_sse(peers: Any, server: Server) -> None:
    async with running(server) as url:
        sse = "sse:" + url.rsplit("/", 1)[0] + "/sse"
        with anyio.fail_after(120):
            proc = await anyio.run_process([peers.sdk(), DRIVER, sse, "legacy"], check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    _check(json.loads(proc.stdout.decode().strip().splitlines()[-1]), modern=False)
