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
    """Call it with progress params; `close()` removes the bar."""

    def __init__(self, app: App, description: str = "working") -> None:
        self._app = app
        self._description = description
        self._message = ""
        self._status = ""
        self._paused = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, params: dict[str, Any]) -> None:
        total = params.get("total")
        message = params.get("message")
        self._message = printable(message, keep_newlines=False)[:60] if isinstance(message, str) else ""
        if self._paused:
            return
        self._start()
        assert self._progress is not None
        assert self._task is not None
        self._progress.update(
            self._task,
            completed=float(params.get("progress") or 0),
            total=float(total) if isinstance(total, (int, float)) else None,
            description=self._label(),
        )

    def status(self, text: str) -> None:
        """Show a background task's status (kept beside any progress message)."""
        self._status = printable(text, keep_newlines=False)[:60]
        if self._paused:
            return
        self._start()
        assert self._progress is not None
        assert self._task is not None
        self._progress.update(self._task, description=self._label())

    def _label(self) -> str:
        if self._status and self._message:
            return f"{self._status} · {self._message}"
        return self._status or self._message or self._description

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
            self._progress.start()
            self._task = self._progress.add_task(self._label(), total=None)

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
                    self._start()

        features.elicit = elicit

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
