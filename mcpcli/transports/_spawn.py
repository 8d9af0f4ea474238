"""Spawning stdio servers, with no imports beyond the standard library.

A stdio server (often `npx ...` or `uvx ...`) takes hundreds of milliseconds to
boot, far longer than our own imports. So a command that will talk to a stdio
server spawns it as soon as its arguments are parsed (`prespawn`), before
asyncio, anyio, the client and jsonschema are imported; the stdio transport
then adopts that process (`adopt`). This module must stay cheap to import.

Every server runs in its own session (process group), so a terminal Ctrl-C
reaches us and not it, and shutdown can signal the whole group.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

__all__ = [
    "DEFAULT_INHERITED_ENV",
    "SpawnError",
    "adopt",
    "child_environment",
    "discard_prespawned",
    "prespawn",
    "resolve_executable",
    "spawn",
]

#: Variables a server inherits from our environment; everything else must be asked for.
DEFAULT_INHERITED_ENV: tuple[str, ...] = (
    ("APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PATHEXT",
     "PROCESSOR_ARCHITECTURE", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE",
     "PROGRAMFILES")
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE",
          "TMPDIR", "TZ")
)


class SpawnError(Exception):
    """The server could not be started; `hint` says what to check."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


def child_environment(
    extra: Mapping[str, str] | None = None, *, inherit: Sequence[str] = DEFAULT_INHERITED_ENV
) -> dict[str, str]:
    """The environment for a server: an allow-list of ours plus what was configured.

    Values that look like exported bash functions (`() {`) are dropped: they are
    how Shellshock-style payloads travel.
    """
    env = {
        key: value
        for key in inherit
        if (value := os.environ.get(key)) is not None and not value.startswith("()")
    }
    if extra:
        env.update(extra)
    return env


def resolve_executable(command: str, env: Mapping[str, str], cwd: str | None) -> str:
    """The program to run, or `SpawnError` saying why it cannot be."""
    if cwd is not None and not os.path.isdir(cwd):
        raise SpawnError(f"working directory {cwd!r} does not exist")
    if os.sep in command or (os.altsep and os.altsep in command):
        path = command if os.path.isabs(command) or not cwd else os.path.join(cwd, command)
        if not os.path.exists(path):
            raise SpawnError(f"cannot start server: {command}: no such file")
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise SpawnError(f"cannot start server: {command}: permission denied")
        return command
    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise SpawnError(
            f"cannot start server: {command}: command not found",
            hint="check the command name and that it is on PATH",
        )
    return found


def spawn(
    command: str, args: Sequence[str], env: Mapping[str, str], cwd: str | None
) -> subprocess.Popen[bytes]:
    """Start the server with pipes on stdin, stdout and stderr, in a new session."""
    executable = resolve_executable(command, env, cwd)
    try:
        return subprocess.Popen(
            [executable, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        raise SpawnError(f"cannot start server: {command}: {exc.strerror or exc}") from None


Key = tuple[tuple[str, ...], tuple[tuple[str, str], ...], "str | None"]
_PRESPAWNED: dict[Key, subprocess.Popen[bytes]] = {}


def _key(command: str, args: Sequence[str], env: Mapping[str, str], cwd: str | None) -> Key:
    return (command, *args), tuple(sorted(env.items())), cwd


def prespawn(command: str, args: Sequence[str], env: Mapping[str, str], cwd: str | None) -> None:
    """Start a server early; best effort (a failure is reported later, on connect)."""
    key = _key(command, args, env, cwd)
    if key in _PRESPAWNED:
        return
    try:
        _PRESPAWNED[key] = spawn(command, args, env, cwd)
    except SpawnError:
        return
    if len(_PRESPAWNED) == 1:
        atexit.register(discard_prespawned)


def adopt(
    command: str, args: Sequence[str], env: Mapping[str, str], cwd: str | None
) -> subprocess.Popen[bytes] | None:
    """The prespawned process for exactly this command line, environment and cwd."""
    return _PRESPAWNED.pop(_key(command, args, env, cwd), None)


def discard_prespawned() -> None:
    """Kill servers spawned early but never used (the command failed before connecting)."""
    while _PRESPAWNED:
        process = _PRESPAWNED.popitem()[1]
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        process.wait()
