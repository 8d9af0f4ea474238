"""Change notifications and who receives them.

A backend announces changes (`tools`, `prompts`, `resources` lists; one
`resource` by URI); the server offers the matching notification to every
`Sink`. A legacy connection has one sink, active once initialized, for the
`list_changed` kinds its server declares and the URIs it subscribed to
(`resources/subscribe`); each 2026-07-28 `subscriptions/listen` stream has its
own, for what it asked and the server honoured (including the status of
tasks it follows, `notifications/tasks`). A slow subscriber loses
notifications rather than holding up the others.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpcli.core.jsonrpc import INVALID_PARAMS
from mcpcli.errors import RPCError

__all__ = [
    "LIST_CHANGED",
    "TASK_STATUS",
    "UPDATED",
    "SharedChanges",
    "Sink",
    "change_message",
    "legacy_methods",
    "listen_filter",
    "subscribable",
]

log = logging.getLogger("mcpcli.server")

JSON = dict[str, Any]

LIST_CHANGED = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
}
UPDATED = "notifications/resources/updated"
#: The tasks extension's status notification (for the task ids a listen stream follows).
TASK_STATUS = "notifications/tasks"
#: How many change notifications may wait for one slow subscriber before we drop.
_SINK_BUFFER = 64
#: `subscriptions/listen` flags and the capability each needs.
_LISTEN_FLAGS = (
    ("toolsListChanged", "tools"),
    ("promptsListChanged", "prompts"),
    ("resourcesListChanged", "resources"),
)


class Sink:
    """One subscriber to change notifications: a legacy connection or a listen stream."""

    def __init__(
        self, methods: frozenset[str], uris: set[str], task_ids: frozenset[str] = frozenset()
    ) -> None:
        self.methods = methods
        self.uris = uris
        self.task_ids = task_ids
        self.active = True
        send, receive = anyio.create_memory_object_stream[tuple[str, JSON]](_SINK_BUFFER)
        self.send: MemoryObjectSendStream[tuple[str, JSON]] = send
        self.receive: MemoryObjectReceiveStream[tuple[str, JSON]] = receive

    def offer(self, method: str, params: JSON) -> None:
        if not self.active or method not in self.methods:
            return
        if method == UPDATED and params.get("uri") not in self.uris:
            return
        if method == TASK_STATUS and params.get("taskId") not in self.task_ids:
            return
        try:
            self.send.send_nowait((method, params))
        except anyio.WouldBlock:
            log.debug("dropping %s for a slow subscriber", method)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    def close(self) -> None:
        self.active = False
        self.send.close()


def subscribable(declared: JSON) -> bool:
    """Whether the backend's declared capabilities allow resource subscriptions."""
    resources = declared.get("resources")
    return isinstance(resources, dict) and bool(resources.get("subscribe"))


def legacy_methods(declared: JSON) -> frozenset[str]:
    """The notifications an initialized legacy connection receives."""
    methods = {LIST_CHANGED[kind] for kind in ("tools", "prompts", "resources") if kind in declared}
    if subscribable(declared):
        methods.add(UPDATED)
    return frozenset(methods)


def change_message(kind: str, uri: str | None) -> tuple[str, JSON] | None:
    """The notification announcing a backend change (None: nothing to announce)."""
    if kind == "resource":
        if uri is None:
            return None
        return UPDATED, {"uri": uri}
    if kind in LIST_CHANGED:
        return LIST_CHANGED[kind], {}
    log.debug("ignoring unknown change kind %r", kind)
    return None


def listen_filter(wanted: JSON, declared: JSON) -> tuple[JSON, set[str], set[str]]:
    """What a `subscriptions/listen` request gets: the honoured notifications (its
    acknowledgement), their methods and the resource URIs (-32602 when malformed)."""
    honoured: JSON = {}
    methods: set[str] = set()
    for flag, kind in _LISTEN_FLAGS:
        if wanted.get(flag) is True and kind in declared:
            honoured[flag] = True
            methods.add(LIST_CHANGED[kind])
    uris: set[str] = set()
    subscriptions = wanted.get("resourceSubscriptions")
    if subscriptions is not None:
        if not isinstance(subscriptions, list) or not all(isinstance(u, str) for u in subscriptions):
            raise RPCError(INVALID_PARAMS, "Invalid params: resourceSubscriptions must be URIs")
        if subscriptions and subscribable(declared):
            honoured["resourceSubscriptions"] = list(dict.fromkeys(subscriptions))
            uris.update(subscriptions)
            methods.add(UPDATED)
    return honoured, methods, uris


class SharedChanges:
    """Change notifications shared between replicas (a Redis task store relays them).

    A resource file that replicas serve from one file system is seen changing by each of
    them, so the same update arrives twice: once from this replica's own watch, once
    relayed. Within `window` seconds an update is dropped when the *other* origin already
    announced it; repeats from one origin always pass (a second real change is never lost).
    """

    def __init__(self, window: float = 2.0) -> None:
        self.window = window
        self._seen: dict[tuple[bool, str], float] = {}

    def _admit(self, remote: bool, method: str, params: JSON) -> bool:
        now = time.monotonic()
        if len(self._seen) > 1024:
            self._seen = {k: t for k, t in self._seen.items() if now - t < self.window}
        key = json.dumps([method, params], sort_keys=True, default=str)
        other = self._seen.get((not remote, key))
        self._seen[(remote, key)] = now
        return other is None or now - other >= self.window

    def local(self, method: str, params: JSON) -> bool:
        """This replica noticed a change: whether to offer (and relay) it."""
        return self._admit(False, method, params)

    def remote(self, method: str, params: JSON) -> bool:
        """Another replica relayed a change: whether to offer it here."""
        return self._admit(True, method, params)
