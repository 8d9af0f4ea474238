"""`task:` in tools.yaml: the setting, and script calls running as tasks through the real runtime.

Each test drives the runtime in-process with 2026-07-28 requests that declare the
tasks extension. tests/conftest.py fails any test that leaves a process behind, so
the cancellation tests also prove that nothing outlives its task.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import wait_until_async

from mcpcli.core.protocol import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    PROTOCOL_VERSION_KEY,
    TASKS_EXTENSION,
)
from mcpcli.rpc.peer import Peer
from mcpcli.server import Server
from mcpcli.toolsfile.load import ToolsFileError, load_config
from mcpcli.toolsfile.watchdog import group_alive
from mcpcli.transports.memory import memory_pair

pytestmark = pytest.mark.anyio

JSON = dict[str, Any]
EXT = {"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}}

TOOLS = """
version: 1
defaults:
  task: optional
tools:
  - name: quick
    description: answers at once
    run: {argv: [printf, quick]}
  - name: never
    description: never a task
    task: forbidden
    run: {argv: [printf, never]}
  - name: confirm
    description: asks, then answers
    task: {mode: optional, after: 0s, ttl: 10m, poll_interval: 250ms}
    run:
      shell: sh
      script: |
        mcp script progress 1 2 -m asking
        ok=$(mcp script elicit "Go on?" --field ok:boolean --key go --get ok) || exit 1
        echo "answer: $ok"
  - name: hang
    description: starts grandchildren and waits for them
    task: required
    run:
      shell: sh
      script: |
        echo $$ > pgid
        sleep 100 & sleep 100 & wait
      kill_grace: 0.5s
  - name: broken
    description: answers with a JSON-RPC error
    task: required
    run: {argv: [printf, '{"error": {"code": -32001, "message": "no backend", "data": {"retry": true}}}']}
    output: {format: mcp}
