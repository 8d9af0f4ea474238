"""The daemon's control ops on its sessions: `open`, `list`, `close`, `restart`, `logs`.

An `open` names a session and its server (a config entry's fields, checked here: a bad
one is a usage error, not a crash) and how to connect; it starts the session's task
(`mcpcli.daemon.lifecycle`) and answers once the server is ready, or with why it is not.
Opening a name that is open joins it when it is the same server and profile.
"""

from __future__ import annotations

import os
import sys
from typing import IO, Any, cast

from mcpcli import rundir as paths
from mcpcli.config import ServerEntry
from mcpcli.connect import ConnectOptions, check_profile
from mcpcli.core import localrpc as protocol
from mcpcli.errors import McpCliError, UsageError
from mcpcli.transports.stdio import quote_stderr

from .held import ENTRY_FIELDS, Held, RingWriter, Sessions
from .lifecycle import restart_session, run_session

__all__ = ["Ops", "string_map"]

JSON = dict[str, Any]

CONNECT_FIELDS = (
    "env", "cwd", "headers", "bearer_token", "transport", "insecure",
    "auth", "token_store", "profile", "connect_timeout",
)


def string_map(value: Any, *, none_ok: bool = False) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and (isinstance(v, str) or (none_ok and v is None)) for k, v in value.items()
    )


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _entry_from(raw: Any) -> ServerEntry:
    """The entry of an `open`, its fields checked (a bad one is a usage error, not a crash)."""
    if not isinstance(raw, dict):
        raise UsageError("open: `entry` must be an object")
    fields = {k: raw[k] for k in ENTRY_FIELDS if k in raw and raw[k] is not None}
    def fits(key: str, value: Any) -> bool:
        if key in ("args",):
            return _strings(value)
        if key in ("env", "headers"):
            return string_map(value)
        if key == "transport":
            return value in ("stdio", "http", "sse", "yaml")
        if key == "raw":
            return isinstance(value, dict)
        if key == "headers_helper":
            return isinstance(value, str) or (_strings(value) and bool(value))
        return isinstance(value, str)

    bad = [k for k, v in fields.items() if not fits(k, v)]
    if bad or "name" not in fields:
        raise UsageError(f"open: bad entry field(s): {', '.join(bad) or 'name (missing)'}")
    transport = fields.get("transport", "stdio")
    needs = {"stdio": "command", "http": "url", "sse": "url", "yaml": "path"}[transport]
    if needs not in fields:
        raise UsageError(f"open: a {transport} entry needs its {needs}")
    return ServerEntry(**fields)


def _launch_entry(entry: ServerEntry) -> ServerEntry:
    """A tools.yaml entry runs as `python -m mcpcli serve FILE` over stdio, not in the daemon."""
    if entry.transport != "yaml" or entry.path is None:
        return entry
    return ServerEntry(name=entry.name, command=sys.executable,
                       args=["-m", "mcpcli", "serve", os.path.abspath(entry.path)],
                       env=entry.env, cwd=entry.cwd, transport="stdio", raw=entry.raw)


def _connect_from(raw: Any) -> ConnectOptions:
    fields = {k: raw[k] for k in CONNECT_FIELDS if isinstance(raw, dict) and raw.get(k) is not None}
    if not string_map(fields.get("env", {}), none_ok=True) or not string_map(fields.get("headers", {})):
        raise UsageError("open: connect.env and connect.headers must map names to strings")
    options = ConnectOptions(**fields)
    options.profile = check_profile(options.profile) if isinstance(options.profile, str) else None
    options.quiet = True
    if options.auth == "interactive":
        options.auth = "stored-only"  # the daemon has no terminal to sign in on
    return options


class Ops:
    """The control ops (`op_<name>`), on the daemon's `sessions`."""

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions

    async def op_open(self, message: JSON) -> JSON:
        name = message.get("name")
        if not isinstance(name, str):
            raise UsageError("open: a session needs a name")
        entry = _entry_from(message.get("entry"))
        existing = self.sessions.by_name.get(name)
        if existing is not None:
            if not existing.same_target(entry):
                raise UsageError(f"session {name!r} is open on another server ({existing.target()})",
                                 hint=f"mcp session close {name}")
            profile = _connect_from(message.get("connect")).profile
            if existing.connect.profile != profile:
                raise UsageError(f"session {name!r} is open with profile {existing.connect.profile or 'default'!r}",
                                 hint=f"mcp session close {name}, or open another session for this profile")
            if not message.get("join", True):
                raise UsageError(f"session {name!r} is already open", hint=f"mcp session close {name}")
            await existing.ready.wait()
            if existing.state != "ready":
                raise existing.unavailable()
            return protocol.ok(session=existing.info())
        try:
            log_path = paths.session_log(name, self.sessions.run_dir)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        idle = message.get("idle_timeout")
        restart = message.get("restart") or "no"
        if restart not in ("no", "on-failure"):
            raise UsageError(f"open: restart must be 'no' or 'on-failure', not {restart!r}")
        client_options = message.get("client")
        held = Held(
            name=name,
            entry=entry,
            launch=_launch_entry(entry),
            connect=_connect_from(message.get("connect")),
            client_options=client_options if isinstance(client_options, dict) else {},
            idle_timeout=float(idle) if isinstance(idle, (int, float)) and idle > 0 else None,
            restart=restart,
            log_path=log_path,
        )
        held.connect.server_log = cast(IO[bytes], RingWriter(log_path))
        self.sessions.by_name[name] = held
        assert self.sessions.tg is not None
        self.sessions.tg.start_soon(run_session, held, self.sessions)
        await held.ready.wait()
        if held.state != "ready":
            error = held.unavailable() if held.error is None else held.error
            held.closing = True
            held.task_scope.cancel()
            await held.done.wait()
            if held.last_stderr and isinstance(error, McpCliError):
                error.message = quote_stderr(error.message, held.last_stderr)
            raise error
        return protocol.ok(session=held.info())

    async def op_list(self, message: JSON) -> JSON:
        return protocol.ok(sessions=[h.info() for h in self.sessions.by_name.values()])

    async def op_close(self, message: JSON) -> JSON:
        if message.get("all"):
            chosen = list(self.sessions.by_name.values())
        else:
            chosen = [self.sessions.find(message.get("name"))]
        for held in chosen:
            held.closing = True
            held.task_scope.cancel()
        for held in chosen:
            await held.done.wait()
        return protocol.ok(closed=[h.name for h in chosen])

    async def op_restart(self, message: JSON) -> JSON:
        held = self.sessions.find(message.get("name"))
        restart_session(held)
        await held.ready.wait()
        if held.state != "ready":
            raise held.unavailable()
        return protocol.ok(session=held.info())

    async def op_logs(self, message: JSON) -> JSON:
        held = self.sessions.find(message.get("name"))
        try:
            text = held.log_path.read_bytes().decode("utf-8", "replace")
        except FileNotFoundError:
            text = ""
        return protocol.ok(path=str(held.log_path), text=text)
