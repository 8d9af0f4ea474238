"""Server identity and configured servers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpcli.output import print_json
from mcpcli.render._common import JSON, _obj, _s, _table

if TYPE_CHECKING:
    from rich.console import Console


def _capability_names(caps: Any) -> list[str]:
    if not isinstance(caps, dict):
        return []
    out = []
    for name, value in caps.items():
        flags = [k for k, v in value.items() if v is True or v == {}] if isinstance(value, dict) else []
        out.append(f"{name}" + (f" ({', '.join(flags)})" if flags else ""))
    return out


def server_info(console: Console, info: JSON) -> None:
    """`mcp info`: identity, protocol, transport, capabilities, instructions."""
    server = _obj(info.get("serverInfo"))
    name = _s(server.get("name") or "?")
    title = server.get("title")
    console.print(f"{name} {_s(server.get('version') or '')}".strip()
                  + (f" — {_s(title)}" if title and title != server.get("name") else ""), style="bold")
    rows = [
        ("protocol", f"{_s(info.get('protocolVersion'))} ({_s(info.get('era'))} era)"),
        ("transport", _s(info.get("transport"))),
    ]
    if info.get("supportedVersions"):
        rows.append(("supports", ", ".join(_s(v) for v in info["supportedVersions"])))
    caps = _capability_names(info.get("capabilities"))
    rows.append(("capabilities", ", ".join(caps) if caps else "(none)"))
    if server.get("description"):
        rows.append(("description", _s(server["description"])))
    if server.get("websiteUrl"):
        rows.append(("website", _s(server["websiteUrl"])))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        console.print(f"{key.ljust(width)}  {value}")
    if info.get("instructions"):
        console.print()
        console.print("instructions:", style="bold")
        console.print(_s(info["instructions"], one_line=False))


def servers_table(console: Console, result: JSON) -> None:
    items = [s for s in result.get("servers", []) if isinstance(s, dict)]
    if not items:
        console.print("(no servers configured; add one with `mcp servers add NAME -- COMMAND...`)")
        return
    sessions = any(_session(item) for item in items)
    columns = ["NAME", "TRANSPORT", "COMMAND / URL", "SOURCE"] + (["SESSION"] if sessions else [])
    table = _table(*columns)
    for item in items:
        target = item.get("url") or " ".join([item.get("command") or "", *(item.get("args") or [])])
        name = _s(item.get("name"))
        if item.get("shadowed"):
            name += " (shadowed)"
        elif item.get("trust") in ("untrusted", "changed"):
            name += f" ({item['trust']})"
        row = [name, _s(item.get("transport")), _s(target, limit=80), _s(item.get("source"))]
        table.add_row(*row, *([_session(item)] if sessions else []))
    console.print(table)


def _idle(seconds: Any) -> str:
    """`90s`, `30m`, `2h`, `1h30m` or `never`: an idleTimeout as one would write it."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return "never"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{secs}s" if secs else ""]
    return "".join(parts) or f"{seconds}s"


def _session(item: JSON) -> str:
    """A server's session settings in a few words; empty when it has none."""
    words = []
    if item.get("keepAlive"):
        words.append(f"keep-alive, idle {_idle(item.get('idleTimeout'))}")
    elif item.get("idleTimeout") is not None:
        words.append(f"idle {_idle(item.get('idleTimeout'))}")
    if item.get("restart") not in (None, "no"):
        words.append(f"restart {_s(item.get('restart'))}")
    return ", ".join(words)


def server_detail(console: Console, item: JSON) -> None:
    console.print(_s(item.get("name")), style="bold")
    console.print(f"source     {_s(item.get('source'))}")
    console.print(f"file       {_s(item.get('path'))}")
    console.print(f"transport  {_s(item.get('transport'))}")
    if item.get("trust") in ("untrusted", "changed", "trusted"):
        note = {"untrusted": "untrusted: does not run until you trust its file (`mcp servers trust`)",
                "changed": "changed since you trusted its file: does not run until you trust it again",
                "trusted": "trusted project file"}[item["trust"]]
        console.print(f"trust      {note}")
    if _session(item):
        console.print(f"session    {_session(item)}")
    helper = item.get("headersHelper")
    if helper is not None:
        shown = " ".join(helper) if isinstance(helper, list) else helper
        console.print(f"headers    from {_s(shown)}")
    console.print()
    print_json(console, item.get("config", {}))
