"""Pure rules: the browser-URL check, endpoint URLs, discovery URL order, WWW-Authenticate."""

from __future__ import annotations

import pytest

from mcpcli.auth.metadata import parse_www_authenticate
from mcpcli.auth.urls import (
    as_metadata_urls,
    check_browser_url,
    check_endpoint_url,
    is_loopback_host,
    resource_matches,
    well_known_prm_urls,
)
from mcpcli.errors import AuthError


@pytest.mark.parametrize(
    "url",
    [
        "https://auth.example.com/authorize?client_id=x&state=y",
        "http://127.0.0.1:8080/authorize",
        "http://localhost:3000/authorize",
        "http://[::1]:8080/authorize",
        "https://auth.example.com/authorize?scope=openid%20profile",  # an encoded space is data
    ],
)
def test_browser_url_accepted(url: str) -> None:
    assert check_browser_url(url) == url


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("javascript:alert(1)", "scheme"),
        ("file:///etc/passwd", "scheme"),
        ("data:text/html,hi", "scheme"),
        ("vbscript:msgbox", "scheme"),
        ("ms-settings:", "scheme"),
        ("--renderer-cmd-prefix=/tmp/x", "'-'"),
        (" -x https://a.example/", "'-'"),
        ("http://evil.example/auth", "loopback"),
        ("http://0.0.0.0/auth", "loopback"),
        ("http://localhost.evil.test/cb", "loopback"),
        ("https://a.example/$(touch /tmp/pwn)", "whitespace"),
        ('https://a.example/"&calc&"', "characters"),
        ("https://a.example/\nx", "control"),
        ("https://a.example/\tx", "control"),
        ("https://a.example/\x00x", "control"),
        ("https://a.example/%0ax", "percent-encoded"),
        ("https://localhost@evil.example/", "user information"),
        ("http://localhost:80@attacker.test/cb", "user information"),
        ("http://127.0.0.1:@attacker.test/cb", "user information"),
        ("http://[::1]:80@attacker.test/cb", "user information"),
        ("http://attacker.test#@localhost:80/cb", "loopback"),
        ("http://[not-an-ip]/cb", "valid URL"),
        ("https://a.example/%action", "%action"),
        ("", "empty"),
    ],
)
def test_browser_url_refused(url: str, why: str) -> None:
    with pytest.raises(AuthError) as info:
        check_browser_url(url)
    assert "refusing to open unsafe authorization URL" in info.value.message
    assert why in info.value.message
    assert "\n" not in info.value.message and "\x00" not in info.value.message


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("localhost", True), ("127.0.0.1", True), ("127.0.0.2", True), ("[::1]", True),
     ("::ffff:127.0.0.1", True), ("0.0.0.0", False), ("localhost.provider.test", False),
     ("10.0.0.1", False), ("", False)],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_endpoint_urls() -> None:
    assert check_endpoint_url("https://as.example.com/token", "token_endpoint")
    assert check_endpoint_url("http://127.0.0.1:9/token", "token_endpoint")
    for bad in ("http://as.example.com/token", "https://u:p@as.example.com/t", "https://as.example.com/t#f",
                "ftp://as.example.com/t", None, 42):
        with pytest.raises(AuthError):
            check_endpoint_url(bad, "token_endpoint")


def test_well_known_order() -> None:
    assert well_known_prm_urls("https://h.example/public/mcp") == [
        "https://h.example/.well-known/oauth-protected-resource/public/mcp",
        "https://h.example/.well-known/oauth-protected-resource",
    ]
    assert well_known_prm_urls("https://h.example") == ["https://h.example/.well-known/oauth-protected-resource"]
    assert as_metadata_urls("https://auth.example.com/tenant1") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert as_metadata_urls("https://auth.example.com") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    ("resource", "server", "ok"),
    [
        ("https://mcp.example.com/mcp", "https://mcp.example.com/mcp", True),
        ("https://mcp.example.com", "https://mcp.example.com/mcp", True),
        ("https://MCP.example.com/mcp", "https://mcp.example.com/mcp", True),
        ("https://mcp.example.com:443/mcp", "https://mcp.example.com/mcp", True),
        ("https://mcp.example.com/mc", "https://mcp.example.com/mcp", False),
        ("https://evil.example.com/mcp", "https://mcp.example.com/mcp", False),
        ("http://mcp.example.com/mcp", "https://mcp.example.com/mcp", False),
        ("https://mcp.example.com:8443/mcp", "https://mcp.example.com/mcp", False),
    ],
)
def test_resource_matches(resource: str, server: str, ok: bool) -> None:
    assert resource_matches(resource, server) is ok


