"""The protocol methods of tasks, and the decision whether a tools/call may become one.

2026-07-28 (the extension `io.modelcontextprotocol/tasks`): `tasks/get`,
`tasks/update` and `tasks/cancel` need the extension in the request's client
capabilities (-32021 otherwise); `tasks/update` and `tasks/cancel` answer an
empty acknowledgement, `tasks/cancel` also for a task that already ended;
an unknown task is -32602. `tasks/result` and `tasks/list` do not exist
(-32601, as for any unknown method).

`escalation(rq, name)` is asked by the tools/call handler: None when the call
runs as usual, an `Escalation` when it may become a task; a tool that requires
tasks refuses a client without the extension (-32021).
"""

from __future__ import annotations

from typing import Any

from mcpcli.core.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND
from mcpcli.core.protocol import MISSING_REQUIRED_CLIENT_CAPABILITY, TASKS_EXTENSION
from mcpcli.errors import RPCError
from mcpcli.server._state import Runtime
from mcpcli.server.backend import TaskPolicy
from mcpcli.server.calls import Handler, IncomingRequest
from mcpcli.server.meta import ModernError
from mcpcli.server.mrtr import input_responses
from mcpcli.server.tasks.store import Escalation, TaskStore, declares_tasks

__all__ = ["TaskHandlers", "missing_extension"]

JSON = dict[str, Any]


def missing_extension(what: str) -> ModernError:
    """-32021 naming the tasks extension (HTTP 400)."""
    return ModernError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: {what} needs the {TASKS_EXTENSION} extension",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


class TaskHandlers:
    """The task methods of one server."""

    def __init__(self, runtime: Runtime, store: TaskStore) -> None:
        self.runtime = runtime
        self.store = store
        self._lookup = getattr(runtime.backend, "task_policy", None)

    def modern(self) -> dict[str, Handler]:
        return {"tasks/get": self.get, "tasks/update": self.update, "tasks/cancel": self.cancel}

    def enabled(self) -> bool:
        """Whether the backend runs tasks now (a reload may change it)."""
        return "tasks" in self.runtime.backend.capabilities()

    def served(self) -> bool:
        """Whether the task methods exist: the backend runs tasks, or some task is still kept."""
        return len(self.store) > 0 or self.enabled()

    def policy(self, name: str) -> TaskPolicy | None:
        """The tool's task policy, when it may run as a task at all."""
        lookup = self._lookup
        if lookup is None:
            return None
        policy: TaskPolicy | None = lookup(name)
        if policy is None or policy.support == "forbidden":
            return None
        return policy

    def escalation(self, rq: IncomingRequest, name: str) -> Escalation | None:
        """How a tools/call of tool `name` may become a task (None: it runs as usual)."""
        policy = self.policy(name)
        if policy is None or rq.era != "modern":
            return None
        if not declares_tasks(rq.caps):
            if policy.support == "required":
                raise missing_extension(f"tool {name}")
            return None
        return Escalation(self.store, policy)

    def follow(self, rq: IncomingRequest, wanted: Any) -> list[str]:
        """The task ids a `subscriptions/listen` may follow: the caller's own, of those asked."""
        if wanted is None:
            return []
        if not isinstance(wanted, list) or not all(isinstance(t, str) for t in wanted):
            raise RPCError(INVALID_PARAMS, "Invalid params: taskIds must be a list of task ids")
        if not wanted or not self.served():
            return []
        if not declares_tasks(rq.caps):
            raise missing_extension("notifications/tasks")
        owned = {task.id for task in self.store.owned(rq.principal)}
        return [task_id for task_id in dict.fromkeys(wanted) if task_id in owned]

    # -- 2026-07-28 ------------------------------------------------------------------

    def _task(self, rq: IncomingRequest) -> Any:
        if not self.served():
            raise ModernError(METHOD_NOT_FOUND, f"Method not found: {rq.method}", status=404)
        if not declares_tasks(rq.caps):
            raise missing_extension(rq.method)
        return self.store.find(rq.params.get("taskId"), rq.principal)

    async def get(self, rq: IncomingRequest) -> JSON:
        return dict(self._task(rq).detailed())

    async def update(self, rq: IncomingRequest) -> JSON:
        task = self._task(rq)
        if "inputResponses" not in rq.params:
            raise RPCError(INVALID_PARAMS, "Invalid params: tasks/update needs inputResponses")
        task.update(input_responses(rq.params))
        return {}

    async def cancel(self, rq: IncomingRequest) -> JSON:
        self._task(rq).cancel()
        return {}
