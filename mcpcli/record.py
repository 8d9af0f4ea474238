"""`--record FILE`: the JSON-RPC exchange of one connection, appended to FILE as NDJSON.

Each run starts with a `meta` line; then one line per message,
`{"t": seconds since the first message, "dir": "send"|"recv", "msg": {...}}`
(send: client to server). The recorder is a session `Tracer`, so it sees
exactly what `--trace` sees (over HTTP: the JSON-RPC messages, never headers),
and it writes them through `mcpcli.text.redact`, as `--trace` does: the string
values of secret-looking keys, and the connection's known secret values (--env
and configured env values, header values, bearer and OAuth tokens, headersHelper
output) wherever they appear, and quoted bearer credentials. Anything else a server sends, a tool result
quoting a file or an environment variable we never saw, is written as it is:
read a recording before sharing it. The file is 0600, and a symlink is refused.
`mcp serve --replay` reads it back (`mcpcli.server.replay`).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from typing import TYPE_CHECKING, Any

from mcpcli.errors import UsageError
from mcpcli.text import redact

if TYPE_CHECKING:
    from mcpcli.config import ServerEntry
    from mcpcli.core.jsonrpc import Batch, Message
    from mcpcli.text import SecretValues

__all__ = ["Recorder", "describe_target"]


class Recorder:
    """A session tracer that appends each message to a 0600 NDJSON file."""

    def __init__(self, path: str, target: str, secrets: SecretValues | None = None) -> None:
        from datetime import datetime, timezone

        from mcpcli import __version__

        try:
            # O_APPEND: each line is one write, so concurrent connections of one command
            # (or two commands) interleave whole lines, never halves. O_NOFOLLOW: a symlink
            # planted where the recording goes must not send it somewhere else.
            self._fd: int | None = os.open(
                path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UsageError(f"--record: {path} is a symbolic link; give the file itself") from None
            raise UsageError(f"--record: cannot open {path}: {exc.strerror}") from None
        try:
            info = os.fstat(self._fd)
            # An existing file keeps its mode on open: one of ours becomes 0600 too.
            if stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077:
                os.fchmod(self._fd, 0o600)
        except OSError as exc:
            self.close()
            raise UsageError(f"--record: cannot make {path} private: {exc.strerror}") from None
        self.path = path
        self._secrets = secrets
        self._start: float | None = None
        recorded = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self._write({"t": 0, "dir": "meta",
                     "msg": {"recorded": recorded, "target": target, "mcpcli": __version__}})

    def __call__(self, direction: str, message: Message | Batch) -> None:
        from mcpcli.core.jsonrpc import Batch

        now = time.monotonic()
        if self._start is None:
            self._start = now
        t = round(now - self._start, 3)
        objs = message.to_list() if isinstance(message, Batch) else [message.to_dict()]
        for obj in objs:  # a batch is recorded message by message
            self._write({"t": t, "dir": direction, "msg": redact(obj, self._secrets)})

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
