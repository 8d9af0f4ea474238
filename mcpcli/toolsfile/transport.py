"""A tools.yaml file as a client transport: served in this process over memory streams."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from mcpcli.transports import Transport

if TYPE_CHECKING:
    from mcpcli.toolsfile.backend import ToolsBackend
    from mcpcli.transports import Streams

__all__ = ["YamlTransport"]


class YamlTransport(Transport):
    """A client transport that serves a tools.yaml file in this process."""

    name = "in-process"

    def __init__(self, backend: ToolsBackend) -> None:
        self.backend = backend

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[Streams]:
        from mcpcli.server import Server

        server = Server(self.backend)
        try:
            async with server.transport().connect() as streams:
                yield streams
        finally:
            self.backend.close()
