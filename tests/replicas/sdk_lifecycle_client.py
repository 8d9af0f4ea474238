"""A task's whole life across two replicas, driven by the official Python SDK client (its own Python).

    sdk_lifecycle_client.py URL_A URL_B TOKEN
Every request opens a 2025-11-25 session (the SDK's task API is of that revision) on the other
replica than the request before:
- `confirm` is created through A (tools/call with `task`: sent through the session's JSON-RPC
  dispatcher, since the SDK's `send_request` reads every tools/call answer as a CallToolResult), polled through B (`tasks/get`) until
  it asks; its input request is answered through B (the revision's way: `tasks/result` relays
  the elicitation to the SDK's elicitation callback), and its result is fetched through A;
- `hang` is created through B, cancelled through A (`tasks/cancel`), and polled through B
  until it ends.
Polls are bounded (a deadline, a short pause between polls). Prints one JSON object of what
the SDK saw; the test asserts on it.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

DEADLINE = 60.0


def call(url: str, token: str, **kwargs: Any) -> Any:
    """A legacy SDK Client on `url` (a new session: the request goes to that replica only)."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    return http, Client(streamable_http_client(url, http_client=http), mode="legacy", **kwargs)


async def create(url: str, token: str, name: str) -> Any:
    """tools/call with `task` on `url`. The session declares elicitation (a callback), so the
    task may ask; the question goes to whoever collects it (`tasks/result`), not to this one."""

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ErrorData:
        return types.ErrorData(code=-32603, message="the creating session was asked")

    http, client = call(url, token, elicitation_callback=elicit)
    async with http, client:
        # The SDK validates every tools/call answer as a CallToolResult (it has no client side of
        # task creation), so this one request goes through the session's own JSON-RPC dispatcher.
        params = types.CallToolRequestParams(name=name, arguments={}, task=types.TaskMetadata(ttl=60_000))
        raw = await client.session._dispatcher.send_raw_request(
            "tools/call", params.model_dump(by_alias=True, mode="json", exclude_none=True), {})
        return types.CreateTaskResult.model_validate(raw, by_name=False).task


async def get(url: str, token: str, task_id: str) -> Any:
    http, client = call(url, token)
    async with http, client:
        return await client.session.send_request(
            types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)), types.GetTaskResult)


async def poll(url: str, token: str, task_id: str, wanted: set[str]) -> Any:
    """`tasks/get` on `url` until the task's status is one of `wanted` (bounded)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        task = await get(url, token, task_id)
        if task.status in wanted:
            return task
        if time.monotonic() > deadline:
            raise SystemExit(f"task {task_id} is still {task.status}, wanted {sorted(wanted)}")
        await anyio.sleep(0.1)


async def result(url: str, token: str, task_id: str, asked: list[dict[str, Any]],
                 refuse: bool = False) -> dict[str, Any]:
    """`tasks/result` on `url`: answers the task's elicitations (recorded in `asked`; with
    `refuse`, a JSON-RPC error instead of an answer), then its text and isError."""

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        meta = params.meta if isinstance(params.meta, dict) else (
            params.meta.model_dump(by_alias=True) if params.meta is not None else {})
        asked.append({"message": params.message, "meta": meta})
        if refuse:
            return types.ErrorData(code=-32600, message="this client will not ask anyone")
        return types.ElicitResult(action="accept", content={"ok": True})

    http, client = call(url, token, elicitation_callback=elicit)
    async with http, client:
        answer = await client.session.send_request(
            types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
            types.CallToolResult)
        return {"text": [c.text for c in answer.content if c.type == "text"], "isError": answer.is_error}


async def main() -> None:
    a, b, token = sys.argv[1:]
    out: dict[str, Any] = {}
    # confirm: create via A, get via B, input via B, result via A
    task = await create(a, token, "confirm")
    out["confirm_created"] = task.status
    waiting = await poll(b, token, task.task_id, {"input_required", "completed", "failed", "cancelled"})
    out["confirm_seen_by_b"] = waiting.status
    asked: list[dict[str, Any]] = []
    out["confirm_result_via_b"] = await result(b, token, task.task_id, asked)
    out["confirm_asked_via_b"] = asked
    out["confirm_status_via_a"] = (await get(a, token, task.task_id)).status
    out["confirm_result_via_a"] = await result(a, token, task.task_id, [])
    # refused: create via A, input refused via B (the SDK's callback answers an error), result via A
    refused = await create(a, token, "confirm")
    await poll(b, token, refused.task_id, {"input_required", "completed", "failed", "cancelled"})
    refusals: list[dict[str, Any]] = []
    out["refused_result_via_b"] = await result(b, token, refused.task_id, refusals, refuse=True)
    out["refused_asked_via_b"] = len(refusals)
    out["refused_status_via_a"] = (await get(a, token, refused.task_id)).status
    # hang: create via B, cancel via A, seen ending via B
    hang = await create(b, token, "hang")
    out["hang_id"] = hang.task_id
    out["hang_seen_by_a"] = (await get(a, token, hang.task_id)).status
    http, client = call(a, token)
    async with http, client:
        cancelled = await client.session.send_request(
            types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=hang.task_id)),
            types.CancelTaskResult)
    out["hang_cancel_answer"] = cancelled.status
    out["hang_seen_by_b"] = (await poll(b, token, hang.task_id, {"cancelled", "completed", "failed"})).status
    print(json.dumps(out))


anyio.run(main)
