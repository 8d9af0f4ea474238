"""`servers:` in tools.yaml: the entries' model, every loader error at its file:line:col,
`mcp serve --check` (configured names, without connecting) and `--check --connect`."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from helpers import FAKES, REPO, free_port, mcp_in

from mcpcli.toolsfile.build_servers import glob_problem
from mcpcli.toolsfile.load import ToolsFileError, parse_config
from mcpcli.toolsfile.model import ToolFilter, Upstream

HEAD = "version: 1\n"


def load(text: str, path: str = "t.yaml", environ: dict[str, str] | None = None) -> tuple[Upstream, ...]:
    return parse_config(HEAD + textwrap.dedent(text), path, environ=environ or {}).servers


def problems(text: str, environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ToolsFileError) as info:
        parse_config(HEAD + textwrap.dedent(text), "t.yaml", environ=environ or {})
    return [str(p) for p in info.value.problems]


# -- the model --------------------------------------------------------------------------


def test_the_issue_example_builds_upstreams_located_at_their_entries() -> None:
    servers = load("""\
        servers:
          - name: gh                      # tools appear as gh_<tool> unless prefix: is given
            target: github                # a configured name, a URL, or command: [argv...]
            tools: {allow: ["get_*", "search_*"], deny: ["*delete*"]}
            resources: true               # pass resources and templates through (URIs unchanged)
            prompts: false
        """)
    assert servers == (Upstream(
        name="gh", target="github", prefix="gh_",
        tools=ToolFilter(allow=("get_*", "search_*"), deny=("*delete*",)),
        resources=True, prompts=False, file="t.yaml", line=3, col=5,
    ),)


def test_every_field_with_interpolation_secrets_and_defaults(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    servers = load("""\
        secrets:
          TOKEN: {from_env: API_TOKEN}
          GONE: {from_env: UNSET_ONE, required: false}
        servers:
          - name: ev
            command: ["${NODE}", server.js, stdio]
            prefix: ""
            tools: {read_only: true}
            env: {HOME_DIR: "${HOME}", LEVEL: 3, KEY: {secret: TOKEN}, OPT: {secret: GONE}}
            timeout: 1500ms
            concurrency: 2
          - name: remote
            target: "https://mcp.example/${ENV_NAME}/mcp"
            headers: {Authorization: "Bearer ${API_TOKEN}", X-Key: {secret: TOKEN}}
            resources: false
          - name: local
            target: other.yaml
        """, str(path), {"NODE": "/usr/bin/node", "HOME": "/home/u", "API_TOKEN": "s3cret-value",
                         "ENV_NAME": "prod"})
    ev, remote, local = servers
    assert ev.command == ("/usr/bin/node", "server.js", "stdio") and ev.target is None
    assert ev.prefix == "" and ev.tools == ToolFilter(read_only=True)
    assert ev.env == {"HOME_DIR": "/home/u", "LEVEL": "3", "KEY": "s3cret-value"}  # OPT unset: left out
    assert (ev.timeout, ev.concurrency, ev.resources, ev.prompts) == (1.5, 2, True, True)
    assert remote.target == "https://mcp.example/prod/mcp" and remote.prefix == "remote_"
    assert remote.headers == {"Authorization": "Bearer s3cret-value", "X-Key": "s3cret-value"}
    assert remote.resources is False and remote.timeout is None and remote.concurrency == 16
    # A tools.yaml upstream is found next to the file, wherever `mcp serve` runs.
    assert local.target == str(tmp_path / "other.yaml")
    assert (ev.line, remote.line, local.line) == (6, 13, 17)


def test_a_file_may_have_only_servers() -> None:
    config = parse_config(HEAD + "servers:\n  - {name: a, target: x}\n", "t.yaml", environ={})
    assert config.tools == {} and config.prompts == {} and config.resources == ()
    assert [s.name for s in config.servers] == ["a"]


def test_a_local_tool_named_like_a_prefix_pattern_is_fine() -> None:
    config = parse_config(HEAD + textwrap.dedent("""\
        tools:
          - {name: gh_search, description: mine, mock: {text: hi}}
        servers:
          - {name: gh, target: github}
        """), "t.yaml", environ={})
    assert list(config.tools) == ["gh_search"] and config.servers[0].prefix == "gh_"


# -- loader errors, each at its file:line:col ----------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("servers:\n  - {name: a, target: x, command: [y]}\n",
         "t.yaml:3:26: error: server 'a': command: give target or command, not both"),
        ("servers:\n  - name: a\n    prompts: false\n",
         "t.yaml:3:5: error: server 'a': missing target (a configured server, a URL or a tools.yaml) "
         "or command (argv of a stdio server)"),
        ("servers:\n  - {name: a, target: x}\n  - {name: b, target: y}\n  - {name: a, target: z}\n",
         "t.yaml:5:12: error: server 'a': name: duplicate server name 'a' (first at line 3)"),
        ("servers:\n  - {name: 'gh tools', target: x}\n",
         "t.yaml:3:12: error: server 'gh tools': name: expected a name of letters, digits, '_' and '-' "
         "(1 to 64 characters)"),
        ("servers:\n  - {name: a, target: x, prefix: 'a/'}\n",
         "t.yaml:3:34: error: server 'a': prefix: 'a/': '/' cannot occur in a tool name, so every tool "
         "would get an invalid name (use letters, digits, '_', '-' and '.')"),
        ("servers:\n  - {name: a, target: x, prefix: '" + "p" * 128 + "'}\n",
         "t.yaml:3:34: error: server 'a': prefix: prefix is 128 characters: with it no tool name fits in 128"),
        ("servers:\n  - {name: a, target: x, prefix: gh_}\n  - {name: gh, target: y}\n",
         "t.yaml:4:12: error: server 'gh': name: same prefix ('gh_') as server 'a' (line 3): their tool "
         "and prompt names could collide (give each entry its own prefix:)"),
        ("servers:\n  - {name: a, target: x, prefix: ''}\n  - {name: b, target: y, prefix: ''}\n",
         "t.yaml:4:34: error: server 'b': prefix: same prefix (no prefix) as server 'a' (line 3): their "
         "tool and prompt names could collide (give each entry its own prefix:)"),
        ("servers:\n  - {name: a, target: x, tools: {allow: ['']}}\n",
         "t.yaml:3:42: error: server 'a': tools.allow[0]: an empty glob matches no tool"),
        ("servers:\n  - {name: a, target: x, tools: {allow: ['get_[ab']}}\n",
         "t.yaml:3:42: error: server 'a': tools.allow[0]: 'get_[ab' has a '[' without its closing ']'"),
        ("servers:\n  - {name: a, target: x, tools: {deny: ['ok', '*del ete*']}}\n",
         "t.yaml:3:47: error: server 'a': tools.deny[1]: '*del ete*': ' ' cannot occur in a tool name "
         "(letters, digits, '_', '-', '.')"),
        ("servers:\n  - {name: a, target: x, tools: {deny: ['[^x]*']}}\n",
         "t.yaml:3:41: error: server 'a': tools.deny[0]: '[^x]*': '^' cannot occur in a tool name "
         "(write [!...] to exclude characters)"),
        ("servers:\n  - {name: a, target: 'https://x.example/mcp', env: {A: b}}\n",
         "t.yaml:3:48: error: server 'a': env: env applies to a stdio server (command:), not to a URL"),
        ("servers:\n  - {name: a, command: [srv], headers: {X-Key: v}}\n",
         "t.yaml:3:31: error: server 'a': headers: headers apply to an HTTP server (a URL target), "
         "not to command:"),
        ("servers:\n  - {name: a, command: [srv], env: {K: {secret: NOPE}}}\n",
         "t.yaml:3:40: error: server 'a': env.K: unknown secret 'NOPE' (declare it under secrets:)"),
        ("servers:\n  - {name: a, command: ['']}\n",
         "t.yaml:3:25: error: server 'a': command[0]: the program name is empty"),
        ("servers:\n  - {name: a, command: [srv], timeout: 0}\n",
         "t.yaml:3:40: error: server 'a': timeout: must be more than 0"),
        ("servers:\n  - {name: a, command: [srv], timeout: soon}\n",
         "t.yaml:3:40: error: server 'a': timeout: expected a duration like 30s, 500ms, 2m, 1h or a "
         "number of seconds, got text"),
        ("servers:\n  - {name: a, command: [srv], tool: {allow: [x]}}\n",
         "t.yaml:3:31: error: server 'a': tool: unknown key 'tool' (did you mean 'tools'?)"),
        ("servers:\n  - {name: a, target: 'https://x/${NOPE}'}\n",
         "t.yaml:3:23: error: environment variable NOPE is not set (export it, or write ${NOPE:-default})"),
    ],
)
def test_loader_errors_are_located(body: str, expected: str) -> None:
    assert problems(body) == [expected]


def test_a_target_that_is_this_very_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + "servers:\n  - {name: me, target: ./gw.yaml}\n")
    result = mcp_in("serve", "--check", str(path))
    assert result.code == 2, result
    assert result.stderr == (f"{path}:3:24: error: server 'me': target: the target is this very file "
                             "(it would serve itself forever)\n")


def test_every_entry_problem_is_reported_at_once_and_secrets_are_not_shown() -> None:
    found = problems("""\
        servers:
          - name: a
            command: [srv]
            headers: {X-Key: "${KEY}"}
          - name: b
            target: 'https://x.example/mcp'
            headers: {X-Key: "line\\nbreak ${KEY}"}
            tools: {allow: ['[]']}
        """, {"KEY": "very-secret-token"})
    assert len(found) == 3, found
    assert not any("very-secret-token" in line for line in found)
    assert "t.yaml:8:15: error: server 'b': headers.X-Key: the value holds a NUL byte or a line break" in found


@pytest.mark.parametrize("glob", ["*", "get_*", "?et", "[!a-c]*", "a.b-c_*", "[a-z0-9]?"])
def test_good_globs(glob: str) -> None:
    assert glob_problem(glob) is None


# -- mcp serve --check -----------------------------------------------------------------


def test_check_counts_the_servers(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + "servers:\n  - {name: a, command: [srv]}\n  - {name: b, target: 'https://x.example/mcp'}\n")
    result = mcp_in("serve", "--check", str(path))
    assert result.code == 0, result
    assert result.stdout == ""
    assert result.stderr == f"mcp: {path}: valid (0 tools, 0 resources, 0 prompts, 2 servers)\n"


def _config(home: Path, servers: dict[str, object]) -> Path:
    path = home / "config" / "mcpcli" / "mcp.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_check_reports_an_unknown_configured_name_at_its_entry(tmp_path: Path, fake_home: Path) -> None:
    _config(fake_home, {"github": {"url": "https://gh.example/mcp"}, "files": {"command": "srv"}})
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + "servers:\n  - {name: gh, target: github}\n  - {name: fs, target: filez}\n")
    result = mcp_in("serve", "--check", str(path))
    assert result.code == 2, result
    assert result.stdout == ""
    assert result.stderr == (f"{path}:4:5: error: server 'fs': unknown server 'filez' "
                             "(known servers: files, github)\n")


def test_check_finds_a_server_another_client_configured(tmp_path: Path, fake_home: Path) -> None:
    (fake_home / ".cursor").mkdir()
    (fake_home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"cur": {"command": "srv"}}}))
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + "servers:\n  - {name: c, target: cur}\n")
    result = mcp_in("serve", "--check", str(path))
    assert result.code == 0, result


def test_connect_needs_check(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD)
    result = mcp_in("serve", "--connect", str(path))
    assert result.code == 2, result
    assert "--connect applies to --check only" in result.stderr


# -- mcp serve --check --connect --------------------------------------------------------


def _fake(*args: str) -> str:
    return json.dumps([sys.executable, str(FAKES / "fake_stdio_server.py"), *args])


@pytest.mark.peer
def test_check_connect_reaches_real_upstreams_of_every_era(tmp_path: Path, everything: list[str],
                                                           sdk_server: list[str]) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + f"servers:\n  - name: ev\n    command: {json.dumps(everything)}\n"
                    f"  - name: sdk\n    command: {json.dumps(sdk_server)}\n"
                    f"  - name: fake\n    command: {_fake('--features')}\n    resources: false\n"
                    f"  - name: modern\n    command: {_fake('--modern')}\n")
    result = mcp_in("serve", "--check", "--connect", str(path))
    assert result.code == 0, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 5, lines
    for line, (at, name) in zip(lines[:2], [("3:5", "ev"), ("5:5", "sdk")], strict=True):
        assert re.fullmatch(rf"mcp: {re.escape(str(path))}:{at}: server '{name}': reached \([0-9]+ tools, "
                            r"[0-9]+ prompts?, [0-9]+ resources\)", line), lines
    assert lines[2] == f"mcp: {path}:7:5: server 'fake': reached (2 tools, 1 prompt)"
    assert lines[3] == f"mcp: {path}:10:5: server 'modern': reached (2 tools)"
    assert lines[4] == f"mcp: {path}: valid (0 tools, 0 resources, 0 prompts, 4 servers)"


def test_a_declared_list_that_fails_is_reported_with_its_method(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + f"servers:\n  - name: fake\n    command: {_fake('--features')}\n")
    result = mcp_in("serve", "--check", "--connect", str(path))
    assert result.code == 2, result
    assert result.stderr == (f"{path}:3:5: error: server 'fake': resources/list failed: Method not found "
                             "(code -32601) (`resources: false` on the entry leaves them out)\n")


def test_check_connect_reports_an_unreachable_upstream_at_its_entry(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + f"servers:\n  - name: ok\n    command: {_fake()}\n"
                    f"  - name: down\n    command: {_fake('--exit-before-init', '3')}\n"
                    f"  - name: nothing\n    command: [/nonexistent/server-xyz]\n"
                    f"  - name: closed\n    target: 'http://127.0.0.1:{free_port()}/mcp'\n")
    result = mcp_in("serve", "--check", "--connect", str(path))
    assert result.code == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    errors = [line for line in lines if ": error: " in line]
    assert [e.split(": cannot reach it: ")[0] for e in errors] == [
        f"{path}:5:5: error: server 'down'", f"{path}:7:5: error: server 'nothing'",
        f"{path}:9:5: error: server 'closed'"], result.stderr
    assert f"mcp: {path}:3:5: server 'ok': reached (2 tools)" in lines
    assert not any("valid" in line for line in lines)


def test_check_connect_finds_collisions_only_the_upstreams_reveal(tmp_path: Path) -> None:
    (tmp_path / "bare.yaml").write_text(HEAD + textwrap.dedent("""\
        tools:
          - {name: fake_echo, description: same final name as fake's echo, mock: {text: hi}}
          - {name: FAKE_SLOW, description: hidden by the filter below, mock: {text: hi}}
          - {name: own, description: no clash, mock: {text: hi}}
        prompts:
          - {name: weather, description: theirs, messages: [{role: user, text: hi}]}
        """))
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + textwrap.dedent(f"""\
        tools:
          - {{name: fake_slow, description: mine, mock: {{text: hi}}}}
        servers:
          - name: fake
            command: {_fake()}
          - name: bare
            target: bare.yaml
            prefix: ""
            tools: {{deny: ["fake_s*"]}}
        prompts:
          - {{name: weather, description: mine, messages: [{{role: user, text: hi}}]}}
        """))
    assert mcp_in("serve", "--check", str(path)).code == 0  # nothing to see without connecting
    result = mcp_in("serve", "--check", "--connect", str(path))
    assert result.code == 2, result
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert errors == [
        f"{path}:5:5: error: server 'fake': tool 'fake_slow' is also a tool of this file",
        f"{path}:7:5: error: server 'bare': tool 'fake_echo' is also served by server 'fake' (line 5)",
        f"{path}:7:5: error: server 'bare': prompt 'weather' is also a prompt of this file",
    ], result.stderr


def test_check_connect_bounds_a_silent_upstream_by_its_timeout(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + f"servers:\n  - name: deaf\n    command: {_fake('--deaf')}\n    timeout: 500ms\n"
                    f"  - name: ok\n    command: {_fake()}\n")
    result = mcp_in("serve", "--check", "--connect", str(path))
    assert result.code == 2, result
    assert f"{path}:3:5: error: server 'deaf': no answer within 0.5s (set a longer `timeout:` on the entry " \
           "if it is only slow)" in result.stderr.splitlines()
    assert f"mcp: {path}:6:5: server 'ok': reached (2 tools)" in result.stderr.splitlines()
    # What the deaf server wrote on stdout is a warning at its entry, not an unattributed line.
    assert any(line.startswith(f"{path}:3:5: warning: server 'deaf': server wrote a line that is not JSON-RPC")
               for line in result.stderr.splitlines()), result.stderr


def test_a_reload_that_changes_servers_says_a_restart_is_needed(tmp_path: Path, make_backend: Any) -> None:
    path = tmp_path / "tools.yaml"
    path.write_text(HEAD + "servers:\n  - {name: a, target: x}\n")
    said: list[str] = []
    backend = make_backend(path, log=said.append)
    # Moved by a line (a comment above it): the same upstream, nothing to say.
    path.write_text(HEAD + "# upstreams\nservers:\n  - {name: a, target: x}\n")
    assert backend.reload() is False
    assert said == [f"reloaded {path}: no visible change"]
    said.clear()
    path.write_text(HEAD + "servers:\n  - {name: a, target: y}\n")
    backend.reload()
    assert said == [f"reloaded {path}: servers: changed, but the upstreams served stay the ones it started "
                    "with; restart `mcp serve` to apply the change"]


# -- serving: the wiring to the gateway runtime ------------------------------------------


@pytest.mark.parametrize(
    ("own", "watch", "merged"),
    [(True, False, True), (False, False, False), (False, True, True)],
)
@pytest.mark.anyio
async def test_a_file_with_servers_is_served_by_the_gateway(
        make_backend: Any, own: bool, watch: bool, merged: bool) -> None:
    """The upstream's tools under the entry's prefix, and the file's own tools when it has
    some (or with --watch, so tools a reload adds appear), through the real gateway."""
    from mcpcli.client import Client
    from mcpcli.gateway import GatewayOptions
    from mcpcli.gateway.serve_file import served_backend
    from mcpcli.server import Server

    text = HEAD + f"servers:\n  - {{name: a, command: {_fake()}}}\n"
    if own:
        text += "tools:\n  - {name: t, description: d, mock: {text: hi}}\n"
    local = make_backend(text)
    async with served_backend(local, watch=watch, options=GatewayOptions()) as served:
        assert served is not local
        async with Client(Server(served).transport()) as client:
            names = sorted(t["name"] for t in (await client.list_tools())["tools"])
            assert ("t" in names) is (own and merged)
            assert "a_echo" in names and "echo" not in names
            result = await client.call_tool("a_echo", {"message": "hi"})
            assert not result.get("isError"), result


@pytest.mark.anyio
async def test_a_file_without_servers_is_served_as_before(make_backend: Any) -> None:
    from mcpcli.gateway.serve_file import served_backend

    local = make_backend(HEAD + "tools:\n  - {name: t, description: d, mock: {text: hi}}\n")
    async with served_backend(local, watch=False) as served:
        assert served is local


def test_mcp_serve_file_with_servers_end_to_end(tmp_path: Path) -> None:
    """`mcp serve gw.yaml` as a client starts it: an upstream behind a prefix, a local tool."""
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + f"servers:\n  - {{name: up, command: {_fake()}}}\n"
                    "tools:\n  - {name: t, description: d, mock: {text: local}}\n")
    served = ["--", sys.executable, "-m", "mcpcli", "serve", "--quiet", str(path)]
    listed = mcp_in("tools", "list", "--json", *served, timeout=60)
    assert listed.code == 0, listed
    names = sorted(t["name"] for t in json.loads(listed.stdout)["tools"])
    assert "t" in names and "up_echo" in names and "echo" not in names
    called = mcp_in("tools", "call", "up_echo", "--arg", "message=hi", "--json", *served, timeout=60)
    assert called.code == 0, called
    assert "hi" in called.stdout


def test_serving_stops_at_an_unknown_target_before_starting(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + "servers:\n  - {name: gh, target: github}\n")
    result = mcp_in("serve", str(path), timeout=30)
    assert result.code == 2, result
    assert result.stdout == ""
    assert result.stderr.startswith(f"{path}:3:5: error: server 'gh': unknown server 'github' (")


def test_check_connect_warns_about_an_allow_glob_that_matches_nothing(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + f"servers:\n  - name: fake\n    command: {_fake()}\n"
                    "    tools: {allow: ['fake_*', 'ECH?']}\n")
    result = mcp_in("serve", "--check", "--connect", str(path))
    assert result.code == 0, result
    assert result.stderr.splitlines() == [
        f"mcp: {path}:3:5: server 'fake': reached (1 tool)",
        f"{path}:3:5: warning: server 'fake': tools.allow 'fake_*' matches none of its tools (globs match "
        "the upstream's own names, before the prefix)",
        f"mcp: {path}: valid (0 tools, 0 resources, 0 prompts, 1 server)",
    ]


def test_check_connect_reaches_a_configured_keepalive_server_without_the_daemon(
        tmp_path: Path, fake_home: Path) -> None:
    fake = json.loads(_fake())
    _config(fake_home, {"kept": {"command": fake[0], "args": fake[1:], "keepAlive": True}})
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + "servers:\n  - {name: kept, target: kept}\n")
    result = mcp_in("serve", "--check", "--connect", str(path))
    assert result.code == 0, result
    assert f"mcp: {path}:3:5: server 'kept': reached (2 tools)" in result.stderr.splitlines()
    # A daemon started for it would outlive the command: conftest's leftover-process check fails then.


def test_the_readme_example_is_valid_for_the_published_schema() -> None:
    from mcpcli.toolsfile.structure import schema_problems
    from mcpcli.toolsfile.yamlstrict import load as load_yaml

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Other MCP servers behind yours (`servers:`)", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    data, marks = load_yaml(HEAD + block, "README.md")
    assert [entry["name"] for entry in data["servers"]] == ["gh", "everything", "remote"]
    assert schema_problems(data, marks) == []
    # With its secret declared and its variable set, it loads.
    servers = load(block + "secrets:\n  EVERYTHING_KEY: {from_env: KEY}\n", environ={"KEY": "k", "TEAM": "t"})
    assert [(s.name, s.prefix) for s in servers] == [("gh", "gh_"), ("everything", ""), ("remote", "remote_")]


def test_a_file_with_servers_used_in_process_serves_its_upstreams_too(tmp_path: Path) -> None:
    """`mcp tools list gw.yaml` serves the file in-process as `mcp serve` would: with its upstreams."""
    path = tmp_path / "gw.yaml"
    path.write_text(HEAD + f"servers:\n  - {{name: a, command: {_fake()}}}\n"
                    "tools:\n  - {name: mine, description: d, mock: {text: hi}}\n")
    result = mcp_in("tools", "list", str(path), "--json")
    assert result.code == 0, result
    names = [t["name"] for t in result.json["tools"]]
    assert names[0] == "mine" and "a_echo" in names, names
    assert result.stderr == ""
    called = mcp_in("tools", "call", str(path), "a_echo", "--arg", "message=hi", "--json")
    assert called.code == 0, called
    assert "hi" in called.stdout


def test_an_upstream_repr_never_shows_env_or_header_values() -> None:
    (up,) = load("servers:\n  - {name: a, target: 'https://x.example/mcp', headers: {X-Key: '${KEY}'}}\n",
                 environ={"KEY": "very-secret-token"})
    assert up.headers == {"X-Key": "very-secret-token"}
    assert "very-secret-token" not in repr(up)
