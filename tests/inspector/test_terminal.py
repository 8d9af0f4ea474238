"""The real `mcp inspect` in a real pseudo-terminal: open a server, filter, fill a form, run,
read the result and the command line, quit; no server is left behind. And the refusal
without a terminal."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from helpers import mcp_in
from terminal import Terminal

COLUMNS, LINES = 160, 50


class Screen:
    """What the terminal shows: the program's output played through a VT emulator (`pyte`),
    since a full-screen app redraws only what changed."""

    def __init__(self, term: Terminal) -> None:
        import pyte

        self.term = term
        self.screen = pyte.Screen(COLUMNS, LINES)
        self.stream = pyte.Stream(self.screen)
        self.fed = 0

    def text(self) -> str:
        output = self.term.output
        self.stream.feed(output[self.fed:])
        self.fed = len(output)
        return "\n".join(self.screen.display)

    def wait_for(self, text: str, timeout: float = 60, *, gone: str | None = None) -> None:
        """Until `text` shows (and `gone` no longer does)."""
        self.term.read_until(lambda: text in (shown := self.text()) and (gone is None or gone not in shown),
                             f"{text!r} on the screen" + (f" without {gone!r}" if gone else ""), timeout)


def servers_in(cwd: Path) -> list[int]:
    """Processes running in `cwd` (the stdio server runs there: --cwd)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd") == str(cwd):
                    found.append(int(entry))
            except OSError:
                pass
    return found


@pytest.mark.peer
@pytest.mark.slow
def test_the_whole_scenario_in_a_terminal(everything: list[str], tmp_path: Path) -> None:
    home = tmp_path / "server-home"
    home.mkdir()
    term = Terminal([sys.executable, "-m", "mcpcli", "inspect", "--cwd", str(home), "--", *everything],
                    columns=COLUMNS)
    screen = Screen(term)
    try:
        screen.wait_for("get-sum")
        assert servers_in(home), "the server runs in its --cwd"
        term.send("/")
        term.send("get-sum")
        screen.wait_for("Returns the sum of two numbers", gone="Echoes back the input string")
        term.send("\r")  # open the highlighted match
        screen.wait_for("tools/call get-sum")
        term.send("2")
        term.send("\t")
        term.send("3")
        term.send("\r")
        screen.wait_for("The sum of 2 and 3 is 5.")
        screen.wait_for(f"$ mcp tools call get-sum --arg a=2 --arg b=3 --cwd {home} --")
        term.send("\x11")  # Ctrl+Q
        assert term.wait(60) == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
            term.proc.wait()
    assert servers_in(home) == []


@pytest.mark.peer
@pytest.mark.slow
def test_ctrl_c_quits_too(everything: list[str], tmp_path: Path) -> None:
    home = tmp_path / "server-home"
    home.mkdir()
    term = Terminal([sys.executable, "-m", "mcpcli", "inspect", "--cwd", str(home), "--", *everything],
                    columns=COLUMNS)
    Screen(term).wait_for("get-sum")
    term.send("\x03")
    assert term.wait(60) == 0
    assert servers_in(home) == []


def test_without_a_terminal_it_is_a_one_line_usage_error() -> None:
    result = mcp_in("inspect", "--", sys.executable, "-c", "pass")
    assert result.code == 2, result
    assert result.stderr.splitlines() == [
        "mcp: error: mcp inspect needs a terminal, and its stdin is not one (scripts use `mcp tools call` "
        "and the other commands)"]
    assert result.stdout == ""
