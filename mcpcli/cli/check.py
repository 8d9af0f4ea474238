"""`mcp check TARGET`: whether a server is correct and usable by every client, for CI."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import App
from mcpcli.cli._connection import Connection
from mcpcli.cli._options import target_command
from mcpcli.errors import ExitCode, UsageError
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.check import Traffic
    from mcpcli.client import Client, ClientOptions

__all__ = ["check"]


def _ignore(method: str, params: dict[str, Any]) -> None:
    """What the server sends unasked is judged from the traffic, not printed."""


async def _decline(params: dict[str, Any]) -> dict[str, Any]:
    """A check asks nobody: a server's elicitation is declined (unless --elicit-json or
    --elicit-defaults says how to answer)."""
    return {"action": "decline"}


def _traced(traffic: Traffic, *, answer_elicitation: bool) -> Callable[[ClientOptions], ClientOptions]:
    """Client options that feed every message to `traffic` (and to --trace/--record, if given),
    always probe the era live (no cached `server/discover`, no remembered legacy) and prompt
    nobody."""

    def adjust(options: ClientOptions) -> ClientOptions:
        tracer = options.trace

        def both(direction: str, message: Any) -> None:
            traffic(direction, message)
            if tracer is not None:
                tracer(direction, message)

        features = options.features
        if not answer_elicitation:
            features = dataclasses.replace(features, elicit=_decline, elicit_url=False)
        return dataclasses.replace(options, trace=both, on_notification=_ignore, remember_era=False,
                                   features=features)

    return adjust


@target_command(name="check")
@click.option("--strict", is_flag=True, help="Fail on warnings too (exit 1).")
@click.option("--no-calls", is_flag=True,
              help="Call no tool (by default, tools annotated readOnlyHint that need no arguments are called).")
@click.option("--junit", metavar="FILE", type=click.Path(dir_okay=False),
              help="Also write the report as JUnit XML to FILE (one testcase per check).")
@click.option("--verbose", "-v", is_flag=True, help="Show notes (info findings) in the human report too.")
def check(app: App, target: str | None, strict: bool, no_calls: bool, junit: str | None, verbose: bool,
          conn: Connection, out: Output) -> None:
    """Check that a server is correct and usable by every client.

    \b
    The handshake of every era the server claims, ping, every list and its
    pages, errors for unknown methods and tools, capabilities against what
    answers, notification order and the shape of every result; a lint of the
    tool names and schemas, and what OpenAI, Anthropic and Gemini accept;
    calls of the tools annotated readOnlyHint that need no arguments.
      mcp check -- python server.py
      mcp check https://mcp.example.com/mcp --json | jq '.findings[]'
      mcp check srv --strict --junit check.xml
    Exits 0 when no error was found (warnings allowed; --strict: none either),
    1 when one was, 4 when the server cannot be reached, 2 for usage. On GitHub
    Actions (GITHUB_ACTIONS=true) each error and warning is also an annotation
    (a workflow command on stderr).
    """
    from mcpcli import render
    from mcpcli.check import CheckOptions, run_check
    from mcpcli.check.report import github_annotations, junit_xml
    from mcpcli.files import replace_file

    if junit is not None:
        parent = os.path.dirname(os.path.abspath(junit))
        if not os.path.isdir(parent):
            raise UsageError(f"--junit {junit}: no such directory {parent}")
    entry = app.resolve(target)
    forced = conn.protocol

    @asynccontextmanager
    async def connect(protocol: str | None, traffic: Traffic) -> AsyncIterator[Client]:
        conn.protocol = protocol
        answer = conn.elicit_json is not None or conn.elicit_defaults
        async with app.client(target, conn, adjust=_traced(traffic, answer_elicitation=answer)) as client:
            yield client

    async def go() -> Any:
        return await run_check(connect, CheckOptions(calls=not no_calls), protocol=forced,
                               other_eras=entry.transport != "session")

    report = app.run(go)
    out.emit(report.to_json(strict=strict), items="findings",
             human=lambda console, data: render.check_report(console, data, verbose=verbose))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github_annotations(report):
            app.stderr.write(line + "\n")
        app.stderr.flush()
    if junit is not None:
        try:
            replace_file(junit, junit_xml(report, strict=strict))
        except OSError as exc:
            raise UsageError(f"--junit {junit}: cannot write it: {exc.strerror or exc}") from None
    if not report.ok(strict=strict):
        app.exit_code = ExitCode.TOOL_ERROR
