"""Discovery of servers other clients configure, against fake HOME and project dirs."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mcpcli import other_clients


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


@pytest.fixture
def config_home(isolated_env: Path) -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "work" / "project"
    (directory / "src").mkdir(parents=True)
    return directory


def found(cwd: Path) -> list[tuple[str, str, str]]:
    items, _ = other_clients.discover(cwd=cwd)
    return [(f.entry.name, f.source, f.scope) for f in items]


def test_every_client_format_is_read(fake_home: Path, config_home: Path, project: Path) -> None:
    write(config_home / "Claude" / "claude_desktop_config.json",
          {"mcpServers": {"desk": {"command": "desk-server", "args": ["--x"], "env": {"K": "v"}}}})
    write(fake_home / ".claude.json", {
        "mcpServers": {"code-global": {"type": "http", "url": "https://code.example/mcp"}},
        "projects": {str(project): {"mcpServers": {"code-project": {"command": "cp"}}},
                     "/elsewhere": {"mcpServers": {"not-here": {"command": "x"}}}},
        "history": ["lots", "of", "other", "things"],
    })
    write(project / ".mcp.json", {"mcpServers": {"dot-mcp": {"command": "dm"}}})
    write(fake_home / ".cursor" / "mcp.json", {"mcpServers": {"cur": {"url": "https://c.example/sse"}}})
    write(project / ".cursor" / "mcp.json", {"mcpServers": {"cur-project": {"command": "cpp"}}})
    write(config_home / "Code" / "User" / "mcp.json",
          {"servers": {"vs": {"type": "stdio", "command": "vs-server"}}, "inputs": []})
    write(project / ".vscode" / "mcp.json", {"servers": {"vs-project": {
        "type": "stdio", "command": "node", "args": ["${workspaceFolder}/server.js"]}}})
    write(fake_home / ".codeium" / "windsurf" / "mcp_config.json",
          {"mcpServers": {"wind": {"serverUrl": "https://w.example/mcp"}}})

    got = found(project / "src")
    assert got == [  # the user's own files first, a repository's files last
        ("code-project", "claude-code", "local"),
        ("code-global", "claude-code", "user"),
        ("desk", "claude-desktop", "user"),
        ("cur", "cursor", "user"),
        ("vs", "vscode", "user"),
        ("wind", "windsurf", "user"),
        ("dot-mcp", "claude-code", "project"),
        ("cur-project", "cursor", "project"),
        ("vs-project", "vscode", "project"),
    ]
    items, problems = other_clients.discover(cwd=project)
    assert problems == []
    by_name = {f.entry.name: f.entry for f in items}
    assert by_name["desk"].command == "desk-server" and by_name["desk"].env == {"K": "v"}
    assert by_name["cur"].transport == "sse"
    assert by_name["wind"].url == "https://w.example/mcp" and by_name["wind"].transport == "http"
    assert by_name["vs-project"].args == [f"{project}/server.js"]


def test_user_files_win_over_project_files(
    fake_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(fake_home / ".cursor" / "mcp.json", {"mcpServers": {"db": {"command": "global-db"}}})
    write(project / ".cursor" / "mcp.json", {"mcpServers": {"db": {"command": "project-db"}, "pj": {"command": "p"}}})
    monkeypatch.chdir(project)
    item = other_clients.lookup("db")
    assert item is not None and item.entry.command == "global-db"
    assert (item.trust, item.needs_consent) == ("user", False)
    project_item = other_clients.lookup("pj")
    assert project_item is not None and (project_item.trust, project_item.needs_consent) == ("untrusted", True)
    assert other_clients.names() == ["db", "pj"]


def test_vscode_jsonc_with_comments_and_trailing_commas(config_home: Path, project: Path) -> None:
    write(config_home / "Code" / "User" / "mcp.json", """{
      // my servers
      "servers": {
        "fs": { "type": "stdio", "command": "fs-server", "args": ["--root", "/a//b"], },  /* note */
      },
    }""")
    items, problems = other_clients.discover(cwd=project)
    assert problems == []
    (item,) = items
    assert item.entry.args == ["--root", "/a//b"]


def test_broken_files_and_entries_are_problems_not_failures(fake_home: Path, project: Path) -> None:
    write(fake_home / ".cursor" / "mcp.json", "{ not json")
    write(project / ".mcp.json", {"mcpServers": {"bad": {"args": ["no command"]}, "good": {"command": "g"}}})
    items, problems = other_clients.discover(cwd=project)
    assert [i.entry.name for i in items] == ["good"]
    messages = sorted(p.message for p in problems)
    assert any("cannot read" in m for m in messages)
    assert any("'bad' needs either a command or a url" in m for m in messages)


def test_disabled_entries_are_skipped(fake_home: Path, project: Path) -> None:
    write(fake_home / ".codeium" / "windsurf" / "mcp_config.json",
          {"mcpServers": {"off": {"command": "x", "disabled": True}, "on": {"command": "y"}}})
    assert [n for n, _, _ in found(project)] == ["on"]


def test_discovery_can_be_turned_off(fake_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(fake_home / ".cursor" / "mcp.json", {"mcpServers": {"x": {"command": "x"}}})
    monkeypatch.setenv("MCP_NO_DISCOVERY", "1")
    assert other_clients.discover(cwd=project) == ([], [])
    assert other_clients.lookup("x") is None


def test_missing_home_files_are_fine(project: Path) -> None:
    assert other_clients.discover(cwd=project) == ([], [])


# -- the clients with their own dialects ------------------------------------------------------


def test_codex_gemini_zed_goose_opencode_and_vscode_settings_are_read(
    fake_home: Path, config_home: Path, project: Path
) -> None:
    write(fake_home / ".codex" / "config.toml", """
