"""The transport seam: how the client (and a served connection) reaches a peer.

A transport is given everything it needs when it is built, by `mcpcli.connect`
(the only place that knows config, CLI options and auth): a command line and
environment (stdio), or an `HttpConnection` that already carries the URL, the
headers, the authenticator and the limits (Streamable HTTP, HTTP+SSE); in-memory
transports get the coroutine that serves the other end.

`connect()` opens the connection and yields the session-facing pair `(read, write)`
(`ReadStream`, `WriteStream`: memory-object streams for the in-memory, HTTP+SSE and daemon
transports; stdio reads and writes its pipes with no task in between, see `lines`, and
Streamable HTTP hands requests and answers over without one, see `handover`):

* `read` yields `Envelope`s for messages that arrived, and `Exception`s for
  problems the session should report but survive (a garbage line on stdout). A
  `RequestFailed` item fails one outgoing request with its typed error (an HTTP
  error status: exit 4, or 3 for auth); a `ProtocolError` naming a `request_id`
  fails that request too (its answer was broken). A fatal failure (the server
  process died) ends the stream after its `ConnectionClosed`.
* `write` accepts `Envelope`s to deliver.

What the client may rely on beyond the pair is declared, never probed: every
transport derives from `Transport`, states its `TransportTraits` (legacy only,
whether a silent era probe means legacy, a cache key, header mirroring, the
command line the era memory is keyed on) and overrides the hooks whose default
does not fit it (`describe`, `request_headers`, `filter_tools`,
`open_standalone_stream`). The client hands a hook what it needs (the
definition of the tool being called), so a transport never calls back into it.

Transports know framing and connection management only; the JSON-RPC engine
(`mcpcli.rpc.peer`) knows ids, correlation, timeouts and cancellation. This
package imports from `mcpcli` (its version), `errors`, `text` and the core's `jsonrpc`,
`protocol` and `wire`, and nothing from `auth/`, `cli/`, `connect`, `client`, `config`,
`rpc/` or `server/`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import Batch, Message, RequestId
from mcpcli.errors import ProtocolError, StrayLine

if TYPE_CHECKING:
    from mcpcli.errors import McpCliError
    from mcpcli.transports.spawn import ExitMemory

__all__ = [
    "Envelope",
    "LineSplitter",
    "ReadStream",
    "RequestFailed",
    "Streams",
    "Transport",
    "TransportTraits",
    "WriteStream",
    "line_item",
]


@dataclass(slots=True)
class Envelope:
    """A message plus the routing facts a transport or session needs.

    `related_request_id` ties an outgoing server message (progress, a log line,
    the response) to the incoming request it belongs to, so an HTTP transport
    can put it on that request's stream; on an incoming server request or
    notification it names our request whose stream carried it (Streamable HTTP),
    so whoever answers knows which of its requests caused it. `headers` are extra HTTP headers for an
    outgoing client request (`Mcp-Param-*`). `context` is what the transport
    knows about an incoming message (the HTTP request, the authenticated
    principal), passed through to handlers.
    """

    message: Message | Batch
    related_request_id: RequestId | None = None
    headers: Mapping[str, str] | None = None
    context: Any = None


class ReadStream(Protocol):
    """What a session reads: messages and survivable problems, until the connection ends
    (a memory-object receive stream is one; stdio's is filled as the pipe's bytes arrive)."""

    def __aiter__(self) -> AsyncIterator[Envelope | Exception]: ...

    async def aclose(self) -> None: ...


class WriteStream(Protocol):
    """What a session writes to: `send_nowait` delivers at once or raises `WouldBlock`
    (no event-loop turn when there is room), `send` waits for room."""

    def send_nowait(self, item: Envelope, /) -> None: ...

    async def send(self, item: Envelope, /) -> None: ...

    async def aclose(self) -> None: ...


Streams = tuple[ReadStream, WriteStream]


class LineSplitter:
    """(No anyio here: the one-shot fast path uses it too.) Cuts a byte stream into lines, holding at most `cap` bytes of an unfinished one.

    `feed` returns the complete lines of a chunk; `overflow` says the unfinished line
    outgrew the cap (what to do about it is the caller's: a client gives up on the
    server, a server answers an error and skips to the next newline)."""

    __slots__ = ("_buffer", "cap")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        buffer = self._buffer
        while (newline := chunk.find(b"\n", start)) >= 0:
            if buffer:
                buffer += chunk[start:newline]
                lines.append(bytes(buffer))
                buffer.clear()
            else:
                lines.append(chunk[start:newline])
            start = newline + 1
        if start < len(chunk):
            buffer += chunk[start:]
        return lines

    @property
    def overflow(self) -> bool:
        return len(self._buffer) > self.cap

    def rest(self) -> bytes:
        """What is left after the last newline (at end of input), and forget it."""
        data = bytes(self._buffer)
        self._buffer.clear()
        return data

    def clear(self) -> None:
        self._buffer.clear()


def line_item(line: bytes, source: str) -> Envelope | ProtocolError | None:
    """One line of newline-delimited JSON-RPC (stdio, the session relay) as a read-stream
    item: its message, a `ProtocolError` to report and survive (naming `source`, e.g.
    "server wrote"), or None for a blank line."""
    line = line.strip()
    if not line:
        return None
    try:
        message = jsonrpc.parse(line, allow_batch=True)
    except jsonrpc.ParseError as exc:
        shown = line[:200].decode("utf-8", "backslashreplace").encode("unicode_escape").decode("ascii")
        return StrayLine(
            f"{source} a line that is not JSON-RPC ({exc}): {shown}",
            request_id=jsonrpc.recover_response_id(line),
        )
    return Envelope(message)


class RequestFailed(Exception):
    """A read-stream item: the transport failed one request (`error` says how).

    The session fails the pending request `request_id` with `error` itself, so
    an HTTP error status reaches the caller as the `TransportError` (exit 4) or
    `AuthError` (exit 3) it is, not dressed up as a JSON-RPC error response.
    """

    def __init__(self, request_id: RequestId, error: McpCliError) -> None:
        super().__init__(error.message)
        self.request_id = request_id
        self.error = error


@dataclass(frozen=True, slots=True)
class TransportTraits:
    """What a transport declares about itself, for the client to rely on."""

    #: The transport predates the modern era (HTTP+SSE): the client skips the
    #: `server/discover` probe and goes straight to `initialize`.
    legacy_only: bool = False
    #: Whether an era probe that gets no answer means a legacy server (stdio), or
    #: an error (HTTP always answers).
    probe_silence_is_legacy: bool = True
    #: Where this server's cacheable results live (a URL); None: nothing is cached.
    cache_key: str | None = None
    #: A modern `tools/call` mirrors the tool's `x-mcp-header` parameters into
    #: headers (Streamable HTTP): the client lists tools before calling one, and
    #: lists again and retries once when the server reports a header mismatch.
    mirrors_headers: bool = False
    #: The server's command line (stdio), what the client remembers its era by.
    command_line: tuple[str, ...] | None = None


class Transport(ABC):
    """Anything that can open a connection to an MCP peer.

    Subclasses implement `connect`, set `name` and (when the defaults do not fit)
    `traits`, and override the hooks below; the defaults are what a transport
    without the feature does.
    """

    #: A short label for messages and `mcp info`: "stdio", "streamable-http", ...
    name: str
    #: What the client may rely on (a class attribute, or set in `__init__`).
    traits: TransportTraits = TransportTraits()

    @abstractmethod
    def connect(self) -> AbstractAsyncContextManager[Streams]:
        """Open the connection and yield the session-facing `(read, write)` pair."""

    def describe(self) -> str | None:
        """The peer for people (a URL, a command line); None when there is nothing to show."""
        return None

    def request_headers(
        self, method: str, params: Mapping[str, Any], *, tool: Mapping[str, Any] | None = None
    ) -> Mapping[str, str] | None:
        """Extra headers for one outgoing request (HTTP: `Mcp-Param-*`).

        `tool` is the listed definition of the tool a modern `tools/call` calls,
        when the client has one: its `x-mcp-header` declarations say what to mirror.
        """
        return None

    def filter_tools(self, tools: list[Any]) -> tuple[list[Any], list[tuple[str, str]]]:
        """The tools this transport can call, and `(name, reason)` for those it cannot
        (HTTP drops invalid `x-mcp-header` declarations, as the 2026-07-28 spec requires)."""
        return tools, []

    def use_exit_memory(self, memory: ExitMemory) -> None:
        """Where this server's exits are remembered across runs (`mcpcli.cache.ExitRecords`,
        handed in by the client as the era memory is): a stdio server seen not to exit
        within the grace after EOF gets SIGTERM right after it next time (`spawn.eof_grace`)."""
        return None

    def hold_output(self) -> None:
        """Hold what the server says on its own (a stdio server's stderr) from the start
        of the next connection until `release_output`: the client's era probe may end a
        server, which it then starts again, and what that first start said is not shown."""
        return None

    def release_output(self, *, drop: bool = False) -> None:
        """Show what was held, and from now on as it comes; `drop`: discard it, and
        whatever else this connection says (the client is about to end it)."""
        return None

    async def open_standalone_stream(self) -> None:
        """Open the stream that carries server-initiated messages outside any request,
        where the transport has one (legacy Streamable HTTP: the GET stream)."""
        return None
