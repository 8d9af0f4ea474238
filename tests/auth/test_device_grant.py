"""Sign-in on another device (RFC 8628): `mcp auth login --device` against the fake AS."""

from __future__ import annotations

import io
from typing import Any

import anyio
import pytest

from mcpcli.auth import device
from mcpcli.auth.authenticator import OAuthAuthenticator
from mcpcli.auth.commands import login
from mcpcli.auth.settings import AuthSettings
from mcpcli.auth.store import TokenStore
from mcpcli.auth.ui import AuthUI
from mcpcli.errors import AuthError, UsageError

DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"


def run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return anyio.run(lambda: fn(*args, **kwargs))


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits between polls, recorded instead of slept."""
    seen: list[float] = []

    async def wait(seconds: float) -> None:
        seen.append(seconds)

    monkeypatch.setattr(device, "_wait", wait)
    return seen


def test_a_device_sign_in_registers_without_a_redirect_and_polls_until_approved(oauth, browser, waits) -> None:
    srv = oauth(device=True, device_interval=3, device_approve_at=3)
    err = io.StringIO()
    rec = run(login, srv.mcp_url, AuthSettings(grant="device_code"), ui=AuthUI(stderr=err))
    assert rec.grant == "device_code" and rec.registration == "dynamic" and rec.redirect_uri is None
    assert rec.has_refresh_token
    registered = next(r for r in srv.requests if r["path"] == "/register")["json"]
    assert "redirect_uris" not in registered
    assert registered["grant_types"] == [DEVICE_CODE, "refresh_token"]
    asked = next(r for r in srv.requests if r["path"] == "/device")["form"]
    assert asked["resource"] == srv.mcp_url and asked["client_id"] == rec.client_id
    polls = srv.token_requests(DEVICE_CODE)
    assert len(polls) == 3 and all(p["form"]["resource"] == srv.mcp_url for p in polls)
    assert waits == [3, 3, 3]  # the interval the server asked for, before each poll
    said = err.getvalue()
    assert f"open {srv.base}/device/verify on any device and enter the code WDJB-0000" in said
    assert f"or open {srv.base}/device/verify?user_code=WDJB-0000" in said
    assert "waiting for the sign-in there (up to 5 min; Ctrl-C to give up)" in said  # --auth-timeout's 300 s
    assert "signed in on the other device" in said
    assert "DC-CANARY" not in said  # the device code is what the tokens are fetched with
    assert browser.opened == []
    # The tokens work, and are stored as any sign-in's.
    store = TokenStore()
    assert store.secrets_of(store.find(srv.mcp_url)).access_token in srv.access_tokens


def test_slow_down_makes_every_later_poll_wait_longer(oauth, browser, waits) -> None:
    srv = oauth(device=True, device_interval=1, device_slow_downs=2, device_approve_at=2)
    run(login, srv.mcp_url, AuthSettings(grant="device_code"), ui=AuthUI(stderr=io.StringIO()))
    assert waits == [1, 1 + device.SLOW_DOWN, 1 + 2 * device.SLOW_DOWN, 1 + 2 * device.SLOW_DOWN]


@pytest.mark.parametrize(("outcome", "said"), [
    ("deny", "the sign-in was declined on the other device"),
    ("expire", "the code expired before the sign-in was approved"),
])
def test_a_declined_or_expired_code_ends_the_sign_in_with_nothing_stored(oauth, browser, waits, outcome, said) -> None:
    srv = oauth(device=True, device_outcome=outcome)
    with pytest.raises(AuthError, match=said) as caught:
        run(login, srv.mcp_url, AuthSettings(grant="device_code"), ui=AuthUI(stderr=io.StringIO()))
    assert "DC-CANARY" not in str(caught.value) and "DC-CANARY" not in (caught.value.hint or "")
    assert TokenStore().find(srv.mcp_url) is None


def test_the_wait_ends_at_the_sign_in_timeout(oauth, browser, waits) -> None:
    srv = oauth(device=True, device_interval=2, device_approve_at=100)
    with pytest.raises(AuthError, match="nobody entered the code within 5 s") as caught:
        run(login, srv.mcp_url, AuthSettings(grant="device_code", timeout=5), ui=AuthUI(stderr=io.StringIO()))
    assert "--device" in (caught.value.hint or "")
    assert waits == [2, 2]  # a third wait would end past the timeout (waits are not slept here)


def test_an_authorization_server_without_a_device_endpoint_is_told_plainly(oauth, browser) -> None:
    srv = oauth()
    with pytest.raises(AuthError, match="offers no sign-in on another device") as caught:
        run(login, srv.mcp_url, AuthSettings(grant="device_code"), ui=AuthUI(stderr=io.StringIO()))
    assert "--no-browser" in (caught.value.hint or "")
    assert not any(r["path"] == "/register" for r in srv.requests)


def test_a_pre_registered_client_signs_in_on_another_device_with_its_secret(oauth, browser, waits) -> None:
    srv = oauth(device=True, clients={"tv": "s3cret"}, auth_methods=["client_secret_post"])
    rec = run(login, srv.mcp_url, AuthSettings(grant="device_code", client_id="tv", client_secret="s3cret"),
              ui=AuthUI(stderr=io.StringIO()))
    assert rec.client_id == "tv" and rec.registration == "pre-registered"
    assert next(r for r in srv.requests if r["path"] == "/device")["form"]["client_secret"] == "s3cret"
    assert not any(r["path"] == "/register" for r in srv.requests)


def test_a_device_sign_in_refreshes_and_signs_in_the_same_way_again(oauth, browser, waits) -> None:
    """Later commands refresh its tokens; once the refresh token is dead, the new sign-in
    is on another device again, not in a browser."""
    srv = oauth(device=True)
    run(login, srv.mcp_url, AuthSettings(grant="device_code"), ui=AuthUI(stderr=io.StringIO()))
    store = TokenStore()

    def expire() -> None:
        rec = store.find(srv.mcp_url)
        rec.expires_at = 1.0
        store.save(rec, store.secrets_of(rec))

    srv.expire_access_tokens()
    expire()
    auth = OAuthAuthenticator(srv.mcp_url, AuthSettings(), store=store, ui=AuthUI(stderr=io.StringIO()))
    assert run(auth.authorization) is not None
    assert len(srv.token_requests("refresh_token")) == 1
    srv.expire_refresh_tokens()
    expire()
    again = OAuthAuthenticator(srv.mcp_url, AuthSettings(), store=store, ui=AuthUI(stderr=io.StringIO()))
    assert run(again.authorization) is None  # the refresh failed: nothing left to send
    assert run(again.challenge, 401, [], srv.mcp_url) is True
    assert [r["path"] for r in srv.requests].count("/device") == 2
    assert store.find(srv.mcp_url).grant == "device_code"
    assert browser.opened == []


def test_stored_auth_only_never_starts_a_device_sign_in(oauth, browser) -> None:
    srv = oauth(device=True)
    auth = OAuthAuthenticator(srv.mcp_url, AuthSettings(grant="device_code"), mode="stored-only", store=TokenStore())
    with pytest.raises(AuthError, match="--stored-auth-only"):
        run(auth.challenge, 401, [], srv.mcp_url)
    assert not any(r["path"] == "/device" for r in srv.requests)


@pytest.mark.parametrize("name", ["device", "device-code", "deviceCode", "device_code"])
def test_the_grant_is_named_in_the_config_or_the_environment(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_OAUTH_GRANT", name)
    assert AuthSettings.build().grant == "device_code"


def test_an_unknown_grant_names_the_device_grant_among_the_known() -> None:
    with pytest.raises(UsageError, match="device_code"):
        AuthSettings.build(None, {"grant": "implicit"})


def test_mcp_auth_login_device_shows_the_code_stores_the_tokens_and_then_calls(oauth, waits, tmp_path) -> None:
    """The command as a person in an SSH session runs it: no browser here (BROWSER unset,
    no display), the code and the address on stderr, then a call with the stored tokens."""
    from helpers import mcp_in

    from .conftest import child_env

    srv = oauth(device=True)
    env = child_env(DISPLAY="", WAYLAND_DISPLAY="", BROWSER="")
    login_result = mcp_in("auth", "login", srv.mcp_url, "--device", env=env)
    assert login_result.code == 0, login_result
    assert "enter the code WDJB-0000" in login_result.stderr
    assert "signed in to" in login_result.stderr
    listed = mcp_in("tools", "list", srv.mcp_url, "--stored-auth-only", env=env)
    assert listed.code == 0, listed
    status = mcp_in("auth", "status", srv.mcp_url, "--json", env=env)
    assert status.code == 0 and '"device_code"' in status.stdout
    for secret in srv.issued:
        for text in (login_result.stdout, login_result.stderr, listed.stderr, status.stdout):
            assert secret not in text


def test_mcp_auth_login_device_declined_is_exit_3(oauth, waits) -> None:
    from helpers import mcp_in

    from .conftest import child_env

    srv = oauth(device=True, device_outcome="deny")
    result = mcp_in("auth", "login", srv.mcp_url, "--device", env=child_env())
    assert result.code == 3, result
    assert "declined on the other device" in result.stderr


def test_device_and_client_credentials_together_is_a_usage_error(oauth) -> None:
    from helpers import mcp_in

    from .conftest import child_env

    srv = oauth(device=True)
    result = mcp_in("auth", "login", srv.mcp_url, "--device", "--client-credentials", "--client-id", "x",
                    env=child_env())
    assert result.code == 2 and "give one" in result.stderr
    assert not any(r["path"] == "/device" for r in srv.requests)


@pytest.mark.parametrize("uri", ["http://evil.example/device", "javascript:alert(1)", "https://user@evil.example/x"])
def test_an_address_to_open_that_is_not_plain_https_is_refused_before_it_is_shown(oauth, browser, uri) -> None:
    srv = oauth(device=True, device_verification_uri=uri)
    err = io.StringIO()
    with pytest.raises(AuthError, match="verification_uri"):
        run(login, srv.mcp_url, AuthSettings(grant="device_code"), ui=AuthUI(stderr=err))
    assert uri not in err.getvalue()
    assert srv.token_requests(DEVICE_CODE) == []


def test_signing_in_on_another_device_again_uses_the_stored_client(oauth, browser, waits) -> None:
    srv = oauth(device=True, clients={"tv": "s3cret"}, auth_methods=["client_secret_post"])
    run(login, srv.mcp_url, AuthSettings(grant="device_code", client_id="tv", client_secret="s3cret"),
        ui=AuthUI(stderr=io.StringIO()))
    again = run(login, srv.mcp_url, AuthSettings(grant="device_code"), ui=AuthUI(stderr=io.StringIO()))
    assert again.client_id == "tv" and again.registration == "pre-registered"
    asked = [r["form"] for r in srv.requests if r["path"] == "/device"]
    assert len(asked) == 2 and asked[1]["client_secret"] == "s3cret"
    assert not any(r["path"] == "/register" for r in srv.requests)
