"""Streamable HTTP ties a server message to the request whose response stream carried it.

A server request or notification read off a POST's SSE stream belongs to that POST's
request (`Envelope.related_request_id`), and the client's callbacks see it as
`mcpcli.client.caused_by`; one read off the GET stream belongs to no request. The
session daemon routes by it (tests/daemon/test_everything.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
from httpfake import FakeHTTP, Reply, Req, legacy_mcp, sse_event, sse_reply

from mcpcli.client import Client, ClientFeatures, ClientOptions, caused_by
from mcpcli.transports.http import HttpConnection
from mcpcli.transports.streamable_http import StreamableHttpTransport

JSON = dict[str, Any]


def _note(text: str) -> JSON:
    return {"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "logger": "t", "data": text}}


def test_messages_on_a_requests_stream_name_that_request_and_the_get_streams_none(
    fake: Callable[..., FakeHTTP],
) -> None:
    legacy = legacy_mcp()
    answered = threading.Event()

    def handle(req: Req) -> Reply:
        if req.method == "GET":
            return sse_reply(sse_event(_note("from the GET stream")), hold=answered)
        if req.method == "POST" and req.rpc.get("id") == "srv-1" and "result" in req.rpc:
            answered.set()
            return Reply(202)
        if req.rpc_method == "tools/call":
            ask = {"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create",
                   "params": {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}}

            def body() -> Any:
                yield sse_event(_note("from the call's stream"))
                yield sse_event(ask)
                answered.wait(10)  # the tool finishes once the client answered
                yield sse_event({"jsonrpc": "2.0", "id": req.rpc["id"],
                                 "result": {"content": [{"type": "text", "text": "thanks"}]}})

            return Reply(200, {"Content-Type": "text/event-stream"}, body())
        return legacy(req)

    server = fake(handle)
    elicited: list[Any] = []
    notified: list[tuple[str, Any]] = []
    got_get = anyio.Event()

    async def elicit(params: JSON) -> JSON:
        elicited.append(caused_by.get())
        return {"action": "decline"}

    def on_notification(method: str, params: JSON) -> None:
        notified.append((params.get("data"), caused_by.get()))
        if params.get("data") == "from the GET stream":
            got_get.set()

    async def go() -> None:
        transport = StreamableHttpTransport(HttpConnection(server.url, auth=None), sse_fallback=False)
        options = ClientOptions(protocol="2025-11-25", features=ClientFeatures(elicit=elicit),
                                on_notification=on_notification)
        async with Client(transport, options) as client:
            await transport.open_standalone_stream()
            with anyio.fail_after(10):
                await got_get.wait()
            result = await client.call_tool("echo", {"message": "x"})
            assert result["content"][0]["text"] == "thanks"

    anyio.run(go)
    call_id = server.calls("tools/call")[0].rpc["id"]
    assert elicited == [call_id]
    assert ("from the call's stream", call_id) in notified
    assert ("from the GET stream", None) in notified
    assert caused_by.get() is None  # set only while a callback runs
