"""The click decorators every command shares: TARGET, the connection flags, the output flags.

`target_command` makes a command that talks to a server: TARGET first (or the
server command after `--`), then the command's own parameters, then the
connection and output flags, which arrive as one `Connection` and one `Output`.
Before the command runs, its stdio server is started early (`_prespawn`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, NO_TARGET, App, pass_app
from mcpcli.cli._connection import Connection, env_options
from mcpcli.cli._types import seconds
from mcpcli.errors import McpCliError

__all__ = [
    "TargetCommand",
    "connection_options",
    "explicit_json",
    "large_result_options",
    "output_options",
    "project_option",
    "target_argument",
    "target_command",
]

F = TypeVar("F", bound=Callable[..., Any])


# -- TARGET ------------------------------------------------------------------------


class TargetCommand(click.Command):
    """A command whose first positional is TARGET, unless a server command follows `--`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        app = ctx.find_object(App)
        if app is not None and app.server_command and not ctx.resilient_parsing:
            args = [NO_TARGET, *args]
        if ctx.resilient_parsing and args and self._awaits_value(ctx, args[-1]):
            # Completing that option's value: parse the words before it, so its
            # completer sees TARGET and the tool (click gives up on the whole line).
            return [*super().parse_args(ctx, args[:-1]), args[-1]]
        return super().parse_args(ctx, args)

    def _awaits_value(self, ctx: click.Context, word: str) -> bool:
        for param in self.get_params(ctx):
            if isinstance(param, click.Option) and word in param.opts and not param.is_flag:
                return True
        return False

    def invoke(self, ctx: click.Context) -> Any:
        _prespawn(ctx)
        return super().invoke(ctx)


def _prespawn(ctx: click.Context) -> None:
    """Start a stdio server now, so it boots while the rest of mcpcli imports.

    Best effort and exactly what the transport would spawn (`_spawn.launch` from
    the same entry and options), or nothing: the transport adopts it by that
    launch, and reports any problem itself.
    """
    app = ctx.find_object(App)
    params = ctx.params
    if app is None:
        return
    target = params.get("target")
    if not app.server_command and (not isinstance(target, str) or "://" in target):
        return
    from mcpcli.targets import stdio_launch
    from mcpcli.transports._spawn import SpawnError, prespawn

    try:
        entry = app.resolve(target)
        if entry.transport != "stdio" or entry.command is None or entry.keep_alive:
            return  # a keepAlive server runs in its session, started by the daemon
        prespawn(stdio_launch(entry, env_options(params.get("env") or ()), params.get("cwd")))
    except (McpCliError, SpawnError):
        return  # e.g. a config error: the command reports it when it connects


