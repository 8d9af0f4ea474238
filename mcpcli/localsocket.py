"""The blocking side of the local line-JSON protocol (`mcpcli.core.localrpc`): one message
written, and lines read back bounded, on a unix socket the caller opened (the command side of
the daemon, its fast path, `mcp script`)."""

from __future__ import annotations

from mcpcli.core.localrpc import MAX_MESSAGE_BYTES, ProtocolViolation, decode, encode

# `typing` costs milliseconds of start-up the fast path does not have to spend.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from typing import Any

__all__ = ["LineReader", "send"]


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    """Write one message to a blocking socket."""
    sock.sendall(encode(message))


class LineReader:
    """Reads lines from a blocking socket, bounded by MAX_MESSAGE_BYTES (commands, `mcp
    script`, tests)."""

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