# Codex
model = "o3"

[mcp_servers.cx]
command = "cx-server"
args = ["--a"]
env = { K = "v" }
env_vars = ["FORWARDED"]

[mcp_servers.cx-remote]
url = "https://cx.example/mcp"
bearer_token_env_var = "CX_TOKEN"
env_http_headers = { "X-Team" = "TEAM" }

[mcp_servers.cx-off]
command = "off"
enabled = false
""")
    write(project / ".gemini" / "settings.json", {"mcpServers": {
        "gem-project": {"command": "gp", "args": ["$literal"], "env": {"KEY": "$GEM_KEY"}, "cwd": "/srv"}}})
    write(fake_home / ".gemini" / "settings.json", {"theme": "x", "mcpServers": {
        "gem-sse": {"url": "https://g.example/events"},
        "gem-http": {"httpUrl": "https://g.example/mcp", "headers": {"A": "b"}}}})
    write(config_home / "Code" / "User" / "settings.json", """{
        "editor.fontSize": 14, // comments are fine
        "mcp": {"servers": {"vs-settings": {"type": "http", "url": "https://v.example/mcp"}}},
    }""")
    write(config_home / "zed" / "settings.json", """// Zed settings
{
  "context_servers": {
    "zed-old": {"command": {"path": "zo", "args": ["1"], "env": {"E": "1"}}, "settings": {}},
    "zed-new": {"source": "custom", "command": "zn", "args": ["2"]},
    "zed-remote": {"url": "https://z.example/mcp", "headers": {"H": "v"}},
    "zed-extension": {"settings": {"database_url": "postgres://"}},
  },
}""")
    write(config_home / "goose" / "config.yaml", """
GOOSE_PROVIDER: anthropic
extensions:
  developer:
    enabled: true
    type: builtin
    name: developer
  gh:
    enabled: true
    type: stdio
    name: gh
    cmd: github-mcp
    args: [stdio]
    envs: {GITHUB_TOKEN: "${GH}"}
  web:
    enabled: true
    type: streamable_http
    uri: https://goose.example/mcp
  old:
    enabled: false
    type: sse
    uri: https://old.example/sse
