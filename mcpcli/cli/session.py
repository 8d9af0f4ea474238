"""`mcp session open|list|close|restart|logs`: servers kept running between commands.

A session is one live connection to a server, held by a per-user background
daemon (started on demand); any server-talking command reaches it as `@NAME`.
The work is `mcpcli.sessions`; this module parses and renders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, App, Group, pass_app
from mcpcli.cli._options import flag_option, output_options, project_option
from mcpcli.cli._types import seconds
from mcpcli.core.flags import FLAGS
from mcpcli.errors import UsageError
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.config import ServerEntry

__all__ = ["session"]




def _complete_session(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from click.shell_completion import CompletionItem

    from mcpcli.cli._completers import session_names

    return [CompletionItem(n) for n in session_names() if n.startswith(incomplete)]


def _session_word(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """NAME as commands target the session (`@name`) names it too."""
    if value is not None and value.startswith("@"):
        return value[1:]
    return value


@click.group(cls=Group, context_settings=CONTEXT_SETTINGS)
def session() -> None:
    """Keep servers running between commands (persistent sessions).

    \b
    A session is one live connection to a server, held by a background
    daemon that starts on demand and exits when its last session closes.
    Commands reach it as @NAME, with their usual output and exit codes:
      mcp session open ev -- npx -y @modelcontextprotocol/server-everything
      mcp tools call @ev echo --arg message=hi
      mcp session close ev
    A configured server with "keepAlive": true gets a session on first use.
    """


def _duration(value: str | None) -> float | None:
    from mcpcli.config import parse_duration
    from mcpcli.errors import ConfigError

    if value is None or value == "never":
        return None
    try:
        return parse_duration(value, what="--idle-timeout")
    except ConfigError as exc:
        raise UsageError(exc.message) from None


@session.command("open")
@click.argument("name", callback=_session_word)
@click.argument("target", required=False)
@click.option("--idle-timeout", metavar="DURATION",
              help="Close the session after this long unused: 90s, 30m, 2h or never "
                   "(default: the server's idleTimeout, else 30m).")
@click.option("--restart", type=click.Choice(["no", "on-failure"]),
              help="Restart the server when it crashes (default: the server's restart, else no).")
@click.option("--timeout", type=seconds(), default=120.0, show_default=True,
              metavar="SECONDS", help="Wait this long for the server to be ready.")
@flag_option(FLAGS["env"])
@flag_option(FLAGS["cwd"])
@flag_option(FLAGS["header"])
@flag_option(FLAGS["bearer_token"])
@flag_option(FLAGS["transport"])
@flag_option(FLAGS["insecure"])
@flag_option(FLAGS["protocol"])
@flag_option(FLAGS["root"])
@flag_option(FLAGS["log_level"], help="Ask the server for log messages at LEVEL and above (they go to the session log).")
@flag_option(FLAGS["no_auth"])
@flag_option(FLAGS["stored_auth_only"])
@flag_option(FLAGS["token_store"])
@flag_option(FLAGS["profile"],
             help="Use this account's sign-in (`mcp auth login --profile`); each profile is its own session.")
@project_option
@output_options
@pass_app
def open_(
    app: App, name: str, target: str | None, idle_timeout: str | None, restart: str | None,
    timeout: float, env: tuple[str, ...], cwd: str | None, header: tuple[str, ...],
    bearer_token: str | None, transport: str, insecure: bool, protocol: str | None,
    root: tuple[str, ...], log_level: str | None, no_auth: bool, stored_auth_only: bool,
    token_store: str | None, profile: str | None, out: Output,
) -> None:
    """Start (or join) session NAME; returns once its server is ready.

    \b
    TARGET is a configured server, a URL or a tools.yaml file; it defaults
    to the configured server NAME, or the server command after --.
      mcp session open ev -- node server.js
      mcp session open gh https://api.example.com/mcp --idle-timeout 2h
      mcp session open notes            # the configured server "notes"
    Exits 4 (with the server's error) when it cannot start.
    """
    from mcpcli import render, sessions
    from mcpcli.cli._connection import Connection
    from mcpcli.cli._features import roots_of
    from mcpcli.config import DEFAULT_IDLE_TIMEOUT
    from mcpcli.connect import session_connect_fields

    sessions.check_name(name)
    entry = _entry(app, name, target)
    conn = Connection(
        timeout=timeout, env=env, cwd=cwd, header=header, bearer_token=bearer_token,
        transport=transport, insecure=insecure, no_auth=no_auth, stored_auth_only=stored_auth_only,
        token_store=token_store, profile=profile,
    )
    fields = session_connect_fields(conn.connect_options(app))
    idle = _duration(idle_timeout) if idle_timeout is not None else (
        entry.idle_timeout if entry.keep_alive or "idleTimeout" in entry.raw else DEFAULT_IDLE_TIMEOUT
    )
    client: dict[str, object] = {"timeout": timeout}
    roots = roots_of(root)
    for key, value in (("roots", roots), ("protocol", protocol), ("log_level", log_level)):
        if value is not None:
            client[key] = value
    request = sessions.open_request(
        name, entry, connect=fields, client=client, idle_timeout=idle,
        restart=restart or entry.restart, join=True,
    )
    info = sessions.open_session(request, timeout=timeout)
    out.emit(info.raw, human=render.session_summary)


def _entry(app: App, name: str, target: str | None) -> ServerEntry:
    """The server a new session runs: TARGET, the command after --, or the server NAME."""
    from mcpcli.targets import is_session

    if is_session(target) or (target is None and not app.server_command and is_session(name)):
        raise UsageError("a session's server cannot be another session",
                         hint="name a configured server, a URL or a tools.yaml file, or put a command after --")
    if target is None and not app.server_command:
        target = name
    return app.resolve(target)


@session.command("list")
@output_options
@pass_app
def list_(app: App, out: Output) -> None:
    """List the sessions the daemon holds.

    \b
    NAME, TARGET, TRANSPORT, ERA, SERVER, PID (the server's), UPTIME, IDLE,
    CALLS and STATE (starting, ready, exited, restarting).
      mcp session list
      mcp session list --jq '.sessions[] | select(.state == "exited") | .name' -r
    """
    from mcpcli import render, sessions

    found = sessions.list_sessions()
    out.emit({"sessions": [s.raw for s in found]}, items="sessions", human=render.sessions_table)


def _closed(console: Any, result: dict[str, Any]) -> None:
    closed = result.get("closed") or []
    console.print("closed " + ", ".join(closed) if closed else "(no sessions to close)")


@session.command("close")
@click.argument("name", required=False, shell_complete=_complete_session, callback=_session_word)
@click.option("--all", "all_", is_flag=True, help="Close every session (the daemon then exits).")
@output_options
@pass_app
def close(app: App, name: str | None, all_: bool, out: Output) -> None:
    """Close session NAME, or every one with --all.

    Its server is stopped, process group and all.
    """
    from mcpcli import sessions

    if all_ == (name is not None):
        raise UsageError("give a session NAME or --all", hint="`mcp session list` shows the open sessions")
    closed = sessions.close_sessions(name, all=all_)
    out.emit({"closed": closed}, items="closed", human=_closed)


@session.command("restart")
@click.argument("name", shell_complete=_complete_session, callback=_session_word)
@click.option("--timeout", type=seconds(), default=120.0, show_default=True,
              metavar="SECONDS", help="Wait this long for the server to be ready again.")
@output_options
@pass_app
def restart(app: App, name: str, timeout: float, out: Output) -> None:
    """Restart session NAME's server (after a crash, or to reload it)."""
    from mcpcli import render, sessions

    info = sessions.restart_session(name, timeout=timeout)
    out.emit(info.raw, human=render.session_summary)


@session.command("logs")
@click.argument("name", shell_complete=_complete_session, callback=_session_word)
@pass_app
def logs(app: App, name: str) -> None:
    """Print session NAME's server stderr (its last 256 KiB)."""
    from mcpcli import sessions

    found = sessions.session_logs(name)
    text = found.text
    if app.stdout_tty:
        from mcpcli.text import printable

        text = printable(text, keep_newlines=True)  # the server's bytes never drive our terminal
    app.stdout.write(text)
    if text and not text.endswith("\n"):
        app.stdout.write("\n")
    app.stdout.flush()
