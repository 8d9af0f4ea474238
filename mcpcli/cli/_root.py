"""The root click group and the one error boundary, `run()`.

Subcommands live one per module and are imported only when invoked, so
`mcp --help` and shell completion stay fast. `run()` is the only place that
turns exceptions into exit codes and messages.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from mcpcli import __version__
from mcpcli.cli._app import CONTEXT_SETTINGS, App, Group, GroupHelp
from mcpcli.errors import ExitCode, McpCliError

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

__all__ = ["COMMANDS", "cli", "run", "split_server_command"]

#: name -> (module:attribute, short help). The help is here so `--help` imports nothing.
COMMANDS: dict[str, tuple[str, str]] = {
    "tools": ("mcpcli.cli.tools:tools", "List, inspect and call tools."),
    "resources": ("mcpcli.cli.resources:resources", "List, read and watch resources."),
    "prompts": ("mcpcli.cli.prompts:prompts", "List prompts and render them."),
    "tasks": ("mcpcli.cli.tasks:tasks", "Follow, inspect and cancel background tasks."),
    "complete": ("mcpcli.cli.complete:complete", "Ask the server to complete an argument value."),
    "ping": ("mcpcli.cli.ping:ping", "Check that a server answers and time the round trip."),
    "info": ("mcpcli.cli.info:info", "Show server identity and capabilities."),
    "check": ("mcpcli.cli.check:check", "Check that a server is correct and usable by every client (for CI)."),
    "snapshot": ("mcpcli.cli.snapshot:snapshot", "Write the server's surface as canonical JSON (for CI)."),
    "diff": ("mcpcli.cli.diff:diff", "Compare two surfaces and say which changes break clients."),
    "test": ("mcpcli.cli.test:test", "Run saved calls with assertions (YAML test files) against servers."),
    "inspect": ("mcpcli.cli.inspect:inspect", "Browse and call a server in a full-screen terminal UI."),
    "skill": ("mcpcli.cli.skill:skill", "Write an Agent Skill (SKILL.md) for using a server through mcp."),
    "servers": ("mcpcli.cli.servers:servers", "Manage configured servers."),
    "session": ("mcpcli.cli.session:session", "Keep servers running between commands (persistent sessions)."),
    "serve": ("mcpcli.cli.serve:serve", "Serve a tools.yaml file as an MCP server."),
    "auth": ("mcpcli.cli.auth:auth", "Sign in to servers and manage stored tokens."),
    "completion": ("mcpcli.cli.shell_completion:completion", "Print the shell completion script."),
    "doctor": ("mcpcli.cli.doctor:doctor", "Check this installation and say what to fix."),
    "script": ("mcpcli.cli.script:script", "Talk back to the client from a served script."),
    "help": ("mcpcli.cli.help:help_command", "Show the help of mcp or of a command (mcp help tools call)."),
}
HIDDEN = {"script"}


class LazyGroup(Group):
    """A group whose subcommands are imported on first use."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.lazy) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name not in self.lazy:
            return None
        import importlib

        module_name, attr = self.lazy[cmd_name][0].split(":")
        try:
            command: click.Command = getattr(importlib.import_module(module_name), attr)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            return None
        if cmd_name in HIDDEN:
            command.hidden = True
        self.commands[cmd_name] = command
        return command

    def visible_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in self.list_commands(ctx) if name not in HIDDEN]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [
            (name, self.lazy[name][1]) if name in self.lazy else (name, self.commands[name].get_short_help_str())
            for name in self.visible_commands(ctx)
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    context_settings=CONTEXT_SETTINGS,
    epilog="Run `mcp help COMMAND` (or `mcp COMMAND --help`) for a command's options. Exit codes: see `man mcp`.",
)
@click.version_option(__version__, "-V", "--version", prog_name="mcpcli")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    envvar="MCP_CONFIG",
    help="Config file with mcpServers (default: $XDG_CONFIG_HOME/mcpcli/mcp.json).",
)
@click.option("--debug", is_flag=True, hidden=True, help="Show tracebacks for internal errors.")
@click.pass_context
def cli(ctx: click.Context, config_path: str | None, debug: bool) -> None:
    """mcp: call any MCP server from the shell, and serve any script as one.

    \b
    Targets: a server name from the config, an http(s):// URL, a tools.yaml
    file, a server command after `--`, or @NAME, a session (`mcp session`):
      mcp tools list -- npx -y @modelcontextprotocol/server-everything
      mcp tools call srv weather --arg city=Paris | jq .
      mcp serve tools.yaml
    """
    app = ctx.ensure_object(App)
    if config_path:
        from pathlib import Path

        app.config_path = Path(config_path)
    app.debug = app.debug or debug
    if app.debug:
        import logging

        # The server runtime logs a failing handler as one line; with --debug, with its traceback.
        logging.getLogger("mcpcli").setLevel(logging.DEBUG)


