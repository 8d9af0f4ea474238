"""OAuth 2.1 for MCP servers: the authenticator the HTTP transports call, and `login`.

`build_authenticator` picks, per server:

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
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import anyio

from mcpcli.auth.browser import (
    Callback,
    LoopbackListener,
    can_launch_browser,
    open_browser,
    parse_callback_url,
)
from mcpcli.auth.discovery import (
    AuthServer,
    Challenge,
    Discovery,
    Fetcher,
    discover,
    parse_www_authenticate,
    require_pkce,
)
from mcpcli.auth.pkce import Pkce, new_state
from mcpcli.auth.scopes import select_scope, union_scopes, with_offline_access
from mcpcli.auth.settings import MACHINE_GRANTS, AuthSettings, read_key_file
from mcpcli.auth.store import Record, Secrets, TokenStore
from mcpcli.auth.tokens import (
    ClientInfo,
    OAuthError,
    TokenResponse,
    choose_auth_method,
    register_client,
    request_token,
    revocation_auth_method,
    revoke_token,
    scrub,
)
from mcpcli.auth.ui import AuthUI, read_line
from mcpcli.auth.urls import check_browser_url, escape_for_display, host_is_private
from mcpcli.errors import AuthError, McpCliError, UsageError

if TYPE_CHECKING:
    from mcpcli.auth import Authenticator
    from mcpcli.config import ServerEntry
    from mcpcli.connect import ConnectOptions

__all__ = [
    "AuthSettings",
    "AuthUI",
    "NoAuth",
    "OAuthAuthenticator",
    "StaticBearer",
    "build_authenticator",
    "login",
    "logout",
]

#: 401s answered per connection before giving up (a server that refuses fresh tokens).
MAX_401 = 3
#: Step-up re-authorizations per connection (the first sign-in + 2 = at most 3 attempts).
MAX_STEP_UPS = 2
#: The limits above count within this many seconds (a long session may sign in again later).
LIMIT_WINDOW = 120.0
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"  # noqa: S105
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"  # noqa: S105
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"


# -- helpers -------------------------------------------------------------------------------


def _count_recent(events: list[float]) -> int:
    """Record one event now; how many happened within the last LIMIT_WINDOW seconds."""
    import time

    now = time.monotonic()
    events[:] = [t for t in events if now - t < LIMIT_WINDOW] + [now]
    return len(events)


def _strip_fragment(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))


def _server_from_record(rec: Record) -> AuthServer:
    return AuthServer(
        issuer=rec.issuer,
        authorization_endpoint=rec.authorization_endpoint,
        token_endpoint=rec.token_endpoint,
        revocation_endpoint=rec.revocation_endpoint,
        scopes_supported=rec.as_scopes_supported,
    )


def _client_from_record(rec: Record, secrets: Secrets, settings: AuthSettings) -> ClientInfo:
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


async def _in_thread(fn: Any, *args: Any) -> Any:
    return await anyio.to_thread.run_sync(fn, *args)


# -- the authorization-code flow -----------------------------------------------------------


@dataclass
class SignIn:
    """The outcome of a sign-in: what to store."""

    record: Record
    secrets: Secrets


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
        self.server_url = _strip_fragment(server_url)
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

    # -- clients
    def _pre_registered(self, server: AuthServer) -> ClientInfo | None:
        s = self.settings
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

    async def _client_for(
        self, disc: Discovery, redirect_uri: str, scope: str | None, previous: tuple[Record, Secrets] | None
    ) -> ClientInfo:
        server = disc.server
        pre = self._pre_registered(server)
        if pre is not None:
            return pre
        if previous is not None:
            rec, secrets = previous
            same_as = rec.issuer == server.issuer and rec.token_endpoint == server.token_endpoint
            if same_as and rec.registration == "metadata-document" and server.client_id_metadata_document_supported:
                return _client_from_record(rec, secrets, self.settings)
            if same_as and rec.registration == "dynamic" and rec.redirect_uri == redirect_uri:
                return _client_from_record(rec, secrets, self.settings)
            if same_as and rec.registration == "pre-registered":
                client = _client_from_record(rec, secrets, self.settings)
                client.redirect_uri = redirect_uri
                return client
        if server.client_id_metadata_document_supported and self.settings.client_metadata_url:
            url = self.settings.client_metadata_url
            parts = urlsplit(url)
            if parts.scheme != "https" or parts.path in ("", "/"):
                raise UsageError(
                    f"client metadata URL {escape_for_display(url)!r} must be an https URL with a path"
                )
            return ClientInfo(client_id=url, auth_method="none", registration="metadata-document",
                              redirect_uri=redirect_uri)
        return await register_client(self.fetcher, server, redirect_uri=redirect_uri, scope=scope)

    # -- authorization code
    def _can_interact(self) -> None:
        if self.mode == "stored-only":
            raise AuthError(
                f"{escape_for_display(self.server_url)} needs you to sign in, and --stored-auth-only "
                "forbids opening a sign-in",
                hint=f"run `mcp auth login {self.settings.name or self.server_url}` first",
            )
        if self.mode == "none":
            raise AuthError(f"{escape_for_display(self.server_url)} requires authorization (--no-auth given)")
        if self.mode == "non-interactive" and not can_launch_browser() and not self.settings.no_browser:
            raise AuthError(
                f"{escape_for_display(self.server_url)} needs you to sign in, and this session has no "
                "terminal or browser to do it",
                hint=f"run `mcp auth login {self.settings.name or self.server_url}` in a terminal first "
                "(or --no-browser to paste the redirect URL)",
            )

    async def authorization_code(
        self,
        disc: Discovery,
        scope: str | None,
        previous: tuple[Record, Secrets] | None = None,
    ) -> SignIn:
        self._can_interact()
        server = disc.server
        require_pkce(server)
        if not server.authorization_endpoint:
            raise AuthError(f"authorization server {escape_for_display(server.label)!r} has no authorization_endpoint")
        await _in_thread(self.store.check_writable)
        scope = with_offline_access(scope, server)
        port = self.settings.callback_port
        if not port and previous is not None and previous[0].redirect_uri and previous[0].issuer == server.issuer:
            port = urlsplit(previous[0].redirect_uri).port or 0
        listener = LoopbackListener(port)
        try:
            await listener.start()
        except OSError:
            if self.settings.callback_port:
                raise AuthError(
                    f"cannot listen on 127.0.0.1:{self.settings.callback_port} for the sign-in redirect "
                    "(port in use?)"
                ) from None
            listener = LoopbackListener(0)
            await listener.start()
        try:
            client = await self._client_for(disc, listener.redirect_uri, scope, previous)
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
            endpoint = server.authorization_endpoint
            fetcher = self.fetcher
            if (
                not fetcher.allow_private
                and not fetcher.server_is_private()
                and host_is_private(urlsplit(endpoint).hostname or "")
            ):
                raise AuthError(
                    f"the authorization endpoint {escape_for_display(endpoint)!r} of a remote server "
                    "points into a private network; refusing to open it",
                    hint="set MCP_OAUTH_ALLOW_PRIVATE=1 if this really is your authorization server",
                )
            url = endpoint + ("&" if urlsplit(endpoint).query else "?") + urlencode(params)
            check_browser_url(url)
            callback = await self._wait_for_callback(url, listener)
        finally:
            await listener.aclose()
        code = self._check_callback(callback, server)
        tokens = await request_token(
            self.fetcher,
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
        return self._sign_in(disc, client, tokens, requested=scope, grant="authorization_code")

    async def _wait_for_callback(self, url: str, listener: LoopbackListener) -> Callback:
        ui = self.ui
        launch = not self.settings.no_browser and can_launch_browser()
        if launch:
            ui.notice("opening the browser to sign in; if it does not open, visit:")
        else:
            ui.notice("sign in by opening this URL in a browser:")
        ui.stderr.write(f"\n    {url}\n\n")
        ui.stderr.flush()
        paste = self.settings.no_browser or (not launch and ui.stdin_tty)
        if paste:
            ui.notice(
                "after signing in, paste the address the browser was sent to (http://127.0.0.1:.../callback?...) here:"
            )
        elif not launch:
            ui.notice("waiting for the browser to come back to " + listener.redirect_uri)
        if launch:
            open_browser(url)
        from mcpcli.session import user_interaction

        result: list[Callback] = []
        # The user's time in the browser does not count against the request that hit the 401.
        with user_interaction(), anyio.move_on_after(self.settings.timeout) as scope:
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
                f"sign-in timed out after {self.settings.timeout:g}s waiting for the browser",
                hint="run `mcp auth login` again (--no-browser prints the URL and accepts the pasted redirect)",
            )
        return result[0]

    def _check_callback(self, cb: Callback, server: AuthServer) -> str:
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
                    f"the authorization response came from issuer {escape_for_display(iss)!r}, "
                    f"not {escape_for_display(server.issuer)!r}; rejected (possible mix-up attack)"
                )
        if cb.error:
            desc = cb.params.get("error_description")
            detail = f" ({scrub(desc, [])})" if desc else ""
            raise AuthError(f"sign-in was not completed: {scrub(cb.error, [])}{detail}")
        if not cb.code:
            raise AuthError("the authorization response carries no code")
        return cb.code

    # -- client credentials
    async def machine(
        self, disc: Discovery, scope: str | None, grant: str, client: ClientInfo | None = None
    ) -> SignIn:
        """A grant without a user: client credentials, or enterprise-managed (SEP-990)."""
        server = disc.server
        client = client or self._pre_registered(server)
        if client is None or not (client.client_secret or client.private_key_pem):
            raise UsageError(
                f"the {grant.replace('_', ' ')} grant needs --client-id and --client-secret "
                "(or --private-key-file)"
            )
        await _in_thread(self.store.check_writable)
        tokens = await self._machine_token(server, client, disc.resource_param, scope, grant)
        return self._sign_in(disc, client, tokens, requested=scope, grant=grant)

    async def _machine_token(
        self, server: AuthServer, client: ClientInfo, resource: str, scope: str | None, grant: str
    ) -> TokenResponse:
        if grant == "enterprise":
            assertion = await self._id_jag(server, resource, scope)
            params = {"grant_type": JWT_BEARER, "assertion": assertion, "resource": resource}
            what = "JWT bearer grant"
        else:
            params = {"grant_type": "client_credentials", "resource": resource}
            what = "client credentials grant"
            assertion = None
        if scope:
            params["scope"] = scope
        return await request_token(self.fetcher, server, client, params, what=what, secrets=[assertion])

    async def _id_jag(self, server: AuthServer, resource: str, scope: str | None) -> str:
        """RFC 8693 token exchange at the enterprise IdP: our ID token for an ID-JAG for this AS."""
        s = self.settings
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
        status, doc, _text = await self.fetcher.post_form(s.idp_token_endpoint, "IdP token endpoint", params)
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

    def _sign_in(
        self, disc: Discovery, client: ClientInfo, tokens: TokenResponse, *, requested: str | None, grant: str
    ) -> SignIn:
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
        )
        secrets = Secrets(
            access_token=tokens.access_token,
            refresh_token=tokens.refresh_token,
            client_secret=client.client_secret,
        )
        return SignIn(rec, secrets)

    # -- refresh
    async def refresh(self, rec: Record, secrets: Secrets) -> SignIn:
        """Use (and rotate) the refresh token; client-credentials clients just ask again."""
        server = _server_from_record(rec)
        client = _client_from_record(rec, secrets, self.settings)
        if rec.grant in MACHINE_GRANTS:
            tokens = await self._machine_token(server, client, rec.resource, rec.requested_scope, rec.grant)
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


# -- the authenticators --------------------------------------------------------------------


class NoAuth:
    """Adds nothing; a 401 is an error."""

    def __init__(self, server_url: str, reason: str) -> None:
        self.server_url = server_url
        self.reason = reason

    async def authorization(self) -> str | None:
        return None

    async def challenge(self, status: int, www_authenticate: list[str], url: str) -> bool:
        raise AuthError(
            f"{escape_for_display(self.server_url)} refused the request (HTTP {status}); {self.reason}",
            hint="drop --no-auth to sign in, or run `mcp auth login`" if "no-auth" in self.reason else None,
        )


class StaticBearer:
    """`--bearer-token` / MCP_BEARER_TOKEN: sent as is, never refreshed."""

    def __init__(self, server_url: str, token: str) -> None:
        self.server_url = server_url
        self._token = token

    def __repr__(self) -> str:
        return "StaticBearer(<redacted>)"

    async def authorization(self) -> str | None:
        return f"Bearer {self._token}"

    async def challenge(self, status: int, www_authenticate: list[str], url: str) -> bool:
        what = "lacks a scope the request needs" if status == 403 else "was not accepted"
        raise AuthError(
            f"the bearer token given for {escape_for_display(self.server_url)} {what} (HTTP {status})",
            hint="check --bearer-token / MCP_BEARER_TOKEN, or unset it to sign in with OAuth",
        )


class OAuthAuthenticator:
    """Stored tokens, refresh, and sign-in on demand for one server URL."""

    def __init__(
        self,
        server_url: str,
        settings: AuthSettings,
        *,
        mode: str = "interactive",
        store: TokenStore | None = None,
        ui: AuthUI | None = None,
    ) -> None:
        self.server_url = _strip_fragment(server_url)
        self.settings = settings
        self.mode = mode
        self.store = store or TokenStore(settings.token_store)
        self.flow = Flow(self.server_url, settings, self.store, mode=mode, ui=ui)
        self._record: Record | None = None
        self._secrets: Secrets | None = None
        self._loaded = False
        self._lock = anyio.Lock()
        self._generation = 0
        self._challenges_401: list[float] = []
        self._step_ups: list[float] = []
        self._refreshed_token: str | None = None
        self._handed_out = False

    def __repr__(self) -> str:
        return f"OAuthAuthenticator({self.server_url!r}, mode={self.mode!r})"

    # -- the seam
    async def authorization(self) -> str | None:
        if not self._loaded:
            async with self._lock:
                if not self._loaded:
                    await self._load()
        rec, secrets = self._record, self._secrets
        if rec is None or secrets is None or not secrets.access_token:
            return None
        if rec.expired() and (secrets.refresh_token or rec.grant in MACHINE_GRANTS):
            async with self._lock:
                if self._record is rec:  # nobody refreshed while we waited
                    try:
                        await self._refresh()
                    except McpCliError:
                        pass  # the request goes out with the old token; its 401 decides
        token = self._secrets.access_token if self._secrets else None
        if token:
            self._handed_out = True
        return f"Bearer {token}" if token else None

    async def challenge(self, status: int, www_authenticate: list[str], url: str) -> bool:
        generation = self._generation
        async with self._lock:
            if not self._loaded:
                await self._load()
            if self._generation != generation:
                return True  # another request already signed in again
            if status == 401 and not self._handed_out and self._secrets and self._secrets.access_token:
                return True  # a stored sign-in exists that the request did not carry yet
            challenge = parse_www_authenticate(www_authenticate)
            if status == 403:
                return await self._step_up(challenge)
            if status == 401:
                return await self._on_401(challenge)
            return False

    # -- internals
    async def _load(self) -> None:
        self._loaded = True
        rec = await _in_thread(self.store.find, self.server_url)
        if rec is None:
            return
        try:
            secrets = await _in_thread(self.store.secrets_of, rec)
        except AuthError as exc:
            # The keyring is unavailable: carry on without stored tokens (a 401 explains).
            self.flow.ui.notice(f"warning: cannot read the stored sign-in: {exc.message}")
            return
        self._record, self._secrets = rec, secrets

    async def _save(self, sign_in: SignIn) -> None:
        try:
            await _in_thread(self.store.save, sign_in.record, sign_in.secrets)
        except AuthError as exc:
            self.flow.ui.notice(f"warning: signed in, but the tokens could not be stored: {exc.message}")
        self._record, self._secrets = sign_in.record, sign_in.secrets
        self._generation += 1

    async def _refresh(self) -> bool:
        """Refresh under the inter-process lock, adopting another process's refresh if it won."""
        rec, secrets = self._record, self._secrets
        if rec is None or secrets is None:
            return False
        lock = self.store.locked()
        await _in_thread(lock.acquire)
        try:
            stored = await _in_thread(self.store.find, self.server_url)
            if stored is not None and stored.issuer == rec.issuer:
                fresh = await _in_thread(self.store.secrets_of, stored)
                if fresh.access_token and fresh.access_token != secrets.access_token and not stored.expired():
                    self._record, self._secrets = stored, fresh
                    self._generation += 1
                    return True
                rec, secrets = stored, fresh
            try:
                sign_in = await self.flow.refresh(rec, secrets)
            except OAuthError as exc:
                if exc.error in ("invalid_grant", "invalid_client", "unauthorized_client"):
                    # The refresh token is dead: forget the tokens, keep nothing half-valid.
                    await _in_thread(self.store.delete, rec)
                    self._record, self._secrets = None, None
                raise
            await self._save(sign_in)
            self._refreshed_token = sign_in.secrets.access_token
            return True
        finally:
            lock.release()

    def _previous(self) -> tuple[Record, Secrets] | None:
        if self._record is None or self._secrets is None:
            return None
        return self._record, self._secrets

    async def _sign_in(self, challenge: Challenge | None, scope: str | None = None) -> bool:
        prefer = self._record.issuer if self._record else None
        disc = await self.flow.discover(challenge, prefer_issuer=prefer)
        previous = self._previous()
        if previous is not None and previous[0].issuer != disc.server.issuer:
            # The server moved to another authorization server (SEP-2352): nothing of the
            # old one (client registration, tokens) may be presented to the new one.
            old = previous[0]
            if old.registration == "pre-registered" and not self.settings.client_id:
                raise AuthError(
                    f"the authorization server of {escape_for_display(self.server_url)} changed from "
                    f"{escape_for_display(old.issuer or '?')!r} to {escape_for_display(disc.server.issuer or '?')!r}; "
                    "the pre-registered client belongs to the old one",
                    hint="register a client with the new authorization server and run `mcp auth login --client-id ...`",
                )
            previous = None
        chosen = scope if scope is not None else select_scope(self.settings, disc, challenge)
        if self.settings.grant in MACHINE_GRANTS:
            sign_in = await self.flow.machine(disc, chosen, self.settings.grant)
        elif previous is not None and previous[0].grant in MACHINE_GRANTS:
            client = _client_from_record(previous[0], previous[1], self.settings)
            sign_in = await self.flow.machine(disc, chosen, previous[0].grant, client)
        else:
            sign_in = await self.flow.authorization_code(disc, chosen, previous)
        await self._save(sign_in)
        return True

    async def _on_401(self, challenge: Challenge | None) -> bool:
        if self.mode == "none":
            raise AuthError(f"{escape_for_display(self.server_url)} requires authorization (--no-auth given)")
        if _count_recent(self._challenges_401) > MAX_401:
            raise AuthError(
                f"{escape_for_display(self.server_url)} keeps refusing authorization (HTTP 401) after signing in",
                hint="the server may not accept tokens from its own authorization server; check its configuration",
            )
        rec, secrets = self._record, self._secrets
        if rec is not None and secrets is not None and secrets.access_token:
            # Did another process refresh or sign in meanwhile?
            stored = await _in_thread(self.store.find, self.server_url)
            if stored is not None:
                fresh = await _in_thread(self.store.secrets_of, stored)
                if fresh.access_token and fresh.access_token != secrets.access_token:
                    self._record, self._secrets = stored, fresh
                    self._generation += 1
                    return True
            same_as = True
            if challenge is not None and challenge.resource_metadata:
                try:
                    disc = await self.flow.discover(challenge, prefer_issuer=rec.issuer)
                    same_as = disc.server.issuer == rec.issuer
                except AuthError:
                    same_as = True
            if same_as and self._refreshed_token != secrets.access_token and (
                secrets.refresh_token or rec.grant in MACHINE_GRANTS
            ):
                try:
                    if await self._refresh():
                        return True
                except OAuthError:
                    pass  # fall through to a new sign-in
        return await self._sign_in(challenge)

    async def _step_up(self, challenge: Challenge | None) -> bool:
        if challenge is None or challenge.error != "insufficient_scope":
            return False
        if self.mode == "none":
            return False
        if _count_recent(self._step_ups) > MAX_STEP_UPS:
            needed = challenge.scope or "(unspecified)"
            raise AuthError(
                f"{escape_for_display(self.server_url)} still reports insufficient_scope (needs "
                f"{escape_for_display(needed)}) after {MAX_STEP_UPS} attempts to get more scope",
                hint="the account may not be allowed that scope",
            )
        previous = self._record.requested_scope or self._record.scope if self._record else None
        scope = union_scopes(previous, challenge.scope) if challenge.scope else previous
        if scope is None and self.settings.scope:
            scope = self.settings.scope
        if self.mode == "stored-only" and not (
            self.settings.grant in MACHINE_GRANTS or (self._record and self._record.grant in MACHINE_GRANTS)
        ):
            raise AuthError(
                f"{escape_for_display(self.server_url)} needs more scope ({escape_for_display(challenge.scope or '?')}) "
                "and --stored-auth-only forbids signing in again",
                hint=f"run `mcp auth login {self.settings.name or self.server_url} --scope '{scope or ''}'`",
            )
        return await self._sign_in(challenge, scope=scope)


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


