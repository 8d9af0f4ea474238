"""The task store: tool calls that outlive their request (the tasks extension and 2025-11-25 tasks).

A task is a backend call (a `calls.Continuation` in the server's task group)
that the client follows by id instead of waiting for the answer. The 2026-07-28
extension `io.modelcontextprotocol/tasks` (SEP-2663) is server-directed: a call
of a tool whose `TaskPolicy` allows it, from a client that declared the
extension, becomes a task when it is still running `policy.after` seconds
after it started (input asked before that goes through the usual MRTR round
trips); the request is then answered with a flat `CreateTaskResult` and the
work goes on. While it runs, the backend's `ask()` lands here: the task turns
`input_required` and shows the requests (keys unique for the task's lifetime)
until `tasks/update` answers every one; its `progress()` becomes the status
message. `tasks/cancel` cancels the work (a tools.yaml call: its process group).

The `TaskStore` holds the tasks of one server: created before the
`CreateTaskResult` goes out (an immediate `tasks/get` finds it), bound to the
caller's principal, dropped `ttl` after creation (a running one is cancelled
then) and bounded in number (the oldest finished ones go first). Status
changes are offered to `subscriptions/listen` streams that asked for the task.
The protocol methods are in `tasks.handlers` (2026-07-28) and `tasks.legacy`
(2025-11-25, where the client asks for a task with `params.task` and input
requests reach it through `tasks/result`).
"""

from __future__ import annotations

import heapq
import logging
import math
import secrets
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import anyio

from mcpcli.errors import RPCError
from mcpcli.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS
from mcpcli.protocol import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    TASKS_EXTENSION,
    TERMINAL_TASK_STATUSES,
)
from mcpcli.server._state import Runtime
from mcpcli.server.backend import InputDeclined, TaskPolicy
from mcpcli.server.calls import valid_answer
from mcpcli.server.subscriptions import TASK_STATUS
from mcpcli.session import log_unexpected

if TYPE_CHECKING:
    from mcpcli.server.calls import Continuation, IncomingRequest

__all__ = [
    "TASK_NOTIFICATION",
    "Escalation",
    "Task",
    "TaskStore",
    "declares_tasks",
]

log = logging.getLogger("mcpcli.server")

JSON = dict[str, Any]

#: The status notification of the extension (on `subscriptions/listen` streams).
TASK_NOTIFICATION = TASK_STATUS


