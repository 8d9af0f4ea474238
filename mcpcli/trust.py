"""Remembered consent to run the servers a project's files define (`mcp servers trust`).

A cloned repository can carry `.mcp.json`, `.cursor/mcp.json`, `.vscode/mcp.json` and
the like; `mcp` reads them (discovery), but a command they name must not run because
you typed `mcp` inside that repository. Consent is given per file and remembered, as
direnv's `allow` does: the file's path and a digest of its servers as they were when
you trusted it. Any change to its servers (a new command, argument, URL, header,
variable...) makes it untrusted again; edits elsewhere in the file (an editor's other
settings) do not. The record lives in our own state directory
(`$XDG_STATE_HOME/mcpcli/trusted.json`), never in the repository, and is written
atomically with mode 0600. A record that cannot be read counts as nothing trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mcpcli.config import state_dir
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
    """The trusted project files: path -> the digest of its servers when trusted."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or store_path()
        self._files: dict[str, dict[str, Any]] | None = None

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._files is None:
            files: dict[str, dict[str, Any]] = {}
            try:
                doc = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError, UnicodeDecodeError):
                doc = None  # missing or unreadable: nothing is trusted (fail closed)
            recorded = doc.get("files") if isinstance(doc, dict) else None
            if isinstance(recorded, dict):
                files = {str(k): v for k, v in recorded.items()
                         if isinstance(v, dict) and isinstance(v.get("sha256"), str)}
            self._files = files
        return self._files

    def status(self, path: Path, sha256: str) -> str:
        """TRUSTED, UNTRUSTED or CHANGED for the file at `path` whose servers digest to `sha256`."""
        record = self._load().get(str(path))
        if record is None:
            return UNTRUSTED
        return TRUSTED if record["sha256"] == sha256 else CHANGED

    def paths(self) -> list[str]:
        return sorted(self._load())

    def allow(self, path: Path, sha256: str, servers: Iterable[str]) -> None:
        """Trust the file at `path` as it is now (its servers digest to `sha256`)."""
        self._load()[str(path)] = {
            "sha256": sha256, "servers": list(servers),
            "trustedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }

    def revoke(self, path: Path | str) -> bool:
        """Forget the file at `path`; False if it was not trusted."""
        return self._load().pop(str(path), None) is not None

    def save(self) -> None:
        """Write the record atomically (temp file and rename: a symlink there is replaced,
        never followed), mode 0600, in a directory created 0700."""
        files = self._load()
        directory = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = directory / f".trusted-{os.getpid()}-{time.monotonic_ns()}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({"version": _VERSION, "files": files}, fh, indent=2, ensure_ascii=False)
                    fh.write("\n")
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError as exc:
            raise UsageError(f"cannot write {self.path}: {exc.strerror or exc}; nothing was changed") from None
