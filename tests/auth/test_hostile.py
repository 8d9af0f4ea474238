"""Hostile or broken servers: bad registration answers, echoed secrets, endless 403s."""

from __future__ import annotations

import io
import json

import anyio
import pytest
from helpers import mcp_in

from mcpcli.auth.authenticator import OAuthAuthenticator
from mcpcli.auth.commands import login
from mcpcli.auth.settings import AuthSettings
from mcpcli.auth.store import TokenStore
from mcpcli.auth.ui import AuthUI
from mcpcli.errors import AuthError

from .conftest import child_env


def run(fn, *args, **kwargs):
    return anyio.run(lambda: fn(*args, **kwargs))


def quiet() -> AuthUI:
    return AuthUI(stderr=io.StringIO(), stdin=io.StringIO())


@pytest.mark.parametrize(
    ("response", "message"),
    [
        ((201, "this is not json"), "returned no client_id"),
        ((201, '{"client_name": "x"}'), "returned no client_id"),
        ((201, '{"client_id": "' + "x" * 5000 + '"}'), "oversized client_id"),
        ((400, '{"error": "invalid_redirect_uri", "error_description": "nope"}'), "invalid_redirect_uri"),
    ],
)
def test_hostile_registration_answers(oauth, browser, response, message) -> None:
    srv = oauth(register_response=response)
    with pytest.raises(AuthError, match=message) as info:
        run(login, srv.mcp_url, AuthSettings(), ui=quiet())
    assert len(info.value.message) < 600
    assert browser.opened == []
    assert TokenStore().find(srv.mcp_url) is None  # nothing partial persisted


def test_error_descriptions_are_escaped(oauth, browser) -> None:
    """An authorization server's error_description cannot reach the terminal raw."""
    evil = "nope\x1b[2J\u202eexe.\u200b\u2028\ufeff\x9b"
    body = json.dumps({"error": "invalid_client_metadata", "error_description": evil})
    srv = oauth(register_response=(400, body))
    with pytest.raises(AuthError, match="invalid_client_metadata") as info:
        run(login, srv.mcp_url, AuthSettings(), ui=quiet())
    message = info.value.message
    assert not any(ch in message for ch in "\x1b\u202e\u200b\u2028\ufeff\x9b")
    assert "nope\\x1b[2J\\u202eexe.\\u200b\\u2028\\ufeff\\x9b" in message


def test_secrets_echoed_by_the_server_are_scrubbed(oauth, browser) -> None:
    srv = oauth()
    run(login, srv.mcp_url, AuthSettings(), ui=quiet())
    store = TokenStore()
    rec = store.find(srv.mcp_url)
    secrets = store.secrets_of(rec)
    rec.expires_at = 1.0
    store.save(rec, secrets)
    srv.options.refresh_error_echo = True
    srv.expire_access_tokens()
    auth = OAuthAuthenticator(srv.mcp_url, AuthSettings(), mode="stored-only", store=store)
    with pytest.raises(AuthError) as info:
        run(auth.flow.refresh, rec, secrets)
    assert secrets.refresh_token not in info.value.message
    assert "<redacted>" in info.value.message


def test_step_up_is_bounded(oauth, browser) -> None:
    """A server that keeps saying insufficient_scope gets at most 3 authorization requests."""
    srv = oauth(always_insufficient="mcp:admin")
    run(login, srv.mcp_url, AuthSettings(), ui=quiet())
    auth = OAuthAuthenticator(srv.mcp_url, AuthSettings(), mode="interactive", ui=quiet())
    challenge = ['Bearer error="insufficient_scope", scope="mcp:admin"']
    assert run(auth.challenge, 403, challenge, srv.mcp_url) is True
    assert run(auth.challenge, 403, challenge, srv.mcp_url) is True
    with pytest.raises(AuthError, match="after 2 attempts"):
        run(auth.challenge, 403, challenge, srv.mcp_url)
    assert srv.count("/authorize") == 3  # the first sign-in and two step-ups
    scopes = [r["query"].get("scope") for r in srv.requests if r["path"] == "/authorize"]
    assert scopes[1:] == ["mcp:admin", "mcp:admin"]


def test_403_without_insufficient_scope_is_not_retried(oauth, browser) -> None:
    srv = oauth()
    auth = OAuthAuthenticator(srv.mcp_url, AuthSettings(), mode="interactive", ui=quiet())
    assert run(auth.challenge, 403, ['Bearer error="invalid_token"'], srv.mcp_url) is False
    assert browser.opened == []


def test_step_up_through_the_cli_stops(oauth, browser_script) -> None:
    srv = oauth(always_insufficient="mcp:admin")
    env = child_env(BROWSER=str(browser_script))
    result = mcp_in("tools", "call", srv.mcp_url, "echo", env=env)
    assert result.code == 3, result
    assert "insufficient" in result.stderr.lower()
    assert srv.count("/authorize") <= 3


def test_loopback_authorization_endpoint_of_a_remote_server_is_refused(monkeypatch) -> None:
    """Checked before any browser: a remote server may not send the browser into our network."""
    from mcpcli.auth.metadata import AuthServer, Discovery, ProtectedResource
    from mcpcli.auth.signin import Flow

    flow = Flow("https://mcp.example.com/mcp", AuthSettings(), TokenStore(), ui=quiet())
    disc = Discovery(
        resource=ProtectedResource("https://mcp.example.com/mcp", ["https://as.example.com"]),
        server=AuthServer(
            issuer="https://as.example.com",
            authorization_endpoint="http://127.0.0.1:5000/authorize",
            token_endpoint="https://as.example.com/token",
            code_challenge_methods_supported=["S256"],
            metadata_url="https://as.example.com/.well-known/oauth-authorization-server",
        ),
    )

    async def fake_client(*args, **kwargs):
        from mcpcli.auth.tokens import ClientInfo

        return ClientInfo(client_id="x")

    monkeypatch.setattr(flow, "_client_for", fake_client)
    monkeypatch.setenv("BROWSER", "/nonexistent")
    with pytest.raises(AuthError, match="private network"):
        run(flow.authorization_code, disc, None)


def test_login_to_a_server_that_needs_no_sign_in(oauth, browser) -> None:
    srv = oauth(require_auth=False, prm=False, as_metadata=False)
    with pytest.raises(AuthError, match="publishes no OAuth protected resource metadata") as info:
        run(login, srv.mcp_url, AuthSettings(), ui=quiet())
    assert "may not need sign-in" in (info.value.hint or "")
    assert srv.count("/register") == 0 and browser.opened == []
