"""A saturated server still answers `ping` at once: every call slot busy (the calls wait on
the demo backend's gate), more calls refused as too many, and a ping behind them is answered
without waiting on any of them, in every era, over memory, real pipes and a legacy HTTP
session. (How fast, under load: scripts/bench_ping.py.)"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import pytest
from helpers import OpenFds, wait_until_async
from server_backends import DemoBackend
from server_support import modern_meta

from mcpcli.core.jsonrpc import ErrorResponse, Notification, Request, Response
from mcpcli.rpc.peer import MAX_CONCURRENT_INCOMING
from mcpcli.server import Server
from mcpcli.server.stdio import stdio_streams
from mcpcli.transports import Envelope, Streams
from mcpcli.transports.memory import memory_pair

pytestmark = pytest.mark.anyio

JSON = dict[str, Any]
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


@asynccontextmanager
async def _memory() -> AsyncIterator[tuple[Streams, Streams]]:
    async with memory_pair() as (client_side, server_side):
        yield client_side, server_side


@asynccontextmanager
async def _pipes() -> AsyncIterator[tuple[Streams, Streams]]:
    to_server_r, to_server_w = os.pipe()
    to_client_r, to_client_w = os.pipe()
    fds = OpenFds(to_server_r, to_server_w, to_client_r, to_client_w)
    try:
        async with (
            stdio_streams(to_server_r, to_client_w) as server_side,
            stdio_streams(to_client_r, to_server_w) as client_side,
        ):
            yield client_side, server_side
    finally:
        fds.close_all()


PAIRS: dict[str, Callable[[], AbstractAsyncContextManager[tuple[Streams, Streams]]]] = {
    "memory": _memory,
    "pipes": _pipes,
}


@pytest.mark.parametrize("pair", list(PAIRS))
@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_a_ping_behind_a_full_house_is_answered_at_once(pair: str, era: str) -> None:
    backend = DemoBackend()
    server = Server(backend)
    modern = era == "2026-07-28"

    def params(**fields: Any) -> JSON:
        return {**fields, "_meta": modern_meta()} if modern else fields

    with anyio.fail_after(20):
        async with PAIRS[pair]() as (client_side, server_side), anyio.create_task_group() as tg:
            tg.start_soon(server.serve, server_side)
            read, write = client_side

            async def receive() -> Response | ErrorResponse:
                item = await read.receive()  # type: ignore[attr-defined]
                assert isinstance(item, Envelope) and isinstance(item.message, (Response, ErrorResponse))
                return item.message

            if not modern:
                await write.send(Envelope(Request("initialize", INIT, "init")))
                assert isinstance(await receive(), Response)
                await write.send(Envelope(Notification("notifications/initialized", None)))
            busy = MAX_CONCURRENT_INCOMING + 10  # every slot taken, and ten refused
            for rid in range(busy):
                await write.send(Envelope(Request("tools/call", params(name="gate", arguments={}), rid)))
            await write.send(Envelope(Request("ping", params() if modern else None, "ping")))
            before: list[Response | ErrorResponse] = []
            while (answer := await receive()).id != "ping":
                before.append(answer)
            assert isinstance(answer, Response), answer
            if modern:
                assert answer.result["resultType"] == "complete"
            else:
                assert answer.result == {}
            # Nothing that waits on the gate had an answer: only the calls refused as too many.
            assert all(isinstance(a, ErrorResponse) and a.error.code == -32603 for a in before), before
            assert not backend.gate.is_set()
            backend.gate.set()
            results = {(await receive()).id for _ in range(busy - len(before))}
            assert results | {a.id for a in before} == set(range(busy))
            tg.cancel_scope.cancel()


@pytest.mark.slow
async def test_a_ping_on_a_busy_legacy_http_session_is_answered_at_once() -> None:
    """The same over Streamable HTTP: a 2025-11-25 session whose every slot is busy answers
    a ping POST with `{}` at once (no "too many concurrent requests")."""
    import httpx
    from server_http import running

    backend = DemoBackend()
    server = Server(backend)
    headers = {"Accept": "application/json, text/event-stream"}
    with anyio.fail_after(30):
        async with running(server) as url, httpx.AsyncClient(timeout=20, headers=headers) as http:
            init = await http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
            headers = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
            await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
            async with anyio.create_task_group() as tg:
                for rid in range(1, MAX_CONCURRENT_INCOMING + 1):
                    call = {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                            "params": {"name": "gate", "arguments": {}}}
                    tg.start_soon(lambda body=call: http.post(url, json=body, headers=headers))
                await wait_until_async(lambda: backend.runs.get("gate", 0) == MAX_CONCURRENT_INCOMING,
                                       20, "every slot to be busy")
                ping = await http.post(url, json={"jsonrpc": "2.0", "id": "p", "method": "ping"}, headers=headers)
                assert ping.status_code == 200
                assert json.loads(ping.text) == {"jsonrpc": "2.0", "id": "p", "result": {}}
                assert not backend.gate.is_set()
                backend.gate.set()
