"""DaemonTransport on its own, against a scripted socket peer: what it sends on attach, the
traits it takes from the session's era, and the daemon's errors as typed errors."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpcli import localsocket
from mcpcli.client import Client, ClientOptions
from mcpcli.core import localrpc as protocol
from mcpcli.core.protocol import LATEST_MODERN, SERVER_INFO_KEY
from mcpcli.errors import ConnectionClosed, RPCError, TransportError, UsageError
from mcpcli.transports.daemon import DaemonTransport

pytestmark = pytest.mark.anyio

Script = Callable[[socket.socket, localsocket.LineReader, list[dict[str, Any]]], None]


@pytest.fixture
def peer(tmp_path: Path) -> Iterator[Callable[[Script], tuple[Path, list[dict[str, Any]]]]]:
    """A one-connection unix socket peer running `script`; yields (socket path, lines it read)."""
    threads: list[threading.Thread] = []
    listeners: list[socket.socket] = []

    def start(script: Script) -> tuple[Path, list[dict[str, Any]]]:
        path = tmp_path / "d.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.listen(1)
        listeners.append(listener)
        seen: list[dict[str, Any]] = []

        def serve() -> None:
            conn, _ = listener.accept()
            with conn:
                script(conn, localsocket.LineReader(conn), seen)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        threads.append(thread)
        return path, seen

    yield start
    for listener in listeners:
        listener.close()
    for thread in threads:
        thread.join(10)


def modern_session(conn: socket.socket, reader: localsocket.LineReader, seen: list[dict[str, Any]]) -> None:
    """A 2026-07-28 session: attach, then server/discover and tools/list answered."""
    while (message := reader.read()) is not None:
        seen.append(message)
        if message.get("op") == "attach":
            localsocket.send(conn, protocol.ok(session={"name": "m", "era": "modern", "target": "x"}))
        elif message.get("method") == "server/discover":
            localsocket.send(conn, {"jsonrpc": "2.0", "id": message["id"], "result": {
                "supportedVersions": [LATEST_MODERN], "capabilities": {"tools": {}},
                "_meta": {SERVER_INFO_KEY: {"name": "modern-one", "version": "1"}}}})
        elif message.get("method") == "tools/list":
            localsocket.send(conn, {"jsonrpc": "2.0", "id": message["id"], "result": {
                "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}})


async def test_a_modern_session_is_discovered_not_initialized(peer: Any) -> None:
    path, seen = peer(modern_session)
    transport = DaemonTransport("m", path)
    async with Client(transport, ClientOptions(timeout=10)) as client:
        assert (client.era, client.server_info["name"]) == ("modern", "modern-one")
        assert [t["name"] for t in (await client.list_tools())["tools"]] == ["t"]
    assert seen[0] == {"mcpcli": 1, "op": "attach", "name": "m"}
    assert [m.get("method") for m in seen[1:]] == ["server/discover", "tools/list"]
    assert transport.traits.legacy_only is False and transport.traits.probe_silence_is_legacy is False
    assert transport.describe() == "@m (x)"


@pytest.mark.parametrize(
    ("error", "expected", "exit_code"),
    [
        (protocol.error("session 'm' has exited; its stderr says: boom",
                        hint="mcp session restart m"), TransportError, 4),
        (protocol.error("bad", kind="usage"), UsageError, 2),
        (protocol.error("Unknown resource (code -32002)", kind="rpc", code=-32002), RPCError, 5),
    ],
)
async def test_the_daemon_s_attach_error_is_the_typed_error(
    peer: Any, error: dict[str, Any], expected: type[Exception], exit_code: int
) -> None:
    def refuse(conn: socket.socket, reader: localsocket.LineReader, seen: list[dict[str, Any]]) -> None:
        seen.append(reader.read() or {})
        localsocket.send(conn, error)

    path, _ = peer(refuse)
    with pytest.raises(expected) as caught:
        async with Client(DaemonTransport("m", path), ClientOptions(timeout=10)):
            pass
    assert int(caught.value.exit_code) == exit_code  # type: ignore[attr-defined]
    assert caught.value.hint == error["error"]["hint"]  # type: ignore[attr-defined]


async def test_a_daemon_that_hangs_up_is_connection_closed(peer: Any) -> None:
    def hang_up(conn: socket.socket, reader: localsocket.LineReader, seen: list[dict[str, Any]]) -> None:
        reader.read()

    path, _ = peer(hang_up)
    with pytest.raises(ConnectionClosed, match="closed the connection without answering"):
        async with Client(DaemonTransport("m", path), ClientOptions(timeout=10)):
            pass


async def test_a_garbage_answer_is_a_protocol_error(peer: Any) -> None:
    def garbage(conn: socket.socket, reader: localsocket.LineReader, seen: list[dict[str, Any]]) -> None:
        reader.read()
        conn.sendall(b"this is not json\n")

    path, _ = peer(garbage)
    with pytest.raises(TransportError, match="bad answer"):
        async with Client(DaemonTransport("m", path), ClientOptions(timeout=10)):
            pass


async def test_no_socket_means_no_session(tmp_path: Path) -> None:
    with pytest.raises(TransportError, match="no session 'm'") as caught:
        async with Client(DaemonTransport("m", tmp_path / "none.sock")):
            pass
    assert caught.value.hint == "mcp session open m"
