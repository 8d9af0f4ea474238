"""OAuth metadata discovery: from a 401 (or nothing) to the authorization server's metadata.

* `parse_www_authenticate` reads RFC 9110 challenges (several per header, quoted
  strings, escapes) and returns the `Bearer` one's parameters.
* `discover` finds the protected-resource metadata (RFC 9728: the challenge's
  `resource_metadata`, then the path-based well-known URL, then the root one),
  checks its `resource` against the server URL, picks the authorization server,
  and fetches its metadata (RFC 8414 and OpenID Connect discovery, with path
  insertion, in the spec's order), checking `issuer`. With no protected-resource
  metadata at all it falls back to the 2025-03-26 rules: metadata at the server's
  origin, else `/authorize`, `/token`, `/register` there.

All requests go through `mcpcli.transports.http_io.fetch` (no redirects followed
automatically; GETs follow at most three, each hop re-checked).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

from mcpcli.auth.urls import (
    as_metadata_urls,
    base_url,
    check_endpoint_url,
    check_not_private,
    host_is_private,
    resource_matches,
    well_known_prm_urls,
)
from mcpcli.errors import AuthError
from mcpcli.text import verbatim

__all__ = [
    "AuthServer",
    "Challenge",
    "Discovery",
    "Fetcher",
    "ProtectedResource",
    "discover",
    "parse_www_authenticate",
    "token_wanted",
]

JSON = dict[str, Any]
#: OAuth documents are small; refuse anything bigger.
MAX_METADATA_BYTES = 256 * 1024


# -- WWW-Authenticate --------------------------------------------------------------


@dataclass
class Challenge:
    """One parsed auth challenge: the scheme and its parameters (names lower-cased)."""

    scheme: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def resource_metadata(self) -> str | None:
        return self.params.get("resource_metadata") or None

    @property
    def scope(self) -> str | None:
        value = self.params.get("scope")
        return value.strip() if value and value.strip() else None

    @property
    def error(self) -> str | None:
        return self.params.get("error") or None


def _parse_challenges(text: str) -> list[Challenge]:
    out: list[Challenge] = []
    i, n = 0, len(text)

    def skip(chars: str) -> None:
        nonlocal i
        while i < n and text[i] in chars:
            i += 1

    def token() -> str:
        nonlocal i
        start = i
        while i < n and text[i] not in ' \t\r\n,="':
            i += 1
        return text[start:i]

    current: Challenge | None = None
    while i < n:
        skip(" \t\r\n,")
        if i >= n:
            break
        name = token()
        if not name:
            i += 1
            continue
        j = i
        while j < n and text[j] in " \t\r\n":
            j += 1
        if j < n and text[j] == "=" and current is not None and not text[j:].startswith("=="):
            # an auth-param of the current challenge
            i = j + 1
            skip(" \t\r\n")
            if i < n and text[i] == '"':
                i += 1
                buf = []
                while i < n and text[i] != '"':
                    if text[i] == "\\" and i + 1 < n:
                        i += 1
                    buf.append(text[i])
                    i += 1
                i += 1  # closing quote
                value = "".join(buf)
            else:
                vstart = i
                while i < n and text[i] not in " \t\r\n,":
                    i += 1
                value = text[vstart:i]
            current.params.setdefault(name.lower(), value)
            continue
        if current is not None and j < n and text[j] == "=":
            # token68 (base64 with '=' padding) after the scheme: keep it whole
            i = j
            while i < n and text[i] == "=":
                i += 1
            continue
        current = Challenge(scheme=name)
        out.append(current)
    return out


def parse_www_authenticate(values: Sequence[str]) -> Challenge | None:
    """The Bearer challenge among all `WWW-Authenticate` values (None if there is none)."""
    for value in values:
        for challenge in _parse_challenges(value):
            if challenge.scheme.lower() == "bearer":
                return challenge
    return None


# -- fetching ------------------------------------------------------------------------


def _join(base: str, ref: str, what: str) -> str:
    """`ref` resolved against `base`; a URL urllib cannot parse ("https://[::1") is an AuthError."""
    try:
        return urljoin(base, ref)
    except ValueError:
        raise AuthError(f"{what} is a malformed URL: {verbatim(ref, limit=300)!r}") from None


@dataclass
class Fetcher:
    """GET/POST JSON documents under the URL policy for one MCP server.

    `server_url` decides the SSRF rule: discovery for a remote server may not
    reach loopback, private or link-local addresses (a server on such an
    address was chosen by the user, so its own network is fair game).
    """

    server_url: str
    insecure: bool = False
    timeout: float = 30.0
    allow_private: bool = field(default_factory=lambda: os.environ.get("MCP_OAUTH_ALLOW_PRIVATE") == "1")
    #: Every URL requested, in order (for `mcp auth login --verbose` and tests).
    log: list[str] = field(default_factory=list)
    #: The status of every GET answered, in order (did the server guard its metadata?).
    answers: list[int] = field(default_factory=list)

    def server_is_private(self) -> bool:
        host = urlsplit(self.server_url).hostname or ""
        return host_is_private(host)

    def check(self, url: object, what: str) -> str:
        """The URL's shape: https (http on loopback), no user-info or fragment."""
        return check_endpoint_url(url, what)

    async def guard(self, url: str, what: str) -> str:
        """`check`, plus the SSRF rule (resolving the host in a worker thread)."""
        checked = self.check(url, what)
        if not self.allow_private and not self.server_is_private():
            import anyio

            await anyio.to_thread.run_sync(check_not_private, checked, what)
        return checked

    async def get_json(self, url: str, what: str) -> tuple[int, JSON | None]:
        """(status, object) for a GET; the object is None unless a 200 with a JSON object."""
        from mcpcli.transports.http_io import fetch

        hops = 0
        while True:
            await self.guard(url, what)
            self.log.append(f"GET {url}")
            resp = await fetch(
                "GET",
                url,
                headers={"Accept": "application/json"},
                insecure=self.insecure,
                timeout=self.timeout,
                max_bytes=MAX_METADATA_BYTES,
            )
            self.answers.append(resp.status)
            if resp.status in (301, 302, 303, 307, 308) and hops < 3:
                location = resp.header("location")
                if not location:
                    return resp.status, None
                url = _join(url, location, f"{what}: the redirect")
                hops += 1
                continue
            if resp.status != 200:
                return resp.status, None
            try:
                doc = resp.json()
            except ValueError:
                raise AuthError(f"{what} at {verbatim(url, limit=300)} is not valid JSON") from None
            if not isinstance(doc, dict):
                raise AuthError(f"{what} at {verbatim(url, limit=300)} is not a JSON object")
            return 200, doc

    async def post_form(
        self, url: str, what: str, data: Mapping[str, str], headers: Mapping[str, str] | None = None
    ) -> tuple[int, JSON | None, str]:
        """(status, parsed body, raw text) for a form POST (token, revocation endpoints)."""
        from mcpcli.transports.http_io import fetch

        await self.guard(url, what)
        self.log.append(f"POST {url}")
        hdrs = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"}
        hdrs.update(headers or {})
        resp = await fetch(
            "POST", url, headers=hdrs, data=dict(data), insecure=self.insecure,
            timeout=self.timeout, max_bytes=MAX_METADATA_BYTES,
        )
        return resp.status, _parse_body(resp.body, resp.header("content-type")), _text(resp.body)

    async def post_json(self, url: str, what: str, body: JSON) -> tuple[int, JSON | None, str]:
        from mcpcli.transports.http_io import fetch

        await self.guard(url, what)
        self.log.append(f"POST {url}")
        resp = await fetch(
            "POST", url, headers={"Accept": "application/json"}, json_body=body,
            insecure=self.insecure, timeout=self.timeout, max_bytes=MAX_METADATA_BYTES,
        )
        return resp.status, _parse_body(resp.body, resp.header("content-type")), _text(resp.body)


