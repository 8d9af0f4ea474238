"""OAuth 2.1 for remote MCP servers, behind one small seam the HTTP transports use.

An HTTP transport asks `authenticator_for(...)` once per connection (lazily, so
nothing auth-related is imported for servers that never say 401) and then:

* before each request, `await auth.authorization()` gives the `Authorization`
  header value to send (a stored token, refreshed if it expired), or None;
  `has_stored_sign_in(url)` (a small file read, no keyring) tells a transport
  whether to create the authenticator before the first request, so a stored
  token goes out at once instead of after a 401;
* on a 401 or a 403 with `insufficient_scope`, `await auth.challenge(...)` runs
  discovery, sign-in or step-up as needed and returns True when the request
  should be retried with a fresh `authorization()`; False means give up (the
  transport raises `AuthError`, exit 3).

Tokens never appear in logs, traces, argv, URLs, error messages or child
environments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from mcpcli.config import ServerEntry
    from mcpcli.connect import ConnectOptions

__all__ = ["Authenticator", "authenticator_for", "has_stored_sign_in"]


class Authenticator(Protocol):
    async def authorization(self) -> str | None:
        """The `Authorization` header value for the next request, or None."""
        ...

    async def challenge(self, status: int, www_authenticate: list[str], url: str) -> bool:
        """React to a 401/403 from `url`; True when a retry may now succeed."""
        ...


def authenticator_for(
    server_url: str, entry: ServerEntry, options: ConnectOptions
) -> Authenticator:
    """The authenticator for one MCP server URL (static bearer token, or OAuth)."""
    from mcpcli.auth.flow import build_authenticator

    return build_authenticator(server_url, entry, options)


def has_stored_sign_in(server_url: str) -> bool:
    """Is there a stored sign-in for this exact server URL? (Reads the index only.)"""
    import json

    from mcpcli.config import state_dir

    path = state_dir() / "auth" / "servers.json"
    try:
        with open(path, "rb") as fh:
            doc = json.loads(fh.read(16 * 1024 * 1024) or b"{}")
    except (OSError, ValueError):
        return False
    servers = doc.get("servers") if isinstance(doc, dict) else None
    if not isinstance(servers, dict):
        return False
    return server_url.split("#", 1)[0] in servers
