"""The gateway: other MCP servers served through `mcp serve` (`--proxy`, `servers:` in tools.yaml).

May import `client`, `connect`, `targets`, `config`, `server`, `toolsfile`,
`session`, `transports` and the foundations; never `cli`. `check` validates a
tools.yaml's `servers:` entries against the user's config and, on request, by
reaching each upstream; `serve_file` serves a tools.yaml that has them.
"""
