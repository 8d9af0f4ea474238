"""Waiting in silence: on a terminal, a request unanswered for a few seconds gets one live line
on stderr saying what is awaited from whom, for how long, and that Ctrl-C stops; it goes when
the answer comes, a tool call's progress bar takes over from it, and a pipe never sees it.

The delay (3 s) is MCPCLI_WAITING_AFTER here, so no test waits for it: the servers below
answer only when the test lets them, or never."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest
from helpers import fake_server, mcp, mcp_argv
from terminal import Terminal

pytestmark = pytest.mark.slow

#: A "server" that reads nothing and answers nothing.
SILENT = [sys.executable, "-c", "import time; time.sleep(120)"]
SOON = {"MCPCLI_WAITING_AFTER": "0.1"}


def test_a_silent_server_is_named_and_ctrl_c_stops() -> None:
    """Before: a minute of nothing, then "handshake timed out"."""
    term = Terminal(mcp_argv("tools", "list", "--", *SILENT), env=SOON)
    term.expect(r"waiting for an answer to (server/discover|initialize) from python\S* -c import time")
    term.expect(r"\(\d+ s; Ctrl-C stops\)")
    term.proc.send_signal(signal.SIGINT)
    assert term.wait() == 130, term.output


def test_the_line_goes_when_the_answer_comes(tmp_path: Path) -> None:
    booted = tmp_path / "booted"
    server = fake_server("--slow-modern", "0", "--hold-discover", str(booted))
    term = Terminal(mcp_argv("tools", "list", "--", *server), env={**SOON, "MCP_PROBE_TIMEOUT": "60"})
    term.expect(r"waiting for an answer to server/discover from python")
    booted.touch()  # the server answers now
    term.expect(r"echo")
    assert term.wait() == 0, term.output
    after = term.output[term.output.rindex("Ctrl-C stops"):]
    assert "\x1b[?25h" in after  # the live line ended (rich shows the cursor again)...
    assert after.index("\x1b[?25h") < after.index("echo")  # ...before the listing was printed


def test_a_tool_call_that_goes_silent_is_named_too() -> None:
    term = Terminal(mcp_argv("tools", "call", "echo", "-a", "message=hi", "--", *fake_server("--never-answer")),
                    env=SOON)
    term.expect(r"waiting for an answer to tools/call from python")
    term.proc.send_signal(signal.SIGINT)
    assert term.wait() == 130, term.output


def test_a_tool_calls_progress_bar_takes_over_from_the_line() -> None:
    """The line shows at once (delay 0); the first progress brings the call's bar, which
    replaces it: never both."""
    term = Terminal(mcp_argv("tools", "call", "echo", "-a", "message=hi", "--max-timeout", "2", "--",
                             *fake_server("--progress-forever")), env={"MCPCLI_WAITING_AFTER": "0"})
    term.expect(r"waiting for an answer to tools/call from python")
    term.expect(r"working")  # the bar
    bar_from = term.output.index("working", term.output.index("to tools/call"))
    assert term.wait() == 124, term.output
    assert "waiting for an answer" not in term.output[bar_from:]


def test_a_pipe_never_sees_it() -> None:
    result = mcp("tools", "list", "--timeout", "1", "--", *SILENT, env={"MCPCLI_WAITING_AFTER": "0"})
    assert result.code == 124, result
    assert "waiting for" not in result.stderr and "Ctrl-C" not in result.stderr
