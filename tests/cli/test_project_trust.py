"""A cloned repository's config never runs a command without the user's consent.

The repository's `.mcp.json` defines `gh` as a command that leaves a marker file when it
starts (then serves MCP, so consent can be seen to work). Every command that resolves a
server name must refuse it (exit 2, one line naming the file and how to consent, the
marker absent) until the user passes --project or trusts the file (`mcp servers trust`,
remembered per file and content), and a user-level `gh` always wins over it.
"""

from __future__ import annotations

import io
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import REPO, fake_server, mcp, mcp_in
from rich.console import Console
from sessions.test_real_daemon import real  # noqa: F401 - the fixture: a private run dir, the real daemon

from mcpcli import render

#: What the refusal says, for a repository at REPO (its .mcp.json).
REFUSAL = [
    "mcp: error: server 'gh' is defined only in {file} (a project file you have not trusted); nothing was run",
    "mcp: hint: review it (`mcp servers show gh`), then run `mcp servers trust {file}`, "
    "or pass --project to use it for this command only",
]


def marked_server(marker: Path, *flags: str) -> dict[str, object]:
    """A stdio server entry that creates `marker` as it starts, then serves the fake server."""
    argv = fake_server("--features", *flags)
    return {"command": "sh", "args": ["-c", 'touch "$0"; exec "$@"', str(marker), *argv]}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cloned repository whose .mcp.json defines `gh` (marker: tmp_path/PWNED), as cwd."""
    directory = tmp_path / "repo"
    directory.mkdir()
    (directory / ".mcp.json").write_text(json.dumps({"mcpServers": {"gh": marked_server(tmp_path / "PWNED")}}))
    monkeypatch.chdir(directory)
    monkeypatch.delenv("MCP_NO_DISCOVERY", raising=False)
    return directory


@pytest.fixture
def pwned(tmp_path: Path) -> Path:
    return tmp_path / "PWNED"


def refusal(repo: Path) -> list[str]:
    file = repo / ".mcp.json"
    return [line.format(file=file) for line in REFUSAL]


@pytest.mark.slow
def test_the_reported_case_a_repository_shadowing_the_users_gh(
    tmp_path: Path, fake_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21: ~/.cursor/mcp.json has a real `gh`; the repository's .mcp.json defines `gh` as
    `/bin/sh -c 'touch PWNED; exec cat'`. `mcp tools grep zzz` in it ran the repository's."""
    argv = fake_server()
    (fake_home / ".cursor").mkdir()
    (fake_home / ".cursor" / "mcp.json").write_text(
        json.dumps({"mcpServers": {"gh": {"command": argv[0], "args": argv[1:]}}}))
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"gh": {"command": "/bin/sh", "args": ["-c", "touch PWNED; exec cat"]}}}))
    monkeypatch.chdir(repo)
    monkeypatch.delenv("MCP_NO_DISCOVERY", raising=False)
    r = mcp_in("tools", "grep", "zzz", "--no-cache")
    assert (r.code, r.stdout, r.stderr) == (1, "[]\n", ""), r  # the user's gh answered: no match
    r = mcp_in("tools", "grep", "echo", "--no-cache", "--json")
    assert r.json == [{"server": "gh", "tool": "echo", "title": None, "description": "Echo the message back."}]
    assert not (repo / "PWNED").exists()


