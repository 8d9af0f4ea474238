"""Tasks in the client: tool calls that the server runs in the background.

Two designs exist and the `Client` hides the difference:

* 2025-11-25 core tasks (experimental, legacy era). The client *asks* for a task
  by adding `params.task` to `tools/call`, when the server declares
  `capabilities.tasks.requests.tools.call` and the tool's
  `execution.taskSupport` is "required" (or "optional" and the caller wants a
  task). The answer is `CreateTaskResult {task: {...}}`; the client polls
  `tasks/get` (honouring `pollInterval`), and fetches the outcome with
  `tasks/result`, which blocks until the task ends and is also where the
  server's requests for input (elicitation, sampling) arrive while the task
  waits in `input_required`.
* The 2026-07-28 extension `io.modelcontextprotocol/tasks`. The client declares
  the extension in each request's `_meta` client capabilities; the server
  *decides* to answer `tools/call` with a flat `resultType: "task"`. The client
  polls `tasks/get` (honouring `pollIntervalMs`): `completed` inlines the
  `result`, `failed` inlines the JSON-RPC `error`, and `input_required` carries
  `inputRequests`, answered with `tasks/update {taskId, inputResponses}`.

Both end with `tasks/cancel` when the caller gives up (Ctrl-C, a timeout).
`TaskWaiter` drives one task to its end and returns what `tools/call` would
have returned. It works on any `TaskClient` (the small protocol below, which
`mcpcli.client.Client` satisfies), so this module does not import the client. What a
task is and whether a call asks for one are protocol facts, in `mcpcli.core.tasks`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from mcpcli.core.tasks import (
    Task,
    TaskCancelled,
    TaskMode,
    cancelled,
    failure,
    in_task,
    server_accepts_tasks,
    task_of,
    task_support,
)
from mcpcli.errors import McpCliError, ProtocolError, RequestTimeout, RPCError, TransportError

if TYPE_CHECKING:
    from mcpcli.rpc.peer import ProgressHandler

__all__ = [
    "Task",
    "TaskCancelled",
    "TaskClient",
    "TaskMode",
    "TaskOptions",
    "TaskWaiter",
    "cancel_current",
    "server_accepts_tasks",
    "task_of",
    "task_support",
]

log = logging.getLogger("mcpcli.client.tasks")

JSON = dict[str, Any]

#: How long cancelling a task on the way out may take.
CANCEL_GRACE = 5.0
#: Bound on the input requests one task may make (a server that asks forever).
MAX_INPUT_ROUNDS = 64


class _Limits(Protocol):
    @property
    def max_timeout(self) -> float | None: ...


class TaskClient(Protocol):
    """What following a task needs of a connected client (`mcpcli.client.Client`)."""

    @property
    def era(self) -> str: ...

    @property
    def capabilities(self) -> JSON: ...

    @property
    def options(self) -> _Limits: ...

    async def request(
        self,
        method: str,
        params: JSON | None = None,
        *,
        on_progress: ProgressHandler | None = None,
        timeout: float | bool | None = True,
        max_timeout: float | bool | None = True,
    ) -> JSON: ...

    async def cancel_task(self, task_id: str) -> JSON: ...

    async def fulfil_input_requests(self, requests: Any) -> JSON: ...

    def tap(self, tap: Callable[[str, JSON], bool]) -> AbstractContextManager[None]: ...


@dataclass
class TaskOptions:
    """How `Client.call_tool` treats tasks.

    `mode`: "auto" asks a 2025-11-25 server for a task only when the tool
    requires one; "always" also when the tool allows one (`--task`); "never"
    never asks (a tool that requires a task then fails on the server).
    2026-07-28 servers decide on their own whatever the mode.
    """

    mode: TaskMode = "auto"
    #: Requested lifetime in milliseconds (2025-11-25 `task.ttl`; the server may change it).
    ttl_ms: int | None = None
    #: Return the CreateTaskResult at once instead of waiting for the outcome.
    detach: bool = False
    #: Called whenever the task's status or status message changes (and once when created).
    on_status: Callable[[Task], None] | None = None
    #: Bound on the whole wait in seconds; None means the client's max_timeout.
    max_wait: float | None = None
    #: Cancel the task when the wait is given up (timeout, cancellation). Off when
    #: merely watching a task someone else started (`mcp tasks result`).
    cancel_on_exit: bool = True
    #: Filled in as soon as the server has created a task (so a caller can cancel it).
    current: Task | None = None


class TaskWaiter:
    """Drives one task to its end; `await wait()` returns the final `tools/call` result."""

    def __init__(
        self,
        client: TaskClient,
        task: Task,
        options: TaskOptions,
        *,
        on_progress: ProgressHandler | None = None,
        progress_token: str | None = None,
    ) -> None:
        self.client = client
        self.task = task
        self.options = options
        self.on_progress = on_progress
        self.progress_token = progress_token
        self._nudge = anyio.Event()
        #: Input request keys already answered (unique for the task's lifetime).
        self._answered: set[str] = set()
        options.current = task

    # -- the whole wait ------------------------------------------------------------

    async def wait(self) -> JSON:
        limit = self.options.max_wait
        if limit is None:
            limit = self.client.options.max_timeout
        self._report(self.task)
        try:
            with self.client.tap(self._on_notification):
                with anyio.move_on_after(limit) as scope:
                    if self.client.era == "modern":
                        return await self._wait_modern()
                    return await self._wait_legacy()
        except anyio.get_cancelled_exc_class():
            if self.options.cancel_on_exit:
                with anyio.CancelScope(shield=True):
                    await self.cancel()
            raise
        assert scope.cancelled_caught
        if self.options.cancel_on_exit:
            await self.cancel()
            outcome = "cancelled it"
        else:
            outcome = f"it is still {self.task.status}"
        raise RequestTimeout(
            f"task {self.task.task_id} did not finish within {limit:g}s ({outcome})",
            hint="raise --max-timeout to wait longer",
        )

    async def cancel(self) -> None:
        """Ask the server to cancel the task (once; bounded; failures only logged)."""
        task = self.task
        if task.cancel_requested or task.terminal:
            return
        task.cancel_requested = True
        with anyio.move_on_after(CANCEL_GRACE):
            try:
                await self.client.cancel_task(task.task_id)
            except (RPCError, TransportError, RequestTimeout) as exc:
                log.debug("tasks/cancel %s failed: %s", task.task_id, exc)

    # -- 2026-07-28 ----------------------------------------------------------------

    async def _wait_modern(self) -> JSON:
        task = self.task
        if task.terminal:
            # A CreateTaskResult never inlines the outcome: fetch it.
            task = await self._poll()
        while True:
            if task.status == "completed":
                result = task.raw.get("result")
                if not isinstance(result, dict):
                    raise ProtocolError(f"task {task.task_id} completed without a result")
                return result
            if task.status == "failed":
                raise failure(task)
            if task.status == "cancelled":
                raise cancelled(task)
            if task.status == "input_required":
                await self._answer_inputs(task.raw.get("inputRequests"))
            await self._sleep(task)
            task = await self._poll()

    async def _answer_inputs(self, requests: Any) -> None:
        if not isinstance(requests, dict) or not requests:
            return
        fresh = {k: v for k, v in requests.items() if k not in self._answered}
        if not fresh:
            return  # already answered; the server has not caught up yet
        self._answered.update(fresh)
        if len(self._answered) > MAX_INPUT_ROUNDS:
            raise ProtocolError(f"task {self.task.task_id}: the server kept asking for input")
        responses = await self.client.fulfil_input_requests(fresh)
        await self.client.request(
            "tasks/update", {"taskId": self.task.task_id, "inputResponses": responses}
        )
        self._nudge.set()  # look again at once: the server may be done

    # -- 2025-11-25 ----------------------------------------------------------------

    async def _wait_legacy(self) -> JSON:
        """Poll until the task ends or needs input, then block on `tasks/result`.

        `tasks/result` is where a waiting task's requests for input arrive (the
        session answers them with the client's features); polling carries on
        beside it so the status stays current.
        """
        task = self.task
        while not (task.terminal or task.status == "input_required"):
            await self._sleep(task)
            task = await self._poll()
        outcome: list[JSON] = []
        async with anyio.create_task_group() as tg:

            async def keep_polling() -> None:
                while True:
                    await self._sleep(self.task)
                    await self._poll()

            if not task.terminal:
                tg.start_soon(keep_polling)
            outcome.append(await self._legacy_result())
            tg.cancel_scope.cancel()
        result = outcome[0]
        if self.task.status == "cancelled" and "content" not in result:
            raise cancelled(self.task)
        return result

    async def _legacy_result(self) -> JSON:
        try:
            return await self.client.request(
                "tasks/result", {"taskId": self.task.task_id}, timeout=None, max_timeout=None,
                on_progress=self.on_progress,
            )
        except RPCError as exc:
            # A cancelled task has no result; say so rather than echo the server's wording.
            try:
                latest = await self._poll()
            except McpCliError:
                raise exc from None
            if latest.status == "cancelled":
                raise cancelled(latest) from None
            if latest.status == "failed":
                raise in_task(exc, latest) from None
            raise

    # -- shared --------------------------------------------------------------------

    async def _poll(self) -> Task:
        result = await self.client.request("tasks/get", {"taskId": self.task.task_id})
        self._update(Task.from_wire(result))
        return self.task

    def _update(self, task: Task) -> None:
        if task.task_id != self.task.task_id:
            return
        old = self.task
        task.cancel_requested = old.cancel_requested
        if old.terminal and not task.terminal:
            return  # a late notification must not resurrect a finished task
        self.task = self.options.current = task
        if (task.status, task.status_message) != (old.status, old.status_message):
            self._report(task)
        if task.terminal or task.status == "input_required":
            self._nudge.set()

    def _report(self, task: Task) -> None:
        if self.options.on_status is not None:
            self.options.on_status(task)

    async def _sleep(self, task: Task) -> None:
        with anyio.move_on_after(task.poll_delay()):
            await self._nudge.wait()
        self._nudge = anyio.Event()

    def _on_notification(self, method: str, params: JSON) -> bool:
        """Status notifications and progress for this task (True when consumed)."""
        if method == "notifications/tasks/status" or method == "notifications/tasks":
            if params.get("taskId") != self.task.task_id:
                return False
            try:
                self._update(Task.from_wire(params))
            except ProtocolError:
                return False
            return True
        if method == "notifications/progress" and self.progress_token is not None:
            if params.get("progressToken") != self.progress_token:
                return False
            if self.on_progress is not None:
                self.on_progress(params)
            return True
        return False


async def cancel_current(client: TaskClient, options: TaskOptions) -> Task | None:
    """Cancel the task `options` is waiting for, if any is still running (Ctrl-C)."""
    task = options.current
    if task is None or task.terminal or task.cancel_requested:
        return None
    task.cancel_requested = True
    await client.cancel_task(task.task_id)
    return task


