"""URL rules for OAuth: what may be opened in a browser, fetched, or sent a secret.

Everything here is pure (no I/O) except `check_not_private`, which resolves a
host name. Server-supplied URLs are hostile until checked:

* `check_browser_url` guards the browser launcher (CVE-2025-6514 class):
  https, or http on a loopback host; no leading `-`, no whitespace or control
  characters (raw or percent-encoded), no user-info, nothing a launcher could
  read as an option.
* `check_endpoint_url` guards metadata, registration, token and revocation
  URLs: the same scheme rule, no user-info or fragment.
* `well_known_prm_urls` / `as_metadata_urls` build the discovery URLs in the
  order the spec gives (RFC 9728 path-based then root; RFC 8414 and OpenID
  Connect discovery with path insertion).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit, urlunsplit

from mcpcli.errors import AuthError
from mcpcli.text import verbatim
from mcpcli.transports.http import same_origin

__all__ = [
    "as_metadata_urls",
    "base_url",
    "browser_url_problem",
    "check_browser_url",
    "check_endpoint_url",
    "check_not_private",
    "is_loopback_host",
    "resource_matches",
    "well_known_prm_urls",
]

_CONTROL = re.compile(r"[\x00-\x20\x7f-\x9f]")
#: Percent-encoded control characters (%00-%1f, %7f).
_PCT_CONTROL = re.compile(r"%(?:[01][0-9a-fA-F]|7[fF])")


def is_loopback_host(host: str | None) -> bool:
    """127.0.0.0/8, ::1 (also IPv4-mapped) or the name `localhost` (RFC 8252 §7.3, RFC 6761)."""
    if not host:
        return False
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped.is_loopback
    return addr.is_loopback


def _split(url: str, what: str) -> tuple[str, str, str, str, str, str | None, int | None]:
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError as exc:
        raise AuthError(f"{what}: malformed URL {verbatim(url, limit=300)!r}: {exc}") from None
    return parts.scheme.lower(), parts.netloc, parts.path, parts.query, parts.fragment, host, port


def check_browser_url(url: str) -> str:
    """Return `url` if it is safe to hand to a browser launcher, else raise AuthError (exit 3)."""
    shown = verbatim(url, limit=300)
    reason = browser_url_problem(url)
    if reason:
        raise AuthError(
            f"refusing to open unsafe authorization URL {shown!r}: {reason}",
            hint="the server's OAuth metadata is broken or hostile; nothing was opened",
        )
    return url


def browser_url_problem(url: str) -> str | None:
    """Why `url` must not be handed to a browser launcher (an option-like or malformed URL,
    one a launcher could misread, plain http beyond loopback, user info), or None."""
    if not url:
        return "empty URL"
    if url[0] == "-" or url.lstrip()[:1] == "-":
        return "it starts with '-' (a browser would read it as an option)"
    if _CONTROL.search(url):
        return "it contains whitespace or control characters"
    if _PCT_CONTROL.search(url):
        return "it contains percent-encoded control characters"
    if "%action" in url.lower():
        return "it contains '%action', which some browser launchers substitute"
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return "it is not a valid URL"
    if "[" in parts.netloc.rpartition("@")[2] and not _valid_bracketed_host(host):
        # Python 3.11+ rejects this in urlsplit; 3.10 does not, so check it ourselves.
        return "it is not a valid URL (a bracketed host must be an IPv6 address)"
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http"):
        return f"scheme {scheme or '(none)'!r} is not allowed (only https, or http on loopback)"
    if not host:
        return "it has no host"
    if "@" in parts.netloc:
        return "it contains user information before the host"
    if scheme == "http" and not is_loopback_host(host):
        return "plain http is only allowed for a loopback host"
    if any(c in url for c in "\"'`<>\\^{}|"):
        return "it contains characters a shell or launcher could interpret"
    return None


def _valid_bracketed_host(host: str | None) -> bool:
    import ipaddress

    try:
        return isinstance(ipaddress.ip_address((host or "").split("%", 1)[0]), ipaddress.IPv6Address)
    except ValueError:
        return False


def check_endpoint_url(url: object, what: str, *, insecure_ok: bool = False) -> str:
    """An OAuth endpoint or metadata URL: https (http only on loopback), no user-info or fragment."""
    if not isinstance(url, str) or not url:
        raise AuthError(f"{what} is missing or not a string")
    if _CONTROL.search(url):
        raise AuthError(f"{what} {verbatim(url, limit=300)!r} contains whitespace or control characters")
    scheme, netloc, _path, _query, fragment, host, _port = _split(url, what)
    if scheme not in ("https", "http"):
        raise AuthError(f"{what} {verbatim(url, limit=300)!r} must be an https URL")
    if not host:
        raise AuthError(f"{what} {verbatim(url, limit=300)!r} has no host")
    if "@" in netloc:
        raise AuthError(f"{what} {verbatim(url, limit=300)!r} must not contain user information")
    if fragment:
        raise AuthError(f"{what} {verbatim(url, limit=300)!r} must not contain a fragment")
    if scheme == "http" and not is_loopback_host(host) and not insecure_ok:
        raise AuthError(
            f"{what} {verbatim(url, limit=300)!r} must use https (plain http is allowed on loopback only)",
            hint="authorization server endpoints MUST be served over https",
        )
    return url


#: NAT64 (RFC 6052 well-known prefix): the last 32 bits are an IPv4 address.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _embedded_ipv4(addr: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form reaches (mapped, NAT64, 6to4, Teredo server), if any."""
    if addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    if addr in _NAT64:
        return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    if addr.sixtofour is not None:
        return addr.sixtofour
    if addr.teredo is not None:
        return addr.teredo[0]
    return None


