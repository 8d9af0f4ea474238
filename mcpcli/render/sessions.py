"""Sessions the daemon holds (`mcp session list`, `open`, `restart`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from mcpcli.render._common import JSON, _obj, _s, _table

if TYPE_CHECKING:
    from rich.console import Console


def _duration(seconds: Any) -> str:
    """`42s`, `7m`, `3h05m`: an uptime or idle time at a glance."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
        return ""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m"
    return f"{whole // 3600}h{(whole % 3600) // 60:02d}m"


def _server(item: JSON) -> str:
    server = _obj(item.get("server"))
    return f"{_s(server.get('name') or '')} {_s(server.get('version') or '')}".strip()


def sessions_table(console: Console, result: JSON) -> None:
    items = [s for s in result.get("sessions", []) if isinstance(s, dict)]
    if not items:
        console.print("(no sessions; open one with `mcp session open NAME`)")
        return
    now = time.time()
    table = _table("NAME", "TARGET", "TRANSPORT", "ERA", "SERVER", "PID", "UPTIME", "IDLE", "CALLS", "STATE")
    for item in items:
        started = item.get("started")
        uptime = _duration(now - started) if isinstance(started, (int, float)) else ""
        table.add_row(
            _s(item.get("name")), _s(item.get("target"), limit=50), _s(item.get("transport")),
            _s(item.get("era")), _s(_server(item), limit=40), _s(item.get("pid") or ""), uptime,
            _duration(item.get("idle_seconds")), _s(item.get("calls", 0)), _s(item.get("state")),
        )
    console.print(table)


def session_summary(console: Console, item: JSON) -> None:
    """One session, after `open` or `restart`: what it runs and how it is reached."""
    line = f"session {_s(item.get('name'))}: {_server(item) or '?'}"
    details = [_s(v) for v in (item.get("protocolVersion"), item.get("transport")) if v]
    if details:
        line += f" ({', '.join(details)})"
    if item.get("pid"):
        line += f", pid {_s(item.get('pid'))}"
    line += f", {_s(item.get('state') or 'ready')}"
    console.print(line)