# -- the commands' operations ------------------------------------------------------------------


async def probe_challenge(fetcher: Fetcher, server_url: str) -> Challenge | None:
    """POST an unauthenticated `initialize` to learn the server's 401 challenge, if any."""
    from mcpcli.transports._http import fetch

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
    if resp.status not in (401, 403):
        return None
    values = [v for k, v in resp.header_list if k == "www-authenticate"]
    return parse_www_authenticate(values) or Challenge(scheme="Bearer")


async def login(
    server_url: str,
    settings: AuthSettings,
    *,
    ui: AuthUI | None = None,
    store: TokenStore | None = None,
    mode: str = "interactive",
) -> Record:
    """`mcp auth login`: discover, sign in (or use client credentials), store; returns the record."""
    store = store or TokenStore(settings.token_store)
    flow = Flow(server_url, settings, store, mode=mode, ui=ui)
    await _in_thread(store.check_writable)
    challenge = await probe_challenge(flow.fetcher, flow.server_url)
    previous_rec = await _in_thread(store.find, flow.server_url)
    previous: tuple[Record, Secrets] | None = None
    if previous_rec is not None:
        try:
            previous = (previous_rec, await _in_thread(store.secrets_of, previous_rec))
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
    else:
        sign_in = await flow.authorization_code(disc, scope, previous)
    await _in_thread(store.save, sign_in.record, sign_in.secrets)
    return sign_in.record


