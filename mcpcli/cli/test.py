"""`mcp test FILE...`: saved calls with assertions, against any TARGET, for CI."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import click

from mcpcli.cli._app import CONTEXT_SETTINGS, App, Command, pass_app
from mcpcli.cli._connection import Connection
from mcpcli.cli._options import (
    _complete_target,
    connection_options,
    explicit_json,
    output_options,
    project_option,
)
from mcpcli.errors import ExitCode, UsageError
from mcpcli.output import Output

if TYPE_CHECKING:
    from mcpcli.config import ServerEntry
    from mcpcli.testfile import Caller, Suite, Target, TestFileError

__all__ = ["test"]


@click.command("test", context_settings=CONTEXT_SETTINGS, cls=Command)
@click.argument("files", nargs=-1, required=True, metavar="FILE...", type=click.Path(dir_okay=False))
@click.option("--target", "-t", "target", metavar="TARGET", shell_complete=_complete_target,
              help="Run every file's tests against TARGET instead of the file's own `target:` "
                   "(a server command after -- does the same).")
@click.option("--junit", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write the results to FILE as JUnit XML (one testsuite per file).")
@click.option("--update", is_flag=True,
              help="Store the answers of `snapshot:` tests (__snapshots__/FILE.json beside each file) "
                   "instead of comparing them.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=8, show_default=True, metavar="N",
              help="Tests in flight on one connection at once (1: one at a time, in file order).")
@project_option
@connection_options
@output_options
@pass_app
def test(app: App, files: tuple[str, ...], target: str | None, junit: str | None, update: bool, jobs: int,
         conn: Connection, out: Output) -> None:
    """Run saved calls with assertions (YAML test files) against servers.

    \b
    Each file names a target and its tests: a tool call, resource read or
    prompt get, and what must hold of the answer (text: a regular expression,
    jq: an expression that must be true, json: a subset, error:, snapshot:).
      mcp test tests/mcp.yaml
      mcp test tests/*.yaml --junit report.xml -- mcp serve --replay rec.ndjson
    Tests that share a target share one connection and run in parallel. A
    report for people is printed even when piped (--json for machines).
    Exits 1 when a test fails or cannot run, 2 when a file is invalid.
    """
    from mcpcli import testfile

    if target is not None and app.server_command:
        raise UsageError("give --target or a server command after --, not both")
    override = _override(target, app.server_command)
    try:
        suites = testfile.load_suites(list(dict.fromkeys(files)), target_given=override is not None)
        snapshots = {suite.path: testfile.Snapshots(suite) for suite in suites}
        for snaps in snapshots.values():
            snaps.load()
    except testfile.TestFileError as exc:
        _print_problems(app, exc)
        app.exit_code = ExitCode.USAGE
        return
    entries = {t.key(): _entry(app, t) for t in _targets(suites, override)}  # unknown names: exit 2 now
    conn.interactive = False  # tests behave alike on a terminal and in CI: nobody is asked
    try:
        # Every flag is checked before anything starts (a bad one is exit 2, not a test error).
        connect_options = conn.connect_options(app)
        client_options = {key: conn.client_options(app, entry) for key, entry in entries.items()}

        @asynccontextmanager
        async def open_client(where: Target) -> AsyncIterator[Caller]:
            from mcpcli.connect import connect

            key = where.key()
            async with connect(entries[key], connect_options, client_options[key]) as client:
                yield client

        async def go() -> tuple[list[testfile.Outcome], float]:
            import anyio

            start = anyio.current_time()
            outcomes = await testfile.run_suites(suites, open_client, override=override, jobs=jobs,
                                                 update=update, snapshots=snapshots)
            return outcomes, anyio.current_time() - start

        outcomes, elapsed = app.run(go)
    finally:
        conn.close()
    _finish(app, out, outcomes, elapsed, junit=junit, snapshots=snapshots if update else None)


def _override(target: str | None, command: list[str]) -> Target | None:
    from mcpcli.testfile import Target

    if target is not None:
        return Target(spec=target, base="")
    if command:
        return Target(command=tuple(command), base="")
    return None


def _targets(suites: list[Suite], override: Target | None) -> list[Target]:
    if override is not None:
        return [override]
    return [suite.target for suite in suites if suite.target is not None]


def _entry(app: App, target: Target) -> ServerEntry:
    """The server entry of a target: a TARGET resolved as every command resolves one; a
    file's command list runs in the file's directory."""
    from mcpcli.config import ServerEntry

    if target.spec is not None:
        return app.resolve(target.spec)
    command = list(target.command)
    return ServerEntry(name=command[0], command=command[0], args=command[1:], cwd=target.base or None,
                       source="argv")


def _finish(app: App, out: Output, outcomes: list[Any], elapsed: float, *, junit: str | None,
            snapshots: dict[str, Any] | None) -> None:
    from mcpcli.cli.snapshot import write_text
    from mcpcli.testfile import report

    for snaps in (snapshots or {}).values():
        text = snaps.updated()
        if text is not None:
            os.makedirs(os.path.dirname(snaps.path) or ".", exist_ok=True)
            write_text(snaps.path, text, what="snapshots")
            app.info(f"wrote {snaps.path}")
    if junit is not None:
        from mcpcli.errors import UsageError as Usage
        from mcpcli.files import replace_file

        try:
            replace_file(junit, report.junit_xml(outcomes, elapsed))
        except OSError as exc:
            raise Usage(f"--junit {junit}: {exc.strerror or exc}") from None
    if explicit_json(out):
        out.emit(report.summary(outcomes, elapsed), items="tests")
    else:
        app.stdout.write(report.human(outcomes, elapsed))
        app.stdout.flush()
    if any(outcome.status != "passed" for outcome in outcomes):
        app.exit_code = ExitCode.TOOL_ERROR


def _print_problems(app: App, exc: TestFileError) -> None:
    """Every problem of every file: one `file:line:col: error: ...` line each (a JSON error
    with all of them under --json)."""
    if app.json_errors:
        from mcpcli.core.jsonrpc import dumps

        report = exc.to_json()
        report["error"]["problems"] = [problem.format(None) for problem in exc.problems]
        app.stderr.write(dumps(report) + "\n")
    else:
        from mcpcli.text import one_line

        for problem in exc.problems:
            app.stderr.write(one_line(str(problem)) + "\n")
    app.stderr.flush()
