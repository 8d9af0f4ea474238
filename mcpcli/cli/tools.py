"""`mcp tools list|show|call|grep`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from mcpcli.args import UnknownTool
from mcpcli.cache import remember
from mcpcli.cli._app import CONTEXT_SETTINGS, App, Group, offered, pass_app
from mcpcli.cli._connection import Connection
from mcpcli.cli._options import (
    _complete_target,
    flag_option,
    large_result_options,
    output_options,
    project_option,
    target_command,
)
from mcpcli.cli._types import seconds
from mcpcli.core.flags import FLAGS
from mcpcli.errors import ExitCode, McpCliError, ToolError, TransportError, UsageError, unwrap
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.client import Client
    from mcpcli.other_clients import Found

__all__ = ["tools"]


@click.group(cls=Group, context_settings=CONTEXT_SETTINGS)
def tools() -> None:
    """List, inspect and call tools."""


@target_command(tools, "list")
def list_(app: App, target: str | None, conn: Connection, out: Output) -> None:
    """List the server's tools (every page).

    \b
    On a terminal, a note on stderr names the tools the server would also
    offer a client that declares sampling, URL-mode elicitation or roots
    (found with a second connection that only lists them).
    """
    from mcpcli import render

    async def listing(connecting: Callable[[], None] | None = None) -> list[str]:
        async with app.client(target, conn, connecting=connecting) as client:
            result = await offered(app, client.list_tools(), "tools")
            remember(target, "tools/list", result)
            out.emit(result, items="tools", human=render.tools_table)
        return [t["name"] for t in result.get("tools", []) if isinstance(t, dict) and isinstance(t.get("name"), str)]

    if not out.human:
        app.run(listing)  # what scripts read: no second connection
        return

    async def listing_and_hidden() -> None:
        import anyio

        from mcpcli.hidden_tools import hidden_tools, offered_to_all

        probed: list[set[str] | None] = []

        async def probe() -> None:
            assert app.connected is not None
            probed.append(await offered_to_all(*app.connected))

        async with anyio.create_task_group() as tg:

            def start_probe() -> None:
                # The probe's server starts beside the command's own: the note costs little wait.
                tg.start_soon(probe)

            shown = await listing(start_probe)
        if app.connected is None or not probed or probed[0] is None:
            return
        for hidden in await hidden_tools(*app.connected, shown, offered=probed[0]):
            count = len(hidden.tools)
            more = f"{count} more tool appears" if count == 1 else f"{count} more tools appear"
            app.info(f"{more} to clients that declare {hidden.what()} ({hidden.how()}): "
                     f"{', '.join(hidden.tools)}")

    app.run(listing_and_hidden)


async def _explained(app: App, exc: Exception) -> UsageError:
    """`exc` (from a connection) when it is not about an unknown tool; else that error, and
    when declaring a capability this command did not makes the server offer the tool, one
    that says which and how (`mcpcli.hidden_tools`)."""
    from mcpcli.hidden_tools import Hidden, revealing

    unknown = unwrap(exc)
    if not isinstance(unknown, UnknownTool):
        raise exc
    capabilities = await revealing(*app.connected, unknown.tool) if app.connected is not None else None
    if capabilities is None:
        return UsageError(unknown.message, hint=unknown.hint)
    hidden = Hidden(capabilities, (unknown.tool,))
    return UsageError(f"unknown tool {unknown.tool!r}: the server offers it only to clients that declare "
                      f"{hidden.what()}", hint=f"declare it with {hidden.how()}")


@tools.command("grep")
@click.argument("pattern")
@click.argument("servers", nargs=-1, metavar="[SERVER]...", shell_complete=_complete_target)
@click.option("--schema", is_flag=True, help="Match parameter names too.")
@click.option("--fixed-strings", "-F", "fixed", is_flag=True,
              help="PATTERN is a plain string, not a regular expression.")
@click.option("--timeout", type=seconds(), default=10.0, show_default=True,
              metavar="SECONDS", help="Give each server this long to list its tools.")
@click.option("--max-age", type=seconds(min_open=False), metavar="SECONDS",
              help="Also use a cached list stored within SECONDS (lists without a ttlMs are never "
                   "fresh otherwise).")
@click.option("--no-cache", is_flag=True, help="Ask every server, even when a cached list is fresh.")
@project_option
@click.option("--profile", envvar="MCP_PROFILE", metavar="NAME",
              help="Use this account's stored sign-ins (`mcp auth login --profile`).")
@output_options
@pass_app
def grep(
    app: App, pattern: str, servers: tuple[str, ...], schema: bool, fixed: bool, timeout: float,
    max_age: float | None, no_cache: bool, profile: str | None, out: Output,
) -> None:
    """Search tool names, titles and descriptions across servers.

    \b
    PATTERN is a case-insensitive regular expression (-F: a fixed string).
    Without SERVER, every server is searched: ours, those other clients
    configure for the user, open sessions (@NAME) and those of project files
    (.mcp.json, .cursor/mcp.json, ... from this directory up) you trusted
    (`mcp servers trust`), in parallel. Untrusted project files' servers
    are skipped (named on stderr) unless --project: a cloned repository
    must not run its commands because you searched. A server's cached
    list is used while its ttlMs says it is fresh (or for --max-age seconds
    after it was stored). A server that fails is named on stderr and the
    others still answer; nobody is asked to sign in.
      mcp tools grep weather
      mcp tools grep 'fetch|download' --schema --json
    Exits 0 when a tool matched, 1 when none did, 4 when no server answered
    (one server: its own error's exit code, 3 for a missing sign-in).
    """
    from mcpcli import toolgrep
    from mcpcli.auth import check_profile

    regex = toolgrep.compile_pattern(pattern, fixed=fixed)
    check_profile(profile)  # a bad name is a usage error, not one failure per server
    for named in servers:
        app.resolve(named)  # an unknown name is a usage error, before anything starts
    targets, skipped = (list(servers), []) if servers else _every_server(app)
    if skipped:
        files = sorted({str(item.path) for item in skipped})
        app.info(f"not searched: {', '.join(item.entry.name for item in skipped)} (in project files you have "
                 f"not trusted: {', '.join(files)}); review them, then `mcp servers trust`, or pass --project")
    if not targets:
        raise UsageError("no servers to search",
                         hint="trust this directory's project files (`mcp servers trust`) or pass --project"
                         if skipped else "add one with `mcp servers add NAME -- COMMAND...`, or name a SERVER")
    # One server's flags never go to another: no headers or tokens, stored sign-ins only.
    conn = Connection(timeout=timeout, quiet=True, stored_auth_only=True, profile=profile)

    async def fetch(target: str) -> dict[str, Any]:
        from mcpcli import cache
        from mcpcli.errors import NotOffered

        cached = None if no_cache else toolgrep.cached_listing(target, max_age)
        if cached is not None:
            return cached
        async with app.client(target, conn) as client:
            try:
                # The cache was looked at above and is written below: once each.
                listing = await client.list_tools()
            except NotOffered:
                return {"tools": []}
        cache.remember(target, "tools/list", listing)
        return listing

    async def search() -> list[toolgrep.Answer]:
        return await toolgrep.gather(targets, fetch, timeout=timeout)

    answers = app.run(search)
    lone = answers[0].failure if len(answers) == 1 else None
    if isinstance(lone, McpCliError):  # one server: its own error, exit code and hint
        raise lone
    matches: list[dict[str, Any]] = []
    for answer in answers:
        if answer.error is not None:
            app.warn(f"{answer.target}: {answer.error}")
        elif answer.listing is not None:
            matches.extend(toolgrep.match_tools(answer.target, answer.listing, regex, schema=schema))
    if all(a.error is not None for a in answers):
        raise TransportError(f"no server answered ({len(answers)} tried)")
    _print_matches(out, matches)
    if not matches:
        app.exit_code = ExitCode.TOOL_ERROR  # as grep: 1 when nothing matched


def _every_server(app: App) -> tuple[list[str], list[Found]]:
    """Our servers, other clients' (those of project files only if trusted, or with
    --project), then open sessions (never starting the daemon); and the servers of
    untrusted project files left out. Project files come from whatever directory we
    are in, so their commands run only with consent."""
    from mcpcli import other_clients, toolgrep
    from mcpcli.cli._completers import session_names

    config = app.config()
    ours = config.names()
    found, _ = other_clients.discover()
    usable: list[str] = []
    skipped: list[Found] = []
    for item in other_clients.first_definitions(found):
        if item.entry.name in ours:
            continue
        if item.needs_consent and not config.trust_project:
            skipped.append(item)
        else:
            usable.append(item.entry.name)
    return toolgrep.all_targets(ours, usable, session_names()), skipped


def _print_matches(out: Output, matches: list[dict[str, Any]]) -> None:
    from mcpcli import render

    if out.mode == "jsonl":
        for match in matches:
            out.event(match)
    elif out.human and not matches:
        return
    else:
        out.emit(matches, human=render.grep_matches)


def _tool_name_completion(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from mcpcli.cli._completers import tool_names

    return tool_names(ctx, incomplete)


def _arg_completion(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    from mcpcli.cli._completers import argument_items

    return argument_items(ctx, incomplete)


@target_command(tools, "show")
@click.argument("tool", shell_complete=_tool_name_completion)
def show(app: App, target: str | None, tool: str, conn: Connection, out: Output) -> None:
    """Show a tool's signature, description and input schema."""
    from mcpcli import render

    async def go() -> None:
        try:
            async with app.client(target, conn) as client:
                definition = await client.get_tool(tool)
                if definition is None:
                    raise UnknownTool(tool, await client.list_tools())
                out.emit(definition, human=render.tool_detail)
        except Exception as exc:
            raise await _explained(app, exc) from None

    app.run(go)


