"""From a resolved server entry (see `mcpcli.targets`) to a connected `Client`.

This is the only module that knows config entries, CLI options and auth
together: it hands each transport explicit settings (URL, headers, limits, an
`AuthProvider` built from `mcpcli.auth`), so `mcpcli.transports` never reaches up.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from mcpcli.client import Client, ClientOptions
from mcpcli.config import ServerEntry
from mcpcli.errors import ConfigError, UsageError
from mcpcli.transports import Transport

if TYPE_CHECKING:
    from mcpcli.headers_helper import HeadersHelper
    from mcpcli.text import SecretValues
    from mcpcli.transports.http import Authenticator

__all__ = [
    "ConnectOptions",
    "OAuthProvider",
    "check_profile",
    "connect",
    "open_http_transport",
    "open_transport",
    "session_connect_fields",
]


@dataclass
class ConnectOptions:
    """How to reach a server; everything the transports and auth need from the CLI."""

    #: Extra environment for stdio servers; a value of None passes ours through.
    env: dict[str, str | None] = field(default_factory=dict)
    cwd: str | None = None
    quiet: bool = False
    server_log: IO[bytes] | None = None
    stderr: IO[bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    bearer_token: str | None = None
    #: "auto", "http" (Streamable HTTP only) or "sse" (legacy HTTP+SSE only).
    transport: str = "auto"
    insecure: bool = False
    #: Auth behaviour: "interactive", "non-interactive" (a browser only if one can be
    #: launched), "stored-only" (never sign in) or "none" (no OAuth at all).
    auth: str = "interactive"
    #: `--token-store`: where OAuth tokens are kept (default: the keyring, else a file).
    token_store: str | None = None
    #: `--profile`: which account's stored sign-in to use (None: the default one).
    profile: str | None = None
    #: HTTP: how long connecting (and waiting for an SSE endpoint event) may take.
    connect_timeout: float = 30.0
    #: Filled with the connection's secret values (env and header values, bearer and
    #: OAuth tokens, headersHelper output) as they become known, for `--trace`/`--record`.
    secrets: SecretValues | None = None
    #: How a tools.yaml target is served in-process: the CLI hands in the gateway's (so
    #: the file's `servers:` are served too); None: `toolsfile` alone (its own content).
    serve_file: Callable[[str], Transport] | None = None


def check_profile(name: str | None) -> str | None:
    """A `--profile` name checked (`mcpcli.auth.check_profile`), for those that may not import auth."""
    from mcpcli.auth import check_profile as check

    return check(name)


def session_connect_fields(options: ConnectOptions) -> dict[str, Any]:
    """The connection options the daemon needs to open a session as this command would
    (the `connect` object of the `open` request): `--env KEY` passes our value along."""
    env: dict[str, str] = {}
    for key, value in options.env.items():
        if value is None:
            value = os.environ.get(key)
            if value is None:
                raise UsageError(f"--env {key}: {key} is not set in this environment")
        env[key] = value
    return {
        "env": env, "cwd": options.cwd, "headers": dict(options.headers),
        "bearer_token": options.bearer_token, "transport": options.transport,
        "insecure": options.insecure,
        "auth": options.auth, "token_store": options.token_store, "profile": options.profile,
        "connect_timeout": options.connect_timeout,
    }


def _session_transport(entry: ServerEntry, options: ConnectOptions) -> Transport:
    """`@NAME`: attach to the session; a keepAlive server: open or join its session first."""
    from mcpcli import sessions
    from mcpcli.transports.daemon import DaemonTransport

    if entry.transport == "session":
        return DaemonTransport(entry.name, sessions.socket_file())

    # Each profile has its own keepAlive session (its own tokens): NAME.PROFILE.
    name = entry.name if options.profile is None else f"{entry.name}.{options.profile}"
    request = sessions.open_request(
        name, entry, connect=session_connect_fields(options),
        idle_timeout=entry.idle_timeout, restart=entry.restart, join=True,
    )
    return DaemonTransport(
        name, sessions.socket_file(), prepare=functools.partial(sessions.open_session, request)
    )


def open_transport(entry: ServerEntry, options: ConnectOptions) -> Transport:
    """Build the transport for a (resolved) server entry."""
    if entry.transport == "session" or entry.keep_alive:
        _learn_secrets(None, options)
        return _session_transport(entry, options)
    entry = entry.resolved()
    _learn_secrets(entry, options)
    if entry.transport == "stdio":
        from mcpcli.targets import stdio_launch
        from mcpcli.transports.stdio import StdioTransport

        return StdioTransport(
            stdio_launch(entry, options.env, options.cwd),
            stderr=options.stderr,
            server_log=options.server_log,
            quiet=options.quiet,
        )
    if entry.transport in ("http", "sse"):
        return open_http_transport(entry, options)
    if entry.transport == "yaml":
        from mcpcli.toolsfile import in_process_transport

        assert entry.path is not None
        if options.serve_file is not None:
            return options.serve_file(entry.path)
        return in_process_transport(entry.path)
    raise ConfigError(f"server {entry.name!r}: unknown transport {entry.transport!r}")


def _learn_secrets(entry: ServerEntry | None, options: ConnectOptions) -> None:
    """Tell `options.secrets` the values this connection hands the server as credentials
    (`entry`: resolved, or None for a session, whose entry the daemon resolves)."""
    secrets = options.secrets
    if secrets is None:
        return
    passed = [os.environ.get(key) if value is None else value for key, value in options.env.items()]
    secrets.add(*passed, *options.headers.values(), options.bearer_token)
    if entry is not None:
        from mcpcli.text import entry_secrets

        # Its env and header values, and what looks secret in its command line or URL.
        secrets.add(*entry.env.values(), *entry.headers.values(),
                    *(value for _, value in entry_secrets(entry.to_json())))


class _NoticedAuthenticator:
    """An authenticator whose `Authorization` values are remembered as secrets."""

    def __init__(self, inner: Authenticator, secrets: SecretValues) -> None:
        self._inner = inner
        self._secrets = secrets

    async def authorization(self) -> str | None:
        value = await self._inner.authorization()
        self._secrets.add(value)
        return value

    async def challenge(self, status: int, www_authenticate: list[str], url: str) -> bool:
        return await self._inner.challenge(status, www_authenticate, url)


def _entry_headers(entry: ServerEntry, options: ConnectOptions) -> dict[str, str]:
    headers = dict(entry.headers)
    lowered = {k.lower(): k for k in headers}
    for name, value in options.headers.items():
        existing = lowered.get(name.lower())
        if existing is not None:
            del headers[existing]
        headers[name] = value
        lowered[name.lower()] = name
    return headers


@dataclass
class OAuthProvider:
    """The transports' `AuthProvider` for one server: OAuth from `mcpcli.auth`, built lazily.

    The settings (flags, then the entry's `oauth` object, then env) are read only
    when the authenticator is first needed, as is everything in `mcpcli.auth`.
    """

    url: str
    entry: ServerEntry
    options: ConnectOptions

    def has_stored_sign_in(self) -> bool:
        from mcpcli.auth import has_stored_sign_in

        return has_stored_sign_in(self.url, self.options.profile)

    def authenticator(self) -> Authenticator:
        from mcpcli.auth.authenticator import OAuthAuthenticator
        from mcpcli.auth.settings import AuthSettings

        options = self.options
        flags = {"token_store": options.token_store, "profile": options.profile}
        settings = AuthSettings.build(self.entry, flags, insecure=options.insecure)
        authenticator = OAuthAuthenticator(self.url, settings, mode=options.auth)
        if options.secrets is None:
            return authenticator
        return _NoticedAuthenticator(authenticator, options.secrets)


def _headers_helper(entry: ServerEntry, secrets: SecretValues | None = None) -> HeadersHelper | None:
    if entry.headers_helper is None:
        return None
    from mcpcli.headers_helper import HeadersHelper

    return HeadersHelper(entry.headers_helper, name=entry.name, secrets=secrets)


def open_http_transport(entry: ServerEntry, options: ConnectOptions) -> Transport:
    """The transport for an `http`/`sse` server entry, honouring `--transport`.

    * `--transport http` (or config `"type": "http"` with `--transport auto`):
      Streamable HTTP, falling back to the legacy HTTP+SSE transport when the
      server answers our `initialize` POST with 400, 404 or 405 (auto only);
    * `--transport sse` (or config `"type": "sse"`): legacy HTTP+SSE (2024-11-05).
    """
    from mcpcli.transports.http import HttpConnection

    assert entry.url is not None
    mode = options.transport
    if mode == "auto":
        mode = "sse" if entry.transport == "sse" else "auto"
    connection = HttpConnection(
        entry.url,
        headers=_entry_headers(entry, options),
        bearer_token=options.bearer_token or None,
        insecure=options.insecure,
        connect_timeout=options.connect_timeout,
        auth=None if options.auth == "none" else OAuthProvider(entry.url, entry, options),
        header_source=_headers_helper(entry, options.secrets),
    )
    if mode == "sse":
        from mcpcli.transports.sse import SseTransport

        return SseTransport(connection)
    from mcpcli.transports.streamable_http import StreamableHttpTransport

    return StreamableHttpTransport(connection, sse_fallback=(mode == "auto"))


@asynccontextmanager
async def connect(
    entry: ServerEntry, options: ConnectOptions, client_options: ClientOptions
) -> AsyncIterator[Client]:
    """A connected, negotiated client for `entry`."""
    transport = open_transport(entry, options)
    async with Client(transport, client_options) as client:
        yield client
