"""What every command shares: the injected environment (`App`), option groups, the runner.

`App` holds the streams, TTY facts and config location (httpie's `Environment`):
commands never touch `sys.stdout` directly, and tests build an `App` with
in-memory streams. Option decorators turn a group of flags into one typed object
(`Connection`, `Output`) so command bodies stay short.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from mcpcli.errors import ExitCode, Interrupted, McpCliError
from mcpcli.text import one_line

if TYPE_CHECKING:
    from pathlib import Path

    from mcpcli.client import Client, ClientOptions
    from mcpcli.config import Config, ServerEntry
    from mcpcli.connect import ConnectOptions

__all__ = [
    "CONTEXT_SETTINGS",
    "App",
    "Connection",
    "TargetCommand",
    "connection_options",
    "offered",
    "output_options",
    "pass_app",
    "target_argument",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

#: Placeholder for the TARGET positional when the server command came after `--`.
NO_TARGET = "\x00--"
#: What a line break in a message becomes: errors and notes are one line on stderr.
LINE_BREAK = " | "
#: Bound on the interrupt hooks run on the first Ctrl-C.
INTERRUPT_GRACE = 5.0


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
        if self._config is None:
            from mcpcli.config import Config

            self._config = Config(self.config_path)
        return self._config

    # -- messages on stderr ------------------------------------------------------

    def error_line(self, message: str) -> None:
        self.stderr.write(f"{self.prog}: error: {one_line(message, newline=LINE_BREAK)}\n")
        self.stderr.flush()

    def warn(self, message: str) -> None:
        self.stderr.write(f"{self.prog}: warning: {one_line(message, newline=LINE_BREAK)}\n")
        self.stderr.flush()

    def info(self, message: str) -> None:
        self.stderr.write(f"{self.prog}: {one_line(message, newline=LINE_BREAK)}\n")
        self.stderr.flush()

    def report(self, exc: McpCliError) -> None:
        """Print an error: one line (plus a hint line), or a JSON object under --json."""
        if self.json_errors:
            from mcpcli.jsonrpc import dumps
            from mcpcli.text import json_safe

            self.stderr.write(json_safe(dumps(exc.to_json())) + "\n")
        else:
            self.stderr.write(f"{self.prog}: error: {one_line(exc.message, newline=LINE_BREAK)}\n")
            if exc.hint:
                self.stderr.write(f"{self.prog}: hint: {one_line(exc.hint, newline=LINE_BREAK)}\n")
        self.stderr.flush()

    def usage_error(self, exc: click.UsageError) -> None:
        ctx = exc.ctx
        path = ctx.command_path if ctx is not None else self.prog
        if self.json_errors:
            from mcpcli.errors import UsageError

            self.report(UsageError(exc.format_message()))
            return
        self.stderr.write(f"{self.prog}: error: {one_line(exc.format_message(), newline=LINE_BREAK)}\n")
        self.stderr.write(f"{self.prog}: hint: see `{path} --help`\n")
        self.stderr.flush()

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

        async def watch(scope: anyio.CancelScope, tg: anyio.abc.TaskGroup) -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
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
                    tg.start_soon(watch, work, tg)
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
            raise Interrupted("interrupted")
        if not outcome:  # pragma: no cover - cancelled without a signal
            raise Interrupted("cancelled")
        return outcome[0]

    @asynccontextmanager
    async def client(self, target: str | None, conn: Connection) -> AsyncIterator[Client]:
        """Connect to TARGET (or the `--` command) with the command's connection flags."""
        from mcpcli.connect import connect

        entry = self.resolve(target)
        async with connect(entry, conn.connect_options(self), conn.client_options(self)) as client:
            yield client

    def resolve(self, target: str | None) -> ServerEntry:
        """The server entry for TARGET (or the `--` command): resolved once per command."""
        from mcpcli.connect import resolve_target

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


# -- TARGET ------------------------------------------------------------------------


