"""Streamable HTTP (both eras) and HTTP+SSE on a real uvicorn, with our client and raw requests."""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
import httpx
import pytest
from server_backends import DemoBackend
from server_http import MODERN_HEADERS, http_client, messages, modern_request, raw_post, running
from server_support import modern_meta

from mcpcli.errors import TransportError, UsageError
from mcpcli.server import Server, serve_http

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
LEGACY_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize("protocol", [None, "2025-11-25", "2025-06-18", "2025-03-26"])
@pytest.mark.slow
async def test_our_client_over_streamable_http(server: Server, protocol: str | None) -> None:
    async with running(server) as url, http_client(url, protocol) as client:
        assert client.protocol_version == (protocol or "2026-07-28")
        assert (await client.call_tool("echo", {"text": "hi"}))["content"][0]["text"] == "hi"
        assert (await client.call_tool("elicit"))["content"][0]["text"] == "Hello, Ada!"
        assert (await client.call_tool("two_questions"))["content"][0]["text"] == "Ada Ada"
        progress: list[float] = []
        await client.call_tool("progress", on_progress=lambda p: progress.append(p["progress"]))
        assert progress == [0, 50, 100]
        assert (await client.read_resource("mem://greeting"))["contents"][0]["text"] == "hello"
        result = await client.call_tool("region", {"region": "Zürich ", "count": 3, "opts": {"flag": True}})
        assert result["content"][0]["text"] == "Zürich /3"


@pytest.mark.slow
async def test_our_client_over_legacy_http_sse(server: Server) -> None:
    async with running(server) as url:
        sse_url = url.rsplit("/", 1)[0] + "/sse"
        async with http_client(sse_url, "2024-11-05", transport="sse") as client:
            assert client.protocol_version == "2024-11-05"
            assert (await client.call_tool("echo", {"text": "old"}))["content"][0]["text"] == "old"
            assert (await client.call_tool("elicit"))["content"][0]["text"] == "Hello, Ada!"


@pytest.mark.slow
async def test_concurrent_calls_over_http(server: Server) -> None:
    results: dict[int, str] = {}
    async with running(server) as url:
        for protocol in (None, "2025-11-25"):
            async with http_client(url, protocol) as client:

                async def one(n: int) -> None:
                    result = await client.call_tool("echo", {"text": str(n)})
                    results[n] = result["content"][0]["text"]

                async with anyio.create_task_group() as tg:
                    for n in range(20):
                        tg.start_soon(one, n)
                assert results == {n: str(n) for n in range(20)}
                results.clear()


async def test_listen_over_http(backend: DemoBackend, server: Server) -> None:
    async with running(server) as url, http_client(url) as client:
        async with client.subscribe(tools=True) as stream:
            backend.changed("tools")
            with anyio.fail_after(5):
                note = await stream.receive()
        assert note["method"] == "notifications/tools/list_changed"


# -- security ------------------------------------------------------------------------------


