"""Remembered consent to run the servers a project's files define (`mcp servers trust`).

A cloned repository can carry `.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json` and
the like; `mcp` reads them (discovery), but a command they name must not run because
you typed `mcp` inside that repository. Consent is given per file and remembered, as
direnv's `allow` does: the file's path and a digest of its servers as they were when
you trusted it. Any change to its servers (a new command, argument, URL, header,
variable...) makes it untrusted again; edits elsewhere in the file (an editor's other
settings) do not. The record lives in our own state directory
(`$XDG_STATE_HOME/mcpcli/trusted.json`), never in the repository, and is written
atomically with mode 0600, under a lock, on what it holds at that moment. A record
that cannot be read (nesting too deep included) counts as nothing trusted.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from mcpcli import files
from mcpcli.config import state_dir
from mcpcli.core import jsonrpc
from mcpcli.errors import UsageError

__all__ = ["CHANGED", "TRUSTED", "UNTRUSTED", "TrustStore", "digest", "store_path"]

#: A project file's status (`TrustStore.status`).
TRUSTED = "trusted"
UNTRUSTED = "untrusted"
#: Trusted once; its servers changed since.
CHANGED = "changed"

_VERSION = 1


def store_path() -> Path:
    return state_dir() / "trusted.json"


def digest(servers: Mapping[str, Any]) -> str:
    """The sha256 of a file's servers as parsed (key order and layout do not count)."""
    text = json.dumps(servers, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class TrustStore:
    """The trusted project files: path -> the digest of its servers when trusted.

    `allow` and `revoke` change the copy read here and are remembered; `save` makes them
    again on the record as it is then, under its lock (`files.locked_edit`), so two
    `mcp servers trust` at once (two repositories) both count."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or store_path()
        self._files: dict[str, dict[str, Any]] | None = None
        self._changes: list[Callable[[dict[str, dict[str, Any]]], object]] = []

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._files is None:
            try:
                data: bytes | None = self.path.read_bytes()
            except OSError:
                data = None  # missing or unreadable: nothing is trusted (fail closed)
            self._files = _parse(data)
        return self._files

    def status(self, path: Path, sha256: str) -> str:
        """TRUSTED, UNTRUSTED or CHANGED for the file at `path` whose servers digest to `sha256`."""
        record = self._load().get(str(path))
        if record is None:
            return UNTRUSTED
        return TRUSTED if record["sha256"] == sha256 else CHANGED

    def paths(self) -> list[str]:
        return sorted(self._load())

    def _change(self, change: Callable[[dict[str, dict[str, Any]]], object]) -> object:
        self._changes.append(change)
        return change(self._load())

    def allow(self, path: Path, sha256: str, servers: Iterable[str]) -> None:
        """Trust the file at `path` as it is now (its servers digest to `sha256`)."""
        record = {"sha256": sha256, "servers": list(servers),
                  "trustedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self._change(lambda recorded: recorded.__setitem__(str(path), record))

    def revoke(self, path: Path | str) -> bool:
        """Forget the file at `path`; False if it was not trusted."""
        return self._change(lambda recorded: recorded.pop(str(path), None)) is not None

    def save(self) -> None:
        """Write the changes made here atomically (temp file and rename: a symlink there is
        replaced, never followed), mode 0600, in a directory created 0700, on the record
        as it is now (under its lock)."""

        def edit(data: bytes | None) -> bytes:
            recorded = _parse(data)
            for change in self._changes:
                change(recorded)
            self._files = recorded
            doc = {"version": _VERSION, "files": recorded}
            return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            files.locked_edit(self.path, edit, mode=0o600)
        except OSError as exc:  # ChangedMeanwhile and LockBusy included: their message says
            reason = exc.strerror or str(exc)
            raise UsageError(f"cannot write {self.path}: {reason}; nothing was changed") from None
        self._changes.clear()


def _parse(data: bytes | None) -> dict[str, dict[str, Any]]:
    """The record's files; anything unreadable is nothing trusted (fail closed)."""
    try:
        doc = jsonrpc.loads(data) if data is not None else None
    except ValueError:  # nesting too deep and bad UTF-8 included
        doc = None
    recorded = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(recorded, dict):
        return {}
    return {str(k): v for k, v in recorded.items() if isinstance(v, dict) and isinstance(v.get("sha256"), str)}
