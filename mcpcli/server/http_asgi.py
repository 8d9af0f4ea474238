"""ASGI plumbing shared by the HTTP endpoints: request headers, bounded request
bodies, plain responses and JSON-RPC error bodies. No web framework."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import ErrorObject, ErrorResponse, RequestId
from mcpcli.core.protocol import SHUTTING_DOWN, SHUTTING_DOWN_DATA, SHUTTING_DOWN_MESSAGE

__all__ = [
    "DISCONNECT_HOOK",
    "JSON",
    "SERVER_BUSY",
    "Disconnected",
    "Headers",
    "Receive",
    "Scope",
    "Send",
    "accepts",
    "error_body",
    "is_json",
    "plain",
    "read_body",
    "shutdown_error",
]

JSON = dict[str, Any]
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

#: The JSON-RPC error of a request refused for lack of room (503 + Retry-After).
SERVER_BUSY = -32000
#: The scope extension where our uvicorn protocol (`http_guard`) takes callbacks to call
#: when the client leaves before the response is complete: a list to append to (None once
#: it has left).
DISCONNECT_HOOK = "mcpcli.on_disconnect"


def shutdown_error() -> ErrorObject:
    """The error of a request the server stopped before answering (`protocol.SHUTTING_DOWN`)."""
    return ErrorObject(SHUTTING_DOWN, SHUTTING_DOWN_MESSAGE, SHUTTING_DOWN_DATA)


def error_body(request_id: RequestId | None, code: int, message: str, data: Any = None) -> bytes:
    return jsonrpc.encode(ErrorResponse(request_id, ErrorObject(code, message, data)))


def accepts(accept: str | None, media: str, *, listed: bool = False) -> bool:
    """Whether an `Accept` header value takes `media` (absent or blank takes anything).

    `*/*` and `type/*` count, unless `media` must be `listed` by name (then an absent
    header does not take it either); a range with `q=0` refuses."""
    if accept is None or not accept.strip():
        return not listed
    wanted = media.lower()
    ranges = (wanted,) if listed else ("*/*", wanted.partition("/")[0] + "/*", wanted)
    for item in accept.split(","):
        media_range, *params = item.split(";")
        if media_range.strip().lower() not in ranges:
            continue
        refused = False
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    refused = float(value.strip()) <= 0
                except ValueError:
                    refused = False
        if not refused:
            return True
    return False


def is_json(content_type: str | None) -> bool:
    """Whether a `Content-Type` value is `application/json` (parameters such as charset allowed)."""
    if content_type is None:
        return False
    return content_type.partition(";")[0].strip().lower() == "application/json"


class Headers:
    """Request headers by lower-case name; a repeated header counts as ambiguous."""

    __slots__ = ("_values",)

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        values: dict[str, list[str]] = {}
        for name, value in raw:
            values.setdefault(name.decode("latin-1").lower(), []).append(
                value.decode("latin-1").strip(" \t")
            )
        self._values = values

    def get(self, name: str) -> str | None:
        found = self._values.get(name)
        return found[-1] if found else None

    def only(self, name: str) -> str | None:
        """The single value of a header; ValueError when it was sent more than once."""
        found = self._values.get(name)
        if not found:
            return None
        if len(found) > 1:
            raise ValueError(f"{name} was sent more than once")
        return found[0]

    def names(self) -> Iterable[str]:
        return self._values.keys()


class Disconnected(Exception):
    """The client went away while we were reading its request."""


async def plain(
    send: Send,
    status: int,
    body: bytes,
    extra: list[tuple[bytes, bytes]] | None = None,
    *,
    content_type: bytes = b"application/json",
) -> None:
    """A complete response with a fixed body (none for 204)."""
    headers = [] if status == 204 else [(b"content-length", str(len(body)).encode("ascii"))]
    if body:
        headers.append((b"content-type", content_type))
    await send({"type": "http.response.start", "status": status, "headers": [*headers, *(extra or [])]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def read_body(receive: Receive, headers: Headers, cap: int) -> bytes | None:
    """The request body, or None when it exceeds `cap` bytes; `Disconnected` if the client left."""
    length = headers.get("content-length")
    if length is not None and length.isascii() and length.isdigit() and (len(length) > 18 or int(length) > cap):
        return None
    chunks: list[bytes] = []
    total = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk = message.get("body", b"")
        total += len(chunk)
        if total > cap:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
