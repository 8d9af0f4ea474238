"""What a person at a terminal sees and types: the real `mcp` on a pseudo-terminal.

stdin, stdout and stderr are all the pty's slave end, as in an interactive shell.
The helper (`Terminal`, tests/terminal.py) reads everything the program writes and answers
prompts as they appear.
"""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers import mcp_argv
from terminal import Terminal

pytestmark = pytest.mark.peer


# -- elicitation ------------------------------------------------------------------------------


def test_every_elicitation_field_type_is_prompted(everything: list[str]) -> None:
    """server-everything's form: strings, formats, numbers, booleans, every enum spelling."""
    term = Terminal(mcp_argv("tools", "call", "trigger-elicitation-request", "-q", "--", *everything))
    term.expect(r"Please provide inputs for the following fields")
    term.answer(r"Respond\? \[a\]ccept, \[d\]ecline, \[c\]ancel \[a\]: ", "a")
    term.answer(r"String: ", "Ada Lovelace")                                 # required string
    term.answer(r"Boolean \(optional\) \[y/N\]: ", "y")                        # boolean
    term.answer(r"String with default \(optional\) \[It was a dark and stormy night\.\]: ", "")
    term.answer(r"String with email format \(optional\): ", "not-an-email")
    term.answer(r"enter an email address\s+String with email format \(optional\): ", "ada@example.com")
    term.answer(r"String with uri format \(optional\): ", "")
    term.answer(r"String with date format \(optional\): ", "1815-12-10")
    term.answer(r"Integer \(optional\) \[42\]: ", "1000")                      # out of range
    term.answer(r"must be between 1 and 100\s+Integer \(optional\) \[42\]: ", "7")
    term.answer(r"Number in range 1-1000 \(optional\) \[3\.14\]: ", "")
    term.expect(r"1\) Monica")
    term.answer(r"Untitled Single Select Enum \(optional\) \[1\]: ", "2")       # enum by number
    term.expect(r"5\) Bass")
    term.answer(r"Untitled Multiple Select Enum \(optional\) \(numbers, comma-separated\) \[1\]: ", "1,3")
    term.expect(r"3\) Wonder Woman")
    term.answer(r"Titled Single Select Enum \(optional\) \[1\]: ", "Wonder Woman")  # oneOf by title
    term.answer(r"Titled Multiple Select Enum \(optional\) \(numbers, comma-separated\) \[1\]: ", "2")
    term.expect(r"2\) Dogs")
    term.answer(r"Legacy Titled Single Select Enum \(optional\) \[1\]: ", "2")  # enumNames
    term.expect(r"User provided the requested information")
    assert term.wait() == 0, term.output
    raw = term.output[term.output.rindex("Raw result:"):]
    for fragment in ('"name": "Ada Lovelace"', '"check": true', '"email": "ada@example.com"',
                     '"birthdate": "1815-12-10"', '"integer": 7', '"number": 3.14',
                     '"untitledSingleSelectEnum": "Rachel"', '"titledSingleSelectEnum": "hero-3"',
                     '"legacyTitledEnum": "pet-2"', '"firstLine": "It was a dark and stormy night."'):
        assert fragment in raw, raw
    assert re.search(r'"untitledMultipleSelectEnum": \[\s*"Guitar",\s*"Violin"\s*\]', raw), raw
    assert re.search(r'"titledMultipleSelectEnum": \[\s*"fish-2"\s*\]', raw), raw
    assert '"homepage"' not in raw  # optional and left empty: not sent


def test_elicitation_decline_and_cancel(sdk_server: list[str]) -> None:
    term = Terminal(mcp_argv("tools", "call", "ask", "--", *sdk_server))
    term.expect(r"Pick a colour")
    term.answer(r"\[c\]ancel \[a\]: ", "d")
    term.expect(r"no answer: decline")
    assert term.wait() == 0

    term = Terminal(mcp_argv("tools", "call", "ask", "--", *sdk_server))
    term.answer(r"\[c\]ancel \[a\]: ", "c")
    term.expect(r"no answer: cancel")
    assert term.wait() == 0


