"""Choosing a task store by name: `mcp serve --task-store memory|sqlite|redis://...`.

`parse_store` checks the name (a usage error for anything else, before the
server starts); `open_records` makes the `TaskRecords` (the SQLite file in
`state_dir`). The default is decided by the caller: SQLite when a tools.yaml
has task tools, memory otherwise.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from mcpcli.errors import UsageError
from mcpcli.server.tasks.records import MemoryRecords, TaskRecords

__all__ = ["STORE_KINDS", "open_records", "parse_store"]

#: The plain names; a URL names a networked store.
STORE_KINDS = ("memory", "sqlite")
_URL_SCHEMES = ("redis", "rediss")


def parse_store(value: str) -> str:
    """The checked `--task-store` value (a name, or a URL of a known scheme)."""
    if value in STORE_KINDS:
        return value
    scheme = urlsplit(value).scheme if "://" in value else value
    if scheme in _URL_SCHEMES:
        from mcpcli.server.tasks.redis_records import redis_url

        redis_url(value)  # no password on argv; `redis` alone needs MCP_SERVE_REDIS_URL
        return value
    raise UsageError(f"--task-store {value!r}: expected memory, sqlite or redis://HOST:PORT/DB")


def open_records(kind: str, state_dir: str | os.PathLike[str], *, file: str | None = None) -> TaskRecords:
    """The records of a store named by `parse_store` (SQLite: `state_dir`/tasks.db; Redis:
    keys namespaced by `file`'s path)."""
    if kind == "memory":
        return MemoryRecords()
    if kind == "sqlite":
        from mcpcli.server.tasks.sqlite import SQLiteRecords

        return SQLiteRecords(state_dir)
    if kind in _URL_SCHEMES or urlsplit(kind).scheme in _URL_SCHEMES:
        from mcpcli.server.tasks.redis_records import RedisRecords, namespace_for, redis_url

        return RedisRecords(redis_url(kind), namespace_for(file or state_dir))
    raise UsageError(f"--task-store {kind!r}: unknown task store")  # pragma: no cover - parse_store
