"""`mcp serve`'s task store flags: where a served file's tasks are kept, and how many.

Kept apart from `serve.py`, which holds the command: the flags reach `_serve` as one
`TaskFlags` through the click context (`task_flags()`), so `serve()` itself need not
take five more parameters.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mcpcli.errors import UsageError

if TYPE_CHECKING:
    from mcpcli.toolsfile.model import ToolsFile

__all__ = ["TaskFlags", "default_state_dir", "task_flags", "task_options"]


@dataclass(frozen=True)
class TaskFlags:
    """The task store flags."""

    store: str | None
    state_dir: str | None
    max_tasks: int
    per_client: int | None
    max_result: int

    def open(self, file: str, config: ToolsFile, warn: Callable[[str], None]) -> Any:
        """The `TaskRecords`: SQLite when FILE has task tools, unless --task-store says otherwise.

        Editors start one stdio server per window, often of the same FILE: when the
        default state directory is taken, this one keeps its tasks in memory (with a
        warning); a state directory or store asked for by name is an error (exit 4)."""
        from mcpcli.server.tasks.sqlite import StoreBusy
        from mcpcli.server.tasks.stores import open_records

        kind = self.store or ("sqlite" if config.has_tasks else "memory")
        if kind == "memory":
            return open_records(kind, "")
        try:
            return open_records(kind, self.state_dir or default_state_dir(file), file=file)
        except StoreBusy as exc:
            if self.store is not None or self.state_dir is not None:
                raise
            warn(f"{exc.message}: this one keeps its tasks in memory (give it its own --state-dir)")
            return open_records("memory", "")


_TASKS_KEY = "mcpcli.serve.tasks"


def task_options(command: Callable[..., None]) -> Callable[..., None]:
    """The task store flags, checked, for `_serve` as one `TaskFlags` (in the click context's meta:
    `serve()` stays within the size guide)."""

    @functools.wraps(command)
    def wrapper(*args: Any, task_store: str | None, state_dir: str | None, max_tasks: int,
                max_tasks_per_client: int | None, max_task_result: int, **kwargs: Any) -> None:
        if task_store is not None:
            from mcpcli.server.tasks.stores import parse_store

            parse_store(task_store)
        if kwargs.get("proxy") is not None and (task_store is not None or state_dir is not None):
            raise UsageError("--task-store and --state-dir apply to FILE, not to --proxy")
        tasks = TaskFlags(task_store, state_dir, max_tasks, max_tasks_per_client, max_task_result)
        click.get_current_context().meta[_TASKS_KEY] = tasks
        command(*args, **kwargs)

    options = [
        click.option("--task-store", metavar="STORE",
                     help="Where tasks are kept: sqlite (default when FILE has task tools: they survive a "
                          "restart), memory (lost on exit) or redis://HOST:PORT/DB."),
        click.option("--state-dir", type=click.Path(file_okay=False), metavar="DIR",
                     help="The server's state (tasks.db), 0700. Default: $XDG_STATE_HOME/mcpcli/serve/<hash "
                          "of FILE's absolute path>."),
        click.option("--max-tasks", type=click.IntRange(min=1), default=1000, show_default=True, metavar="N",
                     help="Keep at most N tasks (the oldest finished ones go first; when all run, a call "
                          "runs without a task)."),
        click.option("--max-tasks-per-client", type=click.IntRange(min=1), metavar="N",
                     help="Keep at most N tasks per client credential. Default: no bound below --max-tasks."),
        click.option("--max-task-result", type=click.IntRange(min=1), default=4 * 1024 * 1024, show_default=True,
                     metavar="BYTES",
                     help="A task whose result is larger (as JSON) fails with an error saying so."),
    ]
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


def task_flags() -> TaskFlags:
    """The `TaskFlags` of the running `mcp serve` command."""
    flags: TaskFlags = click.get_current_context().meta[_TASKS_KEY]
    return flags


def default_state_dir(file: str) -> Path:
    """`$XDG_STATE_HOME/mcpcli/serve/<hash of FILE's absolute path>`: one per tools.yaml."""
    import hashlib

    from mcpcli.config import state_dir

    digest = hashlib.sha256(os.path.abspath(file).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return state_dir() / "serve" / digest
