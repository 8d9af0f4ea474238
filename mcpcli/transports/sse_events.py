"""An incremental Server-Sent Events parser with size caps (no I/O).

Both HTTP transports read SSE: Streamable HTTP response and GET streams, and
the legacy HTTP+SSE stream. Bytes go in as they arrive (`feed`), complete
events come out. The parser follows the WHATWG event-stream rules that matter
here: lines end in CRLF, LF or CR; a blank line dispatches the event; `:`
starts a comment (keep-alives); `data` lines are joined with `\\n`; `id` and
`retry` persist across events; an event with no data is not dispatched (but
its `id`/`retry` still count, which is how 2025-11-25 servers "prime" a
stream).

Caps keep a hostile or broken server from growing our memory: one line, and
one event's accumulated data, may not exceed `max_event_bytes`
(`MessageTooLarge` otherwise), by default the protocol's `MAX_MESSAGE_BYTES`.
"""

from __future__ import annotations

import codecs
import re

from mcpcli.core.protocol import MAX_MESSAGE_BYTES
from mcpcli.errors import MessageTooLarge

__all__ = ["INVALID_UTF8", "SSEDecoder", "SSEEvent"]

#: The warning a transport gives (once per stream) when `SSEDecoder.invalid_utf8` is set.
INVALID_UTF8 = "{}: the server sent invalid UTF-8 on an SSE stream (shown as U+FFFD)"

_LINE_END = re.compile("\r\n|\r|\n")
_UTF8 = codecs.getincrementaldecoder("utf-8")


class SSEEvent:
    """One dispatched event: `event` defaults to "message"."""

    __slots__ = ("data", "event", "id", "retry")

    def __init__(self, event: str, data: str, id: str | None = None, retry: int | None = None) -> None:
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry

    def __repr__(self) -> str:
        return f"SSEEvent({self.event!r}, {self.data!r}, id={self.id!r}, retry={self.retry!r})"


class SSEDecoder:
    """Feed bytes, get events. Keeps `last_event_id` and `retry` for reconnects."""

    def __init__(self, *, max_event_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self.max_event_bytes = max_event_bytes
        #: The last `id` the stream set (the Last-Event-ID for a reconnect).
        self.last_event_id: str | None = None
        #: The last `retry` value in milliseconds, if the server sent one.
        self.retry: int | None = None
        # Strict until the stream proves invalid, then replacing: one decode per byte either way.
        self._decoder = _UTF8()
        #: Set once the stream held invalid UTF-8 (decoded as U+FFFD from then on).
        self.invalid_utf8 = False
        self._invalid_told = False
        self._line = ""
        self._pending_cr = False
        self._event = ""
        self._data: list[str] = []
        self._data_size = 0
        self._has_data = False
        self._first = True

    def take_invalid_utf8(self) -> bool:
        """True the first time after the stream held invalid UTF-8: the transport warns once."""
        if self.invalid_utf8 and not self._invalid_told:
            self._invalid_told = True
            return True
        return False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Parse `chunk`; return the events it completed."""
        try:
            text = self._decoder.decode(chunk)
        except UnicodeDecodeError:  # only ever from the strict decoder, its state unchanged
            self.invalid_utf8 = True
            state = self._decoder.getstate()
            self._decoder = _UTF8(errors="replace")
            self._decoder.setstate(state)
            text = self._decoder.decode(chunk)
        if self._first and text:
            self._first = False
            if text.startswith("\ufeff"):
                text = text[1:]
        if self._pending_cr and text:
            # The LF of a CRLF whose CR ended the previous chunk's last line.
            self._pending_cr = False
            if text.startswith("\n"):
                text = text[1:]
        # Whole lines at C speed: split at every line end (CRLF, CR or LF).
        lines = _LINE_END.split(text) if "\r" in text else text.split("\n")
        lines[0] = self._line + lines[0]
        rest = lines.pop()  # after the last line end: the start of a line still arriving
        if text:
            self._pending_cr = rest == "" and text.endswith("\r")
        self._line = rest
        events: list[SSEEvent] = []
        for line in lines:
            event = self._process_line(line)
            if event is not None:
                events.append(event)
        if len(rest) > self.max_event_bytes:
            raise MessageTooLarge(
                f"the server sent an SSE line longer than {self.max_event_bytes} bytes"
            )
        return events

    def _process_line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment: keep-alive
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_data = True
            self._data_size += len(value) + 1
            if self._data_size > self.max_event_bytes:
                raise MessageTooLarge(
                    f"the server sent an SSE event larger than {self.max_event_bytes} bytes"
                )
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\x00" not in value:
                self.last_event_id = value
        elif name == "retry" and value.isascii() and value.isdigit() and len(value) <= 12:
            # ASCII digits only (WHATWG); "²" is isdigit() but not int(), and int() refuses
            # over 4300 digits. Longer than 12 digits (30 years in ms) is ignored too.
            self.retry = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        event_type = self._event or "message"
        data = "\n".join(self._data)
        has_data = self._has_data
        self._event = ""
        self._data = []
        self._data_size = 0
        self._has_data = False
        if not has_data:
            return None
        return SSEEvent(event_type, data, self.last_event_id, self.retry)
