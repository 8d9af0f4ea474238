"""`mcp tools grep PATTERN [SERVER...]`: tools found across servers, in parallel; a
failing server is named on stderr while the others answer; grep's exit codes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in

from mcpcli import render, toolgrep
from mcpcli.output import Output


def _config(tmp_path: Path, servers: dict[str, list[str]]) -> dict[str, str]:
    path = tmp_path / "mcp.json"
    doc = {"mcpServers": {name: {"command": argv[0], "args": argv[1:]} for name, argv in servers.items()}}
    path.write_text(json.dumps(doc))
    return {"MCP_CONFIG": str(path), "MCP_NO_DISCOVERY": "1"}


def _requests(record: Path, method: str) -> int:
    if not record.exists():
        return 0
    return sum(json.loads(line).get("method") == method for line in record.read_text().splitlines())


@pytest.mark.peer
def test_every_configured_server_is_searched_and_a_failure_is_one_line(
    tmp_path: Path, everything: list[str]
) -> None:
    env = _config(tmp_path, {"fake": fake_server(), "ev": everything, "dead": [str(tmp_path / "nope")]})
    r = mcp_in("tools", "grep", "ECHO|get-s.m", env=env)
    assert r.code == 0, r
    assert r.json == [
        {"server": "fake", "tool": "echo", "title": None, "description": "Echo the message back."},
        {"server": "ev", "tool": "echo", "title": "Echo Tool", "description": "Echoes back the input string"},
        {"server": "ev", "tool": "get-sum", "title": "Get Sum Tool", "description": "Returns the sum of two numbers"},
    ]
    (line,) = r.stderr.splitlines()
    assert line.startswith("mcp: warning: dead: cannot start server: ")


@pytest.mark.peer
def test_jsonl_gives_one_match_per_line_and_schema_matches_parameter_names(
    tmp_path: Path, everything: list[str]
) -> None:
    env = _config(tmp_path, {"ev": everything})
    r = mcp_in("tools", "grep", "^a$", "ev", "--jsonl", env=env)
    assert (r.code, r.stdout) == (1, ""), r  # no name, title or description is just "a"
    r = mcp_in("tools", "grep", "^a$", "ev", "--schema", "--jsonl", env=env)
    assert r.code == 0, r
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert {"server": "ev", "tool": "get-sum", "title": "Get Sum Tool",
            "description": "Returns the sum of two numbers"} in lines


def test_no_match_exits_1_and_every_server_failing_exits_4(tmp_path: Path) -> None:
    env = _config(tmp_path, {"fake": fake_server(), "dead": [str(tmp_path / "nope")],
                             "gone": [str(tmp_path / "gone")]})
    r = mcp_in("tools", "grep", "-F", "(", env=env)
    assert (r.code, r.json) == (1, []), r
    r = mcp_in("tools", "grep", "echo", "dead", "gone", env=env)
    assert r.code == 4, r
    assert r.stdout == ""
    assert r.stderr.splitlines()[-1] == "mcp: error: no server answered (2 tried)"
    # One server: its own error (and exit code), not a count.
    r = mcp_in("tools", "grep", "echo", "dead", env=env)
    assert r.code == 4 and r.stdout == "", r
    assert r.stderr.startswith(f"mcp: error: cannot start server: {tmp_path / 'nope'}: no such file"), r


@pytest.mark.slow
def test_a_slow_server_is_cut_off_by_timeout_and_the_rest_answer(tmp_path: Path) -> None:
    env = _config(tmp_path, {"deaf": fake_server("--deaf"), "fake": fake_server()})
    # 2 s: "fake" starts, shakes hands and lists within it on a busy machine too.
    r = mcp_in("tools", "grep", "echo", "--timeout", "2", env=env)
    assert r.code == 0, r
    assert [m["server"] for m in r.json] == ["fake"]
    assert "mcp: warning: deaf: no tool list within 2s (--timeout)" in r.stderr.splitlines()


def test_a_fresh_cached_list_is_used_instead_of_the_server(tmp_path: Path) -> None:
    record = tmp_path / "sent.jsonl"
    env = _config(tmp_path, {"m": fake_server("--modern", "--ttl", "600000", "--record", str(record))})
    assert mcp_in("tools", "grep", "echo", env=env).code == 0
    assert _requests(record, "tools/list") == 1
    r = mcp_in("tools", "grep", "slow", env=env)
    assert r.code == 0, r
    assert [m["tool"] for m in r.json] == ["slow"]
    assert _requests(record, "tools/list") == 1  # from the cache: the server was not started
    assert mcp_in("tools", "grep", "slow", "--no-cache", env=env).code == 0
    assert _requests(record, "tools/list") == 2


@pytest.mark.parametrize(("args", "message"), [
    (("(",), "mcp: error: invalid pattern '(': missing ), unterminated subpattern at position 0"),
    (("x", "nosuch"), "mcp: error: unknown server 'nosuch'"),
])
def test_usage_errors_exit_2(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    r = mcp_in("tools", "grep", *args, env=_config(tmp_path, {"fake": fake_server()}))
    assert r.code == 2, r
    assert r.stderr.splitlines()[0] == message


def test_no_servers_at_all_is_a_usage_error(tmp_path: Path) -> None:
    r = mcp_in("tools", "grep", "x", env=_config(tmp_path, {}))
    assert r.code == 2, r
    assert "no servers to search" in r.stderr


def test_targets_are_ours_then_discovered_then_sessions_once_each() -> None:
    assert toolgrep.all_targets(["a", "b"], ["b", "c"], ["a", "s"]) == ["a", "b", "c", "@a", "@s"]


def test_human_output_groups_matches_under_their_server() -> None:
    stdout = io.StringIO()
    Output(mode="human", stdout=stdout).emit([
        {"server": "one", "tool": "echo", "title": "Echo", "description": "Says it back.\nMore."},
        {"server": "one", "tool": "sum", "title": None, "description": None},
        {"server": "two", "tool": "x\x1b[31m", "title": None, "description": "d"},
    ], human=render.grep_matches)
    assert stdout.getvalue().splitlines() == [
        "one", "  echo  (Echo)  Says it back. …", "  sum", "two", "  x\\x1b[31m  d"]


#: A description a terminal would obey: a bidi override and isolate, a screen clear, NEL.
EVIL = "Echo.\u202eevil\u2066\x1b[2J\x85"


def test_json_on_a_terminal_escapes_what_the_terminal_would_obey(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Human output escapes a description's format characters; so does JSON shown on a
    terminal (`\\u` escapes: the same JSON value). Piped, it is the server's, exactly."""
    from mcpcli.cli._app import App

    env = _config(tmp_path, {"fake": fake_server("--evil", EVIL)})
    piped = mcp_in("tools", "grep", "evil", "--json", env=env)
    assert piped.code == 0, piped
    assert json.dumps(EVIL, ensure_ascii=False) in piped.stdout and "\u202e" in piped.stdout
    monkeypatch.setattr(App, "stdout_tty", property(lambda self: True))
    for flag in ("--json", "--jsonl"):
        r = mcp_in("tools", "grep", "evil", flag, env=env)
        assert r.code == 0, r
        assert not any(c in r.stdout for c in "\u202e\u2066\x1b\x85"), r.stdout
        assert "\\u202eevil\\u2066\\u001b[2J\\u0085" in r.stdout
        found = json.loads(r.stdout) if flag == "--json" else [json.loads(line) for line in r.stdout.splitlines()]
        assert [m["description"] for m in found] == [EVIL, EVIL]  # echo and fail: the same value
    r = mcp_in("tools", "list", "--jsonl", "--", *fake_server("--evil", EVIL))  # every command's JSON
    assert r.code == 0 and "\u202e" not in r.stdout and "\\u202e" in r.stdout, r


