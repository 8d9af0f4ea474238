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
    assert got == [
        ("code-project", "claude-code", "project"),
        ("dot-mcp", "claude-code", "project"),
        ("cur-project", "cursor", "project"),
        ("vs-project", "vscode", "project"),
        ("code-global", "claude-code", "user"),
        ("desk", "claude-desktop", "user"),
        ("cur", "cursor", "user"),
        ("vs", "vscode", "user"),
        ("wind", "windsurf", "user"),
    ]
    items, problems = other_clients.discover(cwd=project)
    assert problems == []
    by_name = {f.entry.name: f.entry for f in items}
    assert by_name["desk"].command == "desk-server" and by_name["desk"].env == {"K": "v"}
    assert by_name["cur"].transport == "sse"
    assert by_name["wind"].url == "https://w.example/mcp" and by_name["wind"].transport == "http"
    assert by_name["vs-project"].args == [f"{project}/server.js"]


def test_project_files_win_over_user_files(
    fake_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(fake_home / ".cursor" / "mcp.json", {"mcpServers": {"db": {"command": "global-db"}}})
    write(project / ".cursor" / "mcp.json", {"mcpServers": {"db": {"command": "project-db"}}})
    monkeypatch.chdir(project)
    entry = other_clients.find("db")
    assert entry is not None and entry.command == "project-db"
    assert other_clients.names() == ["db"]


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
    assert other_clients.find("x") is None


def test_missing_home_files_are_fine(project: Path) -> None:
    assert other_clients.discover(cwd=project) == ([], [])
