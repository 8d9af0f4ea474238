"""The interactive authorization-code flow (OAuth 2.1 with PKCE) for one sign-in.

PKCE S256 (refused if the server does not advertise it), a single-use 256-bit
`state`, the RFC 8707 `resource` exactly as the protected-resource metadata
publishes it, a loopback redirect listener on 127.0.0.1, the browser opened
only after the URL is checked (and never for a remote server's endpoint in a
private network), a pasted redirect URL accepted with --no-browser, and the
RFC 9207 `iss` check before the code is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlencode, urlsplit

import anyio

from mcpcli.auth.browser import (
    Callback,
    LoopbackListener,
    can_launch_browser,
    open_browser,
    parse_callback_url,
)
from mcpcli.auth.metadata import AuthServer, Discovery, Fetcher, require_pkce
from mcpcli.auth.pkce import Pkce, new_state
from mcpcli.auth.scopes import with_offline_access
from mcpcli.auth.store import Record, Secrets
from mcpcli.auth.tokens import request_token, scrub
from mcpcli.auth.ui import AuthUI, read_line
from mcpcli.auth.urls import check_browser_url, host_is_private
from mcpcli.errors import AuthError
from mcpcli.text import verbatim

if TYPE_CHECKING:
    from mcpcli.auth.settings import AuthSettings
    from mcpcli.auth.signin import Flow, SignIn

__all__ = ["authorization_code", "check_callback", "check_can_interact", "wait_for_callback"]


def check_can_interact(flow: Flow, *, needs_browser: bool = True) -> None:
    """Refuse a sign-in the mode forbids, before anything is opened. `needs_browser`: the
    sign-in happens here (not on another device, which needs only our stderr read)."""
    if flow.mode == "stored-only":
        raise AuthError(
            f"{verbatim(flow.server_url, limit=300)} needs you to sign in, and --stored-auth-only "
            "forbids opening a sign-in",
            hint=f"run `mcp auth login {flow.settings.login_target(flow.server_url)}` first",
        )
    if needs_browser and flow.mode == "non-interactive" and not can_launch_browser() and not flow.settings.no_browser:
        raise AuthError(
            f"{verbatim(flow.server_url, limit=300)} needs you to sign in, and this session has no "
            "terminal or browser to do it",
            hint=f"run `mcp auth login {flow.settings.login_target(flow.server_url)}` in a terminal first "
            "(or --no-browser to paste the redirect URL, or --device to approve on another device); "
            "for a server with a fixed token "
            "(`mcp serve --http` prints one), set MCP_BEARER_TOKEN",
        )


async def authorization_code(
    flow: Flow,
    disc: Discovery,
    scope: str | None,
    previous: tuple[Record, Secrets] | None = None,
) -> SignIn:
    """Sign in through the browser; `previous` is the stored sign-in whose client may be reused.

    With the 2025-03-26 default endpoints (nothing published, so only a guess) the client
    is registered before the person is asked for anything: a server without a registration
    endpoint there has no sign-in at all (it wants a token), and is told so on a terminal
    or not, keyring or not.
    """
    server = disc.server
    guessed = server.metadata_url is None
    if not guessed or flow.mode == "stored-only":
        check_can_interact(flow)
    require_pkce(server)
    if not server.authorization_endpoint:
        raise AuthError(f"authorization server {verbatim(server.label, limit=300)!r} has no authorization_endpoint")
    if not guessed:
        await anyio.to_thread.run_sync(flow.store.check_writable)
    scope = with_offline_access(scope, server)
    listener = await _open_listener(flow.settings, server, previous)
    try:
        client = await flow._client_for(disc, listener.redirect_uri, scope, previous)
        if guessed:
            check_can_interact(flow)
            await anyio.to_thread.run_sync(flow.store.check_writable)
        pkce = Pkce()
        state = new_state()
        listener.expected_state = state
        params = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": listener.redirect_uri,
            "code_challenge": pkce.challenge,
            "code_challenge_method": "S256",
            "state": state,
            "resource": disc.resource_param,
        }
        if scope:
            params["scope"] = scope
        url = _authorization_url(flow.fetcher, server.authorization_endpoint, params)
        callback = await wait_for_callback(flow.ui, flow.settings, url, listener)
    finally:
        await listener.aclose()
    code = check_callback(callback, server)
    tokens = await request_token(
        flow.fetcher,
        server,
        client,
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": listener.redirect_uri,
            "code_verifier": pkce.verifier,
            "resource": disc.resource_param,
        },
        what="exchanging the authorization code",
        secrets=[pkce.verifier, code],
    )
    client.redirect_uri = listener.redirect_uri
    return flow.signed_in(disc, client, tokens, requested=scope, grant="authorization_code")


async def _open_listener(
    settings: AuthSettings, server: AuthServer, previous: tuple[Record, Secrets] | None
) -> LoopbackListener:
    """The redirect listener: --callback-port, else the port of a stored sign-in at this issuer, else any."""
    port = settings.callback_port
    if not port and previous is not None and previous[0].redirect_uri and previous[0].issuer == server.issuer:
        port = urlsplit(previous[0].redirect_uri).port or 0
    listener = LoopbackListener(port)
    try:
        await listener.start()
    except OSError:
        if settings.callback_port:
            raise AuthError(
                f"cannot listen on 127.0.0.1:{settings.callback_port} for the sign-in redirect "
                "(port in use?)"
            ) from None
        listener = LoopbackListener(0)
        await listener.start()
    return listener


def _authorization_url(fetcher: Fetcher, endpoint: str, params: dict[str, str]) -> str:
    """The URL the browser opens, checked; a remote server's endpoint in a private network is refused."""
    if (
        not fetcher.allow_private
        and not fetcher.server_is_private()
        and host_is_private(urlsplit(endpoint).hostname or "")
    ):
        raise AuthError(
            f"the authorization endpoint {verbatim(endpoint, limit=300)!r} of a remote server "
            "points into a private network; refusing to open it",
            hint="set MCP_OAUTH_ALLOW_PRIVATE=1 if this really is your authorization server",
        )
    url = endpoint + ("&" if urlsplit(endpoint).query else "?") + urlencode(params)
    check_browser_url(url)
    return url


