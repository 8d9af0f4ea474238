"""`mcp prompts list|show|get`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from mcpcli.args import prompt_schema as arguments_schema
from mcpcli.cache import remember
from mcpcli.cli._app import CONTEXT_SETTINGS, App, Group, offered
from mcpcli.cli._connection import Connection
from mcpcli.cli._options import large_result_options, target_command
from mcpcli.errors import UsageError
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.client import Client

__all__ = ["arguments_schema", "prompts"]

JSON = dict[str, Any]


@click.group(cls=Group, context_settings=CONTEXT_SETTINGS)
def prompts() -> None:
    """List prompts and render them."""


@target_command(prompts, "list")
def list_(app: App, target: str | None, conn: Connection, out: Output) -> None:
    """List the server's prompts (every page)."""
    from mcpcli import render

    async def go(client: Client) -> None:
        result = await offered(app, client.list_prompts(), "prompts")
        remember(target, "prompts/list", result)
        out.emit(result, items="prompts", human=render.prompts_table)

    app.with_client(target, conn, go)


def _find(listing: JSON, name: str) -> JSON:
    import difflib

    items = [p for p in listing.get("prompts") or [] if isinstance(p, dict)]
    for prompt in items:
        if prompt.get("name") == name:
            return prompt
    names = [str(p.get("name")) for p in items]
    close = difflib.get_close_matches(name, names, n=3)
    hint = f"did you mean {', '.join(close)}?" if close else "list them with `mcp prompts list`"
    raise UsageError(f"unknown prompt {name!r}", hint=hint)


def _prompt_name_completion(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from mcpcli.cli._completers import prompt_names

    return prompt_names(ctx, incomplete)


@target_command(prompts, "show")
@click.argument("name", shell_complete=_prompt_name_completion)
def show(app: App, target: str | None, name: str, conn: Connection, out: Output) -> None:
    """Show a prompt's description and arguments."""
    from mcpcli import render

    async def go(client: Client) -> None:
        out.emit(_find(await client.list_prompts(), name), human=render.prompt_detail)

    app.with_client(target, conn, go)


def _prompt_arg_completion(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from mcpcli.cli._completers import prompt_argument_items

    return prompt_argument_items(ctx, incomplete)


@target_command(prompts, "get")
@click.argument("name", shell_complete=_prompt_name_completion)
@click.option("--arg", "-a", "items", multiple=True, metavar="KEY=VALUE", shell_complete=_prompt_arg_completion,
              help="A prompt argument (always a string); key=@file reads a file, key=@- stdin.")
@click.option("--args", "args_json", metavar="JSON|@FILE|-",
              help="All arguments as a JSON object of strings: text, @file.json, or - for stdin.")
@click.option("--no-validate", is_flag=True,
              help="Send the arguments without checking them against the prompt's argument list.")
@click.option("--save-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Save images, audio and blobs in the messages to DIR.")
@large_result_options
def get(
    app: App,
    target: str | None,
    name: str,
    items: tuple[str, ...],
    args_json: str | None,
    no_validate: bool,
    save_dir: str | None,
    conn: Connection,
    out: Output,
) -> None:
    """Render a prompt with arguments and print its messages.

    \b
    Prompt arguments are strings: `--arg n=007` sends "007". Required
    arguments are checked against the prompt's definition before anything is
    sent (exit 2 naming the missing one).
      mcp prompts get srv review --arg code=@main.py --arg style=short
      mcp prompts get srv review --args '{"code": "x = 1"}' --json
    """
    from mcpcli import render
    from mcpcli.args import build_arguments, read_json_source

    stdin_reader = app.stdin.read
    base = read_json_source(args_json, stdin=stdin_reader) if args_json is not None else None

    async def go(client: Client) -> None:
        schema: JSON = {"type": "object", "additionalProperties": {"type": "string"}}
        if not no_validate:
            listing = await client.list_prompts()
            remember(target, "prompts/list", listing)
            schema = arguments_schema(_find(listing, name))
        arguments = build_arguments(items, schema=schema, base=base, stdin=stdin_reader)
        if not no_validate:
            from mcpcli.validation import check

            check(schema, arguments, hint="see its arguments with `mcp prompts show`, "
                  "or skip the check with --no-validate")
        else:
            arguments = {k: v if isinstance(v, str) else _json_text(v) for k, v in arguments.items()}
        result = await client.get_prompt(name, arguments)
        out.emit(result, items="messages",
                 human=lambda console, r: render.prompt_messages(console, r, save_dir))
        if save_dir and not out.human:
            render.save_blobs(_as_content(result), save_dir, app.info)

    app.with_client(target, conn, go)


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def _as_content(result: JSON) -> JSON:
    """The prompt's message contents as one `content` list (for saving blobs)."""
    blocks: list[Any] = []
    for message in result.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        blocks.extend(content if isinstance(content, list) else [content])
    return {"content": [b for b in blocks if isinstance(b, dict)]}