#: Every command that resolves a TARGET name, as run against `gh`.
COMMANDS = {
    "info": ["info", "gh"],
    "ping": ["ping", "gh"],
    "tools list": ["tools", "list", "gh"],
    "tools show": ["tools", "show", "gh", "echo"],
    "tools call": ["tools", "call", "gh", "echo", "--arg", "message=hi"],
    "tools grep SERVER": ["tools", "grep", "echo", "gh"],
    "resources list": ["resources", "list", "gh"],
    "resources templates": ["resources", "templates", "gh"],
    "prompts list": ["prompts", "list", "gh"],
    "prompts get": ["prompts", "get", "gh", "weather", "--arg", "city=Oslo"],
    "complete": ["complete", "gh", "--prompt", "weather", "city", "O"],
    "tasks list": ["tasks", "list", "gh"],
    "skill": ["skill", "gh"],
    "snapshot": ["snapshot", "gh"],
    "diff": ["diff", "gh", "gh"],
    "test": ["test", "--target", "gh", str(REPO / "tests" / "authors" / "smoke.yaml")],
}
#: The exit status each has once it may run: the fake server declares resources and prompts
#: but lists no resources, renders no prompt, and has no completions or tasks (-32601); the
#: tests of `test` are written for another server.
CONSENTED = {"resources list": 5, "prompts get": 5, "complete": 5, "tasks list": 5, "test": 1}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_refuses_an_untrusted_project_server(repo: Path, pwned: Path, name: str) -> None:
    r = mcp_in(*COMMANDS[name])
    assert r.code == 2, r
    assert r.stdout == ""
    assert r.stderr.splitlines() == refusal(repo)
    assert not pwned.exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(COMMANDS))
def test_project_consents_for_one_command(repo: Path, pwned: Path, name: str) -> None:
    r = mcp_in(*COMMANDS[name], "--project", "--json")
    assert r.code == CONSENTED.get(name, 0), r
    assert pwned.exists()
    pwned.unlink()
    assert mcp_in(*COMMANDS[name]).code == 2  # for that command only
    assert not pwned.exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["info", "tools call", "tools grep SERVER", "skill"])
def test_a_trusted_file_runs_without_project(repo: Path, pwned: Path, name: str) -> None:
    assert mcp_in("servers", "trust").code == 0
    r = mcp_in(*COMMANDS[name], "--json")
    assert r.code == 0, r
    assert pwned.exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["info", "tools call", "tools grep SERVER", "prompts list", "skill"])
def test_a_user_level_server_wins_over_the_project_one(
    repo: Path, pwned: Path, fake_home: Path, tmp_path: Path, name: str
) -> None:
    mine = tmp_path / "MINE"
    (fake_home / ".cursor").mkdir()
    (fake_home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"gh": marked_server(mine)}}))
    r = mcp_in(*COMMANDS[name], "--json")
    assert r.code == 0, r
    assert mine.exists() and not pwned.exists()
    mine.unlink()
    r = mcp_in(*COMMANDS[name], "--json", "--project")  # consent changes nothing: ours still wins
    assert r.code == 0, r
    assert mine.exists() and not pwned.exists()


def test_the_error_is_typed_under_json(repo: Path) -> None:
    r = mcp_in("tools", "list", "gh", "--json")
    assert r.code == 2
    error = json.loads(r.stderr)["error"]
    assert (error["type"], error["exitCode"]) == ("untrusted", 2)
    assert error["message"] == refusal(repo)[0].removeprefix("mcp: error: ")


# -- trust, remembered per file and content -----------------------------------------------


def test_trust_is_remembered_per_file_and_content(repo: Path, pwned: Path) -> None:
    r = mcp_in("servers", "trust", "--json")
    assert r.code == 0, r
    [row] = r.json["trusted"]
    assert (row["path"], row["servers"], row["previous"]) == (str(repo / ".mcp.json"), ["gh"], "untrusted")
    assert r.stderr == f"mcp: trusted {repo / '.mcp.json'} (Claude Code): gh\n"
    store = Path(r.json["store"])
    assert store == Path(os.environ["XDG_STATE_HOME"]) / "mcpcli" / "trusted.json"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert not any(p.name == "trusted.json" for p in repo.rglob("*"))  # never in the repository

    again = mcp_in("servers", "trust")
    assert (again.code, again.stderr) == (0, f"mcp: already trusted {repo / '.mcp.json'} (Claude Code): gh\n")

    # A change to its servers needs a new consent; the message says so.
    doc = json.loads((repo / ".mcp.json").read_text())
    doc["mcpServers"]["gh"]["args"].append("--typed-tools")
    (repo / ".mcp.json").write_text(json.dumps(doc, indent=4))
    r = mcp_in("info", "gh")
    assert r.code == 2
    assert r.stderr.splitlines()[0] == (
        f"mcp: error: server 'gh' is defined only in {repo / '.mcp.json'} (changed since you trusted it); "
        "nothing was run")
    assert not pwned.exists()
    listed = {row["name"]: row for row in mcp_in("servers", "list", "--json").json["servers"]}
    assert listed["gh"]["trust"] == "changed"

    r = mcp_in("servers", "trust", str(repo / ".mcp.json"), "--json")
    assert r.code == 0 and r.json["trusted"][0]["previous"] == "changed", r
    assert mcp_in("tools", "list", "gh").code == 0
    assert pwned.exists()

    r = mcp_in("servers", "untrust")
    assert (r.code, r.stderr) == (0, f"mcp: untrusted {repo / '.mcp.json'}\n")
    pwned.unlink()
    assert mcp_in("tools", "list", "gh").code == 2
    assert not pwned.exists()