def split_server_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split argv at the first `--`: what follows is the server command."""
    args = list(argv)
    if "--" in args:
        at = args.index("--")
        return args[:at], args[at + 1 :]
    return args, []


def _prog_name() -> str:
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "mcp"
    return name if name in ("mcp", "mcpcli") else "mcp"


def run(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; the only place exceptions become exit codes."""
    prog = _prog_name()
    raw = list(sys.argv[1:] if argv is None else argv)
    args, command = split_server_command(raw)
    app = App(prog=prog, server_command=command, debug="--debug" in args)
    if any(name.startswith("OTEL_") for name in os.environ):
        from mcpcli import spans

        spans.configure("mcpcli", app.warn)  # spans when the variables ask (imports nothing yet)
    try:
        return _main(app, args)
    finally:
        spawn = sys.modules.get("mcpcli.transports.spawn")
        if spawn is not None:
            spawn.discard_prespawned()
        traced = sys.modules.get("mcpcli.spans")
        if traced is not None:
            traced.shutdown()  # the spans still queued, bounded


def _invoke(app: App, args: list[str]) -> None:
    """Run click; an exception group (from a task group) becomes the one error inside it.

    So a typed error, Ctrl-C or a broken stdout pipe raised in a task is handled
    like the same error raised directly, and anything else is one line, never
    a traceback.
    """
    if "_{}_COMPLETE".format(app.prog.replace("-", "_").upper()) in os.environ:
        import mcpcli.cli._bash_complete  # noqa: F401  (registers our bash completion class)
    try:
        cli.main(args=args, prog_name=app.prog, obj=app, standalone_mode=False)
    except BaseExceptionGroup as group:
        from mcpcli.errors import unwrap

        inner = unwrap(group)
        if isinstance(inner, (Exception, KeyboardInterrupt, SystemExit)) and inner is not group:
            raise inner from None
        raise McpCliError(f"internal error: {type(inner).__name__}: {inner}") from None
    except (Exception, KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # a stray cancellation or the like: one line, too
        raise McpCliError(f"internal error: {type(exc).__name__}: {exc}") from None


def _stdout_gone() -> int:
    """Our stdout's reader left: send what remains to /dev/null and exit 0, quietly."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ is not None else 1)
    return ExitCode.OK


def _main(app: App, args: list[str]) -> int:
    try:
        _invoke(app, args)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:
        app.error_line("aborted")
        return ExitCode.INTERRUPTED
    except GroupHelp as exc:
        app.stderr.write(exc.message + "\n")
        app.stderr.flush()
        return ExitCode.USAGE
    except click.ClickException as exc:
        if isinstance(exc, click.UsageError):
            app.usage_error(exc)
            return ExitCode.USAGE
        app.report(McpCliError(exc.format_message()))
        return ExitCode.TOOL_ERROR
    except McpCliError as exc:
        app.report(exc)
        return exc.exit_code
    except KeyboardInterrupt:
        app.error_line("interrupted")
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # The reader of our stdout went away (`mcp ... | head`): not our error.
        return _stdout_gone()
    except SystemExit as exc:
        # click turns EPIPE into exit 1 (and wraps the streams to silence their
        # last flush); the same event gets the same status as above.
        if type(sys.stdout).__name__ == "_PacifyFlushWrapper":
            return _stdout_gone()
        raise exc from None
    except Exception as exc:  # an internal bug: one line, traceback only with --debug
        if app.debug:
            import traceback

            traceback.print_exc()
        app.report(
            McpCliError(
                f"internal error: {type(exc).__name__}: {exc}",
                hint="please report this at https://github.com/mcpcli/mcpcli/issues (run with --debug for a traceback)",
            )
        )
        return ExitCode.TOOL_ERROR
    return app.exit_code
