"""The gateway: other MCP servers served through ours (`mcp serve --proxy`, `servers:`).

`GatewayBackend` is a `mcpcli.server.backend.Backend` whose content comes from
upstream servers, each reached through `mcpcli.connect` exactly as the CLI
reaches a target (config names, URLs with OAuth, tools.yaml files, commands),
optionally merged with a tools.yaml's own `local` backend. It filters and
prefixes what each upstream offers, routes every request to the upstream that
owns the name or URI, and relays what upstreams send back (progress, logs,
change notifications, and their requests for input through the downstream
call's `ask`). `check` validates a tools.yaml's `servers:` entries against the
user's config and, on request, by reaching each upstream (through included files
too); `serve_file` serves a tools.yaml that has them; `nested` serves a tools.yaml
upstream with `servers:` of its own as a gateway within the gateway.

May import: `client`, `connect`, `targets`, `config`, `server`, `toolsfile`,
`rpc`, `transports`, `relay` and the foundations; never `cli`.
"""

from __future__ import annotations

from mcpcli.gateway.backend import GatewayBackend
from mcpcli.gateway.options import GatewayOptions

__all__ = ["GatewayBackend", "GatewayOptions"]
