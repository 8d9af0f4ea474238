"""The task store seam: what of a task persists (`TaskRecord`) and where (`TaskRecords`).

A task has two halves. The record is what any process serving the same
clients must be able to answer from: id, owner (a hash of the principal, never
the credential), tool, status and status message, timestamps, ttl and poll
interval, the result or error once finished, and the input requests it waits
for. The live half (`store.Task`: the anyio work, its `Continuation`, the
events waiters block on) exists only in the process that runs the task.

`TaskStore` (store.py) writes the record on every change and reads it back for
tasks it does not run itself (after a restart, or on another replica).
Implementations of `TaskRecords`:

- `MemoryRecords` (here): one process, nothing survives it (`--task-store memory`);
- `SQLiteRecords` (`tasks.sqlite`): one file in the server's state directory;
- a Redis store (replicas) plugs in the same way: `request_cancel` and
  `deliver_input` reach the process that runs the task (pub/sub), `on_change`
  tells every process about status changes made elsewhere, `recover` fails the
  tasks of processes that are gone.

The interface is synchronous and its calls are short (a dict lookup, one
SQLite statement); they run on the event loop.
"""

from __future__ import annotations

import hashlib
import heapq
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcpcli.core.protocol import TERMINAL_TASK_STATUSES

__all__ = [
    "RESTARTED",
    "Delivery",
    "LocalDelivery",
    "MemoryRecords",
    "TaskRecord",
    "TaskRecords",
    "principal_key",
]

JSON = dict[str, Any]

#: The status message of a task whose process ended before the task did.
RESTARTED = "the server restarted while this task ran"

#: Where a store hands what other processes sent to a task this process runs.
Delivery = Callable[[str, JSON | None], None]


def principal_key(principal: str) -> str:
    """What a record keeps of the caller: a hash, so a stored task never holds a credential."""
    return hashlib.sha256(principal.encode("utf-8", "surrogatepass")).hexdigest()


#: This process, as the owner of the tasks it runs (replicas tell theirs apart).
PROCESS_ID = secrets.token_hex(8)


@dataclass
class TaskRecord:
    """What persists of one task (wall-clock seconds; `expires` None: no ttl)."""

    id: str
    principal: str  # principal_key() of the caller
    tool: str
    status: str
    message: str | None
    created: float
    updated: float
    ttl_ms: int | None
    poll_ms: int
    expires: float | None
    result: JSON | None = None
    error: JSON | None = None
    pending: dict[str, JSON] = field(default_factory=dict)
    owner: str = PROCESS_ID

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_TASK_STATUSES

    def to_json(self) -> JSON:
        return {
            "id": self.id, "principal": self.principal, "tool": self.tool, "status": self.status,
            "message": self.message, "created": self.created, "updated": self.updated,
            "ttl_ms": self.ttl_ms, "poll_ms": self.poll_ms, "expires": self.expires,
            "result": self.result, "error": self.error, "pending": self.pending, "owner": self.owner,
        }

    @classmethod
    def from_json(cls, data: JSON) -> TaskRecord:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


class TaskRecords(Protocol):
    """Where task records live; see the module docstring."""

    def put(self, record: TaskRecord) -> None:
        """Create or replace a record (every change of a task this process runs)."""

    def get(self, task_id: str, now: float) -> TaskRecord | None:
        """The record, unless unknown or expired at `now`."""

    def delete(self, task_id: str) -> None: ...

    def by_principal(self, principal: str, now: float) -> list[TaskRecord]:
        """The unexpired records of one principal key, oldest first."""

    def count(self, principal: str | None = None) -> int:
        """How many records there are (of one principal key when given)."""

    def expire(self, now: float) -> list[str]:
        """Drop the records whose ttl ran out by `now`; their ids."""

    def evict_finished(self, principal: str | None = None) -> bool:
        """Drop the oldest finished record (of one principal key); False when none is finished."""

    def recover(self, now: float) -> int:
        """Fail the unfinished records of processes that are gone (`RESTARTED`); how many."""

    def on_change(self, callback: Callable[[TaskRecord], None]) -> None:
        """Call `callback` with records that another process changed."""

    def on_delivery(self, cancel: Delivery, answer: Delivery) -> None:
        """Where `request_cancel` / `deliver_input` land for tasks this process runs."""

    def request_cancel(self, task_id: str) -> None:
        """Ask the process running the task to cancel it."""

    def deliver_input(self, task_id: str, responses: JSON) -> None:
        """Hand `tasks/update` input responses to the process running the task."""

    def close(self) -> None: ...


class LocalDelivery:
    """Cancels and answers for a store whose tasks all run in this process: delivered here."""

    _cancel: Delivery | None = None
    _answer: Delivery | None = None

    def on_delivery(self, cancel: Delivery, answer: Delivery) -> None:
        self._cancel, self._answer = cancel, answer

    def request_cancel(self, task_id: str) -> None:
        if self._cancel is not None:
            self._cancel(task_id, None)

    def deliver_input(self, task_id: str, responses: JSON) -> None:
        if self._answer is not None:
            self._answer(task_id, responses)


class MemoryRecords(LocalDelivery):
    """Records in a dict: today's behaviour, nothing outlives the process."""

    durable = False

    def __init__(self) -> None:
        self._records: dict[str, TaskRecord] = {}
        self._expiry: list[tuple[float, str]] = []

    def put(self, record: TaskRecord) -> None:
        if record.id not in self._records and record.expires is not None:
            if len(self._expiry) > 2 * len(self._records) + 64:  # entries of deleted records
                self._expiry = [e for e in self._expiry if e[1] in self._records]
                heapq.heapify(self._expiry)
            heapq.heappush(self._expiry, (record.expires, record.id))
        self._records[record.id] = record

    def get(self, task_id: str, now: float) -> TaskRecord | None:
        record = self._records.get(task_id)
        if record is None or (record.expires is not None and record.expires <= now):
            return None
        return record

    def delete(self, task_id: str) -> None:
        self._records.pop(task_id, None)

    def by_principal(self, principal: str, now: float) -> list[TaskRecord]:
        return [r for r in self._records.values()
                if r.principal == principal and (r.expires is None or r.expires > now)]

    def count(self, principal: str | None = None) -> int:
        if principal is None:
            return len(self._records)
        return sum(1 for r in self._records.values() if r.principal == principal)

    def expire(self, now: float) -> list[str]:
        gone = []
        while self._expiry and self._expiry[0][0] <= now:
            _, task_id = heapq.heappop(self._expiry)
            if self._records.pop(task_id, None) is not None:
                gone.append(task_id)
        return gone

    def evict_finished(self, principal: str | None = None) -> bool:
        for task_id, record in self._records.items():
            if record.terminal and (principal is None or record.principal == principal):
                del self._records[task_id]
                return True
        return False

    def recover(self, now: float) -> int:
        return 0  # a fresh dict has nothing to recover

    def on_change(self, callback: Callable[[TaskRecord], None]) -> None:
        pass  # only this process changes these records

    def close(self) -> None:
        self._records.clear()
