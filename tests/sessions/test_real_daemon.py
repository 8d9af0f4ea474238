"""The command side against the real daemon (`python -m mcpcli.daemon`, built on the other
half's branch): skipped until both halves are merged, then run as they are.

What the fake daemon's tests check about the command side holds here end to end: `session
open` returns a ready session, `@NAME` commands share its server, a keepAlive server opens
its session on first use and joins it after, errors keep their exit codes, and closing the
last session ends the daemon and every server.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import fake_server, mcp_in, wait_until

from sessions.util import stop

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mcpcli.daemon.server") is None,
    reason="the daemon (mcpcli.daemon.server) is built on the other half's branch",
)


def _daemon_pid(path: Path) -> int | None:
    """The pid of the process listening on the socket (SO_PEERCRED), if one is."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with sock:
        try:
            sock.connect(str(path))
        except OSError:
            return None
        pid, _uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        return int(pid)


@pytest.fixture
def real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private run directory and the real daemon, stopped (and reaped) afterwards."""
    directory = tmp_path / "run"
    monkeypatch.setenv("MCPCLI_RUNTIME_DIR", str(directory))
    monkeypatch.delenv("MCPCLI_DAEMON_ARGV", raising=False)
    yield directory
    pid = _daemon_pid(directory / "daemon.sock")
    if pid is not None:
        mcp_in("session", "close", "--all")
        stop(pid)


@pytest.mark.peer
def test_a_session_is_shared_by_at_name_commands(real: Path, everything: list[str]) -> None:
    opened = mcp_in("session", "open", "ev", "--json", "--", *everything)
    assert opened.code == 0, opened
    assert opened.json["state"] == "ready" and opened.json["server"]["name"] == "mcp-servers/everything"
    called = mcp_in("tools", "call", "@ev", "echo", "--arg", "message=hi", "--json")
    assert called.code == 0 and "Echo: hi" in json.dumps(called.json), called
    bad = mcp_in("tools", "call", "@ev", "echo", "--arg", "nope=1")
    assert bad.code == 2, bad
    [listed] = mcp_in("session", "list", "--json").json["sessions"]
    assert listed["pid"] == opened.json["pid"] and listed["calls"] >= 1
    closed = mcp_in("session", "close", "--all", "--json")
    assert closed.json == {"closed": ["ev"]}, closed
    wait_until(lambda: _daemon_pid(real / "daemon.sock") is None, what="the daemon to exit")


def test_a_keep_alive_server_is_opened_then_joined(real: Path, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    argv = fake_server("--typed-tools")
    config.write_text(json.dumps({"mcpServers": {"fk": {"command": argv[0], "args": argv[1:], "keepAlive": True}}}))
    for _ in range(2):
        result = mcp_in("--config", str(config), "tools", "call", "fk", "get-sum", "--arg", "a=1", "--arg", "b=2")
        assert result.code == 0, result
    [listed] = mcp_in("session", "list", "--json").json["sessions"]
    assert listed["name"] == "fk" and listed["calls"] >= 2


def test_errors_keep_their_exit_codes(real: Path) -> None:
    assert mcp_in("tools", "list", "@none").code == 4
    assert mcp_in("session", "open", "fk", "--json", "--", *fake_server()).code == 0
    other = mcp_in("session", "open", "fk", "--", *fake_server("--typed-tools"))
    assert other.code == 2 and "mcp session close fk" in other.stderr, other
    missing = mcp_in("ping", "@other")
    assert missing.code == 4 and "mcp session open other" in missing.stderr, missing
    assert mcp_in("session", "close", "other").code == 4
    assert os.path.exists(real / "daemon.sock")


def _complete(*words: str) -> list[str]:
    env = {"COMP_WORDS": " ".join(words), "COMP_CWORD": str(len(words) - 1), "_MCP_COMPLETE": "bash_complete"}
    r = mcp_in(env=env)
    assert r.code == 0, r
    return [line.split(",", 1)[1] for line in r.stdout.splitlines() if line.startswith("plain,")]


def test_session_names_complete_and_completion_never_starts_the_daemon(real: Path) -> None:
    assert "@fk" not in _complete("mcp", "tools", "list", "@")
    assert not (real / "daemon.sock").exists()  # asking for names did not start one
    assert mcp_in("session", "open", "fk", "--json", "--", *fake_server()).code == 0
    assert _complete("mcp", "tools", "list", "@") == ["@fk"]
    assert "@fk" in _complete("mcp", "ping", "")
    assert _complete("mcp", "session", "logs", "f") == ["fk"]
    assert _complete("mcp", "session", "close", "") == ["fk"]


def test_connection_options_an_at_name_target_cannot_use_are_named(real: Path) -> None:
    assert mcp_in("session", "open", "fk", "--json", "--", *fake_server()).code == 0
    r = mcp_in("ping", "@fk", "--env", "X=1", "--cwd", "/")
    assert r.code == 0, r
    assert "warning: --env, --cwd ignored: session 'fk' keeps what it was opened with" in r.stderr
    assert "ignored" not in mcp_in("ping", "@fk").stderr
