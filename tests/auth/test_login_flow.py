"""The authorization-code flow end to end against the fake authorization server (in process)."""

from __future__ import annotations

import io

import anyio
import pytest

from mcpcli.auth.authenticator import OAuthAuthenticator
from mcpcli.auth.commands import login
from mcpcli.auth.settings import AuthSettings
from mcpcli.auth.store import TokenStore
from mcpcli.auth.ui import AuthUI
from mcpcli.errors import AuthError


def ui() -> AuthUI:
    return AuthUI(stderr=io.StringIO(), stdin=io.StringIO())


def run(fn, *args, **kwargs):
    return anyio.run(lambda: fn(*args, **kwargs))


def test_login_stores_tokens_and_follows_the_spec(oauth, browser) -> None:
    srv = oauth(scopes_supported=["mcp:read"])
    rec = run(login, srv.mcp_url, AuthSettings(), ui=ui())
    # What was stored: facts in the index, secrets in the (memory) keyring.
    assert rec.issuer == srv.issuer
    assert rec.resource == srv.mcp_url
    assert rec.registration == "dynamic"
    assert rec.has_refresh_token
    store = TokenStore()
    found = store.find(srv.mcp_url)
    assert found is not None and found.client_id == rec.client_id
    secrets = store.secrets_of(found)
    assert secrets.access_token in srv.access_tokens
    assert secrets.refresh_token in srv.refresh_tokens
    # The wire: DCR as a native app; authorize with S256, state, resource; token with verifier.
    reg = next(r for r in srv.requests if r["path"] == "/register")
    assert reg["json"]["application_type"] == "native"
    assert "refresh_token" in reg["json"]["grant_types"]
    authz = next(r for r in srv.requests if r["path"] == "/authorize")["query"]
    assert authz["code_challenge_method"] == "S256"
    assert len(authz["state"]) >= 43
    assert authz["resource"] == srv.mcp_url
    assert authz["scope"] == "mcp:read"
    assert authz["redirect_uri"].startswith("http://127.0.0.1:")
    token = srv.token_requests("authorization_code")[0]["form"]
    assert token["resource"] == srv.mcp_url
    assert 43 <= len(token["code_verifier"]) <= 128
    # The browser was given exactly the checked authorization URL.
    assert len(browser.opened) == 1 and browser.opened[0].startswith(f"{srv.base}/authorize?")


def test_discovery_without_header_probes_path_then_root(oauth, browser) -> None:
    srv = oauth(prm_in_header=False, prm_path="/.well-known/oauth-protected-resource")
    srv.options.prm_resource = srv.base  # PRM at the root names the origin
    run(login, srv.mcp_url, AuthSettings(), ui=ui())
    gets = srv.paths("GET")
    assert gets.index("/.well-known/oauth-protected-resource/mcp") < gets.index(
        "/.well-known/oauth-protected-resource"
    )
    authz = next(r for r in srv.requests if r["path"] == "/authorize")["query"]
    assert authz["resource"] == srv.base  # exactly as published, no trailing slash added


def test_legacy_2025_03_26_fallback_endpoints(oauth, browser) -> None:
    srv = oauth(prm=False, as_metadata=False)
    run(login, srv.mcp_url, AuthSettings(), ui=ui())
    assert srv.count("/register") == 1
    assert srv.count("/authorize") == 1
    assert len(srv.token_requests("authorization_code")) == 1


def test_pre_registered_client_secret_basic(oauth, browser) -> None:
    srv = oauth(clients={"pre-id": "pre-secret"}, registration=False, auth_methods=["client_secret_basic"])
    rec = run(login, srv.mcp_url, AuthSettings(client_id="pre-id", client_secret="pre-secret"), ui=ui())
    assert rec.registration == "pre-registered"
    assert rec.auth_method == "client_secret_basic"
    token = srv.token_requests("authorization_code")[0]
    assert token["headers"]["authorization"].startswith("Basic ")
    assert "client_secret" not in token["form"]


