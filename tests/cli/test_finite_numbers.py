"""Every number-of-seconds option refuses nan and inf as a usage error (exit 2): Python's
float() takes them, and a NaN deadline used to fail later as an internal error."""

from __future__ import annotations

import pytest
from helpers import fake_server, mcp_in


@pytest.mark.parametrize(("args", "option"), [
    (("tools", "list", "--timeout", "nan"), "--timeout"),
    (("tools", "list", "--max-timeout", "inf"), "--max-timeout"),
    (("ping", "--interval", "nan"), "--interval"),
    (("tools", "grep", "x", "--max-age", "nan"), "--max-age"),
    (("tools", "grep", "x", "--timeout", "inf"), "--timeout"),
    (("serve", "tools.yaml", "--sse-poll-after", "nan"), "--sse-poll-after"),
    (("session", "open", "s", "--timeout", "nan"), "--timeout"),
    (("auth", "login", "https://example.invalid/mcp", "--auth-timeout", "nan"), "--auth-timeout"),
])
def test_a_non_finite_number_of_seconds_is_a_usage_error(args: tuple[str, ...], option: str) -> None:
    r = mcp_in(*args)  # click converts options first: nothing is read or started
    assert r.code == 2, r
    assert r.stdout == ""
    assert f"Invalid value for '{option}'" in r.stderr.splitlines()[0], r
    assert "is not a finite number." in r.stderr.splitlines()[0], r
    assert "internal error" not in r.stderr


def test_a_non_finite_auth_timeout_from_the_environment_is_a_usage_error() -> None:
    r = mcp_in("auth", "login", "https://example.invalid/mcp", env={"MCP_AUTH_TIMEOUT": "nan"})
    assert r.code == 2, r
    assert "is not a finite number." in r.stderr, r


def test_a_bad_probe_timeout_is_a_usage_error_on_the_full_path() -> None:
    r = mcp_in("tools", "list", "--", *fake_server(), env={"MCP_PROBE_TIMEOUT": "nan"})
    assert r.code == 2, r
    assert r.stderr == "mcp: error: MCP_PROBE_TIMEOUT='nan': expected a finite number of seconds, 0 or more\n"


def test_a_bad_probe_timeout_is_a_usage_error_for_a_gateway_too() -> None:
    """`mcp serve --proxy` probes its stdio upstreams' era with the same bound."""
    r = mcp_in("serve", "--proxy", "--", *fake_server(), env={"MCP_PROBE_TIMEOUT": "inf"}, input="")
    assert r.code == 2, r
    assert r.stderr == "mcp: error: MCP_PROBE_TIMEOUT='inf': expected a finite number of seconds, 0 or more\n"