def test_elicitation_accept_over_mrtr(sdk_server: list[str]) -> None:
    """The SDK server is modern: the form arrives inside an input_required result."""
    term = Terminal(mcp_argv("tools", "call", "ask", "--", *sdk_server))
    term.answer(r"\[c\]ancel \[a\]: ", "a")
    term.expect(r"Your favourite colour")
    term.answer(r"Color: ", "blue")
    term.answer(r"Count \(optional\) \[3\]: ", "5")
    term.expect(r"got blue x5")
    assert term.wait() == 0


def test_end_of_input_at_a_prompt_cancels(sdk_server: list[str]) -> None:
    term = Terminal(mcp_argv("tools", "call", "ask", "--", *sdk_server))
    term.expect(r"\[c\]ancel \[a\]: ")
    term.send("\x04")  # Ctrl-D
    term.expect(r"no answer: cancel")
    assert term.wait() == 0


def test_ctrl_c_at_a_prompt_exits_130_promptly(sdk_server: list[str]) -> None:
    term = Terminal(mcp_argv("tools", "call", "ask", "--", *sdk_server))
    term.expect(r"\[c\]ancel \[a\]: ")
    term.proc.send_signal(signal.SIGINT)
    assert term.wait(timeout=15) == 130, term.output


# -- progress, rendering, colour ---------------------------------------------------------------


def test_progress_bar_on_a_terminal(everything: list[str]) -> None:
    term = Terminal(mcp_argv("tools", "call", "trigger-long-running-operation", "--arg", "duration=1.5",
                             "--arg", "steps=5", "-q", "--", *everything))
    term.expect(r"\d+%")            # the bar's percentage column
    term.expect(r"Long running operation completed")
    assert term.wait() == 0


