"""OAuth parsing: `WWW-Authenticate` challenges and authorization server metadata.

Properties: any header values give a `Challenge` or None, never an exception;
well-formed challenges (RFC 9110 auth-params, quoted or token values, several
challenges in one header) round trip; metadata bodies of any bytes parse to an
object or None (`_parse_body`) or raise ValueError (`HttpResponse.json`); any
metadata document gives an `AuthServer` or the documented `AuthError`; any
token endpoint answer gives a usable `TokenResponse` (an expiry that can be
shown as a date) or an `OAuthError`.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import anyio
from hypothesis import example, given
from hypothesis import strategies as st

from fuzz.strategies import NASTY_JSON, dumps, json_objects, json_values
from mcpcli.auth.metadata import (
    AuthServer,
    Fetcher,
    _auth_server_from,
    _parse_body,
    parse_www_authenticate,
)
from mcpcli.auth.tokens import ClientInfo, OAuthError, request_token
from mcpcli.errors import AuthError
from mcpcli.transports.http_io import HttpResponse

TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+.^_`|~-"
TOKEN = st.text(st.sampled_from(TOKEN_CHARS), min_size=1, max_size=10)
PARAM_NAME = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz_0123456789"), min_size=1, max_size=9)
#: What a quoted-string may carry: visible ASCII, space, tab, obs-text (as str).
QUOTED_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f")
                      | st.just("\t"), max_size=20)


def quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@st.composite
def challenge(draw: st.DrawFn, scheme: str) -> tuple[str, dict[str, str]]:
    params = draw(st.dictionaries(PARAM_NAME, QUOTED_TEXT | TOKEN, max_size=4))
    parts = []
    for name, value in params.items():
        as_token = value and all(c in TOKEN_CHARS for c in value)
        shown = value if as_token and draw(st.booleans()) else quote(value)
        parts.append(f"{name}{draw(st.sampled_from(['=', ' = ', '=']))}{shown}")
    text = scheme + (" " + ", ".join(parts) if parts else "")
    return text, params


@given(st.lists(st.text(max_size=60) | st.text(st.sampled_from('Bearer ,="\\\t='), max_size=30), max_size=3))
@example(['Bearer realm="unterminated'])
@example(["Bearer ==="])
@example(['Bearer a="\\'])
@example(["=, Bearer"])
def test_any_header_values(values: list[str]) -> None:
    found = parse_www_authenticate(values)
    if found is not None:
        assert found.scheme.lower() == "bearer"
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in found.params.items())
        _ = found.scope, found.error, found.resource_metadata


@given(st.data(), st.lists(TOKEN.filter(lambda t: t.lower() != "bearer"), max_size=2),
       st.sampled_from(["Bearer", "bearer", "BEARER"]))
def test_challenges_round_trip(data: st.DataObject, others: list[str], bearer: str) -> None:
    rendered = [data.draw(challenge(scheme)) for scheme in others]
    text, params = data.draw(challenge(bearer))
    rendered.insert(data.draw(st.integers(min_value=0, max_value=len(rendered))), (text, params))
    header = ", ".join(r[0] for r in rendered)
    found = parse_www_authenticate([header])
    assert found is not None
    assert found.params == params
    # Also when each challenge comes in its own header field.
    found = parse_www_authenticate([r[0] for r in rendered])
    assert found is not None
    assert found.params == params


@given(st.binary(max_size=300) | json_values.map(dumps) | st.sampled_from(NASTY_JSON),
       st.sampled_from([None, "application/json", "application/x-www-form-urlencoded"]))
def test_metadata_bodies(body: bytes, content_type: str | None) -> None:
    doc = _parse_body(body, content_type)
    assert doc is None or isinstance(doc, dict)
    try:
        HttpResponse(200, {}, body, "https://as.example/").json()
    except ValueError:
        pass


@given(json_objects | st.fixed_dictionaries(
    {"token_endpoint": st.sampled_from(["https://as.example/token", "http://127.0.0.1:1/t", "ftp://x",
                                        "https://u:p@as.example/", "https://as.example/#f", ""]) | json_values},
    optional={
        k: st.sampled_from(["https://as.example/x", "javascript:alert(1)", "http://evil.example/"]) | json_values
        for k in ("authorization_endpoint", "registration_endpoint", "revocation_endpoint", "issuer")
    } | {k: st.lists(st.text(max_size=8), max_size=3) | json_values for k in (
        "code_challenge_methods_supported", "scopes_supported", "grant_types_supported")},
))
def test_auth_server_metadata(doc: dict[str, Any]) -> None:
    fetcher = Fetcher("https://mcp.example/mcp", allow_private=False)
    try:
        server = _auth_server_from(doc, "https://as.example/.well-known/oauth-authorization-server", fetcher)
    except AuthError:
        return
    assert isinstance(server.token_endpoint, str)
    for name in ("code_challenge_methods_supported", "scopes_supported", "grant_types_supported"):
        value = getattr(server, name)
        assert value is None or all(isinstance(v, str) for v in value)


class AnsweringFetcher(Fetcher):
    """A fetcher whose token endpoint answers with a given body (no network)."""

    body: bytes = b""
    content_type: str | None = "application/json"

    async def guard(self, url: str, what: str) -> str:
        return url

    async def post_form(self, url: str, what: str, data: Any, headers: Any = None) -> tuple[int, Any, str]:
        return 200, _parse_body(self.body, self.content_type), self.body.decode("utf-8", "replace")


token_bodies = st.fixed_dictionaries(
    {"access_token": st.sampled_from(["tok", ""]) | json_values},
    optional={
        "token_type": st.sampled_from(["Bearer", "bearer", "mac"]) | json_values,
        "expires_in": st.sampled_from([3600, "3600", 1e300, 10**30, -5, "1e999", "nan", "inf", True])
        | json_values,
        "refresh_token": st.text(max_size=5) | json_values,
        "scope": st.text(max_size=8) | json_values,
    },
).map(dumps) | st.binary(max_size=100) | st.sampled_from([b'{"access_token": "t", "expires_in": NaN}'])


@given(token_bodies, st.sampled_from(["application/json", "application/x-www-form-urlencoded", None]))
@example(b'{"access_token": "t", "expires_in": "1e999"}', "application/json")  # inf: `mcp auth status` crashed
@example(b'{"access_token": "t", "expires_in": NaN}', "application/json")
@example(b'{"access_token": "t", "expires_in": 1e300}', "application/json")
def test_token_responses(body: bytes, content_type: str | None) -> None:
    fetcher = AnsweringFetcher("https://mcp.example/mcp")
    fetcher.body, fetcher.content_type = body, content_type
    server = AuthServer(issuer=None, authorization_endpoint=None, token_endpoint="https://as.example/token")

    async def call() -> Any:
        return await request_token(fetcher, server, ClientInfo("client"), {"grant_type": "refresh_token"})

    try:
        tokens = anyio.run(call)
    except OAuthError:
        return
    assert isinstance(tokens.access_token, str) and tokens.access_token
    if tokens.expires_at is not None:  # what `mcp auth status` shows
        datetime.fromtimestamp(tokens.expires_at, tz=timezone.utc).isoformat()
        int(tokens.expires_at - tokens.obtained_at)


urls = st.text(max_size=40) | st.builds(
    "{}{}{}{}{}{}".format,
    st.sampled_from(["https://", "http://", "HTTPS://", "javascript:", "ftp://", "//", "", "-https://"]),
    st.sampled_from(["", "u:p@", "@", "a@b@"]),
    st.sampled_from(["as.example", "127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "[v1.x]", "[::1",
                     "10.0.0.1", "xn--bcher-kva.example", "bücher.example", "", "%00", "a b"]),
    st.sampled_from(["", ":0", ":443", ":99999", ":abc", ":"]),
    st.sampled_from(["", "/", "/token", "/a/../b", "/%0a", "/%action"]),
    st.sampled_from(["", "?x=1", "#frag", "?\n", "#"]),
)


@given(urls, urls)
@example("https://[::1", "https://as.example/")
def test_url_checks(url: str, other: str) -> None:
    from mcpcli.auth.urls import check_browser_url, check_endpoint_url, resource_matches

    for check in (check_browser_url, lambda u: check_endpoint_url(u, "token_endpoint")):
        try:
            checked = check(url)
        except AuthError:
            continue
        assert checked == url
    assert isinstance(resource_matches(url, other), bool)


@given(urls, urls, st.sampled_from([301, 302, 307, 404, 200]))
@example("https://[::1/x", "/.well-known/x", 404)  # urljoin raised ValueError out of discovery
@example("/prm", "https://[::1/x", 302)  # and out of following a redirect
def test_discovery_follows_server_urls(metadata: str, location: str, status: int) -> None:
    """URLs a server hands out (resource_metadata, Location) lead to metadata or an AuthError."""
    from unittest import mock

    from mcpcli.auth.metadata import Challenge, fetch_protected_resource

    async def fake_fetch(method: str, url: str, **kwargs: Any) -> HttpResponse:
        if status == 200:
            body = dumps({"resource": "https://mcp.example/mcp", "authorization_servers": [location]})
            return HttpResponse(200, {"content-type": "application/json"}, body, url)
        return HttpResponse(status, {"location": location}, b"", url)

    fetcher = Fetcher("https://mcp.example/mcp", allow_private=True)  # no DNS look-ups

    async def run() -> Any:
        return await fetch_protected_resource(
            fetcher, "https://mcp.example/mcp", Challenge("Bearer", {"resource_metadata": metadata})
        )

    with mock.patch("mcpcli.transports.http_io.fetch", fake_fetch):
        try:
            anyio.run(run)
        except AuthError:
            pass
