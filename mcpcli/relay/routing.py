"""Which downstream caused what an upstream sends.

A relay shares one upstream connection among downstreams (the daemon's commands, the
gateway's calls). What the upstream sends back (a request for input, progress, a log
message) belongs to the downstream whose request caused it. `Router.route` asks, in order:

1. the owner's `current`: the gateway's call whose coroutine is running (a 2026-07-28
   input round is answered within our own request);
2. the request the transport says carried the message (Streamable HTTP; `caused_by` in
   `mcpcli.client`): the downstream that request was sent for (`Router.sent`). A request
   no live downstream was registered for is the one `unregistered` downstream's when the
   owner has such (the daemon's `call` ops: a request the session's client sent on its
   own while exactly one runs), else nobody's; an owner without them routes the message
   as if the transport said nothing;
3. the task the message is tagged with (`_meta` related-task, 2025-11-25): the downstream
   waiting on that task (`Router.waiting`);
4. the owner's `rules`, in order (the daemon's: a 2026-07-28 log message goes to the one
   command whose requests asked for log messages);
5. the one downstream with requests in flight; with several, the owner's `tie` may pick
   one (the gateway's: the latest call when all come from the one client behind a stdio
   gateway), else nobody: a message is never guessed onto another downstream.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, TypeVar

from mcpcli.core.jsonrpc import RequestId
from mcpcli.core.protocol import RELATED_TASK_KEY

__all__ = ["NOBODY", "Message", "Nobody", "Router", "Rule"]

JSON = dict[str, Any]
D = TypeVar("D")
K = TypeVar("K")


class Nobody:
    """A rule's answer: nobody takes the message (the rules after it are not asked)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOBODY"


NOBODY = Nobody()


@dataclass(frozen=True)
class Message:
    """What the upstream sent, as far as routing cares."""

    method: str
    params: JSON
    #: Our request whose stream carried it, when the transport says (`caused_by`).
    related: RequestId | None = None
    #: A request for input: it is asked of the downstream, never of one that is ending.
    asking: bool = False

    @property
    def task_id(self) -> str | None:
        """The task it is tagged with (`_meta` related-task), if any."""
        meta = self.params.get("_meta")
        task = meta.get(RELATED_TASK_KEY) if isinstance(meta, dict) else None
        task_id = task.get("taskId") if isinstance(task, dict) else None
        return task_id if isinstance(task_id, str) else None


#: An owner's rule: the downstream that takes the message, NOBODY, or None (no opinion).
Rule = Callable[[Message], D | Nobody | None]


class _Registered(Generic[K, D]):
    """`table[key] = value` while the block runs (removed after, unless replaced meanwhile)."""

    __slots__ = ("_key", "_table", "_value")

    def __init__(self, table: dict[K, D], key: K, value: D) -> None:
        self._table, self._key, self._value = table, key, value

    def __enter__(self) -> None:
        self._table[self._key] = self._value

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._table.get(self._key) is self._value:
            del self._table[self._key]


#: What `Router.sent` registers for a request nobody sends: nothing.
_NOBODYS: AbstractContextManager[object] = nullcontext()


def _only(found: Sequence[D]) -> D | None:
    return found[0] if len(found) == 1 else None


def _always(downstream: Any) -> bool:
    return True


class Router(Generic[D]):
    """The routing rules of one upstream connection, and what they know: our requests
    made for each downstream (`requests`) and the tasks each waits on (`tasks`).

    `in_flight(message)`: the downstreams with requests in flight, oldest first (those
    a request for input may be asked of, when `message.asking`). `alive`: whether a
    registered downstream is still there to take a message.
    """

    def __init__(
        self,
        in_flight: Callable[[Message], Sequence[D]],
        *,
        alive: Callable[[D], bool] = _always,
        current: Callable[[], D | None] | None = None,
        unregistered: Callable[[], Sequence[D]] | None = None,
        rules: Sequence[Rule[D]] = (),
        tie: Callable[[Sequence[D]], D | None] | None = None,
    ) -> None:
        self._in_flight = in_flight
        self._alive = alive
        self._current = current
        self._unregistered = unregistered
        self._rules = tuple(rules)
        self._tie = tie
        #: Our id of each request in flight -> the downstream it was sent for.
        self.requests: dict[RequestId, D] = {}
        #: Task id -> the downstream waiting on it.
        self.tasks: dict[str, D] = {}

    def sent(self, request_id: RequestId, downstream: D | None) -> AbstractContextManager[object]:
        """While the block runs, our request `request_id` is `downstream`'s (None: nobody's,
        for an owner's client hook that finds no downstream sending it)."""
        if downstream is None:
            return _NOBODYS
        return _Registered(self.requests, request_id, downstream)

    def waiting(self, task_id: str, downstream: D) -> _Registered[str, D]:
        """While the block runs, messages about task `task_id` are `downstream`'s."""
        return _Registered(self.tasks, task_id, downstream)

    def clear(self) -> None:
        """The connection is gone: nothing registered on it holds any more."""
        self.requests.clear()
        self.tasks.clear()

    def route(self, message: Message) -> D | None:
        """The downstream `message` is for, or None (nobody, or not known)."""
        if self._current is not None:
            found = self._current()
            if found is not None:
                return found
        if message.related is not None:
            found = self.requests.get(message.related)
            if found is not None and self._alive(found):
                return found
            if self._unregistered is not None:
                return _only(self._unregistered())
        task_id = message.task_id
        if task_id is not None:
            found = self.tasks.get(task_id)
            if found is not None and self._alive(found):
                return found
        for rule in self._rules:
            decided = rule(message)
            if isinstance(decided, Nobody):
                return None
            if decided is not None:
                return decided
        busy = self._in_flight(message)
        if len(busy) == 1:
            return busy[0]
        if busy and self._tie is not None:
            return self._tie(busy)
        return None
