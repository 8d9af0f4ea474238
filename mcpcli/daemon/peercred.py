"""Who is at the other end of a unix socket: the uid check the daemon makes on every
connection, per platform. Stdlib only.

* Linux: `SO_PEERCRED`, a `struct ucred` (pid, uid, gid).
* macOS: `getsockopt(SOL_LOCAL=0, LOCAL_PEERCRED=1)`, a `struct xucred` (u_int version,
  uid_t uid, short ngroups, gid_t groups[16]); version must be XUCRED_VERSION (0).
* FreeBSD: the same option and structure (what `getpeereid(3)` reads), with a trailing
  pid union, so the buffer asked for is larger and only its head is read.

Elsewhere there is no check we know to be right, and the daemon refuses to start rather
than serve connections it cannot check (`supported`). Only the Linux path runs on this
project's test machines; the others are decoded from their C headers and tested with
fake sockets (see the README's threat model).
"""

from __future__ import annotations

import socket
import struct
import sys
from typing import Protocol

__all__ = ["PeerCredError", "peer_uid", "supported"]

#: Linux: SOL_SOCKET / SO_PEERCRED (17), `struct ucred { pid_t; uid_t; gid_t; }`.
_LINUX_SO_PEERCRED = 17
_UCRED = struct.Struct("3i")
#: macOS and FreeBSD: SOL_LOCAL (0) / LOCAL_PEERCRED (1), `struct xucred`.
_SOL_LOCAL = 0
_LOCAL_PEERCRED = 1
_XUCRED_VERSION = 0
_XU_NGROUPS = 16
#: The head of `struct xucred`: cr_version, cr_uid, cr_ngroups.
_XUCRED_HEAD = struct.Struct("@IIh")
#: sizeof(struct xucred): macOS 4+4+2(+2)+16*4; FreeBSD adds a pointer-sized union.
_XUCRED_SIZE = {"darwin": struct.calcsize(f"@IIh{_XU_NGROUPS}I"),
                "freebsd": struct.calcsize(f"@IIh{_XU_NGROUPS}IP")}


class PeerCredError(OSError):
    """The peer's credentials cannot be read on this platform (or came back malformed)."""


class _Socket(Protocol):
    def getsockopt(self, level: int, option: int, buflen: int) -> bytes: ...


def _family(platform: str) -> str | None:
    if platform.startswith("linux"):
        return "linux"
    if platform == "darwin":
        return "darwin"
    if platform.startswith("freebsd"):
        return "freebsd"
    return None


def supported(platform: str = sys.platform) -> bool:
    """Whether the daemon can check a peer's uid on `platform`."""
    return _family(platform) is not None


def peer_uid(sock: socket.socket | _Socket, platform: str = sys.platform) -> int:
    """The uid of the process at the other end of the unix socket `sock`.

    Raises `PeerCredError` where the platform has no check we support, or the answer
    is not what the platform's header says it is (a connection is then refused)."""
    family = _family(platform)
    if family == "linux":
        level = getattr(socket, "SOL_SOCKET", 1)
        option = getattr(socket, "SO_PEERCRED", _LINUX_SO_PEERCRED)
        raw = sock.getsockopt(level, option, _UCRED.size)
        if len(raw) < _UCRED.size:
            raise PeerCredError(f"SO_PEERCRED returned {len(raw)} bytes")
        _pid, uid, _gid = _UCRED.unpack_from(raw)
        return int(uid)
    if family in ("darwin", "freebsd"):
        raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, _XUCRED_SIZE[family])
        if len(raw) < _XUCRED_HEAD.size:
            raise PeerCredError(f"LOCAL_PEERCRED returned {len(raw)} bytes")
        version, uid, _ngroups = _XUCRED_HEAD.unpack_from(raw)
        if version != _XUCRED_VERSION:
            raise PeerCredError(f"LOCAL_PEERCRED returned a struct xucred of version {version}")
        return int(uid)
    raise PeerCredError(f"checking a unix socket peer's uid is not supported on {platform}")
