"""The contract every client transport keeps: the same server (tests/contracts/contract.yaml,
served by `mcp serve`), reached over each transport, in both eras, behaves the same.

Transports: in-memory (the tools.yaml served in this process), stdio (`mcp serve FILE` as a
child), Streamable HTTP and legacy HTTP+SSE (`mcp serve FILE --http`), and the session daemon
(`@NAME`, over its unix socket). What each must do is what a client relies on: the
handshake, requests and their results, tool errors as results, concurrent requests each
answered with its own result, progress that reaches the caller, a server's request for
input answered by the client's features, a server's log messages delivered, a large
message intact, and a cancelled request that leaves the connection usable.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import free_port, listening, mcp_in

from mcpcli.client import Client, ClientFeatures, ClientOptions
from mcpcli.config import ServerEntry
from mcpcli.connect import ConnectOptions, connect
from mcpcli.core.protocol import LATEST_LEGACY, LATEST_MODERN
from mcpcli.errors import RPCError

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

CONTRACT = Path(__file__).with_name("contract.yaml")
SERVE = [sys.executable, "-m", "mcpcli", "serve", str(CONTRACT)]
TRANSPORTS = ["memory", "stdio", "streamable-http", "sse", "daemon"]
JSON = dict[str, Any]


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    with listening([*SERVE, "--http", str(port), "--no-auth", "--quiet"], port) as url:
        yield url


@pytest.fixture
def daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A session named `contract`, held by a real daemon in a private run directory;
    closed, and the daemon gone, afterwards."""
    from sessions.util import daemon_pid, stop

    run = tmp_path / "run"
    monkeypatch.setenv("MCPCLI_RUNTIME_DIR", str(run))
    monkeypatch.delenv("MCPCLI_DAEMON_ARGV", raising=False)
    opened = mcp_in("session", "open", "contract", "--", *SERVE)
    assert opened.code == 0, opened
    try:
        yield "@contract"
    finally:
        pid = daemon_pid(run / "daemon.sock")
        mcp_in("session", "close", "--all")
        if pid is not None:
            stop(pid)


def _entry(kind: str, request: pytest.FixtureRequest) -> ServerEntry:
    if kind == "memory":
        return ServerEntry(name="contract", transport="yaml", path=str(CONTRACT))
    if kind == "stdio":
        return ServerEntry(name="contract", command=SERVE[0], args=SERVE[1:])
    if kind in ("streamable-http", "sse"):
        url = request.getfixturevalue("http_url")
        return ServerEntry(name="contract", url=url, transport="http" if kind == "streamable-http" else "sse")
    from mcpcli.config import Config
    from mcpcli.targets import resolve_target

    return resolve_target(request.getfixturevalue("daemon"), [], Config())


@asynccontextmanager
async def _client(entry: ServerEntry, kind: str, protocol: str | None = None, **options: Any) -> AsyncIterator[Client]:
    connect_options = ConnectOptions(auth="none", quiet=True, transport="sse" if kind == "sse" else "auto")
    async with connect(entry, connect_options, ClientOptions(protocol=protocol, **options)) as client:
        yield client


def _eras(kind: str) -> list[str | None]:
    # HTTP+SSE (2024-11-05) predates the modern era; a daemon session keeps the era it opened with.
    return [None] if kind in ("sse", "daemon") else [LATEST_LEGACY, LATEST_MODERN]


def _text(result: JSON) -> str:
    return "".join(c.get("text", "") for c in result.get("content", []) if isinstance(c, dict))


@pytest.fixture(params=TRANSPORTS)
def kind(request: pytest.FixtureRequest, http_url: str) -> str:
    """Each transport in turn. The HTTP server is the module's, started before any test's
    process accounting begins (a fixture a test asks for on the way would count as its)."""
    return str(request.param)


