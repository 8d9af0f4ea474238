"""Build a `Tool` from one entry of `tools:`: its parameters, command or mock, and output.

A tool runs a command (`run:`) or returns a canned answer (`mock:`), never
both; its arguments are declared with `params:` or given whole as an
`input_schema:` (read with `stdin: json`); `output:` says how stdout, stderr
and any files become the CallToolResult; `task:` whether calls may run as
tasks, and when they become one.
"""

from __future__ import annotations

from mcpcli.server.backend import TaskPolicy
from mcpcli.toolsfile.build_context import BuildContext
from mcpcli.toolsfile.build_params import build_params
from mcpcli.toolsfile.build_run import build_run
from mcpcli.toolsfile.model import (
    DEFAULT_MAX_BYTES,
    DEFAULT_TASK_AFTER,
    DEFAULT_TASK_POLL,
    DEFAULT_TASK_TTL,
    JSON,
    FileSpec,
    OutputSpec,
    Param,
    RunSpec,
    Tool,
)
from mcpcli.toolsfile.yamlstrict import Path

__all__ = ["build_output", "build_task", "build_tool"]


def build_tool(ctx: BuildContext, item: JSON, path: Path) -> Tool | None:
    name = item["name"]
    where = f"tool {name!r}"
    run_raw = item.get("run")
    mock = item.get("mock")
    if (run_raw is None) == (mock is None):
        ctx.fail(path, "give exactly one of run: (a command) or mock: (a canned answer)")
        return None
    cwd = ctx.resolve_dir((run_raw or {}).get("cwd", ctx.defaults.get("cwd", ".")))
    raw_schema = item.get("input_schema")
    # A bad input_schema is reported, and the rest of the tool is still checked.
    schema_ok = raw_schema is None or _check_input_schema(ctx, item, path, raw_schema, run_raw)
    declared = item.get("params") or {}
    params = build_params(ctx, declared, (*path, "params"), cwd)
    # A parameter with a problem is still a name its placeholders may use: the command
    # is checked too, and the tool is dropped at the end.
    failed = set(declared) - set(params)
    run = None
    if run_raw is not None:
        run = build_run(ctx, run_raw, (*path, "run"), params, where=where, failed=failed)
        if run is None:
            return None
    if mock is not None and not _check_mock(ctx, mock, path, params, failed):
        return None
    if failed:
        return None
    output = build_output(ctx, item.get("output") or {}, (*path, "output"))
    task_ok, task = build_task(ctx, item, path, run)
    if output is None or not schema_ok or not task_ok:
        return None
    # With output.files, MCP_OUTPUT_DIR is always exported, whether or not the command names it.
    return Tool(
        name=name,
        description=item["description"],
        params=params,
        run=run,
        mock=mock,
        output=output,
        title=item.get("title"),
        annotations=item.get("annotations"),
        icons=item.get("icons"),
        meta=item.get("_meta"),
        requires=tuple(item.get("requires", ())),
        raw_input_schema=raw_schema,
        task=task,
    )


def build_task(ctx: BuildContext, item: JSON, path: Path,
               run: RunSpec | None) -> tuple[bool, TaskPolicy | None]:
    """The tool's `task:` (or the default's): whether it is valid, and the policy (None: never)."""
    if "task" in item:
        raw, where = item["task"], (*path, "task")
    else:
        raw, where = ctx.defaults.get("task", "forbidden"), ("defaults", "task")
    setting: JSON = {"mode": raw} if isinstance(raw, str) else raw
    mode = setting["mode"]
    after = ctx.duration(setting, "after", where, DEFAULT_TASK_AFTER.get(mode, 0.0))
    ttl = ctx.duration(setting, "ttl", where, DEFAULT_TASK_TTL)
    poll = ctx.duration(setting, "poll_interval", where, DEFAULT_TASK_POLL)
    if mode == "forbidden":
        return True, None
    if ttl <= 0 or poll <= 0:
        ctx.fail(where, "ttl and poll_interval must be more than 0")
        return False, None
    timeout = min(run.timeout, ctx.limits.max_timeout) if run is not None else 0.0
    if ttl < timeout:
        ctx.fail(where, f"the task's ttl ({ttl:g}s) is shorter than the tool's timeout ({timeout:g}s)",
                 "a task would be dropped while it still runs: raise ttl or lower the timeout")
        return False, None
    return True, TaskPolicy(support=mode, after=after, ttl=ttl, poll_interval=poll)


def _check_input_schema(ctx: BuildContext, item: JSON, path: Path, raw_schema: JSON,
                        run_raw: JSON | None) -> bool:
    """A complete `input_schema:` (instead of params) must be an object schema read from stdin."""
    if "params" in item:
        ctx.fail((*path, "input_schema"), "give params or input_schema, not both")
        return False
    if raw_schema.get("type") != "object":
        ctx.fail((*path, "input_schema"), "the input schema must have type: object")
        return False
    if ctx.schema(raw_schema, (*path, "input_schema"), "the tool's inputSchema") is None:
        return False
    if run_raw is not None and run_raw.get("stdin") != "json":
        ctx.fail((*path, "input_schema"), "a tool with input_schema reads its arguments with stdin: json")
        return False
    return True


def _check_mock(ctx: BuildContext, mock: JSON, path: Path, params: dict[str, Param],
                failed: set[str]) -> bool:
    """A `mock:` answer: exactly one kind, and its text templates name declared parameters."""
    kinds = [k for k in ("text", "json", "content", "error") if k in mock]
    if len(kinds) != 1:
        ctx.fail((*path, "mock"), "give exactly one of text, json, content or error")
        return False
    for key in ("text", "error"):
        known = set(params) | failed | {"mcp.tool"}
        if key in mock and ctx.template(mock[key], (*path, "mock", key), known) is None:
            return False
    return True


def build_output(ctx: BuildContext, raw: JSON, path: Path) -> OutputSpec | None:
    d = ctx.defaults
    fmt = raw.get("format", "text")
    mime = raw.get("mime_type")
    if fmt in ("image", "audio", "blob") and not mime:
        ctx.fail(path, f"format {fmt} needs a mime_type (e.g. image/png)")
        return None
    schema = raw.get("schema")
    if schema is not None:
        if fmt != "json":
            ctx.fail((*path, "schema"), "schema (the outputSchema) goes with format: json")
            return None
        if ctx.schema(schema, (*path, "schema"), "the tool's outputSchema") is None:
            return None
        if schema.get("type") != "object":
            ctx.fail((*path, "schema"), "the output schema must describe an object (type: object)",
                     "wrap other values in an object")
            return None
    max_bytes = ctx.size(raw, "max_bytes", path, ctx.size(d, "max_bytes", ("defaults",), DEFAULT_MAX_BYTES))
    files = []
    for i, spec in enumerate(raw.get("files") or []):
        files.append(FileSpec(
            glob=spec["glob"],
            mime_type=spec.get("mime_type"),
            as_=spec.get("as", "auto"),
            max_bytes=ctx.size(spec, "max_bytes", (*path, "files", i), max_bytes),
        ))
    return OutputSpec(
        format=fmt,
        mime_type=mime,
        schema=schema,
        stderr=raw.get("stderr", d.get("stderr", "on_error")),
        max_bytes=max_bytes,
        on_overflow=raw.get("on_overflow", "truncate"),
        files=tuple(files),
    )
