"""Shared Hypothesis strategies: JSON values, odd ids, byte chunkings and mutations."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import strategies as st

#: Any code point, lone surrogates included (a peer can send `"\ud800"` in JSON text).
ANY_CHAR = st.characters(exclude_categories=())
ANY_TEXT = st.text(ANY_CHAR, max_size=20)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**60), max_value=10**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | ANY_TEXT
)

#: Decoded JSON values that any JSON encoder can write back.
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=8,
)
json_objects = st.dictionaries(ANY_TEXT, json_values, max_size=4)

#: JSON-RPC ids, valid and not: huge and negative integers, empty and non-ASCII strings.
odd_ids = (
    st.integers()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | ANY_TEXT
    | st.sampled_from([0, -1, 2**53, 2**63, "", " ", "\u0000", "\ud800", "\U0001f600", "1"])
)
any_ids = odd_ids | json_values


def dumps(value: Any) -> bytes:
    """JSON text a peer could send: ASCII-escaped, so lone surrogates survive as escapes."""
    return json.dumps(value, ensure_ascii=True).encode("ascii")


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    """A well-formed JSON-RPC message object (request, notification, result or error)."""
    kind = draw(st.sampled_from(["request", "notification", "response", "error"]))
    msg: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind in ("request", "notification"):
        msg["method"] = draw(ANY_TEXT)
        if draw(st.booleans()):
            msg["params"] = draw(json_objects)
        if kind == "request":
            msg["id"] = draw(st.integers() | ANY_TEXT)
    elif kind == "response":
        msg["id"] = draw(st.integers() | ANY_TEXT)
        msg["result"] = draw(json_objects)
    else:
        msg["id"] = draw(st.none() | st.integers() | ANY_TEXT)
        error: dict[str, Any] = {"code": draw(st.integers()), "message": draw(ANY_TEXT)}
        if draw(st.booleans()):
            error["data"] = draw(json_values.filter(lambda v: v is not None))
        msg["error"] = error
    return msg


@st.composite
def chunked(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """`data` cut at random places (possibly inside a UTF-8 sequence or a CRLF)."""
    if not data:
        return [data]
    cuts = sorted(draw(st.sets(st.integers(min_value=1, max_value=len(data) - 1), max_size=12))
                  if len(data) > 1 else set())
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` with a few random byte edits: flips, deletions, insertions, truncation."""
    out = bytearray(data)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        op = draw(st.sampled_from(["flip", "delete", "insert", "truncate", "duplicate"]))
        if not out:
            op = "insert"
        pos = draw(st.integers(min_value=0, max_value=max(len(out) - 1, 0)))
        if op == "flip":
            out[pos] ^= 1 << draw(st.integers(min_value=0, max_value=7))
        elif op == "delete":
            del out[pos : pos + draw(st.integers(min_value=1, max_value=8))]
        elif op == "insert":
            out[pos:pos] = draw(st.binary(min_size=1, max_size=8) | st.sampled_from(
                [b"\n", b"\r", b'"', b"{", b"[", b"\\u", b"\xff", b"\xed\xa0\x80", b"1e999", b"NaN"]
            ))
        elif op == "truncate":
            del out[pos:]
        else:
            end = pos + draw(st.integers(min_value=1, max_value=16))
            out[pos:pos] = out[pos:end]
    return bytes(out)


#: Pathological JSON texts: deep nesting, huge numbers, non-JSON constants, bad UTF-8.
NASTY_JSON = [
    b"[" * 3000,
    b'{"a":' * 3000,
    b"[" * 500 + b"]" * 500,
    b"1" * 5000,
    b"1e999",
    b"-1e999",
    b"NaN",
    b"Infinity",
    b'"\\ud800"',
    b"\xff\xfe",
    b"\xed\xa0\x80",
    b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1e999}}',
    b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":NaN}}',
    b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"x"}',
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"x"}',
    b'{"jsonrpc":"2.0","id":"\\udfff","result":{}}',
    b'{"jsonrpc":"1.0","id":"\\ud800"}',
    b'{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"\\ud800"}}',
    b'{"jsonrpc":"2.0","id":1,"method":"\\ud800x"}',
]
