"""JSON-RPC decoding (`mcpcli.core.jsonrpc.parse`) against random and hostile input.

Properties: `parse` returns a message or raises `ParseError` (nothing else, for
any bytes); whatever it accepts can be encoded again (one line of valid UTF-8)
and parses back to the same message; the id a `ParseError` recovers can be sent
back in an error response.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fuzz.strategies import NASTY_JSON, dumps, json_values, messages, mutated, odd_ids
from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import ErrorObject, ErrorResponse, ParseError


def check_parse(data: bytes | str, *, allow_batch: bool = True) -> jsonrpc.Message | jsonrpc.Batch | None:
    """Parse; on success the message must survive an encode/parse round trip."""
    try:
        message = jsonrpc.parse(data, allow_batch=allow_batch)
    except ParseError as exc:
        error = exc
    else:
        error = None
    if error is not None:
        assert error.code in (jsonrpc.PARSE_ERROR, jsonrpc.INVALID_REQUEST)
        assert error.id is None or jsonrpc._valid_id(error.id)
        # The error reply that names the recovered id must be writable.
        reply = jsonrpc.encode(ErrorResponse(error.id, ErrorObject(error.code, str(error))))
        assert b"\n" not in reply
        reply.decode("utf-8")
        return None
    for item in message.messages if isinstance(message, jsonrpc.Batch) else [message]:
        if isinstance(item, ErrorResponse):
            assert type(item.error.code) is int  # JSON-RPC: "code" MUST be an integer
            assert isinstance(item.error.message, str)
    wire = jsonrpc.encode(message)
    assert b"\n" not in wire
    wire.decode("utf-8")  # strict: no lone surrogates on the wire
    assert jsonrpc.parse(wire, allow_batch=True) == message
    return message


@given(st.binary(max_size=200))
@example(b"")
@example(b"\n")
@example(b"[]")
@example(b"[1]")
@example(b'{"jsonrpc":"2.0","id":1,"error":{"code":true,"message":"m"}}')
def test_random_bytes(data: bytes) -> None:
    check_parse(data)
    check_parse(data, allow_batch=False)


@given(json_values)
def test_random_json_values(value: Any) -> None:
    check_parse(dumps(value))
    check_parse(json.dumps(value, ensure_ascii=True))


@given(messages())
def test_valid_messages_round_trip(msg: dict[str, Any]) -> None:
    message = check_parse(dumps(msg), allow_batch=False)
    assert message is not None
    assert json.loads(jsonrpc.encode(message)) == msg


@given(st.lists(messages(), min_size=1, max_size=3))
def test_batches_round_trip(msgs: list[dict[str, Any]]) -> None:
    batch = check_parse(dumps(msgs))
    assert isinstance(batch, jsonrpc.Batch)
    assert json.loads(jsonrpc.encode(batch)) == msgs


@given(st.data(), messages())
def test_mutated_messages(data: st.DataObject, msg: dict[str, Any]) -> None:
    raw = json.dumps(msg, ensure_ascii=data.draw(st.booleans())).encode("utf-8", "surrogatepass")
    check_parse(data.draw(mutated(raw)))


@given(odd_ids, st.sampled_from(["request", "response", "error", "bad-version"]))
@example("\ud800", "request")  # a lone surrogate id used to make the reply unencodable
@example("\udfff", "bad-version")
def test_odd_ids(request_id: Any, kind: str) -> None:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    if kind == "request":
        msg["method"] = "tools/list"
    elif kind == "response":
        msg["result"] = {}
    elif kind == "error":
        msg["error"] = {"code": -1, "message": "m"}
    else:
        msg["jsonrpc"] = "1.0"
    message = check_parse(dumps(msg))
    valid = isinstance(request_id, (int, str)) and not isinstance(request_id, bool)
    if kind in ("request", "response"):
        assert (message is not None) == valid


def test_nasty_documents() -> None:
    """Deep nesting, huge numbers, NaN, 1e999 and bad UTF-8 only ever give ParseError."""
    for data in NASTY_JSON:
        check_parse(data)


def test_non_finite_numbers_are_refused() -> None:
    """NaN, Infinity and 1e999 are not JSON numbers we could ever write back."""
    for data in (b"NaN", b'{"a":Infinity}', b'{"jsonrpc":"2.0","id":1,"result":{"x":-1e999}}'):
        with pytest.raises(ParseError) as caught:
            jsonrpc.parse(data)
        assert caught.value.code == jsonrpc.PARSE_ERROR