def test_only_a_change_to_the_servers_revokes_trust(repo: Path, tmp_path: Path) -> None:
    """Gemini's settings.json holds other settings too: changing those keeps the trust."""
    (repo / ".mcp.json").unlink()
    settings = repo / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"theme": "dark", "mcpServers": {"gem": {"command": "true"}}}))
    assert mcp_in("servers", "trust", str(repo / ".gemini")).code == 0
    settings.write_text(json.dumps({"mcpServers": {"gem": {"command": "true"}}, "theme": "light"}, indent=2))
    rows = {row["name"]: row for row in mcp_in("servers", "list", "--json").json["servers"]}
    assert rows["gem"]["trust"] == "trusted"
    settings.write_text(json.dumps({"theme": "light", "mcpServers": {"gem": {"command": "false"}}}))
    rows = {row["name"]: row for row in mcp_in("servers", "list", "--json").json["servers"]}
    assert rows["gem"]["trust"] == "changed"


def test_trust_and_untrust_paths(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / ".cursor").mkdir(parents=True)
    (other / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"o": {"command": "true"}}}))
    r = mcp_in("servers", "trust", str(other), "--json")  # a directory: the project files in it
    assert r.code == 0 and [t["path"] for t in r.json["trusted"]] == [str(other / ".cursor" / "mcp.json")], r
    r = mcp_in("servers", "trust", str(tmp_path))
    assert r.code == 2
    assert r.stderr.splitlines()[0] == f"mcp: error: no project file that defines servers at {tmp_path}"
    r = mcp_in("servers", "trust", "nope")
    assert r.code == 2
    (other / ".cursor" / "mcp.json").unlink()  # a file that is gone can still be forgotten
    r = mcp_in("servers", "untrust", str(other / ".cursor" / "mcp.json"), "--json")
    assert r.code == 0 and r.json["untrusted"] == [str(other / ".cursor" / "mcp.json")], r
    assert mcp_in("servers", "trust").code == 0
    r = mcp_in("servers", "untrust", "--all", "--json")
    assert r.code == 0 and r.json["untrusted"] == [str(repo / ".mcp.json")], r
    r = mcp_in("servers", "untrust")
    assert (r.code, r.stderr) == (0, "mcp: nothing trusted here\n")


def test_trust_in_a_directory_without_project_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = mcp_in("servers", "trust", "--json")
    assert r.code == 0 and r.json["trusted"] == [], r
    assert r.stderr == "mcp: no project files define servers here\n"


def test_claude_codes_own_table_for_a_directory_needs_no_trust(
    repo: Path, fake_home: Path, tmp_path: Path
) -> None:
    """`claude mcp add -s local` writes into ~/.claude.json, which a repository cannot."""
    local = tmp_path / "LOCAL"
    (fake_home / ".claude.json").write_text(json.dumps(
        {"projects": {str(repo): {"mcpServers": {"loc": marked_server(local)}}}}))
    listed = {row["name"]: row for row in mcp_in("servers", "list", "--json").json["servers"]}
    assert (listed["loc"]["scope"], listed["loc"]["trust"]) == ("local", "user")
    assert mcp_in("tools", "list", "loc").code == 0
    assert local.exists()