def test_no_progress_bar_when_stderr_is_not_a_terminal(everything: list[str]) -> None:
    r = subprocess.run(mcp_argv("tools", "call", "trigger-long-running-operation", "--arg", "duration=0.3",
                                "--arg", "steps=3", "-q", "--", *everything),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "%" not in r.stderr and "\x1b" not in r.stderr


def test_human_tables_and_content_on_a_terminal(everything: list[str]) -> None:
    term = Terminal(mcp_argv("tools", "list", "-q", "--", *everything))
    term.expect(r"TOOL\s+DESCRIPTION")
    term.expect(r"get-sum\(a, b\)\s+Returns the sum of two numbers")
    assert term.wait() == 0
    term = Terminal(mcp_argv("tools", "call", "get-tiny-image", "-q", "--", *everything))
    term.expect(r"\[image image/png, 3\.\d KiB\] \(use --save-dir DIR to save it\)")
    assert term.wait() == 0
    assert "iVBOR" not in term.output  # no base64 on a terminal


def test_binary_resources_are_never_written_to_a_terminal(everything: list[str], tmp_path: Path) -> None:
    term = Terminal(mcp_argv("resources", "read", "demo://resource/dynamic/blob/1", "-q", "--", *everything))
    term.expect(r"\[blob text/plain, \d+ B\] \(use --save-dir DIR to save it\)")
    assert term.wait() == 0
    term = Terminal(mcp_argv("resources", "read", "demo://resource/dynamic/blob/1", "--out", "-",
                             "-q", "--", *everything))
    term.expect(r"refusing to write resource content to a terminal")
    assert term.wait() == 2


def test_server_text_is_sanitised_on_a_terminal(everything: list[str]) -> None:
    evil = "hi\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202egnp.exe"
    term = Terminal(mcp_argv("tools", "call", "echo", "--arg", f"message={evil}", "-q", "--", *everything))
    term.expect(r"Echo: hi")
    assert term.wait() == 0
    assert "\x1b]52" not in term.output and "\x1b[2J" not in term.output and "\u202e" not in term.output
    assert r"\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202egnp.exe" in term.output


def test_no_color_is_honoured(everything: list[str]) -> None:
    plain = Terminal(mcp_argv("prompts", "list", "-q", "--", *everything), env={"NO_COLOR": "1"})
    plain.expect(r"PROMPT")
    assert plain.wait() == 0
    assert "\x1b[" not in plain.output
    coloured = Terminal(mcp_argv("prompts", "list", "-q", "--", *everything), env={"NO_COLOR": ""})
    coloured.expect(r"PROMPT")
    assert coloured.wait() == 0
    assert "\x1b[1m" in coloured.output  # the bold header


def test_subscription_events_on_a_terminal(sdk_server: list[str]) -> None:
    term = Terminal(mcp_argv("resources", "subscribe", "item://tick", "--count", "2", "--",
                             *sdk_server, "--tick"))
    term.expect(r"watching 1 resource\(s\); Ctrl-C to stop")
    term.expect(r"\d\d:\d\d:\d\d updated item://tick")
    term.expect(r"\d\d:\d\d:\d\d updated item://tick")
    assert term.wait() == 0


def test_prompt_messages_and_info_on_a_terminal(everything: list[str]) -> None:
    term = Terminal(mcp_argv("prompts", "get", "resource-prompt", "--arg", "resourceType=Text",
                             "--arg", "resourceId=2", "-q", "--", *everything))
    term.expect(r"── user ──")
    term.expect(r"\[resource demo://resource/dynamic/text/2\]")
    term.expect(r"Resource 2: This is a plaintext resource")
    assert term.wait() == 0
    term = Terminal(mcp_argv("info", "-q", "--", *everything))
    term.expect(r"mcp-servers/everything 2\.0\.0 — Everything Reference Server")
    term.expect(r"protocol\s+2025-11-25 \(legacy era\)")
    term.expect(r"instructions:")
    assert term.wait() == 0


# -- tasks ------------------------------------------------------------------------------------


def test_task_status_shows_on_a_terminal(everything: list[str]) -> None:
    term = Terminal(mcp_argv("tools", "call", "simulate-research-query", "--arg", "topic=otters",
                             "-q", "--", *everything))
    term.expect(r"task working: Analyzing content")
    term.expect(r"Research Report: otters")
    assert term.wait() == 0, term.output


def test_a_task_asks_for_input_at_the_terminal(everything: list[str]) -> None:
    term = Terminal(mcp_argv("tools", "call", "simulate-research-query", "--arg", "topic=python",
                             "--arg", "ambiguous=true", "-q", "--", *everything))
    term.expect(r"could have multiple interpretations")
    term.answer(r"\[c\]ancel \[a\]: ", "a")
    term.expect(r"3\) Monty Python comedy group")
    term.answer(r"Clarification: ", "3")
    term.expect(r"Research Report: python \(comedy\)")
    assert term.wait() == 0, term.output


def test_detached_task_and_tasks_get_read_well_on_a_terminal(task_http: Any) -> None:
    term = Terminal(mcp_argv("tools", "call", task_http.url, "slow", "--arg", "text=x", "--detach"))
    task_id = term.expect(r"task\s+task-\S+").split()[-1]
    term.expect(r"status\s+working")
    term.expect(rf"follow it with `mcp tasks result {re.escape(task_http.url)} {task_id}`")
    assert term.wait() == 0, term.output

    term = Terminal(mcp_argv("tasks", "result", task_http.url, task_id))
    term.expect(r"done: x")
    assert term.wait() == 0, term.output
    term = Terminal(mcp_argv("tasks", "get", task_http.url, task_id))
    term.expect(r"status\s+completed")
    term.expect(r"done: x")  # the inlined result, rendered like a tool result
    assert term.wait() == 0, term.output
