"""The client <-> transport seam: the client relies on what a transport declares
(`TransportTraits` and the `Transport` hooks) and hands a hook what it needs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import pytest
from server_support import features

from mcpcli.client import Client, ClientOptions
from mcpcli.core.jsonrpc import Batch, Message, Request
from mcpcli.server import Server
from mcpcli.transports import Streams, TransportTraits
from mcpcli.transports.memory import InProcessTransport

pytestmark = pytest.mark.anyio

JSON = dict[str, Any]


class Declaring(InProcessTransport):
    """The in-process transport, declaring traits and recording what its hooks were given."""

    def __init__(self, server: Server, traits: TransportTraits) -> None:
        async def serve(streams: Streams) -> None:
            await server.serve(streams, transport="memory")

        super().__init__(serve)
        self.traits = traits
        self.header_calls: list[tuple[str, Mapping[str, Any] | None]] = []
        self.standalone_opened = 0

    def describe(self) -> str | None:
        return "declared peer"

    def request_headers(
        self, method: str, params: Mapping[str, Any], *, tool: Mapping[str, Any] | None = None
    ) -> Mapping[str, str] | None:
        self.header_calls.append((method, tool))
        return None

    def filter_tools(self, tools: list[Any]) -> tuple[list[Any], list[tuple[str, str]]]:
        kept = [t for t in tools if t.get("name") != "crash"]
        return kept, [("crash", "not for this transport")]

    async def open_standalone_stream(self) -> None:
        self.standalone_opened += 1


def _methods(sent: list[str]) -> Any:
    def trace(direction: str, message: Message | Batch) -> None:
        if direction == "send" and isinstance(message, Request):
            sent.append(message.method)

    return trace


async def test_a_legacy_only_transport_skips_the_era_probe(server: Server) -> None:
    sent: list[str] = []
    transport = Declaring(server, TransportTraits(legacy_only=True))
    with anyio.fail_after(10):
        async with Client(transport, ClientOptions(features=features(), trace=_methods(sent))) as client:
            assert client.era == "legacy"
    assert sent[0] == "initialize"
    assert "server/discover" not in sent


async def test_the_default_transport_probes_first(server: Server) -> None:
    sent: list[str] = []
    with anyio.fail_after(10):
        async with Client(server.transport(), ClientOptions(features=features(), trace=_methods(sent))) as client:
            assert client.era == "modern"
            # Nothing to describe in-process: messages name "the server".
            assert client.transport.describe() is None
            assert client.server_name == "demo"
    assert sent[0] == "server/discover"


async def test_a_mirroring_transport_gets_the_listed_tool_of_a_modern_call(server: Server) -> None:
    sent: list[str] = []
    transport = Declaring(server, TransportTraits(mirrors_headers=True))
    with anyio.fail_after(10):
        async with Client(transport, ClientOptions(features=features(), trace=_methods(sent))) as client:
            result = await client.call_tool("region", {"region": "eu", "count": 2})
    assert not result.get("isError")
    # The client listed tools first (a mirroring transport needs the tool's declarations)...
    assert sent.index("tools/list") < sent.index("tools/call")
    calls = [(method, tool) for method, tool in transport.header_calls if method == "tools/call"]
    assert len(calls) == 1
    tool = calls[0][1]
    assert tool is not None
    # ...and handed the transport the tool's listed definition, never itself.
    assert tool["name"] == "region"
    assert tool["inputSchema"]["properties"]["region"]["x-mcp-header"] == "Region"
    # Other requests get no tool.
    assert all(tool is None for method, tool in transport.header_calls if method != "tools/call")


async def test_a_plain_transport_calls_without_listing(server: Server) -> None:
    sent: list[str] = []
    with anyio.fail_after(10):
        async with Client(server.transport(), ClientOptions(features=features(), trace=_methods(sent))) as client:
            await client.call_tool("echo", {"text": "hi"})
    assert "tools/list" not in sent


async def test_tools_the_transport_cannot_call_are_dropped_in_the_modern_era(server: Server) -> None:
    warnings: list[Exception] = []
    transport = Declaring(server, TransportTraits())
    options = ClientOptions(features=features(), on_error=warnings.append)
    with anyio.fail_after(10):
        async with Client(transport, options) as client:
            names = [t["name"] for t in (await client.list_tools())["tools"]]
    assert "crash" not in names and "echo" in names
    assert [str(w) for w in warnings] == ["ignoring tool 'crash': not for this transport"]


async def test_a_legacy_subscription_opens_the_transports_standalone_stream(server: Server) -> None:
    transport = Declaring(server, TransportTraits())
    with anyio.fail_after(10):
        async with Client(transport, ClientOptions(features=features(), protocol="2025-06-18")) as client:
            async with client.subscribe(resources=["mem://greeting"]):
                assert transport.standalone_opened == 1
            assert client.server_name == "demo"


async def test_request_sent_is_told_each_request_id_around_the_request(server: Server) -> None:
    """A relay learns the id of every request the client sends, before it goes out and
    until its answer is in (what the gateway routes server messages by)."""
    from contextlib import contextmanager

    wire: list[tuple[str, Any]] = []
    told: list[tuple[str, Any]] = []

    def trace(direction: str, message: Message | Batch) -> None:
        if direction == "send" and isinstance(message, Request):
            wire.append((message.method, message.id))

    @contextmanager
    def sent(request_id: Any) -> Any:
        told.append(("sent", request_id))
        pending = len(wire)
        yield
        told.append(("answered", request_id))
        assert wire[pending][1] == request_id  # it went out under that id, within the block

    options = ClientOptions(features=features(), trace=trace, request_sent=sent)
    with anyio.fail_after(10):
        async with Client(server.transport(), options) as client:
            await client.list_tools()
            result = await client.call_tool("echo", {"text": "hi"})
    assert result["content"][0]["text"] == "hi"
    ids = [request_id for _method, request_id in wire]
    assert [method for method, _id in wire][-2:] == ["tools/list", "tools/call"]
    assert told == [(step, request_id) for request_id in ids for step in ("sent", "answered")]
