"""The client's side of the handshake, sans I/O: shared by `mcpcli.client` (anyio) and
the one-shot stdio fast path (`mcpcli.cli._oneshot_client`, no anyio, no click), so the
two cannot drift in what they send and how they read the answers.

Pure functions over JSON dicts; a bad answer raises `mcpcli.errors.ProtocolError`.
Imports only foundations (`protocol`, `errors`, `jsonrpc` for a type).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpcli.core.plain import Plain
from mcpcli.core.protocol import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LEGACY_VERSIONS,
    LOG_LEVEL_KEY,
    MODERN_VERSIONS,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    Era,
    is_shutting_down,
    pick_version,
)
from mcpcli.errors import (
    McpCliError,
    ProtocolError,
    RPCError,
    ServerShuttingDown,
    UnsupportedVersionError,
)

if TYPE_CHECKING:
    from mcpcli.core.jsonrpc import ErrorObject

__all__ = [
    "Handshake",
    "next_round",
    "offered_versions",
    "parse_discover",
    "parse_initialize",
    "request_meta",
    "round_kind",
    "rpc_error_from",
    "version_of",
    "with_meta",
]

JSON = dict[str, Any]


class Handshake(Plain):
    """What a client keeps of a `server/discover` or `initialize` result
    (`supported_versions`: the modern versions the server offered, `server/discover` only)."""

    __slots__ = ("capabilities", "era", "instructions", "protocol_version", "server_info", "supported_versions")

    def __init__(self, era: Era, protocol_version: str, capabilities: JSON, server_info: JSON,
                 instructions: str | None, supported_versions: list[str] | None = None) -> None:
        self.era = era
        self.protocol_version = protocol_version
        self.capabilities = capabilities
        self.server_info = server_info
        self.instructions = instructions
        self.supported_versions = supported_versions


def version_of(server_info: JSON) -> str:
    """`name version` of a server: what a remembered era is checked against."""
    return f"{server_info.get('name', '')} {server_info.get('version', '')}".strip()


def request_meta(version: str, client_info: JSON, capabilities: JSON, log_level: str | None = None) -> JSON:
    """The reserved `_meta` of a 2026-07-28 request: version, identity, capabilities."""
    meta: JSON = {
        PROTOCOL_VERSION_KEY: version,
        CLIENT_INFO_KEY: client_info,
        CLIENT_CAPABILITIES_KEY: capabilities,
    }
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    return meta


def with_meta(params: JSON, meta: JSON) -> JSON:
    """A copy of `params` whose `_meta` has the caller's entries overlaid by `meta`."""
    sent = dict(params)
    merged = dict(sent.get("_meta") or {})
    merged.update(meta)
    sent["_meta"] = merged
    return sent


def offered_versions(result: JSON) -> list[str] | None:
    """The string entries of a discover result's `supportedVersions`; None when it is no list."""
    versions = result.get("supportedVersions")
    if not isinstance(versions, list):
        return None
    return [v for v in versions if isinstance(v, str)]


def _instructions(result: JSON) -> str | None:
    instructions = result.get("instructions")
    return instructions if isinstance(instructions, str) else None


def parse_discover(result: JSON, version: str) -> Handshake | None:
    """A `server/discover` result asked with `version`; None if it offers no version of ours."""
    offered = offered_versions(result)
    if offered is None:
        return None
    choice = version if version in offered else pick_version(offered, prefer=MODERN_VERSIONS)
    if choice is None:
        return None
    caps = result.get("capabilities")
    meta = result.get("_meta")
    info = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
    if not isinstance(info, dict):
        # Some servers put it at the top level.
        info = result.get("serverInfo")
    return Handshake(
        era="modern",
        protocol_version=choice,
        capabilities=caps if isinstance(caps, dict) else {},
        server_info=info if isinstance(info, dict) else {},
        instructions=_instructions(result),
        supported_versions=offered,
    )


def parse_initialize(result: JSON) -> Handshake:
    """An `initialize` result; a version we do not speak is a `ProtocolError`."""
    chosen = result.get("protocolVersion")
    if not isinstance(chosen, str) or chosen not in LEGACY_VERSIONS:
        raise ProtocolError(
            f"the server chose protocol version {chosen!r}, which this client does not speak"
        )
    caps = result.get("capabilities")
    info = result.get("serverInfo")
    return Handshake(
        era="legacy",
        protocol_version=chosen,
        capabilities=caps if isinstance(caps, dict) else {},
        server_info=info if isinstance(info, dict) else {},
        instructions=_instructions(result),
    )


def round_kind(method: str, result: JSON, *, creates_tasks: bool, takes_input: bool) -> str:
    """What a 2026-07-28 answer asks of the client: "complete", "task" (the caller drives
    it) or "input" (answer its input requests and retry); anything else is a `ProtocolError`."""
    kind = result.get("resultType", "complete")
    if kind == "complete":
        return "complete"
    if kind == "task" and creates_tasks:
        return "task"
    if kind != "input_required":
        raise ProtocolError(f"{method}: unknown resultType {kind!r}")
    if not takes_input:
        raise ProtocolError(f"{method}: the server asked for input, which this method cannot")
    return "input"


def next_round(params: JSON, result: JSON, responses: JSON) -> JSON:
    """The params of the retry after an `input_required` answer: the first params, the
    input responses and the server's `requestState` (if any)."""
    base = dict(params)
    base["inputResponses"] = responses
    if "requestState" in result:
        base["requestState"] = result["requestState"]
    return base


def rpc_error_from(error: ErrorObject) -> McpCliError:
    """The typed exception for an error object received from the peer.

    A server that stops before answering says so (`protocol.is_shutting_down`): that
    is the connection failing (exit 4), not the request being refused."""
    if is_shutting_down(error.code, error.data):
        return ServerShuttingDown(f"the server shut down before answering: {error.message}")
    if error.code == UNSUPPORTED_PROTOCOL_VERSION:
        return UnsupportedVersionError(error.code, error.message, error.data)
    return RPCError(error.code, error.message, error.data)