"""


def meta(caps: JSON) -> JSON:
    return {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_INFO_KEY: {"name": "t", "version": "0"},
            CLIENT_CAPABILITIES_KEY: caps}


@asynccontextmanager
async def serving(backend: Any) -> AsyncIterator[Peer]:
    server = Server(backend)
    async with memory_pair() as (client_side, server_side), anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_side)
        async with Peer(client_side) as session:
            yield session
        tg.cancel_scope.cancel()


async def req(s: Peer, method: str, params: JSON, caps: JSON = EXT) -> JSON:
    return await s.request(method, {**params, "_meta": meta(caps)}, progress_token=False)


async def until(s: Peer, task_id: str, *statuses: str, timeout: float = 10) -> JSON:
    seen: JSON = {}

    async def reached() -> bool:
        seen.update(await req(s, "tasks/get", {"taskId": task_id}))
        return seen["status"] in statuses

    await wait_until_async(reached, timeout, what=f"task {task_id} to be {' or '.join(statuses)}")
    return seen


# -- the setting ---------------------------------------------------------------------


def test_task_settings_and_defaults(tools_file: Any) -> None:
    config = load_config(tools_file(TOOLS))
    tools = config.tools
    assert tools["never"].task is None
    assert "execution" not in tools["never"].listing()
    quick = tools["quick"].task
    assert quick is not None
    assert (quick.support, quick.after, quick.ttl, quick.poll_interval) == ("optional", 1.0, 3600.0, 1.0)
    assert tools["quick"].listing()["execution"] == {"taskSupport": "optional"}
    confirm = tools["confirm"].task
    assert confirm is not None
    assert (confirm.after, confirm.ttl, confirm.poll_interval) == (0.0, 600.0, 0.25)
    hang = tools["hang"].task
    assert hang is not None and (hang.support, hang.after) == ("required", 0.0)
    assert config.has_tasks
    plain = load_config(tools_file("version: 1\ntools:\n  - {name: a, description: x, mock: {text: a}}\n", "p.yaml"))
    assert not plain.has_tasks


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("task: sometimes", '"sometimes" is not one of "forbidden", "optional", "required"'),
        ("task: {after: 1s}", "missing required key 'mode'"),
        ("task: 5", "expected a mapping, got an integer"),
        ("task: {mode: optional, ttl: 5s}", "the task's ttl (5s) is shorter than the tool's timeout (30s)"),
        ("task: {mode: optional, poll_interval: 0s}", "ttl and poll_interval must be more than 0"),
        ("task: {mode: optional, later: 1s}", "unknown key 'later'"),
    ],
)
def test_bad_task_settings_are_reported_with_their_place(tools_file: Any, setting: str, message: str) -> None:
    path = tools_file(f"version: 1\ntools:\n  - name: t\n    description: x\n    {setting}\n"
                      "    run: {argv: [echo]}\n")
    with pytest.raises(ToolsFileError) as info:
        load_config(path)
    assert message in str(info.value)
    assert f"{path}:" in str(info.value)


# -- running as tasks ------------------------------------------------------------------


async def test_a_script_task_asks_through_tasks_update(make_backend: Any) -> None:
    backend = make_backend(TOOLS)
    async with serving(backend) as s:
        caps = (await req(s, "server/discover", {}))["capabilities"]
        assert caps["extensions"] == {TASKS_EXTENSION: {}}
        quick = await req(s, "tools/call", {"name": "quick", "arguments": {}})
        assert quick["resultType"] == "complete" and quick["content"][0]["text"] == "quick"
        created = await req(s, "tools/call", {"name": "confirm", "arguments": {}})
        assert created["resultType"] == "task"
        assert (created["ttlMs"], created["pollIntervalMs"]) == (600_000, 250)
        waiting = await until(s, created["taskId"], "input_required")
        assert waiting["statusMessage"] == "1/2: asking"
        request = waiting["inputRequests"]["go"]
        assert request["method"] == "elicitation/create" and request["params"]["message"] == "Go on?"
        await req(s, "tasks/update", {"taskId": created["taskId"],
                                      "inputResponses": {"go": {"action": "accept", "content": {"ok": True}}}})
        done = await until(s, created["taskId"], "completed", "failed")
        assert done["result"]["content"] == [{"type": "text", "text": "answer: true\n"}]
        # The same tool without the extension: an ordinary call whose input comes by MRTR.
        first = await req(s, "tools/call", {"name": "confirm", "arguments": {}}, caps={"elicitation": {}})
        assert first["resultType"] == "input_required"
        answer = {"go": {"action": "accept", "content": {"ok": False}}}
        second = await req(s, "tools/call", {"name": "confirm", "arguments": {}, "inputResponses": answer,
                                             "requestState": first["requestState"]}, caps={"elicitation": {}})
        assert second["content"] == [{"type": "text", "text": "answer: false\n"}]


async def test_cancel_ends_the_whole_process_group(make_backend: Any, tmp_path: Path) -> None:
    backend = make_backend(TOOLS)
    async with serving(backend) as s:
        created = await req(s, "tools/call", {"name": "hang", "arguments": {}})
        pgid_file = tmp_path / "pgid"
        await wait_until_async(lambda: pgid_file.exists() and pgid_file.read_text().strip(), what="the tool's pgid")
        pgid = int(pgid_file.read_text())
        assert group_alive(pgid)
        ack = await req(s, "tasks/cancel", {"taskId": created["taskId"]})
        assert ack["resultType"] == "complete"
        assert (await req(s, "tasks/get", {"taskId": created["taskId"]}))["status"] == "cancelled"
        started = time.monotonic()
        await wait_until_async(lambda: not group_alive(pgid), 5, what="the group to end")
        assert time.monotonic() - started < 3
        assert (await req(s, "tasks/cancel", {"taskId": created["taskId"]}))["resultType"] == "complete"


async def test_required_tools_refuse_clients_without_tasks_and_protocol_errors_fail(make_backend: Any) -> None:
    from mcpcli.errors import RPCError

    backend = make_backend(TOOLS)
    async with serving(backend) as s:
        with pytest.raises(RPCError) as info:
            await req(s, "tools/call", {"name": "hang", "arguments": {}}, caps={})
        assert info.value.code == -32021
        assert info.value.data == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
        created = await req(s, "tools/call", {"name": "broken", "arguments": {}})
        failed = await until(s, created["taskId"], "completed", "failed")
        assert failed["status"] == "failed"
        assert failed["error"] == {"code": -32001, "message": "no backend", "data": {"retry": True}}


async def test_a_mcp_format_error_is_a_json_rpc_error_outside_tasks(make_backend: Any) -> None:
    from mcpcli.errors import RPCError
    from toolsfile.util import FakeContext

    backend = make_backend(TOOLS.replace("task: required\n    run: {argv: [printf", "run: {argv: [printf"))
    with pytest.raises(RPCError) as info:
        await backend.call_tool("broken", {}, FakeContext())
    assert (info.value.code, info.value.rpc_message, info.value.data) == (-32001, "no backend", {"retry": True})
    bad = make_backend("version: 1\ntools:\n  - name: b\n    description: x\n"
                       "    run: {argv: [printf, '{\"error\": {\"code\": \"x\"}}']}\n    output: {format: mcp}\n")
    result = await bad.call_tool("b", {}, FakeContext())
    assert result["isError"] is True and "not a valid MCP error" in result["content"][0]["text"]


# -- a real peer: the official TypeScript SDK's experimental (2025-11-25) task client -------------

TS_TOOLS = """
version: 1
tools:
  - name: confirm
    description: asks, then answers
    task: optional
    run:
      shell: sh
      script: |
        ok=$(mcp script elicit "Go on?" --field confirm:boolean --key go --get confirm) || exit 1
        echo "answer: $ok"
  - name: fail
    description: fails
    task: required
    run: {shell: sh, script: "echo nope >&2; exit 3"}
  - name: hang
    description: hangs until cancelled
    task: required
    run: {shell: sh, script: "sleep 100 & wait", kill_grace: 0.5s}
