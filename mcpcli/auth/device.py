"""Sign-in on another device (RFC 8628, the device authorization grant).

For a machine with no browser to open and no way back to a loopback listener (an SSH
session, a container): the authorization server gives a short code, the person enters it
at the server's address on any device (a phone, their laptop) and approves there, and we
poll the token endpoint meanwhile, at the interval the server asks (5 s unless it says,
5 s more each time it says `slow_down`), until the code expires or `--auth-timeout`.

The device code itself is a secret (it is what the tokens are fetched with) and is never
shown; the user code and the address are what the person needs, on stderr. The grant
has no PKCE and no redirect; the `resource` is sent with both requests, as for every
other grant. A client is registered for it without a redirect URI; a stored sign-in's
client is used again only if it signed in this way.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import anyio

from mcpcli.auth.authcode import check_can_interact
from mcpcli.auth.clients import client_from_record, pre_registered
from mcpcli.auth.metadata import Discovery
from mcpcli.auth.scopes import with_offline_access
from mcpcli.auth.settings import DEVICE_GRANT
from mcpcli.auth.store import Record, Secrets
from mcpcli.auth.tokens import (
    ClientInfo,
    DeviceCode,
    OAuthError,
    TokenResponse,
    device_authorization,
    register_client,
    request_token,
)
from mcpcli.errors import AuthError
from mcpcli.text import verbatim

if TYPE_CHECKING:
    from mcpcli.auth.signin import Flow, SignIn

__all__ = ["DEVICE_CODE_GRANT_TYPE", "SLOW_DOWN", "device_sign_in"]

#: The grant_type of the token requests (RFC 8628 3.4).
DEVICE_CODE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
#: How much longer to wait between polls each time the server says `slow_down` (RFC 8628 3.5).
SLOW_DOWN = 5.0


async def _wait(seconds: float) -> None:
    """The wait between two polls (the tests watch it)."""
    await anyio.sleep(seconds)


async def device_sign_in(
    flow: Flow, disc: Discovery, scope: str | None, previous: tuple[Record, Secrets] | None = None
) -> SignIn:
    """Sign in with a code entered on another device; `previous`: the stored sign-in."""
    check_can_interact(flow, needs_browser=False)
    server = disc.server
    if server.device_authorization_endpoint is None:
        raise AuthError(
            f"the authorization server {verbatim(server.label, limit=300)!r} of "
            f"{verbatim(flow.server_url, limit=300)} offers no sign-in on another device "
            "(its metadata has no device_authorization_endpoint)",
            hint=f"sign in through the browser instead: `mcp auth login {flow.settings.login_target(flow.server_url)}` "
            "(with --no-browser to paste the address it ends on)",
        )
    await anyio.to_thread.run_sync(flow.store.check_writable)
    scope = with_offline_access(scope, server)
    client = await _client(flow, disc, scope, previous)
    params = {"resource": disc.resource_param, **({"scope": scope} if scope else {})}
    code = await device_authorization(flow.fetcher, server, client, params)
    wait = min(code.expires_in, flow.settings.timeout)  # until the code expires, or the sign-in's timeout
    _tell(flow, code, wait)
    tokens = await _poll(flow, disc, client, code, wait)
    flow.ui.notice("signed in on the other device")
    return flow.signed_in(disc, client, tokens, requested=scope, grant=DEVICE_GRANT)


async def _client(
    flow: Flow, disc: Discovery, scope: str | None, previous: tuple[Record, Secrets] | None
) -> ClientInfo:
    """The pre-registered client, else the one a stored device sign-in at the same
    authorization server used (registered for it, or pre-registered), else a new
    registration for this grant."""
    server = disc.server
    pre = pre_registered(flow.settings, server)
    if pre is not None:
        return pre
    if previous is not None:
        rec, secrets = previous
        same_as = rec.issuer == server.issuer and rec.token_endpoint == server.token_endpoint
        if same_as and rec.grant == DEVICE_GRANT and rec.registration in ("dynamic", "pre-registered"):
            return client_from_record(rec, secrets, flow.settings)
    return await register_client(
        flow.fetcher, server, redirect_uri=None, scope=scope,
        grant_types=[DEVICE_CODE_GRANT_TYPE, "refresh_token"],
    )


def _tell(flow: Flow, code: DeviceCode, wait: float) -> None:
    """What the person needs: where to go, the code to enter there, and for how long (stderr)."""
    ui = flow.ui
    ui.notice(f"to sign in to {verbatim(flow.server_url, limit=300)}, open {code.verification_uri} "
              f"on any device and enter the code {code.user_code}")
    if code.verification_uri_complete:
        ui.notice(f"or open {code.verification_uri_complete}")
    how_long = f"{math.ceil(wait)} s" if wait < 120 else f"{math.ceil(wait / 60)} min"
    ui.notice(f"waiting for the sign-in there (up to {how_long}; Ctrl-C to give up)")


async def _poll(flow: Flow, disc: Discovery, client: ClientInfo, code: DeviceCode, wait: float) -> TokenResponse:
    """Ask the token endpoint at the server's pace until the person has approved or declined,
    or `wait` seconds have passed."""
    started, waited = anyio.current_time(), 0.0
    interval = code.interval
    params = {"grant_type": DEVICE_CODE_GRANT_TYPE, "device_code": code.device_code, "resource": disc.resource_param}
    while True:
        # At least the waits between polls have passed (all of the time, but for the requests).
        if max(anyio.current_time() - started, waited) + interval > wait:
            raise AuthError(
                f"nobody entered the code within {math.ceil(wait)} s",
                hint=f"run `mcp auth login {flow.settings.login_target(flow.server_url)} --device` again",
            )
        await _wait(interval)
        waited += interval
        try:
            return await request_token(flow.fetcher, disc.server, client, params, what="the device sign-in",
                                       secrets=[code.device_code])
        except OAuthError as exc:
            if exc.error == "authorization_pending":
                continue
            if exc.error == "slow_down":
                interval += SLOW_DOWN
                continue
            if exc.error == "access_denied":
                raise AuthError("the sign-in was declined on the other device") from None
            if exc.error == "expired_token":
                raise AuthError(
                    "the code expired before the sign-in was approved",
                    hint=f"run `mcp auth login {flow.settings.login_target(flow.server_url)} --device` again",
                ) from None
            raise
