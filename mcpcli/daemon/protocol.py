"""The control protocol between an `mcp` command and the session daemon (stdlib only).

Newline-delimited JSON over a unix socket, UTF-8, one object per line, each at most
`MAX_MESSAGE_BYTES`. The command's first line is a request `{"mcpcli": 1, "op": ...}`;
the daemon's first line answers it with `{"ok": true, ...}` or `{"ok": false, "error":
{...}}` (a `call` sent with `"notifications": true` may get the JSON-RPC notifications
of its call first: the answer is the first line with `"ok"`). After a successful `attach`
the connection carries MCP JSON-RPC messages, one per line, as over stdio.

The daemon's environment and directory are not the command's (it runs in `/`, with the
environment of whichever command started it), so an `open` carries what depends on them:
the entry already resolved (`ServerEntry.resolved()`: `${VAR}` filled in from the command's
environment), `connect.env` with explicit values (a None would pass the daemon's own value
through) and `connect.cwd` (the command's directory when the entry names none).

Both sides and the command's fast path import this module, so it must stay free of
anything but the standard library (a test checks): start-up time of `mcp tools call
@NAME` depends on it.
"""

from __future__ import annotations

import json
import socket

# `typing` costs milliseconds of start-up the fast path does not have to spend.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "ERROR_KINDS",
    "MAX_MESSAGE_BYTES",
    "OPS",
    "VERSION",
    "LineReader",
    "ProtocolViolation",
    "decode",
    "encode",
    "error",
    "error_payload",
    "ok",
    "request",
    "send",
]

#: The protocol's version, sent as `"mcpcli": VERSION` in every first line.
VERSION = 1
#: Bound on one line (a JSON-RPC message can carry a large resource).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: The operations a command may ask for.
OPS = ("open", "list", "close", "restart", "logs", "attach", "call")
#: `error.kind` values, each naming the typed error the command re-raises.
ERROR_KINDS = ("transport", "usage", "auth", "rpc", "timeout")
#: The exit code each kind maps to when the daemon gives none (mcpcli.errors.ExitCode).
EXIT_OF_KIND = {"transport": 4, "usage": 2, "auth": 3, "rpc": 5, "timeout": 124}


class ProtocolViolation(ValueError):
    """A line that is not one protocol message (bad JSON, not an object, too long)."""


def encode(message: dict[str, Any]) -> bytes:
    """One message as a line; raises ProtocolViolation when it exceeds the bound."""
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
    if len(data) > MAX_MESSAGE_BYTES:
        raise ProtocolViolation(f"message of {len(data)} bytes exceeds {MAX_MESSAGE_BYTES}")
    return data


def decode(line: bytes | str) -> dict[str, Any]:
    """A line (with or without its newline) as a message object."""
    if isinstance(line, str):
        line = line.encode("utf-8")
    if len(line) > MAX_MESSAGE_BYTES:
        raise ProtocolViolation(f"line of {len(line)} bytes exceeds {MAX_MESSAGE_BYTES}")
    try:
        value = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolViolation(f"not JSON: {exc}") from None
    except RecursionError:  # "[[[[..."
        raise ProtocolViolation("not JSON: nested too deeply") from None
    if not isinstance(value, dict):
        raise ProtocolViolation("a message must be a JSON object")
    return value


def request(op: str, **fields: Any) -> dict[str, Any]:
    """A command's first line: `{"mcpcli": 1, "op": op, ...fields}`."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}")
    return {"mcpcli": VERSION, "op": op, **fields}


def ok(**fields: Any) -> dict[str, Any]:
    """A successful answer."""
    return {"ok": True, **fields}


def error_payload(
    message: str,
    *,
    kind: str = "transport",
    hint: str | None = None,
    exit: int | None = None,
    code: int | None = None,
    data: Any = None,
) -> dict[str, Any]:
    """The `error` object of a failed answer."""
    if kind not in ERROR_KINDS:
        raise ValueError(f"unknown error kind {kind!r}")
    return {
        "message": message,
        "hint": hint,
        "exit": EXIT_OF_KIND[kind] if exit is None else exit,
        "kind": kind,
        "code": code,
        "data": data,
    }


def error(message: str, **details: Any) -> dict[str, Any]:
    """A failed answer: `{"ok": false, "error": error_payload(message, ...)}`."""
    return {"ok": False, "error": error_payload(message, **details)}


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    """Write one message to a blocking socket."""
    sock.sendall(encode(message))


class LineReader:
    """Reads lines from a blocking socket, bounded by MAX_MESSAGE_BYTES (for commands and tests)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = b""

    def read_line(self) -> bytes | None:
        """The next line without its newline; None at end of stream."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[:end], self._buffer[end + 1 :]
                return line
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                raise ProtocolViolation(f"line exceeds {MAX_MESSAGE_BYTES} bytes")
            chunk = self.sock.recv(65536)
            if not chunk:
                if self._buffer:
                    raise ProtocolViolation("the stream ended inside a line")
                return None
            self._buffer += chunk

    def read(self) -> dict[str, Any] | None:
        """The next message; None at end of stream."""
        line = self.read_line()
        return None if line is None else decode(line)
