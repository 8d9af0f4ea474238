"""What `mcp auth login`, `mcp auth token` and `mcp auth logout` do.

The click commands in mcpcli/cli/auth.py parse flags and print; these do the
work: probe the server for its challenge, discover, sign in and store; hand
out the stored (refreshed) token; revoke (RFC 7009, best effort) and forget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from mcpcli.auth.authenticator import OAuthAuthenticator
from mcpcli.auth.clients import client_from_record
from mcpcli.auth.metadata import Challenge, Fetcher, parse_www_authenticate
from mcpcli.auth.scopes import select_scope
from mcpcli.auth.settings import DEVICE_GRANT, MACHINE_GRANTS, AuthSettings
from mcpcli.auth.signin import Flow, server_from_record
from mcpcli.auth.store import Record, Secrets, TokenStore
from mcpcli.auth.tokens import ClientInfo, revoke_token
from mcpcli.auth.ui import AuthUI
from mcpcli.errors import AuthError, UsageError
from mcpcli.text import verbatim

if TYPE_CHECKING:
    from mcpcli.transports.http_io import HttpResponse

__all__ = ["access_token", "login", "logout", "probe_challenge", "sign_in_needed"]


async def probe_challenge(fetcher: Fetcher, server_url: str) -> Challenge | None:
    """POST an unauthenticated `initialize` to learn the server's 401 challenge, if any."""
    resp = await _probe(fetcher, server_url)
    if resp is None or resp.status not in (401, 403):
        return None
    values = [v for k, v in resp.header_list if k == "www-authenticate"]
    return parse_www_authenticate(values) or Challenge(scheme="Bearer")


async def sign_in_needed(server_url: str, *, insecure: bool = False) -> bool | None:
    """Whether the server asks for a sign-in: True when an unauthenticated `initialize`
    gets 401 or 403, or when it publishes OAuth protected-resource metadata (RFC 9728; a
    server may take sign-ins it does not require); False when it answers without either;
    None when it cannot be reached, so nothing can be told."""
    from mcpcli.auth.urls import well_known_prm_urls

    fetcher = Fetcher(server_url, insecure=insecure, timeout=15.0)
    try:
        resp = await _probe(fetcher, server_url)
        if resp is None:
            return None
        if resp.status in (401, 403):
            return True
        for url in well_known_prm_urls(server_url):
            try:
                _status, doc = await fetcher.get_json(url, "protected resource metadata")
            except AuthError:
                continue  # not a JSON object (a web app's page for any path): none published there
            if doc is not None:
                return True
    except Exception:
        return None
    return False


async def _probe(fetcher: Fetcher, server_url: str) -> HttpResponse | None:
    """The answer to an unauthenticated `initialize` POST; None when there is none."""
    from mcpcli.transports.http_io import fetch

    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "mcpcli", "version": "auth-probe"},
        },
    }
    try:
        resp = await fetch(
            "POST",
            server_url,
            headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json"},
            json_body=body,
            insecure=fetcher.insecure,
            timeout=15.0,
            max_bytes=64 * 1024,
        )
    except AuthError:
        raise
    except Exception:
        return None
    return resp


async def login(
    server_url: str,
    settings: AuthSettings,
    *,
    ui: AuthUI | None = None,
    store: TokenStore | None = None,
    mode: str = "interactive",
) -> Record:
    """`mcp auth login`: discover, sign in (or use client credentials), store; returns the record."""
    store = store or TokenStore(settings.token_store, profile=settings.profile)
    flow = Flow(server_url, settings, store, mode=mode, ui=ui)
    await anyio.to_thread.run_sync(store.check_writable)
    challenge = await probe_challenge(flow.fetcher, flow.server_url)
    previous_rec = await anyio.to_thread.run_sync(store.find, flow.server_url)
    previous: tuple[Record, Secrets] | None = None
    if previous_rec is not None:
        try:
            previous = (previous_rec, await anyio.to_thread.run_sync(store.secrets_of, previous_rec))
        except AuthError:
            previous = None
    disc = await flow.discover(
        challenge,
        prefer_issuer=previous_rec.issuer if previous_rec else None,
        legacy_fallback=challenge is not None,
    )
    if previous is not None and previous[0].issuer != disc.server.issuer:
        previous = None
    scope = select_scope(settings, disc, challenge)
    if settings.grant in MACHINE_GRANTS:
        sign_in = await flow.machine(disc, scope, settings.grant)
    elif settings.grant == DEVICE_GRANT:
        sign_in = await flow.device(disc, scope, previous)
    else:
        sign_in = await flow.authorization_code(disc, scope, previous)
    await anyio.to_thread.run_sync(store.save, sign_in.record, sign_in.secrets)
    return sign_in.record


async def access_token(
    server_url: str, settings: AuthSettings, *, store: TokenStore | None = None
) -> str:
    """`mcp auth token`: the stored access token, refreshed if it expired."""
    auth = OAuthAuthenticator(server_url, settings, mode="stored-only", store=store)
    header = await auth.authorization()
    rec = auth.record
    if header is None or rec is None:
        raise AuthError(
            f"not signed in to {verbatim(server_url, limit=300)}",
            hint=f"run `mcp auth login {settings.login_target(server_url)}`",
        )
    if rec.expired(margin=0):
        raise AuthError(
            f"the stored token for {verbatim(server_url, limit=300)} has expired and could not be refreshed",
            hint=f"run `mcp auth login {settings.login_target(server_url)}`",
        )
    return header.split(" ", 1)[1]


async def logout(
    rec: Record, settings: AuthSettings, *, store: TokenStore, revoke: bool = True
) -> bool:
    """Revoke (RFC 7009, best effort, 5 s) and forget one sign-in; True if revocation succeeded."""
    revoked = False
    if revoke and rec.revocation_endpoint:
        try:
            secrets = await anyio.to_thread.run_sync(store.secrets_of, rec)
        except AuthError:
            secrets = Secrets()
        fetcher = Fetcher(rec.server_url, insecure=settings.insecure, timeout=5.0)
        server = server_from_record(rec)
        try:
            client = client_from_record(rec, secrets, settings)
        except UsageError:
            client = ClientInfo(client_id=rec.client_id)
        with anyio.move_on_after(10):
            for token, hint in ((secrets.refresh_token, "refresh_token"), (secrets.access_token, "access_token")):
                if not token:
                    continue
                try:
                    revoked = (
                        await revoke_token(fetcher, server, client, token, hint, rec.revocation_auth_method)
                        or revoked
                    )
                except Exception:  # noqa: S112 - best effort; the local copy goes regardless
                    continue
    await anyio.to_thread.run_sync(store.delete, rec)
    return revoked

