"""`mcp servers ...`: our config file, discovered servers, and import (in process; the real
command with a real server at the end)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from helpers import mcp, mcp_in


@pytest.fixture
def config_file(isolated_env: Path) -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "mcpcli" / "mcp.json"


def write(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))


def test_add_a_command_and_a_url_then_list_and_show(config_file: Path) -> None:
    r = mcp_in("servers", "add", "local", "--env", "TOKEN=${MY_TOKEN}", "--", "my-server", "--flag", "x y")
    assert r.code == 0, r
    assert f"added local in {config_file}" in r.stderr
    r = mcp_in("servers", "add", "remote", "https://example.com/mcp", "-H", "Authorization: Bearer ${T}",
               "--transport", "sse")
    assert r.code == 0, r
    doc = json.loads(config_file.read_text())
    assert doc == {"mcpServers": {
        "local": {"command": "my-server", "args": ["--flag", "x y"], "env": {"TOKEN": "${MY_TOKEN}"}},
        "remote": {"url": "https://example.com/mcp", "type": "sse",
                   "headers": {"Authorization": "Bearer ${T}"}},
    }}
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600

    r = mcp_in("servers", "list", "--json")
    assert r.code == 0, r
    rows = {row["name"]: row for row in r.json["servers"]}
    assert rows["local"]["command"] == "my-server" and rows["local"]["source"] == "config"
    assert rows["remote"]["transport"] == "sse" and rows["remote"]["url"] == "https://example.com/mcp"

    r = mcp_in("servers", "show", "local", "--json")
    assert r.code == 0, r
    assert r.json["config"]["env"] == {"TOKEN": "«redacted»"}
    r = mcp_in("servers", "show", "local", "--json", "--reveal")
    assert r.json["config"]["env"] == {"TOKEN": "${MY_TOKEN}"}


def test_add_refuses_to_replace_without_force(config_file: Path) -> None:
    assert mcp_in("servers", "add", "s", "--", "one").code == 0
    r = mcp_in("servers", "add", "s", "--", "two")
    assert r.code == 2
    assert "already exists" in r.stderr and "--force" in r.stderr
    assert json.loads(config_file.read_text())["mcpServers"]["s"]["command"] == "one"
    r = mcp_in("servers", "add", "s", "--force", "--", "two")
    assert r.code == 0, r
    assert json.loads(config_file.read_text())["mcpServers"]["s"]["command"] == "two"


def test_add_writes_the_session_options_and_list_and_show_display_them(config_file: Path) -> None:
    r = mcp_in("servers", "add", "ev", "--keep-alive", "--idle-timeout", "2h", "--restart", "on-failure",
               "--", "srv")
    assert r.code == 0, r
    r = mcp_in("servers", "add", "remote", "https://example.com/mcp", "--idle-timeout", "never")
    assert r.code == 0, r
    assert mcp_in("servers", "add", "plain", "--", "srv").code == 0
    doc = json.loads(config_file.read_text())["mcpServers"]
    assert doc["ev"] == {"command": "srv", "keepAlive": True, "idleTimeout": "2h", "restart": "on-failure"}
    assert doc["remote"] == {"url": "https://example.com/mcp", "idleTimeout": "never"}
    assert doc["plain"] == {"command": "srv"}

    rows = {row["name"]: row for row in mcp_in("servers", "list", "--json").json["servers"]}
    assert (rows["ev"]["keepAlive"], rows["ev"]["idleTimeout"], rows["ev"]["restart"]) == (True, 7200, "on-failure")
    assert (rows["remote"]["keepAlive"], rows["remote"]["idleTimeout"]) == (False, None)
    assert (rows["plain"]["keepAlive"], rows["plain"]["restart"]) == (False, "no")
    shown = mcp_in("servers", "show", "ev", "--json").json
    assert (shown["keepAlive"], shown["idleTimeout"], shown["restart"]) == (True, 7200, "on-failure")

    # keepAlive alone gets the loader's default idle timeout (30m).
    assert mcp_in("servers", "add", "ka", "--keep-alive", "--", "srv").code == 0
    assert mcp_in("servers", "show", "ka", "--json").json["idleTimeout"] == 1800


def test_servers_table_and_detail_show_session_settings() -> None:
    import io

    from rich.console import Console

    from mcpcli import render

    def shown(fn: Any, item: dict[str, Any]) -> str:
        buf = io.StringIO()
        fn(Console(file=buf, width=160, color_system=None), item)
        return buf.getvalue()

    rows = [{"name": "ev", "transport": "stdio", "command": "srv", "source": "config", "keepAlive": True,
             "idleTimeout": 5400.0, "restart": "on-failure"},
            {"name": "plain", "transport": "stdio", "command": "srv", "source": "config", "keepAlive": False,
             "idleTimeout": None, "restart": "no"}]
    text = shown(render.servers_table, {"servers": rows})
    assert "SESSION" in text and "keep-alive, idle 1h30m, restart on-failure" in text
    assert "SESSION" not in shown(render.servers_table, {"servers": rows[1:]})
    detail = shown(render.server_detail, {**rows[0], "config": {}})
    assert "session    keep-alive, idle 1h30m, restart on-failure" in detail


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("servers", "add", "n", "--idle-timeout", "5x", "--", "x"), "--idle-timeout must be a duration"),
        (("servers", "add", "n", "--idle-timeout", "0", "--", "x"), "--idle-timeout must be a duration"),
        (("servers", "add", "n", "--restart", "always", "--", "x"), "Invalid value for '--restart'"),
        (("servers", "add", "-bad", "--", "x"), "No such option"),
        (("servers", "add", "has space", "--", "x"), "invalid server name"),
        (("servers", "add", "n"), "nothing to add"),
        (("servers", "add", "n", "ftp://x"), "is not an http(s) URL"),
        (("servers", "add", "n", "http://"), "mcp: error: not an http(s) URL: http://"),
        (("servers", "add", "n", "https://h:99999/mcp"), "mcp: error: invalid port '99999' in URL"),
        (("servers", "add", "n", "http://[::1/mcp"), "mcp: error: not a valid URL: invalid IPv6 URL"),
        (("servers", "add", "n", "https://x", "--", "cmd"), "not both"),
        (("servers", "add", "n", "https://x", "--env", "A=1"), "apply to stdio servers"),
        (("servers", "add", "n", "--header", "A: 1", "--", "cmd"), "apply to URL servers"),
        (("servers", "add", "n", "--env", "NOEQUALS", "--", "cmd"), "expected KEY=VALUE"),
    ],
)
def test_add_rejects_bad_input_with_exit_2(config_file: Path, args: tuple[str, ...], message: str) -> None:
    r = mcp_in(*args)
    assert r.code == 2, r
    assert message in r.stderr
    assert not config_file.exists()


def test_add_keeps_a_url_with_references_for_its_use_to_check(config_file: Path) -> None:
    r = mcp_in("servers", "add", "n", "https://${HOST}:${PORT}/mcp")
    assert r.code == 0, r
    assert json.loads(config_file.read_text())["mcpServers"]["n"] == {"url": "https://${HOST}:${PORT}/mcp"}


def test_remove(config_file: Path, fake_home: Path) -> None:
    mcp_in("servers", "add", "a", "--", "x")
    mcp_in("servers", "add", "b", "--", "y")
    r = mcp_in("servers", "remove", "a")
    assert r.code == 0, r
    assert list(json.loads(config_file.read_text())["mcpServers"]) == ["b"]
    r = mcp_in("servers", "remove", "a")
    assert r.code == 2 and "no server 'a'" in r.stderr
    write(fake_home / ".cursor" / "mcp.json", {"mcpServers": {"cursed": {"command": "c"}}})
    r = mcp_in("servers", "remove", "cursed")
    assert r.code == 2
    assert "configured in Cursor" in r.stderr
    assert "mcp servers uninstall cursed --from cursor" in r.stderr
    assert json.loads((fake_home / ".cursor" / "mcp.json").read_text()) == {
        "mcpServers": {"cursed": {"command": "c"}}}


def test_list_shows_discovered_servers_with_their_source(config_file: Path, fake_home: Path) -> None:
    mcp_in("servers", "add", "shared", "--", "ours")
    write(fake_home / ".cursor" / "mcp.json", {"mcpServers": {
        "shared": {"command": "theirs"}, "cursor-only": {"url": "https://c.example/mcp"}}})
    write(fake_home / ".claude.json", "{broken")
    r = mcp_in("servers", "list", "--json")
    assert r.code == 0, r
    rows = [(row["name"], row["source"], row.get("shadowed", False)) for row in r.json["servers"]]
    assert rows == [("shared", "config", False), ("shared", "cursor", True), ("cursor-only", "cursor", False)]
    assert r.json["problems"][0]["path"].endswith(".claude.json")
    assert ".claude.json: cannot read" in r.stderr


def test_import_copies_without_overwriting(config_file: Path, fake_home: Path) -> None:
    mcp_in("servers", "add", "gh", "--", "ours")
    write(Path(os.environ["XDG_CONFIG_HOME"]) / "Claude" / "claude_desktop_config.json", {"mcpServers": {
        "gh": {"command": "theirs"}, "fs": {"command": "fs-server", "args": ["/data"]}}})
    write(fake_home / ".codeium" / "windsurf" / "mcp_config.json",
          {"mcpServers": {"wind": {"serverUrl": "https://w.example/mcp"}}})

    r = mcp_in("servers", "import", "claude-desktop", "--dry-run", "--json")
    assert r.code == 0, r
    assert [i["name"] for i in r.json["imported"]] == ["fs"]
    assert list(json.loads(config_file.read_text())["mcpServers"]) == ["gh"]

    r = mcp_in("servers", "import", "claude-desktop", "--json")
    assert r.code == 0, r
    assert [i["name"] for i in r.json["imported"]] == ["fs"]
    assert [s["name"] for s in r.json["skipped"]] == ["gh"]
    servers = json.loads(config_file.read_text())["mcpServers"]
    assert servers["gh"] == {"command": "ours"}
    assert servers["fs"] == {"command": "fs-server", "args": ["/data"]}
    assert "wind" not in servers

    r = mcp_in("servers", "import", "--force", "--name", "gh", "--name", "wind")
    assert r.code == 0, r
    servers = json.loads(config_file.read_text())["mcpServers"]
    assert servers["gh"] == {"command": "theirs"}
    assert servers["wind"] == {"url": "https://w.example/mcp"}

    r = mcp_in("servers", "import", "--name", "nope")
    assert r.code == 2 and "nope" in r.stderr


def test_config_flag_and_environment_variable_choose_the_file(tmp_path: Path, config_file: Path) -> None:
    other = tmp_path / "other.json"
    r = mcp_in("--config", str(other), "servers", "add", "x", "--", "cmd")
    assert r.code == 0, r
    assert json.loads(other.read_text()) == {"mcpServers": {"x": {"command": "cmd"}}}
    r = mcp_in("servers", "list", "--json", env={"MCP_CONFIG": str(other)})
    assert [row["name"] for row in r.json["servers"]] == ["x"]
    assert not config_file.exists()


def test_a_broken_config_file_is_a_clear_error(config_file: Path) -> None:
    config_file.parent.mkdir(parents=True)
    config_file.write_text('{"mcpServers": [1, 2]}')
    r = mcp_in("servers", "list")
    assert r.code == 2
    assert "mcpServers must be an object" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.slow
def test_concurrent_adds_and_removes_lose_nothing(config_file: Path) -> None:
    import subprocess
    import sys

    write(config_file, {"mcpServers": {f"gone{n}": {"command": "g"} for n in range(4)}, "other": True})
    argvs = [["servers", "add", f"r{n}", "--", "echo", str(n)] for n in range(6)]
    argvs += [["servers", "remove", f"gone{n}"] for n in range(4)]
    procs = [subprocess.Popen([sys.executable, "-m", "mcpcli", *argv], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for argv in argvs]
    errors = [proc.communicate(timeout=120)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * len(procs), errors
    doc = json.loads(config_file.read_text())
    assert doc == {"mcpServers": {f"r{n}": {"command": "echo", "args": [str(n)]} for n in range(6)}, "other": True}


def test_a_config_changed_after_it_was_read_is_changed_as_it_is_now(config_file: Path) -> None:
    from mcpcli.config import Config, normalize_entry

    write(config_file, {"mcpServers": {"a": {"command": "a"}}})
    config = Config(config_file)
    assert config.names() == ["a"]  # read (and cached) now...
    write(config_file, {"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}})  # ...changed by another
    assert config.set(normalize_entry("c", {"command": "c"}, source="test")) is False
    assert sorted(json.loads(config_file.read_text())["mcpServers"]) == ["a", "b", "c"]
    assert config.remove("b") is True and config.names() == ["a", "c"]


def test_add_refuses_a_name_that_appeared_meanwhile_without_force(config_file: Path) -> None:
    from mcpcli.config import Config, normalize_entry
    from mcpcli.errors import UsageError

    config = Config(config_file)
    assert config.names() == []
    write(config_file, {"mcpServers": {"x": {"command": "theirs"}}})
    with pytest.raises(UsageError, match="already exists"):
        config.set(normalize_entry("x", {"command": "mine"}, source="test"), replace=False)
    assert json.loads(config_file.read_text()) == {"mcpServers": {"x": {"command": "theirs"}}}


# -- using configured and discovered servers, with a real server -----------------------------


@pytest.mark.peer
def test_configured_server_with_interpolated_env(config_file: Path, everything: list[str]) -> None:
    r = mcp("servers", "add", "ev", "--env", "PASSED_IN=${SOURCE_VALUE}", "--", *everything)
    assert r.code == 0, r
    r = mcp("tools", "call", "ev", "get-env", "-q", env={"SOURCE_VALUE": "interpolated!"})
    assert r.code == 0, r
    seen = json.loads(r.json["content"][0]["text"])
    assert seen["PASSED_IN"] == "interpolated!"
    assert "SOURCE_VALUE" not in seen  # only what the entry asks for reaches the server
    r = mcp("tools", "call", "ev", "get-env", "-q")
    assert r.code == 2
    assert "environment variable SOURCE_VALUE is not set" in r.stderr


@pytest.mark.peer
def test_a_server_found_in_another_client_is_usable_by_name(fake_home: Path, everything: list[str]) -> None:
    write(fake_home / ".cursor" / "mcp.json",
          {"mcpServers": {"everything": {"command": everything[0], "args": everything[1:]}}})
    r = mcp("tools", "call", "everything", "echo", "--arg", "message=found", "-q")
    assert r.code == 0, r
    assert r.json["content"][0]["text"] == "Echo: found"


def test_unknown_server_names_the_configured_ones(config_file: Path) -> None:
    mcp_in("servers", "add", "alpha", "--", "x")
    r = mcp_in("tools", "list", "alpah")
    assert r.code == 2
    assert "unknown server 'alpah'" in r.stderr and "alpha" in r.stderr


def test_add_a_headers_helper_and_show_it(config_file: Path) -> None:
    r = mcp_in("servers", "add", "corp", "https://corp.example/mcp", "--headers-helper", "corp-cli headers --json")
    assert r.code == 0, r
    assert json.loads(config_file.read_text())["mcpServers"]["corp"] == {
        "url": "https://corp.example/mcp", "headersHelper": "corp-cli headers --json"}
    shown = mcp_in("servers", "show", "corp", "--json").json
    assert shown["headersHelper"] == "corp-cli headers --json"
    assert shown["config"]["headersHelper"] == "corp-cli headers --json"
    from rich.console import Console

    from mcpcli.render import server_detail

    console = Console(record=True, width=120)
    server_detail(console, shown)
    assert "headers    from corp-cli headers --json" in console.export_text()

    bad = mcp_in("servers", "add", "loc", "--headers-helper", "x", "--", "my-server")
    assert bad.code == 2 and "--headers-helper applies to URL servers" in bad.stderr
    write(config_file, {"mcpServers": {"corp": {"url": "https://corp.example/mcp", "headersHelper": 3}}})
    broken = mcp_in("tools", "list", "corp")
    assert broken.code == 2, broken
    assert "headersHelper must be a command string or a non-empty list" in broken.stderr
