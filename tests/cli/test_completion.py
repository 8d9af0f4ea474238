"""Shell completion: click's completion protocol through `run()` in process, and in real bash, zsh and fish."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import REPO, fake_server, mcp, mcp_in
from sessions.util import daemon_pid, stop

from cli.shells import SHELLS, complete_lines


def complete(*words: str, shell: str = "bash") -> list[str]:
    """What `mcp` offers for the last word (protocol level, as the shell scripts ask)."""
    env = {"COMP_WORDS": " ".join(words), "COMP_CWORD": str(len(words) - 1),
           "_MCP_COMPLETE": f"{shell}_complete"}
    r = mcp_in(env=env)
    assert r.code == 0, r
    return [line for line in r.stdout.splitlines() if line]


@pytest.fixture
def config(isolated_env: Path) -> Path:
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "mcpcli" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"mcpServers": {"alpha": {"command": "a"}, "beta": {"url": "https://b/mcp"},
                                               "gamma": {"command": "g"}}}))
    return path


def test_commands_and_subcommands() -> None:
    assert "plain,tools" in complete("mcp", "to")
    assert complete("mcp", "resources", "") == [
        "plain,list", "plain,read", "plain,subscribe", "plain,templates"]


def test_options() -> None:
    offered = complete("mcp", "tools", "call", "--ti")
    assert offered == ["plain,--timeout"]


def test_server_names_from_our_config(config: Path) -> None:
    offered = complete("mcp", "tools", "list", "")
    assert offered == ["file,", "plain,alpha", "plain,beta", "plain,gamma"]
    assert complete("mcp", "ping", "g") == ["file,g", "plain,gamma"]
    assert complete("mcp", "ping", "https://x") == []


def test_server_names_from_other_clients(config: Path, fake_home: Path) -> None:
    (fake_home / ".cursor").mkdir()
    (fake_home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"cursed": {"command": "c"}}}))
    assert "plain,cursed" in complete("mcp", "info", "c")


def test_servers_show_completes_names(config: Path) -> None:
    assert complete("mcp", "servers", "show", "a") == ["plain,alpha"]


@pytest.mark.peer
def test_tool_and_prompt_names_come_from_the_last_listing(isolated_env: Path, everything: list[str]) -> None:
    assert mcp("servers", "add", "ev", "--", *everything).code == 0
    assert complete("mcp", "tools", "call", "ev", "get-") == []  # nothing cached yet: never connects
    r = mcp("tools", "list", "ev", "-q")
    assert r.code == 0, r
    offered = complete("mcp", "tools", "call", "ev", "get-")
    assert "plain,get-sum" in offered and "plain,get-tiny-image" in offered
    assert all(item.startswith("plain,get-") for item in offered)
    assert complete("mcp", "prompts", "get", "ev", "") == []
    assert mcp("prompts", "list", "ev", "-q").code == 0
    assert complete("mcp", "prompts", "get", "ev", "")[:2] == ["plain,simple-prompt", "plain,args-prompt"]


def test_completion_command_prints_the_committed_scripts() -> None:
    for shell, name in (("bash", "mcp.bash"), ("zsh", "_mcp"), ("fish", "mcp.fish")):
        r = mcp_in("completion", shell)
        assert r.code == 0, r
        assert r.stdout == (REPO / "completions" / name).read_text(), f"{shell}: run scripts/gen-completions"


def test_completion_rejects_unknown_shells() -> None:
    r = mcp_in("completion", "tcsh")
    assert r.code == 2
    assert "'tcsh' is not one of" in r.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.slow
def test_in_real_bash(config: Path, tmp_path: Path) -> None:
    """Source the committed script and run its completion function as bash would on TAB."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    launcher = bindir / "mcp"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} -m mcpcli "$@"\n')
    launcher.chmod(0o755)
    script = f"""
        source {REPO / "completions" / "mcp.bash"}
        compopt() {{ :; }}   # only valid while bash itself is completing
        try() {{
            COMP_WORDS=("$@"); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); COMPREPLY=()
            _mcp_completion mcp
            echo "${{COMPREPLY[*]}}"
        }}
        try mcp pro
        try mcp prompts g
        try mcp tools list al
        try mcp servers remove ""
    """
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    r = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["prompts", "get", "alpha", "alpha beta gamma"]