def test_www_authenticate_parsing() -> None:
    ch = parse_www_authenticate([
        'Basic realm="x"',
        'Bearer error="insufficient_scope", scope="files:read files:write",\n'
        '  resource_metadata="https://h/.well-known/oauth-protected-resource", error_description="need \\"more\\""',
    ])
    assert ch is not None
    assert ch.error == "insufficient_scope"
    assert ch.scope == "files:read files:write"
    assert ch.resource_metadata == "https://h/.well-known/oauth-protected-resource"
    assert ch.params["error_description"] == 'need "more"'
    assert parse_www_authenticate(["Basic realm=x"]) is None
    assert parse_www_authenticate(["Bearer"]).params == {}
    two = parse_www_authenticate(['Negotiate abc==, Bearer scope=a'])
    assert two is not None and two.scope == "a"


@pytest.mark.parametrize(
    "url",
    [
        "https://10.0.0.1/.well-known/oauth-authorization-server",
        "https://127.0.0.1:6379/",
        "https://[::ffff:127.0.0.1]/",
        "https://[fe80::1]/",
        "https://169.254.169.254/latest/meta-data/",
        "https://2130706433/",
        "https://0x7f.1/",
        "https://localhost/token",
    ],
)
def test_ssrf_guard_for_a_remote_server(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import anyio

    from mcpcli.auth.metadata import Fetcher

    monkeypatch.delenv("MCP_OAUTH_ALLOW_PRIVATE", raising=False)
    remote = Fetcher("https://mcp.example.com/mcp")
    with pytest.raises(AuthError, match="blocked private-network URL"):
        anyio.run(remote.guard, url, "token_endpoint")
    # A server the user runs on loopback may use its own network...
    local = Fetcher("http://127.0.0.1:8000/mcp")
    assert anyio.run(local.guard, url, "token_endpoint") == url
    # ...and the check can be switched off explicitly.
    monkeypatch.setenv("MCP_OAUTH_ALLOW_PRIVATE", "1")
    assert anyio.run(Fetcher("https://mcp.example.com/mcp").guard, url, "token_endpoint") == url


@pytest.mark.parametrize(
    "host",
    [
        "10.0.0.1", "10.255.255.254", "172.16.0.1", "172.31.255.254", "192.168.1.1",
        "127.0.0.1", "127.5.5.5", "169.254.0.1", "169.254.169.254",
        "100.64.0.1", "100.100.100.200", "100.127.255.254",  # CGNAT: cloud metadata lives here
        "0.0.0.0", "0.1.2.3", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
        "198.18.0.1", "192.0.0.1",
        "::1", "[::1]", "::", "fe80::1", "febf::1", "fc00::1", "fd12:3456::1", "ff02::1", "ff0e::1",
        "::ffff:10.0.0.1", "[::ffff:169.254.169.254]", "::ffff:100.100.100.200", "::ffff:127.0.0.1",
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
        "localhost",
    ],
)
def test_private_ranges_are_refused(host: str) -> None:
    """Every non-global range, however spelled, counts as private (SSRF guard)."""
    from mcpcli.auth.urls import check_not_private, host_is_private

    assert host_is_private(host)
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    with pytest.raises(AuthError, match="blocked private-network URL"):
        check_not_private(f"https://{shown}/token", "token_endpoint")


@pytest.mark.parametrize(
    "host", ["8.8.8.8", "1.1.1.1", "100.63.255.255", "100.128.0.1", "2001:4860:4860::8888",
             "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"],
)
def test_global_addresses_are_allowed(host: str) -> None:
    from mcpcli.auth.urls import check_not_private, host_is_private

    assert not host_is_private(host)
    shown = f"[{host}]" if ":" in host else host
    check_not_private(f"https://{shown}/token", "token_endpoint")  # no exception


def test_browser_launcher_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """BROWSER entries (':'-separated) run without a shell; %s is the URL, else it is appended."""
    from mcpcli.auth.browser import _launcher_commands

    url = "https://auth.example.com/authorize?x=1"
    monkeypatch.setenv("BROWSER", "firefox --new-tab %s:/no/such/launcher::w3m")
    assert _launcher_commands(url) == [
        ["firefox", "--new-tab", url], ["/no/such/launcher", url], ["w3m", url],
    ]