"""


@pytest.mark.peer  # the TypeScript SDK installed with server-everything
def test_the_typescript_sdk_runs_2025_11_25_tasks_over_stdio(peers: Any, tools_file: Any) -> None:
    import json
    import subprocess
    import sys

    from helpers import CACHE, require

    sdk = CACHE / "npm/node_modules/@modelcontextprotocol/sdk"
    if not peers.node or not (sdk / "dist/esm/experimental/tasks/client.js").exists():
        require("the TypeScript SDK (installed with server-everything by scripts/install-peers)")
    script = Path(__file__).with_name("ts_tasks_client.mjs")
    done = subprocess.run([peers.node, str(script), str(sdk), sys.executable, str(tools_file(TS_TOOLS))],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["capabilities"]["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert out["tools"] == {"confirm": {"taskSupport": "optional"}, "fail": {"taskSupport": "required"},
                            "hang": {"taskSupport": "required"}}
    kinds = [m["type"] for m in out["confirm"]]
    assert kinds[0] == "taskCreated" and kinds[-1] == "result"
    assert {"type": "taskStatus", "status": "input_required"} in out["confirm"]
    result = out["confirm"][-1]["result"]
    assert result["content"] == [{"type": "text", "text": "answer: true\n"}]
    task_id = result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
    [asked] = out["elicited"]
    assert asked["message"] == "Go on?"
    assert asked["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    assert out["fail"][-1]["result"]["isError"] is True
    assert out["cancelled"]["status"] == "cancelled" and out["cancelled"]["ttl"] == 60000
    assert out["listed"] == ["cancelled", "completed", "completed"]


async def test_tasks_stay_reachable_after_a_reload_removes_task_support(make_backend: Any, tmp_path: Path) -> None:
    backend = make_backend(TOOLS)
    async with serving(backend) as s:
        created = await req(s, "tools/call", {"name": "confirm", "arguments": {}})
        await until(s, created["taskId"], "input_required")
        (tmp_path / "tools.yaml").write_text("version: 1\ntools:\n  - {name: a, description: x, mock: {text: a}}\n")
        assert backend.reload()
        assert "extensions" not in (await req(s, "server/discover", {}))["capabilities"]
        await req(s, "tasks/update", {"taskId": created["taskId"],
                                      "inputResponses": {"go": {"action": "accept", "content": {"ok": True}}}})
        done = await until(s, created["taskId"], "completed")
        assert done["result"]["content"] == [{"type": "text", "text": "answer: true\n"}]


async def test_stopping_the_server_ends_running_tasks(make_backend: Any, tmp_path: Path) -> None:
    backend = make_backend(TOOLS)
    async with serving(backend) as s:
        await req(s, "tools/call", {"name": "hang", "arguments": {}})
        pgid_file = tmp_path / "pgid"
        await wait_until_async(lambda: pgid_file.exists() and pgid_file.read_text().strip(), what="the tool's pgid")
        pgid = int(pgid_file.read_text())
        assert group_alive(pgid)
    await wait_until_async(lambda: not group_alive(pgid), 5, what="the group to end")
