"""The contract every server backend keeps: the tools file (`ToolsBackend`), the gateway
(`GatewayBackend` fronting that file over stdio) and a replay (`ReplayServer` answering
from a recording of the file) serve the same surface and the same answers, and refuse
what is not there with the same errors, in both eras.

Each is served by the same runtime (`mcpcli.server.Server`) over memory streams, so what
differs is only the backend.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers import mcp_in

from mcpcli.client import Client, ClientOptions
from mcpcli.core.protocol import LATEST_LEGACY, LATEST_MODERN
from mcpcli.errors import RPCError

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

HERE = Path(__file__).parent
CONTRACT = HERE / "contract.yaml"
GATEWAY = HERE / "gateway.yaml"
JSON = dict[str, Any]
#: What the contract asks, in order; the replay is recorded from exactly these.
CALLS: list[tuple[str, JSON]] = [
    ("tools/call", {"name": "echo", "arguments": {"message": "hi"}}),
    ("tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}}),
    ("tools/call", {"name": "fail", "arguments": {}}),
    ("resources/read", {"uri": "contract://note"}),
    ("prompts/get", {"name": "greet", "arguments": {"who": "Ann"}}),
]
ERAS = [LATEST_LEGACY, LATEST_MODERN]


def _tools_file() -> AbstractAsyncContextManager[Any]:
    from mcpcli.toolsfile import in_process_transport

    @asynccontextmanager
    async def serve() -> AsyncIterator[Any]:
        yield in_process_transport(CONTRACT)

    return serve()


@asynccontextmanager
async def _gateway() -> AsyncIterator[Any]:
    from mcpcli.gateway import GatewayOptions
    from mcpcli.gateway.serve_file import file_transport

    yield file_transport(str(GATEWAY), GatewayOptions())


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The contract's calls, recorded against the tools file in both eras (`--record`)."""
    path = tmp_path_factory.mktemp("replay") / "contract.ndjson"
    for protocol in ERAS:
        base = ["--protocol", protocol, "--record", str(path)]
        assert mcp_in("tools", "list", str(CONTRACT), *base).code == 0
        assert mcp_in("resources", "list", str(CONTRACT), *base).code == 0
        assert mcp_in("prompts", "list", str(CONTRACT), *base).code == 0
        assert mcp_in("tools", "call", str(CONTRACT), "echo", "-a", "message=hi", *base).code == 0
        assert mcp_in("tools", "call", str(CONTRACT), "add", "-a", "a=2", "-a", "b=40", *base).code == 0
        assert mcp_in("tools", "call", str(CONTRACT), "fail", *base).code == 1
        assert mcp_in("resources", "read", str(CONTRACT), "contract://note", *base).code == 0
        assert mcp_in("prompts", "get", str(CONTRACT), "greet", "-a", "who=Ann", *base).code == 0
    return path


def _replay(path: Path) -> Callable[[], AbstractAsyncContextManager[Any]]:
    @asynccontextmanager
    async def serve() -> AsyncIterator[Any]:
        from mcpcli.server.replay import ReplayServer, load_recording
        from mcpcli.transports.memory import InProcessTransport

        server = ReplayServer(load_recording(str(path)))
        transport = server.transport()
        assert isinstance(transport, InProcessTransport)
        yield transport

    return serve


@pytest.fixture(params=["tools-file", "gateway", "replay"])
def served(request: pytest.FixtureRequest, recording: Path, monkeypatch: pytest.MonkeyPatch,
           ) -> Callable[[], AbstractAsyncContextManager[Any]]:
    monkeypatch.setenv("PYTHON", sys.executable)
    kinds = {"tools-file": _tools_file, "gateway": _gateway, "replay": _replay(recording)}
    return kinds[str(request.param)]


@asynccontextmanager
async def _client(served: Callable[[], AbstractAsyncContextManager[Any]], protocol: str) -> AsyncIterator[Client]:
    async with served() as transport, Client(transport, ClientOptions(protocol=protocol)) as client:
        yield client


def _surface(listing: JSON, key: str) -> list[JSON]:
    return sorted(({k: v for k, v in item.items() if k != "_meta"} for item in listing[key]),
                  key=lambda item: str(item.get("name") or item.get("uri")))


def _plain(result: JSON) -> JSON:
    """A result without what depends on the era or the server instance (`_meta`, cache hints)."""
    return {k: v for k, v in result.items() if k not in ("_meta", "resultType", "ttlMs", "cacheScope")}


@pytest.mark.parametrize("protocol", ERAS)
async def test_the_same_surface_and_answers(served: Callable[[], AbstractAsyncContextManager[Any]],
                                            protocol: str) -> None:
    async with _client(_tools_file, protocol) as reference, _client(served, protocol) as client:
        assert client.protocol_version == protocol
        for lister, key in ((Client.list_tools, "tools"), (Client.list_resources, "resources"),
                            (Client.list_prompts, "prompts")):
            assert _surface(await lister(client), key) == _surface(await lister(reference), key)
        for method, params in CALLS:
            assert _plain(await client.request(method, params)) == _plain(await reference.request(method, params))


@pytest.mark.parametrize("protocol", ERAS)
async def test_what_is_not_there_is_refused_alike(served: Callable[[], AbstractAsyncContextManager[Any]],
                                                  protocol: str, request: pytest.FixtureRequest) -> None:
    if "replay" in request.node.name:
        pytest.skip("a replay answers only what it recorded; what it lacks is its own error (tests/record)")
    async with _client(served, protocol) as client:
        for method, params in (("prompts/get", {"name": "nosuch", "arguments": {}}),
                               ("resources/read", {"uri": "contract://nosuch"})):
            with pytest.raises(RPCError) as refused:
                await client.request(method, params)
            assert refused.value.code in (-32602, -32002), refused.value
        unknown = await _unknown_tool(client)
        assert unknown == -32602


async def _unknown_tool(client: Client) -> int | None:
    try:
        result = await client.request("tools/call", {"name": "nosuch", "arguments": {}})
    except RPCError as exc:
        return exc.code
    raise AssertionError(f"an unknown tool was answered: {result}")
