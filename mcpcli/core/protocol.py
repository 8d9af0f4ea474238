"""MCP protocol facts shared by the client and the server: revisions, eras, `_meta` keys.

Two eras exist. *Legacy* revisions (2024-11-05 .. 2025-11-25) open with an
`initialize` handshake and keep session state; the *modern* revision 2026-07-28 is
stateless and carries version, identity and capabilities in every request's `_meta`.
"""

from __future__ import annotations

from typing import Any, Literal

from mcpcli.text import LOG_LEVELS

__all__ = [
    "ALL_VERSIONS",
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "LATEST_LEGACY",
    "LATEST_MODERN",
    "LEGACY_VERSIONS",
    "LOG_LEVELS",
    "LOG_LEVEL_KEY",
    "MAX_INPUT_ROUNDS",
    "MAX_MESSAGE_BYTES",
    "MAX_PAGES",
    "MODERN_VERSIONS",
    "PROTOCOL_VERSION_KEY",
    "RELATED_TASK_KEY",
    "SERVER_INFO_KEY",
    "SHUTTING_DOWN",
    "SHUTTING_DOWN_DATA",
    "SHUTTING_DOWN_MESSAGE",
    "SUBSCRIPTION_ID_KEY",
    "TASKS_EXTENSION",
    "TERMINAL_TASK_STATUSES",
    "TOOLS_CALL",
    "Era",
    "era_of",
    "input_requests",
    "is_modern_error",
    "is_shutting_down",
]

Era = Literal["legacy", "modern"]

MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)
LEGACY_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
ALL_VERSIONS: tuple[str, ...] = MODERN_VERSIONS + LEGACY_VERSIONS
LATEST_MODERN = MODERN_VERSIONS[0]
LATEST_LEGACY = LEGACY_VERSIONS[0]

#: Largest message we accept from a peer (a stdio line, a JSON body, an SSE event).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: A client's bound on multi-round-trip retries of one request (full and one-shot paths).
MAX_INPUT_ROUNDS = 16
#: A client's bound on pages followed by one list operation.
MAX_PAGES = 1000

# Reserved `_meta` keys of 2026-07-28.
PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"

# 2026-07-28 error codes (-32020..-32099 are reserved for the spec).
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
# 2025-11-25 only.
RESOURCE_NOT_FOUND = -32002
URL_ELICITATION_REQUIRED = -32042

MODERN_ERROR_CODES = frozenset(
    {HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
)


# Results that carry cache hints in 2026-07-28.
CACHEABLE_METHODS = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)

# Only these methods may answer with an InputRequiredResult (MRTR).
#: The JSON-RPC method of a tool call: spelled here once (both sides, every driver).
TOOLS_CALL = "tools/call"
MRTR_METHODS = frozenset({TOOLS_CALL, "prompts/get", "resources/read"})

# Tasks, for the client (`mcpcli.client.tasks`) and the server (`mcpcli.server.tasks`).
#: The 2026-07-28 extension's identifier (client capabilities, server/discover, -32021 data).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: `_meta` key tying requests and results to their task (2025-11-25).
RELATED_TASK_KEY = "io.modelcontextprotocol/related-task"
#: The statuses a task never leaves.
TERMINAL_TASK_STATUSES = frozenset({"completed", "failed", "cancelled"})


def era_of(version: str) -> Era:
    """The era a protocol revision belongs to; unknown future dates count as modern."""
    if version in LEGACY_VERSIONS or version < LATEST_MODERN:
        return "legacy"
    return "modern"


def is_modern_error(code: int, data: Any) -> bool:
    """True when an error can only have come from a 2026-07-28 (or later) server.

    The era probe must not key its fallback on one code, so anything that is not
    recognisably modern counts as legacy.
    """
    if code == UNSUPPORTED_PROTOCOL_VERSION:
        return True
    if code in MODERN_ERROR_CODES:
        return True
    return False


def pick_version(offered: list[str], *, prefer: tuple[str, ...] = ALL_VERSIONS) -> str | None:
    """The first of our versions (newest first) that the peer also offers."""
    for version in prefer:
        if version in offered:
            return version
    return None


#: The JSON-RPC error (the implementation-defined server range) that `mcp serve --http`
#: answers a request with when it stops before the request is done. Its `data` marks it,
#: so our client reports a connection failure (exit 4) rather than an ordinary error:
#: -32000 alone is used by many servers for many things.
SHUTTING_DOWN = -32000
SHUTTING_DOWN_MESSAGE = "server shutting down"
SHUTTING_DOWN_DATA: dict[str, Any] = {"reason": "shutdown"}


def input_requests(requests: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """A result's `inputRequests` (MRTR, or a task's) as (key, method, params), checked.

    Both clients (the full one and the one-shot path) answer each with their features;
    `None` is no requests. Raises `ProtocolError` for a malformed map.
    """
    from mcpcli.errors import ProtocolError

    if requests is None:
        return []
    if not isinstance(requests, dict):
        raise ProtocolError("inputRequests is not an object")
    items: list[tuple[str, str, dict[str, Any]]] = []
    for key, item in requests.items():
        if not isinstance(item, dict) or not isinstance(item.get("method"), str):
            raise ProtocolError(f"input request {key!r} is malformed")
        params = item.get("params")
        items.append((key, item["method"], params if isinstance(params, dict) else {}))
    return items


def is_shutting_down(code: int, data: Any) -> bool:
    """Whether an error object says the server stopped before answering."""
    return code == SHUTTING_DOWN and isinstance(data, dict) and data.get("reason") == "shutdown"
