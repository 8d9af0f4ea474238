"""The session daemon (issue 11) and its control protocol.

One background process per user holds live connections to MCP servers (named
sessions) so that many `mcp` commands share one server. It may import `connect`,
`client`, `transports`, `session`, `config`, `relay`, `errors`, `text` and its own
`protocol`; never `cli`. `protocol` is stdlib only: the command side's fast path
imports it before anything heavy.
"""
