"""The 2025-11-25 core tasks (experimental), on the same task store as the extension.

A 2025-11-25 session sees `capabilities.tasks` (list, cancel, tools/call) and
each tool's `execution.taskSupport`. The client asks for a task with
`params.task {ttl?}` on tools/call: the call starts in the server's task group
and the answer is `CreateTaskResult {task}` at once. A tool without task
support refuses the hint, a tool that requires tasks refuses a call without it
(-32601 both, as the revision says; sessions of older revisions cannot ask for
tasks, so they get the same refusal for such a tool).

`tasks/get` polls; `tasks/result` blocks until the task ends and answers what
the call would have (its result with the related-task `_meta`, or its
JSON-RPC error), relaying the task's input requests to the client on its own
stream meanwhile (server to client requests tagged with the related task);
`tasks/list` pages through the caller's tasks; `tasks/cancel` cancels a
running task and answers it (-32602 for one that already ended).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio

from mcpcli.core.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND
from mcpcli.core.protocol import RELATED_TASK_KEY
from mcpcli.errors import ConnectionClosed, McpCliError, RPCError
from mcpcli.server._state import Runtime
from mcpcli.server.calls import Call, Continuation, Handler, IncomingRequest, Invoke, valid_answer
from mcpcli.server.tasks.handlers import TaskHandlers

if TYPE_CHECKING:
    from mcpcli.server.tasks.store import Task

__all__ = ["TASKS_VERSION", "LegacyTasks"]

JSON = dict[str, Any]

#: The only legacy revision with tasks.
TASKS_VERSION = "2025-11-25"
#: A requested ttl is kept within these bounds (seconds; the tool's policy may lower it).
_MIN_TTL = 1.0


class LegacyTasks:
    """The task methods and task-augmented tools/call of 2025-11-25 sessions."""

    def __init__(self, runtime: Runtime, tasks: TaskHandlers) -> None:
        self.runtime = runtime
        self.tasks = tasks
        self.store = tasks.store

    def capability(self) -> JSON:
        return {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}

    def handlers(self) -> dict[str, Handler]:
        return {
            "tasks/get": self.get,
            "tasks/result": self.result,
            "tasks/list": self.list,
            "tasks/cancel": self.cancel,
        }

    # -- tools/call ------------------------------------------------------------------

    def start(self, rq: IncomingRequest, name: str, invoke: Invoke) -> JSON | None:
        """The CreateTaskResult of a task-augmented call; None when the call runs as usual."""
        policy = self.tasks.policy(name)
        hint = rq.params.get("task") if rq.version == TASKS_VERSION else None
        if hint is None:
            if policy is not None and policy.support == "required":
                raise RPCError(METHOD_NOT_FOUND, f"Tool {name} must be called as a task (params.task)")
            return None
        if not isinstance(hint, dict):
            raise RPCError(INVALID_PARAMS, "Invalid params: task must be an object")
        if policy is None:
            if not self.tasks.enabled():
                return None  # a server without tasks ignores the hint
            raise RPCError(METHOD_NOT_FOUND, f"Tool {name} does not support tasks")
        ttl = hint.get("ttl")
        if ttl is not None and (type(ttl) is not int or ttl < 0):
            raise RPCError(INVALID_PARAMS, "Invalid params: task.ttl must be a number of milliseconds")
        task = self.store.create(rq.principal, policy, None if ttl is None else max(_MIN_TTL, ttl / 1000), name)
        if task is None:
            raise RPCError(INTERNAL_ERROR, "Too many tasks are running; try again later")
        tg = self.runtime.task_group()
        cont = Continuation(Call(rq))
        task.attach(cont)
        tg.start_soon(cont.run, invoke)
        tg.start_soon(task.follow, cont)
        return {"task": task.legacy_fields()}

    # -- the methods -------------------------------------------------------------------

    def _find(self, rq: IncomingRequest) -> Task:
        if rq.version != TASKS_VERSION or not self.tasks.served():
            raise RPCError(METHOD_NOT_FOUND, f"Method not found: {rq.method}")
        return self.store.find(rq.params.get("taskId"), rq.principal)

    async def get(self, rq: IncomingRequest) -> JSON:
        return self._find(rq).legacy_fields()

    async def cancel(self, rq: IncomingRequest) -> JSON:
        task = self._find(rq)
        if task.terminal:
            raise RPCError(INVALID_PARAMS, f"Cannot cancel task: it is already {task.status}")
        task.cancel()
        return task.legacy_fields()

    async def list(self, rq: IncomingRequest) -> JSON:
        if rq.version != TASKS_VERSION or not self.tasks.served():
            raise RPCError(METHOD_NOT_FOUND, f"Method not found: {rq.method}")
        cursor = rq.params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise RPCError(INVALID_PARAMS, "Invalid params: cursor must be a string")
        signer = self.runtime.signer
        offset = signer.offset(rq.method, cursor) if cursor else 0
        owned = self.store.owned(rq.principal)
        end = offset + self.runtime.page_size
        result: JSON = {"tasks": [task.legacy_fields() for task in owned[offset:end]]}
        if end < len(owned):
            result["nextCursor"] = signer.cursor(rq.method, end)
        return result

    async def result(self, rq: IncomingRequest) -> JSON:
        """Wait for the task's end, relaying its input requests; then what the call answers."""
        task = self._find(rq)
        relayed: set[str] = set()
        async with anyio.create_task_group() as tg:
            while not task.terminal:
                for key, request in list(task.pending.items()):
                    if key not in relayed:
                        relayed.add(key)
                        tg.start_soon(self._relay, rq, task, key, request, relayed)
                await task.wait_change()
            tg.cancel_scope.cancel()
        if task.status == "completed" and task.result is not None:
            meta = task.result.get("_meta")
            meta = dict(meta) if isinstance(meta, dict) else {}
            meta[RELATED_TASK_KEY] = {"taskId": task.id}
            return {**task.result, "_meta": meta}
        if task.status == "failed" and task.error is not None:
            raise RPCError(task.error["code"], task.error["message"], task.error.get("data"))
        raise RPCError(INTERNAL_ERROR, f"Task {task.id} was {task.status}")

    @staticmethod
    async def _relay(rq: IncomingRequest, task: Task, key: str, request: JSON, relayed: set[str]) -> None:
        """Ask the client on the tasks/result stream; its answer goes to the task."""
        params = dict(request.get("params") or {})
        meta = params.get("_meta")
        params["_meta"] = {**(meta if isinstance(meta, dict) else {}), RELATED_TASK_KEY: {"taskId": task.id}}
        try:
            answer = await rq.outlet.send_request(request["method"], params)
        except RPCError as exc:
            task.reject(key, exc)
            return
        except (ConnectionClosed, anyio.BrokenResourceError, anyio.ClosedResourceError, McpCliError):
            relayed.discard(key)  # the client went away or timed out; the next change asks again
            return
        if valid_answer(request["method"], answer):
            task.update({key: answer})
        else:
            task.reject(key, RPCError(INVALID_PARAMS, f"Invalid answer to {request['method']}"))