async def _call_and_print(
    app: App, client: Client, out: Output, target: str | None, tool: str, arguments: dict[str, Any],
    *, save_dir: str | None, as_task: bool, detach: bool,
) -> dict[str, Any]:
    """Call the tool (following its task, if it runs as one) and print the outcome."""
    from mcpcli.cli._notify import progress_printer
    from mcpcli.cli._progress import waiting_for_call
    from mcpcli.cli._task_follow import (
        announce_detached,
        cancel_on_interrupt,
        emit_call_result,
        task_options,
        warn_no_task,
    )
    from mcpcli.client.tasks import task_of

    if as_task or detach:
        warn_no_task(app, client, tool)
    bar = progress_printer(app)
    if bar is not None:
        bar.pause_for_prompts(client.options.features)
    options = task_options(bar, mode="always" if as_task or detach else "auto", detach=detach)
    release = waiting_for_call(client, bar)  # the bar, not a line of its own, says what is awaited
    try:
        with cancel_on_interrupt(app, client, options):
            result = await client.call_tool(tool, arguments, on_progress=bar, task=options)
    finally:
        release()
        if bar is not None:
            bar.close()
    created = task_of(result, client.era) if detach else None
    if created is not None:
        announce_detached(app, out, target, result, created, era=client.era)
        return {}
    emit_call_result(app, out, result, save_dir)
    return result