class TargetCommand(click.Command):
    """A command whose first positional is TARGET, unless a server command follows `--`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        app = ctx.find_object(App)
        if app is not None and app.server_command and not ctx.resilient_parsing:
            args = [NO_TARGET, *args]
        return super().parse_args(ctx, args)

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
    from mcpcli.transports._spawn import SpawnError, launch, prespawn

    try:
        entry = app.resolve(target).resolved()
        if entry.transport != "stdio" or entry.command is None:
            return
        passed = env_options(params.get("env") or ())
        prespawn(launch(entry.command, entry.args, entry.env, entry.cwd,
                        passed=passed, cwd_option=params.get("cwd")))
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
    return items


def target_argument(f: F) -> F:
    return click.argument("target", metavar="TARGET", shell_complete=_complete_target)(f)


# -- connection flags --------------------------------------------------------------


@dataclass
class Connection:
    """The connection flags of one command invocation."""

    timeout: float = 60.0
    max_timeout: float = 3600.0
    env: tuple[str, ...] = ()
    cwd: str | None = None
    quiet: bool = False
    server_log: str | None = None
    header: tuple[str, ...] = ()
    bearer_token: str | None = None
    transport: str = "auto"
    protocol: str | None = None
    insecure: bool = False
    log_level: str | None = None
    trace: bool = False
    root: tuple[str, ...] = ()
    sampling_command: str | None = None
    elicit_json: str | None = None
    elicit_defaults: bool = False
    no_auth: bool = False
    stored_auth_only: bool = False
    token_store: str | None = None
    #: Set by commands: a progress/notification sink for this invocation.
    on_notification: Callable[[str, dict[str, Any]], None] | None = None
    _server_log_file: IO[bytes] | None = None

    def server_log_file(self) -> IO[bytes] | None:
        """--server-log FILE, opened once for appending (the server's stderr and its log messages)."""
        from mcpcli.errors import UsageError

        if self.server_log and self._server_log_file is None:
            try:
                self._server_log_file = open(self.server_log, "ab")  # noqa: SIM115 - lives for the process
            except OSError as exc:
                raise UsageError(
                    f"--server-log: cannot open {self.server_log}: {exc.strerror}"
                ) from None
        return self._server_log_file

    def connect_options(self, app: App) -> ConnectOptions:
        from mcpcli.connect import ConnectOptions
        from mcpcli.errors import UsageError

        env = env_options(self.env)
        headers: dict[str, str] = {}
        for item in self.header:
            name, sep, value = item.partition(":")
            if not sep or not name.strip():
                raise UsageError(f"--header {item!r}: expected 'Name: value'")
            headers[name.strip()] = value.strip()
        server_log = self.server_log_file()
        auth = "none" if self.no_auth else "stored-only" if self.stored_auth_only else "interactive"
        if auth == "interactive" and not app.stdin_tty and not app.stderr_tty:
            auth = "non-interactive"
        options = ConnectOptions(
            env=env,
            cwd=self.cwd,
            quiet=self.quiet,
            server_log=server_log,
            headers=headers,
            bearer_token=self.bearer_token,
            transport=self.transport,
            insecure=self.insecure,
            auth=auth,
            extra={"token_store": self.token_store} if self.token_store else {},
        )
        # HTTP: connecting (and waiting for an SSE endpoint event) is bounded by --timeout too.
        options.extra["connect_timeout"] = min(self.timeout, 30.0)
        return options

    def client_options(self, app: App) -> ClientOptions:
        from mcpcli.cli._features import build_features
        from mcpcli.cli._notify import notification_printer, trace_printer
        from mcpcli.client import ClientOptions

        probe = os.environ.get("MCP_PROBE_TIMEOUT")
        return ClientOptions(
            probe_timeout=float(probe) if probe else 5.0,
            protocol=self.protocol,
            timeout=self.timeout,
            max_timeout=self.max_timeout,
            log_level=self.log_level,
            features=build_features(app, self),
            on_notification=self.on_notification
            or notification_printer(app, self.log_level, quiet=self.quiet, log_file=self.server_log_file()),
            on_error=lambda exc: app.warn(str(exc)),
            trace=trace_printer(app) if self.trace else None,
        )


def env_options(items: Iterable[str]) -> dict[str, str | None]:
    """--env KEY=VALUE items; a KEY alone (None) passes our own variable through."""
    from mcpcli.errors import UsageError

    env: dict[str, str | None] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not key:
            raise UsageError(f"--env {item!r}: expected KEY=VALUE or KEY")
        env[key] = value if sep else None
    return env


def _log_level_choices() -> list[str]:
    from mcpcli.protocol import LOG_LEVELS

    return list(LOG_LEVELS)


_CONNECTION_FLAGS: list[Callable[[F], F]] = [
    click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0,
                 show_default=True, envvar="MCP_TIMEOUT", metavar="SECONDS",
                 help="Wait this long for each response; progress notifications restart the clock."),
    click.option("--max-timeout", type=click.FloatRange(min=0, min_open=True), default=3600.0,
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
]


def connection_options(f: F) -> F:
    """Add the connection flags; the command receives them as `conn: Connection`."""
    names = [
        "timeout", "max_timeout", "env", "cwd", "quiet", "server_log", "header", "bearer_token",
        "transport", "protocol", "insecure", "log_level", "trace", "root", "sampling_command",
        "elicit_json", "elicit_defaults", "no_auth", "stored_auth_only", "token_store",
    ]

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs["conn"] = Connection(**{name: kwargs.pop(name) for name in names})
        return f(*args, **kwargs)

    for option in reversed(_CONNECTION_FLAGS):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]


# -- output flags ------------------------------------------------------------------


def output_options(f: F) -> F:
    """Add --json/--jsonl/--jq/--raw; the command receives `out: Output`."""

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from mcpcli.output import Output

        app = click.get_current_context().find_object(App) or App()
        as_json = kwargs.pop("as_json")
        jsonl = kwargs.pop("jsonl")
        jq_filter = kwargs.pop("jq_filter")
        raw = kwargs.pop("raw")
        app.json_errors = bool(as_json or jsonl or jq_filter)
        kwargs["out"] = Output.for_stream(
            app.stdout, tty=app.stdout_tty, as_json=as_json, jsonl=jsonl, jq_filter=jq_filter, raw=raw)
        return f(*args, **kwargs)

    wrapper = click.option("--raw", "-r", is_flag=True,
                           help="With --jq, print strings without JSON quotes.")(wrapper)
    wrapper = click.option("--jq", "jq_filter", metavar="FILTER",
                           help="Filter the JSON result with a jq expression.")(wrapper)
    wrapper = click.option("--jsonl", is_flag=True,
                           help="One JSON value per line (list items, stream events).")(wrapper)
    wrapper = click.option("--json", "as_json", is_flag=True,
                           help="Print the result as JSON (the default when stdout is not a TTY).")(wrapper)
    return wrapper  # type: ignore[return-value]
