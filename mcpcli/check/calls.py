"""Calling the tools it is safe to call, and checking what they return.

Side effects are the server author's business, so `mcp check` calls a tool only
when the server says it is read-only (`annotations.readOnlyHint: true`) and it
needs no arguments (nothing `required`); tools that must run as tasks are left
alone. Each call's result is checked against the negotiated revision, and its
`structuredContent` against the tool's `outputSchema`: a server that gives an
output schema must return structured results that conform to it.
"""

from __future__ import annotations

from typing import Any

import anyio

from mcpcli.check.protocol_checks import ConnectionLost, Probe
from mcpcli.errors import (
    McpCliError,
    ProtocolError,
    RequestTimeout,
    RPCError,
    TransportError,
    ValidationError,
)

__all__ = ["callable_tools", "check_calls"]

JSON = dict[str, Any]


def callable_tools(tools: list[Any]) -> list[JSON]:
    """The tools `mcp check` may call: read-only, needing no arguments, not task-only."""
    chosen = []
    for tool in tools:
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        hints = tool.get("annotations")
        if not isinstance(hints, dict) or hints.get("readOnlyHint") is not True:
            continue
        schema = tool.get("inputSchema")
        if not isinstance(schema, dict) or schema.get("required"):
            continue
        execution = tool.get("execution")
        if isinstance(execution, dict) and execution.get("taskSupport") == "required":
            continue
        chosen.append(tool)
    return chosen


async def check_calls(probe: Probe, tools: list[Any]) -> None:
    """Call every callable tool (a few at a time) and check each result."""
    chosen = callable_tools(tools)
    limiter = anyio.CapacityLimiter(max(1, probe.options.concurrency))
    lost: list[ConnectionLost] = []

    async def one(tool: JSON) -> None:
        async with limiter:
            if lost:
                return
            try:
                await _call(probe, tool)
            except ConnectionLost as exc:
                lost.append(exc)

    async with anyio.create_task_group() as tg:
        for tool in chosen:
            tg.start_soon(one, tool)
    if lost:
        raise lost[0]


async def _call(probe: Probe, tool: JSON) -> None:
    name = tool["name"]
    check_id, title = f"call:{name}", f"call {name}"
    report = probe.report
    report.check(check_id, title)
    try:
        result = await probe.client.call_tool(name, {})
    except RPCError as exc:
        report.add(check_id, "warning", "call-failed",
                   f"answered with a JSON-RPC error: {exc.message} (a read-only tool that needs no arguments "
                   "should work, or say why in an isError result)", name)
        return
    except RequestTimeout as exc:
        report.add(check_id, "error", "timeout", exc.message, name)
        return
    except ProtocolError as exc:
        report.add(check_id, "error", "result-shape", f"the answer cannot be read: {exc.message}", name)
        return
    except TransportError as exc:
        report.add(check_id, "error", "connection-lost", f"during the call: {exc.message}", name)
        raise ConnectionLost(str(exc)) from None
    except McpCliError as exc:  # e.g. a task that failed
        report.add(check_id, "warning", "call-failed", exc.message, name)
        return
    obj = probe.shapes.call_result(result, name)
    probe.flush(check_id, title)
    if obj is None or obj.get("isError") is True:
        return
    _structured(probe, check_id, tool, obj)


def _structured(probe: Probe, check_id: str, tool: JSON, result: JSON) -> None:
    name = tool["name"]
    schema = tool.get("outputSchema")
    if not isinstance(schema, dict):
        return
    if "structuredContent" not in result:
        probe.report.add(check_id, "error", "structured-content",
                         "the tool has an outputSchema but its result has no structuredContent (servers must "
                         "return structured results that conform to it)", name)
        return
    from mcpcli.validation import compile_schema, errors

    try:
        validator = compile_schema(schema, what="the outputSchema")
    except ValidationError:
        return  # the lint reports the schema itself
    problems = errors(validator, result["structuredContent"])
    if problems:
        shown = "; ".join(f"{path or 'the value'}: {message}" for path, message in problems[:3])
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        probe.report.add(check_id, "error", "structured-content",
                         f"structuredContent does not match the outputSchema: {shown}{more}", name)
