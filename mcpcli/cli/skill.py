"""`mcp skill SERVER`: write an Agent Skill that teaches an agent to use SERVER through `mcp`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import NO_TARGET, App, offered
from mcpcli.cli._connection import Connection
from mcpcli.cli._options import explicit_json, target_command
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.client import Client
    from mcpcli.config import ServerEntry

__all__ = ["skill"]


@target_command(None, "skill")
@click.option("--out", "-o", "out_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Write DIR/NAME/SKILL.md (NAME: the skill's name) instead of printing it.")
@click.option("--tools", "globs", multiple=True, metavar="GLOB",
              help="Only tools whose names match GLOB (repeatable; a comma separates several).")
@click.option("--name", "skill_name", metavar="NAME",
              help="The skill's name (default: from the server's name; lowercase, digits, hyphens).")
def skill(
    app: App, target: str | None, out_dir: str | None, globs: tuple[str, ...], skill_name: str | None,
    conn: Connection, out: Output,
) -> None:
    """Write an Agent Skill (SKILL.md) for using the server through mcp.

    \b
    The skill has `name`/`description` front matter and, for each tool, a
    one-line signature (types, `?` optional, `= default`) and a worked
    `mcp tools call` line; then how to read results, exit codes and, for an
    HTTP server, how to sign in. The same tool list gives the same file.
      mcp skill github --out ~/.claude/skills
      mcp skill everything --tools 'get-*' > SKILL.md
    """
    from mcpcli import skill as skills
    from mcpcli.errors import UsageError

    patterns = [p.strip() for g in globs for p in g.split(",") if p.strip()]
    entry = app.resolve(target)
    if skill_name is not None and skills.skill_name(skill_name) != skill_name:
        raise UsageError(f"--name {skill_name!r}: use lowercase letters, digits and hyphens (at most 64)")

    async def go(client: Client) -> skills.Skill:
        listing = await offered(app, client.list_tools(cache_target=_cache_key(target)), "tools")
        tools = skills.select_tools(listing.get("tools") or [], patterns)
        if patterns and not tools:
            raise UsageError(f"no tool matches --tools {', '.join(patterns)}",
                             hint=f"`{app.prog} tools list` shows the tool names")
        return skills.build_skill(
            name=skill_name or skills.skill_name(_base_name(entry, target, client)),
            ref=str(client.server_info.get("name") or entry.name) if target in (None, NO_TARGET) else str(target),
            server_info=client.server_info,
            tools=tools,
            instructions=client.instructions,
            signs_in=entry.transport in ("http", "sse"),
            prog=app.prog,
            server_command=list(app.server_command),
        )

    made = app.with_client(target, conn, go)
    path = _write(out_dir, made) if out_dir is not None else None
    if out.human or (path is None and not explicit_json(out)):
        if path is None:
            app.stdout.write(made.markdown)
            app.stdout.flush()
        else:
            app.info(f"wrote {path}")
        return
    result: dict[str, Any] = {"name": made.name, "description": made.description, "path": path}
    if path is None:
        result["markdown"] = made.markdown
    else:
        app.info(f"wrote {path}")
    out.emit(result)


def _cache_key(target: str | None) -> str | None:
    return None if target in (None, NO_TARGET) else target


def _base_name(entry: ServerEntry, target: str | None, client: Client) -> str:
    """What the skill is named after: the configured name, a URL's host, a file's stem,
    else the server's own name."""
    from pathlib import Path
    from urllib.parse import urlsplit

    if entry.transport in ("http", "sse") and entry.source == "argv" and entry.url:
        return urlsplit(entry.url).hostname or "mcp-server"
    if entry.transport == "yaml" and entry.source == "argv" and entry.path:
        return Path(entry.path).stem
    if target in (None, NO_TARGET):
        return str(client.server_info.get("name") or entry.name)
    return entry.name


def _write(out_dir: str, made: Any) -> str:
    """DIR/NAME/SKILL.md, written whole (a temp file renamed over it)."""
    import os

    from mcpcli.errors import UsageError
    from mcpcli.files import replace_file

    directory = os.path.join(out_dir, made.name)
    path = os.path.join(directory, "SKILL.md")
    if os.path.islink(directory):  # it would put SKILL.md wherever the link points
        raise UsageError(f"--out {out_dir}: {directory} is a symbolic link; give a directory without one")
    try:
        os.makedirs(directory, exist_ok=True)
        replace_file(path, made.markdown.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"--out {out_dir}: {exc.strerror or exc}") from None
    return path