async def wait_for_callback(ui: AuthUI, settings: AuthSettings, url: str, listener: LoopbackListener) -> Callback:
    """Show the URL (and open the browser); wait for the redirect, or a pasted one, or time out."""
    launch = not settings.no_browser and can_launch_browser()
    if launch:
        ui.notice("opening the browser to sign in; if it does not open, visit:")
    else:
        ui.notice("sign in by opening this URL in a browser:")
    ui.stderr.write(f"\n    {url}\n\n")
    ui.stderr.flush()
    paste = settings.no_browser or (not launch and ui.stdin_tty)
    if paste:
        ui.notice(
            "after signing in, paste the address the browser was sent to (http://127.0.0.1:.../callback?...) here:"
        )
    elif not launch:
        ui.notice("waiting for the browser to come back to " + listener.redirect_uri)
    if launch:
        open_browser(url)
    from mcpcli.rpc.peer import user_interaction

    result: list[Callback] = []
    # The user's time in the browser does not count against the request that hit the 401.
    with user_interaction(), anyio.move_on_after(settings.timeout) as scope:
        async with anyio.create_task_group() as tg:

            async def from_listener() -> None:
                result.append(await listener.wait())
                tg.cancel_scope.cancel()

            async def from_paste() -> None:
                while True:
                    line = await read_line(ui.stdin)
                    if line == "":
                        return  # EOF: keep waiting for the listener
                    cb = parse_callback_url(line)
                    if cb is None:
                        ui.notice("that does not look like the redirect address; paste it again:")
                        continue
                    if listener.deliver(cb):
                        return
                    ui.notice("that address does not belong to this sign-in (state mismatch); paste it again:")

            tg.start_soon(from_listener)
            if paste:
                tg.start_soon(from_paste)
    if scope.cancelled_caught or not result:
        raise AuthError(
            f"sign-in timed out after {settings.timeout:g}s waiting for the browser",
            hint="run `mcp auth login` again (--no-browser prints the URL and accepts the pasted redirect)",
        )
    return result[0]


def check_callback(cb: Callback, server: AuthServer) -> str:
    """RFC 9207 `iss` first (an error from the wrong issuer is not even shown), then the code."""
    iss = cb.params.get("iss")
    if server.issuer is not None:
        if iss is None and server.iss_parameter_supported:
            raise AuthError(
                "the authorization response has no 'iss' although the server advertises it; "
                "rejected (possible mix-up attack)"
            )
        if iss is not None and iss != server.issuer:
            raise AuthError(
                f"the authorization response came from issuer {verbatim(iss, limit=300)!r}, "
                f"not {verbatim(server.issuer, limit=300)!r}; rejected (possible mix-up attack)"
            )
    if cb.error:
        desc = cb.params.get("error_description")
        detail = f" ({scrub(desc, [])})" if desc else ""
        raise AuthError(f"sign-in was not completed: {scrub(cb.error, [])}{detail}")
    if not cb.code:
        raise AuthError("the authorization response carries no code")
    return cb.code
