"""Where the session daemon lives: its private run directory, socket, start lock and logs.

The run directory is `$XDG_RUNTIME_DIR/mcpcli` when XDG_RUNTIME_DIR is a directory we
own, else `/tmp/mcpcli-<uid>`; `MCPCLI_RUNTIME_DIR` overrides both (tests, unusual
setups). Whatever it is, it must be a real directory (not a symlink) owned by us with
mode 0700: anyone who can write there could plant a socket and receive our requests,
so a directory that fails the check is refused rather than repaired. Stdlib only, and
`pathlib` only when a `Path` is asked for: the command side's fast path calls
`socket_file()`, which needs `os` alone.

A foundation, outside `daemon/`: the daemon, the command side (`sessions`,
`transports/daemon.py`, the fast path) and `doctor` all find the daemon here, and none of
them may import the daemon package (which imports `connect`, and through it the transports).
"""

from __future__ import annotations

import os
import stat

from mcpcli import files

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "LOG_RING_BYTES",
    "RunDirError",
    "append_ring",
    "daemon_log",
    "lock_path",
    "run_dir",
    "run_dir_name",
    "session_log",
    "socket_file",
    "socket_path",
    "start_lock",
]

#: The environment variable that names the run directory outright.
RUNTIME_DIR_ENV = "MCPCLI_RUNTIME_DIR"
#: A session's stderr ring keeps at most this much (the tail).
LOG_RING_BYTES = 256 * 1024


class RunDirError(OSError):
    """The run directory is unsafe or cannot be created (the command side: exit 4)."""


def _default_dir() -> str:
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        try:
            info = os.stat(xdg)
        except OSError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            return os.path.join(xdg, "mcpcli")
    return f"/tmp/mcpcli-{os.getuid()}"  # noqa: S108 - checked: ours, 0700, no symlink


def check_private_dir(path: str | os.PathLike[str]) -> None:
    """Raise RunDirError unless `path` is a directory (not a symlink) we own, mode 0700."""
    try:
        files.check_private_dir(path, "the run directory")
    except files.UnsafePath as exc:
        raise RunDirError(str(exc)) from None


def run_dir_path() -> str:
    """Where the run directory is (`MCPCLI_RUNTIME_DIR`, else the default), unchecked."""
    return os.environ.get(RUNTIME_DIR_ENV) or _default_dir()


def run_dir_name(*, create: bool = True) -> str:
    """The checked run directory as a string, created 0700 when missing (and `create`)."""
    path = run_dir_path()
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise RunDirError(f"cannot create the run directory {path}: {exc.strerror}") from None
    check_private_dir(path)
    return path


def run_dir(*, create: bool = True) -> Path:
    """The checked run directory (see `run_dir_name`)."""
    from pathlib import Path

    return Path(run_dir_name(create=create))


def socket_file(*, create: bool = True) -> str:
    """The daemon's socket, for the fast path (no `pathlib`)."""
    return os.path.join(run_dir_name(create=create), "daemon.sock")


def socket_path(base: Path | None = None) -> Path:
    return (base or run_dir()) / "daemon.sock"


def lock_path(base: Path | None = None) -> Path:
    return (base or run_dir()) / "daemon.lock"


def daemon_log(base: Path | None = None) -> Path:
    return (base or run_dir()) / "daemon.log"


def session_log(name: str, base: Path | None = None) -> Path:
    """`<rundir>/sessions/<name>.log`; the name must be safe as a file name."""
    if not name or name.startswith(".") or "/" in name or "\0" in name:
        raise ValueError(f"bad session name {name!r}")
    folder = (base or run_dir()) / "sessions"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder / f"{name}.log"


class start_lock:
    """Hold `<rundir>/daemon.lock` (fcntl.flock) while checking for and starting a daemon,
    so that two commands starting one at once make one. Waits at most `timeout` seconds
    (a short backoff; the holder is only ever starting a process), then raises RunDirError.

        with rundir.start_lock(run_dir_name()):
            ...connect again; if still nothing, remove a dead socket and start the daemon...
    """

    def __init__(self, base: str | os.PathLike[str], timeout: float = 10.0) -> None:
        self.path = os.path.join(os.fspath(base), "daemon.lock")
        self.timeout = timeout
        self.fd = -1

    def __enter__(self) -> start_lock:
        try:
            self.fd = files.take_lock(self.path, self.timeout)
        except files.LockBusy:
            raise RunDirError(f"another command holds {self.path}") from None
        except files.UnsafePath as exc:
            raise RunDirError(str(exc)) from None
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the descriptor releases the lock
            self.fd = -1


def append_ring(path: Path, data: bytes, limit: int = LOG_RING_BYTES) -> None:
    """Append to a bounded log: past `limit`, keep only the last `limit // 2` bytes,
    cut at a line start, so the file stays small and still ends with the newest lines."""
    fd = files.open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, data)
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if size <= limit:
        return
    with open(path, "rb") as fh:
        fh.seek(max(0, size - limit // 2))
        tail = fh.read()
    newline = tail.find(b"\n")
    if 0 <= newline < len(tail) - 1:
        tail = tail[newline + 1 :]
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(tail)
        os.fchmod(fh.fileno(), 0o600)
    os.replace(tmp, path)
