"""The Streamable HTTP client's per-call path, as a gateway relays calls over it: a request
runs in a plain event-loop task of the transport's own (`jobs.JobSet`), and its answer is
read from the keep-alive connection without copies it does not need."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from httpfake import FakeHTTP, legacy_mcp

from mcpcli.client import Client, ClientOptions
from mcpcli.errors import TransportError
from mcpcli.transports.http import HttpConnection
from mcpcli.transports.streamable_http import StreamableHttpTransport


def test_a_bug_in_a_requests_task_fails_that_request_and_the_connection_goes_on(
    fake: Callable[..., FakeHTTP], monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = fake(legacy_mcp())
    exchange = StreamableHttpTransport._exchange
    broken = {"left": 1}

    async def flaky(self: StreamableHttpTransport, request: Any, extra: Any) -> None:
        if request.method == "tools/call" and broken["left"]:
            broken["left"] -= 1
            raise RuntimeError("a bug")
        await exchange(self, request, extra)

    monkeypatch.setattr(StreamableHttpTransport, "_exchange", flaky)

    async def go() -> None:
        transport = StreamableHttpTransport(HttpConnection(server.url, auth=None), sse_fallback=False)
        async with Client(transport, ClientOptions(protocol="2025-11-25")) as client:
            with anyio.fail_after(10), pytest.raises(TransportError, match="sending tools/call failed: RuntimeError: a bug"):
                await client.call_tool("echo", {"message": "x"})
            result = await client.call_tool("echo", {"message": "y"})
            assert "y" in result["content"][0]["text"]

    anyio.run(go)


class Pieces:
    """A connection that hands out the given pieces, then the end of the stream."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = list(pieces)

    async def receive(self, size: int) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""


PRIMING = b"id: 1\ndata: \n\n"
EVENT = b'event: message\nid: 2\ndata: {"jsonrpc":"2.0","id":5,"result":{}}\n\n'
CHUNKED = (b"%x\r\n%s\r\n" % (len(PRIMING), PRIMING) + b"%x;ext=1\r\n%s\r\n" % (len(EVENT), EVENT)
           + b"0\r\nX-Trailer: a\r\n\r\n")


def body_of(pieces: list[bytes], *, stop_after: int | None = None) -> tuple[bytes, Any, Any]:
    from mcpcli.transports import _http1

    reader = _http1._Reader(Pieces(pieces), "http://x/mcp")  # type: ignore[arg-type]
    stream = _http1.PlainStream(200, [], "http://x/mcp", reader, "chunked", 0)

    async def go() -> bytes:
        got = bytearray()
        async for chunk in stream.chunks():
            assert chunk
            got += chunk
            if stop_after is not None and len(got) >= stop_after:
                break
        await stream.finish()
        return bytes(got)

    return anyio.run(go), stream, reader


@pytest.mark.parametrize("split", range(1, len(CHUNKED)))
def test_a_chunked_answer_split_anywhere_gives_the_same_body_and_ends_the_response(split: int) -> None:
    body, stream, reader = body_of([CHUNKED[:split], CHUNKED[split:]])
    assert body == PRIMING + EVENT
    assert stream.done and not reader.buffer  # the connection may carry the next request


def test_a_chunked_answer_in_one_read_is_one_piece() -> None:
    pieces: list[bytes] = []

    async def go() -> None:
        from mcpcli.transports import _http1

        reader = _http1._Reader(Pieces([CHUNKED]), "http://x/mcp")  # type: ignore[arg-type]
        stream = _http1.PlainStream(200, [], "http://x/mcp", reader, "chunked", 0)
        pieces.extend([chunk async for chunk in stream.chunks()])
        assert stream.done

    anyio.run(go)
    assert pieces == [PRIMING + EVENT]


def test_a_reader_that_stops_at_the_answer_leaves_the_end_to_finish() -> None:
    # As a Streamable HTTP reader does: it stops at the event; `finish` reads the end,
    # which comes in a read of its own.
    cut = CHUNKED.index(b"0\r\nX-Trailer")
    body, stream, reader = body_of([CHUNKED[:cut], CHUNKED[cut:]], stop_after=len(PRIMING + EVENT))
    assert body == PRIMING + EVENT
    assert stream.done and not reader.buffer


@pytest.mark.parametrize(("pieces", "message"), [
    ([CHUNKED[:30]], "the connection broke mid-chunk"),
    ([CHUNKED[:len(CHUNKED) - 4]], "the connection broke: the server closed it mid-response"),
    ([b"zz\r\n"], "malformed chunked encoding"),
    ([b"-5\r\nhello\r\n"], "malformed chunked encoding"),
    ([b"5\r\nhello" + b"x" * 40 + b"\r\n"], "malformed chunked encoding"),
    ([b"5" * 2000], "malformed chunked encoding"),
])
def test_a_broken_chunked_body_is_a_transport_error(pieces: list[bytes], message: str) -> None:
    from mcpcli.transports import _http1

    reader = _http1._Reader(Pieces(pieces), "http://x/mcp")  # type: ignore[arg-type]
    stream = _http1.PlainStream(200, [], "http://x/mcp", reader, "chunked", 0)

    async def go() -> None:
        async for _ in stream.chunks():
            pass

    with pytest.raises(TransportError, match=message):
        anyio.run(go)
    assert not stream.done


@pytest.mark.parametrize("header", [{"X-Note": "a\r\nX-Evil: b"}, {"X-Note\n": "a"}, {"X-Note": "a\rb"}])
def test_a_header_with_a_line_break_is_refused_before_sending(header: dict[str, str]) -> None:
    from mcpcli.transports._http1 import PlainClient

    async def go() -> None:
        client = PlainClient(headers={}, connect_timeout=5)
        async with client.open("POST", "http://127.0.0.1:9/mcp", headers=header, content=b"{}",
                               display_url="http://127.0.0.1:9/mcp"):
            raise AssertionError("sent")

    with pytest.raises(TransportError, match="refusing to send an HTTP header containing a line break"):
        anyio.run(go)