def _complete_target(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from click.shell_completion import CompletionItem

    from mcpcli.cli._completers import server_names

    # The file item goes first: click's bash script resets its replies on a file item,
    # so server names must follow it (bash then falls back to files only when none match).
    items: list[Any] = []
    if not incomplete.startswith(("http:", "https:")):
        items.append(CompletionItem(incomplete, type="file"))
    items.extend(CompletionItem(n) for n in server_names() if n.startswith(incomplete))
    if not incomplete or incomplete.startswith("@"):
        from mcpcli.cli._completers import session_names

        items.extend(CompletionItem(f"@{n}") for n in session_names() if f"@{n}".startswith(incomplete))
    return items


def target_argument(f: F) -> F:
    return click.argument("target", metavar="TARGET", shell_complete=_complete_target)(f)


def _log_level_choices() -> list[str]:
    from mcpcli.protocol import LOG_LEVELS

    return list(LOG_LEVELS)


_CONNECTION_FLAGS: list[Callable[[F], F]] = [
    click.option("--timeout", type=seconds(), default=60.0,
                 show_default=True, envvar="MCP_TIMEOUT", metavar="SECONDS",
                 help="Wait this long for each response; progress notifications restart the clock."),
    click.option("--max-timeout", type=seconds(), default=3600.0,
                 show_default=True, metavar="SECONDS",
                 help="Hard limit per request, however much progress is reported."),
    click.option("--env", "-e", multiple=True, metavar="KEY[=VALUE]",
                 help="Set a variable for a stdio server (KEY alone passes ours through)."),
    click.option("--cwd", type=click.Path(file_okay=False), help="Working directory of a stdio server."),
    click.option("--quiet", "-q", is_flag=True,
                 help="Drop what the server says unasked: its stderr and log messages "
                      "(--log-level ones still show)."),
    click.option("--server-log", type=click.Path(dir_okay=False), metavar="FILE",
                 help="Move the server's stderr and log messages to FILE (appended), off the terminal."),
    click.option("--header", "-H", multiple=True, metavar="'NAME: VALUE'",
                 help="Extra HTTP header (repeatable)."),
    click.option("--bearer-token", envvar="MCP_BEARER_TOKEN", metavar="TOKEN",
                 help="Static bearer token for HTTP servers (prefer the MCP_BEARER_TOKEN variable)."),
    click.option("--transport", type=click.Choice(["auto", "http", "sse"]), default="auto",
                 show_default=True, help="HTTP transport: Streamable HTTP, legacy SSE, or detect."),
    click.option("--protocol", metavar="VERSION",
                 help="Force a protocol version instead of negotiating (e.g. 2025-06-18)."),
    click.option("--insecure", is_flag=True, help="Do not verify TLS certificates."),
    click.option("--log-level", type=click.Choice(_log_level_choices()), metavar="LEVEL",
                 help="Ask the server for log messages at LEVEL and above (default: only "
                      "warnings and worse it sends unasked are shown)."),
    click.option("--trace", is_flag=True, help="Print the JSON-RPC traffic on stderr (secrets redacted)."),
    click.option("--record", type=click.Path(dir_okay=False), metavar="FILE",
                 help="Append the JSON-RPC exchange to FILE (0600) as NDJSON, with secret-looking "
                      "keys and the connection's secret values redacted (a tool result may hold "
                      "others: check before sharing); replay it with `mcp serve --replay FILE`."),
    click.option("--root", multiple=True, type=click.Path(file_okay=False), metavar="DIR",
                 help="Offer DIR as a root to the server (repeatable)."),
    click.option("--sampling-command", metavar="CMD",
                 help="Answer sampling requests with CMD (request JSON on stdin, reply on stdout)."),
    click.option("--elicit-json", metavar="JSON",
                 help="Answer elicitation requests with this JSON object."),
    click.option("--elicit-defaults", is_flag=True,
                 help="Answer elicitation requests with the schema's defaults."),
    click.option("--no-auth", is_flag=True, help="Never sign in; fail on 401."),
    click.option("--stored-auth-only", is_flag=True,
                 help="Use stored tokens (refreshing them) but never open a sign-in."),
    click.option("--token-store", type=click.Choice(["keyring", "file"]), envvar="MCP_TOKEN_STORE",
                 help="Where OAuth sign-ins are kept: the OS keyring (default) or a 0600 file."),
    click.option("--profile", envvar="MCP_PROFILE", metavar="NAME",
                 help="Use the sign-in of this account (one of several on a server; see `mcp auth login --profile`)."),
    click.option("--meta", multiple=True, metavar="KEY=VALUE",
                 help="Add KEY to every request's _meta (repeatable); VALUE is JSON if it parses, "
                      "else a string."),
    click.option("--traceparent", metavar="VALUE",
                 help="Continue this W3C trace: its traceparent goes into every request's _meta "
                      "(default: the TRACEPARENT variable, with TRACESTATE)."),
]


def connection_options(f: F) -> F:
    """Add the connection flags; the command receives them as `conn: Connection`."""
    names = [
        "timeout", "max_timeout", "env", "cwd", "quiet", "server_log", "header", "bearer_token",
        "transport", "protocol", "insecure", "log_level", "trace", "record", "root", "sampling_command",
        "elicit_json", "elicit_defaults", "no_auth", "stored_auth_only", "token_store", "profile", "meta",
        "traceparent",
    ]

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs["conn"] = Connection(**{name: kwargs.pop(name) for name in names})
        return f(*args, **kwargs)

    for option in reversed(_CONNECTION_FLAGS):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]


# -- consent to a project's servers ---------------------------------------------------


