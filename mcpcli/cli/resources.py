"""`mcp resources list|templates|read|subscribe`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, App, Group, offered
from mcpcli.cli._connection import Connection
from mcpcli.cli._options import large_result_options, target_command
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.client import Client

__all__ = ["resources"]


@click.group(cls=Group, context_settings=CONTEXT_SETTINGS)
def resources() -> None:
    """List, read and watch resources."""


@target_command(resources, "list")
def list_(app: App, target: str | None, conn: Connection, out: Output) -> None:
    """List the server's resources (every page)."""
    from mcpcli import render

    async def go(client: Client) -> None:
        result = await offered(app, client.list_resources(), "resources")
        out.emit(result, items="resources", human=render.resources_table)

    app.with_client(target, conn, go)


@target_command(resources, "templates")
def templates(app: App, target: str | None, conn: Connection, out: Output) -> None:
    """List the server's resource templates (every page)."""
    from mcpcli import render

    async def go(client: Client) -> None:
        result = await offered(app, client.list_resource_templates(), "resourceTemplates")
        out.emit(result, items="resourceTemplates", human=render.templates_table)

    app.with_client(target, conn, go)


@target_command(resources, "read")
@click.argument("uri")
@click.option("--out", "-o", "out_file", type=click.Path(dir_okay=False, allow_dash=True), metavar="FILE",
              help="Write the content itself (text or decoded blob) to FILE; - is stdout, unless it is a terminal.")
@click.option("--save-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Save every blob in the result to DIR.")
@large_result_options
def read(
    app: App,
    target: str | None,
    uri: str,
    out_file: str | None,
    save_dir: str | None,
    conn: Connection,
    out: Output,
) -> None:
    """Read a resource: text to stdout, binary content summarised or saved.

    \b
    On a terminal, text content is printed and blobs are summarised; with
    --json (or when stdout is not a terminal) the result object is printed as
    the server sent it (blobs stay base64).
      mcp resources read srv file:///notes.md
      mcp resources read srv demo://logo --out logo.png
      mcp resources read srv demo://logo --out - | file -
      mcp resources read srv demo://bundle --save-dir out/
    """
    from mcpcli import render
    from mcpcli.errors import UsageError

    if out_file == "-" and app.stdout_tty:
        raise UsageError("--out -: refusing to write resource content to a terminal",
                         hint="redirect stdout, or give a file name")
    explicit = _explicit_output(click.get_current_context())

    async def go(client: Client) -> dict[str, Any]:
        return await client.read_resource(uri)

    result = app.with_client(target, conn, go)
    if out_file is not None:
        data = _single_content(result, uri)
        if out_file == "-":
            stream = getattr(app.stdout, "buffer", None)
            if stream is None:
                app.stdout.write(data.decode("utf-8", "replace"))
            else:
                app.stdout.flush()
                stream.write(data)
                stream.flush()
            return
        _write_file(out_file, data)
        app.info(f"wrote {len(data)} bytes to {out_file}")
        if not explicit:
            if save_dir:
                render.save_blobs(result, save_dir, app.info)
            return
    if out.human:
        out.emit(result, human=lambda console, r: render.resource_contents(console, r, save_dir))
    else:
        out.emit(result, items="contents")
        if save_dir:
            render.save_blobs(result, save_dir, app.info)


def _explicit_output(ctx: click.Context) -> bool:
    """Whether --json/--jsonl/--jq was given (not merely implied by a pipe)."""
    return bool(ctx.params.get("as_json") or ctx.params.get("jsonl") or ctx.params.get("jq_filter"))


def _single_content(result: dict[str, Any], uri: str) -> bytes:
    from mcpcli.errors import ProtocolError, UsageError
    from mcpcli.render import decoded

    contents = [c for c in result.get("contents") or [] if isinstance(c, dict)]
    if len(contents) != 1:
        raise UsageError(
            f"--out: {uri} has {len(contents)} content items, not one",
            hint="use --save-dir DIR for blobs, or --json for everything",
        )
    item = contents[0]
    if isinstance(item.get("text"), str):
        return str(item["text"]).encode("utf-8")
    data = decoded(item.get("blob"))
    if data is None:
        raise ProtocolError(f"{uri}: the content has neither text nor valid base64 blob")
    return data


def _write_file(path: str, data: bytes) -> None:
    """Write via a temp file and rename, so an error never leaves half a file."""
    from mcpcli.errors import UsageError
    from mcpcli.files import replace_file

    try:
        replace_file(path, data)
    except OSError as exc:
        raise UsageError(f"--out {path}: {exc.strerror or exc}") from None


def _check_subscribe_capability(client: Any) -> None:
    """Fail clearly when the server does not offer resource subscriptions at all."""
    from mcpcli.errors import UsageError

    caps = client.capabilities.get("resources")
    if not (isinstance(caps, dict) and caps.get("subscribe")):
        raise UsageError(
            "the server does not support resource subscriptions (no resources.subscribe capability)",
            hint="--list-changes alone watches list changes",
        )


@target_command(resources, "subscribe")
@click.argument("uris", nargs=-1, metavar="URI...")
@click.option("--list-changes", is_flag=True,
              help="Also report changes to the resource, tool and prompt lists.")
@click.option("--count", "-n", type=click.IntRange(min=1), metavar="N",
              help="Exit after N events (default: run until Ctrl-C).")
def subscribe(
    app: App,
    target: str | None,
    uris: tuple[str, ...],
    list_changes: bool,
    count: int | None,
    conn: Connection,
    out: Output,
) -> None:
    """Print resource update notifications until Ctrl-C.

    \b
    One event per line with --jsonl ({"method": ..., "params": {...}}).
    Servers of 2025-11-25 and earlier get resources/subscribe for each URI;
    2026-07-28 servers get one subscriptions/listen request.
      mcp resources subscribe srv file:///log.txt
      mcp resources subscribe srv --list-changes --jsonl | jq -c .params
    Exits 130 on Ctrl-C, 0 after --count events, 4 when the server ends the stream.
    """
    from mcpcli import render
    from mcpcli.errors import ConnectionClosed, UsageError

    if not uris and not list_changes:
        raise UsageError("give at least one URI to watch, or --list-changes")

    async def go(client: Client) -> bool:
        """Watch; True when --count events came, False when the server ended the stream."""
        seen = 0
        if uris:
            _check_subscribe_capability(client)
        async with client.subscribe(
            resources=list(uris), tools=list_changes, prompts=list_changes,
            resource_list=list_changes,
        ) as events:
            app.info(f"watching {len(uris)} resource(s)"
                     + (" and list changes" if list_changes else "") + "; Ctrl-C to stop")
            async for event in events:
                out.event(event, human=render.update_event)
                seen += 1
                if count is not None and seen >= count:
                    return True
        return False

    if not app.with_client(target, conn, go):
        raise ConnectionClosed("the server ended the subscription")
