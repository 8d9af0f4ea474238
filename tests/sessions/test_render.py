"""`mcp session list` and `open` for people: the table, durations, and untrusted text made safe."""

from __future__ import annotations

import io
import time
from typing import Any

from rich.console import Console

from mcpcli import render


def shown(fn: Any, *args: Any) -> str:
    buf = io.StringIO()
    fn(Console(file=buf, width=160, markup=False, highlight=False, color_system=None), *args)
    return buf.getvalue()


def test_the_sessions_table_has_every_column() -> None:
    item = {"name": "ev", "target": "node server.js", "transport": "stdio", "era": "legacy",
            "server": {"name": "everything", "version": "2.0"}, "pid": 4242,
            "started": time.time() - 3725, "idle_seconds": 95, "calls": 7, "state": "ready"}
    text = shown(render.sessions_table, {"sessions": [item]})
    for column in ("NAME", "TARGET", "TRANSPORT", "ERA", "SERVER", "PID", "UPTIME", "IDLE", "CALLS", "STATE"):
        assert column in text
    row = next(line for line in text.splitlines() if "ev" in line and "node" in line)
    for cell in ("node server.js", "stdio", "legacy", "everything 2.0", "4242", "1h02m", "1m", "7", "ready"):
        assert cell in row


def test_no_sessions_says_how_to_open_one() -> None:
    assert "mcp session open NAME" in shown(render.sessions_table, {"sessions": []})


def test_a_server_s_name_cannot_drive_the_terminal() -> None:
    item = {"name": "ev", "server": {"name": "evil\x1b[2J", "version": "1"}, "state": "ready"}
    assert "\x1b" not in shown(render.sessions_table, {"sessions": [item]})
    assert "\x1b" not in shown(render.session_summary, item)


def test_the_summary_after_open() -> None:
    item = {"name": "ev", "server": {"name": "everything", "version": "2.0"}, "protocolVersion": "2025-11-25",
            "transport": "stdio", "pid": 12, "state": "ready"}
    assert shown(render.session_summary, item).strip() == (
        "session ev: everything 2.0 (2025-11-25, stdio), pid 12, ready"
    )
