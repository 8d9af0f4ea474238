"""Shell-completion sources: configured server names, cached tool lists, cheaply (no heavy imports)."""

from __future__ import annotations

import json
import os

__all__ = ["argument_items", "prompt_names", "server_names", "session_names", "tool_names"]


def server_names() -> list[str]:
    """Names from our config file, then from other clients' configs."""
    from mcpcli.config import default_config_path

    names: list[str] = []
    path = os.environ.get("MCP_CONFIG") or str(default_config_path())
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        servers = doc.get("mcpServers", doc.get("servers", {})) if isinstance(doc, dict) else {}
        if isinstance(servers, dict):
            names.extend(str(n) for n in servers)
    except (OSError, ValueError):
        pass
    try:
        from mcpcli import other_clients

        for name in other_clients.names():
            if name not in names:
                names.append(name)
    except ImportError:
        pass
    return names


def session_names() -> list[str]:
    """The sessions the daemon holds, if one runs (completion never starts it)."""
    from mcpcli import sessions
    from mcpcli.errors import McpCliError

    try:
        return [info.name for info in sessions.list_sessions(timeout=1.0)]
    except (McpCliError, OSError):
        return []


def tool_names(ctx: object, incomplete: str) -> list[str]:
    """Tool names from the cache of the last `tools list` of this target (never connects)."""
    from mcpcli import cache

    target = getattr(ctx, "params", {}).get("target") if ctx is not None else None
    if not target:
        return []
    names = cache.tool_names(str(target))
    return [n for n in names if n.startswith(incomplete)]


def prompt_names(ctx: object, incomplete: str) -> list[str]:
    """Prompt names from the cache of the last `prompts list|get` of this target."""
    from mcpcli import cache

    target = getattr(ctx, "params", {}).get("target") if ctx is not None else None
    if not target:
        return []
    return [n for n in cache.prompt_names(str(target)) if n.startswith(incomplete)]


def _cached_tool(target: str, tool: str) -> dict[str, object] | None:
    """The tool's definition in the cached `tools/list` of `target`, if any."""
    from mcpcli import cache

    record = cache.load(target, "tools/list")
    result = record.get("result") if record else None
    tools = result.get("tools") if isinstance(result, dict) else None
    for item in tools if isinstance(tools, list) else []:
        if isinstance(item, dict) and item.get("name") == tool:
            return item
    return None


def _values_of(schema: object) -> list[str]:
    """The values a parameter can take, as --arg text: enum members, or true/false."""
    if not isinstance(schema, dict):
        return []
    enum = schema.get("enum")
    if isinstance(enum, list):
        return [v if isinstance(v, str) else json.dumps(v) for v in enum if not isinstance(v, (dict, list))]
    one_of = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(one_of, list):  # titled enums: [{const, title}, ...]
        consts = [v.get("const") for v in one_of if isinstance(v, dict) and "const" in v]
        if consts and all(isinstance(c, str) for c in consts):
            return [str(c) for c in consts]
    kind = schema.get("type")
    if kind == "boolean" or (isinstance(kind, list) and "boolean" in kind):
        return ["true", "false"]
    return []


def argument_items(ctx: object, incomplete: str) -> list[str]:
    """What `--arg` completes to, from the cached schema of the tool (never connects).

    Before `=`: the tool's parameter names as `name=` (those not given yet first
    in schema order); after `name=`: that parameter's enum values (or true/false
    for a boolean). MCP has no `completion/complete` reference for tool arguments,
    so the server is never asked.
    """
    params = getattr(ctx, "params", None) or {}
    target, tool = params.get("target"), params.get("tool")
    if not target or not tool:
        return []
    definition = _cached_tool(str(target), str(tool))
    schema = definition.get("inputSchema") if definition else None
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return []
    key, sep, partial = incomplete.partition("=")
    if not sep:
        given = {str(item).partition("=")[0].rstrip(":") for item in params.get("items") or ()}
        return [f"{name}=" for name in props if name.startswith(incomplete) and name not in given]
    if key.endswith(":"):  # key:=json is raw JSON: nothing to offer
        return []
    return [f"{key}={v}" for v in _values_of(props.get(key)) if v.startswith(partial)]
