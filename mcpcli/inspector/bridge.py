"""What the client receives, handed to the inspector's screen: the one seam between them.

The client is built before the app runs (its capabilities are declared in the
handshake), so its feature callbacks and sinks point here: server requests
(elicitation, sampling) wait for the UI to be attached and are then answered by
it; notifications, a stdio server's stderr and our own warnings are kept until
then and delivered in order. Nothing here writes to the terminal, which the
full-screen app owns. No Textual: the app implements `UI`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from mcpcli.client import ClientFeatures

__all__ = ["UI", "Bridge", "Event"]

JSON = dict[str, Any]
#: Events kept for a UI that is not attached yet; older ones are dropped past this.
BACKLOG = 2000


@dataclass(frozen=True)
class Event:
    """Something to show in the activity pane.

    `kind`: "notification" (`method`, `params`), "stderr" (a line the server wrote), "warning"
    (one of ours), "request" (a server request, `method`).
    """

    kind: str
    method: str = ""
    params: JSON = field(default_factory=dict)
    text: str = ""


class UI(Protocol):
    """What the app answers and shows."""

    def show(self, event: Event) -> None: ...

    def elicit(self, params: JSON) -> Awaitable[JSON]: ...

    def sample(self, params: JSON, draft: Callable[[], Awaitable[JSON]] | None) -> Awaitable[JSON]: ...


class Bridge:
    """The client's features and sinks, forwarding to a `UI` once one is attached."""

    def __init__(self, *, roots: list[JSON] | None = None,
                 sampler: Callable[[JSON], Awaitable[JSON]] | None = None) -> None:
        self.roots = roots
        #: `--sampling-command`: drafts an answer the person approves or edits.
        self.sampler = sampler
        self._ui: UI | None = None
        self._backlog: list[Event] = []
        self._attached: anyio.Event | None = None
        self._partial = b""

    # -- what the client is given -------------------------------------------------

    def features(self) -> ClientFeatures:
        """Elicitation (forms and URLs) and sampling are answered by a person; roots as given."""
        return ClientFeatures(elicit=self._elicit, sample=self._sample, roots=self.roots, elicit_url=True)

    def on_notification(self, method: str, params: JSON) -> None:
        self.show(Event("notification", method=method, params=params))

    def on_error(self, exc: Exception) -> None:
        self.show(Event("warning", text=str(exc)))

    def write(self, data: bytes) -> int:
        """A stdio server's stderr (the transport writes it here): one event per line."""
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()[-4096:]
        for raw in lines:
            text = raw.decode("utf-8", "replace").rstrip("\r")
            if text.strip():
                self.show(Event("stderr", text=text))
        return len(data)

    def flush(self) -> None:
        pass

    def log_handler(self) -> logging.Handler:
        """Our own warnings (`mcpcli` loggers), which would otherwise reach the terminal."""
        bridge = self

        class Handler(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                bridge.show(Event("warning", text=record.getMessage()))

        handler = Handler(logging.WARNING)
        return handler

    # -- the UI ------------------------------------------------------------------------

    def attach(self, ui: UI) -> None:
        self._ui = ui
        backlog, self._backlog = self._backlog, []
        for event in backlog:
            ui.show(event)
        if self._attached is not None:
            self._attached.set()

    def detach(self) -> None:
        """The UI is gone: what still waits for it is cancelled (elicitation) or refused (sampling)."""
        self._ui = None
        if self._attached is None:
            self._attached = anyio.Event()
        self._attached.set()

    def show(self, event: Event) -> None:
        if self._ui is not None:
            self._ui.show(event)
            return
        self._backlog.append(event)
        del self._backlog[:-BACKLOG]

    async def _ui_ready(self) -> UI | None:
        """The UI, once attached; None once it has gone."""
        if self._ui is None:
            if self._attached is None:
                self._attached = anyio.Event()
            await self._attached.wait()
        return self._ui

    async def _elicit(self, params: JSON) -> JSON:
        self.show(Event("request", method="elicitation/create", params=params))
        ui = await self._ui_ready()
        if ui is None:
            return {"action": "cancel"}
        return await ui.elicit(params)

    async def _sample(self, params: JSON) -> JSON:
        from mcpcli.errors import RPCError

        self.show(Event("request", method="sampling/createMessage", params=params))
        ui = await self._ui_ready()
        if ui is None:
            raise RPCError(-1, "the inspector was closed")
        sampler = self.sampler
        draft = (lambda: sampler(params)) if sampler is not None else None
        return await ui.sample(params, draft)
