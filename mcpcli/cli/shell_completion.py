"""`mcp completion bash|zsh|fish`: print the shell completion script."""

from __future__ import annotations

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, App, Command, pass_app
from mcpcli.cli._bash_complete import WordBreakBashComplete

__all__ = ["WordBreakBashComplete", "completion", "completion_script"]

SHELLS = ("bash", "zsh", "fish")



def completion_script(shell: str, prog_name: str = "mcp") -> str:
    """The completion script for `shell`, generated from the command tree.

    It is the same text as the committed `completions/` files (a test checks it);
    `scripts/gen-completions` writes those.
    """
    from click.shell_completion import get_completion_class

    from mcpcli.cli import cli

    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - click ships all three
        raise click.UsageError(f"unsupported shell {shell!r}")
    complete_var = "_{}_COMPLETE".format(prog_name.replace("-", "_").upper())
    source = cls(cli, {}, prog_name, complete_var).source()
    return source if source.endswith("\n") else source + "\n"


@click.command(context_settings=CONTEXT_SETTINGS, cls=Command)
@click.argument("shell", type=click.Choice(SHELLS))
@pass_app
def completion(app: App, shell: str) -> None:
    """Print the completion script for SHELL (bash, zsh or fish).

    \b
    Completes commands, options, configured server names (ours and other
    clients'), tool names from the last `mcp tools list` of a server,
    `--arg` parameter names and enum values from that listing's schemas, and
    prompt arguments (values from the server only through an open @session).
      bash:  eval "$(mcp completion bash)"       # in ~/.bashrc
      zsh:   eval "$(mcp completion zsh)"        # in ~/.zshrc
      fish:  mcp completion fish > ~/.config/fish/completions/mcp.fish
    Packages install the same scripts under share/ (bash-completion, zsh
    site-functions, fish vendor_completions.d).
    """
    app.stdout.write(completion_script(shell, app.prog))
    app.stdout.flush()
