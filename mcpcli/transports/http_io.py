"""The only module that imports httpx (swap point for httpx2).

Everything HTTP in mcpcli goes through here: the MCP transports (Streamable HTTP,
legacy SSE) send through `HttpClient`, and OAuth does its plain requests
(metadata, token endpoint, registration) with `fetch`. Both get the same
policy: TLS verification on unless `insecure`, proxies from the environment,
no automatic redirects (callers follow them under their own rules, so
credentials never cross origins), and no CA bundle loaded for plain http://.

httpx is imported on first use only, and plain `http://` requests without a
proxy skip it altogether (`_http1`, a minimal HTTP/1.1 client): importing and
configuring httpx costs more than a whole one-shot call to a local server.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol

from mcpcli import __version__
from mcpcli.errors import TransportError, optional_import

if TYPE_CHECKING:
    import httpx

    from mcpcli.transports._http1 import PlainClient

__all__ = [
    "USER_AGENT",
    "HttpClient",
    "HttpResponse",
    "HttpStream",
    "ResponseStream",
    "fetch",
    "load_httpx",
    "make_client",
    "transport_error",
]

_PROXY_VARIABLES = ("http_proxy", "all_proxy")


def load_httpx() -> Any:
    """Import httpx, without its command-line module (it drags in rich and pygments)."""
    if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
        import types

        def main() -> None:  # what httpx's own CLI entry point would be
            raise SystemExit("the httpx command line is not available here")

        stub = types.ModuleType("httpx._main")
        stub.main = main  # type: ignore[attr-defined]
        sys.modules["httpx._main"] = stub
    import httpx

    return httpx


def _proxied(url: str) -> bool:
    """Whether a proxy variable could apply to a plain http:// URL (httpx then decides)."""
    return any(os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_VARIABLES)


def _socks_proxy() -> str | None:
    """The proxy variable (as httpx reads them: urllib's `getproxies`) that names a SOCKS
    proxy, if one does; httpx mounts every proxy it is given, whatever the URL."""
    from urllib.request import getproxies

    for scheme, proxy in getproxies().items():
        if scheme in ("http", "https", "all") and proxy.lower().startswith("socks"):
            return f"{scheme.upper()}_PROXY"
    return None


USER_AGENT = f"mcpcli/{__version__}"
#: Largest body `fetch` reads into memory (OAuth documents, error pages).
MAX_FETCH_BYTES = 1024 * 1024


def make_client(
    *,
    url: str,
    insecure: bool = False,
    timeout: float | None = 60.0,
    headers: Mapping[str, str] | None = None,
    connect_timeout: float | None = None,
) -> httpx.AsyncClient:
    """An AsyncClient with our defaults. TLS context only for https URLs (start-up speed).

    `timeout` bounds every read, write and pool wait (None: no bound, for
    long-lived streams whose deadline the JSON-RPC session keeps);
    `connect_timeout` bounds connecting (default: `timeout`, at most 30 s).
    """
    socks = _socks_proxy()
    if socks is not None:  # httpx needs socksio for one (and says so as an ImportError)
        optional_import("socksio", extra="socks", feature=f"the SOCKS proxy in {socks}")
    hx = load_httpx()
    verify: Any = not insecure
    if url.startswith("http://") and not insecure:
        # No certificate verification is needed for plain HTTP, and loading the CA
        # bundle costs tens of milliseconds on every one-shot call.
        verify = False
    base_headers = {"User-Agent": USER_AGENT}
    if headers:
        base_headers.update(headers)
    client: httpx.AsyncClient = hx.AsyncClient(
        verify=verify,
        trust_env=True,
        follow_redirects=False,
        timeout=hx.Timeout(
            timeout,
            connect=connect_timeout if connect_timeout is not None else min(timeout or 30.0, 30.0),
        ),
        headers=base_headers,
    )
    return client


