"""`mcp ping`: is the server there, and how long does a round trip take?"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import App
from mcpcli.cli._connection import Connection
from mcpcli.cli._options import target_command
from mcpcli.cli._types import seconds
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.client import Client

__all__ = ["ping"]


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


@target_command()
@click.option("--count", "-c", type=click.IntRange(min=1), default=1, show_default=True, metavar="N",
              help="Send N pings.")
@click.option("--interval", "-i", type=seconds(min_open=False), default=1.0, show_default=True,
              metavar="SECONDS", help="Wait between pings.")
def ping(
    app: App, target: str | None, count: int, interval: float, conn: Connection, out: Output
) -> None:
    """Check that a server answers, and time the round trip.

    \b
    Servers of 2025-11-25 and earlier get the `ping` request; 2026-07-28
    removed it, so modern servers are timed with `server/discover`. The method
    used is printed (and is in the JSON).
      mcp ping srv
      mcp ping srv --count 5 --interval 0.2
      mcp ping srv --json | jq .avgMs
    With --jsonl, one line per reply: {"seq", "method", "ms"}.
    """
    import anyio

    async def go(client: Client) -> dict[str, Any]:
        times: list[float] = []
        method = "ping"
        for seq in range(1, count + 1):
            if seq > 1 and interval:
                await anyio.sleep(interval)
            method, elapsed = await client.ping()
            times.append(_ms(elapsed))
            if out.mode == "jsonl":
                out.event({"seq": seq, "method": method, "ms": times[-1]})
            elif out.human:
                line = f"reply {seq} from {_name(client)}: {times[-1]:.1f} ms ({method})"
                out.console().print(line)
        return {
            "server": client.server_info.get("name"),
            "method": method,
            "count": count,
            "times": times,
            "minMs": min(times),
            "avgMs": round(sum(times) / len(times), 3),
            "maxMs": max(times),
        }

    summary = app.with_client(target, conn, go)
    if out.mode == "json":
        out.emit(summary)
    elif out.human and count > 1:
        out.console().print(
            f"{count} replies, min/avg/max = "
            f"{summary['minMs']:.1f}/{summary['avgMs']:.1f}/{summary['maxMs']:.1f} ms",
            style="dim",
        )


def _name(client: Any) -> str:
    from mcpcli.text import printable

    return printable(str(client.server_info.get("name") or "server"), keep_newlines=False)
