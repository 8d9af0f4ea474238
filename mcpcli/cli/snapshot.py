"""`mcp snapshot TARGET [-o FILE]`: the server's surface as canonical JSON, for committing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import App
from mcpcli.cli._connection import Connection
from mcpcli.cli._options import target_command
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.client import Client

__all__ = ["snapshot", "write_text"]


@target_command(None, "snapshot")
@click.option("--output", "-o", "output_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Write the snapshot to FILE (replaced whole) instead of stdout.")
def snapshot(app: App, target: str | None, output_file: str | None, conn: Connection, out: Output) -> None:
    """Write the server's surface as canonical JSON, to commit next to its code.

    \b
    The surface is the server info, capabilities, instructions, and the
    tools (schemas, annotations), resources, resource templates and prompts,
    every page of each. The JSON is stable: keys sorted, lists sorted by
    name or URI, nothing that varies between runs (cursors, cache hints,
    a resource's size); the same server gives the same bytes.
      mcp snapshot srv -o mcp-surface.json
      mcp diff mcp-surface.json srv     # later: what changed, what breaks
    """
    from mcpcli import surface

    async def go(client: Client) -> dict[str, Any]:
        return await surface.collect(client, warn=app.warn)

    conn.interactive = False  # the same surface on a terminal as in CI
    collected = app.with_client(target, conn, go)
    text = surface.dumps(collected)
    if output_file is not None:
        write_text(output_file, text, what="--output")
        counts = ", ".join(f"{len(collected[key])} {label}" for key, label in (
            ("tools", "tools"), ("resources", "resources"), ("resourceTemplates", "templates"),
            ("prompts", "prompts")))
        app.info(f"wrote {output_file} ({counts})")
    elif out.jq_filter or out.mode == "jsonl" or click.get_current_context().params.get("compact"):
        out.emit(collected)
    else:
        app.stdout.write(text)
        app.stdout.flush()


def write_text(path: str, text: str, *, what: str) -> None:
    """Write a file whole (a temp file renamed over it; a symlink there is replaced, not
    followed); a failure is a usage error naming `what` (the option)."""
    from mcpcli.errors import UsageError
    from mcpcli.files import replace_file

    try:
        replace_file(path, text.encode("utf-8"))
    except OSError as exc:
        raise UsageError(f"{what} {path}: {exc.strerror or exc}") from None
