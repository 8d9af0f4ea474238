"""What stderr shows while a server works, on a terminal only: a progress bar fed by
`notifications/progress`, and a line saying what is awaited from whom when a request goes
unanswered for a few seconds (`WaitingNotice`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcpcli.text import printable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from mcpcli.cli._app import App
    from mcpcli.client import Client, ClientFeatures

__all__ = ["ProgressBar", "WaitingNotice", "waiting_for_call"]


class ProgressBar:
    """Call it with progress params; `close()` removes the bar.

    It shows one status: a task's state (`task working`), then one message and one
    counter, from whichever source is current. Progress notifications carry both; a
    task's status message (polled with `tasks/get`) replaces them when no notification
    has come since the task began, as with 2026-07-28 tasks, whose progress is known
    only from the status message: the bar's last counter, from before the task, would
    contradict it ("2/4: step 2" beside "step 1 ... 25%").
    """

    def __init__(self, app: App, description: str = "working") -> None:
        self._app = app
        self._description = description
        self._state = ""
        self._message = ""
        self._completed = 0.0
        self._total: float | None = None
        #: A progress notification came while a task's state was shown: it is the live source.
        self._live = False
        self._paused = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        #: Called when the bar first appears (a waiting line it replaces).
        self._superseded: list[Callable[[], None]] = []

    @property
    def showing(self) -> bool:
        return self._progress is not None

    def supersedes(self, close: Callable[[], None]) -> None:
        """Call `close` (a waiting line's) when the bar appears: the bar then says the rest."""
        self._superseded.append(close)

    def __call__(self, params: dict[str, Any]) -> None:
        total = params.get("total")
        message = params.get("message")
        self._message = printable(message, keep_newlines=False)[:60] if isinstance(message, str) else ""
        self._completed = float(params.get("progress") or 0)
        self._total = float(total) if isinstance(total, (int, float)) else None
        self._live = self._live or bool(self._state)
        self._show()

    def status(self, state: str, message: str | None = None) -> None:
        """Show a background task's state, and its status message unless progress
        notifications are saying more (see the class)."""
        self._state = printable(state, keep_newlines=False)[:60]
        if message and not self._live:
            self._message = printable(message, keep_newlines=False)[:60]
            self._completed, self._total = 0.0, None  # the counter was the old source's
        self._show()

    def _show(self) -> None:
        if self._paused:
            return
        self._start()
        assert self._progress is not None
        assert self._task is not None
        self._progress.update(self._task, completed=self._completed, total=self._total,
                              description=self._label())
        if self._total is None:  # update() takes None as "unchanged": an unknown total pulses
            for task in self._progress.tasks:
                if task.id == self._task:
                    task.total = None

    def shown(self) -> tuple[str, float, float | None] | None:
        """What the bar shows: its label, progress and total (None: unknown); None when hidden."""
        if self._progress is None:
            return None
        task = next(t for t in self._progress.tasks if t.id == self._task)
        return str(task.description), task.completed, task.total

    def _label(self) -> str:
        if self._state and self._message:
            return f"{self._state}: {self._message}"
        return self._state or self._message or self._description

    def _start(self) -> None:
        if self._progress is None:
            from rich.progress import (
                BarColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            closes, self._superseded = self._superseded, []
            for close in closes:
                close()
            console = _console(self._app)
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            # The task first, so the first frame drawn already shows what is known.
            self._task = self._progress.add_task(self._label(), total=self._total)
            self._progress.update(self._task, completed=self._completed)
            self._progress.start()

    def pause_for_prompts(self, features: ClientFeatures) -> None:
        """Hide the bar while an elicitation prompts a person (a live bar would draw over it)."""
        ask = features.elicit

        async def elicit(params: dict[str, Any]) -> dict[str, Any]:
            shown = self._progress is not None
            self.close()
            self._paused += 1
            try:
                return await ask(params)
            finally:
                self._paused -= 1
                if shown:
                    self._show()

        features.elicit = elicit

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _console(app: App) -> Console:
    """A rich console on our stderr, in colour only where `app.color` allows."""
    from rich.console import Console

    plain = not app.color
    return Console(file=app.stderr, no_color=plain, color_system=None if plain else "auto")


def _nothing() -> None:
    return None


class _WaitingLine:
    """One live line on stderr, `TEXT (N s; Ctrl-C stops)`, counting from `since`; removed
    (transient) by `close`."""

    def __init__(self, app: App, text: str, since: float) -> None:
        from rich.progress import Progress, ProgressColumn
        from rich.text import Text

        console = _console(app)
        text = printable(text, keep_newlines=False)

        class Line(ProgressColumn):
            def render(self, task: Any) -> Text:
                # The tail always shows; a narrow terminal cuts the text before it instead.
                tail = f" ({int(time.monotonic() - since)} s; Ctrl-C stops)"
                room = max(console.width - len(tail) - 1, 10)
                head = text if len(text) <= room else text[: room - 1] + "…"
                return Text(head + tail, no_wrap=True, overflow="crop")

        self._progress: Progress | None = Progress(
            Line(), console=console, transient=True, refresh_per_second=4,
            redirect_stdout=False, redirect_stderr=False,  # stdout is data: never wrapped
        )
        self._progress.start()
        self._progress.add_task(text, total=None)

    def close(self) -> None:
        progress, self._progress = self._progress, None
        if progress is not None:
            progress.stop()


class WaitingNotice:
    """`ClientOptions.on_slow` on a terminal: when a request has gone unanswered for a few
    seconds, one live line on stderr says what is awaited from whom, for how long, and that
    Ctrl-C stops (`waiting for an answer to initialize from SERVER (3 s; Ctrl-C stops)`);
    it is removed when the request ends. During a tool call (`waiting_for_call`) the call's
    progress bar replaces it as soon as the bar has something to show, and while the bar
    shows the server at work there is no line at all."""

    def __init__(self, app: App, server: str) -> None:
        self._app = app
        self._server = server
        #: The progress bar of the call in flight, if any.
        self.bar: ProgressBar | None = None
        self._lines: list[_WaitingLine] = []
        self._prompting = 0

    def __call__(self, method: str, waited: float) -> Callable[[], None]:
        bar = self.bar
        if self._prompting or (bar is not None and bar.showing):
            return _nothing  # a person is at a prompt, or the bar shows the server at work
        line = _WaitingLine(self._app, f"waiting for an answer to {method} from {self._server}",
                            time.monotonic() - waited)
        self._lines.append(line)

        def done() -> None:
            line.close()
            if line in self._lines:
                self._lines.remove(line)

        if bar is not None:
            bar.supersedes(done)
        return done

    def pause_for_prompts(self, features: ClientFeatures) -> None:
        """No live line while an elicitation prompts a person (it would draw over it)."""
        ask = features.elicit

        async def elicit(params: dict[str, Any]) -> dict[str, Any]:
            for line in self._lines:
                line.close()
            self._prompting += 1
            try:
                return await ask(params)
            finally:
                self._prompting -= 1

        features.elicit = elicit


def waiting_for_call(client: Client, bar: ProgressBar | None) -> Callable[[], None]:
    """Let a tool call's `bar` take over from the waiting line while the call runs; the
    returned callable ends that."""
    notice = client.options.on_slow
    if bar is None or not isinstance(notice, WaitingNotice):
        return _nothing
    notice.bar = bar

    def release() -> None:
        notice.bar = None

    return release
