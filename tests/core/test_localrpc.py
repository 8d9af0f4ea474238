"""The local line-JSON protocols' framing, error form and message helpers (stdlib only: the fast
path imports it)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mcpcli.core import localrpc as protocol


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


def test_importing_the_protocol_loads_nothing_beyond_the_standard_library() -> None:
    code = (
        "import sys; before = set(sys.modules); import mcpcli.core.localrpc; "
        "print(sorted(m for m in set(sys.modules) - before "
        "if m.split('.')[0] not in sys.stdlib_module_names))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['mcpcli', 'mcpcli.core', 'mcpcli.core.localrpc', 'mcpcli.jsontext']"


def test_a_value_json_cannot_carry_is_refused_and_a_lone_surrogate_survives() -> None:
    with pytest.raises(protocol.ProtocolViolation):
        protocol.encode({"x": float("nan")})
    with pytest.raises(protocol.ProtocolViolation):
        protocol.decode(b'{"x": NaN}')
    line = protocol.encode({"id": "\ud800"})
    assert line == b'{"id":"\\ud800"}\n'
    assert protocol.decode(line) == {"id": "\ud800"}


def test_the_side_channel_s_kinds_share_the_error_form() -> None:
    answer = protocol.error("the client did not declare elicitation", kind="declined")
    assert answer["error"]["exit"] == 4
    assert protocol.error("x", kind="invalid")["error"]["exit"] == 2
    assert protocol.error("x", kind="failed")["error"]["exit"] == 5
    # The form the side channel first documented, for a request without "mcpcli".
    flat = protocol.flat_error(answer)
    assert flat == {"ok": False, "kind": "declined", "error": "the client did not declare elicitation"}


@pytest.mark.parametrize(("answer", "form"), [
    ({"ok": False, "error": {"message": "m", "kind": "usage", "exit": 2, "hint": "h", "code": None, "data": None}},
     {"message": "m", "kind": "usage", "exit": 2, "hint": "h", "code": None, "data": None}),
    ({"ok": False, "kind": "declined", "error": "no"},
     {"message": "no", "kind": "declined", "exit": 4, "hint": None, "code": None, "data": None}),
    ({"ok": False, "kind": "odd", "error": 3},
     {"message": "", "kind": "odd", "exit": None, "hint": None, "code": None, "data": None}),
])
def test_a_failed_answer_is_read_in_either_form(answer: dict[str, object], form: dict[str, object]) -> None:
    assert protocol.answer_error(answer) == form
