"""`mcp complete`: ask the server to complete a prompt or resource-template argument."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import App
from mcpcli.cli._connection import Connection
from mcpcli.cli._options import target_command
from mcpcli.errors import UsageError
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.client import Client

__all__ = ["complete"]


def _context(items: tuple[str, ...]) -> dict[str, str]:
    context: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--context {item!r}: expected KEY=VALUE")
        context[key] = value
    return context


@target_command()
@click.argument("argument", metavar="ARG")
@click.argument("partial", default="", metavar="[PARTIAL]")
@click.option("--prompt", "prompt_name", metavar="NAME", help="Complete an argument of this prompt.")
@click.option("--resource", "uri_template", metavar="URI_TEMPLATE",
              help="Complete a variable of this resource template.")
@click.option("--context", "context_items", multiple=True, metavar="KEY=VALUE",
              help="An already chosen argument value the suggestions may depend on (repeatable).")
def complete(
    app: App,
    target: str | None,
    argument: str,
    partial: str,
    prompt_name: str | None,
    uri_template: str | None,
    context_items: tuple[str, ...],
    conn: Connection,
    out: Output,
) -> None:
    """Ask the server for completions of a prompt or resource-template argument.

    \b
    Exactly one of --prompt or --resource names what is being completed.
      mcp complete srv --prompt review style s
      mcp complete srv --resource 'file:///{path}' path src/
      mcp complete srv --prompt team name --context department=Sales
    Prints one suggestion per line; --json prints the result object,
    --jsonl one value per line.
    """
    from mcpcli import render

    if (prompt_name is None) == (uri_template is None):
        raise UsageError("give exactly one of --prompt NAME or --resource URI_TEMPLATE")
    ref: dict[str, Any] = (
        {"type": "ref/prompt", "name": prompt_name}
        if prompt_name is not None
        else {"type": "ref/resource", "uri": uri_template}
    )
    context = _context(context_items)

    async def go(client: Client) -> dict[str, Any]:
        return await client.complete(ref, argument, partial, context or None)

    result = app.with_client(target, conn, go)
    if out.mode == "jsonl":
        completion = result.get("completion")
        values = completion.get("values") if isinstance(completion, dict) else None
        for value in values if isinstance(values, list) else []:
            out.event(value)
    else:
        out.emit(result, human=render.completion_values)