def test_client_secret_post(oauth, browser) -> None:
    srv = oauth(auth_methods=["client_secret_post"])
    run(login, srv.mcp_url, AuthSettings(), ui=ui())
    token = srv.token_requests("authorization_code")[0]
    assert token["form"]["client_secret"].startswith("CS-CANARY-")
    assert "authorization" not in token["headers"]


def test_client_id_metadata_document_when_supported(oauth, browser) -> None:
    srv = oauth(cimd=True)
    url = "https://client.example.com/mcpcli.json"
    rec = run(login, srv.mcp_url, AuthSettings(client_metadata_url=url), ui=ui())
    assert rec.client_id == url and rec.registration == "metadata-document"
    assert srv.count("/register") == 0


def test_offline_access_only_when_the_server_lists_it(oauth, browser) -> None:
    srv = oauth(challenge_scope="mcp:read", as_scopes_supported=["mcp:read", "offline_access"])
    run(login, srv.mcp_url, AuthSettings(), ui=ui())
    assert next(r for r in srv.requests if r["path"] == "/authorize")["query"]["scope"] == "mcp:read offline_access"
    srv2 = oauth(challenge_scope="mcp:read", as_scopes_supported=["mcp:read"])
    run(login, srv2.mcp_url, AuthSettings(), ui=ui())
    assert next(r for r in srv2.requests if r["path"] == "/authorize")["query"]["scope"] == "mcp:read"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"iss_mode": "omit", "iss_supported": True}, "has no 'iss'"),
        ({"iss_mode": "wrong"}, "came from issuer 'https://evil.example.com'"),
        ({"iss_mode": "wrong", "iss_supported": None}, "came from issuer"),
        ({"iss_mode": "slash"}, "rejected"),
    ],
)
def test_iss_is_checked_before_the_code_is_used(oauth, browser, options, message) -> None:
    srv = oauth(**options)
    with pytest.raises(AuthError, match=message):
        run(login, srv.mcp_url, AuthSettings(), ui=ui())
    assert srv.token_requests() == []  # the code never reached the token endpoint
    assert TokenStore().find(srv.mcp_url) is None


def test_iss_absent_and_not_advertised_proceeds(oauth, browser) -> None:
    srv = oauth(iss_mode="omit", iss_supported=None)
    rec = run(login, srv.mcp_url, AuthSettings(), ui=ui())
    assert rec.issuer == srv.issuer


def test_iss_mismatch_hides_the_error_fields(oauth, browser) -> None:
    srv = oauth(iss_mode="wrong", authorize_error="access_denied")
    with pytest.raises(AuthError) as info:
        run(login, srv.mcp_url, AuthSettings(), ui=ui())
    assert "access_denied" not in info.value.message and "<no>" not in info.value.message


def test_authorization_error_is_reported_escaped(oauth, browser) -> None:
    srv = oauth(authorize_error="access_denied")
    with pytest.raises(AuthError, match="access_denied") as info:
        run(login, srv.mcp_url, AuthSettings(), ui=ui())
    assert "the user said <no>" in info.value.message


@pytest.mark.parametrize("methods", [None, ["plain"]])
def test_refuses_servers_without_pkce_s256(oauth, browser, methods) -> None:
    srv = oauth(pkce_methods=methods)
    with pytest.raises(AuthError, match="does not support PKCE S256"):
        run(login, srv.mcp_url, AuthSettings(), ui=ui())
    assert browser.opened == []
    assert srv.count("/authorize") == 0


def test_metadata_issuer_mismatch_is_refused(oauth, browser) -> None:
    srv = oauth(metadata_issuer="https://attacker.example.com")
    with pytest.raises(AuthError, match="declares issuer"):
        run(login, srv.mcp_url, AuthSettings(), ui=ui())
    assert srv.count("/register") == 0 and browser.opened == []


