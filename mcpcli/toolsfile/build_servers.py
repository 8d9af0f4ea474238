"""Build the `servers:` section (other MCP servers behind this one) into `Upstream`s.

What can be known without connecting is checked here, each problem at its
`file:line:col`: exactly one of `target`/`command`, duplicate entry names,
prefixes that would make invalid tool names or that two entries share, glob
syntax (a glob that can never match a tool name is a mistake, not a filter),
env/headers given where they cannot apply, and `{secret: NAME}` references.
Whether a `target` names a configured server is checked by `mcpcli.gateway.check`
(tools.yaml never reads the user's config); collisions between the names the
upstreams actually serve need `mcp serve --check --connect`.
"""

from __future__ import annotations

import os
import re

from mcpcli.toolsfile import templating
from mcpcli.toolsfile.build_context import BuildContext
from mcpcli.toolsfile.model import DEFAULT_MAX_CONCURRENT, JSON, ToolFilter, Upstream
from mcpcli.toolsfile.yamlstrict import Path

__all__ = ["MAX_TOOL_NAME", "TOOL_NAME_CHARS", "build_servers", "glob_problem"]

#: A character a tool name may hold (2025-11-25: 1 to 128 of `[A-Za-z0-9_.-]`).
TOOL_NAME_CHARS = re.compile(r"[A-Za-z0-9_.-]")
MAX_TOOL_NAME = 128
_PATHLIKE_SUFFIXES = (".yaml", ".yml")


def glob_problem(glob: str) -> str | None:
    """Why `glob` can never match a tool name (None when it can).

    fnmatch would silently treat an unclosed `[` as a literal and `[^x]` as a set
    holding `^`; either way the filter would not do what the author meant, so they
    are errors here rather than surprises at run time.
    """
    if not glob:
        return "an empty glob matches no tool"
    i = 0
    while i < len(glob):
        char = glob[i]
        if char in "*?":
            i += 1
            continue
        if char == "[":
            start = i + 1
            if glob[start:start + 1] == "!":
                start += 1
            end = glob.find("]", start)
            if end == -1:
                return f"{glob!r} has a '[' without its closing ']'"
            members = glob[start:end]
            if not members:
                return f"{glob!r} has an empty set '[]'"
            for member in members:
                if not TOOL_NAME_CHARS.fullmatch(member):
                    hint = " (write [!...] to exclude characters)" if member == "^" else ""
                    return f"{glob!r}: {member!r} cannot occur in a tool name{hint}"
            i = end + 1
            continue
        if not TOOL_NAME_CHARS.fullmatch(char):
            return f"{glob!r}: {char!r} cannot occur in a tool name (letters, digits, '_', '-', '.')"
        i += 1
    return None


def build_servers(ctx: BuildContext) -> tuple[Upstream, ...]:
    """Every valid `servers:` entry, in file order; problems go to `ctx`."""
    upstreams: list[Upstream] = []
    names: dict[str, int] = {}
    prefixes: dict[str, tuple[str, int]] = {}
    entries = ctx.raw.get("servers")
    for i, item in enumerate(entries if isinstance(entries, list) else []):
        path: Path = ("servers", i)
        if not isinstance(item, dict):
            continue  # reported by the format's check
        with ctx.entry():
            name = item["name"]
            if name in names:
                ctx.fail((*path, "name"), f"duplicate server name {name!r} (first at line {names[name]})")
                continue
            names[name] = ctx.marks.at((*path, "name"))[0]
            upstream = _upstream(ctx, item, path)
            if upstream is None:
                continue
            folded = upstream.prefix.casefold()
            if folded in prefixes:
                other, line = prefixes[folded]
                shown = repr(upstream.prefix) if upstream.prefix else "no prefix"
                where = ((*path, "prefix") if "prefix" in item else (*path, "name"))
                ctx.fail(where, f"same prefix ({shown}) as server {other!r} (line {line}): their tool and "
                         "prompt names could collide", "give each entry its own prefix:")
                continue
            prefixes[folded] = (name, upstream.line)
            upstreams.append(upstream)
    return tuple(upstreams)


