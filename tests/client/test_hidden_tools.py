"""Tools a server offers only to clients declaring a capability (issue 22): an unknown tool
says which option would reveal it, and `tools list` on a terminal names them.

server-everything registers `trigger-sampling-request` only for clients declaring sampling,
`trigger-url-elicitation` for URL-mode elicitation (a terminal) and `get-roots-list` for roots.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in
from sessions.test_fast_path import main_process

from client.test_tty import Terminal, mcp_argv


@pytest.mark.peer
@pytest.mark.parametrize(("tool", "flags", "what", "how"), [
    ("trigger-sampling-request", [], "sampling", "--sampling-command CMD"),
    ("get-roots-list", ["--sampling-command", "echo"], "roots", "--root DIR"),
    ("trigger-url-elicitation", ["--root", "."], "URL-mode elicitation", "a terminal on stdin and stderr"),
])
def test_an_unknown_tool_a_capability_would_reveal_says_which(
    everything: list[str], tool: str, flags: list[str], what: str, how: str
) -> None:
    for command in ("call", "show"):
        result = mcp_in("tools", command, tool, *flags, "--", *everything)
        assert result.code == 2, result
        assert result.stderr.endswith(
            f"mcp: error: unknown tool {tool!r}: the server offers it only to clients that declare {what}\n"
            f"mcp: hint: declare it with {how}\n"), result


@pytest.mark.peer
def test_declaring_it_reveals_it_and_other_unknown_tools_read_as_before(everything: list[str]) -> None:
    shown = mcp_in("tools", "show", "trigger-sampling-request", "--sampling-command", "echo", "--json",
                   "--", *everything)
    assert shown.code == 0 and shown.json["name"] == "trigger-sampling-request", shown
    plain = mcp_in("tools", "call", "ech", "--", *everything)
    assert plain.code == 2
    assert plain.stderr.endswith("mcp: error: unknown tool 'ech'\nmcp: hint: did you mean echo?\n"), plain
    as_json = mcp_in("tools", "call", "trigger-sampling-request", "--json", "--", *everything)
    assert as_json.code == 2
    assert json.loads(as_json.stderr.splitlines()[-1])["error"] == {
        "type": "usage", "exitCode": 2, "hint": "declare it with --sampling-command CMD",
        "message": "unknown tool 'trigger-sampling-request': the server offers it only to clients that "
                   "declare sampling"}


@pytest.mark.peer
@pytest.mark.slow
def test_the_one_shot_path_hands_an_unknown_tool_to_the_full_path(everything: list[str]) -> None:
    """The one-shot path declares none of the three: the full path says which would do."""
    result, loaded = main_process("tools", "call", "trigger-sampling-request", "--arg", "prompt=hi",
                                  "--", *everything)
    assert "click" in loaded, "the full path did not run"
    assert result.code == 2 and "declare it with --sampling-command CMD" in result.stderr, result


@pytest.mark.peer
@pytest.mark.slow
def test_tools_list_on_a_terminal_names_the_hidden_tools(everything: list[str]) -> None:
    terminal = Terminal(mcp_argv("tools", "list", "--", *everything))
    assert terminal.wait(timeout=60) == 0, terminal.output
    lines = [line.strip() for line in terminal.output.splitlines()]
    # A terminal declares URL-mode elicitation already: sampling and roots are what is left.
    assert "mcp: 1 more tool appears to clients that declare sampling (--sampling-command CMD): " \
           "trigger-sampling-request" in lines, terminal.output
    assert "mcp: 1 more tool appears to clients that declare roots (--root DIR): get-roots-list" in lines


def _connections(record: Path) -> int:
    """How many times the server was started and asked to initialize."""
    messages = [json.loads(line) for line in record.read_text().splitlines()]
    return sum(1 for m in messages if m.get("method") == "initialize")


@pytest.mark.slow
def test_tools_list_probes_on_a_terminal_only_and_notes_nothing_when_nothing_is_hidden(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    server = fake_server("--record", str(record))
    piped = mcp_in("tools", "list", "--", *server)
    assert piped.code == 0 and "more tool" not in piped.stderr, piped
    assert _connections(record) == 1  # scripts pay for no second connection
    record.unlink()
    terminal = Terminal(mcp_argv("tools", "list", "--", *server))
    assert terminal.wait(timeout=60) == 0, terminal.output
    assert "more tool" not in terminal.output and "echo" in terminal.output, terminal.output
    assert _connections(record) == 2  # the probe, which found nothing more
    probe = [json.loads(line) for line in record.read_text().splitlines()
             if json.loads(line).get("method") == "initialize"]
    declared = [m["params"]["capabilities"] for m in probe]
    assert {"sampling", "roots"} <= set(declared[0]) | set(declared[1]), declared


def test_tools_list_on_a_terminal_shows_tools_no_client_can_use_as_they_are() -> None:
    """Tools with a name that is no string, a `required` that is no list of names, or that are
    no object, do not break the table or the probe for hidden tools (a list as a name, or in
    `required`, was once an unhashable set member)."""
    terminal = Terminal(mcp_argv("tools", "list", "--", *fake_server("--odd-tools")))
    assert terminal.wait(timeout=60) == 0, terminal.output
    assert "internal error" not in terminal.output, terminal.output
    for shown in ("echo(message)", '["not", "text"]()', "?()", "odd-required(a?)", "required-number()"):
        assert shown in terminal.output, terminal.output


@pytest.mark.peer
def test_a_session_is_never_probed(everything: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its capabilities are the daemon's: the plain error, as the fast path prints it."""
    monkeypatch.setenv("MCPCLI_RUNTIME_DIR", str(tmp_path / "run"))
    assert mcp_in("session", "open", "ev", "--", *everything).code == 0
    try:
        result = mcp_in("tools", "call", "@ev", "trigger-sampling-request")
        assert result.code == 2
        assert result.stderr == ("mcp: error: unknown tool 'trigger-sampling-request'\n"
                                 "mcp: hint: did you mean trigger-elicitation-request?\n"), result
    finally:
        mcp_in("session", "close", "--all")