def test_resource_mismatch_is_refused(oauth, browser) -> None:
    srv = oauth(prm_resource="https://evil.example.com/mcp")
    with pytest.raises(AuthError, match="not the server"):
        run(login, srv.mcp_url, AuthSettings(), ui=ui())
    assert srv.count("/authorize") == 0 and browser.opened == []


@pytest.mark.parametrize(
    "endpoint",
    [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "data:text/html,hi",
        "--renderer-cmd-prefix=/tmp/x",
        "http://evil.example/auth",
        "https://localhost@evil.example/",
        "https://a.example/x y",
        "https://a.example/\nx",
    ],
)
def test_hostile_authorization_endpoint_is_never_opened(oauth, browser, endpoint) -> None:
    srv = oauth(authorization_endpoint=endpoint)
    with pytest.raises(AuthError) as info:
        run(login, srv.mcp_url, AuthSettings(), ui=ui())
    assert "\n" not in info.value.message
    assert browser.opened == []
    assert srv.count("/register") == 0 or srv.count("/authorize") == 0


def test_state_mismatch_is_ignored_and_the_real_callback_wins(oauth, browser, monkeypatch) -> None:
    """A forged callback (wrong state) gets a 400 and does not end the sign-in."""
    import urllib.request

    from mcpcli.auth import browser as browser_mod

    srv = oauth()
    forged: list[int] = []

    def forge_then_follow(url: str) -> bool:
        from urllib.parse import parse_qs, urlsplit

        q = parse_qs(urlsplit(url).query)
        redirect = q["redirect_uri"][0]
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        for bad in ("", "?code=x", "?code=x&state=wrong", f"?code=x&state={q['state'][0]}&state=dup"):
            try:
                opener.open(redirect + bad, timeout=5)
            except Exception as exc:
                forged.append(getattr(exc, "code", -1))
        return browser(url)

    monkeypatch.setattr(browser_mod, "opener", forge_then_follow)
    rec = run(login, srv.mcp_url, AuthSettings(), ui=ui())
    assert forged == [400, 400, 400, 400]
    assert rec.has_refresh_token
    assert len(srv.token_requests("authorization_code")) == 1


@pytest.mark.slow
def test_sign_in_times_out_and_stores_nothing(oauth, browser) -> None:
    srv = oauth()
    browser.fail = True  # the browser never comes back
    with pytest.raises(AuthError, match="timed out"):
        run(login, srv.mcp_url, AuthSettings(timeout=0.5), ui=ui())
    assert TokenStore().find(srv.mcp_url) is None


def test_no_browser_accepts_the_pasted_redirect(oauth, monkeypatch) -> None:
    """--no-browser: print the URL, read the redirect address from stdin."""
    import os
    import urllib.request
    from urllib.parse import parse_qs, urlsplit

    srv = oauth()
    read_fd, write_fd = os.pipe()
    stdin = os.fdopen(read_fd, "r")
    stderr = io.StringIO()

    class Watch(io.StringIO):
        def write(self, s: str) -> int:  # when the URL appears, "sign in" and paste the redirect
            if "/authorize?" in s:
                url = s.strip()
                redirect = urlsplit(url)
                q = parse_qs(redirect.query)
                opener = urllib.request.build_opener(
                    urllib.request.ProxyHandler({}), _NoRedirect()
                )
                try:
                    opener.open(url, timeout=5)
                except urllib.error.HTTPError as exc:
                    location = exc.headers["Location"]
                    assert location.startswith(q["redirect_uri"][0])
                    os.write(write_fd, b"garbage\n" + location.encode() + b"\n")
            return stderr.write(s)

    import urllib.error

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    settings = AuthSettings(no_browser=True, timeout=20)
    rec = run(login, srv.mcp_url, settings, ui=AuthUI(stderr=Watch(), stdin=stdin))
    os.close(write_fd)
    stdin.close()
    assert rec.has_refresh_token
    assert "paste" in stderr.getvalue()


