"""The typed errors the library raises, the exit code each one maps to, and how one is printed.

Only `mcpcli.cli.main()` (and the fast paths it tries first) turns these into exit
codes and messages, all through `print_error`; library code raises and never exits.
The tree, with exit codes:

    McpCliError                      generic failure                        1
    ├── ToolError                    the tool's result has isError: true    1
    ├── UsageError                   bad flags or input                     2
    │   ├── ArgumentError            --arg/--args cannot be parsed          2
    │   ├── ValidationError          arguments violate the inputSchema      2
    │   ├── ConfigError              config file or tools.yaml is invalid   2
    │   ├── UntrustedServer          a project file's server, not consented 2
    │   └── MissingExtra             an optional dependency not installed   2
    ├── AuthError                    authentication or authorization        3
    ├── TransportError               connection, transport, server process  4
    │   ├── ConnectionClosed         the peer went away                     4
    │   ├── ServerExited             the stdio server process exited        4
    │   ├── MessageTooLarge          a frame exceeded the size cap          4
    │   └── ProtocolError            the peer broke the protocol            4
    │       └── StrayLine            a line of stdio that is not JSON-RPC   4
    ├── RPCError                     JSON-RPC error response from the peer  5
    │   ├── UnsupportedVersionError  -32022 with the peer's supported list  5
    │   └── NotOffered               -32601 for a capability not declared   5
    ├── RequestTimeout               a request timed out                  124
    └── Interrupted                  Ctrl-C                               130
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup

__all__ = [
    "ArgumentError",
    "AuthError",
    "ConfigError",
    "ConnectionClosed",
    "ExitCode",
    "Interrupted",
    "McpCliError",
    "MessageTooLarge",
    "MissingExtra",
    "NotOffered",
    "ProtocolError",
    "RPCError",
    "RequestTimeout",
    "ServerExited",
    "ServerShuttingDown",
    "StrayLine",
    "ToolError",
    "TransportError",
    "UnsupportedVersionError",
    "UntrustedServer",
    "UsageError",
    "ValidationError",
    "error_report",
    "error_text",
    "from_error_report",
    "optional_import",
    "print_error",
    "unwrap",
]

#: What a line break in a message becomes: errors and notes are one line on stderr.
LINE_BREAK = " | "


class ExitCode(enum.IntEnum):
    """Documented exit statuses of the `mcp` command (README, man page)."""

    OK = 0
    TOOL_ERROR = 1
    USAGE = 2
    AUTH = 3
    TRANSPORT = 4
    RPC_ERROR = 5
    TIMEOUT = 124
    INTERRUPTED = 130


class McpCliError(Exception):
    """Base of every error the library raises on purpose.

    `hint` is an optional next step shown to the user after the message.
    """

    #: An ExitCode (an error the daemon reported keeps the status it was sent with).
    exit_code: int = ExitCode.TOOL_ERROR
    kind: str = "error"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_json(self) -> dict[str, Any]:
        """The error as the JSON object printed on stderr under `--json`."""
        out: dict[str, Any] = {
            "error": {"type": self.kind, "message": self.message, "exitCode": int(self.exit_code)}
        }
        if self.hint:
            out["error"]["hint"] = self.hint
        return out


class ToolError(McpCliError):
    """The tool ran and reported failure; its result was already printed."""

    kind = "tool-error"


class UsageError(McpCliError):
    exit_code = ExitCode.USAGE
    kind = "usage"


class ArgumentError(UsageError):
    kind = "argument"


class ValidationError(UsageError):
    """Arguments do not match a JSON Schema; `errors` lists (path, message) pairs."""

    kind = "validation"

    def __init__(
        self, message: str, *, errors: list[tuple[str, str]] | None = None, hint: str | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.errors = errors or []


class ConfigError(UsageError):
    kind = "config"


class UntrustedServer(UsageError):
    """A server defined only in a project file (a cloned repository's `.mcp.json`...)
    that the user has not trusted: it is refused before anything runs."""

    kind = "untrusted"


class MissingExtra(UsageError):
    """A feature needs an optional dependency that is not installed (`pip install .` without
    the extra): one line naming the extra that brings it, instead of an internal error."""

    kind = "missing-extra"

    def __init__(self, feature: str, package: str, extra: str) -> None:
        super().__init__(f"{feature} needs the {package} package, which is not installed: "
                         f"pip install 'mcpcli[{extra}]'")
        self.package = package
        self.extra = extra


def optional_import(module: str, *, extra: str, feature: str, package: str | None = None) -> ModuleType:
    """`module`, an optional dependency (a `[project.optional-dependencies]` extra), or
    MissingExtra naming `extra` when it is not installed. Only the module (or a package
    above it) being absent counts: an installed one failing to import is raised as is."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name
        if missing is None or not (module == missing or module.startswith(missing + ".")):
            raise
        raise MissingExtra(feature, package or module.split(".")[0], extra) from None


class AuthError(McpCliError):
    exit_code = ExitCode.AUTH
    kind = "auth"


class TransportError(McpCliError):
    exit_code = ExitCode.TRANSPORT
    kind = "transport"

    def __init__(
        self, message: str, *, hint: str | None = None, status: int | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        #: HTTP status code when the failure came from an HTTP response.
        self.status = status


class ConnectionClosed(TransportError):
    kind = "connection-closed"


class ServerShuttingDown(ConnectionClosed):
    """The server stopped before answering (it said so: `protocol.is_shutting_down`)."""

    kind = "server-shutting-down"


class ServerExited(ConnectionClosed):
    kind = "server-exited"

    def __init__(
        self, message: str, *, returncode: int | None = None, hint: str | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.returncode = returncode


class MessageTooLarge(TransportError):
    kind = "message-too-large"


class ProtocolError(TransportError):
    kind = "protocol"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        status: int | None = None,
        request_id: int | str | None = None,
    ) -> None:
        super().__init__(message, hint=hint, status=status)
        #: The request a broken answer was meant for, when its id could be read:
        #: the session fails that request with this error instead of letting it time out.
        self.request_id = request_id


class StrayLine(ProtocolError):
    """A line the peer wrote on stdio that is not JSON-RPC (a print to the wrong stream,
    a log line): reported as a warning, which `-q` drops as it drops the server's stderr,
    unless it carries the id of a request it then fails."""


class RPCError(McpCliError):
    """A JSON-RPC error object received from the peer."""

    exit_code = ExitCode.RPC_ERROR
    kind = "rpc"

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        # Many SDKs already put the code in the message ("MCP error -32602: ...").
        shown = message if str(code) in message else f"{message} (code {code})"
        super().__init__(shown)
        self.code = code
        self.rpc_message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        rpc: dict[str, Any] = {"code": self.code, "message": self.rpc_message}
        if self.data is not None:
            rpc["data"] = self.data
        out["error"]["rpc"] = rpc
        return out


class UnsupportedVersionError(RPCError):
    """-32022: the peer does not speak the requested protocol version."""

    kind = "unsupported-version"

    @property
    def supported(self) -> list[str]:
        data = self.data if isinstance(self.data, dict) else {}
        versions = data.get("supported")
        return [v for v in versions if isinstance(v, str)] if isinstance(versions, list) else []


class NotOffered(RPCError):
    """The server answered "method not found" for a feature it never declared:
    the message names the feature, not the JSON-RPC code."""

    kind = "not-offered"

    def __init__(self, server: str, capability: str, what: str, data: Any = None) -> None:
        super().__init__(-32601, "Method not found", data)
        self.message = f"server {server!r} offers no {what}"
        self.args = (self.message,)
        self.hint = f"it does not declare the {capability!r} capability; `mcp info` shows what it offers"


class RequestTimeout(McpCliError):
    exit_code = ExitCode.TIMEOUT
    kind = "timeout"


class Interrupted(McpCliError):
    exit_code = ExitCode.INTERRUPTED
    kind = "interrupted"


def handshake_timeout(timeout: float) -> RequestTimeout:
    """The one wording for a set-up that outlasted --timeout: the client and the
    one-shot fast path must say the same (tests/cli/test_oneshot.py compares them)."""
    return RequestTimeout(
        f"the MCP handshake timed out after {timeout:g}s (--timeout bounds the whole set-up)",
        hint="check that it is an MCP server for this transport; --trace shows the traffic",
    )


def unwrap(exc: BaseException) -> BaseException:
    """The one error that matters inside (nested) exception groups from task groups.

    Our own typed errors win over anything else, and anything else wins over
    cancellation, so a failure in one task is reported instead of the
    cancellation it caused in its siblings.
    """
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    leaves: list[BaseException] = []
    stack: list[BaseException] = [exc]
    while stack:
        item = stack.pop()
        if isinstance(item, BaseExceptionGroup):
            stack.extend(reversed(item.exceptions))
        else:
            leaves.append(item)
    for leaf in leaves:
        if isinstance(leaf, McpCliError):
            return leaf
    for leaf in leaves:
        if isinstance(leaf, (KeyboardInterrupt, SystemExit)):
            return leaf
    for leaf in leaves:
        if type(leaf).__name__ != "CancelledError":
            return leaf
    return leaves[0] if leaves else exc


#: The daemon's error kinds (its control protocol) and the class each becomes here.
_REPORT_KINDS: dict[str, type[McpCliError]] = {
    "usage": UsageError,
    "auth": AuthError,
    "transport": TransportError,
    "timeout": RequestTimeout,
}


def error_report(exc: McpCliError) -> dict[str, Any]:
    """An error as the daemon's control protocol carries it (`{"ok": false, "error": ...}`),
    so a command that asked the daemon exits as the one-shot command would."""
    kind = "transport"
    code: int | None = None
    data: Any = None
    if isinstance(exc, RPCError):
        kind, code, data = "rpc", exc.code, exc.data
    elif isinstance(exc, UsageError):
        kind = "usage"
    elif isinstance(exc, AuthError):
        kind = "auth"
    elif isinstance(exc, RequestTimeout):
        kind = "timeout"
    message = exc.rpc_message if isinstance(exc, RPCError) else exc.message
    return {"message": message, "hint": exc.hint, "exit": int(exc.exit_code), "kind": kind,
            "code": code, "data": data}


def from_error_report(report: Any, *, as_sent: bool = False) -> McpCliError:
    """The typed error for the daemon's error form; a malformed one is a transport error.

    `as_sent`: the error keeps the `type` (the daemon's error's own kind, e.g. "validation")
    and the exit status the daemon sent, for the fast path, which prints it as the one-shot
    command would have printed that error."""
    if not isinstance(report, Mapping):
        return ProtocolError("the session daemon sent a malformed error")
    message = report.get("message")
    message = message if isinstance(message, str) and message else "the session daemon reported an error"
    hint = report.get("hint") if isinstance(report.get("hint"), str) else None
    kind = report.get("kind")
    code = report.get("code")
    shown = report.get("type")
    if kind == "rpc" and isinstance(code, int) and not isinstance(code, bool):
        error: McpCliError = RPCError(code, message, report.get("data"))
        error.hint = hint
        if as_sent and isinstance(shown, str):
            error.kind = shown
        return error
    cls = _REPORT_KINDS.get(kind) if isinstance(kind, str) else None
    exit_code = report.get("exit")
    if cls is None:
        by_exit = {int(c.exit_code): c for c in _REPORT_KINDS.values()}
        cls = by_exit.get(exit_code, McpCliError) if isinstance(exit_code, int) else McpCliError
    error = cls(message, hint=hint)
    if as_sent:
        error.kind = shown if isinstance(shown, str) else kind if isinstance(kind, str) else "error"
        error.exit_code = exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else 1
    return error


def error_text(error: McpCliError | Any, prog: str = "mcp", *, json_errors: bool = False) -> str:
    """How `mcp` prints an error on stderr: `PROG: error: MESSAGE` and, with a hint, `PROG:
    hint: HINT` (each one line), or under --json (--jsonl, --jq...) the error object
    (`to_json`) on one line. `error` may also be the daemon's error form, shown as sent
    (`from_error_report`). The one rendering: `mcpcli.cli.main()`'s and both fast paths'."""
    from mcpcli.text import json_safe, one_line

    if not isinstance(error, McpCliError):
        error = from_error_report(error, as_sent=True)
    if json_errors:
        from mcpcli.jsontext import dumps

        return json_safe(dumps(error.to_json())) + "\n"
    text = f"{prog}: error: {one_line(error.message, newline=LINE_BREAK)}\n"
    if error.hint:
        text += f"{prog}: hint: {one_line(error.hint, newline=LINE_BREAK)}\n"
    return text


def print_error(error: McpCliError | Any, prog: str = "mcp", *, json_errors: bool = False,
                stream: Any = None) -> int:
    """Write `error_text` to `stream` (sys.stderr) and flush; returns the error's exit status."""
    if not isinstance(error, McpCliError):
        error = from_error_report(error, as_sent=True)
    out = sys.stderr if stream is None else stream
    out.write(error_text(error, prog, json_errors=json_errors))
    out.flush()
    return int(error.exit_code)