@pytest.mark.slow  # a real terminal
def test_json_on_a_real_terminal_is_escaped(tmp_path: Path) -> None:
    import sys

    from terminal import Terminal

    env = _config(tmp_path, {"fake": fake_server("--evil", EVIL)})
    term = Terminal([sys.executable, "-m", "mcpcli", "tools", "grep", "evil", "--json"], env=env)
    term.expect(r'"tool": "echo"')
    assert term.wait() == 0
    assert not any(c in term.output for c in ("\u202e", "\u2066", "\x1b[2J", "\x85")), term.output
    assert "\\u202eevil\\u2066\\u001b[2J\\u0085" in term.output


def test_max_age_reuses_a_recent_list_of_a_server_without_ttl(tmp_path: Path) -> None:
    record = tmp_path / "sent.jsonl"
    env = _config(tmp_path, {"old": fake_server("--record", str(record))})  # a legacy list: no ttlMs
    assert mcp_in("tools", "grep", "echo", env=env).code == 0
    assert mcp_in("tools", "grep", "echo", env=env).code == 0
    assert _requests(record, "tools/list") == 2  # never fresh by itself
    r = mcp_in("tools", "grep", "slow", "--max-age", "600", env=env)
    assert r.code == 0, r
    assert [m["tool"] for m in r.json] == ["slow"]
    assert _requests(record, "tools/list") == 2  # the cached list, stored a moment ago