def _set_project(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.ensure_object(App).project = True


def project_option(f: F) -> F:
    """Add --project: this command may run servers of project files not trusted (it sets
    `App.project` while parsing, so the early start of a stdio server sees it too)."""
    return click.option(
        "--project", is_flag=True, expose_value=False, callback=_set_project,
        help="Also use servers defined only in this directory's project files (.mcp.json, "
             ".cursor/mcp.json, ...) that you have not trusted (`mcp servers trust`), for this "
             "command only.")(f)


# -- output flags ------------------------------------------------------------------


def output_options(f: F | None = None, *, short_compact: bool = True) -> Any:
    """Add --json/--jsonl/--jq/--raw/--compact; the command receives `out: Output`.

    `-c` is `--compact` as in jq, except on a command whose own `-c` came first
    (`mcp ping -c COUNT`, as ping(8)): there `--compact` has no short form.
    """
    if f is None:
        return functools.partial(output_options, short_compact=short_compact)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from mcpcli.output import Output

        app = click.get_current_context().find_object(App) or App()
        as_json = kwargs.pop("as_json")
        jsonl = kwargs.pop("jsonl")
        jq_filter = kwargs.pop("jq_filter")
        raw = kwargs.pop("raw")
        compact = kwargs.pop("compact")
        app.json_errors = bool(as_json or jsonl or jq_filter or compact)
        kwargs["out"] = Output.for_stream(
            app.stdout, tty=app.stdout_tty, as_json=as_json, jsonl=jsonl, jq_filter=jq_filter, raw=raw,
            compact=compact)
        return f(*args, **kwargs)

    wrapper = click.option("--compact", *(("-c",) if short_compact else ()), "compact", is_flag=True,
                           help="JSON on one line per value, even on a terminal (jq's -c); "
                                "implies JSON output.")(wrapper)
    wrapper = click.option("--raw", "-r", is_flag=True,
                           help="With --jq, print strings without JSON quotes.")(wrapper)
    wrapper = click.option("--jq", "jq_filter", metavar="FILTER",
                           help="Filter the JSON result with a jq expression.")(wrapper)
    wrapper = click.option("--jsonl", is_flag=True,
                           help="One JSON value per line (list items, stream events).")(wrapper)
    wrapper = click.option("--json", "as_json", is_flag=True,
                           help="Print the result as JSON (the default when stdout is not a TTY).")(wrapper)
    return wrapper


def explicit_json(out: Any) -> bool:
    """Whether the command line asked for machine output (--json, --jsonl, --jq, --compact), as
    opposed to a pipe, which makes JSON the default: for the commands whose human output is
    itself the data (a SKILL.md, a CI report), which they print even when piped."""
    params = click.get_current_context().params
    return bool(params.get("as_json") or params.get("compact") or out.jq_filter or out.mode == "jsonl")


def large_result_options(f: F) -> F:
    """Add --max-chars/--spill to a command that prints a result (call, read, get); they set
    `out.max_chars`/`out.spill_dir` before the command runs (`Output.emit` applies them)."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        max_chars = kwargs.pop("max_chars")
        spill = kwargs.pop("spill") or None
        out = kwargs["out"]
        out.max_chars = max_chars or None
        out.spill_dir = spill
        if spill is not None:
            app = click.get_current_context().find_object(App)
            out.warn = app.warn if app is not None else None
        return f(*args, **kwargs)

    wrapper.__dict__["__click_params__"] = list(f.__dict__.get("__click_params__", []))
    wrapper = click.option(
        "--spill", metavar="DIR", envvar="MCP_SPILL_DIR", type=click.Path(file_okay=False),
        help="Write a result longer than --max-chars (default 20000) to a file in DIR and print "
             "a one-line pointer (size, type, path) instead [env: MCP_SPILL_DIR].")(wrapper)
    wrapper = click.option(
        "--max-chars", type=click.IntRange(min=0), metavar="N",
        help="Cut human output after N characters, with a marker saying how much was cut "
             "(0: no limit; JSON output is never cut).")(wrapper)
    return wrapper  # type: ignore[return-value]


# -- the command -------------------------------------------------------------------


def target_command(
    group: click.Group | None = None, name: str | None = None
) -> Callable[[Callable[..., Any]], click.Command]:
    """A command that talks to a server (in `group`, or top-level when None).

    Its parameters are TARGET, then the ones decorated below this (in their
    order), then the connection and output flags; the function receives
    `app`, `target`, its own parameters, `conn` and `out`.
    """

    def decorator(f: Callable[..., Any]) -> click.Command:
        own: list[click.Parameter] = f.__dict__.pop("__click_params__", [])
        taken = {flag for param in own for flag in getattr(param, "opts", ())}
        wrapped = project_option(connection_options(output_options(pass_app(f), short_compact="-c" not in taken)))
        wrapped.__dict__.setdefault("__click_params__", []).extend(own)
        wrapped = target_argument(wrapped)
        if group is None:
            return click.command(name, cls=TargetCommand, context_settings=CONTEXT_SETTINGS)(wrapped)
        return group.command(name, cls=TargetCommand)(wrapped)

    return decorator
