"""Nested gateways: a tools.yaml upstream that has `servers:` of its own.

Such a file is served in-process as a gateway of its own: a `GatewayBackend` over
its `servers:` (their filters and prefixes applied inside) and its own tools,
resources and prompts, behind a `Server` that the outer link talks to over memory
streams. The outer entry's filter and prefix apply on top, to the names the inner
gateway serves. The inner upstreams live exactly as long as that in-process
connection: they start lazily (or at once with `eager`), are restarted by their
own links, and stop when the outer link drops the connection (the outer gateway
stopping, or a restart).

Files may include each other, so every level carries the chain of files above it
(`GatewayOptions.chain`, real paths): a file already in the chain is a cycle, and a
chain longer than `MAX_NESTING` is refused, both at start (`mcpcli.gateway.check`,
at the `target:` that closes the cycle) and again here when a level connects (the
files may have changed since).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

from mcpcli.errors import ConfigError
from mcpcli.transports import Transport

from .options import GatewayOptions

if TYPE_CHECKING:
    from mcpcli.server.backend import Backend
    from mcpcli.toolsfile.model import ToolsFile, Upstream
    from mcpcli.toolsfile.watchdog import Watchdog
    from mcpcli.transports import Streams

__all__ = ["MAX_NESTING", "NestedTransport", "NestingError", "has_own_content", "inner_options", "nested_config"]

#: How a gateway is made (`GatewayBackend`, handed in: it makes the links that make us).
MakeGateway = Callable[..., AbstractAsyncContextManager[Any]]

#: How many tools.yaml files may be stacked, the served one (or `--proxy FILE`) included.
MAX_NESTING = 8


class NestingError(ConfigError):
    """A tools.yaml upstream would include a file already above it, or nest too deep."""


def nested_config(path: str, chain: tuple[str, ...]) -> tuple[ToolsFile, tuple[str, ...]]:
    """Load the tools.yaml at `path`, included below the files of `chain` (real paths, outermost
    first): its `ToolsFile` and the chain its own upstreams are below. Raises `NestingError` for
    a cycle or a chain too long, `ConfigError` (`ToolsFileError`) for a file that does not load."""
    from mcpcli.toolsfile.load import load_config

    real = os.path.realpath(path)
    if real in chain:
        loop = " -> ".join((*chain[chain.index(real):], real))
        raise NestingError(f"a cycle of tools.yaml files: {loop}",
                           hint="a tools.yaml may not be its own upstream, directly or through others")
    if len(chain) >= MAX_NESTING:
        raise NestingError(f"{path}: tools.yaml files nest more than {MAX_NESTING} deep here",
                           hint="serve the deepest ones on their own and reach them by URL or command")
    return load_config(path), (*chain, real)


def has_own_content(config: ToolsFile) -> bool:
    """Whether the file serves tools, resources or prompts of its own besides its upstreams."""
    return bool(config.tools or config.resources or config.prompts)


def _prefixed(sink: Callable[[str], None] | None, name: str) -> Callable[[str], None] | None:
    if sink is None:
        return None
    return lambda line: sink(f"upstream {name}: {line}")


def inner_options(options: GatewayOptions, name: str, env: dict[str, str]) -> GatewayOptions:
    """The options of the gateway one level down, behind the outer upstream `name`: its
    reports name that upstream, and its stdio upstreams get the outer entry's `env` too."""
    connect = options.connect
    if connect is not None and env:
        connect = dataclasses.replace(connect, env={**connect.env, **env})
    elif env:
        from mcpcli.connect import ConnectOptions

        connect = ConnectOptions(env=dict(env))
    return dataclasses.replace(options, connect=connect, log=_prefixed(options.log, name),
                               warn=_prefixed(options.warn, name))


class NestedTransport(Transport):
    """A tools.yaml upstream served in this process, with its own `servers:` behind it.

    Connecting loads the file (checking the chain of files above it), starts the inner
    gateway, and serves it over memory streams; leaving stops every inner upstream.
    A file without `servers:` is served by its own backend alone."""

    name = "in-process"

    def __init__(self, path: str, options: GatewayOptions, *, gateway: MakeGateway,
                 watchdog: Watchdog | None = None, config: ToolsFile | None = None) -> None:
        self.path = path
        #: Loaded already (checked against `options.chain`): used for the first connection.
        self._config = config
        self._options = options
        self._gateway = gateway
        self._watchdog = watchdog
        #: The inner gateway while connected (None: not connected, or no `servers:`).
        self.backend: Any = None

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Streams]:
        from mcpcli.server import Server
        from mcpcli.toolsfile.backend import ToolsBackend

        loaded, self._config = self._config, None
        if loaded is not None:
            config, chain = loaded, (*self._options.chain, os.path.realpath(self.path))
        else:
            config, chain = nested_config(self.path, self._options.chain)
        options = dataclasses.replace(self._options, chain=chain)
        local = ToolsBackend(self.path, log=options.log, warn=options.warn, config=config)
        try:
            if not config.servers:
                async with Server(local).transport().connect() as streams:
                    yield streams
                return
            merged: Backend | None = local if has_own_content(config) else None
            servers: Sequence[Upstream] = config.servers
            async with (
                self._gateway(servers, local=merged, options=options, watchdog=self._watchdog,
                              identity=config.server) as backend,
                Server(backend).transport().connect() as streams,
            ):
                self.backend = backend
                yield streams
        finally:
            self.backend = None
            local.close()
