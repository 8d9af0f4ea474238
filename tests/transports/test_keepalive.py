"""Plain http:// requests reuse keep-alive connections (`transports._http1`): a gateway
relays every call to its upstream over them. A connection is reused only when its last
response was read to the end; one the server closed while idle gets the request again on
a new connection."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import anyio
import pytest

from mcpcli.errors import TransportError
from mcpcli.transports import _http1
from mcpcli.transports.http_io import HttpClient

pytestmark = pytest.mark.anyio

SSE_BODY = b"event: message\ndata: {}\n\n"


class Server:
    """An asyncio HTTP/1.1 server: `answer(n, request_head)` gives the raw bytes to send
    back for the n-th request of a connection (None: close it without answering)."""

    def __init__(self, answer: Callable[[int, bytes], bytes | None]) -> None:
        self.answer = answer
        self.connections = 0
        self.requests: list[bytes] = []
        self.closed = asyncio.Event()  # a connection saw the client's end

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        n = 0
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    self.closed.set()
                    return
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                self.requests.append(head)
                n += 1
                reply = self.answer(n, head)
                if reply is None:
                    return
                writer.write(reply)
                await writer.drain()
        finally:
            writer.close()


async def listen(server: Server) -> tuple[asyncio.base_events.Server, str]:
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    return listener, f"http://127.0.0.1:{port}/mcp"


def json_reply(extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n" + extra + b"\r\n{}"


def sse_reply() -> bytes:
    """A chunked SSE answer: the event, then the end of the body."""
    chunk = b"%x\r\n%s\r\n" % (len(SSE_BODY), SSE_BODY)
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            + chunk + b"0\r\n\r\n")


async def post(client: HttpClient, url: str, *, whole: bool = True) -> bytes:
    async with client.open("POST", url, content=b"{}", headers={"Content-Type": "application/json"}) as response:
        assert response.status == 200
        if whole:
            return await response.read(1024)
        async for chunk in response.chunks():  # as a Streamable HTTP reader: up to the answer
            return chunk
    raise AssertionError("no body")


async def test_requests_share_one_connection() -> None:
    server = Server(lambda n, head: json_reply() if n % 2 else sse_reply())
    listener, url = await listen(server)
    async with listener:
        client = HttpClient(url=url)
        try:
            for _ in range(2):
                assert await post(client, url) == b"{}"
                # An SSE answer read up to its event: the rest (the end) is read for it.
                assert await post(client, url, whole=False) == SSE_BODY
        finally:
            await client.aclose()
        await asyncio.wait_for(server.closed.wait(), 10)  # aclose ended the idle one
    assert server.connections == 1
    assert len(server.requests) == 4
    assert all(b"connection: close" not in head.lower() for head in server.requests)


async def test_a_connection_the_server_will_close_is_not_reused() -> None:
    server = Server(lambda n, head: json_reply(b"Connection: close\r\n"))
    listener, url = await listen(server)
    async with listener:
        client = HttpClient(url=url)
        try:
            for _ in range(2):
                await post(client, url)
        finally:
            await client.aclose()
    assert server.connections == 2


async def test_a_body_left_unread_closes_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_http1, "FINISH_SECONDS", 0.05)
    held = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"%x\r\n%s\r\n" % (len(SSE_BODY), SSE_BODY))  # and the stream stays open
    server = Server(lambda n, head: held)
    listener, url = await listen(server)
    async with listener:
        client = HttpClient(url=url)
        try:
            for _ in range(2):
                assert await post(client, url, whole=False) == SSE_BODY
        finally:
            await client.aclose()
    assert server.connections == 2


async def test_an_idle_connection_the_server_dropped_gets_the_request_again() -> None:
    # The server reads the second request of a connection and closes it unanswered, as
    # one closing an idle connection just as the request arrives looks to the client.
    server = Server(lambda n, head: json_reply() if n == 1 else None)
    listener, url = await listen(server)
    async with listener:
        client = HttpClient(url=url)
        try:
            assert await post(client, url) == b"{}"
            assert await post(client, url) == b"{}"
        finally:
            await client.aclose()
    assert server.connections == 2
    assert len(server.requests) == 3


async def test_a_new_connection_closed_unanswered_is_an_error() -> None:
    server = Server(lambda n, head: None)
    listener, url = await listen(server)
    async with listener:
        client = HttpClient(url=url)
        try:
            with pytest.raises(TransportError, match="the connection broke"):
                await post(client, url)
        finally:
            await client.aclose()
    assert server.connections == 1


async def test_idle_connections_past_their_time_are_not_used(
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server(lambda n, head: json_reply())
    listener, url = await listen(server)
    async with listener:
        client = HttpClient(url=url)
        try:
            await post(client, url)
            monkeypatch.setattr(_http1, "IDLE_SECONDS", -1.0)  # every idle one is too old now
            await post(client, url)
        finally:
            await client.aclose()
        await anyio.sleep(0)
    assert server.connections == 2
