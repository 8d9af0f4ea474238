"""Drive server-everything through the gateway with the official Python SDK client (run by
the SDK's own Python).

    sdk_gateway_client.py TARGET MODE
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
    return types.ElicitResult(action="accept", content={"name": "Ada", "color": "red", "check": True})


def texts(result: Any) -> list[str]:
    return [c.text for c in result.content if c.type == "text"]


async def main() -> None:
    target, mode = sys.argv[1], sys.argv[2]
    server: Any = target if target.startswith("http") else StdioServerParameters(
        command=json.loads(target)[0], args=json.loads(target)[1:])
    out: dict[str, Any] = {}
    async with Client(server, mode=mode, elicitation_callback=elicit, read_timeout_seconds=30) as client:
        out["protocol"] = getattr(client, "protocol_version", None)
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        out["echo"] = texts(await client.call_tool("echo", {"message": "hello"}))
        out["sum"] = texts(await client.call_tool("get-sum", {"a": 2, "b": 3}))
        structured = await client.call_tool("get-structured-content", {"location": "Chicago"})
        out["structured"] = structured.structured_content
        out["elicit"] = texts(await client.call_tool("trigger-elicitation-request", {}))
        resource = await client.read_resource("demo://resource/static/document/features.md")
        out["resource"] = [c.uri for c in resource.contents]
        prompt = await client.get_prompt("args-prompt", {"city": "Paris"})
        out["prompt"] = [m.content.text for m in prompt.messages if m.content.type == "text"]
    print(json.dumps(out, default=str))


anyio.run(main)
