"""The command side of sessions against the fake daemon (tests/sessions/fake_daemon.py):
`mcp session ...`, `@NAME` targets, keepAlive servers, starting the daemon, stale sockets.

The real daemon is built on another branch; these tests run against it once merged
(the fake speaks the same control protocol).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in, wait_until

from mcpcli import sessions
from mcpcli.client import Client
from mcpcli.config import Config
from mcpcli.errors import UsageError
from mcpcli.targets import resolve_target
from mcpcli.transports.daemon import DaemonTransport
from sessions.util import FAKE_DAEMON, Run, stop


def open_fake(name: str = "fk", *flags: str) -> dict[str, object]:
    """`mcp session open NAME -- fake_stdio_server FLAGS` in process; its INFO."""
    result = mcp_in("session", "open", name, "--json", "--", *fake_server(*flags))
    assert result.code == 0, result
    info: dict[str, object] = result.json
    return info


# -- @NAME ---------------------------------------------------------------------------


def test_at_name_is_a_session_entry(tmp_path: Path) -> None:
    entry = resolve_target("@ev", [], Config(tmp_path / "none.json"))
    assert (entry.name, entry.transport) == ("ev", "session")
    with pytest.raises(UsageError, match="@ needs a session name"):
        resolve_target("@", [], Config(tmp_path / "none.json"))


def test_at_name_without_a_daemon_is_exit_4_with_the_open_hint(run: Run) -> None:
    result = mcp_in("tools", "list", "@ev")
    assert result.code == 4, result
    assert "no session 'ev' (no session daemon is running)" in result.stderr
    assert "hint: mcp session open ev" in result.stderr
    assert run.starts() == []  # @NAME never starts a daemon


def test_at_name_of_a_session_the_daemon_does_not_hold_is_its_error(run: Run) -> None:
    open_fake("fk")
    result = mcp_in("ping", "@other")
    assert result.code == 4, result
    assert "no session 'other'" in result.stderr and "mcp session open other" in result.stderr


@pytest.mark.peer
def test_a_session_through_the_cli_lists_and_calls_tools_then_closes(run: Run, everything: list[str]) -> None:
    """server-everything over stdio, held by the daemon: commands attach as @ev."""
    opened = mcp_in("session", "open", "ev", "--json", "--", *everything)
    assert opened.code == 0, opened
    assert opened.json["name"] == "ev" and opened.json["state"] == "ready"
    assert opened.json["server"]["name"] == "mcp-servers/everything"
    server_pid = opened.json["pid"]

    listed = mcp_in("tools", "list", "@ev", "--jq", "[.tools[].name]")
    assert listed.code == 0, listed
    assert "echo" in listed.json

    called = mcp_in("tools", "call", "@ev", "echo", "--arg", "message=hi", "--json")
    assert called.code == 0, called
    assert "hi" in json.dumps(called.json["content"])

    sessions_now = mcp_in("session", "list", "--json").json["sessions"]
    assert [(s["name"], s["pid"]) for s in sessions_now] == [("ev", server_pid)]
    assert sessions_now[0]["calls"] >= 2  # both commands' requests went to the one server

    closed = mcp_in("session", "close", "ev", "--json")
    assert (closed.code, closed.json) == (0, {"closed": ["ev"]}), closed
    assert len(run.starts()) == 1
    wait_until(lambda: not run.socket.exists(), what="the daemon to exit after its last session")


# -- the transport ---------------------------------------------------------------------


async def _tools_through_attach(name: str) -> tuple[list[str], str]:
    transport = DaemonTransport(name, sessions.socket_file())
    async with Client(transport) as client:
        listing = await client.list_tools()
        return [t["name"] for t in listing["tools"]], client.era


@pytest.mark.anyio
async def test_daemon_transport_lists_tools_through_attach(run: Run) -> None:
    request = sessions.open_request("fk", resolve_target(None, fake_server("--typed-tools"), Config()))
    info = sessions.open_session(request)
    assert (info.name, info.era, info.state) == ("fk", "legacy", "ready")
    names, era = await _tools_through_attach("fk")
    assert "get-sum" in names and era == "legacy"
    # The command's handshake was answered by the daemon: the server saw one initialize.
    ops = [r["op"] for r in run.requests()]
    assert ops == ["open", "attach"]


def test_a_crashed_session_is_exit_4_with_the_restart_hint(run: Run) -> None:
    open_fake("fk", "--crash-on-call", "3")
    crashed = mcp_in("tools", "call", "@fk", "echo", "--arg", "message=x")
    assert crashed.code == 4, crashed
    assert "session 'fk' closed the connection" in crashed.stderr
    wait_until(lambda: mcp_in("session", "list", "--json").json["sessions"][0]["state"] == "exited",
               what="the session to show the crash")
    again = mcp_in("tools", "list", "@fk")
    assert again.code == 4 and "mcp session restart fk" in again.stderr, again
    restarted = mcp_in("session", "restart", "fk", "--json")
    assert restarted.code == 0 and restarted.json["state"] == "ready", restarted
    assert mcp_in("tools", "list", "@fk").code == 0


# -- keepAlive -------------------------------------------------------------------------


def test_a_keep_alive_server_opens_its_session_on_first_use_and_joins_it_after(
    run: Run, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    argv = fake_server("--typed-tools")
    config.write_text(json.dumps({"mcpServers": {"fk": {
        "command": argv[0], "args": argv[1:], "keepAlive": True, "idleTimeout": "5m"}}}))
    first = mcp_in("--config", str(config), "tools", "call", "fk", "get-sum", "--arg", "a=1", "--arg", "b=2")
    assert first.code == 0, first
    second = mcp_in("--config", str(config), "tools", "list", "fk", "--jq", "[.tools[].name]")
    assert second.code == 0 and "get-sum" in second.json, second
    opens = [r for r in run.requests() if r["op"] == "open"]
    assert len(opens) == 2 and all(o["join"] is True for o in opens)
    assert opens[0]["idle_timeout"] == 300.0 and opens[0]["restart"] == "no"
    assert opens[0]["entry"]["command"] == argv[0]
    assert len(run.starts()) == 1
    [listed] = mcp_in("session", "list", "--json").json["sessions"]
    assert listed["name"] == "fk" and listed["calls"] >= 2


# -- starting the daemon -------------------------------------------------------------


def test_a_stale_socket_is_replaced_by_a_new_daemon(run: Run) -> None:
    run.dir.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(run.socket))  # bound, never listening: what a killed daemon leaves
    dead.close()
    assert run.socket.exists()
    open_fake("fk")
    assert len(run.starts()) == 1
    assert mcp_in("tools", "list", "@fk").code == 0


def _answers(path: Path) -> bool:
    sock = sessions.connect_daemon(path)
    if sock is None:
        return False
    sock.close()
    return True


def test_a_killed_daemon_is_replaced_on_the_next_open(run: Run) -> None:
    server = open_fake("fk")["pid"]
    [first] = run.starts()
    os.kill(first, signal.SIGKILL)
    stop(first)  # reaped
    assert isinstance(server, int)
    stop(server)  # the fake daemon leaves its server behind when killed; the test does not
    assert run.socket.exists() and not _answers(run.socket)
    assert open_fake("fk")["state"] == "ready"
    assert len(run.starts()) == 2


def test_two_commands_starting_the_daemon_at_once_make_one(run: Run) -> None:
    errors: list[BaseException] = []

    def connect() -> None:
        try:
            sessions.ensure_daemon().close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=connect) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors
    assert len(run.starts()) == 1


def test_a_daemon_that_fails_to_start_is_exit_4_with_its_last_line(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPCLI_DAEMON_ARGV", json.dumps([sys.executable, str(FAKE_DAEMON), "--exit-at-once", "3"]))
    result = mcp_in("session", "open", "fk", "--", *fake_server())
    assert result.code == 4, result
    assert "the session daemon exited with code 3; its last line: fake daemon: told to fail" in result.stderr
    assert f"its log is {run.dir / 'daemon.log'}" in result.stderr


def test_the_daemon_is_started_detached_in_its_own_session(run: Run) -> None:
    open_fake("fk")
    [pid] = run.starts()
    assert os.getsid(pid) == pid  # start_new_session: a terminal's Ctrl-C never reaches it
    assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
    assert os.readlink(f"/proc/{pid}/fd/2") == str(run.dir / "daemon.log")
    # It holds neither the start lock (the next start would wait for it forever) nor our files.
    held = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    assert str(run.dir / "daemon.lock") not in held


# -- the run directory (its rules: tests/rundir/test_rundir.py) ------------------------------


@pytest.mark.parametrize("mode", [0o755, 0o770, 0o701])
def test_a_run_directory_others_can_enter_is_exit_4(run: Run, mode: int) -> None:
    run.dir.mkdir()
    run.dir.chmod(mode)
    result = mcp_in("session", "open", "fk", "--", *fake_server())
    assert result.code == 4, result
    assert f"refusing the run directory {run.dir}: mode {mode:o} lets others in" in result.stderr
    assert "hint: remove it (or make it yours: chmod 700)" in result.stderr
    assert run.starts() == []


def test_a_symlinked_run_directory_is_exit_4_for_at_name_too(run: Run, tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    run.dir.symlink_to(real)
    result = mcp_in("tools", "list", "@fk")
    assert result.code == 4, result
    assert "it is a symlink" in result.stderr


def test_a_socket_path_too_long_for_unix_sockets_is_exit_4(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / ("d" * 100)
    monkeypatch.setenv("MCPCLI_RUNTIME_DIR", str(deep))
    result = mcp_in("session", "list")
    assert result.code == 4, result
    assert "too long for a unix socket" in result.stderr and "MCPCLI_RUNTIME_DIR" in result.stderr


# -- the session commands ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["session", "close"], "give a session NAME or --all"),
        (["session", "close", "ev", "--all"], "give a session NAME or --all"),
        (["session", "open", "a/b", "--", "x"], "invalid session name 'a/b'"),
        (["session", "open", "ev", "@other"], "a session's server cannot be another session"),
        (["session", "open", "ev", "--idle-timeout", "soon", "--", "x"], "--idle-timeout must be a duration"),
        (["session", "open", "ev", "srv", "--", "x"], "give either a TARGET or a server command after --"),
        (["session", "open", "nothere"], "unknown server 'nothere'"),
        (["session", "open"], "Missing argument 'NAME'"),
        (["session", "restart", "../x"], "invalid session name '../x'"),
        (["session", "open", "ev", "--root", "/nonexistent/dir", "--", "x"], "--root /nonexistent/dir: not a directory"),
    ],
)
def test_session_usage_errors_are_exit_2(run: Run, args: list[str], message: str) -> None:
    result = mcp_in(*args)
    assert result.code == 2, result
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert run.starts() == []


def test_without_a_daemon_list_is_empty_and_the_rest_say_no_session(run: Run) -> None:
    assert mcp_in("session", "list", "--json").json == {"sessions": []}
    assert mcp_in("session", "close", "--all", "--json").json == {"closed": []}
    for args in (["close", "ev"], ["restart", "ev"], ["logs", "ev"], ["close", "@ev"], ["logs", "@ev"]):
        result = mcp_in("session", *args)
        assert result.code == 4, result
        assert "no session 'ev'" in result.stderr and "hint: mcp session open ev" in result.stderr
    assert run.starts() == []


def test_a_session_is_named_as_commands_target_it_too(run: Run) -> None:
    """`mcp session open @fk` and `mcp session close @fk`: the `@` of `@NAME` is not part of it."""
    opened = open_fake("@fk")
    assert opened["name"] == "fk"
    assert [s["name"] for s in mcp_in("session", "list", "--json").json["sessions"]] == ["fk"]
    closed = mcp_in("session", "close", "@fk", "--json")
    assert closed.code == 0, closed
    assert mcp_in("session", "list", "--json").json == {"sessions": []}


def test_opening_a_name_again_joins_it_and_another_target_is_refused(run: Run) -> None:
    first = open_fake("fk")
    again = open_fake("fk")
    assert again["pid"] == first["pid"]
    other = mcp_in("session", "open", "fk", "--", sys.executable, "-c", "pass")
    assert other.code == 2, other
    assert "session 'fk' runs another server" in other.stderr and "mcp session close fk" in other.stderr


def test_open_sends_the_resolved_entry_and_the_command_s_cwd_and_env(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("S2_PASSED", "from-the-shell")
    result = mcp_in("session", "open", "fk", "-e", "S2_PASSED", "-e", "S2_SET=1", "--idle-timeout", "90s",
                    "--restart", "on-failure", "--root", ".", "--protocol", "2025-06-18",
                    "--log-level", "info", "--timeout", "30", "--", *fake_server(), cwd=tmp_path)
    assert result.code == 0, result
    [request] = run.requests()
    assert request["mcpcli"] == 1 and request["op"] == "open" and request["join"] is True
    assert request["connect"]["env"] == {"S2_PASSED": "from-the-shell", "S2_SET": "1"}
    assert request["connect"]["cwd"] == str(tmp_path)
    assert (request["idle_timeout"], request["restart"]) == (90.0, "on-failure")
    assert request["entry"]["command"] == sys.executable
    assert request["client"] == {
        "timeout": 30.0, "protocol": "2025-06-18", "log_level": "info",
        "roots": [{"uri": tmp_path.resolve().as_uri(), "name": tmp_path.name}],
    }


def test_logs_prints_the_server_stderr(run: Run) -> None:
    open_fake("fk", "--log-stderr")
    assert mcp_in("tools", "list", "@fk").code == 0
    wait_until(lambda: "tools/list" in mcp_in("session", "logs", "fk").stdout, what="the stderr line")


def test_close_all_ends_every_server_and_the_daemon(run: Run) -> None:
    pids = [open_fake("a")["pid"], open_fake("b")["pid"]]
    closed = mcp_in("session", "close", "--all", "--json")
    assert closed.code == 0 and sorted(closed.json["closed"]) == ["a", "b"], closed
    for pid in pids:
        assert isinstance(pid, int)
        wait_until(lambda pid=pid: not Path(f"/proc/{pid}").exists() or
                   Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z",
                   what=f"server {pid} to end")
    wait_until(lambda: not run.socket.exists(), what="the daemon to exit")


def test_the_command_side_library_imports_nothing_heavy() -> None:
    code = ("import sys, mcpcli.sessions, mcpcli.rundir, mcpcli.core.localrpc;"
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'anyio', 'click', 'httpx', 'rich', 'jsonschema', 'keyring', 'yaml', 'asyncio'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_daemon_that_never_answers_is_a_timeout_not_a_hang(run: Run) -> None:
    from mcpcli.errors import RequestTimeout

    run.dir.mkdir(mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as mute:
        mute.bind(str(run.socket))
        mute.listen(4)  # connections queue up; nothing ever reads or answers them
        with pytest.raises(RequestTimeout, match=r"did not answer within 0\.2s"):
            sessions.list_sessions(timeout=0.2)


def test_env_passed_through_but_unset_is_exit_2(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("S2_NOT_SET", raising=False)
    result = mcp_in("session", "open", "fk", "-e", "S2_NOT_SET", "--", *fake_server())
    assert result.code == 2, result
    assert "--env S2_NOT_SET: S2_NOT_SET is not set in this environment" in result.stderr
    assert run.starts() == []
