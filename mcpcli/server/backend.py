"""The seam between the server runtime and what it serves.

The runtime (`mcpcli.server`) speaks the protocol: eras, transports, sessions,
pagination, subscriptions, logging levels, multi-round-trip input. A `Backend`
supplies the content: tools, resources, prompts, completions. `mcp serve`
implements a Backend from a tools.yaml file; tests implement small ones in Python.

Backends never see JSON-RPC. What they may do while handling a request goes
through the `CallContext` they are given: report progress, log, and ask the
client for input (elicitation, sampling, roots), which the runtime turns into
server-to-client requests (legacy era) or an `InputRequiredResult` round trip
(2026-07-28) without the backend knowing which.

Errors: raise `mcpcli.errors.RPCError` for protocol errors (unknown tool:
-32602, resource not found: the runtime maps `ResourceNotFound` to the right
code per era). Tool failures are results with `isError: true`, not exceptions.
Cancellation arrives as anyio cancellation of the backend coroutine.

Tasks (optional): a backend whose `capabilities()` include `"tasks"` implements
`task_policy(name)`, saying per tool whether a call may (or must) run as a task
and when it becomes one. The runtime does the rest (the 2026-07-28 extension
`io.modelcontextprotocol/tasks`, and the 2025-11-25 core tasks): the backend's
`call_tool` runs as usual, its `ask()` and `progress()` reach the task instead
of the request, and `tasks/cancel` cancels it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from mcpcli.core.jsonrpc import INVALID_PARAMS
from mcpcli.core.protocol import Era
from mcpcli.errors import RPCError

__all__ = [
    "Backend",
    "CallContext",
    "ChangeListener",
    "InputDeclined",
    "ResourceNotFound",
    "TaskPolicy",
    "TaskSupport",
]

JSON = dict[str, Any]

#: Called by a backend when something it serves changed:
#: kind is "tools", "resources", "prompts" (list changed) or "resource" (with the URI).
ChangeListener = Callable[[str, "str | None"], None]


TaskSupport = Literal["forbidden", "optional", "required"]


@dataclass(frozen=True)
class TaskPolicy:
    """How calls of one tool may run as tasks (`Backend.task_policy`).

    `support` is the tool's `execution.taskSupport`: "optional" calls become a
    task when they are still running `after` seconds after they started (or
    resumed with the client's input); a "required" tool needs a client that
    can take a task (others get -32021 in 2026-07-28). A task is kept `ttl`
    seconds from its creation (None: until evicted), and clients are asked to
    poll every `poll_interval` seconds.
    """

    support: TaskSupport = "forbidden"
    after: float = 1.0
    ttl: float | None = 3600.0
    poll_interval: float = 1.0


class ResourceNotFound(RPCError):
    """No resource at this URI. The runtime answers -32002 (2025-11-25) or -32602 (2026)."""

    def __init__(self, uri: str) -> None:
        super().__init__(INVALID_PARAMS, f"Resource not found: {uri}", {"uri": uri})
        self.uri = uri


class InputDeclined(Exception):
    """The client cannot answer an `ask` (it did not declare the capability).

    `capabilities` names the client capabilities that were missing ("elicitation",
    "sampling", "roots"). A backend may catch this and answer differently (a tool
    error result); if it lets it propagate, the runtime answers -32021
    MissingRequiredClientCapability (2026-07-28) or -32600 (legacy eras).
    """

    def __init__(self, message: str = "", *, capabilities: Sequence[str] = ()) -> None:
        self.capabilities = list(capabilities)
        super().__init__(
            message or "the client did not declare " + (", ".join(self.capabilities) or "the capability")
        )


class CallContext(Protocol):
    """What a backend can do while it handles one request."""

    #: "legacy" or "modern", and the exact protocol revision of this request.
    era: Era
    protocol_version: str
    #: The client's declared capabilities and identity (per session or per request).
    client_capabilities: JSON
    client_info: JSON
    #: Transport facts: "stdio", "http"; for HTTP the authenticated principal if any.
    transport: str

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress, if the client asked for it (a no-op otherwise)."""

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a log message if the client's requested level lets it through."""

    async def ask(self, requests: dict[str, JSON]) -> dict[str, JSON]:
        """Ask the client for input and wait for every answer.

        `requests` maps keys the backend chooses to `{"method": ..., "params": ...}`
        with method `elicitation/create`, `sampling/createMessage` or `roots/list`.
        Returns the client's results under the same keys. Raises `InputDeclined`
        when the client did not declare the needed capability. In the 2026 era the
        runtime may suspend the backend here until the client retries the request
        with its `inputResponses`; the backend does not notice.
        """
        ...


class Backend(Protocol):
    """The content of a server. Every list is complete; the runtime paginates."""

    def server_info(self) -> JSON:
        """`{name, version, title?}` of the served thing."""
        ...

    def instructions(self) -> str | None: ...

    def capabilities(self) -> JSON:
        """Which primitives exist: keys among tools, resources, prompts, completions,
        with `{"subscribe": true}` under resources when `on_change("resource", uri)`
        will be called, and `tasks` when the backend implements `task_policy`.
        The runtime adds logging and listChanged itself."""
        ...

    def set_change_listener(self, listener: ChangeListener | None) -> None:
        """The runtime registers one listener for change notifications."""
        ...

    async def list_tools(self) -> list[JSON]: ...

    async def call_tool(self, name: str, arguments: JSON, ctx: CallContext) -> JSON:
        """A CallToolResult. Unknown tool: raise RPCError(-32602)."""
        ...

    # Optional, with the "tasks" capability:
    #
    #     def task_policy(self, name: str) -> TaskPolicy | None:
    #         """How tool `name` runs as a task; None (or support "forbidden"): never."""
    #
    # Optional, for a backend serving what lives elsewhere (the gateway):
    #
    #     async def set_log_level(self, level: str) -> None: a client's logging/setLevel
    #     async def subscribe_resource(self, uri: str) -> None: a first subscriber to uri
    #     async def unsubscribe_resource(self, uri: str) -> None: its last one left (or disconnected)
    #     def roots_changed(self) -> None: a legacy client's notifications/roots/list_changed
    #     def client_ready(self, transport: str, capabilities: JSON, ask) -> None: a legacy
    #         client initialized; `await ask(method, params)` asks it outside any request
    #
    # A tool's listing should then carry `"execution": {"taskSupport": ...}`
    # (2025-11-25) when its support is not "forbidden".

    async def list_resources(self) -> list[JSON]: ...

    async def list_resource_templates(self) -> list[JSON]: ...

    async def read_resource(self, uri: str, ctx: CallContext) -> JSON:
        """A ReadResourceResult (`{"contents": [...]}`); raise ResourceNotFound."""
        ...

    async def list_prompts(self) -> list[JSON]: ...

    async def get_prompt(self, name: str, arguments: dict[str, str], ctx: CallContext) -> JSON:
        """A GetPromptResult. Unknown prompt: raise RPCError(-32602)."""
        ...

    async def complete(self, ref: JSON, argument: JSON, context: JSON) -> JSON:
        """A CompleteResult `{"completion": {"values": [...], "total"?, "hasMore"?}}`."""
        ...
