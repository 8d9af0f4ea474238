"""TARGET mistakes a newcomer makes: a program or a script where a server's name goes
(`mcp tools list npx`, `mcp tools list ./server.py`), a URL of another scheme. Each is a
usage error whose hint shows the command to give instead; nothing is run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import mcp_in

from mcpcli.config import Config
from mcpcli.targets import resolve_target


@pytest.mark.parametrize(("name", "text", "command"), [
    ("server.py", "print('never run')\n", "python3 {}"),
    ("index.js", "console.log('never run')\n", "node {}"),
    ("serve", "#!/bin/sh\necho never run > ran\n", "./serve"),  # an executable runs by its path
])
def test_a_script_as_target_says_to_give_it_after_dashes(tmp_path: Path, name: str, text: str, command: str) -> None:
    script = tmp_path / name
    script.write_text(text)
    script.chmod(0o755)
    for target in (name, f"./{name}"):
        r = mcp_in("tools", "list", target, cwd=tmp_path)
        assert r.code == 2 and r.stdout == "", r
        assert r.stderr.splitlines() == [
            f"mcp: error: {target} is a program, not a tools.yaml file or a server's name",
            "mcp: hint: to start it as a stdio server, give the command after --: mcp tools list -- "
            + command.format(target),
        ]
    assert not (tmp_path / "ran").exists()


def test_an_executable_tools_file_is_still_a_tools_file(tmp_path: Path) -> None:
    """Some file systems give every file the execute bit: a file is a program only when
    it starts like one."""
    tools = tmp_path / "tools"
    tools.write_text("version: 1\ntools: []\n")
    tools.chmod(0o755)
    r = mcp_in("tools", "list", "./tools", cwd=tmp_path)
    assert r.code == 0, r
    assert r.json["tools"] == []


def test_a_program_on_path_as_target_says_to_give_it_after_dashes(tmp_path: Path) -> None:
    program = tmp_path / "bin" / "some-mcp-server"
    program.parent.mkdir()
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    r = mcp_in("tools", "list", "some-mcp-server", env={"PATH": f"{program.parent}{os.pathsep}{os.environ['PATH']}"})
    assert r.code == 2 and r.stdout == "", r
    assert r.stderr.splitlines() == [
        "mcp: error: unknown server 'some-mcp-server'; there is a program of that name",
        "mcp: hint: to start it as a stdio server, give the command after --: mcp tools list -- some-mcp-server ARGS...",
    ]


def test_a_configured_name_wins_over_a_program_of_that_name(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    assert mcp_in("servers", "add", "sh", "http://127.0.0.1:9/mcp", env={"MCP_CONFIG": str(config)}).code == 0
    r = mcp_in("ping", "sh", "--timeout", "5", env={"MCP_CONFIG": str(config)})
    assert "program" not in r.stderr and "127.0.0.1:9" in r.stderr, r


@pytest.mark.parametrize("target", ["ws://localhost:3000/mcp", "file:///srv/mcp", "stdio://server"])
def test_a_url_of_another_scheme_is_refused_with_the_ways_that_work(target: str) -> None:
    r = mcp_in("ping", target)
    scheme = target.split("://")[0]
    assert r.code == 2 and r.stdout == "", r
    assert r.stderr.splitlines() == [
        f"mcp: error: {target}: servers are reached over http:// or https://, not {scheme}://",
        "mcp: hint: for a stdio server, give the command after --: "
        "mcp tools list -- npx -y @modelcontextprotocol/server-everything",
    ]


def test_a_gateway_file_gives_the_hint_as_its_own_syntax(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text("version: 1\nservers:\n  - {name: a, target: sh}\n")
    r = mcp_in("serve", "--check", str(path))
    assert r.code == 2 and r.stdout == "", r
    assert r.stderr == (f"{path}:3:5: error: server 'a': unknown server 'sh'; there is a program of that name "
                        "(to start it as a stdio server, give the command as `command: [sh, ARGS...]`)\n")


@pytest.mark.parametrize(("target", "url"), [
    ("HTTPS://Example.com/mcp", "https://Example.com/mcp"),
    ("Http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcp"),
])
def test_a_url_scheme_in_capitals_is_the_same_url(tmp_path: Path, target: str, url: str) -> None:
    entry = resolve_target(target, [], Config(tmp_path / "none.json"))
    assert (entry.transport, entry.url) == ("http", url)


@pytest.mark.parametrize(("target", "error"), [
    ("http://[::1/mcp", "mcp: error: not a valid URL: invalid IPv6 URL"),
    ("http://", "mcp: error: not an http(s) URL: http://"),
    ("http://host:99999/mcp", "mcp: error: invalid port '99999' in URL http://host/mcp"),
])
def test_a_malformed_url_is_a_usage_error(target: str, error: str) -> None:
    r = mcp_in("ping", target)
    assert r.code == 2 and r.stdout == "", r
    assert r.stderr.splitlines() == [error]
