"""Which OAuth client a sign-in presents to an authorization server.

In this order: the pre-registered client (--client-id, `oauth.clientId` or
MCP_OAUTH_CLIENT_ID, with its secret or private key), the client a stored
sign-in at the same authorization server used, a client ID metadata document
(--client-metadata-url, when the server supports them), else dynamic
registration. A stored client of another authorization server is never
presented.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from mcpcli.auth.metadata import AuthServer, Discovery, Fetcher
from mcpcli.auth.settings import AuthSettings, read_key_file
from mcpcli.auth.store import Record, Secrets
from mcpcli.auth.tokens import ClientInfo, choose_auth_method, register_client
from mcpcli.errors import UsageError
from mcpcli.text import verbatim

__all__ = ["choose_client", "client_from_record", "pre_registered"]


def pre_registered(settings: AuthSettings, server: AuthServer) -> ClientInfo | None:
    """The pre-registered client from the settings (with its secret or key), if any."""
    s = settings
    if not s.client_id:
        return None
    if s.private_key_pem:
        method = "private_key_jwt"
    else:
        method = choose_auth_method(server, have_secret=bool(s.client_secret))
    return ClientInfo(
        client_id=s.client_id,
        client_secret=s.client_secret,
        auth_method=method,
        registration="pre-registered",
        private_key_pem=s.private_key_pem,
        signing_alg=s.signing_alg,
    )


def client_from_record(rec: Record, secrets: Secrets, settings: AuthSettings) -> ClientInfo:
    """The client a stored sign-in used (its secret from the store, or from the settings)."""
    secret = secrets.client_secret
    if secret is None and rec.registration == "pre-registered" and settings.client_id == rec.client_id:
        secret = settings.client_secret
    key = settings.private_key_pem
    if key is None and rec.private_key_file:
        key = read_key_file(rec.private_key_file)
    return ClientInfo(
        client_id=rec.client_id,
        client_secret=secret,
        auth_method=rec.auth_method,
        registration=rec.registration,
        private_key_pem=key,
        signing_alg=rec.signing_alg or settings.signing_alg,
        redirect_uri=rec.redirect_uri,
    )


async def choose_client(
    fetcher: Fetcher,
    settings: AuthSettings,
    disc: Discovery,
    redirect_uri: str,
    scope: str | None,
    previous: tuple[Record, Secrets] | None,
) -> ClientInfo:
    """The client for an authorization-code sign-in with this redirect URI (see the docstring)."""
    server = disc.server
    pre = pre_registered(settings, server)
    if pre is not None:
        return pre
    if previous is not None:
        rec, secrets = previous
        same_as = rec.issuer == server.issuer and rec.token_endpoint == server.token_endpoint
        if same_as and rec.registration == "metadata-document" and server.client_id_metadata_document_supported:
            return client_from_record(rec, secrets, settings)
        if same_as and rec.registration == "dynamic" and rec.redirect_uri == redirect_uri:
            return client_from_record(rec, secrets, settings)
        if same_as and rec.registration == "pre-registered":
            client = client_from_record(rec, secrets, settings)
            client.redirect_uri = redirect_uri
            return client
    if server.client_id_metadata_document_supported and settings.client_metadata_url:
        url = settings.client_metadata_url
        parts = urlsplit(url)
        if parts.scheme != "https" or parts.path in ("", "/"):
            raise UsageError(
                f"client metadata URL {verbatim(url, limit=300)!r} must be an https URL with a path"
            )
        return ClientInfo(client_id=url, auth_method="none", registration="metadata-document",
                          redirect_uri=redirect_uri)
    return await register_client(fetcher, server, redirect_uri=redirect_uri, scope=scope)