@target_command(tools, "call")
@click.argument("tool", shell_complete=_tool_name_completion)
@flag_option(FLAGS["items"], shell_complete=_arg_completion)
@flag_option(FLAGS["args_json"])
@flag_option(FLAGS["no_validate"])
@click.option("--save-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Save images, audio and blobs in the result to DIR.")
@click.option("--task", "as_task", is_flag=True,
              help="Run the tool as a task when it allows one (2025-11-25 servers).")
@click.option("--detach", is_flag=True,
              help="Start the tool as a task, print the task and exit; follow it with `mcp tasks`.")
@large_result_options
def call(
    app: App,
    target: str | None,
    tool: str,
    items: tuple[str, ...],
    args_json: str | None,
    no_validate: bool,
    save_dir: str | None,
    as_task: bool,
    detach: bool,
    conn: Connection,
    out: Output,
) -> None:
    """Call a tool and print its result.

    \b
    Arguments are typed by the tool's input schema: a string field keeps
    its text (007 stays "007"); numbers, booleans and enums convert.
      mcp tools call srv weather --arg city=Paris --arg days=3
      mcp tools call srv create --arg tags:='["a","b"]' --arg body=@note.md
      echo '{"city":"Oslo"}' | mcp tools call srv weather --args -
    Tools that run as tasks are followed until they finish (Ctrl-C cancels
    the task); --detach prints the task instead.
    Exits 1 when the tool reports an error (isError), 5 when its task fails.
    """
    from mcpcli.args import call_arguments, needs_listing, read_json_source

    stdin_reader = app.stdin.read
    base = read_json_source(args_json, stdin=stdin_reader) if args_json is not None else None

    async def call_it() -> dict[str, Any]:
        try:
            async with app.client(target, conn) as client:
                definition = listing = None
                if needs_listing(items, validate=not no_validate):
                    # A 2026-07-28 server's listing is reused while its ttlMs says it is fresh.
                    listing = await client.list_tools(cache_target=target)
                    definition = await client.get_tool(tool)
                arguments = call_arguments(tool, definition, items, base=base, validate=not no_validate,
                                           listing=listing, stdin=stdin_reader)
                return await _call_and_print(app, client, out, target, tool, arguments,
                                             save_dir=save_dir, as_task=as_task, detach=detach)
        except Exception as exc:
            raise await _explained(app, exc) from None

    result = app.run(call_it)
    if result.get("isError"):
        raise ToolError(f"tool {tool!r} reported an error")