def transport_error(exc: Exception, url: str) -> TransportError:
    """A one-line, typed error for an httpx failure."""
    httpx = load_httpx()
    if isinstance(exc, httpx.ConnectError):
        return TransportError(f"cannot connect to {url}: {_reason(exc)}")
    if isinstance(exc, httpx.TimeoutException):
        return TransportError(f"timed out talking to {url}")
    if isinstance(exc, httpx.RemoteProtocolError):
        return TransportError(f"{url}: the connection broke: {_reason(exc)}")
    if isinstance(exc, httpx.HTTPError):
        return TransportError(f"{url}: {type(exc).__name__}: {_reason(exc)}")
    return TransportError(f"{url}: {exc}")


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:200]


class HeaderLookup:
    """A mixin for response classes: header lookup by name (`headers` has lower-cased names)."""

    headers: dict[str, str]

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def content_type(self) -> str:
        """The media type, lower-cased, without parameters ("" when absent)."""
        return (self.header("content-type") or "").split(";", 1)[0].strip().lower()


class HttpResponse(HeaderLookup):
    """A whole response (what `fetch` returns)."""

    def __init__(
        self,
        status: int,
        headers: dict[str, str],
        body: bytes,
        url: str,
        header_list: list[tuple[str, str]] | None = None,
    ) -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.url = url
        #: Every header value of multi-valued headers (WWW-Authenticate), lower-cased names.
        self.header_list = header_list if header_list is not None else []

    def json(self) -> Any:
        """The body as JSON; ValueError if it is not (deep nesting included)."""
        import json

        try:
            return json.loads(self.body)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None


async def fetch(
    method: str,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    data: Mapping[str, str] | None = None,
    json_body: Any = None,
    insecure: bool = False,
    timeout: float = 30.0,
    max_bytes: int = MAX_FETCH_BYTES,
) -> HttpResponse:
    """One request with no redirects followed; the body is capped at `max_bytes`."""
    httpx = load_httpx()
    async with make_client(url=url, insecure=insecure, timeout=timeout) as client:
        try:
            async with client.stream(
                method, url, headers=dict(headers or {}), data=data, json=json_body
            ) as response:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > max_bytes:
                        raise TransportError(f"{url}: response larger than {max_bytes} bytes")
                return HttpResponse(
                    status=response.status_code,
                    headers={k.lower(): v for k, v in response.headers.items()},
                    body=bytes(body),
                    url=str(response.url),
                    header_list=[(k.lower(), v) for k, v in response.headers.multi_items()],
                )
        except httpx.HTTPError as exc:
            raise transport_error(exc, url) from None


class ResponseStream(Protocol):
    """A response whose body is read incrementally: `HttpStream` or `_http1.PlainStream`."""

    status: int
    url: str
    headers: dict[str, str]
    header_list: list[tuple[str, str]]

    def header(self, name: str) -> str | None: ...

    @property
    def content_type(self) -> str: ...

    def chunks(self) -> AsyncGenerator[bytes, None]: ...

    async def read(self, max_bytes: int) -> bytes: ...

    async def peek(self, max_bytes: int = 200) -> bytes: ...


