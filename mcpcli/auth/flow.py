"""OAuth 2.1 for MCP servers: the entry point that picks the authenticator for a server.

`build_authenticator` (called by `mcpcli.auth.authenticator_for`) picks, per server:

* `NoAuth` for `--no-auth` (and when the config already sends an
  `Authorization` header): nothing is added, a 401 is an error;
* `StaticBearer` for `--bearer-token` / `MCP_BEARER_TOKEN`;
* `OAuthAuthenticator` otherwise: stored tokens are sent (refreshed when they
  expire, under an inter-process lock, re-reading the store first so two `mcp`
  processes never burn the same rotated refresh token), and a 401 or a 403
  `insufficient_scope` runs discovery and sign-in (or step-up) as the mode
  allows: "interactive" opens the browser, "non-interactive" does so only if a
  browser can be launched, "stored-only" never signs in.

The authorization-code flow: PKCE S256 (refused if the server does not
advertise it), a single-use 256-bit `state`, the RFC 8707 `resource` exactly as
the protected-resource metadata publishes it, the RFC 9207 `iss` check before
the code is used, a loopback redirect listener on 127.0.0.1, and the browser
opened only after the URL is checked. Machines use the client-credentials grant
(`client_secret_basic`/`_post` or `private_key_jwt`).

Where the parts live:

* settings.py: `AuthSettings` (flags, then the config entry's `oauth`, then env);
* scopes.py: which scope to ask for; ui.py: `AuthUI` (stderr notices, pasted URL);
* authenticator.py: `NoAuth`, `StaticBearer`, `OAuthAuthenticator` (refresh, 401, step-up);
* signin.py: `Flow` (one server's sign-in: discovery, the record to store, refresh);
* authcode.py: the browser flow; machine.py: client credentials and enterprise (ID-JAG);
* clients.py: which OAuth client to present; tokens.py: the token endpoint,
  client authentication, registration and revocation;
* commands.py: what `mcp auth login/token/logout` do.

The names below stay importable from here (cli/auth.py and the tests use them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpcli.auth.authenticator import NoAuth, OAuthAuthenticator, StaticBearer
from mcpcli.auth.commands import access_token, login, logout, probe_challenge
from mcpcli.auth.settings import AuthSettings
from mcpcli.auth.signin import Flow, SignIn
from mcpcli.auth.ui import AuthUI

if TYPE_CHECKING:
    from mcpcli.auth import Authenticator
    from mcpcli.config import ServerEntry
    from mcpcli.connect import ConnectOptions

__all__ = [
    "AuthSettings",
    "AuthUI",
    "Flow",
    "NoAuth",
    "OAuthAuthenticator",
    "SignIn",
    "StaticBearer",
    "access_token",
    "build_authenticator",
    "login",
    "logout",
    "probe_challenge",
]


def build_authenticator(server_url: str, entry: ServerEntry, options: ConnectOptions) -> Authenticator:
    """The authenticator for one MCP server URL (see the module docstring)."""
    if options.bearer_token:
        return StaticBearer(server_url, options.bearer_token)
    if options.auth == "none":
        return NoAuth(server_url, "--no-auth forbids signing in")
    headers = {**entry.headers, **options.headers}
    if any(k.lower() == "authorization" for k in headers):
        return NoAuth(server_url, "the configured Authorization header was not accepted")
    extra = dict(options.extra)
    settings = AuthSettings.build(entry, extra, insecure=options.insecure)
    ui = extra.get("auth_ui")
    return OAuthAuthenticator(
        server_url, settings, mode=options.auth, ui=ui if isinstance(ui, AuthUI) else None
    )
