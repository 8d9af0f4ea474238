"""URL-mode elicitation at a terminal: the URL is always shown, and answering `y` where no
browser can be opened says so (before: `accept`, and not a word that nothing was opened).

A tools.yaml tool asks through the side channel (`mcp script ask`), served in the same
process as `mcp tools call FILE`, on a real pseudo-terminal (the client declares URL mode
only there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import mcp_argv
from terminal import Terminal

pytestmark = pytest.mark.slow

URL = "https://auth.example.com/connect?session=42"
NO_DESKTOP = {"DISPLAY": "", "WAYLAND_DISPLAY": ""}


def _tools(tmp_path: Path, url: str = URL) -> str:
    ask = {"go": {"method": "elicitation/create", "params": {
        "mode": "url", "url": url, "message": "Connect your account", "elicitationId": "e-1"}}}
    path = tmp_path / "tools.yaml"
    path.write_text(f"""version: 1
tools:
  - name: connect
    description: asks the user to visit a page
    run:
      shell: sh
      script: |
        mcp script ask '{json.dumps(ask)}'
""")
    return str(path)


def _accept(tmp_path: Path, env: dict[str, str], url: str = URL) -> Terminal:
    term = Terminal(mcp_argv("tools", "call", _tools(tmp_path, url), "connect"), env={**NO_DESKTOP, **env})
    term.expect(r"Connect your account")
    term.expect(r"The server asks you to open a page on auth\.example\.com:")
    term.expect(r"https://auth\.example\.com/connect\?session=42")
    term.answer(r"Open it\? \[y/N\]: ", "y")
    return term


def test_a_failing_browser_command_is_reported(tmp_path: Path) -> None:
    term = _accept(tmp_path, {"BROWSER": "false"})
    term.expect(r"Could not open it: the BROWSER command failed\. Open the address above yourself\.")
    term.expect(r'"action": "accept"')
    assert term.wait() == 0, term.output


def test_no_browser_at_all_is_reported(tmp_path: Path) -> None:
    term = _accept(tmp_path, {"BROWSER": ""})
    term.expect(r"Could not open it: there is no browser to open it with here")
    term.expect(r'"action": "accept"')
    assert term.wait() == 0, term.output


def test_a_working_browser_gets_the_url_and_nothing_is_said(tmp_path: Path) -> None:
    opened = tmp_path / "opened"
    term = _accept(tmp_path, {"BROWSER": f"sh -c 'echo \"$0\" > {opened}'"})
    term.expect(r'"action": "accept"')
    assert term.wait() == 0, term.output
    assert opened.read_text().strip() == URL
    assert "Could not open" not in term.output and "Not opened" not in term.output


def test_a_url_unsafe_for_a_launcher_is_shown_not_opened(tmp_path: Path) -> None:
    opened = tmp_path / "opened"
    url = "https://me@auth.example.com/connect?session=42"
    term = Terminal(mcp_argv("tools", "call", _tools(tmp_path, url), "connect"),
                    env={**NO_DESKTOP, "BROWSER": f"sh -c 'echo \"$0\" > {opened}'"})
    term.expect(r"https://me@auth\.example\.com/connect\?session=42")
    term.answer(r"Open it\? \[y/N\]: ", "y")
    term.expect(r"Not opened: it contains user information before the host\. Open the address above yourself")
    assert term.wait() == 0, term.output
    assert not opened.exists()
