"""Shell-completion sources: configured server names, cached tool lists, cheaply (no heavy imports)."""

from __future__ import annotations

import json
import os

__all__ = ["argument_items", "prompt_argument_items", "prompt_names", "server_names", "session_names", "tool_names"]


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
    except (OSError, ValueError, RecursionError):
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

    return cache.item(target, "tools/list", "tools", tool)


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


#: How long completion waits for an open session's `completion/complete` (a TAB must not hang).
SESSION_COMPLETE_TIMEOUT = 2.0


def _cached_prompt(target: str, prompt: str) -> dict[str, object] | None:
    from mcpcli import cache

    return cache.item(target, "prompts/list", "prompts", prompt)


def _session_completions(session: str, prompt: str, key: str, partial: str, context: dict[str, str]) -> list[str]:
    """`completion/complete` through an open session (cheap: its server already runs);
    nothing when the session is not open (no daemon or server is ever started)."""
    if session not in session_names():
        return []
    import anyio

    from mcpcli.client import ClientOptions
    from mcpcli.config import ServerEntry
    from mcpcli.connect import ConnectOptions, connect
    from mcpcli.errors import McpCliError

    async def ask() -> object:
        with anyio.fail_after(SESSION_COMPLETE_TIMEOUT):
            entry = ServerEntry(name=session, transport="session")
            options = ClientOptions(timeout=SESSION_COMPLETE_TIMEOUT, on_error=lambda exc: None,
                                    on_notification=lambda method, params: None)
            async with connect(entry, ConnectOptions(quiet=True, auth="none"), options) as client:
                if not client.offers("completions"):
                    return None
                return await client.complete({"type": "ref/prompt", "name": prompt}, key, partial,
                                             context or None)

    try:
        result = anyio.run(ask)
    except (McpCliError, TimeoutError, OSError):
        return []
    completion = result.get("completion") if isinstance(result, dict) else None
    values = completion.get("values") if isinstance(completion, dict) else None
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def prompt_argument_items(ctx: object, incomplete: str) -> list[str]:
    """What `prompts get ... --arg` completes to: the prompt's argument names (`name=`) from
    the cached `prompts/list`; after `name=`, the server's `completion/complete` values,
    asked only through an open session (`@NAME`)."""
    params = getattr(ctx, "params", None) or {}
    target, prompt = params.get("target"), params.get("name")
    if not target or not prompt:
        return []
    definition = _cached_prompt(str(target), str(prompt))
    arguments = definition.get("arguments") if definition else None
    names = [a["name"] for a in arguments if isinstance(a, dict) and isinstance(a.get("name"), str)] \
        if isinstance(arguments, list) else []
    key, sep, partial = incomplete.partition("=")
    given = dict(str(item).partition("=")[::2] for item in params.get("items") or ())
    if not sep:
        return [f"{name}=" for name in names if name.startswith(incomplete) and name not in given]
    if key not in names or not str(target).startswith("@"):
        return []
    context = {k: v for k, v in given.items() if k in names and k != key}
    values = _session_completions(str(target)[1:], str(prompt), key, partial, context)
    return [f"{key}={v}" for v in values if v.startswith(partial)]
