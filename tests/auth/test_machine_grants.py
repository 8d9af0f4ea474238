"""Sign-in without a user: client credentials (secret or private_key_jwt) and SEP-990."""

from __future__ import annotations

import anyio
import pytest

from mcpcli.auth.authenticator import OAuthAuthenticator
from mcpcli.auth.commands import login
from mcpcli.auth.settings import AuthSettings
from mcpcli.auth.store import TokenStore
from mcpcli.errors import UsageError


def run(fn, *args, **kwargs):
    return anyio.run(lambda: fn(*args, **kwargs))


def test_client_credentials_with_client_secret_basic(oauth, browser) -> None:
    srv = oauth(clients={"machine": "s3cret"}, auth_methods=["client_secret_basic"])
    settings = AuthSettings(client_id="machine", client_secret="s3cret", grant="client_credentials", scope="mcp:read")
    rec = run(login, srv.mcp_url, settings)
    assert rec.grant == "client_credentials" and not rec.has_refresh_token
    req = srv.token_requests("client_credentials")[0]
    assert req["headers"]["authorization"].startswith("Basic ")
    assert req["form"]["resource"] == srv.mcp_url and req["form"]["scope"] == "mcp:read"
    assert browser.opened == []  # no user involved


def test_client_credentials_token_is_reissued_when_it_expires(oauth, browser) -> None:
    srv = oauth(clients={"machine": "s3cret"})
    settings = AuthSettings(client_id="machine", client_secret="s3cret", grant="client_credentials")
    run(login, srv.mcp_url, settings)
    store = TokenStore()
    rec = store.find(srv.mcp_url)
    first = store.secrets_of(rec).access_token
    rec.expires_at = 1.0
    store.save(rec, store.secrets_of(rec))
    # A later command without the flags: the stored client secret is enough.
    auth = OAuthAuthenticator(srv.mcp_url, AuthSettings(), mode="stored-only", store=store)
    header = run(auth.authorization)
    assert header is not None and header != f"Bearer {first}"
    assert len(srv.token_requests("client_credentials")) == 2


def test_private_key_jwt_assertion(oauth, browser, tmp_path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
    key_file = tmp_path / "key.pem"
    key_file.write_text(pem)
    srv = oauth(jwt_clients={"signer": public}, auth_methods=["private_key_jwt"])
    settings = AuthSettings.build(None, {"client_id": "signer", "private_key_file": str(key_file),
                                         "grant": "client_credentials"})
    rec = run(login, srv.mcp_url, settings)
    assert rec.auth_method == "private_key_jwt"
    assert rec.private_key_file == str(key_file)
    form = srv.token_requests("client_credentials")[0]["form"]
    assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    assert "client_secret" not in form
    # The key itself is never copied into the store.
    store = TokenStore()
    assert store.secrets_of(store.find(srv.mcp_url)).client_secret is None


def test_private_key_jwt_without_cryptography_names_the_extra(oauth, tmp_path, monkeypatch) -> None:
    import sys

    from helpers import mcp_in

    from .conftest import child_env

    key_file = tmp_path / "key.pem"
    key_file.write_text("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    srv = oauth(jwt_clients={"signer": "unused"}, auth_methods=["private_key_jwt"])
    for name in [n for n in sys.modules if n.startswith("cryptography.")] + ["cryptography"]:
        monkeypatch.setitem(sys.modules, name, None)  # as after `pip install .` on a system without it
    r = mcp_in("auth", "login", srv.mcp_url, "--client-credentials", "--client-id", "signer",
               "--private-key-file", str(key_file), env=child_env())
    assert r.code == 2, r
    assert r.stderr == ("mcp: error: private_key_jwt needs the cryptography package, which is not installed: "
                        "pip install 'mcpcli[jwt]'\n")
    assert srv.token_requests("client_credentials") == []


def test_client_credentials_needs_credentials(oauth, browser) -> None:
    srv = oauth()
    with pytest.raises(UsageError, match="needs --client-id"):
        run(login, srv.mcp_url, AuthSettings(grant="client_credentials"))


def test_enterprise_managed_authorization(oauth, browser, monkeypatch) -> None:
    srv = oauth(clients={"xaa": "xaa-secret"}, auth_methods=["client_secret_basic"])
    monkeypatch.setenv("MCP_OAUTH_ID_TOKEN", "ID-TOKEN-CANARY")
    settings = AuthSettings.build(None, {
        "client_id": "xaa", "client_secret": "xaa-secret", "grant": "enterprise",
        "idp_token_endpoint": f"{srv.base}/idp/token",
    })
    rec = run(login, srv.mcp_url, settings)
    assert rec.grant == "enterprise"
    exchange = next(r for r in srv.requests if r["path"] == "/idp/token")["form"]
    assert exchange["resource"] == srv.mcp_url and exchange["audience"] == srv.issuer
    bearer = srv.token_requests("urn:ietf:params:oauth:grant-type:jwt-bearer")
    assert len(bearer) == 1 and bearer[0]["headers"]["authorization"].startswith("Basic ")