def _upstream(ctx: BuildContext, item: JSON, path: Path) -> Upstream | None:
    before = len(ctx.problems)
    name: str = item["name"]
    target, command = _target_or_command(ctx, item, path)
    prefix = item.get("prefix", f"{name}_")
    _check_prefix(ctx, prefix, (*path, "prefix"))
    tools = _tool_filter(ctx, item.get("tools") or {}, (*path, "tools"))
    env = _values(ctx, item.get("env") or {}, (*path, "env"))
    headers = _values(ctx, item.get("headers") or {}, (*path, "headers"))
    if env and target is not None and target.startswith(("http://", "https://")):
        ctx.fail((*path, "env"), "env applies to a stdio server (command:), not to a URL", key=True)
    if headers and command is not None:
        ctx.fail((*path, "headers"), "headers apply to an HTTP server (a URL target), not to command:",
                 key=True)
    timeout: float | None = None
    if "timeout" in item:
        timeout = ctx.duration(item, "timeout", path, 0.0)
        if timeout <= 0:
            ctx.fail((*path, "timeout"), "must be more than 0")
    if len(ctx.problems) > before or (target is None and command is None):
        return None
    line, col = ctx.marks.at(path)
    target_line, target_col = ctx.marks.at((*path, "target")) if target is not None else (0, 0)
    return Upstream(
        name=name, target=target, command=command, prefix=prefix, tools=tools,
        resources=item.get("resources", True), prompts=item.get("prompts", True),
        env=env, headers=headers, timeout=timeout,
        concurrency=item.get("concurrency", DEFAULT_MAX_CONCURRENT),
        file=ctx.file, line=line, col=col, target_line=target_line, target_col=target_col,
    )


def _target_or_command(ctx: BuildContext, item: JSON, path: Path) -> tuple[str | None, tuple[str, ...] | None]:
    has_target, has_command = "target" in item, "command" in item
    if has_target and has_command:
        ctx.fail((*path, "command"), "give target or command, not both", key=True)
        return None, None
    if not has_target and not has_command:
        ctx.fail(path, "missing target (a configured server, a URL or a tools.yaml) or command "
                 "(argv of a stdio server)")
        return None, None
    if has_command:
        argv = tuple(item["command"])
        if not argv[0]:
            ctx.fail((*path, "command", 0), "the program name is empty")
            return None, None
        return None, argv
    target: str = item["target"]
    if target.startswith(("http://", "https://")):
        return target, None
    if target.endswith(_PATHLIKE_SUFFIXES) or os.sep in target or target.startswith("~"):
        # A tools.yaml upstream is found next to this file, wherever `mcp serve` runs.
        resolved = ctx.resolve_dir(target)
        if os.path.realpath(resolved) == os.path.realpath(ctx.file):
            ctx.fail((*path, "target"), "the target is this very file (it would serve itself forever)")
            return None, None
        return resolved, None
    return target, None


def _check_prefix(ctx: BuildContext, prefix: str, path: Path) -> None:
    bad = sorted({c for c in prefix if not TOOL_NAME_CHARS.fullmatch(c)})
    if bad:
        shown = ", ".join(repr(c) for c in bad)
        ctx.fail(path, f"{prefix!r}: {shown} cannot occur in a tool name, so every tool "
                 "would get an invalid name", "use letters, digits, '_', '-' and '.'")
    elif len(prefix) >= MAX_TOOL_NAME:
        ctx.fail(path, f"prefix is {len(prefix)} characters: with it no tool name fits in "
                 f"{MAX_TOOL_NAME}")


def _tool_filter(ctx: BuildContext, spec: JSON, path: Path) -> ToolFilter:
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("allow", "deny"):
        globs = spec.get(key) or []
        for j, glob in enumerate(globs):
            problem = glob_problem(glob)
            if problem is not None:
                ctx.fail((*path, key, j), problem)
        lists[key] = tuple(globs)
    return ToolFilter(allow=lists["allow"], deny=lists["deny"], read_only=bool(spec.get("read_only", False)))


def _values(ctx: BuildContext, spec: JSON, path: Path) -> dict[str, str]:
    """env or headers: text (already `${VAR}`-interpolated), or a declared secret's value."""
    out: dict[str, str] = {}
    for key, value in spec.items():
        where = (*path, key)
        if isinstance(value, dict):
            secret = value["secret"]
            if secret not in (ctx.raw.get("secrets") or {}):
                ctx.fail(where, f"unknown secret {secret!r}", "declare it under secrets:")
                continue
            if secret not in ctx.secrets:  # optional and not set: leave the variable out
                continue
            text = ctx.secrets[secret]
        else:
            text = templating.stringify(value)
        if "\x00" in text or (path[-1] == "headers" and ("\r" in text or "\n" in text)):
            # Never quote the value: it may be a secret.
            ctx.fail(where, "the value holds a NUL byte or a line break", key=True)
            continue
        out[str(key)] = text
    return out
