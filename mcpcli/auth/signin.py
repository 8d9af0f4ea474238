"""The sign-in flow for one server: discovery, the grant, the record to store, and refresh.

`Flow` holds what a sign-in to one server URL needs (settings, token store,
mode, where to talk to the user, a fetcher bound to the server) and hands the
grant itself to authcode.py (the browser), device.py (a code entered on another
device) or machine.py (no user). Every grant
ends in `Flow.signed_in`, which turns the token response into the `Record`
and `Secrets` to store.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import urlsplit, urlunsplit

from mcpcli.auth import authcode, device, machine
from mcpcli.auth.clients import choose_client, client_from_record
from mcpcli.auth.metadata import AuthServer, Challenge, Discovery, Fetcher, discover
from mcpcli.auth.settings import MACHINE_GRANTS, AuthSettings
from mcpcli.auth.store import Record, Secrets, TokenStore
from mcpcli.auth.tokens import (
    ClientInfo,
    OAuthError,
    TokenResponse,
    request_token,
    revocation_auth_method,
)
from mcpcli.auth.ui import AuthUI

__all__ = ["Flow", "SignIn", "server_from_record", "strip_fragment"]


@dataclass
class SignIn:
    """The outcome of a sign-in: what to store."""

    record: Record
    secrets: Secrets


def strip_fragment(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))


def server_from_record(rec: Record) -> AuthServer:
    """The authorization server as a stored sign-in remembers it."""
    return AuthServer(
        issuer=rec.issuer,
        authorization_endpoint=rec.authorization_endpoint,
        token_endpoint=rec.token_endpoint,
        revocation_endpoint=rec.revocation_endpoint,
        scopes_supported=rec.as_scopes_supported,
    )


class Flow:
    """Discovery, registration and token requests for one server URL."""

    def __init__(
        self,
        server_url: str,
        settings: AuthSettings,
        store: TokenStore,
        *,
        mode: str = "interactive",
        ui: AuthUI | None = None,
    ) -> None:
        self.server_url = strip_fragment(server_url)
        self.settings = settings
        self.store = store
        self.mode = mode
        self.ui = ui or AuthUI()
        self.fetcher = Fetcher(self.server_url, insecure=settings.insecure)

    async def discover(
        self, challenge: Challenge | None, prefer_issuer: str | None = None, *, legacy_fallback: bool = True
    ) -> Discovery:
        return await discover(
            self.fetcher, self.server_url, challenge, prefer_issuer=prefer_issuer,
            legacy_fallback=legacy_fallback,
        )

    async def _client_for(
        self, disc: Discovery, redirect_uri: str, scope: str | None, previous: tuple[Record, Secrets] | None
    ) -> ClientInfo:
        """The client for an authorization-code sign-in (authcode.py looks it up here)."""
        return await choose_client(self.fetcher, self.settings, disc, redirect_uri, scope, previous)

    async def authorization_code(
        self,
        disc: Discovery,
        scope: str | None,
        previous: tuple[Record, Secrets] | None = None,
    ) -> SignIn:
        """Sign in through the browser (authcode.py)."""
        return await authcode.authorization_code(self, disc, scope, previous)

    async def device(
        self, disc: Discovery, scope: str | None, previous: tuple[Record, Secrets] | None = None
    ) -> SignIn:
        """Sign in with a code entered on another device (device.py)."""
        return await device.device_sign_in(self, disc, scope, previous)

    async def machine(
        self, disc: Discovery, scope: str | None, grant: str, client: ClientInfo | None = None
    ) -> SignIn:
        """A grant without a user: client credentials, or enterprise-managed (machine.py)."""
        return await machine.machine_sign_in(self, disc, scope, grant, client)

    def signed_in(
        self, disc: Discovery, client: ClientInfo, tokens: TokenResponse, *, requested: str | None, grant: str
    ) -> SignIn:
        """What to store after a grant: the record (no secrets) and the secrets."""
        server = disc.server
        rec = Record(
            server_url=self.server_url,
            resource=disc.resource_param,
            issuer=server.issuer,
            token_endpoint=server.token_endpoint,
            client_id=client.client_id,
            auth_method=client.auth_method,
            registration=client.registration,
            grant=grant,
            authorization_endpoint=server.authorization_endpoint,
            revocation_endpoint=server.revocation_endpoint,
            revocation_auth_method=revocation_auth_method(server, client),
            redirect_uri=client.redirect_uri,
            scope=tokens.scope or requested,
            requested_scope=requested,
            expires_at=tokens.expires_at,
            obtained_at=tokens.obtained_at,
            store=self.store.mode,
            name=self.settings.name,
            as_scopes_supported=server.scopes_supported,
            private_key_file=self.settings.private_key_file if client.auth_method == "private_key_jwt" else None,
            signing_alg=client.signing_alg,
            profile=self.store.profile,
        )
        secrets = Secrets(
            access_token=tokens.access_token,
            refresh_token=tokens.refresh_token,
            client_secret=client.client_secret,
        )
        return SignIn(rec, secrets)

    async def refresh(self, rec: Record, secrets: Secrets) -> SignIn:
        """Use (and rotate) the refresh token; client-credentials clients just ask again."""
        server = server_from_record(rec)
        client = client_from_record(rec, secrets, self.settings)
        if rec.grant in MACHINE_GRANTS:
            tokens = await machine.machine_token(
                self.fetcher, self.settings, server, client, rec.resource, rec.requested_scope, rec.grant
            )
        else:
            if not secrets.refresh_token:
                raise OAuthError("no refresh token stored", error="invalid_grant")
            tokens = await request_token(
                self.fetcher,
                server,
                client,
                {"grant_type": "refresh_token", "refresh_token": secrets.refresh_token, "resource": rec.resource},
                what="refreshing the access token",
                secrets=[secrets.access_token, secrets.refresh_token],
            )
        new_rec = replace(
            rec,
            scope=tokens.scope or rec.scope,
            expires_at=tokens.expires_at,
            obtained_at=tokens.obtained_at,
        )
        # A rotated refresh token replaces the old one; an unrotated one is kept.
        new_secrets = Secrets(
            access_token=tokens.access_token,
            refresh_token=tokens.refresh_token or secrets.refresh_token,
            client_secret=secrets.client_secret,
        )
        return SignIn(new_rec, new_secrets)