@pytest.mark.peer
def test_the_official_sdk_server_is_searched_too(tmp_path: Path, sdk_server: list[str]) -> None:
    env = _config(tmp_path, {"sdk": sdk_server})
    r = mcp_in("tools", "grep", "llm|^steps$", "--schema", env=env)
    assert r.code == 0, r
    assert sorted(m["tool"] for m in r.json) == ["haiku", "slow"]  # in the server's order


def test_server_arguments_complete_server_names(tmp_path: Path) -> None:
    env = {**_config(tmp_path, {"alpha": ["a"], "beta": ["b"]}), "COMP_WORDS": "mcp tools grep x al",
           "COMP_CWORD": "4", "_MCP_COMPLETE": "bash_complete"}
    r = mcp_in(env=env)
    assert r.code == 0, r
    assert r.stdout.splitlines() == ["file,al", "plain,alpha"]


def test_a_server_that_exits_is_named_and_the_others_still_answer(tmp_path: Path) -> None:
    env = _config(tmp_path, {"bad": ["false"], "fake": fake_server()})
    r = mcp_in("tools", "grep", "echo", "--no-cache", env=env)
    assert r.code == 0, r
    assert [m["server"] for m in r.json] == ["fake"]
    (line,) = r.stderr.splitlines()
    assert line.startswith("mcp: warning: bad: "), line


def _project_server(tmp_path: Path) -> tuple[Path, Path]:
    """A cloned repository whose .mcp.json runs a command that leaves a marker."""
    repo, marker = tmp_path / "repo", tmp_path / "pwned.txt"
    repo.mkdir()
    doc = {"mcpServers": {"helper": {"command": "sh", "args": ["-c", f"echo PWNED > {marker}"]}}}
    (repo / ".mcp.json").write_text(json.dumps(doc))
    return repo, marker


def test_project_files_are_not_run_by_a_grep_of_every_server(tmp_path: Path) -> None:
    repo, marker = _project_server(tmp_path)
    env = {**_config(tmp_path, {"fake": fake_server()}), "MCP_NO_DISCOVERY": "0"}
    r = mcp_in("tools", "grep", "echo", "--no-cache", env=env, cwd=repo)
    assert r.code == 0, r
    assert [m["server"] for m in r.json] == ["fake"]
    assert r.stderr == (f"mcp: not searched: helper (in project files you have not trusted: {repo / '.mcp.json'}); "
                        "review them, then `mcp servers trust`, or pass --project\n")
    assert not marker.exists()


def test_project_servers_run_only_with_project_even_when_named(tmp_path: Path) -> None:
    repo, marker = _project_server(tmp_path)
    env = {**_config(tmp_path, {"fake": fake_server()}), "MCP_NO_DISCOVERY": "0"}
    r = mcp_in("tools", "grep", "echo", "helper", env=env, cwd=repo)
    assert r.code == 2, r
    assert "mcp: error: server 'helper' is defined only in" in r.stderr
    assert not marker.exists()
    r = mcp_in("tools", "grep", "echo", "--no-cache", "--project", env=env, cwd=repo)
    assert r.code == 0, r
    assert "mcp: warning: helper: " in r.stderr  # it ran, and is no MCP server
    assert marker.exists()
    marker.unlink()
    r = mcp_in("tools", "grep", "echo", "helper", "--project", env=env, cwd=repo)
    assert r.code == 4, r
    assert marker.exists()


def test_with_only_untrusted_project_servers_the_hint_says_how_to_consent(tmp_path: Path) -> None:
    repo, marker = _project_server(tmp_path)
    r = mcp_in("tools", "grep", "echo", env={**_config(tmp_path, {}), "MCP_NO_DISCOVERY": "0"}, cwd=repo)
    assert r.code == 2, r
    assert r.stderr.splitlines()[1:] == [
        "mcp: error: no servers to search",
        "mcp: hint: trust this directory's project files (`mcp servers trust`) or pass --project"]
    assert not marker.exists()
