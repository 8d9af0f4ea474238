"""The store's private directory and its inter-process lock file.

Writers hold an exclusive lock file (`auth/lock`) so concurrent `mcp`
processes never lose an update; the same lock serialises token refreshes
across processes.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from mcpcli import files
from mcpcli.errors import AuthError

__all__ = ["FileLock", "ensure_private_dir"]


def ensure_private_dir(path: Path) -> None:
    """Create `path` (0700), tightening one of ours that others may read; a symlink, another
    user's directory or one others may write is refused (AuthError): its owner could swap
    our token files."""
    try:
        files.private_dir(path, "the sign-in directory")
    except files.UnsafePath as exc:
        raise AuthError(str(exc), hint="it must be a directory of yours with mode 700") from None


class FileLock:
    """An exclusive inter-process lock on a file (flock on POSIX, msvcrt on Windows).

    Re-entrant for the same object: nested `acquire()`s only count. Acquiring
    blocks (up to `timeout`), so call it from a worker thread in async code.
    """

    def __init__(self, path: Path, timeout: float = 60.0) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None
        self._depth = 0
        self._mutex = threading.Lock()

    def acquire(self) -> None:
        with self._mutex:
            if self._depth:
                self._depth += 1
                return
        ensure_private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            _lock(fd, blocking=False)
        except OSError:
            self._wait(fd)
        with self._mutex:
            self._fd = fd
            self._depth = 1

    def _wait(self, fd: int) -> None:
        """Queue for the lock in the kernel (a daemon thread), giving up after the timeout.

        If we give up, the waiting thread releases the lock and closes the
        descriptor as soon as it gets it, so nothing stays locked behind us.
        """
        done = threading.Event()
        guard = threading.Lock()
        state = {"acquired": False, "abandoned": False}
        failed: list[OSError] = []

        def block() -> None:
            try:
                _lock(fd, blocking=True)
            except OSError as exc:
                failed.append(exc)
            with guard:
                if state["abandoned"]:
                    if not failed:
                        _unlock(fd)
                    os.close(fd)
                    return
                state["acquired"] = not failed
            done.set()

        threading.Thread(target=block, name="mcpcli-lock", daemon=True).start()
        if not done.wait(self.timeout):
            with guard:
                if not state["acquired"] and not failed:
                    state["abandoned"] = True
                    raise AuthError(
                        f"another mcp process has held the sign-in lock ({self.path}) "
                        f"for more than {self.timeout:g}s"
                    )
        if failed:
            os.close(fd)
            raise AuthError(f"cannot lock {self.path}: {failed[0].strerror}")

    def release(self) -> None:
        with self._mutex:
            self._depth -= 1
            if self._depth > 0 or self._fd is None:
                return
            fd, self._fd = self._fd, None
        try:
            _unlock(fd)
        finally:
            os.close(fd)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _lock(fd: int, *, blocking: bool) -> None:
    if os.name == "nt":  # pragma: no cover - Windows: LK_LOCK retries for 10 s, then fails
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_LOCK if blocking else msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)


def _unlock(fd: int) -> None:
    if os.name == "nt":  # pragma: no cover - Windows
        import msvcrt

        os.lseek(fd, 0, 0)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_UN)
