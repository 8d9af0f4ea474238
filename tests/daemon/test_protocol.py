"""The control protocol's framing and message helpers (stdlib only: the fast path imports it)."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from mcpcli.daemon import protocol


def test_encode_decode_round_trip_keeps_unicode_and_one_line() -> None:
    message = protocol.request("call", name="ev", tool="echo", args=["message=h\u00e9\nllo"])
    line = protocol.encode(message)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert protocol.decode(line) == {
        "mcpcli": 1, "op": "call", "name": "ev", "tool": "echo", "args": ["message=h\u00e9\nllo"],
    }


@pytest.mark.parametrize("line", [b"not json", b"[1, 2]", b"\xff\xfe"])
def test_decode_refuses_what_is_not_one_object(line: bytes) -> None:
    with pytest.raises(protocol.ProtocolViolation):
        protocol.decode(line)


def test_oversized_messages_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protocol, "MAX_MESSAGE_BYTES", 10)
    with pytest.raises(protocol.ProtocolViolation):
        protocol.encode({"text": "x" * 20})
    left, right = socket.socketpair()
    with left, right:
        right.sendall(b'{"a": "' + b"x" * 40)
        with pytest.raises(protocol.ProtocolViolation):
            protocol.LineReader(left).read()


def test_error_answers_carry_the_exit_code_of_their_kind() -> None:
    assert protocol.error("no session 'ev'", hint="mcp session open ev") == {
        "ok": False,
        "error": {"message": "no session 'ev'", "hint": "mcp session open ev", "exit": 4,
                  "kind": "transport", "code": None, "data": None},
    }
    assert protocol.error("bad", kind="usage")["error"]["exit"] == 2
    assert protocol.error("x", kind="rpc", code=-32602)["error"]["code"] == -32602
    with pytest.raises(ValueError, match="kind"):
        protocol.error("x", kind="nonsense")
    with pytest.raises(ValueError, match="op"):
        protocol.request("explode")


def test_line_reader_splits_messages_and_reports_the_end() -> None:
    left, right = socket.socketpair()
    with left, right:
        protocol.send(right, protocol.ok(a=1))
        right.sendall(b'{"b": 2}\n{"c"')
        right.sendall(b": 3}\n")
        right.shutdown(socket.SHUT_WR)
        reader = protocol.LineReader(left)
        assert [reader.read(), reader.read(), reader.read(), reader.read()] == [
            {"ok": True, "a": 1}, {"b": 2}, {"c": 3}, None,
        ]


def test_importing_the_protocol_loads_nothing_beyond_the_standard_library() -> None:
    code = (
        "import sys; before = set(sys.modules); import mcpcli.daemon.protocol; "
        "print(sorted(m for m in set(sys.modules) - before "
        "if m.split('.')[0] not in sys.stdlib_module_names))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['mcpcli', 'mcpcli.daemon', 'mcpcli.daemon.protocol']"
