"""The `Client` library over the stdio transport, against server-everything.

Some behaviours need several requests in one session (server-everything starts its
simulated updates and logs per session), which one `mcp` invocation cannot drive;
these tests use the library directly, the way the commands do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpcli.client import Client, ClientFeatures, ClientOptions
from mcpcli.transports.stdio import StdioTransport

pytestmark = [pytest.mark.anyio, pytest.mark.peer]

DOC = "demo://resource/static/document/features.md"


def connect(everything: list[str], **options: Any) -> Client:
    transport = StdioTransport(everything[0], everything[1:], quiet=True)
    return Client(transport, ClientOptions(**options))


async def test_resource_subscription_delivers_updates_and_unsubscribes(everything: list[str]) -> None:
    sent: list[str] = []
    with anyio.fail_after(30):
        async with connect(everything, trace=lambda d, m: sent.append(f"{d} {getattr(m, 'method', '')}")) as client:
            async with client.subscribe(resources=[DOC]) as events:
                await client.call_tool("toggle-subscriber-updates", {})
                event = await events.receive()
            assert event == {"method": "notifications/resources/updated", "params": {"uri": DOC}}
    assert "send resources/subscribe" in sent
    assert "send resources/unsubscribe" in sent


async def test_list_changes_are_delivered_to_a_subscription(everything: list[str]) -> None:
    # gzip-file-as-resource registers a session resource, which the server announces
    # with notifications/resources/list_changed; the new resource can then be read.
    import base64
    import gzip

    with anyio.fail_after(30):
        async with connect(everything) as client, client.subscribe(resource_list=True) as events:
            result = await client.call_tool("gzip-file-as-resource", {
                "name": "hello.gz", "data": "data:text/plain;base64," + base64.b64encode(b"hello").decode(),
            })
            event = await events.receive()
            link = next(b for b in result["content"] if b["type"] == "resource_link")
            read = await client.read_resource(link["uri"])
    assert event["method"] == "notifications/resources/list_changed"
    assert gzip.decompress(base64.b64decode(read["contents"][0]["blob"])) == b"hello"


async def test_simulated_logging_respects_the_level(everything: list[str]) -> None:
    levels: list[str] = []
    got_one = anyio.Event()

    def on_notification(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/message":
            levels.append(params["level"])
            got_one.set()

    with anyio.fail_after(30):
        async with connect(everything, log_level="debug", on_notification=on_notification) as client:
            await client.call_tool("toggle-simulated-logging", {})
            await got_one.wait()
            await client.call_tool("toggle-simulated-logging", {})  # stop it
    assert levels and levels[0] in ("debug", "info", "notice", "warning", "error", "critical", "alert",
                                    "emergency")


async def test_roots_are_answered_only_when_configured(everything: list[str], tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with connect(everything) as client:
            assert "roots" not in client.options.features.capabilities("legacy")
            names = {t["name"] for t in (await client.list_tools())["tools"]}
            assert "get-roots-list" not in names
        roots = [{"uri": tmp_path.as_uri(), "name": "work"}]
        async with connect(everything, features=ClientFeatures(roots=roots)) as client:
            result = await client.call_tool("get-roots-list", {})
    assert tmp_path.as_uri() in result["content"][0]["text"]


async def test_concurrent_calls_on_one_connection(everything: list[str]) -> None:
    with anyio.fail_after(30):
        async with connect(everything) as client:
            results: dict[int, str] = {}

            async def one(n: int) -> None:
                result = await client.call_tool("echo", {"message": str(n)})
                results[n] = result["content"][0]["text"]

            async with anyio.create_task_group() as tg:
                for n in range(20):
                    tg.start_soon(one, n)
    assert results == {n: f"Echo: {n}" for n in range(20)}
