"""OAuth 2.1 for remote MCP servers: sign-in, token storage, refresh and step-up.

The package owns everything about OAuth: discovery of the protected resource
and authorization server metadata, the sign-in grants, the token store, and
`OAuthAuthenticator`, the object an HTTP transport asks for credentials (it
satisfies `mcpcli.transports.http.Authenticator`). It may import the shared
modules (`errors`, `text`, `config` for the state directory and `${VAR}`
interpolation), `mcpcli.transports.http_io` (its HTTP client) and
`mcpcli.transports.http` (URL helpers), and `mcpcli.rpc.peer` for one thing: the
user's time in the browser pauses every request's timeout clock. It never
imports `connect`, `client` or `cli`: `mcpcli.connect` builds the settings
(`AuthSettings`) and the authenticator, and hands them to the transport;
`cli/auth.py` calls `commands.py` for `mcp auth login/token/logout`.

Which credentials apply (a bearer token or an `Authorization` header given by
the user, OAuth, or nothing with `--no-auth`) is decided once, in
`mcpcli.transports.http.HttpConnection`; the authenticator is built lazily (see
`mcpcli.connect.OAuthProvider`), and `has_stored_sign_in(url)` (a small file
read, no keyring) tells whether to build it before the first request, so a
stored token goes out at once instead of after a 401.

Where the parts live:

* settings.py: `AuthSettings` (flags, then the config entry's `oauth`, then env);
* authenticator.py: `OAuthAuthenticator` (stored tokens, refresh, 401, step-up);
* signin.py: `Flow`, one server's sign-in (discovery, the grant, the record to store, refresh);
* authcode.py: the browser flow (PKCE S256, `state`, RFC 8707 `resource`, RFC 9207
  `iss`, a loopback listener); machine.py: client credentials and enterprise (ID-JAG);
* metadata.py: OAuth metadata discovery (RFC 9728, RFC 8414, OpenID Connect) and the
  `WWW-Authenticate` parser; urls.py: which URLs may be opened, fetched or sent a secret;
* clients.py: which OAuth client to present; tokens.py: the token endpoint, client
  authentication, registration and revocation; scopes.py: which scope to ask for;
* store.py, keyring_secrets.py, lock.py: the token store; ui.py: `AuthUI` (stderr notices);
* commands.py: what `mcp auth login/token/logout` do.

Tokens never appear in logs, traces, argv, URLs, error messages or child
environments.
"""

from __future__ import annotations

__all__ = ["check_profile", "has_stored_sign_in"]


def check_profile(name: str | None) -> str | None:
    """A `--profile` name (None, "" and "default" are the default profile), or a usage error."""
    import re

    from mcpcli.errors import UsageError

    if not name or name == "default":
        return None
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}", name):
        raise UsageError(
            f"invalid profile name {name!r}",
            hint="use letters, digits, '_' and '-' (at most 32, starting with a letter or digit)",
        )
    return name


def has_stored_sign_in(server_url: str, profile: str | None = None) -> bool:
    """Is there a stored sign-in for this exact server URL (and profile)? (Reads the index only.)"""
    from mcpcli.config import state_dir
    from mcpcli.core.jsonrpc import loads

    path = state_dir() / "auth" / "servers.json"
    try:
        with open(path, "rb") as fh:
            doc = loads(fh.read(16 * 1024 * 1024) or b"{}")
    except (OSError, ValueError):
        return False
    servers = doc.get("servers") if isinstance(doc, dict) else None
    if not isinstance(servers, dict):
        return False
    url = server_url.split("#", 1)[0]
    return (url if profile is None else f"{profile}@{url}") in servers
