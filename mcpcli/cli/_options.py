"""The click decorators every command shares: TARGET, the connection flags, the output flags.

The flags themselves (names, kinds, defaults, help) are data in `mcpcli.core.flags`, which
the fast paths read too; `flag_option` makes each one a click option.

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

from mcpcli.cli._app import CONTEXT_SETTINGS, NO_TARGET, App, Command, pass_app
from mcpcli.cli._connection import Connection, env_options
from mcpcli.cli._types import seconds
from mcpcli.core import flags
from mcpcli.core.flags import Flag
from mcpcli.errors import McpCliError

__all__ = [
    "TargetCommand",
    "connection_options",
    "explicit_json",
    "flag_option",
    "large_result_options",
    "output_options",
    "project_option",
    "target_argument",
    "target_command",
]

F = TypeVar("F", bound=Callable[..., Any])


# -- TARGET ------------------------------------------------------------------------


class TargetCommand(Command):
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

    Best effort and exactly what the transport would spawn (`transports.spawn.launch` from
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
    from mcpcli.transports.spawn import SpawnError, prespawn

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


def flag_option(flag: Flag, *, names: tuple[str, ...] | None = None, **overrides: Any) -> Callable[[F], F]:
    """The click option of a flag declared in `mcpcli.core.flags` (which the fast paths read
    too); `overrides` are click's own (a command's help for it, a completer), `names` the
    names to use instead of the flag's."""
    kwargs: dict[str, Any] = {"help": flag.help}
    if flag.kind == "flag":
        kwargs["is_flag"] = True
    elif flag.kind == "seconds":
        kwargs["type"] = seconds()
    elif flag.kind == "choice":
        kwargs["type"] = click.Choice(list(flag.choices))
    elif flag.kind == "dir":
        kwargs["type"] = click.Path(file_okay=False)
    elif flag.kind == "file":
        kwargs["type"] = click.Path(dir_okay=False)
    elif flag.kind == "count":
        kwargs["type"] = click.IntRange(min=0)
    if flag.repeated:
        kwargs["multiple"] = True
    if flag.default is not None:
        kwargs["default"] = flag.default
    if flag.show_default:
        kwargs["show_default"] = True
    if flag.envvar:
        kwargs["envvar"] = flag.envvar
    if flag.metavar:
        kwargs["metavar"] = flag.metavar
    kwargs.update(overrides)
    return click.option(*(flag.names if names is None else names), flag.dest, **kwargs)


def connection_options(f: F) -> F:
    """Add the connection flags; the command receives them as `conn: Connection`."""
    names = [flag.dest for flag in flags.CONNECTION]

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs["conn"] = Connection(**{name: kwargs.pop(name) for name in names})
        return f(*args, **kwargs)

    for flag in reversed(flags.CONNECTION):
        wrapper = flag_option(flag)(wrapper)
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

    for flag in reversed(flags.OUTPUT):
        if flag.dest == "compact" and not short_compact:
            wrapper = flag_option(flag, names=("--compact",))(wrapper)
        else:
            wrapper = flag_option(flag)(wrapper)
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
    for flag in reversed(flags.LARGE_RESULT):
        wrapper = flag_option(flag)(wrapper)
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
