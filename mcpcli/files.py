"""Files we write where someone else may have been first.

- `check_private_dir` / `private_dir`: a directory only we can write (a real directory, not a
  symlink, owned by us, mode 0700). A directory another user owns or can write is refused,
  never repaired: its owner could swap a file in it for a symlink or their own database.
- `open_regular`: open a file without following a symlink, and refuse anything but a
  regular file (a FIFO would block, a device never end).
- `replace_file`: write a whole file through a temporary file renamed over it, so a reader
  never sees half of it and a symlink in its place is replaced, not followed.
- `take_lock` and `locked_edit`: read, change and replace a file while holding an exclusive
  `flock` on a sidecar lock file, so our own processes take turns instead of losing each
  other's changes, and a change another program makes between our read and our rename is
  noticed (the edit is done again on the new content) rather than overwritten.

Standard library only, and no `pathlib` at import: the command side's fast path reaches
`check_private_dir` through the daemon's run directory (`mcpcli.rundir`).
"""

from __future__ import annotations

import errno
import os
import stat
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "ChangedMeanwhile",
    "LockBusy",
    "UnsafePath",
    "check_private_dir",
    "locked_edit",
    "open_regular",
    "private_dir",
    "replace_file",
    "take_lock",
]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafePath(OSError):
    """A directory or file that is not safely ours to write; the message says why."""


class LockBusy(OSError):
    """Another process held a lock for longer than we wait."""


class ChangedMeanwhile(OSError):
    """The file kept changing under an edit (another program writes it); nothing was written."""


def check_private_dir(path: str | os.PathLike[str], what: str) -> None:
    """Raise UnsafePath unless `path` is a directory (not a symlink) we own, mode 0700.

    `what` names it in the message ("the run directory")."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise UnsafePath(f"cannot use {what} {os.fspath(path)}: {exc.strerror}") from None
    refusing = f"refusing {what} {os.fspath(path)}"
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePath(f"{refusing}: it is a symlink")
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(f"{refusing}: it is not a directory")
    if info.st_uid != os.getuid():
        raise UnsafePath(f"{refusing}: it belongs to uid {info.st_uid}")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise UnsafePath(f"{refusing}: mode {stat.S_IMODE(info.st_mode):o} lets others in (it must be 700)")


def private_dir(path: str | os.PathLike[str], what: str) -> None:
    """Create `path` (missing parents too; the directory itself 0700), then `check_private_dir`.

    An existing directory of ours that others may read but not write is tightened to 0700
    first (nobody else can have put anything in it); one they can write is refused."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise UnsafePath(f"cannot create {what} {os.fspath(path)}: {exc.strerror}") from None
    try:
        # Through a descriptor that did not follow a symlink: the mode changed is this directory's.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC)
    except OSError:
        fd = -1  # a symlink or not a directory: the check below says so
    if fd >= 0:
        try:
            info = os.fstat(fd)
            mode = stat.S_IMODE(info.st_mode)
            if info.st_uid == os.getuid() and mode & 0o077 and not mode & 0o022:
                os.fchmod(fd, 0o700)
        finally:
            os.close(fd)
    check_private_dir(path, what)


def open_regular(path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
    """`os.open` that never follows a symlink at `path` and admits only a regular file.

    UnsafePath for a symlink, a FIFO, a device or a directory (a FIFO is opened without
    blocking, to be refused); other failures are the OSError of `os.open`."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, mode)
    except OSError as exc:
        # ELOOP on Linux and macOS, EMLINK on FreeBSD.
        if exc.errno in (errno.ELOOP, errno.EMLINK) or os.path.islink(path):
            raise UnsafePath(f"refusing {os.fspath(path)}: it is a symlink") from None
        raise
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UnsafePath(f"refusing {os.fspath(path)}: it is not a regular file")
    os.set_blocking(fd, True)
    return fd


def replace_file(path: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> None:
    """Write `data` as the whole of `path`: a temporary file beside it (flushed to disk,
    `mode`), renamed over it. A symlink at `path` is replaced by the file, never followed.
    Failures are the OSError that caused them, with nothing left behind."""
    import tempfile

    path = os.fspath(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def take_lock(path: str | os.PathLike[str], timeout: float) -> int:
    """An exclusive `flock` on `path` (created 0600, never through a symlink): the
    descriptor, whose closing releases it. Waits at most `timeout` seconds (a short
    backoff: holders only ever do something quick), then raises LockBusy."""
    import fcntl

    fd = open_regular(path, os.O_RDWR | os.O_CREAT)
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise LockBusy(f"another process holds {os.fspath(path)}") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        except BaseException:
            os.close(fd)
            raise


def lock_file_of(path: str) -> str:
    """The sidecar lock of `path`: `.NAME.mcpcli-lock` beside it (a name of its own: other
    programs' `NAME.lock` may be a directory or mean something else)."""
    head, name = os.path.split(path)
    return os.path.join(head, f"{'' if name.startswith('.') else '.'}{name}.mcpcli-lock")


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def _replace_if_unchanged(path: str, data: bytes, mode: int, expected: bytes | None) -> bool:
    """Write `data` beside `path` (fsync), then rename it over `path` if that still holds
    `expected` (None: still absent); False, and nothing changed, if it does not."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), mode)
        if _read(path) != expected:
            os.unlink(tmp)
            return False
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    return True


def locked_edit(
    path: str | os.PathLike[str],
    edit: Callable[[bytes | None], bytes | None],
    *,
    new_mode: int = 0o600,
    mode: int | None = None,
    before_replace: Callable[[bytes, int], None] | None = None,
    tries: int = 5,
    timeout: float = 30.0,
) -> bool:
    """Replace `path` with `edit(its bytes)` (None: no file yet), holding its sidecar lock.

    `edit` returns the new bytes, or None to leave the file alone (then False is returned).
    The new file has `mode` if given, else the old one's (`new_mode` for a new file), and is renamed over
    `path` only while `path` still holds what `edit` was given: another program's change in
    between makes the edit run again on the new content, up to `tries` times, then
    ChangedMeanwhile. `before_replace(old bytes, mode)` runs before each rename of an
    existing file (a backup). The lock waits at most `timeout` seconds (LockBusy); other
    failures are OSError, with `path` as it was."""
    path = os.fspath(path)
    fd = take_lock(lock_file_of(path), timeout)
    try:
        for _ in range(tries):
            current = _read(path)
            data = edit(current)
            if data is None:
                return False
            kept = new_mode if mode is None else mode
            if current is not None:
                if mode is None:
                    kept = stat.S_IMODE(os.stat(path).st_mode)
                if before_replace is not None:
                    before_replace(current, kept)
            if _replace_if_unchanged(path, data, kept, current):
                return True
        raise ChangedMeanwhile(f"{path} kept changing while it was being edited (another program writes it)")
    finally:
        os.close(fd)
