"""Tables and detail views of what a server lists: tools, resources, prompts, tasks."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from mcpcli.args import required_names, type_label
from mcpcli.render._common import JSON, _duration, _first_line, _list, _obj, _s, _size, _table
from mcpcli.render.content import call_result
from mcpcli.text import json_safe

if TYPE_CHECKING:
    from rich.console import Console


def tool_signature(tool: JSON) -> str:
    """`name(city: string, days?: integer)`: a readable one-line signature."""
    schema: JSON = tool["inputSchema"] if isinstance(tool.get("inputSchema"), dict) else {}
    props: JSON = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    required = required_names(schema)
    params = [
        f"{name}{'' if name in required else '?'}: {type_label(prop)}" for name, prop in props.items()
    ]
    return f"{_tool_name(tool)}({', '.join(params)})"


def _short_signature(tool: JSON) -> str:
    """`name(city, days?)`: parameter names only, for one line of a listing."""
    schema = _obj(tool.get("inputSchema"))
    props = _obj(schema.get("properties"))
    required = required_names(schema)
    params = [name if name in required else f"{name}?" for name in props]
    return f"{_tool_name(tool)}({', '.join(params)})"


def _tool_name(tool: JSON) -> str:
    """A tool's name as listed; one that is not text, as JSON (`?` when there is none)."""
    name = tool.get("name", "?")
    return name if isinstance(name, str) else json.dumps(name, ensure_ascii=False)


def tools_table(console: Console, result: JSON) -> None:
    tools = [t for t in result.get("tools", []) if isinstance(t, dict)]
    if not tools:
        console.print("(no tools)")
        return
    # The tool column gets at most ~40% of the width; `mcp tools show` has the types.
    width = max(24, int(console.width * 0.4))
    table = _table("TOOL", "DESCRIPTION", one_line=True)
    names = [_s(_short_signature(tool), limit=width) for tool in tools]
    # The names stay whole; the one-line descriptions give way, cut with `…`.
    room = max(16, console.width - max(len(n) for n in names) - 2)
    for name, tool in zip(names, tools, strict=True):
        table.add_row(name, _s(_first_line(tool.get("description")), limit=min(room, 200)))
    console.print(table)


def tool_detail(console: Console, tool: JSON) -> None:
    from rich.syntax import Syntax

    console.print(_s(tool_signature(tool)), style="bold")
    if tool.get("title"):
        console.print(_s(tool["title"]))
    if tool.get("description"):
        console.print()
        console.print(_s(tool["description"], one_line=False))
    execution = _obj(tool.get("execution"))
    if execution.get("taskSupport") in ("required", "optional"):
        console.print()
        console.print(f"runs as a task: {_s(execution['taskSupport'])}")
    annotations = tool.get("annotations")
    if isinstance(annotations, dict):
        hints = [k.removesuffix("Hint") for k, v in annotations.items() if k.endswith("Hint") and v]
        if hints:
            console.print()
            console.print("hints: " + ", ".join(_s(h) for h in hints))
    for key in ("inputSchema", "outputSchema"):
        if isinstance(tool.get(key), dict):
            console.print()
            console.print(f"{key}:", style="bold")
            console.print(Syntax(json_safe(json.dumps(tool[key], indent=2, ensure_ascii=False)), "json",
                                 background_color="default", word_wrap=True))


def resources_table(console: Console, result: JSON) -> None:
    items = [r for r in result.get("resources", []) if isinstance(r, dict)]
    if not items:
        console.print("(no resources)")
        return
    table = _table("URI", "NAME", "TYPE", "DESCRIPTION")
    for res in items:
        mime = _s(res.get("mimeType") or "")
        if isinstance(res.get("size"), int):
            mime = f"{mime} {_size(res['size'])}".strip()
        table.add_row(_s(res.get("uri"), limit=100), _s(res.get("title") or res.get("name") or "", limit=40),
                      mime, _s(_first_line(res.get("description")), limit=160))
    console.print(table)


