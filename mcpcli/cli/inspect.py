"""`mcp inspect TARGET`: the full-screen inspector (`mcpcli.inspector`, on Textual).

The command connects as every command does (so a sign-in, a session or a `--`
server behave as on the command line), then hands the connected client to the
app in the same event loop. Textual is imported here only, and only when the
command runs.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import IO, TYPE_CHECKING, cast

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, NO_TARGET, App, pass_app
from mcpcli.cli._connection import Connection
from mcpcli.cli._options import TargetCommand, connection_options, project_option, target_argument
from mcpcli.core.flags import MAX_TIMEOUT, TIMEOUT
from mcpcli.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from mcpcli.inspector.app import InspectorApp
    from mcpcli.inspector.bridge import Bridge
    from mcpcli.inspector.cmdline import Invocation

__all__ = ["inspect", "opened", "wire"]

#: Connection flags that may carry secrets: never repeated in a shown command line.
SECRET_FLAGS = ("--env", "--header", "--bearer-token")


def _invocation(app: App, target: str | None, conn: Connection) -> tuple[Invocation, str]:
    """How the shown command lines reach the same server, and the note saying what they leave out."""
    from mcpcli.inspector.cmdline import Invocation

    flags: list[str] = []
    if app.project:
        flags.append("--project")
    if conn.cwd:
        flags += ["--cwd", conn.cwd]
    if conn.transport != "auto":
        flags += ["--transport", conn.transport]
    for option, value in (("--protocol", conn.protocol), ("--profile", conn.profile),
                          ("--token-store", conn.token_store)):
        if value:
            flags += [option, value]
    if conn.insecure:
        flags.append("--insecure")
    if conn.timeout != TIMEOUT:
        flags += ["--timeout", f"{conn.timeout:g}"]
    if conn.max_timeout != MAX_TIMEOUT:
        flags += ["--max-timeout", f"{conn.max_timeout:g}"]
    for root in conn.root:
        flags += ["--root", root]
    for item in conn.meta:
        flags += ["--meta", item]
    if conn.sampling_command:
        flags += ["--sampling-command", conn.sampling_command]
    left_out = [flag for flag, given in zip(SECRET_FLAGS, (conn.env, conn.header, conn.bearer_token),
                                            strict=True) if given]
    note = f"({', '.join(left_out)} left out: they may hold secrets)" if left_out else ""
    shown_target = None if target in (None, NO_TARGET) else target
    return Invocation(app.prog, shown_target, tuple(app.server_command), tuple(flags)), note


def wire(app: App, target: str | None, conn: Connection) -> tuple[Bridge, Invocation, str]:
    """Point the connection's server requests, notifications and stderr at the inspector
    (a `Bridge`), and say how its command lines name the server."""
    from mcpcli.cli._features import roots_of
    from mcpcli.inspector.bridge import Bridge

    sampler = None
    if conn.sampling_command:
        from mcpcli.sampling import command_sampler

        sampler = command_sampler(conn.sampling_command)
    bridge = Bridge(roots=roots_of(conn.root), sampler=sampler)
    conn.features = bridge.features()
    conn.on_notification = bridge.on_notification
    conn.on_error = bridge.on_error
    conn.server_stderr = cast("IO[bytes]", bridge)  # a binary sink: write and flush
    invocation, note = _invocation(app, target, conn)
    return bridge, invocation, note


@asynccontextmanager
async def opened(app: App, target: str | None, conn: Connection, bridge: Bridge, invocation: Invocation,
                 note: str, save_dir: str | None) -> AsyncIterator[InspectorApp]:
    """Connect (signing in on the terminal if needed), then the app for that client; the
    server is stopped when the block ends."""
    from mcpcli.cli.info import server_summary
    from mcpcli.inspector.app import Inspection, InspectorApp

    async with app.client(target, conn) as client:
        yield InspectorApp(Inspection(client, bridge, invocation, server_summary(client), save_dir, note))


@click.command("inspect", cls=TargetCommand, context_settings=CONTEXT_SETTINGS)
@target_argument
@click.option("--save-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Save images, audio and blobs of results to DIR (default: a new temporary directory).")
@connection_options
@project_option
@pass_app
def inspect(app: App, target: str | None, save_dir: str | None, conn: Connection) -> None:
    """Browse and call a server's tools, resources and prompts in a full-screen terminal UI.

    \b
    Every call shows the `mcp` command line that makes it from a shell.
    Keys: / filter · Enter open or run · Tab/Shift+Tab fields · Escape back
    (or cancel a running call) · [ ] panes · Ctrl+Y copy a command · Ctrl+Q quit.
      mcp inspect everything
      mcp inspect https://mcp.example.com/mcp
      mcp inspect -- npx -y @modelcontextprotocol/server-everything
    Needs a terminal on stdin and stdout (exit 2 otherwise).
    """
    if not (app.stdin_tty and app.stdout_tty):
        which = "stdin" if not app.stdin_tty else "stdout"
        raise UsageError(f"mcp inspect needs a terminal, and its {which} is not one "
                         "(scripts use `mcp tools call` and the other commands)")
    if conn.trace:
        raise UsageError("--trace prints on the terminal the inspector draws on",
                         hint="use --record FILE to keep the JSON-RPC exchange")
    if conn.elicit_json is not None or conn.elicit_defaults:
        raise UsageError("--elicit-json and --elicit-defaults do not apply: the inspector asks you")
    bridge, invocation, note = wire(app, target, conn)
    # Textual loads while a `--` server boots (it was started before click).
    import mcpcli.inspector.app  # noqa: F401

    async def go() -> None:
        async with opened(app, target, conn, bridge, invocation, note, save_dir) as inspector:
            ours = logging.getLogger("mcpcli")
            handler = bridge.log_handler()
            ours.addHandler(handler)  # our warnings into the log pane, not over the screen
            try:
                await inspector.run_async()
            finally:
                ours.removeHandler(handler)

    app.run(go)
