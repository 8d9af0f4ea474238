"""From a target on the command line to a connected `Client`.

A target is one of: a server name from the config (ours first, then the servers
other clients have configured); an `http(s)://` URL; a tools.yaml file, served
in-process; or, with no target, the server command given after `--`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import IO, Any

from mcpcli.client import Client, ClientOptions
from mcpcli.config import Config, ServerEntry
from mcpcli.errors import ConfigError, UsageError
from mcpcli.transports import Transport

__all__ = ["ConnectOptions", "connect", "open_transport", "resolve_target"]

YAML_SUFFIXES = (".yaml", ".yml")


@dataclass
class ConnectOptions:
    """How to reach a server; everything the transports and auth need from the CLI."""

    #: Extra environment for stdio servers; a value of None passes ours through.
    env: dict[str, str | None] = field(default_factory=dict)
    cwd: str | None = None
    quiet: bool = False
    server_log: IO[bytes] | None = None
    stderr: IO[bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    bearer_token: str | None = None
    #: "auto", "http" (Streamable HTTP only) or "sse" (legacy HTTP+SSE only).
    transport: str = "auto"
    insecure: bool = False
    max_message_bytes: int | None = None
    #: Auth behaviour: "interactive", "stored-only" (never prompt) or "none".
    auth: str = "interactive"
    #: Extra settings for HTTP transports and auth (client id, scopes, ...).
    extra: dict[str, Any] = field(default_factory=dict)


def is_url(target: str) -> bool:
    return target.startswith(("http://", "https://"))


def _discovered(name: str) -> ServerEntry | None:
    """A server configured in another client (Claude, Cursor, VS Code...), if any."""
    try:
        from mcpcli import discovery
    except ImportError:  # pragma: no cover - discovery is part of the package
        return None
    return discovery.find(name)


def resolve_target(target: str | None, command: Sequence[str], config: Config) -> ServerEntry:
    """Turn the TARGET argument (or the `--` command) into a server entry."""
    if command:
        if target is not None:
            raise UsageError(
                "give either a TARGET or a server command after --, not both",
                hint="mcp tools list -- npx -y @modelcontextprotocol/server-everything",
            )
        return ServerEntry(name=command[0], command=command[0], args=list(command[1:]), source="argv")
    if target is None:
        raise UsageError(
            "no server given",
            hint="name a configured server, a URL or a tools.yaml file, or put a command after --",
        )
    if is_url(target):
        return ServerEntry(name=target, url=target, transport="http", source="argv")
    entry = config.get(target)
    if entry is not None:
        return entry
    if target.endswith(YAML_SUFFIXES) or (os.sep in target and os.path.isfile(target)):
        if not os.path.isfile(target):
            raise ConfigError(f"no such file: {target}")
        return ServerEntry(name=target, transport="yaml", path=target, source="argv")
    found = _discovered(target)
    if found is not None:
        return found
    known = config.names()
    hint = (
        "configured servers: " + ", ".join(sorted(known))
        if known
        else "add one with `mcp servers add NAME -- COMMAND...` or `mcp servers add NAME URL`"
    )
    raise UsageError(f"unknown server {target!r}", hint=hint)


def open_transport(entry: ServerEntry, options: ConnectOptions) -> Transport:
    """Build the transport for a (resolved) server entry."""
    entry = entry.resolved()
    if entry.transport == "stdio":
        from mcpcli.transports._spawn import UnsetVariable, launch
        from mcpcli.transports.stdio import MAX_MESSAGE_BYTES, StdioTransport

        assert entry.command is not None
        try:
            spec = launch(entry.command, entry.args, entry.env, entry.cwd,
                          passed=options.env, cwd_option=options.cwd)
        except UnsetVariable as exc:
            raise UsageError(str(exc)) from None
        return StdioTransport(
            spec,
            stderr=options.stderr,
            server_log=options.server_log,
            quiet=options.quiet,
            max_message_bytes=options.max_message_bytes or MAX_MESSAGE_BYTES,
        )
    if entry.transport in ("http", "sse"):
        from mcpcli.transports.http import open_http_transport

        return open_http_transport(entry, options)
    if entry.transport == "yaml":
        from mcpcli.serve import in_process_transport

        assert entry.path is not None
        return in_process_transport(entry.path)
    raise ConfigError(f"server {entry.name!r}: unknown transport {entry.transport!r}")


@asynccontextmanager
async def connect(
    entry: ServerEntry, options: ConnectOptions, client_options: ClientOptions
) -> AsyncIterator[Client]:
    """A connected, negotiated client for `entry`."""
    transport = open_transport(entry, options)
    async with Client(transport, client_options) as client:
        yield client
