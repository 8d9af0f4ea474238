"""A minimal HTTP/1.1 client for plain `http://` URLs (start-up speed).

Importing and setting up httpx costs more than a whole one-shot call to a
local server. For plain http:// without a proxy, this module speaks HTTP/1.1
itself on anyio sockets: one connection per request (`Connection: close`),
bodies by Content-Length, chunked encoding, or until the server closes. It
offers the same interface as `_http.HttpStream` and `HttpClient.open`; TLS,
proxies and everything else go through httpx (`mcpcli.transports.http_io`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio

from mcpcli.errors import MessageTooLarge, TransportError
from mcpcli.transports.http_io import HeaderLookup

__all__ = ["PlainClient", "PlainStream"]

MAX_HEAD_BYTES = 64 * 1024
READ_SIZE = 65536


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

    async def chunks(self) -> AsyncIterator[bytes]:
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
                yield data
            return
        while True:  # chunked
            line = await reader.read_until(b"\r\n", 1024)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise TransportError(f"{self._display_url}: malformed chunked encoding") from None
            if size == 0:
                return
            left = size
            while left > 0:
                data = await reader.read_some(min(left, READ_SIZE))
                if not data:
                    raise TransportError(f"{self._display_url}: the connection broke mid-chunk")
                left -= len(data)
                yield data
            await reader.read_until(b"\r\n", 16)

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


def _parse_head(head: bytes, shown: str) -> tuple[int, list[tuple[str, str]]]:
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
    return int(status_line[1]), headers


class PlainClient:
    """HTTP/1.1 over plain TCP, one connection per request."""

    def __init__(self, *, headers: Mapping[str, str], connect_timeout: float) -> None:
        self._headers = dict(headers)
        self._connect_timeout = connect_timeout
        #: host name -> the address that answered, so later connections (a resumed
        #: stream must reconnect right after the server's `retry`) skip the lookup.
        self._resolved: dict[tuple[str, int], str] = {}

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
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or 80
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        host_header = f"[{host}]" if ":" in host else host
        if parts.port is not None:
            host_header += f":{parts.port}"
        merged: dict[str, str] = {"Host": host_header}
        merged.update(self._headers)
        merged.update(headers or {})
        if parts.username is not None and not any(k.lower() == "authorization" for k in merged):
            # user:password@ in the URL means HTTP Basic, as with httpx.
            import base64
            from urllib.parse import unquote

            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            merged["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        if content is not None or method in ("POST", "PUT"):
            merged["Content-Length"] = str(len(content or b""))
        merged["Connection"] = "close"
        head = f"{method} {target} HTTP/1.1\r\n" + "".join(
            f"{_check_header(k)}: {_check_header(v)}\r\n" for k, v in merged.items()
        ) + "\r\n"
        try:
            raw_head = head.encode("latin-1")
        except UnicodeEncodeError:
            raise TransportError(
                f"{display_url}: an HTTP header holds characters that cannot be sent"
            ) from None
        stream = await self._connect(host, port, display_url)
        try:
            try:
                with anyio.fail_after(timeout) if timeout is not None else _no_timeout():
                    try:
                        await stream.send(raw_head + (content or b""))
                    except (anyio.BrokenResourceError, OSError) as exc:
                        raise TransportError(f"{display_url}: the connection broke: {exc}") from None
                    reader = _Reader(stream, display_url)
                    while True:
                        status, header_list = _parse_head(
                            await reader.read_until(b"\r\n\r\n", MAX_HEAD_BYTES), display_url
                        )
                        if not 100 <= status < 200:
                            break
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
            yield PlainStream(status, header_list, url, reader, mode, length)
        finally:
            with anyio.CancelScope(shield=True):
                await stream.aclose()

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
        return None


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
