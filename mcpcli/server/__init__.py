"""The MCP server runtime: every protocol era, over stdio, in-process and Streamable HTTP.

See `mcpcli.server.backend` for the interface content providers implement.
Usage::

    from mcpcli.server import Server, serve_stdio, serve_http

    server = Server(backend)                 # backend: a mcpcli.server.backend.Backend
    anyio.run(serve_stdio, server)           # stdio until end of input (`mcp serve`)

    async with Client(server.transport()) as client:   # in-process (tests, yaml targets)
        await client.list_tools()

One `Server` answers every era: `initialize` starts a legacy session
(2024-11-05 .. 2025-11-25) on a connection; requests carrying the 2026-07-28
`_meta` are served statelessly.
"""

from __future__ import annotations

from mcpcli.server.core import ModernError, Server, ServerConnection
from mcpcli.server.stdio import serve_stdio, stdio_streams

__all__ = ["ModernError", "Server", "ServerConnection", "serve_stdio", "stdio_streams"]
