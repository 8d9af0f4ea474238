"""The only module that imports httpx (swap point for httpx2).

Everything HTTP in mcpcli goes through here: the MCP transports (Streamable HTTP,
legacy SSE) build clients with `make_client`, and OAuth does its plain requests
(metadata, token endpoint, registration) with `fetch`. Both get the same
policy: TLS verification on unless `insecure`, proxies from the environment,
no automatic redirects (callers follow them under their own rules, so
credentials never cross origins), and no CA bundle loaded for plain http://.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from mcpcli import __version__
from mcpcli.errors import TransportError

__all__ = ["HttpResponse", "USER_AGENT", "fetch", "httpx", "make_client", "transport_error"]

USER_AGENT = f"mcpcli/{__version__}"
#: Largest body `fetch` reads into memory (OAuth documents, error pages).
MAX_FETCH_BYTES = 1024 * 1024


def make_client(
    *,
    url: str,
    insecure: bool = False,
    timeout: float | None = 60.0,
    headers: Mapping[str, str] | None = None,
) -> httpx.AsyncClient:
    """An AsyncClient with our defaults. TLS context only for https URLs (start-up speed)."""
    verify: Any = False if insecure else True
    if url.startswith("http://") and not insecure:
        # No certificate verification is needed for plain HTTP, and loading the CA
        # bundle costs tens of milliseconds on every one-shot call.
        verify = False
    base_headers = {"User-Agent": USER_AGENT}
    if headers:
        base_headers.update(headers)
    return httpx.AsyncClient(
        verify=verify,
        trust_env=True,
        follow_redirects=False,
        timeout=httpx.Timeout(timeout, connect=min(timeout or 30.0, 30.0)),
        headers=base_headers,
    )


def transport_error(exc: Exception, url: str) -> TransportError:
    """A one-line, typed error for an httpx failure."""
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


@dataclass
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes
    url: str
    #: Every header value of multi-valued headers (WWW-Authenticate), lower-cased names.
    header_list: list[tuple[str, str]] = field(default_factory=list)

    def json(self) -> Any:
        import json

        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


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
