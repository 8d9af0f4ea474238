"""Where the daemon lives: its private run directory, socket, start lock and logs.

The run directory is `$XDG_RUNTIME_DIR/mcpcli` when XDG_RUNTIME_DIR is a directory we
own, else `/tmp/mcpcli-<uid>`; `MCPCLI_RUNTIME_DIR` overrides both (tests, unusual
setups). Whatever it is, it must be a real directory (not a symlink) owned by us with
mode 0700: anyone who can write there could plant a socket and receive our requests,
so a directory that fails the check is refused rather than repaired. Stdlib only: the
command side's fast path uses it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = [
    "LOG_RING_BYTES",
    "RunDirError",
    "append_ring",
    "daemon_log",
    "lock_path",
    "run_dir",
    "session_log",
    "socket_path",
]

#: The environment variable that names the run directory outright.
RUNTIME_DIR_ENV = "MCPCLI_RUNTIME_DIR"
#: A session's stderr ring keeps at most this much (the tail).
LOG_RING_BYTES = 256 * 1024


class RunDirError(OSError):
    """The run directory is unsafe or cannot be created (the command side: exit 4)."""


def _default_dir() -> Path:
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        try:
            info = os.stat(xdg)
        except OSError:
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            return Path(xdg) / "mcpcli"
    return Path("/tmp") / f"mcpcli-{os.getuid()}"  # noqa: S108 - checked: ours, 0700, no symlink


def check_private_dir(path: Path) -> None:
    """Raise RunDirError unless `path` is a directory (not a symlink) we own, mode 0700."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise RunDirError(f"cannot use the run directory {path}: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise RunDirError(f"refusing the run directory {path}: it is a symlink")
    if not stat.S_ISDIR(info.st_mode):
        raise RunDirError(f"refusing the run directory {path}: it is not a directory")
    if info.st_uid != os.getuid():
        raise RunDirError(f"refusing the run directory {path}: it belongs to uid {info.st_uid}")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise RunDirError(
            f"refusing the run directory {path}: mode {stat.S_IMODE(info.st_mode):o} "
            "lets others in (it must be 700)"
        )


def run_dir(*, create: bool = True) -> Path:
    """The checked run directory, created 0700 when missing (and `create`)."""
    override = os.environ.get(RUNTIME_DIR_ENV)
    path = Path(override) if override else _default_dir()
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise RunDirError(f"cannot create the run directory {path}: {exc.strerror}") from None
    check_private_dir(path)
    return path


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


def append_ring(path: Path, data: bytes, limit: int = LOG_RING_BYTES) -> None:
    """Append to a bounded log: past `limit`, keep only the last `limit // 2` bytes,
    cut at a line start, so the file stays small and still ends with the newest lines."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
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
    with open(tmp, "wb") as fh:
        fh.write(tail)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
