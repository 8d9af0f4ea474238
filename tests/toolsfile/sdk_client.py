"""Drive a served tools.yaml with the official Python SDK client (run by the SDK's own Python).

    sdk_client.py TARGET MODE
TARGET is a JSON argv (stdio) or an http:// URL; MODE is "legacy" or "auto" (2026-07-28 first).
Prints one JSON object with what the SDK saw.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters


async def elicit(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def main() -> None:
    target, mode = sys.argv[1], sys.argv[2]
    if target.startswith("http"):
        server: Any = target
    else:
        argv = json.loads(target)
        server = StdioServerParameters(command=argv[0], args=argv[1:])
    progress: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append([value, total, message])

    out: dict[str, Any] = {}
    async with Client(server, mode=mode, elicitation_callback=elicit, read_timeout_seconds=30) as client:
        out["protocol"] = getattr(client, "protocol_version", None)
        tools = await client.list_tools()
        out["tools"] = [t.name for t in tools.tools]
        result = await client.call_tool("echo", {"text": "hello; $(id)"})
        out["echo"] = [c.text for c in result.content if c.type == "text"]
        result = await client.call_tool("steps", {}, progress_callback=on_progress)
        out["steps"] = [c.text for c in result.content if c.type == "text"]
        out["progress"] = progress
        result = await client.call_tool("ask", {})
        out["ask"] = [c.text for c in result.content if c.type == "text"]
        result = await client.call_tool("echo", {"text": 5})
        out["invalid"] = {"isError": result.is_error, "text": [c.text for c in result.content if c.type == "text"]}
        resource = await client.read_resource("mem://hello")
        out["resource"] = [c.text for c in resource.contents if hasattr(c, "text")]
        prompt = await client.get_prompt("hi", {"who": "Ada"})
        out["prompt"] = [m.content.text for m in prompt.messages if m.content.type == "text"]
    print(json.dumps(out))


anyio.run(main)
