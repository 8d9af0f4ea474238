"""From a target on the command line to a connected `Client`.

A target is one of: a server name from the config (ours first, then the servers
other clients have configured); an `http(s)://` URL; a tools.yaml file, served
in-process; or, with no target, the server command given after `--`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import IO, Any

from mcpcli.client import Client, ClientOptions
from mcpcli.config import ServerEntry
from mcpcli.errors import ConfigError, UsageError
from mcpcli.targets import YAML_SUFFIXES, is_url, resolve_target
from mcpcli.transports import Transport

__all__ = ["YAML_SUFFIXES", "ConnectOptions", "connect", "is_url", "open_transport", "resolve_target"]


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
