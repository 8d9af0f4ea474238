"""`mcp doctor`: check this installation and say what to fix."""

from __future__ import annotations

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, App, Command, pass_app
from mcpcli.cli._options import output_options
from mcpcli.errors import ExitCode
from mcpcli.output import Output

__all__ = ["doctor"]


@click.command(context_settings=CONTEXT_SETTINGS, cls=Command)
@output_options
@pass_app
def doctor(app: App, out: Output) -> None:
    """Check this installation, and say how to fix what does not work.

    \b
    Checks: the version and where it is installed; that `mcp` on PATH is
    this one (not the official MCP SDK's command); that `man mcp` and your
    shell's completion find this one's; the config file; that the keyring
    stores sign-ins; the session daemon and its directory; other clients'
    config files; node, npx and uvx (and the command of each configured
    stdio server); proxy variables. Nothing is started or changed (the
    keyring check writes and removes one test entry).
    Exits 0 when all is well, 1 when a check found a problem (each with a
    fix); notes are only worth knowing.
      mcp doctor
      mcp doctor --json | jq '.checks[] | select(.status == "problem")'
    """
    from mcpcli import render
    from mcpcli.doctor import problems, run_checks

    checks = run_checks()
    count = problems(checks)
    out.emit({"ok": count == 0, "problems": count, "checks": [c.to_json() for c in checks]},
             items="checks", human=render.doctor_report)
    if count:
        app.exit_code = ExitCode.TOOL_ERROR
