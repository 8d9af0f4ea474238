"""`mcp auth status TARGET` when nothing is stored: the server is asked whether it needs a
sign-in. One that answers without one (and publishes no OAuth metadata) needs none: exit 0;
one that asks (401/403, or metadata published) or cannot be reached: "not signed in", exit 3."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers import mcp_in
from httpfake import FakeHTTP, Handler, Reply, Req, json_reply, legacy_mcp

from .conftest import child_env


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], str]]:
    started: list[FakeHTTP] = []

    def start(handler: Handler) -> str:
        server = FakeHTTP(handler).start()
        started.append(server)
        return server.url

    yield start
    for server in started:
        server.stop()


def _with_page_at_every_path(handler: Handler) -> Handler:
    """A web app's catch-all: 200 and HTML for any GET it does not know."""

    def handle(req: Req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"Content-Type": "text/html"}, b"<!doctype html><p>app</p>")
        return handler(req)

    return handle


def _with_resource_metadata(handler: Handler) -> Handler:
    """An MCP server that answers without a token but takes OAuth sign-ins (RFC 9728 metadata)."""

    def handle(req: Req) -> Reply:
        if req.method == "GET" and req.path.startswith("/.well-known/oauth-protected-resource"):
            return json_reply({"resource": f"http://{req.header('host')}/mcp",
                               "authorization_servers": ["https://as.example"]})
        return handler(req)

    return handle


@pytest.mark.parametrize("wrap", [lambda h: h, _with_page_at_every_path], ids=["plain", "catch-all page"])
def test_a_server_that_answers_without_a_sign_in_needs_none(serve: Callable[[Handler], str], wrap: Any) -> None:
    url = serve(wrap(legacy_mcp()))
    r = mcp_in("auth", "status", url, env=child_env())
    assert r.code == 0, r
    assert json.loads(r.stdout) == {"server": url, "signedIn": False, "signInNeeded": False}
    assert r.stderr == ""
    assert mcp_in("servers", "add", "open", url).code == 0
    named = mcp_in("auth", "status", "open", env=child_env())
    assert named.code == 0 and json.loads(named.stdout)["signInNeeded"] is False, named


def test_a_server_that_publishes_resource_metadata_takes_a_sign_in(serve: Callable[[Handler], str]) -> None:
    url = serve(_with_resource_metadata(legacy_mcp()))
    r = mcp_in("auth", "status", url, env=child_env())
    assert r.code == 3, r
    assert f"not signed in to {url}" in r.stderr and r.stdout == ""


def test_a_server_that_asks_for_a_sign_in_is_not_signed_in(oauth: Any) -> None:
    srv = oauth()
    r = mcp_in("auth", "status", srv.mcp_url, env=child_env())
    assert r.code == 3, r
    assert "not signed in" in r.stderr and f"mcp auth login {srv.mcp_url}" in r.stderr


def test_a_server_that_cannot_be_reached_is_not_signed_in() -> None:
    from helpers import free_port

    r = mcp_in("auth", "status", f"http://127.0.0.1:{free_port()}/mcp", env=child_env())
    assert r.code == 3, r
    assert "not signed in" in r.stderr
