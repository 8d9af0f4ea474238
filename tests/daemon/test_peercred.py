"""The peer uid check per platform (`mcpcli.daemon.peercred`): Linux on a real socket; macOS
and FreeBSD decoded from fake sockets answering as their headers say (this machine is
Linux: those paths are not run against a real kernel); elsewhere the daemon refuses to
start rather than serve unchecked connections."""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
from pathlib import Path

import anyio
import pytest

from mcpcli.daemon import peercred
from mcpcli.daemon.server import Daemon
from mcpcli.errors import TransportError

from .conftest import control, in_process


class FakeSocket:
    """Answers one getsockopt with `answer`, remembering what was asked."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.asked: list[tuple[int, int, int]] = []

    def getsockopt(self, level: int, option: int, buflen: int) -> bytes:
        self.asked.append((level, option, buflen))
        return self.answer[:buflen]


def xucred(uid: int, version: int = 0, *, pid_union: bool = False) -> bytes:
    """A `struct xucred` as the kernel fills it (native layout)."""
    groups = [20, 12] + [0] * 14
    layout = "@IIh16IP" if pid_union else "@IIh16I"
    return struct.pack(layout, version, uid, 2, *groups, *([4242] if pid_union else []))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SO_PEERCRED is Linux's")
def test_linux_reads_the_real_peers_uid() -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        assert peercred.peer_uid(left) == os.getuid()
        assert peercred.peer_uid(left, "linux") == os.getuid()


def test_macos_reads_struct_xucred_from_local_peercred() -> None:
    sock = FakeSocket(xucred(501))
    assert peercred.peer_uid(sock, "darwin") == 501
    # SOL_LOCAL, LOCAL_PEERCRED, sizeof(struct xucred) = 4 + 4 + 2 (+2) + 16 * 4.
    assert sock.asked == [(0, 1, 76)]


def test_freebsd_asks_for_its_larger_xucred_and_reads_the_head() -> None:
    sock = FakeSocket(xucred(1001, pid_union=True))
    assert peercred.peer_uid(sock, "freebsd14") == 1001
    assert sock.asked == [(0, 1, struct.calcsize("@IIh16IP"))]


@pytest.mark.parametrize(
    ("answer", "problem"),
    [(xucred(501, version=7), "version 7"), (b"\x00\x00", "returned 2 bytes")],
)
def test_a_malformed_xucred_is_an_error_not_a_uid(answer: bytes, problem: str) -> None:
    with pytest.raises(peercred.PeerCredError, match=problem):
        peercred.peer_uid(FakeSocket(answer), "darwin")


@pytest.mark.parametrize("platform", ["sunos5", "openbsd7", "netbsd10", "win32", "cygwin"])
def test_other_platforms_have_no_check(platform: str) -> None:
    assert not peercred.supported(platform)
    with pytest.raises(peercred.PeerCredError, match=f"not supported on {platform}"):
        peercred.peer_uid(FakeSocket(xucred(0)), platform)


@pytest.mark.parametrize("platform", ["linux", "darwin", "freebsd13"])
def test_supported_platforms(platform: str) -> None:
    assert peercred.supported(platform)


def test_the_daemon_refuses_to_start_where_it_cannot_check_peers(run_dir: Path) -> None:
    daemon = Daemon(run_dir, platform="sunos5")
    with pytest.raises(TransportError, match="cannot check who connects to its socket on sunos5"):
        anyio.run(daemon.serve, False)
    assert not (run_dir / "daemon.sock").exists()  # it never listened


def test_a_connection_whose_uid_cannot_be_read_is_refused(run_dir: Path) -> None:
    # On Linux, the macOS option (level 0, option 1) is not a unix socket's: the read
    # fails, and the connection is closed unread rather than trusted.
    # Closed unread: our line meets a reset or a broken pipe, or the answer is end-of-file.
    with in_process(run_dir, platform="darwin"):
        with pytest.raises((AssertionError, ConnectionResetError, BrokenPipeError)):
            control(run_dir, "list")


def test_a_command_says_why_sessions_are_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    from helpers import mcp_in

    # The real daemon, on a platform it has no peer check for.
    code = "import sys; sys.platform = 'sunos5'; from mcpcli.daemon.server import main; sys.exit(main())"
    monkeypatch.setenv("MCPCLI_DAEMON_ARGV", json.dumps([sys.executable, "-c", code]))
    result = mcp_in("session", "open", "x", "--", sys.executable, "-c", "pass")
    assert result.code == 4, result
    assert "cannot check who connects to its socket on sunos5" in result.stderr
