"""Task records in SQLite: the tasks of `mcp serve` survive a restart of the server.

One file, `tasks.db`, in the server's state directory (0700; the file 0600),
in WAL mode with `synchronous=NORMAL`: a committed write survives the process
being killed, and each write is one short statement on the event loop
(scripts/bench_tasks.py measures it). A record is one row: the columns the
store filters on (principal key, status, expiry, owner) and the whole record
as JSON.

The directory must be ours and 0700 (one we own that others may only read is
tightened; another user's, or one others may write, is refused), and none of the
files is opened through a symlink: whoever could plant one could have a file of
their choosing changed. SQLite opens tasks.db and its -wal, -shm and -journal
itself (Python cannot pass it SQLITE_OPEN_NOFOLLOW, an open flag, not a URI
parameter), so each is checked just before; in a directory only we can write,
nobody else can swap one afterwards.

One server per state directory: an exclusive lock on `tasks.lock` is held for
the store's lifetime, since `recover()` fails every unfinished record at start
(their process is gone; a tools.yaml script cannot be resumed) and would
otherwise fail the tasks of a server still running.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpcli import files
from mcpcli.core.jsonrpc import INTERNAL_ERROR
from mcpcli.errors import TransportError
from mcpcli.server.tasks.records import RESTARTED, LocalDelivery, TaskRecord

__all__ = ["DB_NAME", "SQLiteRecords", "StoreBusy"]

log = logging.getLogger("mcpcli.server")

JSON = dict[str, Any]

DB_NAME = "tasks.db"
_LOCK_NAME = "tasks.lock"
_TERMINAL = ("completed", "failed", "cancelled")
#: At most this often (seconds) does `expire` run its DELETE; reads skip expired rows anyway.
_SWEEP_EVERY = 1.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    principal TEXT NOT NULL,
    status TEXT NOT NULL,
    created REAL NOT NULL,
    expires REAL,
    owner TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_principal ON tasks (principal, created);
CREATE INDEX IF NOT EXISTS tasks_expires ON tasks (expires) WHERE expires IS NOT NULL;
"""


class StoreBusy(TransportError):
    """Another server holds the state directory (its lock on tasks.lock)."""


