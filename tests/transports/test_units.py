"""The pure parts of the HTTP transports: SSE parsing, header encoding, x-mcp-header rules, URLs."""

from __future__ import annotations

import base64

import pytest

from mcpcli.core.wire import (
    encode_value,
    invalid_tool_reason,
    param_headers,
    standard_headers,
)
from mcpcli.errors import MessageTooLarge
from mcpcli.transports.http import display_url, origin_of, same_origin, snippet
from mcpcli.transports.sse_events import SSEDecoder

# -- SSE -------------------------------------------------------------------------


def test_sse_events_split_across_chunks_and_line_endings() -> None:
    decoder = SSEDecoder()
    events = []
    for chunk in (b"event: message\r\nda", b"ta: {\"a\":\r", b"\ndata: 1}\r\n\r\n", b"data: x\rdata: y\r\r"):
        events += decoder.feed(chunk)
    assert [(e.event, e.data) for e in events] == [("message", '{"a":\n1}'), ("message", "x\ny")]


def test_sse_comments_ids_and_retry() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b": keep-alive\n\nid: 7\nretry: 500\ndata:\n\nid: 8\ndata: hi\n\n")
    # The priming event (empty data) still dispatches; transports skip it.
    assert [(e.id, e.data) for e in events] == [("7", ""), ("8", "hi")]
    assert decoder.last_event_id == "8"
    assert decoder.retry == 500


def test_sse_event_without_data_is_not_dispatched_but_sets_the_id() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 3\n\n") == []
    assert decoder.last_event_id == "3"


def test_sse_bom_and_bad_retry_are_ignored() -> None:
    decoder = SSEDecoder()
    events = decoder.feed("\ufeffretry: soon\ndata: ok\n\n".encode())
    assert [e.data for e in events] == ["ok"]
    assert decoder.retry is None


def test_sse_event_that_never_ends_is_capped() -> None:
    decoder = SSEDecoder(max_event_bytes=1000)
    for _ in range(19):
        assert decoder.feed(b"data: " + b"x" * 50 + b"\n") == []
    with pytest.raises(MessageTooLarge):
        decoder.feed(b"data: " + b"x" * 50 + b"\n")


def test_sse_line_that_never_ends_is_capped() -> None:
    decoder = SSEDecoder(max_event_bytes=1000)
    for _ in range(20):
        decoder.feed(b"x" * 50)
    with pytest.raises(MessageTooLarge):
        decoder.feed(b"x" * 50)


# -- 2026-07-28 request headers ----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("us-west1", "us-west1"),
        ("us west 1", "us west 1"),
        ("", ""),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("\tindented", "=?base64?" + base64.b64encode(b"\tindented").decode() + "?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ],
)
def test_header_value_encoding(value: str, encoded: str) -> None:
    assert encode_value(value) == encoded


def test_standard_headers_name_the_target() -> None:
    assert standard_headers("tools/call", {"name": "get_weather"}) == {
        "Mcp-Method": "tools/call", "Mcp-Name": "get_weather"}
    assert standard_headers("resources/read", {"uri": "file:///a b"}) == {
        "Mcp-Method": "resources/read", "Mcp-Name": "file:///a b"}
    assert standard_headers("prompts/get", {"name": "é"})["Mcp-Name"].startswith("=?base64?")
    assert standard_headers("tools/list", {}) == {"Mcp-Method": "tools/list"}


SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "nested": {"type": "object", "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}}},
        "query": {"type": "string"},
    },
}


def test_param_headers_mirror_annotated_values_and_omit_null_and_absent() -> None:
    args = {"region": "us-west1", "priority": 42, "verbose": None, "nested": {"tenant": "ä"}, "query": "q"}
    assert param_headers(SCHEMA, args) == {
        "Mcp-Param-Region": "us-west1",
        "Mcp-Param-Priority": "42",
        "Mcp-Param-Tenant": "=?base64?w6Q=?=",
    }
    assert param_headers(SCHEMA, {"verbose": False}) == {"Mcp-Param-Verbose": "false"}


