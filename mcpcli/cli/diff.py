"""`mcp diff OLD NEW`: what changed between two surfaces, and what of it breaks clients."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, App, Command, pass_app
from mcpcli.cli._connection import Connection
from mcpcli.cli._options import (
    _complete_target,
    connection_options,
    explicit_json,
    output_options,
    project_option,
)
from mcpcli.errors import ExitCode, UsageError
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.surface import Change

__all__ = ["diff"]

#: What marks a side as a snapshot file rather than a TARGET.
SNAPSHOT_SUFFIX = ".json"


@click.command("diff", context_settings=CONTEXT_SETTINGS, cls=Command)
@click.argument("old", metavar="OLD", shell_complete=_complete_target)
@click.argument("new", metavar="NEW", required=False, shell_complete=_complete_target)
@project_option
@connection_options
@output_options
@pass_app
def diff(app: App, old: str, new: str | None, conn: Connection, out: Output) -> None:
    """Compare two surfaces and say which changes break clients.

    \b
    OLD and NEW are each a snapshot file (a .json path written by `mcp
    snapshot`, or - for stdin) or a TARGET (a server name, URL, tools.yaml,
    @session); NEW may be a server command after --. Every change is
    classified: breaking (a tool, template or prompt removed, a required
    parameter added, a parameter removed or its type narrowed, an enum value
    removed, a structured output field removed, a capability dropped...) or
    not (additions, optional parameters, descriptions). The server's version
    is shown, never counted as a change.
      mcp diff mcp-surface.json -- python server.py
      mcp diff old.json new.json --json
    Exits 1 when a change is breaking, 0 otherwise.
    """
    if app.server_command and new is not None:
        raise UsageError("give NEW or a server command after --, not both",
                         hint="mcp diff mcp-surface.json -- python server.py")
    if new is None and not app.server_command:
        raise UsageError("missing NEW: a snapshot file, a TARGET, or a server command after --")
    if old == "-" and new == "-":
        raise UsageError("only one side can be read from stdin (-)")
    conn.interactive = False  # the same surfaces on a terminal as in CI
    sides = [_side(app, old, conn), _side(app, new, conn)]
    from mcpcli.surface import compare

    changes = compare(sides[0][1], sides[1][1])
    report = {"old": _about(*sides[0]), "new": _about(*sides[1]), "changes": [c.to_json() for c in changes]}
    if explicit_json(out):
        out.emit(report, items="changes")
    else:
        app.stdout.write(_human(report, changes))
        app.stdout.flush()
    if any(change.breaking for change in changes):
        app.exit_code = ExitCode.TOOL_ERROR


def _side(app: App, spec: str | None, conn: Connection) -> tuple[str, dict[str, Any]]:
    """(where it came from, the canonical surface) for one side: a file, stdin or a server."""
    from mcpcli import surface

    if spec == "-":
        return "stdin", surface.loads(app.stdin.read(), "stdin")
    if spec is not None and spec.endswith(SNAPSHOT_SUFFIX):
        return spec, surface.load_file(spec)

    from mcpcli.connect import connect
    from mcpcli.targets import resolve_target

    # A TARGET beside a server command (`mcp diff OLD -- CMD`): each side is resolved alone.
    entry = app.resolve(None) if spec is None else resolve_target(spec, [], app.config())

    async def go() -> dict[str, Any]:
        async with connect(entry, conn.connect_options(app), conn.client_options(app, entry)) as client:
            return await surface.collect(client, warn=app.warn)

    try:
        collected = app.run(go)
    finally:
        conn.close()
    return (spec if spec is not None else " ".join(app.server_command)), collected


def _about(where: str, side: dict[str, Any]) -> dict[str, Any]:
    return {"source": where, "serverInfo": side.get("serverInfo") or {},
            "protocolVersion": side.get("protocolVersion")}


def _human(report: dict[str, Any], changes: list[Change]) -> str:
    """The report for people: where each side came from, then the changes, breaking first."""
    from mcpcli.text import one_line

    lines = [f"{label}: {_describe(report[label])}" for label in ("old", "new")]
    versions = [report[label].get("protocolVersion") for label in ("old", "new")]
    if all(versions) and versions[0] != versions[1]:
        lines.append("note: the two speak different protocol versions; some differences (capabilities, "
                     "list fields) may come from that alone")
    breaking = [c for c in changes if c.breaking]
    other = [c for c in changes if not c.breaking]
    for title, group in (("breaking", breaking), ("not breaking", other)):
        if group:
            lines.append(f"{title} ({len(group)}):")
            lines.extend(f"  {one_line(c.subject)}: {one_line(c.detail)} [{c.kind}]" for c in group)
    if not changes:
        lines.append("no changes")
    else:
        lines.append(f"{len(breaking)} breaking, {len(other)} not breaking")
    return "\n".join(lines) + "\n"


def _describe(about: dict[str, Any]) -> str:
    from mcpcli.text import one_line

    info = about.get("serverInfo") or {}
    name = " ".join(str(info[k]) for k in ("name", "version") if isinstance(info.get(k), (str, int, float)))
    shown = one_line(name or "(unnamed server)")
    if about.get("protocolVersion"):
        shown += f", protocol {one_line(str(about['protocolVersion']))}"
    source = about.get("source") or ""
    return f"{one_line(source)} ({shown})" if source else shown