def _text(body: bytes) -> str:
    return body[:2000].decode("utf-8", "replace")


def _parse_body(body: bytes, content_type: str | None) -> JSON | None:
    import json

    text = body.decode("utf-8", "replace").strip()
    if not text:
        return None
    if content_type and "x-www-form-urlencoded" in content_type:
        from urllib.parse import parse_qsl

        return dict(parse_qsl(text))
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." from a hostile server
        return None
    return doc if isinstance(doc, dict) else None


# -- the documents ---------------------------------------------------------------------


@dataclass
class ProtectedResource:
    """RFC 9728 metadata, or the implied one of a 2025-03-26 server (`legacy`)."""

    resource: str
    authorization_servers: list[str]
    scopes_supported: list[str] | None = None
    url: str | None = None
    legacy: bool = False


@dataclass
class AuthServer:
    """Authorization server metadata (RFC 8414 / OpenID), validated."""

    issuer: str | None
    authorization_endpoint: str | None
    token_endpoint: str
    registration_endpoint: str | None = None
    revocation_endpoint: str | None = None
    revocation_endpoint_auth_methods_supported: list[str] | None = None
    code_challenge_methods_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    scopes_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None
    iss_parameter_supported: bool = False
    client_id_metadata_document_supported: bool = False
    #: RFC 8628: where a sign-in on another device starts (`mcp auth login --device`).
    device_authorization_endpoint: str | None = None
    #: Where the document came from; None for the 2025-03-26 default endpoints.
    metadata_url: str | None = None

    @property
    def label(self) -> str:
        return self.issuer or base_url(self.token_endpoint)

    def to_json(self) -> JSON:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> AuthServer:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in doc.items() if k in known})


