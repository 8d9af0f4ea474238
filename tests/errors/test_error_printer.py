"""The one error printer (`errors.error_text`/`print_error`): `mcpcli.cli.main()`'s `App.report`
and both fast paths print through it, so an error looks the same whichever path ran."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from mcpcli.errors import (
    McpCliError,
    NotOffered,
    RPCError,
    UsageError,
    ValidationError,
    error_text,
    print_error,
)


def test_an_error_is_one_line_and_a_hint_line() -> None:
    error = UsageError("bad\nflag", hint="see\r\n`mcp --help`")
    assert error_text(error, "mcpcli") == "mcpcli: error: bad | flag\nmcpcli: hint: see | `mcp --help`\n"
    assert error_text(McpCliError("no hint")) == "mcp: error: no hint\n"


def test_under_json_it_is_the_error_object_on_one_line() -> None:
    text = error_text(RPCError(-32602, "Bad\u2028params", {"x": 1}), json_errors=True)
    assert text.endswith("\n") and text.count("\n") == 1
    assert "\\u2028" in text  # a character a terminal would act on, spelled out
    assert json.loads(text) == {"error": {
        "type": "rpc", "message": "Bad\u2028params (code -32602)", "exitCode": 5,
        "rpc": {"code": -32602, "message": "Bad\u2028params", "data": {"x": 1}}}}
    offered = json.loads(error_text(NotOffered("s", "prompts", "prompts"), json_errors=True))["error"]
    assert (offered["type"], offered["exitCode"], offered["rpc"]["code"]) == ("not-offered", 5, -32601)
    assert "hint" in offered


@pytest.mark.parametrize(("report", "lines", "obj", "status"), [
    ({"message": "arguments do not match", "hint": "see `mcp tools show`", "kind": "usage", "exit": 2,
      "type": "validation", "code": None, "data": None},
     "mcp: error: arguments do not match\nmcp: hint: see `mcp tools show`\n",
     {"type": "validation", "message": "arguments do not match", "exitCode": 2, "hint": "see `mcp tools show`"}, 2),
    ({"message": "Unknown tool", "kind": "rpc", "code": -32602, "data": None, "exit": 5, "hint": None},
     "mcp: error: Unknown tool (code -32602)\n",
     {"type": "rpc", "message": "Unknown tool (code -32602)", "exitCode": 5,
      "rpc": {"code": -32602, "message": "Unknown tool"}}, 5),
    ({"message": "gone", "kind": "transport", "exit": 4, "type": "server-exited"},
     "mcp: error: gone\n", {"type": "server-exited", "message": "gone", "exitCode": 4}, 4),
    ({"kind": "weird"}, "mcp: error: the session daemon reported an error\n",
     {"type": "weird", "message": "the session daemon reported an error", "exitCode": 1}, 1),
    ("not an object", "mcp: error: the session daemon sent a malformed error\n",
     {"type": "protocol", "message": "the session daemon sent a malformed error", "exitCode": 4}, 4),
])
def test_the_daemon_s_error_form_is_printed_as_sent(report: Any, lines: str, obj: dict[str, Any], status: int) -> None:
    assert error_text(report) == lines
    assert json.loads(error_text(report, json_errors=True)) == {"error": obj}
    stream = io.StringIO()
    assert print_error(report, stream=stream) == status
    assert stream.getvalue() == lines


def test_the_app_prints_through_it() -> None:
    from mcpcli.cli._app import App

    for json_errors in (False, True):
        stream = io.StringIO()
        app = App(stderr=stream, prog="mcpcli", json_errors=json_errors)
        error = ValidationError("arguments do not match", hint="mcp tools show srv t")
        app.report(error)
        assert stream.getvalue() == error_text(error, "mcpcli", json_errors=json_errors)
