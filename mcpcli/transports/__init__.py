"""Transports: how the client (and a served connection) reaches a peer.

The transport seam itself (`Transport`, `TransportTraits`, `Envelope`, the read and write
streams, the line framing) is `mcpcli.transports.base`; its names are re-exported here and
loaded on first use, so that importing a light module of the package (`spawn`, which the
one-shot fast path and the early spawn import to start a server before anything else) does
not load the seam's dataclasses, typing and `jsonrpc` first: about 15 ms of CPU that now
runs while the server boots.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from mcpcli.transports.base import (
        Envelope,
        LineSplitter,
        ReadStream,
        RequestFailed,
        Streams,
        Transport,
        TransportTraits,
        WriteStream,
        line_item,
    )

__all__ = [
    "Envelope",
    "LineSplitter",
    "ReadStream",
    "RequestFailed",
    "Streams",
    "Transport",
    "TransportTraits",
    "WriteStream",
    "line_item",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from mcpcli.transports import base

        value = getattr(base, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
