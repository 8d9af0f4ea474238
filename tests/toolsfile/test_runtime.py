"""A tools.yaml served by the real runtime to our real client, in every protocol era (in-process)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from mcpcli.client import Client, ClientFeatures, ClientOptions
from mcpcli.errors import RPCError
from mcpcli.server import Server
from mcpcli.toolsfile.backend import ToolsBackend
from toolsfile.util import text_of

pytestmark = pytest.mark.anyio

ERAS = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]

TOOLS = """
version: 1
tools:
  - name: steps
    description: reports progress and logs through the side channel
    run:
      shell: sh
      script: |
        mcp script log info "starting"
        mcp script progress 1 2 -m half
        mcp script progress 2 2
        echo done
  - name: greet
    description: asks the user for a name, then the model for a greeting
    run:
      shell: sh
      script: |
        name=$(mcp script elicit "Your name?" --field name --content) || exit 1
        reply=$(mcp script sample "Greet $name" --max-tokens 20)
        roots=$(mcp script roots --uris)
        printf '%s|%s|%s' "$name" "$reply" "$roots"
  - name: needs_sampling
    description: declared as needing sampling
    requires: [sampling]
    mock: {text: ok}
  - name: typed
    description: validation
    params: {n: {type: integer, maximum: 3}}
    mock: {text: "n={{ n }}"}
"""


async def elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    text = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": f"Hello! ({text})"}, "model": "test"}


@asynccontextmanager
async def client_for(path: Path, version: str, *, features: ClientFeatures | None = None,
                     notes: list[tuple[str, Any]] | None = None, log_level: str | None = None
                     ) -> AsyncIterator[Client]:
    backend = ToolsBackend(path)
    server = Server(backend)
    options = ClientOptions(
        protocol=version,
        features=features or ClientFeatures(),
        log_level=log_level,
        on_notification=(lambda method, params: notes.append((method, params))) if notes is not None else None,
        timeout=30,
    )
    try:
        async with Client(server.transport(), options) as client:
            yield client
    finally:
        backend.close()


@pytest.mark.parametrize("version", ERAS)
async def test_progress_logs_and_results_in_every_era(tools_file: Any, version: str) -> None:
    path = tools_file(TOOLS)
    notes: list[tuple[str, Any]] = []
    progress: list[dict[str, Any]] = []
    async with client_for(path, version, notes=notes, log_level="debug") as client:
        assert client.protocol_version == version
        names = [t["name"] for t in (await client.list_tools())["tools"]]
        assert names == ["steps", "greet", "needs_sampling", "typed"]
        result = await client.call_tool("steps", {}, on_progress=progress.append)
        assert text_of(result) == "done\n"
    assert [(p["progress"], p.get("total")) for p in progress] == [(1, 2), (2, 2)]
    assert progress[0].get("message") == "half"
    logs = [p for m, p in notes if m == "notifications/message"]
    assert [(log["level"], log["data"], log.get("logger")) for log in logs] == [("info", "starting", "steps")]


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25", "2025-06-18"])
@pytest.mark.slow
async def test_elicitation_sampling_and_roots_from_a_script(tools_file: Any, version: str) -> None:
    path = tools_file(TOOLS)
    features = ClientFeatures(elicit=elicit, sample=sample, roots=[{"uri": "file:///work", "name": "w"}])
    async with client_for(path, version, features=features) as client:
        result = await client.call_tool("greet", {})
    assert not result.get("isError"), result
    assert text_of(result) == '{"name": "Ada"}|Hello! (Greet {"name": "Ada"})|file:///work'


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_protocol_errors_and_tool_errors(tools_file: Any, version: str) -> None:
    path = tools_file(TOOLS)
    async with client_for(path, version) as client:
        with pytest.raises(RPCError) as info:
            await client.call_tool("no_such_tool", {})
        assert info.value.code == -32602
        result = await client.call_tool("typed", {"n": 5})
        assert result["isError"] is True
        assert "n: 5 is greater than the maximum of 3" in text_of(result)
        result = await client.call_tool("typed", {"n": 1, "extra": True})
        assert "extra: is not a known field" in text_of(result)
        if version == "2026-07-28":
            with pytest.raises(RPCError) as info:
                await client.call_tool("needs_sampling", {})
            assert info.value.code == -32021
            assert info.value.data == {"requiredCapabilities": {"sampling": {}}}
        else:
            result = await client.call_tool("needs_sampling", {})
            assert result["isError"] is True
            assert "needs a client that supports sampling" in text_of(result)


async def test_reload_announces_list_changed_to_a_legacy_session(tools_file: Any) -> None:
    import anyio

    path = tools_file(TOOLS)
    backend = ToolsBackend(path)
    server = Server(backend)
    changed = anyio.Event()

    def on_note(method: str, params: Any) -> None:
        if method == "notifications/tools/list_changed":
            changed.set()

    options = ClientOptions(protocol="2025-11-25", on_notification=on_note, timeout=30)
    async with Client(server.transport(), options) as client:
        assert client.capabilities["tools"].get("listChanged") is True
        await client.list_tools()  # after notifications/initialized has been handled
        path.write_text(TOOLS.replace("- name: typed", "- name: typed2"))
        assert backend.reload() is True
        with anyio.fail_after(10):
            await changed.wait()
        names = [t["name"] for t in (await client.list_tools())["tools"]]
        assert names[-1] == "typed2"
    backend.close()
