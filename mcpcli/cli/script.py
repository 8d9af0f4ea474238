"""`mcp script ...`: talk back to the client from a script run by `mcp serve`.

The work is in `mcpcli.toolsfile.script_client` (standard library only); this is the
click entry so `mcp script` is a normal subcommand. Scripts usually reach the
faster shim that `mcp serve` puts first on their PATH, which skips click.
"""

from __future__ import annotations

import click

from mcpcli.cli._app import App, Command, pass_app

__all__ = ["script"]


@click.command(
    "script",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
    cls=Command,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@pass_app
def script(app: App, args: tuple[str, ...]) -> None:
    """Talk back to the client from a served script: progress, log, elicit, sample, roots, ask."""
    from mcpcli.toolsfile.script_client import main

    app.exit_code = main(list(args), prog=app.prog)
