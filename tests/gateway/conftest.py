"""Fixtures for the gateway tests: a gateway in front of demo upstreams, and our client to it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpcli.client import Client, ClientFeatures, ClientOptions
from mcpcli.gateway import GatewayBackend, GatewayOptions
from mcpcli.server import Server
from mcpcli.toolsfile.model import Upstream

UPSTREAM = str(Path(__file__).parent / "gateway_upstream.py")
JSON = dict[str, Any]


def demo(name: str = "demo", **fields: Any) -> Upstream:
    """The demo backend over stdio as an upstream named `name`."""
    return Upstream(name=name, command=(sys.executable, UPSTREAM), **fields)


async def answer_elicit(params: JSON) -> JSON:
    return {"action": "accept", "content": {"name": "Ada"}}


async def answer_sample(params: JSON) -> JSON:
    return {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}


def features() -> ClientFeatures:
    return ClientFeatures(
        elicit=answer_elicit, sample=answer_sample, roots=[{"uri": "file:///tmp/r1", "name": "r1"}]
    )


Gateway = Callable[..., AbstractAsyncContextManager[Client]]


@pytest.fixture(autouse=True)
def _no_roots_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nobody here asks for roots right after the handshake: skip the client's wait for it."""
    import mcpcli.client

    monkeypatch.setattr(mcpcli.client, "ROOTS_WAIT", 0.0)


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


HTTP_DIR = Path(__file__).resolve().parent.parent / "http"


@contextmanager
def listening(argv: list[str], port: int, env: dict[str, str] | None = None,
              what: str = "server") -> Iterator[str]:
    """Run `argv` (in its own process group) until it listens on `port`; yield its /mcp URL.
    The group is ended afterwards, TERM then KILL."""
    from helpers import wait_listening

    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ, **(env or {})},
                            start_new_session=True)
    try:
        wait_listening(port, proc, what)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        assert proc.stderr is not None
        proc.stderr.close()


def serve_http(*args: str, port: int) -> list[str]:
    """argv of `mcp serve --http 127.0.0.1:PORT ARGS...` (a real process)."""
    return [sys.executable, "-m", "mcpcli", "serve", "--http", f"127.0.0.1:{port}", *args]
