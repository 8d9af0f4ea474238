"""Where the daemon lives: its private run directory, socket, start lock and logs.

`$MCPCLI_RUNTIME_DIR` if set (tests give each daemon its own), else
`$XDG_RUNTIME_DIR/mcpcli` when XDG_RUNTIME_DIR is a directory we own, else
`/tmp/mcpcli-<uid>`. The directory is created 0700 and refused (exit 4) when it
is a symlink, not a directory, not ours, or open to group or others: the socket
inside it is the only gate to every session's server, so the directory must be
private before anything in it is trusted. Standard library (and `mcpcli.errors`) only.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from mcpcli.errors import TransportError

__all__ = [
    "RUNTIME_DIR_ENV",
    "daemon_log_path",
    "lock_path",
    "run_dir",
    "session_log_path",
    "socket_path",
]

#: Overrides the run directory (tests; users with an unusual layout).
RUNTIME_DIR_ENV = "MCPCLI_RUNTIME_DIR"
#: The longest path a unix socket may have (sun_path is 108 bytes on Linux, 104 on macOS).
MAX_SOCKET_PATH = 103


def _default_dir() -> Path:
    override = os.environ.get(RUNTIME_DIR_ENV)
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        try:
            info = os.stat(xdg)
        except OSError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            return Path(xdg) / "mcpcli"
    return Path(tempfile.gettempdir()) / f"mcpcli-{os.getuid()}"


def _check(path: Path) -> None:
    """Refuse a run directory anyone but us could have planted or can enter."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise TransportError(f"cannot use the session directory {path}: {exc.strerror}") from None
    problem = None
    if stat.S_ISLNK(info.st_mode):
        problem = "is a symlink"
    elif not stat.S_ISDIR(info.st_mode):
        problem = "is not a directory"
    elif info.st_uid != os.getuid():
        problem = f"belongs to uid {info.st_uid}, not us ({os.getuid()})"
    elif info.st_mode & 0o077:
        problem = f"has mode {stat.S_IMODE(info.st_mode):04o}, not 0700"
    if problem is not None:
        raise TransportError(
            f"refusing the session directory {path}: it {problem}",
            hint=f"remove it (or fix it: chmod 700 {path}) and try again",
        )


def run_dir(*, create: bool = True) -> Path:
    """The private run directory, checked (and created 0700 when missing and `create`)."""
    path = _default_dir()
    if create:
        try:
            path.mkdir(mode=0o700, parents=False)
        except FileExistsError:
            pass
        except FileNotFoundError:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            path.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            raise TransportError(f"cannot create the session directory {path}: {exc.strerror}") from None
    _check(path)
    return path


def socket_path(directory: Path | None = None) -> Path:
    """The daemon's unix socket."""
    path = (directory or run_dir()) / "daemon.sock"
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise TransportError(
            f"the session socket path is too long for a unix socket: {path}",
            hint=f"set {RUNTIME_DIR_ENV} to a shorter directory",
        )
    return path


def lock_path(directory: Path | None = None) -> Path:
    """The start lock (fcntl.flock): two commands starting the daemon make one daemon."""
    return (directory or run_dir()) / "daemon.lock"


def daemon_log_path(directory: Path | None = None) -> Path:
    """The daemon's own stdout and stderr."""
    return (directory or run_dir()) / "daemon.log"


def session_log_path(name: str, directory: Path | None = None) -> Path:
    """A session's server stderr ring (the last 256 KiB)."""
    return (directory or run_dir()) / "sessions" / f"{name}.log"
