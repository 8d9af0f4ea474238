"""JSON-RPC envelope parsing and encoding."""

from __future__ import annotations

import pytest

from mcpcli.core import jsonrpc
from mcpcli.core.jsonrpc import Batch, ErrorResponse, Notification, ParseError, Request, Response


def test_parses_each_message_kind() -> None:
    assert jsonrpc.parse('{"jsonrpc":"2.0","id":1,"method":"ping"}') == Request("ping", None, 1)
    assert jsonrpc.parse('{"jsonrpc":"2.0","method":"n","params":{"a":1}}') == Notification("n", {"a": 1})
    assert jsonrpc.parse('{"jsonrpc":"2.0","id":"x","result":{}}') == Response("x", {})
    err = jsonrpc.parse('{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"nope"}}')
    assert isinstance(err, ErrorResponse) and err.error.code == -32601 and err.id == 2


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("not json", jsonrpc.PARSE_ERROR),
        ("[1, 2", jsonrpc.PARSE_ERROR),
        ("42", jsonrpc.INVALID_REQUEST),
        ('{"id":1,"method":"x"}', jsonrpc.INVALID_REQUEST),
        ('{"jsonrpc":"2.0","id":null,"method":"x"}', jsonrpc.INVALID_REQUEST),
        ('{"jsonrpc":"2.0","id":true,"method":"x"}', jsonrpc.INVALID_REQUEST),
        ('{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}', jsonrpc.INVALID_REQUEST),
        ('{"jsonrpc":"2.0","id":1}', jsonrpc.INVALID_REQUEST),
    ],
)
def test_rejects_what_is_not_a_message(text: str, code: int) -> None:
    with pytest.raises(ParseError) as info:
        jsonrpc.parse(text)
    assert info.value.code == code


def test_invalid_params_keeps_the_request_id_for_the_error_response() -> None:
    with pytest.raises(ParseError) as info:
        jsonrpc.parse('{"jsonrpc":"2.0","id":7,"method":"x","params":"s"}')
    assert info.value.id == 7


def test_batches_only_when_allowed() -> None:
    text = '[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]'
    with pytest.raises(ParseError):
        jsonrpc.parse(text)
    batch = jsonrpc.parse(text, allow_batch=True)
    assert isinstance(batch, Batch) and len(batch.messages) == 2


def test_encoding_is_one_compact_line_even_with_newlines_in_strings() -> None:
    data = jsonrpc.encode(Request("x", {"text": "a\nb", "ü": "é"}, 1))
    assert b"\n" not in data
    assert data == '{"jsonrpc":"2.0","id":1,"method":"x","params":{"text":"a\\nb","ü":"é"}}'.encode()


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":3,"result":{"text":"\xff\xfe"}}', 3),  # invalid UTF-8
        (b'{"jsonrpc":"2.0","id":"a\\"b","error":{"code":', 'a"b'),  # cut off
        (b' { "id" : -2 , "jsonrpc" : "2.0" , "result" : ' + b"[" * 5000, -2),
        (b'{"jsonrpc":"2.0","result":' + b"[" * 5000 + b"]" * 5000 + b',"id":7}', 7),  # id last
        (b'{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{', None),  # a request
        (b'{"jsonrpc":"2.0","method":"x","params":{"id":3,"result":1}}', None),
        (b'{"jsonrpc":"2.0","result":{"a":{"id":5}', None),  # a nested id
        (b'{"id":1.5,"result":{}}', None),
        (b'{"id":true,"result":{}}', None),
        (b"[[[[", None),
        (b"not json at all", None),
    ],
)
def test_recover_response_id(data: bytes, expected: object) -> None:
    from mcpcli.core.jsonrpc import recover_response_id

    assert recover_response_id(data) == expected
    assert recover_response_id(data.decode("utf-8", "replace")) == expected
