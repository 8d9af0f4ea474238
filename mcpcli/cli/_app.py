"""The environment a command runs in (`App`) and the runner every command shares.

`App` holds the streams, TTY facts and config location (httpie's `Environment`):
commands never touch `sys.stdout` directly, and tests build an `App` with
in-memory streams. It resolves a command's TARGET once, connects to it
(`with_client`), runs async work with polite Ctrl-C, and prints one-line
messages on stderr. The flags live in `_connection` (what they mean) and
`_options` (the click decorators).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from mcpcli.errors import LINE_BREAK, ExitCode, Interrupted, McpCliError, UsageError, print_error
from mcpcli.text import one_line

if TYPE_CHECKING:
    from pathlib import Path

    from mcpcli.cli._connection import Connection
    from mcpcli.client import Client, ClientOptions
    from mcpcli.config import Config, ServerEntry
    from mcpcli.connect import ConnectOptions

__all__ = ["CONTEXT_SETTINGS", "NO_TARGET", "App", "Command", "Group", "GroupHelp", "no_such_command", "offered", "pass_app"]

T = TypeVar("T")

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

#: Placeholder for the TARGET positional when the server command came after `--`.
NO_TARGET = "\x00--"
#: Bound on the interrupt hooks run on the first Ctrl-C.
INTERRUPT_GRACE = 5.0


class GroupHelp(click.UsageError):
    """A group run without a subcommand. Its message is the group's help exactly as
    `--help` lays it out; `run()` prints it whole on stderr and exits 2 (click's own
    convention for a missing subcommand, since 8.2), where `--help` and `mcp help`
    print it on stdout and exit 0."""


def no_such_command(group: click.Group, ctx: click.Context, name: str) -> click.UsageError:
    """`No such command 'x'.`, with the closest visible names when some are close."""
    import difflib

    visible = group.visible_commands(ctx) if isinstance(group, Group) else group.list_commands(ctx)
    close = difflib.get_close_matches(name, visible, n=3)
    message = f"No such command {name!r}."
    if len(close) == 1:
        message += f" Did you mean {close[0]!r}?"
    elif close:
        message += " Did you mean one of: " + ", ".join(repr(c) for c in close) + "?"
    return click.UsageError(message, ctx=ctx)


@contextmanager
def _usage_of(ctx: click.Context) -> Iterator[None]:
    """A usage error raised while parsing `ctx`'s command names that command (click's
    parser leaves it out of "Option '--x' requires an argument", and the hint then
    pointed at `mcp --help`)."""
    try:
        yield
    except click.UsageError as exc:
        if exc.ctx is None:
            exc.ctx = ctx
        raise


class Command(click.Command):
    """Every `mcp` command that is not a group (see `_usage_of`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        with _usage_of(ctx):
            return super().parse_args(ctx, args)


class Group(click.Group):
    """Every `mcp` command group: the same help and typo handling whatever click version
    is installed (8.1 printed the help on stdout with exit 0, 8.2 squashed it into an
    error; suggestions for unknown commands came with 8.4 and saw loaded commands only).
    What it makes with `.command()` and `.group()` are ours too."""

    command_class = Command
    group_class = type

    def visible_commands(self, ctx: click.Context) -> list[str]:
        """The subcommands `--help` lists (not the hidden ones)."""
        return [n for n in self.list_commands(ctx) if not getattr(self.get_command(ctx, n), "hidden", True)]

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            raise GroupHelp(ctx.get_help(), ctx=ctx)
        with _usage_of(ctx):
            return super().parse_args(ctx, args)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and not ctx.resilient_parsing and self.get_command(ctx, name) is None:
            raise no_such_command(self, ctx, name)
        return super().resolve_command(ctx, args)


@dataclass
class App:
    """The environment a command runs in; tests replace any field."""

    prog: str = "mcp"
    server_command: list[str] = field(default_factory=list)
    config_path: Path | None = None
    debug: bool = False
    stdin: IO[str] = field(default_factory=lambda: sys.stdin)
    stdout: IO[str] = field(default_factory=lambda: sys.stdout)
    stderr: IO[str] = field(default_factory=lambda: sys.stderr)
    #: Set by commands that take --json, so errors are printed as JSON too.
    json_errors: bool = False
    #: The exit status for a command that finished without raising.
    exit_code: int = ExitCode.OK
    #: Run (bounded, while the connection still works) on the first Ctrl-C, before
    #: the command is cancelled: e.g. `tasks/cancel` for a task being waited for.
    interrupt_hooks: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    #: Set when only clean-up is left (a stdio server's input ended): a SIGTERM then is
    #: the client's ordinary way to stop us (after closing stdin), not an interruption.
    winding_down: bool = False
    #: Set by a server (`mcp serve`): a signal is how it is stopped, so neither is an error
    #: line. SIGTERM (service managers, clients) exits 0 after the graceful shutdown; Ctrl-C
    #: (SIGINT) exits 130, as an interrupted command does, so a shell or script still sees it.
    signal_stops: bool = False
    #: --project: servers of project files not trusted may run for this command.
    project: bool = False
    #: What `client` connected with last (the entry and both options), for a second
    #: connection to the same server: `mcp tools` probing for tools a capability hides.
    connected: tuple[ServerEntry, ConnectOptions, ClientOptions] | None = None
    _config: Config | None = None
    _entries: dict[str | None, ServerEntry] = field(default_factory=dict)

    @property
    def stdout_tty(self) -> bool:
        return _isatty(self.stdout)

    @property
    def stderr_tty(self) -> bool:
        return _isatty(self.stderr)

    @property
    def stdin_tty(self) -> bool:
        return _isatty(self.stdin)

    @property
    def color(self) -> bool:
        """Colour on stderr: a TTY, and NO_COLOR unset (or empty, as no-color.org says)."""
        if os.environ.get("NO_COLOR"):
            return False
        if os.environ.get("FORCE_COLOR"):
            return True
        return self.stderr_tty and os.environ.get("TERM") != "dumb"

    def config(self) -> Config:
        """Our config, carrying the command's consent (--project) to wherever names resolve."""
        if self._config is None:
            from mcpcli.config import Config

            self._config = Config(self.config_path)
        self._config.trust_project = self.project
        return self._config

    # -- messages on stderr ------------------------------------------------------

    def error_line(self, message: str) -> None:
        """An error line without a hint, never JSON (Ctrl-C, an aborted prompt)."""
        print_error(McpCliError(message), self.prog, stream=self.stderr)

    def wind_down(self) -> None:
        """Say that only clean-up is left (see `winding_down`)."""
        self.winding_down = True

    def warn(self, message: str) -> None:
        self.stderr.write(f"{self.prog}: warning: {one_line(message, newline=LINE_BREAK)}\n")
        self.stderr.flush()

    def info(self, message: str) -> None:
        self.stderr.write(f"{self.prog}: {one_line(message, newline=LINE_BREAK)}\n")
        self.stderr.flush()

    def report(self, exc: McpCliError) -> None:
        """Print an error: one line (plus a hint line), or a JSON object under --json
        (`errors.print_error`, which the fast paths print with too)."""
        print_error(exc, self.prog, json_errors=self.json_errors, stream=self.stderr)

    def usage_error(self, exc: click.UsageError) -> None:
        ctx = exc.ctx
        path = ctx.command_path if ctx is not None else self.prog
        hint = None if self.json_errors else f"see `{path} --help`"
        self.report(UsageError(exc.format_message(), hint=hint))

    # -- running async work ------------------------------------------------------

    def run(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run `fn` on anyio; Ctrl-C cancels it politely, a second one kills servers."""
        import anyio

        outcome: list[T] = []
        signalled: list[int] = []

        async def interrupted(scope: anyio.CancelScope) -> None:
            with anyio.move_on_after(INTERRUPT_GRACE):
                for hook in list(self.interrupt_hooks):
                    try:
                        await hook()
                    except McpCliError as exc:
                        self.warn(str(exc))
            scope.cancel()

        async def watch(scope: anyio.CancelScope, tg: anyio.abc.TaskGroup,
                        *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                task_status.started()
                async for signum in signals:
                    signalled.append(signum)
                    if len(signalled) == 1 and self.interrupt_hooks:
                        tg.start_soon(interrupted, scope)  # e.g. tasks/cancel, then cancel
                        continue
                    scope.cancel()
                    if len(signalled) > 1:
                        from mcpcli.transports.stdio import kill_all

                        kill_all()

        async def main() -> None:
            async with anyio.create_task_group() as tg:
                with anyio.CancelScope() as work:
                    # Handlers in place before the work starts: a server already listening
                    # must not be killed outright by a service manager's SIGTERM.
                    await tg.start(watch, work, tg)
                    outcome.append(await fn())
                tg.cancel_scope.cancel()

        try:
            anyio.run(main)
        except BaseException as exc:
            from mcpcli.errors import unwrap

            inner = unwrap(exc)
            if inner is exc:
                raise
            raise inner from None
        if signalled:
            if (self.winding_down or self.signal_stops) and set(signalled) == {signal.SIGTERM}:
                raise click.exceptions.Exit(ExitCode.OK)  # stopped as asked: quietly
            if self.signal_stops:  # a server's Ctrl-C: no error line either, but 130
                # click hands an Exit's code back from main() (run() returns the App's).
                self.exit_code = ExitCode.INTERRUPTED
                raise click.exceptions.Exit(ExitCode.INTERRUPTED)
            raise Interrupted("interrupted")
        if not outcome:  # pragma: no cover - cancelled without a signal
            raise Interrupted("cancelled")
        return outcome[0]

    def with_client(self, target: str | None, conn: Connection, fn: Callable[[Client], Awaitable[T]]) -> T:
        """Connect to TARGET, run `fn` with the client, disconnect: a command's whole run.

        The client is closed before the result is returned, so whatever the
        command prints afterwards comes after the server is gone.
        """

        async def go() -> T:
            async with self.client(target, conn) as client:
                return await fn(client)

        return self.run(go)

    @asynccontextmanager
    async def client(
        self,
        target: str | None,
        conn: Connection,
        *,
        adjust: Callable[[ClientOptions], ClientOptions] | None = None,
        connecting: Callable[[], None] | None = None,
    ) -> AsyncIterator[Client]:
        """Connect to TARGET (or the `--` command) with the command's connection flags;
        `adjust` changes the client options they make (`mcp check` traces the traffic);
        `connecting` is called once `connected` is set, before the connection is made."""
        from mcpcli.connect import connect

        entry = self.resolve(target)
        if entry.transport == "session":
            ignored = [flag for flag, given in (("--env", conn.env), ("--cwd", conn.cwd), ("--header", conn.header)) if given]
            if conn.profile and conn.profile != os.environ.get("MCP_PROFILE"):  # the flag, not the variable
                ignored.append("--profile")
            if ignored:
                self.warn(
                    f"{', '.join(ignored)} ignored: session {entry.name!r} keeps what it was opened "
                    f"with (give them to `mcp session open`)"
                )
        try:
            options = conn.client_options(self, entry)
            if adjust is not None:
                options = adjust(options)
            self.connected = (entry, conn.connect_options(self), options)
            if connecting is not None:
                connecting()
            async with connect(*self.connected) as client:
                yield client
        finally:
            conn.close()

    def resolve(self, target: str | None) -> ServerEntry:
        """The server entry for TARGET (or the `--` command): resolved once per command."""
        from mcpcli.targets import resolve_target

        if target == NO_TARGET:
            target = None
        if target not in self._entries:
            self._entries[target] = resolve_target(target, self.server_command, self.config())
        return self._entries[target]


async def offered(app: App, listing: Awaitable[dict[str, Any]], key: str) -> dict[str, Any]:
    """A `list` command's result; an empty one (and a note on stderr) when the server
    does not offer the feature, which is an answer, not an error."""
    from mcpcli.errors import NotOffered

    try:
        return await listing
    except NotOffered as exc:
        app.info(exc.message)
        return {key: []}


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


pass_app = click.make_pass_decorator(App, ensure=True)
