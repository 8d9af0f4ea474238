"""Ask `mcp serve` about existing tasks with the official Python SDK client (its own Python).

    sdk_tasks_client.py URL TOKEN TASK_ID...
A 2025-11-25 session (the SDK's task methods are of that revision): `tasks/get`
and, for a finished task, `tasks/result`. Prints one JSON object by task id.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    url, token, *task_ids = sys.argv[1:]
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    out: dict[str, Any] = {}
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        for task_id in task_ids:
            seen: dict[str, Any] = {}
            task = await client.session.send_request(
                types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)), types.GetTaskResult)
            seen["status"], seen["statusMessage"] = task.status, task.status_message
            if task.status in ("completed", "failed"):
                try:
                    result = await client.session.send_request(
                        types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
                        types.CallToolResult)
                    seen["text"] = [c.text for c in result.content if c.type == "text"]
                except Exception as exc:  # the failed task's JSON-RPC error
                    seen["error"] = str(exc)
            out[task_id] = seen
    print(json.dumps(out))


anyio.run(main)
