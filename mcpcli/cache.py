"""A small on-disk cache of list results, for shell completion and cache hints,
of which stdio server command lines turned out legacy (so the era probe is skipped), and
of which did not exit within the grace after EOF (so SIGTERM follows EOF at once).

Entries live under `$XDG_CACHE_HOME/mcpcli/lists/`, one JSON file per target and
method. Completion reads it and never connects; 2026-07-28 results carry
`ttlMs`/`cacheScope`, which decide whether a command may reuse an entry instead
of asking the server again.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from mcpcli.core import jsonrpc

__all__ = [
    "EraRecords", "ExitRecords", "forget", "fresh", "load", "names", "prompt_names", "remember", "store",
    "tool_names",
]

JSON = dict[str, Any]


def _path(target: str, method: str) -> Path:
    import hashlib

    from mcpcli.config import cache_dir

    key = hashlib.sha256(f"{target}\x00{method}".encode()).hexdigest()[:32]
    return cache_dir() / "lists" / f"{key}.json"


def store(target: str, method: str, result: JSON) -> None:
    """Remember a list result; failures to write are ignored (it is only a cache)."""
    path = _path(target, method)
    record = {"target": target, "method": method, "storedAt": time.time(), "result": result}
    tmp = path.parent / f".tmp-{os.getpid()}-{time.monotonic_ns()}"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh, ensure_ascii=False)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def forget(target: str, method: str) -> None:
    """Drop an entry; a missing one is fine."""
    try:
        os.unlink(_path(target, method))
    except OSError:
        pass


def remember(target: str | None, method: str, result: JSON) -> None:
    """Store a list result for a named target (a server name, URL or file), for completion.

    A server command given after `--` has no name to complete against, so it is
    not stored.
    """
    if not target or target.startswith("\x00"):
        return
    store(target, method, result)


def load(target: str, method: str) -> JSON | None:
    try:
        with open(_path(target, method), "rb") as fh:
            record = jsonrpc.loads(fh.read())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("target") == target else None


def fresh(target: str, method: str) -> JSON | None:
    """The cached result if the server's `ttlMs` says it is still fresh (public scope only)."""
    record = load(target, method)
    if record is None:
        return None
    result = record.get("result")
    if not isinstance(result, dict):
        return None
    ttl = result.get("ttlMs")
    if not isinstance(ttl, int) or ttl <= 0 or result.get("cacheScope") not in ("public", None):
        return None
    if time.time() - float(record.get("storedAt", 0)) > ttl / 1000:
        return None
    return result


def _items(target: str, method: str, key: str) -> list[dict[str, Any]]:
    """The items under `key` in a cached list result (none when nothing usable is cached)."""
    record = load(target, method)
    result = record.get("result") if record else None
    items = result.get(key) if isinstance(result, dict) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def names(target: str, method: str, key: str) -> list[str]:
    """The `name`s of the items under `key` in a cached list result."""
    return [i["name"] for i in _items(target, method, key) if isinstance(i.get("name"), str)]


def item(target: str, method: str, key: str, name: str) -> dict[str, Any] | None:
    """The item called `name` under `key` in a cached list result, if any."""
    return next((i for i in _items(target, method, key) if i.get("name") == name), None)


def tool_names(target: str) -> list[str]:
    return names(target, "tools/list", "tools")


def prompt_names(target: str) -> list[str]:
    return names(target, "prompts/list", "prompts")


def _stdio_key(command_line: list[str] | tuple[str, ...]) -> str:
    """What a stdio server is remembered by: its command line (as the era probe's outcome)."""
    return "stdio:" + json.dumps(list(command_line))


#: How long a command line seen not to exit within the EOF grace gets SIGTERM at once; then
#: one shutdown waits the grace again, and forgets it if it exited in time (a slow exit
#: seen once on a loaded machine does not stick).
EXIT_MEMORY_TTL = 3600.0


class ExitRecords:
    """Which stdio command lines' servers did not exit within the EOF grace of their stdin
    closing (`mcpcli.transports.spawn.eof_grace`): their shutdowns send SIGTERM right after
    EOF. Kept beside the era memory, under the same key; read once per shutdown, written
    only when what was seen changes."""

    def __init__(self, command_line: list[str] | tuple[str, ...]) -> None:
        self._key = _stdio_key(command_line)
        #: An entry was read (fresh or stale): one that exits in time removes it.
        self._seen: bool | None = None

    def slow_to_exit(self) -> bool:
        record = load(self._key, "exit")
        self._seen = record is not None
        result = record.get("result") if record else None
        if not isinstance(result, dict) or result.get("slowExit") is not True:
            return False
        stored = record.get("storedAt") if record else None
        age = time.time() - stored if isinstance(stored, (int, float)) else -1.0
        return 0 <= age < EXIT_MEMORY_TTL

    def remember_exit(self, slow: bool) -> None:
        if slow:
            store(self._key, "exit", {"slowExit": True})
        elif self._seen is not False:
            forget(self._key, "exit")


class EraRecords:
    """What era negotiation remembers across runs (`mcpcli.core.exchange.EraMemory`): a
    stdio command line that was legacy last time, and a 2026-07-28 URL's cacheable
    `server/discover` result. Either key may be None (nothing remembered for it)."""

    def __init__(self, command_line: list[str] | tuple[str, ...] | None, url_key: str | None) -> None:
        self._era_key = _stdio_key(command_line) if command_line else None
        self._url_key = url_key or None

    def remembered_legacy(self) -> JSON | None:
        if self._era_key is None:
            return None
        record = load(self._era_key, "era")
        result = record.get("result") if record else None
        if isinstance(result, dict) and result.get("era") == "legacy":
            return result
        return None

    def remember_legacy(self, server_info: JSON | None) -> None:
        if self._era_key is None:
            return
        if server_info is None:
            forget(self._era_key, "era")
            return
        from mcpcli.core.handshake import version_of

        store(self._era_key, "era", {"era": "legacy", "version": version_of(server_info)})

    def cached_discover(self) -> JSON | None:
        return fresh(self._url_key, "server/discover") if self._url_key is not None else None

    def store_discover(self, result: JSON) -> None:
        if self._url_key is not None:
            store(self._url_key, "server/discover", result)

    def forget_discover(self) -> None:
        if self._url_key is not None:
            store(self._url_key, "server/discover", {})  # no ttlMs: never fresh
