"""Grants without a user: client credentials, and enterprise-managed authorization (SEP-990).

Client credentials authenticate with `client_secret_basic`/`_post` or
`private_key_jwt`. Enterprise-managed authorization first exchanges the user's
ID token at the enterprise IdP for an ID-JAG (RFC 8693), then presents that as
a JWT bearer grant (RFC 7523) at the MCP server's authorization server. Either
way a new token is simply requested again when one expires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from mcpcli.auth.clients import pre_registered
from mcpcli.auth.metadata import AuthServer, Discovery, Fetcher
from mcpcli.auth.settings import AuthSettings
from mcpcli.auth.tokens import ClientInfo, OAuthError, TokenResponse, request_token, scrub
from mcpcli.errors import UsageError

if TYPE_CHECKING:
    from mcpcli.auth.signin import Flow, SignIn

__all__ = ["id_jag", "machine_sign_in", "machine_token"]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"  # noqa: S105
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"  # noqa: S105
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"


async def machine_sign_in(
    flow: Flow, disc: Discovery, scope: str | None, grant: str, client: ClientInfo | None = None
) -> SignIn:
    """A grant without a user: client credentials, or enterprise-managed (SEP-990)."""
    server = disc.server
    client = client or pre_registered(flow.settings, server)
    if client is None or not (client.client_secret or client.private_key_pem):
        raise UsageError(
            f"the {grant.replace('_', ' ')} grant needs --client-id and --client-secret "
            "(or --private-key-file)"
        )
    await anyio.to_thread.run_sync(flow.store.check_writable)
    tokens = await machine_token(flow.fetcher, flow.settings, server, client, disc.resource_param, scope, grant)
    return flow.signed_in(disc, client, tokens, requested=scope, grant=grant)


async def machine_token(
    fetcher: Fetcher,
    settings: AuthSettings,
    server: AuthServer,
    client: ClientInfo,
    resource: str,
    scope: str | None,
    grant: str,
) -> TokenResponse:
    """A new access token by the machine grant `grant` (for a sign-in and for each refresh)."""
    if grant == "enterprise":
        assertion = await id_jag(fetcher, settings, server, resource, scope)
        params = {"grant_type": JWT_BEARER, "assertion": assertion, "resource": resource}
        what = "JWT bearer grant"
    else:
        params = {"grant_type": "client_credentials", "resource": resource}
        what = "client credentials grant"
        assertion = None
    if scope:
        params["scope"] = scope
    return await request_token(fetcher, server, client, params, what=what, secrets=[assertion])


async def id_jag(
    fetcher: Fetcher, settings: AuthSettings, server: AuthServer, resource: str, scope: str | None
) -> str:
    """RFC 8693 token exchange at the enterprise IdP: our ID token for an ID-JAG for this AS."""
    s = settings
    if not s.idp_token_endpoint or not s.id_token:
        raise UsageError(
            "enterprise-managed authorization needs the IdP token endpoint "
            "(MCP_OAUTH_IDP_TOKEN_ENDPOINT or oauth.idpTokenEndpoint) and an ID token (MCP_OAUTH_ID_TOKEN)"
        )
    params = {
        "grant_type": TOKEN_EXCHANGE,
        "subject_token": s.id_token,
        "subject_token_type": ID_TOKEN_TYPE,
        "requested_token_type": ID_JAG_TYPE,
        "audience": server.issuer or server.token_endpoint,
        "resource": resource,
    }
    if scope:
        params["scope"] = scope
    if s.idp_client_id:
        params["client_id"] = s.idp_client_id
    status, doc, _text = await fetcher.post_form(s.idp_token_endpoint, "IdP token endpoint", params)
    token = doc.get("access_token") if doc else None
    if status != 200 or not isinstance(token, str) or not token:
        error = doc.get("error") if doc and isinstance(doc.get("error"), str) else f"HTTP {status}"
        raise OAuthError(
            f"the identity provider refused the token exchange: {scrub(str(error), [s.id_token])}",
            error=error,
        )
    if doc and doc.get("issued_token_type") not in (None, ID_JAG_TYPE):
        raise OAuthError("the identity provider did not issue an ID-JAG")
    return token