async def access_token(
    server_url: str, settings: AuthSettings, *, store: TokenStore | None = None
) -> str:
    """`mcp auth token`: the stored access token, refreshed if it expired."""
    auth = OAuthAuthenticator(server_url, settings, mode="stored-only", store=store)
    header = await auth.authorization()
    rec = auth._record
    if header is None or rec is None:
        raise AuthError(
            f"not signed in to {escape_for_display(server_url)}",
            hint=f"run `mcp auth login {settings.name or server_url}`",
        )
    if rec.expired(margin=0):
        raise AuthError(
            f"the stored token for {escape_for_display(server_url)} has expired and could not be refreshed",
            hint=f"run `mcp auth login {settings.name or server_url}`",
        )
    return header.split(" ", 1)[1]


async def logout(
    rec: Record, settings: AuthSettings, *, store: TokenStore, revoke: bool = True
) -> bool:
    """Revoke (RFC 7009, best effort, 5 s) and forget one sign-in; True if revocation succeeded."""
    revoked = False
    if revoke and rec.revocation_endpoint:
        try:
            secrets = await _in_thread(store.secrets_of, rec)
        except AuthError:
            secrets = Secrets()
        fetcher = Fetcher(rec.server_url, insecure=settings.insecure, timeout=5.0)
        server = _server_from_record(rec)
        try:
            client = _client_from_record(rec, secrets, settings)
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
    await _in_thread(store.delete, rec)
    return revoked