@dataclass
class Discovery:
    """Everything discovery found for one server."""

    resource: ProtectedResource
    server: AuthServer
    challenge: Challenge | None = None

    @property
    def resource_param(self) -> str:
        """The RFC 8707 `resource` value: exactly what the metadata published."""
        return self.resource.resource


def _str_list(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


async def fetch_protected_resource(
    fetcher: Fetcher, server_url: str, challenge: Challenge | None
) -> ProtectedResource | None:
    """RFC 9728 metadata by the spec's order, validated; None if the server publishes none."""
    candidates: list[str] = []
    if challenge is not None and challenge.resource_metadata:
        candidates.append(_join(server_url, challenge.resource_metadata, "resource_metadata in WWW-Authenticate"))
    candidates += [u for u in well_known_prm_urls(server_url) if u not in candidates]
    for url in candidates:
        _status, doc = await fetcher.get_json(url, "protected resource metadata")
        if doc is None:
            continue
        resource = doc.get("resource")
        servers = _str_list(doc.get("authorization_servers"))
        if not isinstance(resource, str) or not resource:
            raise AuthError(f"protected resource metadata at {verbatim(url, limit=300)} has no 'resource'")
        if not resource_matches(resource, server_url):
            raise AuthError(
                f"protected resource metadata names resource {verbatim(resource, limit=300)!r}, "
                f"which is not the server {verbatim(server_url, limit=300)!r}; refusing to sign in",
                hint="a token for another resource must not be requested for this server",
            )
        if not servers:
            raise AuthError(
                f"protected resource metadata at {verbatim(url, limit=300)} lists no authorization_servers"
            )
        return ProtectedResource(
            resource=resource,
            authorization_servers=servers,
            scopes_supported=_str_list(doc.get("scopes_supported")),
            url=url,
        )
    return None


def _auth_server_from(doc: JSON, url: str, fetcher: Fetcher) -> AuthServer:
    token = fetcher.check(doc.get("token_endpoint"), "token_endpoint")
    authz = doc.get("authorization_endpoint")
    if authz is not None:
        authz = fetcher.check(authz, "authorization_endpoint")
    reg = doc.get("registration_endpoint")
    if reg is not None:
        reg = fetcher.check(reg, "registration_endpoint")
    rev = doc.get("revocation_endpoint")
    if rev is not None:
        try:
            rev = fetcher.check(rev, "revocation_endpoint")
        except AuthError:
            rev = None  # only used best-effort at logout
    device = doc.get("device_authorization_endpoint")
    if device is not None:
        try:
            device = fetcher.check(device, "device_authorization_endpoint")
        except AuthError:
            device = None  # unusable: a device sign-in then says the server offers none
    return AuthServer(
        issuer=doc.get("issuer") if isinstance(doc.get("issuer"), str) else None,
        authorization_endpoint=authz,
        token_endpoint=token,
        registration_endpoint=reg,
        revocation_endpoint=rev,
        revocation_endpoint_auth_methods_supported=_str_list(doc.get("revocation_endpoint_auth_methods_supported")),
        code_challenge_methods_supported=_str_list(doc.get("code_challenge_methods_supported")),
        token_endpoint_auth_methods_supported=_str_list(doc.get("token_endpoint_auth_methods_supported")),
        scopes_supported=_str_list(doc.get("scopes_supported")),
        grant_types_supported=_str_list(doc.get("grant_types_supported")),
        iss_parameter_supported=doc.get("authorization_response_iss_parameter_supported") is True,
        client_id_metadata_document_supported=doc.get("client_id_metadata_document_supported") is True,
        device_authorization_endpoint=device,
        metadata_url=url,
    )


async def fetch_auth_server(fetcher: Fetcher, issuer: str, *, legacy: bool = False) -> AuthServer | None:
    """The metadata of `issuer`, tried at each well-known URL in order; `issuer` must match exactly.

    `legacy` (2025-03-26, no protected-resource metadata): the MCP server's own
    origin serves the metadata, and an issuer with a path on that same origin is
    accepted (that revision had the server be its own authorization server).
    """
    fetcher.check(issuer, "authorization server")
    mismatch: str | None = None
    for url in as_metadata_urls(issuer):
        _status, doc = await fetcher.get_json(url, "authorization server metadata")
        if doc is None:
            continue
        found = doc.get("issuer")
        if legacy and isinstance(found, str) and found.startswith(issuer + "/"):
            return _auth_server_from(doc, url, fetcher)
        if found != issuer:
            # RFC 8414 §3.3: a document whose issuer differs MUST NOT be used.
            mismatch = f"{found!r}" if isinstance(found, str) else "(missing)"
            continue
        return _auth_server_from(doc, url, fetcher)
    if mismatch is not None:
        raise AuthError(
            f"authorization server metadata for {verbatim(issuer, limit=300)!r} declares issuer "
            f"{verbatim(mismatch, limit=300)}; refusing to use it",
            hint="the metadata issuer must be identical to the authorization server URL",
        )
    return None


async def discover(
    fetcher: Fetcher,
    server_url: str,
    challenge: Challenge | None,
    *,
    prefer_issuer: str | None = None,
    legacy_fallback: bool = True,
) -> Discovery:
    """Protected resource → authorization server → its metadata (all revisions).

    A server that publishes no metadata anywhere and answers even its discovery URLs
    with 401 or 403 has nothing to sign in to: it wants a token (`token_wanted`).
    One that answers them 404 may be a 2025-03-26 server with the default endpoints,
    which the registration there confirms (`mcpcli.auth.tokens.register_client`).
    """
    asked = len(fetcher.answers)
    prm = await fetch_protected_resource(fetcher, server_url, challenge)
    if prm is not None:
        issuer = prm.authorization_servers[0]
        if prefer_issuer and prefer_issuer in prm.authorization_servers:
            issuer = prefer_issuer
        server = await fetch_auth_server(fetcher, issuer)
        if server is None:
            raise AuthError(
                f"authorization server {verbatim(issuer, limit=300)!r} publishes no metadata "
                "(tried RFC 8414 and OpenID Connect discovery)"
            )
        return Discovery(resource=prm, server=server, challenge=challenge)
    if not legacy_fallback:
        raise AuthError(
            f"{verbatim(server_url, limit=300)} publishes no OAuth protected resource metadata",
            hint="the server may not need sign-in",
        )
    # 2025-03-26: the MCP server's origin is the authorization server.
    origin = base_url(server_url)
    from mcpcli.auth.urls import canonical_resource

    legacy_prm = ProtectedResource(
        resource=canonical_resource(server_url), authorization_servers=[origin], legacy=True
    )
    server = await fetch_auth_server(fetcher, origin, legacy=True)
    if server is None:
        if any(status in (401, 403) for status in fetcher.answers[asked:]):
            raise token_wanted(server_url)
        server = AuthServer(
            issuer=None,
            authorization_endpoint=fetcher.check(f"{origin}/authorize", "authorization_endpoint"),
            token_endpoint=fetcher.check(f"{origin}/token", "token_endpoint"),
            registration_endpoint=f"{origin}/register",
        )
    return Discovery(resource=legacy_prm, server=server, challenge=challenge)


def token_wanted(server_url: str) -> AuthError:
    """The error for a 401 from a server that publishes no way to sign in: it wants a
    token given up front (a static bearer token, an API key in a header)."""
    return AuthError(
        f"{verbatim(server_url, limit=300)} wants a bearer token: it answered HTTP 401 and "
        "publishes no OAuth metadata to sign in with",
        hint="give the token in MCP_BEARER_TOKEN, or with -H 'Authorization: Bearer TOKEN', or as "
        '"headers": {"Authorization": "Bearer ${VAR}"} in its config entry '
        "(`mcp serve --http` prints its token on its stderr)",
    )


def require_pkce(server: AuthServer) -> None:
    """Refuse an authorization server that does not advertise S256 (spec: MUST refuse)."""
    if server.metadata_url is None:
        return  # 2025-03-26 default endpoints: nothing to check; S256 is used regardless
    methods = server.code_challenge_methods_supported
    if not methods or "S256" not in methods:
        shown = ", ".join(methods) if methods else "none advertised"
        raise AuthError(
            f"authorization server {verbatim(server.label, limit=300)!r} does not support PKCE S256 "
            f"(code_challenge_methods_supported: {shown}); refusing to sign in"
        )
