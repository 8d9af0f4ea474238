"""`mcp help [COMMAND]...`: a command's help, as git and gh have it.

`mcp help tools call` prints exactly what `mcp tools call --help` prints (stdout,
exit 0); an unknown name is a usage error with the closest names.
"""

from __future__ import annotations

from typing import Any

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, App, Command, Group, no_such_command, pass_app

__all__ = ["help_command"]


def _walk(root: click.Context, words: tuple[str, ...] | list[str]) -> tuple[click.Context, list[str]]:
    """The context of the command `words` name (parsed leniently, nothing run), and the
    words left over when a command that parses its own arguments is reached (`mcp script`)."""
    ctx = root
    for at, word in enumerate(words):
        group = ctx.command
        if not isinstance(group, click.Group):
            if group.get_help_option(ctx) is None:
                return ctx, list(words[at:])
            raise click.UsageError(f"`{ctx.command_path}` has no subcommands", ctx=ctx)
        command = group.get_command(ctx, word)
        if command is None:
            raise no_such_command(group, ctx, word)
        ctx = command.make_context(word, [], parent=ctx, resilient_parsing=True)
    return ctx, []


def _complete_words(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """The subcommands of what is typed so far (`mcp help tools <TAB>`: call, grep, ...)."""
    try:
        at, rest = _walk(ctx.find_root(), ctx.params.get("command") or ())
    except click.UsageError:
        return []
    group = at.command
    if rest or not isinstance(group, click.Group):
        return []
    names = group.visible_commands(at) if isinstance(group, Group) else group.list_commands(at)
    return [name for name in names if name.startswith(incomplete)]


@click.command("help", context_settings=CONTEXT_SETTINGS, cls=Command)
@click.argument("command", nargs=-1, metavar="[COMMAND]...", shell_complete=_complete_words)
@pass_app
@click.pass_context
def help_command(ctx: click.Context, app: App, command: tuple[str, ...]) -> Any:
    """Show the help of mcp, or of COMMAND: `mcp help tools call` is `mcp tools call --help`.

    \b
      mcp help                 # the commands
      mcp help tools           # a group and its subcommands
      mcp help serve           # a command's options
    """
    at, rest = _walk(ctx.find_root(), command)
    if at.command.get_help_option(at) is None:
        # A command that reads its own flags (`mcp script`): ask it for its help.
        with at.command.make_context(at.info_name, [*rest, "--help"], parent=at.parent) as own:
            return at.command.invoke(own)
    app.stdout.write(at.get_help() + "\n")
    app.stdout.flush()
