"""Token storage: the keyring with time limits, the opt-in file store, the lock."""

from __future__ import annotations

import json
import os
import time

import keyring
import keyring.backends.fail
import keyring.backends.null
import pytest

from mcpcli.auth import store as store_mod
from mcpcli.auth.store import KeyringSecrets, Record, Secrets, TokenStore
from mcpcli.errors import AuthError

from .conftest import mode_of
from .fake_backends import RELEASE, HangingKeyring, PlaintextLikeKeyring, RaisingKeyring


def record(url: str = "https://mcp.example.com/mcp", **kw) -> Record:
    base = {"server_url": url, "resource": url, "issuer": "https://as.example.com",
            "token_endpoint": "https://as.example.com/token", "client_id": "cid"}
    base.update(kw)
    return Record(**base)


def test_keyring_store_keeps_secrets_out_of_the_index(isolated_env) -> None:
    store = TokenStore("keyring")
    rec = record()
    store.save(rec, Secrets(access_token="AT-CANARY-1", refresh_token="RT-CANARY-1", client_secret="CS-CANARY-1"))
    index = store.index_path.read_text()
    assert "CANARY" not in index
    assert mode_of(store.index_path) == 0o600
    assert mode_of(store.index_path.parent) == 0o700
    backend = keyring.get_keyring()
    # keyed by authorization server and resource
    assert backend.get_password("mcpcli", "https://as.example.com|https://mcp.example.com/mcp|access_token") == "AT-CANARY-1"
    got = store.secrets_of(store.find(rec.server_url))
    assert (got.access_token, got.refresh_token, got.client_secret) == ("AT-CANARY-1", "RT-CANARY-1", "CS-CANARY-1")
    assert "CANARY" not in repr(got)
    store.delete(store.find(rec.server_url))
    assert backend.get_password("mcpcli", "https://as.example.com|https://mcp.example.com/mcp|access_token") is None
    assert store.find(rec.server_url) is None


@pytest.mark.parametrize(
    "backend",
    [keyring.backends.fail.Keyring(), keyring.backends.null.Keyring(), PlaintextLikeKeyring()],
    ids=["fail", "null", "keyrings.alt"],
)
def test_no_real_keyring_is_a_clear_error_and_no_plaintext(backend, isolated_env) -> None:
    keyring.set_keyring(backend)
    store = TokenStore("keyring")
    with pytest.raises(AuthError) as info:
        store.save(record(), Secrets(access_token="AT-CANARY-2"))
    assert "no usable keyring" in info.value.message
    hint = info.value.hint or ""
    assert "--token-store file" in hint and "MCP_TOKEN_STORE=file" in hint and "dbus-run-session" in hint
    assert not (store.dir / "tokens.json").exists()
    assert not any("CANARY" in p.read_text() for p in store.dir.rglob("*") if p.is_file())


def test_keyring_that_raises(isolated_env) -> None:
    keyring.set_keyring(RaisingKeyring())
    store = TokenStore("keyring")
    with pytest.raises(AuthError, match="the keyring failed"):
        store.save(record(), Secrets(access_token="AT-CANARY-3"))


@pytest.mark.slow
def test_keyring_that_hangs_gives_up_within_the_timeout(isolated_env, monkeypatch) -> None:
    monkeypatch.setenv("MCP_KEYRING_TIMEOUT", "0.5")
    keyring.set_keyring(HangingKeyring())
    RELEASE.clear()
    try:
        secrets = KeyringSecrets()
        started = time.monotonic()
        with pytest.raises(AuthError, match=r"did not respond within 0\.5s"):
            secrets.get("x")
        assert time.monotonic() - started < 3
    finally:
        RELEASE.set()


def test_file_store_is_private_even_under_umask_000(isolated_env) -> None:
    old = os.umask(0)
    try:
        store = TokenStore("file")
        store.save(record(store="file"), Secrets(access_token="AT-CANARY-4", refresh_token="RT-CANARY-4"))
    finally:
        os.umask(old)
    tokens = store.dir / "tokens.json"
    assert mode_of(tokens) == 0o600 and mode_of(store.dir) == 0o700
    assert "AT-CANARY-4" in tokens.read_text()
    assert "CANARY" not in store.index_path.read_text()
    assert not list(store.dir.glob(".tokens.json.*"))  # no temp files left behind


def test_file_store_tightens_loose_permissions(isolated_env, capsys) -> None:
    store = TokenStore("file")
    store.save(record(store="file"), Secrets(access_token="AT-CANARY-5"))
    tokens = store.dir / "tokens.json"
    os.chmod(tokens, 0o644)
    assert store.secrets_of(store.find(record().server_url)).access_token == "AT-CANARY-5"
    assert mode_of(tokens) == 0o600
    assert "readable by others" in capsys.readouterr().err


def test_file_store_refuses_a_symlink(isolated_env, tmp_path) -> None:
    store = TokenStore("file")
    store.dir.mkdir(parents=True, exist_ok=True)
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    (store.dir / "tokens.json").symlink_to(target)
    with pytest.raises(AuthError, match="symbolic link"):
        store.save(record(store="file"), Secrets(access_token="AT-CANARY-6"))
    assert target.read_text() == "{}"


