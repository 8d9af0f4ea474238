"""The policy every request to a remote MCP server follows, shared by both HTTP transports.

`HttpConnection` is what the Streamable HTTP and the legacy HTTP+SSE transports
send requests through. It is handed everything it needs (by `mcpcli.connect`,
which picks the transport): the URL, the headers, a bearer token, TLS and
timeout settings, and an `AuthProvider` for OAuth. It owns:

* headers: the given headers (config `headers` and `--header`, already
  `${VAR}`-interpolated), and credentials: the bearer token, or the provider's
  `Authenticator`, built lazily: before the first request when a sign-in is
  stored, otherwise only after the first 401 (or 403 `insufficient_scope`);
* redirects, followed by hand (at most `MAX_REDIRECTS`, loops refused): a
  redirect to another origin never carries our credentials or custom headers,
  and https never redirects to http;
* errors: one line with the URL (without userinfo or query), the status and
  the first 200 bytes of the body, control characters shown as escapes.

Which credentials apply is decided here and only here: a bearer token or an
`Authorization` header given by the user is sent as is and never replaced (a
401 then is an error); no provider means no sign-in (`--no-auth`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urljoin, urlsplit, urlunsplit

from mcpcli.core.protocol import PROTOCOL_VERSION_KEY
from mcpcli.errors import AuthError, TransportError, UsageError
from mcpcli.text import one_line

if TYPE_CHECKING:
    from mcpcli.transports.http_io import HttpClient
    from mcpcli.transports.http_io import ResponseStream as HttpStream

__all__ = [
    "MAX_REDIRECTS",
    "AuthProvider",
    "Authenticator",
    "HeaderSource",
    "HttpConnection",
    "display_url",
    "origin_of",
    "same_origin",
    "snippet",
    "url_problem",
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


class Authenticator(Protocol):
    """Credentials for one server URL that may change (OAuth: refresh, sign-in, step-up)."""

    async def authorization(self) -> str | None:
        """The `Authorization` header value for the next request, or None."""
        ...

    async def challenge(self, status: int, www_authenticate: list[str], url: str) -> bool:
        """React to a 401/403 from `url`; True when a retry may now succeed, False to give up."""
        ...


class HeaderSource(Protocol):
    """Headers computed by someone else (a configured `headersHelper`), secret, and
    recomputed once when a 401 says they no longer do (`mcpcli.headers_helper`)."""

    async def headers(self) -> dict[str, str]:
        """The current headers (computed the first time)."""
        ...

    async def refresh(self) -> None:
        """Compute them again, after a 401."""
        ...


class AuthProvider(Protocol):
    """Builds the `Authenticator` when it is first needed, so servers that never say 401
    import and read nothing auth-related (`mcpcli.connect` supplies the OAuth one)."""

    def has_stored_sign_in(self) -> bool:
        """Is a sign-in stored for this server? (Then its token goes out with the first request.)"""
        ...

    def authenticator(self) -> Authenticator:
        """The authenticator; ImportError if the auth support cannot be loaded."""
        ...


def url_problem(url: str) -> str | None:
    """What makes `url` no server's URL (no http(s) scheme, no host, a bad port or IPv6
    literal), as an error line; None when it is one."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # "Invalid IPv6 URL"
        return f"not a valid URL: {str(exc)[:1].lower()}{str(exc)[1:]}"  # not the URL: it may hold secrets
    try:
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        port = parts.netloc.rsplit(":", 1)[-1]
        return f"invalid port {port!r} in URL {display_url(url)}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"not an http(s) URL: {display_url(url)}"
    return None


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
    """The origin (RFC 6454): (scheme, host, port), case-folded, default ports filled in.

    ValueError for a malformed port. For comparing origins; `mcpcli.auth.urls.base_url`
    is the other notion, the `scheme://netloc` prefix as written, for building URLs.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port
    if port is None:
        port = {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def same_origin(a: str, b: str) -> bool:
    """Do two URLs share an origin? (False when either is malformed.)"""
    try:
        return origin_of(a) == origin_of(b)
    except ValueError:
        return False


def snippet(body: bytes, limit: int = 200) -> str:
    """The first `limit` bytes of a body as one printable line."""
    return one_line(body[:limit].decode("utf-8", "replace"), squeeze=True)


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
        auth: AuthProvider | None = None,
        header_source: HeaderSource | None = None,
    ) -> None:
        """`auth` None: never sign in (`--no-auth`); a 401 or 403 is an error.
        `header_source`: a headersHelper; its headers go over the given ones, and an
        `Authorization` among them is a credential the user gave (never replaced by OAuth)."""
        problem = url_problem(url)
        if problem is not None:
            raise UsageError(problem)
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
        self._provider = auth
        self._header_source = header_source
        self._source_authorization = False
        self._auth: Authenticator | None = None
        self._store_checked = False
        self._client: HttpClient | None = None

    @property
    def client(self) -> HttpClient:
        if self._client is None:
            from mcpcli.transports.http_io import HttpClient

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
        if url == self.url:  # every request but a redirect's: no URL to parse
            return True
        try:
            return origin_of(url) == self.origin
        except ValueError:
            return False

    def _static_credentials(self) -> bool:
        """Credentials the user gave (a bearer token or an `Authorization` header): sent as
        they are, never replaced by a sign-in."""
        return bool(self.bearer_token) or self._explicit_authorization or self._source_authorization

    async def _source_headers(self) -> dict[str, str]:
        if self._header_source is None:
            return {}
        computed = await self._header_source.headers()
        given = {k: v for k, v in computed.items() if k.lower() not in PROTOCOL_HEADERS}
        self._source_authorization = any(k.lower() == "authorization" for k in given)
        return given

    async def _headers_for(self, url: str, extra: Mapping[str, str]) -> dict[str, str]:
        if self._header_source is None and not self.user_headers and not self.bearer_token \
                and self._auth is None and (self._provider is None or self._store_checked):
            return dict(extra)  # nothing of ours to add (a gateway's --no-auth upstream)
        headers: dict[str, str] = {}
        if self.same_origin(url):
            computed = await self._source_headers()
            lowered = {k.lower() for k in computed}
            headers.update({k: v for k, v in self.user_headers.items() if k.lower() not in lowered})
            headers.update(computed)
            if self.bearer_token and not (self._explicit_authorization or self._source_authorization):
                headers["Authorization"] = f"Bearer {self.bearer_token}"
            elif not self._static_credentials():
                provider = self._provider
                if self._auth is None and provider is not None and not self._store_checked:
                    # A stored sign-in is sent from the first request on (no 401 round trip).
                    self._store_checked = True
                    if provider.has_stored_sign_in():
                        self._auth = provider.authenticator()
                if self._auth is not None:
                    value = await self._auth.authorization()
                    if value:
                        headers["Authorization"] = value
        headers.update(extra)
        return headers

    # -- auth ---------------------------------------------------------------------

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
        if self._source_authorization:
            raise AuthError(what, hint="the server rejected headersHelper's headers, also from the run after the first 401")
        if self._static_credentials():
            raise AuthError(what, hint="the server rejected the token or Authorization header given")
        if self._provider is None:
            raise AuthError(what, hint="the server requires authorization; --no-auth was given")
        if self._auth is None:
            try:
                self._auth = self._provider.authenticator()
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
        helper_rerun = False
        while True:
            sent = await self._headers_for(target, headers or {})
            next_target: str | None = None
            async with self.client.open(
                method, target, headers=sent, content=body, timeout=timeout,
                display_url=self.shown if target == self.url else display_url(target),
            ) as response:
                status = response.status
                location = response.header("location")
                if status in REDIRECT_STATUSES and location:
                    next_target = self._redirect(target, location, visited)
                elif status == 401 and self._header_source is not None and not helper_rerun \
                        and self.same_origin(target):
                    helper_rerun = True  # once per 401: if its new headers get one too, it is final
                    await self._header_source.refresh()
                    next_target = target
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


def modern_version(params: Any) -> str | None:
    """The 2026-07-28 protocol version a request carries in `_meta`, if any."""
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    version = meta.get(PROTOCOL_VERSION_KEY)
    return version if isinstance(version, str) else None
