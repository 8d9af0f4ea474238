"""The commands a session serves, as receivers of what its server sends them.

`Attached` is a command attached to a session (`attach`): it gets the server's
messages for it as JSON-RPC lines and answers the server's requests. `CallSink` is a
`call` op's connection: it cannot answer a request, but takes its call's notifications
when it asks for them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import SocketStream

from mcpcli.core import localrpc as protocol
from mcpcli.core.jsonrpc import METHOD_NOT_FOUND, RequestId
from mcpcli.errors import RPCError

__all__ = ["OUTBOX_SIZE", "Attached", "CallSink", "declined"]

log = logging.getLogger("mcpcli.daemon")

JSON = dict[str, Any]

#: Messages queued for one attached command before the slowest is dropped.
OUTBOX_SIZE = 1024


@dataclass
class _Answer:
    event: anyio.Event = field(default_factory=anyio.Event)
    message: JSON | None = None


def declined(method: str) -> JSON:
    """What a server request no command can answer gets (as from a client without the capability)."""
    if method == "elicitation/create":
        return {"action": "decline"}
    raise RPCError(METHOD_NOT_FOUND, f"Method not found: {method} (no command is attached to answer it)")


class Attached:
    """One command attached to a session: its socket, its in-flight requests, its subscriptions."""

    def __init__(self, session: str, stream: SocketStream, ids: Iterator[int]) -> None:
        #: The session's name (for the daemon's log).
        self.session = session
        self.stream = stream
        #: The daemon's counter, for ids no command shares (server requests, progress tokens).
        self.ids = ids
        #: The command's request id -> the scope forwarding it (cancelling it cancels on the server).
        self.inflight: dict[Any, anyio.CancelScope] = {}
        self.subscribed: set[str] = set()
        #: Our id of each request forwarded for the command -> the command's own id.
        self.theirs: dict[RequestId, Any] = {}
        #: Our id of each of its `subscriptions/listen` in flight -> what it listens for.
        self.listens: dict[RequestId, JSON] = {}
        #: Our ids of its requests in flight that ask for log messages (`_meta` logLevel,
        #: 2026-07-28: a server sends `notifications/message` for those requests only).
        self.logged: set[RequestId] = set()
        #: Our request id -> where the command's answer to a server request goes.
        self.waiting: dict[str, _Answer] = {}
        self.outbox_send, self.outbox = anyio.create_memory_object_stream[bytes](OUTBOX_SIZE)
        self.gone = anyio.Event()
        #: Scopes cancelled when the command leaves (server requests it will never answer).
        self._on_gone: set[anyio.CancelScope] = set()

    def post(self, message: JSON) -> None:
        """Queue a JSON-RPC message for the command (never blocks; drops if it stopped reading)."""
        try:
            self.outbox_send.send_nowait(protocol.encode(message))
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("session %s: a message for a command was dropped", self.session)
        except protocol.ProtocolViolation as exc:
            log.warning("session %s: %s", self.session, exc)

    async def ask(self, method: str, params: JSON) -> JSON:
        """Send the command a server request and wait for its answer (a decline if it leaves)."""
        our_id = f"mcpcli-d{next(self.ids)}"
        answer = _Answer()
        scope = anyio.CancelScope()
        self.waiting[our_id] = answer
        try:
            self.post({"jsonrpc": "2.0", "id": our_id, "method": method, "params": params})
            with scope:
                if self.gone.is_set():
                    scope.cancel()
                self._on_gone.add(scope)
                await answer.event.wait()
        finally:
            self.waiting.pop(our_id, None)
            self._on_gone.discard(scope)
        if answer.message is None:
            return declined(method)
        if "error" in answer.message:
            err = answer.message["error"] if isinstance(answer.message["error"], dict) else {}
            raise RPCError(int(err.get("code", -32603)), str(err.get("message", "error")), err.get("data"))
        result = answer.message.get("result")
        return result if isinstance(result, dict) else {}

    def answered(self, message: JSON) -> None:
        """The command's answer to a server request we relayed."""
        answer = self.waiting.get(message["id"])
        if answer is not None:
            answer.message = message
            answer.event.set()

    def leave(self) -> None:
        """The command is gone: what waits on it ends (its server requests are declined)."""
        self.gone.set()
        for scope in self._on_gone:
            scope.cancel()
        self._on_gone.clear()
        for answer in self.waiting.values():
            answer.event.set()


class CallSink:
    """A `call` op's connection as a receiver of the server's notifications for that call.

    The fast path cannot answer a server request, but it prints the log messages its
    call caused, as the normal path does: when it asks (`"notifications": true`), they
    are written to its connection before the answer line, in the order they came.
    Otherwise (an older command) the answer stays the only line and they go to the
    session's log; either way the call counts as a command with a request in flight.
    """

    def __init__(self, wanted: bool) -> None:
        self.wanted = wanted
        self.outbox_send, self.outbox = anyio.create_memory_object_stream[bytes](OUTBOX_SIZE)

    def post(self, message: JSON) -> None:
        """Queue a notification for the command (never blocks; drops if it stopped reading)."""
        with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError,
                                 protocol.ProtocolViolation):
            self.outbox_send.send_nowait(protocol.encode(message))

    async def pump(self, stream: SocketStream) -> None:
        """Write what was queued until the call is answered (`outbox_send` closed)."""
        async with self.outbox:
            async for data in self.outbox:
                try:
                    await stream.send(data)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    return
