"""`tools/call` on a tools.yaml tool: check the arguments, then mock or run, then the result.

A tool the client lacks the capabilities for is refused (-32021 in the modern
era, an error result before). Invalid arguments, a busy server, a command that
cannot start, and every failure of the run are `isError` results, never
protocol errors. Each call leaves one audit line.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio

from mcpcli.core.jsonrpc import INVALID_PARAMS
from mcpcli.errors import RPCError
from mcpcli.server.backend import CallContext, InputDeclined
from mcpcli.toolsfile.arguments import ArgumentProblems, check_arguments
from mcpcli.toolsfile.contents import render_text
from mcpcli.toolsfile.model import JSON, RunSpec, Tool, ToolsFile
from mcpcli.toolsfile.process import RunResult, SpawnError, signal_name
from mcpcli.toolsfile.results import Masker, error_result, tool_result
from mcpcli.toolsfile.runner import Runner

__all__ = ["call_tool", "missing_capabilities"]

Audit = Callable[[str], None]


async def call_tool(runner: Runner, config: ToolsFile, name: str, arguments: JSON, ctx: CallContext,
                    audit: Audit) -> JSON:
    """The CallToolResult of tool `name` in this snapshot of the file."""
    tool = config.tools.get(name)
    if tool is None:
        raise RPCError(INVALID_PARAMS, f"Unknown tool: {name}", {"name": name})
    missing = missing_capabilities(tool.requires, ctx)
    if missing:
        if ctx.era == "modern":
            # The runtime answers -32021 MissingRequiredClientCapability (HTTP 400).
            raise InputDeclined(f"tool {name} needs {', '.join(missing)}", capabilities=missing)
        return error_result(f"this tool needs a client that supports {', '.join(missing)}")
    started = time.monotonic()
    cwd = tool.run.cwd if tool.run is not None else config.base_dir
    try:
        values = check_arguments(tool.params, tool.input_schema, lambda: _validator(tool), arguments, cwd=cwd,
                                 passthrough=tool.raw_input_schema is not None)
    except ArgumentProblems as exc:
        audit(f"call tool={name} status=invalid-arguments")
        return error_result(exc.text())
    mask = Masker(config.secret_values())
    if tool.mock is not None:
        return _mock(tool, values, mask)
    assert tool.run is not None
    return await _run_tool(runner, config, tool, tool.run, values, ctx, mask, started, audit)


def missing_capabilities(requires: tuple[str, ...], ctx: CallContext) -> list[str]:
    """The client capabilities in `requires` that the client did not declare."""
    caps = ctx.client_capabilities or {}
    return [cap for cap in requires if not isinstance(caps.get(cap), dict)]


def _mock(tool: Tool, values: JSON, mask: Masker) -> JSON:
    mock = tool.mock or {}
    scope = dict(values)
    scope["mcp.tool"] = tool.name
    if "text" in mock:
        return {"content": [{"type": "text", "text": mask(render_text(mock["text"], scope))}]}
    if "error" in mock:
        return error_result(mask(render_text(mock["error"], scope)))
    if "content" in mock:
        return {"content": mask.json(list(mock["content"]))}
    value = mock["json"]
    structured = value if isinstance(value, dict) else {"result": value}
    return {"content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}],
            "structuredContent": structured}


async def _run_tool(runner: Runner, config: ToolsFile, tool: Tool, spec: RunSpec, values: JSON, ctx: CallContext,
                    mask: Masker, started: float, audit: Audit) -> JSON:
    async with AsyncExitStack() as stack:
        if not await runner.acquire(stack, config, f"tool:{tool.name}", spec.concurrency):
            audit(f"call tool={tool.name} status=busy")
            return error_result(
                f"server busy: too many calls running (waited {config.limits.queue_timeout:g}s); try again"
            )
        output_dir = None
        if tool.output.files or spec.uses_output_dir:
            output_dir = tempfile.mkdtemp(prefix="mcp-out-")
            stack.callback(shutil.rmtree, output_dir, True)
        try:
            run = await runner.spawn(config, spec, tool.params, values, ctx, mask, stack,
                                     tool_name=tool.name, output_dir=output_dir,
                                     max_bytes=tool.output.max_bytes,
                                     kill_on_overflow=tool.output.on_overflow == "kill")
        except ArgumentProblems as exc:
            audit(f"call tool={tool.name} status=invalid-arguments")
            return error_result(exc.text())
        except SpawnError as exc:
            audit(f"call tool={tool.name} status=spawn-failed")
            return error_result(mask(str(exc)))
        except anyio.get_cancelled_exc_class():
            audit(f"call tool={tool.name} status=cancelled duration={time.monotonic() - started:.3f}s")
            raise
        try:
            result = tool_result(
                run,
                tool.output,
                ok_codes=spec.ok_exit_codes,
                timeout=spec.timeout,
                mask=mask,
                structured_objects_only=ctx.era == "legacy",
                output_dir=output_dir,
                validate_output=_output_validator(tool),
            )
        except RPCError as exc:  # format mcp: the tool answered with a JSON-RPC error
            audit(f"call tool={tool.name} status=protocol-error code={exc.code} duration={run.duration:.3f}s")
            raise
        audit(_audit_line(tool, run, result))
        return result
    raise AssertionError("unreachable")  # pragma: no cover


def _audit_line(tool: Tool, run: RunResult, result: JSON) -> str:
    return (
        f"call tool={tool.name} status={'error' if result.get('isError') else 'ok'} "
        f"{_describe_end(run)} duration={run.duration:.3f}s "
        f"stdout={run.stdout_total}B stderr={run.stderr_total}B"
        + (" timeout" if run.timed_out else "")
        + (" truncated" if run.stdout_truncated or run.stderr_truncated else "")
    )


def _describe_end(run: RunResult) -> str:
    if run.timed_out:
        return "end=timeout"
    if run.signal is not None:
        return f"end={signal_name(run.signal)}"
    return f"exit={run.returncode}"


def _validator(tool: Tool) -> Any:
    cached = tool.__dict__.get("_validator")
    if cached is None:
        from mcpcli.validation import compile_schema

        cached = compile_schema(tool.input_schema)
        tool.__dict__["_validator"] = cached
    return cached


def _output_validator(tool: Tool) -> Callable[[Any], list[str]] | None:
    schema = tool.output_schema
    if schema is None:
        return None
    cached = tool.__dict__.get("_output_validator")
    if cached is None:
        from mcpcli.validation import compile_schema

        cached = compile_schema(schema)
        tool.__dict__["_output_validator"] = cached
    validator = cached

    def check(value: Any) -> list[str]:
        from mcpcli.validation import errors

        return [f"{path}: {msg}" if path else msg for path, msg in errors(validator, value)]

    return check
