"""Fixtures for the gateway tests: a gateway in front of demo upstreams, and our client to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from gwkit import JSON, Gateway, features

from mcpcli.client import Client, ClientOptions
from mcpcli.gateway import GatewayBackend, GatewayOptions
from mcpcli.server import Server
from mcpcli.toolsfile.model import Upstream


@pytest.fixture(autouse=True)
def _no_roots_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nobody here asks for roots right after the handshake: skip the client's wait for it."""
    import mcpcli.client.client

    monkeypatch.setattr(mcpcli.client.client, "ROOTS_WAIT", 0.0)


@pytest.fixture
def gateway() -> Gateway:
    """`async with gateway(upstreams, protocol=..., upstream_protocol=...) as client`: a
    GatewayBackend served in-process, and our client (with every feature) connected to it."""

    @asynccontextmanager
    async def open_gateway(
        upstreams: list[Upstream],
        *,
        protocol: str | None = None,
        upstream_protocol: str | None = None,
        local: Any = None,
        eager: bool = False,
        notes: list[tuple[str, JSON]] | None = None,
        warn: Callable[[str], None] = lambda line: None,
        backoff: tuple[float, float] = (0.05, 0.2),
        list_wait: float = 5.0,
        **client_options: Any,
    ) -> AsyncIterator[Client]:
        options = GatewayOptions(eager=eager, protocol=upstream_protocol, backoff=backoff,
                                 list_wait=list_wait, log=lambda line: None, warn=warn)

        def note(method: str, params: JSON) -> None:
            if notes is not None:
                notes.append((method, params))

        with anyio.fail_after(30):
            async with GatewayBackend(upstreams, local=local, options=options) as backend:
                server = Server(backend)
                client_options.setdefault("features", features())
                opts = ClientOptions(protocol=protocol, on_notification=note, **client_options)
                async with Client(server.transport(), opts) as client:
                    client.backend = backend  # type: ignore[attr-defined]
                    yield client
    return open_gateway
