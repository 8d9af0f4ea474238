"""The gateway forwards a request's trace to its upstream: the upstream's requests made for
that request carry it; what the link does on its own (connecting) carries none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import fake_server

from mcpcli.client import Client, ClientOptions
from mcpcli.core.tracecontext import parse
from mcpcli.gateway import GatewayBackend, GatewayOptions
from mcpcli.server import Server
from mcpcli.toolsfile.model import Upstream

pytestmark = pytest.mark.anyio

GIVEN = parse("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01", "a=1")
assert GIVEN is not None


def requests(record: Path) -> list[dict[str, Any]]:
    return [m for m in map(json.loads, record.read_text().splitlines()) if "id" in m and "method" in m]


@pytest.mark.parametrize("upstream_era", [(), ("--modern", "--listen", "tagged")],
                         ids=["legacy upstream", "modern upstream"])
@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25", "2024-11-05"])
async def test_the_upstream_call_carries_the_downstream_trace(
    tmp_path: Path, version: str, upstream_era: tuple[str, ...]
) -> None:
    record = tmp_path / "upstream.jsonl"
    upstream = Upstream(name="up", command=tuple(fake_server(*upstream_era, "--record", str(record))))
    options = GatewayOptions(backoff=(0.05, 0.2), log=lambda line: None, warn=lambda line: None)
    with anyio.fail_after(30):
        async with GatewayBackend([upstream], options=options) as backend:
            server = Server(backend)
            async with Client(server.transport(), ClientOptions(protocol=version, trace_context=GIVEN)) as client:
                traced = await client.call_tool("echo", {"message": "hi"})
            async with Client(server.transport(), ClientOptions(protocol=version)) as client:
                plain = await client.call_tool("echo", {"message": "hi"})
    assert traced["content"] == plain["content"] == [{"type": "text", "text": "hi"}]
    sent = requests(record)
    first, second = [m for m in sent if m["method"] == "tools/call"]
    assert first["params"]["_meta"]["traceparent"] == GIVEN.traceparent  # no spans here: as it came
    assert first["params"]["_meta"]["tracestate"] == "a=1"
    assert "traceparent" not in second["params"].get("_meta", {})
    # The link connected during the first call, on its own behalf: its handshake carries none.
    for message in sent:
        if message["method"] in ("server/discover", "initialize", "notifications/initialized"):
            assert "traceparent" not in json.dumps(message), message
