"""`mcp tasks list|get|result|cancel`: tasks that outlive the command that started them.

A task started with `mcp tools call --detach` lives on the server. Over HTTP a
later command can look at it again: 2026-07-28 servers are stateless, so any
connection reaches the task; 2025-11-25 servers keep tasks per session, so
whether a new connection sees them is up to the server. Over stdio the server
(and its tasks) ends with each command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, App, Group
from mcpcli.cli._connection import Connection
from mcpcli.cli._options import target_command
from mcpcli.errors import ToolError, UsageError
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.client import Client

__all__ = ["tasks"]


@click.group(cls=Group, context_settings=CONTEXT_SETTINGS)
def tasks() -> None:
    """Follow, inspect and cancel background tasks."""


task_id_argument = click.argument("task_id", metavar="TASK_ID")


@target_command(tasks, "list")
def list_(app: App, target: str | None, conn: Connection, out: Output) -> None:
    """List the server's tasks (2025-11-25 servers only)."""
    from mcpcli import render

    async def go(client: Client) -> None:
        if client.era == "modern":
            raise UsageError(
                "2026-07-28 servers cannot list tasks (the tasks extension has no tasks/list)",
                hint="keep the id `mcp tools call --detach` printed",
            )
        result = await client.list_tasks()
        out.emit(result, items="tasks", human=render.tasks_table)

    app.with_client(target, conn, go)


@target_command(tasks, "get")
@task_id_argument
def get(app: App, target: str | None, task_id: str, conn: Connection, out: Output) -> None:
    """Show a task's status.

    On 2026-07-28 servers a finished task also shows its result or error.
    """
    from mcpcli import render

    async def go(client: Client) -> None:
        out.emit(await client.get_task(task_id), human=render.task_detail)

    app.with_client(target, conn, go)


@target_command(tasks, "result")
@task_id_argument
@click.option("--save-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Save images, audio and blobs in the result to DIR.")
def result(
    app: App, target: str | None, task_id: str, save_dir: str | None, conn: Connection, out: Output
) -> None:
    """Wait for a task and print its result.

    The result prints like `tools call` prints it.

    \b
    Requests for input the task makes meanwhile are answered like any other
    (--elicit-json, --sampling-command, ...). Ctrl-C or --max-timeout stop the
    waiting, not the task: cancel it with `mcp tasks cancel`.
    Exits 1 when the tool reported an error, 5 when the task failed or was cancelled.
    """
    from mcpcli.cli._notify import progress_printer
    from mcpcli.cli._task_follow import emit_call_result, task_options

    async def go(client: Client) -> dict[str, Any]:
        bar = progress_printer(app)
        if bar is not None:
            bar.pause_for_prompts(client.options.features)
        options = task_options(bar)
        options.cancel_on_exit = False
        try:
            outcome = await client.wait_task(task_id, options)
        finally:
            if bar is not None:
                bar.close()
        emit_call_result(app, out, outcome, save_dir)
        return outcome

    outcome = app.with_client(target, conn, go)
    if outcome.get("isError"):
        raise ToolError(f"task {task_id!r}: the tool reported an error")


@target_command(tasks, "cancel")
@task_id_argument
def cancel(app: App, target: str | None, task_id: str, conn: Connection, out: Output) -> None:
    """Ask the server to cancel a task.

    Cancellation is cooperative: the task may still finish.
    """
    from mcpcli import render

    async def go(client: Client) -> None:
        answer = await client.cancel_task(task_id)
        if out.human and "taskId" not in answer:
            # 2026-07-28 acknowledges with an empty result.
            app.info(f"asked the server to cancel task {task_id}")
            return
        out.emit(answer, human=render.task_detail)

    app.with_client(target, conn, go)
