"""Helpers for the server runtime tests: in-memory clients and raw JSON-RPC sessions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from mcpcli.client import Client, ClientFeatures, ClientOptions
from mcpcli.core.protocol import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY
from mcpcli.rpc.peer import Peer
from mcpcli.server import Server
from mcpcli.transports.memory import memory_pair

JSON = dict[str, Any]

LEGACY = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]
ALL = ["2026-07-28", *LEGACY]


def modern_meta(caps: JSON | None = None, **extra: Any) -> JSON:
    meta: JSON = {
        PROTOCOL_VERSION_KEY: "2026-07-28",
        CLIENT_INFO_KEY: {"name": "test", "version": "0"},
        CLIENT_CAPABILITIES_KEY: caps if caps is not None else {},
    }
    meta.update(extra)
    return meta


async def answer_elicit(params: JSON) -> JSON:
    return {"action": "accept", "content": {"name": "Ada"}}


async def answer_sample(params: JSON) -> JSON:
    return {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}


def features(**kw: Any) -> ClientFeatures:
    base: dict[str, Any] = {
        "elicit": answer_elicit,
        "sample": answer_sample,
        "roots": [{"uri": "file:///tmp/r1", "name": "r1"}],
    }
    base.update(kw)
    return ClientFeatures(**base)


@asynccontextmanager
async def connect(
    server: Server, protocol: str | None = None, **options: Any
) -> AsyncIterator[Client]:
    options.setdefault("features", features())
    with anyio.fail_after(10):
        async with Client(server.transport(), ClientOptions(protocol=protocol, **options)) as client:
            yield client


@asynccontextmanager
async def raw(server: Server) -> AsyncIterator[Peer]:
    """A bare JSON-RPC session to the server (no handshake), for wire-level checks."""
    async with memory_pair() as (client_side, server_side), anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_side)
        async with Peer(client_side) as session:
            yield session
        tg.cancel_scope.cancel()
