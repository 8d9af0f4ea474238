"""Shell-completion sources: configured server names, cheaply (no heavy imports)."""

from __future__ import annotations

import json
import os

__all__ = ["prompt_names", "server_names", "session_names", "tool_names"]


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
