"""W3C Trace Context for MCP: `traceparent` and `tracestate` in a request's `_meta`.

The 2026-07-28 revision reserves the `_meta` keys `traceparent`, `tracestate` and
`baggage` for OpenTelemetry trace context, with values in the W3C formats
(https://www.w3.org/TR/trace-context/); the OpenTelemetry semantic conventions for
MCP put them in `params._meta` in any revision. The environment carries the same
values as `TRACEPARENT` and `TRACESTATE` (OpenTelemetry's environment carrier, what CI
systems and `otel-cli` use).

This module parses, checks and writes them, and holds the context of the request
being handled (`current`), which a client sends on (a gateway's upstream request, a
session's call) and a script receives in its environment. The standard library
only: no OpenTelemetry here (`mcpcli.spans` records spans when asked to).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ENV_PARENT",
    "ENV_STATE",
    "FORMAT",
    "META_PARENT",
    "META_STATE",
    "TraceContext",
    "carried_by",
    "current",
    "from_environ",
    "from_meta",
    "new_span_id",
    "new_trace_id",
    "parse",
    "parse_traceparent",
    "parse_tracestate",
    "request_meta",
]

META_PARENT = "traceparent"
META_STATE = "tracestate"
ENV_PARENT = "TRACEPARENT"
ENV_STATE = "TRACESTATE"

#: What a `traceparent` looks like, for messages.
FORMAT = "00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>"

_HEX = frozenset("0123456789abcdef")
#: W3C: a list of at most 32 members; vendors propagate at least 512 characters.
_STATE_MEMBERS = 32
_STATE_LENGTH = 512
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_LOWER_DIGIT = _LOWER | frozenset("0123456789")
_KEY_CHARS = _LOWER_DIGIT | frozenset("_-*/")


@dataclass(frozen=True)
class TraceContext:
    """One span's place in a trace: what a `traceparent` says, and the `tracestate` with it."""

    trace_id: str
    #: The span this context names (the parent of whatever it is sent to).
    span_id: str
    flags: int = 1
    state: str | None = None
    #: Made here (a span of ours), not received: spans record it as a local parent.
    local: bool = field(default=False, compare=False)

    @property
    def traceparent(self) -> str:
        """The version 00 form (a later version's extra fields are never passed on)."""
        return f"00-{self.trace_id}-{self.span_id}-{self.flags:02x}"

    @property
    def sampled(self) -> bool:
        return bool(self.flags & 1)

    def child(self) -> TraceContext:
        """A new span in the same trace, a child of this one."""
        return TraceContext(self.trace_id, new_span_id(), self.flags, self.state, local=True)

    def meta(self) -> dict[str, str]:
        """The `_meta` entries that carry it."""
        entries = {META_PARENT: self.traceparent}
        if self.state:
            entries[META_STATE] = self.state
        return entries

    def environ(self) -> dict[str, str]:
        """The environment variables that carry it (OpenTelemetry's environment carrier)."""
        entries = {ENV_PARENT: self.traceparent}
        if self.state:
            entries[ENV_STATE] = self.state
        return entries


def carried_by(method: str) -> bool:
    """Whether a client request of `method` carries the trace context: all but `initialize`.

    A legacy `initialize` goes without: dual-era HTTP servers (the 2026-07-28 reference
    server's rule) take any `_meta` on a request without a session as a 2026-07-28
    request. The handshake is not the call being traced anyway."""
    return method != "initialize"


def request_meta(method: str, context: TraceContext) -> dict[str, str]:
    """The `_meta` entries a client request of `method` carries (`carried_by`)."""
    return context.meta() if carried_by(method) else {}


#: The trace context of the request being handled here (a server's, or a session call's):
#: what a request made on its behalf continues. None outside any traced request.
current: ContextVar[TraceContext | None] = ContextVar("mcpcli_trace_context", default=None)


def _hex(text: str, length: int) -> bool:
    return len(text) == length and _HEX.issuperset(text)