@pytest.mark.parametrize(
    ("prop", "reason"),
    [
        ({"type": "string", "x-mcp-header": ""}, "empty"),
        ({"type": "object", "x-mcp-header": "Data"}, "not a string, integer or boolean"),
        ({"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"}, "not a string"),
        ({"type": "null", "x-mcp-header": "Nil"}, "not a string"),
        ({"type": "number", "x-mcp-header": "Score"}, "not a string"),
        ({"type": "string", "x-mcp-header": "My Region"}, "not an HTTP token"),
        ({"type": "string", "x-mcp-header": "Region:Primary"}, "not an HTTP token"),
        ({"type": "string", "x-mcp-header": "Région"}, "not an HTTP token"),
        ({"type": "string", "x-mcp-header": "Region\t1"}, "not an HTTP token"),
    ],
)
def test_invalid_annotations_make_the_tool_invalid(prop: dict[str, object], reason: str) -> None:
    tool = {"name": "t", "inputSchema": {"type": "object", "properties": {"v": prop}}}
    found = invalid_tool_reason(tool)
    assert found is not None and reason in found


def test_duplicate_and_unreachable_annotations_are_invalid() -> None:
    dup = {"type": "object", "properties": {
        "a": {"type": "string", "x-mcp-header": "MyField"},
        "b": {"type": "string", "x-mcp-header": "myfield"}}}
    assert "twice" in (invalid_tool_reason({"inputSchema": dup}) or "")
    for where in ("items", "anyOf", "$defs"):
        sub = {"type": "string", "x-mcp-header": "X"}
        schema: dict[str, object] = {"type": "object"}
        if where == "items":
            schema["properties"] = {"list": {"type": "array", "items": {"type": "object", "properties": {"x": sub}}}}
        elif where == "anyOf":
            schema["anyOf"] = [{"properties": {"x": sub}}]
        else:
            schema["$defs"] = {"x": sub}
            schema["properties"] = {"x": {"$ref": "#/$defs/x"}}
        assert "not reachable" in (invalid_tool_reason({"inputSchema": schema}) or ""), where


def test_valid_tools_and_property_names_that_look_like_the_keyword_pass() -> None:
    assert invalid_tool_reason({"inputSchema": SCHEMA}) is None
    tricky = {"type": "object", "properties": {"x-mcp-header": {"type": "object"}},
              "default": {"x-mcp-header": 3}}
    assert invalid_tool_reason({"inputSchema": tricky}) is None
    assert invalid_tool_reason({"name": "no schema"}) is None


# -- URLs and messages -------------------------------------------------------------


def test_display_url_hides_userinfo_query_and_fragment() -> None:
    assert display_url("https://user:pw@Example.com:8443/mcp?token=s3cret#x") == "https://example.com:8443/mcp"
    assert display_url("http://[::1]:9/mcp") == "http://[::1]:9/mcp"


def test_origins_compare_scheme_host_and_port() -> None:
    assert origin_of("https://a.example/x") == origin_of("https://A.example:443/y")
    assert origin_of("http://a.example/") != origin_of("https://a.example/")
    assert origin_of("http://127.0.0.1:1/") != origin_of("http://127.0.0.1:2/")


def test_same_origin_is_false_for_a_malformed_url() -> None:
    assert same_origin("https://A.example:443/x", "https://a.example/y")
    assert not same_origin("https://a.example:99999/", "https://a.example/")
    assert not same_origin("http://[::1/", "http://[::1]/")


def test_snippet_is_one_printable_line() -> None:
    text = snippet(b"<html>\n  <body>\x1b[31mbad</body>" + b"x" * 500)
    # The escape shows as `\x1b`, as everywhere else (it used to become a space).
    assert text == "<html> <body>\\x1b[31mbad</body>" + "x" * 170  # the first 200 bytes


def test_sse_decoder_notes_invalid_utf8_once_even_split_across_chunks() -> None:
    from mcpcli.transports.sse_events import SSEDecoder

    decoder = SSEDecoder()
    smile = "☺".encode()
    events = decoder.feed(b"data: a" + smile[:1]) + decoder.feed(smile[1:] + b"\n\n")
    assert [e.data for e in events] == ["a☺"] and not decoder.invalid_utf8  # split, but valid
    events = decoder.feed(b"data: \xff\n\n")
    assert [e.data for e in events] == ["\ufffd"] and decoder.invalid_utf8


def test_the_package_re_exports_exactly_the_seams_names() -> None:
    """`mcpcli.transports` names what `transports.base` exports (loaded on first use), no more, no less."""
    import mcpcli.transports
    from mcpcli.transports import base

    assert sorted(mcpcli.transports.__all__) == sorted(base.__all__)
    for name in base.__all__:
        assert getattr(mcpcli.transports, name) is getattr(base, name)
