"""`mcp servers list|show|add|remove|import|install|uninstall`: our config, and servers
other clients configure (found read-only; written only by install/uninstall)."""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, App, Group, pass_app
from mcpcli.cli._options import output_options, project_option
from mcpcli.errors import UsageError
from mcpcli.output import Output

if TYPE_CHECKING:
    from collections.abc import Callable

    from mcpcli.config import ServerEntry
    from mcpcli.other_clients import Found

__all__ = ["servers"]

JSON = dict[str, Any]
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]*$")


@click.group(cls=Group, context_settings=CONTEXT_SETTINGS)
def servers() -> None:
    """Manage configured servers.

    \b
    Our config is $XDG_CONFIG_HOME/mcpcli/mcp.json (--config FILE or
    MCP_CONFIG override it), in the mcpServers format editors use. Servers
    configured in Claude Desktop, Claude Code, Cursor, VS Code, Windsurf,
    Codex, Gemini CLI, Zed, Goose and opencode are found too (read-only) and
    can be copied with `mcp servers import`; `mcp servers install` writes one
    into such a client's config. Servers of project files (.mcp.json,
    .cursor/mcp.json, ... from this directory up) run only once you trust
    the file (`mcp servers trust`) or with --project.
    """


def _row(entry: ServerEntry, source: str, path: str, scope: str, trust: str = "user") -> JSON:
    """A server as `list` shows it; secrets in its command line or URL redacted, as `show` does."""
    from mcpcli.text import redact_entry

    row: JSON = {"name": entry.name, "transport": entry.transport, "source": source, "path": path,
                 "scope": scope, "trust": trust}
    if entry.command is not None:
        row["command"] = entry.command
        row["args"] = list(entry.args)
    if entry.url is not None:
        row["url"] = entry.url
    row.update(_session_settings(entry))
    return redact_entry(row)


def _session_settings(entry: ServerEntry) -> JSON:
    """keepAlive, idleTimeout (seconds, null for never) and restart as the config loader
    read them, so list and show say what `mcp ... NAME` will do."""
    return {"keepAlive": entry.keep_alive, "idleTimeout": entry.idle_timeout, "restart": entry.restart}


def _all_rows(app: App) -> tuple[list[JSON], list[JSON]]:
    from mcpcli import other_clients

    config = app.config()
    rows = [_row(e, "config", str(config.path), "user") for e in config.entries()]
    taken = {r["name"] for r in rows}
    found, problems = other_clients.discover()
    for item in found:
        row = _row(item.entry, item.source, str(item.path), item.scope, item.trust)
        row["shadowed"] = item.entry.name in taken
        taken.add(item.entry.name)
        rows.append(row)
    issues = [{"source": p.source, "path": str(p.path), "message": p.message} for p in problems]
    return rows, issues


@servers.command("list")
@output_options
@pass_app
def list_(app: App, out: Output) -> None:
    """List servers: ours first, then those other clients configure.

    \b
    SOURCE says where each comes from: `config` (ours) or claude-desktop,
    claude-code, cursor, vscode, windsurf, codex, gemini, zed, goose,
    opencode (--json adds the file as `path`). A name found twice is used
    from the first place (ours, then user files, then project files); later
    ones are marked shadowed. Servers of project files you have not trusted
    are marked untrusted (changed: trusted before their file changed) and
    do not run until `mcp servers trust` (or --project).
      mcp servers list
      mcp servers list --jq '.servers[] | select(.source == "cursor") | .name' -r
    """
    from mcpcli import render

    rows, problems = _all_rows(app)
    for problem in problems:
        app.warn(f"{problem['path']}: {problem['message']}")
    out.emit({"servers": rows, "problems": problems}, items="servers", human=render.servers_table)
    blocked = [r["name"] for r in rows if r["trust"] in ("untrusted", "changed") and not r.get("shadowed")]
    if blocked:
        app.info(f"not run until you trust their project files: {', '.join(blocked)}; review them "
                 "(`mcp servers show NAME`), then `mcp servers trust` here, or pass --project")


