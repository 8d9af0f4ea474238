"""The per-request `_meta` of the 2026-07-28 era: validation and its errors.

A modern request carries its protocol version, client capabilities, client info
and log level in `params._meta` instead of a session. `parse_meta` checks the
required keys (-32602 when malformed) and `check_version` the revision
(-32022 with the supported list). Both raise `ModernError`, which carries the
HTTP status the spec requires (the stateless HTTP path answers with it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcpcli.core.jsonrpc import INVALID_PARAMS
from mcpcli.core.protocol import (
    ALL_VERSIONS,
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    LOG_LEVELS,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcpcli.errors import RPCError

__all__ = ["LEVEL_RANK", "ModernError", "RequestMeta", "check_version", "parse_meta"]

JSON = dict[str, Any]

#: Log levels by severity (`_meta` logLevel, `logging/setLevel`, filtering).
LEVEL_RANK = {level: rank for rank, level in enumerate(LOG_LEVELS)}


class ModernError(RPCError):
    """A 2026-07-28 protocol error with the HTTP status the spec requires for it."""

    def __init__(self, code: int, message: str, data: Any = None, *, status: int = 400) -> None:
        super().__init__(code, message, data)
        self.status = status


@dataclass(slots=True)
class RequestMeta:
    """The validated per-request `_meta` of a 2026-07-28 request."""

    version: str
    capabilities: JSON
    client_info: JSON
    log_level: str | None


def parse_meta(params: JSON | None) -> RequestMeta:
    """Validate the required `_meta` of a 2026-07-28 request (-32602 when malformed)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        raise ModernError(
            INVALID_PARAMS,
            "Invalid params: missing _meta (io.modelcontextprotocol/protocolVersion and "
            "io.modelcontextprotocol/clientCapabilities are required)",
        )
    version = meta.get(PROTOCOL_VERSION_KEY)
    if not isinstance(version, str) or not version:
        raise ModernError(INVALID_PARAMS, f"Invalid params: _meta lacks {PROTOCOL_VERSION_KEY}")
    caps = meta.get(CLIENT_CAPABILITIES_KEY)
    if not isinstance(caps, dict):
        raise ModernError(
            INVALID_PARAMS, f"Invalid params: _meta lacks {CLIENT_CAPABILITIES_KEY}"
        )
    level = meta.get(LOG_LEVEL_KEY)
    if level is not None and (not isinstance(level, str) or level not in LEVEL_RANK):
        raise ModernError(INVALID_PARAMS, f"Invalid params: unknown log level {level!r}")
    info = meta.get(CLIENT_INFO_KEY)
    return RequestMeta(version, caps, info if isinstance(info, dict) else {}, level)


def check_version(version: str) -> None:
    """Refuse a protocol revision this server does not serve statelessly (-32022)."""
    if version not in MODERN_VERSIONS:
        raise ModernError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": list(ALL_VERSIONS), "requested": version},
        )
