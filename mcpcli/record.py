"""`--record FILE`: the JSON-RPC exchange of one connection, appended to FILE as NDJSON.

Each run starts with a `meta` line; then one line per message,
`{"t": seconds since the first message, "dir": "send"|"recv", "msg": {...}}`
(send: client to server). The recorder is a session `Tracer`, so it sees
exactly what `--trace` sees (over HTTP: the JSON-RPC messages, never headers),
and it writes them through the caller's redaction (the one `--trace` uses), so
a recording can be shared or committed as a test fixture. `mcp serve --replay`
reads it back (`mcpcli.server.replay`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpcli.errors import UsageError

if TYPE_CHECKING:
    from mcpcli.config import ServerEntry
    from mcpcli.jsonrpc import Batch, Message

__all__ = ["Recorder", "describe_target"]


class Recorder:
    """A session tracer that appends each message to a 0600 NDJSON file."""

    def __init__(self, path: str, target: str, redact: Callable[[Any], Any] = lambda v: v) -> None:
        from datetime import datetime, timezone

        from mcpcli import __version__

        try:
            # O_APPEND: each line is one write, so concurrent connections of one command
            # (or two commands) interleave whole lines, never halves.
            self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as exc:
            raise UsageError(f"--record: cannot open {path}: {exc.strerror}") from None
        self.path = path
        self._redact = redact
        self._start: float | None = None
        recorded = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self._write({"t": 0, "dir": "meta",
                     "msg": {"recorded": recorded, "target": target, "mcpcli": __version__}})

    def __call__(self, direction: str, message: Message | Batch) -> None:
        from mcpcli.jsonrpc import Batch

        now = time.monotonic()
        if self._start is None:
            self._start = now
        t = round(now - self._start, 3)
        objs = message.to_list() if isinstance(message, Batch) else [message.to_dict()]
        for obj in objs:  # a batch is recorded message by message
            self._write({"t": t, "dir": direction, "msg": self._redact(obj)})

    def _write(self, line: dict[str, Any]) -> None:
        if self._fd is None:
            return
        data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        try:
            os.write(self._fd, data)
        except OSError:
            # A full disk must not break the command; the recording just stops.
            self.close()

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def describe_target(entry: ServerEntry) -> str:
    """What was recorded, without secrets: the server's name and its URL without
    credentials or query, or the stdio program's name (its arguments and environment
    may hold tokens, so they are left out)."""
    if entry.url:
        from urllib.parse import urlsplit

        parts = urlsplit(entry.url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        where = f"{parts.scheme}://{host}{parts.path}"
    elif entry.command:
        where = f"stdio: {os.path.basename(entry.command)}"
    elif entry.path:
        where = f"tools file: {os.path.basename(entry.path)}"
    elif entry.transport == "session":
        return f"@{entry.name} (session)"
    else:
        where = entry.transport
    # A name given on the command line is the URL or command itself: not repeated.
    return where if entry.source == "argv" or not entry.name else f"{entry.name} ({where})"
