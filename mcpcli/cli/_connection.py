"""The connection flags of one command (`Connection`) and what they become.

A command's connection flags arrive as one `Connection`; it turns them into the
library's `ConnectOptions` (how to reach the server) and `ClientOptions` (how
the client behaves: timeouts, notifications, sampling, elicitation, roots). The
flags are declared in `mcpcli.core.flags` (its `CONNECTION` are this class's fields);
`_options` makes them click options.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from mcpcli.core import flags

if TYPE_CHECKING:
    from mcpcli.cli._app import App
    from mcpcli.cli._progress import WaitingNotice
    from mcpcli.client import ClientFeatures, ClientOptions
    from mcpcli.config import ServerEntry
    from mcpcli.connect import ConnectOptions
    from mcpcli.core.tracecontext import TraceContext
    from mcpcli.record import Recorder
    from mcpcli.text import SecretValues
    from mcpcli.transports import Transport

__all__ = ["Connection", "env_options", "probe_timeout_from_env"]


@dataclass
class Connection:
    """The connection flags of one command invocation."""

    timeout: float = flags.TIMEOUT
    max_timeout: float = flags.MAX_TIMEOUT
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
    record: str | None = None
    root: tuple[str, ...] = ()
    sampling_command: str | None = None
    elicit_json: str | None = None
    elicit_defaults: bool = False
    no_auth: bool = False
    stored_auth_only: bool = False
    token_store: str | None = None
    profile: str | None = None
    meta: tuple[str, ...] = ()
    #: Set by commands that must behave alike on a terminal and in CI (snapshot, diff,
    #: test): False offers the server no prompting (elicitation declined, no URL mode).
    interactive: bool | None = None
    traceparent: str | None = None
    #: Set by commands: a progress/notification sink for this invocation.
    on_notification: Callable[[str, dict[str, Any]], None] | None = None
    #: Set by commands that answer servers themselves (`mcp inspect`): instead of the flags'.
    features: ClientFeatures | None = None
    #: Set by commands: where the client's warnings go (default: a warning line on stderr).
    on_error: Callable[[Exception], None] | None = None
    #: Set by commands: where a stdio server's stderr goes (default: ours).
    server_stderr: IO[bytes] | None = None
    _server_log_file: IO[bytes] | None = None
    _recorders: list[Recorder] | None = None
    _secrets: SecretValues | None = None
    _trace: tuple[TraceContext | None] | None = None

    def secrets(self) -> SecretValues:
        """The secret values of this connection, shared by the transports (which learn
        some while connecting) and `--trace`/`--record` (which replace them)."""
        if self._secrets is None:
            from mcpcli.text import SecretValues

            self._secrets = SecretValues()
        return self._secrets

    def server_log_file(self) -> IO[bytes] | None:
        """--server-log FILE, opened once for appending (the server's stderr and its log messages)."""
        from mcpcli.errors import UsageError

        if self.server_log and self._server_log_file is None:
            import errno

            try:
                # O_NOFOLLOW: a symlink planted where the log goes must not send it elsewhere.
                fd = os.open(self.server_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o600)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise UsageError(f"--server-log: {self.server_log} is a symbolic link; give the file itself") from None
                raise UsageError(f"--server-log: cannot open {self.server_log}: {exc.strerror}") from None
            self._server_log_file = os.fdopen(fd, "ab")
        return self._server_log_file

    def close(self) -> None:
        """Close what the connection opened (the --server-log file) once the command is done with it."""
        log, self._server_log_file = self._server_log_file, None
        if log is not None:
            log.close()
        recorders, self._recorders = self._recorders or [], None
        for recorder in recorders:
            recorder.close()

    def connect_options(self, app: App) -> ConnectOptions:
        from mcpcli.auth import check_profile
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
            stderr=self.server_stderr,
            headers=headers,
            bearer_token=self.bearer_token,
            transport=self.transport,
            insecure=self.insecure,
            auth=auth,
            token_store=self.token_store,
            profile=check_profile(self.profile),
            # HTTP: connecting (and waiting for an SSE endpoint event) is bounded by --timeout too.
            connect_timeout=min(self.timeout, 30.0),
            secrets=self.secrets(),
        )

        def serve_file(path: str) -> Transport:
            """A tools.yaml target with its `servers:` served too, as `mcp serve` would."""
            from mcpcli.gateway import GatewayOptions
            from mcpcli.gateway.serve_file import file_transport

            return file_transport(path, GatewayOptions(connect=options, config=app.config(), warn=app.warn))

        options = dataclasses.replace(options, serve_file=serve_file)
        return options

    def client_options(self, app: App, entry: ServerEntry | None = None) -> ClientOptions:
        from mcpcli.args import meta_items
        from mcpcli.cli._features import build_features
        from mcpcli.cli._notify import notification_printer
        from mcpcli.client import ClientOptions

        probe_timeout = probe_timeout_from_env()
        features = self.features or build_features(app, self)
        # A command that answers the server itself owns the screen (`mcp inspect`): no live line.
        waiting = _waiting_notice(app, entry) if self.features is None else None
        if waiting is not None:
            waiting.pause_for_prompts(features)
        return ClientOptions(
            probe_timeout=probe_timeout,
            protocol=self.protocol,
            timeout=self.timeout,
            max_timeout=self.max_timeout,
            log_level=self.log_level,
            features=features,
            on_notification=self.on_notification
            or notification_printer(app, self.log_level, quiet=self.quiet, log_file=self.server_log_file()),
            on_error=self.on_error or self._warner(app),
            trace=self._tracer(app, entry),
            meta=meta_items(self.meta),
            trace_context=self.trace_context(app),
            on_slow=waiting,
            slow_after=_waiting_after(),
            note=app.info if self.trace else None,
        )

    def _warner(self, app: App) -> Callable[[Exception], None]:
        """What the connection reports as it goes on: warnings, but -q drops a line the
        server wrote on stdout that is not JSON-RPC, as it drops its stderr (--trace keeps it)."""
        from mcpcli.errors import StrayLine

        quiet = self.quiet and not self.trace

        def warn(exc: Exception) -> None:
            if not (quiet and isinstance(exc, StrayLine)):
                app.warn(str(exc))

        return warn

    def trace_context(self, app: App) -> TraceContext | None:
        """The trace the command continues: --traceparent (a bad one is exit 2), else
        TRACEPARENT with TRACESTATE (a bad one is a warning: a CI system set it, and a
        trace must never stop a call)."""
        if self._trace is None:
            from mcpcli.core import tracecontext
            from mcpcli.errors import UsageError

            if self.traceparent is not None:
                context = tracecontext.parse(self.traceparent)
                if context is None:
                    raise UsageError(f"--traceparent {self.traceparent!r}: not a W3C traceparent "
                                     f"({tracecontext.FORMAT})")
            else:
                context = tracecontext.from_environ(os.environ)
                if context is None and os.environ.get(tracecontext.ENV_PARENT):
                    app.warn(f"{tracecontext.ENV_PARENT}={os.environ[tracecontext.ENV_PARENT]!r} is not a W3C "
                             f"traceparent ({tracecontext.FORMAT}); requests carry no trace context")
            self._trace = (context,)
        return self._trace[0]

    def _tracer(self, app: App, entry: ServerEntry | None) -> Callable[[str, Any], None] | None:
        """--trace and --record: both see every message; a connection's recording is one run."""
        from mcpcli.cli._notify import trace_printer

        secrets = self.secrets()
        tracers: list[Callable[[str, Any], None]] = []
        if self.trace:
            tracers.append(trace_printer(app, secrets))
        if self.record:
            from mcpcli.record import Recorder, describe_target

            recorder = Recorder(self.record, describe_target(entry) if entry is not None else "", secrets)
            self._recorders = [*(self._recorders or []), recorder]
            tracers.append(recorder)
        if len(tracers) < 2:
            return tracers[0] if tracers else None

        def both(direction: str, message: Any) -> None:
            for tracer in tracers:
                tracer(direction, message)

        return both


