"""An OAuth-protected MCP server built on the official Python SDK's auth stack (a real peer).

Run with the SDK's interpreter: `sdk_oauth_server.py PORT`. The SDK serves the
protected-resource metadata, the authorization-server metadata, dynamic client
registration, `/authorize`, `/token` (PKCE verification, refresh) and `/revoke`,
and guards `/mcp` with its bearer middleware (audience-checked against the
resource). Only the provider's storage is ours: an in-memory one whose
`authorize` approves at once (no consent page), so a scripted browser that
follows the redirect completes the sign-in. Tool `whoami` answers with the
token's client id and scopes. Every token it issues starts with `SDK-CANARY-`.
"""

from __future__ import annotations

import secrets
import sys
import time

import anyio
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


def canary(kind: str) -> str:
    return f"SDK-CANARY-{kind}-{secrets.token_hex(16)}"


class InstantApprovalProvider:
    """In-memory storage; every authorization request is approved immediately."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = canary("CODE")
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        token = canary("AT")
        refresh = canary("RT")
        self.access[token] = AccessToken(
            token=token, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + 3600,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=token, expires_in=3600, scope=" ".join(scopes) or None,
                          refresh_token=refresh)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(authorization_code.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotation: the old one is dead
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def build(port: int) -> MCPServer:
    base = f"http://127.0.0.1:{port}"
    provider = InstantApprovalProvider()
    server = MCPServer(
        "sdk-oauth",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            validate_token_resource=True,
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=["mcp:read", "mcp:write"], default_scopes=["mcp:read"]
            ),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=["mcp:read"],
        ),
    )

    @server.tool()
    def whoami() -> str:
        """The client and scopes of the token that called."""
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        if token is None:
            return "anonymous"
        return f"{token.client_id} {' '.join(sorted(token.scopes))}"

    return server


async def main() -> None:
    port = int(sys.argv[1])
    await build(port).run_streamable_http_async(host="127.0.0.1", port=port)


if __name__ == "__main__":
    anyio.run(main)