def test_authenticator_sends_stored_token_and_refreshes_with_rotation(oauth, browser) -> None:
    srv = oauth(access_ttl=3600)
    run(login, srv.mcp_url, AuthSettings(), ui=ui())
    store = TokenStore()
    rec = store.find(srv.mcp_url)
    first = store.secrets_of(rec)

    auth = OAuthAuthenticator(srv.mcp_url, AuthSettings(), mode="stored-only", store=store)
    assert run(auth.authorization) == f"Bearer {first.access_token}"

    # Expire it locally: the next authorization() refreshes, and the rotated refresh token is stored.
    rec.expires_at = 1.0
    store.save(rec, first)
    auth2 = OAuthAuthenticator(srv.mcp_url, AuthSettings(), mode="stored-only", store=store)
    header = run(auth2.authorization)
    second = store.secrets_of(store.find(srv.mcp_url))
    assert header == f"Bearer {second.access_token}"
    assert second.access_token != first.access_token
    assert second.refresh_token != first.refresh_token
    assert first.refresh_token not in srv.refresh_tokens  # rotated: the old one is dead
    assert srv.token_requests("refresh_token")[0]["form"]["resource"] == srv.mcp_url


def test_expired_refresh_token_in_stored_only_mode(oauth, browser) -> None:
    srv = oauth()
    run(login, srv.mcp_url, AuthSettings(), ui=ui())
    store = TokenStore()
    rec = store.find(srv.mcp_url)
    rec.expires_at = 1.0
    store.save(rec, store.secrets_of(rec))
    srv.expire_refresh_tokens()
    srv.expire_access_tokens()
    auth = OAuthAuthenticator(srv.mcp_url, AuthSettings(), mode="stored-only", store=store)
    assert run(auth.authorization) is None  # refresh refused: nothing valid to send
    assert store.find(srv.mcp_url) is None  # the dead sign-in is gone, not retried forever
    with pytest.raises(AuthError, match="stored-auth-only") as info:
        run(auth.challenge, 401, ['Bearer error="invalid_token"'], srv.mcp_url)
    assert "mcp auth login" in (info.value.hint or "")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_status_and_list_for_people(oauth, browser, monkeypatch) -> None:
    """On a terminal: readable lines, no token anywhere."""
    from mcpcli.cli import main

    srv = oauth(challenge_scope="mcp:read")
    run(login, srv.mcp_url, AuthSettings(), ui=ui())
    out = _Tty()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert main(["auth", "status"]) == 0
    text = out.getvalue()
    assert srv.mcp_url in text and "issuer:" in text and "mcp:read" in text
    assert "refresh token: yes" in text and "OS keyring" in text
    assert "valid, expires in" in text
    out2 = _Tty()
    monkeypatch.setattr("sys.stdout", out2)
    assert main(["auth", "list"]) == 0
    assert srv.mcp_url in out2.getvalue() and "refreshable" in out2.getvalue()
    for secret in srv.issued:
        assert secret not in text and secret not in out2.getvalue()


def test_a_pre_registered_sign_in_steps_up_with_the_same_client(oauth, browser) -> None:
    """Later commands carry no --client-id: the stored pre-registered client is reused."""
    srv = oauth(clients={"pre-id": "pre-secret"}, registration=False, auth_methods=["client_secret_basic"])
    run(login, srv.mcp_url, AuthSettings(client_id="pre-id", client_secret="pre-secret"), ui=ui())
    auth = OAuthAuthenticator(srv.mcp_url, AuthSettings(), mode="interactive", ui=ui())
    assert run(auth.challenge, 403, ['Bearer error="insufficient_scope", scope="mcp:write"'], srv.mcp_url)
    clients = [r["query"]["client_id"] for r in srv.requests if r["path"] == "/authorize"]
    assert clients == ["pre-id", "pre-id"]
    assert srv.count("/register") == 0
