"""What a gateway entry lets through and how it is reached: shared by the gateway and `--check`.

`tool_allowed` is the filter (a denied or unlisted tool is never served or called);
`upstream_entry` turns an `Upstream` into the server entry it is connected through,
exactly as a command would reach that target.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from typing import TYPE_CHECKING, Any

from mcpcli.toolsfile.model import ToolFilter, Upstream

if TYPE_CHECKING:
    from mcpcli.config import Config, ServerEntry

__all__ = ["tool_allowed", "upstream_entry"]


def tool_allowed(name: Any, annotations: Any, tools: ToolFilter) -> bool:
    """Whether an upstream's tool `name` passes its entry's filter (globs are case-insensitive)."""
    if not isinstance(name, str):
        return False
    folded = name.casefold()
    if tools.allow and not any(fnmatch.fnmatchcase(folded, g.casefold()) for g in tools.allow):
        return False
    if any(fnmatch.fnmatchcase(folded, g.casefold()) for g in tools.deny):
        return False
    if tools.read_only:
        return isinstance(annotations, dict) and annotations.get("readOnlyHint") is True
    return True


def upstream_entry(upstream: Upstream, config: Config) -> ServerEntry:
    """The server entry an upstream is reached through; raises `UsageError` for an unknown name.

    A `command:` runs in the tools.yaml's directory; the entry's env and headers are
    laid over those of a configured server.
    """
    from mcpcli.config import ServerEntry
    from mcpcli.targets import resolve_target

    if upstream.command is not None:
        return ServerEntry(
            name=upstream.name, command=upstream.command[0], args=list(upstream.command[1:]),
            env=dict(upstream.env), cwd=os.path.dirname(os.path.abspath(upstream.file)) if upstream.file else None,
            source=upstream.file or "gateway",
        )
    assert upstream.target is not None
    entry = resolve_target(upstream.target, (), config, give_command=_as_command)
    # A copy: the entry may be shared (another client's servers are read once).
    lowered = {k.lower() for k in upstream.headers}
    return dataclasses.replace(
        entry, env={**entry.env, **upstream.env},
        headers={**{k: v for k, v in entry.headers.items() if k.lower() not in lowered}, **upstream.headers},
    )


def _as_command(command: str) -> str:
    """How a tools.yaml's `servers:` entry gives a server command (for a hint)."""
    import shlex

    return f"give the command as `command: [{', '.join(shlex.split(command))}]`"
