"""`mcp auth login|status|list|logout|token`: sign in to remote servers and manage stored tokens.

Sign-ins are stored per server URL (secrets in the OS keyring, or in a 0600
file with `--token-store file`); other commands use and refresh them silently.
No command prints a token except `mcp auth token`, which exists for scripts.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, App, Group, pass_app
from mcpcli.cli._options import output_options, project_option
from mcpcli.cli._types import seconds
from mcpcli.errors import AuthError, UsageError
from mcpcli.output import Output
from mcpcli.text import printable

if TYPE_CHECKING:
    from rich.console import Console

    from mcpcli.auth.settings import AuthSettings
    from mcpcli.auth.store import Record, TokenStore
    from mcpcli.config import ServerEntry

__all__ = ["auth"]

_STORE_OPTION = click.option(
    "--token-store",
    type=click.Choice(["keyring", "file"]),
    envvar="MCP_TOKEN_STORE",
    help="Where sign-ins are kept: the OS keyring (default) or a 0600 file in the XDG state dir.",
)
_PROFILE_OPTION = click.option(
    "--profile",
    envvar="MCP_PROFILE",
    metavar="NAME",
    help="Which account: several sign-ins to one server are kept apart by profile (default: 'default').",
)


def _store(token_store: str | None, profile: str | None) -> TokenStore:
    """The token store for one profile (checked: a bad name is a usage error)."""
    from mcpcli.auth import check_profile
    from mcpcli.auth.store import TokenStore

    return TokenStore(token_store, profile=check_profile(profile))


@click.group(cls=Group, context_settings=CONTEXT_SETTINGS)
def auth() -> None:
    """Sign in to remote servers (OAuth 2.1) and manage stored tokens.

    \b
    Commands that talk to a server sign in by themselves when it asks (HTTP 401)
    and refresh stored tokens silently; `login` does it up front.
      mcp auth login https://example.com/mcp
      mcp auth status
      mcp tools list example --stored-auth-only     # CI: never prompt
    """


# -- resolving TARGET ------------------------------------------------------------------


def _entry(app: App, target: str) -> ServerEntry:
    """TARGET (a configured name or a URL) as a remote server entry."""
    from mcpcli.targets import resolve_target

    entry = resolve_target(target, [], app.config()).resolved()
    if entry.url is None:
        raise UsageError(
            f"server {target!r} is not a remote (http) server; OAuth sign-in applies to http(s) servers",
            hint="stdio servers take their credentials from the environment (--env)",
        )
    return entry


def _find(app: App, target: str, store: TokenStore) -> Record | None:
    """The stored sign-in for TARGET: by URL, by configured name, or by the name it was stored under."""
    from mcpcli.targets import is_url

    if is_url(target):
        return store.find(target.split("#", 1)[0])
    try:
        entry = _entry(app, target)
    except UsageError:
        return store.find_by_name(target)
    assert entry.url is not None
    return store.find(entry.url) or store.find_by_name(target)


def _settings(entry: ServerEntry | None, **flags: Any) -> AuthSettings:
    from mcpcli.auth.settings import AuthSettings

    extra = {k: v for k, v in flags.items() if v not in (None, False, "")}
    insecure = bool(extra.pop("insecure", False))
    return AuthSettings.build(entry, extra, insecure=insecure)


# -- rendering -----------------------------------------------------------------------------


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _describe(rec: Record, store: TokenStore) -> dict[str, Any]:
    """Everything about a sign-in except the secrets."""
    now = time.time()
    out: dict[str, Any] = {
        "server": rec.server_url,
        "name": rec.name,
        "profile": rec.profile or "default",
        "issuer": rec.issuer,
        "resource": rec.resource,
        "clientId": rec.client_id,
        "registration": rec.registration,
        "grant": rec.grant,
        "tokenEndpointAuthMethod": rec.auth_method,
        "scopes": (rec.scope or "").split(),
        "obtainedAt": _iso(rec.obtained_at),
        "expiresAt": _iso(rec.expires_at),
        "expiresIn": None if rec.expires_at is None else int(rec.expires_at - now),
        "expired": rec.expired(margin=0, now=now),
        "refreshToken": rec.has_refresh_token,
        "store": rec.store,
        "storeLocation": store.location(rec.store) if rec.store == "file" else "OS keyring",
    }
    return {k: v for k, v in out.items() if v is not None}


def _ago(seconds: int) -> str:
    value = abs(seconds)
    if value < 90:
        text = f"{value} s"
    elif value < 5400:
        text = f"{value // 60} min"
    elif value < 2 * 86400:
        text = f"{value // 3600} h"
    else:
        text = f"{value // 86400} days"
    return f"in {text}" if seconds >= 0 else f"{text} ago"


def _human_one(console: Console, info: dict[str, Any]) -> None:
    title = info["server"] + (f"  ({info['name']})" if info.get("name") else "")
    if info.get("profile", "default") != "default":
        title += f"  [profile {info['profile']}]"
    console.print(printable(title, keep_newlines=False), soft_wrap=True)
    rows = [
        ("issuer", info.get("issuer") or "(none: 2025-03-26 default endpoints)"),
        ("client", f"{info['clientId']} ({info['registration']}, {info['tokenEndpointAuthMethod']})"),
        ("grant", info["grant"]),
        ("scopes", " ".join(info["scopes"]) or "(none)"),
    ]
    if "expiresIn" in info:
        state = "expired" if info["expired"] else "valid"
        rows.append(("access token", f"{state}, expires {_ago(info['expiresIn'])} ({info['expiresAt']})"))
    else:
        rows.append(("access token", "no expiry given"))
    rows.append(("refresh token", "yes" if info["refreshToken"] else "no"))
    rows.append(("stored in", info["storeLocation"]))
    for key, value in rows:
        console.print(f"  {key + ':':<15}{printable(str(value), keep_newlines=False)}", soft_wrap=True)


def _human_list(console: Console, infos: list[dict[str, Any]]) -> None:
    if not infos:
        console.print("no stored sign-ins")
        return
    for info in infos:
        if "expiresIn" in info:
            when = "expired" if info["expired"] else f"expires {_ago(info['expiresIn'])}"
        else:
            when = "no expiry"
        if info["refreshToken"]:
            when += ", refreshable"
        name = f" ({info['name']})" if info.get("name") else ""
        profile = info.get("profile", "default")
        console.print(
            printable(f"{profile}  {info['server']}{name}  {info.get('issuer') or '-'}  {when}",
                      keep_newlines=False),
            soft_wrap=True,
        )


# -- commands ------------------------------------------------------------------------------


@auth.command("login")
@click.argument("target", metavar="TARGET")
@click.option("--scope", metavar="SCOPES", help="Scopes to request (space separated) instead of the server's.")
@click.option("--client-id", metavar="ID", help="A pre-registered OAuth client id (skips registration).")
@click.option("--client-secret", metavar="SECRET", envvar="MCP_OAUTH_CLIENT_SECRET",
              help="Its secret (prefer the MCP_OAUTH_CLIENT_SECRET variable).")
@click.option("--client-credentials", is_flag=True,
              help="Machine sign-in: the client credentials grant (no browser, no user).")
@click.option("--device", is_flag=True,
              help="Sign in on another device: enter a code shown here at the server's address (no browser here).")
@click.option("--private-key-file", type=click.Path(dir_okay=False), metavar="PEM",
              help="Authenticate the client with private_key_jwt using this key.")
@click.option("--signing-alg", metavar="ALG", help="JWT algorithm for --private-key-file (ES256, RS256, ...).")
@click.option("--client-metadata-url", metavar="URL",
              help="Use this https Client ID Metadata Document as the client id where supported.")
@click.option("--no-browser", is_flag=True,
              help="Print the sign-in URL instead of opening a browser, and read the redirect URL pasted back.")
@click.option("--callback-port", type=click.IntRange(0, 65535), metavar="PORT",
              help="Listen for the redirect on this 127.0.0.1 port (default: any free port).")
@click.option("--auth-timeout", type=seconds(), envvar="MCP_AUTH_TIMEOUT",
              metavar="SECONDS", help="How long to wait for the browser (default 300).")
@click.option("--insecure", is_flag=True, help="Do not verify TLS certificates.")
@_STORE_OPTION
@_PROFILE_OPTION
@project_option
@output_options
@pass_app
def login(
    app: App,
    target: str,
    scope: str | None,
    client_id: str | None,
    client_secret: str | None,
    client_credentials: bool,
    device: bool,
    private_key_file: str | None,
    signing_alg: str | None,
    client_metadata_url: str | None,
    no_browser: bool,
    callback_port: int | None,
    auth_timeout: float | None,
    insecure: bool,
    token_store: str | None,
    profile: str | None,
    out: Output,
) -> None:
    """Sign in to TARGET (a configured server or an http(s) URL) and store the tokens.

    Discovers the server's authorization server, registers this client if
    needed, opens the browser (PKCE, state and issuer checks) and keeps the
    tokens in the OS keyring. With --device you approve on another device (a phone,
    your laptop) with a code shown here; with --client-credentials no user is involved.
    With --profile NAME the sign-in is another account's, kept apart from the
    default one; commands use it with the same --profile (or MCP_PROFILE).
    """
    from mcpcli.auth.commands import login as do_login
    from mcpcli.auth.ui import AuthUI

    store = _store(token_store, profile)

    entry = _entry(app, target)
    assert entry.url is not None
    settings = _settings(
        entry,
        scope=scope, client_id=client_id, client_secret=client_secret,
        grant="client_credentials" if client_credentials else "device_code" if device else None,
        private_key_file=private_key_file, signing_alg=signing_alg,
        client_metadata_url=client_metadata_url, no_browser=no_browser,
        callback_port=callback_port, auth_timeout=auth_timeout, token_store=token_store,
        insecure=insecure, profile=store.profile,
    )
    if client_credentials and device:
        raise UsageError("--client-credentials and --device are two different sign-ins: give one")
    if client_credentials and not settings.client_id:
        raise UsageError("--client-credentials needs --client-id (and a secret or --private-key-file)")
    if settings.token_store != token_store:  # the entry's oauth.tokenStore
        store = _store(settings.token_store, profile)
    ui = AuthUI(stderr=app.stderr, stdin=app.stdin, prog=app.prog)
    mode = "interactive" if (app.stdin_tty or app.stderr_tty) else "non-interactive"

    async def go() -> Record:
        return await do_login(entry.url or "", settings, ui=ui, store=store, mode=mode)

    rec = app.run(go)
    where = "the OS keyring" if rec.store == "keyring" else store.location("file")
    as_ = f" as profile {rec.profile}" if rec.profile else ""
    app.info(f"signed in to {printable(rec.server_url, keep_newlines=False)}{as_}; tokens stored in {where}")
    if not out.human:
        out.emit(_describe(rec, store))


@auth.command("status")
@click.argument("target", metavar="[TARGET]", required=False)
@_STORE_OPTION
@_PROFILE_OPTION
@output_options
@pass_app
def status(app: App, target: str | None, token_store: str | None, profile: str | None, out: Output) -> None:
    """Show what is stored for TARGET (or every server): issuer, client, scopes, expiry.

    Never shows a token. With TARGET and no stored sign-in (for --profile NAME:
    that account's), the server is asked whether it needs one: exit 3 when it
    does (or cannot be reached), 0 and "no sign-in needed" when it answers
    without one. Without TARGET, --profile shows only that profile's sign-ins.
    """
    store = _store(token_store, profile)
    if target is None:
        infos = [_describe(rec, store) for rec in store.records(every_profile=profile is None)]
        out.emit(infos, human=lambda console, value: _list_details(console, value))
        return
    rec = _find(app, target, store)
    if rec is None:
        url = _server_url(app, target)
        if url is not None and _needs_no_sign_in(app, url):
            out.emit({"server": url, "signedIn": False, "signInNeeded": False},
                     human=lambda console, info: console.print(
                         f"no sign-in needed: {printable(info['server'], keep_newlines=False)} "
                         "answers without one", soft_wrap=True))
            return
        raise _not_signed_in(target, store)
    out.emit(_describe(rec, store), human=_human_one)


def _server_url(app: App, target: str) -> str | None:
    """TARGET's URL: itself, or a configured remote server's; None for anything else."""
    from mcpcli.targets import is_url

    if is_url(target):
        return target.split("#", 1)[0]
    try:
        return _entry(app, target).url
    except UsageError:
        return None


def _needs_no_sign_in(app: App, url: str) -> bool:
    """The server answered an unauthenticated request without asking for a sign-in (and
    publishes no OAuth metadata): there is nothing to sign in to."""
    from mcpcli.auth.commands import sign_in_needed

    return app.run(lambda: sign_in_needed(url)) is False


def _not_signed_in(target: str, store: TokenStore) -> AuthError:
    as_ = f" --profile {store.profile}" if store.profile else ""
    where = f" as profile {store.profile}" if store.profile else ""
    return AuthError(f"not signed in to {target}{where}", hint=f"run `mcp auth login {target}{as_}`")


def _list_details(console: Console, infos: list[dict[str, Any]]) -> None:
    if not infos:
        console.print("no stored sign-ins")
    for i, info in enumerate(infos):
        if i:
            console.print("")
        _human_one(console, info)


@auth.command("list")
@_STORE_OPTION
@_PROFILE_OPTION
@output_options
@pass_app
def list_(app: App, token_store: str | None, profile: str | None, out: Output) -> None:
    """List the servers with a stored sign-in, one per line: profile, server, issuer, expiry.

    With --profile only that profile's sign-ins.
    """
    store = _store(token_store, profile)
    infos = [_describe(rec, store) for rec in store.records(every_profile=profile is None)]
    out.emit(infos, human=_human_list)


@auth.command("logout")
@click.argument("target", metavar="[TARGET]", required=False)
@click.option("--all", "all_", is_flag=True, help="Forget every stored sign-in.")
@click.option("--no-revoke", is_flag=True, help="Only forget the tokens; do not ask the server to revoke them.")
@click.option("--insecure", is_flag=True, help="Do not verify TLS certificates.")
@_STORE_OPTION
@_PROFILE_OPTION
@pass_app
def logout(
    app: App, target: str | None, all_: bool, no_revoke: bool, insecure: bool, token_store: str | None,
    profile: str | None,
) -> None:
    """Forget the sign-in for TARGET, revoking its tokens where the server supports it (RFC 7009).

    --profile NAME forgets that account's sign-in only; --all with --profile
    forgets every sign-in of that profile, --all alone every sign-in.
    """
    from mcpcli.auth.commands import logout as do_logout
    from mcpcli.auth.settings import AuthSettings

    if all_ == (target is not None):
        raise UsageError("give a TARGET or --all")
    store = _store(token_store, profile)
    records = (
        store.records(every_profile=profile is None)
        if all_
        else [r for r in [_find(app, target or "", store)] if r is not None]
    )
    if not records:
        if all_:
            app.info("no stored sign-ins")
            return
        raise _not_signed_in(target or "", store)
    for rec in records:
        settings = AuthSettings(insecure=insecure, name=rec.name, profile=rec.profile)

        async def go(rec: Record = rec, settings: AuthSettings = settings) -> bool:
            return await do_logout(rec, settings, store=store, revoke=not no_revoke)

        revoked = app.run(go)
        note = " (tokens revoked)" if revoked else ""
        as_ = f" (profile {rec.profile})" if rec.profile else ""
        app.info(f"signed out of {printable(rec.server_url, keep_newlines=False)}{as_}{note}")


@auth.command("token")
@click.argument("target", metavar="TARGET")
@click.option("--insecure", is_flag=True, help="Do not verify TLS certificates.")
@_STORE_OPTION
@_PROFILE_OPTION
@pass_app
def token(app: App, target: str, insecure: bool, token_store: str | None, profile: str | None) -> None:
    """Print TARGET's access token (refreshed if needed) for scripts: curl -H "Authorization: Bearer $(mcp auth token T)".

    The token is printed on stdout and nowhere else; treat the output as a secret.
    """
    from mcpcli.auth.commands import access_token

    store = _store(token_store, profile)
    rec = _find(app, target, store)
    if rec is None:
        raise _not_signed_in(target, store)
    entry: ServerEntry | None
    try:
        entry = _entry(app, target)
    except UsageError:
        entry = None
    settings = _settings(entry, insecure=insecure, token_store=token_store, profile=store.profile)
    value = app.run(lambda: access_token(rec.server_url, settings, store=store))
    app.stdout.write(value + "\n")
    app.stdout.flush()
