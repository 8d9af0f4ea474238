"""Drive a replayed recording with the official Python SDK client (run by the SDK's own Python).

    sdk_replay_client.py ARGV_JSON
Lists the tools, calls echo with message "hi" and a tool the recording never saw;
prints one JSON object with what the SDK got.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters


async def main() -> None:
    argv = json.loads(sys.argv[1])
    server = StdioServerParameters(command=argv[0], args=argv[1:])
    out: dict[str, Any] = {}
    async with Client(server, mode="legacy", read_timeout_seconds=30) as client:
        out["protocol"] = getattr(client, "protocol_version", None)
        tools = await client.list_tools()
        out["tools"] = [t.name for t in tools.tools]
        result = await client.call_tool("echo", {"message": "hi"})
        out["echo"] = [c.text for c in result.content if c.type == "text"]
        try:
            await client.call_tool("echo", {"message": "never recorded"})
        except Exception as exc:  # the SDK raises the JSON-RPC error
            out["unmatched"] = str(exc)
    print(json.dumps(out))


anyio.run(main)
