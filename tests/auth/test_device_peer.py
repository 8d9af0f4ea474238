"""Against a real peer: `mcp auth login --device` with npm oidc-provider, a certified OpenID
provider, as the authorization server (device flow, dynamic registration, resource
indicators), and the person on the other device played by a script that opens the
address, confirms the code, signs in and consents through the provider's own pages."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.cookiejar import CookieJar
from pathlib import Path

import pytest
from helpers import Peers, free_port, mcp, stop_group, wait_listening

from .conftest import child_env

HERE = Path(__file__).resolve().parent
pytestmark = [pytest.mark.peer, pytest.mark.slow]  # the provider asks for RFC 8628's 5 s between polls


@pytest.fixture
def provider(peers: Peers) -> Iterator[str]:
    """The provider and the MCP endpoint it protects; yields the endpoint's URL."""
    node, entry = peers.oidc()
    as_port, mcp_port = free_port(), free_port()
    env = {**os.environ, "OIDC_PROVIDER": entry, "AS_PORT": str(as_port), "MCP_PORT": str(mcp_port)}
    proc = subprocess.Popen([node, str(HERE / "oidc_device_peer.mjs")], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        wait_listening(as_port, proc, "oidc-provider")
        wait_listening(mcp_port, proc, "the MCP endpoint")
        yield f"http://127.0.0.1:{mcp_port}/mcp"
    finally:
        stop_group(proc)
        assert proc.stderr is not None
        proc.stderr.close()


def _forms(page: str) -> Iterator[tuple[str | None, dict[str, str]]]:
    """Each form of `page`: its action and its inputs' names and values."""
    for form in re.finditer(r"<form\b([^>]*)>(.*?)</form>", page, re.S | re.I):
        action = re.search(r'action="([^"]*)"', form.group(1))
        fields = {}
        for tag in re.finditer(r"<input\b([^>]*)>", form.group(2), re.I):
            name = re.search(r'name="([^"]*)"', tag.group(1))
            value = re.search(r'value="([^"]*)"', tag.group(1))
            if name:
                fields[html.unescape(name.group(1))] = html.unescape(value.group(1)) if value else ""
        yield (html.unescape(action.group(1)) if action else None), fields


def approve_on_another_device(address: str, who: str) -> None:
    """Open `address` (verification_uri_complete) and go through the provider's pages:
    confirm the code, sign in as `who`, consent; until it says the sign-in succeeded."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()),
                                         urllib.request.ProxyHandler({}))
    response = opener.open(address, timeout=10)
    for _ in range(8):
        page, at = response.read().decode(), response.geturl()
        if "Sign-in Success" in page:
            return
        action, fields = next(_forms(page), (None, None))
        assert fields is not None, f"no form at {at}: {page[:300]}"
        fields.pop("abort", None)
        if 'name="login"' in page:
            fields.update(prompt="login", login=who, password="any")
        target = urllib.parse.urljoin(at, action or at)
        response = opener.open(target, urllib.parse.urlencode(fields).encode(), timeout=10)
    raise AssertionError("the provider's pages did not end in a successful sign-in")


def test_sign_in_on_another_device_with_oidc_provider(provider: str) -> None:
    env = {**os.environ, **child_env()}
    login = subprocess.Popen([sys.executable, "-m", "mcpcli", "auth", "login", provider, "--device"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
    try:
        assert login.stderr is not None
        said = []
        for line in login.stderr:
            said.append(line)
            if line.startswith("mcp: or open "):
                break
        assert said and said[-1].startswith("mcp: or open "), "".join(said)
        address = said[-1].split("or open ", 1)[1].strip()
        assert "enter the code" in said[0] and address.startswith("http://127.0.0.1:")
        approve_on_another_device(address, "ada")
        out, rest = login.communicate(timeout=60)
    finally:
        if login.poll() is None:
            login.kill()
            login.wait()
    assert login.returncode == 0, "".join(said) + rest
    assert "signed in on the other device" in rest
    assert json.loads(out)["grant"] == "device_code"  # stdout is data: what was stored

    # The token is one the provider issued for this endpoint, for the person who approved.
    called = mcp("tools", "call", provider, "whoami", "--stored-auth-only", env=child_env())
    assert called.code == 0, called
    assert called.json["content"][0]["text"] == "ada"
    status = mcp("auth", "status", provider, "--json", env=child_env())
    assert status.json["grant"] == "device_code" and status.json["registration"] == "dynamic"
    assert status.json["refreshToken"] is True

    # The access token "expired": the provider's token endpoint refreshes it (with the resource).
    from .conftest import state_files

    before = mcp("auth", "token", provider, env=child_env()).stdout.strip()
    index = next(p for p in state_files() if p.name == "servers.json")
    doc = json.loads(index.read_text())
    doc["servers"][provider]["expires_at"] = 1.0
    index.write_text(json.dumps(doc))
    again = mcp("tools", "call", provider, "whoami", "--stored-auth-only", env=child_env())
    assert again.code == 0, again
    assert again.json["content"][0]["text"] == "ada"
    assert mcp("auth", "token", provider, env=child_env()).stdout.strip() != before