""")
    write(config_home / "opencode" / "opencode.json", {"mcp": {
        "oc-local": {"type": "local", "command": ["npx", "-y", "oc"], "environment": {"T": "{env:OC_T}"}},
        "oc-remote": {"type": "remote", "url": "https://oc.example/mcp", "enabled": True},
        "oc-off": {"type": "local", "command": ["x"], "enabled": False}}})
    write(project / "opencode.json", {"$schema": "https://opencode.ai/config.json", "mcp": {
        "oc-project": {"type": "local", "command": ["ocp"]}}})

    items, problems = other_clients.discover(cwd=project)
    assert problems == []
    got = [(f.entry.name, f.source, f.scope) for f in items]
    assert got == [
        ("vs-settings", "vscode", "user"),
        ("cx", "codex", "user"),
        ("cx-remote", "codex", "user"),
        ("gem-sse", "gemini", "user"),
        ("gem-http", "gemini", "user"),
        ("zed-old", "zed", "user"),
        ("zed-new", "zed", "user"),
        ("zed-remote", "zed", "user"),
        ("gh", "goose", "user"),
        ("web", "goose", "user"),
        ("oc-local", "opencode", "user"),
        ("oc-remote", "opencode", "user"),
        ("gem-project", "gemini", "project"),
        ("oc-project", "opencode", "project"),
    ]
    e = {f.entry.name: f.entry for f in items}
    assert (e["cx"].command, e["cx"].args) == ("cx-server", ["--a"])
    assert e["cx"].env == {"K": "v", "FORWARDED": "${FORWARDED}"}
    assert e["cx-remote"].transport == "http"
    assert e["cx-remote"].headers == {"X-Team": "${TEAM}", "Authorization": "Bearer ${CX_TOKEN}"}
    assert e["gem-project"].env == {"KEY": "${GEM_KEY}"} and e["gem-project"].cwd == "/srv"
    assert e["gem-project"].args == ["$literal"]
    assert e["gem-sse"].transport == "sse" and e["gem-http"].transport == "http"
    assert e["gem-http"].headers == {"A": "b"}
    assert e["vs-settings"].url == "https://v.example/mcp"
    assert (e["zed-old"].command, e["zed-old"].args, e["zed-old"].env) == ("zo", ["1"], {"E": "1"})
    assert (e["zed-new"].command, e["zed-new"].args) == ("zn", ["2"])
    assert e["zed-remote"].headers == {"H": "v"}
    assert (e["gh"].command, e["gh"].args, e["gh"].env) == ("github-mcp", ["stdio"], {"GITHUB_TOKEN": "${GH}"})
    assert e["web"].url == "https://goose.example/mcp" and e["web"].transport == "http"
    assert (e["oc-local"].command, e["oc-local"].args) == ("npx", ["-y", "oc"])
    assert e["oc-local"].env == {"T": "${OC_T}"}
    # Nothing a client-specific key says leaks into the entry (it would be copied by import).
    assert e["oc-remote"].raw == {} and e["cx-remote"].raw == {}


def test_codex_home_overrides_the_codex_dir(
    fake_home: Path, tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(fake_home / ".codex" / "config.toml", '[mcp_servers.default-dir]\ncommand = "a"\n')
    write(tmp_path / "elsewhere" / "config.toml", '[mcp_servers.codex-home]\ncommand = "b"\n')
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "elsewhere"))
    assert [n for n, _, _ in found(project)] == ["codex-home"]


@pytest.mark.parametrize(
    ("relative", "text"),
    [
        (".codex/config.toml", "[mcp_servers.x\ncommand = 1"),
        ("config/goose/config.yaml", "extensions: [unclosed"),
        ("config/zed/settings.json", "{ // no end"),
        (".gemini/settings.json", "\x00\x01"),
        ("config/opencode/opencode.json", '{"mcp": {"bad": {"type": "local"}}}'),
    ],
)
def test_a_malformed_file_is_a_one_line_problem_and_the_rest_still_load(
    fake_home: Path, project: Path, relative: str, text: str
) -> None:
    write(fake_home / relative, text)
    write(fake_home / ".cursor" / "mcp.json", {"mcpServers": {"fine": {"command": "ok"}}})
    items, problems = other_clients.discover(cwd=project)
    assert [i.entry.name for i in items] == ["fine"]
    (problem,) = problems
    assert problem.path == fake_home / relative
    assert "\n" not in problem.message


def test_empty_files_and_a_directory_where_a_file_was_expected(fake_home: Path, project: Path) -> None:
    write(fake_home / ".codex" / "config.toml", "")
    write(fake_home / ".gemini" / "settings.json", "  \n")
    write(fake_home / "config" / "goose" / "config.yaml", "")
    (fake_home / "config" / "zed" / "settings.json").mkdir(parents=True)
    assert other_clients.discover(cwd=project) == ([], [])


def test_servers_list_shows_the_new_sources_and_the_unknown_server_hint_names_them(
    fake_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers import mcp_in

    write(fake_home / ".codex" / "config.toml", '[mcp_servers.from-codex]\ncommand = "c"\n')
    write(fake_home / "config" / "zed" / "settings.json", '{"context_servers": {"from-zed": {"url": "https://z"}}}')
    write(fake_home / "config" / "goose" / "config.yaml", "extensions: [broken")
    monkeypatch.chdir(project)
    r = mcp_in("servers", "list", "--json")
    assert r.code == 0, r
    rows = {row["name"]: row for row in r.json["servers"]}
    assert rows["from-codex"]["source"] == "codex"
    assert rows["from-codex"]["path"] == str(fake_home / ".codex" / "config.toml")
    assert rows["from-zed"]["source"] == "zed"
    warnings = [line for line in r.stderr.splitlines() if "config.yaml" in line]
    assert len(warnings) == 1 and "warning" in warnings[0] and "cannot read" in warnings[0]

    r = mcp_in("tools", "list", "from-cdex")
    assert r.code == 2
    assert "unknown server 'from-cdex'" in r.stderr
    assert "from-codex" in r.stderr and "from-zed" in r.stderr
