"""`OAuthAuthenticator`: the `Authenticator` (see `mcpcli.transports.http`) the HTTP
transports are handed when no bearer token or `Authorization` header was given
(that policy lives in `HttpConnection`) and signing in is allowed.

Stored tokens are sent (refreshed when they expire, under an inter-process
lock, re-reading the store first so two `mcp` processes never burn the same
rotated refresh token), and a 401 or a 403 `insufficient_scope` runs discovery
and sign-in (or step-up) as the mode allows: "interactive" opens the browser,
"non-interactive" does so only if a browser can be launched, "stored-only"
never signs in.
"""

from __future__ import annotations

import time

import anyio

from mcpcli.auth.clients import client_from_record
from mcpcli.auth.metadata import Challenge, parse_www_authenticate
from mcpcli.auth.scopes import select_scope, union_scopes
from mcpcli.auth.settings import DEVICE_GRANT, MACHINE_GRANTS, AuthSettings
from mcpcli.auth.signin import Flow, SignIn, strip_fragment
from mcpcli.auth.store import Record, Secrets, TokenStore
from mcpcli.auth.tokens import OAuthError
from mcpcli.auth.ui import AuthUI
from mcpcli.errors import AuthError, McpCliError
from mcpcli.text import verbatim

__all__ = ["OAuthAuthenticator"]

#: 401s answered per connection before giving up (a server that refuses fresh tokens).
MAX_401 = 3
#: Step-up re-authorizations per connection (the first sign-in + 2 = at most 3 attempts).
MAX_STEP_UPS = 2
#: The limits above count within this many seconds (a long session may sign in again later).
LIMIT_WINDOW = 120.0


def _count_recent(events: list[float]) -> int:
    """Record one event now; how many happened within the last LIMIT_WINDOW seconds."""
    now = time.monotonic()
    events[:] = [t for t in events if now - t < LIMIT_WINDOW] + [now]
    return len(events)


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
        self.server_url = strip_fragment(server_url)
        self.settings = settings
        self.mode = mode
        self.store = store or TokenStore(settings.token_store, profile=settings.profile)
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
        #: How the sign-in whose refresh token died was made: a new one is made the same way.
        self._lost_grant: str | None = None

    def __repr__(self) -> str:
        return f"OAuthAuthenticator({self.server_url!r}, mode={self.mode!r})"

    @property
    def record(self) -> Record | None:
        """The sign-in loaded from (or last saved to) the store, if any."""
        return self._record

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
        rec = await anyio.to_thread.run_sync(self.store.find, self.server_url)
        if rec is None:
            return
        try:
            secrets = await anyio.to_thread.run_sync(self.store.secrets_of, rec)
        except AuthError as exc:
            # The keyring is unavailable: carry on without stored tokens (a 401 explains).
            self.flow.ui.notice(f"warning: cannot read the stored sign-in: {exc.message}")
            return
        self._record, self._secrets = rec, secrets

    async def _save(self, sign_in: SignIn) -> None:
        try:
            await anyio.to_thread.run_sync(self.store.save, sign_in.record, sign_in.secrets)
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
        await anyio.to_thread.run_sync(lock.acquire)
        try:
            stored = await anyio.to_thread.run_sync(self.store.find, self.server_url)
            if stored is not None and stored.issuer == rec.issuer:
                fresh = await anyio.to_thread.run_sync(self.store.secrets_of, stored)
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
                    await anyio.to_thread.run_sync(self.store.delete, rec)
                    self._record, self._secrets, self._lost_grant = None, None, rec.grant
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
                    f"the authorization server of {verbatim(self.server_url, limit=300)} changed from "
                    f"{verbatim(old.issuer or '?', limit=300)!r} to {verbatim(disc.server.issuer or '?', limit=300)!r}; "
                    "the pre-registered client belongs to the old one",
                    hint="register a client with the new authorization server and run `mcp auth login --client-id ...`",
                )
            previous = None
        chosen = scope if scope is not None else select_scope(self.settings, disc, challenge)
        if self.settings.grant in MACHINE_GRANTS:
            sign_in = await self.flow.machine(disc, chosen, self.settings.grant)
        elif previous is not None and previous[0].grant in MACHINE_GRANTS:
            client = client_from_record(previous[0], previous[1], self.settings)
            sign_in = await self.flow.machine(disc, chosen, previous[0].grant, client)
        elif DEVICE_GRANT in (self.settings.grant, previous[0].grant if previous else self._lost_grant):
            sign_in = await self.flow.device(disc, chosen, previous)
        else:
            sign_in = await self.flow.authorization_code(disc, chosen, previous)
        await self._save(sign_in)
        return True

    async def _on_401(self, challenge: Challenge | None) -> bool:
        if _count_recent(self._challenges_401) > MAX_401:
            raise AuthError(
                f"{verbatim(self.server_url, limit=300)} keeps refusing authorization (HTTP 401) after signing in",
                hint="the server may not accept tokens from its own authorization server; check its configuration",
            )
        rec, secrets = self._record, self._secrets
        if rec is not None and secrets is not None and secrets.access_token:
            # Did another process refresh or sign in meanwhile?
            stored = await anyio.to_thread.run_sync(self.store.find, self.server_url)
            if stored is not None:
                fresh = await anyio.to_thread.run_sync(self.store.secrets_of, stored)
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
        if _count_recent(self._step_ups) > MAX_STEP_UPS:
            needed = challenge.scope or "(unspecified)"
            raise AuthError(
                f"{verbatim(self.server_url, limit=300)} still reports insufficient_scope (needs "
                f"{verbatim(needed, limit=300)}) after {MAX_STEP_UPS} attempts to get more scope",
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
                f"{verbatim(self.server_url, limit=300)} needs more scope ({verbatim(challenge.scope or '?', limit=300)}) "
                "and --stored-auth-only forbids signing in again",
                hint=f"run `mcp auth login {self.settings.login_target(self.server_url)} --scope '{scope or ''}'`",
            )
        return await self._sign_in(challenge, scope=scope)
