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
then) and bounded in number, in all and per principal (the oldest finished
ones go first). It keeps the `Task`s this process runs; every task's record
(`records.TaskRecord`) goes to its `TaskRecords` on each change, and a task it
does not run (finished before a restart, or run by another replica) is answered
from its record (`Task.view`). A result larger than `max_result_bytes` fails
the task instead of being stored. Status
changes are offered to `subscriptions/listen` streams that asked for the task.
The protocol methods are in `tasks.handlers` (2026-07-28) and `tasks.legacy`
(2025-11-25, where the client asks for a task with `params.task` and input
requests reach it through `tasks/result`).
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import anyio

from mcpcli.core.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS
from mcpcli.core.protocol import (
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    TASKS_EXTENSION,
    TERMINAL_TASK_STATUSES,
)
from mcpcli.errors import RPCError
from mcpcli.rpc.peer import log_unexpected
from mcpcli.server._state import Runtime
from mcpcli.server.backend import InputDeclined, TaskPolicy
from mcpcli.server.calls import valid_answer
from mcpcli.server.subscriptions import TASK_STATUS
from mcpcli.server.tasks.records import (
    RESTARTED,
    MemoryRecords,
    TaskRecord,
    TaskRecords,
    principal_key,
)

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

#: How often (seconds) a durable store drops expired tasks while no request does.
SWEEP_INTERVAL = 30.0

#: A durable store gets a working task's progress at most this often (seconds).
PROGRESS_WRITES = 0.5

#: The status notification of the extension (on `subscriptions/listen` streams).
TASK_NOTIFICATION = TASK_STATUS


def declares_tasks(caps: JSON) -> bool:
    """Whether client capabilities declare the tasks extension."""
    extensions = caps.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def _iso(stamp: float) -> str:
    moment = datetime.fromtimestamp(stamp, timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


#: Marks a forwarded input "answer" as the client's refusal to answer (see `Task.reject`).
REJECTED = "io.github.mcpcli/rejected"


def _rejection(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get(REJECTED), dict)


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
                 ttl: float | None, tool: str = "") -> None:
        self.store = store
        self.id = task_id
        #: `records.principal_key()` of the caller.
        self.principal = principal
        self.tool = tool
        #: Whether this process runs the task (False: a view of a record someone else runs).
        self.live = True
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
        #: When the record was last written (progress alone is written at most every PROGRESS_WRITES s).
        self.written = 0.0

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_TASK_STATUSES

    # -- the record -------------------------------------------------------------------

    def record(self) -> TaskRecord:
        """What persists of this task (see `records`)."""
        expires = None if self.ttl is None else self.created + self.ttl
        return TaskRecord(
            id=self.id, principal=self.principal, tool=self.tool, status=self.status,
            message=self.message, created=self.created, updated=self.updated, ttl_ms=self.ttl_ms,
            poll_ms=self.poll_ms, expires=expires, result=self.result, error=self.error,
            pending=dict(self.pending),
        )

    @classmethod
    def view(cls, store: TaskStore, record: TaskRecord) -> Task:
        """A task this process does not run: answers from its record, forwards cancel and input.

        Made without `__init__` (no events, no policy: a view never waits on its own
        events, nor changes itself), since tasks/get and tasks/list make one per record."""
        task = cls.__new__(cls)
        task.store, task.id, task.principal, task.tool = store, record.id, record.principal, record.tool
        task.live = False
        task.ttl = None if record.ttl_ms is None else record.ttl_ms / 1000
        task._scope = None
        task._load(record)
        return task

    def _load(self, record: TaskRecord) -> None:
        self.status, self.message = record.status, record.message
        self.created, self.updated = record.created, record.updated
        self.ttl_ms, self.poll_ms = record.ttl_ms, record.poll_ms
        self.result, self.error, self.pending = record.result, record.error, dict(record.pending)

    def _refresh(self) -> None:
        record = self.store.records.get(self.id, time.time())
        if record is not None:
            self._load(record)

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

    def _touch(self, progress: bool = False) -> None:
        """Something changed: wake whoever waits for a change, tell the listeners."""
        self.updated = time.time()
        self._changed.set()
        self._changed = anyio.Event()
        self.store.changed(self, progress)

    async def wait_change(self) -> None:
        if self.live:
            await self._changed.wait()
            return
        with anyio.move_on_after(self.poll_ms / 1000):  # another process runs it: poll its record
            await self.store.remote_change()
        self._refresh()

    def note_progress(self, progress: float, total: float | None, message: str | None) -> None:
        """The backend's progress, as the status message of a working task."""
        if self.terminal:
            return
        text = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        self.message = f"{text}: {message}" if message else text
        self._touch(progress=True)

    def finish(self, kind: str, value: Any) -> None:
        """The work ended: `done` (a result), `error` (an exception) or `cancelled`."""
        if kind == "done":
            refusal = self.store.refuse_result(value)
            if refusal is not None:
                self.error = {"code": INTERNAL_ERROR, "message": refusal}
                self._set("failed", refusal)
                return
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
        if not self.live:
            self.store.records.request_cancel(self.id)
            self._refresh()
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
        if not self.live:
            answers = {key: value for key, value in responses.items() if not _rejection(value)}
            self.store.records.deliver_input(self.id, answers)
            self._refresh()
            return
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
        """The client could not answer request `key`: the backend's ask() raises `exc`.

        A view (a 2025-11-25 `tasks/result` relayed the request on a replica that does not
        run the task) forwards the refusal like an answer, marked so a client's own
        `tasks/update` values can never pass for one."""
        if not self.live:
            if key in self.pending:
                self.store.records.deliver_input(self.id, {key: {REJECTED: error_object(exc)}})
                self._refresh()
            return
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
        name = rq.params.get("name")
        task = self.store.create(rq.principal, self.policy, tool=name if isinstance(name, str) else "")
        if task is None:
            return None
        task.attach(cont)
        self.store.runtime.task_group().start_soon(task.follow, cont)
        return {"resultType": "task", **task.fields()}