async def test_requests_results_and_tool_errors(kind: str, request: pytest.FixtureRequest) -> None:
    entry = _entry(kind, request)
    for protocol in _eras(kind):
        async with _client(entry, kind, protocol) as client:
            if protocol is not None:
                assert client.protocol_version == protocol
            assert client.server_info["name"] == "contract"
            names = {t["name"] for t in (await client.list_tools())["tools"]}
            assert {"echo", "add", "fail", "progress", "ask", "log", "wait"} <= names
            assert _text(await client.call_tool("echo", {"message": "héllo ☃"})) == "héllo ☃"
            assert (await client.call_tool("add", {"a": 2, "b": 40}))["structuredContent"] == {"sum": 42}
            failed = await client.call_tool("fail", {})
            assert failed.get("isError") is True and "broken" in _text(failed)
            assert (await client.read_resource("contract://note"))["contents"][0]["text"] == "a note"
            got = await client.get_prompt("greet", {"who": "Ann"})
            assert got["messages"][0]["content"]["text"] == "Say hello to Ann."
            with pytest.raises(RPCError):
                await client.get_prompt("nosuch", {})


async def test_concurrent_requests_get_their_own_answers(kind: str, request: pytest.FixtureRequest) -> None:
    async with _client(_entry(kind, request), kind) as client:
        answers: dict[int, str] = {}

        async def one(n: int) -> None:
            answers[n] = _text(await client.call_tool("echo", {"message": f"m{n}"}))

        async with anyio.create_task_group() as tg:
            for n in range(12):
                tg.start_soon(one, n)
        assert answers == {n: f"m{n}" for n in range(12)}


async def test_progress_reaches_the_caller(kind: str, request: pytest.FixtureRequest) -> None:
    entry = _entry(kind, request)
    for protocol in _eras(kind):
        seen: list[float] = []
        async with _client(entry, kind, protocol) as client:
            result = await client.call_tool("progress", {}, on_progress=lambda p, seen=seen: seen.append(p["progress"]))
            assert _text(result).strip() == "done"
        assert seen == [1, 2]


async def test_a_servers_request_for_input_is_answered(kind: str, request: pytest.FixtureRequest) -> None:
    async def elicit(params: JSON) -> JSON:
        assert params["message"] == "Your name?"
        return {"action": "accept", "content": {"name": "Ann"}}

    entry = _entry(kind, request)
    for protocol in _eras(kind):
        async with _client(entry, kind, protocol, features=ClientFeatures(elicit=elicit)) as client:
            assert _text(await client.call_tool("ask", {})).strip() == "hello Ann"


async def test_log_messages_are_delivered(kind: str, request: pytest.FixtureRequest) -> None:
    entry = _entry(kind, request)
    for protocol in _eras(kind):
        notes: list[tuple[str, JSON]] = []
        async with _client(entry, kind, protocol, log_level="info",
                           on_notification=lambda m, p, notes=notes: notes.append((m, p))) as client:
            assert _text(await client.call_tool("log", {})).strip() == "done"
        logged = [p for m, p in notes if m == "notifications/message"]
        assert any(p.get("level") == "warning" and "careful" in json.dumps(p) for p in logged), notes


async def test_a_large_message_arrives_whole(kind: str, request: pytest.FixtureRequest) -> None:
    big = "x" * 100_000 + "☃"  # past a pipe's buffer; a single argv element takes at most 128 KiB
    async with _client(_entry(kind, request), kind) as client:
        assert _text(await client.call_tool("echo", {"message": big})) == big


async def test_a_cancelled_request_leaves_the_connection_usable(kind: str, request: pytest.FixtureRequest) -> None:
    async with _client(_entry(kind, request), kind) as client:
        with anyio.move_on_after(1.0) as scope:
            await client.call_tool("wait", {})
        assert scope.cancelled_caught
        assert _text(await client.call_tool("echo", {"message": "still here"})) == "still here"


def test_the_suite_covers_every_transport() -> None:
    """A new transport joins TRANSPORTS, or this fails: every `Transport` the package defines
    is one of those exercised here (the HTTP one twice: Streamable and legacy SSE)."""
    import importlib
    import pkgutil

    import mcpcli.transports as package
    from mcpcli.transports import Transport

    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"mcpcli.transports.{module.name}")

    def subclasses(cls: type) -> set[type]:
        return {sub for direct in cls.__subclasses__() for sub in {direct, *subclasses(direct)}}

    ours = {cls.__name__ for cls in subclasses(Transport) if cls.__module__.startswith("mcpcli.transports")}
    assert ours == {"InProcessTransport", "StdioTransport", "StreamableHttpTransport", "SseTransport",
                    "DaemonTransport"}, ours
