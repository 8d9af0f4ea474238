"""Change notifications: legacy list_changed/subscribe and 2026 subscriptions/listen."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from server_backends import DemoBackend
from server_support import LEGACY, connect, modern_meta, raw

from mcpcli.core.jsonrpc import Notification
from mcpcli.core.protocol import SUBSCRIPTION_ID_KEY
from mcpcli.rpc.peer import Peer
from mcpcli.server import Server
from mcpcli.transports import Envelope

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("protocol", LEGACY)
async def test_legacy_clients_get_list_changed_and_subscribed_updates(
    backend: DemoBackend, server: Server, protocol: str
) -> None:
    seen: list[tuple[str, Any]] = []
    got = anyio.Event()

    def note(method: str, params: Any) -> None:
        seen.append((method, params))
        if method == "notifications/resources/updated":
            got.set()

    async with connect(server, protocol, on_notification=note) as client:
        await client.call_tool("change", {"text": "tools"})  # the backend announces a change
        await client.request("resources/subscribe", {"uri": "mem://greeting"})
        backend.changed("resource", "mem://other")  # not subscribed: not delivered
        backend.changed("resource", "mem://greeting")
        with anyio.fail_after(5):
            await got.wait()
        await client.request("resources/unsubscribe", {"uri": "mem://greeting"})
        backend.changed("prompts")
        backend.changed("resource", "mem://greeting")
        await client.call_tool("echo")  # a round trip, so anything sent before it has arrived
    methods = [m for m, _ in seen]
    assert methods == [
        "notifications/tools/list_changed",
        "notifications/resources/updated",
        "notifications/prompts/list_changed",
    ]
    assert seen[1][1] == {"uri": "mem://greeting"}


async def test_no_subscribe_without_the_backend_capability() -> None:
    server = Server(DemoBackend(subscribe=False))
    async with connect(server, "2025-11-25") as client:
        assert "subscribe" not in client.capabilities["resources"]
        from mcpcli.errors import RPCError

        with pytest.raises(RPCError) as info:
            await client.request("resources/subscribe", {"uri": "mem://greeting"})
        assert info.value.code == -32601


async def test_modern_listen_acknowledges_filters_and_tags(backend: DemoBackend, server: Server) -> None:
    async with connect(server) as client:
        async with client.subscribe(tools=True, resources=["mem://greeting"]) as stream:
            backend.changed("prompts")  # not asked for
            backend.changed("resource", "mem://other")  # not asked for
            backend.changed("tools")
            backend.changed("resource", "mem://greeting")
            with anyio.fail_after(5):
                first = await stream.receive()
                second = await stream.receive()
        assert first["method"] == "notifications/tools/list_changed"
        assert second == {
            "method": "notifications/resources/updated",
            "params": {"uri": "mem://greeting", "_meta": {SUBSCRIPTION_ID_KEY: first["params"]["_meta"][SUBSCRIPTION_ID_KEY]}},
        }


async def test_listen_wire_order_and_graceful_end(backend: DemoBackend) -> None:
    server = Server(backend)
    notes: list[Notification] = []
    acked = anyio.Event()

    async def on_note(note: Notification, env: Envelope) -> None:
        notes.append(note)
        if note.method == "notifications/subscriptions/acknowledged":
            acked.set()

    from mcpcli.transports.memory import memory_pair

    result: dict[str, Any] = {}
    async with memory_pair() as (a, b), anyio.create_task_group() as tg:
        async with server:
            tg.start_soon(server.serve, b)
            async with Peer(a, on_notification=on_note) as s:

                async def listen() -> None:
                    result.update(
                        await s.request(
                            "subscriptions/listen",
                            {"_meta": modern_meta(), "notifications": {
                                "promptsListChanged": True, "toolsListChanged": False,
                                "resourceSubscriptions": ["mem://x"], "bogus": True,
                            }},
                            progress_token=False, timeout=None,
                        )
                    )

                tg.start_soon(listen)
                with anyio.fail_after(5):
                    await acked.wait()
                backend.changed("tools")
                backend.changed("prompts")
                backend.changed("resource", "mem://x")
                with anyio.fail_after(5):
                    while len(notes) < 3:
                        await anyio.sleep(0.01)
                server.close_subscriptions()  # shutdown: the listen request ends gracefully
                with anyio.fail_after(5):
                    while not result:
                        await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
    ack = notes[0]
    assert ack.method == "notifications/subscriptions/acknowledged"
    sid = ack.params["_meta"][SUBSCRIPTION_ID_KEY]
    assert ack.params["notifications"] == {"promptsListChanged": True, "resourceSubscriptions": ["mem://x"]}
    assert [n.method for n in notes[1:]] == ["notifications/prompts/list_changed", "notifications/resources/updated"]
    assert all(n.params["_meta"][SUBSCRIPTION_ID_KEY] == sid for n in notes)
    assert result["resultType"] == "complete"
    assert result["_meta"][SUBSCRIPTION_ID_KEY] == sid


async def test_cancelled_listen_stops_delivery(backend: DemoBackend, server: Server) -> None:
    async with raw(server) as s:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: s.request(
                    "subscriptions/listen",
                    {"_meta": modern_meta(), "notifications": {"toolsListChanged": True}},
                    progress_token=False, timeout=None,
                )
            )
            with anyio.fail_after(5):
                while not server.runtime.sinks - {c for c in server.runtime.sinks if not c.methods}:
                    await anyio.sleep(0.01)
            tg.cancel_scope.cancel()  # our session sends notifications/cancelled
        with anyio.fail_after(5):
            while any(sink.methods for sink in server.runtime.sinks):
                await anyio.sleep(0.01)


async def test_changes_announced_from_another_thread_arrive(backend: DemoBackend, server: Server) -> None:
    got = anyio.Event()

    def note(method: str, params: Any) -> None:
        if method == "notifications/tools/list_changed":
            got.set()

    async with connect(server, "2025-11-25", on_notification=note) as client:
        await client.call_tool("echo")  # initialized has arrived by now
        await anyio.to_thread.run_sync(backend.changed, "tools")  # e.g. a file watcher thread
        with anyio.fail_after(5):
            await got.wait()