def test_a_symlinked_or_shared_sign_in_directory_is_refused(isolated_env, tmp_path) -> None:
    store = TokenStore("file")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    store.dir.parent.mkdir(parents=True, exist_ok=True)
    store.dir.symlink_to(elsewhere)
    with pytest.raises(AuthError, match="it is a symlink"):
        store.save(record(store="file"), Secrets(access_token="AT-CANARY-7"))
    assert os.listdir(elsewhere) == [] and mode_of(elsewhere) == 0o755  # not written, not chmod-ed
    store.dir.unlink()
    store.dir.mkdir(mode=0o700)
    store.dir.chmod(0o777)  # others could have planted anything: refused, not repaired
    with pytest.raises(AuthError, match="lets others in"):
        store.save(record(store="file"), Secrets(access_token="AT-CANARY-7"))
    assert mode_of(store.dir) == 0o777


def test_damaged_index_keeps_other_entries_and_warns(isolated_env, capsys) -> None:
    store = TokenStore("keyring")
    store.save(record("https://a.example/mcp"), Secrets(access_token="AT-a"))
    store.save(record("https://b.example/mcp"), Secrets(access_token="AT-b"))
    doc = json.loads(store.index_path.read_text())
    doc["servers"]["https://a.example/mcp"] = {"server_url": 42}
    store.index_path.write_text(json.dumps(doc))
    assert [r.server_url for r in store.records()] == ["https://b.example/mcp"]
    assert store.find("https://a.example/mcp") is None
    assert "damaged" in capsys.readouterr().err


def test_garbage_index_is_moved_aside(isolated_env, capsys) -> None:
    store = TokenStore("keyring")
    store.dir.mkdir(parents=True, exist_ok=True)
    store.index_path.write_text("{not json")
    assert store.records() == []
    assert list(store.dir.glob("servers.json.damaged-*"))
    store.save(record(), Secrets(access_token="AT-c"))  # and life goes on
    assert store.find(record().server_url) is not None
    assert "damaged" in capsys.readouterr().err


def test_secrets_shared_by_two_urls_survive_one_logout(isolated_env) -> None:
    store = TokenStore("keyring")
    a = record("https://mcp.example.com/mcp", resource="https://mcp.example.com/mcp")
    b = record("https://mcp.example.com/mcp/", resource="https://mcp.example.com/mcp")
    store.save(a, Secrets(access_token="AT-shared"))
    store.save(b, Secrets(access_token="AT-shared"))
    store.delete(store.find(a.server_url))
    assert store.secrets_of(store.find(b.server_url)).access_token == "AT-shared"


def test_lock_is_exclusive_between_store_objects(isolated_env, monkeypatch) -> None:
    first = TokenStore("keyring")
    second = TokenStore("keyring")
    second.lock.timeout = 0.2
    with first.locked():
        with pytest.raises(AuthError, match=r"held the sign-in lock"):
            second.lock.acquire()
    second.lock.acquire()  # free again
    second.lock.release()


def test_unknown_token_store_is_a_usage_error(monkeypatch) -> None:
    from mcpcli.errors import UsageError

    monkeypatch.setenv("MCP_TOKEN_STORE", "plaintext")
    with pytest.raises(UsageError):
        TokenStore()


def test_warn_hook_is_used(isolated_env, monkeypatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr(store_mod, "warn", seen.append)
    store = TokenStore("keyring")
    store.dir.mkdir(parents=True, exist_ok=True)
    store.index_path.write_text("[]")
    store.records()
    assert any("damaged" in m for m in seen)


def test_profiles_keep_apart_and_the_default_keeps_todays_keys(isolated_env) -> None:
    """A sign-in stored before profiles existed is the default profile's; another profile
    has its own index entry and keyring keys, and forgetting it leaves the default alone."""
    url = "https://mcp.example.com/mcp"
    old_key = "https://as.example.com|https://mcp.example.com/mcp|access_token"
    backend = keyring.get_keyring()
    TokenStore("keyring").save(record(), Secrets(access_token="AT-CANARY-DEFAULT"))
    assert set(json.loads(TokenStore("keyring").index_path.read_text())["servers"]) == {url}
    assert backend.get_password("mcpcli", old_key) == "AT-CANARY-DEFAULT"

    work = TokenStore("keyring", profile="work")
    assert work.find(url) is None  # the default's sign-in is not work's
    work.save(record(profile="work"), Secrets(access_token="AT-CANARY-WORK"))
    assert backend.get_password("mcpcli", f"work@{old_key}") == "AT-CANARY-WORK"
    assert backend.get_password("mcpcli", old_key) == "AT-CANARY-DEFAULT"
    default = TokenStore("keyring")
    assert default.secrets_of(default.find(url)).access_token == "AT-CANARY-DEFAULT"
    assert work.secrets_of(work.find(url)).access_token == "AT-CANARY-WORK"
    assert sorted((r.profile or "") for r in default.records()) == ["", "work"]
    assert [r.profile for r in work.records(every_profile=False)] == ["work"]

    work.delete(work.find(url))
    assert backend.get_password("mcpcli", f"work@{old_key}") is None
    assert default.secrets_of(default.find(url)).access_token == "AT-CANARY-DEFAULT"


def test_profile_names_are_checked() -> None:
    from mcpcli.auth import check_profile
    from mcpcli.errors import UsageError

    assert check_profile(None) is None and check_profile("default") is None and check_profile("") is None
    assert check_profile("work-2") == "work-2"
    for bad in ("a b", "-x", "x@y", "a/b", "x" * 33):
        with pytest.raises(UsageError):
            check_profile(bad)
