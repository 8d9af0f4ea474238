"""The session daemon (issue 11).

One background process per user holds live connections to MCP servers (named
sessions) so that many `mcp` commands share one server. It may import `connect`,
`client`, `transports`, `rpc`, `config`, `relay` and the foundations; never `cli`.
Its control protocol (`mcpcli.core.localrpc`) and run directory (`mcpcli.rundir`) are
foundations outside this package: the command side and its fast path import them before
anything heavy, and never import the daemon.
"""
