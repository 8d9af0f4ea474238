"""The transport seam: an async context manager yielding a pair of message streams.

A transport opens a connection and yields `(read, write)`:

* `read` yields `Envelope`s for messages that arrived, and `Exception`s for
  problems the session should report but survive (a garbage line on stdout). A
  fatal failure (the server process died) ends the stream after its exception.
* `write` accepts `Envelope`s to deliver.

Transports know framing and connection management only; the JSON-RPC engine
(`mcpcli.session`) knows ids, correlation, timeouts and cancellation.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from mcpcli.jsonrpc import Batch, Message, RequestId

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["Envelope", "ReadStream", "Streams", "Transport", "WriteStream"]


@dataclass(slots=True)
class Envelope:
    """A message plus the routing facts a transport or session needs.

    `related_request_id` ties an outgoing server message (progress, a log line,
    the response) to the incoming request it belongs to, so an HTTP transport
    can put it on that request's stream. `headers` are extra HTTP headers for an
    outgoing client request (`Mcp-Param-*`). `context` is what the transport
    knows about an incoming message (the HTTP request, the authenticated
    principal), passed through to handlers.
    """

    message: Message | Batch
    related_request_id: RequestId | None = None
    headers: Mapping[str, str] | None = None
    context: Any = None


if TYPE_CHECKING:
    ReadStream = MemoryObjectReceiveStream[Envelope | Exception]
    WriteStream = MemoryObjectSendStream[Envelope]
    Streams = tuple[ReadStream, WriteStream]
else:

    def __getattr__(name: str) -> Any:
        # The stream aliases need anyio; build them only when someone asks, so that
        # importing `mcpcli.transports._spawn` early stays free of anyio and asyncio.
        if name in ("ReadStream", "WriteStream", "Streams"):
            from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

            aliases = {
                "ReadStream": MemoryObjectReceiveStream[Envelope | Exception],
                "WriteStream": MemoryObjectSendStream[Envelope],
            }
            aliases["Streams"] = tuple[aliases["ReadStream"], aliases["WriteStream"]]
            globals().update(aliases)
            return aliases[name]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Transport(Protocol):
    """Anything that can open a connection to an MCP peer.

    Optional attributes a transport may have, which `mcpcli.client.Client` reads:

    * `request_headers(client, method, params) -> Mapping | None`: extra headers
      for one outgoing request (HTTP: `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`);
    * `legacy_only: bool`: the transport predates the modern era (HTTP+SSE), so
      the client skips the `server/discover` probe;
    * `probe_silence_is_legacy: bool` (default True): whether a probe that gets no
      answer means a legacy server (stdio) or an error (HTTP always answers);
    * `cache_key: str`: where this server's cacheable results live (a URL);
    * `filter_tools(tools) -> (kept, [(name, reason), ...])`: drop tools the
      transport cannot call (HTTP: invalid `x-mcp-header` declarations, as the
      2026-07-28 spec requires);
    * `async open_standalone_stream()`: open the legacy GET stream that carries
      server-initiated messages (subscriptions);
    * `describe() -> str`: a human description for `mcp info`.
    """

    #: A short label for messages and `mcp info`: "stdio", "streamable-http", ...
    name: str

    def connect(self) -> AbstractAsyncContextManager[Streams]: ...