def new_span_id() -> str:
    """A random 8-byte span id, never all zeros (W3C: invalid)."""
    import secrets

    while True:
        span_id = secrets.token_hex(8)
        if span_id != "0" * 16:
            return span_id


def new_trace_id() -> str:
    """A random 16-byte trace id, never all zeros."""
    import secrets

    while True:
        trace_id = secrets.token_hex(16)
        if trace_id != "0" * 32:
            return trace_id


def parse_traceparent(value: Any) -> tuple[str, str, int] | None:
    """(trace id, parent id, flags) of a W3C `traceparent`, or None when it is not one.

    Lowercase hex only; version `ff` and all-zero ids are invalid; a version after 00
    may carry more fields after a `-`, which are ignored (W3C: parse what you know)."""
    if not isinstance(value, str):
        return None
    value = value.strip(" \t")
    if len(value) < 55:
        return None
    version, trace_id, parent_id, flags = value[0:2], value[3:35], value[36:52], value[53:55]
    if value[2] != "-" or value[35] != "-" or value[52] != "-":
        return None
    if not _hex(version, 2) or version == "ff":
        return None
    if len(value) > 55 and (version == "00" or value[55] != "-"):
        return None
    if not _hex(trace_id, 32) or trace_id == "0" * 32:
        return None
    if not _hex(parent_id, 16) or parent_id == "0" * 16:
        return None
    if not _hex(flags, 2):
        return None
    return trace_id, parent_id, int(flags, 16)


def _state_key(key: str) -> bool:
    """W3C: a simple key (`a-z` first, at most 256), or `tenant@system` (241 and 14)."""
    tenant, at, system = key.partition("@")
    if not at:
        return 0 < len(key) <= 256 and key[0] in _LOWER and _KEY_CHARS.issuperset(key)
    return (0 < len(tenant) <= 241 and tenant[0] in _LOWER_DIGIT and _KEY_CHARS.issuperset(tenant)
            and 0 < len(system) <= 14 and system[0] in _LOWER and _KEY_CHARS.issuperset(system))


def _state_value(value: str) -> bool:
    """W3C: 1 to 256 printable ASCII characters but `,` and `=`, not ending in a space."""
    return (0 < len(value) <= 256 and value[-1] != " "
            and all(0x20 <= ord(c) <= 0x7E and c not in ",=" for c in value))


def parse_tracestate(value: Any) -> str | None:
    """A W3C `tracestate`, its members joined by commas; None when absent or invalid (W3C:
    an invalid one is dropped whole). Past 512 characters, members are dropped from the end."""
    if not isinstance(value, str):
        return None
    members: list[str] = []
    keys: set[str] = set()
    for raw in value.split(","):
        member = raw.strip(" \t")
        if not member:
            continue
        key, eq, val = member.partition("=")
        if not eq or not _state_key(key) or not _state_value(val) or key in keys:
            return None
        keys.add(key)
        members.append(member)
    if not members or len(members) > _STATE_MEMBERS:
        return None
    while members and len(",".join(members)) > _STATE_LENGTH:
        members.pop()
    return ",".join(members) or None


def parse(traceparent: Any, tracestate: Any = None) -> TraceContext | None:
    """A received context: None when `traceparent` is invalid (and `tracestate` goes with it)."""
    parts = parse_traceparent(traceparent)
    if parts is None:
        return None
    return TraceContext(*parts, state=parse_tracestate(tracestate))


def from_meta(meta: Any) -> TraceContext | None:
    """The trace context a request's `_meta` carries, or None (absent or malformed: ignored)."""
    if type(meta) is not dict or META_PARENT not in meta:
        return None
    return parse(meta[META_PARENT], meta.get(META_STATE))


def from_environ(environ: Mapping[str, str]) -> TraceContext | None:
    """`TRACEPARENT` (with `TRACESTATE`) of an environment; None when unset or invalid."""
    value = environ.get(ENV_PARENT)
    if not value:
        return None
    return parse(value, environ.get(ENV_STATE))
