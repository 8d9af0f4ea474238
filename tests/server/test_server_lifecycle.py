"""The 2025 handshake: between `initialize` and `notifications/initialized` only ping is served.

The same rule over stdio (raw lines to a real process) and over Streamable HTTP
(a legacy session); the stateless 2026-07-28 era has no handshake and is not gated.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_http import messages, running
from server_support import modern_meta

from mcpcli.server import Server
from mcpcli.server.core import NOT_INITIALIZED

pytestmark = pytest.mark.anyio

DEMO = str(Path(__file__).parent / "demo_stdio.py")
JSON = dict[str, Any]
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _init(version: str) -> JSON:
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def _call(rid: int, text: str) -> JSON:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}}


@pytest.mark.parametrize("version", ["2025-11-25", "2024-11-05"])
def test_stdio_refuses_requests_until_initialized(version: str) -> None:
    modern = {"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"_meta": modern_meta()}}
    lines = [
        _init(version),
        _call(2, "too early"),
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"jsonrpc": "2.0", "id": 4, "method": "nope/nope"},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
        modern,
        INITIALIZED,
        _call(7, "in time"),
    ]
    proc = subprocess.run([sys.executable, DEMO], input="".join(json.dumps(m) + "\n" for m in lines).encode(),
                          capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stderr.decode()
    by_id = {m["id"]: m for m in map(json.loads, proc.stdout.splitlines())}
    assert by_id[1]["result"]["protocolVersion"] == version
    for early in (2, 5):
        assert by_id[early]["error"] == {"code": -32600, "message": NOT_INITIALIZED}
    assert by_id[3]["result"] == {}  # ping is allowed at any time
    assert by_id[4]["error"]["code"] == -32601  # unknown stays unknown
    assert by_id[6]["result"]["resultType"] == "complete"  # 2026-07-28 has no handshake
    assert by_id[7]["result"]["content"] == [{"type": "text", "text": "in time"}]
    assert b"Traceback" not in proc.stderr


async def test_http_session_refuses_requests_until_initialized(server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        init = await http.post(url, json=_init("2025-11-25"), headers=HEADERS)
        assert init.status_code == 200
        session = {**HEADERS, "Mcp-Session-Id": init.headers["mcp-session-id"],
                   "MCP-Protocol-Version": "2025-11-25"}
        early = await http.post(url, json=_call(2, "too early"), headers=session)
        assert messages(early) == [{"jsonrpc": "2.0", "id": 2, "error": {"code": -32600, "message": NOT_INITIALIZED}}]
        ping = await http.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "ping"}, headers=session)
        assert messages(ping)[0]["result"] == {}
        assert (await http.post(url, json=INITIALIZED, headers=session)).status_code == 202
        ok = await http.post(url, json=_call(4, "in time"), headers=session)
        assert messages(ok)[-1]["result"]["content"] == [{"type": "text", "text": "in time"}]
        await http.delete(url, headers=session)
