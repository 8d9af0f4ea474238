"""Remote servers over HTTP: choosing the transport, and the policy every request follows.

`open_http_transport(entry, options)` picks the transport for a URL:

* `--transport http` (or config `"type": "http"` with `--transport auto`):
  Streamable HTTP, falling back to the legacy HTTP+SSE transport when the
  server answers our `initialize` POST with 400, 404 or 405 (auto only);
* `--transport sse` (or config `"type": "sse"`): legacy HTTP+SSE (2024-11-05).

`HttpConnection` is what both transports send requests through. It owns:

* headers: config `headers` and `--header` (already `${VAR}`-interpolated by
  the config), the `User-Agent`, and credentials: `--bearer-token` /
  `MCP_BEARER_TOKEN`, or the OAuth authenticator from `mcpcli.auth`, asked
  lazily after the first 401 (or 403 `insufficient_scope`);
* redirects, followed by hand (at most `MAX_REDIRECTS`, loops refused): a
  redirect to another origin never carries our credentials or custom headers,
  and https never redirects to http;
* errors: one line with the URL (without userinfo or query), the status and
  the first 200 bytes of the body, control characters removed.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from mcpcli.errors import AuthError, TransportError, UsageError
from mcpcli.text import printable

if TYPE_CHECKING:
    from mcpcli.auth import Authenticator
    from mcpcli.config import ServerEntry
    from mcpcli.connect import ConnectOptions
    from mcpcli.transports import Transport
    from mcpcli.transports._http import HttpClient
    from mcpcli.transports._http import ResponseStream as HttpStream

__all__ = [
    "MAX_REDIRECTS",
    "HttpConnection",
    "display_url",
    "open_http_transport",
    "origin_of",
    "snippet",
]

MAX_REDIRECTS = 5
#: How many times one request may go back to the authenticator (401/403 loops).
MAX_AUTH_ROUNDS = 3
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
#: Headers we set ourselves; user headers with these names are ignored.
PROTOCOL_HEADERS = frozenset(
    {
        "accept", "content-type", "content-length", "host", "mcp-session-id",
        "mcp-protocol-version", "mcp-method", "mcp-name", "last-event-id",
    }
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def display_url(url: str) -> str:
    """The URL as we show it: no userinfo, query or fragment (they may hold secrets)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def origin_of(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with default ports filled in."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port
    if port is None:
        port = {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def snippet(body: bytes, limit: int = 200) -> str:
    """The first `limit` bytes of a body as one printable line."""
    text = body[:limit].decode("utf-8", "replace")
    text = _CONTROL.sub(" ", text).strip()
    return printable(re.sub(r"\s{2,}", " ", text), keep_newlines=False)


def status_text(status: int) -> str:
    import http

    try:
        return f"HTTP {status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


class HttpConnection:
    """Requests to one MCP server URL with our header, auth and redirect policy."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        bearer_token: str | None = None,
        insecure: bool = False,
        connect_timeout: float = 30.0,
        auth_mode: str = "interactive",
        entry: ServerEntry | None = None,
        options: ConnectOptions | None = None,
    ) -> None:
        parts = urlsplit(url)
        try:
            parts.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError:
            port = parts.netloc.rsplit(":", 1)[-1]
            raise UsageError(f"invalid port {port!r} in URL {display_url(url)}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"not an http(s) URL: {display_url(url)}")
        self.url = url
        self.shown = display_url(url)
        self.origin = origin_of(url)
        self.user_headers = {
            k: v for k, v in (headers or {}).items() if k.lower() not in PROTOCOL_HEADERS
        }
        self._explicit_authorization = any(k.lower() == "authorization" for k in self.user_headers)
        self.bearer_token = bearer_token
        self.insecure = insecure
        self.connect_timeout = connect_timeout
        self.auth_mode = auth_mode
        self._entry = entry
        self._options = options
        self._auth: Authenticator | None = None
        self._store_checked = False
        self._client: HttpClient | None = None

    @property
    def client(self) -> HttpClient:
        if self._client is None:
            from mcpcli.transports._http import HttpClient

            self._client = HttpClient(
                url=self.url,
                insecure=self.insecure,
                connect_timeout=self.connect_timeout,
                display_url=self.shown,
            )
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    # -- headers ------------------------------------------------------------------

    def same_origin(self, url: str) -> bool:
        try:
            return origin_of(url) == self.origin
        except ValueError:
            return False

    async def _headers_for(self, url: str, extra: Mapping[str, str]) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.same_origin(url):
            headers.update(self.user_headers)
            if not self._explicit_authorization:
                if self.bearer_token:
                    headers["Authorization"] = f"Bearer {self.bearer_token}"
                elif self._auth is None and self.auth_mode != "none" and not self._store_checked:
                    # A stored sign-in is sent from the first request on (no 401 round trip).
                    self._store_checked = True
                    from mcpcli.auth import has_stored_sign_in

                    if has_stored_sign_in(self.url):
                        self._auth = self._authenticator()
                if not self.bearer_token and self._auth is not None:
                    value = await self._auth.authorization()
                    if value:
                        headers["Authorization"] = value
        headers.update(extra)
        return headers

    # -- auth ---------------------------------------------------------------------

    def _static_credentials(self) -> bool:
        return bool(self.bearer_token) or self._explicit_authorization

    def _authenticator(self) -> Authenticator:
        from mcpcli.auth import authenticator_for
        from mcpcli.config import ServerEntry
        from mcpcli.connect import ConnectOptions

        entry = self._entry or ServerEntry(name=self.url, url=self.url, transport="http")
        return authenticator_for(self.url, entry, self._options or ConnectOptions())

    async def _challenge(self, response: HttpStream, url: str) -> None:
        """A 401/403: let the authenticator react, or raise `AuthError`."""
        status = response.status
        body = snippet(await response.peek())
        challenges = [v for k, v in response.header_list if k == "www-authenticate"]
        what = f"{display_url(url)}: {status_text(status)}"
        if body:
            what += f": {body}"
        scope_problem = any("insufficient_scope" in c for c in challenges)
        if status == 403 and not scope_problem:
            raise AuthError(what, hint="the server refused access with these credentials")
        if self._static_credentials():
            raise AuthError(what, hint="the server rejected the token or Authorization header given")
        if self.auth_mode == "none":
            raise AuthError(what, hint="the server requires authorization; --no-auth was given")
        if self._auth is None:
            try:
                self._auth = self._authenticator()
            except ImportError:
                raise AuthError(
                    what,
                    hint="the server requires authorization: pass a token with --bearer-token "
                    "or the MCP_BEARER_TOKEN variable",
                ) from None
        if not await self._auth.challenge(status, challenges, url):
            raise AuthError(what, hint="sign in with `mcp auth login` or pass --bearer-token")

    # -- sending ------------------------------------------------------------------

    @asynccontextmanager
    async def send(
        self,
        method: str,
        *,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[HttpStream]:
        """Send a request, following redirects and auth challenges; yield the final response.

        The response may have any status except a redirect; 401 and 403 only
        come back when the authenticator is done with them (never: it raises).
        """
        target = url or self.url
        visited = {target}
        auth_rounds = 0
        while True:
            sent = await self._headers_for(target, headers or {})
            next_target: str | None = None
            async with self.client.open(
                method, target, headers=sent, content=body, timeout=timeout,
                display_url=display_url(target),
            ) as response:
                status = response.status
                location = response.header("location")
                if status in REDIRECT_STATUSES and location:
                    next_target = self._redirect(target, location, visited)
                elif status in (401, 403) and self.same_origin(target):
                    auth_rounds += 1
                    if auth_rounds > MAX_AUTH_ROUNDS:
                        raise AuthError(
                            f"{display_url(target)}: {status_text(status)} after "
                            f"{MAX_AUTH_ROUNDS} sign-in attempts",
                            hint="the credentials do not grant access to this server",
                        )
                    await self._challenge(response, target)
                    next_target = target
                else:
                    yield response
                    return
            target = next_target

    def _redirect(self, current: str, location: str, visited: set[str]) -> str:
        target = urljoin(current, location)
        shown = display_url(current)
        if urlsplit(target).scheme not in ("http", "https"):
            raise TransportError(f"{shown}: redirect to an unsupported URL: {display_url(target)}")
        if current.startswith("https://") and target.startswith("http://"):
            raise TransportError(
                f"{shown}: refusing a redirect from https to plain http ({display_url(target)})"
            )
        if target in visited:
            raise TransportError(f"{shown}: redirect loop (back to {display_url(target)})")
        if len(visited) > MAX_REDIRECTS:
            raise TransportError(f"{self.shown}: too many redirects (more than {MAX_REDIRECTS})")
        visited.add(target)
        return target

    def http_error(self, response: HttpStream, body: bytes, *, context: str = "") -> TransportError:
        """A one-line error for an unexpected status."""
        message = f"{display_url(response.url)}: {status_text(response.status)}"
        if context:
            message += f" {context}"
        text = snippet(body)
        if text:
            message += f": {text}"
        return TransportError(message, status=response.status)


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


def open_http_transport(entry: ServerEntry, options: ConnectOptions) -> Transport:
    """The transport for an `http`/`sse` server entry, honouring `--transport`."""
    assert entry.url is not None
    mode = options.transport
    if mode == "auto":
        mode = "sse" if entry.transport == "sse" else "auto"
    connect_timeout = float(options.extra.get("connect_timeout", 30.0))
    connection = HttpConnection(
        entry.url,
        headers=_entry_headers(entry, options),
        bearer_token=options.bearer_token or None,
        insecure=options.insecure,
        connect_timeout=connect_timeout,
        auth_mode=options.auth,
        entry=entry,
        options=options,
    )
    max_bytes = options.max_message_bytes or MAX_MESSAGE_BYTES
    if mode == "sse":
        from mcpcli.transports.sse import SseTransport

        return SseTransport(connection, max_message_bytes=max_bytes)
    from mcpcli.transports.streamable_http import StreamableHttpTransport

    return StreamableHttpTransport(
        connection, sse_fallback=(mode == "auto"), max_message_bytes=max_bytes
    )


#: Largest message (JSON body or SSE event) we accept from a server.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


def modern_version(params: Any) -> str | None:
    """The 2026-07-28 protocol version a request carries in `_meta`, if any."""
    from mcpcli.protocol import PROTOCOL_VERSION_KEY

    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    version = meta.get(PROTOCOL_VERSION_KEY)
    return version if isinstance(version, str) else None