#: The database and the files SQLite keeps beside it (each opened by SQLite itself).
_DB_FILES = (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm", DB_NAME + "-journal")
_UNSAFE_HINT = ("the state directory must be yours, mode 700, with no symlinks in it; "
                "fix it or give another --state-dir")


def _private_file(path: Path, *, create: bool) -> None:
    """Make `path` 0600, never through a symlink (UnsafePath); a missing one is made only if `create`."""
    try:
        fd = files.open_regular(path, os.O_RDWR | (os.O_CREAT if create else 0))
    except FileNotFoundError:
        if create:
            raise
        return
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


class SQLiteRecords(LocalDelivery):
    """Task records in `<state_dir>/tasks.db`; see the module docstring."""

    durable = True

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.dir = Path(state_dir)
        self.path = self.dir / DB_NAME
        self._lock: int | None = None
        db: sqlite3.Connection | None = None
        try:
            files.private_dir(self.dir, "the state directory")
            self._lock = self._take_lock()
            for name in _DB_FILES:  # SQLite gives -wal and -shm the db's mode
                _private_file(self.dir / name, create=name == DB_NAME)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=5000")
            db.executescript(_SCHEMA)
        except StoreBusy:
            raise
        except files.UnsafePath as exc:
            if self._lock is not None:
                os.close(self._lock)
            raise TransportError(str(exc), hint=_UNSAFE_HINT) from None
        except (OSError, sqlite3.Error) as exc:
            if db is not None:
                db.close()
            if self._lock is not None:
                os.close(self._lock)
            raise TransportError(f"cannot open the task store {self.path}: {exc}") from None
        self._db = db
        self._mutex = threading.Lock()
        self._swept = 0.0

    def _take_lock(self) -> int:
        """The store's lock on tasks.lock (a descriptor held for its lifetime)."""
        try:
            return files.take_lock(self.dir / _LOCK_NAME, timeout=0)
        except files.LockBusy:
            raise StoreBusy(
                f"another mcp serve keeps its tasks in {self.dir}",
                hint="give each server its own --state-dir (or --task-store memory)",
            ) from None

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        with self._mutex:
            return self._db.execute(sql, args).fetchall()

    def _write(self, sql: str, args: tuple[Any, ...] = ()) -> bool:
        """A write; a failing disk is logged (the task goes on in memory), not raised into the call."""
        try:
            self._run(sql, args)
        except sqlite3.Error as exc:
            log.warning("task store %s: %s", self.path, exc)
            return False
        return True

    @staticmethod
    def _record(data: str) -> TaskRecord:
        return TaskRecord.from_json(json.loads(data))

    # -- TaskRecords ---------------------------------------------------------------------

    def put(self, record: TaskRecord) -> None:
        data = json.dumps(record.to_json(), separators=(",", ":"), ensure_ascii=False)
        self._write(
            "INSERT OR REPLACE INTO tasks (id, principal, status, created, expires, owner, data)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (record.id, record.principal, record.status, record.created, record.expires, record.owner, data),
        )

    def get(self, task_id: str, now: float) -> TaskRecord | None:
        rows = self._run("SELECT data FROM tasks WHERE id = ? AND (expires IS NULL OR expires > ?)",
                         (task_id, now))
        return self._record(rows[0][0]) if rows else None

    def delete(self, task_id: str) -> None:
        self._write("DELETE FROM tasks WHERE id = ?", (task_id,))

    def by_principal(self, principal: str, now: float) -> list[TaskRecord]:
        rows = self._run("SELECT data FROM tasks WHERE principal = ? AND (expires IS NULL OR expires > ?)"
                         " ORDER BY created, rowid", (principal, now))
        return [self._record(row[0]) for row in rows]

    def count(self, principal: str | None = None) -> int:
        if principal is None:
            rows = self._run("SELECT count(*) FROM tasks")
        else:
            rows = self._run("SELECT count(*) FROM tasks WHERE principal = ?", (principal,))
        return int(rows[0][0])

    def expire(self, now: float) -> list[str]:
        if now - self._swept < _SWEEP_EVERY:
            return []
        self._swept = now
        try:
            with self._mutex:
                rows = self._db.execute(
                    "DELETE FROM tasks WHERE expires IS NOT NULL AND expires <= ? RETURNING id", (now,)
                ).fetchall()
        except sqlite3.Error as exc:
            log.warning("task store %s: %s", self.path, exc)
            return []
        return [row[0] for row in rows]

    def evict_finished(self, principal: str | None = None) -> bool:
        # `principal IS NULL` arm: the one query serves both the global and the per-caller bound.
        rows = self._run("SELECT id FROM tasks WHERE status IN (?, ?, ?) AND (? IS NULL OR principal = ?)"
                         " ORDER BY created, rowid LIMIT 1", (*_TERMINAL, principal, principal))
        if not rows:
            return False
        return self._write("DELETE FROM tasks WHERE id = ?", (rows[0][0],))

    def recover(self, now: float) -> int:
        """Fail what was running or waiting for input: the process that ran it is gone."""
        rows = self._run("SELECT data FROM tasks WHERE status NOT IN (?, ?, ?)", _TERMINAL)
        for (data,) in rows:
            record = self._record(data)
            record.status, record.message, record.pending = "failed", RESTARTED, {}
            record.error = {"code": INTERNAL_ERROR, "message": RESTARTED}
            record.updated = now
            self.put(record)
        return len(rows)

    def on_change(self, callback: Callable[[TaskRecord], None]) -> None:
        pass  # one process per file: every change is made here

    def close(self) -> None:
        with self._mutex:
            self._db.close()
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