#: Seconds a request may go unanswered before a terminal is told what is awaited.
WAITING_AFTER = 3.0


def _waiting_after() -> float:
    """WAITING_AFTER, or `MCPCLI_WAITING_AFTER` seconds (for the tests, which cannot spend
    three real seconds per check)."""
    import math

    try:
        value = float(os.environ.get("MCPCLI_WAITING_AFTER", WAITING_AFTER))
    except ValueError:
        return WAITING_AFTER
    return value if math.isfinite(value) and value >= 0 else WAITING_AFTER


def _waiting_notice(app: App, entry: ServerEntry | None) -> WaitingNotice | None:
    """On a terminal (stderr), what says which server a request is waiting for; None on a pipe."""
    if not app.stderr_tty:
        return None
    from mcpcli.cli._progress import WaitingNotice

    return WaitingNotice(app, _server_label(entry))


def _server_label(entry: ServerEntry | None) -> str:
    """The server as a person named it: a configured name, `@session`, a URL without its
    credentials or query, a tools file, or the command line (secrets redacted, cut short)."""
    if entry is None:
        return "the server"
    if entry.transport == "session":
        return f"@{entry.name}"
    if entry.source != "argv":
        return entry.name
    if entry.url:
        from mcpcli.transports.http import display_url

        return display_url(entry.url)
    if entry.command:
        from mcpcli.text import one_line, redact_argv

        return one_line(" ".join(redact_argv([os.path.basename(entry.command), *entry.args])), limit=40)
    return entry.path or entry.name


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


def probe_timeout_from_env() -> float:
    """`MCP_PROBE_TIMEOUT` as seconds (unset: the default); a usage error (exit 2) otherwise."""
    from mcpcli.errors import UsageError

    probe = os.environ.get(flags.PROBE_TIMEOUT_ENV)
    probe_timeout = flags.probe_timeout(probe)
    if probe_timeout is None:
        raise UsageError(f"{flags.PROBE_TIMEOUT_ENV}={probe!r}: expected a finite number of seconds, 0 or more")
    return probe_timeout