def _complete_server(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from click.shell_completion import CompletionItem

    from mcpcli.cli._completers import server_names

    return [CompletionItem(n) for n in server_names() if n.startswith(incomplete)]


def _locate(app: App, name: str) -> tuple[ServerEntry, str, str, Found | None]:
    """(entry, source id, file, where discovery found it) for a server name: ours first,
    then discovered (whether it may run is the caller's question)."""
    from mcpcli import other_clients

    config = app.config()
    entry = config.get(name)
    if entry is not None:
        return entry, "config", str(config.path), None
    item = other_clients.lookup(name)
    if item is not None:
        return item.entry, item.source, str(item.path), item
    known = sorted(set(config.names()) | set(other_clients.names()))
    hint = "known servers: " + ", ".join(known) if known else "add one with `mcp servers add`"
    raise UsageError(f"unknown server {name!r}", hint=hint)


@servers.command("show")
@click.argument("name", shell_complete=_complete_server)
@click.option("--reveal", is_flag=True, help="Show secret-looking env and header values.")
@output_options
@pass_app
def show(app: App, name: str, reveal: bool, out: Output) -> None:
    """Show one server's configuration and where it comes from.

    Values of env variables and headers whose names look secret (TOKEN, KEY,
    SECRET, PASSWORD, AUTH, Authorization...), and secrets in the command line
    (--api-key VALUE, TOKEN=VALUE) or the URL (?api_key=) are redacted unless
    --reveal. Showing runs nothing: review a project file's server here before you
    trust it.
    """
    from mcpcli import render
    from mcpcli.text import redact_entry

    entry, source, path, found = _locate(app, name)
    config = entry.to_json()
    if not reveal:
        config = redact_entry(config)
    item = {"name": entry.name, "source": source, "path": path, "transport": entry.transport,
            "trust": found.trust if found is not None else "user", **_session_settings(entry), "config": config}
    if entry.headers_helper is not None:  # a command (its output is never shown)
        item["headersHelper"] = config.get("headersHelper", entry.headers_helper)
    out.emit(item, human=render.server_detail)


def _key_values(items: tuple[str, ...], *, sep: str, what: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for item in items:
        key, found, value = item.partition(sep)
        if not found or not key.strip():
            example = "KEY=VALUE" if sep == "=" else "'Name: value'"
            raise UsageError(f"{what} {item!r}: expected {example}")
        values[key.strip()] = value if sep == "=" else value.strip()
    return values


def _given_entry(
    app: App,
    name: str,
    url: str | None,
    env_items: tuple[str, ...],
    cwd: str | None,
    header_items: tuple[str, ...],
    transport: str | None,
) -> ServerEntry | None:
    """The server given on the command line (a URL or a command after --), or None."""
    from mcpcli.config import ServerEntry

    command = list(app.server_command)
    if (command or url is not None) and not _NAME.match(name):
        raise UsageError(f"invalid server name {name!r}",
                         hint="use letters, digits, '.', '_', '-' and '@', starting with a letter or digit")
    if command and url is not None:
        raise UsageError("give either a URL or a command after --, not both")
    env = _key_values(env_items, sep="=", what="--env")
    headers = _key_values(header_items, sep=":", what="--header")
    if not command and url is None:
        if env or cwd or headers or transport:
            raise UsageError("--env, --cwd, --header and --transport describe a server given here",
                             hint="put its command after -- or give its URL")
        return None
    if url is not None:
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"{url!r} is not an http(s) URL",
                             hint="to give a command, put it after --: ... NAME -- COMMAND...")
        if "${" not in url:  # with a reference, it is checked once filled in, at use
            from mcpcli.transports.http import url_problem

            problem = url_problem(url)
            if problem is not None:
                raise UsageError(problem)
        if env or cwd:
            raise UsageError("--env and --cwd apply to stdio servers, not URLs")
        return ServerEntry(name=name, url=url, headers=headers, transport=transport or "http")
    if headers or transport:
        raise UsageError("--header and --transport apply to URL servers, not commands")
    return ServerEntry(name=name, command=command[0], args=command[1:], env=env, cwd=cwd)


#: The names our command is installed under.
OUR_COMMANDS = ("mcp", "mcpcli")


def _ours_by_path(entry: ServerEntry) -> ServerEntry:
    """A server whose command is `mcp` or `mcpcli` (`-- mcp serve tools.yaml`) runs this
    mcpcli: written with the absolute path of our executable, since the client that starts
    it has its own PATH (an editor started from the desktop has not a venv's or pipx's).
    Where no script of that name sits beside us, `python -m mcpcli` by absolute path."""
    if entry.command not in OUR_COMMANDS:
        return entry
    argv = _own_command(entry.command)
    return dataclasses.replace(entry, command=argv[0], args=[*argv[1:], *entry.args])


def _own_command(name: str) -> list[str]:
    """The argv that runs this mcpcli as `name`, by absolute path (symlinks kept, so a
    pipx or venv upgrade behind them still works)."""
    import os
    import sys
    from pathlib import Path

    places: list[Path] = []
    running = sys.argv[0] if sys.argv else ""
    if os.sep in running and os.path.basename(running) in OUR_COMMANDS:  # the script we run as
        places.append(Path(os.path.abspath(running)).with_name(name))
    if sys.executable:  # the scripts installed with our interpreter (venv/bin, pipx)
        places.append(Path(os.path.abspath(sys.executable)).with_name(name))
    for place in places:
        if place.is_file() and os.access(place, os.X_OK):
            return [str(place)]
    return [os.path.abspath(sys.executable), "-m", "mcpcli"]


def _session_options(keep_alive: bool, idle_timeout: str | None, restart: str | None) -> JSON:
    """The session keys `add` writes (`keepAlive`, `idleTimeout`, `restart`), checked by
    the config loader's own rules so the file it writes always loads."""
    from mcpcli.config import normalize_entry
    from mcpcli.errors import ConfigError

    fields: JSON = {}
    if keep_alive:
        fields["keepAlive"] = True
    if idle_timeout is not None:
        fields["idleTimeout"] = idle_timeout.strip()
    if restart is not None:
        fields["restart"] = restart
    try:
        normalize_entry("check", {"command": "check", **fields}, source="--idle-timeout")
    except ConfigError:
        raise UsageError(
            f"--idle-timeout must be a duration such as 90s, 30m or 2h, or never, not {idle_timeout!r}"
        ) from None
    return fields


@servers.command("add")
@click.argument("name")
@click.argument("url", required=False)
@click.option("--env", "-e", "env_items", multiple=True, metavar="KEY=VALUE",
              help="Environment variable for a stdio server (repeatable; ${VAR} is expanded at use).")
@click.option("--cwd", metavar="DIR", help="Working directory for a stdio server.")
@click.option("--header", "-H", "header_items", multiple=True, metavar="'NAME: VALUE'",
              help="HTTP header for a URL server (repeatable; ${VAR} is expanded at use).")
@click.option("--transport", type=click.Choice(["http", "sse"]), default=None,
              help="Remote transport: Streamable HTTP (default) or legacy SSE.")
@click.option("--keep-alive", is_flag=True,
              help="Commands naming this server share a session, opened on first use.")
@click.option("--idle-timeout", metavar="DURATION",
              help="Close its session after this long unused: 90s, 30m, 2h or never (default 30m).")
@click.option("--restart", type=click.Choice(["no", "on-failure"]), default=None,
              help="Restart the server when it crashes while in a session (default no).")
@click.option("--headers-helper", metavar="CMD",
              help="A URL server's headers come from CMD's output (run through sh -c at connect time "
                   "and after a 401): a JSON object or 'Name: value' lines.")
@click.option("--force", "-f", is_flag=True, help="Replace an existing server of that name.")
@output_options
@pass_app
def add(
    app: App,
    name: str,
    url: str | None,
    env_items: tuple[str, ...],
    cwd: str | None,
    header_items: tuple[str, ...],
    transport: str | None,
    keep_alive: bool,
    idle_timeout: str | None,
    restart: str | None,
    headers_helper: str | None,
    force: bool,
    out: Output,
) -> None:
    """Add a server to our config: a command after --, or a URL.

    \b
      mcp servers add everything -- npx -y @modelcontextprotocol/server-everything
      mcp servers add gh --env GITHUB_TOKEN='${GITHUB_TOKEN}' -- github-mcp-server stdio
      mcp servers add remote https://example.com/mcp -H 'Authorization: Bearer ${TOKEN}'
      mcp servers add ev --keep-alive --idle-timeout 2h --restart on-failure -- mcp-server-everything
      mcp servers add corp https://mcp.corp.example/mcp --headers-helper 'corp-cli mcp-headers'
    Write secrets as ${VAR} references: they are read from the environment when
    the server is used, and never stored in the file.
    """
    entry = _given_entry(app, name, url, env_items, cwd, header_items, transport)
    if entry is None:
        raise UsageError("nothing to add", hint="mcp servers add NAME -- COMMAND ARGS..., or mcp servers add NAME URL")
    session = _session_options(keep_alive, idle_timeout, restart)
    if headers_helper is not None:
        if entry.url is None:
            raise UsageError("--headers-helper applies to URL servers, not commands")
        if not headers_helper.strip():
            raise UsageError("--headers-helper: give a command")
        session["headersHelper"] = headers_helper
    if session:
        entry = dataclasses.replace(entry, raw={**entry.raw, **session})
    config = app.config()
    existed = config.set(entry, replace=force)
    app.info(f"{'replaced' if existed else 'added'} {name} in {config.path}")
    _warn_literal_secrets(app, entry, str(config.path))
    if not out.human:
        from mcpcli.text import redact_entry

        out.emit({"name": name, "path": str(config.path), "replaced": existed,
                  "config": redact_entry(entry.to_json())})


def _warn_literal_secrets(app: App, entry: ServerEntry, path: str) -> None:
    """Say that secrets written as they are (not `${VAR}` references) sit in plain text."""
    from mcpcli.text import entry_secrets

    literal = list(dict.fromkeys(where for where, value in entry_secrets(entry.to_json()) if "${" not in value))
    if not literal:
        return
    kind, name = literal[0].split(" ", 1)[0], literal[0].rsplit(" ", 1)[-1]
    var = re.sub(r"[^A-Za-z0-9]+", "_", name.lstrip("-")).strip("_").upper() or "TOKEN"
    example = {
        "env": f"--env '{name}=${{{var}}}'",
        "header": "-H 'Authorization: Bearer ${TOKEN}'" if name.lower() == "authorization"
        else f"-H '{name}: ${{{var}}}'",
    }.get(kind, f"'${{{var}}}' in place of the value")
    signin = f", or sign in with `mcp auth login {entry.name}` if the server offers OAuth" if entry.url else ""
    app.warn(f"{entry.name}: {', '.join(literal)}: a secret stored in plain text in {path}; write a "
             f"${{VAR}} reference instead ({example}), read from the environment when the server is "
             f"used{signin}")


@servers.command("remove")
@click.argument("name", shell_complete=_complete_server)
@output_options
@pass_app
def remove(app: App, name: str, out: Output) -> None:
    """Remove a server from our config (`servers uninstall` edits other clients' files)."""
    from mcpcli import other_clients

    config = app.config()
    if not config.remove(name):
        for item in other_clients.discover()[0]:
            if item.entry.name == name:
                hint = (f"to take it out of {item.label}'s file: mcp servers uninstall {name} --from {item.source}"
                        if item.source in _CLIENTS and item.scope == "user"
                        else f"change it in {item.label}")
                raise UsageError(f"{name!r} is configured in {item.label} ({item.path}), not in our config",
                                 hint=hint)
        raise UsageError(f"no server {name!r} in {config.path}")
    app.info(f"removed {name} from {config.path}")
    if not out.human:
        out.emit({"name": name, "path": str(config.path), "removed": True})


@servers.command("import")
@click.argument("source", required=False, type=click.Choice(["all", "claude-code", "claude-desktop",
                                                              "cursor", "vscode", "windsurf", "codex",
                                                              "gemini", "zed", "goose", "opencode"]))
@click.option("--name", "names", multiple=True, metavar="NAME", help="Import only this server (repeatable).")
@click.option("--force", "-f", is_flag=True, help="Replace servers that already exist in our config.")
@click.option("--dry-run", "-n", is_flag=True, help="Show what would be imported; change nothing.")
@project_option
@output_options
@pass_app
def import_(
    app: App, source: str | None, names: tuple[str, ...], force: bool, dry_run: bool, out: Output
) -> None:
    """Copy servers configured in other clients into our config.

    \b
    SOURCE is one of claude-code, claude-desktop, cursor, vscode, windsurf,
    codex, gemini, zed, goose, opencode, or all (the default). Existing names
    are skipped unless --force, and so are the servers of project files you
    have not trusted unless --project (once in our config, they run anywhere).
      mcp servers import claude-desktop --dry-run
      mcp servers import --name github
    """
    from mcpcli import other_clients

    selected = None if source in (None, "all") else [source]
    found, problems = other_clients.discover(sources=selected)
    for problem in problems:
        app.warn(f"{problem.path}: {problem.message}")
    config = app.config()
    existing = set(config.names())
    imported: list[JSON] = []
    skipped: list[JSON] = []
    done: set[str] = set()
    for item in found:
        name = item.entry.name
        if (names and name not in names) or name in done:
            continue
        done.add(name)
        origin = {"name": name, "source": item.source, "path": str(item.path)}
        if name in existing and not force:
            skipped.append({**origin, "reason": "already in our config (use --force to replace)"})
            continue
        if item.needs_consent and not app.project:
            skipped.append({**origin, "reason": "in a project file you have not trusted "
                                                "(`mcp servers trust` it, or pass --project)"})
            continue
        if "${input:" in str(item.entry.to_json()):
            app.warn(f"{name}: uses VS Code ${{input:...}} variables, which mcp cannot fill in")
        if not dry_run:
            config.set(item.entry)
            _warn_literal_secrets(app, item.entry, str(config.path))
        imported.append({**origin, "replaced": name in existing})
    for wanted in names:
        if wanted not in done:
            skipped.append({"name": wanted, "reason": "not found in the selected sources"})
    for row in imported:
        verb = "would import" if dry_run else "imported"
        app.info(f"{verb} {row['name']} from {other_clients.SOURCES[row['source']]} ({row['path']})")
    for row in skipped:
        app.info(f"skipped {row['name']}: {row['reason']}")
    if not imported and not skipped:
        app.info("no servers found to import")
    if not out.human:
        out.emit({"imported": imported, "skipped": skipped, "path": str(config.path), "dryRun": dry_run})
    if names and any(s["reason"].startswith("not found") for s in skipped):
        raise UsageError("some servers were not found: "
                         + ", ".join(s["name"] for s in skipped if s["reason"].startswith("not found")))


_CLIENTS = ["claude-code", "claude-desktop", "cursor", "vscode", "windsurf", "codex", "gemini", "zed"]


def _show_change(app: App, out: Output, change: Any, dry_run: bool,
                 describe: Callable[[Any], tuple[str, JSON]]) -> None:
    """Print a planned change: its diff (--dry-run), or write it and say where.
    `describe(change)` gives the verb and extra JSON fields, asked after the write (which
    plans the change again if the file changed meanwhile)."""
    from mcpcli.other_clients import SOURCES

    label = SOURCES.get(change.client, change.client)
    backup = None if dry_run else change.apply()
    for warning in change.warnings:
        app.warn(warning)
    verb, extra = describe(change)
    result: JSON = {"name": change.name, "client": change.client, "path": str(change.path),
                    "dryRun": dry_run, **extra}
    if dry_run:
        diff = change.diff()
        if out.human:
            out.stdout.write(diff)
            out.stdout.flush()
        else:
            out.emit({**result, "diff": diff})
        return
    note = f" (previous file kept as {backup})" if backup else ""
    app.info(f"{verb} {change.name} {'in' if verb != 'removed' else 'from'} {label} ({change.path}){note}")
    if not out.human:
        out.emit({**result, "backup": str(backup) if backup else None})


@servers.command("install")
@click.argument("name", shell_complete=_complete_server)
@click.argument("url", required=False)
@click.option("--into", "client", required=True, type=click.Choice(_CLIENTS),
              help="The client whose config gets the server.")
@click.option("--env", "-e", "env_items", multiple=True, metavar="KEY=VALUE",
              help="Environment variable for a stdio server given after -- (repeatable).")
@click.option("--cwd", metavar="DIR", help="Working directory for a stdio server given after --.")
@click.option("--header", "-H", "header_items", multiple=True, metavar="'NAME: VALUE'",
              help="HTTP header for a URL server given here (repeatable).")
@click.option("--transport", type=click.Choice(["http", "sse"]), default=None,
              help="Remote transport of a URL given here: Streamable HTTP (default) or legacy SSE.")
@click.option("--force", "-f", is_flag=True, help="Replace a server of that name in the client's config.")
@click.option("--dry-run", "-n", is_flag=True,
              help="Print the change as a unified diff (--json, or not a terminal: a diff field); write nothing.")
@project_option
@output_options
@pass_app
def install(
    app: App,
    name: str,
    url: str | None,
    client: str,
    env_items: tuple[str, ...],
    cwd: str | None,
    header_items: tuple[str, ...],
    transport: str | None,
    force: bool,
    dry_run: bool,
    out: Output,
) -> None:
    """Write a server into another client's config (Claude, Cursor, VS Code...).

    \b
    The server is NAME from our config (or one discovered elsewhere: one of
    a project file you have not trusted only with --project, since the
    client will run it), or is given here: a command after --, or a URL.
      mcp servers install github --into cursor
      mcp servers install everything --into codex -- npx -y @modelcontextprotocol/server-everything
      mcp servers install remote --into vscode https://example.com/mcp --dry-run
    \b
    Only that one entry changes: the file's other content, comments and
    indentation are kept, the write is atomic and the old file is kept as
    FILE.bak. A name already there is replaced only with --force. ${VAR}
    references become the client's own syntax where it has one.
    """
    from mcpcli import install as installer
    from mcpcli.targets import consent_error

    entry = _given_entry(app, name, url, env_items, cwd, header_items, transport)
    if entry is None:
        entry, _, _, found = _locate(app, name)
        if found is not None and found.needs_consent and not app.project:
            raise consent_error(found)
    change = installer.plan_install(_ours_by_path(entry), client, force=force)
    _show_change(app, out, change, dry_run,
                 lambda c: ("replaced" if c.replaced else "installed", {"replaced": c.replaced}))


@servers.command("uninstall")
@click.argument("name")
@click.option("--from", "client", required=True, type=click.Choice(_CLIENTS),
              help="The client whose config loses the server.")
@click.option("--dry-run", "-n", is_flag=True,
              help="Print the change as a unified diff (--json, or not a terminal: a diff field); write nothing.")
@output_options
@pass_app
def uninstall(app: App, name: str, client: str, dry_run: bool, out: Output) -> None:
    """Remove a server from another client's config (what install wrote).

    \b
      mcp servers uninstall github --from cursor --dry-run
    The rest of the file is kept byte for byte; the old file is kept as FILE.bak.
    """
    from mcpcli import install as installer

    change = installer.plan_uninstall(name, client)
    _show_change(app, out, change, dry_run, lambda c: ("removed", {"removed": True}))


def _add_trust_commands() -> None:
    """`trust` and `untrust` live in their own module (`_servers_trust`), in this group."""
    from mcpcli.cli._servers_trust import trust, untrust

    servers.add_command(trust)
    servers.add_command(untrust)


_add_trust_commands()
