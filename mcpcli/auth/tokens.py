"""Clients and the token endpoint: registration, code exchange, refresh, client credentials, revocation.

Client authentication at the token endpoint: `client_secret_basic` (HTTP
Basic, RFC 6749 §2.3.1 form-encoding), `client_secret_post` (body),
`private_key_jwt` (RFC 7523 assertion) or `none` (public client: `client_id`
only). Error texts from the server are shown, but scrubbed of every secret we
know, and never with the request that carried them.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from mcpcli.auth.metadata import AuthServer, Fetcher, token_wanted
from mcpcli.errors import AuthError
from mcpcli.text import verbatim

__all__ = [
    "ClientInfo",
    "DeviceCode",
    "OAuthError",
    "TokenResponse",
    "choose_auth_method",
    "device_authorization",
    "register_client",
    "request_token",
    "revoke_token",
    "scrub",
]

JSON = dict[str, Any]
CLIENT_NAME = "mcpcli"
CLIENT_URI = "https://github.com/mcpcli/mcpcli"


class OAuthError(AuthError):
    """The authorization server answered with an OAuth error (`invalid_grant`, ...)."""

    kind = "oauth"

    def __init__(self, message: str, *, error: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.error = error


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with every known secret replaced, escaped to one line, bounded."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "<redacted>")
    return verbatim(text, limit=300)


@dataclass
class ClientInfo:
    """Our OAuth client at one authorization server."""

    client_id: str
    client_secret: str | None = None
    auth_method: str = "none"
    #: "dynamic", "metadata-document" or "pre-registered".
    registration: str = "dynamic"
    private_key_pem: str | None = None
    signing_alg: str | None = None
    redirect_uri: str | None = None

    def __repr__(self) -> str:
        return f"ClientInfo(client_id={self.client_id!r}, auth_method={self.auth_method!r}, <secrets redacted>)"


@dataclass
class TokenResponse:
    access_token: str
    token_type: str = "Bearer"  # noqa: S105
    expires_in: float | None = None
    refresh_token: str | None = None
    scope: str | None = None
    obtained_at: float = 0.0

    @property
    def expires_at(self) -> float | None:
        return None if self.expires_in is None else self.obtained_at + self.expires_in

    def __repr__(self) -> str:
        return f"TokenResponse(<redacted>, expires_in={self.expires_in!r}, scope={self.scope!r})"


#: The longest token lifetime we believe (about 31 years); beyond it the expiry is unknown.
MAX_EXPIRES_IN = 1e9

PREFERRED_METHODS = ("none", "client_secret_basic", "client_secret_post")
def choose_auth_method(server: AuthServer, *, have_secret: bool) -> str:
    """The token endpoint auth method to register or use.

    A public client (`none`) when the server allows it and we hold no secret;
    otherwise the first secret method the server lists (its order is its
    preference; RFC 8414's default list is `client_secret_basic`).
    """
    supported = server.token_endpoint_auth_methods_supported or ["client_secret_basic"]
    if not have_secret and "none" in supported:
        return "none"
    for method in supported:
        if method in ("client_secret_basic", "client_secret_post"):
            return method
    if "none" in supported:
        return "none"
    raise AuthError(
        f"authorization server {verbatim(server.label, limit=300)!r} supports none of our token "
        f"endpoint auth methods ({', '.join(supported)})"
    )


async def register_client(
    fetcher: Fetcher,
    server: AuthServer,
    *,
    redirect_uri: str | None,
    scope: str | None,
    grant_types: list[str] | None = None,
) -> ClientInfo:
    """RFC 7591 dynamic registration as a native app (loopback redirect, refresh tokens
    wanted); without `redirect_uri`, for grants that redirect nowhere (the device grant)."""
    endpoint = server.registration_endpoint
    if not endpoint:
        raise AuthError(
            f"authorization server {verbatim(server.label, limit=300)!r} offers no way to register "
            "this client (no client metadata document support, no registration endpoint)",
            hint="register an OAuth client with the provider and pass --client-id (and --client-secret)",
        )
    method = choose_auth_method(server, have_secret=False)
    body: JSON = {
        "client_name": CLIENT_NAME,
        "client_uri": CLIENT_URI,
        "grant_types": grant_types or ["authorization_code", "refresh_token"],
        "token_endpoint_auth_method": method,
        "application_type": "native",
    }
    if redirect_uri is not None:
        body["redirect_uris"] = [redirect_uri]
        body["response_types"] = ["code"]
    else:
        body["response_types"] = []
    if scope:
        body["scope"] = scope
    status, doc, text = await fetcher.post_json(endpoint, "registration_endpoint", body)
    if server.metadata_url is None and status in (401, 403, 404, 405):
        # The 2025-03-26 default endpoints were a guess (nothing is published), and there is
        # no registration endpoint: the server has no sign-in, it wants a token.
        raise token_wanted(fetcher.server_url)
    if status not in (200, 201):
        detail = _oauth_error_text(doc, text, [])
        raise AuthError(
            f"client registration at {verbatim(endpoint, limit=300)} failed: HTTP {status}{detail}",
            hint="the server may require a pre-registered client: pass --client-id",
        )
    if doc is None or not isinstance(doc.get("client_id"), str) or not doc["client_id"]:
        raise AuthError(f"client registration at {verbatim(endpoint, limit=300)} returned no client_id")
    client_id = doc["client_id"]
    if len(client_id) > 4096:
        raise AuthError("client registration returned an oversized client_id")
    secret = doc.get("client_secret") if isinstance(doc.get("client_secret"), str) else None
    returned = doc.get("token_endpoint_auth_method")
    if isinstance(returned, str) and returned in PREFERRED_METHODS:
        method = returned
    elif secret and method == "none":
        method = "none"
    return ClientInfo(
        client_id=client_id,
        client_secret=secret or None,
        auth_method=method,
        registration="dynamic",
        redirect_uri=redirect_uri,
    )


def _oauth_error_text(doc: JSON | None, text: str, secrets: Iterable[str | None]) -> str:
    if doc and isinstance(doc.get("error"), str):
        out = f": {scrub(doc['error'], secrets)}"
        desc = doc.get("error_description")
        if isinstance(desc, str) and desc:
            out += f" ({scrub(desc, secrets)})"
        return out
    return ""


def _client_auth(
    client: ClientInfo, server: AuthServer, params: dict[str, str]
) -> dict[str, str]:
    """Add client authentication to `params`; returns extra headers."""
    method = client.auth_method
    if method == "client_secret_basic":
        if not client.client_secret:
            raise AuthError("client_secret_basic needs a client secret (--client-secret)")
        raw = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
        # client_id in the body too: identification, not a second authentication
        # (RFC 6749 §3.2.1); some servers (the official Python SDK) require it.
        params["client_id"] = client.client_id
        return {"Authorization": "Basic " + base64.b64encode(raw.encode()).decode("ascii")}
    if method == "client_secret_post":
        if not client.client_secret:
            raise AuthError("client_secret_post needs a client secret (--client-secret)")
        params["client_id"] = client.client_id
        params["client_secret"] = client.client_secret
        return {}
    if method == "private_key_jwt":
        from mcpcli.auth.jwt import ASSERTION_TYPE, sign_client_assertion

        if not client.private_key_pem:
            raise AuthError("private_key_jwt needs a private key (--private-key-file)")
        params["client_id"] = client.client_id
        params["client_assertion_type"] = ASSERTION_TYPE
        params["client_assertion"] = sign_client_assertion(
            client_id=client.client_id,
            audience=server.issuer or server.token_endpoint,
            private_key_pem=client.private_key_pem,
            alg=client.signing_alg,
        )
        return {}
    params["client_id"] = client.client_id
    return {}


async def request_token(
    fetcher: Fetcher,
    server: AuthServer,
    client: ClientInfo,
    params: Mapping[str, str],
    *,
    what: str = "token request",
    secrets: Iterable[str | None] = (),
) -> TokenResponse:
    """POST to the token endpoint; a validated `TokenResponse` or an `OAuthError`."""
    body = dict(params)
    headers = _client_auth(client, server, body)
    known = [*secrets, client.client_secret, body.get("code"), body.get("refresh_token"),
             body.get("code_verifier"), body.get("client_assertion")]
    started = time.time()
    status, doc, text = await fetcher.post_form(server.token_endpoint, "token_endpoint", body, headers)
    if status != 200 or doc is None or "access_token" not in doc:
        error = doc.get("error") if doc and isinstance(doc.get("error"), str) else None
        detail = _oauth_error_text(doc, text, known)
        if status == 200:
            detail = detail or ": the response has no access_token"
        raise OAuthError(
            f"{what} refused by {verbatim(server.token_endpoint, limit=300)}: HTTP {status}{detail}",
            error=error,
        )
    token = doc.get("access_token")
    if not isinstance(token, str) or not token:
        raise OAuthError(f"{what}: the token endpoint returned an empty access_token")
    token_type = doc.get("token_type", "Bearer")
    if not isinstance(token_type, str) or token_type.lower() != "bearer":
        raise OAuthError(f"{what}: unsupported token_type {scrub(str(token_type), known)!r} (only Bearer)")
    expires_in: float | None = None
    raw_exp = doc.get("expires_in")
    if isinstance(raw_exp, (int, float)) and not isinstance(raw_exp, bool):
        expires_in = float(raw_exp)
    elif isinstance(raw_exp, str):
        try:
            expires_in = float(raw_exp)
        except ValueError:
            expires_in = None
    if expires_in is not None and not 0 <= expires_in <= MAX_EXPIRES_IN:
        expires_in = None  # NaN, infinite, negative or absurd: as if the server had not said
    refresh = doc.get("refresh_token")
    scope = doc.get("scope")
    return TokenResponse(
        access_token=token,
        token_type="Bearer",  # noqa: S106
        expires_in=expires_in,
        refresh_token=refresh if isinstance(refresh, str) and refresh else None,
        scope=scope if isinstance(scope, str) else None,
        obtained_at=started,
    )


def revocation_auth_method(server: AuthServer, client: ClientInfo) -> str | None:
    """The client authentication for the revocation endpoint, if it differs from the token endpoint's.

    RFC 8414 `revocation_endpoint_auth_methods_supported`, in the server's order of
    preference: the first listed method this client can do. (The official Python
    SDK lists client_secret_post first and rejects Basic-only revocation requests.)
    """
    listed = server.revocation_endpoint_auth_methods_supported
    if not listed:
        return None
    for method in listed:
        if method == client.auth_method:
            return None
        if method in ("client_secret_post", "client_secret_basic") and client.client_secret:
            return method
        if method == "private_key_jwt" and client.private_key_pem:
            return method
    return None


@dataclass
class DeviceCode:
    """An authorization server's answer to a device authorization request (RFC 8628 3.2)."""

    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    #: Seconds the codes stay valid, and the least between two token requests.
    expires_in: float
    interval: float

    def __repr__(self) -> str:
        return f"DeviceCode(user_code={self.user_code!r}, <device_code redacted>)"


#: RFC 8628: the interval when the server gives none, and how long codes last when it says nothing.
DEVICE_INTERVAL = 5.0
DEVICE_EXPIRES_IN = 600.0


async def device_authorization(
    fetcher: Fetcher, server: AuthServer, client: ClientInfo, params: Mapping[str, str]
) -> DeviceCode:
    """POST to the device authorization endpoint (RFC 8628 3.1): the codes, validated."""
    endpoint = server.device_authorization_endpoint
    assert endpoint is not None
    body = dict(params)
    headers = _client_auth(client, server, body)
    known = [client.client_secret, body.get("client_assertion")]
    status, doc, text = await fetcher.post_form(endpoint, "device_authorization_endpoint", body, headers)
    where = verbatim(endpoint, limit=300)
    if status != 200 or doc is None:
        error = doc.get("error") if doc and isinstance(doc.get("error"), str) else None
        raise OAuthError(
            f"device authorization refused by {where}: HTTP {status}{_oauth_error_text(doc, text, known)}",
            error=error,
        )
    device_code, user_code = doc.get("device_code"), doc.get("user_code")
    # "verification_url": what some providers (Google) still name it.
    uri = doc.get("verification_uri", doc.get("verification_url"))
    if not (isinstance(device_code, str) and device_code and isinstance(user_code, str) and user_code
            and isinstance(uri, str) and uri):
        raise OAuthError(
            f"device authorization at {where}: the answer lacks device_code, user_code or verification_uri"
        )
    if len(user_code) > 64 or not user_code.isprintable():
        raise OAuthError(f"device authorization at {where}: an unusable user_code")
    complete = doc.get("verification_uri_complete")
    return DeviceCode(
        device_code=device_code,
        user_code=user_code,
        verification_uri=fetcher.check(uri, "verification_uri"),
        verification_uri_complete=fetcher.check(complete, "verification_uri_complete")
        if isinstance(complete, str) and complete else None,
        expires_in=_seconds_field(doc.get("expires_in"), DEVICE_EXPIRES_IN),
        interval=_seconds_field(doc.get("interval"), DEVICE_INTERVAL),
    )


def _seconds_field(value: Any, default: float) -> float:
    """A number of seconds the server gave (a number, or a string of one), else `default`."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return default
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= MAX_EXPIRES_IN:
        return float(value)
    return default


async def revoke_token(
    fetcher: Fetcher, server: AuthServer, client: ClientInfo, token: str, hint: str,
    method: str | None = None,
) -> bool:
    """RFC 7009 revocation, best effort: True if the server said 200."""
    if not server.revocation_endpoint:
        return False
    body = {"token": token, "token_type_hint": hint}
    if method:
        from dataclasses import replace

        client = replace(client, auth_method=method)
    headers = _client_auth(client, server, body)
    status, _doc, _text = await fetcher.post_form(
        server.revocation_endpoint, "revocation_endpoint", body, headers
    )
    return status == 200
