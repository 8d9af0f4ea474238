"""What a peer does with a fault that is its own side's: a handler that failed unexpectedly
is one line for whoever owns the peer (a client prints it; the server runtime logs it, with
its traceback only when someone asked for detail)."""

from __future__ import annotations

import logging

from mcpcli.errors import McpCliError, unwrap
from mcpcli.text import one_line

__all__ = ["HandlerError", "internal", "log_unexpected", "report_default"]

log = logging.getLogger("mcpcli.rpc.peer")

#: How much of an unexpected exception's message goes into its log line.
_LOG_MESSAGE_MAX = 300


def log_unexpected(logger: logging.Logger, what: str, exc: BaseException) -> None:
    """Log a handler's unexpected exception as one line: what failed, the type and the message.

    A server's log is read by operators, and a traceback per failing request
    buries the rest; the traceback is attached only when the logger is enabled
    for DEBUG (someone asked for detail).
    """
    text = one_line(str(exc), limit=_LOG_MESSAGE_MAX)
    detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    logger.error("%s: %s", what, detail, exc_info=exc if logger.isEnabledFor(logging.DEBUG) else None)


class HandlerError(McpCliError):
    """A local request or notification handler failed unexpectedly: a bug here, not the peer's doing.

    Reported through the session's `on_error` (the client prints it as one line; the
    server runtime logs it with `log_unexpected`); `cause` keeps the original exception
    for a traceback when someone asked for one (--debug).
    """

    def __init__(self, doing: str, cause: BaseException) -> None:
        super().__init__(f"internal error while {doing}: {type(cause).__name__}: {cause}")
        self.doing = doing
        self.cause = cause


def report_default(exc: Exception) -> None:
    """A session's problem when its owner gave no `on_error`: one log line (a handler bug
    with its traceback only under DEBUG)."""
    if isinstance(exc, HandlerError):
        log_unexpected(log, f"failed while {exc.doing}", exc.cause)
    else:
        log.warning("%s", exc)


def internal(doing: str, exc: Exception) -> McpCliError:
    """A handler's exception as one line (the innermost error of a group; typed ones as they are)."""
    inner = unwrap(exc)
    if isinstance(inner, McpCliError):
        return inner
    return HandlerError(doing, inner)
