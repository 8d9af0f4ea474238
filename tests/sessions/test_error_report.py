"""The daemon's error form and the typed errors a command re-raises from it (exit codes
as the one-shot command's)."""

from __future__ import annotations

from typing import Any

import pytest

from mcpcli.core import localrpc as protocol
from mcpcli.errors import (
    AuthError,
    ConfigError,
    McpCliError,
    ProtocolError,
    RequestTimeout,
    RPCError,
    ToolError,
    TransportError,
    UsageError,
    error_report,
    from_error_report,
)


@pytest.mark.parametrize(
    ("error", "kind", "exit_code"),
    [
        (UsageError("bad flag", hint="see --help"), "usage", 2),
        (ConfigError("bad config"), "usage", 2),
        (AuthError("sign in"), "auth", 3),
        (TransportError("server exited", hint="mcp session restart ev"), "transport", 4),
        (RPCError(-32602, "Unknown resource", {"uri": "x"}), "rpc", 5),
        (RequestTimeout("timed out"), "timeout", 124),
    ],
)
def test_an_error_survives_the_round_trip_with_its_exit_code(error: McpCliError, kind: str, exit_code: int) -> None:
    report = error_report(error)
    assert (report["kind"], report["exit"]) == (kind, exit_code)
    again = from_error_report(protocol.decode(protocol.encode({"error": report}))["error"])
    assert int(again.exit_code) == exit_code
    assert (again.message, again.hint) == (error.message, error.hint)
    if isinstance(error, RPCError):
        assert isinstance(again, RPCError)
        assert (again.code, again.data) == (-32602, {"uri": "x"})


def test_the_protocol_s_error_helper_is_understood() -> None:
    answer = protocol.error("no session 'ev'", hint="mcp session open ev")
    again = from_error_report(answer["error"])
    assert isinstance(again, TransportError)
    assert (again.message, again.hint, int(again.exit_code)) == ("no session 'ev'", "mcp session open ev", 4)


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        ({"message": "x", "kind": "weird", "exit": 2}, UsageError),
        ({"message": "x", "kind": "weird", "exit": 1}, McpCliError),
        ({"message": "x", "kind": "rpc", "code": "nope", "exit": 5}, McpCliError),
        ("not an object", ProtocolError),
    ],
)
def test_a_malformed_error_is_still_a_typed_error(report: Any, expected: type[McpCliError]) -> None:
    error = from_error_report(report)
    assert type(error) is expected
    assert error.message


def test_a_tool_error_reports_exit_1() -> None:
    assert error_report(ToolError("tool 'x' reported an error"))["exit"] == 1
