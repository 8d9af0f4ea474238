"""Drive our server with the official Python SDK client (run by the SDK's own interpreter).

    sdk_client_driver.py TARGET MODE
TARGET is a JSON argv (stdio), an http:// URL (Streamable HTTP), or sse:URL (the
2024-11-05 HTTP+SSE transport); MODE is "legacy" (initialize handshake) or "auto"
(server/discover first: 2026-07-28). Prints one JSON object
with what the SDK saw; the test asserts on it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


async def elicit(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def sample(context: Any, params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="4"), model="sdk-test"
    )


async def roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///sdk/root", name="root")])


def texts(result: Any) -> list[str]:
    return [c.text for c in result.content if getattr(c, "type", None) == "text"]


async def main() -> None:
    target, mode = sys.argv[1], sys.argv[2]
    if target.startswith("sse:"):
        from mcp.client.sse import sse_client

        server: Any = sse_client(target[4:])
    elif target.startswith("http"):
        server = target
    else:
        argv = json.loads(target)
        server = StdioServerParameters(command=argv[0], args=argv[1:])
    out: dict[str, Any] = {}
    progress: list[Any] = []
    logs: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.level)

    async with Client(
        server, mode=mode, elicitation_callback=elicit, sampling_callback=sample,
        list_roots_callback=roots, logging_callback=on_log, log_level="warning",
        read_timeout_seconds=30, cache=None,
    ) as client:
        out["protocol"] = client.protocol_version
        out["server"] = client.server_info.name if client.server_info else None
        tools = await client.list_tools()
        out["tools"] = len(tools.tools)
        out["echo"] = texts(await client.call_tool("echo", {"text": "hello; $(id)"}))
        out["progress_result"] = texts(await client.call_tool("progress", {}, progress_callback=on_progress))
        out["progress"] = progress
        out["elicit"] = texts(await client.call_tool("elicit", {}))
        out["sample"] = texts(await client.call_tool("sample", {}))
        out["roots"] = texts(await client.call_tool("roots", {}))
        out["two_questions"] = texts(await client.call_tool("two_questions", {}))
        if mode == "legacy":
            await client.set_logging_level("warning")
        await client.call_tool("log", {})
        out["logs"] = logs
        failed = await client.call_tool("fail", {})
        out["fail"] = {"isError": failed.is_error, "text": texts(failed)}
        try:
            await client.call_tool("no_such_tool", {})
            out["unknown_tool"] = None
        except MCPError as exc:
            out["unknown_tool"] = exc.error.code
        resource = await client.read_resource("mem://greeting")
        out["resource"] = [c.text for c in resource.contents if hasattr(c, "text")]
        try:
            await client.read_resource("mem://missing")
            out["missing"] = None
        except MCPError as exc:
            out["missing"] = exc.error.code
        prompt = await client.get_prompt("greet", {"who": "Ada"})
        out["prompt"] = [m.content.text for m in prompt.messages if m.content.type == "text"]
        completion = await client.complete(
            types.PromptReference(type="ref/prompt", name="greet"), {"name": "who", "value": "al"}
        )
        out["completion"] = completion.completion.values
        if mode == "legacy":
            await client.send_ping()
            await client.subscribe_resource("mem://greeting")
            await client.unsubscribe_resource("mem://greeting")
            out["subscribed"] = True
        else:
            async with client.listen(tools_list_changed=True) as sub:
                out["honored"] = bool(sub.honored.tools_list_changed) if sub.honored else None
                await client.call_tool("change", {"text": "tools"})
                with anyio.fail_after(10):
                    async for event in sub:
                        out["event"] = type(event).__name__
                        break
    print(json.dumps(out))


anyio.run(main)
