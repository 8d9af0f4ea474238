"""What the CLI shows on stderr while talking to a server: logs, traces, progress."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from mcpcli import text
from mcpcli.text import printable, redact

if TYPE_CHECKING:
    from mcpcli.cli._app import App
    from mcpcli.cli._progress import ProgressBar
    from mcpcli.core.jsonrpc import Batch, Message
    from mcpcli.text import SecretValues

__all__ = ["notification_printer", "progress_printer", "trace_printer"]

JSON = dict[str, Any]



def trace_printer(app: App, secrets: SecretValues | None = None) -> Callable[[str, Message | Batch], None]:
    """`--trace`: every JSON-RPC message on stderr, one line each, secrets redacted
    (secret-looking keys, and the connection's known secret values wherever they appear)."""

    def trace(direction: str, message: Message | Batch) -> None:
        from mcpcli.core.jsonrpc import Batch

        obj = message.to_list() if isinstance(message, Batch) else message.to_dict()
        arrow = "→" if direction == "send" else "←"
        text = json.dumps(redact(obj, secrets), ensure_ascii=False, separators=(",", ":"))
        app.stderr.write(f"{arrow} {printable(text, keep_newlines=False)}\n")
        app.stderr.flush()

    return trace


#: Log messages a server sends without being asked (no --log-level) are shown from here up.
UNASKED_LOG_FLOOR = text.UNASKED_LOG_FLOOR
_log_line = text.log_line
_rank = text.log_rank


def notification_printer(
    app: App, min_level: str | None = None, *, quiet: bool = False, log_file: IO[bytes] | None = None
) -> Callable[[str, JSON], None]:
    """Server log messages go to stderr; other unsolicited notifications are dropped.

    The rule, the same as for a stdio server's stderr (both are the server's own
    output): without --log-level only warnings and worse reach the terminal (a
    server may log unasked); --log-level LEVEL shows LEVEL and above (some servers
    send every level whatever `logging/setLevel` asked for, so we filter too);
    -q drops what was not asked for (with --log-level they were asked for, and
    still show); --server-log FILE moves them all to FILE.
    """
    floor = _rank(min_level if min_level is not None else UNASKED_LOG_FLOOR)
    asked = min_level is not None

    def on_notification(method: str, params: JSON) -> None:
        if method != "notifications/message":
            return
        if log_file is not None:
            # Every level goes to the file: it is the server's log, kept whole.
            log_file.write((_log_line(params) + "\n").encode("utf-8", "replace"))
            log_file.flush()
            return
        if (asked or not quiet) and _rank(params.get("level")) >= floor:
            app.stderr.write(_log_line(params) + "\n")
            app.stderr.flush()

    return on_notification


def progress_printer(app: App) -> ProgressBar | None:
    """A progress callback drawing a bar on stderr when it is a TTY; None otherwise."""
    if not app.stderr_tty:
        return None
    from mcpcli.cli._progress import ProgressBar

    return ProgressBar(app)
