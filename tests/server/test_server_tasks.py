"""The tasks extension (io.modelcontextprotocol/tasks, SEP-2663) through the runtime, in-process."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from server_backends import DemoBackend, TaskBackend
from server_support import modern_meta, raw

from mcpcli.core.jsonrpc import Notification
from mcpcli.core.protocol import TASKS_EXTENSION
from mcpcli.errors import RPCError
from mcpcli.rpc.peer import Peer
from mcpcli.server import Server
from mcpcli.server.backend import TaskPolicy
from mcpcli.transports import Envelope
from mcpcli.transports.memory import memory_pair

pytestmark = pytest.mark.anyio

JSON = dict[str, Any]
EXT = {"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}}
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
NOW = TaskPolicy("optional", after=0)
SOON = TaskPolicy("optional", after=0.2)
REQUIRED = TaskPolicy("required", after=0)


def named(name: str) -> JSON:
    return {"action": "accept", "content": {"name": name}}


async def req(s: Peer, method: str, params: JSON | None = None, caps: JSON | None = None) -> JSON:
    params = {**(params or {}), "_meta": modern_meta(EXT if caps is None else caps)}
    return await s.request(method, params, progress_token=False)


async def call(s: Peer, name: str, caps: JSON | None = None, **extra: Any) -> JSON:
    return await req(s, "tools/call", {"name": name, "arguments": {}, **extra}, caps)


async def until(s: Peer, task_id: str, *statuses: str) -> JSON:
    """Poll tasks/get (bounded) until the task has one of `statuses`."""
    with anyio.fail_after(10):
        while True:
            task = await req(s, "tasks/get", {"taskId": task_id})
            if task["status"] in statuses:
                return task
            await anyio.sleep(0.01)


async def refused(code: int, s: Peer, method: str, params: JSON | None = None,
                  caps: JSON | None = None) -> RPCError:
    with pytest.raises(RPCError) as info:
        await req(s, method, params, caps)
    assert info.value.code == code, info.value
    return info.value


def tasks_server(**policies: TaskPolicy) -> tuple[TaskBackend, Server]:
    backend = TaskBackend(policies)
    return backend, Server(backend)


async def test_discover_advertises_the_extension_only_when_the_backend_has_tasks() -> None:
    _, server = tasks_server(gate=NOW)
    async with raw(server) as s:
        caps = (await req(s, "server/discover"))["capabilities"]
        assert caps["extensions"] == {TASKS_EXTENSION: {}}
        assert "tasks" not in caps  # no v1-style slot in 2026
    assert "extensions" not in server.capabilities("2025-06-18")
    async with raw(Server(DemoBackend())) as s:
        assert "extensions" not in (await req(s, "server/discover"))["capabilities"]
        await refused(-32601, s, "tasks/get", {"taskId": "x"})


async def test_a_task_from_creation_to_its_inlined_result() -> None:
    backend, server = tasks_server(gate=NOW)
    async with raw(server) as s:
        created = await call(s, "gate")
        assert created["resultType"] == "task"
        assert set(created) == {"resultType", "taskId", "status", "createdAt", "lastUpdatedAt",
                                "ttlMs", "pollIntervalMs", "_meta"}
        assert created["status"] == "working"
        assert ISO.match(created["createdAt"]) and ISO.match(created["lastUpdatedAt"])
        assert created["ttlMs"] == 3_600_000 and created["pollIntervalMs"] == 1000
        task_id = created["taskId"]
        assert len(task_id) >= 20
        # Durably created: visible at once, working, with the backend's progress as its message.
        with anyio.fail_after(5):
            await backend.started.wait()
        now = await req(s, "tasks/get", {"taskId": task_id})
        assert (now["resultType"], now["taskId"], now["status"]) == ("complete", task_id, "working")
        assert now["statusMessage"] == "1/2: waiting"
        assert not {"result", "error", "inputRequests", "requestState"} & set(now)
        backend.gate.set()
        done = await until(s, task_id, "completed")
        assert done["result"] == {"content": [{"type": "text", "text": "opened"}]}
        assert done["createdAt"] == created["createdAt"]
        # Polling a finished task again gives the same answer; cancelling it is a no-op ack.
        assert (await req(s, "tasks/get", {"taskId": task_id}))["result"] == done["result"]
        ack = await req(s, "tasks/cancel", {"taskId": task_id})
        assert set(ack) == {"resultType", "_meta"} and ack["resultType"] == "complete"
        assert (await req(s, "tasks/get", {"taskId": task_id}))["status"] == "completed"


async def test_quick_calls_answer_directly_and_clients_without_the_extension_wait() -> None:
    backend, server = tasks_server(echo=SOON, gate=TaskPolicy("optional", after=0), fail=REQUIRED)
    async with raw(server) as s:
        quick = await call(s, "echo", arguments={"text": "hi"})
        assert quick["resultType"] == "complete" and quick["content"][0]["text"] == "hi"
        # Without the extension an optional tool runs as an ordinary request...
        async with anyio.create_task_group() as tg:
            results: list[JSON] = []

            async def plain() -> None:
                results.append(await call(s, "gate", caps={}))

            tg.start_soon(plain)
            with anyio.fail_after(5):
                await backend.started.wait()
            backend.gate.set()
        assert results[0]["resultType"] == "complete" and "taskId" not in results[0]
        # ...and a tool that requires tasks is refused, naming the extension.
        error = await refused(-32021, s, "tools/call", {"name": "fail", "arguments": {}}, caps={})
        assert error.data == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
        # A legacy-style `task` hint does not make a tool without task support a task.
        hinted = await call(s, "log", task={"ttl": 60000, "pollInterval": 100})
        assert hinted["resultType"] == "complete"


async def test_task_methods_need_the_extension_and_a_known_task() -> None:
    _, server = tasks_server(slow=NOW)
    async with raw(server) as s:
        for method, params in (("tasks/get", {"taskId": "x"}), ("tasks/cancel", {"taskId": "x"}),
                               ("tasks/update", {"taskId": "x", "inputResponses": {}})):
            error = await refused(-32021, s, method, params, caps={})
            assert error.data == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
            await refused(-32602, s, method, {**params, "taskId": "tasks-unknown-12345"})
            await refused(-32602, s, method, {**params, "taskId": 7})
        for method in ("tasks/result", "tasks/list"):  # removed in the extension
            await refused(-32601, s, method, {"taskId": "x"})
        task_id = (await call(s, "slow"))["taskId"]
        await refused(-32602, s, "tasks/update", {"taskId": task_id})
        await refused(-32602, s, "tasks/update", {"taskId": task_id, "inputResponses": []})
        await req(s, "tasks/cancel", {"taskId": task_id})


async def test_tool_errors_complete_and_protocol_errors_fail() -> None:
    _, server = tasks_server(fail=REQUIRED, crash=REQUIRED, protocol_error=REQUIRED)
    async with raw(server) as s:
        failed_tool = await until(s, (await call(s, "fail"))["taskId"], "completed", "failed")
        assert failed_tool["status"] == "completed" and failed_tool["result"]["isError"] is True
        broke = await until(s, (await call(s, "protocol_error"))["taskId"], "completed", "failed")
        assert broke["status"] == "failed" and "result" not in broke
        assert broke["error"] == {"code": -32000, "message": "the job broke", "data": {"why": "test"}}
        assert broke["statusMessage"] == "the job broke"
        crashed = await until(s, (await call(s, "crash"))["taskId"], "completed", "failed")
        assert crashed["error"] == {"code": -32603, "message": "Internal error"}


async def test_input_required_and_partial_updates() -> None:
    _, server = tasks_server(twice=NOW)
    async with raw(server) as s:
        task_id = (await call(s, "twice"))["taskId"]
        waiting = await until(s, task_id, "input_required")
        assert sorted(waiting["inputRequests"]) == ["a", "b"]
        assert waiting["inputRequests"]["a"]["method"] == "elicitation/create"
        assert waiting["inputRequests"]["a"]["params"]["message"] == "A?"
        # Unknown keys and malformed answers are ignored; the ack is empty either way.
        ack = await req(s, "tasks/update", {"taskId": task_id, "inputResponses": {
            "nope": named("x"), "a": {"not": "an elicit result"}}})
        assert set(ack) == {"resultType", "_meta"}
        assert sorted((await req(s, "tasks/get", {"taskId": task_id}))["inputRequests"]) == ["a", "b"]
        await req(s, "tasks/update", {"taskId": task_id, "inputResponses": {"a": named("Ada")}})
        partial = await req(s, "tasks/get", {"taskId": task_id})
        assert partial["status"] == "input_required" and list(partial["inputRequests"]) == ["b"]
        await req(s, "tasks/update", {"taskId": task_id, "inputResponses": {"b": named("Bob"), "a": named("Z")}})
        done = await until(s, task_id, "completed")
        assert done["result"]["content"][0]["text"] == "AdaBob"


async def test_input_keys_are_unique_for_the_tasks_lifetime() -> None:
    _, server = tasks_server(same_key=NOW)
    async with raw(server) as s:
        task_id = (await call(s, "same_key"))["taskId"]
        first = await until(s, task_id, "input_required")
        assert list(first["inputRequests"]) == ["k"]
        await req(s, "tasks/update", {"taskId": task_id, "inputResponses": {"k": named("one")}})
        with anyio.fail_after(10):
            while True:
                second = await until(s, task_id, "input_required")
                if "k" not in second["inputRequests"]:
                    break
                await anyio.sleep(0.01)
        [key] = second["inputRequests"]
        assert key != "k" and second["inputRequests"][key]["params"]["message"] == "Second?"
        # A late answer to the old key is ignored; the new key resumes the work.
        await req(s, "tasks/update", {"taskId": task_id, "inputResponses": {"k": named("late")}})
        assert (await req(s, "tasks/get", {"taskId": task_id}))["status"] == "input_required"
        await req(s, "tasks/update", {"taskId": task_id, "inputResponses": {key: named("two")}})
        assert (await until(s, task_id, "completed"))["result"]["content"][0]["text"] == "one+two"


async def test_input_asked_before_the_task_is_a_synchronous_round_trip() -> None:
    backend, server = tasks_server(ask_then_gate=TaskPolicy("required", after=0.2))
    async with raw(server) as s:
        first = await call(s, "ask_then_gate")
        assert first["resultType"] == "input_required" and "taskId" not in first
        assert list(first["inputRequests"]) == ["user_name"]
        created = await call(s, "ask_then_gate", inputResponses={"user_name": named("Alice")},
                             requestState=first["requestState"])
        assert created["resultType"] == "task" and "requestState" not in created
        assert "inputRequests" not in created
        backend.gate.set()
        done = await until(s, created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "Hello, Alice!"
    assert backend.runs["ask_then_gate"] == 1  # the parked call was resumed, then became the task


async def test_cancel_cancels_the_work_and_is_idempotent() -> None:
    backend, server = tasks_server(slow=NOW, twice=NOW)
    async with raw(server) as s:
        task_id = (await call(s, "slow"))["taskId"]
        with anyio.fail_after(5):
            await backend.started.wait()
        ack = await req(s, "tasks/cancel", {"taskId": task_id})
        assert set(ack) == {"resultType", "_meta"}
        with anyio.fail_after(5):
            await backend.cancelled.wait()
        task = await req(s, "tasks/get", {"taskId": task_id})
        assert task["status"] == "cancelled" and not {"result", "error"} & set(task)
        assert (await req(s, "tasks/cancel", {"taskId": task_id}))["resultType"] == "complete"
        # A task waiting for input is cancelled too; its requests are withdrawn.
        waiting = (await call(s, "twice"))["taskId"]
        await until(s, waiting, "input_required")
        await req(s, "tasks/cancel", {"taskId": waiting})
        cancelled = await req(s, "tasks/get", {"taskId": waiting})
        assert cancelled["status"] == "cancelled" and "inputRequests" not in cancelled


async def test_ttl_expiry_cancels_the_work_and_forgets_the_task() -> None:
    backend, server = tasks_server(slow=TaskPolicy("optional", after=0, ttl=0.3, poll_interval=0.05))
    async with raw(server) as s:
        created = await call(s, "slow")
        assert (created["ttlMs"], created["pollIntervalMs"]) == (300, 50)
        assert (await req(s, "tasks/get", {"taskId": created["taskId"]}))["status"] == "working"
        with anyio.fail_after(5):
            await backend.cancelled.wait()  # the work ends when the ttl runs out
        with anyio.fail_after(5):
            while server.tasks.owned(""):  # swept once the ttl has run out
                await anyio.sleep(0.02)
        await refused(-32602, s, "tasks/get", {"taskId": created["taskId"]})
    assert len(server.tasks) == 0


async def test_the_number_of_tasks_is_bounded() -> None:
    backend = TaskBackend({"echo": NOW, "slow": NOW})
    server = Server(backend, max_tasks=1)
    async with raw(server) as s:
        old = (await call(s, "echo", arguments={"text": "old"}))["taskId"]
        await until(s, old, "completed")
        newer = (await call(s, "slow"))["taskId"]  # evicts the finished one
        await refused(-32602, s, "tasks/get", {"taskId": old})
        # Full of running tasks: the next call is answered as an ordinary request.
        direct = await call(s, "echo", arguments={"text": "direct"})
        assert direct["resultType"] == "complete" and direct["content"][0]["text"] == "direct"
        await req(s, "tasks/cancel", {"taskId": newer})
    assert len(server.tasks) == 1


async def test_tasks_belong_to_their_principal() -> None:
    _, server = tasks_server(slow=NOW)
    async with server:
        store = server.tasks
        task = store.create("alice", NOW)
        assert task is not None
        assert store.find(task.id, "alice") is task
        with pytest.raises(RPCError) as info:
            store.find(task.id, "mallory")
        assert info.value.code == -32602


async def test_task_ids_are_safe_to_pass_on_a_command_line() -> None:
    # An id starting with "-" would read as an option in `mcp tasks result T ID`.
    _, server = tasks_server(slow=NOW)
    async with server:
        ids = [task.id for task in (server.tasks.create("alice", NOW) for _ in range(200)) if task]
    assert len(set(ids)) == 200
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids), ids


@asynccontextmanager
async def listening(server: Server) -> AsyncIterator[tuple[Peer, list[JSON]]]:
    """A raw session that records the notifications it receives."""
    seen: list[JSON] = []

    async def note(message: Notification, envelope: Envelope) -> None:
        seen.append({"method": message.method, "params": message.params})

    async with memory_pair() as (client_side, server_side), anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_side)
        async with Peer(client_side, on_notification=note) as session:
            yield session, seen
        tg.cancel_scope.cancel()


async def test_status_notifications_on_a_listen_stream() -> None:
    backend, server = tasks_server(gate=NOW)
    async with listening(server) as (s, seen):
        task_id = (await call(s, "gate"))["taskId"]
        with anyio.fail_after(5):
            await backend.started.wait()
        await refused(-32021, s, "subscriptions/listen", {"notifications": {"taskIds": [task_id]}}, caps={})
        await refused(-32602, s, "subscriptions/listen", {"notifications": {"taskIds": "all"}})
        async with anyio.create_task_group() as tg:
            tg.start_soon(req, s, "subscriptions/listen", {"notifications": {"taskIds": [task_id, "other"]}})
            with anyio.fail_after(5):
                while not seen:
                    await anyio.sleep(0.01)
            assert seen[0]["method"] == "notifications/subscriptions/acknowledged"
            assert seen[0]["params"]["notifications"] == {"taskIds": [task_id]}
            backend.gate.set()
            with anyio.fail_after(5):
                while not any(n["params"].get("status") == "completed" for n in seen[1:]):
                    await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
    statuses = [n for n in seen[1:] if n["method"] == "notifications/tasks"]
    final = statuses[-1]["params"]
    assert final["taskId"] == task_id and final["result"]["content"][0]["text"] == "opened"
    assert "io.modelcontextprotocol/subscriptionId" in final["_meta"]


async def test_over_http_tasks_route_by_mcp_name_and_outlive_their_request() -> None:
    import httpx
    from server_http import messages, modern_request, running

    backend, server = tasks_server(gate=NOW)
    async with running(server) as url, httpx.AsyncClient(timeout=10) as http:

        async def post(method: str, params: JSON, **headers: str) -> tuple[int, JSON]:
            body, base = modern_request(method, params, caps=EXT)
            if method.startswith("tasks/"):
                base["Mcp-Name"] = params["taskId"]
            response = await http.post(url, json=body, headers={**base, **headers})
            return response.status_code, messages(response)[-1]

        status, reply = await post("tools/call", {"name": "gate", "arguments": {}})
        assert status == 200 and reply["result"]["resultType"] == "task"
        task_id = reply["result"]["taskId"]
        with anyio.fail_after(5):
            await backend.started.wait()  # the call goes on after its response was sent
        status, reply = await post("tasks/get", {"taskId": task_id})
        assert (status, reply["result"]["status"]) == (200, "working")
        status, reply = await post("tasks/get", {"taskId": task_id}, **{"Mcp-Name": "someone-else"})
        assert (status, reply["error"]["code"]) == (400, -32020)
        body, headers = modern_request("tasks/get", {"taskId": task_id}, caps=EXT)
        response = await http.post(url, json=body, headers=headers)  # no Mcp-Name at all
        assert (response.status_code, messages(response)[-1]["error"]["code"]) == (400, -32020)
        status, reply = await post("tasks/update", {"taskId": task_id, "inputResponses": {}})
        assert (status, reply["result"]) == (200, {"resultType": "complete", "_meta": reply["result"]["_meta"]})
        backend.gate.set()
        with anyio.fail_after(10):
            while reply.get("result", {}).get("status") != "completed":
                status, reply = await post("tasks/get", {"taskId": task_id})
                await anyio.sleep(0.01)
        assert reply["result"]["result"]["content"][0]["text"] == "opened"
        # Without the extension: 400 and -32021; an unknown task: -32602.
        body, headers = modern_request("tasks/get", {"taskId": task_id}, caps={})
        response = await http.post(url, json=body, headers={**headers, "Mcp-Name": task_id})
        assert (response.status_code, messages(response)[-1]["error"]["code"]) == (400, -32021)
        status, reply = await post("tasks/cancel", {"taskId": "unknown-task"})
        assert reply["error"]["code"] == -32602


# -- 2025-11-25 core tasks (experimental) --------------------------------------------------


@asynccontextmanager
async def legacy(server: Server, version: str = "2025-11-25",
                 answer: Any = None) -> AsyncIterator[tuple[Peer, JSON, list[JSON]]]:
    """An initialized legacy session whose client answers server requests with `answer`."""
    asked: list[JSON] = []

    async def on_request(request: Any, ctx: Any) -> JSON:
        asked.append({"method": request.method, "params": request.params})
        if isinstance(answer, Exception):
            raise answer
        return answer if answer is not None else named("Ada")

    async with memory_pair() as (client_side, server_side), anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_side)
        async with Peer(client_side, on_request=on_request) as s:
            init = await s.request("initialize", {"protocolVersion": version, "capabilities": {"elicitation": {}},
                                                  "clientInfo": {"name": "t", "version": "0"}})
            await s.notify("notifications/initialized", {})
            yield s, init, asked
        tg.cancel_scope.cancel()


async def test_legacy_tasks_from_creation_to_tasks_result() -> None:
    _, server = tasks_server(elicit=TaskPolicy("optional"), slow=REQUIRED)
    async with legacy(server) as (s, init, asked):
        assert init["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        assert "extensions" not in init["capabilities"]
        created = await s.request("tools/call", {"name": "elicit", "arguments": {}, "task": {"ttl": 60000}})
        task = created["task"]
        assert set(task) == {"taskId", "status", "createdAt", "lastUpdatedAt", "ttl", "pollInterval"}
        assert (task["status"], task["ttl"], task["pollInterval"]) == ("working", 60000, 1000)
        got = await s.request("tasks/get", {"taskId": task["taskId"]})
        assert got["taskId"] == task["taskId"] and got["status"] in ("working", "input_required")
        # tasks/result blocks, relays the input request (tagged with the task), then answers.
        result = await s.request("tasks/result", {"taskId": task["taskId"]})
        assert result["content"] == [{"type": "text", "text": "Hello, Ada!"}]
        assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
        [request] = asked
        assert request["method"] == "elicitation/create"
        assert request["params"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
        # Cancel: a running task is answered cancelled; a finished one is -32602.
        running = (await s.request("tools/call", {"name": "slow", "arguments": {}, "task": {}}))["task"]
        cancelled = await s.request("tasks/cancel", {"taskId": running["taskId"]})
        assert cancelled["status"] == "cancelled"
        for finished in (task["taskId"], running["taskId"]):
            with pytest.raises(RPCError) as info:
                await s.request("tasks/cancel", {"taskId": finished})
            assert info.value.code == -32602
        with pytest.raises(RPCError) as info:
            await s.request("tasks/result", {"taskId": running["taskId"]})
        assert info.value.code == -32603


async def test_legacy_task_support_is_negotiated_per_tool() -> None:
    _, server = tasks_server(slow=REQUIRED, echo=TaskPolicy("optional"))
    async with legacy(server) as (s, _, _):
        with pytest.raises(RPCError) as info:  # required: only as a task
            await s.request("tools/call", {"name": "slow", "arguments": {}})
        assert info.value.code == -32601
        with pytest.raises(RPCError) as info:  # forbidden: never as a task
            await s.request("tools/call", {"name": "log", "arguments": {}, "task": {}})
        assert info.value.code == -32601
        for bad in ({"task": "soon"}, {"task": {"ttl": -5}}):
            with pytest.raises(RPCError) as info:
                await s.request("tools/call", {"name": "echo", "arguments": {}, **bad})
            assert info.value.code == -32602
        plain = await s.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert plain["content"][0]["text"] == "hi"
        with pytest.raises(RPCError) as info:
            await s.request("tasks/get", {"taskId": "unknown"})
        assert info.value.code == -32602
    # Older revisions have no tasks: the hint is ignored, a required tool is refused.
    async with legacy(server, "2025-06-18") as (s, init, _):
        assert "tasks" not in init["capabilities"]
        hinted = await s.request("tools/call", {"name": "echo", "arguments": {"text": "x"}, "task": {}})
        assert hinted["content"][0]["text"] == "x"
        with pytest.raises(RPCError) as info:
            await s.request("tools/call", {"name": "slow", "arguments": {}, "task": {}})
        assert info.value.code == -32601
        with pytest.raises(RPCError) as info:
            await s.request("tasks/list", {})
        assert info.value.code == -32601


async def test_legacy_tasks_list_pages_and_a_refused_input_fails_the_task() -> None:
    backend = TaskBackend({"echo": TaskPolicy("optional"), "elicit": TaskPolicy("optional")})
    server = Server(backend, page_size=2)
    async with legacy(server, answer=RPCError(-32000, "user went away")) as (s, _, asked):
        ids = [(await s.request("tools/call", {"name": "echo", "arguments": {}, "task": {}}))["task"]["taskId"]
               for _ in range(3)]
        first = await s.request("tasks/list", {})
        assert [t["taskId"] for t in first["tasks"]] == ids[:2]
        second = await s.request("tasks/list", {"cursor": first["nextCursor"]})
        assert [t["taskId"] for t in second["tasks"]] == ids[2:] and "nextCursor" not in second
        task_id = (await s.request("tools/call", {"name": "elicit", "arguments": {}, "task": {}}))["task"]["taskId"]
        with pytest.raises(RPCError) as info:
            await s.request("tasks/result", {"taskId": task_id})
        assert (info.value.code, info.value.rpc_message) == (-32000, "user went away")
        assert (await s.request("tasks/get", {"taskId": task_id}))["status"] == "failed"
        assert len(asked) == 1
