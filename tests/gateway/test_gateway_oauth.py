"""An upstream that requires OAuth (the official SDK's auth stack): the gateway signs in
with our client and keeps the tokens; its downstream stdio channel stays clean."""

from __future__ import annotations

import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from gwkit import listening
from helpers import Peers, free_port, mcp

pytestmark = [pytest.mark.peer, pytest.mark.slow]

AUTH = Path(__file__).resolve().parent.parent / "auth"
PROXY = [sys.executable, "-m", "mcpcli", "serve", "--proxy"]
#: The gateway is the client's stdio server: it gets only these of the test's environment
#: (the token store and the isolated state directory among them).
PASS = [arg for var in ("MCP_TOKEN_STORE", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                        "PYTHON_KEYRING_BACKEND", "BROWSER", "NO_PROXY", "no_proxy")
        for arg in ("--env", var)]
ENV = {"MCP_TOKEN_STORE": "file", "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


@pytest.fixture
def sdk_oauth(peers: Peers) -> Iterator[str]:
    port = free_port()
    with listening([peers.sdk(), str(AUTH / "sdk_oauth_server.py"), str(port)], port,
                   what="the SDK OAuth server") as url:
        yield url


@pytest.fixture
def browser_script(tmp_path: Path) -> Path:
    """A BROWSER that GETs the sign-in URL and follows the redirect (the auth tests' script)."""
    path = tmp_path / "fake-browser"
    path.write_text(f"#!{sys.executable}\n" + (AUTH / "browser_script.py").read_text())
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_stored_tokens_are_used_and_never_reach_the_client(sdk_oauth: str, browser_script: Path) -> None:
    login = mcp("auth", "login", sdk_oauth, env={**ENV, "BROWSER": str(browser_script)})
    assert login.code == 0, login
    # No browser now: only the stored sign-in can make this work.
    result = mcp("tools", "call", "whoami", "--json", *PASS, "--", *PROXY, sdk_oauth,
                 env={**ENV, "BROWSER": "/nonexistent"})
    assert result.code == 0, result
    client_id, scopes = result.json["content"][0]["text"].split(" ", 1)
    assert client_id and scopes == "mcp:read"
    assert "SDK-CANARY" not in result.stdout + result.stderr


def test_a_first_401_signs_in_as_the_client_does(sdk_oauth: str, browser_script: Path) -> None:
    result = mcp("tools", "call", "whoami", "--json", *PASS, "--", *PROXY, sdk_oauth,
                 env={**ENV, "BROWSER": str(browser_script)})
    assert result.code == 0, result
    assert result.json["content"][0]["text"].endswith("mcp:read")
    assert "SDK-CANARY" not in result.stdout + result.stderr
    status = mcp("auth", "status", sdk_oauth, "--json", env=ENV)
    assert status.code == 0 and status.json["refreshToken"] is True, status
