"""Against a real peer: the official Python SDK's OAuth server stack (metadata, DCR, PKCE,
token endpoint, refresh, revocation, audience-checked bearer middleware)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Peers, free_port, mcp, stop_group, wait_listening

from .conftest import child_env, state_files

HERE = Path(__file__).resolve().parent
pytestmark = pytest.mark.peer


@pytest.fixture
def sdk_oauth(peers: Peers) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [peers.sdk(), str(HERE / "sdk_oauth_server.py"), str(port)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_listening(port, proc, "the SDK OAuth server")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_group(proc)


def test_sign_in_refresh_and_revoke_with_the_sdk(sdk_oauth: str, browser_script: Path) -> None:
    env = child_env(BROWSER=str(browser_script))
    first = mcp("tools", "call", sdk_oauth, "whoami", "--json", env=env)
    assert first.code == 0, first
    client_id, scopes = first.json["content"][0]["text"].split(" ", 1)
    assert scopes == "mcp:read"  # the PRM's scopes_supported, granted

    status = mcp("auth", "status", sdk_oauth, "--json", env=env).json
    assert status["clientId"] == client_id and status["refreshToken"] is True
    old = mcp("auth", "token", sdk_oauth, env=env).stdout.strip()
    assert old.startswith("SDK-CANARY-AT-")

    # Pretend the access token expired: the SDK's token endpoint refreshes (and rotates).
    index = next(p for p in state_files() if p.name == "servers.json")
    doc = json.loads(index.read_text())
    doc["servers"][sdk_oauth]["expires_at"] = 1.0
    index.write_text(json.dumps(doc))
    again = mcp("tools", "call", sdk_oauth, "whoami", "--stored-auth-only", "--json", env=env)
    assert again.code == 0, again
    new = mcp("auth", "token", sdk_oauth, env=env).stdout.strip()
    assert new != old and new.startswith("SDK-CANARY-AT-")

    # Logout revokes at the SDK; the token no longer works there.
    out = mcp("auth", "logout", sdk_oauth, env=env)
    assert out.code == 0 and "revoked" in out.stderr, out
    denied = mcp("tools", "call", sdk_oauth, "whoami", env={**env, "MCP_BEARER_TOKEN": new})
    assert denied.code == 3, denied

    for result in (first, again, out):
        assert "SDK-CANARY" not in result.stdout + result.stderr