class TaskStore:
    """The tasks of one server, by id: live ones here, every one's record in `records`."""

    def __init__(self, runtime: Runtime, *, max_tasks: int = 1000, records: TaskRecords | None = None,
                 max_per_principal: int | None = None, max_result_bytes: int | None = None) -> None:
        self.runtime = runtime
        self.max_tasks = max_tasks
        self.max_per_principal = max_per_principal
        self.max_result_bytes = max_result_bytes
        self.records: TaskRecords = MemoryRecords() if records is None else records
        self._durable = bool(getattr(self.records, "durable", False))
        #: The unfinished tasks this process runs.
        self._live: dict[str, Task] = {}
        self._remote = anyio.Event()
        self.records.on_delivery(self._cancel_here, self._answer_here)
        self.records.on_change(self._changed_elsewhere)
        recovered = self.records.recover(time.time())  # what a previous process left unfinished
        if recovered:
            log.warning("%d task%s failed: %s", recovered, "s" * (recovered != 1), RESTARTED)
        self.sweep()
        #: How many listen streams follow some task (no notification work when none).
        self.followers = 0

    def __len__(self) -> int:
        return self.records.count()

    def create(self, principal: str, policy: TaskPolicy, ttl: float | None = None,
               tool: str = "") -> Task | None:
        """A new working task (`ttl` overrides the policy's when shorter); None when full."""
        self.sweep()
        key = principal_key(principal)
        records = self.records
        limit = self.max_per_principal
        if limit is not None and records.count(key) >= limit and not records.evict_finished(key):
            log.warning("a caller has %d tasks; this call runs without one", limit)
            return None
        if records.count() >= self.max_tasks and not records.evict_finished():
            log.warning("%d tasks are running; this call runs without one", records.count())
            return None
        if policy.ttl is not None and (ttl is None or ttl > policy.ttl):
            ttl = policy.ttl
        task = Task(self, secrets.token_hex(16), key, policy, ttl, tool)
        self._live[task.id] = task
        task.written = time.monotonic()
        records.put(task.record())
        return task

    def find(self, task_id: Any, principal: str) -> Task:
        """The caller's task (-32602 when unknown, expired or someone else's)."""
        if not isinstance(task_id, str) or not task_id:
            raise RPCError(INVALID_PARAMS, "Invalid params: taskId must be a non-empty string")
        self.sweep()
        key = principal_key(principal)
        task = self._live.get(task_id)
        if task is None:
            record = self.records.get(task_id, time.time())
            task = None if record is None else Task.view(self, record)
        if task is None or task.principal != key:
            raise RPCError(INVALID_PARAMS, "Failed to retrieve task: Task not found", {"taskId": task_id})
        return task

    def owned(self, principal: str) -> list[Task]:
        """The caller's tasks, oldest first."""
        self.sweep()
        live = self._live
        return [live.get(r.id) or Task.view(self, r)
                for r in self.records.by_principal(principal_key(principal), time.time())]

    def sweep(self) -> None:
        """Drop the tasks whose ttl has run out (cancelling any still running)."""
        for task_id in self.records.expire(time.time()):
            task = self._live.pop(task_id, None)
            if task is not None and task._scope is not None and not task.terminal:
                task._scope.cancel()

    def refuse_result(self, result: JSON) -> str | None:
        """Why a finished call's result cannot be kept (too large to store), or None."""
        limit = self.max_result_bytes
        if limit is None:
            return None
        size = len(json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode())
        if size <= limit:
            return None
        return f"The task's result is too large to keep ({size} bytes; the limit is {limit})"

    def changed(self, task: Task, progress: bool = False) -> None:
        """Store the task's new state; offer it to the listen streams that follow it.

        Progress alone is written to a durable store at most every `PROGRESS_WRITES`
        seconds (this process answers from the live task; others see it that late)."""
        if task.live:
            now = time.monotonic()
            if progress and self._durable and now - task.written < PROGRESS_WRITES:
                pass
            elif task.id in self._live or not task.terminal:
                task.written = now
                self.records.put(task.record())
            if task.terminal:
                self._live.pop(task.id, None)
        if self.followers:
            self.runtime.offer(TASK_NOTIFICATION, task.detailed())

    # -- what other processes send (through `records`) -----------------------------------

    def _cancel_here(self, task_id: str, _: JSON | None) -> None:
        task = self._live.get(task_id)
        if task is not None:
            task.cancel()
            return
        record = self.records.get(task_id, time.time())  # nobody runs it: settle the record
        if record is not None and not record.terminal:
            record.status, record.message, record.pending = "cancelled", "Cancelled by the client", {}
            record.updated = time.time()
            self.records.put(record)

    def _answer_here(self, task_id: str, responses: JSON | None) -> None:
        task = self._live.get(task_id)
        if task is not None and responses is not None:
            for key, value in responses.items():
                if _rejection(value):
                    error = value[REJECTED]
                    task.reject(key, RPCError(int(error.get("code", INTERNAL_ERROR)),
                                              str(error.get("message", "")), error.get("data")))
            task.update({key: value for key, value in responses.items() if not _rejection(value)})

    def _changed_elsewhere(self, record: TaskRecord) -> None:
        self._remote.set()
        self._remote = anyio.Event()
        if self.followers and record.id not in self._live:
            self.runtime.offer(TASK_NOTIFICATION, Task.view(self, record).detailed())

    async def remote_change(self) -> None:
        """Wait until `records` reports a change made by another process."""
        await self._remote.wait()

    async def sweeper(self) -> None:
        """Expire tasks even while nobody asks (a durable store's file does not grow)."""
        if not self._durable:
            return
        while True:
            await anyio.sleep(SWEEP_INTERVAL)
            self.sweep()

    def close(self) -> None:
        self.records.close()