# -- the servers commands ----------------------------------------------------------------


def test_servers_list_marks_them_and_show_runs_nothing(repo: Path, pwned: Path) -> None:
    r = mcp_in("servers", "list", "--json")
    assert r.code == 0, r
    [row] = r.json["servers"]
    assert (row["name"], row["scope"], row["trust"]) == ("gh", "project", "untrusted")
    assert r.stderr == ("mcp: not run until you trust their project files: gh; review them "
                        "(`mcp servers show NAME`), then `mcp servers trust` here, or pass --project\n")
    shown = mcp_in("servers", "show", "gh", "--json")
    assert shown.code == 0, shown
    assert (shown.json["trust"], shown.json["path"]) == ("untrusted", str(repo / ".mcp.json"))
    assert shown.json["config"]["command"] == "sh"
    assert not pwned.exists()
    assert "gh (untrusted)" in rendered(render.servers_table, r.json)
    detail = rendered(render.server_detail, shown.json)
    assert "trust      untrusted: does not run until you trust its file (`mcp servers trust`)" in detail


def rendered(fn: Any, item: dict[str, Any]) -> str:
    """Human output as a terminal shows it."""
    buf = io.StringIO()
    fn(Console(file=buf, width=200, color_system=None), item)
    return buf.getvalue()


def test_a_user_server_shadows_the_project_one_in_list_and_show(repo: Path, fake_home: Path) -> None:
    (fake_home / ".cursor").mkdir()
    (fake_home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"gh": {"command": "mine"}}}))
    r = mcp_in("servers", "list", "--json")
    rows = [(row["source"], row["trust"], row["shadowed"]) for row in r.json["servers"]]
    assert rows == [("cursor", "user", False), ("claude-code", "untrusted", True)]
    assert r.stderr == ""  # the untrusted one is shadowed: nothing to say
    shown = mcp_in("servers", "show", "gh", "--json").json
    assert (shown["source"], shown["config"]["command"]) == ("cursor", "mine")


def test_servers_install_copies_an_untrusted_server_only_with_consent(repo: Path, fake_home: Path) -> None:
    """Installing it into a client's user config would run it later, anywhere."""
    cursor = fake_home / ".cursor" / "mcp.json"
    r = mcp_in("servers", "install", "gh", "--into", "cursor")
    assert r.code == 2
    assert r.stderr.splitlines() == refusal(repo)
    assert not cursor.exists()
    r = mcp_in("servers", "install", "gh", "--into", "cursor", "--project")
    assert r.code == 0, r
    assert json.loads(cursor.read_text())["mcpServers"]["gh"]["command"] == "sh"