def _cache_tools(target: str, tools: list[dict[str, object]]) -> None:
    """What `mcp tools list TARGET` leaves behind for completion."""
    from mcpcli import cache

    cache.remember(target, "tools/list", {"tools": tools})


WEATHER = {"name": "weather", "inputSchema": {"type": "object", "properties": {
    "city": {"type": "string"},
    "units": {"type": "string", "enum": ["metric", "imperial"]},
    "days": {"type": "integer"},
    "alerts": {"type": "boolean"},
    "mood": {"oneOf": [{"const": "calm", "title": "Calm"}, {"const": "chaos", "title": "Chaos"}]},
}}}


def test_arg_offers_parameter_names_then_values_from_the_cached_schema(config: Path) -> None:
    assert complete("mcp", "tools", "call", "alpha", "weather", "--arg", "") == []  # nothing cached: no connect
    _cache_tools("alpha", [WEATHER])
    assert complete("mcp", "tools", "call", "alpha", "weather", "--arg", "") == [
        "plain,city=", "plain,units=", "plain,days=", "plain,alerts=", "plain,mood="]
    assert complete("mcp", "tools", "call", "alpha", "weather", "-a", "u") == ["plain,units="]
    # names already given are not offered again
    assert complete("mcp", "tools", "call", "alpha", "weather", "--arg", "city=Oslo", "--arg", "") == [
        "plain,units=", "plain,days=", "plain,alerts=", "plain,mood="]
    assert complete("mcp", "tools", "call", "alpha", "weather", "--arg", "units=") == [
        "plain,units=metric", "plain,units=imperial"]
    assert complete("mcp", "tools", "call", "alpha", "weather", "--arg", "units=i") == ["plain,units=imperial"]
    assert complete("mcp", "tools", "call", "alpha", "weather", "--arg", "alerts=") == [
        "plain,alerts=true", "plain,alerts=false"]
    assert complete("mcp", "tools", "call", "alpha", "weather", "--arg", "mood=c") == [
        "plain,mood=calm", "plain,mood=chaos"]
    assert complete("mcp", "tools", "call", "alpha", "weather", "--arg", "city=") == []  # free text
    assert complete("mcp", "tools", "call", "alpha", "weather", "--arg", "units:=") == []
    assert complete("mcp", "tools", "call", "alpha", "nosuch", "--arg", "") == []
    assert complete("mcp", "tools", "call", "beta", "weather", "--arg", "") == []  # another server's cache


def test_tool_names_complete_for_a_session_or_url_whose_list_is_cached(config: Path) -> None:
    _cache_tools("@work", [WEATHER, {"name": "wipe"}])
    _cache_tools("https://b/mcp", [{"name": "whoami"}])
    assert complete("mcp", "tools", "call", "@work", "w") == ["plain,weather", "plain,wipe"]
    assert complete("mcp", "tools", "show", "https://b/mcp", "") == ["plain,whoami"]
    assert complete("mcp", "tools", "call", "@work", "weather", "--arg", "a") == ["plain,alerts="]


@pytest.mark.peer
def test_prompt_arg_values_come_from_an_open_session_only(
    isolated_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, everything: list[str]
) -> None:
    """`prompts get @S PROMPT --arg name=` asks the session's server (completion/complete);
    the same prompt named by a server that is not a session offers names only, and a
    closed session starts nothing."""
    monkeypatch.setenv("MCPCLI_RUNTIME_DIR", str(tmp_path / "run"))
    assert mcp_in("session", "open", "ev", "--", *everything).code == 0
    try:
        assert mcp_in("prompts", "list", "@ev", "-q").code == 0
        line = ("mcp", "prompts", "get", "@ev", "completable-prompt")
        assert complete(*line, "--arg", "") == ["plain,department=", "plain,name="]
        offered = complete(*line, "--arg", "department=")
        assert "plain,department=Engineering" in offered and "plain,department=Sales" in offered
        assert complete(*line, "--arg", "department=Sa") == ["plain,department=Sales"]
        # context: the chosen department narrows the names
        names = complete(*line, "--arg", "department=Engineering", "--arg", "name=")
        assert names and all(item.startswith("plain,name=") for item in names)
        assert complete(*line, "--arg", "department=Engineering", "--arg", "") == ["plain,name="]
    finally:
        assert mcp_in("session", "close", "ev").code == 0
    assert complete(*line, "--arg", "department=") == []  # closed: nothing asked, nothing started
    assert mcp_in("session", "list", "--json").json["sessions"] == []


