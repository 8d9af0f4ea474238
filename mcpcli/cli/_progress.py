"""A progress bar on stderr, fed by `notifications/progress` (TTY only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcpcli.text import printable

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from mcpcli.cli._app import App
    from mcpcli.client import ClientFeatures

__all__ = ["ProgressBar"]


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
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            plain = not self._app.color
            console = Console(file=self._app.stderr, no_color=plain,
                              color_system=None if plain else "auto")
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
