"""JSON-RPC 2.0 messages: types, parsing and encoding. No I/O lives here.

Messages are small slotted value classes (`core.plain`) that the engine and the transports
match on by type; `parse()` validates the envelope (not MCP semantics) and
`encode()` produces the compact single-line form every transport frames.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcpcli import jsontext
from mcpcli.core.plain import Plain

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Batch",
    "ErrorObject",
    "ErrorResponse",
    "Message",
    "Notification",
    "ParseError",
    "Request",
    "RequestId",
    "Response",
    "encode",
    "loads",
    "parse",
    "parse_obj",
    "recover_response_id",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

RequestId = int | str


class Request(Plain):
    __slots__ = ("id", "method", "params")

    def __init__(self, method: str, params: dict[str, Any] | None = None, id: RequestId = 0) -> None:
        self.method = method
        self.params = params
        self.id = id

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"jsonrpc": "2.0", "id": self.id, "method": self.method}
        if self.params is not None:
            out["params"] = self.params
        return out


class Notification(Plain):
    __slots__ = ("method", "params")

    def __init__(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.method = method
        self.params = params

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"jsonrpc": "2.0", "method": self.method}
        if self.params is not None:
            out["params"] = self.params
        return out


class Response(Plain):
    __slots__ = ("id", "result")

    def __init__(self, id: RequestId, result: dict[str, Any] | None = None) -> None:
        self.id = id
        self.result: dict[str, Any] = {} if result is None else result

    def to_dict(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "result": self.result}


class ErrorObject(Plain):
    __slots__ = ("code", "data", "message")

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        self.code = code
        self.message = message
        self.data = data

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out


class ErrorResponse(Plain):
    __slots__ = ("error", "id")

    def __init__(self, id: RequestId | None, error: ErrorObject) -> None:
        self.id = id
        self.error = error

    def to_dict(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "error": self.error.to_dict()}


Message = Request | Notification | Response | ErrorResponse


class Batch(Plain):
    """A JSON-RPC batch (an array body). Only 2025-03-26 peers may send these."""

    __slots__ = ("messages",)

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    def to_list(self) -> list[dict[str, Any]]:
        return [m.to_dict() for m in self.messages]


class ParseError(ValueError):
    """The bytes are not a JSON-RPC message.

    `code` is the JSON-RPC error to answer with (-32700 for bad JSON, -32600 for
    a valid JSON value that is not a message); `id` is the request id when one
    could be recovered, so the error response can still name it.
    """

    def __init__(self, message: str, code: int = PARSE_ERROR, id: RequestId | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.id = id


def _valid_id(value: Any) -> bool:
    # bool is an int subclass; JSON true/false are not valid ids.
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _valid_code(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is not a code


def parse_obj(obj: Any) -> Message:
    """Validate one decoded JSON value as a JSON-RPC message."""
    if not isinstance(obj, dict):
        raise ParseError("message is not a JSON object", INVALID_REQUEST)
    raw_id = obj.get("id")
    if obj.get("jsonrpc") != "2.0":
        raise ParseError(
            'missing "jsonrpc": "2.0"', INVALID_REQUEST, raw_id if _valid_id(raw_id) else None
        )
    method = obj.get("method")
    if method is not None:
        if not isinstance(method, str):
            raise ParseError("method is not a string", INVALID_REQUEST)
        params = obj.get("params")
        if params is not None and not isinstance(params, dict):
            # MCP params are always objects; positional (array) params are not used.
            raise ParseError(
                "params is not an object", INVALID_REQUEST, raw_id if _valid_id(raw_id) else None
            )
        if "id" not in obj:
            return Notification(method, params)
        if not _valid_id(raw_id):
            raise ParseError("request id must be a string or an integer", INVALID_REQUEST)
        assert raw_id is not None
        return Request(method, params, raw_id)
    if "result" in obj:
        if not _valid_id(raw_id):
            raise ParseError("response id must be a string or an integer", INVALID_REQUEST)
        assert raw_id is not None
        result = obj["result"]
        if not isinstance(result, dict):
            raise ParseError("result is not an object", INVALID_REQUEST, raw_id)
        return Response(raw_id, result)
    if "error" in obj:
        err = obj["error"]
        if not isinstance(err, dict) or not _valid_code(err.get("code")):
            raise ParseError("malformed error object", INVALID_REQUEST)
        msg = err.get("message")
        return ErrorResponse(
            raw_id if _valid_id(raw_id) else None,
            ErrorObject(err["code"], msg if isinstance(msg, str) else "", err.get("data")),
        )
    raise ParseError("neither a request, a notification nor a response", INVALID_REQUEST)


def loads(text: str | bytes) -> Any:
    """Strict JSON text (no NaN, Infinity or 1e999): only values `dumps` can write back.

    Nesting deeper than the parser's recursion allows is a ValueError too, like any
    other JSON it will not take: the one reader for JSON from outside (files, other
    programs' output), so "[[[[..." is a clean error everywhere. Bytes are decoded as
    `json.loads` does (bad UTF-8 is a ValueError as well). (`mcpcli.jsontext`, which
    the local line protocols share.)"""
    return jsontext.loads(text)


def parse(data: bytes | str, *, allow_batch: bool = False) -> Message | Batch:
    """Parse one frame. Raises `ParseError`; arrays only when `allow_batch`."""
    try:
        if not isinstance(data, str):
            data = data.decode(json.detect_encoding(data), "surrogatepass")  # as json.loads
        obj = jsontext.decoder.decode(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParseError(f"invalid JSON: {exc}") from None
    except RecursionError:  # "[[[[..." a peer can send to crash a naive reader
        raise ParseError("invalid JSON: nested too deeply") from None
    if isinstance(obj, list):
        if not allow_batch:
            raise ParseError("JSON-RPC batches are not supported", INVALID_REQUEST)
        if not obj:
            raise ParseError("empty batch", INVALID_REQUEST)
        return Batch([parse_obj(item) for item in obj])
    return parse_obj(obj)


_ID = r'(-?\d+|"(?:[^"\\\x00-\x1f]|\\.){0,256}")'
_VERSION = r'"jsonrpc"\s*:\s*"2\.0"\s*,\s*'
_ANSWER = r'"(?:result|error)"\s*:'
#: `{"jsonrpc":"2.0","id":ID,"result":...` (the order every SDK writes) ...
_LEADING_ID = re.compile(rf"\s*\{{\s*(?:{_VERSION})?\"id\"\s*:\s*{_ID}\s*,\s*(?:{_VERSION})?{_ANSWER}")
#: ... or `{"jsonrpc":"2.0","result":...,"id":ID}` with the id last.
_ANSWER_FIRST = re.compile(rf"\s*\{{\s*(?:{_VERSION})?{_ANSWER}")
_TRAILING_ID = re.compile(rf',\s*"id"\s*:\s*{_ID}\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}}\s*$')
#: How much of each end of a broken frame is looked at.
_RECOVER_SPAN = 4096


def recover_response_id(data: bytes | str) -> RequestId | None:
    """The id of a response that could not be parsed, when it can be told for sure.

    A broken answer (invalid UTF-8, nesting too deep, cut off) should fail the
    request it answers at once instead of leaving it to time out. Only the
    unambiguous shapes count: an object that starts with `id` (after an
    optional `jsonrpc`) followed by `result`/`error`, or one that starts with
    `result`/`error` and ends with `, "id": ID}`. A request or notification
    from the peer never matches. (A frame cut off right after a nested `"id"`
    could; failing a request of a peer that already sends broken answers is
    the lesser harm.)
    """
    if isinstance(data, bytes):
        head = data[:_RECOVER_SPAN].decode("utf-8", "replace")
        tail = data[-_RECOVER_SPAN:].decode("utf-8", "replace")
    else:
        head, tail = data[:_RECOVER_SPAN], data[-_RECOVER_SPAN:]
    match = _LEADING_ID.match(head)
    if match is None and _ANSWER_FIRST.match(head):
        match = _TRAILING_ID.search(tail)
    if match is None:
        return None
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return None
    return value if _valid_id(value) else None


def encode(message: Message | Batch) -> bytes:
    """Compact UTF-8 JSON with no embedded newline (JSON escapes them); a lone surrogate
    (a peer's "\\ud800" id or text, echoed back) is sent as the same JSON escape."""
    return jsontext.utf8(message.to_list() if isinstance(message, Batch) else message.to_dict())


def dumps(obj: Any) -> str:
    """Compact JSON text, the same encoder the wire uses."""
    return jsontext.dumps(obj)
