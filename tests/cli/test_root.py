"""The one error boundary (`mcpcli.cli._root.run`): exception groups never become tracebacks."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from mcpcli.cli import _root
from mcpcli.errors import RPCError

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup, ExceptionGroup


def _raising(exc: BaseException) -> Any:
    def main(*args: Any, **kwargs: Any) -> None:
        raise exc

    return main


@pytest.mark.parametrize(
    ("exc", "code", "message"),
    [
        (ExceptionGroup("tg", [ValueError("bad value")]), 1, "mcp: error: internal error: ValueError: bad value"),
        (ExceptionGroup("tg", [ExceptionGroup("inner", [RPCError(-32000, "nope")])]), 5,
         "mcp: error: nope (code -32000)"),
        (BaseExceptionGroup("tg", [asyncio.CancelledError("stray")]), 1,
         "mcp: error: internal error: CancelledError: stray"),
        (ExceptionGroup("tg", [TypeError("x"), RPCError(-1, "typed wins")]), 5, "typed wins"),
        (asyncio.CancelledError("bare"), 1, "mcp: error: internal error: CancelledError: bare"),
    ],
)
def test_exception_groups_become_one_line(
    exc: BaseException, code: int, message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_root.cli, "main", _raising(exc))
    assert _root.run(["tools", "list"]) == code
    err = capsys.readouterr().err
    assert message in err.splitlines()[0]
    assert "Traceback" not in err and "ExceptionGroup" not in err


def test_keyboard_interrupt_inside_a_group_is_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_root.cli, "main", _raising(BaseExceptionGroup("tg", [KeyboardInterrupt()])))
    assert _root.run(["tools", "list"]) == 130
    assert capsys.readouterr().err == "mcp: error: interrupted\n"
