"""Reloading: valid edits swap the snapshot and announce changes; invalid ones keep the last good one."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import mcp_in, wait_until, wait_until_async

from mcpcli.errors import RPCError
from toolsfile.util import FakeContext, text_of

pytestmark = pytest.mark.anyio

V1 = """version: 1
tools:
  - {name: a, description: first, mock: {text: one}}
"""
V2 = """version: 1
tools:
  - {name: b, description: second, mock: {text: two}}
"""


def write_atomically(path: Path, text: str) -> None:
    """Save like an editor: write a temp file and rename it over the original."""
    tmp = path.with_name(path.name + ".swp")
    tmp.write_text(text)
    os.replace(tmp, path)


async def test_reload_swaps_and_reports_what_changed(make_backend: Any, tmp_path: Path) -> None:
    logs: list[str] = []
    backend = make_backend(V1, log=logs.append)
    changes: list[tuple[str, Any]] = []
    backend.set_change_listener(lambda kind, uri: changes.append((kind, uri)))
    path = tmp_path / "tools.yaml"

    path.write_text(V1 + "# a comment only\n")
    assert backend.reload() is False
    assert changes == []

    path.write_text(V2)
    assert backend.reload() is True
    assert changes == [("tools", None)]
    assert [t["name"] for t in await backend.list_tools()] == ["b"]
    with pytest.raises(RPCError) as info:
        await backend.call_tool("a", {}, FakeContext())
    assert info.value.code == -32602

    path.write_text(V2.replace("mock: {text: two}", "mock: {text: two}, timout: 3"))
    assert backend.reload() is False
    assert [t["name"] for t in await backend.list_tools()] == ["b"]
    assert any("reload failed" in line for line in logs)
    assert any(f"{path}:3:" in line and "timout" in line for line in logs)


async def test_a_call_in_flight_finishes_with_its_snapshot(make_backend: Any, tmp_path: Path) -> None:
    first = """version: 1
tools:
  - name: slow
    description: old
    run: {shell: sh, script: "touch started; while [ ! -e go ]; do sleep 0.02; done; echo old"}
"""
    backend = make_backend(first)
    results: list[Any] = []

    async def call() -> None:
        results.append(await backend.call_tool("slow", {}, FakeContext()))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await wait_until_async(lambda: (tmp_path / "started").exists())
        (tmp_path / "tools.yaml").write_text(first.replace("echo old", "echo new"))
        assert backend.reload() is False  # same listing: no announcement
        (tmp_path / "go").write_text("")
    assert text_of(results[0]) == "old\n"
    assert text_of(await backend.call_tool("slow", {}, FakeContext())) == "new\n"


async def test_watch_sees_atomic_saves_and_recreated_files(make_backend: Any, tmp_path: Path) -> None:
    logs: list[str] = []
    backend = make_backend(V1, log=logs.append)
    changes: list[str] = []
    backend.set_change_listener(lambda kind, uri: changes.append(kind))
    path = tmp_path / "tools.yaml"
    async with anyio.create_task_group() as tg:
        tg.start_soon(backend.watch, 0.05)
        write_atomically(path, V2)
        await wait_until_async(lambda: changes == ["tools"])
        path.unlink()
        await wait_until_async(lambda: any("disappeared" in line for line in logs))
        path.write_text(V1.replace("first", "third") + "prompts:\n  - {name: p, messages: [{text: hi}]}\n")
        await wait_until_async(lambda: changes == ["tools", "tools", "prompts"])
        tg.cancel_scope.cancel()
    assert [t["description"] for t in await backend.list_tools()] == ["third"]


async def test_subscribed_file_resources_announce_updates(make_backend: Any, tmp_path: Path) -> None:
    (tmp_path / "state.txt").write_text("v1")
    backend = make_backend("version: 1\nresources:\n  - {uri: 'mem://state', name: s, file: state.txt, subscribe: true}\n")
    updates: list[tuple[str, Any]] = []
    backend.set_change_listener(lambda kind, uri: updates.append((kind, uri)))
    async with anyio.create_task_group() as tg:
        tg.start_soon(backend.watch, 0.05)
        (tmp_path / "state.txt").write_text("version two")
        await wait_until_async(lambda: ("resource", "mem://state") in updates)
        tg.cancel_scope.cancel()


def test_watch_refuses_a_world_writable_file(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    path.write_text(V1)
    path.chmod(0o666)
    result = mcp_in("serve", "--watch", str(path))
    assert result.code == 2
    assert "writable by every user" in result.stderr


@pytest.mark.slow
def test_mcp_serve_watch_over_stdio(tmp_path: Path) -> None:
    """End to end: --watch announces list_changed; a broken edit is reported and the old tools stay."""
    import json
    import selectors
    import subprocess
    import sys

    path = tmp_path / "tools.yaml"
    path.write_text(V1)
    log = tmp_path / "stderr.log"
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "mcpcli", "serve", "--watch", "--quiet", str(path)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    assert proc.stdin is not None
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    buffer = b""

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    def receive(predicate: Any, timeout: float = 15.0) -> dict[str, Any]:
        nonlocal buffer
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                if predicate(message):
                    return dict(message)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("no matching message in time")
            if selector.select(remaining):
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    raise AssertionError("server closed stdout")
                buffer += chunk

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        init = receive(lambda m: m.get("id") == 1)
        assert init["result"]["capabilities"]["tools"]["listChanged"] is True
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert [t["name"] for t in receive(lambda m: m.get("id") == 2)["result"]["tools"]] == ["a"]
        write_atomically(path, V2)
        receive(lambda m: m.get("method") == "notifications/tools/list_changed")
        write_atomically(path, V2 + "  - {name: c, description: x, mock: {text: c}, oops: 1}\n")
        wait_until(lambda: f"{path}:4:" in log.read_text(), what="the reload error in the log")
        assert "reload failed; still serving the previous version" in log.read_text()
        assert "unknown key 'oops'" in log.read_text()
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        assert [t["name"] for t in receive(lambda m: m.get("id") == 3)["result"]["tools"]] == ["b"]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
        selector.close()
