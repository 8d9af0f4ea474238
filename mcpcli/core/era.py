"""What era negotiation is given, without I/O: the memory a driver keeps across runs
(`EraMemory`; `mcpcli.cache` in practice), what it must know of the transport
(`ProbeTraits`), and what a stale remembered era looks like (`looks_legacy`)."""

from __future__ import annotations

from typing import Any, Protocol

from mcpcli.core.plain import Plain
from mcpcli.errors import McpCliError, RPCError, TransportError

__all__ = ["EraMemory", "NoMemory", "ProbeTraits", "looks_legacy"]

JSON = dict[str, Any]


class EraMemory(Protocol):
    """What era negotiation remembers across runs, kept by the driver (`mcpcli.cache`)."""

    def remembered_legacy(self) -> JSON | None:
        """`{"era": "legacy", "version": ...}` if this stdio command line was legacy last time."""

    def remember_legacy(self, server_info: JSON | None) -> None:
        """Remember this command line as legacy (None: forget it)."""

    def cached_discover(self) -> JSON | None:
        """A fresh cached `server/discover` result for this URL (HTTP), if any."""

    def store_discover(self, result: JSON) -> None:
        """Keep a `server/discover` result the server allowed to be cached."""

    def forget_discover(self) -> None:
        """The cached result turned out wrong."""


class NoMemory:
    """An `EraMemory` that remembers nothing (in-memory transports, tests)."""

    def remembered_legacy(self) -> JSON | None:
        return None

    def remember_legacy(self, server_info: JSON | None) -> None:
        return None

    def cached_discover(self) -> JSON | None:
        return None

    def store_discover(self, result: JSON) -> None:
        return None

    def forget_discover(self) -> None:
        return None


class ProbeTraits(Plain):
    """What negotiation must know of the transport: `legacy_only` for HTTP+SSE
    (2024-11-05 predates the modern era: no probe); `silence_is_legacy` where a server that
    stays silent on the probe is legacy (stdio; over HTTP every request is answered, so an
    error status means legacy instead)."""

    __slots__ = ("legacy_only", "silence_is_legacy")

    def __init__(self, legacy_only: bool = False, silence_is_legacy: bool = False) -> None:
        self.legacy_only = legacy_only
        self.silence_is_legacy = silence_is_legacy


def looks_legacy(exc: McpCliError) -> bool:
    """An error a legacy server gives a modern request (a cached era may be stale)."""
    if isinstance(exc, TransportError):
        return exc.status in (400, 404, 405)
    if isinstance(exc, RPCError):
        return exc.code in (-32000, -32600, -32601)
    return False
