"""The SSE parser (`mcpcli.transports.sse_events.SSEDecoder`) against random streams.

Properties: a serialized list of events parses back to exactly those events,
however the bytes are split into chunks (inside a UTF-8 sequence, between CR and
LF); any byte stream gives the same events whole or chunked; and garbage only
ever raises the documented `MessageTooLarge`, when a cap is exceeded.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fuzz.strategies import chunked
from mcpcli.errors import MessageTooLarge
from mcpcli.transports.sse_events import SSEDecoder

#: Text a field value can hold: anything but the line terminators (and NUL, which voids an id).
field_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\r\n\x00"), max_size=12)


def feed_all(chunks: list[bytes], **kwargs: Any) -> list[tuple[str, str, str | None, int | None]]:
    decoder = SSEDecoder(**kwargs)
    events = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return [(e.event, e.data, e.id, e.retry) for e in events]


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[tuple[str, str, str | None, int | None]]]:
    """A serialized event stream and the events it must give."""
    eol = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    out = ["\ufeff"] if draw(st.booleans()) else []
    expected = []
    last_id: str | None = None
    retry: int | None = None
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        lines: list[str] = []
        if draw(st.booleans()):
            lines.append(":" + draw(field_text))  # a comment (keep-alive)
        event = draw(st.none() | field_text)
        if event is not None:
            lines.append("event: " + event)
        if draw(st.booleans()):
            last_id = draw(field_text)
            lines.append("id: " + last_id)
        if draw(st.booleans()):
            retry = draw(st.integers(min_value=0, max_value=10**6))
            lines.append(f"retry: {retry}")
        draw(st.randoms()).shuffle(lines)
        data_lines = draw(st.lists(field_text, min_size=1, max_size=3))
        floor = 0
        for line in data_lines:  # in order, each somewhere after the previous one
            floor = draw(st.integers(min_value=floor, max_value=len(lines)))
            lines.insert(floor, "data: " + line if draw(st.booleans()) or line.startswith(" ") else "data:" + line)
            floor += 1
        out.append("".join(line + eol for line in lines) + eol)
        expected.append((event or "message", "\n".join(data_lines), last_id, retry))
    return "".join(out).encode("utf-8"), expected


@given(st.data(), streams())
def test_events_round_trip_in_any_chunking(data: st.DataObject, stream: Any) -> None:
    raw, expected = stream
    assert feed_all([raw]) == expected
    assert feed_all(data.draw(chunked(raw))) == expected
    assert feed_all([bytes([b]) for b in raw]) == expected


@given(st.data(), st.binary(max_size=300) | st.lists(
    st.sampled_from([b"data: x", b"data:", b"event: e", b"id: 1", b"retry: 5", b":", b"\r", b"\n",
                     b"\r\n", b"\xef\xbb\xbf", b"\xe2\x82", b"\xac", b"\xff", b"id: \x00",
                     "retry: \u00b2".encode(), "retry: \u0661\u0662".encode(), b"retry: " + b"9" * 5000]),
    max_size=30).map(b"".join))
@example(None, b"data: a\r")
@example(None, b"\xef\xbb\xbfdata: x\n\n")
@example(None, "retry: \u00b2\n".encode())  # isdigit() but not int(): ValueError
@example(None, b"retry: " + b"9" * 5000 + b"\n")  # over int()'s 4300-digit limit: ValueError
def test_any_bytes_same_events_whole_or_chunked(data: st.DataObject | None, raw: bytes) -> None:
    whole = feed_all([raw])
    assert all(retry is None or isinstance(retry, int) for _e, _d, _i, retry in whole)
    if data is not None:
        assert feed_all(data.draw(chunked(raw))) == whole


@given(st.data(), st.binary(max_size=300), st.integers(min_value=1, max_value=32))
def test_garbage_only_raises_message_too_large(data: st.DataObject, raw: bytes, cap: int) -> None:
    decoder = SSEDecoder(max_event_bytes=cap)
    try:
        for chunk in data.draw(chunked(raw)):
            for event in decoder.feed(chunk):
                assert len(event.data) <= cap
    except MessageTooLarge:
        pass


def test_oversized_event_is_refused() -> None:
    with pytest.raises(MessageTooLarge):
        feed_all([b"data: " + b"x" * 100 + b"\n\n"], max_event_bytes=10)


@given(st.text(max_size=40) | st.sampled_from(
    ["/messages?session=1", "http://[::1/x", "//[::1", "http://evil.example/m", "HTTP://127.0.0.1:9/m",
     " /m ", "http://127.0.0.1:9@evil.example/", "http://a:99999/", "\x00"]))
@example("http://[::1/x")  # urljoin raised ValueError out of the stream reader
def test_endpoint_event(data: str) -> None:
    """The legacy transport's `endpoint` event: a same-origin URL, or a ProtocolError."""
    from types import SimpleNamespace

    from mcpcli.errors import ProtocolError
    from mcpcli.transports.sse import SseChannel

    async def deliver(item: object) -> None:
        raise AssertionError("nothing is delivered")

    channel = SseChannel(SimpleNamespace(shown="http://127.0.0.1:9/sse"), deliver)  # type: ignore[arg-type]
    try:
        target = channel._endpoint("http://127.0.0.1:9/sse", data)
    except ProtocolError:
        return
    assert target.startswith("http://127.0.0.1:9/") or target == "http://127.0.0.1:9"
