"""`--profile`: two accounts on one server, signed in as different users, kept apart."""

from __future__ import annotations

from pathlib import Path

from helpers import mcp_in

from .conftest import child_env


def _human_list(infos: list[dict[str, object]]) -> list[str]:
    """`mcp auth list` as a terminal shows it (the command prints JSON to a pipe)."""
    import io

    from rich.console import Console

    from mcpcli.cli.auth import _human_list as render

    buf = io.StringIO()
    render(Console(file=buf, width=200), infos)
    return buf.getvalue().splitlines()


def test_two_profiles_sign_in_as_different_users(oauth, browser_script: Path, tmp_path: Path) -> None:
    env = child_env(BROWSER=str(browser_script), FAKE_BROWSER_LOG=str(tmp_path / "browser.log"))
    srv = oauth()
    url = srv.mcp_url
    srv.user = "alice"
    assert mcp_in("auth", "login", url, env=env).code == 0
    srv.user = "bob"
    login = mcp_in("auth", "login", url, "--profile", "work", env=env)
    assert login.code == 0, login
    assert "as profile work" in login.stderr
    srv.user = "mallory"  # no further sign-in may happen below

    def who(*extra: str, **more: str) -> str:
        r = mcp_in("tools", "call", url, "echo", "--stored-auth-only", *extra, env={**env, **more})
        assert r.code == 0, r
        return str(r.json["content"][0]["text"])

    assert who() == "called echo as alice"
    assert who("--profile", "work") == "called echo as bob"
    assert who(MCP_PROFILE="work") == "called echo as bob"
    assert who("--profile", "default", MCP_PROFILE="work") == "called echo as alice"

    srv.expire_access_tokens()  # each profile refreshes its own tokens, and keeps them apart
    assert who("--profile", "work") == "called echo as bob"
    assert who() == "called echo as alice"
    assert len(srv.token_requests("refresh_token")) == 2

    listed = mcp_in("auth", "list", "--json", env=env)
    assert sorted((i["profile"], i["server"]) for i in listed.json) == [("default", url), ("work", url)]
    assert sorted(line.split()[0] for line in _human_list(listed.json)) == ["default", "work"]
    assert [i["profile"] for i in mcp_in("auth", "list", "--profile", "work", "--json", env=env).json] == ["work"]
    assert mcp_in("auth", "status", url, "--profile", "work", "--json", env=env).json["profile"] == "work"

    token = mcp_in("auth", "token", url, "--profile", "work", env=env)
    assert token.code == 0
    assert srv.access_tokens[token.stdout.strip()].user == "bob"
    assert srv.access_tokens[mcp_in("auth", "token", url, env=env).stdout.strip()].user == "alice"

    # Another profile has no sign-in of its own (never the default's tokens).
    other = mcp_in("tools", "call", url, "echo", "--stored-auth-only", "--profile", "home", env=env)
    assert other.code == 3, other
    assert "mcp auth login" in other.stderr and "--profile home" in other.stderr

    out = mcp_in("auth", "logout", url, "--profile", "work", env=env)
    assert out.code == 0, out
    assert "(profile work)" in out.stderr
    gone = mcp_in("auth", "status", url, "--profile", "work", env=env)
    assert gone.code == 3 and "--profile work" in gone.stderr
    assert who() == "called echo as alice"
    assert srv.count("/authorize") == 2
    assert mcp_in("auth", "login", url, "--profile", "work", env=env).code == 0
    assert mcp_in("auth", "logout", "--all", env=env).code == 0  # every profile's
    assert mcp_in("auth", "list", "--json", env=env).json == []


def test_a_bad_profile_name_is_a_usage_error(oauth) -> None:
    srv = oauth()
    for argv in (("tools", "list", srv.mcp_url, "--profile", "a b"), ("auth", "status", "--profile", "x@y")):
        r = mcp_in(*argv, env=child_env())
        assert r.code == 2, r
        assert "invalid profile name" in r.stderr and "Traceback" not in r.stderr
    r = mcp_in("tools", "list", srv.mcp_url, env=child_env(MCP_PROFILE="../x"))
    assert r.code == 2 and "invalid profile name" in r.stderr


def test_tools_grep_uses_the_profiles_stored_sign_in(oauth, browser_script: Path, tmp_path: Path) -> None:
    env = child_env(BROWSER=str(browser_script), FAKE_BROWSER_LOG=str(tmp_path / "browser.log"))
    srv = oauth()
    assert mcp_in("auth", "login", srv.mcp_url, "--profile", "work", env=env).code == 0
    unsigned = mcp_in("tools", "grep", "echo", srv.mcp_url, "--no-cache", env=env)
    assert unsigned.code == 3, unsigned  # the default profile has no sign-in; grep never prompts
    found = mcp_in("tools", "grep", "echo", srv.mcp_url, "--no-cache", "--profile", "work", env=env)
    assert found.code == 0, found
    assert [m["tool"] for m in found.json] == ["echo"]
    bad = mcp_in("tools", "grep", "echo", srv.mcp_url, "--profile", "no way", env=env)
    assert bad.code == 2 and "invalid profile name" in bad.stderr
