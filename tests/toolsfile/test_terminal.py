"""`mcp serve` run by a person at a terminal: a stdio server would sit silent there (and take
a typed line for bad JSON-RPC), so it says what it is waiting for; run by a client (stdin a
pipe) it says nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import REPO, mcp, mcp_argv, mcp_in
from terminal import Terminal

pytestmark = pytest.mark.slow

TOOLS = str(REPO / "examples" / "tools.yaml")
WAITING = "over stdio: waiting for an MCP client to speak JSON-RPC on stdin"


def test_a_tools_file_on_a_terminal_says_what_it_waits_for() -> None:
    term = Terminal(mcp_argv("serve", TOOLS))
    term.expect(rf"serving {TOOLS} \(7 tools, 3 resources, 2 prompts\) {WAITING}")
    term.expect(r"Ctrl-C stops")
    term.expect(rf"hint: to try it, `mcp tools list {TOOLS}`; to serve over HTTP instead, add `--http PORT`")
    term.send("\x04")  # Ctrl-D: end of input, the ordinary end of a stdio server
    assert term.wait() == 0, term.output


def test_a_proxy_and_a_replay_on_a_terminal_say_it_too(tmp_path: Path) -> None:
    term = Terminal(mcp_argv("serve", "--proxy", TOOLS))
    term.expect(rf"serving tools through a gateway {WAITING}")
    term.expect(rf"to try it, `mcp tools list {TOOLS}`")
    term.send("\x04")
    assert term.wait() == 0, term.output

    recording = tmp_path / "rec.ndjson"
    assert mcp_in("tools", "list", TOOLS, "--record", str(recording)).code == 0
    term = Terminal(mcp_argv("serve", "--replay", str(recording)))
    term.expect(rf"serving the recording {recording} {WAITING}")
    term.expect(rf"to try it, `mcp tools list -- mcp serve --replay {recording}`")
    term.send("\x04")
    assert term.wait() == 0, term.output


def test_a_client_on_the_pipe_gets_no_notice() -> None:
    served = mcp("serve", TOOLS, input="")
    assert served.code == 0, served
    assert served.stderr == "" and served.stdout == ""