def _bash_with_script(tmp_path: Path, body: str) -> list[str]:
    """Run `body` in a real bash with the committed script sourced and `mcp` on PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    launcher = bindir / "mcp"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} -m mcpcli "$@"\n')
    launcher.chmod(0o755)
    script = f"""
        source {REPO / "completions" / "mcp.bash"}
        compopt() {{ :; }}   # only valid while bash itself is completing
        {body}
    """
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    r = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
@pytest.mark.slow
def test_arg_values_complete_in_real_bash_across_its_word_breaks(config: Path, tmp_path: Path) -> None:
    """bash splits `--arg units=im` at `=` (COMP_WORDBREAKS): the words, line and cursor are
    set as bash sets them on TAB, and COMPREPLY holds only the text after the `=` (what bash
    replaces), for names, values, a URL target and a `--header Name:value` whose `:` and `=`
    bash splits too."""
    _cache_tools("alpha", [WEATHER])
    _cache_tools("http://127.0.0.1:9/mcp?x=1", [WEATHER])
    out = _bash_with_script(tmp_path, r"""
        try() {  # LINE, then COMP_WORDS as bash splits LINE (cursor at the end)
            COMP_LINE=$1; COMP_POINT=${#1}; shift
            COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()
            _mcp_completion mcp
            echo "${COMPREPLY[*]}"
        }
        try 'mcp tools call alpha weather --arg units=' mcp tools call alpha weather --arg units =
        try 'mcp tools call alpha weather --arg units=im' mcp tools call alpha weather --arg units = im
        try 'mcp tools call alpha weather -a alerts=' mcp tools call alpha weather -a alerts =
        try 'mcp tools call alpha weather --arg u' mcp tools call alpha weather --arg u
        try 'mcp tools call alpha weather --arg city=Oslo --arg ' \
            mcp tools call alpha weather --arg city = Oslo --arg ''
        try 'mcp tools call http://127.0.0.1:9/mcp?x=1 weather --arg mood=' \
            mcp tools call http : //127.0.0.1 : 9/mcp?x = 1 weather --arg mood =
        try 'mcp ping --header X-Key:abc=d al' mcp ping --header X-Key : abc = d al
        # the cursor mid-line: only the text before it counts
        COMP_LINE='mcp tools call alpha weather --arg units=m --timeout 5'; COMP_POINT=42
        COMP_WORDS=(mcp tools call alpha weather --arg units = m --timeout 5); COMP_CWORD=8; COMPREPLY=()
        _mcp_completion mcp
        echo "${COMPREPLY[*]}"
    """)
    assert out == ["metric imperial", "imperial", "true false", "units=", "units= days= alerts= mood=",
                   "calm chaos", "alpha", "metric"]


@pytest.fixture
def session_ev(config: Path, tmp_path: Path) -> Iterator[str]:
    """A session `ev` held by the real daemon (a fake stdio server), closed afterwards."""
    opened = mcp_in("session", "open", "ev", "--json", "--", *fake_server())
    assert opened.code == 0, opened
    try:
        yield "ev"
    finally:
        pid = daemon_pid(Path(os.environ["MCPCLI_RUNTIME_DIR"]) / "daemon.sock")
        mcp_in("session", "close", "--all")
        if pid is not None:
            stop(pid)


@pytest.mark.slow
@pytest.mark.parametrize("shell", SHELLS)
def test_tab_completes_in_the_real_shell(shell: str, session_ev: str, tmp_path: Path) -> None:
    """What each shell's line editor holds after TAB, on a terminal: a session keeps its `@`
    (bash breaks words at `@` and replaces from it), and `=`, `:` and URLs keep their text."""
    _cache_tools("alpha", [WEATHER])
    _cache_tools("http://127.0.0.1:9/mcp?x=1", [WEATHER])
    lines = complete_lines(shell, tmp_path / shell, [
        "mcp tools call @e",
        "mcp tools call alpha weather --arg units=im",
        "mcp tools call http://127.0.0.1:9/mcp?x=1 weather --arg mood=ca",
        "mcp tools list al",
    ])
    assert lines == [
        "mcp tools call @ev",
        "mcp tools call alpha weather --arg units=imperial",
        "mcp tools call http://127.0.0.1:9/mcp?x=1 weather --arg mood=calm",
        "mcp tools list alpha",
    ]
