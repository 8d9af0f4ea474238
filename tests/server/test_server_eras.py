"""The runtime over an in-memory pair with our own Client, in every protocol era."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from server_backends import DemoBackend
from server_support import ALL, LEGACY, connect, features, raw

from mcpcli.core.protocol import CACHEABLE_METHODS, SERVER_INFO_KEY
from mcpcli.errors import RPCError
from mcpcli.server import Server

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("protocol", [None, *ALL])
async def test_every_era_serves_tools_resources_prompts_and_completion(
    server: Server, protocol: str | None
) -> None:
    async with connect(server, protocol) as client:
        expected = protocol or "2026-07-28"
        assert client.protocol_version == expected
        assert client.era == ("modern" if expected == "2026-07-28" else "legacy")
        assert client.server_info["name"] == "demo"
        assert client.instructions == "A demo server."
        caps = client.capabilities
        assert caps["tools"] == {"listChanged": True}
        assert caps["resources"] == {"listChanged": True, "subscribe": True}
        assert caps["logging"] == {}
        assert ("completions" in caps) == (expected != "2024-11-05")

        tools = await client.list_tools()
        assert [t["name"] for t in tools["tools"]][:2] == ["echo", "slow"]
        result = await client.call_tool("echo", {"text": "hi"})
        assert result["content"] == [{"type": "text", "text": "hi"}]
        assert "isError" not in result

        read = await client.read_resource("mem://greeting")
        assert read["contents"][0]["text"] == "hello"
        templates = await client.list_resource_templates()
        assert templates["resourceTemplates"][0]["uriTemplate"] == "mem://items/{id}"
        prompt = await client.get_prompt("greet", {"who": "you"})
        assert prompt["messages"][0]["content"]["text"] == "Hello you"
        completion = await client.complete({"type": "ref/prompt", "name": "greet"}, "who", "al")
        assert completion["completion"]["values"] == ["alice", "alfred"]

        modern = expected == "2026-07-28"
        for res in (tools, result, read, prompt, completion):
            assert (res.get("resultType") == "complete") == modern
            assert (SERVER_INFO_KEY in res.get("_meta", {})) == modern


async def test_modern_results_carry_cache_hints_only_where_cacheable(server: Server) -> None:
    async with raw(server) as s:
        from server_support import modern_meta

        for method, params in [
            ("server/discover", {}),
            ("tools/list", {}),
            ("prompts/list", {}),
            ("resources/list", {}),
            ("resources/templates/list", {}),
            ("resources/read", {"uri": "mem://greeting"}),
            ("tools/call", {"name": "echo", "arguments": {"text": "x"}}),
        ]:
            result = await s.request(method, {**params, "_meta": modern_meta()}, progress_token=False)
            assert result["resultType"] == "complete"
            assert result["_meta"][SERVER_INFO_KEY] == {"name": "demo", "version": "1.0.0"}
            if method in CACHEABLE_METHODS:
                assert isinstance(result["ttlMs"], int) and result["ttlMs"] >= 0
                assert result["cacheScope"] in ("public", "private")
            else:
                assert "ttlMs" not in result and "cacheScope" not in result


async def test_discover_lists_every_supported_version(server: Server) -> None:
    async with connect(server) as client:
        assert client.supported_versions == ALL


async def test_initialize_answers_the_clients_version_or_the_latest(server: Server) -> None:
    async with raw(server) as s:
        result = await s.request(
            "initialize",
            {"protocolVersion": "2099-01-01", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
            progress_token=False,
        )
        assert result["protocolVersion"] == "2025-11-25"
        with pytest.raises(RPCError) as info:
            await s.request("initialize", {"protocolVersion": "2025-06-18"}, progress_token=False)
        assert info.value.code == -32600
    async with raw(server) as s:
        result = await s.request("initialize", {"protocolVersion": "2024-11-05"}, progress_token=False)
        assert result["protocolVersion"] == "2024-11-05"
        assert "completions" not in result["capabilities"]


async def test_pagination_follows_signed_cursors_and_rejects_forged_ones() -> None:
    server = Server(DemoBackend(tools=250), page_size=100)
    for protocol in ("2026-07-28", "2025-11-25"):
        async with connect(server, protocol) as client:
            tools = await client.list_tools()
            assert len(tools["tools"]) == 265
            assert len({t["name"] for t in tools["tools"]}) == 265
            first = await client.request("tools/list")
            assert len(first["tools"]) == 100 and isinstance(first["nextCursor"], str)
            last = await client.request("tools/list", {"cursor": first["nextCursor"]})
            assert last["tools"][0]["name"] == tools["tools"][100]["name"]
            for bad in ("garbage", first["nextCursor"] + "x", 42):
                with pytest.raises(RPCError) as info:
                    await client.request("tools/list", {"cursor": bad})
                assert info.value.code == -32602
            # A cursor of one list is not valid for another.
            with pytest.raises(RPCError):
                await client.request("prompts/list", {"cursor": first["nextCursor"]})


async def test_unknown_tool_is_a_protocol_error_and_failures_are_results(server: Server) -> None:
    for protocol in ("2026-07-28", "2025-11-25"):
        async with connect(server, protocol) as client:
            with pytest.raises(RPCError) as info:
                await client.call_tool("nope")
            assert info.value.code == -32602
            result = await client.call_tool("fail")
            assert result["isError"] is True
            with pytest.raises(RPCError) as info:
                await client.call_tool("crash")
            assert info.value.code == -32603
            assert "boom" not in info.value.rpc_message  # internals are not leaked
            with pytest.raises(RPCError) as info:
                await client.request("tools/call", {"name": "echo", "arguments": [1]})
            assert info.value.code == -32602


@pytest.mark.parametrize(("protocol", "code"), [("2025-11-25", -32002), ("2024-11-05", -32002), ("2026-07-28", -32602)])
async def test_resource_not_found_code_depends_on_the_era(server: Server, protocol: str, code: int) -> None:
    async with connect(server, protocol) as client:
        with pytest.raises(RPCError) as info:
            await client.read_resource("mem://missing")
    assert info.value.code == code
    assert info.value.data["uri"] == "mem://missing"


@pytest.mark.parametrize("protocol", ALL)
async def test_progress_is_strictly_increasing_and_only_with_a_token(server: Server, protocol: str) -> None:
    seen: list[float] = []
    async with connect(server, protocol) as client:
        await client.call_tool("progress", on_progress=lambda p: seen.append(p["progress"]))
        assert seen == [0, 50, 100]
        # Without a progress token, no progress is sent (the session would drop unknown ones anyway).
        result = await client.peer.request(
            "tools/call", {"name": "progress", **_meta_for(client)}, progress_token=False
        )
        assert result["content"][0]["text"] == "done"


def _meta_for(client: Any) -> dict[str, Any]:
    return {"_meta": client.exchange.request_meta(client.protocol_version)} if client.era == "modern" else {}


@pytest.mark.parametrize("protocol", LEGACY)
async def test_legacy_logging_follows_set_level(server: Server, protocol: str) -> None:
    messages: list[tuple[str, Any]] = []
    async with connect(
        server, protocol, on_notification=lambda m, p: messages.append((m, p))
    ) as client:
        await client.call_tool("log")
        levels = [p["level"] for m, p in messages if m == "notifications/message"]
        assert levels == ["debug", "info", "warning", "error"]  # no setLevel yet: everything
        messages.clear()
        await client.set_log_level("warning")
        await client.call_tool("log")
        levels = [p["level"] for m, p in messages if m == "notifications/message"]
        assert levels == ["warning", "error"]
        assert [p["logger"] for m, p in messages if m == "notifications/message"] == ["demo", "demo"]
        for level in ("loud", ["warning"], {"level": "warning"}):  # not one an (unhashable) internal error
            with pytest.raises(RPCError) as info:
                await client.request("logging/setLevel", {"level": level})
            assert info.value.code == -32602, level


async def test_modern_logging_needs_the_log_level_in_meta(server: Server) -> None:
    messages: list[Any] = []
    async with connect(server, on_notification=lambda m, p: messages.append(p)) as client:
        await client.call_tool("log")
        assert messages == []
        client.exchange.log_level = "info"
        await client.call_tool("log")
        assert [p["level"] for p in messages] == ["info", "warning", "error"]
        for level in ("noisy", ["info"], {"info": 1}):
            client.exchange.log_level = level  # type: ignore[assignment]
            with pytest.raises(RPCError) as info:
                await client.call_tool("log")
            assert info.value.code == -32602, level


@pytest.mark.parametrize("protocol", ALL)
async def test_ask_reaches_the_client_in_every_era(server: Server, protocol: str) -> None:
    async with connect(server, protocol) as client:
        assert (await client.call_tool("elicit"))["content"][0]["text"] == "Hello, Ada!"
        assert (await client.call_tool("sample"))["content"][0]["text"] == "sampled: 4"
        assert (await client.call_tool("roots"))["content"][0]["text"] == "roots: file:///tmp/r1"
        assert (await client.call_tool("two_questions"))["content"][0]["text"] == "Ada Ada"
        assert (await client.call_tool("twice"))["content"][0]["text"] == "AdaAda"
        prompt = await client.get_prompt("ask_context")
        assert prompt["messages"][0]["content"]["text"] == "Ada"
        read = await client.read_resource("mem://secret")
        assert read["contents"][0]["text"] == "Ada"


@pytest.mark.parametrize(("protocol", "code"), [("2025-11-25", -32600), ("2026-07-28", -32021)])
async def test_asking_for_an_undeclared_capability(server: Server, protocol: str, code: int) -> None:
    async with connect(server, protocol, features=features(sample=None)) as client:
        with pytest.raises(RPCError) as info:
            await client.call_tool("needs_sampling")
        assert info.value.code == code
        if code == -32021:
            assert info.value.data == {"requiredCapabilities": {"sampling": {}}}


@pytest.mark.parametrize("protocol", ALL)
async def test_cancelling_a_call_cancels_the_backend(backend: DemoBackend, server: Server, protocol: str) -> None:
    async with connect(server, protocol) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "slow")
            with anyio.fail_after(5):
                await backend.started.wait()
            tg.cancel_scope.cancel()
        with anyio.fail_after(5):
            await backend.cancelled.wait()
        # The connection is still usable.
        assert (await client.call_tool("echo", {"text": "ok"}))["content"][0]["text"] == "ok"


@pytest.mark.parametrize("protocol", ALL)
async def test_concurrent_calls_are_answered_independently(server: Server, protocol: str) -> None:
    results: dict[int, str] = {}
    async with connect(server, protocol) as client:

        async def one(n: int) -> None:
            result = await client.call_tool("echo", {"text": str(n)})
            results[n] = result["content"][0]["text"]

        async with anyio.create_task_group() as tg:
            for n in range(40):
                tg.start_soon(one, n)
    assert results == {n: str(n) for n in range(40)}


async def test_completion_values_are_capped_at_100(server: Server) -> None:
    async with connect(server, "2025-11-25") as client:
        result = await client.complete({"type": "ref/prompt", "name": "greet"}, "who", "many")
    completion = result["completion"]
    assert len(completion["values"]) == 100
    assert completion["hasMore"] is True and completion["total"] == 150


async def test_ping_is_answered_in_every_era(server: Server) -> None:
    """2026-07-28 removed `ping`, but real clients still send it there: it is answered
    (refused only over HTTP, where the conformance suite requires 404; test_server_http)."""
    async with connect(server, "2025-11-25") as client:
        assert (await client.ping())[0] == "ping"
    async with connect(server) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.request("ping")
        assert result.get("resultType", "complete") == "complete"
        assert set(result) <= {"resultType", "_meta"}
        # A 2026 ping whose _meta is wrong is still told so.
        with pytest.raises(RPCError) as info:
            await client.peer.request("ping", {"_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01"}})
        assert info.value.code in (-32602, -32022)


async def test_completion_for_resources_and_bad_references(server: Server) -> None:
    async with connect(server, "2025-11-25") as client:
        result = await client.complete({"type": "ref/resource", "uri": "mem://items/{id}"}, "id", "b")
        assert result["completion"]["values"] == ["bob"]
        for bad in ({"type": "ref/tool", "name": "x"}, {"type": "ref/prompt"}, "greet"):
            with pytest.raises(RPCError) as info:
                await client.request("completion/complete", {"ref": bad, "argument": {"name": "a", "value": ""}})
            assert info.value.code == -32602
        with pytest.raises(RPCError) as info:
            await client.request("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "a"}})
        assert info.value.code == -32602
