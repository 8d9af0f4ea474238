"""The command tree, walked: for tests that hold a rule for every command."""

from __future__ import annotations

from collections.abc import Iterator

import click

from mcpcli.cli._root import cli


def commands() -> Iterator[tuple[str, click.Command]]:
    """Every command of the tree with its path (`mcp tools call`), groups included.

    Each context is made with its command's settings, as click makes them: a command
    keeps the help option of the first context it saw (`-h` is in the settings)."""
    def walk(ctx: click.Context) -> Iterator[tuple[str, click.Command]]:
        yield ctx.command_path, ctx.command
        group = ctx.command
        if isinstance(group, click.Group):
            for name in group.list_commands(ctx):
                sub = group.get_command(ctx, name)
                assert sub is not None
                yield from walk(click.Context(sub, info_name=name, parent=ctx, **sub.context_settings))

    yield from walk(click.Context(cli, info_name="mcp", **cli.context_settings))