class HttpStream(HeaderLookup):
    """A response whose body is read incrementally (what the MCP transports need)."""

    def __init__(self, response: httpx.Response, url: str) -> None:
        self._response = response
        self.status = response.status_code
        self.url = str(response.url)
        self.headers = {k.lower(): v for k, v in response.headers.items()}
        self.header_list = [(k.lower(), v) for k, v in response.headers.multi_items()]
        self._display_url = url


    async def chunks(self) -> AsyncGenerator[bytes, None]:
        """The body as it arrives; a broken connection raises `TransportError`."""
        httpx = load_httpx()
        try:
            async for chunk in self._response.aiter_raw():
                if chunk:
                    yield chunk
        except httpx.HTTPError as exc:
            raise transport_error(exc, self._display_url) from None

    async def read(self, max_bytes: int) -> bytes:
        """The whole body, or `MessageTooLarge` once it passes `max_bytes`."""
        from mcpcli.errors import MessageTooLarge

        body = bytearray()
        async for chunk in self.chunks():
            body += chunk
            if len(body) > max_bytes:
                raise MessageTooLarge(
                    f"{self._display_url}: the response is larger than {max_bytes} bytes"
                )
        return bytes(body)

    async def peek(self, max_bytes: int = 200) -> bytes:
        """Up to `max_bytes` of the body (for error messages); never raises."""
        httpx = load_httpx()
        body = bytearray()
        try:
            async for chunk in self._response.aiter_raw():
                body += chunk
                if len(body) >= max_bytes:
                    break
        except (httpx.HTTPError, UnicodeDecodeError):
            pass
        return bytes(body[:max_bytes])


class HttpClient:
    """One connection pool for an MCP server, with our policy (see `make_client`).

    Requests never follow redirects here (the transports follow them under
    their own rules) and reads have no timeout of their own: the JSON-RPC
    session owns request deadlines, and streams may legitimately idle.
    """

    def __init__(
        self,
        *,
        url: str,
        insecure: bool = False,
        connect_timeout: float = 30.0,
        headers: Mapping[str, str] | None = None,
        display_url: str | None = None,
    ) -> None:
        self._settings: dict[str, Any] = {
            "insecure": insecure,
            "timeout": None,
            "headers": headers,
            "connect_timeout": connect_timeout,
        }
        # Plain http:// and https:// get separate pools: the plain one never loads
        # the CA bundle, and so must never be used for TLS (a redirect to https).
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._plain: PlainClient | None = None
        #: No proxy variable applies to plain http:// (then `_http1` speaks it itself).
        self._direct: bool | None = None
        self._display_url = display_url or url

    def _plain_client(self) -> PlainClient:
        if self._plain is None:
            from mcpcli.transports._http1 import PlainClient

            headers = {"User-Agent": USER_AGENT, **(self._settings["headers"] or {})}
            self._plain = PlainClient(headers=headers, connect_timeout=self._settings["connect_timeout"])
        return self._plain

    def _client_for(self, url: str) -> httpx.AsyncClient:
        scheme = "http" if url.startswith("http://") else "https"
        client = self._clients.get(scheme)
        if client is None:
            client = make_client(url=f"{scheme}://", **self._settings)
            self._clients[scheme] = client
        return client

    def open(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        timeout: float | None = None,
        display_url: str | None = None,
    ) -> AbstractAsyncContextManager[ResponseStream]:
        """Send one request and yield the response with its body unread (`async with`)."""
        shown = display_url or self._display_url
        if self._direct is None:  # read once (httpx reads the variables once per client too)
            self._direct = not _proxied(url)
        if url.startswith("http://") and self._direct:
            # `_http1`'s own context manager, not one wrapped in another (a gateway opens
            # one per relayed call).
            return self._plain_client().open(
                method, url, headers=headers, content=content, timeout=timeout, display_url=shown
            )
        return self._open_httpx(method, url, headers, content, timeout, shown)

    @asynccontextmanager
    async def _open_httpx(
        self, method: str, url: str, headers: Mapping[str, str] | None, content: bytes | None,
        timeout: float | None, shown: str,
    ) -> AsyncIterator[ResponseStream]:
        httpx = load_httpx()
        extra: dict[str, Any] = {}
        if timeout is not None:
            extra["timeout"] = httpx.Timeout(timeout)
        try:
            async with self._client_for(url).stream(
                method, url, headers=dict(headers or {}), content=content, **extra
            ) as response:
                yield HttpStream(response, shown)
        except httpx.HTTPError as exc:
            raise transport_error(exc, shown) from None

    async def aclose(self) -> None:
        plain, self._plain = self._plain, None
        if plain is not None:
            await plain.aclose()
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
