"""`mcp info`: who the server is and what it can do."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpcli.cli._app import App
from mcpcli.cli._connection import Connection
from mcpcli.cli._options import target_command
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.client import Client

__all__ = ["info", "server_summary"]


def server_summary(client: Client) -> dict[str, Any]:
    """What `mcp info --json` prints: the negotiated facts plus the raw handshake result."""
    transport = client.transport
    summary: dict[str, Any] = {
        "serverInfo": client.server_info,
        "protocolVersion": client.protocol_version,
        "era": client.era,
        "transport": transport.name,
        "capabilities": client.capabilities,
    }
    if client.instructions is not None:
        summary["instructions"] = client.instructions
    if client.supported_versions:
        summary["supportedVersions"] = list(client.supported_versions)
    endpoint = transport.describe()
    if endpoint is not None:
        summary["endpoint"] = endpoint
    summary["handshake"] = client.handshake
    return summary


@target_command()
def info(app: App, target: str | None, conn: Connection, out: Output) -> None:
    """Show server identity, capabilities, instructions and the negotiated protocol.

    \b
    With --json, prints an object with serverInfo, protocolVersion, era
    ("legacy" for the initialize handshake, "modern" for 2026-07-28),
    transport, capabilities, instructions, supportedVersions (modern servers),
    and handshake (the raw initialize or server/discover result).
      mcp info srv
      mcp info srv --jq .protocolVersion -r
    """
    from mcpcli import render

    async def go(client: Client) -> None:
        out.emit(server_summary(client), human=render.server_info)

    app.with_client(target, conn, go)