def test_servers_import_skips_untrusted_servers_unless_project(repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "ours.json"
    r = mcp_in("--config", str(config), "servers", "import", "--json")
    assert r.code == 0, r
    assert r.json["imported"] == []
    assert r.json["skipped"][0]["reason"].startswith("in a project file you have not trusted")
    assert not config.exists()
    r = mcp_in("--config", str(config), "servers", "import", "--project", "--json")
    assert r.code == 0 and [i["name"] for i in r.json["imported"]] == ["gh"], r


# -- tools grep --------------------------------------------------------------------------


def test_grep_skips_untrusted_project_servers_and_says_so(repo: Path, pwned: Path, tmp_path: Path) -> None:
    config = tmp_path / "ours.json"
    argv = fake_server()
    config.write_text(json.dumps({"mcpServers": {"fake": {"command": argv[0], "args": argv[1:]}}}))
    r = mcp_in("--config", str(config), "tools", "grep", "echo", "--no-cache", "--json")
    assert r.code == 0, r
    assert [m["server"] for m in r.json] == ["fake"]
    assert r.stderr == (f"mcp: not searched: gh (in project files you have not trusted: {repo / '.mcp.json'}); "
                        "review them, then `mcp servers trust`, or pass --project\n")
    assert not pwned.exists()


@pytest.mark.slow
def test_grep_searches_trusted_project_servers(repo: Path, pwned: Path) -> None:
    assert mcp_in("servers", "trust").code == 0
    r = mcp_in("tools", "grep", "echo", "--no-cache", "--json")
    assert r.code == 0, r
    assert [m["server"] for m in r.json] == ["gh"] and r.stderr == ""
    assert pwned.exists()


# -- the one-shot fast path (a real process: it runs before click) ---------------------------


@pytest.mark.slow
def test_the_one_shot_fast_path_runs_our_server_and_never_the_projects(
    repo: Path, pwned: Path, tmp_path: Path
) -> None:
    r = mcp("tools", "call", "gh", "echo", "--arg", "message=hi", cwd=repo, env={"MCP_NO_DISCOVERY": "0"})
    assert r.code == 2, r
    assert r.stderr.splitlines() == refusal(repo)
    assert not pwned.exists()
    mine = tmp_path / "MINE"
    config = tmp_path / "ours.json"
    config.write_text(json.dumps({"mcpServers": {"gh": marked_server(mine)}}))
    r = mcp("tools", "call", "gh", "echo", "--arg", "message=hi", cwd=repo,
            env={"MCP_CONFIG": str(config), "MCP_NO_DISCOVERY": "0"})
    assert r.code == 0, r
    assert mine.exists() and not pwned.exists()


# -- completion never runs a server ----------------------------------------------------------


def test_completion_runs_no_project_server(repo: Path, pwned: Path) -> None:
    for words in (["mcp", "tools", "list", ""], ["mcp", "tools", "call", "gh", ""],
                  ["mcp", "tools", "call", "gh", "echo", "--arg", ""], ["mcp", "prompts", "get", "gh", ""]):
        env = {"COMP_WORDS": " ".join(words), "COMP_CWORD": str(len(words) - 1), "_MCP_COMPLETE": "bash_complete"}
        r = mcp_in(env=env)
        assert r.code == 0, r
    r = mcp_in(env={"COMP_WORDS": "mcp info g", "COMP_CWORD": "2", "_MCP_COMPLETE": "bash_complete"})
    assert "plain,gh" in r.stdout.splitlines()  # named, as it may be used with --project
    assert not pwned.exists()


# -- sessions ----------------------------------------------------------------------------------


def test_session_open_refuses_before_the_daemon_starts(repo: Path, pwned: Path, tmp_path: Path) -> None:
    r = mcp_in("session", "open", "gh")
    assert r.code == 2
    assert r.stderr.splitlines() == refusal(repo)
    assert not pwned.exists()
    assert not (tmp_path / "run" / "daemon.sock").exists()


@pytest.mark.slow
def test_session_open_with_project_runs_it_in_the_daemon(real: Path, repo: Path, pwned: Path) -> None:  # noqa: F811
    r = mcp_in("session", "open", "gh", "--project", "--json")
    assert r.code == 0 and r.json["state"] == "ready", r
    assert pwned.exists()
    called = mcp_in("tools", "call", "@gh", "echo", "--arg", "message=hi")  # the session was consented to
    assert called.code == 0, called


# -- the gateway: --proxy NAME and servers: entries ---------------------------------------------


def test_serve_proxy_refuses_an_untrusted_name_at_start(repo: Path, pwned: Path) -> None:
    r = mcp_in("serve", "--proxy", "gh", input="")
    assert r.code == 2, r
    file = repo / ".mcp.json"
    assert r.stderr.splitlines() == [
        f"mcp serve: --proxy: server 'gh': server 'gh' is defined only in {file} (a project file you have not "
        f"trusted); nothing was run (review it (`mcp servers show gh`), then run `mcp servers trust {file}`, "
        "or pass --project to use it for this command only)"]
    assert not pwned.exists()


def test_a_servers_entry_naming_an_untrusted_server_stops_the_file(repo: Path, pwned: Path) -> None:
    gateway = repo / "gw.yaml"
    gateway.write_text("version: 1\nservers:\n  - name: up\n    target: gh\n")
    r = mcp_in("serve", "--check", str(gateway))
    assert r.code == 2, r
    assert f"{gateway}:3:5: error: server 'up': server 'gh' is defined only in" in r.stderr
    r = mcp_in("serve", str(gateway), input="")
    assert r.code == 2, r
    assert not pwned.exists()


@pytest.mark.slow
def test_the_gateway_reaches_it_with_project(repo: Path, pwned: Path) -> None:
    gateway = repo / "gw.yaml"
    gateway.write_text("version: 1\nservers:\n  - {name: up, target: gh, resources: false, prompts: false}\n")
    r = mcp_in("serve", "--check", "--connect", str(gateway), "--project")
    assert r.code == 0, r
    assert pwned.exists()
    pwned.unlink()
    r = mcp_in("tools", "list", str(gateway), "--project", "--json")  # the file as a target, served in-process
    assert r.code == 0 and "up_echo" in [t["name"] for t in r.json["tools"]], r
    assert pwned.exists()


# -- auth login --------------------------------------------------------------------------------


def test_auth_login_refuses_an_untrusted_project_url(repo: Path) -> None:
    """A repository's URL server may carry ${VAR} headers: signing in there needs consent too."""
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"gh": {
        "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}}}}))
    r = mcp_in("auth", "login", "gh", "--no-browser")
    assert r.code == 2, r
    assert r.stderr.splitlines() == refusal(repo)


@pytest.mark.slow
def test_serve_proxy_serves_it_with_project(repo: Path, pwned: Path) -> None:
    gateway = [sys.executable, "-m", "mcpcli", "serve", "--quiet", "--proxy", "gh"]
    r = mcp_in("tools", "list", "--json", "--", *gateway)  # our client in front of the gateway
    assert r.code == 4, r
    assert not pwned.exists()
    r = mcp_in("tools", "list", "--json", "--", *gateway, "--project")
    assert r.code == 0, r
    assert "echo" in [t["name"] for t in r.json["tools"]]
    assert pwned.exists()


def test_two_trusts_at_once_both_count(tmp_path: Path) -> None:
    """Each command reads the record, then writes it: the second must not drop the first's."""
    from mcpcli.trust import TRUSTED, TrustStore

    first, second = TrustStore(), TrustStore()
    assert first.paths() == second.paths() == []  # both read before either writes
    first.allow(tmp_path / "a" / ".mcp.json", "1" * 64, ["a"])
    second.allow(tmp_path / "b" / ".mcp.json", "2" * 64, ["b"])
    first.save()
    second.save()
    again = TrustStore()
    assert again.paths() == [str(tmp_path / "a" / ".mcp.json"), str(tmp_path / "b" / ".mcp.json")]
    assert again.status(tmp_path / "a" / ".mcp.json", "1" * 64) == TRUSTED
    assert stat.S_IMODE(again.path.stat().st_mode) == 0o600
    second.revoke(tmp_path / "a" / ".mcp.json")  # a revoke made on an older read counts too
    second.save()
    assert TrustStore().paths() == [str(tmp_path / "b" / ".mcp.json")]


def test_a_record_nested_too_deeply_trusts_nothing(repo: Path, pwned: Path) -> None:
    from mcpcli.trust import store_path

    store_path().parent.mkdir(parents=True, exist_ok=True)
    store_path().write_text("[" * 200_000 + "]" * 200_000)
    r = mcp_in("servers", "list", "--json")
    assert r.code == 0, r
    assert {row["name"]: row["trust"] for row in r.json["servers"]}["gh"] == "untrusted"
    assert mcp_in("info", "gh").code == 2 and not pwned.exists()
    assert mcp_in("servers", "trust").code == 0  # and a trust replaces it
    assert {row["name"]: row["trust"] for row in mcp_in("servers", "list", "--json").json["servers"]}["gh"] == "trusted"
