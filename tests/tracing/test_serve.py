"""`mcp serve`: a request that carries trace context continues it; its scripts get
`TRACEPARENT` (and `TRACESTATE`) and nothing else changes. Without spans here, the
context is passed on as received (every parent named downstream is one that was recorded)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import mcp_in

from mcpcli.client import Client, ClientOptions
from mcpcli.config import ServerEntry
from mcpcli.connect import ConnectOptions, open_transport
from mcpcli.core.tracecontext import TraceContext, parse
from mcpcli.server import Server, serve_http
from mcpcli.toolsfile.backend import ToolsBackend

pytestmark = pytest.mark.anyio

ERAS = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
GIVEN = parse("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01", "rojo=00f067aa0ba902b7")
assert GIVEN is not None


def printed(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


@asynccontextmanager
async def in_process(path: Path, version: str, trace: TraceContext | None) -> AsyncIterator[Client]:
    backend = ToolsBackend(path)
    try:
        options = ClientOptions(protocol=version, trace_context=trace, timeout=30)
        async with Client(Server(backend).transport(), options) as client:
            yield client
    finally:
        backend.close()


@asynccontextmanager
async def over_http(path: Path, version: str, trace: TraceContext | None) -> AsyncIterator[Client]:
    """`mcp serve --http` in-process on a free port, and our client over Streamable HTTP."""
    backend = ToolsBackend(path)
    urls: list[str] = []
    ready = anyio.Event()

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(serve_http, Server(backend), port=0, on_ready=on_ready))
            with anyio.fail_after(10):
                await ready.wait()
            entry = ServerEntry(name=urls[0], url=urls[0], transport="http")
            transport = open_transport(entry, ConnectOptions(auth="none"))
            with anyio.fail_after(20):
                async with Client(transport, ClientOptions(protocol=version, trace_context=trace)) as client:
                    yield client
            tg.cancel_scope.cancel()
    finally:
        backend.close()


@pytest.mark.parametrize("connect", [in_process, over_http], ids=["in-process", "http"])
@pytest.mark.parametrize("version", ERAS)
async def test_a_script_gets_the_trace_it_was_called_in(tools_yaml: Path, version: str, connect: Any) -> None:
    async with connect(tools_yaml, version, GIVEN) as client:
        result = await client.call_tool("trace", {})
    assert printed(result) == f"{GIVEN.traceparent} {GIVEN.state}"


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_the_trace_is_all_that_changes_in_a_scripts_environment(tmp_path: Path, version: str) -> None:
    path = tmp_path / "env.yaml"
    path.write_text("version: 1\ntools:\n  - name: env\n    description: its environment\n"
                    "    run:\n      shell: sh\n      script: env\n")
    seen = {}
    for trace in (None, GIVEN):
        async with in_process(path, version, trace) as client:
            text = printed(await client.call_tool("env", {}))
        seen[trace is not None] = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    assert set(seen[True]) == set(seen[False]) | {"TRACEPARENT", "TRACESTATE"}
    assert (seen[True]["TRACEPARENT"], seen[True]["TRACESTATE"]) == (GIVEN.traceparent, "rojo=00f067aa0ba902b7")
    per_run = {"MCP_SCRIPT_SOCKET", "MCP_SCRIPT_TOKEN", "MCP_SCRIPT", "PATH"}  # the side channel's own
    for name in set(seen[False]) - per_run:
        assert seen[True][name] == seen[False][name], name


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_without_a_trace_a_script_gets_none(tools_yaml: Path, version: str) -> None:
    async with in_process(tools_yaml, version, None) as client:
        assert printed(await client.call_tool("trace", {})) == "- -"
        # One request's trace is not the next one's.
        traced = await client.request("tools/call", {"name": "trace", "arguments": {},
                                                     "_meta": {"traceparent": GIVEN.traceparent}})
        assert printed(traced) == f"{GIVEN.traceparent} -"
        assert printed(await client.call_tool("trace", {})) == "- -"


@pytest.mark.parametrize("meta", [
    {"traceparent": "garbage", "tracestate": "a=1"},
    {"traceparent": GIVEN.traceparent.upper()},
    {"traceparent": 7},
    {"tracestate": "a=1"},
])
@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_a_malformed_trace_is_ignored(tools_yaml: Path, version: str, meta: dict[str, Any]) -> None:
    async with in_process(tools_yaml, version, None) as client:
        result = await client.request("tools/call", {"name": "trace", "arguments": {}, "_meta": meta})
    assert printed(result) == "- -"


async def test_a_bad_tracestate_leaves_the_traceparent(tools_yaml: Path) -> None:
    async with in_process(tools_yaml, "2026-07-28", None) as client:
        result = await client.request("tools/call", {"name": "trace", "arguments": {},
                                                     "_meta": {"traceparent": GIVEN.traceparent, "tracestate": "A=1"}})
    assert printed(result) == f"{GIVEN.traceparent} -"


def test_the_cli_on_a_tools_file(tools_yaml: Path) -> None:
    r = mcp_in("tools", "call", str(tools_yaml), "trace", "--traceparent", GIVEN.traceparent)
    assert r.code == 0, r
    assert printed(r.json) == f"{GIVEN.traceparent} -"


async def test_an_initialize_with_only_a_trace_in_meta_is_a_legacy_one_over_http(tools_yaml: Path) -> None:
    """Another client may put its trace context on `initialize` too: a `_meta` without the
    2026-07-28 fields does not make it a stateless request (which would refuse it)."""
    import httpx

    backend = ToolsBackend(tools_yaml)
    urls: list[str] = []
    ready = anyio.Event()

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(serve_http, Server(backend), port=0, on_ready=on_ready, auth_token=None))
            with anyio.fail_after(10):
                await ready.wait()
            body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"},
                "_meta": {"traceparent": GIVEN.traceparent}}}
            async with httpx.AsyncClient() as http:
                response = await http.post(urls[0], json=body, headers={
                    "Accept": "application/json, text/event-stream"})
            tg.cancel_scope.cancel()
    finally:
        backend.close()
    assert response.status_code == 200, response.text
    assert response.headers.get("mcp-session-id")
    assert '"protocolVersion":"2025-11-25"' in response.text.replace(" ", "")
