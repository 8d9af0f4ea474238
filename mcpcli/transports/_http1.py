"""A minimal HTTP/1.1 client for plain `http://` URLs (start-up speed).

Importing and setting up httpx costs more than a whole one-shot call to a
local server. For plain http:// without a proxy, this module speaks HTTP/1.1
itself on anyio sockets: keep-alive connections (a gateway relays every call
over them; a connection per request cost more CPU than the relaying), bodies by
Content-Length, chunked encoding, or until the server closes. It
offers the same interface as `_http.HttpStream` and `HttpClient.open`; TLS,
proxies and everything else go through httpx (`mcpcli.transports.http_io`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio

from mcpcli.errors import MessageTooLarge, TransportError
from mcpcli.transports.http_io import HeaderLookup

__all__ = ["PlainClient", "PlainStream"]

MAX_HEAD_BYTES = 64 * 1024
READ_SIZE = 65536
#: Idle connections kept per host and port, and for how long: under the 5 s after which
#: Node's and uvicorn's servers close an idle one (a request racing that close is retried).
MAX_IDLE = 32
IDLE_SECONDS = 4.0
#: How long a response's unread rest may take to arrive for its connection to be kept.
FINISH_SECONDS = 0.5
#: Trailer lines a chunked body may end with (they are read and ignored).
MAX_TRAILERS = 64


class _Connection:
    """A TCP connection: asyncio streams when running on asyncio (no extra imports),
    anyio sockets otherwise."""

    def __init__(self, reader: Any = None, writer: Any = None, stream: Any = None) -> None:
        self._reader = reader
        self._writer = writer
        self._stream = stream

    @property
    def address(self) -> str | None:
        try:
            if self._writer is not None:
                return str(self._writer.get_extra_info("peername")[0])
            from anyio.abc import SocketAttribute

            return str(self._stream.extra(SocketAttribute.remote_address)[0])  # noqa: S610
        except (LookupError, TypeError, IndexError, AttributeError):
            return None

    def stale(self) -> bool:
        """Has the server closed this idle connection (as far as we know yet)?"""
        if self._writer is not None:
            return bool(self._reader.at_eof() or self._writer.is_closing())
        return False

    async def send(self, data: bytes) -> None:
        if self._writer is not None:
            self._writer.write(data)
            await self._writer.drain()
        else:
            await self._stream.send(data)

    async def receive(self, size: int) -> bytes:
        """Up to `size` bytes; b"" at the end of the stream."""
        if self._reader is not None:
            data: bytes = await self._reader.read(size)
            return data
        try:
            chunk: bytes = await self._stream.receive(size)
        except anyio.EndOfStream:
            return b""
        return chunk

    async def aclose(self) -> None:
        if self._writer is not None:
            self._writer.close()
            try:
                with anyio.move_on_after(1):
                    await self._writer.wait_closed()
            except OSError:
                pass
        elif self._stream is not None:
            await self._stream.aclose()


async def _open(host: str, port: int) -> _Connection:
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _Connection(stream=await anyio.connect_tcp(host, port))
    reader, writer = await asyncio.open_connection(host, port, limit=READ_SIZE)
    return _Connection(reader=reader, writer=writer)


class _Reader:
    """Buffered reads from a connection."""

    def __init__(self, stream: _Connection, shown: str) -> None:
        self.stream = stream
        self.buffer = bytearray()
        self.eof = False
        self.received = 0
        self._shown = shown

    async def fill(self) -> bool:
        """Read more into the buffer; False at end of stream."""
        if self.eof:
            return False
        try:
            chunk = await self.stream.receive(READ_SIZE)
        except (anyio.BrokenResourceError, OSError) as exc:
            raise TransportError(f"{self._shown}: the connection broke: {exc or type(exc).__name__}") from None
        if not chunk:
            self.eof = True
            return False
        self.buffer += chunk
        self.received += len(chunk)
        return True

    async def read_until(self, marker: bytes, limit: int) -> bytes:
        while True:
            at = self.buffer.find(marker)
            if at >= 0:
                data = bytes(self.buffer[: at + len(marker)])
                del self.buffer[: at + len(marker)]
                return data
            if len(self.buffer) > limit:
                raise TransportError(f"{self._shown}: the response head is larger than {limit} bytes")
            if not await self.fill():
                raise TransportError(f"{self._shown}: the connection broke: the server closed it mid-response")

    async def read_some(self, limit: int) -> bytes:
        if not self.buffer and not await self.fill():
            return b""
        data = bytes(self.buffer[:limit])
        del self.buffer[:limit]
        return data


class PlainStream(HeaderLookup):
    """A response with its body unread (the interface of `_http.HttpStream`)."""

    def __init__(
        self, status: int, header_list: list[tuple[str, str]], url: str, reader: _Reader,
        mode: str, length: int,
    ) -> None:
        self.status = status
        self.url = url
        self.header_list = header_list
        headers: dict[str, str] = {}
        for name, value in header_list:
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        self.headers = headers
        self._reader = reader
        self._mode = mode  # "none", "length", "chunked", "close"
        self._left = length
        self._display_url = reader._shown
        #: The whole body was read (so the connection may carry the next request).
        self.done = mode == "none"
        self._in_chunk = False
        #: Reading a chunked body's trailers: how many more lines may come.
        self._trailers = 0

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        reader = self._reader
        if self._mode == "none":
            return
        if self._mode == "close":
            while True:
                data = await reader.read_some(READ_SIZE)
                if not data:
                    return
                yield data
        if self._mode == "length":
            while self._left > 0:
                data = await reader.read_some(min(self._left, READ_SIZE))
                if not data:
                    raise TransportError(
                        f"{self._display_url}: the connection broke: {self._left} bytes of the body missing"
                    )
                self._left -= len(data)
                if not self._left:
                    self.done = True
                yield data
            return
        while True:  # chunked; the state is kept so that a later call goes on (`finish`)
            data = self._dechunk()
            if data:
                yield data
            elif self.done:
                return
            elif not await reader.fill():
                raise TransportError(f"{self._display_url}: the connection broke mid-chunk"
                                     if self._left else
                                     f"{self._display_url}: the connection broke: the server "
                                     "closed it mid-response")

    def _dechunk(self) -> bytes:
        """The chunked body's data that the buffer holds whole, taken from it, up to and
        including the end of the body when it is there (`done`): one piece for everything
        one read brought, parsed without awaiting (a relayed call's SSE answer is two
        chunks and the end, most often in one read)."""
        buffer = self._reader.buffer
        pieces: list[bytes] = []
        at = 0
        size = len(buffer)
        while True:
            if self._left:
                take = min(self._left, size - at)
                if not take:
                    break
                pieces.append(bytes(buffer[at:at + take]))
                at += take
                self._left -= take
                if self._left:
                    break
            if self._in_chunk:  # the CRLF after a chunk's data
                end = buffer.find(b"\r\n", at, at + 18)
                if end < 0:
                    if size - at > 16:
                        raise TransportError(f"{self._display_url}: malformed chunked encoding")
                    break
                at = end + 2
                self._in_chunk = False
            if self._trailers:
                # Trailers (ignored) up to the empty line that ends the message.
                end = buffer.find(b"\r\n", at)
                if end < 0:
                    if size - at > MAX_HEAD_BYTES:
                        raise TransportError(f"{self._display_url}: the chunked trailers are too large")
                    break
                if end == at:
                    at += 2
                    self.done = True
                    break
                self._trailers -= 1
                if not self._trailers:
                    raise TransportError(f"{self._display_url}: too many chunked trailers")
                at = end + 2
                continue
            end = buffer.find(b"\r\n", at, at + 1026)
            if end < 0:
                if size - at > 1024:
                    raise TransportError(f"{self._display_url}: malformed chunked encoding")
                break
            try:
                chunk_size = int(buffer[at:end].split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise TransportError(f"{self._display_url}: malformed chunked encoding") from None
            if chunk_size < 0:
                raise TransportError(f"{self._display_url}: malformed chunked encoding")
            at = end + 2
            if chunk_size == 0:
                self._trailers = MAX_TRAILERS
            else:
                self._left, self._in_chunk = chunk_size, True
        if at:
            del buffer[:at]
        return b"".join(pieces) if len(pieces) != 1 else pieces[0]

    async def finish(self) -> None:
        """Read what is left of the body, if it comes soon, so the connection can carry the
        next request: a Streamable HTTP server ends an SSE response right after the answer
        its reader stops at. Anything still unread after `FINISH_SECONDS` (or past
        `MAX_HEAD_BYTES`) leaves the connection to be closed."""
        if self.done or self._mode == "close":
            return
        left = MAX_HEAD_BYTES
        if self._mode == "chunked":
            # Most often the end is here already, right behind the answer: no waiting.
            try:
                left -= len(self._dechunk())
            except TransportError:
                return
            if self._read_whole():
                return
        with anyio.move_on_after(FINISH_SECONDS):
            try:
                async for chunk in self.chunks():
                    left -= len(chunk)
                    if left < 0:
                        return
            except TransportError:
                return

    def _read_whole(self) -> bool:
        return self.done

    async def read(self, max_bytes: int) -> bytes:
        body = bytearray()
        async for chunk in self.chunks():
            body += chunk
            if len(body) > max_bytes:
                raise MessageTooLarge(f"{self._display_url}: the response is larger than {max_bytes} bytes")
        return bytes(body)

    async def peek(self, max_bytes: int = 200) -> bytes:
        body = bytearray()
        try:
            async for chunk in self.chunks():
                body += chunk
                if len(body) >= max_bytes:
                    break
        except TransportError:
            pass
        return bytes(body[:max_bytes])


def _parse_head(head: bytes, shown: str) -> tuple[int, list[tuple[str, str]], str]:
    lines = head.decode("latin-1").split("\r\n")
    status_line = lines[0].split(" ", 2)
    code = status_line[1] if len(status_line) > 1 else ""
    # Three ASCII digits ("²00".isdigit() is true, and int() of 5,000 digits raises).
    if not status_line[0].startswith("HTTP/1.") or not (len(code) == 3 and code.isascii() and code.isdigit()):
        raise TransportError(f"{shown}: the server did not answer with HTTP/1.x: {lines[0][:80]!r}")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise TransportError(f"{shown}: malformed response header: {line[:80]!r}")
        headers.append((name.strip().lower(), value.strip()))
    return int(status_line[1]), headers, status_line[0]


class PlainClient:
    """HTTP/1.1 over plain TCP, with keep-alive connections per host and port."""

    def __init__(self, *, headers: Mapping[str, str], connect_timeout: float) -> None:
        self._headers = dict(headers)
        self._connect_timeout = connect_timeout
        #: host name -> the address that answered, so later connections (a resumed
        #: stream must reconnect right after the server's `retry`) skip the lookup.
        self._resolved: dict[tuple[str, int], str] = {}
        self._targets: dict[str, tuple[str, int, str, str | None, dict[str, str]]] = {}
        #: (host, port) -> idle connections, each with the time it became idle.
        self._idle: dict[tuple[str, int], list[tuple[_Connection, float]]] = {}

    @asynccontextmanager
    async def open(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        timeout: float | None = None,
        display_url: str,
    ) -> AsyncIterator[PlainStream]:
        host, port, target, basic, merged = self._target(url)
        merged.update(headers or {})
        if basic is not None and not any(k.lower() == "authorization" for k in merged):
            merged["Authorization"] = basic  # user:password@ in the URL, as with httpx
        if content is not None or method in ("POST", "PUT"):
            merged["Content-Length"] = str(len(content or b""))
        lines = "".join([f"{k}: {v}\r\n" for k, v in merged.items()])
        if lines.count("\n") != len(merged) or lines.count("\r") != len(merged):
            for k, v in merged.items():  # which one: the error says
                _check_header(k), _check_header(v)
        head = f"{method} {target} HTTP/1.1\r\n{lines}\r\n"
        try:
            raw_head = head.encode("latin-1")
        except UnicodeEncodeError:
            raise TransportError(
                f"{display_url}: an HTTP header holds characters that cannot be sent"
            ) from None
        key = (host, port)
        stream = await self._take_idle(key)
        reused = stream is not None
        if stream is None:
            stream = await self._connect(host, port, display_url)
        response: PlainStream | None = None
        try:
            try:
                with anyio.fail_after(timeout) if timeout is not None else _no_timeout():
                    while True:
                        reader = _Reader(stream, display_url)
                        try:
                            status, header_list, version = await _exchange(
                                stream, reader, raw_head + (content or b""), display_url
                            )
                            break
                        except TransportError:
                            if not reused or reader.received:
                                raise
                        # The server closed the idle connection as we sent (it read
                        # nothing of this request): once more on a new connection.
                        with anyio.CancelScope(shield=True):
                            await stream.aclose()
                        reused = False
                        stream = await self._connect(host, port, display_url)
            except TimeoutError:
                raise TransportError(f"timed out talking to {display_url}") from None
            values = dict(header_list)
            if method == "HEAD" or status in (204, 304):
                mode, length = "none", 0
            elif "chunked" in values.get("transfer-encoding", "").lower():
                mode, length = "chunked", 0
            elif "content-length" in values:
                try:
                    length = int(values["content-length"])
                except ValueError:
                    raise TransportError(f"{display_url}: invalid Content-Length") from None
                mode = "length" if length > 0 else "none"
            else:
                mode, length = "close", 0
            response = PlainStream(status, header_list, url, reader, mode, length)
            # HTTP/1.0, or a server that says it closes the connection: never reused.
            keep = mode != "close" and version == "HTTP/1.1" \
                and "close" not in values.get("connection", "").lower()
            yield response
            if keep:
                await response.finish()
        finally:
            if response is not None and keep and response.done and not reader.buffer \
                    and len(self._idle.setdefault(key, [])) < MAX_IDLE:
                self._idle[key].append((stream, time.monotonic()))
            else:
                with anyio.CancelScope(shield=True):
                    await stream.aclose()

    def _target(self, url: str) -> tuple[str, int, str, str | None, dict[str, str]]:
        """Host, port, request target, HTTP Basic credentials (user:password@) and the
        base headers of a URL (parsed once per URL: a gateway sends every call to one)."""
        known = self._targets.get(url)
        if known is None:
            parts = urlsplit(url)
            host = parts.hostname or ""
            target = parts.path or "/"
            if parts.query:
                target += "?" + parts.query
            host_header = f"[{host}]" if ":" in host else host
            if parts.port is not None:
                host_header += f":{parts.port}"
            basic = None
            if parts.username is not None:
                import base64
                from urllib.parse import unquote

                pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
                basic = "Basic " + base64.b64encode(pair).decode("ascii")
            if len(self._targets) >= 64:
                self._targets.clear()
            known = self._targets[url] = (host, parts.port or 80, target, basic,
                                          {"Host": host_header, **self._headers})
        host, port, target, basic, base = known
        return host, port, target, basic, dict(base)

    async def _take_idle(self, key: tuple[str, int]) -> _Connection | None:
        """An idle connection to reuse, the most recent first; stale ones are closed."""
        idle = self._idle.get(key)
        oldest_kept = time.monotonic() - IDLE_SECONDS
        while idle:
            stream, since = idle.pop()
            if since >= oldest_kept and not stream.stale():
                return stream
            with anyio.CancelScope(shield=True):
                await stream.aclose()
        return None

    async def _connect(self, host: str, port: int, shown: str) -> _Connection:
        try:
            with anyio.fail_after(self._connect_timeout):
                known = self._resolved.get((host, port))
                if known is not None:
                    try:
                        return await _open(known, port)
                    except OSError:
                        del self._resolved[(host, port)]
                stream = await _open(host, port)
                address = stream.address
                if address is not None:
                    self._resolved[(host, port)] = address
                return stream
        except TimeoutError:
            raise TransportError(f"timed out connecting to {shown}") from None
        except OSError as exc:
            reason = (str(exc) or type(exc).__name__).splitlines()[0][:200]
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, OSError) and cause.strerror:
                reason = cause.strerror
            raise TransportError(f"cannot connect to {shown}: {reason}") from None

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        with anyio.CancelScope(shield=True):
            for connections in idle.values():
                for stream, _ in connections:
                    await stream.aclose()


async def _exchange(
    stream: _Connection, reader: _Reader, request: bytes, shown: str
) -> tuple[int, list[tuple[str, str]], str]:
    """Send a request and read the response's head (past any 1xx): status, headers, version."""
    try:
        await stream.send(request)
    except (anyio.BrokenResourceError, OSError) as exc:
        raise TransportError(f"{shown}: the connection broke: {exc}") from None
    while True:
        status, header_list, version = _parse_head(await reader.read_until(b"\r\n\r\n", MAX_HEAD_BYTES), shown)
        if not 100 <= status < 200:
            return status, header_list, version


class _no_timeout:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _check_header(text: str) -> str:
    """Header names and values may not smuggle line breaks."""
    if "\r" in text or "\n" in text:
        raise TransportError("refusing to send an HTTP header containing a line break")
    return text
