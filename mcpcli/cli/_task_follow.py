"""What `tools call` and `mcp tasks` share: following a task, Ctrl-C, printing outcomes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from mcpcli.client.tasks import Task, TaskMode, TaskOptions, cancel_current, task_support

if TYPE_CHECKING:
    from mcpcli.cli._app import App
    from mcpcli.cli._progress import ProgressBar
    from mcpcli.client import Client
    from mcpcli.output import Output

__all__ = ["announce_detached", "cancel_on_interrupt", "emit_call_result", "task_options", "warn_no_task"]

JSON = dict[str, Any]


def task_options(bar: ProgressBar | None, *, mode: TaskMode = "auto", detach: bool = False) -> TaskOptions:
    """Task options whose status changes show on the progress bar (a TTY stderr)."""

    def on_status(task: Task) -> None:
        if bar is not None:
            bar.status(f"task {task.status}", task.status_message)

    return TaskOptions(mode=mode, detach=detach, on_status=on_status)


@contextmanager
def cancel_on_interrupt(app: App, client: Client, options: TaskOptions) -> Iterator[None]:
    """On Ctrl-C, cancel the task being waited for (`tasks/cancel`) before exiting 130."""

    async def hook() -> None:
        task = await cancel_current(client, options)
        if task is not None:
            app.info(f"cancelled task {task.task_id}")

    app.interrupt_hooks.append(hook)
    try:
        yield
    finally:
        app.interrupt_hooks.remove(hook)


def emit_call_result(app: App, out: Output, result: JSON, save_dir: str | None) -> None:
    """Print a tool result the way `tools call` always has."""
    from mcpcli import render

    out.emit(result, human=lambda console, r: render.call_result(console, r, save_dir))
    if save_dir and not out.human:
        render.save_blobs(result, save_dir, app.info)


def announce_detached(
    app: App, out: Output, target: str | None, result: JSON, task: Task, *, era: str
) -> None:
    """`--detach`: print the CreateTaskResult, and on stderr how to follow the task."""
    from mcpcli import render
    from mcpcli.cli._app import NO_TARGET

    out.emit(result, human=render.task_detail)
    entry = None if target is None or target == NO_TARGET else app.resolve(target)
    # A session (@NAME, or a keepAlive server's) keeps its server and connection running.
    held = entry is not None and (entry.transport == "session" or entry.keep_alive)
    if entry is None or (entry.transport in ("stdio", "yaml") and not held):
        app.warn(f"task {task.task_id} ends with this stdio server, which exits now")
        return
    follow = f"`{app.prog} tasks result {target} {task.task_id}`"
    if era == "legacy" and not held:
        # 2025-11-25 servers may keep tasks per session (server-everything does).
        follow = f"{follow} if the server keeps tasks across sessions"
    app.info(f"task {task.task_id} is {task.status}; follow it with {follow}")


def warn_no_task(app: App, client: Client, tool: str) -> None:
    """`--task`/`--detach` on a 2025-11-25 server that will not run this tool as a task."""
    from mcpcli.client.tasks import server_accepts_tasks

    if client.era != "legacy":
        return  # 2026-07-28 servers decide per call
    if not server_accepts_tasks(client.capabilities):
        app.warn("the server does not run tools as tasks; calling it normally")
        return
    definition = client.known_tool(tool)
    if definition is not None and task_support(definition) == "forbidden":
        app.warn(f"tool {tool!r} does not run as a task; calling it normally")