def templates_table(console: Console, result: JSON) -> None:
    items = [r for r in result.get("resourceTemplates", []) if isinstance(r, dict)]
    if not items:
        console.print("(no resource templates)")
        return
    table = _table("URI TEMPLATE", "NAME", "TYPE", "DESCRIPTION")
    for res in items:
        table.add_row(_s(res.get("uriTemplate"), limit=100),
                      _s(res.get("title") or res.get("name") or "", limit=40),
                      _s(res.get("mimeType") or ""), _s(_first_line(res.get("description")), limit=160))
    console.print(table)


def prompt_signature(prompt: JSON) -> str:
    """`name(code, style?)`: prompt arguments are strings, so no types."""
    args = [a for a in _list(prompt.get("arguments")) if isinstance(a, dict)]
    names = [f"{a.get('name', '?')}{'' if a.get('required') else '?'}" for a in args]
    return f"{prompt.get('name', '?')}({', '.join(names)})"


def prompts_table(console: Console, result: JSON) -> None:
    items = [p for p in result.get("prompts", []) if isinstance(p, dict)]
    if not items:
        console.print("(no prompts)")
        return
    table = _table("PROMPT", "DESCRIPTION")
    for prompt in items:
        table.add_row(_s(prompt_signature(prompt), limit=80),
                      _s(_first_line(prompt.get("description") or prompt.get("title")), limit=200))
    console.print(table)


def prompt_detail(console: Console, prompt: JSON) -> None:
    console.print(_s(prompt_signature(prompt)), style="bold")
    if prompt.get("description"):
        console.print(_s(prompt["description"], one_line=False))
    for arg in _list(prompt.get("arguments")):
        if isinstance(arg, dict):
            need = "required" if arg.get("required") else "optional"
            desc = f": {_s(arg['description'])}" if arg.get("description") else ""
            console.print(f"  {_s(arg.get('name'))} ({need}){desc}")


def completion_values(console: Console, result: JSON) -> None:
    completion = _obj(result.get("completion"))
    values = [v for v in _list(completion.get("values")) if isinstance(v, str)]
    for value in values:
        console.print(_s(value))
    total = completion.get("total")
    if isinstance(total, int) and total > len(values):
        console.print(f"({total - len(values)} more)", style="dim")
    elif completion.get("hasMore"):
        console.print("(more available)", style="dim")
    if not values:
        console.print("(no suggestions)", style="dim")


def task_detail(console: Console, result: JSON) -> None:
    """One task (`mcp tasks get`, `tools call --detach`), in either era's shape."""
    task = _obj(result.get("task")) or result  # a 2025-11-25 CreateTaskResult nests it
    rows = [("task", task.get("taskId")), ("status", task.get("status")),
            ("message", task.get("statusMessage")), ("created", task.get("createdAt")),
            ("updated", task.get("lastUpdatedAt"))]
    if "ttlMs" in task or "ttl" in task:
        rows.append(("ttl", _duration(task.get("ttlMs", task.get("ttl")))))
    for key, value in rows:
        if value is not None:
            console.print(f"{key.ljust(8)} {_s(value)}")
    requests = _obj(task.get("inputRequests"))
    if requests:
        console.print(f"{'input'.ljust(8)} waiting for: {_s(', '.join(requests))}")
    error = _obj(task.get("error"))
    if error:
        console.print(f"{'error'.ljust(8)} {_s(error.get('message'))} (code {_s(error.get('code'))})")
    if isinstance(task.get("result"), dict):
        console.print()
        call_result(console, task["result"])


def tasks_table(console: Console, result: JSON) -> None:
    items = [t for t in result.get("tasks", []) if isinstance(t, dict)]
    if not items:
        console.print("(no tasks)")
        return
    table = _table("TASK", "STATUS", "UPDATED", "MESSAGE")
    for t in items:
        table.add_row(_s(t.get("taskId")), _s(t.get("status")), _s(t.get("lastUpdatedAt")),
                      _s(t.get("statusMessage"), limit=80))
    console.print(table)
