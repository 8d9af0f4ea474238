"""The Streamable HTTP client's per-call path, as a gateway relays calls over it: a request
runs in a plain event-loop task of the transport's own (`jobs.JobSet`), and its answer is
read from the keep-alive connection without copies it does not need."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from httpfake import FakeHTTP, legacy_mcp

from mcpcli.client import Client, ClientOptions
from mcpcli.errors import TransportError
from mcpcli.transports.http import HttpConnection
from mcpcli.transports.streamable_http import StreamableHttpTransport


def test_a_bug_in_a_requests_task_fails_that_request_and_the_connection_goes_on(
    fake: Callable[..., FakeHTTP], monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = fake(legacy_mcp())
    exchange = StreamableHttpTransport._exchange
    broken = {"left": 1}

    async def flaky(self: StreamableHttpTransport, request: Any, extra: Any) -> None:
        if request.method == "tools/call" and broken["left"]:
            broken["left"] -= 1
            raise RuntimeError("a bug")
        await exchange(self, request, extra)

    monkeypatch.setattr(StreamableHttpTransport, "_exchange", flaky)

    async def go() -> None:
        transport = StreamableHttpTransport(HttpConnection(server.url, auth=None), sse_fallback=False)
        async with Client(transport, ClientOptions(protocol="2025-11-25")) as client:
            with anyio.fail_after(10), pytest.raises(TransportError, match="sending tools/call failed: RuntimeError: a bug"):
                await client.call_tool("echo", {"message": "x"})
            result = await client.call_tool("echo", {"message": "y"})
            assert "y" in result["content"][0]["text"]

    anyio.run(go)
