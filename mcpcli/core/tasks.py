"""MCP tasks as the protocol defines them, without I/O: a task's state, whether a call
becomes one, what a finished one means.

Two designs exist (see `mcpcli.client.tasks`, which follows a task to its end on anyio):
2025-11-25 core tasks, which the client asks for with `params.task`, and the 2026-07-28
extension `io.modelcontextprotocol/tasks`, where the server decides. Everything here
is shared by the anyio client, the daemon and the one-shot fast path.
"""

from __future__ import annotations

from typing import Any, Literal

from mcpcli.core.plain import Plain
from mcpcli.core.protocol import TASKS_EXTENSION, TERMINAL_TASK_STATUSES, TOOLS_CALL
from mcpcli.errors import McpCliError, ProtocolError, RPCError

__all__ = [
    "DECLARE_ON",
    "TASK_CREATING_METHODS",
    "Task",
    "TaskCancelled",
    "TaskMode",
    "cancelled",
    "failure",
    "in_task",
    "may_become_task",
    "server_accepts_tasks",
    "should_augment",
    "task_of",
    "task_support",
    "with_extension",
]

JSON = dict[str, Any]
TaskMode = Literal["auto", "always", "never"]
#: A tool's `execution.taskSupport`.
TaskSupport = Literal["required", "optional", "forbidden"]

#: Requests that may be answered with a task (the extension supports only tools/call).
TASK_CREATING_METHODS = frozenset({TOOLS_CALL})
#: Requests on which a 2026-07-28 client declares the extension.
DECLARE_ON = frozenset({TOOLS_CALL, "tasks/get", "tasks/update", "tasks/cancel"})

#: Bounds on the server's suggested poll interval, in seconds.
MIN_POLL = 0.05
MAX_POLL = 30.0
#: Used when the server suggests none.
DEFAULT_POLL = 1.0


class TaskCancelled(McpCliError):
    """The task ended `cancelled` without the caller asking (someone else cancelled it)."""

    exit_code = RPCError.exit_code
    kind = "task-cancelled"


class Task(Plain):
    """One task's state, the same in both eras: `poll_interval_ms` is the server's
    suggestion, `raw` the object as the server sent it (tasks/get result, or the created
    task), `cancel_requested` set once we have sent tasks/cancel for it."""

    __slots__ = ("cancel_requested", "poll_interval_ms", "raw", "status", "status_message", "task_id", "ttl_ms")

    def __init__(self, task_id: str, status: str, status_message: str | None = None,
                 poll_interval_ms: float | None = None, ttl_ms: float | None = None,
                 raw: JSON | None = None, cancel_requested: bool = False) -> None:
        self.task_id = task_id
        self.status = status
        self.status_message = status_message
        self.poll_interval_ms = poll_interval_ms
        self.ttl_ms = ttl_ms
        self.raw: JSON = {} if raw is None else raw
        self.cancel_requested = cancel_requested

    @classmethod
    def from_wire(cls, obj: JSON) -> Task:
        """A task from `tasks/get`, `tasks/list`, a status notification or a CreateTaskResult."""
        task_id = obj.get("taskId")
        status = obj.get("status")
        if not isinstance(task_id, str) or not task_id:
            raise ProtocolError("the server sent a task without a taskId")
        if not isinstance(status, str):
            raise ProtocolError(f"task {task_id}: no status")
        message = obj.get("statusMessage")
        poll = obj.get("pollIntervalMs", obj.get("pollInterval"))
        ttl = obj.get("ttlMs", obj.get("ttl"))
        return cls(
            task_id=task_id,
            status=status,
            status_message=message if isinstance(message, str) else None,
            poll_interval_ms=_ms(poll),
            ttl_ms=_ms(ttl),
            raw=obj,
        )

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_TASK_STATUSES

    def poll_delay(self) -> float:
        """Seconds until the next poll: the server's interval, bounded, with 10% jitter."""
        base = self.poll_interval_ms / 1000 if self.poll_interval_ms is not None else DEFAULT_POLL
        base = min(max(base, MIN_POLL), MAX_POLL)
        import random  # only where tasks are followed: the one-shot path never is

        return base * random.uniform(1.0, 1.1)  # noqa: S311 - jitter, not a secret


def _ms(value: Any) -> float | None:
    """A non-negative duration in milliseconds, or None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def task_of(result: JSON, era: str) -> Task | None:
    """The task a `tools/call` result created, or None for an ordinary result."""
    if era == "modern":
        if result.get("resultType") != "task":
            return None
        return Task.from_wire(result)
    created = result.get("task")
    if isinstance(created, dict) and "content" not in result and "taskId" in created:
        return Task.from_wire(created)
    return None


def server_accepts_tasks(capabilities: JSON) -> bool:
    """A 2025-11-25 server's `tasks.requests.tools.call` capability."""
    tasks = capabilities.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    tools = requests.get("tools") if isinstance(requests, dict) else None
    return isinstance(tools, dict) and isinstance(tools.get("call"), dict)


def task_support(tool: JSON | None) -> TaskSupport:
    """A tool's `execution.taskSupport` ("forbidden" when absent)."""
    execution = tool.get("execution") if isinstance(tool, dict) else None
    value = execution.get("taskSupport") if isinstance(execution, dict) else None
    return value if value in ("required", "optional") else "forbidden"


def should_augment(capabilities: JSON, tool: JSON | None, mode: TaskMode) -> bool:
    """Whether a legacy `tools/call` carries `params.task`."""
    if mode == "never" or not server_accepts_tasks(capabilities):
        return False
    support = task_support(tool)
    return support == "required" or (support == "optional" and mode == "always")


def with_extension(capabilities: JSON) -> JSON:
    """Client capabilities that also declare the tasks extension."""
    caps = dict(capabilities)
    extensions = dict(caps.get("extensions") or {})
    extensions[TASKS_EXTENSION] = {}
    caps["extensions"] = extensions
    return caps


def failure(task: Task) -> McpCliError:
    """The JSON-RPC error a failed 2026-07-28 task carries (exit 5)."""
    error = task.raw.get("error")
    if isinstance(error, dict) and isinstance(error.get("code"), int):
        message = error.get("message")
        exc = RPCError(error["code"], message if isinstance(message, str) else "task failed",
                       error.get("data"))
        return in_task(exc, task)
    detail = f": {task.status_message}" if task.status_message else ""
    return RPCError(-32603, f"task {task.task_id} failed{detail}")


def in_task(exc: RPCError, task: Task) -> RPCError:
    """The same error, its message saying which task it ended."""
    exc.message = f"task {task.task_id} failed: {exc.message}"
    return exc


def cancelled(task: Task) -> TaskCancelled:
    detail = f" ({task.status_message})" if task.status_message else ""
    return TaskCancelled(f"task {task.task_id} was cancelled{detail}")


def may_become_task(era: str, capabilities: JSON, tool: JSON | None, mode: TaskMode = "auto") -> bool:
    """Whether a `tools/call` may be answered with a task: asked for one (2025-11-25), or a
    2026-07-28 server that offers the extension and so decides for itself."""
    if era == "modern":
        extensions = capabilities.get("extensions")
        return isinstance(extensions, dict) and TASKS_EXTENSION in extensions
    return should_augment(capabilities, tool, mode)
