"""The MCP server runtime: every protocol era, over stdio, in-process and Streamable HTTP.

See `mcpcli.server.backend` for the interface content providers implement.
Usage::

    from mcpcli.server import Server, serve_stdio, serve_http

    server = Server(backend)                 # backend: a mcpcli.server.backend.Backend
    anyio.run(serve_stdio, server)           # stdio until end of input (`mcp serve`)
    await serve_http(server, port=8080)      # Streamable HTTP + HTTP+SSE on uvicorn, until cancelled

    async with Client(server.transport()) as client:   # in-process (tests, yaml targets)
        await client.list_tools()

One `Server` answers every era: `initialize` starts a legacy session
(2024-11-05 .. 2025-11-25) on a connection; requests carrying the 2026-07-28
`_meta` are served statelessly. `serve_http` imports uvicorn only when called.

What it owns: the server side of MCP, from a `Backend`'s content to the bytes
on stdio or HTTP. `core` dispatches and keeps each connection's state; the state
its helpers share (settings, signer, parked 2026 calls, subscribers, task group)
has one owner, the `Runtime` in `_state`, which `core.Server` creates and hands
to `handlers`, `mrtr` and the `tasks` package, so none of them sees the `Server`;
`calls` is the request and the `CallContext` a backend gets; `meta`,
`subscriptions` and `backend` are leaves; `stdio` and the `http*` modules are the
transports' server ends. What it may import: `mcpcli.rpc.peer` (the JSON-RPC
engine), `mcpcli.transports` (`Envelope`, `Streams`, the in-memory pair behind
`Server.transport()`), `mcpcli.core.protocol`, `mcpcli.core.jsonrpc`, `mcpcli.errors` and
`mcpcli.core.wire` (the 2026 HTTP header codec `http_modern` checks requests with);
never `client`, `connect`, `auth` or `cli` (tests/unit/test_import_rules.py).
The tools.yaml server builds on this package, not the other way round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpcli.server.core import ModernError, Server, ServerConnection
from mcpcli.server.stdio import serve_stdio, stdio_streams

if TYPE_CHECKING:
    from mcpcli.server.http import HttpOptions, McpHttpApp, serve_http

__all__ = [
    "HttpOptions",
    "McpHttpApp",
    "ModernError",
    "Server",
    "ServerConnection",
    "serve_http",
    "serve_stdio",
    "stdio_streams",
]


def __getattr__(name: str) -> Any:
    # The HTTP side (and uvicorn with it) loads only when someone serves HTTP.
    if name in ("serve_http", "HttpOptions", "McpHttpApp"):
        from mcpcli.server import http

        return getattr(http, name)
    raise AttributeError(name)
