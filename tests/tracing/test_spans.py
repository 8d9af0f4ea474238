"""OpenTelemetry spans, checked with the SDK's own in-memory exporter: the client's CLIENT
span per request, serve's SERVER span per request it handles, the gateway's both, named
and described as the semantic conventions for MCP say, each the child of the one before."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpcli import spans
from mcpcli.client import Client, ClientOptions
from mcpcli.core.tracecontext import TraceContext, parse
from mcpcli.errors import RPCError
from mcpcli.gateway import GatewayBackend, GatewayOptions
from mcpcli.server import Server
from mcpcli.toolsfile.backend import ToolsBackend
from mcpcli.toolsfile.model import Upstream

pytestmark = pytest.mark.anyio

ERAS = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
GIVEN = parse("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01", "rojo=00f067aa0ba902b7")
assert GIVEN is not None


def hexes(span: Any) -> tuple[str, str]:
    return format(span.context.trace_id, "032x"), format(span.context.span_id, "016x")


def parent_id(span: Any) -> str | None:
    return format(span.parent.span_id, "016x") if span.parent is not None else None


def the(recorded: Any, kind: str, name: str) -> list[Any]:
    from opentelemetry.trace import SpanKind

    wanted = SpanKind.CLIENT if kind == "client" else SpanKind.SERVER
    return [s for s in recorded.get_finished_spans() if s.kind == wanted and s.name == name]


@asynccontextmanager
async def in_process(path: Path, version: str, trace: TraceContext | None) -> AsyncIterator[Client]:
    backend = ToolsBackend(path)
    try:
        options = ClientOptions(protocol=version, trace_context=trace, timeout=30)
        async with Client(Server(backend).transport(), options) as client:
            yield client
    finally:
        backend.close()


@pytest.mark.parametrize("version", ERAS)
async def test_a_call_is_a_client_span_and_a_server_span(tools_yaml: Path, recorded: Any, version: str) -> None:
    async with in_process(tools_yaml, version, GIVEN) as client:
        result = await client.call_tool("trace", {})
    (call,) = the(recorded, "client", "tools/call trace")
    (handled,) = the(recorded, "server", "tools/call trace")
    trace_id, call_id = hexes(call)
    assert trace_id == GIVEN.trace_id == hexes(handled)[0]
    assert parent_id(call) == GIVEN.span_id  # the given context is the client span's parent
    assert parent_id(handled) == call_id  # the server span is the client span's child
    # The script continues the server span, with the given tracestate.
    assert result["content"][0]["text"] == f"00-{trace_id}-{hexes(handled)[1]}-01 rojo=00f067aa0ba902b7"
    for span in (call, handled):
        assert dict(span.attributes) == {
            "mcp.method.name": "tools/call", "gen_ai.tool.name": "trace", "gen_ai.operation.name": "execute_tool",
            "jsonrpc.request.id": dict(call.attributes)["jsonrpc.request.id"], "mcp.protocol.version": version,
        }
        assert span.status.is_unset
    # Every request of the connection is a client span in the same trace; the server saw each.
    methods = {"2026-07-28": {"server/discover", "tools/call trace"}}.get(
        version, {"initialize", "tools/call trace"})
    clients = {s.name for s in recorded.get_finished_spans() if s.kind.name == "CLIENT"}
    servers = {s.name for s in recorded.get_finished_spans() if s.kind.name == "SERVER"}
    assert methods <= clients and methods - {"initialize"} <= servers
    for span in recorded.get_finished_spans():
        if span.kind.name == "SERVER" and span.name == "initialize":
            assert span.parent is None  # a legacy initialize carries no trace context: its own trace
        else:
            assert hexes(span)[0] == GIVEN.trace_id


async def test_without_a_given_trace_each_request_starts_one(tools_yaml: Path, recorded: Any) -> None:
    async with in_process(tools_yaml, "2026-07-28", None) as client:
        result = await client.call_tool("trace", {})
    (call,) = the(recorded, "client", "tools/call trace")
    (handled,) = the(recorded, "server", "tools/call trace")
    assert call.parent is None and parent_id(handled) == hexes(call)[1]
    flags = int(handled.context.trace_flags)  # sampled, and (W3C level 2) a random trace id: 03
    assert result["content"][0]["text"] == f"00-{hexes(handled)[0]}-{hexes(handled)[1]}-{flags:02x} -"


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_errors(tools_yaml: Path, recorded: Any, version: str) -> None:
    async with in_process(tools_yaml, version, GIVEN) as client:
        with pytest.raises(RPCError) as raised:
            await client.call_tool("nosuch", {})
        failed = await client.call_tool("fail", {})
    assert failed["isError"] is True
    for span in the(recorded, "client", "tools/call nosuch") + the(recorded, "server", "tools/call nosuch"):
        assert span.attributes["error.type"] == span.attributes["rpc.response.status_code"] == "-32602"
        assert not span.status.is_ok and not span.status.is_unset
        assert span.status.description == raised.value.rpc_message
    tool_error = the(recorded, "client", "tools/call fail") + the(recorded, "server", "tools/call fail")
    assert len(tool_error) == 2
    for span in tool_error:  # the conventions' `tool_error`: the call worked, the tool failed
        assert span.attributes["error.type"] == "tool_error"
        assert "rpc.response.status_code" not in span.attributes
        assert not span.status.is_unset


async def test_a_malformed_traceparent_makes_a_root_server_span(tools_yaml: Path, recorded: Any) -> None:
    async with in_process(tools_yaml, "2025-11-25", None) as client:
        # Past the client (which would put its own span there): what another client might send.
        result = await client.peer.request(
            "tools/call", {"name": "trace", "arguments": {}, "_meta": {"traceparent": "junk", "tracestate": "a=1"}})
    (handled,) = the(recorded, "server", "tools/call trace")
    assert handled.parent is None
    trace_id, span_id = hexes(handled)
    assert result["content"][0]["text"].startswith(f"00-{trace_id}-{span_id}-")
    assert result["content"][0]["text"].endswith(" -")  # the tracestate went with the bad traceparent


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25", "2024-11-05"])
async def test_through_the_gateway_every_hop_is_the_child_of_the_one_before(
    tools_yaml: Path, recorded: Any, version: str
) -> None:
    """client -> gateway (SERVER, then CLIENT to its upstream) -> the upstream's serve -> script."""
    options = GatewayOptions(backoff=(0.05, 0.2), log=lambda line: None, warn=lambda line: None,
                             protocol=version)
    with anyio.fail_after(30):
        async with GatewayBackend([Upstream(name="up", target=str(tools_yaml))], options=options) as backend:
            client_options = ClientOptions(protocol=version, trace_context=GIVEN, timeout=30)
            async with Client(Server(backend).transport(), client_options) as client:
                result = await client.call_tool("trace", {})
    name = "tools/call trace"
    calls = sorted(the(recorded, "client", name), key=lambda s: s.start_time)
    handled = sorted(the(recorded, "server", name), key=lambda s: s.start_time)
    assert len(calls) == len(handled) == 2, recorded.get_finished_spans()
    client_span, gateway_out = calls
    gateway_in, upstream_in = handled
    assert parent_id(client_span) == GIVEN.span_id
    assert parent_id(gateway_in) == hexes(client_span)[1]
    assert parent_id(gateway_out) == hexes(gateway_in)[1]
    assert parent_id(upstream_in) == hexes(gateway_out)[1]
    assert {hexes(s)[0] for s in (*calls, *handled)} == {GIVEN.trace_id}
    assert result["content"][0]["text"] == f"00-{GIVEN.trace_id}-{hexes(upstream_in)[1]}-01 rojo=00f067aa0ba902b7"


def test_request_attributes() -> None:
    attributes = spans.request_attributes
    assert attributes("prompts/get", {"name": "review"}, request_id=7, transport="streamable-http",
                      session_id="s1", version="2025-06-18") == {
        "mcp.method.name": "prompts/get", "gen_ai.prompt.name": "review", "jsonrpc.request.id": "7",
        "mcp.session.id": "s1", "mcp.protocol.version": "2025-06-18",
        "network.transport": "tcp", "network.protocol.name": "http"}
    assert attributes("resources/read", {"uri": "file:///a"}, transport="stdio") == {
        "mcp.method.name": "resources/read", "mcp.resource.uri": "file:///a", "network.transport": "pipe"}
    assert attributes("ping", {}, transport="in-process") == {"mcp.method.name": "ping"}
    assert spans.span_name("tools/call", {"name": "x"}) == "tools/call x"
    assert spans.span_name("prompts/get", {"name": "p"}) == "prompts/get p"
    assert spans.span_name("resources/read", {"uri": "file:///a"}) == "resources/read"  # no URIs in names
    assert spans.span_name("tools/call", {}) == "tools/call"
