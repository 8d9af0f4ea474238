"""A 401 from a server with nothing to sign in to (no OAuth metadata anywhere): `mcp` says the
server wants a bearer token and how to give one, exit 3, on a terminal or not, keyring or not,
and attempts no sign-in. Servers that publish metadata, even only the 2025-03-26 way, still
get one."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import REPO, free_port, mcp, mcp_argv, mcp_in, stop_process, wait_until
from terminal import Terminal

from .conftest import child_env

TOKEN = "s3rve-t0ken-for-the-tests"
WANTS = "wants a bearer token: it answered HTTP 401 and publishes no OAuth metadata to sign in with"


def assert_told_to_give_a_token(text: str) -> None:
    assert WANTS in text, text
    for way in ("MCP_BEARER_TOKEN", "-H 'Authorization: Bearer TOKEN'", '"headers"'):
        assert way in text, text
    for old in ("keyring", "registration", "--client-id", "needs you to sign in", "Traceback"):
        assert old not in text, text


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Our own `mcp serve --http`, which wants a token on every path (discovery URLs too)."""
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    port = free_port()
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcpcli", "serve", str(REPO / "examples/tools.yaml"),
             "--http", f"127.0.0.1:{port}", "--auth-token", TOKEN],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fh,
        )
    try:
        wait_until(lambda: proc.poll() is not None or "serving" in log.read_text(), what="the server")
        assert proc.poll() is None, log.read_text()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(proc)


@pytest.mark.slow
@pytest.mark.parametrize("store", ["keyring", "file"])
def test_mcp_serve_http_on_a_terminal_without_the_token(served: str, store: str) -> None:
    """Before: "no usable keyring to store sign-ins in", or with a file store "client
    registration ... failed: HTTP 401 ... pass --client-id"."""
    term = Terminal(mcp_argv("tools", "list", served), env={"MCP_TOKEN_STORE": store})
    term.expect(WANTS)
    assert term.wait() == 3, term.output
    assert_told_to_give_a_token(term.output)


@pytest.mark.slow
def test_mcp_serve_http_piped_without_the_token(served: str) -> None:
    piped = mcp("tools", "list", served)
    assert piped.code == 3, piped
    assert_told_to_give_a_token(piped.stderr)
    assert piped.stdout == ""
    stored_only = mcp_in("tools", "list", served, "--stored-auth-only")
    assert stored_only.code == 3, stored_only
    assert_told_to_give_a_token(stored_only.stderr)
    as_json = mcp_in("tools", "list", served, "--json")
    assert as_json.code == 3 and as_json.stdout == ""
    error = json.loads(as_json.stderr)
    assert error["error"]["type"] == "auth" and error["error"]["exitCode"] == 3
    assert WANTS in error["error"]["message"] and "MCP_BEARER_TOKEN" in error["error"]["hint"]


@pytest.mark.slow
def test_the_ways_the_hint_names_work(served: str, tmp_path: Path) -> None:
    by_env = mcp_in("tools", "list", served, "--json", env={"MCP_BEARER_TOKEN": TOKEN})
    assert by_env.code == 0, by_env
    by_header = mcp_in("tools", "list", served, "--json", "-H", f"Authorization: Bearer {TOKEN}")
    assert by_header.code == 0, by_header
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"tools": {
        "url": served, "headers": {"Authorization": "Bearer ${TOOLS_TOKEN}"}}}}))
    by_config = mcp_in("--config", str(config), "tools", "list", "tools", "--json", env={"TOOLS_TOKEN": TOKEN})
    assert by_config.code == 0, by_config
    assert all("word_count" in r.stdout for r in (by_env, by_header, by_config))


@pytest.mark.slow
def test_mcp_auth_login_says_the_same(served: str) -> None:
    login = mcp_in("auth", "login", served, "--token-store", "file")
    assert login.code == 3, login
    assert_told_to_give_a_token(login.stderr)


def test_no_metadata_and_no_registration_endpoint_means_a_token(oauth, browser) -> None:
    """Discovery URLs answered 404 (not guarded): the 2025-03-26 default endpoints are tried,
    and a registration endpoint that is not there settles it, before anything is opened."""
    srv = oauth(prm=False, as_metadata=False, registration=False)
    result = mcp_in("tools", "list", srv.mcp_url)
    assert result.code == 3, result
    assert_told_to_give_a_token(result.stderr)
    assert srv.count("/register") == 1
    assert srv.count("/authorize") == 0 and browser.opened == []


def test_no_metadata_without_a_browser_is_still_a_token_question(oauth) -> None:
    """No terminal and no browser (BROWSER unset): before, "needs you to sign in, and this
    session has no terminal or browser"; the registration answers first now."""
    srv = oauth(prm=False, as_metadata=False, registration=False)
    result = mcp_in("tools", "list", srv.mcp_url)
    assert result.code == 3, result
    assert_told_to_give_a_token(result.stderr)


@pytest.mark.parametrize(
    "published",
    [
        {},                                           # RFC 9728 + RFC 8414
        {"prm_in_header": False},                     # the well-known protected-resource URL
        {"prm": False},                               # 2025-03-26: metadata at the server's origin
        {"prm": False, "as_metadata": False},         # 2025-03-26: the default endpoints, registration there
    ],
    ids=["prm", "prm-well-known", "as-metadata-at-origin", "default-endpoints"],
)
def test_servers_that_publish_a_way_to_sign_in_still_get_one(oauth, browser, file_store, published) -> None:
    srv = oauth(**published)
    result = mcp_in("tools", "list", srv.mcp_url, "--json")
    assert result.code == 0, result
    assert srv.count("/authorize") == 1 and len(browser.opened) == 1
    assert "bearer token" not in result.stderr


def test_a_stored_only_run_against_the_default_endpoints_registers_nothing(oauth) -> None:
    srv = oauth(prm=False, as_metadata=False)
    result = mcp_in("tools", "list", srv.mcp_url, "--stored-auth-only")
    assert result.code == 3, result
    assert "--stored-auth-only forbids" in result.stderr
    assert srv.count("/register") == 0


@pytest.mark.slow
def test_a_terminal_sign_in_still_happens_where_metadata_is_published(oauth, browser_script, tmp_path) -> None:
    srv = oauth()
    env = child_env(BROWSER=str(browser_script), FAKE_BROWSER_LOG=str(tmp_path / "browser.log"))
    term = Terminal(mcp_argv("tools", "list", srv.mcp_url), env=env)
    term.expect(r"echo")
    assert term.wait() == 0, term.output
    assert srv.count("/authorize") == 1
    assert "bearer token" not in term.output