def declares_tasks(caps: JSON) -> bool:
    """Whether client capabilities declare the tasks extension."""
    extensions = caps.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def _iso(stamp: float) -> str:
    moment = datetime.fromtimestamp(stamp, timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def error_object(exc: BaseException) -> JSON:
    """The JSON-RPC error a failed call answers with (what a `failed` task inlines)."""
    if isinstance(exc, InputDeclined):
        return {
            "code": MISSING_REQUIRED_CLIENT_CAPABILITY,
            "message": f"Missing required client capability: {', '.join(exc.capabilities) or exc}",
            "data": {"requiredCapabilities": {cap: {} for cap in exc.capabilities}},
        }
    if isinstance(exc, RPCError):
        error: JSON = {"code": exc.code, "message": exc.rpc_message}
        if exc.data is not None:
            error["data"] = exc.data
        return error
    log_unexpected(log, "task failed", exc)
    return {"code": INTERNAL_ERROR, "message": "Internal error"}


class Task:
    """One task: its status, its outcome, and the input it waits for."""

    def __init__(self, store: TaskStore, task_id: str, principal: str, policy: TaskPolicy,
                 ttl: float | None) -> None:
        self.store = store
        self.id = task_id
        self.principal = principal
        self.status = "working"
        self.message: str | None = None
        self.created = self.updated = time.time()
        self.ttl = ttl
        self.ttl_ms = None if ttl is None else max(1, round(ttl * 1000))
        self.poll_ms = max(1, round(policy.poll_interval * 1000))
        self.result: JSON | None = None
        self.error: JSON | None = None
        #: Outstanding input requests by wire key, and the answers not yet taken.
        self.pending: dict[str, JSON] = {}
        self._answers: dict[str, JSON | Exception] = {}
        self._issued = 0
        self._used: set[str] = set()
        self._answered = anyio.Event()
        self._changed = anyio.Event()
        self._scope: anyio.CancelScope | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_TASK_STATUSES

    # -- what clients see ------------------------------------------------------------

    def fields(self) -> JSON:
        """The `Task` of the extension (a CreateTaskResult is these plus resultType)."""
        out: JSON = {"taskId": self.id, "status": self.status}
        if self.message is not None:
            out["statusMessage"] = self.message
        out["createdAt"] = _iso(self.created)
        out["lastUpdatedAt"] = _iso(self.updated)
        out["ttlMs"] = self.ttl_ms
        out["pollIntervalMs"] = self.poll_ms
        return out

    def legacy_fields(self) -> JSON:
        """The `Task` of 2025-11-25 (`ttl` and `pollInterval`, in milliseconds)."""
        out: JSON = {"taskId": self.id, "status": self.status}
        if self.message is not None:
            out["statusMessage"] = self.message
        out["createdAt"] = _iso(self.created)
        out["lastUpdatedAt"] = _iso(self.updated)
        out["ttl"] = self.ttl_ms
        out["pollInterval"] = self.poll_ms
        return out

    def detailed(self) -> JSON:
        """The `DetailedTask` of `tasks/get` and `notifications/tasks`."""
        out = self.fields()
        if self.status == "completed" and self.result is not None:
            out["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            out["error"] = self.error
        elif self.status == "input_required":
            out["inputRequests"] = dict(self.pending)
        return out

    # -- state changes ------------------------------------------------------------------

    def _set(self, status: str, message: str | None = None) -> None:
        if self.terminal:
            return
        self.status = status
        if message is not None or status == "completed":
            self.message = message  # progress notes stay while it works or waits
        if status in TERMINAL_TASK_STATUSES:
            self.pending.clear()  # a waiting ask() ends with the work's cancellation
        self._touch()

    def _touch(self) -> None:
        """Something changed: wake whoever waits for a change, tell the listeners."""
        self.updated = time.time()
        self._changed.set()
        self._changed = anyio.Event()
        self.store.changed(self)

    async def wait_change(self) -> None:
        await self._changed.wait()

    def note_progress(self, progress: float, total: float | None, message: str | None) -> None:
        """The backend's progress, as the status message of a working task."""
        if self.terminal:
            return
        text = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        self.message = f"{text}: {message}" if message else text
        self._touch()

    def finish(self, kind: str, value: Any) -> None:
        """The work ended: `done` (a result), `error` (an exception) or `cancelled`."""
        if kind == "done":
            self.result = value
            self._set("completed")
        elif kind == "error":
            self.error = error_object(value)
            self._set("failed", self.error["message"])
        elif not self.terminal:  # the ttl ran out, or the server is shutting down
            self.error = {"code": INTERNAL_ERROR, "message": "The task expired before it finished"}
            self._set("failed", self.error["message"])

    def cancel(self) -> None:
        """Cooperative cancellation: the work is cancelled, the task is `cancelled` now."""
        if self.terminal:
            return
        self._set("cancelled", "Cancelled by the client")
        if self._scope is not None:
            self._scope.cancel()

    # -- input ----------------------------------------------------------------------------

    def _key(self, wanted: str) -> str:
        """A key for a new input request: the backend's, unless this task used it already."""
        key = wanted
        while key in self._used:
            self._issued += 1
            key = f"{wanted}.{self._issued}"
        self._used.add(key)
        return key

    async def ask(self, requests: dict[str, JSON]) -> dict[str, JSON]:
        """Wait (input_required) until every request has its answer from `tasks/update`."""
        wire = {key: self._key(key) for key in requests}
        for key, item in requests.items():
            self.pending[wire[key]] = {"method": item["method"], "params": item.get("params") or {}}
        self._set("input_required")
        try:
            while not all(name in self._answers for name in wire.values()):
                await self._answered.wait()
        finally:
            for name in wire.values():
                self.pending.pop(name, None)
        taken = {key: self._answers.pop(name) for key, name in wire.items()}
        for value in taken.values():
            if isinstance(value, Exception):
                raise value
        return {key: value for key, value in taken.items() if not isinstance(value, Exception)}

    def update(self, responses: JSON) -> None:
        """`tasks/update`: take the answers to outstanding requests; ignore any other key."""
        taken = False
        for key, value in responses.items():
            request = self.pending.get(key)
            if request is None or not valid_answer(request["method"], value):
                continue
            del self.pending[key]
            self._answers[key] = value
            taken = True
        if taken:
            self._took()

    def reject(self, key: str, exc: Exception) -> None:
        """The client could not answer request `key`: the backend's ask() raises `exc`."""
        if self.pending.pop(key, None) is not None:
            self._answers[key] = exc
            self._took()

    def _took(self) -> None:
        if not self.pending:
            self._set("working")
        else:
            self._touch()
        self._answered.set()
        self._answered = anyio.Event()

    # -- the work ---------------------------------------------------------------------------

    def attach(self, cont: Continuation) -> None:
        """Take over a running call: its asks and progress come here, its end too."""
        self._scope = cont.scope
        cont.call.task = self
        cont.scope.deadline = math.inf if self.ttl is None else anyio.current_time() + self.ttl

    async def follow(self, cont: Continuation) -> None:
        """Record how the call ends (runs in the server's task group)."""
        outcome = await cont.next_round()
        if outcome is not None:
            self.finish(*outcome)


class Escalation:
    """Turns one 2026 tools/call into a task when it outlasts `policy.after` (see mrtr)."""

    __slots__ = ("after", "policy", "store")

    def __init__(self, store: TaskStore, policy: TaskPolicy) -> None:
        self.store = store
        self.policy = policy
        self.after = max(0.0, policy.after)

    def adopt(self, cont: Continuation, rq: IncomingRequest) -> JSON | None:
        """The CreateTaskResult for the call, now a task; None when the store is full."""
        task = self.store.create(rq.principal, self.policy)
        if task is None:
            return None
        task.attach(cont)
        self.store.runtime.task_group().start_soon(task.follow, cont)
        return {"resultType": "task", **task.fields()}


class TaskStore:
    """The tasks of one server, by id."""

    def __init__(self, runtime: Runtime, *, max_tasks: int = 1000) -> None:
        self.runtime = runtime
        self.max_tasks = max_tasks
        self._tasks: dict[str, Task] = {}
        self._expiry: list[tuple[float, str]] = []
        #: How many listen streams follow some task (no notification work when none).
        self.followers = 0

    def __len__(self) -> int:
        return len(self._tasks)

    def create(self, principal: str, policy: TaskPolicy, ttl: float | None = None) -> Task | None:
        """A new working task (`ttl` overrides the policy's when shorter); None when full."""
        self.sweep()
        if len(self._tasks) >= self.max_tasks and not self._evict():
            log.warning("%d tasks are running; this call runs without one", len(self._tasks))
            return None
        if policy.ttl is not None and (ttl is None or ttl > policy.ttl):
            ttl = policy.ttl
        task = Task(self, secrets.token_hex(16), principal, policy, ttl)
        self._tasks[task.id] = task
        if ttl is not None:
            if len(self._expiry) > 2 * self.max_tasks + 64:  # entries of evicted tasks
                self._expiry = [e for e in self._expiry if e[1] in self._tasks]
                heapq.heapify(self._expiry)
            heapq.heappush(self._expiry, (time.monotonic() + ttl, task.id))
        return task

    def find(self, task_id: Any, principal: str) -> Task:
        """The caller's task (-32602 when unknown, expired or someone else's)."""
        if not isinstance(task_id, str) or not task_id:
            raise RPCError(INVALID_PARAMS, "Invalid params: taskId must be a non-empty string")
        self.sweep()
        task = self._tasks.get(task_id)
        if task is None or task.principal != principal:
            raise RPCError(INVALID_PARAMS, "Failed to retrieve task: Task not found", {"taskId": task_id})
        return task

    def owned(self, principal: str) -> list[Task]:
        """The caller's tasks, oldest first."""
        self.sweep()
        return [t for t in self._tasks.values() if t.principal == principal]

    def sweep(self) -> None:
        """Drop the tasks whose ttl has run out (cancelling any still running)."""
        now = time.monotonic()
        while self._expiry and self._expiry[0][0] <= now:
            _, task_id = heapq.heappop(self._expiry)
            task = self._tasks.pop(task_id, None)
            if task is not None and task._scope is not None and not task.terminal:
                task._scope.cancel()

    def _evict(self) -> bool:
        """Make room by dropping the oldest finished task; False when all are running."""
        for task_id, task in self._tasks.items():
            if task.terminal:
                del self._tasks[task_id]
                return True
        return False

    def changed(self, task: Task) -> None:
        """Offer the task's new state to the listen streams that follow it."""
        if self.followers:
            self.runtime.offer(TASK_NOTIFICATION, task.detailed())
