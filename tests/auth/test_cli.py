"""The `mcp` command against the fake authorization server: sign-in, reuse, step-up,
logout, headless failures, refresh races, and canary scans for leaked secrets.

The command runs in process (`mcp_in`) except where the process itself is under test:
what a browser can read of it in /proc, a keyring shared by processes, a keyring that
hangs, two processes refreshing at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import REPO, mcp, mcp_in, wait_until

from .conftest import child_env, state_files

TESTS = Path(__file__).resolve().parent.parent


def scan(server, *texts: str) -> None:
    """No secret the server ever issued may appear in any of `texts`."""
    for secret in server.issued:
        for text in texts:
            assert secret not in text, f"leaked secret {secret[:12]}..."


@pytest.fixture
def env(browser_script: Path, tmp_path: Path) -> dict[str, str]:
    return child_env(BROWSER=str(browser_script), FAKE_BROWSER_LOG=str(tmp_path / "browser.log"))


def browser_log(tmp_path: Path) -> list[str]:
    path = tmp_path / "browser.log"
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.slow
def test_sign_in_on_401_reuse_step_up_logout(oauth, env, tmp_path) -> None:
    srv = oauth(challenge_scope="mcp:read")
    first = mcp("tools", "list", srv.mcp_url, "--json", env=env)
    assert first.code == 0, first
    assert [t["name"] for t in first.json["tools"]] == ["echo", "write"]
    assert "sign in" in first.stderr
    assert len(browser_log(tmp_path)) == 1

    # Reused: no browser, the stored token goes out on the very first request.
    before = len(srv.requests)
    again = mcp("tools", "call", srv.mcp_url, "echo", "--trace", env=env)
    assert again.code == 0, again
    assert len(browser_log(tmp_path)) == 1
    mcp_posts = [r for r in srv.requests[before:] if r["path"] == "/mcp"]
    assert all(r["headers"].get("authorization", "").startswith("Bearer AT-CANARY-") for r in mcp_posts)
    assert all("CANARY" not in r["raw_target"] for r in srv.requests)  # never in a URL
    # The access token is a known secret of the connection: a message quoting it is
    # recorded and traced without it.
    token = [secret for secret in srv.issued if secret.startswith("AT-CANARY-")][-1]
    rec = tmp_path / "rec.ndjson"
    quoted = mcp("tools", "call", srv.mcp_url, "echo", "-a", f"message={token}", "--trace",
                 "--record", str(rec), env=env)
    assert quoted.code == 0, quoted
    assert token not in quoted.stderr + rec.read_text()
    assert '"message":"«redacted»"' in rec.read_text()

    # Step-up: `write` needs mcp:write; the new sign-in asks for the union.
    step = mcp("tools", "call", srv.mcp_url, "write", env=env)
    assert step.code == 0, step
    scopes = [r["query"].get("scope") for r in srv.requests if r["path"] == "/authorize"]
    assert scopes == ["mcp:read", "mcp:read mcp:write"]

    status = mcp("auth", "status", srv.mcp_url, "--json", env=env)
    assert status.code == 0, status
    info = status.json
    assert info["issuer"] == srv.issuer and info["store"] == "file"
    assert sorted(info["scopes"]) == ["mcp:read", "mcp:write"]
    assert info["refreshToken"] is True and info["expired"] is False

    listed = mcp("auth", "list", "--json", env=env)
    assert [i["server"] for i in listed.json] == [srv.mcp_url]

    token = mcp("auth", "token", srv.mcp_url, env=env)
    assert token.code == 0 and token.stdout.strip() in srv.access_tokens

    out = mcp("auth", "logout", srv.mcp_url, env=env)
    assert out.code == 0, out
    assert "revoked" in out.stderr
    assert srv.revoked  # RFC 7009 called
    gone = mcp("auth", "status", srv.mcp_url, env=env)
    assert gone.code == 3 and "not signed in" in gone.stderr

    scan(srv, first.stdout, first.stderr, again.stdout, again.stderr, step.stdout, step.stderr,
         status.stdout, status.stderr, listed.stdout, out.stdout, out.stderr, gone.stderr)
    # Neither the browser child nor `mcp` itself (read from /proc while it held tokens,
    # during the step-up sign-in) had a secret in its argv or its environment.
    entries = [json.loads(line) for line in browser_log(tmp_path)]
    assert len(entries) == 2 and entries[1]["parent_argv"]  # /proc was readable
    for entry in entries:
        scan(srv, entry["argv"], entry["environ"], entry["parent_argv"], entry["parent_environ"])
    # The secrets file is private; the index holds no secrets.
    for path in state_files():
        if path.name == "servers.json":
            scan(srv, path.read_text())


def test_headless_without_keyring_fails_clearly_and_writes_nothing(oauth, browser_script, tmp_path) -> None:
    srv = oauth()
    env = {"BROWSER": str(browser_script), "FAKE_BROWSER_LOG": str(tmp_path / "browser.log"),
           "NO_PROXY": "127.0.0.1"}
    result = mcp_in("tools", "list", srv.mcp_url, env=env)  # PYTHON_KEYRING_BACKEND=fail (conftest)
    assert result.code == 3, result
    assert "no usable keyring" in result.stderr
    assert "--token-store file" in result.stderr and "MCP_TOKEN_STORE=file" in result.stderr
    assert "Traceback" not in result.stderr
    assert browser_log(tmp_path) == []  # failed before anyone was sent to sign in
    assert state_files() == []  # no silent plaintext


@pytest.mark.slow
def test_login_then_status_in_the_keyring(oauth, env, tmp_path) -> None:
    """The default store through a keyring shared by processes (a test backend)."""
    keyring_file = tmp_path / "keyring.json"
    env = {k: v for k, v in env.items() if k != "MCP_TOKEN_STORE"}
    env.update(PYTHON_KEYRING_BACKEND="auth.fake_backends.JsonFileKeyring",
               PYTHONPATH=str(TESTS), TEST_KEYRING_FILE=str(keyring_file))
    srv = oauth()
    login = mcp("auth", "login", srv.mcp_url, env=env)
    assert login.code == 0, login
    assert "OS keyring" in login.stderr
    stored = json.loads(keyring_file.read_text())
    assert any(v.startswith("AT-CANARY-") for v in stored.values())
    assert not any(p.name == "tokens.json" for p in state_files())
    for path in state_files():
        scan(srv, path.read_text())
    again = mcp("tools", "list", srv.mcp_url, env=env)
    assert again.code == 0, again
    assert len(browser_log(tmp_path)) == 1


def test_no_auth_and_stored_auth_only(oauth, env, tmp_path) -> None:
    srv = oauth()
    none = mcp_in("tools", "list", srv.mcp_url, "--no-auth", env=env)
    assert none.code == 3 and "--no-auth" in none.stderr
    stored = mcp_in("tools", "list", srv.mcp_url, "--stored-auth-only", env=env)
    assert stored.code == 3
    assert "mcp auth login" in stored.stderr
    assert browser_log(tmp_path) == []


def test_non_interactive_without_a_browser_fails_fast(oauth, tmp_path) -> None:
    srv = oauth()
    result = mcp_in("tools", "list", srv.mcp_url, env=child_env(DISPLAY="", WAYLAND_DISPLAY=""), timeout=30)
    assert result.code == 3, result
    assert "no terminal or browser" in result.stderr


def test_hostile_authorization_endpoint_via_cli(oauth, env, tmp_path) -> None:
    srv = oauth(authorization_endpoint='https://a.example/"&calc&"')
    result = mcp_in("auth", "login", srv.mcp_url, env=env)
    assert result.code == 3
    assert "refusing to open unsafe authorization URL" in result.stderr
    assert browser_log(tmp_path) == []


@pytest.mark.slow
def test_expired_refresh_token_asks_to_sign_in_again(oauth, env) -> None:
    srv = oauth(access_ttl=3600)
    assert mcp_in("auth", "login", srv.mcp_url, env=env).code == 0
    srv.expire_access_tokens()
    srv.expire_refresh_tokens()
    result = mcp_in("tools", "list", srv.mcp_url, "--stored-auth-only", env=env)
    assert result.code == 3, result
    assert "mcp auth login" in result.stderr
    assert mcp_in("auth", "status", srv.mcp_url, env=env).code == 3  # the dead sign-in was dropped


@pytest.mark.slow
def test_keyring_that_hangs_in_a_real_process(oauth, env) -> None:
    srv = oauth()
    env = {k: v for k, v in env.items() if k != "MCP_TOKEN_STORE"}
    env.update(PYTHON_KEYRING_BACKEND="auth.fake_backends.HangingKeyring", PYTHONPATH=str(TESTS),
               MCP_KEYRING_TIMEOUT="1")
    started = time.monotonic()
    result = mcp("auth", "login", srv.mcp_url, env=env, timeout=60)
    assert result.code == 3, result
    assert "did not respond" in result.stderr
    assert time.monotonic() - started < 30  # bounded: no hang on a locked keyring


def _blocked_flock_waiters() -> int:
    try:
        text = Path("/proc/locks").read_text()
    except OSError:
        return 0
    return sum(1 for line in text.splitlines() if "->" in line and "FLOCK" in line)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/locks")
@pytest.mark.slow
def test_two_processes_refreshing_at_once_refresh_once(oauth, env) -> None:
    import threading

    gate = threading.Event()
    srv = oauth(token_gate=gate)
    gate.set()
    assert mcp("auth", "login", srv.mcp_url, env=env).code == 0
    # Make the stored access token look expired to both processes.
    index = next(p for p in state_files() if p.name == "servers.json")
    doc = json.loads(index.read_text())
    doc["servers"][srv.mcp_url]["expires_at"] = 1.0
    index.write_text(json.dumps(doc))
    gate.clear()
    full_env = {**os.environ, **env}
    full_env.pop("PYTHONSTARTUP", None)
    procs = [
        subprocess.Popen([sys.executable, "-m", "mcpcli", "auth", "token", srv.mcp_url],
                         env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        for _ in range(2)
    ]
    try:
        # One process is inside the refresh (held at the token endpoint) while holding the
        # lock; the other waits for the lock. Then let the refresh finish.
        wait_until(lambda: bool(srv.token_requests("refresh_token")) and _blocked_flock_waiters() >= 1,
                   timeout=30, what="one refresh in flight and one command waiting for the lock")
        gate.set()
        outs = [p.communicate(timeout=60) for p in procs]
    finally:
        gate.set()
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0], outs
    tokens = {o[0].strip() for o in outs}
    assert len(tokens) == 1  # both got the one fresh token
    assert len(srv.token_requests("refresh_token")) == 1  # the rotated refresh token was used once
    assert mcp("tools", "list", srv.mcp_url, "--stored-auth-only", env=env).code == 0


@pytest.mark.slow
def test_config_entry_oauth_fields_and_logout_all(oauth, env, tmp_path, isolated_env) -> None:
    """A configured server's `oauth` object (with ${VAR}) drives sign-in; logout --all forgets all."""
    pre = oauth(clients={"cfg-client": "cfg-secret"}, registration=False, auth_methods=["client_secret_post"])
    other = oauth()
    config = isolated_env / "config" / "mcpcli" / "mcp.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"mcpServers": {
        "corp": {"url": pre.mcp_url, "oauth": {"clientId": "cfg-client", "clientSecret": "${CORP_SECRET}",
                                               "scopes": ["mcp:read", "mcp:write"]}},
    }}))
    env = {**env, "CORP_SECRET": "cfg-secret"}
    result = mcp_in("tools", "call", "corp", "write", env=env)
    assert result.code == 0, result
    authz = next(r for r in pre.requests if r["path"] == "/authorize")["query"]
    assert authz["client_id"] == "cfg-client" and authz["scope"] == "mcp:read mcp:write"
    assert pre.token_requests("authorization_code")[0]["form"]["client_secret"] == "cfg-secret"
    status = mcp_in("auth", "status", "corp", "--json", env=env)
    assert status.code == 0 and status.json["name"] == "corp", status
    assert mcp_in("auth", "login", other.mcp_url, env=env).code == 0
    assert len(mcp_in("auth", "list", "--json", env=env).json) == 2
    out = mcp_in("auth", "logout", "--all", env=env)
    assert out.code == 0, out
    assert mcp_in("auth", "list", "--json", env=env).json == []
    assert pre.revoked and other.revoked


def test_stdio_targets_are_not_for_oauth(env, isolated_env) -> None:
    config = isolated_env / "config" / "mcpcli" / "mcp.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"mcpServers": {"local": {"command": "true"}}}))
    result = mcp_in("auth", "login", "local", env=env)
    assert result.code == 2 and "not a remote" in result.stderr
    usage = mcp_in("auth", "logout", env=env)
    assert usage.code == 2 and "--all" in usage.stderr
