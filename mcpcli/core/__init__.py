"""The protocol core: everything that decides what goes on the wire, without I/O.

The standard library only (no anyio, asyncio, socket, selectors, subprocess, httpx,
threading or ssl; a test checks): JSON-RPC messages (`jsonrpc`, `jsontext`), the
revisions' facts (`protocol`), the `Mcp-*` header codec (`wire`), the handshake's reading
(`handshake`), the client's flows (`exchange`, driven through `flow`, given an era memory and the
transport's traits by `era`), request clocks
(`requests`), tasks and subscriptions as the protocol defines them, trace context
(`tracecontext`), the client flags as data (`flags`) and the local line-JSON protocol
(`localrpc`). Every driver (the anyio client, the one-shot fast path, the daemon, the
gateway) runs on it; none decides these things again.
"""
