"""`Mcp-Name` / `Mcp-Param-*` header values: the client's encoder against the server's decoder.

Properties: for any string (non-ASCII, control characters, spaces at the ends,
the `=?base64?` sentinel itself, very long) the client's header value is a valid
HTTP field value of visible ASCII, and the server, reading it the way it reads
real requests (latin-1, optional whitespace stripped), decodes exactly the
original; integers (within the spec's +-(2^53-1)) and booleans mirrored into
`Mcp-Param-*` compare equal to the body's value; and the server's decoder takes
any header text without an exception other than its documented ValueError.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from fuzz.strategies import ANY_CHAR
from mcpcli.core.wire import decode_value, encode_value, param_headers, same_value, standard_headers
from mcpcli.server.http_asgi import Headers

MAX_SAFE = 2**53 - 1
#: Valid strings (no lone surrogates: those cannot travel as UTF-8 at all).
strings = st.text(max_size=40) | st.text(st.characters(max_codepoint=0x7F), max_size=40) | st.sampled_from(
    ["", " ", " a", "a ", "\t", "=?base64?", "?=", "=?base64??=", "=?base64?YQ==?=", "\x7f", "é", "\r\n"]
)


def visible_ascii(value: str) -> bool:
    """An HTTP field value the server will read back unchanged: VCHAR/SP, no edge spaces."""
    return all(0x20 <= ord(c) <= 0x7E for c in value) and value == value.strip(" \t")


def server_reads(name: str, value: str) -> str | None:
    """What the server's header table yields for a header sent with `value`."""
    return Headers([(name.encode("latin-1"), value.encode("latin-1"))]).only(name.lower())


@given(strings)
@example("x" * 10_000)
@example("=?base64?abc?=")
def test_string_values_round_trip(text: str) -> None:
    encoded = encode_value(text)
    assert visible_ascii(encoded)
    received = server_reads("Mcp-Name", encoded)
    assert received is not None
    assert decode_value(received) == text


@given(st.text(ANY_CHAR, max_size=10))
@example("\udcff")  # a surrogate-escaped byte from argv: `mcp tools call URL $'\xff'`
def test_unencodable_strings_still_give_a_header(text: str) -> None:
    """Lone surrogates cannot round trip, but encoding them must not crash the client."""
    assert visible_ascii(encode_value(text))


@given(st.text(max_size=60) | st.binary(max_size=60).map(lambda b: b.decode("latin-1")))
def test_decoder_takes_any_header_text(raw: str) -> None:
    try:
        decode_value(raw.strip(" \t"))
    except ValueError:
        pass


@given(st.sampled_from(["tools/call", "prompts/get", "resources/read", "tasks/get"]), strings)
def test_standard_headers_round_trip(method: str, name: str) -> None:
    field = {"resources/read": "uri", "tasks/get": "taskId"}.get(method, "name")
    headers = standard_headers(method, {field: name})
    assert headers["Mcp-Method"] == method
    assert decode_value(server_reads("Mcp-Name", headers["Mcp-Name"]) or "") == name


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True),
        st.tuples(
            st.from_regex(r"[A-Za-z0-9-]{1,8}", fullmatch=True),
            st.sampled_from(["string", "integer", "boolean"]),
        ),
        max_size=4,
    ).filter(lambda d: len({h.lower() for h, _ in d.values()}) == len(d)),
    st.data(),
)
def test_param_headers_round_trip(props: dict[str, tuple[str, str]], data: st.DataObject) -> None:
    schema = {
        "type": "object",
        "properties": {name: {"type": kind, "x-mcp-header": header} for name, (header, kind) in props.items()},
    }
    values = {
        "string": strings,
        "integer": st.integers(min_value=-MAX_SAFE, max_value=MAX_SAFE),
        "boolean": st.booleans(),
    }
    arguments: dict[str, Any] = {
        name: data.draw(values[kind] | st.none()) for name, (_header, kind) in props.items()
    }
    headers = param_headers(schema, arguments)
    for name, (header, _kind) in props.items():
        sent = headers.get(f"Mcp-Param-{header}")
        if arguments[name] is None:
            assert sent is None  # absent and null values are omitted
            continue
        assert sent is not None and visible_ascii(sent)
        received = server_reads(f"Mcp-Param-{header}", sent)
        assert received is not None
        assert same_value(decode_value(received), arguments[name])