async def test_dns_rebinding_is_refused(server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient() as http:
        body, headers = modern_request("tools/list")
        port = url.split(":")[2].split("/")[0]
        for bad in ({"Host": "evil.example.com"}, {"Host": f"evil.example.com:{port}"},
                    {"Origin": "http://evil.example.com"}, {"Origin": "null"},
                    {"Host": "localhost.evil.example.com"}):
            response = await http.post(url, json=body, headers={**headers, **bad})
            assert response.status_code == 403, bad
        for good in ({}, {"Host": f"localhost:{port}"}, {"Origin": f"http://localhost:{port}"},
                     {"Origin": f"http://127.0.0.1:{port}"}):
            response = await http.post(url, json=body, headers={**headers, **good})
            assert response.status_code == 200, good
            assert "tools" in response.json()["result"]
        # The legacy HTTP+SSE endpoints are guarded the same way.
        sse = url.rsplit("/", 1)[0] + "/sse"
        response = await http.get(sse, headers={"Host": "evil.example.com"})
        assert response.status_code == 403


async def test_bearer_token(server: Server) -> None:
    async with running(server, auth_token="s3cret") as url, httpx.AsyncClient() as http:
        body, headers = modern_request("tools/list")
        response = await http.post(url, json=body, headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        response = await http.post(url, json=body, headers={**headers, "Authorization": "Bearer wrong"})
        assert response.status_code == 401
        response = await http.post(url, json=body, headers={**headers, "Authorization": "Bearer s3cret"})
        assert response.status_code == 200
        async with http_client(url, token="s3cret") as client:
            assert (await client.call_tool("echo", {"text": "t"}))["content"][0]["text"] == "t"


async def test_binding_beyond_loopback_needs_a_token(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_SERVE_TOKEN", raising=False)
    with pytest.raises(UsageError, match="without a bearer token"):
        await serve_http(server, host="0.0.0.0", port=0)


async def test_port_in_use_is_a_clear_error(server: Server) -> None:
    async with running(server) as url:
        port = int(url.split(":")[2].split("/")[0])
        with pytest.raises(TransportError, match="cannot listen"):
            await serve_http(server, host="127.0.0.1", port=port)


async def test_oversized_bodies_get_413(server: Server) -> None:
    async with running(server, max_body=1000) as url, httpx.AsyncClient() as http:
        body, headers = modern_request("tools/call", {"name": "echo", "arguments": {"text": "x" * 2000}})
        response = await http.post(url, json=body, headers=headers)
        assert response.status_code == 413

        async def chunks() -> Any:  # no Content-Length: the cap applies while reading
            for _ in range(10):
                yield b"x" * 500

        response = await http.post(url, content=chunks(), headers=headers)
        assert response.status_code == 413


# -- malformed traffic -----------------------------------------------------------------------


async def test_malformed_json_rpc(server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient() as http:
        response = await http.post(url, content=b"{not json", headers=MODERN_HEADERS)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == -32700
        response = await http.post(url, json={"jsonrpc": "2.0", "id": 3, "method": 7}, headers=MODERN_HEADERS)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == -32600
        # Batches only exist in 2025-03-26 sessions.
        init = await http.post(url, json=INIT, headers=LEGACY_HEADERS)
        sid = init.headers["mcp-session-id"]
        response = await http.post(
            url, json=[{"jsonrpc": "2.0", "id": 2, "method": "ping"}],
            headers={**LEGACY_HEADERS, "Mcp-Session-Id": sid},
        )
        assert messages(response)[0]["error"]["code"] == -32600
        # A legacy request without a session.
        response = await http.post(url, json={"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, headers=LEGACY_HEADERS)
        assert response.status_code == 400


async def test_legacy_session_lifecycle(backend: DemoBackend, server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        init = await http.post(url, json=INIT, headers=LEGACY_HEADERS)
        assert init.status_code == 200
        sid = init.headers["mcp-session-id"]
        assert len(sid) >= 32 and all(0x21 <= ord(c) <= 0x7E for c in sid)
        assert init.json()["result"]["protocolVersion"] == "2025-11-25"
        session = {**LEGACY_HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
        note = await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        assert note.status_code == 202
        # A request whose handler sends notifications first is answered as an SSE stream.
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "progress", "_meta": {"progressToken": "p"}}}
        response = await http.post(url, json=call, headers=session)
        assert response.headers["content-type"].startswith("text/event-stream")
        found = messages(response)
        assert [m.get("method") for m in found[:-1]] == ["notifications/progress"] * 3
        assert found[-1]["id"] == 2 and found[-1]["result"]["content"][0]["text"] == "done"
        # The GET stream carries unrelated notifications (list changes).
        async with http.stream("GET", url, headers={**session, "Accept": "text/event-stream"}) as stream:
            assert stream.status_code == 200
            conflict = await http.get(url, headers={**session, "Accept": "text/event-stream"})
            assert conflict.status_code == 409
            backend.changed("tools")
            with anyio.fail_after(5):
                async for line in stream.aiter_lines():
                    if line.startswith("data:"):
                        assert "notifications/tools/list_changed" in line
                        break
        bad_version = await http.post(url, json={**call, "id": 3}, headers={**session, "MCP-Protocol-Version": "1999-01-01"})
        assert bad_version.status_code == 400
        deleted = await http.delete(url, headers=session)
        assert deleted.status_code == 200
        after = await http.post(url, json={**call, "id": 4}, headers=session)
        assert after.status_code == 404
        unknown = await http.post(url, json={**call, "id": 5}, headers={**session, "Mcp-Session-Id": "nope"})
        assert unknown.status_code == 404
        assert (await http.delete(url, headers=session)).status_code == 404


async def test_a_pending_request_id_cannot_be_reused(backend: DemoBackend, server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        init = await http.post(url, json=INIT, headers=LEGACY_HEADERS)
        session = {**LEGACY_HEADERS, "Mcp-Session-Id": init.headers["mcp-session-id"]}
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        slow = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow"}}
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: http.post(url, json=slow, headers=session))
            with anyio.fail_after(5):
                await backend.started.wait()
            again = await http.post(url, json={**slow, "params": {"name": "echo"}}, headers=session)
            assert again.status_code == 409
            assert again.json()["error"]["code"] == -32600
            other = await http.post(url, json={**slow, "id": 8, "params": {"name": "echo"}}, headers=session)
            assert other.status_code == 200
            tg.cancel_scope.cancel()
        await http.delete(url, headers=session)


async def test_batches_in_a_2025_03_26_session(server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        init = await http.post(url, json={**INIT, "params": {**INIT["params"], "protocolVersion": "2025-03-26"}},
                               headers=LEGACY_HEADERS)
        session = {**LEGACY_HEADERS, "Mcp-Session-Id": init.headers["mcp-session-id"]}
        batch = [
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "b"}}},
            {"jsonrpc": "2.0", "id": 11, "method": "ping"},
        ]
        response = await http.post(url, json=batch, headers=session)
        [answers] = messages(response)
        assert {m["id"] for m in answers} == {10, 11}
        only_notes = await http.post(url, json=[{"jsonrpc": "2.0", "method": "notifications/initialized"}], headers=session)
        assert only_notes.status_code == 202


# -- the stateless era's HTTP rules --------------------------------------------------------------


async def test_modern_header_and_meta_validation(server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:

        async def post(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
            response = await http.post(url, json=body, headers=headers)
            return response.status_code, messages(response)[-1]

        body, headers = modern_request("tools/call", {"name": "echo", "arguments": {"text": "x"}}, rid=9)
        status, reply = await post(body, headers)
        assert status == 200 and reply["result"]["content"][0]["text"] == "x"
        cases: list[tuple[dict[str, str], int]] = [
            ({"Mcp-Method": "tools/list"}, -32020),
            ({"Mcp-Method": "TOOLS/CALL"}, -32020),
            ({"Mcp-Name": "other"}, -32020),
            ({"MCP-Protocol-Version": "2025-11-25"}, -32020),
        ]
        for override, code in cases:
            status, reply = await post(body, {**headers, **override})
            assert (status, reply["error"]["code"], reply["id"]) == (400, code, 9), override
        for missing in ("Mcp-Method", "Mcp-Name", "MCP-Protocol-Version"):
            status, reply = await post(body, {k: v for k, v in headers.items() if k != missing})
            assert (status, reply["error"]["code"]) == (400, -32020), missing
        # Header names are case-insensitive; values are trimmed; names may be base64.
        lower = {k.lower(): v for k, v in headers.items()}
        status, reply = await raw_post(url, body, {**lower, "mcp-name": "  echo  "})
        assert status == 200, reply
        assert reply["result"]["content"][0]["text"] == "x"
        encoded = "=?base64?" + base64.b64encode(b"echo").decode() + "?="
        status, reply = await post(body, {**headers, "Mcp-Name": encoded})
        assert status == 200, reply
        status, reply = await post(body, {**headers, "Mcp-Name": "=?base64?!!!?="})
        assert (status, reply["error"]["code"]) == (400, -32020)
        # _meta problems: 400 with -32602 / -32022.
        no_meta = {**body, "params": {"name": "echo"}}
        status, reply = await post(no_meta, headers)
        assert (status, reply["error"]["code"], reply["id"]) == (400, -32602, 9)
        future = {**body, "params": {**body["params"], "_meta": modern_meta() | {"io.modelcontextprotocol/protocolVersion": "2999-01-01"}}}
        status, reply = await post(future, {**headers, "MCP-Protocol-Version": "2999-01-01"})
        assert (status, reply["error"]["code"]) == (400, -32022)
        assert reply["error"]["data"]["requested"] == "2999-01-01"
        assert "2026-07-28" in reply["error"]["data"]["supported"]
        # Removed and unknown methods: 404 with -32601 and the request id.
        for method in ("initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "nope/nope"):
            body2, headers2 = modern_request(method, rid=77)
            status, reply = await post(body2, headers2)
            assert (status, reply["error"]["code"], reply["id"]) == (404, -32601, 77), method
        # A missing client capability: 400 with -32021.
        body3, headers3 = modern_request("tools/call", {"name": "needs_sampling"}, caps={})
        status, reply = await post(body3, headers3)
        assert (status, reply["error"]["code"]) == (400, -32021)


async def test_mcp_param_headers_must_mirror_the_arguments(server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        args = {"region": "us-west1", "count": 42, "opts": {"flag": False}}
        body, headers = modern_request("tools/call", {"name": "region", "arguments": args})
        good = {**headers, "Mcp-Param-Region": "us-west1", "Mcp-Param-Count": "42", "mcp-param-flag": "false"}
        response = await http.post(url, json=body, headers=good)
        assert response.status_code == 200, response.text
        ok_variants = [
            {"Mcp-Param-Count": "42.0"},  # integers compare numerically
            {"Mcp-Param-Region": "=?base64?" + base64.b64encode(b"us-west1").decode() + "?="},
        ]
        for variant in ok_variants:
            response = await http.post(url, json=body, headers={**good, **variant})
            assert response.status_code == 200, variant
        bad_variants = [
            {"Mcp-Param-Region": "eu-west1"},
            {"Mcp-Param-Count": "41"},
            {"mcp-param-flag": "true"},
            {"Mcp-Param-Region": "=?base64?not base64?="},
        ]
        for variant in bad_variants:
            response = await http.post(url, json=body, headers={**good, **variant})
            assert (response.status_code, response.json()["error"]["code"]) == (400, -32020), variant
        missing = {k: v for k, v in good.items() if k != "Mcp-Param-Region"}
        response = await http.post(url, json=body, headers=missing)
        assert response.status_code == 400
        # An absent or null argument needs no header (and must not have one).
        body2, headers2 = modern_request("tools/call", {"name": "region", "arguments": {"region": None}})
        response = await http.post(url, json=body2, headers=headers2)
        assert response.status_code == 200
        response = await http.post(url, json=body2, headers={**headers2, "Mcp-Param-Region": "x"})
        assert response.status_code == 400


async def test_client_disconnect_cancels_a_modern_call(backend: DemoBackend, server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        body, headers = modern_request("tools/call", {"name": "slow"})
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                await http.post(url, json=body, headers=headers)

            tg.start_soon(call)
            with anyio.fail_after(5):
                await backend.started.wait()
            tg.cancel_scope.cancel()  # closes the connection
        with anyio.fail_after(5):
            await backend.cancelled.wait()


async def test_listen_stream_sends_keepalives_and_ends_on_shutdown(backend: DemoBackend, server: Server) -> None:
    lines: list[str] = []
    async with anyio.create_task_group() as tg:
        async with running(server, keepalive=0.05) as url:
            body, headers = modern_request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
            async with httpx.AsyncClient(timeout=10) as http:
                async with http.stream("POST", url, json=body, headers=headers) as stream:
                    assert stream.headers["content-type"].startswith("text/event-stream")
                    assert stream.headers["x-accel-buffering"] == "no"
                    reader = stream.aiter_lines()
                    with anyio.fail_after(5):
                        async for line in reader:
                            lines.append(line)
                            if line.startswith(":"):
                                break
                    server.close_subscriptions()  # what a shutdown does
                    with anyio.fail_after(5):
                        async for line in reader:
                            lines.append(line)
        tg.cancel_scope.cancel()
    data = [line for line in lines if line.startswith("data:")]
    assert "notifications/subscriptions/acknowledged" in data[0]
    assert '"resultType":"complete"' in data[-1]
    assert any(line.startswith(":") for line in lines)


async def test_legacy_disconnect_does_not_cancel_but_delete_does(backend: DemoBackend, server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        init = await http.post(url, json=INIT, headers=LEGACY_HEADERS)
        session = {**LEGACY_HEADERS, "Mcp-Session-Id": init.headers["mcp-session-id"]}
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow"}}
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: http.post(url, json=call, headers=session))
            with anyio.fail_after(5):
                await backend.started.wait()
            tg.cancel_scope.cancel()
        assert not backend.cancelled.is_set()
        await http.delete(url, headers=session)
        with anyio.fail_after(5):
            await backend.cancelled.wait()


async def test_unknown_paths_and_methods(server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        base = url.rsplit("/", 1)[0]
        assert (await http.get(base + "/nope")).status_code == 404
        assert (await http.put(url)).status_code == 405
        assert (await http.get(url)).status_code == 406  # no session, not an SSE client
        assert (await http.post(base + "/messages?sessionId=nope", json=INIT)).status_code == 404


@pytest.mark.slow
async def test_idle_sessions_expire(server: Server) -> None:
    from mcpcli.server import HttpOptions

    options = HttpOptions(session_ttl=0.5)  # the ping comes well within it, on a busy machine too
    async with running(server, options=options) as url, httpx.AsyncClient(timeout=10) as http:
        init = await http.post(url, json=INIT, headers=LEGACY_HEADERS)
        session = {**LEGACY_HEADERS, "Mcp-Session-Id": init.headers["mcp-session-id"]}
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert (await http.post(url, json=ping, headers=session)).status_code == 200
        assert len(server.runtime.sinks) == 1  # the session's connection
        with anyio.fail_after(10):
            while server.runtime.sinks:  # polling the server, not the session (that would keep it alive)
                await anyio.sleep(0.05)
        assert (await http.post(url, json=ping, headers=session)).status_code == 404


@pytest.mark.slow
async def test_stopping_the_server_ends_streams_and_calls(backend: DemoBackend, server: Server) -> None:
    """Cancelling serve_http ends open streams and running calls promptly."""
    async with httpx.AsyncClient(timeout=10) as http:
        with anyio.fail_after(15):
            async with anyio.create_task_group() as outer:
                async with running(server) as url:
                    init = await http.post(url, json=INIT, headers=LEGACY_HEADERS)
                    session = {**LEGACY_HEADERS, "Mcp-Session-Id": init.headers["mcp-session-id"]}
                    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)

                    async def hold_get() -> None:
                        async with http.stream("GET", url, headers={**session, "Accept": "text/event-stream"}) as s:
                            async for _ in s.aiter_lines():
                                pass

                    async def hold_listen() -> None:
                        body, headers = modern_request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
                        async with http.stream("POST", url, json=body, headers=headers) as s:
                            async for _ in s.aiter_lines():
                                pass

                    async def slow() -> None:
                        body, headers = modern_request("tools/call", {"name": "slow"})
                        await http.post(url, json=body, headers=headers)

                    outer.start_soon(hold_get)
                    outer.start_soon(hold_listen)
                    outer.start_soon(slow)
                    await backend.started.wait()
                # serve_http was cancelled here; the streams must have ended with it.
            assert backend.cancelled.is_set()


def _events(text: str) -> list[dict[str, str]]:
    """SSE events as dicts of their fields (id, event, data, retry)."""
    events: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line:
            if current:
                events.append(current)
            current = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            current[name] = value[1:] if value.startswith(" ") else value
    if current:
        events.append(current)
    return events


async def _session(http: httpx.AsyncClient, url: str, version: str = "2025-11-25") -> dict[str, str]:
    init = await http.post(url, json={**INIT, "params": {**INIT["params"], "protocolVersion": version}},
                           headers=LEGACY_HEADERS)
    session = {**LEGACY_HEADERS, "Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": version}
    await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
    return session


async def test_sse_events_have_ids_and_2025_11_25_streams_are_primed(server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        for version, primed in (("2025-11-25", True), ("2025-06-18", False)):
            session = await _session(http, url, version)
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "progress", "_meta": {"progressToken": 1}}}
            events = _events((await http.post(url, json=call, headers=session)).text)
            if primed:
                assert events[0]["data"] == "" and events[0]["id"].endswith(".0")
                events = events[1:]
            stream = events[0]["id"].split(".")[0]
            assert [e["id"] for e in events] == [f"{stream}.{n}" for n in range(1, len(events) + 1)]
            assert '"result"' in events[-1]["data"]


async def test_a_dropped_post_stream_is_resumed_with_last_event_id(backend: DemoBackend, server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        session = await _session(http, url)
        call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "gate", "_meta": {"progressToken": 1}}}
        last = ""
        async with http.stream("POST", url, json=call, headers=session) as stream:
            with anyio.fail_after(5):
                async for line in stream.aiter_lines():
                    if line.startswith("id:"):
                        last = line[3:].strip()
                    if "notifications/progress" in line:
                        break
        # The connection is gone; the call goes on. Let it finish, then resume.
        backend.gate.set()
        resumed = await http.get(url, headers={**session, "Accept": "text/event-stream", "Last-Event-ID": last})
        events = _events(resumed.text)
        assert [json.loads(e["data"])["result"]["content"][0]["text"] for e in events if e.get("data")] == ["opened"]
        assert all(e["id"].split(".")[0] == last.split(".")[0] for e in events)


async def test_server_closes_slow_streams_for_polling(backend: DemoBackend, server: Server) -> None:
    async with running(server, sse_poll_after=0.05) as url, httpx.AsyncClient(timeout=10) as http:
        session = await _session(http, url)
        call = {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "gate"}}
        first = await http.post(url, json=call, headers=session)  # ends without the answer
        events = _events(first.text)
        assert events[0]["retry"] == "500"
        assert events[0]["data"] == ""
        assert not any('"result"' in e.get("data", "") for e in events)
        backend.gate.set()
        resumed = await http.get(url, headers={**session, "Accept": "text/event-stream",
                                               "Last-Event-ID": events[-1]["id"]})
        data = [e["data"] for e in _events(resumed.text) if e.get("data")]
        assert json.loads(data[-1])["result"]["content"][0]["text"] == "opened"
        # Sessions of older revisions are never polled.
        old = await _session(http, url, "2025-06-18")
        backend.gate = anyio.Event()
        backend.gate.set()
        answer = await http.post(url, json={**call, "id": 7}, headers=old)
        assert messages(answer)[-1]["result"]["content"][0]["text"] == "opened"


async def test_nesting_bombs_and_huge_batches_over_http(server: Server) -> None:
    from mcpcli.server.stdio import MAX_BATCH

    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        response = await http.post(url, content=b"[" * 100_000, headers=MODERN_HEADERS)
        assert (response.status_code, response.json()["error"]["code"]) == (400, -32700)
        init = await http.post(url, json={**INIT, "params": {**INIT["params"], "protocolVersion": "2025-03-26"}},
                               headers=LEGACY_HEADERS)
        session = {**LEGACY_HEADERS, "Mcp-Session-Id": init.headers["mcp-session-id"]}
        batch = [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in range(MAX_BATCH + 1)]
        response = await http.post(url, json=batch, headers=session)
        assert (response.status_code, response.json()["error"]["code"]) == (400, -32600)
        sse = url.rsplit("/", 1)[0] + "/messages?sessionId=x"
        assert (await http.post(sse, content=b"[" * 100_000)).status_code == 404  # unknown session first


@pytest.mark.parametrize("accept", ["application/json", "text/event-stream", "text/html",
                                    "application/json, text/event-stream;q=0"])
async def test_a_post_that_cannot_take_json_and_sse_gets_406(server: Server, accept: str) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        body, headers = modern_request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
        response = await http.post(url, json=body, headers={**headers, "Accept": accept})
        assert response.status_code == 406
        assert response.json()["error"]["code"] == -32600
        assert "Not Acceptable" in response.json()["error"]["message"]
        legacy = await http.post(url, json=INIT, headers={**LEGACY_HEADERS, "Accept": accept})
        assert legacy.status_code == 406
        assert "mcp-session-id" not in legacy.headers


@pytest.mark.parametrize("accept", ["*/*", "application/*, text/*", "application/json, */*;q=0.1", None])
async def test_wildcard_or_absent_accept_is_acceptable(server: Server, accept: str | None) -> None:
    async with running(server) as url:
        body, headers = modern_request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
        headers = {k: v for k, v in headers.items() if k != "Accept"}
        if accept is not None:
            headers["Accept"] = accept
        status, answer = await raw_post(url, body, headers)  # httpx would add its own Accept
        assert status == 200, answer
        assert answer["result"]["content"][0]["text"] == "x"


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "application/jsonl"])
async def test_a_post_that_is_not_json_gets_415(server: Server, content_type: str | None) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        body, headers = modern_request("tools/list")
        headers = {k: v for k, v in headers.items() if k != "Content-Type"}
        if content_type is not None:
            headers["Content-Type"] = content_type
        status, answer = await raw_post(url, body, headers)
        assert status == 415
        assert answer["error"]["code"] == -32600
        assert "Unsupported Media Type" in answer["error"]["message"]
        ok, _ = await raw_post(url, body, {**headers, "Content-Type": "Application/JSON; charset=utf-8"})
        assert ok == 200
        # The 2024-11-05 transport's message endpoint too.
        sse_url = url.rsplit("/", 1)[0] + "/sse"
        async with http.stream("GET", sse_url, headers={"Accept": "text/event-stream"}) as stream:
            endpoint = ""
            async for line in stream.aiter_lines():
                if line.startswith("data:"):
                    endpoint = line[5:].strip()
                    break
            messages_url = url.split("/mcp")[0] + endpoint
            plain_text = await http.post(messages_url, content=json.dumps(INIT),
                                         headers={"Content-Type": "text/plain"})
            assert plain_text.status_code == 415
            assert plain_text.json()["error"]["code"] == -32600


async def test_a_get_must_accept_event_streams_and_gets_405_where_no_stream_is_offered(server: Server) -> None:
    """GET on the endpoint: 406 unless `Accept` lists text/event-stream (Streamable HTTP
    clients MUST send it; no header, `*/*` or `text/*` does not count), 405 where no stream is offered:
    a 2026-07-28 client (that revision has none) and, with the HTTP+SSE fallback off, any
    GET without a session. What is offered still opens (the 2024-11-05 fallback)."""
    from mcpcli.server import HttpOptions

    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        init = await http.post(url, json=INIT, headers=LEGACY_HEADERS)
        session = {"Mcp-Session-Id": init.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                        headers={**LEGACY_HEADERS, **session})
        for accept in (None, "application/json", "*/*", "text/*", "text/event-stream;q=0"):
            headers = {**session, **({"Accept": accept} if accept else {})}
            if accept is None:
                headers["Accept"] = ""  # httpx would send */*
            refused = await http.get(url, headers=headers)
            assert refused.status_code == 406, (accept, refused.text)
            assert refused.json()["error"]["code"] == -32600
        modern = {"Accept": "text/event-stream", "MCP-Protocol-Version": "2026-07-28"}
        no_stream = await http.get(url, headers=modern)
        assert no_stream.status_code == 405
        assert "GET" in no_stream.headers["allow"]
        async with http.stream("GET", url, headers={"Accept": "text/event-stream"}) as fallback:
            assert fallback.status_code == 200  # the 2024-11-05 HTTP+SSE transport, right here
    async with running(server, options=HttpOptions(legacy_sse=False)) as url, httpx.AsyncClient(timeout=10) as http:
        assert (await http.get(url, headers={"Accept": "text/event-stream"})).status_code == 405


async def test_cors_preflight(server: Server) -> None:
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:
        port = url.split(":")[2].split("/")[0]
        origin = f"http://localhost:{port}"
        preflight = await http.options(url, headers={"Origin": origin, "Access-Control-Request-Method": "POST"})
        assert preflight.status_code == 204
        assert preflight.headers["access-control-allow-origin"] == origin
        assert "mcp-session-id" in preflight.headers["access-control-allow-headers"]
        foreign = await http.options(url, headers={"Origin": "https://evil.example.com"})
        assert foreign.status_code == 403


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize(("tool", "kind"), [("slow", "application/json"), ("gate", "text/event-stream")])
@pytest.mark.slow
async def test_stopping_answers_calls_in_flight_with_a_shutdown_error(
    backend: DemoBackend, server: Server, era: str, tool: str, kind: str,
) -> None:
    """A call still running when the drain ends is answered (503 or a final SSE event), never a bare 202."""
    from mcpcli.server import HttpOptions

    answers: list[httpx.Response] = []
    async with httpx.AsyncClient(timeout=10) as http:
        with anyio.fail_after(15):
            async with anyio.create_task_group() as outer:
                async with running(server, options=HttpOptions(drain=0.2)) as url:
                    params: dict[str, Any] = {"name": tool, "_meta": {"progressToken": 7}}
                    if era == "modern":
                        body, headers = modern_request("tools/call", params, rid=5)
                        body["params"]["_meta"]["progressToken"] = 7
                    else:
                        init = await http.post(url, json=INIT, headers=LEGACY_HEADERS)
                        headers = {**LEGACY_HEADERS, "Mcp-Session-Id": init.headers["mcp-session-id"],
                                   "Mcp-Protocol-Version": "2025-11-25"}
                        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                                        headers=headers)
                        body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}

                    async def call() -> None:
                        answers.append(await http.post(url, json=body, headers=headers))

                    outer.start_soon(call)
                    await backend.started.wait()
                # serve_http was cancelled: after the drain the call must have been answered.
    (response,) = answers
    assert response.headers["content-type"] == kind
    if kind == "application/json":
        assert response.status_code == 503, response.text
    final = messages(response)[-1]
    assert final == {"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32000, "message": "server shutting down", "data": {"reason": "shutdown"}}}
    assert backend.cancelled.is_set() or tool == "gate"


async def test_requests_during_the_drain_get_503(backend: DemoBackend, server: Server) -> None:
    """Once shutdown begins, a new request is refused at once while running calls drain."""
    from mcpcli.server import HttpOptions

    refused: list[httpx.Response] = []
    async with httpx.AsyncClient(timeout=10) as http:
        with anyio.fail_after(15):
            async with anyio.create_task_group() as outer:
                async with running(server, options=HttpOptions(drain=5)) as url:
                    body, headers = modern_request("tools/call", {"name": "gate"})

                    async def call() -> None:
                        await http.post(url, json=body, headers=headers)

                    async def late() -> None:
                        ping, ping_headers = modern_request("tools/list", rid=9)
                        while not refused:  # bounded by fail_after; the server is draining
                            response = await http.post(url, json=ping, headers=ping_headers)
                            if response.status_code == 503:
                                refused.append(response)
                            else:
                                await anyio.sleep(0.02)
                        backend.gate.set()  # let the running call finish within the drain

                    outer.start_soon(call)
                    await backend.started.wait()
                    outer.start_soon(late)
    assert refused[0].json()["error"] == {"code": -32000, "message": "server shutting down",
                                          "data": {"reason": "shutdown"}}


async def test_a_request_whose_body_comes_after_the_drain_runs_nothing(
    backend: DemoBackend, server: Server
) -> None:
    """A POST that got past the shutdown check but whose body was still coming in when the
    drain ended: it is answered "server shutting down" and its tool never runs (no script
    may start once the server is stopping)."""
    from mcpcli.server.http_app import McpHttpApp

    body, headers = modern_request("tools/call", {"name": "echo", "arguments": {"text": "late"}})
    raw = json.dumps(body).encode()
    scope = {"type": "http", "method": "POST", "path": "/mcp",
             "headers": [(k.lower().encode(), v.encode()) for k, v in
                         {**headers, "Host": "127.0.0.1", "Content-Length": str(len(raw))}.items()]}
    reading, release = anyio.Event(), anyio.Event()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        reading.set()
        await release.wait()
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    with anyio.fail_after(10):
        async with McpHttpApp(server) as app, anyio.create_task_group() as tg:
            tg.start_soon(app, scope, receive, send)
            await reading.wait()
            app.shutdown()  # the drain is over while the body is still on its way
            release.set()
    assert sent[0]["status"] == 503
    assert json.loads(sent[1]["body"])["error"]["message"] == "server shutting down"
    assert backend.calls == 0


def test_a_request_that_starts_after_the_drain_is_ended_at_once(server: Server) -> None:
    """What a request registers to be ended at the end of the drain is ended at once when
    the drain is already over (a request that got this far only then)."""
    from mcpcli.server.http_context import HttpContext, HttpOptions

    context = HttpContext(server, HttpOptions(), "")
    ended: list[str] = []
    with context.on_stop(lambda: ended.append("early")):
        context.end_drain()
    with context.on_stop(lambda: ended.append("late")):
        assert ended == ["early", "late"]


async def _read_all(stream: Any) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    try:
        while True:
            data += await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError):
        return data


@pytest.mark.slow
async def test_slow_heads_are_closed_and_do_not_keep_real_calls_out(server: Server) -> None:
    """Slowloris: more half-sent heads than the cap; a real call still gets through, the
    newest slow ones get 408 at their deadline, the oldest were evicted to make room."""
    from mcpcli.server import HttpOptions

    async with running(server, options=HttpOptions(head_timeout=1.0, max_waiting=8)) as url:
        port = int(url.split(":")[2].split("/")[0])
        slow = []
        for _ in range(24):
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append(stream)
        try:
            async with http_client(url) as client:
                assert (await client.call_tool("echo", {"text": "through"}))["content"][0]["text"] == "through"
            with anyio.fail_after(10):
                assert (await _read_all(slow[-1])).startswith(b"HTTP/1.1 408 ")
                assert await _read_all(slow[0]) == b""  # evicted without a word
        finally:
            for stream in slow:
                await stream.aclose()


@pytest.mark.slow
async def test_a_body_that_does_not_arrive_in_time_gets_408(server: Server) -> None:
    from mcpcli.server import HttpOptions

    async with running(server, options=HttpOptions(body_timeout=1.0)) as url:
        port = int(url.split(":")[2].split("/")[0])
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            head = ["POST /mcp HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
                    "Accept: application/json, text/event-stream", "Content-Length: 100"]
            await stream.send(("\r\n".join(head) + "\r\n\r\n").encode() + b'{"jsonrpc":')
            with anyio.fail_after(10):
                assert (await _read_all(stream)).startswith(b"HTTP/1.1 408 ")


@pytest.mark.slow
@pytest.mark.parametrize("split", ["head", "body"])
async def test_a_kept_alive_connections_next_request_that_stalls_gets_408(server: Server, split: str) -> None:
    """The deadlines hold for a request after the first on a connection, its head or its
    body cut short (they are armed only when a read leaves one unfinished)."""
    from mcpcli.server import HttpOptions

    async with running(server, options=HttpOptions(head_timeout=1.0, body_timeout=1.0)) as url:
        port = int(url.split(":")[2].split("/")[0])
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(b"GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            first = b""
            with anyio.fail_after(10):
                while b"\r\n\r\n" not in first:
                    first += await stream.receive()
            assert first.startswith(b"HTTP/1.1 404 ")
            head = ["POST /mcp HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
                    "Accept: application/json, text/event-stream", "Content-Length: 100"]
            request = ("\r\n".join(head) + "\r\n\r\n").encode() + b'{"jsonrpc":'
            cut = request.index(b"Content-Type") if split == "head" else len(request)
            await stream.send(request[:cut])
            with anyio.fail_after(10):
                rest = await _read_all(stream)
            assert (first + rest).count(b"HTTP/1.1 408 ") == 1


async def test_requests_beyond_max_work_get_503(backend: DemoBackend, server: Server) -> None:
    from mcpcli.server import HttpOptions

    async with running(server, options=HttpOptions(max_work=1)) as url, \
            httpx.AsyncClient(timeout=10) as http, anyio.create_task_group() as tg:
        body, headers = modern_request("tools/call", {"name": "gate"})

        async def hold() -> None:
            await http.post(url, json=body, headers=headers)

        tg.start_soon(hold)
        await backend.started.wait()
        listed, list_headers = modern_request("tools/list", rid=2)
        busy = await http.post(url, json=listed, headers=list_headers)
        assert busy.status_code == 503
        assert busy.headers["retry-after"] == "1"
        assert busy.json()["error"]["code"] == -32000
        backend.gate.set()


@pytest.mark.slow
async def test_bodies_beyond_the_shared_budget_get_503_unread(server: Server) -> None:
    """The bytes of bodies being received are bounded over all requests, not only per request."""
    from mcpcli.server import HttpOptions

    options = HttpOptions(max_body=1000, body_budget=1000, body_wait=0.2)
    async with running(server, options=options) as url, httpx.AsyncClient(timeout=10) as http:
        port = int(url.split(":")[2].split("/")[0])
        body, headers = modern_request("tools/list")
        held = await anyio.connect_tcp("127.0.0.1", port)
        head = ["POST /mcp HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
                "Accept: application/json, text/event-stream", "Content-Length: 900"]
        await held.send(("\r\n".join(head) + "\r\n\r\n").encode() + b'{"jsonrpc":')  # 900 bytes reserved
        try:
            with anyio.fail_after(10):
                while True:  # until the held request has reserved its share
                    busy = await http.post(url, json=body, headers=headers)
                    if busy.status_code == 503:
                        break
                    await anyio.sleep(0.01)
            assert busy.headers["retry-after"] == "1"
            assert busy.json()["error"]["code"] == -32000
            assert "too many request bodies" in busy.json()["error"]["message"]
        finally:
            await held.aclose()
        with anyio.fail_after(10):
            while (ok := await http.post(url, json=body, headers=headers)).status_code == 503:
                await anyio.sleep(0.01)  # until the server noticed the held connection closed
        assert ok.status_code == 200
        assert "tools" in ok.json()["result"]


async def test_stopping_answers_a_2024_http_sse_call_on_its_stream(backend: DemoBackend, server: Server) -> None:
    """HTTP+SSE (2024-11-05): the unanswered call gets its shutdown error on the session's stream."""
    from mcpcli.server import HttpOptions

    events: list[dict[str, str]] = []
    async with httpx.AsyncClient(timeout=10) as http:
        with anyio.fail_after(15):
            async with anyio.create_task_group() as outer:
                async with running(server, options=HttpOptions(drain=0.2)) as url:
                    base = url.split("/mcp")[0]
                    endpoint = anyio.Event()

                    async def listen() -> None:
                        async with http.stream("GET", base + "/sse", headers={"Accept": "text/event-stream"}) as s:
                            text = ""
                            async for chunk in s.aiter_text():
                                text += chunk
                                events[:] = _events(text)
                                if events and not endpoint.is_set():
                                    endpoint.set()

                    outer.start_soon(listen)
                    await endpoint.wait()
                    messages_url = base + events[0]["data"]
                    old = {**INIT, "params": {**INIT["params"], "protocolVersion": "2024-11-05"}}
                    await http.post(messages_url, json=old)
                    await http.post(messages_url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
                    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "slow"}}
                    assert (await http.post(messages_url, json=call)).status_code == 202
                    await backend.started.wait()
    answers = [json.loads(e["data"]) for e in events if e.get("event") == "message"]
    assert answers[-1] == {"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32000, "message": "server shutting down", "data": {"reason": "shutdown"}}}


async def test_serving_collects_garbage_less_often_and_restores_the_collector(server: Server) -> None:
    import gc

    from mcpcli.server.http import GC_THRESHOLD

    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    async with running(server) as url:
        assert gc.get_threshold()[0] >= GC_THRESHOLD
        assert gc.get_freeze_count() > 0  # the start-up objects: no collection walks them
        status, _ = await raw_post(url, INIT, LEGACY_HEADERS)
        assert status == 200
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen or frozen > 0
