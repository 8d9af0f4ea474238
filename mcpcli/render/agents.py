"""Renderings for agent-facing commands: `tools grep` matches, grouped by server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpcli.render._common import _first_line, _s

if TYPE_CHECKING:
    from rich.console import Console


def grep_matches(console: Console, matches: list[Any]) -> None:
    """One line per matching tool (name, title, the description's first line) under
    its server's name, servers in the order they were searched."""
    server = None
    for match in matches:
        if match.get("server") != server:
            server = match.get("server")
            console.print(_s(server), style="bold")
        from rich.text import Text

        line = Text(f"  {_s(match.get('tool'))}")
        if match.get("title"):
            line.append(f"  ({_s(match['title'])})")
        if match.get("description"):
            line.append(f"  {_s(_first_line(match['description']))}", style="dim")
        console.print(line, no_wrap=True, overflow="ellipsis")
