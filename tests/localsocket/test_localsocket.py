"""The blocking side of the local line-JSON protocol: lines read back bounded, messages
written whole, on a socket the caller opened."""

from __future__ import annotations

import socket

import pytest

from mcpcli import localsocket
from mcpcli.core import localrpc as protocol


def test_an_oversized_line_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(localsocket, "MAX_MESSAGE_BYTES", 10)
    left, right = socket.socketpair()
    with left, right:
        right.sendall(b'{"a": "' + b"x" * 40)
        with pytest.raises(protocol.ProtocolViolation):
            localsocket.LineReader(left).read()


def test_line_reader_splits_messages_and_reports_the_end() -> None:
    left, right = socket.socketpair()
    with left, right:
        localsocket.send(right, protocol.ok(a=1))
        right.sendall(b'{"b": 2}\n{"c"')
        right.sendall(b": 3}\n")
        right.shutdown(socket.SHUT_WR)
        reader = localsocket.LineReader(left)
        assert [reader.read(), reader.read(), reader.read(), reader.read()] == [
            {"ok": True, "a": 1}, {"b": 2}, {"c": 3}, None,
        ]
