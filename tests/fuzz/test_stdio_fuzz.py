"""stdio framing on both sides: random bytes in random chunks.

The server's reader (`mcpcli.server.stdio._Reader`) and the client's stdout reader
(`mcpcli.transports.stdio._ServerReader`) are driven with scripted chunks, no process.
Properties: they never raise; every non-blank line becomes exactly one message
or one error (the server answers it; the client reports a `ProtocolError`);
everything the server would write back can be encoded; and the outcome does not
depend on how the bytes were split into reads.
"""

from __future__ import annotations

import math
from typing import Any

import anyio
from hypothesis import example, given
from hypothesis import strategies as st

from fuzz.strategies import NASTY_JSON, chunked, dumps, messages, mutated
from mcpcli.core import jsonrpc
from mcpcli.errors import MessageTooLarge, ProtocolError, ServerExited
from mcpcli.server.stdio import _Reader
from mcpcli.transports import Envelope
from mcpcli.transports.stdio import StdioTransport, _ServerReader


class ScriptedIO:
    """Stands in for a pipe: hands out the given chunks, then end of file."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = list(chunks)

    async def read(self) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""


class ExitedProcess:
    """The server process, already gone (so the pump never waits or signals)."""

    pid = -1
    returncode = 0


def server_outcome(chunks: list[bytes], cap: int = 1 << 20) -> tuple[list[Any], list[Any]]:
    """(messages handed to the server, error replies written back) for this input."""

    async def run() -> tuple[list[Any], list[Any]]:
        outbox_send, outbox_recv = anyio.create_memory_object_stream[Envelope](math.inf)
        reader = _Reader(ScriptedIO(chunks), outbox_send, cap)  # type: ignore[arg-type]
        inbound = [item.message async for item in reader]
        outbox_send.close()
        async with outbox_recv:
            replies = [item.message async for item in outbox_recv]
        return inbound, replies

    return anyio.run(run)


def client_outcome(chunks: list[bytes], cap: int = 1 << 20) -> list[Any]:
    """What the client's stdout reader delivers for this input, as comparable values."""
    transport = StdioTransport("unused", max_message_bytes=cap)
    transport.process = ExitedProcess()  # type: ignore[assignment]
    transport._signal_group = lambda sig: False  # type: ignore[method-assign]

    async def run() -> list[Any]:
        reader = _ServerReader(transport, ScriptedIO(chunks))  # type: ignore[arg-type]
        items = [item async for item in reader]
        out: list[Any] = []
        for item in items:
            if isinstance(item, Envelope):
                out.append(item.message)
            else:
                assert isinstance(item, (ProtocolError, MessageTooLarge, ServerExited)), item
                out.append((type(item).__name__, str(item)))
        return out

    return anyio.run(run)


def nonblank_lines(data: bytes) -> int:
    return sum(1 for line in data.split(b"\n") if line.strip())


def check_replies(replies: list[Any]) -> None:
    for reply in replies:
        assert isinstance(reply, jsonrpc.ErrorResponse)
        assert reply.error.code in (jsonrpc.PARSE_ERROR, jsonrpc.INVALID_REQUEST)
        jsonrpc.encode(reply).decode("utf-8")


stream_bytes = st.one_of(
    st.binary(max_size=300),
    st.lists(messages().map(dumps), max_size=4).map(lambda ms: b"\n".join(ms)),
    st.lists(st.binary(max_size=40) | messages().map(dumps), max_size=6).map(b"\r\n".join),
    st.sampled_from(NASTY_JSON).map(lambda doc: doc + b"\n" + dumps({"jsonrpc": "2.0", "method": "x"})),
)


@given(st.data(), stream_bytes)
@example(None, b'{"jsonrpc":"1.0","id":"\\ud800"}\n')  # the -32600 reply names an unencodable id
def test_server_reader(data: st.DataObject | None, stream: bytes) -> None:
    inbound, replies = server_outcome([stream])
    check_replies(replies)
    for message in inbound:
        jsonrpc.encode(message).decode("utf-8")
    assert len(inbound) + len(replies) == nonblank_lines(stream)
    if data is not None:
        assert server_outcome(data.draw(chunked(stream))) == (inbound, replies)


@given(st.data(), messages())
def test_server_reader_mutations(data: st.DataObject, msg: dict[str, Any]) -> None:
    stream = data.draw(mutated(dumps(msg) + b"\n" + dumps(msg)))
    inbound, replies = server_outcome(data.draw(chunked(stream)))
    check_replies(replies)
    assert len(inbound) + len(replies) == nonblank_lines(stream)


@given(st.data(), st.binary(max_size=400), st.integers(min_value=1, max_value=64))
def test_server_reader_small_cap(data: st.DataObject, stream: bytes, cap: int) -> None:
    """Oversized lines get -32600 and are skipped; nothing else goes wrong."""
    inbound, replies = server_outcome(data.draw(chunked(stream)), cap=cap)
    check_replies(replies)
    assert len(inbound) + len(replies) <= nonblank_lines(stream) + 1


@given(st.data(), stream_bytes)
def test_client_stdout(data: st.DataObject, stream: bytes) -> None:
    whole = client_outcome([stream])
    assert whole[-1][0] in ("ServerExited", "ProtocolError")  # the pump ends with an error
    for item in whole:
        if not isinstance(item, tuple):
            jsonrpc.encode(item).decode("utf-8")
    assert client_outcome(data.draw(chunked(stream))) == whole


@given(st.data(), st.binary(max_size=400), st.integers(min_value=1, max_value=64))
def test_client_stdout_small_cap(data: st.DataObject, stream: bytes, cap: int) -> None:
    items = client_outcome(data.draw(chunked(stream)), cap=cap)
    assert items[-1][0] in ("ServerExited", "ProtocolError")