def _is_private(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Anything but a globally routable unicast address.

    The standard library's `is_global` follows the IANA special-purpose
    registries, so it covers what a hand list misses: 100.64.0.0/10 (CGNAT,
    where cloud metadata services such as 100.100.100.200 live), 0.0.0.0/8,
    240.0.0.0/4, 198.18.0.0/15, fc00::/7, fe80::/10 and the rest. Multicast
    counts as global there, so it is refused separately; IPv6 forms that
    embed an IPv4 address are judged by that address.
    """
    if isinstance(addr, ipaddress.IPv6Address):
        inner = _embedded_ipv4(addr)
        if inner is not None:
            return _is_private(inner)
    return not addr.is_global or addr.is_multicast


def host_is_private(host: str) -> bool:
    """True for a loopback/private/link-local IP literal or `localhost` (no DNS)."""
    if is_loopback_host(host):
        return True
    try:
        return _is_private(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return False


def check_not_private(url: str, what: str) -> None:
    """SSRF guard for discovery of a *remote* server: refuse URLs that reach private networks.

    Resolves the host (getaddrinfo accepts the odd spellings, `2130706433`,
    `0x7f.1`, so they are caught too). DNS can change between this check and
    the request; that window is accepted.
    """
    host = urlsplit(url).hostname or ""
    if host_is_private(host):
        private = True
    else:
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            return  # the request itself will report the failure
        private = False
        for info in infos:
            try:
                if _is_private(ipaddress.ip_address(str(info[4][0]).split("%")[0])):
                    private = True
            except ValueError:
                continue
    if private:
        raise AuthError(
            f"{what} {verbatim(url, limit=300)!r}: blocked private-network URL for a remote server",
            hint="set MCP_OAUTH_ALLOW_PRIVATE=1 if this authorization server really is on your network",
        )


def base_url(url: str) -> str:
    """`scheme://netloc` exactly as written (no case folding, no default-port elision).

    For building URLs at the root of a server (`/authorize`, the well-known
    documents) and for labels; to compare origins use
    `mcpcli.transports.http.same_origin`.
    """
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def well_known_prm_urls(server_url: str) -> list[str]:
    """RFC 9728 §3.1 locations, path-based first, then the root (spec 2025-11-25 order)."""
    root = f"{base_url(server_url)}/.well-known/oauth-protected-resource"
    path = urlsplit(server_url).path.rstrip("/")
    if path:
        return [f"{root}{path}", root]
    return [root]


def as_metadata_urls(issuer: str) -> list[str]:
    """RFC 8414 §3.1 + OpenID Connect discovery URLs, in the spec's priority order."""
    base = base_url(issuer)
    path = urlsplit(issuer).path.rstrip("/")
    if path:
        return [
            f"{base}/.well-known/oauth-authorization-server{path}",
            f"{base}/.well-known/openid-configuration{path}",
            f"{base}{path}/.well-known/openid-configuration",
        ]
    return [
        f"{base}/.well-known/oauth-authorization-server",
        f"{base}/.well-known/openid-configuration",
    ]


def resource_matches(resource: str, server_url: str) -> bool:
    """Does the PRM `resource` identify (a prefix of) the MCP server URL? (RFC 9728 §3.3, §7.3)

    Scheme and host compare case-insensitively (canonical URIs are lower-case but
    clients should accept either); the port must match, with the scheme's default
    filled in; the resource path must equal the server path or be a parent of it at
    a segment boundary. A resource on another origin never matches.
    """
    if not same_origin(resource, server_url):
        return False
    r = urlsplit(resource)
    s = urlsplit(server_url)
    if r.fragment:
        return False
    r_path = r.path.rstrip("/")
    s_path = s.path.rstrip("/")
    if not r_path:
        return True
    return s_path == r_path or s_path.startswith(r_path + "/")


def canonical_resource(server_url: str) -> str:
    """The canonical URI of an MCP server (RFC 8707 §2): lower-case scheme and host, no fragment."""
    parts = urlsplit(server_url)
    netloc = parts.netloc
    host = parts.hostname or ""
    if host and host in netloc.lower():
        i = netloc.lower().rfind(host)
        netloc = netloc[:i] + host + netloc[i + len(host):]
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, parts.query, ""))
